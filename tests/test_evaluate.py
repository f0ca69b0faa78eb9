"""Evaluation protocols group correctly; metrics have known values; the harness runs end to end."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _predict_data import synthetic_runs

from perfmodel.errors import UnknownNameError
from perfmodel.evaluate import config_key, evaluate, folds, score, to_markdown


def test_a_configuration_is_the_same_on_every_page() -> None:
    # Guards: the samples' local sweeps at two thread counts were 17 curves on the Curves page and 16
    # configurations in the report's hold-out text (evaluate's key left the varying setting out).
    from pathlib import Path

    from perfmodel.curve_tables import default_curve_by
    from perfmodel.importers import read_file

    root = Path(__file__).resolve().parents[1] / "sample_runs"
    runs = pd.concat([read_file(f).runs for f in sorted(root.glob("*.csv"))], ignore_index=True)
    assert runs["fw_num_threads"].nunique() > 1
    key = config_key(runs)
    assert key[-1] == "fw_num_threads"
    assert runs.groupby(key, dropna=False).ngroups == runs.groupby(default_curve_by(runs), dropna=False).ngroups
    one = runs[runs["fw_num_threads"] == runs["fw_num_threads"].dropna().iloc[0]]
    assert "fw_num_threads" not in config_key(one)  # one setting: the key (and the benchmark's folds) unchanged


def test_protocols_on_all_results(all_results_csv):
    from perfmodel.importers import read_file

    runs = read_file(all_results_csv).runs
    key = config_key(runs)
    assert key[:6] == ["hardware", "device_count", "framework", "model", "input_len_tok", "output_len_tok"]
    assert key[6:] == ["fw_n_batch"]  # llama.cpp's n_batch settings are configurations apart
    codes = runs.groupby(key, dropna=False).ngroup().to_numpy()
    assert codes.max() + 1 == 2363
    (f,) = folds(runs, "config", seed=1)
    assert not set(codes[f.train]) & set(codes[f.test])  # a configuration is never split
    assert len(set(codes[f.test])) == round(0.2 * 2363)
    (r,) = folds(runs, "random", seed=1)
    assert len(r.test) == round(0.2 * 4772) and len(r.train) + len(r.test) == 4772
    hw = folds(runs, "hardware")
    assert len(hw) == 9 and sum(len(f.test) for f in hw) == 4772
    assert len(folds(runs, "model")) == 15 and len(folds(runs, "framework")) == 6
    (b128,) = folds(runs, "batch128")
    assert len(b128.test) == 119 and (runs["batch_size"].to_numpy()[b128.train] <= 128).all()
    (b64,) = folds(runs, "batch64")
    assert len(b64.test) == 130 + 119
    length = folds(runs, "length")
    assert len(length) == 5 and sorted(len(f.test) for f in length) == [898, 947, 948, 968, 1011]
    assert not np.array_equal(folds(runs, "random", 0)[0].test, folds(runs, "random", 1)[0].test)


def test_score_known_values():
    y = np.array([100.0, 200.0, 400.0, 50.0])
    pred = pd.DataFrame({"pred_throughput_tok_s": [110.0, 150.0, 400.0, np.nan],
                         "pred_lower": [90.0, 210.0, 300.0, np.nan], "pred_upper": [120.0, 250.0, 500.0, np.nan],
                         "confidence": [0.9, 0.5, 1.0, 0.1]})
    s = score(y, pred)
    # APEs 10, 25, 0 and 100 (a missing prediction counts as a full miss)
    assert s["median_ape_pct"] == pytest.approx(17.5)
    assert s["mape_pct"] == pytest.approx(33.75)
    assert s["coverage"] == pytest.approx(2 / 3)  # the measured 200 is outside [210, 250]
    assert s["median_rel_width"] == pytest.approx(np.median([30 / 110, 40 / 150, 200 / 400]))
    assert s["spearman_conf_err"] == pytest.approx(-1.0)


class _Oracle:
    """Predicts the measured value with a +-10% band (checks the plumbing, not a model)."""

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def fit(self, runs, y="output_throughput_tok_s"):
        return self

    def predict(self, runs, *, level=0.9):
        y = runs["output_throughput_tok_s"].to_numpy()
        return pd.DataFrame({"pred_throughput_tok_s": y, "pred_lower": 0.9 * y, "pred_upper": 1.1 * y,
                             "confidence": np.linspace(0, 1, len(y)), "in_domain": True}, index=runs.index)


def test_evaluate_end_to_end_and_markdown():
    runs = synthetic_runs(noise=0.05)
    ev = evaluate(runs, {"oracle": _Oracle}, ["random", "hardware", "length"], seeds=[0, 1])
    assert list(ev.table["protocol"]) == ["random", "hardware", "length"]
    assert (ev.table["median_ape_pct"] == 0).all() and (ev.table["coverage"] == 1).all()
    assert (ev.table["n_seeds"] == 2).all() and ev.table.loc[1, "n_folds"] == 2
    assert (ev.table["median_ape_sd"] == 0).all()  # two seeds, both exact: a spread of zero
    assert len(ev.per_seed) == 6 and ev.table["predict_1_ms"].notna().all()
    md = to_markdown(ev.table, ["predictor", "protocol", "median_ape_pct", "spearman_conf_err"])
    assert md.splitlines()[0] == "| predictor | protocol | median_ape_pct | spearman_conf_err |"
    assert "n/a" in md  # spearman is undefined with zero error everywhere
    with pytest.raises(UnknownNameError):
        evaluate(runs, {"oracle": _Oracle}, ["bogus"])


def test_evaluate_registered_baseline_quickly():
    runs = synthetic_runs(noise=0.05)
    ev = evaluate(runs, ["xgboost"], ["config"], seeds=[0], measure_latency=False)
    rec = ev.table.iloc[0]
    assert rec["n_test"] == round(0.2 * 8) * 4 and np.isnan(rec["coverage"])
    assert np.isnan(rec["median_ape_sd"]) and np.isnan(rec["p90_ape_sd"])  # one seed: no spread, not 0.0


def test_a_protocol_without_folds_fails_before_any_training() -> None:
    # Guards: evaluate trained the other protocols' folds for minutes, then failed on one that gives no fold on
    # this data (no batch above 64), and the finished work was lost.
    from perfmodel.errors import ValidationError
    from perfmodel.models import get_predictor

    fitted: list[int] = []

    def factory(seed: int):  # noqa: ANN202
        fitted.append(seed)
        return get_predictor("linear")

    with pytest.raises(ValidationError, match=r"protocol 'batch64' gives no fold.*; the others can run: random"):
        evaluate(synthetic_runs(), {"linear": factory}, protocols=["random", "batch64"], seeds=[0])
    assert fitted == []
