"""The What-if core and page on a configuration whose weights exceed its devices' memory: the reason, not a curve.

Browser review of the What-if page on LLM-Inference-Bench: Llama-3-70B on ONE GH200 (141 GB of 16-bit weights,
96 GB of memory) was answered with a throughput, a band, confidence 0.88 and in_domain true, and the page drew
a curve.
"""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest
from test_weights_over_memory import GH200_70B, _runs

from perfmodel import whatif as core
from perfmodel.models.roofline_gbm import RooflineGBM
from perfmodel.store import Store
from perfmodel.ui import samples
from perfmodel.ui import whatif as W


@pytest.fixture(scope="module")
def fitted() -> tuple[RooflineGBM, pd.DataFrame]:
    df = _runs()
    return RooflineGBM(n_estimators=30, random_state=0).fit(df), df


def test_whatif_names_the_reason_instead_of_a_curve(fitted: tuple[RooflineGBM, pd.DataFrame]) -> None:
    model, train = fitted
    point = {"hardware": "gh200", "model": "llama-3-70b", "framework": "vllm", "device_count": 1,
             "input_len_tok": 128.0, "output_len_tok": 128.0}
    res = core.whatif(model, train, point, [1.0, 16.0, 64.0])
    assert res.cannot_run == "C" + GH200_70B[1:] + "."
    assert res.reasons[0] == GH200_70B
    assert not any(r.startswith("confidence below") for r in res.reasons)  # 0 says "cannot run", not "unsure"
    assert res.table["pred_throughput_tok_s"].isna().all() and (res.table["confidence"] == 0).all()
    assert not res.in_domain and res.ttft_note is None
    ok = core.whatif(model, train, {**point, "device_count": 2}, [1.0, 16.0])
    assert ok.cannot_run is None and ok.table["pred_throughput_tok_s"].notna().all()
    assert not any(r.startswith("cannot run") for r in ok.reasons)


def _sample_id() -> str:
    samples.ensure_sample_data(Store())
    return Store().dataset(samples.SAMPLE_DATASET_NAME).id


def test_the_page_shows_the_reason_and_no_curve() -> None:
    app = str(Path(__file__).resolve().parents[1] / "app.py")
    at = AppTest.from_file(app, default_timeout=90)
    for k, v in {"dataset": _sample_id(), "hardware": "gh200", "model": "llama-3-70b", "framework": "vllm",
                 "input_len": "128", "output_len": "128", "device_count": "1", "batch_min": "1", "batch_max": "8",
                 "batch": "8", "predictor": "linear"}.items():
        at.query_params[k] = v
    # Straight to /whatif, as a browser opens the link (the Data page drops hardware the dataset lacks).
    at = at.switch_page("pages/whatif.py").run()
    at = at.button(key=W.P + "train").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert [e.value for e in at.error] == ["C" + GH200_70B[1:] + "."]
    assert not at.get("plotly_chart") and not at.metric  # no curve, no throughput tile
    # Two GH200s hold the weights: the curve is back.
    at = at.number_input(key=W.KEYS["device_count"]).set_value(2.0).run()
    assert not at.exception and not at.error
    assert at.get("plotly_chart")


def test_whatif_says_the_predictors_own_reason_and_writes_it_per_batch(fitted: tuple[RooflineGBM, pd.DataFrame]
                                                                        ) -> None:
    # The page had said "the query is far from every training point in feature space" where `perfmodel predict`
    # said why, and its download had in_domain without a reason.
    _, train = fitted
    point = {"hardware": "h100-sxm", "model": "llama-3-8b", "framework": "vllm", "device_count": 1,
             "input_len_tok": 128.0, "output_len_tok": 128.0}
    mine = (train["hardware"] == "h100-sxm") & (train["model"] == "llama-3-8b") & (train["batch_size"] > 4)
    train = train[~mine]  # this configuration at batch 1-4, the others up to 64
    model = RooflineGBM(n_estimators=30, random_state=0).fit(train)
    res = core.whatif(model, train, point, [4.0, 8.0, 16.0, 64.0])
    said = "the batch is more than twice outside the batches this configuration was measured at (1-4)"
    assert f"at batch 16, 64: {said}" in res.reasons, res.reasons
    csv = pd.read_csv(io.BytesIO(W.result_csv(res)), keep_default_na=False)
    assert csv["domain_reason"].tolist()[:2] == ["", ""]
    assert all("more than twice outside the batches this configuration" in r for r in csv["domain_reason"][2:])
    assert "note" in csv.columns
