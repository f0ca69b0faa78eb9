"""GuideLLM reports: golden values from the real 0.3 ("args" schema) test asset (JSON and YAML),
and a hand-made "config"-schema (guidellm 0.8, report version 2) report.

``tests/data/guidellm/guidellm_v2_benchmarks.json`` was written by hand from guidellm
0.8.1's report schema (``GenerativeBenchmarksReport``: ``metadata``, ``benchmarks[]`` with
``config{strategy, backend}``, ``metrics{request_totals, ...}``, percentiles with ``p50``);
its numbers are invented but consistent.
"""

from __future__ import annotations

import json
import math
from functools import partial
from pathlib import Path

import pandas as pd
import pytest
from _helpers import parse_detected

from perfmodel.errors import ImportFormatError
from perfmodel.importers import ImportMeta, read_file

DATA = Path(__file__).resolve().parents[1] / "data" / "guidellm"
V2 = DATA / "guidellm_v2_benchmarks.json"
STEM = "neuralmagic-guidellm-testasset__benchmarks_stripped"
META = ImportMeta(hardware="H100-80GB-SXM", model="meta-llama/Llama-3.1-8B-Instruct")
_parse = partial(parse_detected, "guidellm")


def test_real_json_golden(formats_dir: Path) -> None:
    p = _parse(formats_dir / "guidellm" / f"{STEM}.json")
    assert len(p.runs) == 1
    r = p.runs.iloc[0]
    assert r["load_kind"] == "concurrency" and r["batch_size"] == 1  # synchronous member of a sweep
    assert r["n_requests"] == 46 and r["n_failed"] == 0
    assert r["e2e_latency_s"] == pytest.approx(0.6444743664368339)  # request_latency is seconds
    assert r["ttft_p50_s"] == pytest.approx(16.38054847717285 / 1000)  # v0.3: median, in ms
    assert r["itl_p99_s"] == pytest.approx(5.258346167136365 / 1000)
    assert r["output_throughput_tok_s"] == pytest.approx(198.13346751788123)
    assert r["total_throughput_tok_s"] == pytest.approx(992.6867036588937)
    assert r["input_len_tok"] == pytest.approx(257.1086956521739)
    assert r["measured_concurrency"] == pytest.approx(0.9977627456483604)
    assert r["throughput_basis"] == "output+total"
    assert "model_raw" not in p.runs.columns  # backend anonymised as example_model
    assert [i.severity for i in p.issues] == ["warning", "info"]
    assert p.provenance["n_incomplete"] == 1 and p.provenance["schema"] == "args"
    assert abs(p.runs["timestamp"].iloc[0] - pd.Timestamp("2025-06-05 20:59:28.1827", tz="UTC")) < pd.Timedelta("1ms")


def test_yaml_imports_to_the_same_rows(formats_dir: Path) -> None:
    j = _parse(formats_dir / "guidellm" / f"{STEM}.json").runs
    y = _parse(formats_dir / "guidellm" / f"{STEM}.yaml").runs
    pd.testing.assert_frame_equal(j, y, check_dtype=False)


def test_real_file_full_import(formats_dir: Path) -> None:
    res = read_file(formats_dir / "guidellm" / f"{STEM}.yaml", meta=META)
    assert len(res.runs) == 1 and res.format == "guidellm"
    assert res.runs["model_raw"].iloc[0] == "meta-llama/Llama-3.1-8B-Instruct"
    assert res.runs["framework"].iloc[0] == "unknown"


def test_v2_report() -> None:
    p = _parse(V2)
    runs = p.runs
    assert list(runs["source_row"]) == [1, 2, 3]
    assert list(runs["load_kind"]) == ["concurrency", "concurrency", "request_rate"]
    assert runs["batch_size"].iloc[1] == 4  # concurrent, streams=4
    assert runs["request_rate_rps"].iloc[2] == 2.5  # constant, rate=2.5
    assert list(runs["n_failed"]) == [0, 0, 1]
    assert (runs["model_raw"] == "meta-llama/Llama-3.1-8B-Instruct").all()
    assert runs["ttft_p50_s"].iloc[0] == pytest.approx(40.0 * 0.98 / 1000)  # v2 percentiles.p50
    assert runs["e2e_latency_p99_s"].iloc[1] == pytest.approx(0.65 * 1.3)
    assert p.provenance["client_version"] == "0.8.1" and p.provenance["schema"] == "config"
    assert not p.issues


def test_v2_throughput_strategy_is_offline(tmp_path: Path) -> None:
    doc = json.loads(V2.read_text())
    doc["benchmarks"][0]["config"]["strategy"] = {"type_": "throughput", "max_concurrency": None}
    f = tmp_path / "b.json"
    f.write_text(json.dumps(doc))
    r = _parse(f).runs.iloc[0]
    assert r["load_kind"] == "offline" and math.isinf(r["request_rate_rps"])


def test_wrong_type_drops_only_that_benchmark(tmp_path: Path) -> None:
    doc = json.loads(V2.read_text())
    doc["benchmarks"][1]["metrics"]["request_latency"]["successful"]["mean"] = "fast"
    doc["benchmarks"][2]["config"]["strategy"] = {"type_": "warp-speed"}
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(doc))
    res = read_file(f, meta=META)
    assert list(res.runs["source_row"]) == [1]
    errs = [(i.row, i.column) for i in res.issues if i.severity == "error"]
    assert (2, "e2e_latency_s") in errs and (3, "strategy") in errs


def test_truncated_report_is_a_clear_error(tmp_path: Path) -> None:
    f = tmp_path / "benchmarks.json"
    f.write_text(V2.read_text()[:5000])
    with pytest.raises(ImportFormatError, match=r"benchmarks\.json: not a readable GuideLLM JSON report"):
        read_file(f, format="guidellm", meta=META)
    y = tmp_path / "benchmarks.yaml"
    y.write_text("benchmarks:\n- type_: generative_benchmark\n  args: {strategy: [\n")
    with pytest.raises(ImportFormatError, match="invalid YAML at line"):
        read_file(y, format="guidellm", meta=META)


def test_not_a_report(tmp_path: Path) -> None:
    f = tmp_path / "x.json"
    f.write_text(json.dumps({"benchmarks": "none"}))
    with pytest.raises(ImportFormatError, match="top-level 'benchmarks' list"):
        read_file(f, format="guidellm", meta=META)


def test_an_anonymised_model_given_with_model_is_not_asked_for_again(formats_dir: Path) -> None:
    """The test asset's backend model is 'example_model': imported with --model, the import still said
    "supply the model"."""
    p = formats_dir / "guidellm" / "neuralmagic-guidellm-testasset__benchmarks_stripped.json"
    plain = [i.message for i in read_file(p, meta=ImportMeta(hardware="T4", model="Qwen/Qwen3-0.6B")).issues
             if i.column == "model_raw"]
    assert plain == ["the report's backend model is missing or anonymised; the model given (--model) is used"]
