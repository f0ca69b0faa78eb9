"""A curve that rises entirely between two measured batches: its saturation rate is bounded only from below.

LLM-Inference-Bench's A100-40GB x1 / DeepSpeed-MII / Llama-2-7B at 2,048 + 2,048 tokens was measured at batch 1,
16, 32 and 64 and is flat from 16: every rate fast enough fits alike (the squared error is the same for b from 0.8
to 2.0, b90 from 3.7 to 2.1). The fit had read knee 4.47 [4.34, 4.61] and b90 2.72 [2.62, 2.82]; another start
gave b90 2.33 [2.27, 2.40], outside that interval, and asymptotic intervals b in [1.258, 1.265].
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from perfmodel.curve_tables import RISE_NOT_MEASURED, batch_estimate_text, fits_summary
from perfmodel.curves import fit_curve, fit_curves

A100_MII_BATCH = np.array([1.0, 16.0, 32.0, 64.0])
#: output tok/s (the file's total over 2, input = output)
A100_MII_TPUT = np.array([118.22529450674992, 1026.9957572400417, 887.1538759572089, 929.0353496172437]) / 2


def test_a_rise_between_two_measured_batches_gives_ranges_across_the_gap_not_estimates() -> None:
    fit = fit_curve(A100_MII_BATCH, A100_MII_TPUT)
    assert fit.success and fit.shape == "exp"
    assert fit.rate_bounded_below and fit.rise_between == (1.0, 16.0)
    assert "bounded only from below" in fit.message and "between batch 1 and 16" in fit.message
    # the ranges reach across the gap: from the smallest batch to at least the next one
    for lo, hi in (fit.knee_ci[0], fit.b90_ci, fit.b95_ci):
        assert lo == 1.0 and hi >= 16.0
    # the rate has no upper bound, and its lower bound is a real one (slower rises fit clearly worse)
    assert math.isinf(fit.ci["b"][1]) and 0 < fit.ci["b"][0] < fit.params["b"]
    assert math.isinf(fit.ci["a"][1])
    # the plateau is measured (the flat points): still a finite interval
    assert np.isfinite(fit.ci["c"]).all() and fit.ci["c"][0] < fit.params["c"] < fit.ci["c"][1]


@pytest.mark.parametrize("kw", [{"init": "naive"}, {"loss": "linear"}, {"intervals": "asymptotic"},
                                {"intervals": "none"}, {"n_boot": 50, "seed": 3}])
def test_the_gap_ranges_do_not_depend_on_the_start_or_the_interval_method(kw: dict) -> None:
    ref = fit_curve(A100_MII_BATCH, A100_MII_TPUT)
    other = fit_curve(A100_MII_BATCH, A100_MII_TPUT, **kw)
    assert other.rate_bounded_below
    # the naive start lands elsewhere on the flat valley (b90 2.33 against 2.72): both ranges hold both
    assert other.b90_ci[0] <= min(ref.b90, other.b90) and other.b90_ci[1] >= max(ref.b90, other.b90)
    assert other.b90_ci[0] == ref.b90_ci[0] == 1.0 and other.b90_ci[1] >= 16
    assert math.isinf(other.ci["b"][1])


def test_a_measured_rise_keeps_its_estimates() -> None:
    rng = np.random.default_rng(0)
    batch = np.repeat([1.0, 2, 4, 8, 16, 32, 64], 2)
    tput = (1000 - 900 * np.exp(-0.08 * batch)) * (1 + 0.01 * rng.standard_normal(len(batch)))
    fit = fit_curve(batch, tput)
    assert not fit.rate_bounded_below and math.isnan(fit.rise_between[0])
    assert 1 < fit.b90_ci[0] < fit.b90 < fit.b90_ci[1] < 64
    assert np.isfinite(fit.ci["b"]).all()


def test_the_fits_table_says_between_and_not_a_number() -> None:
    runs = pd.DataFrame({"hardware": "a100-40gb", "device_count": 1, "framework": "deepspeed-mii",
                         "model": "llama-2-7b", "input_len_tok": 2048.0, "output_len_tok": 2048.0,
                         "batch_size": A100_MII_BATCH, "output_throughput_tok_s": A100_MII_TPUT})
    table = fit_curves(runs)
    assert bool(table.loc[0, "rate_bounded_below"]) and table.loc[0, "rise_hi"] == 16
    row = fits_summary(table, ["hardware"]).iloc[0]
    for col in ("knees", "b90", "b95"):
        assert row[col].startswith("between 1 and ") and RISE_NOT_MEASURED in row[col], row[col]
    assert "2.72" not in row["b90"] and "4.47" not in row["knees"]


def test_batch_estimate_text_of_a_gap() -> None:
    assert (batch_estimate_text(2.72, 1.0, 16.0, rise_between=(1.0, 16.0))
            == f"between 1 and 16 ({RISE_NOT_MEASURED} 1 and 16)")
    assert batch_estimate_text(2.72, 1.0, 22.8, rise_between=(1.0, 16.0)).startswith("between 1 and 22.8 (")
    # without an interval (intervals none) the gap still reads as a range
    assert batch_estimate_text(2.72, math.nan, math.nan, rise_between=(1.0, 16.0)).startswith("between 1 and 16")
    assert batch_estimate_text(2.72, 2.62, 2.82) == "2.72 [2.62, 2.82]"


def test_all_results_b90s_below_8_from_batch_1_are_all_gap_ranges(all_results_csv) -> None:  # noqa: ANN001
    from perfmodel.importers import read_file

    runs = read_file(all_results_csv).runs
    table = fit_curves(runs, intervals="none")
    ok = table["success"].astype(bool)
    early = ok & (table["b90"] < 8) & (table["batch_min"] == 1)
    assert early.sum() >= 18
    assert table.loc[early, "rate_bounded_below"].all()
    assert (table.loc[early, "b90_lo"] == 1).all() and (table.loc[early, "b90_hi"] >= table.loc[early, "rise_hi"]).all()


# --------------------------------------------------------------------------- import warnings beside the fits


def _two_configs() -> pd.DataFrame:
    rows = []
    for model, file in (("llama-3-8b", "a.json"), ("qwen2-7b", "b.json")):
        for i, b in enumerate((1.0, 8.0, 64.0, 256.0)):
            rows.append({"hardware": "h200", "device_count": 1, "framework": "vllm", "model": model,
                         "input_len_tok": 1000.0, "output_len_tok": 1000.0, "batch_size": b,
                         "output_throughput_tok_s": 100 * (1 - np.exp(-b / 30)), "source_file": file,
                         "source_row": i + 1})
    return pd.DataFrame(rows)


def test_import_warnings_go_to_the_configurations_they_concern() -> None:
    from perfmodel.curve_tables import fit_import_warnings, import_caveats
    from perfmodel.importers import Issue

    runs = _two_configs()
    table = fit_curves(runs, intervals="none")
    issues = [
        Issue("a.json", 3, "batch_size", "2 of 4 concurrency run(s) had far fewer requests in flight", "warning"),
        Issue("b.json", 2, "output_throughput_tok_s", "row 2 throughput assumed", "warning"),
        Issue("b.json", 9, "output_throughput_tok_s", "a row of no configuration here", "warning"),
        Issue("b.json", None, "ttft_s", "TTFT is a mean", "warning"),  # a latency: not about the curve
        Issue("a.json", 1, "model", "row left out", "error"),  # not imported: not about the fit
        Issue("a.json", None, "Batch Size", "a note", "info"),
    ]
    warned = fit_import_warnings(runs, issues, table, ["hardware", "model"])
    by_model = dict(zip(table["model"], warned, strict=True))
    assert by_model["llama-3-8b"] == ("a.json, row 3, column 'batch_size': 2 of 4 concurrency run(s) had far "
                                      "fewer requests in flight",)
    assert by_model["qwen2-7b"] == ("b.json, row 2, column 'output_throughput_tok_s': row 2 throughput assumed",)
    # the same, from the store's frame
    frame = pd.DataFrame([vars(i) if hasattr(i, "__dict__") else {k: getattr(i, k) for k in
                          ("file", "row", "column", "message", "severity")} for i in issues])
    assert fit_import_warnings(runs, frame, table, ["hardware", "model"]) == warned
    text = import_caveats(["A", "B"], warned)
    assert len(text) == 2 and text[0].startswith("Import warning for A: a.json, row 3")
    # none stored, or runs without their source: nothing said
    assert fit_import_warnings(runs, None, table, ["hardware", "model"]) == [(), ()]
    assert fit_import_warnings(runs.drop(columns="source_file"), issues, table, ["hardware", "model"]) == [(), ()]


# --------------------------------------------------------------------------- the band across the gap


def _equally_good_curves(batch: np.ndarray, tput: np.ndarray, rates: np.ndarray) -> list:
    """Exponentials ``c - a' exp(-b (x - x_min))`` at the given rates, ``a'`` and ``c`` by least squares: each
    one a saturating curve through the measured points."""
    out = []
    for b in rates:
        e = np.exp(-b * (batch - batch.min()))
        (c, a), *_ = np.linalg.lstsq(np.column_stack([np.ones_like(e), -e]), tput, rcond=None)
        out.append(lambda x, a=a, b=b, c=c: c - a * np.exp(-b * (np.asarray(x) - batch.min())))
    return out


def test_the_band_across_the_gap_holds_every_curve_the_data_allow() -> None:
    fit = fit_curve(A100_MII_BATCH, A100_MII_TPUT)
    x_lo, x_hi = fit.rise_between
    gap = np.geomspace(x_lo, x_hi, 60)[1:-1]
    lo, hi = fit.band(gap)
    # from the slowest rise the data allow (the rate's lower bound) to a step just past batch 1
    for curve in _equally_good_curves(A100_MII_BATCH, A100_MII_TPUT, np.geomspace(fit.ci["b"][0], 1e3, 12)):
        y = curve(gap)
        assert (lo <= y + 1e-6).all() and (y <= hi + 1e-6).all(), (y.round(1), lo.round(1), hi.round(1))
    # the step (rise just past batch 1) reaches the plateau's band; the slowest rise barely leaves batch 1's
    at_2 = fit.band(np.array([2.0]))
    assert at_2[1][0] >= fit.band(np.array([x_hi]))[1][0] - 1e-9
    assert at_2[0][0] < 0.25 * A100_MII_TPUT[1]


def test_the_band_outside_the_gap_and_of_a_measured_rise_is_the_bootstraps() -> None:
    from perfmodel.curves import _curve_matrix

    fit = fit_curve(A100_MII_BATCH, A100_MII_TPUT)
    out = np.array([1.0, 16.0, 24.0, 48.0, 64.0])
    boot = np.nanquantile(_curve_matrix(fit.shape, fit._boot, out), [0.025, 0.975], axis=0)
    np.testing.assert_allclose(np.vstack(fit.band(out)), boot)
    # a rise the data measure: the band is the replicates' everywhere
    rng = np.random.default_rng(0)
    batch = np.repeat([1.0, 2, 4, 8, 16, 32, 64], 2)
    tput = (1000 - 900 * np.exp(-0.08 * batch)) * (1 + 0.01 * rng.standard_normal(len(batch)))
    measured = fit_curve(batch, tput)
    grid = np.geomspace(1, 64, 50)
    np.testing.assert_allclose(np.vstack(measured.band(grid)),
                               np.nanquantile(_curve_matrix("exp", measured._boot, grid), [0.025, 0.975], axis=0))
