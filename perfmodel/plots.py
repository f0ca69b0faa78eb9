"""Plotly figures built from runs tables and result objects.

This module only formats: it never computes a fit or touches Streamlit, so a
notebook, the report renderer and the app draw the same figures.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .schema import column

if TYPE_CHECKING:
    from .curves import CurveFit

__all__ = [
    "LOAD_AXES",
    "THROUGHPUT_METRICS",
    "COLOR_OPTIONS",
    "SERIES_COLUMNS",
    "HOVER_COLUMNS",
    "lengths_label",
    "with_lengths",
    "axis_title",
    "throughput_figure",
    "CURVE_GROUP_COLUMNS",
    "KNEE_META",
    "config_label",
    "config_labels",
    "curve_group_columns",
    "default_curve_by",
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

THROUGHPUT_METRICS: tuple[str, ...] = ("output_throughput_tok_s", "total_throughput_tok_s",
                                       "request_throughput_rps")
"""Columns that can go on the y axis of a throughput curve."""

COLOR_OPTIONS: tuple[str, ...] = ("hardware", "model", "framework", "lengths", "load_kind", "device_count",
                                  "tp_size", "weight_dtype", "source_file")
"""Columns a throughput curve can be coloured by (``lengths`` is derived: ``input/output``)."""

SERIES_COLUMNS: tuple[str, ...] = ("hardware", "model", "framework", "framework_version", "device_count",
                                   "tp_size", "pp_size", "weight_dtype", "kv_cache_dtype", "quantization",
                                   "input_len_tok", "output_len_tok", "load_kind", "repeat_idx",
                                   "source_format", "source_file")
"""Columns that identify one curve: points agreeing on all of them are joined by a line."""

HOVER_COLUMNS: tuple[str, ...] = ("hardware", "model", "framework", "device_count", "tp_size", "pp_size",
                                  "weight_dtype", "lengths", "load_kind", "batch_size", "request_rate_rps",
                                  "source_file", "source_row")
"""Configuration shown when hovering over a point."""

_MISSING = "(missing)"


def _fmt_len(v: object) -> str:
    if v is None or pd.isna(v):
        return "?"
    f = float(v)  # type: ignore[arg-type]
    return str(int(f)) if f.is_integer() else f"{f:g}"


def lengths_label(runs: pd.DataFrame) -> pd.Series:
    """Input/output lengths of each run as one label, e.g. ``"128/2048"``.

    Parameters
    ----------
    runs
        A runs table; missing length columns give ``"?"``.

    Returns
    -------
    pandas.Series
        String labels aligned with ``runs.index``.
    """
    if runs.empty:
        return pd.Series([], index=runs.index, dtype="string")
    ii = runs["input_len_tok"] if "input_len_tok" in runs.columns else pd.Series(np.nan, index=runs.index)
    oo = runs["output_len_tok"] if "output_len_tok" in runs.columns else pd.Series(np.nan, index=runs.index)
    labels = [f"{_fmt_len(a)}/{_fmt_len(b)}" for a, b in zip(ii, oo, strict=True)]
    return pd.Series(labels, index=runs.index, dtype="string")


def with_lengths(runs: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``runs`` with a ``lengths`` column (see :func:`lengths_label`).

    Parameters
    ----------
    runs
        A runs table.

    Returns
    -------
    pandas.DataFrame
        The same rows with ``lengths`` added (or replaced).
    """
    out = runs.copy()
    out["lengths"] = lengths_label(runs)
    return out


def axis_title(name: str) -> str:
    """A human axis title with the unit, e.g. ``"output throughput (tok/s)"``.

    Parameters
    ----------
    name
        A canonical column name (or ``lengths``).

    Returns
    -------
    str
    """
    if name == "lengths":
        return "input/output length (tokens)"
    try:
        col = column(name)
    except KeyError:
        return name
    stem = name
    for suffix in ("_tok_s", "_rps", "_tok", "_s", "_w", "_j"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    stem = stem.replace("_", " ")
    return f"{stem} ({col.unit})" if col.unit else stem


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
        Load column, one of :data:`LOAD_AXES`.
    y
        Throughput column, one of :data:`THROUGHPUT_METRICS`.
    color
        Column to colour by, one of :data:`COLOR_OPTIONS` (``lengths`` is derived).
    log_x
        Logarithmic x axis (batch sizes are usually powers of two).
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
    if x not in LOAD_AXES:
        raise ValueError(f"x must be one of {LOAD_AXES}, got {x!r}")
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
    note = f"{n_left_out} run(s) without {x}" + (" > 0" if log_x else "") + f" or {y} not shown" \
        if n_left_out else ""
    if df.empty:
        return _empty_figure(note or "No runs to plot", x=x, y=y)

    df["_color"] = _as_text(df[color]) if color in df.columns else _MISSING
    series_cols = [c for c in SERIES_COLUMNS if c in df.columns and c != x]
    df["_series"] = pd.Series(
        ["\x1f".join(t) for t in zip(*(_as_text(df[c]) for c in series_cols), strict=True)]
        if series_cols else [""] * len(df), index=df.index)
    hover_cols = [c for c in hover if c in df.columns]
    hover_text = {c: _as_text(df[c]) for c in hover_cols}
    df["_hover"] = ["<br>".join(f"{c}: {hover_text[c][i]}" for c in hover_cols) for i in range(len(df))]

    fig = go.Figure()
    for colour_value, grp in sorted(df.groupby("_color", sort=False), key=lambda kv: str(kv[0])):
        xs: list[float | None] = []
        ys: list[float | None] = []
        texts: list[str | None] = []
        for _, ser in grp.sort_values(["_series", "_x"]).groupby("_series", sort=False):
            if xs:  # a gap so that separate configurations are not joined
                xs.append(None)
                ys.append(None)
                texts.append(None)
            xs += ser["_x"].tolist()
            ys += ser["_y"].tolist()
            texts += ser["_hover"].tolist()
        fig.add_trace(go.Scatter(
            x=xs, y=ys, mode="lines+markers", name=str(colour_value), text=texts,
            connectgaps=False, marker={"size": 7}, line={"width": 1.5},
            hovertemplate=f"<b>{color}: {colour_value}</b><br>{axis_title(x)}: %{{x}}<br>"
                          f"{axis_title(y)}: %{{y:,.4g}}<br>%{{text}}<extra></extra>"))
    heading = title or f"{axis_title(y)} vs {axis_title(x)}"
    if note:
        heading += f"<br><sup>{note}</sup>"
    fig.update_layout(title={"text": heading}, xaxis_title=axis_title(x), yaxis_title=axis_title(y),
                      legend_title_text=color, template="plotly_white", hovermode="closest", height=520,
                      margin={"l": 60, "r": 20, "t": 70, "b": 50})
    if log_x:
        fig.update_xaxes(type="log", **_log_ticks(df["_x"]))
    return fig


def _log_ticks(x: pd.Series) -> dict[str, object]:
    # Load levels are usually powers of two: label exactly those instead of plotly's 2..9 minor labels.
    lo, hi = float(x.min()), float(x.max())
    if lo <= 0 or not np.isfinite(hi):
        return {}
    powers = [2.0 ** k for k in range(int(np.floor(np.log2(lo))), int(np.ceil(np.log2(hi))) + 1)]
    if len(powers) > 14:
        powers = powers[::2]
    return {"tickvals": powers, "ticktext": [f"{p:g}" for p in powers]}


# --------------------------------------------------------------------------- saturation curves

CURVE_GROUP_COLUMNS: tuple[str, ...] = ("hardware", "device_count", "framework", "model", "input_len_tok",
                                        "output_len_tok", "weight_dtype", "kv_cache_dtype", "tp_size", "pp_size",
                                        "fw_num_threads")
"""Columns a saturation curve can be grouped by (the configuration keys offered by the app)."""

KNEE_META = "knee"
"""``meta`` of the knee-marker traces of :func:`curve_figure` (tests and the browser look for it)."""

_PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
            "#7f7f7f", "#bcbd22")
_N_GRID = 200


def _is_missing(v: object) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def _num(v: object) -> str:
    f = float(v)  # type: ignore[arg-type]
    return str(int(f)) if f.is_integer() else f"{f:g}"


def config_label(key: Mapping[str, Any]) -> str:
    """A short readable label of one configuration, e.g. ``"a100 x4 · vllm · llama-3-8b · 128/2048"``.

    Parameters
    ----------
    key
        Grouping column -> value (missing values are left out).

    Returns
    -------
    str
        ``"(all runs)"`` when no value is known.
    """
    parts: list[str] = []
    i, o = key.get("input_len_tok"), key.get("output_len_tok")
    if "input_len_tok" in key and "output_len_tok" in key:
        lengths = f"{'?' if _is_missing(i) else _num(i)}/{'?' if _is_missing(o) else _num(o)}"
    elif "input_len_tok" in key:
        lengths = "" if _is_missing(i) else f"in {_num(i)}"
    elif "output_len_tok" in key:
        lengths = "" if _is_missing(o) else f"out {_num(o)}"
    else:
        lengths = ""
    for col, v in key.items():
        if col in ("input_len_tok", "output_len_tok"):
            if lengths:
                parts.append(lengths)
                lengths = ""
            continue
        if _is_missing(v):
            continue
        if col == "device_count":
            if parts and "hardware" in key:
                parts[-1] += f" x{_num(v)}"
            else:
                parts.append(f"x{_num(v)}")
        elif col in ("tp_size", "pp_size"):
            parts.append(f"{col[:2]}{_num(v)}")
        elif col in ("hardware", "framework", "model"):
            parts.append(str(v))
        elif col in ("weight_dtype", "kv_cache_dtype"):
            parts.append(f"{'w' if col == 'weight_dtype' else 'kv'} {v}")
        elif col == "fw_num_threads":
            parts.append(f"{_num(v)} thread{'' if v == 1 else 's'}")
        else:
            parts.append(f"{col}={_num(v) if isinstance(v, int | float) else v}")
    return " · ".join(parts) or "(all runs)"


def config_labels(table: pd.DataFrame, by: Sequence[str]) -> list[str]:
    """One unique label per row of a fits table, naming only the columns that differ between rows.

    A ``#2`` suffix is added where two labels would collide.

    Parameters
    ----------
    table
        Rows with the ``by`` columns (the output of :func:`perfmodel.curves.fit_curves`).
    by
        The grouping columns, in order.

    Returns
    -------
    list of str
    """
    keys = list(by)
    if len(table) > 1:
        # Columns with one value in every row say nothing about which curve is which.
        varying = [c for c in keys if table[c].nunique(dropna=False) > 1]
        if "input_len_tok" in varying or "output_len_tok" in varying:
            varying += [c for c in ("input_len_tok", "output_len_tok") if c in keys and c not in varying]
        keys = [c for c in keys if c in varying]
    seen: dict[str, int] = {}
    out = []
    for rec in table[list(by)].to_dict("records"):
        label = config_label({c: rec[c] for c in keys})
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label} #{seen[label]}")
    return out


def curve_group_columns(runs: pd.DataFrame) -> list[str]:
    """The :data:`CURVE_GROUP_COLUMNS` that hold at least one value in ``runs``.

    Parameters
    ----------
    runs
        A runs table.

    Returns
    -------
    list of str
    """
    return [c for c in CURVE_GROUP_COLUMNS if c in runs.columns and runs[c].notna().any()]


def default_curve_by(runs: pd.DataFrame) -> list[str]:
    """The default grouping: what :func:`perfmodel.curves.fit_curves` uses by default, present in ``runs``.

    Parameters
    ----------
    runs
        A runs table.

    Returns
    -------
    list of str
        :data:`perfmodel.curves.DEFAULT_BY` then the :data:`perfmodel.curves.OPTIONAL_BY` columns
        with values and the :data:`perfmodel.curves.VARYING_BY` columns with more than one value,
        restricted to the columns of ``runs`` (and in the order of :data:`CURVE_GROUP_COLUMNS`).
    """
    from .curves import DEFAULT_BY, OPTIONAL_BY, VARYING_BY

    with_values = set(curve_group_columns(runs))
    varying = {c for c in VARYING_BY if c in runs.columns and runs[c].nunique() > 1}
    return [c for c in CURVE_GROUP_COLUMNS
            if (c in DEFAULT_BY and c in runs.columns) or (c in OPTIONAL_BY and c in with_values) or c in varying]


def repeat_summary(runs: pd.DataFrame, by: Sequence[str], *, x: str = "batch_size",
                   y: str = "output_throughput_tok_s") -> pd.DataFrame:
    """Measured points per configuration and batch: mean, standard deviation and count of the repeats.

    Parameters
    ----------
    runs
        A runs table with the ``by``, ``x`` and ``y`` columns.
    by
        Grouping columns (a configuration).
    x, y
        Batch and throughput columns. Rows with a missing or non-positive value are left out,
        as the fit leaves them out.

    Returns
    -------
    pandas.DataFrame
        The ``by`` columns, then ``x`` (batch), ``y_mean``, ``y_std`` (0 for a single repeat),
        ``n_repeats``; sorted by the keys and the batch.
    """
    cols = list(by)
    xv = pd.to_numeric(runs[x], errors="coerce").astype("float64")
    yv = pd.to_numeric(runs[y], errors="coerce").astype("float64")
    ok = (np.isfinite(xv) & (xv > 0) & np.isfinite(yv) & (yv > 0)).to_numpy()
    df = runs.loc[ok, cols].copy()
    df["x"], df["_y"] = xv[ok], yv[ok]
    if df.empty:
        return pd.DataFrame(columns=[*cols, "x", "y_mean", "y_std", "n_repeats"])
    g = df.groupby([*cols, "x"], dropna=False, sort=True)["_y"]
    out = g.agg(y_mean="mean", y_std="std", n_repeats="count").reset_index()
    out["y_std"] = out["y_std"].fillna(0.0)
    return out


def _ci_text(v: float, lo: float, hi: float, fmt: str = "{:,.4g}") -> str:
    if not np.isfinite(v):
        return ""
    text = fmt.format(v)
    if np.isfinite(lo) and np.isfinite(hi):
        text += f" [{fmt.format(lo)}, {fmt.format(hi)}]"
    return text


def fits_summary(table: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """The readable fits table shown by the CLI and the Curves page.

    Parameters
    ----------
    table
        The output of :func:`perfmodel.curves.fit_curves` (its ``by`` columns included).
    by
        The grouping columns.

    Returns
    -------
    pandas.DataFrame
        One row per configuration: ``configuration`` (a :func:`config_labels` label), ``shape``,
        ``plateau_tok_s`` (exponential plateau ``c``, empty for other shapes) and ``plateau_ci``,
        ``knees`` (``"batch [low, high]"``, ``;``-separated), ``b90``, ``b95`` (with intervals),
        ``r2``, ``n_points``, ``n_batches``, ``success``, ``poor_fit``, ``message``.
    """
    labels = config_labels(table, by)
    rows = []
    for label, rec in zip(labels, table.to_dict("records"), strict=True):
        knees = [_ci_text(rec[f"knee_{j}"], rec[f"knee_{j}_lo"], rec[f"knee_{j}_hi"], "{:.3g}")
                 for j in (1, 2) if f"knee_{j}" in rec and np.isfinite(rec[f"knee_{j}"])]
        rows.append({
            "configuration": label, "shape": rec["shape"], "plateau_tok_s": rec["c"],
            "plateau_ci": _ci_text(rec["c"], rec["c_lo"], rec["c_hi"]).partition(" ")[2],
            "knees": "; ".join(knees),
            "b90": _ci_text(rec["b90"], rec["b90_lo"], rec["b90_hi"], "{:.3g}"),
            "b95": _ci_text(rec["b95"], rec["b95_lo"], rec["b95_hi"], "{:.3g}"),
            "r2": rec["r2"], "n_points": int(rec["n_points"]), "n_batches": int(rec["n_batches"]),
            "success": bool(rec["success"]), "poor_fit": bool(rec["poor_fit"]), "message": rec["message"]})
    cols = ["configuration", "shape", "plateau_tok_s", "plateau_ci", "knees", "b90", "b95", "r2", "n_points",
            "n_batches", "success", "poor_fit", "message"]
    return pd.DataFrame(rows, columns=cols)


def poor_fits(summary: pd.DataFrame, r2_min: float) -> pd.DataFrame:
    """The curves to review: failed fits, and fits explaining less than ``r2_min`` of the variance.

    Parameters
    ----------
    summary
        The output of :func:`fits_summary`.
    r2_min
        R^2 threshold.

    Returns
    -------
    pandas.DataFrame
        ``configuration``, ``r2``, ``n_batches``, ``reason`` (``"failed"`` or ``"R² < ..."``) and
        ``message``, failed fits first.
    """
    r2 = pd.to_numeric(summary["r2"], errors="coerce")
    failed = ~summary["success"].astype(bool)
    low = ~failed & ~(r2 >= r2_min)
    out = summary.loc[failed | low, ["configuration", "r2", "n_batches", "message"]].copy()
    out.insert(1, "reason", np.where(failed[failed | low], "failed", f"R² < {r2_min:g}"))
    return out.sort_values("reason", key=lambda s: s != "failed", kind="stable").reset_index(drop=True)


def _rgba(hex_colour: str, alpha: float) -> str:
    r, g, b = (int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def curve_figure(fits: Sequence[CurveFit], points: pd.DataFrame, labels: Sequence[str], *,
                 x: str = "batch_size", y: str = "output_throughput_tok_s", log_x: bool = True,
                 show_band: bool = True, title: str | None = None) -> go.Figure:
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
        Column names, for the axis titles.
    log_x
        Logarithmic batch axis.
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
        ``b90/b95`` trace (triangles, only where inside the measured range). An annotation
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
    for i, (fit, label) in enumerate(zip(fits, labels, strict=True)):
        colour = _PALETTE[i % len(_PALETTE)]
        pts = points[points["configuration"] == label] if "configuration" in points.columns else points.iloc[:0]
        if len(pts):
            fig.add_trace(go.Scatter(
                x=pts["x"].tolist(), y=pts["y_mean"].tolist(), mode="markers", name=label, legendgroup=label,
                marker={"size": 8, "color": colour}, meta="measured",
                error_y={"type": "data", "array": pts["y_std"].tolist(), "visible": True, "thickness": 1.2},
                customdata=np.column_stack([pts["y_std"], pts["n_repeats"]]).tolist(),
                hovertemplate=f"<b>{label}</b><br>batch %{{x}}<br>{y_title}: %{{y:,.4g}} ± "
                              "%{customdata[0]:,.3g} (%{customdata[1]} repeats)<extra></extra>"))
        lo_b, hi_b = fit.batch_range
        if fit.shape == "none" or not (np.isfinite(lo_b) and np.isfinite(hi_b)) or lo_b <= 0:
            continue
        grid = np.geomspace(lo_b, hi_b, _N_GRID) if hi_b > lo_b else np.array([lo_b])
        if show_band:
            band_lo, band_hi = fit.band(grid)
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
            x=grid.tolist(), y=fit.predict(grid).tolist(), mode="lines", legendgroup=label, showlegend=False,
            name=f"{fit.shape} fit", line={"color": colour, "width": 2}, meta="fit",
            hovertemplate=f"<b>{label}</b><br>{fit.shape} fit, R² {fit.r2:.3f}<br>batch %{{x:.3g}}<br>"
                          f"{y_title}: %{{y:,.4g}}<extra></extra>"))
        if fit.knees:
            kx = np.asarray(fit.knees, dtype=float)
            klo = np.array([c[0] for c in fit.knee_ci], dtype=float)
            khi = np.array([c[1] for c in fit.knee_ci], dtype=float)
            ci = [f"[{a:.3g}, {b:.3g}]" if np.isfinite(a) and np.isfinite(b) else "(no interval)"
                  for a, b in zip(klo, khi, strict=True)]
            fig.add_trace(go.Scatter(
                x=kx.tolist(), y=fit.predict(kx).tolist(), mode="markers", legendgroup=label,
                name=f"knee · {label}", meta=KNEE_META, text=ci,
                marker={"symbol": "diamond", "size": 13, "color": colour, "line": {"width": 1.5, "color": "black"}},
                error_x={"type": "data", "symmetric": False, "array": np.nan_to_num(khi - kx).tolist(),
                         "arrayminus": np.nan_to_num(kx - klo).tolist(), "visible": True, "thickness": 1.5},
                hovertemplate=f"<b>{label}</b><br>knee at batch %{{x:.3g}} %{{text}}<br>"
                              f"{y_title}: %{{y:,.4g}}<extra></extra>"))
        marks = [(name, v, ci) for name, v, ci in (("b90", fit.b90, fit.b90_ci), ("b95", fit.b95, fit.b95_ci))
                 if np.isfinite(v) and lo_b <= v <= hi_b]
        if marks:
            mx = np.array([m[1] for m in marks])
            fig.add_trace(go.Scatter(
                x=mx.tolist(), y=fit.predict(mx).tolist(), mode="markers", legendgroup=label, showlegend=False,
                name=f"b90/b95 · {label}", meta="fraction", text=[f"{m[0]} {_ci_text(m[1], *m[2], '{:.3g}')}"
                                                                   for m in marks],
                marker={"symbol": "triangle-up", "size": 10, "color": "white", "line": {"width": 2, "color": colour}},
                hovertemplate=f"<b>{label}</b><br>%{{text}}<br>{y_title}: %{{y:,.4g}}<extra></extra>"))
    fig.update_layout(title={"text": title or f"{y_title} vs {axis_title(x)}: fitted saturation curves"},
                      xaxis_title=axis_title(x), yaxis_title=y_title, template="plotly_white",
                      hovermode="closest", height=560, legend_title_text="configuration",
                      margin={"l": 60, "r": 20, "t": 70, "b": 50})
    if log_x and len(points):
        fig.update_xaxes(type="log", **_log_ticks(points["x"]))
    elif log_x:
        fig.update_xaxes(type="log")
    return fig


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
        fig.update_xaxes(type="log")
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
