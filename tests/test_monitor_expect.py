"""Expected values for the threshold detector and cold start, from fitted curves and predictors.

Known answers: the synthetic runs of tests/_predict_data.py follow
``c - a * exp(-b * B)`` with known parameters per configuration, so the curve
fitted to the matching configuration must give that value at the deployment's
batch size; a predictor's expectation is its own prediction for the query.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _predict_data import curve_params, synthetic_runs
from click.testing import CliRunner

from perfmodel.cli import main
from perfmodel.curves import fit_curve
from perfmodel.models import get_predictor
from perfmodel.monitor import make_detector, monitor_stream
from perfmodel.monitor.expect import (
    ExpectationError,
    curve_for_query,
    expectation_from_curve,
    expectation_from_predictor,
    matching_runs,
)
from perfmodel.monitor.streams import read_stream
from perfmodel.store import Store

QUERY = {"hardware": "h100-sxm", "model": "llama-3-8b", "framework": "vllm", "device_count": 1,
         "input_len_tok": 128.0, "output_len_tok": 128.0}


def _truth(batch: float) -> float:
    a, b, c = curve_params("h100-sxm", "llama-3-8b", 128.0)
    return c - a * math.exp(-b * batch)


def test_curve_expectation_recovers_the_known_curve() -> None:
    fit = curve_for_query(synthetic_runs(), QUERY)
    assert fit.success and fit.n_points == 4
    for batch in (8.0, 16.0, 48.0):
        assert expectation_from_curve(fit, batch) == pytest.approx(_truth(batch), rel=0.01)
    # 4,127 tok/s: the value pinned from the generator (6000 * 1.2 * (1 - 0.95 exp(-0.8)) at batch 16)
    assert expectation_from_curve(fit, 16.0) == pytest.approx(7200 * (1 - 0.95 * math.exp(-0.8)), rel=0.01)


def test_curve_expectation_follows_the_batch_per_timestamp() -> None:
    fit = curve_for_query(synthetic_runs(), QUERY)
    t = np.array([0.0, 1.0, 2.0, 3.0])
    batch_at = {0.0: 1.0, 1.0: 16.0, 2.0: 64.0}  # 3.0: unknown batch
    exp = expectation_from_curve(fit, lambda ts: np.array([batch_at.get(float(x), np.nan) for x in ts]))
    assert callable(exp)
    got = exp(t)
    assert got[:3] == pytest.approx([_truth(1.0), _truth(16.0), _truth(64.0)], rel=0.01)
    assert math.isnan(got[3])


def test_failed_or_useless_curve_raises() -> None:
    bad = fit_curve([1.0, 2.0], [10.0, 20.0], intervals="none")  # too few batch sizes to fit
    assert not bad.success
    with pytest.raises(ExpectationError, match="curve fit failed"):
        expectation_from_curve(bad, 4.0)
    good = curve_for_query(synthetic_runs(), QUERY)
    with pytest.raises(ExpectationError, match="not a positive number"):
        expectation_from_curve(good, 0.0)


def test_matching_runs_names_what_is_missing() -> None:
    runs = synthetic_runs()
    assert len(matching_runs(runs, QUERY)) == 4
    with pytest.raises(ExpectationError, match=r"input_len_tok=300.*present: 128.0, 512.0"):
        matching_runs(runs, {**QUERY, "input_len_tok": 300.0})
    with pytest.raises(ExpectationError, match=r"several configurations; give hardware \(one of: a100-40gb, h100-sxm"):
        curve_for_query(runs, {"model": "llama-3-8b", "input_len_tok": 128.0})


class _Fixed:
    """A stand-in predictor answering a fixed throughput (the contract: predict(frame) -> frame)."""

    name = "fixed"

    def __init__(self, value: float) -> None:
        self.value = value
        self.seen: list[dict] = []

    def predict(self, runs: pd.DataFrame, *, level: float = 0.9) -> pd.DataFrame:
        self.seen.extend(runs.to_dict("records"))
        return pd.DataFrame({"pred_throughput_tok_s": [self.value] * len(runs)}, index=runs.index)


def test_predictor_expectation_and_its_failure() -> None:
    p = _Fixed(1234.5)
    assert expectation_from_predictor(p, {**QUERY, "batch_size": 16.0}) == 1234.5  # type: ignore[arg-type]
    assert p.seen[0]["batch_size"] == 16.0 and p.seen[0]["hardware"] == "h100-sxm"
    with pytest.raises(ExpectationError, match="not a positive finite throughput"):
        expectation_from_predictor(_Fixed(math.nan), {**QUERY, "batch_size": 16.0})  # type: ignore[arg-type]


def test_a_configuration_that_cannot_run_is_named_not_given_nan(tmp_path: Path) -> None:
    # Bug: Llama-3-70B's 141 GB of bf16 weights on one 80 GB H100 raised "gave nan, not a positive finite
    # throughput" from roofline-gbm, and a baseline (which does not mask) gave a throughput for a deployment
    # that cannot exist, silently.
    query = {**QUERY, "model": "llama-3-70b", "batch_size": 16.0}
    for p in (_Fixed(math.nan), _Fixed(1234.5), get_predictor("linear").fit(synthetic_runs())):
        with pytest.raises(ExpectationError) as info:
            expectation_from_predictor(p, query)  # type: ignore[arg-type]
        msg = str(info.value)
        assert "the configuration cannot run: llama-3-70b's weights, 141 GB in 16-bit, exceed the 80 GB" in msg
        assert "not a positive finite" not in msg and "--expected" in msg
    model = get_predictor("linear").fit(synthetic_runs())
    model.save(tmp_path / "m")
    csv = _stream_csv(tmp_path / "s.csv", 1000.0)
    res = CliRunner().invoke(main, ["detect", str(csv), "--detector", "threshold", "--model-dir", str(tmp_path / "m"),
                                    "--hardware", "h100-sxm", "--model", "llama-3-70b", "--framework", "vllm",
                                    "--input-len", "128", "--output-len", "128", "--batch", "16"])
    assert res.exit_code != 0 and "Traceback" not in res.output
    assert "the configuration cannot run: llama-3-70b's weights" in res.output, res.output


def test_threshold_and_cold_start_use_the_curve() -> None:
    fit = curve_for_query(synthetic_runs(), QUERY)
    e = expectation_from_curve(fit, 16.0)
    x = np.full(60, float(e))
    x[40:] *= 0.8  # a 20% drop: beyond the 15% threshold
    t = np.arange(60.0)
    res = make_detector("threshold", expected=e).run(t, x)
    assert np.flatnonzero(res.flags).tolist() == list(range(40, 60))
    # cold start: a point detector with no baseline yet judges against the curve
    cold = make_detector("point", expected=e).run(t[:10], np.r_[x[:5], x[:5] * 0.7])
    assert np.flatnonzero(cold.flags).tolist() == [5, 6, 7, 8, 9] and cold.cold[:10].all()


def _stream_csv(path: Path, level: float) -> Path:
    rows = [{"timestamp": 1000.0 + i, "output_throughput_tok_s": level * (0.7 if i >= 50 else 1.0)}
            for i in range(80)]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_cli_expect_from_dataset(tmp_path: Path) -> None:
    store = Store()
    info = store.create_dataset("synthetic", {"source": "test"})
    store.append_runs(info.id, synthetic_runs())
    csv = _stream_csv(tmp_path / "s.csv", _truth(16.0))
    args = ["detect", str(csv), "--detector", "threshold", "--expect-from", "synthetic", "--hardware", "h100-sxm",
            "--model", "llama-3-8b", "--framework", "vllm", "--input-len", "128", "--output-len", "128",
            "--batch", "16"]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    assert "1 alert(s)" in res.output
    shown = float(res.output.split("expected output_throughput_tok_s: ")[1].split()[0].replace(",", ""))
    assert shown == pytest.approx(_truth(16.0), rel=0.01)
    recs = json.loads(CliRunner().invoke(main, [*args, "--json"]).output)
    assert [(r["start_timestamp_s"], r["end_timestamp_s"]) for r in recs] == [(1050.0, 1079.0)]
    assert recs[0]["expected"] == pytest.approx(_truth(16.0), rel=0.01)
    # a query matching nothing is a clean error, exit code 1 or 2, no traceback
    bad = CliRunner().invoke(main, [*args[:-2], "--batch", "16", "--input-len", "300"])
    assert bad.exit_code != 0 and "input_len_tok=300" in bad.output and "Traceback" not in bad.output
    res = CliRunner().invoke(main, ["detect", str(csv), "--expect-from", "synthetic"])
    assert res.exit_code == 2 and "--batch" in res.output


def test_cli_model_dir(tmp_path: Path) -> None:
    runs = synthetic_runs()
    model = get_predictor("linear").fit(runs)
    model.save(tmp_path / "m")
    want = expectation_from_predictor(model, {**QUERY, "batch_size": 32.0})
    csv = _stream_csv(tmp_path / "s.csv", want)
    base = ["detect", str(csv), "--detector", "threshold", "--model-dir", str(tmp_path / "m"), "--hardware",
            "h100-sxm", "--model", "llama-3-8b", "--framework", "vllm", "--input-len", "128"]
    res = CliRunner().invoke(main, [*base, "--output-len", "128", "--batch", "32"])
    assert res.exit_code == 0, res.output
    shown = float(res.output.split("expected output_throughput_tok_s: ")[1].split()[0].replace(",", ""))
    assert shown == pytest.approx(want, rel=1e-3)
    assert "1 alert(s)" in res.output
    res = CliRunner().invoke(main, [*base, "--batch", "32"])
    assert res.exit_code == 2 and "--output-len" in res.output
    stream = read_stream(csv)
    rep = monitor_stream(stream, detector="threshold", expected={"output_throughput_tok_s": want})
    assert len(rep.alerts) == 1
