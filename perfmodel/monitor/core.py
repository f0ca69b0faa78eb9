"""Run detectors over a whole stream and attach a root-cause hint to every anomaly."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..errors import PerfmodelError
from .detectors import (
    DEFAULT_MIN_BASELINE,
    DEFAULT_THRESHOLD_REL,
    DEFAULT_W,
    DEFAULT_WINDOW,
    DEFAULT_Z,
    Detection,
    Expected,
    make_detector,
)
from .hints import explain, hint_dict
from .streams import MetricStream

__all__ = ["ALERT_COLUMNS", "INCIDENT_COLUMNS", "MonitorReport", "monitor_stream", "expected_for_replay"]

ALERT_COLUMNS = ("group", "metric", "detector", "start_timestamp_s", "end_timestamp_s", "start_index",
                 "end_index", "n_alerts", "score", "value", "expected", "direction", "hint", "causes")
#: One row per incident: the alerts of one group whose sample ranges overlap, whatever their metric.
INCIDENT_COLUMNS = ("group", "start_timestamp_s", "end_timestamp_s", "start_index", "end_index", "n_metrics",
                    "metrics", "changes", "score", "hint", "causes")


@dataclass(frozen=True)
class MonitorReport:
    """Alerts of one detector over a stream.

    Attributes
    ----------
    stream
        The stream judged.
    detector
        Detector name.
    settings
        Detector settings.
    detections
        ``(group, metric) -> Detection`` (per-sample bands for plots).
    alerts
        One row per anomaly (consecutive alerts merged) with :data:`ALERT_COLUMNS`.
    hints
        JSON-ready hints, aligned with ``alerts``.
    """

    stream: MetricStream
    detector: str
    settings: dict[str, Any]
    detections: dict[tuple[str, str], Detection] = field(repr=False)
    alerts: pd.DataFrame = field(repr=False)
    hints: tuple[dict[str, Any], ...] = field(repr=False, default=())

    def records(self) -> list[dict[str, Any]]:
        """Alerts as JSON-ready dicts (``hint`` holds the sentence and the causes).

        Returns
        -------
        list of dict
        """
        out = []
        for rec, h in zip(self.alerts.to_dict("records"), self.hints, strict=True):
            r = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in rec.items()
                 if k != "causes"}
            r["hint"] = h
            out.append(r)
        return out

    def incidents(self) -> pd.DataFrame:
        """The alerts merged into incidents: one slow run shows in its TTFT, TPOT, ITL and end-to-end latency
        at once, which is one thing to look at, not four.

        Alerts of the same group whose sample ranges overlap or touch form one incident (alerts of different groups
        never merge: a replayed sweep's groups are configurations, a server's are its GPUs, and those have
        their own tensor-parallel and neighbour hints).

        Returns
        -------
        pandas.DataFrame
            :data:`INCIDENT_COLUMNS`, in time order: ``metrics`` lists the metrics by the size of their score,
            largest first, ``changes`` each one's change from its expectation (``"tpot_s +19%"``), ``score``
            and ``hint`` are the largest alert's, ``causes`` joins the hints' causes without repeats.
        """
        a = self.alerts
        if a.empty:
            return pd.DataFrame(columns=list(INCIDENT_COLUMNS))
        a = a.assign(_abs=a["score"].abs().fillna(0.0), _pos=np.arange(len(a)))
        a = a.sort_values(["group", "start_index", "_pos"], kind="stable")
        # a new incident where a group starts, or where an alert starts after every earlier one of its group ended
        # and not right after it: a repeat above its siblings and the next one below are two events (one side of
        # the expectation each) but one thing to look at, repeats that disagree
        same = a["group"].eq(a["group"].shift()).to_numpy()
        reach = a.groupby("group", sort=False)["end_index"].cummax().shift().to_numpy()
        new = ~same | (a["start_index"].to_numpy() > np.nan_to_num(reach.astype("float64"), nan=-2.0) + 1)
        a["_incident"] = np.cumsum(new)
        rows = []
        for _, inc in a.groupby("_incident", sort=False):
            inc = inc.sort_values("_abs", ascending=False, kind="stable")
            top = inc.iloc[0]
            changes = []
            for m, v, e in zip(inc["metric"], inc["value"], inc["expected"], strict=True):
                rel = v / e - 1 if np.isfinite(v) and np.isfinite(e) and e != 0 else math.nan
                changes.append(f"{m} {rel:+.0%}" if math.isfinite(rel) else str(m))
            causes = list(dict.fromkeys(c for cs in inc["causes"] for c in str(cs).split(",") if c))
            rows.append({"group": top["group"], "start_timestamp_s": float(inc["start_timestamp_s"].min()),
                         "end_timestamp_s": float(inc["end_timestamp_s"].max()),
                         "start_index": int(inc["start_index"].min()), "end_index": int(inc["end_index"].max()),
                         "n_metrics": int(inc["metric"].nunique()),
                         "metrics": ", ".join(dict.fromkeys(inc["metric"].astype(str))),
                         "changes": ", ".join(changes), "score": float(top["score"]), "hint": top["hint"],
                         "causes": ",".join(causes)})
        out = pd.DataFrame(rows, columns=list(INCIDENT_COLUMNS))
        return out.sort_values("start_timestamp_s", kind="stable").reset_index(drop=True)


def _learnt_expectation(x: np.ndarray, n: int) -> float:
    v = x[np.isfinite(x)][:n]
    return float(np.median(v)) if v.size else math.nan


def monitor_stream(stream: MetricStream, *, detector: str = "window", metrics: Sequence[str] | None = None,
                   groups: Sequence[str] | None = None, window: int = DEFAULT_WINDOW, w: int = DEFAULT_W,
                   z: float = DEFAULT_Z, threshold_rel: float = DEFAULT_THRESHOLD_REL, robust: bool = False,
                   expected: Mapping[str, Expected] | None = None, max_gap: int = 1,
                   peers: bool = True) -> MonitorReport:
    """Judge every (group, metric) series of a stream and explain each anomaly.

    Parameters
    ----------
    stream
        The stream.
    detector
        ``point``, ``window`` or ``threshold``.
    metrics
        Metrics to judge (default: :meth:`MetricStream.primary_metrics`).
    groups
        Groups to judge (default: all).
    window, w, z, threshold_rel, robust
        Detector settings.
    expected
        Metric -> expected value (constant or callable of timestamps), or
        ``"metric@group"`` -> expectation for one group. Without one, the
        threshold detector expects the median of the first samples of the
        series (and the dynamic detectors have no cold-start expectation).
    max_gap
        Alerts at most this many samples apart form one anomaly.
    peers
        Whether the groups ran alongside each other (GPUs of one server), so that a group's samples are
        evidence for another's hints (tensor-parallel straggler, noisy neighbour). False for a replayed sweep,
        whose groups are configurations measured one after the other: each is then judged on its own.

    Returns
    -------
    MonitorReport

    Raises
    ------
    PerfmodelError
        When a metric or group is not in the stream, or a setting is invalid.
    """
    metrics = list(metrics) if metrics else stream.primary_metrics()
    unknown = [m for m in metrics if m not in stream.metrics]
    if unknown:
        raise PerfmodelError(f"{stream.source}: no metric {unknown[0]!r}; the stream has: "
                             + ", ".join(stream.metrics[:40]))
    all_groups = stream.groups
    groups = [str(g) for g in groups] if groups else all_groups
    bad = [g for g in groups if g not in all_groups]
    if bad:
        raise PerfmodelError(f"{stream.source}: no group {bad[0]!r}; the stream has: " + ", ".join(all_groups[:40]))
    expected = dict(expected or {})
    # Positions of each group's samples, in one pass over the frame (a replayed sweep has thousands of groups):
    # the series are read from whole-frame arrays, and a group's frame is cut only where an anomaly needs a hint.
    frame = stream.frame
    where = {str(k): v for k, v in frame.groupby("group", sort=False).indices.items()}
    t_all = frame["timestamp_s"].to_numpy(dtype="float64")
    x_all = {m: frame[m].to_numpy(dtype="float64") for m in metrics}
    cut: dict[str, pd.DataFrame] = {}

    def frame_of(g: str) -> pd.DataFrame:
        if g not in cut:
            cut[g] = frame.iloc[where[g]].reset_index(drop=True)
        return cut[g]

    detections: dict[tuple[str, str], Detection] = {}
    rows: list[dict[str, Any]] = []
    hints: list[dict[str, Any]] = []
    settings: dict[str, Any] = {}
    for g in groups:
        idx = where[g]
        t = t_all[idx]
        for m in metrics:
            x = x_all[m][idx]
            exp = expected.get(f"{m}@{g}", expected.get(m))
            if exp is None and detector == "threshold":
                exp = _learnt_expectation(x, DEFAULT_MIN_BASELINE)
            det = make_detector(detector, window=window, w=w, z=z, threshold_rel=threshold_rel, robust=robust,
                                expected=exp)
            settings = det.settings()
            res = det.run(t, x)
            detections[(g, m)] = res
            for ev in res.events(max_gap=max_gap):
                f = frame_of(g)
                others = {k: frame_of(k) for k in all_groups if k != g} if peers else {}
                h = explain(f, ev.start_index, ev.end_index, m, others=others,
                            expected=float(res.center[ev.start_index]), replay=stream.kind == "replay")
                k = ev.start_index
                rows.append({"group": g, "metric": m, "detector": detector, "start_timestamp_s": ev.start_t,
                             "end_timestamp_s": ev.end_t, "start_index": ev.start_index,
                             "end_index": ev.end_index, "n_alerts": ev.n_alerts, "score": ev.peak_score,
                             "value": float(res.value[k]), "expected": float(res.center[k]),
                             "direction": ev.direction, "hint": h.sentence, "causes": ",".join(h.codes)})
                hints.append(hint_dict(h))
    alerts = pd.DataFrame(rows, columns=list(ALERT_COLUMNS))
    if not alerts.empty:
        order = np.argsort(alerts["start_timestamp_s"].to_numpy(), kind="stable")
        alerts = alerts.iloc[order].reset_index(drop=True)
        hints = [hints[i] for i in order]
    return MonitorReport(stream, detector, settings, detections, alerts, tuple(hints))


def expected_for_replay(stream: MetricStream, metric: str) -> dict[str, Expected]:
    """Expectations for a replayed sweep: per group, the median of the runs at the same batch size
    and lengths (a similar stored workload), looked up by timestamp.

    Parameters
    ----------
    stream
        A stream from :func:`perfmodel.monitor.streams.replay_runs`.
    metric
        The metric.

    Returns
    -------
    dict
        ``"metric@group"`` -> callable of timestamps, for :func:`monitor_stream`'s ``expected``.
    """
    keys = [c for c in ("batch_size", "input_len_tok", "output_len_tok") if c in stream.frame.columns]
    out: dict[str, Expected] = {}
    if not keys:
        return out
    for g in stream.groups:
        f = stream.group_frame(g)
        med = f.groupby(keys, dropna=False)[metric].transform("median").to_numpy(dtype="float64")
        t = f["timestamp_s"].to_numpy(dtype="float64")

        def lookup(ts: np.ndarray, t: np.ndarray = t, med: np.ndarray = med) -> np.ndarray:
            ts = np.asarray(ts, dtype="float64")
            i = np.clip(np.searchsorted(t, ts), 0, len(t) - 1)
            return np.where(t[i] == ts, med[i], np.nan)

        out[f"{metric}@{g}"] = lookup
    return out
