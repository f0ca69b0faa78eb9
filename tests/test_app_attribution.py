"""The Attribution page, headless (AppTest) on the bundled sample runs, including a what-if link."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pandas as pd
from streamlit.testing.v1 import AppTest

from perfmodel.ui import explain as X

REPO = Path(__file__).resolve().parents[1]
APP = str(REPO / "app.py")
PAGE = "pages/attribution.py"
TIMEOUT_S = 120
LINK = {"hardware": "cpu-x86-2vcpu", "model": "perfmodel-tiny-llama", "framework": "transformers",
        "input_len_tok": 256.0, "output_len_tok": 128.0, "batch_size": 16.0, "device_count": 1.0}


def _page(**query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT_S)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    return at.switch_page(PAGE).run()


def _figures(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def _ok(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def test_page_shows_importance_dependence_and_waterfall_by_kind() -> None:
    at = _page()
    _ok(at)
    assert [t.value for t in at.title] == ["Attribution"]
    n_sample_rows = sum(len(pd.read_csv(f)) for f in (REPO / "sample_runs").glob("*.csv"))  # every sample file
    assert any(f"all {n_sample_rows} rows" in c.value and "additivity check passed" in c.value for c in at.caption)
    bar, dep, wf = _figures(at)
    kinds = {t["name"] for t in bar["data"]}
    # the sample's fw_* columns (real local-engine timings) are drawn apart from the physical ones
    assert {"● physical", "◆ framework"} <= kinds
    assert dep["layout"]["title"]["text"].split()[0] in {"●", "◆", "■", "▲", "✕"}
    assert "batch 8" in wf["layout"]["title"]["text"]  # defaults without a link
    # rerun: everything comes from the caches
    t0 = time.perf_counter()
    at.run()
    assert time.perf_counter() - t0 < 1.5
    _ok(at)


def test_opening_from_a_what_if_link_explains_that_point() -> None:
    link = X.attribution_link(LINK)
    assert link.startswith("attribution?") and "batch=16" in link and "input_len=256" in link
    point, problems = X.whatif_from_link(dict(p.split("=") for p in link.split("?")[1].split("&")))
    assert point == LINK and not problems
    at = _page(hardware="cpu-x86-2vcpu", model="perfmodel-tiny-llama", framework="transformers",
               input_len="256", output_len="128", batch="16", device_count="1")
    _ok(at)
    assert at.number_input(key="attribution.q.batch_size").value == 16
    assert at.number_input(key="attribution.q.input_len_tok").value == 256
    assert at.selectbox(key="attribution.q.hardware").value == "cpu-x86-2vcpu"
    wf = _figures(at)[2]
    assert "256 in / 128 out, batch 16, 1 device(s)" in wf["layout"]["title"]["text"]
    assert any("batch=16" in c.value for c in at.caption)


def test_a_bad_link_value_is_named_and_the_default_used() -> None:
    at = _page(batch="many", input_len="512")
    assert not at.exception
    assert any("batch='many'" in w.value for w in at.warning)
    assert at.number_input(key="attribution.q.batch_size").value == X.WHATIF_DEFAULTS["batch_size"]
    assert at.number_input(key="attribution.q.input_len_tok").value == 512


def test_physical_model_has_no_framework_attribution_and_comparison_runs() -> None:
    at = _page()
    at.selectbox(key="attribution.features").select("physical").run()
    _ok(at)
    names = {t["name"] for t in _figures(at)[0]["data"]}
    assert names == {"● physical"}
    at.button(key="attribution.compare").click().run()
    _ok(at)
    table = at.dataframe[0].value
    assert {"● physical", "◆ framework", "■ identity", "all"} == set(table["set"])
    assert set(table["learner"]) == {"gbdt", "poly"}
    # two frameworks in the samples (transformers, and llama.cpp's llama-server sweep): leaving each out runs
    at.segmented_control(key="attribution.protocol").set_value("transfer-framework").run()
    at.button(key="attribution.compare").click().run()
    _ok(at)
    assert not at.error
    assert {"● physical", "◆ framework", "■ identity", "all"} == set(at.dataframe[0].value["set"])
