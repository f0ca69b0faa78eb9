"""Cached wrappers of the Curves page that :mod:`perfmodel.ui.cached` does not hold: the import warnings that
concern each fitted configuration."""

from __future__ import annotations

import json

import streamlit as st

from ..curve_tables import fit_import_warnings
from . import cached

__all__ = ["curve_import_warnings"]


@st.cache_data(show_spinner=False, max_entries=16)
def curve_import_warnings(home: str, dataset_id: str, stamp: int, options: str) -> dict[str, tuple[str, ...]]:
    """The dataset's import warnings that concern each fitted configuration
    (:func:`perfmodel.curve_tables.fit_import_warnings`), to show beside the fits.

    Parameters
    ----------
    home, dataset_id, stamp, options
        As for :func:`perfmodel.ui.cached.curve_fits`.

    Returns
    -------
    dict
        Configuration label -> its warnings, only configurations with at least one, in the fits table's order.
    """
    view = cached.curve_fits(home, dataset_id, stamp, options)
    opts = json.loads(options)
    runs = cached.dataset_runs(home, dataset_id, stamp)
    issues = cached.dataset_issues(home, dataset_id, stamp)
    warned = fit_import_warnings(runs, issues, view.table, list(view.by), x=opts["x"], y=opts["y"])
    labels = view.table["configuration"].tolist() if "configuration" in view.table.columns else []
    return {str(label): w for label, w in zip(labels, warned, strict=True) if w}
