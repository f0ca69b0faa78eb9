"""The Attribution page's cached wrappers, URL state and plotly figures.

Cached wrappers are keyed on primitives (data directory, dataset id, store
stamp, feature set, protocol) and call :mod:`perfmodel.explain`, whose own
on-disk cache (``<home>/explain``) makes a fresh session fast too. The figure
builders take result objects and draw; they use one style per feature kind
(:data:`KIND_STYLE`: colour and marker), so physical and framework features
look different in every chart and table.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from .. import explain as E
from .. import whatif as W
from ..curves import VARYING_BY
from ..features import feature_doc, feature_label, feature_names, format_feature_value, glossary
from ..plots import wide_span
from . import cached
from . import whatif as WUI
from .whatif import DEFAULT_PREDICTOR, rate

__all__ = [
    "COMPARISON_COLUMNS",
    "comparison_order",
    "FAILING_R2",
    "threshold_text",
    "beside_threshold",
    "split_comparison",
    "top_features_in_words",
    "FRAMEWORK_SCORE_CAVEAT",
    "KIND_STYLE",
    "FEATURE_SET_CHOICES",
    "QP_WHATIF",
    "QP_SETTINGS",
    "WHATIF_DEFAULTS",
    "attribution_link",
    "whatif_from_link",
    "default_point",
    "settle_settings",
    "setting_value",
    "model_note",
    "WHY_TWO_NUMBERS",
    "whatif_model_path",
    "whatif_prediction",
    "train_whatif",
    "measured_at",
    "feature_glossary",
    "feature_labels",
    "kind_label",
    "KIND_HELP",
    "legend_markdown",
    "engine",
    "gbdt_model",
    "explanation",
    "point_waterfall",
    "comparison",
    "importance_figure",
    "beeswarm_figure",
    "dependence_figure",
    "waterfall_figure",
]

KIND_STYLE: Mapping[str, tuple[str, str, str]] = {
    # kind: (colour, plotly marker symbol, text marker)
    "physical": ("#1f77b4", "circle", "●"),
    "framework": ("#d62728", "diamond", "◆"),
    "setting": ("#ff7f0e", "star", "★"),
    "identity": ("#7f7f7f", "square", "■"),
    "workload": ("#2ca02c", "triangle-up", "▲"),
    "other": ("#9467bd", "x", "✕"),
}
"""One colour and marker per feature kind, used by every chart and table of the page."""
KIND_HELP = (
    "**physical**: hardware and model quantities from the catalogs (KV-cache bytes, bytes per SM, memory-"
    "bandwidth pressure, compute intensity, ...).  \n"
    "**framework**: metrics the serving framework reported during the run (fw_* columns scraped from /metrics).  \n"
    "**setting**: a framework setting chosen before the run (torch threads, llama.cpp's n_batch).  \n"
    "**identity**: which hardware, model or framework a row is (one indicator each).  \n"
    "**workload**: input and output length, batch size, device count and their ratios.  \n"
    "**other**: the roofline prior's regime and what fits no kind above.")
"""What each feature kind holds, for the legend's help."""
FEATURE_SET_CHOICES = ("all", "physical", "framework", "identity", "raw+derived+physical", "physical+framework")
QP_WHATIF: Mapping[str, str] = {
    "hardware": "hardware", "model": "model", "framework": "framework", "input_len_tok": "input_len",
    "output_len_tok": "output_len", "batch_size": "batch", "device_count": "device_count",
}
"""What-if input (canonical column) -> URL query parameter, shared with the What-if page's links."""
QP_SETTINGS: Mapping[str, str] = {name: WUI.QP[name] for name in VARYING_BY}
"""A measurement setting the dataset may vary (:data:`perfmodel.curves.VARYING_BY` column) -> URL query
parameter, the What-if page's (``num_threads``, ``n_batch``; :data:`perfmodel.ui.whatif.UNSET` for a run that
does not record it)."""
WHATIF_DEFAULTS: Mapping[str, float] = {"input_len_tok": 512.0, "output_len_tok": 128.0, "batch_size": 8.0,
                                        "device_count": 1.0}
_TOP = 20


# --------------------------------------------------------------------------- links

def attribution_link(point: Mapping[str, Any], dataset_id: str | None = None, page: str = "attribution",
                     view: Mapping[str, str] | None = None) -> str:
    """A relative URL that opens the Attribution page on a what-if point (for the What-if page).

    Parameters
    ----------
    point
        Canonical query columns (``hardware``, ``model``, ``framework``, ``input_len_tok``,
        ``output_len_tok``, ``batch_size``, ``device_count``); missing ones are left out. A
        :data:`QP_SETTINGS` setting the point carries is written too (None: ``unset``).
    dataset_id
        The dataset to explain with (optional).
    page
        The page's URL path.
    view
        The page's other inputs (URL parameter -> value: feature set, chart choices), written after the point.

    Returns
    -------
    str
        e.g. ``attribution?hardware=h100-sxm&model=llama-3-8b&batch=16``.
    """
    params: dict[str, str] = {}
    if dataset_id:
        params["dataset"] = dataset_id
    for col, qp in QP_WHATIF.items():
        v = point.get(col)
        if v is None or (isinstance(v, float) and math.isnan(v)):
            continue
        params[qp] = f"{v:g}" if isinstance(v, float) else str(v)
    for col, qp in QP_SETTINGS.items():
        if col in point:
            params[qp] = _setting_param(point[col])
    params.update({k: v for k, v in (view or {}).items() if v})
    return f"{page}?{urlencode(params)}" if params else page


def whatif_from_link(query_params: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The what-if point a link carries, and a message per value that could not be read.

    Parameters
    ----------
    query_params
        ``st.query_params`` (or any mapping of parameter -> string).

    Returns
    -------
    (dict, list of str)
        Canonical column -> value (numbers as float) for the parameters present and valid; problems. A
        setting (:data:`QP_SETTINGS`) reads as a float, or None for ``unset``; whether the configuration was
        measured at it is for :func:`settle_settings` to judge.
    """
    point: dict[str, Any] = {}
    problems: list[str] = []
    for col, qp in QP_WHATIF.items():
        raw = query_params.get(qp)
        if raw is None or raw == "":
            continue
        if col in WHATIF_DEFAULTS:
            try:
                v = float(raw)
            except (TypeError, ValueError):
                v = math.nan
            if not math.isfinite(v) or v < 1:
                problems.append(f"{qp}={raw!r} is not a positive number; using the default")
                continue
            point[col] = v
        else:
            point[col] = str(raw)
    for col, qp in QP_SETTINGS.items():
        raw = query_params.get(qp)
        if raw is None or raw == "":
            continue
        if str(raw).strip().lower() == WUI.UNSET:
            point[col] = None
            continue
        try:
            v = float(raw)
        except (TypeError, ValueError):
            v = math.nan
        if not math.isfinite(v):
            problems.append(f"{qp}={raw!r} is not a number or {WUI.UNSET}; using the configuration's default")
            continue
        point[col] = v
    return point, problems


@st.cache_data(show_spinner=False, max_entries=32)
def default_point(home: str, dataset_id: str, stamp: int) -> dict[str, Any]:
    """The waterfall's default inputs: the dataset's most measured configuration, as on the What-if page.

    Parameters
    ----------
    home, dataset_id, stamp
        Data directory, dataset, store stamp (part of the key).

    Returns
    -------
    dict
        The :data:`QP_WHATIF` columns from :func:`perfmodel.whatif.default_point` (its largest measured
        batch, the What-if page's default); :data:`WHATIF_DEFAULTS` where the data has no value.
    """
    d = W.default_point(cached.dataset_runs(home, dataset_id, stamp))
    point: dict[str, Any] = {c: d.get(c) for c in QP_WHATIF}
    point["batch_size"] = d.get("batch_max")
    for col, fallback in WHATIF_DEFAULTS.items():
        point[col] = float(fallback) if point.get(col) is None else float(point[col])
    return point


def setting_value(v: Any) -> float | str:
    """A setting's core value (a number, or None for a run that does not record it) as its selectbox holds it
    (a float, or :data:`perfmodel.ui.whatif.UNSET`)."""
    if v is None or v == WUI.UNSET or (isinstance(v, float) and math.isnan(v)):
        return WUI.UNSET
    return float(v)


def _setting_param(v: Any) -> str:
    """A setting as a link writes it (``2``, ``unset``)."""
    w = setting_value(v)
    return w if isinstance(w, str) else f"{w:g}"


def settle_settings(home: str, dataset_id: str, stamp: int, point: Mapping[str, Any], prefix: str,
                    link: Mapping[str, Any]) -> tuple[dict[str, W.SettingChoice], list[str]]:
    """Put each measurement setting the dataset varies on one of the point's configuration's values, as the
    What-if page does (:func:`perfmodel.ui.whatif.settle_settings`), so that both pages predict the same row.

    The options are :func:`perfmodel.whatif.setting_choices` for the point's hardware, model and framework. A
    value in state (or the link's) that is not one of them becomes the configuration's default; a setting the
    configuration's runs do not record gets no widget (its state is None). Run before the settings' widgets
    are drawn.

    Parameters
    ----------
    home, dataset_id, stamp
        The selected dataset.
    point
        The page's inputs (``hardware``, ``model``, ``framework``; lengths and devices pick the default).
    prefix
        Key prefix of the settings' widgets (``attribution.q.``: the key is the prefix and the column).
    link
        Setting column -> the value a link asked for (:func:`whatif_from_link`; None: unset), once.

    Returns
    -------
    (dict, list of str)
        The settings to offer (column -> :class:`perfmodel.whatif.SettingChoice`), and one warning per link
        value not used, naming the parameter, the value and what is used instead.
    """
    key_point = {c: point.get(c) for c in W.POINT_COLUMNS}
    choices = WUI.setting_choices(home, dataset_id, stamp, json.dumps(key_point, sort_keys=True, default=str))
    config = " · ".join(str(point.get(c)) for c in ("hardware", "model", "framework"))
    values, messages = WUI.choose_settings(
        choices, config, {n: st.session_state.get(prefix + n) for n in VARYING_BY},
        {n: _setting_param(v) for n, v in link.items()}, leaves="the point leaves it out")
    for name, v in values.items():
        st.session_state[prefix + name] = v
    return choices, messages


def model_note(features: str, dataset_name: str, prediction_tok_s: float, *, from_whatif: bool = False) -> str:
    """Which model the page explains, and why the What-if page's number for the same point can differ.

    Parameters
    ----------
    features
        Feature set of the explained model.
    dataset_name
        The dataset it was trained on.
    prediction_tok_s
        Its prediction at the waterfall's point (NaN when it is not a throughput).
    from_whatif
        The point came from a link, such as the What-if page's (which carries the point, not its prediction).

    Returns
    -------
    str
    """

    here = f"; it predicts {prediction_tok_s:,.1f} tok/s at this point" if math.isfinite(prediction_tok_s) else ""
    text = (f"Explained model: SHAP values of an XGBoost model of throughput on the '{features}' features, "
            f"trained on the dataset '{dataset_name}'{here}. ")
    predictor = (f"its own predictor (the one chosen there, {DEFAULT_PREDICTOR} by default, whose number the "
                 "\"What-if predictor\" tile above shows)")
    if from_whatif:
        return text + ("The point came with the link (as from the What-if page's \"Explain this point\"), "
                       f"but its prediction did not: the What-if page predicts with {predictor}, not with this "
                       "model, so its number can differ; the waterfall explains this model's number.")
    return text + f"The What-if page predicts with {predictor}, so its number for the same point can differ."


def _num(label: str, fmt: str) -> Any:
    return st.column_config.NumberColumn(label, format=fmt)


FAILING_R2 = -1.0
"""An R² below this in the feature-set comparison is named as a failure under the table."""


def split_comparison(table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """The comparison's rows with scores, those without (no test rows, a set the data has no feature of: they
    showed as None and 0 test rows), and the scored rows whose R² fails (:data:`FAILING_R2`), named.

    Parameters
    ----------
    table
        :func:`comparison`'s table.

    Returns
    -------
    (DataFrame, DataFrame, list of str)
    """
    r2 = [c for c in table.columns if c.startswith("r2")]
    n_test = pd.to_numeric(table["n_test"], errors="coerce").fillna(0) if "n_test" in table.columns else None
    has = table[r2].apply(pd.to_numeric, errors="coerce").notna().any(axis=1) if r2 else pd.Series(True, table.index)
    ok = has & (n_test > 0) if n_test is not None else has
    scored = table[ok]
    # Each failing row names the R² that fails: "all / poly" had been listed under a log R² of 0.879 shown
    # first, for its linear R² in the last column.
    failing = []
    for _, r in scored.iterrows():
        low = [f"{_r2_words(c)} {beside_threshold(float(v), FAILING_R2)}" for c in comparison_order(r2)
               if pd.notna(v := pd.to_numeric(r[c], errors="coerce")) and float(v) < FAILING_R2]
        if low:
            failing.append(f"{r['set']} / {r['learner']} ({', '.join(low)})")
    return scored, table[~ok], failing


def _r2_words(column: str) -> str:
    """An R² column in words, as the table heads it (``r2_log_transfer``: ``R² (log) transfer``)."""
    head = COMPARISON_COLUMNS.get(column)
    return str(head.get("label") or column) if isinstance(head, dict) else column


def top_features_in_words(cell: Any) -> Any:
    """A comparison row's ``top_features`` (raw names, comma-separated) in words without units, as the charts
    name them (``l2_reuse, id_fw_llama.cpp``: ``L2 reuse, framework is llama.cpp``)."""
    if not isinstance(cell, str) or not cell:
        return cell
    return ", ".join(re.sub(r" \([^()]*\)$", "", feature_label(n.strip())) for n in cell.split(","))


_LINEAR_R2 = ("r2", "r2_random", "r2_transfer", "r2_drop")


def comparison_order(columns: Sequence[str]) -> list[str]:
    """The comparison table's columns as the page shows them: the log R² the caption names before the linear R²,
    which goes last (ruled by the largest throughputs: "R² random 0.359" had led a row whose log R² was 0.976).

    Parameters
    ----------
    columns
        The table's columns.

    Returns
    -------
    list of str
        Every column, reordered.
    """
    cols = list(columns)
    return [c for c in cols if c not in _LINEAR_R2] + [c for c in _LINEAR_R2 if c in cols]


COMPARISON_COLUMNS: dict[str, Any] = {
    "protocol": "protocol", "set": "feature set", "learner": "learner", "n_features": "features", "n_folds": "folds",
    "n_test": "test rows", "r2": _num("R² (linear)", "%.3f"), "r2_log": _num("R² (log)", "%.3f"),
    "mape_pct": _num("MAPE %", "%.1f"), "median_ape_pct": _num("median APE %", "%.1f"),
    "top_features": "top features", "physics_agrees": "physics agrees", "fit_s": _num("fit (s)", "%.1f"),
    "by": "left out", "split": "held out", "r2_random": _num("R² (linear) random", "%.3f"),
    "r2_transfer": _num("R² (linear) transfer", "%.3f"), "r2_drop": _num("R² (linear) drop", "%.3f"),
    "r2_log_random": _num("R² (log) random", "%.3f"), "r2_log_transfer": _num("R² (log) transfer", "%.3f"),
    "r2_log_drop": _num("R² (log) drop", "%.3f"), "mape_random": _num("MAPE % random", "%.1f"),
    "mape_transfer": _num("MAPE % transfer", "%.1f"), "median_ape_random": _num("median APE % random", "%.1f"),
    "median_ape_transfer": _num("median APE % transfer", "%.1f")}
"""The feature-set comparison table's columns in words (``st.dataframe``'s ``column_config``)."""

FRAMEWORK_SCORE_CAVEAT = (
    "Read the framework and all sets' scores with care: metrics a server or engine measures during the run itself "
    "(its decode and prefill times, its generated tokens per second) restate the throughput they were measured "
    "with. A high R² there says the framework's counters agree with the client, not that they predict a "
    "configuration nobody ran, where they do not exist yet; the transfer protocols show how far each set carries.")
"""Said under the comparison wherever a set with framework metrics is in it."""

WHY_TWO_NUMBERS = ("Two models, two numbers: the explained model is a plain gradient-boosted model of ln throughput "
                   "on the selected features, so that its SHAP values are exact; the What-if predictor "
                   f"({DEFAULT_PREDICTOR}) is the roofline bound × a learned efficiency (a correction learned on "
                   "the data), anchored on the measured batches nearby.")
"""The one-sentence why beside the Attribution page's two predictions."""
_WHATIF_OPTIONS = WUI.DEFAULT_OPTIONS
whatif_model_path = WUI.default_model_path
"""Where the What-if page saves its default predictor (:func:`perfmodel.ui.whatif.default_model_path`)."""


def whatif_prediction(home: str, dataset_id: str, stamp: int, n_rows: int, point: Mapping[str, Any]
                      ) -> tuple[float, str | None] | None:
    """The What-if page's default predictor's throughput at a point, where that model is already trained.

    Reuses the What-if page's caches (:func:`perfmodel.ui.whatif.load_model`, :func:`~perfmodel.ui.whatif.result`)
    and never trains: training takes from about 10 s (300 runs) to 20 s (5,000 runs) on two cores, too long to
    block the page on (:func:`train_whatif`, behind a button, does it).

    Parameters
    ----------
    home, dataset_id, stamp
        The dataset.
    n_rows
        Runs in the dataset (part of the model's directory name).
    point
        The waterfall's canonical query columns (:data:`perfmodel.whatif.POINT_COLUMNS` and ``batch_size``),
        and the :data:`QP_SETTINGS` settings it carries (the What-if page puts them into its query too).

    Returns
    -------
    tuple or None
        Predicted output throughput (tok/s; NaN where the configuration cannot run) and, where it cannot, why
        (:attr:`perfmodel.whatif.WhatIfResult.cannot_run`, else None); None when the model is not trained yet.

    Raises
    ------
    PerfmodelError
        An invalid or unknown input (column named).
    """
    path = whatif_model_path(home, dataset_id, n_rows)
    meta = path / "metadata.json"
    if not meta.exists():
        return None
    # The What-if page's query: its point's columns and the settings it carries (threads, n_batch).
    q = {**{c: point.get(c) for c in W.POINT_COLUMNS}, **{c: point[c] for c in VARYING_BY if c in point}}
    res = WUI.result(home, dataset_id, stamp, str(path), meta.stat().st_mtime_ns, _WHATIF_OPTIONS,
                     json.dumps(q, sort_keys=True), json.dumps([float(point["batch_size"])]), 0.9)
    return float(res.table["pred_throughput_tok_s"].iloc[0]), res.cannot_run


def train_whatif(home: str, dataset_id: str, stamp: int, n_rows: int) -> Path:
    """Train and save the What-if page's default predictor (the same model and file as its Train button).

    Parameters
    ----------
    home, dataset_id, stamp, n_rows
        As for :func:`whatif_prediction`.

    Returns
    -------
    pathlib.Path
        The model directory.

    Raises
    ------
    PerfmodelError
        What :func:`perfmodel.whatif.fit_whatif_model` raises.
    """
    path = whatif_model_path(home, dataset_id, n_rows)
    WUI.train(home, dataset_id, stamp, _WHATIF_OPTIONS, path)
    return path


def measured_at(runs: pd.DataFrame, point: Mapping[str, Any]) -> tuple[float, int]:
    """The measured output throughput at exactly a point (hardware, model, framework, lengths, batch, devices).

    Parameters
    ----------
    runs
        The dataset's runs.
    point
        Canonical query columns; a :data:`QP_SETTINGS` setting of None matches the runs that do not record it.

    Returns
    -------
    (float, int)
        Median ``output_throughput_tok_s`` of the matching runs (NaN when none) and how many there are.
    """
    if "output_throughput_tok_s" not in runs.columns or not len(runs):
        return math.nan, 0
    y = pd.to_numeric(runs["output_throughput_tok_s"], errors="coerce")
    same = y.notna().to_numpy(dtype=bool, copy=True)  # a cached frame's arrays are read-only
    for col, value in point.items():
        if col in VARYING_BY and value is None:  # unset: the runs that do not record the setting
            if col in runs.columns:
                same &= runs[col].isna().to_numpy(dtype=bool)
            continue
        if col not in runs.columns or value is None:
            return math.nan, 0
        if isinstance(value, str):
            same &= (runs[col].astype("string") == value).fillna(False).to_numpy(dtype=bool)
        else:
            same &= (pd.to_numeric(runs[col], errors="coerce") == float(value)).fillna(False).to_numpy(dtype=bool)
    n = int(same.sum())
    return (float(y[same].median()) if n else math.nan), n


def feature_labels(names: Sequence[str]) -> list[str]:
    """Human names with units (:func:`perfmodel.features.feature_label`) for chart axes, made unique
    (a clash gets its raw name in brackets).

    Parameters
    ----------
    names
        Feature names (a waterfall's ``other (k features)`` row passes through).

    Returns
    -------
    list of str
    """
    labels = [feature_label(n) for n in names]
    seen: dict[str, int] = {}
    for lab in labels:
        seen[lab] = seen.get(lab, 0) + 1
    return [f"{lab} [{n}]" if seen[lab] > 1 else lab for lab, n in zip(labels, names, strict=True)]


def threshold_text(x: float) -> str:
    """A threshold as set, never rounded into another value: the shortest decimal that reads back as ``x``
    (``0.99``, ``0.995``, ``-1``), where ``:.2f`` had written a |ρ| bar met at 0.9996 as ``1.00``.

    Parameters
    ----------
    x
        The threshold.

    Returns
    -------
    str
    """
    return np.format_float_positional(float(x), trim="-")


def beside_threshold(value: float, threshold: float, decimals: int = 2) -> str:
    """A value said beside a threshold it is compared with: to ``decimals`` places, more where fewer would round
    it onto the threshold or across it (an R² of -1.004 under the bar -1 reads ``-1.004``, not ``-1.00``).

    Parameters
    ----------
    value, threshold
        The number and the bar it is said against.
    decimals
        The places shown where they keep the two apart.

    Returns
    -------
    str
    """
    v, t = float(value), float(threshold)
    if not (math.isfinite(v) and math.isfinite(t)) or v == t:
        return f"{v:.{decimals}f}"
    for d in range(decimals, 16):
        shown = float(text := f"{v:.{d}f}")
        if shown != t and (shown < t) == (v < t):
            return text
    return repr(v)


def read_together_notes(ex: E.Explanation, imp: pd.DataFrame, top: int = 8) -> list[str]:
    """One sentence per group of features among the ``top`` of the ranking that order the rows alike
    (:meth:`perfmodel.explain.Explanation.read_together`): their shares are one effect, divided arbitrarily.

    Parameters
    ----------
    ex
        The explanation.
    imp
        Its :meth:`~perfmodel.explain.Explanation.importance` (``feature``, ``share``).
    top
        How far down the ranking to look.

    Returns
    -------
    list of str
        e.g. "PCIe contention (sequences/lane), batch size (sequences) and log2(batch) order the rows alike
        (Spearman |ρ| ≥ 0.99): add their shares, 47 % together. PCIe contention has no value on 244 of 337
        rows ...".
    """
    share = dict(zip(imp["feature"], imp["share"], strict=True))
    rho = E.READ_TOGETHER_RHO
    notes = []
    for g in ex.read_together(imp["feature"].head(top).tolist(), min_rho=rho):
        names = feature_labels(g.features)
        listed = ", ".join(names[:-1]) + f" and {names[-1]}"
        # the bar the group passed, as set: its smallest |ρ| (1.0 for batch and log2 batch) had read "≥ 1.00"
        text = (f"{listed} order the rows alike (Spearman |ρ| ≥ {threshold_text(rho)} where both have a value): the "
                "trees could split on any of them and SHAP divides one effect among them arbitrarily, so read "
                f"their shares together ({sum(share.get(f, 0.0) for f in g.features):.0%}).")
        for f, n in g.missing.items():
            text += (f" {feature_labels([f])[0]} has no value on {n:,} of {g.n_rows:,} rows (a figure the catalogs "
                     "or the runs lack there): on those its bar is what lacking it separates, such as other "
                     "hardware, not its own effect.")
        notes.append(text)
    return notes


@st.cache_data(show_spinner=False, max_entries=16)
def feature_glossary(home: str, dataset_id: str, stamp: int) -> pd.DataFrame:
    """The glossary of the dataset's ``all`` feature set (:func:`perfmodel.features.glossary`), with kinds.

    Parameters
    ----------
    home, dataset_id, stamp
        The dataset.

    Returns
    -------
    pandas.DataFrame
        ``kind`` (with its marker), ``feature``, ``name``, ``formula``, ``features``.
    """
    table = glossary(feature_names(cached.dataset_runs(home, dataset_id, stamp), "all"))
    first = [f.split(", ")[0] for f in table["features"]]
    table.insert(0, "kind", [kind_label(E.feature_kind(f)) for f in first])
    return table


def kind_label(kind: str) -> str:
    """``"● physical"``: the kind with its marker, for tables."""
    return f"{KIND_STYLE.get(kind, KIND_STYLE['other'])[2]} {kind}"


def legend_markdown() -> str:
    """A one-line coloured legend of the feature kinds (Streamlit Markdown colours)."""
    names = {"#1f77b4": "blue", "#d62728": "red", "#7f7f7f": "gray", "#2ca02c": "green", "#9467bd": "violet",
             "#ff7f0e": "orange"}
    return "  ".join(f":{names[c]}[{m} {k}]" for k, (c, _, m) in KIND_STYLE.items())


def engine() -> str:
    """XGBoost's own exact TreeSHAP: the same values as ``shap.TreeExplainer``, about 2x faster."""
    return "xgboost"


# --------------------------------------------------------------------------- cached wrappers

@st.cache_resource(show_spinner="Fitting the model to explain...", max_entries=16)
def gbdt_model(home: str, dataset_id: str, stamp: int, features: str) -> E.TreeModel:
    """The explained GBDT of a dataset and feature set (booster cached on disk too).

    Parameters
    ----------
    home, dataset_id, stamp
        Data directory, dataset, store stamp (part of the key).
    features
        Feature set name.

    Returns
    -------
    TreeModel

    Raises
    ------
    PerfmodelError
        An empty feature set (no fw_ columns) or no usable rows.
    """
    return E.fit_gbdt(cached.dataset_runs(home, dataset_id, stamp), features, cache=True)


@st.cache_resource(show_spinner="Computing SHAP values...", max_entries=16)
def explanation(home: str, dataset_id: str, stamp: int, features: str, engine: str) -> E.Explanation:
    """SHAP values of :func:`gbdt_model` on the dataset (at most 5,000 rows, cached on disk).

    Parameters
    ----------
    home, dataset_id, stamp, features
        As for :func:`gbdt_model`.
    engine
        SHAP engine.

    Returns
    -------
    Explanation
    """
    return E.explain(gbdt_model(home, dataset_id, stamp, features), cached.dataset_runs(home, dataset_id, stamp),
                     engine=engine)


@st.cache_data(show_spinner=False, max_entries=64)
def point_waterfall(home: str, dataset_id: str, stamp: int, features: str, engine: str,
                    point_json: str) -> E.Waterfall:
    """The waterfall of one what-if point (JSON of canonical query columns).

    Parameters
    ----------
    home, dataset_id, stamp, features, engine
        As for :func:`explanation`.
    point_json
        ``json.dumps`` of the point.

    Returns
    -------
    Waterfall

    Raises
    ------
    PerfmodelError
        An invalid point (unknown hardware or model, non-positive value).
    """
    import json

    return E.waterfall(gbdt_model(home, dataset_id, stamp, features), json.loads(point_json), engine=engine)


@st.cache_data(show_spinner="Training every learner on every feature set...", max_entries=16)
def comparison(home: str, dataset_id: str, stamp: int, protocol: str) -> pd.DataFrame:
    """The feature-set comparison (random) or transfer test (with drops) of a dataset.

    Parameters
    ----------
    home, dataset_id, stamp
        As for :func:`gbdt_model`.
    protocol
        One of :data:`perfmodel.explain.COMPARE_PROTOCOLS`.

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    PerfmodelError
        No fold (one framework only...) or no usable rows.
    """
    runs = cached.dataset_runs(home, dataset_id, stamp)
    if protocol == "random":
        return E.compare_feature_sets(runs, protocol="random")
    return E.transfer_test(runs, protocol.removeprefix("transfer-"))


# --------------------------------------------------------------------------- figures

def _style(kind: str) -> tuple[str, str, str]:
    return KIND_STYLE.get(kind, KIND_STYLE["other"])


def importance_figure(imp: pd.DataFrame, *, top: int = _TOP, title: str = "") -> go.Figure:
    """Horizontal bars of mean |SHAP|, one colour per feature kind (legend), largest on top, each feature
    named in words with its unit (:func:`feature_labels`).

    Parameters
    ----------
    imp
        :meth:`Explanation.importance`.
    top
        Features shown.
    title
        Figure title.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    head = imp.head(top).iloc[::-1]
    # features are named in words with units (perfmodel.features.feature_label); the hover gives the raw name
    label = dict(zip(head["feature"], feature_labels(head["feature"].tolist()), strict=True))
    fig = go.Figure()
    for kind in E.KINDS:
        part = head[head["kind"] == kind]
        if part.empty:
            continue
        colour, _, _ = _style(kind)
        # the legend draws the colour swatch: a text marker in the name too would be a second glyph
        fig.add_bar(x=part["mean_abs_shap"], y=[label[f] for f in part["feature"]], orientation="h", name=kind,
                    marker_color=colour, customdata=np.column_stack([part["share"] * 100, part["feature"]]),
                    hovertemplate="%{y} (%{customdata[1]}): %{x:.4g} in ln(tok/s) "
                                  "(%{customdata[0]:.1f}% of the total)<extra></extra>")
    fig.update_layout(title=title, xaxis_title="mean |SHAP value| (ln throughput: 0.1 is a factor of about ×1.1)",
                      barmode="overlay", legend_title="feature kind",
                      yaxis={"categoryorder": "array", "categoryarray": [label[f] for f in head["feature"]]},
                      height=max(320, 22 * len(head) + 120), margin={"l": 10, "r": 10, "t": 50, "b": 40})
    return fig


def beeswarm_figure(ex: E.Explanation, *, top: int = 15, max_points: int = 1000) -> go.Figure:
    """A beeswarm: every row's SHAP value per feature, coloured by the feature's value, marker by kind.

    Parameters
    ----------
    ex
        The explanation.
    top
        Features shown (most important first).
    max_points
        Rows drawn per feature (an even subsample when more).

    Returns
    -------
    plotly.graph_objects.Figure
    """
    imp = ex.importance().head(top)
    n = len(ex.values)
    pick = np.linspace(0, n - 1, min(n, max_points)).astype(int) if n else np.array([], dtype=int)
    rng = np.random.default_rng(0)
    fig = go.Figure()
    feats = imp["feature"].tolist()[::-1]
    labels = feature_labels(feats)
    shown_kinds: set[str] = set()
    for pos, feat in enumerate(feats):
        j = ex.feature_names.index(feat)
        kind = ex.kinds[j]
        v = ex.data[pick, j]
        finite = np.isfinite(v)
        lo, hi = (np.nanpercentile(v[finite], 5), np.nanpercentile(v[finite], 95)) if finite.any() else (0, 1)
        scaled = np.clip((v - lo) / (hi - lo), 0, 1) if hi > lo else np.full(len(v), 0.5)
        _, symbol, _ = _style(kind)
        fig.add_scatter(x=ex.values[pick, j], y=pos + rng.uniform(-0.3, 0.3, len(pick)), mode="markers",
                        name=kind, legendgroup=kind, showlegend=False,
                        marker={"symbol": symbol, "size": 5, "color": np.nan_to_num(scaled, nan=0.5),
                                "colorscale": "RdBu_r", "cmin": 0, "cmax": 1, "opacity": 0.6,
                                "colorbar": {"title": "feature value<br>(low→high)", "tickvals": []}
                                if pos == 0 else None},
                        hovertemplate=f"{labels[pos]} ({feat})<br>SHAP %{{x:.3g}}<extra>{kind}</extra>")
        if kind not in shown_kinds:  # a legend entry in one neutral colour (the points' colour is the value);
            # its marker is the kind's symbol, so the name is the kind alone (not "● physical" beside a ●)
            fig.add_scatter(x=[None], y=[None], mode="markers", name=kind, legendgroup=kind,
                            marker={"symbol": symbol, "size": 8, "color": "#555555"}, hoverinfo="skip")
        shown_kinds.add(kind)
    # The kind legend goes above the plot, horizontal, so it cannot overlap the colour bar's title.
    fig.update_layout(xaxis_title="SHAP value (effect on the model output)",
                      legend={"title": {"text": "feature kind"}, "orientation": "h", "x": 0, "xanchor": "left",
                              "y": 1.02, "yanchor": "bottom"},
                      yaxis={"tickvals": list(range(len(labels))), "ticktext": labels, "automargin": True},
                      height=max(320, 28 * len(labels) + 140), margin={"l": 10, "r": 10, "t": 60, "b": 40})
    return fig


def dependence_figure(ex: E.Explanation, feature: str, color: str | None) -> go.Figure:
    """SHAP value of ``feature`` against its value, coloured by a second feature.

    Parameters
    ----------
    ex
        The explanation.
    feature, color
        Feature on the x axis; colouring feature (or None).

    Returns
    -------
    plotly.graph_objects.Figure
    """
    dep = ex.dependence(feature, color)
    kind = ex.kinds[ex.feature_names.index(feature)]
    colour, symbol, marker = _style(kind)
    mk: dict[str, Any] = {"symbol": symbol, "size": 6, "opacity": 0.7}
    if color is not None:
        ckind = ex.kinds[ex.feature_names.index(color)]
        mk.update(color=dep["color_value"], colorscale="Viridis",
                  colorbar={"title": f"{_style(ckind)[2]} {feature_label(color)}"})
    else:
        mk["color"] = colour
    name = feature_label(feature)
    fig = go.Figure(go.Scatter(x=dep["value"], y=dep["shap"], mode="markers", marker=mk, name=feature,
                               hovertemplate=f"{name} %{{x:.4g}}<br>SHAP %{{y:.3g}}<extra></extra>"))
    fig.update_layout(title=f"{marker} {name}: {feature} ({kind})", xaxis_title=name,
                      yaxis_title="SHAP value (ln throughput)",
                      margin={"l": 10, "r": 10, "t": 50, "b": 40})
    if wide_positive(dep["value"]):  # plain numbers, not plotly's bare minor digits ("5 0.1 2 5 1 2")
        fig.update_xaxes(type="log", title_text=f"{name} (log scale)", tickformat=",~g")
    return fig


def wide_positive(values: pd.Series, span: float = 100.0) -> bool:
    """Whether a feature's values call for a log axis: all positive and more than ``span`` apart
    (:func:`perfmodel.plots.wide_span`).

    Judged over the values there are: a CPU has no L2 reuse or PCIe lanes in the catalog (NaN, not drawn),
    and one such point kept L2 reuse, spanning 10^4, on a linear axis.
    """
    v = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    v = v[np.isfinite(v)]
    return bool(len(v)) and bool((v > 0).all()) and wide_span(v, span)


def _step_label(name: str, value: float) -> str:
    """A waterfall row: ``KV-cache size = 4.29 GB``, ``platform is rocm: no``, ``other (12 features)``."""
    doc = feature_doc(name)
    if doc is None:  # the summed rest, or a name perfmodel does not document
        return name if not math.isfinite(float(value)) else f"{name} = {rate(value)}"
    sep = ": " if doc.unit == "1/0" else " = "
    if not math.isfinite(float(value)):
        # The trees send a missing value down a branch of its own: the bar is what lacking the figure does
        # (a CPU has no PCIe lanes in the catalog), not the effect of a size, so the label says so.
        if name in VARYING_BY:  # a setting of another engine (llama.cpp's n_batch on a vLLM run)
            return f"{doc.label}: not set in this run"
        return f"{doc.label}{sep}n/a (no value here)"
    return f"{doc.label}{sep}{format_feature_value(name, value)}"


def _tok_s_ticks(lo: float, hi: float) -> tuple[list[float], list[str]]:
    """Ticks of a ln(tok/s) axis from ``lo`` to ``hi``, placed at round throughputs and labelled in tok/s."""
    a, b = math.exp(lo), math.exp(hi)
    ticks: list[float] = []
    for mantissas in ((1.0,), (1.0, 2.0, 5.0), (1.0, 1.5, 2.0, 3.0, 5.0, 7.0)):
        ticks = [m * 10.0 ** e for e in range(math.floor(math.log10(a)) - 1, math.ceil(math.log10(b)) + 1)
                 for m in mantissas if a <= m * 10.0 ** e <= b]
        if len(ticks) >= 4:
            break
    else:  # a narrow range (less than a factor 2 or so): round steps, as on a linear axis
        for step in (s * 10.0 ** math.floor(math.log10((b - a) / 4.0)) for s in (5.0, 2.0, 1.0, 0.5)):
            ticks = [k * step for k in range(math.ceil(a / step), math.floor(b / step) + 1)]
            if len(ticks) >= 4:
                break
    return [math.log(t) for t in ticks], [rate(t) for t in ticks]


def waterfall_figure(wf: E.Waterfall, *, top: int = 12, title: str = "") -> go.Figure:
    """A waterfall from the base value to the output, each step coloured by its feature's kind.

    Colour shows the kind (legend "feature kind"); a hatched step lowers the output, a solid one
    raises it (second legend, "direction"). Each row names its feature in words with its value and
    unit (``KV-cache size = 4.29 GB``); each bar is labelled with its factor (log outputs) or SHAP
    value, outside the bar, and hovering shows the raw feature name. The x range leaves room for the
    labels. For a log-throughput model the bars stay additive in ln(tok/s) while the axis is labelled in
    tok/s (a log scale) and the base and output lines read ``E[f] = ... tok/s`` and ``f(x) = ... tok/s``.

    Parameters
    ----------
    wf
        The waterfall.
    top
        Steps shown (the rest summed into one).
    title
        Figure title.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    t = wf.top(top)
    shap = t["shap"].to_numpy(dtype=float)
    start = wf.base_value + np.concatenate([[0.0], np.cumsum(shap)[:-1]])
    # words and units, not raw names; n/a when the catalog or the data has no value; 6.29 M, not 6.291e+06
    labels = [_step_label(f, v) for f, v in zip(t["feature"], t["value"], strict=True)]
    counts = {lab: labels.count(lab) for lab in labels}
    labels = [f"{lab} [{f}]" if counts[lab] > 1 else lab for lab, f in zip(labels, t["feature"], strict=True)]
    tok_s = wf.log_output and math.isfinite(wf.prediction_tok_s)  # ln(tok/s): the axis reads in tok/s
    what = "throughput" if math.isfinite(wf.prediction_tok_s) else "the output"
    fig = go.Figure()
    for i, rec in enumerate(t.itertuples()):
        colour, _, _ = _style(rec.kind)
        text = f"×{rec.factor:.3g}" if wf.log_output else f"{rec.shap:+.4g}"
        hover = (f"{text} on {what} (SHAP {rec.shap:+.3f} in ln)" if wf.log_output
                 else f"SHAP {rec.shap:+.4g}")
        doc = feature_doc(rec.feature)
        about = f"<br>{rec.feature}: {doc.formula}" if doc is not None else ""
        if doc is not None and not math.isfinite(float(rec.value)) and rec.feature in VARYING_BY:
            # x1.22 on vLLM points from "llama.cpp n_batch: not set" had read as the effect of a setting
            about += ("<br>Not set in this run: another engine's setting. The trees split on it where they told "
                      "the engines apart, so this bar is a framework difference, not the effect of a setting.")
        elif doc is not None and not math.isfinite(float(rec.value)):
            about += ("<br>No value at this point: the bar is the effect of the figure's absence (it stands for "
                      "whatever lacks it, such as a device without PCIe lanes in the catalog), not of a size.")
        # Colour: the feature's kind (legend "feature kind"); hatching: the step lowers the output
        # (legend "direction"). The bars themselves stay out of the legends so neither mixes the two.
        fig.add_bar(x=[rec.shap], base=[start[i]], y=[labels[i]], orientation="h", marker_color=colour,
                    marker_pattern_shape="" if rec.shap >= 0 else "/", name=rec.kind, legendgroup=rec.kind,
                    showlegend=False, text=[text], textposition="outside", cliponaxis=False,
                    hovertemplate=f"{labels[i]}<br><b>{hover}</b>{about}<extra>{rec.kind}</extra>")
    for kind in [*E.KINDS, *sorted(set(t["kind"]) - set(E.KINDS))]:
        if kind in set(t["kind"]):
            colour, _, _ = _style(kind)
            fig.add_bar(x=[None], y=[labels[0]], orientation="h", marker_color=colour, name=kind,
                        legendgroup=kind, showlegend=True, hoverinfo="skip")
    for lowers, shape in ((False, ""), (True, "/")):
        if ((shap < 0) if lowers else (shap >= 0)).any():
            fig.add_bar(x=[None], y=[labels[0]], orientation="h", legend="legend2", showlegend=True,
                        name=f"{'hatched' if lowers else 'solid'}: {'lowers' if lowers else 'raises'} {what}",
                        marker={"color": "#bbbbbb", "pattern": {"shape": shape, "fgcolor": "#444444"}},
                        hoverinfo="skip")
    ends = np.concatenate([start, start + shap, [wf.base_value, wf.output]])
    lo, hi = float(np.min(ends)), float(np.max(ends))
    pad = 0.2 * (hi - lo) if hi > lo else 0.5  # room for the factor labels outside the bars
    fig.add_vline(x=wf.base_value, line_dash="dot", layer="below")  # under the bars and their labels
    fig.add_vline(x=wf.output, line_dash="dash", layer="below")
    if tok_s:
        names = (f"E[f] = {rate(math.exp(wf.base_value))} tok/s", f"f(x) = {rate(wf.prediction_tok_s)} tok/s")
        xaxis: dict[str, Any] = {"range": [lo - pad, hi + pad], "title": {
            "text": "throughput, tok/s (log scale; bars add in ln: +0.2 is ×1.22)"}}
        xaxis["tickvals"], xaxis["ticktext"] = _tok_s_ticks(lo - pad, hi + pad)
    else:
        names = (f"E[f] = {wf.base_value:.4g}", f"f(x) = {wf.output:.4g}")
        xaxis = {"range": [lo - pad, hi + pad], "title": {"text": wf.output_label + (
            " (the bars add here; each multiplies exp(output) by its factor)" if wf.log_output else "")}}
    # The line labels sit just above the plot, each on its outer side, clear of the bars' labels and each other.
    for x, name, outer in ((wf.base_value, names[0], wf.base_value >= wf.output),
                           (wf.output, names[1], wf.output > wf.base_value)):
        fig.add_annotation(x=x, y=1, yref="paper", yanchor="bottom", xanchor="left" if outer else "right",
                           text=name, showarrow=False)
    fig.update_layout(title=title, barmode="overlay", xaxis=xaxis,
                      yaxis={"categoryorder": "array", "categoryarray": labels[::-1], "automargin": True},
                      legend={"title": {"text": "feature kind (colour)"}, "y": 1, "yanchor": "top"},
                      legend2={"title": {"text": "direction (pattern)"}, "y": 0, "yanchor": "bottom"},
                      height=max(340, 28 * len(t) + 140), margin={"l": 10, "r": 10, "t": 60, "b": 40})
    return fig
