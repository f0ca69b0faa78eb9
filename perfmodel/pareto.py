"""Pareto fronts across operating points, and side-by-side comparison of two datasets.

Fronts (:func:`pareto_mask`, :func:`fronts`) are computed on the operating
points of a plan (:attr:`perfmodel.planner.PlanResult.points`) or any table
with the same columns: a point is on the front when no other point is at least
as good on both axes and strictly better on one.

Comparison (:func:`compare`) joins two runs tables on the configuration and
batch size and reports, per matched point, both means, the difference and
whether it exceeds run-to-run noise. Noise is the standard error of the
difference from the repeats of each side (``sqrt(s_a^2/n_a + s_b^2/n_b)``);
a difference is called significant when it exceeds :data:`NOISE_Z` standard
errors. Points without repeats on both sides cannot be judged and say so
(``significant`` is missing).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .errors import Problem, ValidationError

__all__ = ["FRONTS", "NOISE_Z", "COMPARE_KEYS", "pareto_mask", "fronts", "front_figure", "Comparison", "compare"]

FRONTS: dict[str, tuple[str, bool, str, bool]] = {
    "throughput_vs_latency": ("e2e_s", True, "throughput_per_device_tok_s", False),
    "cost_vs_latency": ("e2e_s", True, "cost_per_m_output_tok", True),
    "energy_vs_throughput": ("throughput_per_device_tok_s", False, "energy_j_per_output_tok", True),
}
"""Front name -> (x column, minimise x, y column, minimise y)."""

NOISE_Z = 2.0
"""Standard errors a difference must exceed to count as beyond run-to-run noise (about 95%)."""

COMPARE_KEYS = ("hardware", "model", "device_count", "input_len_tok", "output_len_tok", "batch_size")
"""Columns matching a point of one dataset with a point of the other by default."""


def pareto_mask(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, *, minimize_x: bool = True,
                minimize_y: bool = True) -> np.ndarray:
    """Which points are Pareto-optimal (non-dominated).

    Parameters
    ----------
    x, y
        Coordinates; points with a non-finite coordinate are never on the front.
    minimize_x, minimize_y
        Direction of each objective.

    Returns
    -------
    numpy.ndarray
        Boolean mask, True on the front. Duplicated optimal points are all on it.
    """
    xs = np.asarray(x, dtype=float) * (1 if minimize_x else -1)
    ys = np.asarray(y, dtype=float) * (1 if minimize_y else -1)
    ok = np.isfinite(xs) & np.isfinite(ys)
    mask = np.zeros(len(xs), dtype=bool)
    idx = np.flatnonzero(ok)
    if not len(idx):
        return mask
    # Sort by x then y: a point is optimal when its y beats every y seen before it (ties on x handled by y).
    order = idx[np.lexsort((ys[idx], xs[idx]))]
    best_y = np.inf
    last: tuple[float, float] | None = None
    for i in order:
        if ys[i] < best_y:
            mask[i] = True
            best_y = ys[i]
            last = (xs[i], ys[i])
        elif last is not None and (xs[i], ys[i]) == last:
            mask[i] = True  # an exact duplicate of a front point is not dominated either
    return mask


def fronts(points: pd.DataFrame, *, feasible_only: bool = True) -> dict[str, pd.DataFrame]:
    """The three fronts of :data:`FRONTS` over a table of operating points.

    Parameters
    ----------
    points
        Operating points (:attr:`perfmodel.planner.PlanResult.points`).
    feasible_only
        Keep only points that fit in memory and meet the SLOs (``memory_ok`` and
        ``slo_ok`` when those columns exist).

    Returns
    -------
    dict
        Front name -> the points on it, sorted by the x column, with a boolean
        ``on_front`` column on the full table under the key ``"all"``.

    Raises
    ------
    ValidationError
        A column a front needs is missing.
    """
    need = sorted({c for spec in FRONTS.values() for c in (spec[0], spec[2])})
    missing = [c for c in need if c not in points.columns]
    if missing:
        raise ValidationError("fronts: the operating points lack columns", [Problem("missing", column=c)
                                                                           for c in missing])
    pts = points
    if feasible_only:
        keep = np.ones(len(pts), dtype=bool)
        for c in ("memory_ok", "slo_ok"):
            if c in pts.columns:
                keep &= pts[c].to_numpy(dtype=bool)
        pts = pts[keep]
    out: dict[str, pd.DataFrame] = {}
    for name, (xc, minx, yc, miny) in FRONTS.items():
        m = pareto_mask(pts[xc].to_numpy(dtype=float), pts[yc].to_numpy(dtype=float), minimize_x=minx,
                        minimize_y=miny)
        out[name] = pts[m].sort_values(xc, kind="stable").reset_index(drop=True)
    return out


def front_figure(points: pd.DataFrame, name: str, *, title: str | None = None) -> go.Figure:
    """Scatter of every operating point with the named front drawn as a line.

    Parameters
    ----------
    points
        Operating points (feasible ones; see :func:`fronts`).
    name
        A key of :data:`FRONTS`.
    title
        Figure title (default: the front's name in words).

    Returns
    -------
    plotly.graph_objects.Figure

    Raises
    ------
    ValidationError
        Unknown front name.
    """
    if name not in FRONTS:
        raise ValidationError(f"unknown front {name!r}", [Problem("valid: " + ", ".join(FRONTS))])
    xc, minx, yc, miny = FRONTS[name]
    from .plots import axis_title

    fig = go.Figure()
    if len(points):
        labels = (points["hardware"].astype(str) + " " + points["framework"].astype(str) + " x"
                  + points["device_count"].astype(str) + " b" + points["batch_size"].map("{:g}".format))
        fig.add_trace(go.Scatter(x=points[xc], y=points[yc], mode="markers", name="operating points",
                                 text=labels, hovertemplate="%{text}<br>%{x:.4g}, %{y:.4g}<extra></extra>",
                                 marker={"color": "#9aa7b8", "size": 7}))
        m = pareto_mask(points[xc].to_numpy(dtype=float), points[yc].to_numpy(dtype=float), minimize_x=minx,
                        minimize_y=miny)
        f = points[m].sort_values(xc)
        fl = labels[m].reindex(f.index)
        fig.add_trace(go.Scatter(x=f[xc], y=f[yc], mode="lines+markers", name="Pareto front", text=fl,
                                 hovertemplate="%{text}<br>%{x:.4g}, %{y:.4g}<extra></extra>",
                                 line={"color": "#d62728", "shape": "hv"}, marker={"size": 9}))
    fig.update_layout(title=title or name.replace("_", " "), xaxis_title=axis_title(xc), yaxis_title=axis_title(yc),
                      template="plotly_white", height=420, margin={"l": 60, "r": 20, "t": 50, "b": 50})
    return fig


@dataclass(frozen=True)
class Comparison:
    """Two datasets side by side.

    Attributes
    ----------
    table
        One row per matched point: the keys, ``mean_a``, ``mean_b``, ``n_a``,
        ``n_b``, ``diff`` (b - a), ``diff_pct`` (relative to a), ``noise_se``,
        ``significant`` (nullable boolean: missing without repeats on both sides).
    label_a, label_b
        Names of the two sides.
    metric
        The compared column.
    n_only_a, n_only_b
        Points present on one side only.
    message
        One line summarising the comparison.
    """

    table: pd.DataFrame = field(repr=False)
    label_a: str
    label_b: str
    metric: str
    n_only_a: int
    n_only_b: int
    message: str


def _summary(runs: pd.DataFrame, keys: Sequence[str], metric: str) -> pd.DataFrame:
    d = runs[list(keys) + [metric]].copy()
    d[metric] = pd.to_numeric(d[metric], errors="coerce").astype(float)
    d = d[np.isfinite(d[metric].to_numpy())]
    for k in keys:
        if d[k].dtype.kind not in "fi":
            d[k] = d[k].astype("string").fillna("(missing)").astype(object)
        else:
            d[k] = d[k].astype(float)
    g = d.groupby(list(keys), dropna=False, sort=True)[metric]
    return g.agg(mean="mean", std="std", n="count").reset_index()


def compare(runs_a: pd.DataFrame, runs_b: pd.DataFrame, *, keys: Sequence[str] = COMPARE_KEYS,
            metric: str = "output_throughput_tok_s", label_a: str = "A", label_b: str = "B",
            ignore: Sequence[str] = ()) -> Comparison:
    """Compare a metric of two runs tables point by point, against run-to-run noise.

    Parameters
    ----------
    runs_a, runs_b
        Canonical runs tables (two frameworks, two versions, two sweeps...).
    keys
        Columns matching points; those listed in ``ignore`` are dropped from it
        (e.g. ``ignore=["framework"]`` when the sides differ by framework).
    metric
        Numeric column to compare.
    label_a, label_b
        Names of the two sides for messages.
    ignore
        Key columns not to match on.

    Returns
    -------
    Comparison

    Raises
    ------
    ValidationError
        A key or the metric is missing from one side.
    """
    ks = [k for k in keys if k not in set(ignore)]
    problems = [Problem("missing", file=lab, column=c) for lab, df in ((label_a, runs_a), (label_b, runs_b))
                for c in [*ks, metric] if c not in df.columns]
    if problems:
        raise ValidationError("compare: a side lacks the columns to compare", problems)
    a, b = _summary(runs_a, ks, metric), _summary(runs_b, ks, metric)
    m = a.merge(b, on=ks, how="outer", suffixes=("_a", "_b"), indicator=True)
    only_a = int((m["_merge"] == "left_only").sum())
    only_b = int((m["_merge"] == "right_only").sum())
    m = m[m["_merge"] == "both"].drop(columns="_merge").reset_index(drop=True)
    diff = m["mean_b"] - m["mean_a"]
    se = np.sqrt(m["std_a"].fillna(np.nan) ** 2 / m["n_a"] + m["std_b"] ** 2 / m["n_b"])
    judged = (m["n_a"] >= 2) & (m["n_b"] >= 2)
    sig = pd.array([bool(abs(d) > NOISE_Z * s) if j else pd.NA for d, s, j in zip(diff, se, judged, strict=True)],
                   dtype="boolean")
    table = pd.DataFrame({**{k: m[k] for k in ks}, "mean_a": m["mean_a"], "mean_b": m["mean_b"], "n_a": m["n_a"],
                          "n_b": m["n_b"], "diff": diff, "diff_pct": 100 * diff / m["mean_a"],
                          "noise_se": se.where(judged), "significant": sig})
    n_sig = int(table["significant"].fillna(False).sum())
    n_judged = int(judged.sum())
    if len(table):
        med = float(np.nanmedian(table["diff_pct"]))
        msg = (f"{len(table)} matched point(s): median {label_b} vs {label_a} {med:+.1f}%; {n_sig} of {n_judged} "
               f"with repeats on both sides differ beyond run-to-run noise ({NOISE_Z:g} standard errors)")
        if n_judged < len(table):
            msg += f"; {len(table) - n_judged} without repeats cannot be judged"
    else:
        msg = f"no point of {label_a} matches one of {label_b} on {', '.join(ks)}"
    return Comparison(table=table, label_a=label_a, label_b=label_b, metric=metric, n_only_a=only_a,
                      n_only_b=only_b, message=msg)
