"""Plotly figures built from runs tables and result objects.

This module only formats: it never computes a fit or touches Streamlit, so a
notebook, the report renderer and the app draw the same figures.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .schema import column

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
