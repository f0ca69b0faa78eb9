"""Print a report's HTML to PDF with headless Chromium (Playwright).

Playwright is an optional dependency (``pip install perfmodel[browser]``) and
drives a system Chromium (Debian: ``apt-get install chromium``) rather than a
downloaded one; both are looked up only when a PDF is asked for, and a missing
one raises a :class:`~perfmodel.errors.PerfmodelError` with the install hint.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ..errors import PerfmodelError

__all__ = ["html_to_pdf", "chromium_path", "CHROMIUM_ARGS", "CHROMIUM_ENV", "RENDER_TIMEOUT_MS"]

CHROMIUM_ENV = "PERFMODEL_CHROMIUM"
"""Environment variable naming the Chromium executable (default: /usr/bin/chromium, else on PATH)."""
CHROMIUM_ARGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync")
RENDER_TIMEOUT_MS = 60_000


def chromium_path() -> str:
    """The Chromium executable to print with.

    Returns
    -------
    str

    Raises
    ------
    PerfmodelError
        None found; the message says how to install one.
    """
    cand = os.environ.get(CHROMIUM_ENV) or "/usr/bin/chromium"
    if Path(cand).is_file():
        return cand
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    raise PerfmodelError("PDF reports need Chromium: install it (Debian/Ubuntu: apt-get install chromium) or set "
                         f"{CHROMIUM_ENV} to a Chromium/Chrome executable; HTML reports need nothing extra")


def html_to_pdf(html: str, path: str | Path) -> Path:
    """Render HTML (with its charts) in headless Chromium and print it to a PDF file.

    Parameters
    ----------
    html
        A self-contained document (:func:`perfmodel.report.render_html` with ``static=True``).
    path
        Output file.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    PerfmodelError
        Playwright or Chromium is missing (with the install hint), or the page failed to render.
    """
    try:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise PerfmodelError("PDF reports need Playwright: pip install 'perfmodel[browser]' (it drives the system "
                             "Chromium; no `playwright install` needed)") from None
    exe = chromium_path()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=exe, args=list(CHROMIUM_ARGS))
            try:
                page = browser.new_page()
                # Nothing may leave the machine: the report is self-contained.
                page.route("**/*", lambda route: route.abort() if not route.request.url.startswith(("data:", "about:"))
                           else route.continue_())
                page.set_content(html, wait_until="load", timeout=RENDER_TIMEOUT_MS)
                page.wait_for_function(
                    "Array.from(document.querySelectorAll('.pm-plot')).every(d => d.querySelector('.main-svg'))",
                    timeout=RENDER_TIMEOUT_MS)
                page.emulate_media(media="print")
                page.pdf(path=str(out), format="A4", landscape=True, print_background=True,
                         margin={"top": "12mm", "bottom": "12mm", "left": "10mm", "right": "10mm"})
            finally:
                browser.close()
    except PlaywrightError as exc:
        raise PerfmodelError(f"printing the report to {out} with Chromium ({exe}) failed: {exc}") from None
    return out
