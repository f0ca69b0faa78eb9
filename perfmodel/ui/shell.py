"""The app shell: pages, the shared sidebar and the start-up step.

Later issues add pages by appending to :data:`PAGE_SPECS`; ``app.py`` only
wires these together.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from .. import __version__
from ..errors import PerfmodelError
from . import cached
from . import state as K
from .samples import ensure_sample_data

__all__ = ["PageSpec", "PAGE_SPECS", "pages", "sidebar", "startup", "home", "routed", "through_the_router", "PAGE_TITLE"]

PAGE_TITLE = "perfmodel"


@dataclass(frozen=True)
class PageSpec:
    """One page of the app: its script (relative to ``app.py``), title, icon, section, URL."""

    path: str
    title: str
    icon: str
    section: str
    url_path: str | None = None
    default: bool = False


#: Every page, in menu order, grouped by section. The first default page is served at ``/``.
PAGE_SPECS: tuple[PageSpec, ...] = (
    PageSpec("pages/data.py", "Data", ":material/database:", "Data", "data", default=True),
    PageSpec("pages/curves.py", "Curves", ":material/show_chart:", "Analyse", "curves"),
    PageSpec("pages/attribution.py", "Attribution", ":material/insights:", "Analyse", "attribution"),
    PageSpec("pages/whatif.py", "What-if", ":material/tune:", "Analyse", "whatif"),
    PageSpec("pages/compare.py", "Compare", ":material/compare_arrows:", "Analyse", "compare"),
    PageSpec("pages/sweeps.py", "Sweeps", ":material/speed:", "Measure", "sweeps"),
    PageSpec("pages/monitor.py", "Monitor", ":material/monitor_heart:", "Measure", "monitor"),
    PageSpec("pages/planner.py", "Planner", ":material/calculate:", "Plan", "planner"),
    PageSpec("pages/report.py", "Report", ":material/description:", "Plan", "report"),
)


def pages() -> dict[str, list[st.Page]]:
    """The ``st.navigation`` argument: section -> pages.

    Returns
    -------
    dict
    """
    out: dict[str, list[st.Page]] = {}
    for spec in PAGE_SPECS:
        out.setdefault(spec.section, []).append(
            st.Page(spec.path, title=spec.title, icon=spec.icon, url_path=spec.url_path,
                    default=spec.default))
    return out


def startup() -> None:
    """Once per session: fill an empty store with the sample data (and remember to say so)."""
    if st.session_state.get(K.SAMPLE_CHECKED):
        return
    st.session_state[K.SAMPLE_CHECKED] = True
    home = cached.home()
    try:
        names = ensure_sample_data(cached.open_store(home))
    except PerfmodelError as exc:
        st.session_state[K.SAMPLE_ERROR] = str(exc)
        return
    if names:
        st.session_state[K.SAMPLE_NOTICE] = names
        cached.clear_store_caches()


def home() -> str:
    """The data directory, for a page: every page calls it first, so it also runs :func:`startup`.

    A fresh server asked for a page URL first (``/curves``, a shared link) runs
    ``pages/curves.py`` on its own: Streamlit takes the ``pages/`` folder for an old-style
    multipage app until ``st.navigation`` has been called once, so the page came up narrow,
    under the folder's file names, without ``app.py``'s start-up step. :func:`through_the_router`
    reruns such a run through ``app.py`` (same page, same URL); the start-up step runs here too,
    once per session, in case that rerun is not possible. It also keeps the other pages' inputs
    (:func:`keep_widget_values`, which the router calls too: a page run alone, as AppTest runs it, keeps them).

    Returns
    -------
    str
        :func:`perfmodel.ui.cached.home`.
    """
    through_the_router()
    startup()
    keep_widget_values()
    return cached.home()


def through_the_router() -> None:
    """Rerun a page that Streamlit ran without ``app.py`` through the router.

    Streamlit decides how to run a script before it runs: while ``st.navigation`` has never been
    called in this server process and a ``pages/`` folder sits beside the main script, it builds
    its own navigation from the folder's file names and runs the page file alone. ``app.py``'s
    ``st.navigation`` call clears that mode for the process; a first request for ``/`` does it,
    a first request for ``/curves`` never reaches it. Clearing it here and rerunning makes the
    rerun go through ``app.py``, which routes to the same page (its URL path and query
    parameters are kept). No-op in a session the router has already run in (:func:`routed`: the
    mode is then off for the process, except under AppTest, which turns it back on before every
    run, where a rerun would drop the widget event of that run), or on a Streamlit without the flag.
    """
    if st.session_state.get(K.ROUTED):
        return
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError:  # pragma: no cover - a Streamlit that has no pages-folder mode
        return
    if getattr(PagesManager, "uses_pages_directory", None):
        PagesManager.uses_pages_directory = False
        st.rerun()


def routed() -> None:
    """Record that ``app.py``'s router runs in this session (call it right after ``st.navigation``), and keep
    every page's inputs while another page is shown (:func:`keep_widget_values`)."""
    st.session_state[K.ROUTED] = True
    keep_widget_values()


NEVER_KEPT = ("delete_confirm",)
"""Widget keys containing these are not kept across pages: a delete confirmation re-arms on every visit."""
_KEPT_VALUE_TYPES = frozenset({"bool_value", "string_value", "string_array_value", "double_value", "int_value",
                               "double_array_value", "int_array_value"})
"""Widget value types re-saved: inputs (checkboxes, toggles, selections, text, numbers, sliders). Buttons,
uploaders and chat inputs (trigger, file and chat values), whose state a script may not set, and a widget
whose metadata names no type, are left alone. The app selects nothing in its charts and tables, whose
selections are string values that may not be set either."""


def keep_widget_values() -> None:
    """Re-save the value of every input widget, so that a page's inputs survive a visit to another page.

    At the end of a run Streamlit deletes the state of every widget the run did not draw, which includes every
    widget of the pages not shown: going to Curves and back reset the Planner (and a plan saved after coming
    back saved the defaults). A value re-saved in a run is not deleted (Option 3 of Streamlit's "Working with
    widgets in multipage apps"); called by the router before the page runs, this keeps them all. Buttons, file
    uploaders and chat inputs are skipped (their state cannot be set), found through Streamlit's widget
    metadata (:data:`_KEPT_VALUE_TYPES`); where that is not reachable (another Streamlit version) nothing is
    kept, as before.
    """
    try:
        from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

        ctx = get_script_run_ctx()
        state = ctx.session_state._state  # SafeSessionState -> SessionState
        ids = dict(state._key_id_mapper.id_key_mapping)
        meta = state._new_widget_state.widget_metadata
    except Exception:  # noqa: BLE001 - private API: without it the app works as before
        return
    for wid, key in ids.items():
        m = meta.get(wid)
        if m is None or m.value_type not in _KEPT_VALUE_TYPES or key not in st.session_state \
                or any(part in key for part in NEVER_KEPT):
            continue
        st.session_state[key] = st.session_state[key]


def sidebar() -> None:
    """The sidebar shared by every page: what the app is and where its data lives."""
    home = cached.home()
    with st.sidebar:
        st.caption(f"perfmodel {__version__}: predict and explain LLM inference throughput")
        n = len(cached.datasets_table(home, cached.store_stamp(home)))
        st.caption(f"{n} dataset(s) in `{home}`")
