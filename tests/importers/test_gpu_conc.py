"""gpu_conc custom concurrency sweep: golden values pinned from ../shared/data/formats/custom-concurrency-json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _helpers import finish, parse

from perfmodel.errors import ImportFormatError
from perfmodel.importers.base import ImportMeta, Sample
from perfmodel.importers.gpu_conc import GpuConc

GPU = GpuConc()

# these tests pin the importer alone, whatever names the catalog knows
pytestmark = pytest.mark.usefixtures("stub_catalog")


def _p(formats_dir: Path, name: str) -> Path:
    return formats_dir / "custom-concurrency-json" / f"gpu_conc__{name}.json"


def test_h100_summary(formats_dir: Path) -> None:
    path = _p(formats_dir, "H100_benchmark_summary_20250811_091131")
    assert GPU.sniff(Sample(path)) > 0.9
    res = finish(GPU, path)
    assert len(res.runs) == 10
    assert res.runs["batch_size"].tolist() == [1, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    assert (res.runs["hardware_raw"] == "NVIDIA H100 PCIe").all() and (res.runs["load_kind"] == "concurrency").all()
    r = res.runs.set_index("batch_size")
    assert r.loc[1, "output_throughput_tok_s"] == pytest.approx(149.76061832610986)
    assert r.loc[1, "ttft_s"] == pytest.approx(0.059505841311286474)  # ms -> s
    assert r.loc[256, "n_failed"] == 103 and r.loc[256, "n_requests"] == 455
    warnings = [i for i in res.issues if i.severity == "warning"]
    assert sum("estimated by the client" in i.message for i in warnings) == 1
    # it says what is stored (the configured length), not that the length carries the estimate
    [est] = [i.message for i in warnings if "estimated by the client" in i.message]
    assert "the output length stored is the configured 1000 tokens, where the client's estimate" in est
    assert {i.row for i in warnings if i.column == "failed_requests"} == {8, 10}


def test_h200_summary_and_level_file_agree(formats_dir: Path) -> None:
    summ = finish(GPU, _p(formats_dir, "H200_benchmark_summary_20250814_182107"))
    level = finish(GPU, _p(formats_dir, "H200_benchmark_concurrency_128"))
    assert len(summ.runs) == 10 and len(level.runs) == 1
    r = level.runs.iloc[0]
    assert r["hardware_raw"] == "NVIDIA H200" and r["batch_size"] == 128
    assert r["output_throughput_tok_s"] == pytest.approx(2466.6549184960904)
    assert r["e2e_latency_p99_s"] == pytest.approx(24.611741161346436)
    # The configured 1,000 tokens, not the client's estimate (944 here, 929-944 across the levels), which had
    # split the sweep into ten one-point configurations.
    assert r["output_len_tok"] == 1000 and set(summ.runs["output_len_tok"]) == {1000}
    assert r["hw_memory_peak_gb"] == pytest.approx(129.06658935546875)
    s128 = summ.runs.set_index("batch_size").loc[128]
    assert s128["output_throughput_tok_s"] == r["output_throughput_tok_s"]


def test_unknown_gpu_needs_hardware(formats_dir: Path) -> None:
    path = _p(formats_dir, "MI300X_benchmark_summary_20250829_110039")
    p = parse(GPU, path)
    assert "hardware_raw" not in p.runs.columns  # "Unknown GPU" is treated as absent
    assert "hw_memory_peak_gb" not in p.runs.columns  # 0.0 = not measured
    with pytest.raises(ImportFormatError, match="hardware"):
        finish(GPU, path)
    res = finish(GPU, path, ImportMeta(hardware="MI300X"))
    assert len(res.runs) == 10 and res.runs.set_index("batch_size").loc[1024, "n_failed"] == 244
    assert not [i for i in res.issues if "Unknown GPU" in i.message]  # given: not asked for again


def test_wrong_type_and_truncated(tmp_path: Path, formats_dir: Path) -> None:
    doc = json.loads(_p(formats_dir, "H100_benchmark_summary_20250811_091131").read_text())
    doc["results"][2]["average_ttft"] = "n/a"
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(doc))
    p = parse(GPU, f)
    assert len(p.runs) == 9
    (err,) = [i for i in p.issues if i.severity == "error"]
    assert err.row == 3 and err.column == "average_ttft"
    cut = tmp_path / "cut.json"
    cut.write_text(json.dumps(doc, indent=2)[:3000])
    with pytest.raises(ImportFormatError, match=r"cut\.json: invalid JSON at line \d+ column \d+"):
        parse(GPU, cut)


def test_a_concurrency_far_above_what_was_in_flight_is_reported(formats_dir) -> None:  # noqa: ANN001
    # Guards: H200 at configured concurrency 1,024 had about 25 requests in flight (2.53 req/s x 10.0 s), and
    # nothing said the batch axis read 40x higher than what ran.
    from perfmodel.importers import ImportMeta, read_file

    res = read_file(formats_dir / "custom-concurrency-json" / "gpu_conc__H200_benchmark_summary_20250814_182107.json",
                    meta=ImportMeta(model="llama-3-8b"))
    [w] = [i for i in res.issues if "Little's law" in i.message]
    assert w.severity == "warning" and w.column == "batch_size"
    assert w.message.startswith("5 of 10 concurrency run(s) had far fewer requests in flight than configured")
    assert "first: about 20.8 at concurrency 64" in w.message
