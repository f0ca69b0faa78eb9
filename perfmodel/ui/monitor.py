"""Monitor page helpers: cached detection keyed on primitives, the series figure, URL state."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from ..monitor import DETECTORS, MonitorReport, monitor_stream, read_stream_bytes
from ..monitor.detectors import DEFAULT_MIN_BASELINE
from ..monitor.hints import improves
from ..monitor.replay import (
    REPLAY_GROUP,
    REPLAY_LOAD,
    configuration_of,
    replay_columns,
    replay_configurations,
)
from ..monitor.streams import MetricStream
from ..plots import axis_title
from ..store import Store
from .pagestate import read_link_value
from .widgets import labelled_columns

__all__ = ["QP", "DEFAULTS", "USES", "SETTING_LABELS", "REPLAY_LOAD", "replay_columns", "REPLAY_GROUP", "restore_settings", "write_settings", "BOUNDS",
           "stream_from_upload", "configuration_of", "stream_from_dataset", "judged_configurations", "replay_note", "report",
           "series_figure", "alerts_view", "DETECTOR_CHOSEN", "AUTO_THRESHOLD", "detector_chosen",
           "apply_detector_switch", "switch_if_nothing_judged"]

#: URL parameters of the page's detector settings.
QP = {"detector": "detector", "window": "window", "w": "w", "z": "z", "threshold": "threshold"}
DEFAULTS: dict[str, Any] = {"detector": "window", "window": 1000, "w": 10, "z": 3.0, "threshold": 0.15}
USES: dict[str, tuple[str, ...]] = {"point": ("window", "z"), "window": ("window", "w", "z"),
                                    "threshold": ("threshold",)}
"""The settings each detector uses on this page (the dynamic detectors get no expected value here, so
their cold-start threshold is unused)."""
SETTING_LABELS = {"window": "baseline window", "w": "mean of last W", "z": "z (sigmas)",
                  "threshold": "threshold (relative)"}
"""How the page names each setting."""
_CHECKED = "monitor.link_checked"


BOUNDS = {"window": (2, 100_000), "w": (1, 1000), "z": (0.5, 20.0), "threshold": (0.01, 5.0)}
"""What the page's number boxes accept, per setting."""


def restore_settings() -> None:
    """On the session's first run, take the detector settings from the URL into the widgets' state; a value the
    page cannot use is named in a warning (``z=nan`` had reached the detector, which stopped with an error)."""
    if st.session_state.get(_CHECKED):
        return
    st.session_state[_CHECKED] = True
    for name, qp in QP.items():
        raw = st.query_params.get_all(qp)
        if not raw:
            continue
        default = DEFAULTS[name]
        if name == "detector":
            value: Any = raw[0] if raw[0] in DETECTORS else None
            why = None if value else f"{qp}={raw[0]!r} is not one of {', '.join(DETECTORS)}: showing {default}"
        else:
            value, why = read_link_value(qp, raw, default, {qp: BOUNDS[name]})
        if why is not None:
            st.warning(why, icon=":material/link_off:")
            continue
        st.session_state[f"monitor.{name}"] = value
        if name == "detector":
            st.session_state[DETECTOR_CHOSEN] = True  # a link's detector is a choice: never switched for it


DETECTOR_CHOSEN = "monitor.detector_chosen"
"""Set once the user (or a link) has chosen the detector: the page then never switches it by itself."""
_DETECTOR_SWITCH = "monitor._detector_switch"
AUTO_THRESHOLD = "monitor.auto_threshold"
"""Set when the page chose the threshold detector for a replayed dataset the default judges nothing of."""


def detector_chosen() -> None:
    """The detector widget's ``on_change``: the user chose it."""
    st.session_state[DETECTOR_CHOSEN] = True
    st.session_state.pop(AUTO_THRESHOLD, None)


def apply_detector_switch() -> None:
    """Before the detector widget is drawn: put a switch asked for by :func:`switch_if_nothing_judged` in place."""
    if (new := st.session_state.pop(_DETECTOR_SWITCH, None)) is not None:
        st.session_state["monitor.detector"] = new
        st.session_state[AUTO_THRESHOLD] = True


def switch_if_nothing_judged(stream: MetricStream, detector: str, window: int) -> None:
    """Rerun with the threshold detector where the detector was not chosen and judges no configuration of a
    replayed dataset while the threshold detector judges some (the sample's sweeps: 3 repeats a configuration,
    and the default window detector showed "Nothing was judged" on opening)."""
    if st.session_state.get(DETECTOR_CHOSEN) or detector == "threshold":
        return
    if judged_configurations(stream, detector, window) == 0 and judged_configurations(stream, "threshold", window):
        st.session_state[_DETECTOR_SWITCH] = "threshold"
        st.rerun()


def write_settings(settings: dict[str, Any]) -> None:
    """Put the detector settings in the URL (only when they changed).

    Parameters
    ----------
    settings
        Name -> value for every key of :data:`QP`.
    """
    for name, qp in QP.items():
        val = str(settings[name])
        if st.query_params.get(qp) != val:
            st.query_params[qp] = val


@st.cache_data(show_spinner=False, max_entries=8)
def _read_upload(name: str, data: bytes) -> MetricStream:
    return read_stream_bytes(name, data)


def stream_from_upload(name: str, data: bytes) -> MetricStream:
    """A recorded stream from an upload (read once, cached on its name and bytes), with the reader's warnings
    (:attr:`MetricStream.notes`: timestamps that go back in time, epoch milliseconds read as seconds) shown on
    the page: a file of shuffled rows had been judged in file order and shown "No anomaly" with nothing said."""
    stream = _read_upload(name, data)
    for note in stream.notes:
        st.warning(note + ".", icon=":material/schedule:")
    return stream


@st.cache_data(show_spinner=False, max_entries=8)
def stream_from_dataset(home: str, dataset_id: str, stamp: int) -> MetricStream:
    """A stored dataset replayed as a stream, one group per configuration (cached on home, id and store stamp).

    A stored dataset is usually a sweep: its runs differ in batch size, concurrency and lengths, and the
    change from one to the next is the sweep, not an anomaly. So each configuration
    (:func:`configuration_of`) is its own series, in measurement order: only repeats of the same
    measurement are judged against each other.
    """
    store = Store(home)
    info = store.dataset(dataset_id)
    return replay_configurations(store.runs(info.id), source=f"dataset {info.name}")


def baseline_need(window: int) -> int:
    """Repeats a baseline detector learns from before it judges one: the detectors' minimum baseline, or the
    window where that is shorter."""
    return min(DEFAULT_MIN_BASELINE, window)


def judged_configurations(stream: MetricStream, detector: str, window: int) -> int:
    """How many configurations of a replayed dataset the detector judges at all: the threshold detector
    those measured more than once, the others those with a baseline of repeats and one more after it."""
    sizes = stream.frame.groupby("group", sort=False).size()
    if detector == "threshold":
        return int((sizes > 1).sum())
    return int((sizes >= baseline_need(window) + 1).sum())


def replay_note(stream: MetricStream, detector: str, window: int) -> str:
    """What the replay of a stored dataset judges, for the page (markdown).

    Parameters
    ----------
    stream
        A stream from :func:`stream_from_dataset`.
    detector, window
        The chosen detector and its baseline window.

    Returns
    -------
    str
    """
    sizes = stream.frame.groupby("group", sort=False).size()
    n, repeated = len(sizes), int((sizes > 1).sum())
    need = baseline_need(window)
    text = (f"A stored dataset is usually a sweep, not a stream: its runs differ in batch size, concurrency and lengths, "
            f"and the change from one to the next is the sweep, not an anomaly. So each configuration is judged "
            f"on its own, its repeats in the order they were measured: **{repeated:,} of {n:,} configurations** "
            f"were measured more than once; a configuration measured once has nothing to be compared with.")
    if detector == "threshold":
        text += (" The threshold detector judges each run against the median of its configuration's first "
                 f"{DEFAULT_MIN_BASELINE} repeats.")
    else:
        enough = judged_configurations(stream, detector, window)
        text += (f" The {detector} detector first learns a baseline from {need} repeats of a configuration (its "
                 f"baseline window, {window:,}, is the most it keeps) and judges only the repeats after them "
                 f"({enough:,} configuration(s) have that many); with fewer, use the threshold detector.")
    return text


@st.cache_resource(show_spinner=False, max_entries=16, hash_funcs={MetricStream: lambda s: (s.source, s.kind,
                                                                                             len(s.frame))})
def report(stream: MetricStream, key: str, settings_json: str) -> MonitorReport:
    """Run the detector over the stream (cached on the stream's key and the settings as JSON).

    Shared, not copied, between reruns and sessions (``cache_resource``): a replayed sweep's report holds a
    detection per configuration and metric, and pickling it for ``cache_data`` cost more than a second on
    each run. Nothing downstream changes a report.

    A replayed dataset (one group per configuration, measured one after the other) is judged one
    configuration at a time: the other configurations are not peers running alongside it, so they
    must not feed the tensor-parallel or noisy-neighbour hints.
    """
    s = json.loads(settings_json)
    kw = {"detector": s["detector"], "metrics": s["metrics"] or None, "window": int(s["window"]), "w": int(s["w"]),
          "z": float(s["z"]), "threshold_rel": float(s["threshold"])}
    return monitor_stream(stream, **kw, peers=stream.kind != "replay")


def opening_choice(rep: MonitorReport, groups: list[str], metrics: list[str]) -> tuple[str | None, str | None]:
    """The group and metric the chart opens on: those of the largest alert (by the size of its score) among the
    metrics shown, so that the chart shows an anomaly before the user looks for one; the first of each where no
    alert is shown. The page had opened on its first group, often one with no alert (LLM-Inference-Bench: 91
    incidents in 337 configurations). Without an alert it opens on the group with the most judged samples (then
    the longest), not the first: replaying LLM-Inference-Bench had opened on a configuration of one run, a single
    dot on an empty axis, where 57 configurations have repeats.

    Parameters
    ----------
    rep
        The report.
    groups, metrics
        The Group and Metric shown boxes' options.

    Returns
    -------
    (str or None, str or None)
        None where a box has no option.
    """
    group, metric = (groups[0] if groups else None), (metrics[0] if metrics else None)
    if group is not None and metric is not None:
        def richness(g: str) -> tuple[int, int]:
            det = rep.detections.get((g, metric))
            return (0, 0) if det is None else (int(np.isfinite(det.score).sum()), len(det.x))
        group = max(groups, key=richness)  # the first of equals
    a = rep.alerts
    if not a.empty:
        a = a[a["group"].astype(str).isin(groups) & a["metric"].astype(str).isin(metrics)]
    if len(a):
        top = a.loc[a["score"].abs().fillna(0.0).idxmax()]
        group, metric = str(top["group"]), str(top["metric"])
    return group, metric


def series_figure(rep: MonitorReport, group: str, metric: str) -> go.Figure:
    """The series with its baseline band and the alerts marked.

    Parameters
    ----------
    rep
        The report.
    group, metric
        Which series.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    det = rep.detections[(group, metric)]
    t = np.asarray(det.t, dtype="float64")
    lower, upper = np.asarray(det.lower, dtype="float64"), np.asarray(det.upper, dtype="float64")
    x = np.asarray(det.x, dtype="float64")
    if not (x[np.isfinite(x)] < 0).any():  # a non-negative metric: the band cannot go below 0 either
        lower, upper = np.maximum(lower, 0.0), np.maximum(upper, 0.0)  # NaN stays NaN
    title, epoch = _clock(rep, t)

    def when(v: np.ndarray) -> Any:
        return pd.to_datetime(v, unit="s", utc=True) if epoch else v

    # Lines and the band break across gaps (markers stay): a line would claim the hours in between were measured.
    brk = _gaps(t)
    bx: list[float] = []
    by: list[float] = []
    ok = np.isfinite(lower) & np.isfinite(upper)
    for seg in np.split(np.arange(t.size), brk):
        for run in np.split(seg, np.flatnonzero(np.diff(ok[seg].astype(int)) != 0) + 1):
            if run.size and ok[run[0]]:  # one polygon per stretch with a band: upper edge out, lower edge back
                bx += [*t[run], *t[run][::-1], np.nan]
                by += [*upper[run], *lower[run][::-1], np.nan]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=when(np.array(bx)), y=by, mode="lines", fill="toself", connectgaps=False,
                             line={"width": 1, "color": "rgba(99,110,250,0.35)"}, fillcolor="rgba(99,110,250,0.2)",
                             name="expected band", meta="band", hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=when(np.insert(t, brk, np.nan)), y=np.insert(x, brk, np.nan), mode="lines+markers",
                             name=axis_title(metric), meta="series", connectgaps=False, marker={"size": 4}))
    idx = det.flags.nonzero()[0]
    fig.add_trace(go.Scatter(x=when(t[idx]), y=x[idx], mode="markers", name="alert",
                             marker={"color": "red", "size": 8, "symbol": "x"}, meta="alerts"))
    fig.update_layout(margin={"t": 40}, xaxis_title=title, yaxis_title=axis_title(metric),
                      legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0})
    return fig


_EPOCH_MIN_S = 1e8
"""Timestamps from this on are seconds since 1970 (1973 on), not seconds since the stream's start."""


def _clock(rep: MonitorReport, t: np.ndarray) -> tuple[str, bool]:
    """What the stream's ``timestamp_s`` values are: (axis title, whether they are epoch seconds)."""
    if t.size and float(np.nanmin(t)) >= _EPOCH_MIN_S:
        return "time (UTC)", True
    if rep.stream.kind == "replay":
        return "run (in measurement order; the dataset has no timestamps)", False
    return "time (s)", False


def alerts_view(rep: MonitorReport, *, incidents: bool = False) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The alerts table as the page shows it, and its ``st.dataframe`` column configuration.

    With ``incidents``, one row per incident (:meth:`MonitorReport.incidents`: the alerts of one group whose
    samples overlap, a slow run's TTFT, TPOT and latency together) instead of one per metric.

    Start and end are on the chart's clock: date-times (UTC) where the stream's timestamps are epoch
    seconds (a recorded file, a replayed dataset with timestamps), not 1700000022.5; seconds, or the run's
    position, otherwise. Columns keep their names (the CSV and the tests read them); the headers are
    human labels.

    Parameters
    ----------
    rep
        The report.
    incidents
        Incidents instead of alerts.

    Returns
    -------
    (pandas.DataFrame, dict)
    """
    table = (rep.incidents() if incidents else rep.alerts).drop(columns=["causes"], errors="ignore").copy()
    if "metric" in table.columns:  # "TTFT (s)", not ttft_s
        table["metric"] = [axis_title(str(m)) for m in table["metric"]]
    if "metrics" in table.columns:
        table["metrics"] = [", ".join(axis_title(m) for m in str(ms).split(", ")) for ms in table["metrics"]]
        table["changes"] = [", ".join(_titled_change(c) for c in str(cs).split(", ")) for cs in table["changes"]]
    t = pd.to_numeric(rep.stream.frame["timestamp_s"], errors="coerce").to_numpy(dtype="float64")
    _, epoch = _clock(rep, t[np.isfinite(t)])
    cc = st.column_config
    ends = ("start_timestamp_s", "end_timestamp_s")
    if epoch:
        for c in ends:
            table[c] = pd.to_datetime(table[c].astype("float64"), unit="s", utc=True).dt.tz_localize(None)
        sub_second = bool((table[list(ends)].stack().dt.microsecond != 0).any()) if len(table) else False
        fmt = "YYYY-MM-DD HH:mm:ss.SSS" if sub_second else "YYYY-MM-DD HH:mm:ss"
        clock = {c: cc.DatetimeColumn(f"{c.split('_')[0]} (UTC)", format=fmt) for c in ends}
    elif rep.stream.kind == "replay":
        clock = {c: cc.NumberColumn(f"{c.split('_')[0]} (run)", format="%d") for c in ends}
    else:
        clock = {c: cc.NumberColumn(f"{c.split('_')[0]} (s)", format="%,.1f") for c in ends}
    # the group is wide too: a replayed configuration's label ends in what tells rows apart (lengths, batch)
    return table, labelled_columns(table.columns, **clock, hint=cc.TextColumn(width="large"),
                                   group=cc.TextColumn(width="large"),
                                   score=cc.NumberColumn(format="%.2f"))


def _titled_change(change: str) -> str:
    """``"tpot_s +19%"`` as ``"TPOT (s) +19%"``."""
    metric, _, rel = change.partition(" ")
    return f"{axis_title(metric)} {rel}".strip()


def _gaps(t: np.ndarray) -> np.ndarray:
    """Indices before which the sampling has a gap: more than 5 times the typical interval (the median one,
    or the shortest when there are too few intervals for a median to mean much)."""
    dt = np.diff(t)
    ok = dt[np.isfinite(dt) & (dt > 0)]
    if not ok.size:
        return np.array([], dtype=int)
    typical = float(np.median(ok)) if ok.size >= 4 else float(ok.min())
    return np.flatnonzero(dt > 5 * typical) + 1


def alerts_summary(rep: MonitorReport) -> str:
    """One line over the alerts table: how many alerts, on how many groups and metrics, and which group and
    metric have the most (a replayed sweep's hundreds of alerts read as a list otherwise).

    Parameters
    ----------
    rep
        The report.

    Returns
    -------
    str
        Empty where there are no alerts.
    """
    a = rep.alerts
    if a.empty or not {"group", "metric"} <= set(a.columns):
        return ""
    n_inc = len(rep.incidents())
    per = a.groupby(["group", "metric"], sort=False).size().sort_values(ascending=False, kind="stable")
    (g, m), n = per.index[0], int(per.iloc[0])
    text = (f"{len(a):,} alert(s) in {n_inc:,} incident(s) on {a['group'].nunique():,} group(s) and "
            f"{a['metric'].nunique():,} metric(s)")
    # A throughput above its band or a latency below it is no fault: said, as the table's hint says it per row
    # (a clean stream's 10 alerts counted 2 such among the faults).
    n_better = sum(improves(str(m), str(d)) for m, d in zip(a["metric"], a.get("direction", ""), strict=False))
    if n_better:
        text += (f"; {n_better:,} of the alerts {'are improvements' if n_better > 1 else 'is an improvement'} "
                 "(a throughput above its band or a latency below it), not a fault")
    # the busiest series only where one stands out; "the most: 2" among hundreds of ones says nothing
    return text + (f"; the most: {n:,} on {axis_title(str(m))} of {g}." if n > 2 and n > 2 * per.median() else ".")
