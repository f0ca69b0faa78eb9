"""Plotly figures built from runs tables and result objects.

This module only formats: it never computes a fit or touches Streamlit, so a
notebook, the report renderer and the app draw the same figures.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .curve_tables import (
    CURVE_GROUP_COLUMNS,
    batch_estimate_text,
    compact_number,
    compact_seconds,
    config_label,
    config_labels,
    curve_group_columns,
    default_curve_by,
    default_overlay,
    fits_summary,
    lengths_label,
    poor_fits,
    repeat_summary,
    significant,
    with_lengths,
)
from .curves import VARYING_BY, x_words
from .schema import column, column_words

if TYPE_CHECKING:
    from .curves import CurveFit

__all__ = [
    "LOAD_AXES",
    "X_AXES",
    "THROUGHPUT_METRICS",
    "COLOR_OPTIONS",
    "SERIES_COLUMNS",
    "HOVER_COLUMNS",
    "lengths_label",
    "with_lengths",
    "axis_title",
    "WIDE_SPAN",
    "log_y_axis",
    "wide_span",
    "COLUMN_LABELS",
    "significant",
    "compact_number",
    "compact_seconds",
    "throughput_figure",
    "CURVE_GROUP_COLUMNS",
    "KNEE_META",
    "FAILED_FIT_META",
    "config_label",
    "config_labels",
    "curve_group_columns",
    "default_curve_by",
    "default_overlay",
    "repeat_summary",
    "fits_summary",
    "poor_fits",
    "curve_figure",
    "whatif_figure",
    "add_suspect_markers",
    "SUSPECT_HOVER",
]

LOAD_AXES: tuple[str, ...] = ("batch_size", "measured_concurrency", "request_rate_rps")
"""Columns that can go on the x axis of a throughput curve."""
X_AXES: tuple[str, ...] = (*LOAD_AXES, "input_len_tok", "output_len_tok")
"""Columns that can go on the x axis of the Data page's chart: the load, or a length (offline runs, an ISL x OSL
sweep, record no load: with the load axes only, their chart was empty)."""

THROUGHPUT_METRICS: tuple[str, ...] = ("output_throughput_tok_s", "total_throughput_tok_s",
                                       "request_throughput_rps")
"""Columns that can go on the y axis of a throughput curve."""

COLOR_OPTIONS: tuple[str, ...] = ("hardware", "model", "framework", "lengths", "load_kind", "device_count",
                                  "tp_size", "weight_dtype", "quantization", "source_file")
"""Columns a throughput curve can be coloured by (``lengths`` is derived: ``input/output``)."""

SERIES_COLUMNS: tuple[str, ...] = ("hardware", "model", "framework", "framework_version", "device_count",
                                   "tp_size", "pp_size", "weight_dtype", "kv_cache_dtype", "quantization",
                                   "input_len_tok", "output_len_tok", "load_kind", "arrival", "burstiness",
                                   "repeat_idx", "source_format", "source_file", *VARYING_BY)
"""Columns that identify one curve: points agreeing on all of them are joined by a line (a measurement
setting too: LLM-Inference-Bench's llama.cpp rows at four n_batch values were one zig-zag line per
configuration, drawn as a filled blob)."""

HOVER_COLUMNS: tuple[str, ...] = ("hardware", "model", "framework", "device_count", "tp_size", "pp_size",
                                  "weight_dtype", "lengths", "load_kind", "batch_size", "request_rate_rps",
                                  "source_file", "source_row")
"""Configuration shown when hovering over a point."""

_MISSING = "(missing)"


COLUMN_LABELS: dict[str, str] = {
    "lengths": "input/output length (tokens)",
    # fits (perfmodel.curve_tables.fits_summary, poor_fits)
    "configuration": "configuration",
    "plateau_tok_s": "plateau c (tok/s)",
    "plateau_ci": "plateau interval (tok/s)",
    "knees": "knee batch [interval]",
    "b90": "batch at 90% of plateau",
    "b95": "batch at 95% of plateau",
    "kv_full_batch": "KV cache full at batch",
    "r2": "R²",
    "n_points": "runs",
    "n_batches": "batch sizes",
    "success": "fitted",
    "poor_fit": "poor fit",
    "reason": "reason",
    # planner operating points (perfmodel.pareto.FRONTS)
    "throughput_per_device_tok_s": "output throughput per device (tok/s)",
    "e2e_s": "end-to-end latency (s)",
    "cost_per_m_output_tok": "cost per million output tokens",
    "energy_j_per_output_tok": "energy per output token (J)",
    # monitor alerts (perfmodel.monitor.MonitorReport.alerts)
    "start_index": "first sample",
    "end_index": "last sample",
    "n_alerts": "samples flagged",
    "n_metrics": "metrics that changed",
}
"""Labels of columns that are not in the canonical schema (derived tables), units included;
:func:`axis_title` looks here first."""


def axis_title(name: str) -> str:
    """A human axis title or table header with the unit, e.g. ``"output throughput (tok/s)"``.

    Parameters
    ----------
    name
        A canonical column name, ``lengths``, or a derived column of :data:`COLUMN_LABELS`.

    Returns
    -------
    str
        ``name`` itself when it is neither.
    """
    if name in COLUMN_LABELS:
        return COLUMN_LABELS[name]
    try:
        col = column(name)
    except KeyError:
        return name
    stem = column_words(name)
    return f"{stem} ({col.unit})" if col.unit else stem


_COLOURS = ("#636efa", "#ef553b", "#00cc96", "#ab63fa", "#ffa15a", "#19d3f3", "#ff6692", "#b6e880", "#ff97ff",
            "#fecb52")
"""plotly's default colour sequence, given explicitly so that a configuration's line and its runs' markers match."""


def load_axis_title(runs: pd.DataFrame, x: str) -> str:
    """:func:`axis_title` of ``x``, except that a batch-size axis of runs that all held a concurrency (an HTTP
    sweep's, ``load_kind`` ``concurrency``) is titled so: the form had asked for "Concurrency levels" and the
    chart said "batch size (sequences)"."""
    if x == "batch_size" and "load_kind" in runs.columns and len(runs) \
            and (runs["load_kind"].astype(str) == "concurrency").all():
        return "concurrency (requests in flight)"
    return axis_title(x)


def _as_text(s: pd.Series) -> list[str]:
    out = []
    for v in s:
        if v is None or (not isinstance(v, str) and pd.isna(v)):
            out.append(_MISSING)
        elif isinstance(v, float) and v.is_integer():
            out.append(str(int(v)))
        else:
            out.append(str(v))
    return out


def _empty_figure(message: str, *, x: str, y: str) -> go.Figure:
    fig = go.Figure()
    fig.add_annotation(text=message, showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5,
                       font={"size": 14})
    fig.update_layout(xaxis_title=axis_title(x), yaxis_title=axis_title(y), template="plotly_white",
                      margin={"l": 60, "r": 20, "t": 40, "b": 50})
    return fig


def throughput_figure(runs: pd.DataFrame, *, x: str = "batch_size", y: str = "output_throughput_tok_s",
                      color: str = "hardware", log_x: bool = False, title: str | None = None,
                      hover: Sequence[str] = HOVER_COLUMNS) -> go.Figure:
    """Throughput against load (batch size, concurrency or rate), one colour per group.

    Points of the same configuration (:data:`SERIES_COLUMNS`) are joined by a
    line in order of ``x``; each colour is one trace (series separated by gaps)
    so that thousands of points stay one legend entry per colour. Runs without
    an ``x`` or ``y`` value are left out and counted in the title, not dropped
    silently.

    Parameters
    ----------
    runs
        A canonical runs table (any subset of rows).
    x
        Load or length column, one of :data:`X_AXES`.
    y
        Throughput column, one of :data:`THROUGHPUT_METRICS`.
    color
        Column to colour by, one of :data:`COLOR_OPTIONS` (``lengths`` is derived).
    log_x
        Logarithmic x axis (batch sizes are usually powers of two). The y axis is logarithmic by itself
        where the colours' largest values lie more than :data:`WIDE_SPAN` apart (:func:`wide_span`).
    title
        Figure title; a note on points left out is appended.
    hover
        Columns shown on hover (those absent from ``runs`` are skipped).

    Returns
    -------
    plotly.graph_objects.Figure
        With an annotation instead of traces when nothing can be plotted.

    Raises
    ------
    ValueError
        ``x``, ``y`` or ``color`` is not one of the allowed options (a
        programming error: the app offers only allowed options).
    """
    if x not in X_AXES:
        raise ValueError(f"x must be one of {X_AXES}, got {x!r}")
    if y not in THROUGHPUT_METRICS:
        raise ValueError(f"y must be one of {THROUGHPUT_METRICS}, got {y!r}")
    if color not in COLOR_OPTIONS:
        raise ValueError(f"color must be one of {COLOR_OPTIONS}, got {color!r}")
    if runs.empty:
        return _empty_figure("No runs to plot", x=x, y=y)
    df = with_lengths(runs)
    if x not in df.columns or y not in df.columns:
        return _empty_figure(f"The runs have no {x if x not in df.columns else y} column", x=x, y=y)
    xv = pd.to_numeric(df[x], errors="coerce").astype("float64")
    yv = pd.to_numeric(df[y], errors="coerce").astype("float64")
    ok = np.isfinite(xv) & np.isfinite(yv)
    if log_x:
        ok &= xv > 0
    n_left_out = int((~ok).sum())
    df = df.loc[ok.to_numpy()].copy()
    df["_x"], df["_y"] = xv[ok], yv[ok]
    note = (f"{n_left_out:,} run(s) not shown: no finite {axis_title(x)}{' > 0' if log_x else ''} or no "
            f"{axis_title(y)}") if n_left_out else ""
    if df.empty:
        return _empty_figure(note or "No runs to plot", x=x, y=y)

    df["_color"] = _as_text(df[color]) if color in df.columns else _MISSING
    # Repeats of one configuration share a line through their medians, each run a marker: one line per
    # repeat had drawn same-coloured lines crossing each other, which nothing said were repeats.
    series_cols = [c for c in SERIES_COLUMNS if c in df.columns and c not in (x, "repeat_idx")]
    df["_series"] = pd.Series(
        ["\x1f".join(t) for t in zip(*(_as_text(df[c]) for c in series_cols), strict=True)]
        if series_cols else [""] * len(df), index=df.index)
    repeated = bool(df.duplicated(["_series", "_x"]).any())
    hover_cols = [c for c in hover if c in df.columns]
    hover_text = {c: _as_text(df[c]) for c in hover_cols}
    df["_hover"] = ["<br>".join(f"{c}: {hover_text[c][i]}" for c in hover_cols) for i in range(len(df))]

    fig = go.Figure()
    df = df.sort_values(["_series", "_x"], kind="stable")
    x_title = load_axis_title(df, x)
    head = f"<b>{color}: %{{fullData.name}}</b><br>{x_title}: %{{x}}<br>{axis_title(y)}: %{{y:,.4g}}<br>"
    for i, (colour_value, grp) in enumerate(sorted(df.groupby("_color", sort=False), key=lambda kv: str(kv[0]))):
        # One pass per colour, not one per configuration (LLM-Inference-Bench has 2,400): a gap (None) before
        # each configuration but the first, so that separate configurations are not joined.
        line = grp if not repeated else grp.groupby(["_series", "_x"], sort=True).agg(
            _y=("_y", "median"), _n=("_y", "size"), _hover=("_hover", "first")).reset_index()
        s = line["_series"].to_numpy()
        gaps = np.flatnonzero(s[1:] != s[:-1]) + 1

        def _gapped(col: str, grp: pd.DataFrame = line, gaps: np.ndarray = gaps) -> list:
            return np.insert(grp[col].to_numpy(dtype=object), gaps, None).tolist()

        colour = _COLOURS[i % len(_COLOURS)]
        if not repeated:
            fig.add_trace(go.Scatter(
                x=_gapped("_x"), y=_gapped("_y"), mode="lines+markers", name=str(colour_value),
                text=_gapped("_hover"), connectgaps=False, marker={"size": 7, "color": colour},
                line={"width": 1.5, "color": colour}, hovertemplate=head + "%{text}<extra></extra>"))
            continue
        line["_hover"] = [f"median of {n} run(s)" for n in line["_n"]]
        fig.add_trace(go.Scatter(
            x=_gapped("_x"), y=_gapped("_y"), mode="lines", name=str(colour_value), legendgroup=str(colour_value),
            text=_gapped("_hover"), connectgaps=False, line={"width": 2, "color": colour},
            hovertemplate=head + "%{text}<extra></extra>"))
        fig.add_trace(go.Scatter(
            x=grp["_x"].tolist(), y=grp["_y"].tolist(), mode="markers", name=f"{colour_value} (each run)",
            legendgroup=str(colour_value), showlegend=False, text=grp["_hover"].tolist(), meta="run",
            marker={"size": 6, "color": colour, "opacity": 0.55}, hovertemplate=head + "%{text}<extra></extra>"))
    heading = title or f"{axis_title(y)} vs {x_title}"
    if note:
        heading += f"<br><sup>{note}</sup>"
    if repeated:
        heading += "<br><sup>lines through the median of each point's repeats; dots: each run</sup>"
    fig.update_layout(title={"text": heading}, xaxis_title=x_title, yaxis_title=axis_title(y),
                      legend_title_text=color, template="plotly_white", hovermode="closest", height=520,
                      margin={"l": 60, "r": 20, "t": 70, "b": 50})
    if log_x:
        fig.update_xaxes(type="log", **_log_ticks(df["_x"]))
    if wide_span(df.groupby("_color")["_y"].max()) and bool((df["_y"] > 0).all()):
        # a CPU beside an H200: on a linear axis the CPU's runs were a line along zero
        log_y_axis(fig, axis_title(y))
    elif bool((df["_y"] >= 0).all()) and float(df["_y"].max()) - float(df["_y"].min()) <= 0.05 * float(df["_y"].max()):
        # one point, or points within 5 %: plotly's own range had spanned a hair around them (1,418.4 to 1,418.6)
        fig.update_yaxes(range=[0.0, 1.15 * float(df["_y"].max()) or 1.0])
    return fig


def _log_ticks(x: pd.Series) -> dict[str, object]:
    # Load levels are usually powers of two: label exactly those instead of plotly's 2..9 minor labels.
    lo, hi = float(x.min()), float(x.max())
    if lo <= 0 or not np.isfinite(hi):
        return {}
    powers = [2.0 ** k for k in range(int(np.floor(np.log2(lo))), int(np.ceil(np.log2(hi))) + 1)]
    if len(powers) > 14:
        powers = powers[::2]
    return {"tickvals": powers, "ticktext": [compact_number(p) for p in powers]}


# --------------------------------------------------------------------------- saturation curves

KNEE_META = "knee"
"""``meta`` of the knee-marker traces of :func:`curve_figure` (tests and the browser look for it)."""
FAILED_FIT_META = "failed-fit"
"""``meta`` of the dashed line :func:`curve_figure` draws for a failed fit (instead of a ``fit`` line)."""

_PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
            "#7f7f7f", "#bcbd22")
_N_GRID = 200
_KEY_META = "key"
_CURVE_PLOT_HEIGHT = 520
_LEGEND_ROW_HEIGHT = 22


def _rgba(hex_colour: str, alpha: float) -> str:
    r, g, b = (int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def curve_figure(fits: Sequence[CurveFit], points: pd.DataFrame, labels: Sequence[str], *,
                 x: str = "batch_size", y: str = "output_throughput_tok_s", log_x: bool = True,
                 log_y: bool | None = False, show_band: bool = True, title: str | None = None) -> go.Figure:
    """Measured points with error bars, fitted curves, confidence bands and knees, one colour per curve.

    Parameters
    ----------
    fits
        The fitted curves to draw.
    points
        Measured points: ``configuration`` (matching ``labels``), ``x``, ``y_mean``, ``y_std``,
        ``n_repeats`` (see :func:`repeat_summary`; add the labels as ``configuration``).
    labels
        One label per fit (legend and hover).
    x, y
        Column names, for the axis titles; hovers, marker text and the legend name the values of ``x``
        (:func:`perfmodel.curves.x_words`).
    log_x
        Logarithmic x axis (labelled at powers of two only for a batch or concurrency axis).
    log_y
        Logarithmic throughput axis; None: when the curves' largest measured values lie more than
        :data:`WIDE_SPAN` times apart (:func:`wide_span`), where a linear axis flattens the smaller ones
        to a line along zero (a CPU beside a GPU).
    show_band
        Draw the fit's pointwise confidence band (:meth:`CurveFit.band`) where it exists.
    title
        Figure title.

    Returns
    -------
    plotly.graph_objects.Figure
        Per curve: a ``measured`` marker trace with error bars (mean ± std of the repeats), the
        ``fit`` line, the band (two traces, filled between), a knee trace (``meta`` =
        :data:`KNEE_META`, diamond markers with the knee interval as horizontal error bars) and a
        ``b90/b95`` trace (triangles, only where inside the measured range). Curves and bands are
        clipped at 0 (throughput cannot be negative; a log-linear curve goes below it at small
        batches). A failed fit (``success`` False) gets no band, knee or b90/b95 markers: only a thin
        dashed line (``meta`` = :data:`FAILED_FIT_META`) whose legend entry says the fit failed. The
        legend, below the plot, lists each configuration once (its group toggles all of its traces),
        then a key of the knee and b90/b95 markers (``meta`` = ``"key"``, no data). An annotation
        instead when nothing can be drawn.

    Raises
    ------
    ValueError
        ``fits`` and ``labels`` differ in length (a programming error).
    """
    if len(fits) != len(labels):
        raise ValueError(f"{len(fits)} fits but {len(labels)} labels")
    if not fits:
        return _empty_figure("No configuration selected", x=x, y=y)
    fig = go.Figure()
    y_title = axis_title(y)
    # the words of the x actually drawn: a request-rate curve's hover had said "batch 183.38" of a rate in req/s
    xw, xws, xu = x_words(x)
    x_at = f"{xw} %{{x:.3g}}" + (f" {xu}" if xu else "")
    est = {"x": x}
    open_knee = False  # a knee drawn open (plateau not reached): the legend keys it
    for i, (fit, label) in enumerate(zip(fits, labels, strict=True)):
        colour = _PALETTE[i % len(_PALETTE)]
        pts = points[points["configuration"] == label] if "configuration" in points.columns else points.iloc[:0]
        if len(pts):
            fig.add_trace(go.Scatter(
                x=pts["x"].tolist(), y=pts["y_mean"].tolist(), mode="markers", name=label, legendgroup=label,
                marker={"size": 8, "color": colour}, meta="measured",
                error_y={"type": "data", "array": pts["y_std"].tolist(), "visible": True, "thickness": 1.2},
                customdata=np.column_stack([pts["y_std"], pts["n_repeats"]]).tolist(),
                hovertemplate=f"<b>{label}</b><br>{xw} %{{x}}<br>{y_title}: %{{y:,.4g}} ± "
                              "%{customdata[0]:,.3g} (%{customdata[1]} repeats)<extra></extra>"))
        lo_b, hi_b = fit.batch_range
        if fit.shape == "none" or not (np.isfinite(lo_b) and np.isfinite(hi_b)) or lo_b <= 0:
            continue
        grid = np.geomspace(lo_b, hi_b, _N_GRID) if hi_b > lo_b else np.array([lo_b])
        curve = np.maximum(fit.predict(grid), 0.0)  # NaN stays NaN
        if not fit.success:
            # not a usable curve: no band, knees or b90/b95 as if it were; a dashed line that says so
            fig.add_trace(go.Scatter(
                x=grid.tolist(), y=curve.tolist(), mode="lines", legendgroup=label, showlegend=True,
                name=f"{label}: {fit.shape} fit failed", line={"color": colour, "width": 1.2, "dash": "dash"},
                meta=FAILED_FIT_META, opacity=0.7,
                hovertemplate=f"<b>{label}</b><br>{fit.shape} fit FAILED, R² {fit.r2:.3f}: not a usable curve"
                              f"<br>{x_at}<br>{y_title}: %{{y:,.4g}}<extra></extra>"))
            continue
        if show_band:
            band_lo, band_hi = (np.maximum(v, 0.0) for v in fit.band(grid))
            ok = np.isfinite(band_lo) & np.isfinite(band_hi)
            if ok.any():
                pct = f"{fit.ci_level:.0%}"
                fig.add_trace(go.Scatter(x=grid[ok].tolist(), y=band_lo[ok].tolist(), mode="lines",
                                         line={"width": 0}, legendgroup=label, showlegend=False,
                                         hoverinfo="skip", meta="band"))
                fig.add_trace(go.Scatter(x=grid[ok].tolist(), y=band_hi[ok].tolist(), mode="lines",
                                         line={"width": 0}, fill="tonexty", fillcolor=_rgba(colour, 0.18),
                                         legendgroup=label, name=f"{pct} band", showlegend=False,
                                         hoverinfo="skip", meta="band"))
        fig.add_trace(go.Scatter(
            x=grid.tolist(), y=curve.tolist(), mode="lines", legendgroup=label, showlegend=False,
            name=f"{fit.shape} fit", line={"color": colour, "width": 2}, meta="fit",
            hovertemplate=f"<b>{label}</b><br>{fit.shape} fit, R² {fit.r2:.3f}<br>{x_at}<br>"
                          f"{y_title}: %{{y:,.4g}}<extra></extra>"))
        if fit.knees:
            kx = np.asarray(fit.knees, dtype=float)
            klo = np.array([c[0] for c in fit.knee_ci], dtype=float)
            khi = np.array([c[1] for c in fit.knee_ci], dtype=float)
            # the fit table's words: an interval of no width is "not estimable", not "[29.4, 29.4]"
            ci = [batch_estimate_text(k, a, b, n_batches=fit.n_batches, batch_max=fit.batch_range[1], **est)
                  + ("" if np.isfinite(a) and np.isfinite(b) else " (no interval)")
                  for k, a, b in zip(kx, klo, khi, strict=True)]
            # A curve still short of 95% of its plateau at its largest measured batch bends most somewhere, but
            # that is no saturation: its knee sits near 0.45x the largest batch whatever the hardware (477 of
            # LLM-Inference-Bench's 681 knees), so it is drawn open and says so.
            unsaturated = bool(np.isfinite(fit.b95) and fit.b95 > fit.batch_range[1]) \
                or bool(getattr(fit, "plateau_extrapolated", False))
            open_knee = open_knee or unsaturated
            fig.add_trace(go.Scatter(
                x=kx.tolist(), y=fit.predict(kx).tolist(), mode="markers", legendgroup=label, showlegend=False,
                name=f"knee · {label}", meta=KNEE_META, text=ci,
                marker={"symbol": "diamond", "size": 13, "color": "white" if unsaturated else colour,
                        "line": {"width": 2 if unsaturated else 1.5, "color": colour if unsaturated else "black"}},
                error_x={"type": "data", "symmetric": False, "array": np.nan_to_num(khi - kx).tolist(),
                         "arrayminus": np.nan_to_num(kx - klo).tolist(), "visible": True, "thickness": 1.5},
                hovertemplate=f"<b>{label}</b><br>knee at {xw} %{{text}}<br>"
                              + (f"plateau not reached in the measured {xws}: where the fitted curve bends most "
                                 "over them, not where throughput stops growing<br>" if unsaturated else "")
                              + f"{y_title}: %{{y:,.4g}}<extra></extra>"))
        marks = [(name, v, ci) for name, v, ci in (("b90", fit.b90, fit.b90_ci), ("b95", fit.b95, fit.b95_ci))
                 if np.isfinite(v) and lo_b <= v <= hi_b]
        if marks:
            mx = np.array([m[1] for m in marks])
            fig.add_trace(go.Scatter(
                x=mx.tolist(), y=fit.predict(mx).tolist(), mode="markers", legendgroup=label, showlegend=False,
                name=f"b90/b95 · {label}", meta="fraction", text=[f"{m[0]} " + batch_estimate_text(
                    m[1], *m[2], n_batches=fit.n_batches, batch_max=fit.batch_range[1], **est) for m in marks],
                marker={"symbol": "triangle-up", "size": 10, "color": "white", "line": {"width": 2, "color": colour}},
                hovertemplate=f"<b>{label}</b><br>%{{text}}<br>{y_title}: %{{y:,.4g}}<extra></extra>"))
    # One legend entry per configuration (its group toggles points, curve, band and markers together) and
    # one key of the marker shapes: a knee entry per configuration repeated every label, and a legend of long
    # labels beside the plot left the plot a sliver, so the legend goes below it, across the full width.
    metas = {t.meta for t in fig.data}
    if open_knee:
        metas.add("knee_open")
    for meta, name, marker in ((KNEE_META, "knee (with its interval)",
                                {"symbol": "diamond", "size": 11, "color": "#bbbbbb",
                                 "line": {"width": 1.5, "color": "black"}}),
                               ("knee_open", "knee, plateau not reached",
                                {"symbol": "diamond", "size": 11, "color": "white",
                                 "line": {"width": 2, "color": "#555555"}}),
                               ("fraction", f"{xw} at 90% / 95% of plateau",
                                {"symbol": "triangle-up", "size": 10, "color": "white",
                                 "line": {"width": 2, "color": "#555555"}})):
        if meta in metas:
            fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=name, meta=_KEY_META,
                                     marker=marker, hoverinfo="skip"))
    n_entries = sum(t.showlegend is not False for t in fig.data)
    fig.update_layout(title={"text": title or f"{y_title} vs {axis_title(x)}: fitted saturation curves"},
                      xaxis_title=axis_title(x), yaxis_title=y_title, template="plotly_white",
                      hovermode="closest", height=_CURVE_PLOT_HEIGHT + _LEGEND_ROW_HEIGHT * n_entries,
                      legend={"orientation": "h", "x": 0, "xanchor": "left", "y": -0.12, "yanchor": "top",
                              "title": {"text": "configuration", "side": "top"}},
                      margin={"l": 60, "r": 20, "t": 70, "b": 50})
    if log_x and len(points) and x in ("batch_size", "measured_concurrency"):
        # batches and concurrencies are usually powers of two; request rates and lengths are not
        fig.update_xaxes(type="log", **_log_ticks(points["x"]))
    elif log_x:
        fig.update_xaxes(type="log")
    if log_y is None:
        drawn = points[points["configuration"].isin(labels)] if "configuration" in points.columns else points.iloc[:0]
        log_y = wide_span(drawn.groupby("configuration")["y_mean"].max())
    if log_y:
        log_y_axis(fig, y_title, **_log_y_range(fig))
    return fig


def _log_y_range(fig: go.Figure) -> dict[str, object]:
    """The y range of a log axis from the measured points and the fitted lines, not the bands' lower edges:
    an H200 curve's band dipping towards zero at batch 1 stretched the axis down to 0.5 tok/s, squeezing every
    curve into the top third. The bands' upper edges count (they are drawn above the lines)."""
    lows, highs = [], []
    for t in fig.data:
        y = np.asarray([v for v in (t.y or ()) if v is not None], dtype=float)
        y = y[np.isfinite(y) & (y > 0)]
        if not len(y):
            continue
        if t.meta in ("measured", "fit", FAILED_FIT_META):
            lows.append(y.min())
        highs.append(y.max())
    if not lows:
        return {}
    return {"range": [math.log10(min(lows) / 1.5), math.log10(max(highs) * 1.15)]}


WIDE_SPAN = 20.0
"""Largest values further apart than this ratio share a chart only on a log axis (:func:`wide_span`): on a linear
one the smaller series would use under 5 % of the height (the sample's 2-vCPU runs, 1,013 tok/s at most, lay along
zero under the H200's 21,600 at 30)."""


def log_y_axis(fig: go.Figure, title: str, **layout: object) -> None:
    """Make a throughput chart's y axis logarithmic, its title saying so and its ticks plain numbers (1,000, 2,000,
    5,000 rather than plotly's 1k and bare minor digits); ``layout``: further axis settings (a range)."""
    fig.update_yaxes(type="log", title_text=f"{title} (log scale)", tickformat=",~g", **layout)


def wide_span(values: Sequence[float] | pd.Series, ratio: float = WIDE_SPAN) -> bool:
    """Whether positive values lie more than ``ratio`` times apart, so that a linear axis would flatten the
    smaller ones.

    Parameters
    ----------
    values
        E.g. each curve's largest throughput.
    ratio
        The span that calls for a log axis.

    Returns
    -------
    bool
    """
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    return bool(len(v) > 1 and v.max() > ratio * v.min())


SUSPECT_HOVER = "faster than the roofline bound"
"""Hover text of measured points that beat the physical bound (:func:`perfmodel.physics.flag_suspect`)."""


KV_FIT_META = "kv-fit"
"""``meta`` of the What-if figure's vertical line where the KV cache stops fitting."""


def whatif_figure(table: pd.DataFrame, measured: pd.DataFrame, *, level: float, log_x: bool = True,
                  title: str | None = None) -> go.Figure:
    """A predicted saturation curve with its band, the roofline bound and the measured points nearby.

    Parameters
    ----------
    table
        :attr:`perfmodel.whatif.WhatIfResult.table`: ``batch_size``, ``pred_throughput_tok_s``,
        ``pred_lower``, ``pred_upper``, ``confidence``, ``in_domain``, ``roofline_tok_s``.
    measured
        :attr:`perfmodel.whatif.WhatIfResult.measured`: ``batch_size``, ``output_throughput_tok_s``,
        ``framework``, ``device_count``, ``same_config``, ``suspect``.
    level
        Band level, for the legend.
    log_x
        Logarithmic batch axis.
    title
        Figure title.

    Returns
    -------
    plotly.graph_objects.Figure
        Traces by ``meta``: ``band`` (two, filled between), ``prediction`` (line; out-of-domain
        batches as open circles), ``roofline`` (dashed, only where the catalog gives a bound),
        ``measured`` (same configuration), ``measured-other`` (same hardware, model and lengths,
        other framework or devices) and ``suspect`` ('x' markers, hover
        :data:`SUSPECT_HOVER`); ``kv-fit`` (:data:`KV_FIT_META`: a dotted vertical line at the
        table's ``kv_fit_batch``, where it lies inside the batch range).
    """
    y_title = axis_title("output_throughput_tok_s")
    if len(table) == 0:
        return _empty_figure("Nothing to predict", x="batch_size", y="output_throughput_tok_s")
    fig = go.Figure()
    b = table["batch_size"].astype(float).tolist()
    colour = _PALETTE[0]
    lo, hi = table["pred_lower"].astype(float), table["pred_upper"].astype(float)
    if lo.notna().any():
        fig.add_trace(go.Scatter(x=b, y=hi.tolist(), mode="lines", line={"width": 0}, showlegend=False,
                                 hoverinfo="skip", meta="band"))
        fig.add_trace(go.Scatter(x=b, y=lo.tolist(), mode="lines", line={"width": 0}, fill="tonexty",
                                 fillcolor=_rgba(colour, 0.2), name=f"{level:.0%} band", meta="band",
                                 hoverinfo="skip"))
    inside = table["in_domain"].astype(bool).to_numpy()
    custom = np.column_stack([lo.to_numpy(), hi.to_numpy(), table["confidence"].astype(float).to_numpy(),
                              np.where(inside, "in domain", "OUT OF DOMAIN")]).tolist()
    fig.add_trace(go.Scatter(
        x=b, y=table["pred_throughput_tok_s"].astype(float).tolist(), mode="lines+markers", name="predicted",
        meta="prediction", line={"color": colour, "width": 2.5},
        marker={"size": 8, "color": colour, "symbol": ["circle" if v else "circle-open" for v in inside]},
        customdata=custom,
        hovertemplate=f"batch %{{x}}<br>predicted {y_title}: %{{y:,.4g}}<br>{level:.0%} band "
                      "%{customdata[0]:,.4g} - %{customdata[1]:,.4g}<br>confidence %{customdata[2]:.2f} "
                      "(%{customdata[3]})<extra></extra>"))
    roof = table["roofline_tok_s"].astype(float)
    if roof.notna().any():
        fig.add_trace(go.Scatter(x=b, y=roof.tolist(), mode="lines", name="roofline bound", meta="roofline",
                                 line={"color": "#555555", "dash": "dash"},
                                 hovertemplate="batch %{x}<br>physical bound: %{y:,.4g} tok/s<extra></extra>"))
    if len(measured):
        sus = measured["suspect"].astype(bool)
        same = measured["same_config"].astype(bool)
        for meta, mask, name, marker in (
                ("measured", same & ~sus, "measured (same configuration)",
                 {"size": 9, "color": "#d62728"}),
                ("measured-other", ~same & ~sus, "measured (other framework/devices)",
                 {"size": 7, "color": "#7f7f7f", "symbol": "diamond"}),
                ("suspect", sus, f"suspect: {SUSPECT_HOVER}",
                 {"size": 10, "color": "#000000", "symbol": "x"})):
            pts = measured.loc[mask.to_numpy()]
            if not len(pts):
                continue
            extra = "<br>" + SUSPECT_HOVER if meta == "suspect" else ""
            fig.add_trace(go.Scatter(
                x=pts["batch_size"].astype(float).tolist(),
                y=pts["output_throughput_tok_s"].astype(float).tolist(), mode="markers", name=name, meta=meta,
                marker=marker, customdata=np.column_stack([_as_text(pts["framework"]),
                                                           _as_text(pts["device_count"])]).tolist(),
                hovertemplate=f"batch %{{x}}<br>measured {y_title}: %{{y:,.4g}}<br>%{{customdata[0]}}, "
                              f"%{{customdata[1]}} device(s){extra}<extra></extra>"))
    cap = float(table["kv_fit_batch"].iloc[0]) if "kv_fit_batch" in table.columns else math.nan
    if math.isfinite(cap) and min(b) <= cap <= max(b):
        ys = [v for v in (*hi.tolist(), *table["pred_throughput_tok_s"].astype(float).tolist())
              if math.isfinite(v)]
        if ys:
            fig.add_trace(go.Scatter(
                x=[cap, cap], y=[0.0, max(ys)], mode="lines", meta=KV_FIT_META,
                name=f"KV cache full beyond batch {cap:,.0f}", line={"color": "#9467bd", "dash": "dot", "width": 1.5},
                hovertemplate=f"batch {cap:,.0f}: the KV cache of this many sequences at full length fills "
                              "the memory the weights leave<extra></extra>"))
    fig.update_layout(title=title, xaxis_title=axis_title("batch_size"), yaxis_title=y_title,
                      legend={"orientation": "h", "y": -0.2}, margin={"t": 40 if title else 10})
    if log_x:
        # Ticks across every point drawn: measured runs outside the asked range widen the axis, and with
        # ticks from the table alone a 512-1024 curve beside runs at 1-16 had labels at 512 and 1,024 only.
        xs = pd.concat([table["batch_size"], measured["batch_size"] if len(measured) else None]).astype(float)
        fig.update_xaxes(type="log", **_log_ticks(xs[xs > 0]))
    # A band far wider than everything else (far from the data) would flatten the curve onto zero:
    # the axis stops at twice the highest answer, bound or measurement, and says where the band goes.
    seen = [v for v in (*table["pred_throughput_tok_s"].astype(float).tolist(), *roof.tolist(),
                        *(measured["output_throughput_tok_s"].astype(float).tolist() if len(measured) else []))
            if math.isfinite(v)]
    top = 2.0 * max(seen) if seen else math.nan
    hi_max = float(np.nanmax(hi.to_numpy())) if hi.notna().any() else math.nan
    if math.isfinite(top) and math.isfinite(hi_max) and hi_max > top:
        fig.update_yaxes(range=[0.0, top])
        # inside the plot's top edge: above it (yanchor bottom) the figure's margin cut the words in half
        fig.add_annotation(x=1, y=1, xref="paper", yref="paper", xanchor="right", yanchor="top",
                           showarrow=False, text=f"band cut off: it reaches {compact_number(hi_max)}",
                           bgcolor="rgba(255,255,255,0.8)")
    return fig


def add_suspect_markers(fig: go.Figure, suspects: pd.DataFrame, *, x: str = "batch_size",
                        y: str = "output_throughput_tok_s") -> go.Figure:
    """Overlay measured points faster than the physical bound as black 'x' markers.

    Parameters
    ----------
    fig
        The figure to draw on (changed in place).
    suspects
        The suspect runs (columns ``x`` and ``y``; ``configuration`` shown on hover when present).
    x, y
        Columns to plot.

    Returns
    -------
    plotly.graph_objects.Figure
        ``fig``, with one trace ``meta="suspect"`` when ``suspects`` has rows.
    """
    if len(suspects) == 0 or x not in suspects.columns or y not in suspects.columns:
        return fig
    label = _as_text(suspects["configuration"]) if "configuration" in suspects.columns \
        else [""] * len(suspects)
    fig.add_trace(go.Scatter(
        x=pd.to_numeric(suspects[x], errors="coerce").tolist(), y=pd.to_numeric(suspects[y], errors="coerce").tolist(),
        mode="markers", name=f"suspect: {SUSPECT_HOVER}", meta="suspect",
        marker={"symbol": "x", "size": 11, "color": "#000000", "line": {"width": 1}}, customdata=label,
        hovertemplate=f"<b>%{{customdata}}</b><br>batch %{{x}}<br>{axis_title(y)}: %{{y:,.4g}}<br>"
                      f"{SUSPECT_HOVER}<extra></extra>"))
    return fig
