"""The Compare page's state keys, URL state and cached comparison.

The page compares two sides, each a dataset optionally cut to the rows whose
``by`` column takes some values (two frameworks of one dataset, two sweeps,
two models). Everything the page shows is in its URL (``?a=ID&by_a=model&in_a=x``...),
so a copied link or a saved analysis reopens it.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from ..curves import VARYING_BY
from ..errors import PerfmodelError
from ..pareto import (
    COMPARE_KEYS,
    COMPARE_METRICS,
    LOAD_KEYS,
    Comparison,
    compare,
    comparison_figure,
    load_column,
    noise_verdicts,
    select_runs,
)
from ..plots import axis_title
from . import cached
from .tables import column_words

__all__ = ["P", "KEYS", "QP", "SUBSET_COLUMNS", "NO_SUBSET", "restore_from_link", "write_link", "options_json",
           "comparison", "table_with_verdicts", "per_point_view", "metric_choices", "key_choices", "default_split", "same_rows", "contained", "values_label", "column_label", "value_label",
           "figure"]

P = "compare."
KEYS = {name: P + name for name in ("a", "b", "by_a", "in_a", "by_b", "in_b", "metric", "ignore", "config",
                                    "log_x")}
#: Widget -> URL parameter (``in_*``, ``ignore`` and ``config`` repeat).
QP = {"a": "a", "b": "b", "by_a": "by_a", "in_a": "in_a", "by_b": "by_b", "in_b": "in_b", "metric": "metric",
      "ignore": "ignore", "config": "config"}
_LISTS = ("in_a", "in_b", "ignore", "config")
SUBSET_COLUMNS = ("framework", "framework_version", "model", "hardware", "load_kind", "weight_dtype",
                  "kv_cache_dtype", "quantization", "device_count", *VARYING_BY)
"""Columns a side can be cut by; a measurement setting (torch threads, llama.cpp's n_batch) too, so that one
sweep at two settings (the sample's threads 1 vs 2) compares with itself."""
NO_SUBSET = "(all rows)"
_CHECKED = P + "link_checked"


def restore_from_link(ids: Sequence[str]) -> list[str]:
    """On the session's first run of the page, put the URL's state into the widgets' state.

    Parameters
    ----------
    ids
        The store's dataset ids (a side naming another one is reported and left out).

    Returns
    -------
    list of str
        Messages about what the link asked for and could not be restored.
    """
    if st.session_state.get(_CHECKED):
        return []
    st.session_state[_CHECKED] = True
    problems = []
    for name, qp in QP.items():
        values = [str(v) for v in st.query_params.get_all(qp)]
        if not values:
            continue
        if name in ("a", "b") and values[0] not in ids:
            problems.append(f"The link's dataset {values[0]!r} (side {name.upper()}) is not in this store.")
            continue
        st.session_state[KEYS[name]] = values if name in _LISTS else values[0]
    return problems


def write_link(state: Mapping[str, Any]) -> None:
    """Put the page's state in the URL (only when it changed), keeping ``?analysis=ID``.

    Parameters
    ----------
    state
        Widget name (a key of :data:`QP`) -> value (a list for the repeated ones).
    """
    wanted: dict[str, list[str]] = {}
    for name, qp in QP.items():
        v = state.get(name)
        # "(all rows)" is written too: a link without by_a/by_b reopens on the page's default split
        vals = [str(x) for x in v] if isinstance(v, list | tuple) else ([] if v in (None, "") else [str(v)])
        if vals:
            wanted[qp] = vals
    current = {k: [str(v) for v in st.query_params.get_all(k)] for k in st.query_params.keys() if k in QP.values()}
    if current == wanted:
        return
    for k in set(current) - set(wanted):
        del st.query_params[k]
    for k, vals in wanted.items():
        st.query_params[k] = vals if len(vals) > 1 else vals[0]


def options_json(by_a: str | None, in_a: Sequence[str], by_b: str | None, in_b: Sequence[str], metric: str,
                 ignore: Sequence[str], label_a: str, label_b: str) -> str:
    """The comparison's options as a JSON string (the cache key of :func:`comparison`).

    Returns
    -------
    str
    """
    where_a = {by_a: list(in_a)} if by_a and by_a != NO_SUBSET and in_a else {}
    where_b = {by_b: list(in_b)} if by_b and by_b != NO_SUBSET and in_b else {}
    return json.dumps({"where_a": where_a, "where_b": where_b, "metric": metric, "ignore": sorted(ignore),
                       "label_a": label_a, "label_b": label_b}, sort_keys=True)


@st.cache_data(show_spinner=False, max_entries=32)
def comparison(home: str, dataset_a: str, dataset_b: str, stamp: int, options: str) -> Comparison:
    """The two sides compared point by point (cached on the ids, the store stamp and the options' JSON).

    Raises
    ------
    PerfmodelError
        A subset matches no row, or a side lacks the metric.
    """
    o = json.loads(options)
    a = select_runs(cached.dataset_runs(home, dataset_a, stamp), o["where_a"], label=o["label_a"])
    b = select_runs(cached.dataset_runs(home, dataset_b, stamp), o["where_b"], label=o["label_b"])
    return compare(a, b, metric=o["metric"], label_a=o["label_a"], label_b=o["label_b"], ignore=o["ignore"])


def table_with_verdicts(comp: Comparison) -> pd.DataFrame:
    """The comparison table with a ``verdict`` column, for display and download.

    Parameters
    ----------
    comp
        A comparison.

    Returns
    -------
    pandas.DataFrame
    """
    return comp.table.assign(verdict=noise_verdicts(comp.table))


_RESULTS_FIRST = ("mean_a", "mean_b", "diff_pct", "verdict", "diff", "noise_se", "p_value", "n_a", "n_b", "std_a", "std_b")


def per_point_view(table: pd.DataFrame) -> pd.DataFrame:
    """The per-point table in reading order: the key columns that tell the points apart, then A, B, the
    difference and the verdict, then the rest; key columns equal on every point go last.

    In the comparison's own order every key came first, so on a 1,500-pixel-wide window the nine key columns
    (hardware, devices, lengths, framework, dtypes, tp, pp, most the same on every row) filled the width and
    A, B, the difference and the verdict were all past the right edge.

    Parameters
    ----------
    table
        :func:`table_with_verdicts`, without ``significant``.

    Returns
    -------
    pandas.DataFrame
        The same columns, reordered.
    """
    keys = [c for c in table.columns if c in COMPARE_KEYS]
    # the batch and the rate stay in front even when they are one value: they say what load a point is
    same = [c for c in keys if c not in ("batch_size", "request_rate_rps") and len(table) > 1
            and table[c].nunique(dropna=False) <= 1]
    varying = [c for c in keys if c not in same]
    results = [c for c in _RESULTS_FIRST if c in table.columns]
    rest = [c for c in table.columns if c not in (*varying, *results, *same)]
    return table[[*varying, *results, *rest, *same]]


def metric_choices(runs_a: pd.DataFrame, runs_b: pd.DataFrame) -> list[str]:
    """The comparable metrics both sides carry (output throughput first).

    Returns
    -------
    list of str
    """
    return [m for m in COMPARE_METRICS if m in runs_a.columns and m in runs_b.columns
            and runs_a[m].notna().any() and runs_b[m].notna().any()] or [COMPARE_METRICS[0]]


def key_choices() -> list[str]:
    """Key columns the user may leave out of the matching: not the load (:data:`perfmodel.pareto.LOAD_KEYS`),
    since runs at different loads are never repeats of one point.

    Returns
    -------
    list of str
    """
    return [k for k in COMPARE_KEYS if k not in LOAD_KEYS]


_SPLIT_TRIES = 12
"""Most value pairs :func:`default_split` compares before it settles for one without matched points."""


@st.cache_data(show_spinner=False, max_entries=8)
def default_split(home: str, dataset: str, stamp: int) -> tuple[str, str, str] | None:
    """Two different subsets of one dataset to compare by default, instead of the dataset against itself.

    Tries the :data:`SUBSET_COLUMNS` in order and, in each, pairs of its most common values, and
    returns the first pair whose comparison matches at least one point (or, when none does, the
    two most common values of the first column with two values).

    Parameters
    ----------
    home, dataset, stamp
        The store, the dataset id and the store stamp (the cache key).

    Returns
    -------
    (column, value for A, value for B), or None
        None when no column takes two values: every cut of the dataset is the same rows.
    """
    runs = cached.dataset_runs(home, dataset, stamp)
    metric = metric_choices(runs, runs)[0]
    fallback: tuple[str, str, str] | None = None
    best: tuple[tuple[int, int], tuple[str, str, str]] | None = None
    tries = 0
    for col in SUBSET_COLUMNS:
        if col not in runs.columns:
            continue
        values = runs[col].dropna().astype(str).value_counts().index.tolist()[:4]
        for va, vb in itertools.combinations(values, 2):
            fallback = fallback or (col, va, vb)
            if tries >= _SPLIT_TRIES:
                return best[1] if best else fallback
            tries += 1
            try:
                comp = compare(select_runs(runs, {col: [va]}, label=va), select_runs(runs, {col: [vb]}, label=vb),
                               metric=metric, label_a=va, label_b=vb)
            except PerfmodelError:
                continue
            if len(comp.table):
                # the pair the most batch sizes compare at, then the most points, within the first column that
                # has one: LLM-Inference-Bench had opened on vLLM against llama.cpp, which meet at batch 1 only
                loads = [c for c in ("batch_size", "request_rate_rps") if c in comp.table.columns]
                n_b = len(comp.table[loads].drop_duplicates()) if loads else 0
                score = (n_b, len(comp.table))
                if best is None or score > best[0]:
                    best = (score, (col, va, vb))
        if best is not None:
            return best[1]
    return fallback


def same_rows(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two sides hold the same rows: one dataset, cut the same way (or not cut at all).

    Parameters
    ----------
    a, b
        Each side's ``dataset``, ``by`` (a column or :data:`NO_SUBSET`) and ``in`` (the chosen values;
        none means every row).

    Returns
    -------
    bool
    """
    def cut(side: Mapping[str, Any]) -> tuple[Any, ...]:
        by, values = side.get("by"), list(side.get("in") or [])
        return (side["dataset"],) if by in (None, NO_SUBSET) or not values else (side["dataset"], by,
                                                                                  sorted(map(str, values)))

    return cut(a) == cut(b)


def contained(a: Mapping[str, Any], b: Mapping[str, Any]) -> str | None:
    """Which side holds every row of the other without being the same rows (:func:`same_rows`): ``"a"``
    (A holds all of B), ``"b"``, or None. One dataset, one side uncut or cut on the same column to more values:
    its matched points then average the other side's runs with others, and the differences shrink towards
    nothing (llama.cpp against the whole sample read "+0.0 %, 0 beyond noise").

    Parameters
    ----------
    a, b
        As for :func:`same_rows`.

    Returns
    -------
    str or None
    """
    if a["dataset"] != b["dataset"] or same_rows(a, b):
        return None

    def rows(side: Mapping[str, Any]) -> tuple[Any, set[str] | None]:
        by, values = side.get("by"), list(side.get("in") or [])
        return (None, None) if by in (None, NO_SUBSET) or not values else (by, set(map(str, values)))

    (by_a, in_a), (by_b, in_b) = rows(a), rows(b)
    if in_a is None:
        return "a"
    if in_b is None:
        return "b"
    if by_a == by_b:
        return "a" if in_b <= in_a else "b" if in_a <= in_b else None
    return None


def values_label(by: str) -> str:
    """The label of a side's value picker: ``"framework is one of"``, or a prompt while no column is chosen.

    Parameters
    ----------
    by
        The side's subset column (or :data:`NO_SUBSET`).

    Returns
    -------
    str
    """
    return "Values (choose a column first)" if by == NO_SUBSET else f"{column_label(by)} is one of"


def column_label(col: str) -> str:
    """A subset column in words (``KV-cache dtype``, ``threads``), :data:`NO_SUBSET` as it is."""
    return col if col == NO_SUBSET else column_words(col)


def value_label(value: str) -> str:
    """A subset value as the page shows it: a whole number stored as a float without its ``.0`` (threads 2,
    not 2.0); the value itself stays what the link and the filter use."""
    try:
        f = float(value)
    except ValueError:
        return value
    return f"{f:.0f}" if f.is_integer() and value.endswith(".0") else value


def _powers_of_two(x: pd.Series) -> list[float]:
    v = pd.to_numeric(x, errors="coerce").to_numpy(dtype="float64")
    v = v[np.isfinite(v) & (v > 0)]
    if not v.size:
        return []
    powers = [2.0 ** k for k in range(int(np.floor(np.log2(v.min()))), int(np.ceil(np.log2(v.max()))) + 1)]
    return powers[::2] if len(powers) > 14 else powers


def figure(comp: Comparison, configurations: Sequence[str] | None, *, log_x: bool) -> go.Figure:
    """:func:`perfmodel.pareto.comparison_figure` with the app's load axis: the title other pages use and,
    on a log batch axis, labels at powers of two only (not plotly's 2..9 minor labels); request-rate points are
    drawn against their rate, so titled; the legend sits below the axis title instead of on it.

    Parameters
    ----------
    comp
        A comparison.
    configurations
        Labels to draw.
    log_x
        Logarithmic batch axis.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    fig = comparison_figure(comp, configurations, log_x=log_x)
    fig.update_layout(legend={"orientation": "h", "yanchor": "top", "y": -0.22, "x": 0},
                      margin={"l": 60, "r": 20, "b": 60})  # the top margin fits the figure's wrapped title
    # a rate axis (inference-perf's 1 to 183 req/s) had been titled "batch size"
    title = str(fig.layout.xaxis.title.text)
    fig.update_xaxes(title={"text": axis_title("batch_size") if title == "batch size" else title, "standoff": 8})
    if log_x and title == "batch size" and load_column(comp.table) == "batch_size":
        ticks = _powers_of_two(comp.table["batch_size"])
        if ticks:
            fig.update_xaxes(tickvals=ticks, ticktext=[f"{t:g}" for t in ticks], minor={"showgrid": False})
    return fig
