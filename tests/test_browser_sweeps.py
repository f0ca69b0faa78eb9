"""The Sweeps journey in a real browser, against a real inference server.

Starts ``transformers serve`` on 127.0.0.1 with the tiny random-weight model of
``tests/sweep_server.py``, opens the Sweeps page in Chromium through a streamlit
server on an empty PERFMODEL_HOME, fills the form (OpenAI-compatible server,
concurrency 1,2, short lengths, one repeat), starts the sweep, waits until the
progress bar says it is done and the curve shows the measured points, then
checks those points in the store. Starts streamlit and Debian's chromium the
way ``tests/test_browser.py`` does.

Every wait is on a condition with a generous limit (the machine may be busy
with other jobs); no sleep decides a result.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from sweep_server import ServerProcess, tiny_model_dir, transformers_server  # noqa: F401 - fixtures
from test_browser import CHROMIUM, CHROMIUM_ARGS, streamlit_server

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CONCURRENCY = (1, 2)
INPUT_LEN_TOK = 16
OUTPUT_LEN_TOK = 8
WAIT_MS = 90_000
"""Limit of each wait in the browser (a loaded 2-core machine; the sweep itself takes a few seconds)."""
POINTS_JS = """() => {
  const gd = document.querySelector('.js-plotly-plot');
  if (!gd || !gd.data) return null;
  const xs = [], ys = [];
  for (const t of gd.data) { if (t.x) { xs.push(...Array.from(t.x)); ys.push(...Array.from(t.y)); } }
  const rendered = gd.querySelectorAll('.scatterlayer .point').length;
  return {x: xs, y: ys, rendered: rendered};
}"""
"""Every x/y of the first chart's traces and the number of markers drawn."""


def _fill(page, label: str, value: str) -> None:  # noqa: ANN001 - playwright types
    box = page.get_by_label(label, exact=True)
    box.fill(value)
    box.press("Tab")  # commit without Enter (Enter in a form's field would submit the form)


@contextlib.contextmanager
def _sweeps_page(home: Path, tmp_path: Path, *, height: int) -> Iterator[tuple]:
    """A Chromium page over a streamlit server on ``home``: ``(page, expect, url)``; skips without Chromium or
    Playwright."""
    if not CHROMIUM.exists():
        pytest.skip(f"needs Debian's chromium at {CHROMIUM} (apt-get install -y chromium chromium-driver)")
    pytest.importorskip("playwright.sync_api", reason="needs playwright (pip install perfmodel[browser])")
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=WAIT_MS)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            with streamlit_server(home, tmp_path / "streamlit.log") as url:
                page = browser.new_page(viewport={"width": 1400, "height": height})
                page.set_default_timeout(WAIT_MS)
                yield page, expect, url
        finally:
            browser.close()


def test_sweep_against_real_server_draws_the_curve(_isolated_home: Path, tmp_path: Path,
                                                   transformers_server: ServerProcess) -> None:  # noqa: F811

    from perfmodel.store import Store
    with _sweeps_page(_isolated_home, tmp_path, height=1400) as (page, expect, url):
        page.goto(f"{url}/sweeps")
        expect(page.get_by_role("heading", name="Sweeps", exact=True).first).to_be_visible()
        expect(page.get_by_text("No sweep yet")).to_be_visible()
        page.get_by_text("OpenAI-compatible server", exact=True).click()
        expect(page.get_by_label("Server URL", exact=True)).to_be_visible()
        _fill(page, "Server URL", transformers_server.url)
        # transformers serve rejects ignore_eos: the output length goes through its generation config.
        page.get_by_label("Server type", exact=True).click()
        page.get_by_role("option", name="transformers (generation_config)").click()
        _fill(page, "Concurrency levels", ",".join(map(str, CONCURRENCY)))
        _fill(page, "Input lengths (tokens)", str(INPUT_LEN_TOK))
        _fill(page, "Output lengths (tokens)", str(OUTPUT_LEN_TOK))
        _fill(page, "Repeats", "1")
        _fill(page, "Timeout per point (s)", "120")
        _fill(page, "Dataset name", "browser sweep")
        page.get_by_role("button", name="Start sweep").click()
        expect(page.locator('[data-testid="stAlertContentSuccess"]')).to_contain_text("Started")
        # The sweep runs in its own process; the page polls the store every couple of seconds.
        progress = page.locator('[data-testid="stProgress"]')
        expect(progress).to_contain_text(f"done: {len(CONCURRENCY)} done, 0 failed")
        handle = page.wait_for_function(
            f"() => {{ const r = ({POINTS_JS})(); "
            f"return r && r.x.length === {len(CONCURRENCY)} && r.rendered >= {len(CONCURRENCY)} && r; }}")
        drawn = dict(handle.json_value())
        # The end of the sweep refreshes the whole page, not only the polled progress panel.
        n = len(CONCURRENCY)
        expect(page.get_by_label("Sweep", exact=True)).to_have_value(
            re.compile(rf"^browser sweep · done · {n}/{n} \("))
        page.screenshot(path=str(tmp_path / "sweeps-page.png"))
        # A new visit with a sweep stored: the "New sweep" panel starts closed, opens on one click and
        # stays open through a rerun ("Check plan" closed it again, hiding its own answer).
        page.goto(f"{url}/sweeps")
        expect(page.get_by_label("Sweep", exact=True)).to_have_value(re.compile(r"^browser sweep"))
        check = page.get_by_role("button", name="Check plan")
        expect(check).to_be_hidden()
        page.locator('[data-testid="stExpander"] summary', has_text="New sweep").click()
        expect(check).to_be_visible()
        check.click()
        expect(page.locator('[data-testid="stAlertContentSuccess"]')).to_contain_text("Plan valid")
        expect(check).to_be_visible()

    store = Store(_isolated_home)
    (info,) = store.sweeps()
    assert (info.name, info.state, info.n_done, info.n_failed, info.n_points) == (
        "browser sweep", "done", len(CONCURRENCY), 0, len(CONCURRENCY))
    runs = store.runs(info.dataset_id).sort_values("batch_size")
    assert runs["batch_size"].tolist() == list(CONCURRENCY)
    assert set(runs["load_kind"]) == {"concurrency"}
    assert set(runs["input_len_tok"]) == {INPUT_LEN_TOK} and set(runs["output_len_tok"]) == {OUTPUT_LEN_TOK}
    assert set(runs["framework"]) == {"transformers"}
    # The server type chosen in the form forced the output length: no request came back short.
    assert runs["fw_output_short_frac"].tolist() == [0.0, 0.0]
    assert (runs["output_throughput_tok_s"] > 0).all() and (runs["ttft_s"] < runs["e2e_latency_s"]).all()
    # The curve on the page is the stored points, not something else.
    drawn_points = sorted(zip(drawn["x"], drawn["y"], strict=True))
    assert [x for x, _ in drawn_points] == list(CONCURRENCY)
    assert [y for _, y in drawn_points] == pytest.approx(runs["output_throughput_tok_s"].tolist(), rel=1e-9)


def test_resume_is_followed_to_the_end_without_a_reload(_isolated_home: Path, tmp_path: Path) -> None:
    """After Resume the page had stayed on "interrupted" (or "stopped") with its Resume button, though the
    sweep ran to the end: the polling is chosen as the page is drawn, before the resumed process starts."""
    for name in ("torch", "transformers"):
        pytest.importorskip(name, reason=f"the local engine needs {name}")

    from perfmodel.store import Store
    from perfmodel.sweep.plan import plan_from_dict
    from perfmodel.sweep.runner import create_sweep
    store = Store(_isolated_home)
    info = create_sweep(plan_from_dict({"engine_size": "micro", "batch_sizes": [1, 2], "input_lens": [8],
                                        "output_lens": [4], "repeats": 1, "name": "half done"}), store=store)
    store.claim_sweep(info.id, 2**22 + 12345)  # as if a process that died had claimed it
    with _sweeps_page(_isolated_home, tmp_path, height=1200) as (page, expect, url):
        page.goto(f"{url}/sweeps")
        progress = page.locator('[data-testid="stProgress"]')
        expect(progress).to_contain_text("interrupted")
        page.get_by_role("button", name="Resume").click()
        # no reload: the page follows the resumed process to the end on its own (while the page redraws, the old
        # bar and the new one can both be there: a clean-clone CI run saw two)
        expect(progress.filter(has_text="done: 2 done, 0 failed").first).to_be_visible()
        expect(page.get_by_role("button", name="Resume")).to_have_count(0)
        expect(page.get_by_label("Sweep", exact=True)).to_have_value(re.compile(r"^half done · done · 2/2"))
    assert Store(_isolated_home).sweep(info.id).state == "done"
