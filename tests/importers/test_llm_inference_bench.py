"""LLM-Inference-Bench CSV family: golden values from the real files, the llama.cpp
per-sequence throughput correction, and recovery of broken rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from perfmodel.errors import ImportFormatError
from perfmodel.importers import ImportMeta, ImportResult, Sample, detect_format, read_file
from perfmodel.importers.llm_inference_bench import LlmInferenceBenchImporter, power_unit

DATA = Path(__file__).resolve().parents[1] / "data" / "csv_family"
IMP = LlmInferenceBenchImporter()


def _read(path: Path) -> ImportResult:
    return read_file(path)


def _row(res: ImportResult, source_row: int):
    sel = res.runs[res.runs["source_row"] == source_row]
    assert len(sel) == 1
    return sel.iloc[0]


def test_all_results_golden(all_results_csv: Path, stub_catalog: None) -> None:
    assert detect_format(Sample(all_results_csv)).name == "llm-inference-bench"
    res = _read(all_results_csv)
    assert len(res.runs) == 4772 and res.n_dropped == 0
    assert [i.severity for i in res.issues] == ["info"]
    assert "1161 row(s) (framework: llama.cpp)" in res.issues[0].message
    assert "n_batch" in res.issues[0].message and res.issues[0].column == "Batch Size"
    first = _row(res, 1)
    assert first["hardware_raw"] == "Nvidia GH200 GPU" and first["model_raw"] == "mistralai/Mistral-7B-v0.1"
    assert first["total_throughput_tok_s"] == pytest.approx(371.92720375776975, rel=1e-12)
    assert first["output_throughput_tok_s"] == pytest.approx(371.92720375776975 / 2, rel=1e-12)
    assert first["e2e_latency_s"] == pytest.approx(0.688306736946106, rel=1e-12)
    assert first["throughput_basis"] == "total" and first["load_kind"] == "static_batch"
    # Line 236: llama.cpp, batch 16, L 128, latency 2.330946, Throughput 109.826672 (= 256 / latency):
    # one sequence at n_batch 16, the figure as written.
    lc = _row(res, 235)
    assert lc["throughput_basis"] == "total" and lc["batch_size"] == 1 and lc["fw_n_batch"] == 16
    assert lc["total_throughput_tok_s"] == pytest.approx(109.826672, rel=1e-9)
    assert (res.runs["throughput_basis"] == "total").all()
    llama = res.runs["framework"] == "llama.cpp"
    assert res.runs.loc[llama, "fw_n_batch"].value_counts().to_dict() == {1.0: 409, 16.0: 400, 32.0: 383, 64.0: 378}
    assert (res.runs.loc[llama, "batch_size"] == 1).all() and res.runs.loc[~llama, "fw_n_batch"].isna().all()


def test_identity_counts_per_framework(all_results_csv: Path) -> None:
    parsed = IMP.parse(Sample(all_results_csv), ImportMeta())
    counts = parsed.provenance["throughput_identity_counts"]
    assert counts["llama.cpp|per_sequence"] == 1161
    assert counts["llama.cpp|both (batch 1)"] == 409
    assert counts["vLLM|batch"] == 1603
    assert not any(k.endswith("|neither") for k in counts)
    assert not any(k.endswith("|per_sequence") and not k.startswith("llama.cpp") for k in counts)


@pytest.mark.parametrize(("name", "rows", "n_issues", "first_row", "tput", "lat"), [
    ("kv_cache_results.csv", 494, 0, 1, 166.86202723263548, 1.534201664966531),
    ("power_results.csv", 48, 18, 2, 146.5279250599716, 13.976857989095151),
    ("quant_results.csv", 156, 29, 1, 332.47279421842995, 0.7699878138955683),
    ("tp_pp_results.csv", 371, 0, 1, 169.5259938178866, 1.5100929021835328),
])
def test_table_golden(llm_bench_dir: Path, stub_catalog: None, name: str, rows: int, n_issues: int,
                      first_row: int, tput: float, lat: float) -> None:
    res = _read(llm_bench_dir / name)
    assert len(res.runs) == rows and len(res.issues) == n_issues and res.n_dropped == 0
    first = res.runs.iloc[0]
    assert first["source_row"] == first_row
    assert first["total_throughput_tok_s"] == pytest.approx(tput, rel=1e-12)
    assert first["e2e_latency_s"] == pytest.approx(lat, rel=1e-12)


def test_power_is_milliwatts(llm_bench_dir: Path, stub_catalog: None) -> None:
    res = _read(llm_bench_dir / "power_results.csv")
    assert res.runs["power_w"].iloc[0] == pytest.approx(222.1222711864407)
    assert res.runs["power_w"].between(200, 700).all()
    assert any("milliwatts" in i.message for i in res.issues)
    assert power_unit(res.runs["power_w"] * 1000) == "mW"


def test_quant_unquoted_commas_recovered(llm_bench_dir: Path, stub_catalog: None) -> None:
    res = _read(llm_bench_dir / "quant_results.csv")
    fixed = [i for i in res.issues if "unquoted comma" in i.message]
    assert len(fixed) == 20 and all(i.severity == "warning" for i in fixed)
    fp8 = res.runs[res.runs["weight_dtype"] == "fp8"]
    assert len(fp8) == 20 and (fp8["kv_cache_dtype"] == "fp8").all()
    row10 = _row(res, 10)
    assert row10["total_throughput_tok_s"] == pytest.approx(3030.010458, rel=1e-6)
    assert res.runs["weight_dtype"].value_counts().to_dict() == {"fp16": 120, "fp8": 20, "int8": 8}
    assert (res.runs["quantization"] == "smoothquant").sum() == 8


def test_tp_pp_sizes(llm_bench_dir: Path, stub_catalog: None) -> None:
    runs = _read(llm_bench_dir / "tp_pp_results.csv").runs
    assert (runs["tp_size"] * runs["pp_size"] == runs["device_count"]).all()
    hybrid = runs[(runs["tp_size"] == 2) & (runs["pp_size"] == 2)]
    assert len(hybrid) == 7
    assert runs["fw_moe_ep_size"].notna().sum() == 8


def test_ttft_itl(llm_bench_dir: Path, stub_catalog: None) -> None:
    res = _read(llm_bench_dir / "ttft_itl.csv")
    assert len(res.runs) == 30 and len(res.issues) == 16
    assert any("no 'Throughput' column (a TTFT table)" in i.message for i in res.issues)
    assert sum("blank line" in i.message for i in res.issues) == 11
    # Rows 39-41 end after TTFT Latency, with a line break: written short, kept without end_latency (a file
    # cut off mid-row would end without one)
    short = [i for i in res.issues if "short row" in i.message]
    assert [i.row for i in short] == [39, 40, 41] and all(i.severity == "warning" for i in short)
    first = res.runs.iloc[0]
    assert first["source_row"] == 2 and first["ttft_s"] == pytest.approx(2.2758256473345684)
    assert first["output_len_tok"] == 1 and first["throughput_basis"] == "none"
    # The end latency belongs to the 1024/1024 run, not to this 1-token row.
    assert np.isnan(first["e2e_latency_s"]) and first["fw_end_latency_s"] == pytest.approx(14.616763864003588)


def test_llamacpp_n_batch_by_identity(stub_catalog: None) -> None:
    res = _read(DATA / "lib_llamacpp.csv")
    # Row 1: llama.cpp "batch" 16 with a per-sequence figure is one sequence at n_batch 16; row 2 is its
    # batch-1 sibling (n_batch 1); the vLLM rows are 16 concurrent sequences, whatever their name.
    assert list(res.runs["throughput_basis"]) == ["total", "total", "total", "total"]
    assert list(res.runs["batch_size"]) == [1.0, 1.0, 16.0, 16.0]
    np.testing.assert_array_equal(res.runs["fw_n_batch"], [16.0, 1.0, np.nan, np.nan])
    assert list(res.runs["total_throughput_tok_s"]) == [128.0, 256.0, 2048.0, 1000.0]
    assert list(res.runs["output_throughput_tok_s"]) == [64.0, 128.0, 1024.0, 500.0]
    msgs = {i.severity: i.message for i in res.issues}
    assert "1 row(s) (framework: llama.cpp)" in msgs["info"]
    assert "1 row(s) (first: 4) match neither" in msgs["warning"]


def test_broken_rows_become_issues(stub_catalog: None) -> None:
    res = _read(DATA / "lib_broken.csv")
    assert list(res.runs["source_row"]) == [1, 3]
    assert list(res.runs["weight_dtype"]) == ["fp8", "fp16"]
    assert list(res.runs["kv_cache_dtype"]) == ["fp8", "fp8"]
    assert res.runs["total_throughput_tok_s"].iloc[0] == 256.0
    by_row = {(i.row, i.severity): i.message for i in res.issues}
    assert "unquoted comma" in by_row[(1, "warning")]
    assert by_row[(2, "info")] == "blank line skipped"
    assert "expected 9 fields, found 10" in by_row[(4, "error")]
    assert "expected a number, got 'x'" in by_row[(5, "error")]
    assert "missing value" in by_row[(6, "error")]
    assert res.n_dropped == 3


def test_sniff_by_content_not_name(tmp_path: Path) -> None:
    p = tmp_path / "whatever.txt"
    p.write_text((DATA / "lib_llamacpp.csv").read_text())
    assert IMP.sniff(Sample(p)) > 0.9
    q = tmp_path / "All_results.csv"
    q.write_text("a,b,c\n1,2,3\n")
    assert IMP.sniff(Sample(q)) == 0.0


def test_real_catalog_resolves(all_results_csv: Path) -> None:
    res = read_file(all_results_csv)
    assert res.runs["hardware"].notna().all() and len(res.runs) == 4772




def test_supplied_values_do_not_overwrite_the_file(tmp_path: Path, stub_catalog: None) -> None:
    """--batch-size / --input-len are for files that do not record them: the file's sweep is kept
    and the user is told once per option, with how many rows disagree and the first one.
    Regression: every row became batch 7, input 999 (the sweep collapsed) with one warning
    naming only the first value."""
    p = tmp_path / "five.csv"
    p.write_text((DATA / "lib_sweep.csv").read_text())  # made up: batch 1-64 at 128 tokens, then batch 1 at 256
    res = read_file(p, meta=ImportMeta(batch_size=7, input_len_tok=999, framework="tensorrt-llm"))
    assert res.runs["batch_size"].tolist() == [1, 16, 32, 64, 1]
    assert res.runs["input_len_tok"].tolist() == [128, 128, 128, 128, 256]
    warned = {i.column: i for i in res.issues if i.severity == "warning"}
    assert set(warned) == {"batch_size", "input_len_tok"}  # the same framework, spelt otherwise: no warning
    batch, length = warned["batch_size"], warned["input_len_tok"]
    assert (batch.row, length.row) == (1, 1)
    assert "--batch-size 7 not applied to 5 of 5 row(s)" in batch.message and "says 1)" in batch.message
    assert "--input-len 999 not applied to 5 of 5 row(s)" in length.message


def test_latency_unit_is_refused_not_ignored(tmp_path: Path, stub_catalog: None) -> None:
    """This format records its latencies in seconds: --latency-unit ms would be silently ignored."""
    p = tmp_path / "five.csv"
    p.write_text((DATA / "lib_sweep.csv").read_text())
    with pytest.raises(ImportFormatError, match=r"five\.csv: --latency-unit applies only to format 'csv'"):
        read_file(p, meta=ImportMeta(latency_unit="ms"))
    with pytest.raises(ImportFormatError, match=r"--map and --latency-unit apply only"):
        read_file(p, meta=ImportMeta(latency_unit="s", column_map={"batch_size": "Batch Size"}))


@pytest.mark.parametrize("drop", ["Throughput", "Throughput,Latency"])
def test_no_throughput_column_is_refused(all_results_csv: Path, tmp_path: Path, drop: str) -> None:
    """Regression: All_results.csv without its Throughput column imported 4,772 latency-only rows with
    no issue at all."""
    import pandas as pd

    f = tmp_path / "no_tput.csv"
    pd.read_csv(all_results_csv).drop(columns=drop.split(",")).head(50).to_csv(f, index=False)
    with pytest.raises(ImportFormatError, match=r"no_tput\.csv: missing column 'Throughput'") as ei:
        read_file(f)
    assert "columns found: 'Hardware'" in str(ei.value)
    assert ("'Latency'" in str(ei.value)) == ("Latency" not in drop.split(","))
