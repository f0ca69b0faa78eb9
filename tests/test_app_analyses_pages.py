"""Saved analyses of the Report, Sweeps and Monitor pages (AppTest): save the page's inputs, then a new session
opened at ``/?analysis=ID`` (as after a restart) lands on that page with the same widget values.

Runs on the sample dataset the app imports into an empty store, with non-default values set here.
"""

from __future__ import annotations

from test_app_analyses import _ok, _open, _qp, _reopen, _save

from perfmodel.store import Store
from perfmodel.ui import sweeps as S


def test_report_inputs_reopen() -> None:
    at = _open("pages/report.py")
    _ok(at)
    (sample,) = Store().datasets()
    plan = Store().save_analysis("small plan", "planner", {
        "dataset": sample.id, "plan": {"workload": {"request_rate_rps": 2, "input_len_tok": 64, "output_len_tok": 32}}})
    at.run()  # the new saved plan becomes a choice
    at.selectbox(key="report.plan").set_value(plan.id).run()
    at.checkbox(key="report.accuracy").uncheck().run()
    _ok(at)
    params = _qp(at)
    assert params == {"dataset": [sample.id], "plan": [plan.id], "accuracy": ["false"]}
    aid = _save(at, "report", "report with plan")
    at2 = _reopen(aid, "Report")
    assert at2.selectbox(key="report.plan").value == plan.id
    assert at2.checkbox(key="report.accuracy").value is False
    assert at2.selectbox(key="report.dataset").value == sample.id
    assert _qp(at2) == params


def test_sweeps_form_reopens() -> None:
    at = _open("pages/sweeps.py")
    _ok(at)
    f = S.FIELD
    at.selectbox(key=f["engine_size"]).set_value("micro")
    at.text_input(key=f["batch_sizes"]).set_value("1,2,4")
    at.text_input(key=f["input_lens"]).set_value("8")
    at.number_input(key=f["repeats"]).set_value(2)
    at.number_input(key=f["timeout_s"]).set_value(120.0)
    at.button(key="sweeps.form.check").click().run()  # a form's values count once submitted
    _ok(at)
    params = _qp(at)
    assert params["batch_sizes"] == ["1,2,4"] and params["repeats"] == ["2"] and params["timeout_s"] == ["120"]
    aid = _save(at, "sweeps", "micro sweep")
    at2 = _reopen(aid, "Sweeps")
    assert at2.selectbox(key=f["engine_size"]).value == "micro"
    assert at2.text_input(key=f["batch_sizes"]).value == "1,2,4"
    assert at2.text_input(key=f["input_lens"]).value == "8"
    assert at2.number_input(key=f["repeats"]).value == 2
    assert at2.number_input(key=f["timeout_s"]).value == 120.0
    assert at2.text_input(key=f["output_lens"]).value == S.FORM_DEFAULTS["output_lens"]
    assert _qp(at2) == params
    assert not at2.warning  # no "default value set via Session State" or link warning


def test_monitor_settings_and_stream_reopen() -> None:
    at = _open("pages/monitor.py")
    _ok(at)
    at.radio(key="monitor.source").set_value("Stored dataset (replay)").run()
    at.selectbox(key="monitor.detector").set_value("threshold").run()
    at.number_input(key="monitor.threshold").set_value(0.25).run()  # the setting the threshold detector reads
    _ok(at)
    metrics = at.multiselect(key="monitor.metrics")
    assert len(metrics.options) >= 2
    chosen = [metrics.options[-1]]
    metrics.set_value(chosen).run()
    _ok(at)
    params = _qp(at)
    assert params["source"] == ["Stored dataset (replay)"] and params["metrics"] == chosen
    aid = _save(at, "monitor", "threshold replay")
    at2 = _reopen(aid, "Monitor")
    assert at2.radio(key="monitor.source").value == "Stored dataset (replay)"
    assert at2.selectbox(key="monitor.detector").value == "threshold"
    assert at2.number_input(key="monitor.threshold").value == 0.25
    assert at2.multiselect(key="monitor.metrics").value == chosen
    assert at2.selectbox(key="monitor.dataset").value == Store().datasets()[0].id
    assert _qp(at2) == params


def test_a_saved_plan_opened_on_the_report_page_is_the_report_of_that_plan() -> None:
    # Guards: /report?analysis=<a Planner analysis> switched to the Planner page.
    at = _open("pages/report.py")
    _ok(at)
    (sample,) = Store().datasets()
    plan = Store().save_analysis("a plan", "planner", {
        "page": "planner", "params": {"dataset": [sample.id]}, "dataset": sample.id,
        "plan": {"workload": {"request_rate_rps": 2, "input_len_tok": 64, "output_len_tok": 32}}})
    at2 = _open("pages/report.py", analysis=plan.id)
    _ok(at2)
    assert at2.title[0].value == "Report"
    assert at2.selectbox(key="report.plan").value == plan.id
    assert at2.selectbox(key="report.dataset").value == sample.id
    assert "analysis" not in at2.query_params and _qp(at2)["plan"] == [plan.id]
