"""The ALA hybrid: confidence formula, curve recovery on known curves, annealing settings, persistence."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _predict_data import synthetic_runs

from perfmodel.errors import PerfmodelError
from perfmodel.models import get_predictor, load_predictor
from perfmodel.models.hybrid import cosine_confidence


def test_cosine_confidence_known_values():
    pts = np.array([[1.0, 0.0]] * 5 + [[0.0, 1.0]] * 5)
    # five identical neighbours: distance 0 -> confidence 1
    assert cosine_confidence(np.array([[2.0, 0.0]]), pts)[0] == pytest.approx(1.0)
    # at 45 degrees every neighbour is at 1 - cos(45) -> 1 / (2 - 1/sqrt 2)
    assert cosine_confidence(np.array([[1.0, 1.0]]), pts)[0] == pytest.approx(1 / (2 - 2 ** -0.5))
    # leave-self-out on distinct orthogonal points: the nearest others are at distance 1
    eye = np.eye(6)
    np.testing.assert_allclose(cosine_confidence(eye, eye, k=5, exclude_self=True), 0.5)


@pytest.fixture(scope="module")
def fitted():
    runs = synthetic_runs(noise=0.0)
    return runs, get_predictor("ala", sa_iterations=4, seed=0).fit(runs)


def test_recovers_known_curves_on_training_configurations(fitted):
    runs, model = fitted
    pred = model.predict(runs)
    y = runs["output_throughput_tok_s"].to_numpy()
    ape = np.abs(pred["pred_throughput_tok_s"].to_numpy() - y) / y
    assert np.median(ape) < 0.10
    assert pred["pred_lower"].isna().all() and pred["pred_upper"].isna().all()  # no published interval
    assert ((pred["confidence"] > 0) & (pred["confidence"] <= 1)).all()
    assert model.n_fitted_ == 8 and model.sa_log_["iterations"] == 4


def test_annealing_log_and_settings(fitted):
    _, model = fitted
    log = model.sa_log_
    assert 1.0 <= log["t0"] / log["initial_energy"] <= 2.0
    assert log["best_energy"] <= log["initial_energy"]
    runs = synthetic_runs()
    for bad in ({"alpha": 0.9}, {"t0_factor": 3.0}, {"sa_iterations": -1}, {"val_fraction": 1.0}):
        with pytest.raises(PerfmodelError):
            get_predictor("ala", **bad).fit(runs)


def test_round_trip_and_domain(fitted, tmp_path):
    runs, model = fitted
    q = runs.sample(frac=1.0, random_state=1)
    pred = model.predict(q)
    assert pred.index.equals(q.index)
    model.save(tmp_path / "m")
    assert {p.name for p in (tmp_path / "m").iterdir()} == {"metadata.json", "booster.json"}
    again = load_predictor(tmp_path / "m").predict(q)
    pd.testing.assert_frame_equal(again, pred, check_exact=True)
    far = q.iloc[:3].copy()
    far["hardware"] = "mi300x"  # in the catalog, never seen in training
    assert not model.predict(far)["in_domain"].any()
    # a batch far outside the training points lowers the confidence
    big = q.iloc[:1].copy()
    big["batch_size"] = 4096.0
    assert model.predict(big)["confidence"].iloc[0] < model.predict(q.iloc[:1])["confidence"].iloc[0]


def test_real_subset_trains_quickly(all_results_csv):
    from perfmodel.importers import read_file

    runs = read_file(all_results_csv).runs
    sub = runs[runs["hardware"] == "h100-sxm"].reset_index(drop=True)
    assert len(sub) == 908
    model = get_predictor("ala", sa_iterations=3).fit(sub)
    y = sub["output_throughput_tok_s"].to_numpy()
    ape = np.abs(model.predict(sub)["pred_throughput_tok_s"].to_numpy() - y) / y
    assert model.n_configs_ > model.n_fitted_ > 150  # configurations with < 3 batch sizes are left out
    assert np.median(ape) < 0.25


def test_a_batch_or_length_more_than_twice_outside_the_trained_ones_is_out_of_domain(fitted, tmp_path):
    # Batch 1,024, four times the largest trained, had been in domain at confidence 0.98, where every other
    # predictor said it was not.
    runs, model = fitted
    q = runs.iloc[:1].drop(columns="output_throughput_tok_s")
    b_hi, l_hi = runs["batch_size"].max(), runs["input_len_tok"].max()
    q = pd.concat([q, q.assign(batch_size=4 * b_hi), q.assign(batch_size=2 * b_hi), q.assign(input_len_tok=3 * l_hi)],
                  ignore_index=True)
    inside = model.predict(q)["in_domain"].tolist()
    assert inside[0] and inside[2] and not inside[1] and not inside[3]
    why = model.domain_reasons(q)
    assert why[1][-1] == f"batch {4 * b_hi:g} is more than twice outside the trained batches " \
        f"{runs['batch_size'].min():g}-{b_hi:g}" and why[1][-1].kind == "batch_range"
    assert why[3][-1].startswith(f"input length {3 * l_hi:g} is more than twice outside the trained input lengths")
    model.save(tmp_path / "m")
    assert load_predictor(tmp_path / "m").predict(q)["in_domain"].tolist() == inside
