"""trtllm-bench: the derived summary CSV and the native text report."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from perfmodel.importers import ImportMeta, Sample, detect_format, read_file

# these tests pin the importer, not the catalog
pytestmark = pytest.mark.usefixtures("stub_catalog")

META = ImportMeta(hardware="H100", model="meta-llama/Llama-3.1-70B-Instruct", device_count=8)


def test_summary_csv_golden(formats_dir: Path) -> None:
    p = formats_dir / "trtllm-bench" / "trtllm-benchmarks-etched__throughput_summary.csv"
    assert detect_format(Sample(p)).name == "trtllm-bench-csv"
    res = read_file(p, meta=META)
    runs = res.runs
    assert len(runs) == 63 and len(res.issues) == 0
    first = runs.iloc[0]
    assert first["output_throughput_tok_s"] == 10893.8728 and first["request_throughput_rps"] == 10.6385
    assert first["total_throughput_tok_s"] == pytest.approx(2 * 10893.8728)
    assert first["n_requests"] == 3000 and first["load_kind"] == "offline"
    assert math.isinf(first["request_rate_rps"]) and (runs["throughput_basis"] == "output").all()
    last = runs.iloc[-1]
    assert (last["input_len_tok"], last["output_len_tok"], last["output_throughput_tok_s"]) == (8192, 8192, 3565.517)


def test_text_report_golden(formats_dir: Path) -> None:
    p = formats_dir / "trtllm-bench" / "trtllm-benchmarks-etched__result_1024_1024_3000.report.txt"
    assert detect_format(Sample(p)).name == "trtllm-bench-report"
    res = read_file(p, meta=ImportMeta(hardware="H100", device_count=8))
    assert len(res.runs) == 1 and len(res.issues) == 0
    r = res.runs.iloc[0]
    assert r["model_raw"] == "meta-llama/Llama-3.1-70B-Instruct" and r["framework_version"] == "0.16.0"
    assert r["output_throughput_tok_s"] == 10893.8728 and r["request_throughput_rps"] == 10.6385
    assert (r["tp_size"], r["pp_size"], r["n_requests"]) == (8, 1, 3000)
    assert (r["weight_dtype"], r["kv_cache_dtype"], r["quantization"]) == ("fp8", "fp8", "fp8")
    assert res.provenance["duration_s"] == pytest.approx(281.9933779)


def test_report_without_numbers_is_clear(tmp_path: Path) -> None:
    from perfmodel.errors import ImportFormatError

    p = tmp_path / "r.txt"
    p.write_text("= PERFORMANCE OVERVIEW\nRequest Throughput (req/sec):\t1.0\n")
    with pytest.raises(ImportFormatError, match="Average Input Length"):
        read_file(p, format="trtllm-bench-report", meta=META)


def test_report_json_hand_made_from_the_documented_schema() -> None:
    """A hand-made ``--report_json`` file following ``get_statistics_dict`` in TensorRT-LLM's
    ``bench/dataclasses/reporting.py`` (no real file was available)."""
    from perfmodel.importers import ImportMeta, read_file

    path = Path(__file__).resolve().parents[1] / "data" / "trtllm_bench" / "report_json_pytorch.json"
    res = read_file(path, meta=ImportMeta(hardware="H100-80GB-SXM"))
    assert res.format == "trtllm-bench-json"
    row = res.runs.iloc[0]
    assert row["model_raw"] == "meta-llama/Llama-3.1-8B-Instruct" and row["framework"] == "tensorrt-llm"
    assert row["framework_version"] == "0.21.0"
    assert (row["tp_size"], row["device_count"]) == (2, 2)
    assert row["output_throughput_tok_s"] == 8388.76 and row["total_throughput_tok_s"] == 25166.28
    assert row["ttft_p50_s"] == pytest.approx(1.3105) and row["tpot_s"] == pytest.approx(0.04567)
    assert row["e2e_latency_p99_s"] == pytest.approx(38.0049)
    assert row["kv_cache_dtype"] == "fp8" and row["quantization"] == "fp8"
    assert row["request_rate_rps"] == float("inf") and row["measured_concurrency"] == 412.5
