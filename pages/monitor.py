"""Monitor: anomalies in a recorded metric stream or a replayed sweep, with root-cause hints."""

import json

import streamlit as st

from perfmodel import ui
from perfmodel.errors import PerfmodelError
from perfmodel.monitor import DETECTORS
from perfmodel.plots import axis_title
from perfmodel.ui import analyses
from perfmodel.ui import monitor as M
from perfmodel.ui import pagestate as PS

SOURCES = ["Recorded file", "Stored dataset (replay)"]
#: The stream choice in the URL (the detector settings are written by M.write_settings). An uploaded file
#: cannot be in a link: its analysis reopens the settings and asks for the file again.
VIEW = {"source": ("monitor.source", SOURCES[0]), "dataset": ("monitor.dataset", ""),
        "metrics": ("monitor.metrics", []), "group": ("monitor.group", ""), "shown": ("monitor.metric_shown", ""),
        "per_metric": ("monitor.per_metric", False)}

home = ui.home()
st.title("Monitor", anchor=False)
st.caption("Judge a metric stream against a dynamic baseline (point or window detector) or an expected value "
           "(threshold detector); each anomaly comes with a hint on where to look.")

analyses.page_analysis("monitor")
M.restore_settings()
PS.restore("monitor", VIEW)
if "monitor.metrics" in st.session_state:
    st.session_state.setdefault("monitor.metrics_for", st.session_state.get("monitor.dataset"))
c1, c2, c3, c4, c5 = st.columns(5)
for name, default in M.DEFAULTS.items():
    st.session_state.setdefault(f"monitor.{name}", default)
M.apply_detector_switch()
detector = c1.selectbox("Detector", DETECTORS, key="monitor.detector", on_change=M.detector_chosen)
uses = M.USES[detector]


def unused(name: str) -> dict:
    """Widget arguments that grey out a setting the chosen detector does not use, and say so."""
    return {"disabled": name not in uses, "help": f"Not used by the {detector} detector." if name not in uses
            else None}


window = c2.number_input("Baseline window", *M.BOUNDS["window"], step=100, key="monitor.window", **unused("window"))
w = c3.number_input("Mean of last W", *M.BOUNDS["w"], key="monitor.w", **unused("w"))
z = c4.number_input("z (sigmas)", *M.BOUNDS["z"], step=0.5, key="monitor.z", **unused("z"))
threshold = c5.number_input("Threshold (relative)", *M.BOUNDS["threshold"], step=0.01, key="monitor.threshold",
                            **unused("threshold"))
st.caption(f"The **{detector}** detector uses: " + ", ".join(M.SETTING_LABELS[u] for u in uses)
           + "; the other settings are greyed out.")
settings = {"detector": detector, "window": int(window), "w": int(w), "z": float(z), "threshold": float(threshold)}
M.write_settings(settings)

if st.session_state.get("monitor.source") not in SOURCES:
    st.session_state["monitor.source"] = SOURCES[0]
source = st.radio("Stream", SOURCES, horizontal=True, key="monitor.source")
try:
    if source == "Recorded file":
        up = st.file_uploader("CSV/JSONL samples, Prometheus dump or nvidia-smi log", key="monitor.upload")
        if up is None:
            PS.write(VIEW, {"dataset": None, "metrics": None, "group": None, "shown": None})
            st.info("Upload a recorded stream, or replay a stored dataset.", icon=":material/info:")
            st.stop()
        stream = M.stream_from_upload(up.name, up.getvalue())
        key = f"upload:{up.name}:{up.size}"
        stream_id = key
    else:
        datasets = ui.available_datasets(home, empty_message="No dataset yet: import or sweep on the other pages.")
        if st.session_state.get("monitor.dataset") not in datasets.names:
            st.session_state["monitor.dataset"] = datasets.ids[0]
        ds = st.selectbox("Dataset", datasets.ids, format_func=datasets.label, key="monitor.dataset")
        stream = M.stream_from_dataset(home, ds, datasets.stamp)
        key = f"dataset:{ds}:{datasets.stamp}"
        stream_id = ds
    # The primary metrics by default for each new stream; a link's or the user's choice for this stream stays.
    if st.session_state.get("monitor.metrics_for") != stream_id:
        st.session_state["monitor.metrics_for"] = stream_id
        st.session_state["monitor.metrics"] = stream.primary_metrics()
    ui.keep_valid("monitor.metrics", list(stream.metrics))
    metrics = st.multiselect("Metrics", list(stream.metrics), key="monitor.metrics", format_func=axis_title)
    if source != "Recorded file":
        M.switch_if_nothing_judged(stream, detector, int(window))
        if st.session_state.get(M.AUTO_THRESHOLD) and detector == "threshold":
            st.caption("Detector: **threshold**, chosen for this dataset, since no configuration has the "
                       f"{M.baseline_need(int(window)) + 1} repeats or more a baseline detector needs (a baseline of "
                       f"{M.baseline_need(int(window))} and one to judge); choose another above to use it.")
        st.info(M.replay_note(stream, detector, int(window)), icon=":material/info:")
    rep = M.report(stream, key, json.dumps({**settings, "metrics": metrics}))
except PerfmodelError as exc:
    ui.show_error(exc, what="Cannot monitor this stream")
    st.stop()

g1, g2 = st.columns(2)
shown_options = metrics or list(stream.metrics)
opening = M.opening_choice(rep, list(stream.groups), list(shown_options))
# Another stream than the one shown: both boxes open on its largest alert (a metric the old stream's group
# had kept the previous choice, on a group whose largest alert is on another metric); on the page's first
# run a link's values stay where this stream has them.
switched = st.session_state.get("monitor.view_for", stream_id) != stream_id
st.session_state["monitor.view_for"] = stream_id
for k, options, first in (("monitor.group", stream.groups, opening[0]),
                          ("monitor.metric_shown", shown_options, opening[1])):
    if (switched or st.session_state.get(k) not in options) and options:
        # none yet, a linked value, or the previous stream's, that this stream lacks: the largest alert's, set
        # rather than dropped so that the browser's box shows it too (dropped, it kept showing the old group)
        st.session_state[k] = first
group = g1.selectbox("Group", stream.groups, key="monitor.group")
shown = g2.selectbox("Metric shown", shown_options, key="monitor.metric_shown", format_func=axis_title)
PS.write(VIEW, {"dataset": None} if source == SOURCES[0] else None)
if (group, shown) in rep.detections:
    st.plotly_chart(M.series_figure(rep, group, shown), key="monitor.chart")
st.subheader(f"Alerts ({len(rep.alerts):,})", anchor=False)
if rep.alerts.empty and source != "Recorded file" and not M.judged_configurations(stream, detector, int(window)):
    can_switch = detector != "threshold" and M.judged_configurations(stream, "threshold", int(window)) > 0
    st.info(f"Nothing was judged: no configuration has enough repeats for the {detector} detector (see above). "
            + ("No configuration was measured more than once." if detector == "threshold"
               else "The threshold detector judges every configuration measured more than once." if can_switch
               else ""), icon=":material/info:")
    if can_switch:
        st.button("Use the threshold detector", key="monitor.to_threshold", icon=":material/swap_horiz:",
                  on_click=lambda: st.session_state.update({"monitor.detector": "threshold"}))
elif rep.alerts.empty:
    st.success("No anomaly with these settings.", icon=":material/check_circle:")
else:
    st.caption(M.alerts_summary(rep))
    per_metric = st.toggle("One row per metric", key="monitor.per_metric",
                           help="By default the alerts of one group whose samples overlap are one incident (a slow "
                                "run's TTFT, TPOT and latency together), its metrics listed by the size of their "
                                "score; on, each metric's alert is its own row with its value and expectation.")
    alerts, alert_columns = M.alerts_view(rep, incidents=not per_metric)
    st.dataframe(alerts, hide_index=True, placeholder="—", column_config=alert_columns, key="monitor.alerts")
