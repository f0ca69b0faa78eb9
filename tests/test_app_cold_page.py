"""The sample import runs whichever page a session opens first.

A fresh streamlit server asked for a page URL first (``/curves``) runs
``pages/curves.py`` on its own, without ``app.py`` and so without its start-up
step (seen in a real browser: the page said "No dataset yet"). Every page
calls ``ui.home()`` first, which now runs the start-up step; ``AppTest`` on the
page file alone is that cold first request.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from perfmodel.store import Store
from perfmodel.ui import samples
from perfmodel.ui.shell import PAGE_SPECS

REPO = Path(__file__).resolve().parents[1]
TIMEOUT_S = 120
N_SAMPLE_FILES = len(samples.sample_files())


@pytest.mark.parametrize("page", [s.path for s in PAGE_SPECS])
def test_a_page_opened_alone_imports_the_sample(page: str) -> None:
    assert N_SAMPLE_FILES >= 3, "sample_runs/ should ship its CSV files"
    assert Store().datasets() == []
    at = AppTest.from_file(str(REPO / page), default_timeout=TIMEOUT_S).run()
    assert not at.exception, [e.value for e in at.exception]
    stored = Store().datasets()
    assert [d.name for d in stored] == [samples.SAMPLE_DATASET_NAME]
    assert len(stored[0].files) == N_SAMPLE_FILES
    assert not any("No dataset yet" in i.value for i in at.info)


def test_the_import_runs_once_per_session() -> None:
    at = AppTest.from_file(str(REPO / "pages/curves.py"), default_timeout=TIMEOUT_S).run()
    (info,) = Store().datasets()
    Store().delete_dataset(info.id)
    at.run()  # same session: the start-up step is done, an emptied store stays empty
    assert Store().datasets() == []
    assert any("No dataset yet" in i.value for i in at.info)


@pytest.mark.parametrize("page", ["pages/data.py", "pages/curves.py", "pages/attribution.py", "pages/whatif.py",
                                  "pages/planner.py"])
def test_a_dataset_without_runs_is_called_so_on_every_page(page: str) -> None:
    """A sweep that failed before its first point leaves an empty dataset: Curves had said "these runs record no
    batch size", Attribution "fit_gbdt: fewer than 2 rows have a positive output_throughput_tok_s", What-if had
    proposed another dataset's hardware and model, Data drew empty axes."""
    samples.ensure_sample_data(Store())  # a store that is not empty otherwise (no sample import on top)
    info = Store().create_dataset("failed sweep", {"kind": "test"})
    at = AppTest.from_file(str(REPO / page), default_timeout=TIMEOUT_S)
    at.query_params["dataset"] = info.id
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert any(i.value.startswith("**failed sweep** holds no runs") for i in at.info), [i.value for i in at.info]
    assert not at.get("plotly_chart")
