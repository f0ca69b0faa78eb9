"""Planner on request-rate sweeps: a rate the server did not deliver is no operating point (real files)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from perfmodel.planner import plan, undelivered_rates


def _import(files, tmp_path, **meta):  # noqa: ANN001, ANN003, ANN202
    from perfmodel.api import import_files, load_runs
    from perfmodel.importers.base import ImportMeta
    from perfmodel.store import Store

    store = Store(tmp_path)
    info, _ = import_files(files, meta=ImportMeta(**meta), store=store)
    return load_runs(info.id, store=store)


@pytest.fixture
def inference_perf(formats_dir, tmp_path) -> pd.DataFrame:  # noqa: ANN001
    """inference-perf's vLLM sweep on one H100: 7 stages at 1 to 183.4 req/s asked, the last three completing
    101-103 req/s (the importer warns "the requested rate was not delivered")."""
    files = sorted((formats_dir / "inference-perf").glob("*stage_[0-6]_lifecycle_metrics.json"))
    assert len(files) == 7
    return _import(files, tmp_path, hardware="h100", model="llama-3-8b", framework="vllm")


WORKLOAD = {"request_rate_rps": 250, "input_len_tok": 204, "output_len_tok": 62}


def test_without_targets_a_delivered_rate_is_planned_not_the_overloaded_peak(inference_perf) -> None:  # noqa: ANN001
    """With no latency target the plan had taken the stage with the most throughput: 183.4 req/s asked, 103
    completed, 427 requests in flight, a p90 TTFT of 3.3 s, and said nothing. The fastest delivered stage (92.2
    req/s, 1.2 s p90 e2e) is planned, and the notes name the three that were not delivered."""
    runs = inference_perf
    late = undelivered_rates(runs)
    asked = runs["request_rate_rps"]
    assert sorted(asked[late].round(2)) == [122.59, 152.98, 183.38]
    res = plan({"workload": WORKLOAD}, runs)
    rec = res.recommendation
    best = runs.loc[(asked - 92.19).abs() < 0.01].iloc[0]
    assert rec["throughput_tok_s"] == pytest.approx(best["output_throughput_tok_s"])
    assert rec["batch_size"] == pytest.approx(best["request_throughput_rps"] * best["e2e_latency_s"])
    assert rec["robust"] and not rec["overloaded"] and "overloaded" not in rec["note"]
    # 250 req/s x 62 tokens x 1.2 = 18,600 tok/s: 4 H100s at 5,694 tok/s each (3 at the undelivered 6,431)
    assert rec["devices"] == math.ceil(250 * 62 * 1.2 / best["output_throughput_tok_s"]) == 4
    note = next(n for n in res.notes if "did not deliver the rate asked" in n)
    assert note.startswith("3 request-rate run(s) did not deliver the rate asked (122.6 asked, 101.2 completed;")
    assert "Overloaded" not in res.summary()
    # the undelivered stages are still operating points (drawn, listed), not chosen
    pts = res.points
    assert len(pts) == 7 and pts["throughput_tok_s"].max() == pytest.approx(runs["output_throughput_tok_s"].max())


def test_a_target_an_overloaded_rate_meets_does_not_make_it_the_plan(inference_perf) -> None:  # noqa: ANN001
    # p99 TTFT under 5 s: every stage meets it, the overloaded ones (3.2-3.3 s) too; a delivered one is planned
    res = plan({"workload": WORKLOAD, "slo": {"ttft_s": 5.0, "percentile": "p99"}}, inference_perf)
    rec = res.recommendation
    assert rec["ttft_s"] < 0.2 and not rec["overloaded"] and rec["robust"]


def test_a_sweep_with_no_delivered_rate_is_planned_at_one_and_says_so(inference_perf) -> None:  # noqa: ANN001
    runs = inference_perf[inference_perf["request_rate_rps"] > 100]
    res = plan({"workload": WORKLOAD}, runs)
    rec = res.recommendation
    assert rec["overloaded"] and not rec["robust"]
    assert "an overloaded rate: its run(s) completed 103.1 of the 183.4 req/s asked" in rec["note"]
    assert "no rate of the sweep was delivered" in rec["note"]
    summary = res.summary()
    assert "Overloaded: the server did not deliver the planned request rate" in summary
    # neither the band's reason for "not robust" nor a load read off a line from nothing to a saturated peak
    assert "throughput band" not in summary and "each replica holds" not in summary


def test_guidellms_constant_sweep_did_not_deliver_only_its_top_rate(formats_dir, tmp_path) -> None:  # noqa: ANN001
    """GuideLLM's constant sweep on two T4s (60 s windows) completed 93 % of the rate at 2.6 req/s, unloaded: a
    client counting completions over a window misses the requests still running at its end. That is the sweep's
    baseline; 18 req/s (87 %, the peak its throughput mode reached was 18.0 req/s) was not delivered, 15.8 (90 %)
    was, and is planned where the 18 req/s run had been."""
    path = formats_dir / "guidellm-derived-csv" / "guidellm-pd-disaggregation__all-benchmarks.csv"
    runs = _import([path], tmp_path, hardware="t4", model="qwen3-0.6b", framework="vllm", device_count=2)
    late = undelivered_rates(runs)
    assert runs.loc[late, "request_rate_rps"].tolist() == [18.0]
    assert not late[runs["load_kind"] != "request_rate"].any()
    res = plan({"workload": {"request_rate_rps": 50, "input_len_tok": 264, "output_len_tok": 120}}, runs)
    rec = res.recommendation
    # a rate run's batch is the requests it held in flight, the file's measured concurrency
    chosen = runs.loc[(runs["measured_concurrency"] - rec["batch_size"]).abs() < 1e-9, "request_rate_rps"]
    assert chosen.tolist() == [15.8] and not rec["overloaded"] and rec["robust"]
    assert any(n.startswith("1 request-rate run(s) did not deliver the rate asked (18 asked, 15.58 completed")
               for n in res.notes)


def test_the_baseline_is_the_lowest_rates_share_within_bounds() -> None:
    base = {"hardware": "h100-sxm", "model": "llama-3-8b", "framework": "vllm", "device_count": 1,
            "input_len_tok": 200.0, "output_len_tok": 60.0, "load_kind": "request_rate"}
    asked = np.array([1.0, 10.0, 20.0, 40.0])

    def runs(done: np.ndarray) -> pd.DataFrame:
        return pd.DataFrame([{**base, "request_rate_rps": a, "request_throughput_rps": d}
                             for a, d in zip(asked, done, strict=True)])

    # every rate 8 % short, as a window-counting client reads an unloaded server: all delivered
    assert not undelivered_rates(runs(asked * 0.92)).any()
    # ... but the same 8 % short against a full lowest rate is an overload
    assert undelivered_rates(runs(asked * np.array([1.0, 1.0, 0.92, 0.92]))).tolist() == [False, False, True, True]
    # a sweep whose lowest rate is itself overloaded does not lower the bar below 90 % x 95 %
    assert undelivered_rates(runs(asked * np.array([0.5, 0.86, 0.9, 0.6]))).tolist() == [True, False, False, True]
    # one run alone, 56 % delivered (inference-perf's 183.4 req/s stage)
    assert undelivered_rates(runs(asked * 0.56).head(1)).tolist() == [True]
    # the completed rate from the output throughput where the file gives no request rate
    r = runs(asked).drop(columns="request_throughput_rps").assign(output_throughput_tok_s=asked * 60 * 0.5)
    assert undelivered_rates(r).tolist() == [True] * 4
    # other loads, and rate runs without a throughput, are never flagged
    assert not undelivered_rates(runs(asked * 0.5).assign(load_kind="concurrency")).any()
    assert not undelivered_rates(runs(asked * np.nan)).any()


def test_an_undelivered_rate_is_never_offered_as_the_cheaper_batch(inference_perf) -> None:  # noqa: ANN001
    """Under a p99 TTFT of 5 s the three undelivered stages (101-103 req/s completed) meet the target and need
    fewer H100s than the delivered 92 req/s planned: no operating point, so not named as a cheaper one."""
    res = plan({"workload": WORKLOAD, "slo": {"ttft_s": 5.0, "percentile": "p99"}}, inference_perf)
    pts = res.points
    rec = res.recommendation
    assert (pts.loc[pts["slo_ok"].astype(bool), "devices"] < rec["devices"]).any()
    assert math.isnan(rec["cheaper_batch"]) and "Cheaper" not in res.summary()
