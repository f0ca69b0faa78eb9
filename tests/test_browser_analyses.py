"""A saved analysis survives an app restart, in a real browser.

Save the Curves page's view as an analysis, stop the streamlit server, start a
new one on the same PERFMODEL_HOME, open ``/?analysis=ID`` and check that the
same page, dataset and selection come back. Starts streamlit and Debian's
chromium the way ``tests/test_browser.py`` does.
"""

from __future__ import annotations

import urllib.request
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from test_browser import CHROMIUM, CHROMIUM_ARGS, streamlit_server

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
CHIPS_JS = """() => Array.from(document.querySelectorAll('[data-testid="stMultiSelect"]')).map(
  m => m.innerText.split('\\n').map(s => s.trim()).filter(Boolean))"""
"""Each multiselect's visible text: its label and the chosen values."""


def _query(url: str) -> dict[str, list[str]]:
    return {k: v for k, v in parse_qs(urlsplit(url).query).items() if k != "analysis"}


def test_saved_curves_analysis_reopens_after_restart(_isolated_home: Path, tmp_path: Path) -> None:
    if not CHROMIUM.exists():
        pytest.skip(f"needs Debian's chromium at {CHROMIUM} (apt-get install -y chromium chromium-driver)")
    pytest.importorskip("playwright.sync_api", reason="needs playwright (pip install perfmodel[browser])")
    from playwright.sync_api import expect, sync_playwright

    from perfmodel.store import Store

    expect.set_options(timeout=60_000)
    log = tmp_path / "streamlit.log"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            with streamlit_server(_isolated_home, log) as url:
                page = browser.new_page(viewport={"width": 1400, "height": 1100})
                page.set_default_timeout(60_000)
                # The root first: a fresh server runs pages/*.py straight from a first URL naming one,
                # without app.py (so without its start-up sample import).
                page.goto(url)
                expect(page.get_by_role("heading", name="Data", exact=True)).to_be_visible()
                expect(page.get_by_text("runs match the filters")).to_be_visible()
                # A non-default view: grouped by input length only, exponential fits.
                page.goto(f"{url}/curves?by=input_len_tok&shape=exp")
                expect(page.get_by_role("heading", name="Curves", exact=True)).to_be_visible()
                plot = page.locator(".js-plotly-plot").first
                expect(plot.locator(".legend")).to_contain_text("knee")
                page.wait_for_function("() => new URLSearchParams(location.search).has('config')")
                saved_query = _query(page.url)
                saved_chips = page.evaluate(CHIPS_JS)
                legend = plot.locator(".legend").text_content()
                sidebar = page.locator('[data-testid="stSidebar"]')
                sidebar.get_by_label("Save this view as").fill("by input length")
                sidebar.get_by_role("button", name="Save analysis").click()
                saved = sidebar.locator('[data-testid="stAlertContentSuccess"]')
                expect(saved).to_contain_text("?analysis=")
                page.wait_for_function("() => new URLSearchParams(location.search).has('analysis')")
                aid = parse_qs(urlsplit(page.url).query)["analysis"][0]
                # the link shown is the full URL to paste elsewhere, at the app's root, and a link to click
                shown_link = saved.locator("a").first.text_content()
                shown_href = saved.locator("a").first.get_attribute("href")
                page.close()
            # The server is gone: the link is served by a new process reading the same store.
            with pytest.raises(OSError):
                urllib.request.urlopen(f"{url}/_stcore/health", timeout=2)
            with streamlit_server(_isolated_home, log) as url2:
                page = browser.new_page(viewport={"width": 1400, "height": 1100})
                page.set_default_timeout(60_000)
                page.goto(f"{url2}/?analysis={aid}")
                expect(page.get_by_role("heading", name="Curves", exact=True)).to_be_visible()
                plot = page.locator(".js-plotly-plot").first
                expect(plot.locator(".legend")).to_contain_text("knee")
                expect(page.locator('[data-testid="stSidebar"]')).to_contain_text("Analysis open: by input length")
                page.wait_for_function("() => new URLSearchParams(location.search).has('config')")
                reopened_query = _query(page.url)
                reopened_chips = page.evaluate(CHIPS_JS)
                reopened_legend = plot.locator(".legend").text_content()
                page.screenshot(path=str(tmp_path / "reopened.png"))
        finally:
            browser.close()
    assert shown_link == shown_href == f"{url}/?analysis={aid}"
    assert saved_query["by"] == ["input_len_tok"] and saved_query["shape"] == ["exp"]
    assert reopened_query == saved_query  # dataset, grouping, selection, fit options
    assert reopened_chips == saved_chips and "input length (tokens)" in saved_chips[0]  # the chip in words
    assert all(c in saved_chips[1] for c in saved_query["config"])
    assert reopened_legend == legend
    assert Store(_isolated_home).analysis(aid).payload["params"] == saved_query
