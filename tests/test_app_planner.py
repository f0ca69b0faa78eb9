"""Planner and Report pages, headless (AppTest): a plan on a hand-made dataset, save as an analysis,
reopen ``?analysis=ID`` in a fresh app (a restart) with the same state, rename/delete, report download."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest
from test_planner import synthetic_runs

from perfmodel.api import import_files
from perfmodel.store import Store
from perfmodel.ui import planner as P

REPO = Path(__file__).resolve().parents[1]
APP = str(REPO / "app.py")
TIMEOUT_S = 90


@pytest.fixture
def dataset_id(tmp_path: Path) -> str:
    path = tmp_path / "bench.csv"
    synthetic_runs(noise=0.02).to_csv(path, index=False)
    info, _ = import_files([path], name="<script>x</script>")
    return info.id


def _page(page: str, **query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT_S)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    return at.switch_page(page).run()


def _ok(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def test_plan_save_and_reopen_after_restart(dataset_id: str) -> None:
    at = _page("pages/planner.py")
    _ok(at)
    at.session_state[P.KEYS["dataset"]] = dataset_id
    at.number_input(key=P.KEYS["rate"]).set_value(10.0)
    at.number_input(key=P.KEYS["input_len"]).set_value(1000.0)
    at.number_input(key=P.KEYS["output_len"]).set_value(1000.0)
    at.number_input(key=P.KEYS["e2e"]).set_value(12.0)
    at.text_area(key=P.KEYS["prices"]).set_value("h100-sxm=2")
    at.run()
    _ok(at)
    assert any("4 x h100-sxm" in m.value for m in at.markdown)
    at.text_input(key="analyses.name.planner").set_value("ten rps")
    form_buttons = [b for b in at.button if "Save analysis" in str(b.label)]
    form_buttons[0].click().run()
    _ok(at)
    saved = Store().analyses("planner")
    assert len(saved) == 1 and saved[0].name == "ten rps"
    aid = saved[0].id
    assert at.query_params["analysis"] == [aid] or at.query_params["analysis"] == aid

    # A new AppTest is a new server session on the same store: the link restores every input exactly.
    at2 = _page("pages/planner.py", analysis=aid)
    _ok(at2)
    assert at2.session_state[P.KEYS["rate"]] == 10.0 and at2.session_state[P.KEYS["e2e"]] == 12.0
    assert at2.session_state[P.KEYS["dataset"]] == dataset_id
    assert any("4 x h100-sxm" in m.value for m in at2.markdown)

    at3 = _page("pages/planner.py", analysis="not-a-real-id")
    _ok(at3)
    assert any("no saved analysis" in w.value for w in at3.warning)

    Store().rename_analysis(aid, "renamed")
    Store().delete_analysis(aid)
    assert Store().analyses() == []


def test_report_page_builds_and_offers_download(dataset_id: str) -> None:
    store = Store()
    store.save_analysis("p", "planner", {"dataset": dataset_id, "plan": {
        "workload": {"request_rate_rps": 10, "input_len_tok": 1000, "output_len_tok": 1000},
        "slo": {"e2e_s": 12}, "prices": {"h100-sxm": 2}}})
    at = _page("pages/report.py")
    _ok(at)
    # With no plan chosen the page says what a saved plan would add (the sections had only said "No plan
    # was given" inside the downloaded file).
    assert any("1 saved plan(s): choose one under *Saved plan*" in i.value for i in at.info)
    at.selectbox(key="report.plan").set_value(store.analyses()[0].id)
    at.checkbox(key="report.accuracy").uncheck()
    at.run()
    assert not [i for i in at.info if "Saved plan" in i.value]
    at.button(key="report.build").click().run()
    _ok(at)
    assert any("Report ready" in s.value for s in at.success)
    assert not at.get("iframe")
    at.toggle(key="report.preview").set_value(True).run()
    _ok(at)
    frames = at.get("iframe")
    assert len(frames) == 1 and "Executive summary" in frames[0].proto.srcdoc


def test_table_names_the_model_formats_numbers_and_shows_the_lengths_caveat(tmp_path: Path) -> None:
    # Two models on the same hardware read as two identical rows without a model column; the workload's
    # 1024/1024 tokens were never measured (the runs are at 1000/1000), which only an off-screen note said.
    path = tmp_path / "two_models.csv"
    pd.concat([synthetic_runs(hardware="h200", model="llama-3-8b"),
               synthetic_runs(hardware="h200", model="llama-3.1-8b")]).to_csv(path, index=False)
    info, _ = import_files([path], name="two models")
    at = _page("pages/planner.py")
    _ok(at)
    at.session_state[P.KEYS["dataset"]] = info.id
    at.run()
    at.multiselect(key=P.KEYS["models"]).set_value(["llama-3-8b", "llama-3.1-8b"]).run()
    _ok(at)
    # opened on the runs' own 1000/1000 (not an unmeasured 1024/1024); a workload at other lengths is asked for
    assert [at.number_input(key=P.KEYS[k]).value for k in ("input_len", "output_len")] == [1000.0, 1000.0]
    at.number_input(key=P.KEYS["input_len"]).set_value(1024.0)
    at.number_input(key=P.KEYS["output_len"]).set_value(1024.0).run()
    _ok(at)
    table = at.dataframe[0]
    df = table.value
    assert list(df.columns[:3]) == ["hardware", "model", "framework"]
    assert sorted(df["model"]) == ["llama-3-8b", "llama-3.1-8b"]
    assert list(df.columns).index("sized at (in/out tok)") < 6
    assert set(df["sized at (in/out tok)"]) == {"1000/1000"}
    assert set(df["status"]) == {"ok, sized at 1000/1000"}  # not a bare "ok" beside other requests' figures
    caveat = [w.value for w in at.warning if "nearest measured lengths" in w.value]
    assert caveat and "1024/1024" in caveat[0]
    config = json.loads(table.proto.columns)
    assert config["tok/s per device"]["type_config"]["format"] == "%,.0f"
    assert config["batch"]["type_config"]["format"] == "%,.0f"
    assert table.proto.placeholder == P.MISSING  # unknown prices show as a dash, not "None"
    # The price each cost uses and its public source are on the page, not only in the report (the catalog
    # has no public H200 price: none).
    assert set(df["price source"]) == {"none"} and df["USD/device-hour"].isna().all()


def test_cost_columns_come_before_the_bands_and_infeasible_rows_use_the_same_headers(dataset_id: str) -> None:
    # The cost columns were the 12th and 13th of 17, past the right edge of a 1,500-pixel window: a buyer saw
    # batch, throughput and three device counts but no price. The rejected candidates were headed device_count.
    at = _page("pages/planner.py")
    at.session_state[P.KEYS["dataset"]] = dataset_id
    at.text_area(key=P.KEYS["prices"]).set_value("h100-sxm=2")
    at.run()
    _ok(at)
    table = at.dataframe[0]
    cols = list(table.value.columns)
    assert cols.index("USD/h") < 8 and cols.index("USD/M output tok") < 8
    assert cols.index("devices") < cols.index("USD/h") < cols.index("devices (low)")
    # TTFT and TPOT beside the end-to-end latency, so the margin to each target shows (only e2e was there); the
    # runs have no TTFT, so no empty TTFT column
    assert cols.index("e2e s") + 1 == cols.index("TPOT s") and "TTFT s" not in cols
    config = json.loads(table.proto.columns)
    assert config["hardware"].get("pinned") and config["model"].get("pinned")
    at.number_input(key=P.KEYS["e2e"]).set_value(0.01).run()
    _ok(at)
    assert any(m.value == "**Infeasible candidates**" for m in at.markdown)
    bad = at.dataframe[-1].value
    assert "devices/replica" in bad.columns and "device_count" not in bad.columns


def _two_models(tmp_path: Path) -> Any:
    """A dataset of two models on one H200, llama-3.1-8b measured 3 runs more than llama-3-8b."""
    path = tmp_path / "two_models.csv"
    pd.concat([synthetic_runs(hardware="h200", model="llama-3.1-8b"),
               synthetic_runs(hardware="h200", model="llama-3-8b").iloc[:-3]]).to_csv(path, index=False)
    return import_files([path], name="two models")[0]


def test_one_model_by_default_several_said_to_be_alternatives_and_an_empty_front_says_why(tmp_path: Path) -> None:
    # The page planned every model of the dataset by default (a 1B model on a CPU ranked beside an 8B one on
    # GPUs), and with no catalog price its cost tab was a blank chart.
    info = _two_models(tmp_path)
    at = _page("pages/planner.py")
    at.session_state[P.KEYS["dataset"]] = info.id
    at.run()
    _ok(at)
    assert at.multiselect(key=P.KEYS["models"]).value == ["llama-3.1-8b"]  # the most measured
    assert set(at.dataframe[0].value["model"]) == {"llama-3.1-8b"}
    assert not [i for i in at.info if "different models" in i.value]
    tabs = {t.label: t for t in at.tabs}
    cost = [i.value for i in tabs["cost vs latency"].info]
    assert cost and "No price is known for h200" in cost[0] and "h200=" in cost[0]
    assert len(tabs["throughput vs latency"].get("plotly_chart")) == 1
    # The user empties the box (all models): it stays empty, and the page says what that compares.
    at.multiselect(key=P.KEYS["models"]).set_value([]).run()
    _ok(at)
    assert at.multiselect(key=P.KEYS["models"]).value == []
    assert set(at.dataframe[0].value["model"]) == {"llama-3-8b", "llama-3.1-8b"}
    assert [i for i in at.info if "serve 2 different models" in i.value]
    # A price given: the cost tab draws.
    at.text_area(key=P.KEYS["prices"]).set_value("h200=3.5").run()
    _ok(at)
    assert len({t.label: t for t in at.tabs}["cost vs latency"].get("plotly_chart")) == 1


def test_plan_notes_say_when_a_percentile_target_was_judged_against_means() -> None:
    # the plan's own notes (the CLI and the report had not said it, only the Planner page)
    from perfmodel.planner import latency_basis_notes as notes_of

    # the basis as the planner writes it; a TPOT on the mean, with no TPOT target, is not counted (it had been)
    table = pd.DataFrame({"model": ["m"] * 3, "latency_basis": [
        "e2e: measured mean (percentile not recorded), tpot: measured mean (percentile not recorded)",
        "e2e: measured p90, tpot: measured p90", "e2e: measured p90, tpot: measured mean (percentile not recorded)"]})
    notes = notes_of(table, "p90", ["e2e_s"])
    assert len(notes) == 1 and "judged against the measured mean" in notes[0] and "1 of 3" in notes[0]
    [tpot] = notes_of(table, "p90", ["tpot_s"])
    assert "2 of 3" in tpot
    assert notes_of(table, "mean", ["e2e_s"]) == []
    assert notes_of(table, "p90", []) == []  # no latency target: nothing judged
    assert P.page_notes(table, {"slo": {"percentile": "p90", "e2e_s": 60.0}}) == []  # the page shows the plan's


def test_the_derived_latency_note_names_only_targets_whose_latency_was_derived() -> None:
    # LLM-Inference-Bench at 128/128 with an e2e target: every candidate's e2e was measured and only its TPOT,
    # with no target, derived; the note had said the e2e and TPOT targets were judged against a mean (49 of 49).
    from perfmodel.planner import latency_basis_notes as notes_of

    table = pd.DataFrame({"model": ["m"] * 3, "latency_basis": ["e2e: measured p90, tpot: derived"] * 2
                          + ["e2e: derived, tpot: derived"]})
    assert notes_of(table, "p90", ["e2e_s"]) == [
        "Where no end-to-end latency was measured for a candidate (1 of 3 candidates: sized from runs at other "
        "lengths, predicted, or runs that did not record it) it is derived from throughput and batch, which gives "
        "a mean: the p90 end-to-end target is judged against that mean there."]
    [both] = notes_of(table, "p90", ["e2e_s", "tpot_s"])
    assert "(3 of 3 candidates" in both and "the p90 end-to-end and TPOT targets are judged" in both
    [tpot] = notes_of(table, "p90", ["tpot_s"])
    assert "Where no TPOT latency" in tpot and "(3 of 3" in tpot
    assert notes_of(table.iloc[:2], "p90", ["e2e_s"]) == []


def test_every_input_lives_in_the_url_and_a_copied_address_reopens_the_plan(tmp_path: Path) -> None:
    # The address bar read /planner whatever was entered: only a saved analysis could share a plan.
    info = _two_models(tmp_path)
    at = _page("pages/planner.py")
    at.session_state[P.KEYS["dataset"]] = info.id
    at.run()
    at.number_input(key=P.KEYS["rate"]).set_value(25.0)
    at.multiselect(key=P.KEYS["models"]).set_value([])  # all models, as alternatives
    at.text_area(key=P.KEYS["prices"]).set_value("h200=3.5")
    at.selectbox(key=P.KEYS["percentile"]).set_value("p99")
    at.run()
    _ok(at)
    qp = {k: at.query_params[k] for k in at.query_params}
    assert qp["dataset"] in (info.id, [info.id]) and qp["rate"] in ("25", ["25"])
    assert "models" not in qp and qp["percentile"] in ("p99", ["p99"])
    summary = [m.value for m in at.markdown if m.value.startswith("**")][0]

    at2 = AppTest.from_file(APP, default_timeout=TIMEOUT_S)  # a fresh session opening the copied address
    at2.run()
    for k, v in qp.items():
        at2.query_params[k] = v
    at2.switch_page("pages/planner.py").run()
    _ok(at2)
    assert at2.session_state[P.KEYS["rate"]] == 25.0 and at2.session_state[P.KEYS["percentile"]] == "p99"
    assert at2.session_state[P.KEYS["prices"]] == "h200=3.5"
    assert at2.multiselect(key=P.KEYS["models"]).value == []  # "all" stands, not the default model
    assert [m.value for m in at2.markdown if m.value.startswith("**")][0] == summary

    bad = _page("pages/planner.py", dataset=info.id, rate="fast")
    _ok(bad)
    assert any("rate='fast' is not a number of at least 0.001: showing 10" in w.value for w in bad.warning)
    assert bad.session_state[P.KEYS["rate"]] == P.DEFAULTS["rate"]


def test_predict_toggle_sizes_at_the_workload_lengths_and_offers_catalog_hardware(dataset_id: str) -> None:
    """The runs are at 1000/1000 tokens and the default workload at 1024/1024: sized from the nearest lengths
    until *Predict what was not measured* is on; then the candidate is predicted at 1024/1024 (the What-if
    model is trained on first use), catalog hardware without runs can be chosen and is predicted, and the
    link carries the toggle."""
    at = _page("pages/planner.py")
    at.session_state[P.KEYS["dataset"]] = dataset_id
    at.run()
    _ok(at)
    # the page opens on the lengths the runs measured most; the workload here asks for others
    assert at.number_input(key=P.KEYS["input_len"]).value == 1000.0
    at.number_input(key=P.KEYS["input_len"]).set_value(1024.0)
    at.number_input(key=P.KEYS["output_len"]).set_value(1024.0).run()
    assert any("Predict what was not measured" in w.value for w in at.warning if "nearest measured" in w.value)
    assert not any(o.startswith("l40s") for o in at.multiselect(key=P.KEYS["hardware"]).options)
    at.toggle(key=P.KEYS["predict"]).set_value(True).run()
    _ok(at)
    df = at.dataframe[0].value
    assert set(df["sized at (in/out tok)"]) == {"1024/1024"}
    assert set(df["sized from"]) == {"predicted at the workload's lengths (roofline-gbm)"}
    assert not [w for w in at.warning if "nearest measured lengths" in w.value]
    assert at.query_params["predict"] in (["true"], "true")
    assert "NVIDIA L40S 48GB · l40s" in at.multiselect(key=P.KEYS["hardware"]).options  # as What-if names it
    at.multiselect(key=P.KEYS["hardware"]).set_value(["h100-sxm", "l40s"]).run()
    _ok(at)
    rows = pd.concat([at.dataframe[0].value, *(d.value for d in at.dataframe[1:2])], ignore_index=True)
    assert "l40s" in set(rows["hardware"])  # feasible or not, it was sized, not dropped as "no data"
    assert not rows.get("reason", pd.Series(dtype=str)).astype(str).str.contains("no predictor").any()
    assert any("have no runs of their hardware and model" in i.value for i in at.info)

    # Prediction off keeps the catalog choice aside (it was dropped for good), and on again brings it back.
    at.toggle(key=P.KEYS["predict"]).set_value(False).run()
    _ok(at)
    assert at.multiselect(key=P.KEYS["hardware"]).value == ["h100-sxm"]
    assert any(i.value.startswith("l40s: no runs in this dataset, kept aside") for i in at.info)
    at.toggle(key=P.KEYS["predict"]).set_value(True).run()
    _ok(at)
    assert at.multiselect(key=P.KEYS["hardware"]).value == ["h100-sxm", "l40s"]

    # A fresh session on the link restores the toggle and the catalog hardware, without training again.
    [meta] = Path(os.environ["PERFMODEL_HOME"]).glob("models/whatif/*/metadata.json")
    trained = meta.stat().st_mtime_ns
    qp = {k: at.query_params[k] for k in at.query_params}
    at2 = AppTest.from_file(APP, default_timeout=TIMEOUT_S)
    at2.run()
    for k, v in qp.items():
        at2.query_params[k] = v
    at2.switch_page("pages/planner.py").run()
    _ok(at2)
    assert at2.session_state[P.KEYS["predict"]] is True
    assert at2.session_state[P.KEYS["hardware"]] == ["h100-sxm", "l40s"]
    assert meta.stat().st_mtime_ns == trained  # the model the first session trained, not a new one
    assert set(at2.dataframe[0].value["sized from"]) >= {"predicted at the workload's lengths (roofline-gbm)"}


def test_lengths_chosen_for_one_dataset_follow_a_switch_to_another(tmp_path: Path) -> None:
    # The page opened on one dataset's most measured lengths and kept them for the next dataset, which read
    # "Not measured at 128/128"; lengths the user typed stay.
    runs = synthetic_runs()
    paths = [tmp_path / "a.csv", tmp_path / "b.csv"]
    runs.to_csv(paths[0], index=False)
    runs.assign(input_len_tok=512.0, output_len_tok=128.0).to_csv(paths[1], index=False)
    ids = [import_files([p], name=p.stem)[0].id for p in paths]
    at = _page("pages/planner.py")
    at.session_state[P.KEYS["dataset"]] = ids[0]
    at.run()
    _ok(at)
    lengths = lambda: [at.number_input(key=P.KEYS[k]).value for k in ("input_len", "output_len")]  # noqa: E731
    assert lengths() == [1000.0, 1000.0]
    at.selectbox(key=P.KEYS["dataset"]).set_value(ids[1]).run()
    _ok(at)
    assert lengths() == [512.0, 128.0]
    at.number_input(key=P.KEYS["input_len"]).set_value(300.0).run()
    at.selectbox(key=P.KEYS["dataset"]).set_value(ids[0]).run()
    assert lengths() == [300.0, 128.0]


def test_inputs_survive_a_visit_to_another_page(dataset_id: str) -> None:
    """Going to another page from the sidebar and back reset every input (Streamlit drops the state of
    widgets a run does not draw): a plan saved after coming back saved the defaults."""
    at = _page("pages/planner.py")
    at.session_state[P.KEYS["dataset"]] = dataset_id
    at.run()
    at.number_input(key=P.KEYS["rate"]).set_value(25.0)
    at.toggle(key=P.KEYS["predict"]).set_value(True).run()
    at.multiselect(key=P.KEYS["hardware"]).set_value(["h100-sxm", "l40s"]).run()
    _ok(at)
    at.switch_page("pages/curves.py").run()
    _ok(at)
    at.switch_page("pages/planner.py").run()
    _ok(at)
    assert at.number_input(key=P.KEYS["rate"]).value == 25.0
    assert at.toggle(key=P.KEYS["predict"]).value is True
    assert at.multiselect(key=P.KEYS["hardware"]).value == ["h100-sxm", "l40s"]


def test_a_price_that_is_not_a_number_is_an_error_and_a_tpot_in_ms_gets_a_hint(dataset_id: str) -> None:
    # "h100-sxm=abc" fell back to the catalog's $2.99/h without a word, and a TPOT of 50 (ms, typed into the
    # seconds box) was taken as 50 s per token.
    at = _page("pages/planner.py")
    at.session_state[P.KEYS["dataset"]] = dataset_id
    at.text_area(key=P.KEYS["prices"]).set_value("h100-sxm=abc\na100-40gb=1.5").run()
    _ok(at)
    [err] = [e.value for e in at.error]
    assert "entry 1 'h100-sxm=abc'" in err and P.PRICES_LABEL in err and not at.dataframe
    at.text_area(key=P.KEYS["prices"]).set_value("h100-sxm=2.5, ").run()
    _ok(at)
    assert not at.error and at.dataframe
    assert not any("TPOT target" in w.value for w in at.warning)
    at.number_input(key=P.KEYS["tpot"]).set_value(50.0).run()
    assert any("50 ms is 0.05" in w.value for w in at.warning)
    with pytest.raises(Exception, match="entry 2 'l40s 2'"):
        P.prices_from_text("h100-sxm=2\nl40s 2")
    with pytest.raises(Exception, match="entry 1 '=-1'"):
        P.prices_from_text("=-1")
    assert P.prices_from_text("h100-sxm = 2.5,a100-40gb=0") == {"h100-sxm": 2.5, "a100-40gb": 0.0}


def test_frameworks_can_be_narrowed_to_the_stack_the_plan_keeps(tmp_path: Path) -> None:
    # Asking about vLLM, the recommendation led with TensorRT-LLM and there was no way to leave it out.
    path = tmp_path / "two_frameworks.csv"
    pd.concat([synthetic_runs(noise=0.02),
               synthetic_runs(noise=0.02).assign(framework="tensorrt-llm",
                                                 output_throughput_tok_s=lambda d: d["output_throughput_tok_s"] * 1.3)]
              ).to_csv(path, index=False)
    info = import_files([path], name="two frameworks")[0]
    at = _page("pages/planner.py")
    at.session_state[P.KEYS["dataset"]] = info.id
    at.run()
    _ok(at)
    assert set(at.dataframe[0].value["framework"]) == {"vllm", "tensorrt-llm"}
    at.multiselect(key=P.KEYS["frameworks"]).set_value(["vllm"]).run()
    _ok(at)
    assert set(at.dataframe[0].value["framework"]) == {"vllm"}
    assert at.query_params["frameworks"] in ("vllm", ["vllm"])  # in the link


def test_the_report_uses_the_model_the_pages_saved_instead_of_training_again(dataset_id: str) -> None:
    """With the What-if/Planner model saved for the dataset the report predicts with it (the pages' answers,
    and 9.7 -> 4.5 s on the bundled sample); without one it trains its own."""
    from perfmodel.ui import cached
    from perfmodel.ui import whatif as WUI
    from perfmodel.ui.planner import _report

    home = cached.home()
    stamp = cached.store_stamp(home)
    before = _report(home, dataset_id, stamp, "", False)
    assert "predictor" in before.timings_s  # trained for the report
    path = WUI.default_model_path(home, dataset_id, Store().dataset(dataset_id).n_runs)
    WUI.train(home, dataset_id, stamp, WUI.DEFAULT_OPTIONS, path)
    after = _report(home, dataset_id, stamp, "", False)
    assert "predictor" not in after.timings_s  # loaded, not trained
    # the same rows and settings: the saved model attributes as the report's own did
    tables = [dict(r.section("Top feature attributions").tables) for r in (before, after)]
    assert tables[0] and tables[0].keys() == tables[1].keys()
    for name, table in tables[0].items():
        pd.testing.assert_frame_equal(table, tables[1][name])


def test_a_rate_the_server_did_not_deliver_is_not_planned_and_the_page_says_so(formats_dir: Path) -> None:
    """inference-perf's vLLM sweep on one H100: the page had planned its 183 req/s stage (103 completed, p90 TTFT
    3.3 s) under the default 60 s target, with nothing said; the fastest delivered stage is planned, the notes name
    the three undelivered, and a dataset of those three alone is planned as overloaded, said in the status."""
    from perfmodel.importers.base import ImportMeta

    files = sorted((formats_dir / "inference-perf").glob("*stage_[0-6]_lifecycle_metrics.json"))
    meta = ImportMeta(hardware="h100", model="llama-3-8b", framework="vllm")
    full = import_files(files, meta=meta, name="inference-perf sweep")[0]
    late = import_files([f for f in files if f.name.split("stage_")[1][0] in "456"], meta=meta,
                        name="inference-perf overloaded")[0]
    at = _page("pages/planner.py")
    at.session_state[P.KEYS["dataset"]] = full.id
    at.run()
    _ok(at)
    df = at.dataframe[0].value
    assert df["status"].tolist() == ["ok"] and df["TTFT s"].iloc[0] < 0.1
    assert any(c.value.startswith("3 request-rate run(s) did not deliver the rate asked") for c in at.caption)
    at.session_state[P.KEYS["dataset"]] = late.id
    at.run()
    _ok(at)
    df = at.dataframe[0].value
    assert df["status"].tolist() == ["ok, overloaded (rate not delivered)"]
    assert "Overloaded: the server did not deliver the planned request rate" in at.markdown[0].value


def test_the_page_names_the_cheaper_batch_that_is_not_robust_on_the_h200_sample() -> None:
    """The H200 sample at 512/512 against a mean e2e of 17 s: the page recommended 17 H200s at batch 16 and said
    nothing of batch 64, which needs 5 but one of whose 3 runs took 19.5 s."""
    info, _ = import_files([REPO / "sample_runs" / "perfmodel-large-llama_h200_local-sweep-out512.csv"],
                           name="h200 out512")
    at = _page("pages/planner.py")
    at.session_state[P.KEYS["dataset"]] = info.id
    at.run()
    for key, value in (("rate", 20.0), ("input_len", 512.0), ("output_len", 512.0), ("e2e", 17.0)):
        at.number_input(key=P.KEYS[key]).set_value(value)
    at.selectbox(key=P.KEYS["percentile"]).set_value("mean")
    at.run()
    _ok(at)
    summary = at.markdown[0].value
    assert "17 x h200" in summary and ("Cheaper but not robust: batch 64 would need 5 x h200 (12 fewer), but 1 of "
                                       "its 3 runs measured a mean e2e of 19.5 s against the 17 s target.") in summary
    df = at.dataframe[0].value
    assert df["status"].tolist() == ["ok"] and df["batch"].tolist() == [16]
    assert df["note"].iloc[0].startswith("batch 64 would need 5 devices, not 17, but is not robust")


def test_an_overloaded_row_shows_no_load_read_off_its_peak() -> None:
    table = pd.DataFrame({"status": ["ok", "ok"], "robust": [True, False], "overloaded": [False, True],
                          "load_batch": [13.1, 318.3], "e2e_at_load_s": [11.1, 4.41]})
    out = P.display_table(table, "USD")
    assert out["status"].tolist() == ["ok", "ok, overloaded (rate not delivered)"]
    assert out[P.LOAD_BATCH_HEADER].iloc[0] == 13.1 and pd.isna(out[P.LOAD_BATCH_HEADER].iloc[1])
    assert pd.isna(out[P.LOAD_E2E_HEADER].iloc[1])
