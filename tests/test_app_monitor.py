"""The Monitor page, headless: the upload prompt, a recorded stream uploaded to the page, a replay of the
sample dataset, settings from the URL."""

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


def test_recorded_stream_upload_shows_the_alert_and_its_hint() -> None:
    """tests/data/monitor/stream.csv has a decode slowdown with the KV cache full at samples 295-305."""
    at = _monitor(detector="window")
    at.file_uploader(key="monitor.upload").set_value(
        [("stream.csv", (REPO / "tests" / "data" / "monitor" / "stream.csv").read_bytes(), "text/csv")]).run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error
    at.multiselect(key="monitor.metrics").set_value(["tpot_s"]).run()
    alerts = at.dataframe[0].value
    hit = alerts[(alerts.start_index >= 295) & (alerts.start_index <= 305)]
    assert len(hit) == 1 and "KV-cache usage reached 98%" in hit.iloc[0]["hint"]
    fig = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert "alerts" in [tr.get("meta") for tr in fig["data"]]
