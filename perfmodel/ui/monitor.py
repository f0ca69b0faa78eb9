"""Monitor page helpers: cached detection keyed on primitives, the series figure, URL state."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from ..monitor import DETECTORS, MonitorReport, monitor_stream, read_stream_bytes, replay_dataset
from ..monitor.streams import MetricStream
from ..store import Store

__all__ = ["QP", "DEFAULTS", "restore_settings", "write_settings", "stream_from_upload", "stream_from_dataset",
           "report", "series_figure"]

#: URL parameters of the page's detector settings.
QP = {"detector": "detector", "window": "window", "w": "w", "z": "z", "threshold": "threshold"}
DEFAULTS: dict[str, Any] = {"detector": "window", "window": 1000, "w": 10, "z": 3.0, "threshold": 0.15}
_CHECKED = "monitor.link_checked"


def restore_settings() -> None:
    """On the session's first run, take the detector settings from the URL into the widgets' state."""
    if st.session_state.get(_CHECKED):
        return
    st.session_state[_CHECKED] = True
    for name, qp in QP.items():
        raw = st.query_params.get(qp)
        if raw is None:
            continue
        default = DEFAULTS[name]
        try:
            value: Any = type(default)(raw)
        except ValueError:
            continue
        if name == "detector" and value not in DETECTORS:
            continue
        st.session_state[f"monitor.{name}"] = value


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
def stream_from_upload(name: str, data: bytes) -> MetricStream:
    """A recorded stream from an upload (cached on its name and bytes)."""
    return read_stream_bytes(name, data)


@st.cache_data(show_spinner=False, max_entries=8)
def stream_from_dataset(home: str, dataset_id: str, stamp: int) -> MetricStream:
    """A stored dataset replayed as a stream (cached on home, id and store stamp)."""
    return replay_dataset(dataset_id, store=Store(home))


@st.cache_data(show_spinner=False, max_entries=16, hash_funcs={MetricStream: lambda s: (s.source, s.kind,
                                                                                         len(s.frame))})
def report(stream: MetricStream, key: str, settings_json: str) -> MonitorReport:
    """Run the detector over the stream (cached on the stream's key and the settings as JSON)."""
    s = json.loads(settings_json)
    return monitor_stream(stream, detector=s["detector"], metrics=s["metrics"] or None, window=int(s["window"]),
                          w=int(s["w"]), z=float(s["z"]), threshold_rel=float(s["threshold"]))


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
    t = pd.to_datetime(det.t, unit="s", utc=True) if det.t.size and det.t.min() > 1e8 else det.t
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=t, y=det.upper, mode="lines", line={"width": 0}, showlegend=False, meta="band"))
    fig.add_trace(go.Scatter(x=t, y=det.lower, mode="lines", line={"width": 0}, fill="tonexty",
                             fillcolor="rgba(99,110,250,0.2)", name="expected band", meta="band"))
    fig.add_trace(go.Scatter(x=t, y=det.x, mode="lines", name=metric, meta="series"))
    idx = det.flags.nonzero()[0]
    fig.add_trace(go.Scatter(x=t[idx] if len(idx) else [], y=det.x[idx], mode="markers", name="alert",
                             marker={"color": "red", "size": 8, "symbol": "x"}, meta="alerts"))
    fig.update_layout(margin={"t": 30}, xaxis_title="time", yaxis_title=metric, legend={"orientation": "h"})
    return fig
