"""The Monitor page, headless: the upload prompt, a replay of the sample dataset, settings from the URL.

AppTest cannot drive ``st.file_uploader``, so the recorded-file path is covered through the same
core calls by tests/test_monitor.py and tests/test_monitor_cli.py; here the page replays a stored dataset.
"""

from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

REPO = Path(__file__).resolve().parents[1]
APP = str(REPO / "app.py")
PAGE = "pages/monitor.py"


def _monitor(**query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    return at.switch_page(PAGE).run()


def test_upload_prompt_and_settings_from_the_link() -> None:
    at = _monitor(detector="threshold", window="500", z="4.0")
    assert not at.exception, [e.value for e in at.exception]
    assert [t.value for t in at.title] == ["Monitor"]
    assert at.selectbox(key="monitor.detector").value == "threshold"
    assert at.number_input(key="monitor.window").value == 500
    assert at.number_input(key="monitor.z").value == 4.0
    assert any("Upload a recorded stream" in i.value for i in at.info)


def test_replay_of_the_sample_dataset_marks_alerts_with_hints() -> None:
    at = _monitor()
    at.radio(key="monitor.source").set_value("Stored dataset (replay)").run()
    at.selectbox(key="monitor.detector").set_value("threshold").run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error
    fig = json.loads(at.get("plotly_chart")[0].proto.spec)
    metas = [tr.get("meta") for tr in fig["data"]]
    assert metas.count("band") == 2 and "series" in metas and "alerts" in metas
    alerts = at.dataframe[0].value
    assert len(alerts) > 0 and {"group", "metric", "start_timestamp_s", "hint"} <= set(alerts.columns)
    assert at.query_params["detector"] in ("threshold", ["threshold"])
