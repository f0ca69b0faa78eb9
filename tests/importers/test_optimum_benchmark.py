"""optimum-benchmark: golden values from the two real report + config pairs (Llama-3.1-8B bf16
and AWQ-INT4 on one A100-SXM4-80GB), the config-alone error, a report without its config,
and the combined ``{"config", "report"}`` document built in the test from the real pair."""

from __future__ import annotations

import json
import shutil
from functools import partial
from pathlib import Path

import pytest
from _helpers import parse_detected

from perfmodel.errors import ImportFormatError
from perfmodel.importers import ImportMeta, read_file
from perfmodel.importers.optimum_benchmark import read_report_with_config

PFX = "hf-quant-bench-derekliu35__"
META = ImportMeta(hardware="NVIDIA A100-SXM4-80GB", model="meta-llama/Llama-3.1-8B-Instruct")
_parse = partial(parse_detected, "optimum-benchmark")


def test_report_with_sibling_config_golden(formats_dir: Path) -> None:
    p = _parse(formats_dir / "optimum-benchmark" / f"{PFX}cuda_pytorch_llama__benchmark_report.json")
    assert len(p.runs) == 1
    r = p.runs.iloc[0]
    assert r["load_kind"] == "static_batch" and r["batch_size"] == 1
    assert r["input_len_tok"] == 64 and r["output_len_tok"] == 64
    assert r["output_throughput_tok_s"] == pytest.approx(38.821440532429996)  # decode tokens/s
    assert r["throughput_basis"] == "output"
    assert r["ttft_s"] == pytest.approx(0.026584511947631832)  # prefill latency
    assert r["tpot_p99_s"] == pytest.approx(0.02690559959411621)  # per_token latency
    assert r["e2e_latency_s"] == pytest.approx(0.026584511947631832 + 1.6228145874023436)
    # prefill is samples/s; tokens/s only because the config gives sequence_length=64
    assert r["fw_prefill_throughput_samples_s"] == pytest.approx(37.61588709884444)
    assert r["fw_prefill_throughput_tok_s"] == pytest.approx(37.61588709884444 * 64)
    assert r["model_raw"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert r["hardware_raw"] == "NVIDIA A100-SXM4-80GB" and r["device_count"] == 1
    assert r["framework"] == "transformers" and r["weight_dtype"] == "bfloat16"
    assert [i.severity for i in p.issues] == ["info"]
    assert p.provenance["client_version"] == "0.5.0"

    q = _parse(formats_dir / "optimum-benchmark" / f"{PFX}llama_awq__benchmark_report.json").runs.iloc[0]
    assert q["quantization"] == "awq" and q["model_raw"] == "hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4"
    assert q["output_throughput_tok_s"] == pytest.approx(43.089241533217766)
    assert q["framework_version"] == "4.47.1"


def test_config_alone_is_a_clear_error(formats_dir: Path) -> None:
    f = formats_dir / "optimum-benchmark" / f"{PFX}llama_awq__benchmark_config.json"
    with pytest.raises(ImportFormatError) as ei:
        read_file(f, meta=META)
    assert f.name in str(ei.value) and "config" in str(ei.value) and "benchmark_report.json" in str(ei.value)


def test_report_without_config(tmp_path: Path, formats_dir: Path) -> None:
    f = tmp_path / "benchmark_report.json"
    shutil.copyfile(formats_dir / "optimum-benchmark" / f"{PFX}llama_awq__benchmark_report.json", f)
    with pytest.raises(ImportFormatError, match="alone does not say the prompt length"):
        read_file(f, meta=META)
    # an upload (bytes only) never looks at the disk
    data = (formats_dir / "optimum-benchmark" / f"{PFX}llama_awq__benchmark_report.json").read_bytes()
    with pytest.raises(ImportFormatError, match="together with the benchmark_config.json"):
        read_file(formats_dir / "optimum-benchmark" / f"{PFX}llama_awq__benchmark_report.json", data=data,
                  meta=META)


def test_combined_and_explicit_pair(tmp_path: Path, formats_dir: Path) -> None:
    folder = formats_dir / "optimum-benchmark"
    rep = json.loads((folder / f"{PFX}llama_awq__benchmark_report.json").read_text())
    cfg = json.loads((folder / f"{PFX}llama_awq__benchmark_config.json").read_text())
    f = tmp_path / "benchmark.json"
    f.write_text(json.dumps({"config": cfg, "report": rep}))
    r = _parse(f).runs.iloc[0]
    assert r["quantization"] == "awq" and r["input_len_tok"] == 64
    res = read_file(f, meta=META)
    assert len(res.runs) == 1
    res2 = read_report_with_config(folder / f"{PFX}llama_awq__benchmark_report.json",
                                   folder / f"{PFX}llama_awq__benchmark_config.json", meta=META)
    assert res2.runs["output_throughput_tok_s"].iloc[0] == pytest.approx(43.089241533217766)
    with pytest.raises(ImportFormatError, match="not an optimum-benchmark benchmark_config.json"):
        read_report_with_config(folder / f"{PFX}llama_awq__benchmark_report.json",
                                folder / f"{PFX}llama_awq__benchmark_report.json", meta=META)


def test_full_import(formats_dir: Path) -> None:
    res = read_file(formats_dir / "optimum-benchmark" / f"{PFX}cuda_pytorch_llama__benchmark_report.json",
                    meta=META)
    assert len(res.runs) == 1 and res.runs["batch_size"].iloc[0] == 1


def test_truncated_and_wrong_type(tmp_path: Path, formats_dir: Path) -> None:
    folder = formats_dir / "optimum-benchmark"
    f = tmp_path / "benchmark_report.json"
    f.write_text((folder / f"{PFX}llama_awq__benchmark_report.json").read_text()[:2000])
    with pytest.raises(ImportFormatError, match="not readable as JSON"):
        read_file(f, format="optimum-benchmark", meta=META)
    rep = json.loads((folder / f"{PFX}llama_awq__benchmark_report.json").read_text())
    cfg = json.loads((folder / f"{PFX}llama_awq__benchmark_config.json").read_text())
    rep["decode"]["throughput"]["unit"] = "samples/s"
    g = tmp_path / "benchmark.json"
    g.write_text(json.dumps({"config": cfg, "report": rep}))
    with pytest.raises(ImportFormatError, match="decode.throughput.unit is 'samples/s'"):
        read_file(g, meta=META)


def test_a_folder_imports_with_its_configs_read_beside_their_reports(formats_dir: Path) -> None:
    # `perfmodel import run/*.json` passed each config on its own, which is refused as holding no measurement;
    # uploads (no folder to look in) pair a report with its config by optimum-benchmark's naming.
    from perfmodel.api import import_bytes, import_files
    from perfmodel.store import Store

    files = sorted((formats_dir / "optimum-benchmark").glob("*.json"))
    info, results = import_files(files, store=Store())
    assert info.n_runs == 2 and all(r.file.endswith("benchmark_report.json") for r in results)
    uploads = [(p.name, p.read_bytes()) for p in reversed(files)]
    again, results = import_bytes(uploads, name="uploaded", store=Store())
    assert again.n_runs == 2 and sorted(r.file for r in results) == sorted(r.file for r in import_files(
        files, store=Store())[1])
    config = next(u for u in uploads if u[0].endswith("benchmark_config.json"))
    with pytest.raises(ImportFormatError, match="not a result"):
        import_bytes([config], store=Store())  # a config alone is still refused
