"""Every input of every analysis page is in its link, headless (AppTest).

For each page: change each input widget in turn (the widgets a change brings up included) and check that the
URL changed with it; then open a fresh session at the resulting URL, as a copied link or a saved analysis does,
and check that every widget comes back with the same value. A widget added to a page without a place in the URL
fails here unless it is listed in :data:`NOT_IN_LINKS` with the reason.

Runs on the sample dataset the app imports into an empty store, and a second dataset (the H200 sweeps alone) so
that the dataset choices can change too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from perfmodel.api import import_files
from perfmodel.store import Store
from perfmodel.ui import samples

REPO = Path(__file__).resolve().parents[1]
APP = str(REPO / "app.py")
TIMEOUT_S = 180

#: Widget key prefixes that are not part of a view, and why.
NOT_IN_LINKS = {
    "analyses.": "the save-this-view form and the saved-analyses manager",
    "data.upload.": "the import form's settings for the next upload",
    "data.delete_confirm": "the delete confirmation (never kept)",
    "sweeps.form.": "the sweep form: in the URL as last submitted (tests/test_app_analyses_pages.py)",
    "data.issue_severity": "a filter of the issues table",
    "data.import_issue_severity": "a filter of the last import's issues",
}
KINDS = ("selectbox", "multiselect", "toggle", "checkbox", "number_input", "text_input", "text_area", "radio",
         "segmented_control")
PAGES = ("data", "curves", "compare", "attribution", "whatif", "monitor", "planner", "report")


def _open(page: str, query: dict[str, Any] | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT_S)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    at.run()
    # A browser drops the first page's parameters on the way to another page; AppTest keeps them.
    at.query_params.clear()
    at.query_params.update(query or {})
    at.switch_page(f"pages/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _url(at: AppTest) -> dict[str, list[str]]:
    return {k: [str(x) for x in v] if isinstance(v, list) else [str(v)] for k, v in at.query_params.items()}


def _widgets(at: AppTest) -> dict[str, tuple[str, Any]]:
    out = {}
    for kind in KINDS:
        for w in at.get(kind):
            if w.key and not any(w.key.startswith(p) for p in NOT_IN_LINKS):
                out[w.key] = (kind, w)
    return out


def _change(kind: str, w: Any) -> bool:
    """Give the widget another valid value; False when it has none to offer."""
    if kind in ("toggle", "checkbox"):
        w.set_value(not w.value)
    elif kind == "number_input":
        step = w.step or 1
        value = (w.value or 0) + step
        if w.proto.has_max and value > w.proto.max:
            value = (w.value or 0) - step
        w.set_value(value)
    elif kind == "selectbox":
        if len(w.options) < 2:
            return False
        w.select_index(1 if w.index == 0 else 0)
    elif kind in ("radio", "segmented_control"):
        others = [o for o in w.options if o != w.value]
        if not others:
            return False
        w.set_value(others[0])
    elif kind == "multiselect":
        if w.value:
            w.set_value(list(w.value)[:-1])
        else:
            plain = [o for o in w.options if w.format_func(o) == o]
            if not plain:
                return False
            w.set_value([plain[0]])
    elif kind in ("text_input", "text_area"):
        w.set_value("EUR" if kind == "text_input" else "h200=9.5")
    return True


@pytest.fixture(autouse=True)
def two_datasets() -> None:
    samples.ensure_sample_data(Store())
    import_files(sorted((REPO / "sample_runs").glob("*h200*.csv")), name="h200 sweeps", store=Store())


@pytest.mark.parametrize("page", PAGES)
def test_every_input_is_in_the_link_and_comes_back(page: str) -> None:
    at = _open(page)
    changed: list[str] = []
    unchanged: list[str] = []
    for _ in range(60):
        todo = [k for k in _widgets(at) if k not in changed and k not in unchanged]
        if not todo:
            break
        key = todo[0]
        kind, w = _widgets(at)[key]
        if w.disabled or not _change(kind, w):
            unchanged.append(key)
            continue
        before = _url(at)
        at.run()
        assert not at.exception, (key, [e.value for e in at.exception])
        assert _url(at) != before, f"{page}: changing {kind} {key!r} left the URL as it was: {before}"
        changed.append(key)
    assert changed, f"{page}: no input could be changed"

    url = _url(at)
    values = {k: w.value for k, (_, w) in _widgets(at).items()}
    at2 = _open(page, {k: v if len(v) > 1 else v[0] for k, v in url.items()})
    again = {k: w.value for k, (_, w) in _widgets(at2).items()}
    lost = {k: (values[k], again.get(k)) for k in values if again.get(k) != values[k]}
    assert not lost, f"{page}: the link {url} reopened these inputs differently (was, now): {lost}"
    assert _url(at2) == url
