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
    once per session, in case that rerun is not possible.

    Returns
    -------
    str
        :func:`perfmodel.ui.cached.home`.
    """
    through_the_router()
    startup()
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
    """Record that ``app.py``'s router runs in this session (call it right after ``st.navigation``)."""
    st.session_state[K.ROUTED] = True


def sidebar() -> None:
    """The sidebar shared by every page: what the app is and where its data lives."""
    home = cached.home()
    with st.sidebar:
        st.caption(f"perfmodel {__version__}: predict and explain LLM inference throughput")
        n = len(cached.datasets_table(home, cached.store_stamp(home)))
        st.caption(f"{n} dataset(s) in `{home}`")
