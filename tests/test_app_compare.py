"""The Compare page, headless (AppTest) on the sample data the app imports into an empty store.

The sample dataset holds perfmodel's local-engine sweep of the tiny Llama and the same model served by
``transformers serve``; cutting one side to each model (and not matching on the model name) compares them
at input 64 / output 32, batch 1, 2 and 4, where the served model is faster by far more than the noise
(the same figures as ``tests/test_cli_compare.py`` on the files).
"""

from __future__ import annotations

import base64
import json

import numpy as np
from test_app_analyses import _ok, _open, _qp, _reopen, _save

from perfmodel.store import Store
from perfmodel.ui.compare import KEYS


def _local_vs_served():  # noqa: ANN202
    at = _open("pages/compare.py")
    _ok(at)
    at.selectbox(key=KEYS["by_a"]).set_value("model").run()
    at.multiselect(key=KEYS["in_a"]).set_value(["perfmodel-tiny-llama"]).run()
    at.selectbox(key=KEYS["by_b"]).set_value("model").run()
    at.multiselect(key=KEYS["in_b"]).set_value(["perfmodel-served-tiny-llama"]).run()
    at.multiselect(key=KEYS["ignore"]).set_value(["model"]).run()
    _ok(at)
    return at


def test_local_engine_vs_served_on_the_sample() -> None:
    at = _local_vs_served()
    assert {m.label: m.value for m in at.metric} == {"Matched points": "3", "Beyond noise": "2",
                                                     "Within noise": "1", "No repeats": "0"}
    assert any("+117.0%" in m.value for m in at.markdown)
    (df,) = at.dataframe
    table = df.value
    assert table["batch_size"].tolist() == [1.0, 2.0, 4.0]
    assert abs(table["mean_a"].iloc[0] - 116.397) < 0.01 and abs(table["mean_b"].iloc[0] - 176.711) < 0.01
    assert table["verdict"].tolist() == ["beyond noise", "within noise", "beyond noise"]
    assert table["p_value"].iloc[1] > 0.05 > table["p_value"].iloc[0]
    # matched on the framework too (the model side holds llama.cpp runs as well, not pooled with transformers);
    # thread count and dtypes are not recorded by the served side, so not matched on
    assert set(table["framework"]) == {"transformers"} and "fw_num_threads" not in table.columns
    fig = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert [t.get("meta") for t in fig["data"]] == ["a", "b", "significant"]
    x = fig["data"][2]["x"]  # plotly writes numeric arrays as base64 typed arrays
    assert np.frombuffer(base64.b64decode(x["bdata"]), dtype=x["dtype"]).tolist() == [1.0, 4.0]  # marked ones
    assert at.query_params["in_b"] in ("perfmodel-served-tiny-llama", ["perfmodel-served-tiny-llama"])


def test_a_link_to_a_missing_dataset_warns() -> None:
    at = _open("pages/compare.py", a="not-a-dataset")
    _ok(at)
    assert any("not-a-dataset" in w.value for w in at.warning)
    assert at.selectbox(key=KEYS["a"]).value == Store().datasets()[0].id  # fell back to a stored one


def test_compare_view_reopens_from_a_saved_analysis() -> None:
    at = _local_vs_served()
    params = _qp(at)
    aid = _save(at, "compare", "local vs served")
    at2 = _reopen(aid, "Compare")
    _ok(at2)
    for name in ("by_a", "by_b"):
        assert at2.selectbox(key=KEYS[name]).value == "model"
    assert at2.multiselect(key=KEYS["in_a"]).value == ["perfmodel-tiny-llama"]
    assert at2.multiselect(key=KEYS["in_b"]).value == ["perfmodel-served-tiny-llama"]
    assert at2.multiselect(key=KEYS["ignore"]).value == ["model"]
    assert {m.label: m.value for m in at2.metric}["Beyond noise"] == "2"
    assert _qp(at2) == params


def test_one_dataset_opens_on_two_different_subsets_not_on_itself() -> None:
    """With one dataset both sides used to default to all of it: "+0.0%, 0 beyond noise", every line twice."""
    at = _open("pages/compare.py")
    _ok(at)
    # two models of the sample that share hardware, lengths and batch sizes (not the dataset against itself)
    assert at.selectbox(key=KEYS["by_a"]).value == at.selectbox(key=KEYS["by_b"]).value == "model"
    assert at.multiselect(key=KEYS["in_a"]).value == ["perfmodel-large-llama"]
    assert at.multiselect(key=KEYS["in_b"]).value == ["perfmodel-medium-llama"]
    assert at.multiselect(key=KEYS["in_a"]).label == "model is one of"
    metrics = {m.label: m.value for m in at.metric}
    # two repeats a side: Welch's t-test settles 3 of the 8 (2 standard errors had called all 8)
    assert metrics["Matched points"] == "8" and metrics["Beyond noise"] == "3"
    assert not any("+0.0%" in m.value for m in at.markdown)
    fig = json.loads(at.get("plotly_chart")[0].proto.spec)
    xaxis = fig["layout"]["xaxis"]
    # the batch axis as on the other pages, labelled at powers of two only (not "8 9 1 2 3 ... 100")
    assert xaxis["title"]["text"] == "batch size (sequences)" and xaxis["type"] == "log"
    assert xaxis["tickvals"] == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0]
    assert xaxis["ticktext"][-1] == "256"
    assert fig["layout"]["legend"]["y"] < 0 and fig["layout"]["legend"]["yanchor"] == "top"  # below the title
    # the two sides on lines of their own under the metric, with room for them (one line was cut off at the edge)
    title = fig["layout"]["title"]
    assert title["text"] == "output throughput (tok/s)"
    assert title["subtitle"]["text"].split("<br>") == ["A (solid): sample runs [model=perfmodel-large-llama]",
                                                       "B (dashed): sample runs [model=perfmodel-medium-llama]"]
    assert fig["layout"]["margin"]["t"] >= 50 + 2 * 18


def test_the_same_rows_on_both_sides_ask_for_two_different_sides() -> None:
    at = _open("pages/compare.py")
    _ok(at)
    at.selectbox(key=KEYS["by_a"]).set_value("(all rows)").run()
    at.selectbox(key=KEYS["by_b"]).set_value("(all rows)").run()
    _ok(at)
    assert at.multiselect(key=KEYS["in_a"]).label == "Values (choose a column first)"
    assert any("same rows" in i.value for i in at.info)
    assert not at.get("plotly_chart") and not at.metric and not any("+0.0%" in m.value for m in at.markdown)


def test_a_side_that_holds_the_other_is_warned_about() -> None:
    # Side A llama.cpp against the whole sample on B read "+0.0 %, 0 beyond noise" with no word of why.
    from perfmodel.ui.compare import NO_SUBSET, contained

    at = _open("pages/compare.py")
    at.selectbox(key=KEYS["by_b"]).set_value("(all rows)").run()
    _ok(at)
    assert any("Side B holds every run of side A" in w.value for w in at.warning)
    ds = at.selectbox(key=KEYS["a"]).value
    side = {"dataset": ds, "by": "framework", "in": ["llama.cpp"]}
    assert contained(side, {"dataset": ds, "by": NO_SUBSET, "in": []}) == "b"
    assert contained({**side, "in": ["llama.cpp", "vllm"]}, side) == "a"
    assert contained(side, {**side, "in": ["vllm"]}) is None  # two cuts apart: fair
    assert contained(side, {**side, "dataset": "other"}) is None and contained(side, side) is None


def test_per_point_table_shows_the_results_before_the_keys_that_never_change() -> None:
    # The nine key columns came first, most of them the same on every row (hardware, framework, dtypes, tp,
    # pp): A, B, the difference and the verdict began past the right edge of a 1,500-pixel-wide window.
    at = _local_vs_served()
    (df,) = at.dataframe
    cols = list(df.value.columns)
    assert cols[:5] == ["batch_size", "mean_a", "mean_b", "diff_pct", "verdict"]
    assert cols.index("hardware") > cols.index("std_b")  # one hardware on every row: at the end, still there
    config = json.loads(df.proto.columns)
    assert config["n_a"]["label"] == "repeats A" and config["n_b"]["label"] == "repeats B"


def test_one_sweep_at_two_thread_counts_compares_with_itself() -> None:
    # The sample's tiny Llama was swept at 1 and 2 torch threads in one dataset; a measurement setting is a
    # column a side can be cut by, shown in words, its values without ".0", and not matched on once it is what
    # the sides contrast.
    at = _open("pages/compare.py")
    _ok(at)
    for side, threads in (("a", "1.0"), ("b", "2.0")):
        at.selectbox(key=KEYS[f"by_{side}"]).set_value("fw_num_threads").run()
        at.multiselect(key=KEYS[f"in_{side}"]).set_value([threads]).run()
    _ok(at)
    box = at.multiselect(key=KEYS["in_a"])
    assert box.label == "threads is one of" and [box.format_func(o) for o in box.options] == ["1", "2"]
    table = at.dataframe[0].value
    assert len(table) == 6 and set(table["input_len_tok"]) == {128.0} and set(table["output_len_tok"]) == {32.0}
    assert "fw_num_threads" not in table.columns
    assert {m.label: m.value for m in at.metric}["Matched points"] == "6"
    config = json.loads(at.dataframe[0].proto.columns)  # throughput to one decimal, not 1,232.789
    assert config["mean_a"]["type_config"]["format"] == "%,.1f"
    assert at.query_params["by_b"] in ("fw_num_threads", ["fw_num_threads"])
    assert any("[threads=2]" in m.value and "[threads=1]" in m.value for m in at.markdown)  # not fw_num_threads=2.0


def test_the_app_wide_dataset_link_opens_both_sides_on_it() -> None:
    # /compare?dataset=<the sample> had opened both sides on the newest dataset, the link ignored.
    at = _open("pages/compare.py")  # imports the sample into the empty store
    _ok(at)
    sample = Store().datasets()[0]
    other = Store().create_dataset("newer", {})
    Store().append_runs(other.id, Store().runs(sample.id).iloc[:3].reset_index(drop=True))
    at = _open("pages/compare.py")
    _ok(at)
    assert at.selectbox(key=KEYS["a"]).value == other.id  # the newest opens without a link
    at = _open("pages/compare.py", dataset=sample.id)
    _ok(at)
    assert at.selectbox(key=KEYS["a"]).value == at.selectbox(key=KEYS["b"]).value == sample.id
    at = _open("pages/compare.py", dataset="nope")
    _ok(at)
    assert any("nope" in w.value for w in at.warning)


def test_the_default_split_is_the_pair_compared_at_the_most_batch_sizes(all_results_csv) -> None:  # noqa: ANN001
    # LLM-Inference-Bench had opened on vLLM against llama.cpp, which meet at batch 1 only: a pile of dots.
    from perfmodel import api
    from perfmodel.ui import cached
    from perfmodel.ui import compare as C

    info, _ = api.import_files([all_results_csv])
    col, a, b = C.default_split(cached.home(), info.id, 0)
    assert col == "framework" and {a, b} == {"vllm", "tensorrt-llm"}


def test_request_rate_points_show_their_rate_on_the_page() -> None:
    # The page's chart titled a rate axis "batch size" and drew every point at x = NaN; the rate was not a column
    # of the per-point table, and "Do not match on" offered the batch's companions of the load.
    import pandas as pd

    from perfmodel.pareto import LOAD_KEYS, compare
    from perfmodel.ui import compare as C

    runs = pd.DataFrame([{"hardware": "h100-sxm", "model": "llama-3-8b", "device_count": 1, "input_len_tok": 204.0,
                          "output_len_tok": 62.0, "framework": "vllm", "load_kind": "request_rate",
                          "batch_size": np.nan, "request_rate_rps": r, "output_throughput_tok_s": v}
                         for r, vs in ((1.0, (64.0, 65.0)), (31.4, (1943.0, 1950.0)), (61.79, (3820.0, 3790.0)))
                         for v in vs])
    comp = compare(runs, runs.assign(output_throughput_tok_s=runs["output_throughput_tok_s"] * 1.1))
    view = C.per_point_view(C.table_with_verdicts(comp).drop(columns=["significant"]))
    assert view.columns[0] == "request_rate_rps" and view["request_rate_rps"].tolist() == [1.0, 31.4, 61.79]
    fig = C.figure(comp, None, log_x=True)
    assert fig.layout.xaxis.title.text == "request rate (req/s)" and fig.layout.xaxis.tickvals is None
    assert list(fig.data[0].x) == [1.0, 31.4, 61.79]
    assert not set(LOAD_KEYS) & set(C.key_choices())
