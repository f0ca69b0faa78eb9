"""Saved analyses in the app: save the current page state, reopen it from ``?analysis=ID``, list/rename/delete."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import streamlit as st

from ..errors import PerfmodelError
from . import cached

__all__ = ["QUERY_KEY", "restore_analysis", "save_widget", "manage_widget", "write_analysis_link"]

QUERY_KEY = "analysis"
_CHECKED = "analyses.checked.{kind}"


def restore_analysis(kind: str, apply: Callable[[Mapping[str, Any]], None]) -> str | None:
    """On a session's first run of the page, reopen ``?analysis=ID`` by handing its payload to ``apply``.

    Parameters
    ----------
    kind
        The page's analysis kind; an analysis of another kind is refused with a message.
    apply
        Puts the payload into the widgets' session state (called before they are drawn).

    Returns
    -------
    str or None
        A message to show when the link could not be opened.
    """
    flag = _CHECKED.format(kind=kind)
    if st.session_state.get(flag):
        return None
    st.session_state[flag] = True
    aid = st.query_params.get(QUERY_KEY)
    if not aid:
        return None
    try:
        a = cached.open_store(cached.home()).analysis(str(aid))
    except PerfmodelError as exc:
        return str(exc)
    if a.kind != kind:
        return f"analysis {a.name!r} was saved on the {a.kind} page, not this one"
    apply(a.payload)
    st.session_state[f"analyses.current.{kind}"] = a.id
    return None


def write_analysis_link(kind: str) -> None:
    """Keep ``?analysis=ID`` in the URL while the opened (or just saved) analysis is the current one.

    Parameters
    ----------
    kind
        The page's analysis kind.
    """
    aid = st.session_state.get(f"analyses.current.{kind}")
    if aid:
        st.query_params[QUERY_KEY] = aid


def save_widget(kind: str, payload: Callable[[], Mapping[str, Any]]) -> None:
    """A small form that saves the current state as a named analysis and shows its link.

    Parameters
    ----------
    kind
        The page's analysis kind.
    payload
        Returns the state to save (JSON-serialisable).
    """
    with st.form(f"analyses.save.{kind}", clear_on_submit=False, border=False):
        c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
        name = c1.text_input("Save this state as", key=f"analyses.name.{kind}", placeholder="analysis name")
        if c2.form_submit_button("Save analysis", icon=":material/bookmark_add:"):
            try:
                a = cached.open_store(cached.home()).save_analysis(name, kind, dict(payload()))
            except PerfmodelError as exc:
                st.error(str(exc))
            else:
                st.session_state[f"analyses.current.{kind}"] = a.id
                st.query_params[QUERY_KEY] = a.id
                st.success(f"Saved {a.name!r}: link `?{QUERY_KEY}={a.id}`")


def manage_widget(kind: str) -> None:
    """The saved analyses of this page: open link, rename, delete.

    Parameters
    ----------
    kind
        The page's analysis kind.
    """
    store = cached.open_store(cached.home())
    items = store.analyses(kind)
    with st.expander(f"Saved analyses ({len(items)})", icon=":material/bookmarks:"):
        if not items:
            st.caption("None yet.")
            return
        labels = {a.id: f"{a.name} ({a.created_at[:19]})" for a in items}
        aid = st.selectbox("Analysis", list(labels), format_func=labels.__getitem__, key=f"analyses.pick.{kind}")
        st.markdown(f"Link: `?{QUERY_KEY}={aid}`")
        c1, c2, c3 = st.columns([2, 1, 1], vertical_alignment="bottom")
        new = c1.text_input("New name", key=f"analyses.rename.{kind}")
        if c2.button("Rename", key=f"analyses.rename_btn.{kind}"):
            try:
                store.rename_analysis(aid, new)
                st.rerun()
            except PerfmodelError as exc:
                st.error(str(exc))
        if c3.button("Delete", key=f"analyses.delete_btn.{kind}", type="secondary"):
            store.delete_analysis(aid)
            if st.session_state.get(f"analyses.current.{kind}") == aid:
                st.session_state.pop(f"analyses.current.{kind}", None)
                st.query_params.pop(QUERY_KEY, None)
            st.rerun()
