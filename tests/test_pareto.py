"""Pareto fronts (known fronts, invariances) and dataset comparison against run-to-run noise."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfmodel.errors import ValidationError
from perfmodel.pareto import compare, front_figure, fronts, pareto_mask


def test_known_front() -> None:
    # minimise x, maximise y: (1, 1), (2, 3), (4, 5) are optimal; (3, 2) is beaten by (2, 3); (5, 5) by (4, 5).
    x = [1, 2, 3, 4, 5, np.nan]
    y = [1, 3, 2, 5, 5, 9]
    assert pareto_mask(x, y, minimize_x=True, minimize_y=False).tolist() == [True, True, False, True, False, False]
    # Exact duplicates of a front point are both on it.
    assert pareto_mask([1, 1, 2], [2, 2, 1]).tolist() == [True, True, True]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 20)), min_size=1, max_size=30))
def test_front_matches_brute_force_and_ignores_order(pts: list[tuple[int, int]]) -> None:
    a = np.array(pts, dtype=float)
    mask = pareto_mask(a[:, 0], a[:, 1])
    brute = [not any((o[0] <= p[0] and o[1] <= p[1]) and (o[0] < p[0] or o[1] < p[1]) for o in a) for p in a]
    assert mask.tolist() == brute
    perm = np.random.default_rng(0).permutation(len(a))
    assert pareto_mask(a[perm, 0], a[perm, 1]).tolist() == mask[perm].tolist()


def _points() -> pd.DataFrame:
    return pd.DataFrame({"hardware": ["h", "h", "g", "g"], "framework": "vllm", "device_count": 1,
                         "batch_size": [1.0, 8.0, 1.0, 8.0], "e2e_s": [1.0, 4.0, 2.0, 3.0],
                         "throughput_per_device_tok_s": [100.0, 500.0, 90.0, 600.0],
                         "cost_per_m_output_tok": [5.0, 1.0, 6.0, 0.8], "energy_j_per_output_tok": [1.0, 0.3, 1.2, 0.2],
                         "memory_ok": True, "slo_ok": [True, True, True, False]})


def test_fronts_of_plan_points() -> None:
    f = fronts(_points())
    assert f["throughput_vs_latency"]["e2e_s"].tolist() == [1.0, 4.0]  # the infeasible g/8 is excluded
    f_all = fronts(_points(), feasible_only=False)
    assert f_all["throughput_vs_latency"]["e2e_s"].tolist() == [1.0, 3.0]
    assert f_all["energy_vs_throughput"]["throughput_per_device_tok_s"].tolist() == [600.0]
    fig = front_figure(_points(), "cost_vs_latency")
    assert [t.name for t in fig.data] == ["operating points", "Pareto front"]
    with pytest.raises(ValidationError, match="unknown front"):
        front_figure(_points(), "nope")


def test_front_labels_alternate_across_the_staircase_and_the_legend_leaves_them_room() -> None:
    # Neighbours' names printed over each other ("h200 transformers x1 b1" on "...b16") and the legend at the
    # right cut the last one ("h200 transfo").
    pts = pd.DataFrame({"hardware": "h200", "framework": "transformers", "device_count": 1, "model": "m",
                        "batch_size": [1.0, 16.0, 128.0, 256.0], "e2e_s": [1.5, 1.7, 1.9, 2.3],
                        "throughput_per_device_tok_s": [60.0, 1200.0, 8500.0, 14000.0],
                        "cost_per_m_output_tok": [25.0, 1.0, 0.2, 0.1], "memory_ok": True, "slo_ok": True})
    rising = front_figure(pts, "throughput_vs_latency")
    # each name is tied to its point by a leader line (two names beside two points had read as either's):
    # below-right (ax > 0, ay > 0) and above-left in turn
    notes = rising.layout.annotations
    assert [a.text for a in notes] == list(rising.data[1].text) and all(a.showarrow for a in notes)
    assert [(a.ax > 0, a.ay > 0) for a in notes] == [(True, True), (False, False)] * 2
    assert rising.layout.yaxis.type == "log"  # 60 to 14,000 tok/s: placed by the logarithm
    assert [a.x for a in notes] == list(rising.data[1].x)
    assert [a.y for a in notes] == pytest.approx(np.log10(rising.data[1].y))
    falling = front_figure(pts, "cost_vs_latency")
    assert [(a.ax > 0, a.ay > 0) for a in falling.layout.annotations][:2] == [(True, False), (False, True)]
    # on a log axis an annotation is placed by the logarithm of its value
    wide = front_figure(pts.assign(e2e_s=[0.4, 4.0, 40.0, 90.0]), "throughput_vs_latency")
    assert wide.layout.xaxis.type == "log"
    assert [a.x for a in wide.layout.annotations] == pytest.approx(np.log10([0.4, 4.0, 40.0, 90.0]))
    # the ends are named inwards, whatever the alternation (a last name to the right ran off the figure)
    from perfmodel.pareto import front_label_sides

    assert front_label_sides(3, rising=True) == ["bottom right", "top left", "top left"]
    assert front_label_sides(5, rising=False)[-1] == "bottom left" and front_label_sides(1, rising=True) == [
        "bottom right"]
    assert rising.layout.legend.orientation == "h" and list(rising.data[1].text)[0] == "h200 transformers x1 b1"


def _runs(values: dict[float, list[float]], framework: str) -> pd.DataFrame:
    rows = [{"hardware": "h100-sxm", "model": "llama-3-8b", "device_count": 1, "input_len_tok": 128.0,
             "output_len_tok": 128.0, "batch_size": b, "framework": framework, "output_throughput_tok_s": v}
            for b, vs in values.items() for v in vs]
    return pd.DataFrame(rows)


def test_compare_against_noise() -> None:
    a = _runs({1.0: [100, 102, 98], 8.0: [500, 510, 490], 16.0: [900], 32.0: [1]}, "vllm")
    b = _runs({1.0: [101, 99, 103], 8.0: [600, 610, 590], 16.0: [950, 960], 64.0: [2]}, "sglang")
    c = compare(a, b, ignore=["framework"], label_a="vllm", label_b="sglang")
    t = c.table.set_index("batch_size")
    assert t.loc[8.0, "diff"] == pytest.approx(100) and t.loc[8.0, "diff_pct"] == pytest.approx(20)
    assert bool(t.loc[8.0, "significant"]) is True
    assert bool(t.loc[1.0, "significant"]) is False  # +1 tok/s against a 2 tok/s spread
    assert pd.isna(t.loc[16.0, "significant"])  # one repeat on one side: cannot judge
    assert t.loc[8.0, "noise_se"] == pytest.approx(np.sqrt(100 / 3 + 100 / 3))
    assert (c.n_only_a, c.n_only_b) == (1, 1)
    assert "1 of 2 with repeats" in c.message and "1 without repeats" in c.message


def test_compare_judges_noise_by_welch_t_test() -> None:
    """Two repeats a side: a difference of 3 standard errors is within noise (Welch's t-test needs about 4.3 at
    5 % with ~2 degrees of freedom), where 2 standard errors had called it beyond; p matches scipy's test."""
    from scipy import stats

    a = _runs({1.0: [100.0, 110.0], 8.0: [100.0, 100.0], 16.0: [100.0, 100.0]}, "vllm")
    b = _runs({1.0: [126.0, 136.0], 8.0: [100.0, 100.0], 16.0: [101.0, 101.0]}, "sglang")
    t = compare(a, b, ignore=["framework"]).table.set_index("batch_size")
    se = float(t.loc[1.0, "noise_se"])
    assert float(t.loc[1.0, "diff"]) / se == pytest.approx(26 / np.sqrt(50), rel=1e-9)  # 3.68 standard errors
    want = stats.ttest_ind_from_stats(131, np.std([126, 136], ddof=1), 2, 105, np.std([100, 110], ddof=1), 2,
                                      equal_var=False).pvalue
    assert float(t.loc[1.0, "p_value"]) == pytest.approx(want) and 0.05 < want < 0.1
    assert bool(t.loc[1.0, "significant"]) is False
    # no spread on either side: equal means are within noise, any difference beyond it
    assert bool(t.loc[8.0, "significant"]) is False and bool(t.loc[16.0, "significant"]) is True


def test_compare_names_missing_columns() -> None:
    with pytest.raises(ValidationError, match="batch_size"):
        compare(pd.DataFrame({"x": [1]}), pd.DataFrame({"x": [1]}))


def test_compare_frameworks_on_shared_data(all_results_csv) -> None:  # noqa: ANN001
    from perfmodel.importers import read_file

    runs = read_file(all_results_csv).runs
    sel = runs[(runs["model"] == "llama-3-8b") & (runs["hardware"] == "h100-sxm")]
    c = compare(sel[sel["framework"] == "vllm"], sel[sel["framework"] == "tensorrt-llm"], ignore=["framework"],
                label_a="vllm", label_b="tensorrt-llm")
    assert len(c.table) >= 50
    assert c.table["significant"].isna().all()  # LLM-Inference-Bench has one run per point: no noise estimate


def test_compare_overlay_and_verdicts() -> None:
    from perfmodel.pareto import (
        COMPARE_KEYS,
        comparison_figure,
        configuration_labels,
        noise_verdicts,
        select_runs,
    )

    a = _runs({1.0: [100, 102, 98], 8.0: [500, 510, 490], 16.0: [900]}, "vllm")
    b = _runs({1.0: [101, 99, 103], 8.0: [600, 610, 590], 16.0: [950, 960]}, "sglang")
    both = pd.concat([a, b], ignore_index=True)
    c = compare(select_runs(both, {"framework": ["VLLM"]}), select_runs(both, {"framework": ["sglang"]}),
                label_a="vllm", label_b="sglang")
    assert noise_verdicts(c.table) == ["within noise", "beyond noise", "no repeats"]  # batch 1, 8, 16
    assert c.table["std_b"].iloc[1] == pytest.approx(10.0)
    assert set(configuration_labels(c.table, COMPARE_KEYS)) == {"h100-sxm · llama-3-8b · 1 dev · 128/128"}
    fig = comparison_figure(c)
    metas = [t.meta for t in fig.data]
    assert metas == ["a", "b", "significant"]
    assert list(fig.data[2].x) == [8.0] and list(fig.data[2].y) == [600.0]
    assert list(fig.data[1].error_y.array) == pytest.approx([2.0, 10.0, 7.0710678])
    assert fig.layout.yaxis.type is None  # 100 to 960: linear
    # a configuration 100x slower beside it (a CPU beside a GPU) would be a line along zero: a log axis
    cpu_a, cpu_b = (d.assign(hardware="cpu-x86-2vcpu", output_throughput_tok_s=lambda x: x["output_throughput_tok_s"]
                             / 100) for d in (a, b))
    wide = compare(pd.concat([a, cpu_a]), pd.concat([b, cpu_b]), ignore=["framework"], label_a="vllm",
                   label_b="sglang")
    fig = comparison_figure(wide)
    assert fig.layout.yaxis.type == "log" and "(log scale)" in fig.layout.yaxis.title.text
    with pytest.raises(ValidationError, match="no row has 'tgi'; valid: sglang, vllm"):
        select_runs(both, {"framework": ["tgi"]}, label="mixed")
    assert len(select_runs(both, {"hardware": ["H100 SXM"]})) == len(both)  # catalog alias


def _configs(rows: list[tuple[str, float, float, list[float]]]) -> pd.DataFrame:
    """Runs of one model at batch 1: (framework, tp_size, threads, throughputs) per configuration."""
    return pd.DataFrame([{"hardware": "h100-sxm", "model": "llama-3-8b", "device_count": 1, "input_len_tok": 128.0,
                          "output_len_tok": 32.0, "batch_size": 1.0, "framework": fw, "weight_dtype": "bf16",
                          "kv_cache_dtype": "bf16", "tp_size": tp, "pp_size": 1.0, "fw_num_threads": th,
                          "output_throughput_tok_s": v}
                         for fw, tp, th, vs in rows for v in vs])


def test_compare_pools_only_repeats_of_one_configuration() -> None:
    """Frameworks and thread counts are configurations, as in fit_curves: never each other's repeats."""
    from perfmodel.curves import _resolve_by

    runs = _configs([("vllm", 1.0, 1.0, [90, 92, 88]), ("vllm", 1.0, 2.0, [20, 22, 18]),
                     ("sglang", 1.0, 1.0, [60, 61]), ("sglang", 2.0, 1.0, [100])])
    c = compare(runs, runs)
    assert set(c.keys) == {*_resolve_by(runs, None), "batch_size"}  # the configuration of perfmodel fit
    assert c.contrast == {}
    t = c.table.set_index(["framework", "tp_size", "fw_num_threads"])
    assert len(t) == 4 and t["n_a"].tolist() == [2, 1, 3, 3]
    assert t.loc[("vllm", 1.0, 2.0), "mean_a"] == pytest.approx(20) and t.loc[("vllm", 1.0, 2.0), "std_a"] == 2
    assert "1 without repeats" in c.message  # sglang at tp 2 ran once: no longer averaged with tp 1
    # one thread count everywhere: not a key (a dataset at one setting keeps its configurations)
    one = runs[runs["fw_num_threads"] == 1]
    assert "fw_num_threads" not in compare(one, one).keys and "fw_num_threads" in compare(one, runs).keys


def test_compare_contrasts_the_column_the_sides_differ_in() -> None:
    runs = _configs([("vllm", 1.0, 1.0, [90, 92, 88]), ("vllm", 1.0, 2.0, [20, 22, 18]),
                     ("sglang", 1.0, 1.0, [60, 61, 62]), ("sglang", 1.0, 2.0, [30, 31, 29])])
    c = compare(runs[runs["framework"] == "vllm"], runs[runs["framework"] == "sglang"], label_a="vllm",
                label_b="sglang")
    assert c.contrast == {"framework": ("vllm", "sglang")} and "framework" not in c.keys
    assert "not matched on framework (vllm vs sglang)" in c.message
    t = c.table.set_index("fw_num_threads")  # still matched on the thread count
    assert t.loc[1.0, ["mean_a", "mean_b", "n_a", "n_b"]].tolist() == [90, 61, 3, 3]
    assert t.loc[2.0, ["mean_a", "mean_b"]].tolist() == [20, 30]
    # a side holding several frameworks is matched on the framework, not pooled
    mixed = compare(runs, runs[runs["framework"] == "sglang"])
    assert mixed.contrast == {} and set(mixed.table["framework"]) == {"sglang"}
    assert (mixed.n_only_a, mixed.n_only_b) == (2, 0)
    # explicit keys are matched as given
    assert compare(runs[runs["framework"] == "vllm"], runs[runs["framework"] == "sglang"],
                   keys=["framework", "batch_size"]).table.empty


def test_a_comparison_of_sides_that_differ_in_several_things_says_so() -> None:
    # MiniMax at 10,279 input tokens on an H100 was matched with gpt-oss at 1,000 on an H200 by device count and
    # batch alone, and the headline "+163.1%" stood as if it measured something; with no repeats on either side
    # the summary read "0 of 0 with repeats on both sides differ".
    row = {"hardware": "h100-sxm", "device_count": 1, "framework": "vllm", "model": "llama-3-8b",
           "input_len_tok": 128.0, "output_len_tok": 128.0, "batch_size": 1.0, "output_throughput_tok_s": 100.0}
    a = pd.DataFrame([row])
    one = compare(a, pd.DataFrame([{**row, "framework": "sglang", "output_throughput_tok_s": 120.0}]))
    assert one.caveat is None  # one thing differs: that is the comparison
    assert "none has repeats on both sides, so no difference can be judged" in one.message and "0 of 0" not in one.message
    hw_fw = compare(a, pd.DataFrame([{**row, "hardware": "h200", "framework": "sglang"}]))
    assert hw_fw.caveat is None  # a deployment against another: two things, neither the workload
    workload = compare(a, pd.DataFrame([{**row, "hardware": "h200", "model": "qwen2-7b"}]))
    assert workload.caveat == ("the sides differ in 2 things at once (hardware h100-sxm vs h200, model llama-3-8b "
                               "vs qwen2-7b): no difference below can be put down to one of them")
    three = compare(a, pd.DataFrame([{**row, "hardware": "h200", "framework": "sglang", "device_count": 2}]))
    assert three.caveat is not None and three.caveat.startswith("the sides differ in 3 things at once")


def test_compare_skips_configuration_columns_a_side_does_not_record() -> None:
    local = _configs([("transformers", 1.0, 1.0, [100, 104, 96])])
    served = local.drop(columns=["fw_num_threads"]).assign(weight_dtype=None, kv_cache_dtype=None, tp_size=np.nan,
                                                             pp_size=np.nan, output_throughput_tok_s=[150, 160, 170])
    c = compare(local, served)
    assert c.keys == ("hardware", "model", "device_count", "input_len_tok", "output_len_tok", "framework",
                      "batch_size")
    assert c.table[["mean_a", "mean_b"]].iloc[0].tolist() == [100, 160] and bool(c.table["significant"].iloc[0])


def test_configuration_labels_name_the_new_keys() -> None:
    from perfmodel.pareto import configuration_labels

    runs = _configs([("vllm", 2.0, 1.0, [90, 92]), ("vllm", 2.0, 2.0, [20, 22])])
    c = compare(runs, runs)
    assert configuration_labels(c.table, c.keys).tolist() == [
        "h100-sxm · llama-3-8b · 1 dev · 128/32 · vllm · bf16 weights · bf16 KV cache · tp2 · pp1 · 1 threads",
        "h100-sxm · llama-3-8b · 1 dev · 128/32 · vllm · bf16 weights · bf16 KV cache · tp2 · pp1 · 2 threads"]


def test_compare_with_nothing_left_to_match_on_names_the_columns() -> None:
    # Every default column single-valued and different on each side, batch size left out: groupby([]) crashed.
    row = {"hardware": "h100-sxm", "device_count": 1, "framework": "vllm", "model": "llama-3-8b",
           "input_len_tok": 128.0, "output_len_tok": 128.0, "batch_size": 1.0, "output_throughput_tok_s": 100.0}
    a = pd.DataFrame([row])
    b = pd.DataFrame([{**row, "hardware": "a100-40gb", "device_count": 2, "framework": "sglang", "model": "qwen2-7b",
                       "input_len_tok": 256.0, "output_len_tok": 256.0, "batch_size": 4.0}])
    with pytest.raises(ValidationError, match="nothing left to match points on") as ei:
        compare(a, b, ignore=["batch_size"])
    assert "hardware" in str(ei.value)


def test_front_axes_are_labelled_with_units_not_column_names() -> None:
    # Guards: the Planner's fronts titled their axes e2e_s and throughput_per_device_tok_s.
    for name in ("throughput_vs_latency", "cost_vs_latency", "energy_vs_throughput"):
        layout = front_figure(_points(), name, currency="EUR").layout
        titles = (layout.xaxis.title.text, layout.yaxis.title.text)
        assert not [t for t in titles if "_" in t], titles
    fig = front_figure(_points(), "cost_vs_latency", currency="EUR")
    assert fig.layout.xaxis.title.text == "end-to-end latency (s)"
    assert fig.layout.yaxis.title.text == "cost per million output tokens (EUR)"
    assert front_figure(_points(), "throughput_vs_latency").layout.yaxis.title.text == \
        "output throughput per device (tok/s)"
    assert "e+" not in fig.data[0].hovertemplate and ":,.4~r}" in fig.data[0].hovertemplate


def test_front_axes_go_logarithmic_where_the_points_span_decades() -> None:
    # Batch 1 to 256 at 0.4 to 40 s end to end: on a linear axis the small batches crowded into one corner.
    narrow = front_figure(_points(), "throughput_vs_latency").layout
    assert narrow.xaxis.type in (None, "linear") and narrow.yaxis.type in (None, "linear")
    wide = _points().assign(e2e_s=[0.4, 40.0, 0.5, 30.0], throughput_per_device_tok_s=[60.0, 14000.0, 50.0, 9000.0])
    layout = front_figure(wide, "throughput_vs_latency").layout
    assert (layout.xaxis.type, layout.yaxis.type) == ("log", "log")
    assert layout.xaxis.title.text == "end-to-end latency (s) (log scale)"
    assert front_figure(wide, "cost_vs_latency").layout.yaxis.type in (None, "linear")  # 0.8 to 6: linear


def test_the_front_s_points_are_named_on_the_chart_for_a_printed_report() -> None:
    # A reviewer could not read a printed cost-vs-latency front: its points were named on hover only.
    fig = front_figure(_points(), "cost_vs_latency")
    front = next(t for t in fig.data if t.name == "Pareto front")
    assert [a.text for a in fig.layout.annotations] == list(front.text) and len(front.text) == len(front.x) > 0
    assert all(" x" in str(t) and " b" in str(t) for t in front.text)
    assert "text" not in next(t for t in fig.data if t.name == "operating points").mode


def test_comparison_title_wraps_long_side_labels_instead_of_running_off_the_chart() -> None:
    # Guards: "output throughput (tok/s): sample runs [model=perfmodel-large-llama] (solid) vs sample runs
    # [model=perfmodel-medium-llama] (da" — one title line wider than the chart, cut off at its edge.
    from perfmodel.pareto import _TITLE_WRAP_CHARS, comparison_figure

    a = _runs({1.0: [100, 102], 8.0: [500, 510]}, "vllm")
    b = _runs({1.0: [101, 99], 8.0: [600, 610]}, "sglang")
    long_a, long_b = "sample runs [framework=" + "x" * 120 + "]", "sample runs [framework=<b>sglang</b>]"
    fig = comparison_figure(compare(a, b, ignore=["framework"], label_a=long_a, label_b=long_b))
    assert fig.layout.title.text == "output throughput (tok/s)"
    lines = fig.layout.title.subtitle.text.split("<br>")
    assert len(lines) >= 3 and all(len(line) <= _TITLE_WRAP_CHARS + 20 for line in lines)  # +20: escapes
    assert lines[0].startswith("A (solid): sample runs") and lines[-1].startswith("B (dashed): sample runs")
    assert "&lt;b&gt;sglang&lt;/b&gt;" in lines[-1]  # user text, not markup
    assert fig.layout.margin.t >= 50 + 18 * len(lines)  # room for every line above the plot


def test_runs_at_several_settings_on_one_side_are_not_repeats() -> None:
    # LLM-Inference-Bench's llama.cpp rows at four n_batch values (29.5 to 57.2 tok/s) were averaged into one
    # point drawn with a run-to-run spread of 13 tok/s against vLLM, which records no n_batch.
    a = _runs({1.0: [100, 102, 98], 8.0: [500, 510, 490]}, "vllm")
    b = _runs({1.0: [30, 57], 8.0: [600, 610, 590]}, "llama.cpp")
    b["fw_n_batch"] = [64.0, 512.0, 512.0, 512.0, 512.0]
    c = compare(a, b, ignore=["framework"], label_a="vllm", label_b="llama.cpp")
    t = c.table.set_index("batch_size")
    assert t.loc[1.0, "n_b"] == 2 and pd.isna(t.loc[1.0, "std_b"]) and pd.isna(t.loc[1.0, "significant"])
    assert t.loc[8.0, "std_b"] == pytest.approx(10.0) and bool(t.loc[8.0, "significant"])  # one setting: repeats
    assert "1 average runs at several fw_n_batch settings" in c.message
    assert "1 of 1 with repeats on both sides" in c.message


def _loads(rows: list[tuple[str, float, float, list[float]]]) -> pd.DataFrame:
    """Runs of one configuration at several loads: (load_kind, batch_size, request_rate_rps, throughputs)."""
    return pd.DataFrame([{"hardware": "h100-sxm", "model": "llama-3-8b", "device_count": 1, "input_len_tok": 204.0,
                          "output_len_tok": 62.0, "framework": "vllm", "load_kind": kind, "batch_size": b,
                          "request_rate_rps": r, "output_throughput_tok_s": v}
                         for kind, b, r, vs in rows for v in vs])


def test_compare_never_pools_request_rates_as_repeats() -> None:
    # inference-perf's seven rates (batch size empty) were one "matched point" of n=7, and A at 1-62 req/s against B
    # at 123-183 req/s read +227% "within noise", the spread of the rates taken for run-to-run noise.
    rates = [1.0, 31.4, 61.79, 92.19, 122.59, 152.98, 183.38]
    tput = [64.2, 1943.0, 3820.7, 5693.9, 6316.8, 6323.8, 6431.1]
    runs = _loads([("request_rate", np.nan, r, [v]) for r, v in zip(rates, tput, strict=True)])
    low, high = runs[runs["request_rate_rps"] < 100], runs[runs["request_rate_rps"] > 100]
    c = compare(low, high)
    assert c.table.empty and (c.n_only_a, c.n_only_b) == (4, 3)
    assert "request_rate_rps" in c.keys and "request_rate_rps" not in c.contrast
    one_each = compare(runs[runs["request_rate_rps"] == 1.0], runs[runs["request_rate_rps"] == 31.4])
    assert one_each.table.empty and one_each.contrast == {}  # one rate a side is not "what the sides contrast"
    self = compare(runs, runs)
    assert len(self.table) == 7 and self.table["n_a"].tolist() == [1] * 7
    assert self.table["request_rate_rps"].tolist() == rates and "batch_size" not in self.keys
    # true repeats of one rate are pooled and judged
    rep = _loads([("request_rate", np.nan, 31.4, [1900.0, 1950.0, 1925.0])])
    t = compare(rep, rep.assign(output_throughput_tok_s=[2500.0, 2550.0, 2525.0])).table
    assert len(t) == 1 and t["n_a"].iloc[0] == 3 and bool(t["significant"].iloc[0])


def test_compare_keeps_offline_concurrency_and_rate_runs_apart() -> None:
    runs = _loads([("offline", np.nan, np.inf, [7000.0, 7100.0]), ("request_rate", np.nan, np.inf, [6900.0, 6950.0]),
                   ("request_rate", np.nan, 10.0, [600.0, 610.0]), ("concurrency", 8.0, np.inf, [900.0, 910.0]),
                   ("concurrency", 8.0, 4.0, [300.0, 301.0])])
    c = compare(runs, runs)
    assert len(c.table) == 5 and c.table["n_a"].tolist() == [2] * 5
    assert {"load", "batch_size", "request_rate_rps"} <= set(c.keys)
    t = c.table.set_index(["load", "batch_size", "request_rate_rps"])
    assert t.loc[("offline", np.nan, np.nan), "mean_a"] == pytest.approx(7050)  # inf rate on offline: no limit
    assert t.loc[("request_rate", np.nan, np.inf), "mean_a"] == pytest.approx(6925)  # all at once: its own load
    assert t.loc[("batch", 8.0, 4.0), "mean_a"] == pytest.approx(300.5)  # a rate cap on a concurrency counts
    # a concurrency written with rate inf (vLLM) matches one written without a rate (GuideLLM)
    guidellm = _loads([("concurrency", 8.0, np.nan, [950.0, 960.0])])
    m = compare(runs[runs["load_kind"] == "concurrency"], guidellm)
    assert len(m.table) == 1 and m.table["mean_a"].iloc[0] == pytest.approx(905)


def test_static_batches_match_a_concurrency_and_the_comparison_says_so() -> None:
    static = _loads([("static_batch", b, np.nan, [100.0 * b, 101.0 * b]) for b in (1.0, 4.0)])
    served = _loads([("concurrency", b, np.inf, [150.0 * b, 151.0 * b]) for b in (1.0, 4.0)])
    c = compare(static, served)
    assert len(c.table) == 2 and c.contrast == {"load_kind": ("static_batch", "concurrency")}
    assert "not matched on load_kind (static_batch vs concurrency)" in c.message
    # on one side, static batches beside a concurrency at the same batch are not repeats: not judged
    both = pd.concat([static, served], ignore_index=True)
    mixed = compare(both, served)
    assert mixed.table["significant"].isna().all() and "several load_kind settings" in mixed.message


def test_a_load_left_out_of_the_matching_is_not_taken_for_noise() -> None:
    a = _runs({1.0: [100.0, 101.0], 8.0: [500.0, 505.0]}, "vllm")
    b = _runs({1.0: [110.0, 111.0], 8.0: [600.0, 602.0]}, "vllm")
    c = compare(a, b, ignore=["batch_size"])
    assert len(c.table) == 1 and c.table["significant"].isna().all()
    assert "several batch_size settings" in c.message


def test_the_overlay_draws_request_rate_runs_against_their_rate() -> None:
    from perfmodel.pareto import comparison_figure, configuration_labels, load_column

    runs = _loads([("request_rate", np.nan, r, [v, v * 1.01]) for r, v in ((1.0, 64.0), (31.4, 1943.0))])
    c = compare(runs, runs.assign(output_throughput_tok_s=runs["output_throughput_tok_s"] * 1.2))
    assert load_column(c.table) == "request_rate_rps"
    assert configuration_labels(c.table, c.keys).tolist() == ["h100-sxm · llama-3-8b · 1 dev · 204/62 · vllm · "
                                                              "request rate"] * 2
    fig = comparison_figure(c)
    assert list(fig.data[0].x) == [1.0, 31.4] and fig.layout.xaxis.title.text == "request rate (req/s)"
    assert "req/s" in fig.data[0].hovertemplate


def _arrivals(rows: list[tuple[float, str | None, float, list[float]]]) -> pd.DataFrame:
    """Request-rate runs of one configuration: (rate, arrival, burstiness, throughputs)."""
    out = _loads([("request_rate", np.nan, r, vs) for r, _, _, vs in rows])
    out["arrival"] = pd.array([a for _, a, _, vs in rows for _ in vs], dtype="string")
    out["burstiness"] = [b for _, _, b, vs in rows for _ in vs]
    return out


def test_compare_keeps_arrival_processes_at_one_rate_apart() -> None:
    # GuideLLM's constant and Poisson benchmarks at 5 req/s (562 and 703 tok/s on two T4s) had been pooled as two
    # repeats of one point, the gap between the processes taken for run-to-run noise.
    runs = _arrivals([(5.0, "constant", np.nan, [562.0, 565.0]), (5.0, "poisson", np.nan, [703.0, 690.0]),
                      (5.0, "gamma", 0.5, [650.0, 640.0]), (5.0, "gamma", 2.0, [600.0, 602.0])])
    c = compare(runs, runs.assign(output_throughput_tok_s=runs["output_throughput_tok_s"] * 1.1))
    assert {"arrival", "burstiness"} <= set(c.keys) and c.contrast == {}
    assert len(c.table) == 4 and c.table["n_a"].tolist() == [2] * 4
    t = c.table.set_index(["arrival", "burstiness"])
    assert t.loc[("constant", np.nan), "mean_a"] == pytest.approx(563.5)
    assert t.loc[("poisson", 1.0), "mean_a"] == pytest.approx(696.5)  # a Poisson run's burstiness is 1
    assert t.loc[("gamma", 0.5), "mean_a"] == pytest.approx(645.0)
    from perfmodel.pareto import configuration_labels

    labels = configuration_labels(c.table, c.keys).tolist()
    assert len(set(labels)) == 4 and any(lab.endswith("gamma · burstiness 0.5") for lab in labels)
    assert any(lab.endswith("poisson") for lab in labels)


def test_a_constant_side_against_a_poisson_side_is_a_contrast() -> None:
    const = _arrivals([(r, "constant", np.nan, [100.0 * r, 101.0 * r]) for r in (1.0, 5.0)])
    poisson = _arrivals([(r, "poisson", 1.0, [110.0 * r, 111.0 * r]) for r in (1.0, 5.0)])
    c = compare(const, poisson)
    assert len(c.table) == 2 and c.contrast == {"arrival": ("constant", "poisson")}
    assert "not matched on arrival (constant vs poisson)" in c.message


def test_a_side_without_arrivals_does_not_pool_the_other_side_s_processes_as_repeats() -> None:
    # a dataset stored before the column (arrival empty) against one that records it: not matched on it, and the
    # recording side's constant and Poisson runs at one rate are not taken for repeats
    both = _arrivals([(5.0, "constant", np.nan, [562.0]), (5.0, "poisson", 1.0, [703.0])])
    old = _arrivals([(5.0, None, np.nan, [600.0, 610.0])])
    c = compare(old, both)
    assert "arrival" not in c.keys and len(c.table) == 1
    assert c.table["n_b"].iloc[0] == 2 and pd.isna(c.table["std_b"].iloc[0])
    assert "several arrival" in c.message
