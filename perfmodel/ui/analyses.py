"""Saved analyses in the app: save any page's state, reopen it from ``?analysis=ID``, list/rename/delete.

Every analysis page keeps its state in the URL (``st.query_params``), so a
page's saved analysis is that URL state: payload ``{"page": url path, "params":
{name: [values]}, "dataset": id}``, stored under kind = the page's url path.
Opening any page with ``?analysis=ID`` switches to the saved page (when it is
another one) with the saved parameters, where the page's own link readers put
them into its widgets. The Planner keeps its own payload (``{"dataset", "plan"}``,
kind ``planner``) through :func:`restore_analysis` and :func:`save_widget`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import parse_qs, urlsplit

import streamlit as st

from ..errors import PerfmodelError
from ..store import AnalysisInfo
from . import cached, links

__all__ = ["QUERY_KEY", "page_analysis", "current_params", "write_page_link", "restore_analysis", "save_widget", "manage_widget",
           "write_analysis_link"]

QUERY_KEY = "analysis"
_CHECKED = "analyses.checked.{kind}"
_APPLIED = "analyses.applied"
_OPEN = "analyses.open"
_PROBLEM = "analyses.problem"


def _page_paths() -> dict[str, str]:
    """Page name (its url path) -> script path, for ``st.switch_page``."""
    from .shell import PAGE_SPECS  # shell imports the pages' helpers; import late to avoid a cycle

    return {spec.url_path or spec.path: spec.path for spec in PAGE_SPECS}


def current_params() -> dict[str, list[str]]:
    """The page's state as the URL holds it: parameter -> values, without ``analysis``.

    Returns
    -------
    dict
        Parameter name -> list of values (a parameter may repeat).
    """
    return {k: [str(v) for v in st.query_params.get_all(k)] for k in st.query_params.keys() if k != QUERY_KEY}


def _saved_params(a: AnalysisInfo) -> dict[str, list[str]]:
    raw = a.payload.get("params")
    if not isinstance(raw, Mapping):
        return {}
    return {str(k): [str(x) for x in (v if isinstance(v, list) else [v])] for k, v in raw.items()}


def _query_for(params: Mapping[str, list[str]], aid: str) -> dict[str, str | list[str]]:
    out: dict[str, str | list[str]] = {k: v if len(v) > 1 else v[0] for k, v in params.items() if v}
    out[QUERY_KEY] = aid
    return out


def _target(a: AnalysisInfo) -> str | None:
    """The page an analysis was saved on (None: a kind no page knows)."""
    page = a.payload.get("page", a.kind)
    return str(page) if str(page) in _page_paths() else None


def _open_link(page: str) -> None:
    """Once per analysis id in a session: load ``?analysis=ID`` and put its page state in place."""
    aid = st.query_params.get(QUERY_KEY)
    if not aid or st.session_state.get(_APPLIED) == aid:
        return
    st.session_state[_APPLIED] = aid
    st.session_state.pop(_PROBLEM, None)
    try:
        a = cached.open_store(cached.home()).analysis(str(aid))
    except PerfmodelError as exc:
        st.session_state[_PROBLEM] = (aid, f"The link's analysis cannot be opened: {exc}")
        return
    target = _target(a)
    if target is None:
        st.session_state[_PROBLEM] = (aid, f"analysis {a.name!r} was saved by {a.kind!r}, which no page opens")
        return
    params = _saved_params(a)
    st.session_state[_OPEN] = {"id": a.id, "name": a.name, "page": target, "params": params}
    if target == "planner":
        # The Planner reads its own payload from ?analysis=ID (restore_analysis).
        if page != target:
            st.switch_page(_page_paths()[target], query_params={QUERY_KEY: a.id})
        return
    query = _query_for(params, a.id)
    if page != target:
        st.switch_page(_page_paths()[target], query_params=query)
    # Same page: the URL becomes the saved state before the page's link readers run.
    st.query_params.from_dict(query)


def page_analysis(page: str) -> None:
    """Open ``?analysis=ID`` (switching page if it was saved on another), and offer to save this page's state.

    Call it near the top of a page, before the page reads its link
    (:func:`perfmodel.ui.pickers.restore_dataset_link`): it may replace the
    URL's parameters with the saved ones, or switch to the saved page. The
    save form and the open analysis's name are drawn in the sidebar; what is
    saved is the URL's state when the button is pressed (each page writes its
    state there on every run).

    Parameters
    ----------
    page
        The page's url path (``data``, ``curves``, ``whatif``, ``attribution``...).
    """
    _open_link(page)
    problem = st.session_state.get(_PROBLEM)
    if problem and st.query_params.get(QUERY_KEY) == problem[0]:
        st.warning(problem[1], icon=":material/link_off:")
    with st.sidebar:
        with st.form(f"analyses.save.{page}", clear_on_submit=False, border=False):
            name = st.text_input("Save this view as", key=f"analyses.name.{page}", placeholder="analysis name")
            submitted = st.form_submit_button("Save analysis", icon=":material/bookmark_add:")
        if submitted:
            params = current_params()
            dataset = params.get("dataset", [None])[0]
            try:
                a = cached.open_store(cached.home()).save_analysis(
                    name, page, {"page": page, "params": params, "dataset": dataset})
            except PerfmodelError as exc:
                st.error(str(exc))
            else:
                st.session_state[_APPLIED] = a.id
                st.session_state[_OPEN] = {"id": a.id, "name": a.name, "page": page, "params": params}
                st.query_params[QUERY_KEY] = a.id
                st.success(f"Saved {a.name!r}: {_link_md(a.id)}", icon=":material/bookmark_added:")
        opened = st.session_state.get(_OPEN)
        if opened and opened["page"] == page and st.query_params.get(QUERY_KEY) == opened["id"]:
            changed = "" if current_params() == opened["params"] else " (changed since it was saved)"
            st.caption(f"Analysis open: **{opened['name']}**{changed} · {_link_md(opened['id'])}")


def write_page_link(link: str) -> None:
    """Make a page's own relative link (``page?a=1&b=2``) the URL's state, keeping ``?analysis=ID``.

    For a page that builds its link as a string rather than writing
    ``st.query_params`` itself, so that a saved analysis captures its view.

    Parameters
    ----------
    link
        Relative URL whose query string is the page's whole state.
    """
    wanted = {k: v for k, v in parse_qs(urlsplit(link).query, keep_blank_values=False).items() if k != QUERY_KEY}
    if current_params() == wanted:
        return  # writing an unchanged URL would still send a message to the browser
    aid = st.query_params.get(QUERY_KEY)
    st.query_params.from_dict(_query_for(wanted, aid) if aid else
                              {k: v if len(v) > 1 else v[0] for k, v in wanted.items()})


def restore_analysis(kind: str, apply: Callable[[Mapping[str, Any]], None]) -> str | None:
    """On a session's first run of the page, reopen ``?analysis=ID`` by handing its payload to ``apply``.

    An analysis saved on another page switches to that page with its state.

    Parameters
    ----------
    kind
        The page's analysis kind.
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
        if _target(a) is not None:
            st.session_state[flag] = False  # the page may be opened again with one of its own
            _open_link(kind)
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
                st.success(f"Saved {a.name!r}: {_link_md(a.id)}")


def _link(analysis_id: str) -> str:
    """The full URL that reopens a saved analysis (the app's root with ``?analysis=ID``)."""
    return links.absolute(f"./?{QUERY_KEY}={analysis_id}")


def _link_md(analysis_id: str) -> str:
    """The link of :func:`_link` as Markdown a reader can click (it had been shown as code, to copy only)."""
    url = _link(analysis_id)
    return f"[{url}]({url})"


def manage_widget(kind: str) -> None:
    """Every saved analysis, of every page: its page and link, rename, delete.

    Parameters
    ----------
    kind
        The calling page's analysis kind (keys its widgets; deleting its open analysis drops the link).
    """
    store = cached.open_store(cached.home())
    items = store.analyses()
    with st.expander(f"Saved analyses ({len(items)})", icon=":material/bookmarks:"):
        if not items:
            st.caption("None yet.")
            return
        labels = {a.id: f"{a.name} · {a.payload.get('page', a.kind)} ({a.created_at[:19]})" for a in items}
        aid = st.selectbox("Analysis", list(labels), format_func=labels.__getitem__, key=f"analyses.pick.{kind}")
        st.markdown(f"Link: {_link_md(aid)} (opens the page it was saved on)")
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
