"""AIPerf exports: golden values from the two real ``profile_export_aiperf.csv`` files
(chatbot workload at concurrency 8 on an H100 and an RTX 5090), and hand-made files:

* ``tests/data/aiperf/profile_export_aiperf.json``: written by hand from aiperf 0.10.0's
  ``JsonExportData`` (schema_version 1.3: metric objects at the top level, ``input_config``
  with ``models.items`` and ``phases``); numbers invented.
* ``tests/data/aiperf/telemetry_profile_export_aiperf.csv``: the three-block CSV with a filled
  GPU-telemetry block (the real samples' block is empty); numbers invented.

The CSV does not record the load setting; these tests supply it through an ``ImportMeta``
with a ``concurrency`` field (the field the importer asks the shared ImportMeta to gain).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pandas as pd
import pytest
from _helpers import MetaWithConcurrency, parse_detected

from perfmodel.errors import ImportFormatError
from perfmodel.importers import ImportMeta, read_file

DATA = Path(__file__).resolve().parents[1] / "data" / "aiperf"
H100 = "anud18-qwen36-aiperf__h100_chatbot_c8_profile_export_aiperf.csv"
RTX = "anud18-qwen36-aiperf__rtx5090_chatbot_c8_profile_export_aiperf.csv"
MODEL = "nvidia/Qwen3.6-35B-A3B-NVFP4"
_parse = partial(parse_detected, "aiperf")


def test_real_csv_golden(formats_dir: Path) -> None:
    p = _parse(formats_dir / "aiperf" / H100, MetaWithConcurrency(concurrency=8))
    assert len(p.runs) == 1 and not p.issues
    r = p.runs.iloc[0]
    assert r["load_kind"] == "concurrency" and r["batch_size"] == 8
    assert r["n_requests"] == 96
    assert r["ttft_s"] == pytest.approx(0.08482) and r["ttft_p99_s"] == pytest.approx(0.15743)
    assert r["e2e_latency_p50_s"] == pytest.approx(1.77427)
    assert r["tpot_s"] == pytest.approx(0.00929)  # AIPerf "Inter Token Latency" = per-request TPOT
    assert r["itl_p99_s"] == pytest.approx(0.0694)  # "Inter Chunk Latency"
    assert r["output_throughput_tok_s"] == 756.86 and r["total_throughput_tok_s"] == 2305.85
    assert r["input_len_tok"] == 466.44 and r["output_len_tok"] == 227.91
    assert r["measured_concurrency"] == pytest.approx(209.93046 / 28.91)  # sum latency / duration
    assert "hardware_raw" not in p.runs.columns  # empty telemetry block

    q = _parse(formats_dir / "aiperf" / RTX, MetaWithConcurrency(concurrency=8)).runs.iloc[0]
    assert q["ttft_p50_s"] == pytest.approx(0.11734) and q["request_throughput_rps"] == 3.37


def test_real_csv_without_load_setting_is_a_clear_error(formats_dir: Path) -> None:
    with pytest.raises(ImportFormatError) as ei:
        read_file(formats_dir / "aiperf" / H100, meta=ImportMeta(hardware="H100-80GB-SXM", model=MODEL))
    msg = str(ei.value)
    assert msg.startswith(H100) and "concurrency" in msg and "profile_export_aiperf.json" in msg


def test_real_csv_full_import(formats_dir: Path) -> None:
    meta = MetaWithConcurrency(hardware="RTX 5090", model=MODEL, concurrency=8)
    res = read_file(formats_dir / "aiperf" / RTX, meta=meta)
    assert len(res.runs) == 1 and res.runs["batch_size"].iloc[0] == 8
    assert res.runs["ttft_s"].iloc[0] == pytest.approx(0.11806)


def test_csv_with_gpu_telemetry() -> None:
    p = _parse(DATA / "telemetry_profile_export_aiperf.csv", MetaWithConcurrency(concurrency=4))
    r = p.runs.iloc[0]
    assert r["hardware_raw"] == "NVIDIA H100 80GB HBM3"
    assert r["power_w"] == pytest.approx(410.5 + 395.25)  # both GPUs' mean power
    assert r["measured_concurrency"] == pytest.approx(250.0 / 62.5)
    assert p.provenance["n_gpus_monitored"] == 2


def test_json_export() -> None:
    p = _parse(DATA / "profile_export_aiperf.json", ImportMeta())
    r = p.runs.iloc[0]
    assert r["model_raw"] == "Qwen/Qwen3-8B"
    assert r["load_kind"] == "concurrency" and r["batch_size"] == 16  # profiling phase, not warmup
    assert r["n_requests"] == 192 and r["n_failed"] == 2
    assert r["ttft_p90_s"] == pytest.approx(0.1304) and r["throughput_basis"] == "output+total"
    assert p.provenance["client_version"] == "0.10.0" and p.provenance["schema_version"] == "1.3"
    res = read_file(DATA / "profile_export_aiperf.json",
                    meta=ImportMeta(hardware="H100-80GB-SXM", model="Qwen/Qwen3-8B"))
    assert len(res.runs) == 1


def test_truncated_and_wrong_type(tmp_path: Path, formats_dir: Path) -> None:
    text = (formats_dir / "aiperf" / H100).read_text()
    f = tmp_path / "profile_export_aiperf.csv"
    f.write_text(text[:300])  # cut inside the first table: no latency rows
    with pytest.raises(ImportFormatError, match="expected AIPerf's per-request table"):
        read_file(f, meta=MetaWithConcurrency(concurrency=8))
    g = tmp_path / "bad_profile_export_aiperf.csv"
    g.write_text(text.replace("Time to First Token (ms),84.82", "Time to First Token (ms),fast"))
    meta = MetaWithConcurrency(hardware="H100-80GB-SXM", model=MODEL, concurrency=8)
    with pytest.raises(ImportFormatError, match="ttft_s.*expected a number, got 'fast'"):
        read_file(g, meta=meta)
    h = tmp_path / "profile_export_aiperf.json"
    h.write_text((DATA / "profile_export_aiperf.json").read_text()[:400])
    with pytest.raises(ImportFormatError, match="not readable as JSON"):
        read_file(h, format="aiperf", meta=meta)


def test_csv_cut_off_in_a_metric_row(tmp_path: Path, formats_dir: Path) -> None:
    """A file cut off inside a metric row: the row's cells are not read as that metric's statistics.
    Regression: 'Time to First Token (ms),84.8' (84.82 cut) was stored as ttft_s 0.0848, silently."""
    from perfmodel.api import import_files
    from perfmodel.errors import ValidationError
    from perfmodel.store import Store

    text = (formats_dir / "aiperf" / H100).read_text()
    label = "Time to First Token (ms)"
    start = text.index(label + ",")
    line_no = text[:start].count("\n") + 1
    header = text.splitlines()[0].split(",")
    f = tmp_path / "profile_export_aiperf.csv"
    f.write_text(text[:start + len(label) + 5])  # two cells, the second cut
    meta = MetaWithConcurrency(hardware="H100-80GB-SXM", model=MODEL, concurrency=8)
    res = read_file(f, meta=meta)
    assert len(res.runs) == 1 and pd.isna(res.runs["ttft_s"].iloc[0])
    (err,) = [i for i in res.issues if i.severity == "error"]
    assert (err.file, err.column) == (f.name, label)
    assert f"has 2 cells but its table header has {len(header)} (line {line_no} of the block" in err.message
    assert ", ".join(repr(h) for h in header[2:]) in err.message and "left out" in err.message
    store = Store(tmp_path / "store")
    with pytest.raises(ValidationError, match="strict import: nothing was stored"):
        import_files([f], meta=meta, store=store, strict=True)
    assert store.datasets() == []


def test_json_load_setting_wins_over_a_supplied_one() -> None:
    """The JSON records its concurrency (16): a supplied --batch-size 8 is reported, not applied.
    Regression: the supplied value replaced the recorded one."""
    res = read_file(DATA / "profile_export_aiperf.json",
                    meta=ImportMeta(hardware="H100-80GB-SXM", model="Qwen/Qwen3-8B", batch_size=8))
    assert res.runs["batch_size"].tolist() == [16] and res.runs["load_kind"].tolist() == ["concurrency"]
    warned = [i for i in res.issues if i.column == "batch_size" and i.severity == "warning"]
    assert len(warned) == 1 and "--batch-size 8 not applied to 1 of 1 row(s)" in warned[0].message
