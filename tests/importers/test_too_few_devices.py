"""An assumed device count that cannot hold the model's weights is said to be wrong.

vLLM's console log of MiniMax-M2.5 (230 B parameters, served in FP8, about 215 GB: SOURCES.md says at least four
H100s) does not say how many devices ran; the import assumed one and stored it with only the generic "assumed"
warning, so a What-if or a fit read a 230 B model on one 86 GB H100.
"""

from __future__ import annotations

from pathlib import Path

from perfmodel.importers import ImportMeta, read_file
from perfmodel.importers.base import ASSUMED_DEVICE_COUNT


def _log(formats_dir: Path) -> Path:
    return next((formats_dir / "vllm-bench-serve-stdout").glob("*-16-320-i10240-o256*"))


def _said(res) -> list:  # type: ignore[no-untyped-def]
    return [i for i in res.issues if i.column == "device_count" and "fewer devices" in i.message]


def test_a_model_too_big_for_the_assumed_devices_is_said(formats_dir: Path) -> None:
    res = read_file(_log(formats_dir), meta=ImportMeta(hardware="h100-sxm"))
    assert res.runs["device_count"].tolist() == [1]
    # the generic warning stays (duplicates.py reads it), and the specific one names row, sizes and the option
    assert any(i.message == ASSUMED_DEVICE_COUNT for i in res.issues)
    [w] = _said(res)
    assert w.severity == "warning" and w.row == 1 and "--device-count" in w.message
    assert "minimax-m2.5's weights, 115 GB at 4 bits per weight" in w.message and "1 x h100-sxm" in w.message
    # a stated dtype is used as stated: fp8 is 230 GB, more than two H100s hold
    fp8 = _said(read_file(_log(formats_dir), meta=ImportMeta(hardware="h100-sxm", weight_dtype="fp8")))
    assert len(fp8) == 1 and "230 GB at 8 bits per weight" in fp8[0].message
    # a device count given is the user's word (offloading exists), not an assumption: nothing is said
    assert not _said(read_file(_log(formats_dir), meta=ImportMeta(hardware="h100-sxm", weight_dtype="fp8",
                                                                  device_count=2)))
    assert not _said(read_file(_log(formats_dir), meta=ImportMeta(hardware="h100-sxm", device_count=4)))
    assert not _said(read_file(_log(formats_dir), meta=ImportMeta(hardware="h200", weight_dtype="fp8",
                                                                  device_count=2)))


def test_a_model_that_fits_is_not_flagged(formats_dir: Path) -> None:
    """A 70 B model of unstated dtype on one H100 could be 4-bit (35 GB): not called too big."""
    p = formats_dir / "llmperf" / "llmperf-leaderboard__anyscale_70b_summary.json"
    res = read_file(p, meta=ImportMeta(hardware="h100-sxm", model="llama-2-70b"))
    assert any(i.message == ASSUMED_DEVICE_COUNT for i in res.issues) and not _said(res)
