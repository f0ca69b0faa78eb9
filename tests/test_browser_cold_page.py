"""A cold server's first request names a page (``/curves?by=hardware``, a shared link): the page shows the
sample data through the app's router, with the link's inputs, in a real browser.

Streamlit serves that first request by running ``pages/curves.py`` without
``app.py``. Before the first fix the page said "No dataset yet"; before the second it came up
narrow under the ``pages/`` folder's file names ("app", "attribution", ...) instead of the app's
sections (both reproduced with this test). Starts streamlit and Debian's chromium the way
``tests/test_browser.py`` does.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_browser import CHROMIUM, CHROMIUM_ARGS, streamlit_server

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_first_request_to_a_page_url_imports_the_sample(_isolated_home: Path, tmp_path: Path) -> None:
    if not CHROMIUM.exists():
        pytest.skip(f"needs Debian's chromium at {CHROMIUM} (apt-get install -y chromium chromium-driver)")
    pytest.importorskip("playwright.sync_api", reason="needs playwright (pip install perfmodel[browser])")
    from playwright.sync_api import expect, sync_playwright

    from perfmodel.store import Store
    from perfmodel.ui.samples import SAMPLE_DATASET_NAME

    expect.set_options(timeout=60_000)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            with streamlit_server(_isolated_home, tmp_path / "streamlit.log") as url:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.goto(f"{url}/curves?by=hardware")
                expect(page.get_by_role("heading", name="Curves", exact=True)).to_be_visible()
                nav = page.locator('[data-testid="stSidebarNav"]')
                expect(nav).to_contain_text("Analyse")  # the router's sections, not the folder's file names
                expect(nav.get_by_text("attribution", exact=True)).to_have_count(0)
                expect(page.get_by_text("Configurations to overlay (2)")).to_be_visible()  # the link's grouping
                expect(page.locator(".js-plotly-plot").first.locator(".legend")).to_contain_text("h200")
                expect(page.get_by_text("No dataset yet")).to_have_count(0)
                assert "by=hardware" in page.url
                assert [d.name for d in Store().datasets()] == [SAMPLE_DATASET_NAME]
        finally:
            browser.close()
