"""The main journey in a real browser: load the app, upload a file, Import, see the plot,
then open the Curves page from a shared link and see the knee markers.

Starts ``streamlit run app.py`` on a free port with its own PERFMODEL_HOME and
drives Debian's chromium through Python playwright (no ``playwright install``).
Install the browser with ``apt-get install -y chromium chromium-driver``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
                 "--no-first-run", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
SCREENSHOT = Path("/tmp/perfmodel-data-page.png")
START_TIMEOUT_S = 90


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def streamlit_server(home: Path, log_path: Path) -> Iterator[str]:
    """``streamlit run app.py`` on a free port with ``home`` as PERFMODEL_HOME; stopped on exit."""
    port = _free_port()
    log = log_path.open("ab")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none"],
        cwd=REPO, env={**os.environ, "PERFMODEL_HOME": str(home)}, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                log.flush()
                pytest.fail("streamlit did not start:\n" + log_path.read_text()[-3000:])
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)
        log.close()



@pytest.fixture
def app_url(_isolated_home: Path, tmp_path: Path) -> Iterator[str]:
    if not CHROMIUM.exists():
        pytest.skip(f"needs Debian's chromium at {CHROMIUM} (apt-get install -y chromium chromium-driver)")
    pytest.importorskip("playwright.sync_api", reason="needs playwright (pip install perfmodel[browser])")
    with streamlit_server(_isolated_home, tmp_path / "streamlit.log") as url:
        yield url


def _data_page_with_file(browser: Any, app_url: str, expect: Any, path: Path, *, height: int) -> Any:
    """A new page on the Data page with the import expander open and ``path`` chosen in its uploader."""
    page = browser.new_page(viewport={"width": 1400, "height": height})
    page.set_default_timeout(60_000)
    page.goto(app_url)
    expect(page.get_by_role("heading", name="Data", exact=True)).to_be_visible()
    # the import expander holds the form's own expander ("What the file does not record"): its first
    expander = page.locator('[data-testid="stExpander"]').filter(has_text="Import benchmark result files").first
    if expander.locator("details").first.get_attribute("open") is None:
        expander.locator("summary").first.click()
    page.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(str(path))
    return page


def test_upload_import_and_plot(app_url: str, all_results_csv: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=60_000)  # the first run imports plotly and the importers

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = _data_page_with_file(browser, app_url, expect, all_results_csv, height=1100)
            expect(page.get_by_text(all_results_csv.name).first).to_be_visible()
            page.locator('[data-testid="stBaseButton-primaryFormSubmit"]').click()
            expect(page.locator('[data-testid="stAlertContentSuccess"]')).to_contain_text("Imported")
            # The page may still show the sample dataset's chart while it reruns: wait for this file's.
            expect(page.get_by_text("4,772 of 4,772 runs match")).to_be_visible()
            plot = page.locator(".js-plotly-plot").first
            expect(plot.locator(".legend")).to_contain_text("gaudi2")
            points = plot.locator(".scatterlayer .point")
            page.wait_for_function(
                "() => document.querySelectorAll('.js-plotly-plot .scatterlayer .point').length > 1000")
            n_points = points.count()
            # Streamlit scrolls inside its own container: a tall viewport shows the whole page.
            page.set_viewport_size({"width": 1400, "height": 3400})
            page.wait_for_timeout(1000)
            page.screenshot(path=str(SCREENSHOT))
            plot.screenshot(path=str(SCREENSHOT.with_name("perfmodel-data-chart.png")))
            knees = _open_curves_from_link(page, app_url, expect)
        finally:
            browser.close()
    # LLM-Inference-Bench's All_results.csv holds 4,772 measurements; most have a batch size.
    assert n_points > 1000
    # The linked configuration's knee, drawn where the fit puts it (the same fit, computed here).
    assert knees["n_rendered"] >= 1
    assert knees["x"] == pytest.approx(list(knees["expected"]), rel=1e-6)


CURVES_BY = ("hardware", "device_count", "framework", "model", "input_len_tok", "output_len_tok")
KNEE_JS = """() => {
  const gd = document.querySelector('.js-plotly-plot');
  if (!gd || !gd.data) return null;
  const i = gd.data.findIndex(t => t.meta === 'knee');
  if (i < 0) return null;
  const trace = gd.querySelectorAll('.scatterlayer .trace')[i];
  return {name: gd.data[i].name, x: Array.from(gd.data[i].x),
          n_rendered: trace ? trace.querySelectorAll('.point').length : 0};
}"""


def _open_curves_from_link(page, app_url: str, expect) -> dict:  # noqa: ANN001 - playwright types
    """Open the Curves page from a shared link to one configuration of the imported file; read its knee trace."""
    from urllib.parse import urlencode

    from perfmodel.curves import fit_curves
    from perfmodel.plots import config_labels
    from perfmodel.store import Store

    store = Store()
    info = next(i for i in store.datasets() if i.n_runs == 4772)
    table, fits = fit_curves(store.runs(info.id), CURVES_BY, intervals="none", return_fits=True)
    labels = config_labels(table, CURVES_BY)
    label, fit = next((lb, f) for lb, f in zip(labels, fits.values(), strict=True) if f.success and f.knees)
    query = urlencode({"dataset": info.id, "by": list(CURVES_BY), "config": label, "ci": "asymptotic"},
                      doseq=True)
    page.set_viewport_size({"width": 1400, "height": 1100})
    page.goto(f"{app_url}/curves?{query}")
    expect(page.get_by_role("heading", name="Curves", exact=True)).to_be_visible()
    plot = page.locator(".js-plotly-plot").first
    expect(plot.locator(".legend")).to_contain_text(label)  # one entry per configuration, and a key of markers
    expect(plot.locator(".legend")).to_contain_text("knee")
    handle = page.wait_for_function(f"() => {{ const r = ({KNEE_JS})(); return r && r.n_rendered > 0 && r; }}")
    knees = dict(handle.json_value())
    page.set_viewport_size({"width": 1400, "height": 2600})
    page.wait_for_timeout(500)
    page.screenshot(path=str(SCREENSHOT.with_name("perfmodel-curves-page.png")))
    knees["expected"] = fit.knees
    return knees


def test_the_upload_form_starts_empty_after_an_import(app_url: str) -> None:
    """The fields kept their values in the browser after an import (the session state was cleared, not the
    widgets), and the next file went into the store with the last one's settings."""
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=60_000)
    runs_csv = REPO / "tests" / "data" / "ui" / "ui_runs.csv"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = _data_page_with_file(browser, app_url, expect, runs_csv, height=1400)
            name = page.get_by_placeholder("from the file names")
            name.fill("first upload")
            framework = page.locator('[data-testid="stTextInput"]').filter(has_text="Framework version").locator(
                "input")
            framework.fill("9.9.9")
            page.locator('[data-testid="stBaseButton-primaryFormSubmit"]').click()
            # ui_runs.csv's warm-up row is left out for an error: the banner is a warning
            expect(page.locator('[data-testid="stAlertContentWarning"]').filter(has_text="Imported")).to_contain_text(
                "first upload")
            page.wait_for_timeout(1000)
            # the new form: no file, and every field back to "as in file"
            expect(page.locator('[data-testid="stFileUploaderFile"]')).to_have_count(0)
            expect(page.get_by_placeholder("from the file names")).to_have_value("")
            expect(page.locator('[data-testid="stTextInput"]').filter(has_text="Framework version").locator(
                "input")).to_have_value("")
        finally:
            browser.close()
