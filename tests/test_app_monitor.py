"""The Monitor page, headless: the upload prompt, a recorded stream uploaded to the page, a replay of the
sample dataset, settings from the URL."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
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
    # z=nan had reached the detector, which stopped with an error; a value out of range is named too
    bad = _monitor(detector="point", z="nan", window="1")
    assert not bad.exception and not bad.error, [e.value for e in bad.error]
    assert sorted(w.value for w in bad.warning) == ["window='1' is not a whole number from 2 to 100,000: showing 1000",
                                                    "z='nan' is not a number from 0.5 to 20: showing 3"]
    assert bad.number_input(key="monitor.z").value == 3.0 and bad.number_input(key="monitor.window").value == 1000


def test_replay_of_the_sample_dataset_marks_alerts_with_hints() -> None:
    # The default window detector judges nothing on a sweep of 3 repeats. Chosen (here by the link), the page
    # says so and offers the detector that does; not chosen, the page takes that detector itself (it opened on
    # "Nothing was judged").
    at = _monitor(detector="window")
    at.radio(key="monitor.source").set_value("Stored dataset (replay)").run()
    assert any(i.value.startswith("Nothing was judged") for i in at.info)
    assert any("baseline window, 1,000, is the most it keeps" in i.value for i in at.info)
    at.button(key="monitor.to_threshold").click().run()
    assert at.selectbox(key="monitor.detector").value == "threshold"
    assert not at.exception, [e.value for e in at.exception]
    fresh = _monitor()
    fresh.radio(key="monitor.source").set_value("Stored dataset (replay)").run()
    assert not fresh.exception, [e.value for e in fresh.exception]
    assert fresh.selectbox(key="monitor.detector").value == "threshold"
    assert any(c.value.startswith("Detector: **threshold**, chosen for this dataset, since no configuration has the "
                                  "31 repeats or more") for c in fresh.caption)
    assert not any(i.value.startswith("Nothing was judged") for i in fresh.info) and len(fresh.dataframe[0].value)
    # a detector chosen by the user afterwards stays, even where it judges nothing
    fresh.selectbox(key="monitor.detector").set_value("point").run()
    assert fresh.selectbox(key="monitor.detector").value == "point"
    assert any(i.value.startswith("Nothing was judged") for i in fresh.info)
    assert not at.error
    fig = json.loads(at.get("plotly_chart")[0].proto.spec)
    metas = [tr.get("meta") for tr in fig["data"]]
    assert metas.count("band") == 1 and "series" in metas and "alerts" in metas
    # One row per incident by default: a slow repeat's TPOT, ITL and latency alerts are one row, metrics
    # listed; the toggle (kept in the link) shows one row per metric.
    incidents = at.dataframe[0].value
    assert len(incidents) > 0 and {"group", "metrics", "changes", "n_metrics", "hint"} <= set(incidents.columns)
    assert "tpot_s" not in " ".join(incidents["metrics"]) and (incidents["n_metrics"] > 1).any()
    at.toggle(key="monitor.per_metric").set_value(True).run()
    alerts = at.dataframe[0].value
    # (a metric can appear twice in one incident: a repeat above its siblings, the next below them)
    assert len(alerts) >= incidents["n_metrics"].sum() > len(incidents)
    assert {"group", "metric", "start_timestamp_s", "hint"} <= set(alerts.columns)
    [summary] = [c.value for c in at.caption if "incident(s) on" in c.value]
    assert summary.startswith(f"{len(alerts):,} alert(s) in {len(incidents):,} incident(s) on "
                              f"{alerts['group'].nunique():,} group(s)")
    assert at.query_params["detector"] in ("threshold", ["threshold"])
    assert at.query_params["per_metric"] in ("true", ["true"])


def test_recorded_stream_upload_shows_the_alert_and_its_hint() -> None:
    """tests/data/monitor/stream.csv has a decode slowdown with the KV cache full at samples 295-305."""
    at = _monitor(detector="window")
    at.file_uploader(key="monitor.upload").set_value(
        [("stream.csv", (REPO / "tests" / "data" / "monitor" / "stream.csv").read_bytes(), "text/csv")]).run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error
    at.multiselect(key="monitor.metrics").set_value(["tpot_s"]).run()
    alerts = at.dataframe[0].value  # incidents, here one metric each
    hit = alerts[(alerts.start_index >= 295) & (alerts.start_index <= 305)]
    assert len(hit) == 1 and "KV-cache usage reached 98%" in hit.iloc[0]["hint"]
    fig = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert "alerts" in [tr.get("meta") for tr in fig["data"]]


def _replay(at: AppTest, detector: str) -> AppTest:
    at.radio(key="monitor.source").set_value("Stored dataset (replay)").run()
    at.selectbox(key="monitor.detector").set_value(detector).run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error
    return at


def test_a_replayed_sweep_is_judged_one_configuration_at_a_time() -> None:
    """The sample is a batch sweep: replayed as one series per hardware/model/framework it flagged the sweep
    itself (70 alerts on the H200 group, batch 256 "anomalous" against batch 1). Each group is now one
    configuration, so only repeats of the same measurement are compared, and the page says so."""
    from perfmodel.plots import axis_title
    from perfmodel.store import Store
    from perfmodel.ui.monitor import configuration_of

    at = _replay(_monitor(), "threshold")
    assert any("a sweep, not a stream" in i.value for i in at.info)
    runs = Store().runs(Store().datasets()[0].id)
    labels = configuration_of(runs)
    groups = at.selectbox(key="monitor.group").options
    assert sorted(groups) == sorted(labels.unique())
    # every group is one configuration: one batch size and one pair of lengths
    per = runs.assign(g=labels).groupby("g")[["batch_size", "input_len_tok", "output_len_tok", "load_kind"]]
    assert (per.nunique(dropna=False) == 1).all().all()
    at.toggle(key="monitor.per_metric").set_value(True).run()
    alerts = at.dataframe[0].value
    assert len(alerts) > 0 and set(alerts["group"]) <= set(groups)
    # each run is judged against its own configuration's repeats, not against another batch size
    runs = runs.assign(g=labels)
    raw = {axis_title(c): c for c in runs.columns}  # the table names metrics in words ("TTFT (s)")
    assert set(alerts["metric"]) <= set(raw)
    for rec in alerts.to_dict("records"):
        own = runs.loc[runs["g"] == rec["group"], raw[rec["metric"]]]
        assert own.min() <= rec["expected"] <= own.max()
    # the chart opens on the largest alert (its group and metric), not on the first group, often without one
    top = alerts.loc[alerts["score"].abs().idxmax()]
    assert at.selectbox(key="monitor.group").value == top["group"]
    assert axis_title(at.selectbox(key="monitor.metric_shown").value) == top["metric"]
    fig = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert "alerts" in [tr.get("meta") for tr in fig["data"]]


def test_a_two_point_sweep_raises_no_alert() -> None:
    """Batch 2 is faster than batch 1: that is the sweep, not an anomaly (both points used to be flagged)."""
    from perfmodel.store import Store

    at = _monitor()
    store = Store()
    runs = store.runs(store.datasets()[0].id)
    two = runs[(runs["hardware"] == "cpu-x86-2vcpu") & (runs["framework"] == "transformers")
               & (runs["input_len_tok"] == 64) & (runs["output_len_tok"] == 32) & (runs["repeat_idx"] == 0)
               & runs["batch_size"].isin([1.0, 2.0]) & (runs["model"] == "perfmodel-tiny-llama")]
    two = two.drop_duplicates("batch_size")
    assert len(two) == 2 and two["output_throughput_tok_s"].nunique() == 2
    info = store.create_dataset("two points", {})
    store.append_runs(info.id, two.reset_index(drop=True))
    at.run()
    at.radio(key="monitor.source").set_value("Stored dataset (replay)").run()
    at.selectbox(key="monitor.dataset").set_value(info.id).run()
    for detector in ("threshold", "window", "point"):
        at.selectbox(key="monitor.detector").set_value(detector).run()
        assert not at.exception, [e.value for e in at.exception]
        assert [s.value for s in at.subheader if s.value.startswith("Alerts")] == ["Alerts (0)"]
        assert any("0 of 2 configurations" in i.value for i in at.info)
        # nothing was judged (no configuration measured twice): no green "No anomaly"
        assert not at.success and any(i.value.startswith("Nothing was judged") for i in at.info)


def test_only_the_chosen_detectors_settings_are_editable() -> None:
    at = _monitor(detector="threshold")
    used = {"threshold": {"threshold"}, "window": {"window", "w", "z"}, "point": {"window", "z"}}
    for detector, keys in used.items():
        at.selectbox(key="monitor.detector").set_value(detector).run()
        assert not at.exception, [e.value for e in at.exception]
        for name in ("window", "w", "z", "threshold"):
            proto = at.number_input(key=f"monitor.{name}").proto
            assert proto.disabled == (name not in keys), (detector, name)
            assert ("Not used by the" in proto.help) == (name not in keys)
        assert any(f"The **{detector}** detector uses" in c.value for c in at.caption)
    assert at.number_input(key="monitor.w").value == 10  # a greyed-out setting keeps its value


def test_band_is_clipped_at_zero_and_gaps_are_not_bridged() -> None:
    """A noisy non-negative metric gave a band down to -4k; a line crossed an hours-long pause."""
    import numpy as np

    from perfmodel.monitor import monitor_stream, read_stream_bytes
    from perfmodel.ui.monitor import series_figure

    rng = np.random.default_rng(0)
    t = np.r_[np.arange(60.0), 7200.0 + np.arange(60.0)]  # one sample a second, then a two-hour pause
    x = np.abs(rng.normal(100.0, 80.0, t.size))
    csv = "timestamp_s,output_throughput_tok_s\n" + "\n".join(f"{a},{b}" for a, b in zip(t, x, strict=True))
    rep = monitor_stream(read_stream_bytes("s.csv", csv.encode()), detector="point", window=50)
    det = rep.detections[("all", "output_throughput_tok_s")]
    assert np.nanmin(det.lower) < 0  # what the detector computes; the figure must not show it
    fig = json.loads(series_figure(rep, "all", "output_throughput_tok_s").to_json())
    band = [tr for tr in fig["data"] if tr.get("meta") == "band"]

    def values(v: object) -> np.ndarray:
        if isinstance(v, dict):  # plotly's base64 typed arrays
            import base64
            return np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"])
        return np.array([np.nan if e is None else e for e in v], dtype="float64")

    assert all(np.nanmin(values(tr["y"])) >= 0 for tr in band)
    series = next(tr for tr in fig["data"] if tr.get("meta") == "series")
    ys, xs = values(series["y"]), values(series["x"])
    assert np.isnan(ys).sum() == 1 and np.isnan(ys[60])  # the line breaks once, at the pause
    assert series["connectgaps"] is False and xs.size == t.size + 1
    assert fig["layout"]["xaxis"]["title"]["text"] == "time (s)"


def test_configuration_labels_follow_the_shared_configuration_key() -> None:
    """The replay groups runs by the configuration key every page uses plus the framework version and the
    load; a run at another framework version is another configuration, and its label says which."""
    from perfmodel.evaluate import config_key
    from perfmodel.ui.monitor import REPLAY_LOAD, configuration_of, replay_columns

    runs = pd.DataFrame({"hardware": "h100-sxm", "device_count": 1, "framework": "vllm", "model": "llama-3-8b",
                         "input_len_tok": [128.0, 128.0, 128.0, 128.0, 512.0],
                         "output_len_tok": 128.0, "load_kind": "static_batch",
                         "batch_size": [1.0, 1.0, 8.0, 1.0, 1.0],
                         "framework_version": ["0.6", "0.6", "0.6", "0.7", "0.6"],
                         "fw_num_threads": [4.0, 4.0, 4.0, 4.0, 8.0]})
    cols = replay_columns(runs)
    assert cols[: len(config_key(runs))] == config_key(runs) and "fw_num_threads" in cols
    assert set(REPLAY_LOAD) - {"request_rate_rps"} <= set(cols)
    labels = configuration_of(runs)
    assert labels.nunique() == runs.groupby(cols, dropna=False).ngroups == 4
    assert labels[0] == labels[1] and "batch 1" in labels[0] and "batch 8" in labels[2]
    assert labels[3] != labels[0] and "0.7" in labels[3]


def test_alert_times_read_as_date_times_and_metrics_by_their_labels() -> None:
    """Guards: the alerts table showed start/end as epoch seconds (1700000022.5) and the chart's y axis and
    legend the column name (output_throughput_tok_s)."""
    at = _monitor(detector="window")
    at.file_uploader(key="monitor.upload").set_value(
        [("stream.csv", (REPO / "tests" / "data" / "monitor" / "stream.csv").read_bytes(), "text/csv")]).run()
    assert not at.exception, [e.value for e in at.exception]
    frame = at.dataframe[0]
    alerts = frame.value
    assert str(alerts["start_timestamp_s"].dtype).startswith("datetime64")
    # stream.csv starts at 1700000000.0 s (2023-11-14 22:13:20 UTC), one sample every 0.5 s
    assert alerts["start_timestamp_s"].min() >= pd.Timestamp("2023-11-14 22:13:20")
    assert alerts["end_timestamp_s"].max() <= pd.Timestamp("2023-11-14 22:16:50")
    config = json.loads(frame.proto.columns)
    assert config["start_timestamp_s"]["label"] == "start (UTC)" and config["end_timestamp_s"]["label"] == "end (UTC)"
    assert config["start_index"]["label"] == "first sample"
    # the chart opens on the largest alert's metric (TPOT, the KV-cache-full slowdown), titled in words
    assert at.selectbox(key="monitor.metric_shown").value == "tpot_s"
    fig = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert fig["layout"]["yaxis"]["title"]["text"] == "TPOT (s)"
    assert "TPOT (s)" in [tr.get("name") for tr in fig["data"]]
    at.selectbox(key="monitor.metric_shown").set_value("output_throughput_tok_s").run()
    fig = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert fig["layout"]["yaxis"]["title"]["text"] == "output throughput (tok/s)"
    assert "output throughput (tok/s)" in [tr.get("name") for tr in fig["data"]]


def test_switching_dataset_opens_on_the_new_streams_largest_alert() -> None:
    # From a dataset without alerts to the sample, the Metric shown box kept the old dataset's choice, on a group
    # whose largest alert is on another metric.
    from perfmodel.plots import axis_title
    from perfmodel.store import Store

    at = _monitor(detector="threshold")
    store = Store()
    sample = store.datasets()[0]
    runs = store.runs(sample.id)
    quiet = store.create_dataset("one run", {})
    store.append_runs(quiet.id, runs.iloc[:1].reset_index(drop=True))
    at.run()
    at.radio(key="monitor.source").set_value("Stored dataset (replay)").run()
    at.selectbox(key="monitor.dataset").set_value(quiet.id).run()
    at.selectbox(key="monitor.metric_shown").set_value("output_throughput_tok_s").run()
    at.selectbox(key="monitor.dataset").set_value(sample.id).run()
    assert not at.exception, [e.value for e in at.exception]
    at.toggle(key="monitor.per_metric").set_value(True).run()
    alerts = at.dataframe[0].value
    top = alerts.loc[alerts["score"].abs().idxmax()]
    assert at.selectbox(key="monitor.group").value == top["group"]
    assert axis_title(at.selectbox(key="monitor.metric_shown").value) == top["metric"] != "output throughput (tok/s)"


def test_without_an_alert_the_chart_opens_on_the_group_with_most_judged_samples() -> None:
    # Replaying LLM-Inference-Bench opened on its first configuration, one run: a single dot on an empty axis.
    import numpy as np

    from perfmodel.monitor import monitor_stream, replay_runs
    from perfmodel.ui import monitor as M

    rows = [{"hardware": "a100-40gb", "model": "llama-3-8b", "framework": "vllm", "output_throughput_tok_s": 100.0}]
    rows += [{"hardware": "h100-sxm", "model": "llama-3-8b", "framework": "vllm",
              "output_throughput_tok_s": 200.0 + (i % 3)} for i in range(40)]
    stream = replay_runs(pd.DataFrame(rows).assign(device_count=1, input_len_tok=128.0, output_len_tok=128.0,
                                                   batch_size=1.0))
    rep = monitor_stream(stream, detector="point", window=10)
    assert rep.alerts.empty and len(stream.groups) == 2
    groups = list(stream.groups)
    group, metric = M.opening_choice(rep, groups, ["output_throughput_tok_s"])
    assert metric == "output_throughput_tok_s" and group.startswith("h100-sxm") and group != groups[0]
    assert np.isfinite(rep.detections[(group, metric)].score).sum() > 0


def test_every_alert_and_incident_column_is_headed_in_words() -> None:
    # The incidents table was headed "n_metrics" beside "first sample" and "samples flagged".
    from perfmodel.monitor.core import ALERT_COLUMNS, INCIDENT_COLUMNS
    from perfmodel.ui.widgets import labelled_columns

    for cols in (ALERT_COLUMNS, INCIDENT_COLUMNS):
        config = labelled_columns(cols)
        raw = [c for c in cols if "_" in c and "timestamp" not in c and c not in config]  # clocks: alerts_view
        assert not raw, raw


def test_the_summary_says_how_many_alerts_are_improvements() -> None:
    # A clean stream's 10 alerts counted a TTFT 3 % shorter among the faults; its hint alone said "better".
    import numpy as np

    from perfmodel.monitor import monitor_stream, read_stream_bytes
    from perfmodel.monitor.hints import improves
    from perfmodel.ui import monitor as M

    rng = np.random.default_rng(0)
    tput = 1200 + rng.normal(0, 5, 600)
    tput[300:320] += 200  # faster: better
    tput[450:470] -= 200  # slower: a fault
    csv = pd.DataFrame({"timestamp": np.arange(600.0), "output_throughput_tok_s": tput}).to_csv(index=False)
    rep = monitor_stream(read_stream_bytes("s.csv", csv.encode()), detector="point", window=200)
    directions = set(rep.alerts["direction"])
    assert directions == {"high", "low"}
    n_better = int(sum(improves(m, d) for m, d in zip(rep.alerts["metric"], rep.alerts["direction"], strict=True)))
    assert n_better == int((rep.alerts["direction"] == "high").sum()) > 0
    summary = M.alerts_summary(rep)
    assert f"; {n_better:,} of the alerts {'are improvements' if n_better > 1 else 'is an improvement'}" in summary
    assert improves("ttft_s", "low") and not improves("ttft_s", "high") and not improves("fw_num_requests_waiting", "high")
