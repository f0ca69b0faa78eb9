"""Shareable links: the selected dataset and filters live in the URL.

A reload or a copied link starts a new session, so anything a link must
restore is read from ``st.query_params`` on the session's first run of a page
and written back on every run (``?dataset=<id>&hardware=...``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from urllib.parse import urljoin

import streamlit as st

from . import state as K

__all__ = ["absolute", "restore_from_link", "write_link", "selected_dataset", "select_dataset", "link_warning",
           "restore_curves_from_link", "write_curves_link"]

_CHECKED = "ui.link_checked"
_BAD_LINK = "ui.bad_link"
_CURVES_CHECKED = "ui.curves_link_checked"


def absolute(relative: str, page_url: str | None = None) -> str:
    """A link the app writes relative to its pages as the full URL a user can paste into a message.

    Parameters
    ----------
    relative
        e.g. ``attribution?batch=16`` or ``./?analysis=ID`` (the root page).
    page_url
        The address of the page showing it; default the browser's (``st.context.url``). Resolving against
        it keeps the host and any ``server.baseUrlPath``.

    Returns
    -------
    str
        e.g. ``http://gpu-box:8501/attribution?batch=16``; ``relative`` unchanged where the address is
        unknown (no browser session).
    """
    url = st.context.url if page_url is None else page_url
    return urljoin(url, relative) if url else relative


def selected_dataset() -> str | None:
    """The dataset id selected in this session (shared by every page), or None."""
    value = st.session_state.get(K.DATASET)
    return str(value) if value is not None else None


def select_dataset(dataset_id: str | None, *, forget_link: bool = True) -> None:
    """Select a dataset for every page.

    Parameters
    ----------
    dataset_id
        The id, or None to select nothing.
    forget_link
        Also drop the warning about a bad link (the user chose something else).
    """
    st.session_state[K.DATASET] = dataset_id
    if forget_link:
        st.session_state.pop(_BAD_LINK, None)


def restore_from_link(ids: Sequence[str], names: Mapping[str, str]) -> None:
    """On the session's first run, take the dataset and filters from the URL.

    An id not in ``ids`` (also tried as a dataset name) is remembered so that
    :func:`link_warning` can say so; nothing is selected from it.

    Parameters
    ----------
    ids
        Ids of the datasets in the store.
    names
        Id -> dataset name.
    """
    if st.session_state.get(_CHECKED):
        return
    st.session_state[_CHECKED] = True
    ref = st.query_params.get(K.QP_DATASET)
    if ref:
        by_name = {name: i for i, name in names.items()}
        if ref in ids:
            st.session_state[K.DATASET] = ref
        elif ref in by_name:
            st.session_state[K.DATASET] = by_name[ref]
        else:
            st.session_state[_BAD_LINK] = ref
            return
    for name, qp in K.QP_FILTER.items():
        values = st.query_params.get_all(qp)
        if values:
            st.session_state[K.FILTER[name]] = list(values)


def link_warning() -> str | None:
    """The warning to show when the link named a dataset that is not in the store."""
    ref = st.session_state.get(_BAD_LINK)
    if not ref:
        return None
    return (f"The link asks for dataset {ref!r}, which is not in this store (it may have been deleted, "
            "or the link comes from another machine). Showing another dataset instead.")


def write_link(dataset_id: str | None, filters: Mapping[str, Sequence[str]]) -> None:
    """Put the selection in the URL so that a copied link reopens it.

    Parameters
    ----------
    dataset_id
        The selected dataset (``None`` removes it).
    filters
        Filter column -> chosen values (empty removes the parameter).
    """
    wanted: dict[str, list[str]] = {}
    if dataset_id:
        wanted[K.QP_DATASET] = [dataset_id]
    for name, qp in K.QP_FILTER.items():
        vals = [str(v) for v in filters.get(name, ())]
        if vals:
            wanted[qp] = vals
    managed = {K.QP_DATASET, *K.QP_FILTER.values()}
    current = {k: st.query_params.get_all(k) for k in st.query_params.keys() if k in managed}
    if current == wanted:
        return  # writing an unchanged URL would still send a message to the browser
    for k in managed - wanted.keys():
        if k in st.query_params:
            del st.query_params[k]
    for k, vals in wanted.items():
        st.query_params[k] = vals if len(vals) > 1 else vals[0]


NO_CONFIG = "(none)"
"""The Curves link's ``config`` when no configuration is overlaid (no label is this)."""
CURVES_EMPTY_FROM_LINK = "ui.curves_empty_from_link"
"""Set when the Curves link asked for no configuration: the page then keeps the overlay empty."""


def restore_curves_from_link() -> None:
    """On the session's first run of the Curves page, take its grouping, selection and options from the URL.

    Values are put in the widgets' state as they are; the page drops those that
    are not valid options before drawing the widgets. An interval method from the
    link counts as the user's choice (:data:`~perfmodel.ui.state.CURVES_INTERVALS_CHOSEN`):
    it wins over the page's size-dependent default.
    """
    if st.session_state.get(_CURVES_CHECKED):
        return
    st.session_state[_CURVES_CHECKED] = True
    qp = K.QP_CURVES
    by = st.query_params.get_all(qp["by"])
    if by:
        st.session_state[K.CURVES_BY] = list(by)
    configs = st.query_params.get_all(qp["config"])
    if configs == [NO_CONFIG]:
        st.session_state[K.CURVES_CONFIGS] = []
        st.session_state[CURVES_EMPTY_FROM_LINK] = True
    elif configs:
        st.session_state[K.CURVES_CONFIGS] = list(configs)
    for name, key in (("shape", K.CURVES_SHAPE), ("intervals", K.CURVES_INTERVALS)):
        value = st.query_params.get(qp[name])
        if value:
            st.session_state[key] = value
            if name == "intervals":
                st.session_state[K.CURVES_INTERVALS_CHOSEN] = value


def write_curves_link(dataset_id: str | None, by: Sequence[str], configs: Sequence[str], shape: str,
                      intervals: str | None) -> None:
    """Put the Curves page's view in the URL so that a copied link reopens it.

    Parameters
    ----------
    dataset_id
        The selected dataset.
    by
        Grouping columns.
    configs
        Labels of the configurations shown.
    shape, intervals
        Fit options; ``intervals`` None leaves ``ci`` out (the page's default for the dataset's size
        applies when the link is opened).
    """
    qp = K.QP_CURVES
    wanted: dict[str, list[str]] = {}
    if dataset_id:
        wanted[K.QP_DATASET] = [dataset_id]
    # None chosen is written too (a link without ``config`` reopens the default overlay)
    for name, vals in (("by", list(by)), ("config", list(configs) or [NO_CONFIG] if by else []), ("shape", [shape]),
                       ("intervals", [intervals] if intervals else [])):
        if vals:
            wanted[qp[name]] = [str(v) for v in vals]
    managed = {K.QP_DATASET, *qp.values()}
    current = {k: st.query_params.get_all(k) for k in st.query_params.keys() if k in managed}
    if current == wanted:
        return
    for k in managed - wanted.keys():
        if k in st.query_params:
            del st.query_params[k]
    for k, vals in wanted.items():
        st.query_params[k] = vals if len(vals) > 1 else vals[0]
