"""The dataset header every analysis page starts with: list the datasets, restore one from the link, pick one.

A page calls :func:`available_datasets` (which stops the page when the store
is empty), :func:`restore_dataset_link` (the URL's dataset and the page's own
link parameters, with their warnings) and :func:`dataset_selectbox` (the
session's dataset, shared by every page, in the page's own widget key).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st

from . import cached, links

__all__ = ["NO_DATASET", "Datasets", "available_datasets", "restore_dataset_link", "dataset_selectbox", "no_runs_text",
           "require_runs"]

NO_DATASET = "No dataset yet: import benchmark result files on the Data page."


@dataclass(frozen=True)
class Datasets:
    """The store's datasets as a page sees them.

    Attributes
    ----------
    stamp
        The store's change stamp (the cache key of every cached read).
    table
        :func:`perfmodel.ui.cached.datasets_table`.
    ids
        Dataset ids, in the table's order.
    names
        Id -> dataset name.
    """

    stamp: int
    table: pd.DataFrame
    ids: list[str]
    names: dict[str, str]

    def label(self, dataset_id: str) -> str:
        """``name (id)``, the selectboxes' label of a dataset."""
        return f"{self.names[dataset_id]} ({dataset_id})"


def available_datasets(home: str, *, empty_message: str = NO_DATASET,
                       on_empty: Callable[[], Any] | None = None) -> Datasets:
    """The store's datasets; on an empty store, call ``on_empty``, say ``empty_message`` and stop the page."""
    stamp = cached.store_stamp(home)
    table = cached.datasets_table(home, stamp)
    if table.empty:
        if on_empty is not None:
            on_empty()
        st.info(empty_message, icon=":material/info:")
        st.stop()
    ids = table["id"].tolist()
    return Datasets(stamp=stamp, table=table, ids=ids, names=dict(zip(ids, table["name"], strict=True)))


def restore_dataset_link(ds: Datasets, *page_restores: Callable[[], Iterable[str] | None]) -> None:
    """Take the dataset (and the page's own parameters) from the URL, and warn about what could not be read.

    Parameters
    ----------
    ds
        The store's datasets.
    page_restores
        The page's own link readers, run after the dataset's; each returns the
        messages of what it could not read (or None).
    """
    links.restore_from_link(ds.ids, ds.names)
    problems = [msg for restore in page_restores for msg in (restore() or ())]
    if (warning := links.link_warning()) is not None:
        st.warning(warning, icon=":material/link_off:")
    for msg in problems:
        st.warning(msg, icon=":material/link_off:")


def dataset_selectbox(ds: Datasets, key: str, *, label: str = "Dataset", container: Any = None,
                      on_change: Callable[[], Any] | None = None) -> str:
    """The dataset selectbox, showing (and setting) the session's dataset shared by every page.

    Parameters
    ----------
    ds
        The store's datasets.
    key
        The page's widget key.
    label
        The widget's label.
    container
        Where to draw it (a column); default the page.
    on_change
        Called after a new choice is made the session's dataset.

    Returns
    -------
    str
        The selected dataset id.
    """
    if links.selected_dataset() not in ds.names:
        links.select_dataset(ds.ids[0], forget_link=False)
    st.session_state[key] = links.selected_dataset()

    def changed() -> None:
        links.select_dataset(st.session_state[key])
        if on_change is not None:
            on_change()

    return (container or st).selectbox(label, ds.ids, key=key, format_func=ds.label, on_change=changed)


def no_runs_text(name: str) -> str:
    """What a page says of a dataset without runs (a sweep's, before or without its first point)."""
    return (f"**{name}** holds no runs: a sweep's dataset stays empty until its first point is measured, and one "
            "whose sweep failed before then stays so. Choose another dataset, or delete this one on the Data page.")


def require_runs(runs: pd.DataFrame, name: str) -> None:
    """Stop the page, saying why, when the dataset has no runs: the pages had read its emptiness as
    something else ("these runs record no batch size", "fit_gbdt: fewer than 2 rows have a positive
    output_throughput_tok_s", a What-if point of another dataset's hardware and model).

    Parameters
    ----------
    runs
        The dataset's runs.
    name
        Its name.
    """
    if len(runs) == 0:
        st.info(no_runs_text(name), icon=":material/inbox:")
        st.stop()
