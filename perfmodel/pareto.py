"""Pareto fronts across operating points, and side-by-side comparison of two datasets.

Fronts (:func:`pareto_mask`, :func:`fronts`) are computed on the operating
points of a plan (:attr:`perfmodel.planner.PlanResult.points`) or any table
with the same columns: a point is on the front when no other point is at least
as good on both axes and strictly better on one.

Comparison (:func:`compare`) joins two runs tables on the configuration and
the load (:data:`LOAD_KEYS`) and reports, per matched point, both means, the difference and
whether it exceeds run-to-run noise. Noise is the standard error of the
difference from the repeats of each side (``sqrt(s_a^2/n_a + s_b^2/n_b)``);
a difference is called significant when Welch's t-test (the Welch-Satterthwaite
degrees of freedom) rejects equal means at :data:`NOISE_ALPHA`: with two repeats a
side that takes a difference of about 4.3 standard errors, not 2 (two standard
errors would call one point in five significant between identical setups).
Points without repeats on both sides cannot be judged and say so
(``significant`` is missing). A configuration is what :func:`perfmodel.curves.fit_curves`
fits one curve to (framework, dtypes, parallelism and thread count included), so
the runs pooled as the repeats of a point are true repeats of one configuration, and the load is part of the
point: inference-perf's seven request rates (1 to 183 req/s, batch size empty) had been pooled as seven
"repeats" of one point whose spread then served as the noise estimate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .curves import DEFAULT_BY, OPTIONAL_BY, VARYING_BY
from .errors import Problem, ValidationError

__all__ = ["FRONTS", "NOISE_ALPHA", "COMPARE_KEYS", "LOAD_KEYS", "ARRIVAL_KEYS", "load_column", "COMPARE_METRICS", "pareto_mask", "fronts", "front_figure", "candidate_labels", "Comparison",
           "compare", "confounded", "noise_verdicts", "VERDICTS", "select_runs", "configuration_labels", "comparison_figure"]

FRONTS: dict[str, tuple[str, bool, str, bool]] = {
    "throughput_vs_latency": ("e2e_s", True, "throughput_per_device_tok_s", False),
    "cost_vs_latency": ("e2e_s", True, "cost_per_m_output_tok", True),
    "energy_vs_throughput": ("throughput_per_device_tok_s", False, "energy_j_per_output_tok", True),
}
"""Front name -> (x column, minimise x, y column, minimise y)."""

NOISE_ALPHA = 0.05
"""Two-sided significance level of the Welch t-test that calls a difference beyond run-to-run noise."""

_SHOWN_FIRST = ("hardware", "model", "device_count", "input_len_tok", "output_len_tok")
LOAD_KEYS = ("load", "batch_size", "request_rate_rps")
"""The columns that say at what load a point was measured, matched on by default and never contrasted.

``load`` is derived from ``load_kind``: ``batch`` for ``static_batch`` and ``concurrency`` (``batch_size``
requests at a time, which perfmodel reads as one axis: the local engine's static batches against a server's
concurrency is a comparison the sample data makes), ``request_rate`` and ``offline``. ``request_rate_rps``
counts where it limits the load: a request-rate run's rate (``inf`` included), or a finite rate cap on any
other run; the ``inf`` that vLLM and SGLang write beside a concurrency is no limit and reads as empty.
``batch_size`` counts for every run but a request-rate one."""
_BATCH_KINDS = ("static_batch", "concurrency")
ARRIVAL_KEYS = ("arrival", "burstiness")
"""The arrival process of a rate-limited load (:data:`perfmodel.schema.ARRIVALS`), matched on when both sides
record it, like an :data:`~perfmodel.curves.OPTIONAL_BY` column, and contrasted when each side has one, a
different one (a constant-rate dataset against a Poisson one at the same rates). At one rate the process changes
what is measured: GuideLLM's constant and Poisson benchmarks at 5 req/s (4.68 against 5.58 req/s achieved, 562
against 703 tok/s) had been pooled as two repeats of one point. A Poisson run's ``burstiness`` reads as 1 (its
gamma shape) where the source left it empty."""
COMPARE_KEYS = tuple(dict.fromkeys((*_SHOWN_FIRST, *DEFAULT_BY, *OPTIONAL_BY, *VARYING_BY, *LOAD_KEYS,
                                    *ARRIVAL_KEYS)))
"""Columns that can match a point of one dataset with a point of the other by default, in display order.

The default matching is the configuration of :func:`perfmodel.curves.fit_curves` and the load
(:data:`LOAD_KEYS`): the :data:`~perfmodel.curves.DEFAULT_BY` columns and ``batch_size`` always (but where
neither side records a batch and the request rate is matched on), ``load`` when both sides record
``load_kind``, ``request_rate_rps`` when a side has a rate that limits its load (see :data:`LOAD_KEYS`), an
:data:`~perfmodel.curves.OPTIONAL_BY` or :data:`ARRIVAL_KEYS` column when both sides record it (at least one
value each), a
:data:`~perfmodel.curves.VARYING_BY` column when both sides record it and it takes more than one value.
A column with one value on each side, a different one (the framework of
``--where-a framework=vllm --where-b framework=sglang``), is what the comparison contrasts: it is not
matched on (:attr:`Comparison.contrast`)."""

VERDICTS = ("beyond noise", "within noise", "no repeats")
"""What :func:`noise_verdicts` says of a matched point."""

COMPARE_METRICS = ("output_throughput_tok_s", "total_throughput_tok_s", "request_throughput_rps", "e2e_latency_s",
                   "ttft_s", "tpot_s")
"""Metrics offered for comparison (any numeric column works in :func:`compare`)."""


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


_LABELLED = 16
"""Up to this many points of a Pareto front are named on the chart (more would cover it)."""


def candidate_labels(table: pd.DataFrame) -> pd.Series:
    """Short names of plan candidates for charts and tables: ``h200 transformers x1``, with the model in front
    where the rows serve more than one (two models on one H200 read as the same candidate twice).

    Parameters
    ----------
    table
        Rows with ``hardware``, ``framework``, ``device_count`` and, optionally, ``model``.

    Returns
    -------
    pandas.Series
        Aligned with ``table``.
    """
    out = (table["hardware"].astype(str) + " " + table["framework"].astype(str) + " x"
           + table["device_count"].astype(str))
    if "model" in table.columns and table["model"].nunique() > 1:
        out = table["model"].astype(str) + " · " + out
    return out


def front_figure(points: pd.DataFrame, name: str, *, title: str | None = None,
                 currency: str | None = None) -> go.Figure:
    """Scatter of every operating point with the named front drawn as a line.

    Parameters
    ----------
    points
        Operating points (feasible ones; see :func:`fronts`).
    name
        A key of :data:`FRONTS`.
    title
        Figure title (default: the front's name in words).
    currency
        Named in the title of a cost axis.

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
    from .plots import axis_title, wide_span

    fig = go.Figure()
    if len(points):
        labels = candidate_labels(points) + " b" + points["batch_size"].map("{:g}".format)
        hover = f"%{{text}}<br>{axis_title(xc)}: %{{x:,.4~r}}<br>{axis_title(yc)}: %{{y:,.4~r}}<extra></extra>"
        fig.add_trace(go.Scatter(x=points[xc], y=points[yc], mode="markers", name="operating points",
                                 text=labels, hovertemplate=hover,
                                 marker={"color": "#9aa7b8", "size": 7}))
        m = pareto_mask(points[xc].to_numpy(dtype=float), points[yc].to_numpy(dtype=float), minimize_x=minx,
                        minimize_y=miny)
        f = points[m].sort_values(xc)
        fl = labels[m].reindex(f.index)
        # The front's points are named on the chart, not only on hover: a printed report has no hover.
        # Neighbours alternate to the two sides of the staircase (above-left and below-right of a rising front,
        # above-right and below-left of a falling one), so that close points' names do not print over each other,
        # and each name is tied to its point by a short leader line: two names beside two points had read as
        # either's.
        rising = len(f) < 2 or float(f[yc].iloc[-1]) >= float(f[yc].iloc[0])
        fig.add_trace(go.Scatter(x=f[xc], y=f[yc], mode="lines+markers", name="Pareto front", text=fl,
                                 hovertemplate=hover, line={"color": "#d62728", "shape": "hv"}, marker={"size": 9},
                                 cliponaxis=False))
        named = list(zip(f[xc].astype(float), f[yc].astype(float), fl, front_label_sides(len(f), rising=rising),
                         strict=True)) if len(f) <= _LABELLED else []

    def titled(col: str) -> str:  # axis_title knows no currency: the plan's is added to a cost
        return f"{axis_title(col)} ({currency})" if currency and col.startswith("cost_") else axis_title(col)

    # The legend above the plot, not at its right: the front's last point names itself to the right, and the
    # legend cut it off ("h200 transfo").
    fig.update_layout(title=title or name.replace("_", " "), xaxis_title=titled(xc), yaxis_title=titled(yc),
                      template="plotly_white", height=440, margin={"l": 60, "r": 90, "t": 80, "b": 50},
                      legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "xanchor": "right", "x": 1})
    # Operating points from batch 1 to 256 lie decades apart (0.4 s to 40 s end to end): on a linear axis the
    # small batches crowd into one corner, their names over each other.
    log_x, log_y = (bool(len(points)) and wide_span(points[c]) for c in (xc, yc))
    if log_x:
        fig.update_xaxes(type="log", title_text=f"{titled(xc)} (log scale)", tickformat=",~g")
    if log_y:
        fig.update_yaxes(type="log", title_text=f"{titled(yc)} (log scale)", tickformat=",~g")
    for x, y, text, side in (named if len(points) else []):
        # an annotation on a log axis is placed by the logarithm of its value
        fig.add_annotation(x=math.log10(x) if log_x else x, y=math.log10(y) if log_y else y, text=text,
                           showarrow=True, arrowhead=0, arrowwidth=1, arrowcolor="#7a1f1f",
                           ax=_LEADER_PX[0] * (1 if "right" in side else -1),
                           ay=_LEADER_PX[1] * (1 if "bottom" in side else -1),
                           xanchor="left" if "right" in side else "right", font={"size": 10, "color": "#7a1f1f"})
    return fig


_LEADER_PX = (28, 22)
"""How far (pixels, right and down) a front point's name sits from the point, along its leader line."""


def front_label_sides(n: int, *, rising: bool) -> list[str]:
    """Where each of a front's ``n`` names goes (plotly ``textposition``), left to right.

    Neighbours alternate to the two sides of the staircase (above-left and below-right of a rising front,
    above-right and below-left of a falling one), so that close points' names do not print over each other;
    the first is named to its right and the last to its left whatever the alternation, since a name past
    either end runs off the figure ("u-x86-2vcpu llama.cpp x1 b2" had lost its first letters).
    """
    sides = ("bottom right", "top left") if rising else ("top right", "bottom left")
    out = [sides[i % 2] for i in range(n)]
    if n >= 2:
        out[0] = sides[0]
        out[-1] = sides[1]
    return out


@dataclass(frozen=True)
class Comparison:
    """Two datasets side by side.

    Attributes
    ----------
    table
        One row per matched point: the keys, ``mean_a``, ``mean_b``, ``n_a``,
        ``n_b``, ``diff`` (b - a), ``diff_pct`` (relative to a), ``noise_se``,
        ``significant`` (nullable boolean: missing without repeats on both sides),
        ``std_a``, ``std_b`` (run-to-run standard deviation of each side; missing
        with one run).
    label_a, label_b
        Names of the two sides.
    metric
        The compared column.
    n_only_a, n_only_b
        Points present on one side only.
    message
        One line summarising the comparison.
    keys
        The columns points were matched on (the key columns of ``table``).
    contrast
        Configuration columns not matched on because each side has one value,
        a different one: column -> (value of A, value of B).
    caveat
        Why the differences cannot be put down to one cause, when the sides differ in the workload (model,
        lengths) and something else, or in three things or more; None otherwise.
    """

    table: pd.DataFrame = field(repr=False)
    label_a: str
    label_b: str
    metric: str
    n_only_a: int
    n_only_b: int
    message: str
    keys: tuple[str, ...] = ()
    contrast: Mapping[str, tuple[Any, Any]] = field(default_factory=dict)
    caveat: str | None = None


_WORKLOAD = frozenset({"model", "input_len_tok", "output_len_tok"})


def confounded(contrast: Mapping[str, tuple[Any, Any]]) -> str | None:
    """Why a comparison whose sides differ in several things at once says little, or None.

    MiniMax at 10,279 input tokens on an H100 was matched with gpt-oss at 1,000 on an H200 by device count and
    batch alone, and the page gave "+163.1%" as if it measured something. A difference of workload (model,
    lengths) together with anything else, or of three things or more, cannot be put down to one of them.

    Parameters
    ----------
    contrast
        :attr:`Comparison.contrast`.

    Returns
    -------
    str or None
    """
    cols = set(contrast)
    if len(cols) < 3 and not (cols & _WORKLOAD and cols - _WORKLOAD):
        return None
    return (f"the sides differ in {len(cols)} things at once ("
            + ", ".join(f"{k} {_shown(va)} vs {_shown(vb)}" for k, (va, vb) in contrast.items())
            + "): no difference below can be put down to one of them")


def _recorded(df: pd.DataFrame, col: str) -> bool:
    return col in df.columns and bool(df[col].notna().any())


def _with_load(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs with the load columns of :data:`LOAD_KEYS` as they name each run's load: ``load`` from
    ``load_kind``, ``request_rate_rps`` empty where it does not limit the load, ``batch_size`` empty on a
    request-rate run, ``burstiness`` 1 on a Poisson run that left it empty (a copy; the index is kept)."""
    if not any(c in runs.columns for c in ("load_kind", "request_rate_rps", "arrival")):
        return runs
    out = runs.copy()
    if "arrival" in out.columns:
        poisson = (out["arrival"].astype("string").str.strip().str.lower() == "poisson").fillna(False)
        if poisson.any():
            b = (pd.to_numeric(out["burstiness"], errors="coerce").astype(float) if "burstiness" in out.columns
                 else pd.Series(np.nan, index=out.index))
            out["burstiness"] = b.where(~(poisson.to_numpy(dtype=bool) & b.isna().to_numpy()), 1.0)
    if not any(c in runs.columns for c in ("load_kind", "request_rate_rps")):
        return out
    kind = (out["load_kind"].astype("string").str.strip().str.lower() if "load_kind" in out.columns
            else pd.Series(pd.NA, index=out.index, dtype="string"))
    is_rate = (kind == "request_rate").fillna(False).to_numpy(dtype=bool)
    if "load_kind" in out.columns:
        out["load"] = kind.where(~kind.isin(_BATCH_KINDS).fillna(False), "batch").astype(object)
    if "request_rate_rps" in out.columns:
        rate = pd.to_numeric(out["request_rate_rps"], errors="coerce").astype(float)
        out["request_rate_rps"] = rate.where(is_rate | np.isfinite(rate.to_numpy()))
    elif is_rate.any():
        out["request_rate_rps"] = np.nan
    if "batch_size" in out.columns and is_rate.any():
        out["batch_size"] = pd.to_numeric(out["batch_size"], errors="coerce").astype(float).where(~is_rate)
    return out


def _default_keys(runs_a: pd.DataFrame, runs_b: pd.DataFrame) -> list[str]:
    """The configuration columns of :func:`perfmodel.curves.fit_curves` and the load columns that both sides
    can be matched on (the sides as :func:`_with_load` gives them)."""
    out = []
    rate = _recorded(runs_a, "request_rate_rps") or _recorded(runs_b, "request_rate_rps")
    for c in COMPARE_KEYS:
        if c == "load" and not (_recorded(runs_a, c) and _recorded(runs_b, c)):
            continue
        if c == "request_rate_rps" and not rate:
            continue
        if (c == "batch_size" and rate and not _recorded(runs_a, c) and not _recorded(runs_b, c)
                and c in runs_a.columns and c in runs_b.columns):
            continue  # request-rate runs only: an empty batch column says nothing
        if c in OPTIONAL_BY or c in VARYING_BY or c in ARRIVAL_KEYS:
            if not (_recorded(runs_a, c) and _recorded(runs_b, c)):
                continue  # a side that does not record it cannot be matched on it
            if c in VARYING_BY and pd.concat([runs_a[c], runs_b[c]], ignore_index=True).nunique() < 2:
                continue
        out.append(c)
    return out


def _prepare(runs: pd.DataFrame, keys: Sequence[str], numeric: set[str], metric: str) -> pd.DataFrame:
    """The key and metric columns, keys made comparable across sides, rows without a finite metric dropped."""
    d = runs[list(keys) + [metric]].copy()
    d[metric] = pd.to_numeric(d[metric], errors="coerce").astype(float)
    d = d[np.isfinite(d[metric].to_numpy())]
    for k in keys:
        if k in numeric:
            d[k] = pd.to_numeric(d[k], errors="coerce").astype(float)
        else:
            d[k] = d[k].astype("string").fillna("(missing)").astype(object)
    return d


def _numeric(df: pd.DataFrame, col: str) -> bool:
    return df[col].dtype.kind in "fiub" or bool(df[col].isna().all())


def _single(d: pd.DataFrame, col: str) -> tuple[bool, Any]:
    """(whether the column holds exactly one value, that value); a missing value counts as one."""
    vals = d[col].drop_duplicates()
    return len(vals) == 1, (vals.iloc[0] if len(vals) == 1 else None)


def _plain(v: Any) -> Any:
    return float(v) if isinstance(v, float | np.floating) else str(v)


def compare(runs_a: pd.DataFrame, runs_b: pd.DataFrame, *, keys: Sequence[str] | None = None,
            metric: str = "output_throughput_tok_s", label_a: str = "A", label_b: str = "B",
            ignore: Sequence[str] = ()) -> Comparison:
    """Compare a metric of two runs tables point by point, against run-to-run noise.

    Parameters
    ----------
    runs_a, runs_b
        Canonical runs tables (two frameworks, two versions, two sweeps...).
    keys
        Columns matching points. The default (``None``, or :data:`COMPARE_KEYS`)
        matches on the configuration as :func:`perfmodel.curves.fit_curves` defines
        it and the batch size (see :data:`COMPARE_KEYS`), leaving out the columns
        the two sides contrast (one value each, a different one). Columns listed in
        ``ignore`` are dropped from the keys (e.g. ``ignore=["model"]`` when the
        sides name one model differently and hold several).
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
    default = keys is None or tuple(keys) == COMPARE_KEYS
    runs_a, runs_b = _with_load(runs_a), _with_load(runs_b)
    wanted = _default_keys(runs_a, runs_b) if default else list(keys or ())
    ks = [k for k in wanted if k not in set(ignore)]
    problems = [Problem("missing", file=lab, column=c) for lab, df in ((label_a, runs_a), (label_b, runs_b))
                for c in [*ks, metric] if c not in df.columns]
    if not ks:
        problems.append(Problem("no column left to match points on: leave fewer out (ignore)"))
    if problems:
        raise ValidationError("compare: a side lacks the columns to compare", problems)
    numeric = {k for k in ks if _numeric(runs_a, k) and _numeric(runs_b, k)}
    da, db = _prepare(runs_a, ks, numeric, metric), _prepare(runs_b, ks, numeric, metric)
    contrast: dict[str, tuple[Any, Any]] = {}
    if default and len(da) and len(db):
        for k in ks:
            (one_a, va), (one_b, vb) = _single(da, k), _single(db, k)
            if k not in LOAD_KEYS and one_a and one_b and not (pd.isna(va) and pd.isna(vb)) and va != vb:
                contrast[k] = (_plain(va), _plain(vb))
        ks = [k for k in ks if k not in contrast]
        if "load" in ks:  # static batches against a concurrency: matched as one load axis, and said
            (one_a, va), (one_b, vb) = (_single(d.assign(k=runs.loc[d.index, "load_kind"].astype("string")), "k")
                                        for d, runs in ((da, runs_a), (db, runs_b)))
            if one_a and one_b and va != vb and {va, vb} <= set(_BATCH_KINDS):
                contrast["load_kind"] = (str(va), str(vb))
        if not ks:  # every matched column differs between the sides (batch_size was left out)
            raise ValidationError("compare: nothing left to match points on", [Problem(
                f"the sides differ in every column matched on ({', '.join(contrast)}): leave fewer out (ignore)")])
    (a, mixed_a), (b, mixed_b) = (_aggregate(d, runs, ks, metric) for d, runs in ((da, runs_a), (db, runs_b)))
    m = a.merge(b, on=ks, how="outer", suffixes=("_a", "_b"), indicator=True)
    only_a = int((m["_merge"] == "left_only").sum())
    only_b = int((m["_merge"] == "right_only").sum())
    m = m[m["_merge"] == "both"].drop(columns="_merge").reset_index(drop=True)
    diff = m["mean_b"] - m["mean_a"]
    se = np.sqrt(m["std_a"].fillna(np.nan) ** 2 / m["n_a"] + m["std_b"] ** 2 / m["n_b"])
    mixed = m["mixed_a"].fillna(False).astype(bool) | m["mixed_b"].fillna(False).astype(bool)
    judged = (m["n_a"] >= 2) & (m["n_b"] >= 2) & ~mixed
    p = welch_p_value(diff, m["std_a"], m["n_a"], m["std_b"], m["n_b"])
    sig = pd.array([bool(pv < NOISE_ALPHA) if j else pd.NA for pv, j in zip(p, judged, strict=True)], dtype="boolean")
    table = pd.DataFrame({**{k: m[k] for k in ks}, "mean_a": m["mean_a"], "mean_b": m["mean_b"],
                          "n_a": m["n_a"].astype(int), "n_b": m["n_b"].astype(int), "diff": diff,
                          "diff_pct": 100 * diff / m["mean_a"],
                          "noise_se": se.where(judged), "p_value": pd.Series(p).where(judged), "significant": sig, "std_a": m["std_a"],
                          "std_b": m["std_b"]})
    n_sig = int(table["significant"].fillna(False).sum())
    n_judged = int(judged.sum())
    if len(table):
        med = float(np.nanmedian(table["diff_pct"]))
        msg = f"{len(table)} matched point(s): median {label_b} vs {label_a} {med:+.1f}%; " + (
            f"{n_sig} of {n_judged} with repeats on both sides differ beyond run-to-run noise (Welch's t-test, "
            f"p < {NOISE_ALPHA:g})" if n_judged else
            "none has repeats on both sides, so no difference can be judged against run-to-run noise")
        unsettled = judged & ~table["significant"].fillna(False).astype(bool) & (table["diff_pct"].abs() >= 10)
        if unsettled.any():
            few = int(min(m["n_a"][unsettled].min(), m["n_b"][unsettled].min()))
            msg += (f"; {int(unsettled.sum())} within noise differ by 10% or more, which {few} repeat"
                    f"{'s' if few > 1 else ''} a side spread too widely to settle (more repeats would)")
        n_mixed = int(mixed.sum())
        if n_judged and n_judged + n_mixed < len(table):
            msg += f"; {len(table) - n_judged - n_mixed} without repeats cannot be judged"
        if n_mixed:
            msg += (f"; {n_mixed} average runs at several {' / '.join(sorted({*mixed_a, *mixed_b}))} settings on "
                    "a side that are not matched on: those runs are not repeats, so they are not judged")
    else:
        msg = f"no point of {label_a} matches one of {label_b} on {', '.join(ks)}"
    if contrast:
        msg += "; not matched on " + ", ".join(f"{k} ({_shown(va)} vs {_shown(vb)})"
                                                 for k, (va, vb) in contrast.items())
    return Comparison(table=table, label_a=label_a, label_b=label_b, metric=metric, n_only_a=only_a,
                      n_only_b=only_b, message=msg, keys=tuple(ks), contrast=contrast, caveat=confounded(contrast))


def _aggregate(d: pd.DataFrame, runs: pd.DataFrame, ks: Sequence[str], metric: str) -> tuple[pd.DataFrame, list[str]]:
    """One side's mean, standard deviation and count per matched point, and the measurement settings
    (:data:`perfmodel.curves.VARYING_BY`, the load kind, a load column left out of the keys) that vary within a
    point of it.

    Runs at different settings are not repeats: LLM-Inference-Bench's llama.cpp rows at four n_batch values (29.5
    to 57.2 tok/s) were averaged into one point with a "run-to-run" spread of 13 tok/s. Such a point keeps its
    mean and count (column ``mixed`` true) and has no spread, so it is not judged against noise.
    """
    out = d.groupby(list(ks), dropna=False, sort=True)[metric].agg(mean="mean", std="std", n="count").reset_index()
    # The load too, where a column of it is not matched on (left out with ignore): runs at several batch sizes or
    # rates are no more repeats than runs at several thread counts; static batches beside a concurrency neither,
    # nor constant-rate runs beside Poisson ones at one rate (a side that records no arrival is not matched on it).
    cols = [c for c in (*VARYING_BY, "load_kind", "batch_size", "request_rate_rps", *ARRIVAL_KEYS) if c in runs.columns
            and c not in ks and runs[c].notna().any()]
    out["mixed"] = False
    varying: list[str] = []
    for c in cols:
        n_values = d.assign(_s=runs.loc[d.index, c].astype("string").fillna("(none)")).groupby(
            list(ks), dropna=False, sort=True)["_s"].nunique().to_numpy()
        if (n_values > 1).any():
            out["mixed"] |= n_values > 1
            varying.append(c)
    out["std"] = out["std"].where(~out["mixed"])
    return out, varying


def _shown(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def welch_p_value(diff: Any, std_a: Any, n_a: Any, std_b: Any, n_b: Any) -> np.ndarray:
    """Two-sided p-values of Welch's t-test that two means differing by ``diff`` are equal.

    Parameters
    ----------
    diff
        Differences of the means (b - a).
    std_a, n_a, std_b, n_b
        Sample standard deviations (ddof 1) and repeat counts of each side.

    Returns
    -------
    numpy.ndarray
        p-values; NaN where a side has fewer than 2 repeats or no standard deviation. Where both sides
        repeat exactly (no spread), a difference is certain (p = 0) and none is p = 1.
    """
    from scipy import stats

    d = np.asarray(diff, dtype=float)
    sa, sb = np.asarray(std_a, dtype=float), np.asarray(std_b, dtype=float)
    na, nb = np.asarray(n_a, dtype=float), np.asarray(n_b, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        va, vb = sa ** 2 / na, sb ** 2 / nb
        se = np.sqrt(va + vb)
        dof = (va + vb) ** 2 / (va ** 2 / (na - 1) + vb ** 2 / (nb - 1))
        p = 2.0 * stats.t.sf(np.abs(d) / se, dof)
    exact = (se == 0) & np.isfinite(d)
    p = np.where(exact, np.where(d == 0, 1.0, 0.0), p)
    return np.where((na >= 2) & (nb >= 2) & np.isfinite(se), p, np.nan)


def noise_verdicts(table: pd.DataFrame) -> list[str]:
    """One of :data:`VERDICTS` per matched point of a comparison table.

    Parameters
    ----------
    table
        :attr:`Comparison.table`.

    Returns
    -------
    list of str
        ``beyond noise`` (significant), ``within noise``, or ``no repeats``
        (fewer than two runs on a side: cannot be judged).
    """
    return [VERDICTS[2] if pd.isna(s) else VERDICTS[0] if bool(s) else VERDICTS[1]
            for s in table["significant"].astype(object)]


def select_runs(runs: pd.DataFrame, where: Mapping[str, Sequence[str]], *, label: str = "runs") -> pd.DataFrame:
    """The rows whose column values are among the given ones (one side of a comparison).

    Values match as text, ignoring case; a hardware or model name that matches
    no row is also tried through the catalog (``H100`` finds ``h100-sxm``).

    Parameters
    ----------
    runs
        A runs table.
    where
        Column -> accepted values; an empty list accepts every value.
    label
        Names the table in messages (a dataset or file name).

    Returns
    -------
    pandas.DataFrame
        The matching rows (index kept).

    Raises
    ------
    ValidationError
        A column is missing, or a value matches no row (the message lists the valid ones).
    """
    problems: list[Problem] = []
    keep = np.ones(len(runs), dtype=bool)
    for col, values in where.items():
        wanted = [str(v) for v in values if str(v).strip()]
        if not wanted:
            continue
        if col not in runs.columns:
            problems.append(Problem(f"no such column; valid: {', '.join(map(str, runs.columns[:30]))}",
                                    file=label, column=col))
            continue
        text = runs[col].astype("string").str.lower()
        present = sorted({str(v) for v in runs[col].dropna().astype(str).unique()})
        hit = np.zeros(len(runs), dtype=bool)
        for v in wanted:
            m = (text == v.lower()).fillna(False).to_numpy(dtype=bool)
            if not m.any() and col in ("hardware", "model"):
                m = (text == _catalog_key(col, v)).fillna(False).to_numpy(dtype=bool)
            if not m.any():
                shown = ", ".join(present[:20]) + (" ..." if len(present) > 20 else "")
                problems.append(Problem(f"no row has {v!r}; valid: {shown}", file=label, column=col))
            hit |= m
        keep &= hit
    if problems:
        raise ValidationError(f"cannot select the runs of {label}", problems)
    return runs[keep]


def _catalog_key(col: str, value: str) -> str | None:
    """The catalog key of a hardware/model name, or None when the catalog does not know it."""
    from . import catalog
    from .errors import UnknownNameError

    try:
        spec = catalog.resolve_hardware(value) if col == "hardware" else catalog.resolve_model(value)
    except UnknownNameError:
        return None
    return str(spec.key)


def configuration_labels(table: pd.DataFrame, keys: Sequence[str]) -> pd.Series:
    """One label per row of a comparison table: its key values except the batch size and request rate (the
    load is the x axis of :func:`comparison_figure`); a request-rate or offline load is named, a batch is not.

    Parameters
    ----------
    table
        :attr:`Comparison.table`.
    keys
        The key columns of the comparison.

    Returns
    -------
    pandas.Series
        Labels such as ``"h100-sxm · llama-3-8b · 1 dev · 1024/1024"``.
    """
    parts: list[pd.Series] = []
    cols = [k for k in keys if k in table.columns and k not in ("batch_size", "request_rate_rps")]
    lengths = "input_len_tok" in cols and "output_len_tok" in cols
    for k in cols:
        if lengths and k in ("input_len_tok", "output_len_tok"):
            if k == "input_len_tok":
                parts.append(table[k].map("{:g}".format) + "/" + table["output_len_tok"].map("{:g}".format))
            continue
        form = _LABEL_FORMS.get(k, "{}")
        if k == "load":
            parts.append(table[k].map(lambda x: _LOAD_LABELS.get(str(x), str(x))))
            continue
        if k == "burstiness" and "arrival" in cols:  # said by the arrival, but for a gamma's shape
            parts.append(table[k].where(table["arrival"].astype(str) == "gamma").map(
                lambda x, form=form: "" if _blank(x) else form.format(f"{x:g}")))
            continue
        parts.append(table[k].map(lambda x, form=form: "" if _blank(x) else form.format(
            f"{x:g}" if isinstance(x, float) else str(x))))
    if not parts:
        return pd.Series(["all"] * len(table), index=table.index, dtype=object)
    joined = [" · ".join(v for v in row if v) for row in zip(*(p.astype(str) for p in parts), strict=True)]
    return pd.Series(joined, index=table.index, dtype=object)


_LABEL_FORMS = {"device_count": "{} dev", "tp_size": "tp{}", "pp_size": "pp{}", "fw_num_threads": "{} threads",
                "fw_n_batch": "n_batch {}",
                "weight_dtype": "{} weights", "kv_cache_dtype": "{} KV cache", "burstiness": "burstiness {}"}
"""How :func:`configuration_labels` shows a key value (default: as is)."""
_LOAD_LABELS = {"batch": "", "(missing)": "", "request_rate": "request rate", "offline": "offline"}
"""How :func:`configuration_labels` shows a ``load``: a batch goes without saying (it is the usual axis)."""


def load_column(table: pd.DataFrame) -> str | None:
    """The load column a comparison's points are drawn against: ``batch_size`` where a point records a batch,
    else ``request_rate_rps`` where one records a rate, else None.

    Parameters
    ----------
    table
        :attr:`Comparison.table` (or the rows of one configuration of it).

    Returns
    -------
    str or None
    """
    for c in ("batch_size", "request_rate_rps"):
        if c in table.columns and table[c].notna().any():
            return c
    return None


def _blank(x: Any) -> bool:
    return x is None or x == "(missing)" or (isinstance(x, float) and np.isnan(x))


_TITLE_WRAP_CHARS = 90
"""Longest subtitle line of :func:`comparison_figure` (fits a chart 700 px wide)."""
_TITLE_LINE_PX = 18


def _wrapped(text: str) -> list[str]:
    import html
    import textwrap

    # Labels are user text: escaped, since plotly reads titles as HTML-like markup.
    return [html.escape(line, quote=False) for line in textwrap.wrap(text, _TITLE_WRAP_CHARS, break_long_words=True)] or [""]


def comparison_figure(comp: Comparison, configurations: Sequence[str] | None = None, *,
                      log_x: bool = True) -> go.Figure:
    """Overlay of both sides' means against the load (batch size, or request rate for request-rate runs:
    :func:`load_column`), one colour per configuration.

    Side A is drawn solid, side B dashed; error bars are each side's run-to-run
    standard deviation; B's points that differ from A beyond noise are ringed. The y axis is logarithmic
    where the configurations' largest means lie more than :data:`perfmodel.plots.WIDE_SPAN` apart.

    Parameters
    ----------
    comp
        A comparison.
    configurations
        Labels (:func:`configuration_labels`) to draw; default the first four.
    log_x
        Logarithmic batch axis.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    from .plots import axis_title, log_y_axis, wide_span

    t = comp.table
    keys = list(comp.keys) or [c for c in t.columns if c in COMPARE_KEYS]
    labels = configuration_labels(t, keys)
    chosen = list(dict.fromkeys(labels)) if configurations is None else list(configurations)
    if configurations is None:
        chosen = chosen[:4]
    palette = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")
    fig = go.Figure()
    x_cols: list[str | None] = []
    for i, conf in enumerate(chosen):
        d = t[labels == conf]
        x_col = load_column(d)
        x_cols.append(x_col)
        x_word = "rate %{x:g} req/s" if x_col == "request_rate_rps" else "batch %{x:g}"
        if x_col is not None:
            d = d.sort_values(x_col)
        x = d[x_col] if x_col is not None else np.arange(len(d))
        colour = palette[i % len(palette)]
        for side, dash, lab in (("a", "solid", comp.label_a), ("b", "dash", comp.label_b)):
            fig.add_trace(go.Scatter(
                x=x, y=d[f"mean_{side}"], mode="lines+markers", name=f"{lab}: {conf}", legendgroup=conf,
                line={"color": colour, "dash": dash}, meta=side,
                error_y={"type": "data", "array": d[f"std_{side}"].fillna(0.0), "visible": True, "thickness": 1},
                hovertemplate=f"{lab}<br>{x_word}<br>%{{y:.4g}}<extra>{conf}</extra>"))
        sig = d[d["significant"].fillna(False).astype(bool)]
        if len(sig):
            fig.add_trace(go.Scatter(
                x=sig[x_col] if x_col is not None else np.arange(len(sig)), y=sig["mean_b"], mode="markers",
                name="beyond run-to-run noise", legendgroup=conf, meta="significant", showlegend=i == 0,
                marker={"symbol": "circle-open", "size": 16, "color": colour, "line": {"width": 2}},
                hovertemplate="%{y:.4g}: beyond run-to-run noise<extra></extra>"))
    # Plotly does not wrap titles: the two sides' labels (a dataset name and a cut, any length) go on lines of
    # their own under the metric, each wrapped, instead of one line running off the chart.
    sides = [*_wrapped(f"A (solid): {comp.label_a}"), *_wrapped(f"B (dashed): {comp.label_b}")]
    fig.update_layout(title={"text": axis_title(comp.metric), "subtitle": {"text": "<br>".join(sides)}},
                      xaxis_title=_load_axis_title(x_cols), yaxis_title=axis_title(comp.metric),
                      template="plotly_white",
                      height=460 + _TITLE_LINE_PX * len(sides),
                      margin={"l": 60, "r": 20, "t": 50 + _TITLE_LINE_PX * len(sides), "b": 50},
                      legend={"orientation": "h"})
    if log_x:
        fig.update_xaxes(type="log")
    tops = [max((v for v in t.y if v is not None and np.isfinite(v)), default=np.nan)
            for t in fig.data if t.meta in ("a", "b")]
    lows = [v for t in fig.data if t.meta in ("a", "b") for v in t.y if v is not None and np.isfinite(v)]
    if wide_span(tops) and min(lows, default=0.0) > 0:
        # 37 against 85 tok/s at batch 1 on a CPU was a flat line at zero beside an H200's thousands
        log_y_axis(fig, axis_title(comp.metric))
    return fig


def _load_axis_title(x_cols: Sequence[str | None]) -> str:
    """The x axis of :func:`comparison_figure` in words, for the load columns its configurations are drawn
    against."""
    used = {c for c in x_cols if c is not None}
    if used == {"request_rate_rps"}:
        return "request rate (req/s)"
    if used == {"batch_size", "request_rate_rps"}:
        return "batch size or request rate (req/s)"
    return "batch size"
