"""inference-perf reports: golden values from the real kubecon-na-2025 vLLM/H100 run (seven
stage lifecycle reports, the summary lifecycle report and the stage-6 Prometheus report)."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest
from _helpers import parse_detected

from perfmodel.errors import ImportFormatError
from perfmodel.importers import ImportMeta, read_file

STEM = "inference-perf-kubecon25-vllm-h100__"
META = ImportMeta(hardware="NVIDIA H100 80GB HBM3", model="meta-llama/Meta-Llama-3-8B-Instruct",
                  framework="vllm")
REQUESTED = [1.0, 31.4, 61.79, 92.19, 122.59, 152.98, 183.38]
_parse = partial(parse_detected, "inference-perf")


def test_stage_reports_golden(formats_dir: Path) -> None:
    rows = []
    for i in range(7):
        p = _parse(formats_dir / "inference-perf" / f"{STEM}stage_{i}_lifecycle_metrics.json")
        assert len(p.runs) == 1
        rows.append(p.runs.iloc[0])
        # stages 4-6: the generator could not deliver the requested rate; every stage: no arrival recorded
        assert [x.severity for x in p.issues] == (["info", "warning"] if i >= 4 else ["info"])
        assert p.issues[0].column == "arrival"
        assert p.provenance["requested_rate_rps"] == REQUESTED[i]
    assert [r["request_rate_rps"] for r in rows] == REQUESTED
    assert all(r["load_kind"] == "request_rate" for r in rows)
    s0, s6 = rows[0], rows[6]
    assert s0["n_requests"] == 60 and s0["n_failed"] == 0
    assert s0["ttft_p50_s"] == pytest.approx(0.031026913959067315)  # seconds already
    assert s0["output_throughput_tok_s"] == pytest.approx(64.23350089997027)
    assert s0["total_throughput_tok_s"] == pytest.approx(271.83536208261364)
    assert s0["input_len_tok"] == pytest.approx(204.1) and s0["output_len_tok"] == pytest.approx(63.15)
    assert s6["n_requests"] == 11002
    assert s6["request_throughput_rps"] == pytest.approx(103.0780152073592)
    assert s6["ttft_p50_s"] == pytest.approx(2.88654515898088)  # the saturation knee
    assert s6["e2e_latency_p99_s"] > 1.0 > s0["e2e_latency_p99_s"]


def test_summary_report_has_no_rate(formats_dir: Path) -> None:
    p = _parse(formats_dir / "inference-perf" / f"{STEM}summary_lifecycle_metrics.json")
    r = p.runs.iloc[0]
    assert "request_rate_rps" not in p.runs.columns and r["load_kind"] == "request_rate"
    assert r["n_requests"] == 38717
    assert r["output_throughput_tok_s"] == pytest.approx(3957.912190053508)
    assert [i.severity for i in p.issues] == ["warning"] and "every stage" in p.issues[0].message


def test_prometheus_report(formats_dir: Path) -> None:
    p = _parse(formats_dir / "inference-perf" / f"{STEM}stage_6_prometheus_metrics.json")
    r = p.runs.iloc[0]
    assert r["n_requests"] == 21904
    assert r["request_throughput_rps"] == pytest.approx(173.848025)
    assert r["output_throughput_tok_s"] == pytest.approx(11117.550154)
    assert r["total_throughput_tok_s"] == pytest.approx(11117.550154 + 35331.899184)
    # lengths from token rate / request rate, not the Prometheus aggregate 18190
    assert r["input_len_tok"] == pytest.approx(35331.899184 / 173.848025)
    assert r["ttft_p90_s"] == pytest.approx(4.736875)
    assert r["fw_queue_len"] == 217 and r["fw_kv_cache_usage_pct"] == 0.0
    assert r["fw_num_preemptions_total"] == 0 and r["fw_prefix_cache_hit_pct"] == 0.0
    assert any("Prometheus aggregates" in i.message for i in p.issues)
    assert p.provenance["prometheus_prompt_len_mean"] == 18190


def test_every_report_full_import(formats_dir: Path) -> None:
    files = sorted((formats_dir / "inference-perf").glob(f"{STEM}*.json"))
    assert len(files) == 9
    for f in files:
        res = read_file(f, meta=META)
        assert len(res.runs) == 1, f.name
        assert res.runs["framework"].iloc[0] == "vllm"
        assert not [i for i in res.issues if i.severity == "error"]
    assert "fw_queue_len" in res.runs.columns or f.name.endswith("summary_lifecycle_metrics.json")


def test_wrong_type_is_reported_by_row(tmp_path: Path, formats_dir: Path) -> None:
    doc = json.loads((formats_dir / "inference-perf" / f"{STEM}stage_0_lifecycle_metrics.json").read_text())
    doc["successes"]["latency"]["time_to_first_token"]["median"] = "slow"
    f = tmp_path / "stage.json"
    f.write_text(json.dumps(doc))
    with pytest.raises(ImportFormatError, match="ttft_p50_s.*expected a number, got 'slow'"):
        read_file(f, meta=META)


def test_truncated_report(tmp_path: Path, formats_dir: Path) -> None:
    f = tmp_path / "stage_0_lifecycle_metrics.json"
    f.write_text((formats_dir / "inference-perf" / f"{STEM}stage_0_lifecycle_metrics.json").read_text()[:900])
    with pytest.raises(ImportFormatError, match="stage_0_lifecycle_metrics.json: not readable as JSON"):
        read_file(f, format="inference-perf", meta=META)
    g = tmp_path / "other.json"
    g.write_text(json.dumps({"load_summary": {}, "successes": []}))
    with pytest.raises(ImportFormatError, match="expected an inference-perf report"):
        read_file(g, format="inference-perf", meta=META)
