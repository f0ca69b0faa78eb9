"""perfmodel.plots: throughput figures from runs tables (no Streamlit)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from perfmodel.plots import axis_title, lengths_label, throughput_figure


def _runs() -> pd.DataFrame:
    # Two GPUs; the A100 measured at two output lengths, so it holds two separate curves.
    return pd.DataFrame({
        "hardware": ["a100"] * 6 + ["h100"] * 3,
        "model": ["llama"] * 9,
        "framework": ["vllm"] * 9,
        "input_len_tok": [128.0] * 9,
        "output_len_tok": [128.0, 128.0, 128.0, 2048.0, 2048.0, 2048.0, 128.0, 128.0, 128.0],
        "load_kind": ["static_batch"] * 9,
        "batch_size": [4.0, 1.0, 2.0, 1.0, 2.0, 4.0, 1.0, 2.0, np.nan],
        "output_throughput_tok_s": [300.0, 100.0, 180.0, 90.0, 170.0, 290.0, 200.0, 350.0, 500.0],
        "source_file": ["a.csv"] * 9,
        "source_row": list(range(1, 10)),
    })


def test_one_trace_per_colour_with_gaps_between_configurations() -> None:
    fig = throughput_figure(_runs(), color="hardware")
    by_name = {t.name: t for t in fig.data}
    assert set(by_name) == {"a100", "h100"}
    # a100: the 128-token curve sorted by batch, a gap, then the 2048-token curve.
    assert list(by_name["a100"].x) == [1.0, 2.0, 4.0, None, 1.0, 2.0, 4.0]
    assert list(by_name["a100"].y) == [100.0, 180.0, 300.0, None, 90.0, 170.0, 290.0]
    assert by_name["a100"].connectgaps is False
    # The h100 point without a batch size is left out, and the title says so.
    assert list(by_name["h100"].x) == [1.0, 2.0]
    assert "1 run(s) not shown: no finite batch size" in fig.layout.title.text


def test_one_point_or_a_flat_set_is_drawn_from_zero() -> None:
    # Guards: one point's axis spanned a hair around it (1,418.4 to 1,418.6), reading as a wild swing.
    one = _runs().iloc[[0]]
    assert list(throughput_figure(one).layout.yaxis.range) == [0.0, pytest.approx(1.15 * 300.0)]
    flat = _runs().iloc[:3].assign(output_throughput_tok_s=[300.0, 305.0, 302.0])
    assert list(throughput_figure(flat).layout.yaxis.range) == [0.0, pytest.approx(1.15 * 305.0)]
    assert throughput_figure(_runs()).layout.yaxis.range is None  # a spread set keeps plotly's own range


def test_a_setting_splits_the_line_and_far_apart_colours_get_a_log_axis() -> None:
    # LLM-Inference-Bench's llama.cpp rows at four n_batch values zig-zagged as one line per configuration,
    # and the sample's CPU runs lay flat along zero beside the H200's 21,000 tok/s.
    runs = _runs().iloc[:3]
    both = pd.concat([runs.assign(fw_n_batch=64.0), runs.assign(fw_n_batch=512.0, output_throughput_tok_s=lambda d:
                                                                d["output_throughput_tok_s"] * 2)])
    (trace,) = throughput_figure(both, color="hardware").data
    assert list(trace.x) == [1.0, 2.0, 4.0, None, 1.0, 2.0, 4.0]
    assert throughput_figure(_runs(), color="hardware").layout.yaxis.type is None  # within 30x: linear
    far = pd.concat([_runs(), _runs().assign(hardware="cpu", output_throughput_tok_s=lambda d:
                                             d["output_throughput_tok_s"] / 100)])
    fig = throughput_figure(far, color="hardware")
    assert fig.layout.yaxis.type == "log" and "(log scale)" in fig.layout.yaxis.title.text


def test_colour_by_lengths_and_hover_names_the_configuration() -> None:
    fig = throughput_figure(_runs(), color="lengths", log_x=True)
    assert {t.name for t in fig.data} == {"128/128", "128/2048"}
    assert fig.layout.xaxis.type == "log"
    t = next(t for t in fig.data if t.name == "128/2048")
    assert "hardware: a100" in t.text[0] and "source_row: 4" in t.text[0]
    assert "batch size" in fig.layout.xaxis.title.text


def test_empty_and_unplottable_runs_give_an_annotated_empty_figure() -> None:
    fig = throughput_figure(_runs().iloc[0:0])
    assert len(fig.data) == 0 and fig.layout.annotations[0].text == "No runs to plot"
    rate_only = _runs().assign(batch_size=np.nan)
    fig = throughput_figure(rate_only)
    assert len(fig.data) == 0 and "9 run(s) not shown: no finite batch size" in fig.layout.annotations[0].text


def test_repeats_share_one_line_through_their_medians_and_each_run_is_a_dot() -> None:
    # A sweep with three repeats had drawn three same-coloured lines crossing each other (112 -> 261 and
    # 151 -> 196 tok/s), nothing saying they were repeats; an HTTP sweep's axis said "batch size".
    runs = pd.concat([_runs().iloc[:3].assign(repeat_idx=r, output_throughput_tok_s=lambda d, r=r:
                                               d["output_throughput_tok_s"] * (1 + 0.1 * r)) for r in range(3)],
                     ignore_index=True)
    fig = throughput_figure(runs, color="hardware")
    line, dots = fig.data
    assert (line.mode, dots.mode) == ("lines", "markers") and line.line.color == dots.marker.color
    assert list(line.x) == [1.0, 2.0, 4.0] and list(line.y) == pytest.approx([110.0, 198.0, 330.0])  # medians
    assert len(dots.x) == 9 and dots.showlegend is False and dots.legendgroup == line.legendgroup == "a100"
    assert "median of each point's repeats" in fig.layout.title.text
    assert "median of 3 run(s)" in line.text[0]
    # one run per point: one line through the points, as before
    assert [t.mode for t in throughput_figure(_runs(), color="hardware").data] == ["lines+markers"] * 2
    conc = throughput_figure(runs.assign(load_kind="concurrency"), color="hardware")
    assert conc.layout.xaxis.title.text == "concurrency (requests in flight)"
    assert throughput_figure(runs, color="hardware").layout.xaxis.title.text == "batch size (sequences)"


def test_bad_option_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="color must be one of"):
        throughput_figure(_runs(), color="nonsense")


def test_labels() -> None:
    assert lengths_label(_runs()).tolist()[2:4] == ["128/128", "128/2048"]
    assert axis_title("output_throughput_tok_s") == "output throughput (tok/s)"
    assert axis_title("request_rate_rps") == "request rate (req/s)"


# --------------------------------------------------------------------------------------------------
# saturation-curve figures and tables


def _known_fit_frame() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    batches = np.repeat([1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0], 3)
    tput = (1000.0 - 900.0 * np.exp(-0.05 * batches)) * (1 + 0.02 * rng.standard_normal(len(batches)))
    return pd.DataFrame({"hardware": "h100-sxm", "input_len_tok": 512.0, "output_len_tok": 128.0,
                         "batch_size": batches, "output_throughput_tok_s": tput})


def test_curve_figure_has_points_band_fit_and_knee_with_interval() -> None:
    import dataclasses

    from perfmodel.curve_tables import NOT_ESTIMABLE, batch_estimate_text
    from perfmodel.curves import fit_curve
    from perfmodel.plots import KNEE_META, curve_figure, repeat_summary

    runs = _known_fit_frame()
    fit = fit_curve(runs["batch_size"], runs["output_throughput_tok_s"], shape="exp", n_boot=60)
    pts = repeat_summary(runs, ["hardware"]).assign(configuration="H100")
    assert len(pts) == 8 and (pts["n_repeats"] == 3).all() and (pts["y_std"] > 0).all()
    fig = curve_figure([fit], pts, ["H100"])
    metas = [t.meta for t in fig.data]
    assert metas[:4] == ["measured", "band", "band", "fit"] and KNEE_META in metas
    knee = fig.data[metas.index(KNEE_META)]
    assert knee.x[0] == pytest.approx(fit.knees[0]) and knee.marker.symbol == "diamond"
    lo, hi = fit.knee_ci[0]
    assert knee.error_x.arrayminus[0] == pytest.approx(fit.knees[0] - lo)
    assert knee.error_x.array[0] == pytest.approx(hi - fit.knees[0])
    assert "knee at batch" in knee.hovertemplate
    assert knee.text[0] == batch_estimate_text(fit.knees[0], lo, hi, n_batches=fit.n_batches,
                                               batch_max=fit.batch_range[1])
    # an interval with no width reads as in the fit table, not "[x, x]"
    flat = dataclasses.replace(fit, knee_ci=((fit.knees[0], fit.knees[0]),))
    flat_knee = next(t for t in curve_figure([flat], pts, ["H100"]).data if t.meta == KNEE_META)
    assert flat_knee.text[0].endswith(f"({NOT_ESTIMABLE} from {fit.n_batches} batch sizes)")
    # A saturated curve's knee is filled; one whose plateau was not reached is drawn open and says so.
    assert not fit.plateau_extrapolated and knee.marker.color != "white"
    assert "plateau not reached" not in knee.hovertemplate
    open_fig = curve_figure([dataclasses.replace(fit, plateau_extrapolated=True)], pts, ["H100"])
    open_knee = next(t for t in open_fig.data if t.meta == KNEE_META)
    assert open_knee.marker.color == "white" and "plateau not reached" in open_knee.hovertemplate
    assert "knee, plateau not reached" in [t.name for t in open_fig.data]
    assert "knee, plateau not reached" not in [t.name for t in fig.data]
    # so is one still short of 95% of its plateau at its largest batch, however near the plateau lies: such a
    # knee sits near 0.45x the largest measured batch (477 of LLM-Inference-Bench's 681 knees were drawn solid)
    short = dataclasses.replace(fit, b95=fit.batch_range[1] * 1.5)
    assert not short.plateau_extrapolated
    short_knee = next(t for t in curve_figure([short], pts, ["H100"]).data if t.meta == KNEE_META)
    assert short_knee.marker.color == "white" and "plateau not reached" in short_knee.hovertemplate
    assert fig.layout.xaxis.type == "log"
    band_hi = fig.data[2]
    assert band_hi.fill == "tonexty" and all(a <= b for a, b in zip(fig.data[1].y, band_hi.y, strict=True))


def test_curve_figure_without_fit_draws_points_only() -> None:
    from perfmodel.curves import fit_curve
    from perfmodel.plots import curve_figure

    fit = fit_curve([1.0, 2.0], [10.0, 20.0])
    pts = pd.DataFrame({"configuration": ["x", "x"], "x": [1.0, 2.0], "y_mean": [10.0, 20.0],
                        "y_std": [0.0, 0.0], "n_repeats": [1, 1]})
    fig = curve_figure([fit], pts, ["x"])
    assert [t.meta for t in fig.data] == ["measured"]
    assert curve_figure([], pts, []).layout.annotations[0].text == "No configuration selected"
    with pytest.raises(ValueError, match="labels"):
        curve_figure([fit], pts, [])


def test_config_labels_name_only_what_differs() -> None:
    from perfmodel.plots import config_label, config_labels

    assert config_label({"hardware": "a100", "device_count": 4, "framework": "vllm", "input_len_tok": 128.0,
                         "output_len_tok": 2048.0, "weight_dtype": "fp8"}) == "a100 x4 · vllm · 128/2048 · w fp8"
    assert config_label({"output_len_tok": 128.0}) == "out 128"
    # words, not column names (Monitor's groups read "framework_version=5.24.0")
    assert config_label({"framework": "transformers", "framework_version": "5.24.0", "quantization": "gptq"}) == (
        "transformers · v5.24.0 · quant gptq")
    assert config_label({"framework_version": "nightly"}) == "nightly"
    table = pd.DataFrame({"hardware": ["a100", "a100", "h100"], "model": ["m", "m", "m"],
                          "input_len_tok": [128.0, 256.0, 128.0], "output_len_tok": [32.0, 32.0, 32.0]})
    assert config_labels(table, ["hardware", "model", "input_len_tok", "output_len_tok"]) == [
        "a100 · 128/32", "a100 · 256/32", "h100 · 128/32"]


def test_fits_summary_and_poor_fits() -> None:
    from perfmodel.curves import fit_curves
    from perfmodel.plots import fits_summary, poor_fits

    runs = pd.concat([_known_fit_frame(), pd.DataFrame({
        "hardware": "a100", "input_len_tok": 512.0, "output_len_tok": 128.0, "batch_size": [1.0, 2.0],
        "output_throughput_tok_s": [50.0, 90.0]})], ignore_index=True)
    table = fit_curves(runs, ["hardware"], shape="exp", n_boot=30)
    summary = fits_summary(table, ["hardware"])
    assert summary["configuration"].tolist() == ["a100", "h100-sxm"]
    ok = summary.iloc[1]
    assert ok["plateau_tok_s"] == pytest.approx(1000.0, rel=0.05) and ok["plateau_ci"].startswith("[")
    assert ok["knees"] and ok["success"]
    review = poor_fits(summary, 0.5)
    assert review["configuration"].tolist() == ["a100"] and review["reason"].tolist() == ["too few batch sizes"]
    assert "not enough" in review["message"].iloc[0]
    assert poor_fits(summary, 1.0)["configuration"].tolist() == ["h100-sxm", "a100"]  # too few batch sizes last


def test_fits_summary_shows_piecewise_b90_b95_intervals() -> None:
    # Guards a piecewise row showing b90 "58.3" with no interval while an exponential row showed "26.2 [22.9, 31.1]".
    from perfmodel.curves import fit_curves, piecewise_loglinear
    from perfmodel.plots import fits_summary

    b = np.repeat(2.0 ** np.arange(0, 11), 3)
    y = piecewise_loglinear(b, 100.0, [200.0, 80.0, -20.0], [64.0, 256.0])
    y = y * (1 + 0.03 * np.random.default_rng(0).standard_normal(len(b)))
    runs = pd.DataFrame({"hardware": "h100-sxm", "batch_size": b, "output_throughput_tok_s": y})
    table = fit_curves(runs, ["hardware"], shape="piecewise", n_boot=100)
    assert table["shape"].tolist() == ["piecewise"]
    row = fits_summary(table, ["hardware"]).iloc[0]
    for col in ("b90", "b95"):
        assert re.fullmatch(r"[\d.]+ \[[\d.]+, [\d.]+\]", row[col]), row[col]


def test_kv_full_batch_per_configuration() -> None:
    from perfmodel import physics
    from perfmodel.curve_tables import kv_full_batches

    table = pd.DataFrame({"hardware": ["h100-sxm", "h100-sxm", "no-such-gpu", "h100-sxm"],
                          "model": ["llama-3-8b", "llama-2-70b", "llama-3-8b", "llama-3-8b"],
                          "device_count": [1, 1, 1, None], "input_len_tok": [128.0, 128.0, 128.0, 128.0],
                          "output_len_tok": [128.0, 128.0, 128.0, 128.0]}, index=[10, 11, 12, 13])
    kv = kv_full_batches(table)
    assert kv.index.tolist() == [10, 11, 12, 13]
    one = table.iloc[[0]].assign(batch_size=1.0)
    assert kv[10] == pytest.approx(float(physics.roofline(one)["kv_fit_batch"].iloc[0]))
    assert kv[10] == pytest.approx((0.9 * 80 * 2**30 - 8.03e9 * 2) / (2 * 32 * 8 * 128 * 2 * 256))
    # 70B in 16 bits does not fit one H100; an unknown name and a missing device count say nothing.
    assert kv[[11, 12, 13]].isna().all()
    assert kv_full_batches(table.drop(columns="device_count")).isna().all()


def test_fits_summary_reports_where_the_kv_cache_is_full() -> None:
    from perfmodel.curves import fit_curves
    from perfmodel.plots import fits_summary

    runs = _known_fit_frame().assign(model="llama-3-8b", device_count=1, input_len_tok=2048.0,
                                     output_len_tok=2048.0)
    by = ["hardware", "model", "device_count", "input_len_tok", "output_len_tok"]
    summary = fits_summary(fit_curves(runs, by, shape="exp", n_boot=20), by)
    assert summary["kv_full_batch"].iloc[0] == pytest.approx((0.9 * 80 * 2**30 - 8.03e9 * 2) / (131072 * 4096))
    assert fits_summary(fit_curves(runs, ["hardware"], shape="exp", n_boot=20), ["hardware"])[
        "kv_full_batch"].isna().all()


# --------------------------------------------------------------------------- Curves-page review defects


def _points(batch: np.ndarray, tput: np.ndarray, label: str) -> pd.DataFrame:
    from perfmodel.plots import repeat_summary

    pts = repeat_summary(pd.DataFrame({"k": label, "batch_size": batch, "output_throughput_tok_s": tput}), ["k"])
    return pts.rename(columns={"k": "configuration"})


def test_drawn_curves_and_bands_are_never_below_zero() -> None:
    # Guards: with Shape = loglin the H200 curve and its band dropped to about -2.5k tok/s at small batches.
    from perfmodel.curves import fit_curve
    from perfmodel.plots import curve_figure

    batch = np.repeat([1.0, 4.0, 16.0, 32.0, 64.0, 128.0, 256.0], 2)
    tput = np.array([41.2, 37.7, 157.4, 165.9, 708.9, 629.5, 1328.0, 1371.7, 2351.5, 2393.8, 3893.0, 3900.8,
                     4570.7, 4524.8])
    fit = fit_curve(batch, tput, shape="loglin", n_boot=50)
    assert fit.success and fit.predict(1.0)[0] < 0 and fit.band(np.array([1.0]))[0][0] < 0
    assert "below zero" in fit.message
    fig = curve_figure([fit], _points(batch, tput, "h200"), ["h200"])
    drawn = [t for t in fig.data if t.meta in ("fit", "band")]
    assert {t.meta for t in drawn} == {"fit", "band"}
    for t in drawn:
        assert min(t.y) >= 0.0, t.meta
    # no knee or b90/b95 markers for a shape without a plateau
    assert not [t for t in fig.data if t.meta in ("knee", "fraction")]


def test_failed_fit_is_drawn_as_a_labelled_dashed_line_only() -> None:
    # Guards: a failed fit (R^2 0.27) drawn with a curve, band and knees as if valid.
    from perfmodel.curves import fit_curve
    from perfmodel.plots import FAILED_FIT_META, curve_figure

    batch = np.repeat([1.0, 2.0, 4.0, 8.0, 16.0, 32.0], 3)
    tput = np.array([9.95, 28.99, 34.93, 25.58, 36.67, 15.62, 48.87, 38.84, 54.25, 56.98, 69.95, 86.32,
                     139.95, 126.63, 110.82, 157.9, 224.05, 153.38])
    fit = fit_curve(batch, tput, n_boot=30)
    assert not fit.success and fit.knees and np.isfinite(fit.band(np.array([4.0]))[0]).all()
    fig = curve_figure([fit], _points(batch, tput, "2 threads"), ["2 threads"])
    assert [t.meta for t in fig.data] == ["measured", FAILED_FIT_META]
    line = fig.data[1]
    assert line.line.dash == "dash" and line.showlegend and "fit failed" in line.name


def test_fits_summary_blanks_what_a_shape_does_not_have() -> None:
    # Guards: knees "5.41 [5.41, 5.41]" and b90/b95 for log-linear fits; a plateau of 999.6 [617, 5,394]
    # shown as known for a configuration measured up to batch 4 only.
    from perfmodel.curve_tables import NO_PLATEAU
    from perfmodel.curves import fit_curves
    from perfmodel.plots import fits_summary

    runs = pd.concat([_known_fit_frame(), pd.DataFrame({
        "hardware": "served", "batch_size": [1.0, 2.0, 4.0, 1.0, 2.0, 4.0],
        "output_throughput_tok_s": [182.73, 356.65, 569.17, 170.69, 303.01, 542.63]})], ignore_index=True)
    summary = fits_summary(fit_curves(runs, ["hardware"], shape="exp", n_boot=30), ["hardware"])
    known, served = summary.iloc[0], summary.iloc[1]
    assert known["configuration"] == "h100-sxm" and served["configuration"] == "served"
    assert known["plateau_tok_s"] == pytest.approx(1000.0, rel=0.05) and known["plateau_ci"].startswith("[")
    assert np.isnan(served["plateau_tok_s"])
    assert served["plateau_ci"] == "plateau not reached: measured up to batch 4"
    loglin = fits_summary(fit_curves(runs, ["hardware"], shape="loglin", n_boot=30), ["hardware"])
    assert (loglin[["knees", "b90", "b95"]] == NO_PLATEAU).all().all()


def test_a_failed_fit_shows_no_plateau_knee_or_b90() -> None:
    # A fit failed for repeats 4x apart still showed plateau 201.7 [154.7, 381.9], a knee and b90/b95.
    from perfmodel.curve_tables import FIT_FAILED
    from perfmodel.curves import fit_curves
    from perfmodel.plots import fits_summary

    runs = pd.DataFrame({"hardware": "cpu", "batch_size": [1.0, 1.0, 2.0, 2.0, 4.0, 4.0, 8.0, 8.0],
                         "output_throughput_tok_s": [10.0, 40.0, 20.0, 21.0, 30.0, 31.0, 35.0, 36.0]})
    for shape in ("exp", "auto"):
        table = fit_curves(runs, ["hardware"], shape=shape, n_boot=20)
        row = fits_summary(table, ["hardware"]).iloc[0]
        assert not row["success"] and "repeats disagree" in row["message"]
        assert np.isnan(row["plateau_tok_s"]) and (row[["plateau_ci", "knees", "b90", "b95"]] == FIT_FAILED).all()


def test_batch_estimates_say_when_an_interval_has_no_width_or_lies_beyond_the_data() -> None:
    # Guards: a knee "29.4 [29.4, 29.4]" (every bootstrap knee on one grid point: false precision) and a
    # b90 of 122 shown like a measured batch for a configuration measured up to batch 64 only.
    from perfmodel.curve_tables import batch_estimate_text

    assert batch_estimate_text(29.41, 27.1, 33.52) == "29.4 [27.1, 33.5]"
    assert batch_estimate_text(29.41, 29.41, 29.41, n_batches=4) == "29.4 (interval not estimable from 4 batch sizes)"
    # zero width within rounding: [94.4, 94.4] at 3 digits
    assert batch_estimate_text(94.407, 94.395, 94.42, n_batches=3) == (
        "94.4 (interval not estimable from 3 batch sizes)")
    assert batch_estimate_text(29.41, 29.41, 29.41) == "29.4 (interval not estimable)"
    assert batch_estimate_text(122.0, 118.0, 125.4, batch_max=64.0) == (
        "122 [118, 125] (extrapolated: measured up to batch 64)")
    assert batch_estimate_text(123.0, 123.1, 123.2, n_batches=3, batch_max=64.0) == (
        "123 (interval not estimable from 3 batch sizes; extrapolated: measured up to batch 64)")
    # inside the data, no interval (asymptotic / none), and nothing to show
    assert batch_estimate_text(64.0, np.nan, np.nan, batch_max=64.0) == "64"
    assert batch_estimate_text(np.nan, 1.0, 2.0) == ""


def test_fits_summary_shows_no_false_precision_and_flags_extrapolated_b90() -> None:
    # LLM-Inference-Bench, A100 x1, deepspeed-mii, Llama-2-7b, 128/128: four batch sizes; b90/b95 lie beyond
    # batch 64. The table read "29.4 [29.4, 29.4]" when every bootstrap knee fell on one point of the knee grid;
    # then "29.4 (interval not estimable ...)". The knee is now refined between grid points (curves.kneedle_knee),
    # so the replicates' tenth-of-a-batch spread shows as an interval (a zero-width one still reads "not
    # estimable": test_batch_estimates_say_when_an_interval_has_no_width_or_lies_beyond_the_data).
    import re

    from perfmodel.curves import fit_curves
    from perfmodel.plots import fits_summary

    runs = pd.DataFrame({"hardware": "a100", "batch_size": [1.0, 16.0, 32.0, 64.0],
                         "output_throughput_tok_s": [46.912, 790.052, 1370.253, 2129.536]})
    summary = fits_summary(fit_curves(runs, ["hardware"], shape="exp", n_boot=100), ["hardware"])
    row = summary.iloc[0]
    # b95 lies beyond batch 64: the knee is a mark of the range measured, and says so
    assert re.fullmatch(r"29\.\d \[29\.\d, 29\.\d\] \(still growing: plateau not reached in the measured "
                        r"batches\)", row["knees"]), row["knees"]
    for col in ("b90", "b95"):
        assert re.fullmatch(r"\d+ \[\d+, \d+\] \(extrapolated: measured up to batch 64\)", row[col]), row[col]
    # The known curve reaches its plateau inside the measured batches: nothing flagged.
    known = fits_summary(fit_curves(_known_fit_frame(), ["hardware"], shape="exp", n_boot=30), ["hardware"]).iloc[0]
    assert known["b90"] and not any(w in known[c] for c in ("knees", "b90", "b95")
                                    for w in ("extrapolated", "not estimable"))


def test_whatif_axis_stops_where_a_runaway_band_would_flatten_the_curve() -> None:
    from perfmodel.plots import whatif_figure

    b = [1.0, 4.0, 16.0]
    table = pd.DataFrame({"batch_size": b, "pred_throughput_tok_s": [6.0, 20.0, 60.0],
                          "pred_lower": [0.5, 2.0, 6.0], "pred_upper": [3948.0, 900.0, 700.0],
                          "confidence": [0.01, 0.05, 0.1], "in_domain": False, "roofline_tok_s": [16.8, 60.0, 200.0],
                          "kv_fit_batch": np.nan})
    measured = pd.DataFrame(columns=["batch_size", "output_throughput_tok_s", "framework", "device_count",
                                     "suspect", "same_config"])
    fig = whatif_figure(table, measured, level=0.9)
    assert tuple(fig.layout.yaxis.range) == (0.0, 400.0)  # twice the highest answer or bound
    assert "band cut off: it reaches 3,948" in fig.layout.annotations[0].text
    assert fig.layout.annotations[0].yanchor == "top"  # inside the plot: above it the margin cut it in half
    near = whatif_figure(table.assign(pred_upper=[9.0, 30.0, 90.0]), measured, level=0.9)
    assert near.layout.yaxis.range is None and not near.layout.annotations


def test_whatif_log_axis_ticks_every_power_of_two_across_the_points_drawn() -> None:
    """A 512-1024 curve beside measured runs at batch 1-16 had ticks at 512 and 1,024 only (the ticks came from
    the curve's batches, the axis from every point); a band reaching 322,858 read 3.229e+05."""
    from perfmodel.plots import whatif_figure

    b = [512.0, 1024.0]
    table = pd.DataFrame({"batch_size": b, "pred_throughput_tok_s": [600.0, 550.0], "pred_lower": [6.0, 0.9],
                          "pred_upper": [82110.0, 322858.7], "confidence": [0.01, 0.0], "in_domain": True,
                          "roofline_tok_s": [5252.0, 5252.0], "kv_fit_batch": np.nan})
    measured = pd.DataFrame({"batch_size": [1.0, 3.0, 16.0], "output_throughput_tok_s": [200.0, 280.0, 480.0],
                             "framework": "llama.cpp", "device_count": 1.0, "same_config": True, "suspect": False})
    fig = whatif_figure(table, measured, level=0.9, log_x=True)
    assert fig.layout.xaxis.type == "log"
    assert list(fig.layout.xaxis.tickvals) == [2.0 ** k for k in range(11)]
    assert list(fig.layout.xaxis.ticktext) == ["1", "2", "4", "8", "16", "32", "64", "128", "256", "512", "1,024"]
    assert fig.layout.annotations[0].text == "band cut off: it reaches 323 k"
    alone = whatif_figure(table, measured.iloc[:0], level=0.9, log_x=True)
    assert list(alone.layout.xaxis.tickvals) == [512.0, 1024.0]
    assert whatif_figure(table, measured, level=0.9, log_x=False).layout.xaxis.tickvals is None


def test_compact_seconds_picks_the_unit_after_rounding() -> None:
    # Guards: 0.9997 s printed "1e+03 ms" (three digits of 999.7 round to 1000, which "g" writes as 1e+03);
    # the same at every unit boundary, and below 1e-4 ms.
    from perfmodel.plots import compact_seconds
    from perfmodel.ui.whatif import seconds

    assert seconds is not None and seconds(0.9997) == compact_seconds(0.9997) == "1 s"
    cases = {0.99949: "999 ms", 0.0009996: "1 ms", 999.6e-9: "0.001 ms", 1.2e-5: "0.012 ms", 1e-8: "10 ns",
             0.000691: "0.691 ms",
             119.97: "2 min", 119.4: "119 s", 7199.9: "2 h", 48 * 3600 - 1: "2 d", 999.7 * 86400: "1,000 d",
             0.0123: "12.3 ms", 2.345: "2.35 s", 600.0: "10 min", 3 * 3600: "3 h", 0.0: "0 s",
             float("nan"): "n/a", float("inf"): "n/a"}
    for v, want in cases.items():
        assert compact_seconds(v) == want, (v, compact_seconds(v))
    _no_e_notation(compact_seconds, {"ns": 1000, "ms": 1000, "s": 120, "min": 120, "h": 48})


def test_compact_number_picks_the_prefix_after_rounding() -> None:
    # Guards: 9.999e14 printed "1e+03 T" and 1.2e-05 "1.2e-05"; 99,999.6 printed "100,000" beside "100 k".
    from perfmodel.plots import compact_number, significant
    from perfmodel.ui.whatif import rate

    assert rate(999_999.0) == compact_number(999_999.0) == "1 M"
    cases = {999.97: "1,000", 99_999.0: "99,999", 99_999.6: "100 k", 999_600.0: "1 M", 9.999e14: "1,000 T",
             1.4e17: "140,000 T", 41.42371: "41.42", 0.0001234: "0.0001234", 1.2e-5: "0.000012",
             -1_482_525.0: "-1.48 M", 0.0: "0", float("nan"): "n/a"}
    for v, want in cases.items():
        assert compact_number(v) == want, (v, compact_number(v))
    assert significant(1024, 3) == "1,020" and significant(2.5, 3) == "2.5" and significant(999.96, 4) == "1,000"
    from perfmodel.curve_tables import _ci_text  # the Curves table's knees, b90 and b95

    assert _ci_text(1536.0, 1200.0, 2048.0, 3) == "1,540 [1,200, 2,050]"
    _no_e_notation(compact_number, {"": 1e5, "k": 1000, "M": 1000, "G": 1000})


def _no_e_notation(fmt, limits: dict[str, float]) -> None:  # noqa: ANN001 - a formatter
    """No e-notation anywhere from 1e-10 to 1e16, and the number before each unit below that unit's limit
    (no "1,000 ms": the next unit's "1 s")."""
    import math

    values = np.geomspace(1e-10, 1e16, 3000)
    # every decade's and unit's boundary, and the float on either side of it
    edges = [m * 10.0 ** k for k in range(-10, 17) for m in (0.9995, 0.99949, 0.99951, 0.9999, 1.0)]
    edges += [m * s for s in (60.0, 3600.0, 86400.0) for m in (1.0, 2.0, 119.96, 119.94, 48.0, 999.6)]
    for v in [*values, *edges, *[math.nextafter(e, 0) for e in edges]]:
        for signed in (v, -v):
            text = fmt(signed)
            assert "e+" not in text and "e-" not in text, (signed, text)
            head, _, unit = text.partition(" ")
            assert abs(float(head.replace(",", ""))) < limits.get(unit, math.inf), (signed, text)


def test_default_overlay_prefers_good_fits_with_the_most_batch_sizes_in_table_order() -> None:
    from perfmodel.plots import default_overlay

    summary = pd.DataFrame({
        "configuration": ["poor", "few", "many-a", "failed", "many-b", "many-c"],
        "success": [True, True, True, False, True, True],
        "r2": [0.69, 0.999, 0.98, 0.99, 0.996, 0.95],
        "n_batches": [16, 3, 8, 9, 8, 8],
    })
    assert default_overlay(summary, 3) == ["many-a", "many-b", "many-c"]
    assert default_overlay(summary, 2) == ["many-a", "many-b"]  # the higher R^2 of the 8-batch curves
    assert default_overlay(summary, 5) == ["poor", "few", "many-a", "many-b", "many-c"]  # then the poor fit
    assert default_overlay(summary, 6)[-1] == "many-c" and len(default_overlay(summary, 6)) == 6
    assert default_overlay(summary.iloc[:0], 3) == []
    # spread over hardware: the best curve of each first (two MI300X curves had hidden one line under the other)
    hw = ["x", "x", "h1", "y", "h1", "h2"]
    assert default_overlay(summary, 2, spread=hw) == ["many-b", "many-c"]
    assert default_overlay(summary, 3, spread=hw) == ["few", "many-b", "many-c"]
    assert default_overlay(summary, 4, spread=hw) == ["few", "many-a", "many-b", "many-c"]


def test_fit_counts_tell_too_few_batch_sizes_from_failed_fits() -> None:
    # A reviewer read "695 of 2,363 fitted" and "1,682 curve(s) failed" on LLM-Inference-Bench: most of those were
    # llama.cpp n_batch settings measured at one batch, not failed fits.
    from perfmodel.curve_tables import fit_counts_words

    summary = pd.DataFrame({"success": [True, True, False, False, False], "n_batches": [4, 5, 1, 2, 6]})
    assert fit_counts_words(summary) == ("5 configuration(s): 2 fitted, 2 with fewer than 3 batch sizes (too few "
                                         "for a curve), 1 failed")
    assert fit_counts_words(summary.iloc[:2]) == "2 configuration(s): 2 fitted"


def test_fit_caveats_name_exact_three_point_fits_and_knees_past_b95() -> None:
    # Both read wrongly without a word: R² = 1 from three points, and a knee where the curve is already flat.
    from perfmodel.curve_tables import fit_caveats
    from perfmodel.curves import fit_curves

    b = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0])
    early = 1000.0 - 900.0 * np.exp(-0.5 * b)  # saturates by batch ~8, measured up to 64
    runs = pd.DataFrame({"hardware": ["h"] * 10, "model": ["m"] * 10, "framework": ["f"] * 10,
                         "input_len_tok": 128.0, "output_len_tok": 128.0,
                         "batch_size": [*b, 1.0, 8.0, 64.0],
                         "output_throughput_tok_s": [*early, 100.0, 500.0, 900.0],
                         "device_count": [1] * 7 + [2] * 3})
    table = fit_curves(runs, by=["hardware", "model", "framework", "device_count"], intervals="none")
    assert table["success"].all()
    three = table.loc[table["n_batches"] == 3].iloc[0]
    assert three["r2"] == pytest.approx(1.0, abs=1e-6)  # by construction
    early_fit = table.loc[table["n_batches"] == 7].iloc[0]
    assert early_fit["knee_1"] > early_fit["b95"]
    words = fit_caveats(table)
    assert len(words) == 2
    assert words[0].startswith("1 fit(s) rest on exactly 3 batch sizes") and "R² is 1 by construction" in words[0]
    assert words[1].startswith("1 fit(s) have their knee past b95")
    assert fit_caveats(table.loc[table["n_batches"] == 7].assign(knee_1=1.0)) == []
    growing = fit_caveats(table.assign(b95=table["batch_max"] * 2, knee_1=1.0))
    assert growing[-1].startswith("2 knee(s), drawn open, lie on curves still growing")
    assert fit_caveats(table.assign(success=False)) == [] and fit_caveats(table.iloc[:0]) == []


def test_plateau_interval_says_when_it_cannot_be_estimated_or_pins_nothing_down() -> None:
    # 23 fits on 3 batch sizes had an empty cell whose help promised "interval not estimable"; 108 intervals
    # reading "[0, 2,918]" said nothing of how little they pin down.
    from perfmodel.curve_tables import NOT_ESTIMABLE, _plateau_text

    base = {"c": 1000.0, "c_lo": float("nan"), "c_hi": float("nan"), "n_batches": 3, "batch_max": 64.0}
    assert _plateau_text(base) == f"{NOT_ESTIMABLE} from 3 batch sizes"
    assert _plateau_text({**base, "n_batches": 6}) == ""  # intervals not asked for
    assert _plateau_text({**base, "c_lo": 0.0, "c_hi": 2918.0, "n_batches": 4}) == (
        "[0, 2,918] (not pinned down by the data)")
    assert _plateau_text({**base, "c_lo": 900.0, "c_hi": 1100.0, "n_batches": 4}) == "[900, 1,100]"


def test_curve_figure_of_a_request_rate_curve_names_rates_without_power_of_two_ticks() -> None:
    # Guards: a rate curve's hovers said "batch 183.38" and its log axis was labelled at 64, 128, 256 as batches
    from perfmodel.curve_tables import repeat_summary
    from perfmodel.curves import fit_curve
    from perfmodel.plots import KNEE_META, curve_figure

    rate = np.array([1.0, 31.4, 61.79, 92.19, 122.59, 152.98, 183.38])
    tput = np.array([64.23, 1943.01, 3820.66, 5693.88, 6316.81, 6323.77, 6431.06])
    runs = pd.DataFrame({"hardware": "h100", "request_rate_rps": rate, "output_throughput_tok_s": tput})
    fit = fit_curve(rate, tput, x_name="request_rate_rps", n_boot=50)
    pts = repeat_summary(runs, ["hardware"], x="request_rate_rps").assign(configuration="H100")
    fig = curve_figure([fit], pts, ["H100"], x="request_rate_rps", log_x=True)
    hovers = " ".join(str(t.hovertemplate) for t in fig.data if t.hovertemplate)
    assert "request rate" in hovers and "batch" not in hovers
    knee = next(t for t in fig.data if t.meta == KNEE_META)
    assert "knee at request rate" in knee.hovertemplate
    assert fig.layout.xaxis.type == "log" and fig.layout.xaxis.tickvals is None
    assert any(t.name == "request rate at 90% / 95% of plateau" for t in fig.data)
