"""Sharp saturation (a linear rise that stops) and curves along another x than the batch (perfmodel.curves).

The reviewer's cases: min(50 B, 3,200) at linearly spaced batches, and inference-perf's request-rate sweep
(5,694, 6,317, 6,324, 6,431 tok/s at 92 to 183 req/s), where the exponential said "plateau not reached" with
five (three) points on the plateau, and the messages of the rate curve spoke of batches.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfmodel.curve_tables import batch_estimate_text, fits_summary, kv_full_batches
from perfmodel.curves import (
    NRH_THETA_MIN,
    fit_curve,
    fit_curves,
    nonrect_hyperbola,
    nrh_batch_at_fraction,
    saturating_exp,
)

HOCKEY_B = np.array([1, 16, 32, 48, 64, 80, 96, 112, 128], dtype=float)
RATE_RPS = np.array([1.0, 31.4, 61.79, 92.19, 122.59, 152.98, 183.38])
RATE_TPUT = np.array([64.23, 1943.01, 3820.66, 5693.88, 6316.81, 6323.77, 6431.06])


def hockey(seed: int = 3, noise: float = 0.01) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.minimum(50 * HOCKEY_B, 3200) * (1 + rng.normal(0, noise, len(HOCKEY_B)))


@pytest.mark.parametrize("seed", range(5))
def test_a_rise_that_stops_is_fitted_with_its_plateau_reached(seed: int) -> None:
    # Guards: the exponential gave c 3,549 [3,219, 4,175] against a flat ~3,176 on five points and said
    # "plateau not reached (95% at batch 133 > 128)"; the piecewise shape (linear in log2 batch) cannot follow it.
    y = hockey(seed)
    fit = fit_curve(HOCKEY_B, y, n_boot=200, seed=seed)
    assert fit.shape == "nrh" and fit.success, fit.message
    assert "AICc" in fit.shape_reason
    flat = y[HOCKEY_B >= 64].mean()
    lo, hi = fit.ci["c"]
    assert lo <= flat <= hi and hi - lo < 0.05 * flat
    assert fit.plateau_reached and not fit.plateau_extrapolated
    assert "plateau reached: 5 measured batch sizes" in fit.message and "not reached" not in fit.message
    assert 55 <= fit.knees[0] <= 70 and fit.b95 <= 70
    row = fit.as_row()
    assert row["plateau_tok_s"] == row["c"] == fit.params["c"] and np.isfinite(row["k"]) and np.isnan(row["a"])


def test_nrh_recovers_known_parameters_and_scales_with_throughput() -> None:
    b = np.repeat(np.array([1, 8, 16, 32, 48, 64, 96, 128, 192, 256], dtype=float), 3)
    rng = np.random.default_rng(0)
    y = nonrect_hyperbola(b, 40.0, 4000.0, 0.97) * (1 + 0.01 * rng.standard_normal(len(b)))
    fit = fit_curve(b, y, shape="nrh", intervals="none")
    assert fit.shape == "nrh" and fit.success, fit.message
    assert fit.params["k"] == pytest.approx(40.0, rel=0.05) and fit.params["c"] == pytest.approx(4000, rel=0.02)
    assert NRH_THETA_MIN <= fit.params["theta"] <= 1
    # scaling throughput by 7 scales the plateau and slope by 7 (equivariance), batches unchanged
    big = fit_curve(b, 7 * y, shape="nrh", intervals="none")
    assert big.params["c"] == pytest.approx(7 * fit.params["c"], rel=1e-6)
    assert big.params["theta"] == pytest.approx(fit.params["theta"], abs=1e-6)


def test_nrh_batch_at_fraction_inverts_the_curve() -> None:
    for k, c, th in ((40.0, 4000.0, 0.9), (3.0, 500.0, 0.999), (1.0, 10.0, 0.95)):
        for f in (0.5, 0.9, 0.95):
            xb = float(nrh_batch_at_fraction(k, c, th, f))
            assert nonrect_hyperbola(xb, k, c, th) == pytest.approx(f * c, rel=1e-9)
    assert np.isinf(nrh_batch_at_fraction(0.0, 1.0, 0.9, 0.9))


@pytest.mark.parametrize("seed", range(10))
def test_gradual_exponential_data_keep_the_exponential(seed: int) -> None:
    # Guards the default: a curve the exponential fits is not handed to the sharper shape
    b = np.repeat(np.array([1, 2, 4, 8, 16, 32, 64, 128, 256], dtype=float), 3)
    rng = np.random.default_rng(seed)
    y = saturating_exp(b, 9000, 0.03, 10000) * (1 + 0.03 * rng.standard_normal(len(b)))
    fit = fit_curve(b, y, intervals="none")
    assert fit.shape == "exp", fit.message
    assert "nrh" in fit.criteria


def test_a_request_rate_curve_speaks_of_request_rates() -> None:
    # Guards: "knee 75.6 (still growing: plateau not reached)", b90 184 "(extrapolated: measured up to batch
    # 183.38)" and a KV-full batch on inference-perf's rate sweep
    fit = fit_curve(RATE_RPS, RATE_TPUT, x_name="request_rate_rps")
    assert fit.shape == "nrh" and fit.plateau_reached, fit.message
    lo, hi = fit.ci["c"]
    assert lo <= RATE_TPUT[-3:].mean() <= hi
    assert "batch" not in fit.message and "3 measured request rates" in fit.message
    exp = fit_curve(RATE_RPS, RATE_TPUT, shape="exp", x_name="request_rate_rps")
    assert "95% of it at request rate 240 req/s" in exp.message and "batch" not in exp.message
    assert batch_estimate_text(240.0, 163.0, 437.0, batch_max=183.38, x="request_rate_rps") \
        == "240 [163, 437] (extrapolated: measured up to request rate 183.38 req/s)"
    runs = pd.DataFrame({"hardware": "h100-sxm", "device_count": 1, "framework": "vllm", "model": "llama-3-8b",
                         "input_len_tok": 204.0, "output_len_tok": 62.0, "request_rate_rps": RATE_RPS,
                         "output_throughput_tok_s": RATE_TPUT})
    by = ["hardware", "device_count", "framework", "model", "input_len_tok", "output_len_tok"]
    table = fit_curves(runs, by, x="request_rate_rps", shape="exp")
    assert table["x_name"].tolist() == ["request_rate_rps"]
    assert kv_full_batches(table).isna().all()  # a batch on a rate axis means nothing
    assert kv_full_batches(table.assign(x_name="batch_size")).notna().all()
    row = fits_summary(table, by).iloc[0]
    assert "request rate" in row["b95"] and "batch" not in row["b95"] + row["knees"] + row["plateau_ci"]
    assert "measured request rates" in row["knees"]


def test_too_few_values_are_counted_in_the_x_words() -> None:
    fit = fit_curve([1.0, 2.0], [5.0, 9.0], x_name="request_rate_rps")
    assert "2 distinct request rate(s)" in fit.message and fit.x_name == "request_rate_rps"
