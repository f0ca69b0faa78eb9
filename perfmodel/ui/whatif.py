"""What-if page helpers: its state and URL keys, cached training/loading/prediction, suspect-point views.

Every input of the What-if page lives in the URL (``?dataset=...&hardware=...&input_len=...``),
with the names the Attribution page reads (:data:`perfmodel.ui.explain.QP_WHATIF`), so a copied
link reopens the same curve. Trained models are written as JSON under
``$PERFMODEL_HOME/models/whatif/`` (keyed by dataset, its size and the training options) and
loaded through ``st.cache_resource``; results live in the cache, selections in session state.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from .. import physics
from .. import whatif as W
from ..plots import add_suspect_markers, whatif_figure
from . import cached

__all__ = [
    "P",
    "KEYS",
    "QP",
    "PREDICTOR_CHOICES",
    "DEFAULT_PREDICTOR",
    "restore_from_link",
    "apply_defaults",
    "write_link",
    "inputs",
    "place_batch",
    "options_json",
    "model_dir",
    "train",
    "load_model",
    "result",
    "figure",
    "result_csv",
    "suspect_runs",
    "curves_with_suspects",
]

P = "whatif."
"""Widget key prefix of the What-if page."""
KEYS: Mapping[str, str] = {name: P + name for name in (
    "dataset", "hardware", "model", "framework", "input_len_tok", "output_len_tok", "device_count",
    "batch_min", "batch_max", "batch_size", "level", "predictor", "keep_suspect", "log_x")}
"""Input name -> widget key."""
QP: Mapping[str, str] = {
    "hardware": "hardware", "model": "model", "framework": "framework", "input_len_tok": "input_len",
    "output_len_tok": "output_len", "device_count": "device_count", "batch_size": "batch",
    "batch_min": "batch_min", "batch_max": "batch_max", "level": "level", "predictor": "predictor",
    "keep_suspect": "keep_suspect",
}
"""Input name -> URL query parameter (the first seven are the Attribution page's names)."""
PREDICTOR_CHOICES = ("roofline-gbm", "ala", "xgboost", "random-forest", "linear")
DEFAULT_PREDICTOR = "roofline-gbm"
_NUMBERS = ("input_len_tok", "output_len_tok", "device_count", "batch_min", "batch_max", "batch_size")
_CHECKED = P + "link_checked"
_DEFAULTS_FOR = P + "defaults_for"
_LINK_BATCH = P + "link_batch"  # the batch a link asked for, until the page has placed it
_FIRST_DATASET = "\0first"  # _DEFAULTS_FOR of a link that names no dataset: the first one selected


def _parse(name: str, raw: str) -> Any:
    if name in _NUMBERS:
        v = float(raw)
        if not math.isfinite(v) or v < (0 if name == "input_len_tok" else 1):
            raise ValueError(raw)
        return v
    if name == "level":
        v = float(raw)
        if v not in W.WHATIF_LEVELS:
            raise ValueError(raw)
        return v
    if name == "keep_suspect":
        return raw.lower() in ("1", "true", "yes")
    return raw


def restore_from_link() -> list[str]:
    """On the session's first run of the page, put the URL's inputs into the widgets' state.

    Returns
    -------
    list of str
        One message per parameter that could not be read (its default is used).
    """
    if st.session_state.get(_CHECKED):
        return []
    st.session_state[_CHECKED] = True
    problems = []
    found = False
    for name, qp in QP.items():
        raw = st.query_params.get(qp)
        if raw is None or raw == "":
            continue
        try:
            st.session_state[KEYS[name]] = _parse(name, str(raw))
            found = True
            if name == "batch_size":
                st.session_state[_LINK_BATCH] = st.session_state[KEYS[name]]
        except ValueError:
            problems.append(f"{qp}={raw!r} is not valid here; using the default")
    if found:
        # The link's inputs win over the dataset's defaults for the dataset it names (for the first dataset
        # selected when it names none).
        st.session_state[_DEFAULTS_FOR] = st.session_state.get("ui.dataset") or _FIRST_DATASET
    return problems


@st.cache_data(show_spinner=False, max_entries=32)
def _defaults(home: str, dataset_id: str, stamp: int) -> dict[str, Any]:
    return W.default_point(cached.dataset_runs(home, dataset_id, stamp))


def apply_defaults(home: str, dataset_id: str, stamp: int) -> dict[str, Any]:
    """Fill the inputs from the dataset when it changes (or on first visit); keep them otherwise.

    Parameters
    ----------
    home, dataset_id, stamp
        The selected dataset.

    Returns
    -------
    dict
        The dataset's defaults (:func:`perfmodel.whatif.default_point`).
    """
    d = _defaults(home, dataset_id, stamp)
    fresh = st.session_state.get(_DEFAULTS_FOR) not in (dataset_id, _FIRST_DATASET)
    values = {**d, "batch_size": d["batch_max"], "level": 0.9, "predictor": DEFAULT_PREDICTOR,
              "keep_suspect": False, "log_x": True}
    fallback = {"input_len_tok": 512.0, "output_len_tok": 128.0, "device_count": 1.0}
    for name, key in KEYS.items():
        if name == "dataset":
            continue
        v = values.get(name)
        if v is None:
            v = fallback.get(name, "")
        if fresh or key not in st.session_state:
            st.session_state[key] = v
    st.session_state[_DEFAULTS_FOR] = dataset_id
    return d


def inputs() -> dict[str, Any]:
    """The page's current inputs (name -> value) from the widgets' state."""
    return {name: st.session_state.get(key) for name, key in KEYS.items() if name != "dataset"}


def place_batch(batches: list[float], batch: float | None) -> tuple[list[float], float, str | None]:
    """Where the batch to show and explain goes on the curve's batch grid.

    A batch inside the range that is not one of the grid's powers of two (a link's ``batch=100``) joins
    the grid, so the link shows what it asked for; one outside the range moves to the nearer end (in
    doublings), with a message when a link asked for it (a widget change of the range moves it quietly).

    Parameters
    ----------
    batches
        The grid (:func:`perfmodel.whatif.batch_grid`), sorted.
    batch
        The batch input (None before any).

    Returns
    -------
    (batches, batch, message)
        The grid, the batch on it and the warning to show (None when there is none).
    """
    from_link = st.session_state.pop(_LINK_BATCH, None)
    if batch is None or not (isinstance(batch, (int, float)) and math.isfinite(batch) and batch > 0):
        return batches, batches[-1], None
    b = float(batch)
    if b in batches:
        return batches, b, None
    if batches[0] <= b <= batches[-1]:
        return sorted([*batches, b]), b, None
    nearest = min(batches, key=lambda x: abs(math.log2(x / b)))
    msg = None
    if from_link is not None and float(from_link) == b:
        msg = (f"{QP['batch_size']}={b:g} lies outside the batch range {batches[0]:g}-{batches[-1]:g} "
               f"({QP['batch_min']}, {QP['batch_max']}): showing batch {nearest:g}")
    return batches, nearest, msg


def write_link(dataset_id: str | None, values: Mapping[str, Any]) -> None:
    """Put every input in the URL so that a copied link reopens the same what-if.

    Parameters
    ----------
    dataset_id
        The selected dataset.
    values
        :func:`inputs`.
    """
    wanted: dict[str, str] = {}
    if dataset_id:
        wanted["dataset"] = dataset_id
    for name, qp in QP.items():
        v = values.get(name)
        if v is None or v == "":
            continue
        if isinstance(v, bool):
            wanted[qp] = "1" if v else "0"
        elif isinstance(v, (int, float)):
            wanted[qp] = f"{float(v):g}"
        else:
            wanted[qp] = str(v)
    managed = {"dataset", *QP.values()}
    current = {k: st.query_params.get(k) for k in st.query_params.keys() if k in managed}
    if current == wanted:
        return
    for k in managed - wanted.keys():
        if k in st.query_params:
            del st.query_params[k]
    for k, v in wanted.items():
        st.query_params[k] = v


def options_json(predictor: str, keep_suspect: bool) -> str:
    """The canonical JSON of the training options (part of the cache key and the model's directory).

    Parameters
    ----------
    predictor
        Registry name.
    keep_suspect
        Keep points faster than the physical bound.

    Returns
    -------
    str
    """
    return json.dumps({"predictor": predictor, "keep_suspect": bool(keep_suspect)}, sort_keys=True)


def model_dir(home: str, dataset_id: str, n_rows: int, options: str) -> Path:
    """Where the What-if model of a dataset (of ``n_rows`` runs) and options is saved.

    Parameters
    ----------
    home, dataset_id
        Data directory and dataset.
    n_rows
        Runs in the dataset (a grown dataset needs a new model).
    options
        :func:`options_json`.

    Returns
    -------
    pathlib.Path
    """
    digest = hashlib.sha256(f"{dataset_id}|{n_rows}|{options}".encode()).hexdigest()[:12]
    return Path(home) / "models" / "whatif" / f"{dataset_id}-{digest}"


def train(home: str, dataset_id: str, stamp: int, options: str, path: Path) -> None:
    """Train the What-if model and save it as JSON to ``path`` (behind the page's Train button).

    Parameters
    ----------
    home, dataset_id, stamp
        The dataset.
    options
        :func:`options_json`.
    path
        :func:`model_dir`.

    Raises
    ------
    PerfmodelError
        What :func:`perfmodel.whatif.fit_whatif_model` or ``save`` raises.
    """
    opts = json.loads(options)
    model, _ = W.fit_whatif_model(cached.dataset_runs(home, dataset_id, stamp), opts["predictor"],
                                  keep_suspect=opts["keep_suspect"])
    model.save(path)


@st.cache_resource(show_spinner=False, max_entries=8)
def load_model(path: str, mtime_ns: int):  # noqa: ANN201 - Predictor imported lazily
    """A saved model, loaded once per file version.

    Parameters
    ----------
    path
        Model directory.
    mtime_ns
        Modification time of its ``metadata.json`` (part of the key only).

    Returns
    -------
    perfmodel.models.Predictor
    """
    from ..models import load_predictor

    return load_predictor(path)


@st.cache_data(show_spinner=False, max_entries=32)
def _training_rows(home: str, dataset_id: str, stamp: int, keep_suspect: bool) -> pd.DataFrame:
    runs = cached.dataset_runs(home, dataset_id, stamp)
    y = pd.to_numeric(runs.get("output_throughput_tok_s"), errors="coerce")
    train = runs.loc[(y > 0).fillna(False).to_numpy(dtype=bool)]
    if not keep_suspect:
        train = train.loc[~W.suspect_mask(train).to_numpy(dtype=bool)]
    return train


@st.cache_data(show_spinner="Predicting...", max_entries=64)
def result(home: str, dataset_id: str, stamp: int, path: str, mtime_ns: int, options: str, point: str,
           batches: str, level: float) -> W.WhatIfResult:
    """The what-if curve (see :func:`perfmodel.whatif.whatif`).

    Parameters
    ----------
    home, dataset_id, stamp
        The dataset.
    path, mtime_ns
        The saved model.
    options
        :func:`options_json` it was trained with.
    point
        JSON of the point's columns.
    batches
        JSON list of batch sizes.
    level
        Band level.

    Returns
    -------
    WhatIfResult

    Raises
    ------
    PerfmodelError
        An invalid or unknown input (column named).
    """
    opts = json.loads(options)
    train_rows = _training_rows(home, dataset_id, stamp, bool(opts["keep_suspect"]))
    return W.whatif(load_model(path, mtime_ns), train_rows, json.loads(point), json.loads(batches),
                    level=level, runs=cached.dataset_runs(home, dataset_id, stamp))


KV_FULL_HELP = (f"Beyond this batch the KV cache of full-length sequences no longer fits beside the weights in "
                f"{physics.KV_USABLE_FRACTION:.0%} of the devices' memory: a server preempts sequences and the curve "
                "flattens or drops. A knee near it has a memory-capacity cause. Empty where the catalog cannot say "
                "or the grouping leaves out hardware, model, devices or lengths.")
"""Help text of the fit tables' ``kv_full_batch`` column (Curves page)."""


def kv_caption(res: W.WhatIfResult) -> str | None:
    """The What-if caption about the KV-cache-full batch (None where the catalog cannot say)."""
    cap = res.kv_fit_batch
    if not math.isfinite(cap):
        return None
    return (f"KV cache: about {cap:,.0f} sequences of {float(res.point['input_len_tok']):g} + "
            f"{float(res.point['output_len_tok']):g} tokens fit beside the weights in "
            f"{physics.KV_USABLE_FRACTION:.0%} of the devices' memory. Beyond that batch a server preempts "
            "sequences, so throughput stops growing: so do the roofline bound and, beyond the trained batches, "
            "the prediction.")


def out_of_domain_text(res: W.WhatIfResult) -> str:
    """Which batches of the curve are out of domain, named, e.g. ``batch 2048 (1 of 12)``: the reasons below
    the warning may name more batches (every one outside the trained range, also those within the
    predictor's tolerance), so the header names its own."""
    table = res.table
    out = table.loc[~table["in_domain"].astype(bool), "batch_size"].astype(float).tolist()
    shown = ", ".join(f"{b:g}" for b in out[:8]) + (", ..." if len(out) > 8 else "")
    return f"batch {shown} ({len(out)} of {len(table)})"


def rate(v: float) -> str:
    """A throughput for a metric tile: thousands separated, never in e-notation (19,920, not 1.992e+04)."""
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:,.4g}"


def seconds(v: float) -> str:
    """A latency for a metric tile in a readable unit (``n/a`` for NaN): 1.2 ms, 340 ms, 2.35 s, 1.9 min."""
    if not math.isfinite(v):
        return "n/a"
    if v < 1.0:
        return f"{v * 1e3:,.3g} ms"
    return f"{v:,.3g} s" if v < 120 else f"{v / 60:,.3g} min"


def figure(res: W.WhatIfResult, log_x: bool) -> go.Figure:
    """:func:`perfmodel.plots.whatif_figure` of a result."""
    return whatif_figure(res.table, res.measured, level=res.level, log_x=log_x)


def result_csv(res: W.WhatIfResult) -> bytes:
    """The prediction table as CSV bytes (for the download button)."""
    return res.table.to_csv(index=False).encode()


@st.cache_data(show_spinner=False, max_entries=32)
def suspect_runs(home: str, dataset_id: str, stamp: int) -> pd.DataFrame:
    """The runs of a dataset faster than the physical bound, with the bound beside them.

    Parameters
    ----------
    home, dataset_id, stamp
        The dataset.

    Returns
    -------
    pandas.DataFrame
        The suspect runs (identity columns, lengths, batch, measured throughput) and
        ``bound_tok_s`` (batch x bandwidth / weight bytes: reading the weights once per step).
    """
    from .. import physics

    runs = cached.dataset_runs(home, dataset_id, stamp)
    sus = runs.loc[W.suspect_mask(runs).to_numpy(dtype=bool)]
    cols = [c for c in ("hardware", "model", "framework", "device_count", "input_len_tok", "output_len_tok",
                        "batch_size", "output_throughput_tok_s", "source_file", "source_row") if c in sus.columns]
    out = sus[cols].copy()
    if len(sus):
        b = physics.roofline(sus)
        out["bound_tok_s"] = (sus["batch_size"].astype("float64") * b["mem_bw_bps"]
                              / (b["active_params"] * b["dtype_bytes"])).to_numpy(dtype=float)
    else:
        out["bound_tok_s"] = pd.Series(dtype="float64")
    return out


def curves_with_suspects(fig: go.Figure, table: pd.DataFrame, home: str, dataset_id: str, stamp: int,
                         by: list[str], configs: list[str], y: str) -> tuple[go.Figure, int]:
    """Overlay the suspect runs of the shown configurations on the Curves chart.

    Parameters
    ----------
    fig
        The Curves page's figure (a copy is drawn on).
    table
        The page's fit table (``configuration`` and the ``by`` columns).
    home, dataset_id, stamp
        The dataset.
    by
        Grouping columns of the page.
    configs
        Labels of the configurations shown.
    y
        Throughput column on the y axis.

    Returns
    -------
    (Figure, int)
        The figure with an 'x' trace for the suspects, and how many suspect runs are shown.
    """
    sus = suspect_runs(home, dataset_id, stamp)
    runs = cached.dataset_runs(home, dataset_id, stamp)
    need = [*by, "configuration"]
    if not len(sus) or any(c not in runs.columns for c in by) or any(c not in table.columns for c in need) \
            or y not in runs.columns:
        return fig, 0
    rows = runs.loc[sus.index].merge(table[need].drop_duplicates(), on=by, how="inner")
    shown = rows[rows["configuration"].isin(configs)]
    if not len(shown):
        return fig, 0
    return add_suspect_markers(go.Figure(fig), shown, y=y), len(shown)
