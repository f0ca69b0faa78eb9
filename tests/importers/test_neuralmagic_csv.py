"""Neural Magic vLLM CSVs: decode/prefill split of the offline sweep, latency-only QPS sweep."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from perfmodel.importers import ImportMeta, Sample, detect_format, read_file

# these tests pin the importer, not the catalog
pytestmark = pytest.mark.usefixtures("stub_catalog")


def test_offline_golden(formats_dir: Path) -> None:
    p = formats_dir / "vllm-offline-batch-csv" / "neuralmagic-vllm-benchmarking__a100_model_benchmarking_results.csv"
    assert detect_format(Sample(p)).name == "neuralmagic-vllm-csv"
    res = read_file(p, meta=ImportMeta(hardware="A100"))
    runs = res.runs
    assert len(runs) == 45 and res.n_dropped == 0 and len(res.issues) == 2
    decode = runs[runs["throughput_basis"] == "output"]
    prefill = runs[runs["throughput_basis"] == "total"]
    assert len(decode) == 18 and len(prefill) == 27
    assert (decode["output_len_tok"] == 20).all() and (prefill["output_len_tok"] == 1).all()
    first = runs.iloc[0]
    assert first["output_throughput_tok_s"] == pytest.approx(53.088569638684945)
    assert first["batch_size"] == 1 and first["weight_dtype"] == "fp16" and first["load_kind"] == "static_batch"
    r7 = runs[runs["source_row"] == 7].iloc[0]  # prefill, seq_len 16
    assert r7["input_len_tok"] == 16 and r7["total_throughput_tok_s"] == pytest.approx(791.0895642838129)
    assert (runs["quantization"] == "gptq").sum() == 15 and (runs["quantization"] == "marlin").sum() == 15


def test_server_qps_golden(formats_dir: Path) -> None:
    p = formats_dir / "vllm-server-qps-csv" / "neuralmagic-vllm-benchmarking__4xA4000_server_benchmarking_results.csv"
    assert detect_format(Sample(p)).name == "neuralmagic-vllm-server-qps-csv"
    res = read_file(p)
    runs = res.runs
    assert len(runs) == 30 and res.n_dropped == 0 and len(res.issues) == 1
    assert (runs["throughput_basis"] == "none").all()
    assert runs["output_throughput_tok_s"].isna().all() and runs["total_throughput_tok_s"].isna().all()
    first = runs.iloc[0]
    assert first["hardware_raw"] == "A4000" and first["device_count"] == 4
    assert first["request_rate_rps"] == 1.0 and first["load_kind"] == "request_rate"
    assert first["e2e_latency_s"] == pytest.approx(2.108120973475743)
    assert first["e2e_latency_p99_s"] == pytest.approx(2.3059571208734995)
    assert first["n_requests"] == 50


def test_odd_offline_row_reported(tmp_path: Path) -> None:
    p = tmp_path / "r.csv"
    p.write_text("model_id,seq_len,batch_size,weight_type,tput\nm,1,4,fp16,100\nm,16,4,fp16,50\nm,x,1,fp16,5\n")
    res = read_file(p, meta=ImportMeta(hardware="A100"))
    assert len(res.runs) == 1
    rows = {i.row: i.message for i in res.issues if i.severity == "error"}
    assert "neither a decode" in rows[2] and "expected a number" in rows[3]
    assert not math.isnan(res.runs["output_throughput_tok_s"].iloc[0])


def test_quantization_schemes_are_separate_curves(formats_dir: Path) -> None:
    # GPTQ and Marlin runs of one model were pooled into one configuration, whose fit failed with "repeats
    # disagree by more than 3x".
    from perfmodel.curve_tables import default_curve_by
    from perfmodel.curves import fit_curves

    p = formats_dir / "vllm-offline-batch-csv" / "neuralmagic-vllm-benchmarking__a100_model_benchmarking_results.csv"
    runs = read_file(p, meta=ImportMeta(hardware="A100")).runs
    by = default_curve_by(runs)
    assert "quantization" in by
    decode = runs[runs["throughput_basis"] == "output"]
    fits = fit_curves(decode, by=by)
    assert len(fits) == 3 and not fits["message"].astype(str).str.contains("disagree").any()
    assert set(fits["quantization"].dropna()) == {"gptq", "marlin"} and fits["quantization"].isna().sum() == 1
