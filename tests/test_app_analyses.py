"""Saved analyses from every page, headless (AppTest): save a page's view, then a fresh app (a new server
session on the same store, as after a restart) opened at ``/?analysis=ID`` lands on that page with the same view.

Runs on the sample dataset the app imports into an empty store; the assertions compare the reopened widgets
with the saved ones (and with non-default values set here), not with sample-specific figures.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from perfmodel.store import Store
from perfmodel.ui import state as K
from perfmodel.ui import whatif as W

REPO = Path(__file__).resolve().parents[1]
APP = str(REPO / "app.py")
TIMEOUT_S = 120


def _open(page: str | None = None, **query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT_S)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    if not page:
        return at
    # A browser drops the first page's parameters on the way to another page; AppTest keeps them.
    at.query_params.clear()
    at.query_params.update(query)
    return at.switch_page(page).run()


def _ok(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def _save(at: AppTest, page: str, name: str) -> str:
    at.sidebar.text_input(key=f"analyses.name.{page}").set_value(name)
    [b for b in at.sidebar.button if "Save analysis" in str(b.label)][0].click().run()
    _ok(at)
    saved = [a for a in Store().analyses(page) if a.name == name]
    assert len(saved) == 1
    a = saved[0]
    assert a.payload["page"] == page and at.query_params["analysis"] in (a.id, [a.id])
    assert any(f"?analysis={a.id}" in s.value for s in at.sidebar.success)
    # a link to click, not code to copy
    assert any(f"?analysis={a.id})" in s.value and "](" in s.value and "`" not in s.value for s in at.sidebar.success)
    return a.id


def _qp(at: AppTest) -> dict[str, list[str]]:
    return {k: v if isinstance(v, list) else [v] for k, v in at.query_params.items() if k != "analysis"}


def _reopen(aid: str, title: str) -> AppTest:
    """A new session at the app's root with only the link: it switches to the saved page."""
    at = _open(analysis=aid)
    _ok(at)
    assert [t.value for t in at.title] == [title]
    assert any("Analysis open" in c.value for c in at.sidebar.caption)
    return at


def test_curves_view_reopens_from_the_root_link() -> None:
    at = _open("pages/curves.py")
    _ok(at)
    at.multiselect(key=K.CURVES_BY).set_value(["input_len_tok"]).run()
    at.selectbox(key=K.CURVES_SHAPE).set_value("exp").run()
    _ok(at)
    configs = at.multiselect(key=K.CURVES_CONFIGS).value
    assert configs and at.query_params["shape"] in ("exp", ["exp"])
    params = _qp(at)
    aid = _save(at, "curves", "curves by input")
    assert Store().analysis(aid).payload["params"] == params

    at2 = _reopen(aid, "Curves")
    assert at2.multiselect(key=K.CURVES_BY).value == ["input_len_tok"]
    assert at2.selectbox(key=K.CURVES_SHAPE).value == "exp"
    assert at2.multiselect(key=K.CURVES_CONFIGS).value == configs
    assert at2.selectbox(key=K.CURVES_DATASET_WIDGET).value == params["dataset"][0]
    assert _qp(at2) == params
    # The link opened on the Planner (which reads its own analyses) switches to Curves as well.
    at3 = AppTest.from_file(APP, default_timeout=TIMEOUT_S).run()
    at3.query_params["analysis"] = aid
    at3.switch_page("pages/planner.py").run()
    _ok(at3)
    assert [t.value for t in at3.title] == ["Curves"]
    assert at3.multiselect(key=K.CURVES_BY).value == ["input_len_tok"]


def test_data_filters_reopen() -> None:
    at = _open()
    _ok(at)
    ms = at.multiselect(key=K.FILTER["lengths"])
    choice = ms.options[-1]
    ms.set_value([choice]).run()
    _ok(at)
    params = _qp(at)
    assert len(params) >= 2  # dataset + the filter
    aid = _save(at, "data", "one length")
    at2 = _reopen(aid, "Data")
    assert at2.multiselect(key=ms.key).value == [choice]
    assert _qp(at2) == params


def test_whatif_inputs_reopen() -> None:
    at = _open("pages/whatif.py")
    _ok(at)
    at.number_input(key=W.KEYS["input_len_tok"]).set_value(333.0).run()
    at.number_input(key=W.KEYS["batch_max"]).set_value(48.0).run()
    _ok(at)
    params = _qp(at)
    aid = _save(at, "whatif", "what if 333")
    at2 = _reopen(aid, "What-if")
    assert at2.number_input(key=W.KEYS["input_len_tok"]).value == 333.0
    assert at2.number_input(key=W.KEYS["batch_max"]).value == 48.0
    assert _qp(at2) == params


def test_attribution_point_reopens() -> None:
    at = _open("pages/attribution.py")
    _ok(at)
    at.number_input(key="attribution.q.batch_size").set_value(5.0).run()
    at.number_input(key="attribution.q.input_len_tok").set_value(77.0).run()
    _ok(at)
    assert at.query_params["batch"] in ("5", ["5"])
    params = _qp(at)
    aid = _save(at, "attribution", "batch 5")
    at2 = _reopen(aid, "Attribution")
    assert at2.number_input(key="attribution.q.batch_size").value == 5.0
    assert at2.number_input(key="attribution.q.input_len_tok").value == 77.0
    assert _qp(at2) == params


@pytest.mark.parametrize("page", [None, "pages/curves.py", "pages/planner.py"])
def test_bad_id_warns(page: str | None) -> None:
    at = _open(page, analysis="not-a-real-id")
    _ok(at)
    assert any("no saved analysis" in w.value for w in at.warning)


@pytest.mark.parametrize(("page_url", "relative", "expected"), [
    ("http://gpu-box:8501/curves?by=model", "./?analysis=ab12", "http://gpu-box:8501/?analysis=ab12"),
    ("http://gpu-box:8501/", "./?analysis=ab12", "http://gpu-box:8501/?analysis=ab12"),
    ("https://lab.example/perfmodel/attribution?batch=4", "attribution?batch=16",
     "https://lab.example/perfmodel/attribution?batch=16"),  # a server.baseUrlPath is kept
    ("", "attribution?batch=16", "attribution?batch=16"),  # no browser session: left relative
])
def test_links_shown_to_copy_are_full_urls(page_url: str, relative: str, expected: str) -> None:
    from perfmodel.ui.links import absolute

    assert absolute(relative, page_url) == expected
