"""Cached wrappers around the public core, keyed on primitives only.

Every function here takes the data directory (``home``), a dataset id, a
``stamp`` that changes whenever the store's files change, and JSON strings for
anything structured, and looks the heavy objects up itself; so a cache key
never lies, and a dataset imported by the CLI in another process shows up on
the next rerun. Results live here, never in ``st.session_state``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from .. import config
from ..plots import config_labels, curve_figure, fits_summary, repeat_summary, throughput_figure
from . import tables

if TYPE_CHECKING:
    from ..curves import CurveFit

__all__ = [
    "home",
    "store_stamp",
    "open_store",
    "datasets_table",
    "dataset_runs",
    "dataset_issues",
    "filter_choices",
    "filtered_runs",
    "filtered_csv",
    "runs_figure",
    "hardware_choices",
    "model_choices",
    "format_choices",
    "clear_store_caches",
    "filters_json",
    "CurveView",
    "curve_options_json",
    "curve_fits",
    "curve_chart",
    "curve_fits_csv",
]


def home() -> str:
    """The data directory (``$PERFMODEL_HOME`` or ``~/.perfmodel``) as a string cache key.

    Returns
    -------
    str
    """
    return str(config.home_dir())


def store_stamp(home: str) -> int:
    """A number that changes whenever a file of the store changes (writes by any process).

    Parameters
    ----------
    home
        The data directory.

    Returns
    -------
    int
        The latest modification time (ns) of the files directly in ``home``, 0 if none.
    """
    latest = 0
    try:
        for entry in Path(home).iterdir():
            if entry.is_file():
                latest = max(latest, entry.stat().st_mtime_ns)
    except OSError:
        return 0
    return latest


def open_store(home: str):  # noqa: ANN201 - Store is imported lazily
    """A :class:`perfmodel.store.Store` on ``home`` (cheap; not cached so each thread has its own).

    Parameters
    ----------
    home
        The data directory.

    Returns
    -------
    perfmodel.store.Store
    """
    from ..store import Store

    return Store(home=Path(home))


@st.cache_data(show_spinner=False, max_entries=32)
def datasets_table(home: str, stamp: int) -> pd.DataFrame:
    """The browse table of every dataset (see :func:`perfmodel.ui.tables.datasets_frame`).

    Parameters
    ----------
    home
        The data directory.
    stamp
        :func:`store_stamp` of ``home`` (part of the key only).

    Returns
    -------
    pandas.DataFrame
    """
    return tables.datasets_frame(open_store(home).datasets())


@st.cache_data(show_spinner=False, max_entries=32)
def dataset_runs(home: str, dataset_id: str, stamp: int) -> pd.DataFrame:
    """Every run of a dataset.

    Parameters
    ----------
    home, dataset_id
        Where and which.
    stamp
        :func:`store_stamp` of ``home`` (part of the key only).

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    NotFoundError
        The dataset does not exist.
    """
    return open_store(home).runs(dataset_id)


@st.cache_data(show_spinner=False, max_entries=32)
def superlinear_runs(home: str, dataset_id: str, stamp: int) -> pd.DataFrame:
    """:func:`perfmodel.curve_tables.superlinear_runs` of a dataset (the Data page lists them).

    Parameters
    ----------
    home, dataset_id
        Where and which.
    stamp
        :func:`store_stamp` of ``home`` (part of the key only).

    Returns
    -------
    pandas.DataFrame
    """
    from ..curve_tables import superlinear_runs as pairs

    return pairs(dataset_runs(home, dataset_id, stamp))


@st.cache_data(show_spinner=False, max_entries=32)
def dataset_issues(home: str, dataset_id: str, stamp: int) -> pd.DataFrame:
    """Every import issue of a dataset, errors first.

    Parameters
    ----------
    home, dataset_id, stamp
        As for :func:`dataset_runs`.

    Returns
    -------
    pandas.DataFrame
        Columns file, row, column, message, severity.
    """
    return tables.issues_frame(open_store(home).issues(dataset_id))


@st.cache_data(show_spinner=False, max_entries=32)
def filter_choices(home: str, dataset_id: str, stamp: int) -> dict[str, list[str]]:
    """The values each filter can take in a dataset.

    Parameters
    ----------
    home, dataset_id, stamp
        As for :func:`dataset_runs`.

    Returns
    -------
    dict
    """
    return tables.filter_options(dataset_runs(home, dataset_id, stamp))


def filters_json(filters: dict[str, list[str]]) -> str:
    """The canonical JSON string of a filter selection (a cache key).

    Parameters
    ----------
    filters
        Filter column -> chosen values.

    Returns
    -------
    str
    """
    return json.dumps({k: sorted(v) for k, v in filters.items() if v}, sort_keys=True)


@st.cache_data(show_spinner=False, max_entries=64)
def filtered_runs(home: str, dataset_id: str, stamp: int, filters: str) -> pd.DataFrame:
    """The runs of a dataset that pass the filters.

    Parameters
    ----------
    home, dataset_id, stamp
        As for :func:`dataset_runs`.
    filters
        :func:`filters_json` of the selection.

    Returns
    -------
    pandas.DataFrame
    """
    return tables.filter_runs(dataset_runs(home, dataset_id, stamp), json.loads(filters))


@st.cache_data(show_spinner=False, max_entries=16)
def filtered_csv(home: str, dataset_id: str, stamp: int, filters: str) -> bytes:
    """The filtered runs as CSV bytes (for the download button).

    Parameters
    ----------
    home, dataset_id, stamp, filters
        As for :func:`filtered_runs`.

    Returns
    -------
    bytes
    """
    return tables.runs_csv_bytes(filtered_runs(home, dataset_id, stamp, filters))


@st.cache_data(show_spinner=False, max_entries=64)
def runs_figure(home: str, dataset_id: str, stamp: int, filters: str, x: str, y: str, color: str,
                log_x: bool) -> go.Figure:
    """The throughput figure of the filtered runs (see :func:`perfmodel.plots.throughput_figure`).

    Parameters
    ----------
    home, dataset_id, stamp, filters
        As for :func:`filtered_runs`.
    x, y, color, log_x
        Passed to :func:`perfmodel.plots.throughput_figure`.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    return throughput_figure(filtered_runs(home, dataset_id, stamp, filters), x=x, y=y, color=color,
                             log_x=log_x)


@st.cache_data(show_spinner=False)
def hardware_choices(home: str) -> dict[str, str]:
    """Hardware catalog key -> display name (user catalogs under ``home`` included).

    Parameters
    ----------
    home
        The data directory (user catalog files live there).

    Returns
    -------
    dict
    """
    from .. import catalog

    return {str(k): str(getattr(v, "name", k)) for k, v in sorted(catalog.hardware_catalog().items())}


@st.cache_data(show_spinner=False)
def model_choices(home: str) -> dict[str, str]:
    """Model catalog key -> display name (user catalogs under ``home`` included).

    Parameters
    ----------
    home
        The data directory.

    Returns
    -------
    dict
    """
    from .. import catalog

    return {str(k): str(getattr(v, "name", k)) for k, v in sorted(catalog.model_catalog().items())}


@st.cache_data(show_spinner=False)
def format_choices() -> dict[str, str]:
    """Importer format id -> human label, in registry order.

    Returns
    -------
    dict
    """
    from ..importers import registry

    return {name: str(imp.label) for name, imp in registry().items()}


def clear_store_caches() -> None:
    """Forget cached store reads (after this session imported or deleted a dataset)."""
    for fn in (datasets_table, dataset_runs, dataset_issues, filter_choices, filtered_runs, filtered_csv,
               runs_figure, curve_fits, curve_chart, curve_fits_csv):
        fn.clear()


@dataclass(frozen=True)
class CurveView:
    """The fitted curves of one dataset and options, as the Curves page shows them.

    Attributes
    ----------
    by
        Grouping columns.
    table
        :func:`perfmodel.curves.fit_curves` output with a ``configuration`` label column first.
    summary
        :func:`perfmodel.plots.fits_summary` of the table (same row order).
    fits
        Label -> :class:`perfmodel.curves.CurveFit`.
    points
        :func:`perfmodel.plots.repeat_summary` with the ``configuration`` label.
    """

    by: tuple[str, ...]
    table: pd.DataFrame
    summary: pd.DataFrame
    fits: Mapping[str, CurveFit]
    points: pd.DataFrame


def curve_options_json(by: Sequence[str], *, shape: str, intervals: str, n_boot: int, seed: int = 0,
                       x: str = "batch_size", y: str = "output_throughput_tok_s") -> str:
    """The canonical JSON string of the Curves page's fit options (a cache key).

    Parameters
    ----------
    by
        Grouping columns (order kept: it is the order of the label parts).
    shape, intervals, n_boot, seed, x, y
        As for :func:`perfmodel.curves.fit_curves`.

    Returns
    -------
    str
    """
    return json.dumps({"by": list(by), "shape": shape, "intervals": intervals, "n_boot": int(n_boot),
                       "seed": int(seed), "x": x, "y": y}, sort_keys=True)


@st.cache_data(show_spinner="Fitting curves...", max_entries=16)
def curve_fits(home: str, dataset_id: str, stamp: int, options: str) -> CurveView:
    """Fit every configuration of a dataset (see :func:`perfmodel.curves.fit_curves`).

    Parameters
    ----------
    home, dataset_id, stamp
        As for :func:`dataset_runs`.
    options
        :func:`curve_options_json` of the options.

    Returns
    -------
    CurveView

    Raises
    ------
    PerfmodelError
        A grouping column is missing, an option is invalid, or the columns are not numeric.
    """
    from ..curves import fit_curves

    opts = json.loads(options)
    by = list(opts["by"])
    runs = dataset_runs(home, dataset_id, stamp)
    table, fits = fit_curves(runs, by, shape=opts["shape"], intervals=opts["intervals"], n_boot=opts["n_boot"],
                             seed=opts["seed"], x=opts["x"], y=opts["y"], return_fits=True)
    labels = config_labels(table, by) if len(table) else []
    table.insert(0, "configuration", labels)
    # fit_curves fills the table and the fits in the same (group) order; matching by key
    # would miss configurations with a missing key value (NaN != NaN).
    by_label = dict(zip(labels, fits.values(), strict=True))
    points = repeat_summary(runs, by, x=opts["x"], y=opts["y"])
    points = points.merge(table[[*by, "configuration"]], on=by, how="left")
    return CurveView(by=tuple(by), table=table, summary=fits_summary(table, by), fits=by_label, points=points)


@st.cache_data(show_spinner=False, max_entries=64)
def curve_chart(home: str, dataset_id: str, stamp: int, options: str, configs: str, log_x: bool) -> go.Figure:
    """The curves figure of the chosen configurations (see :func:`perfmodel.plots.curve_figure`).

    Parameters
    ----------
    home, dataset_id, stamp, options
        As for :func:`curve_fits`.
    configs
        JSON list of configuration labels to overlay.
    log_x
        Logarithmic batch axis.

    Returns
    -------
    plotly.graph_objects.Figure
        Its throughput axis is logarithmic when the chosen curves lie far apart (``log_y=None``).
    """
    view = curve_fits(home, dataset_id, stamp, options)
    opts = json.loads(options)
    labels = [c for c in json.loads(configs) if c in view.fits]
    return curve_figure([view.fits[c] for c in labels], view.points, labels, x=opts["x"], y=opts["y"],
                        log_x=log_x, log_y=None)


@st.cache_data(show_spinner=False, max_entries=16)
def curve_fits_csv(home: str, dataset_id: str, stamp: int, options: str) -> bytes:
    """The full fits table as CSV bytes (for the download button).

    Parameters
    ----------
    home, dataset_id, stamp, options
        As for :func:`curve_fits`.

    Returns
    -------
    bytes
    """
    return curve_fits(home, dataset_id, stamp, options).table.to_csv(index=False).encode()
