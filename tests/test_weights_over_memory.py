"""A configuration whose weights exceed its devices' memory cannot run: no throughput, confidence 0, out of
domain, and a reason with the numbers (perfmodel.models.base.weights_over_memory, predict_with_latency,
roofline-gbm and ``perfmodel predict``).

Browser review of the What-if page on LLM-Inference-Bench: Llama-3-70B on ONE GH200 (141 GB of 16-bit weights,
96 GB of memory) was answered with a throughput, a band, confidence 0.88 and in_domain true.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from _predict_data import cli_predict_csv, synthetic_runs
from click.testing import CliRunner

from perfmodel import physics
from perfmodel.cli import main
from perfmodel.models import get_predictor, predict_with_latency
from perfmodel.models.base import MEMORY_REASON_PREFIX, weights_over_memory
from perfmodel.models.roofline_gbm import RooflineGBM

GH200_70B = ("cannot run: llama-3-70b's weights, 141 GB in 16-bit, exceed the 96 GB of memory of 1 x gh200 "
             "(they alone need at least 2): it takes more devices, a smaller weight dtype or offloading, so no "
             "throughput is predicted")


def _query(**over: object) -> pd.DataFrame:
    row = {"hardware": "gh200", "model": "llama-3-70b", "framework": "vllm", "device_count": 1,
           "input_len_tok": 128.0, "output_len_tok": 128.0, "batch_size": 8.0}
    return pd.DataFrame([{**row, **over}])


def test_weights_over_memory_names_the_model_the_weights_and_the_devices() -> None:
    assert weights_over_memory(_query()) == [GH200_70B]
    assert GH200_70B.startswith(MEMORY_REASON_PREFIX)
    # Two GH200s hold the weights; so does one at 4 bits (AWQ, 35 GB) or 8 bits (71 GB).
    assert weights_over_memory(_query(device_count=2)) == [None]
    assert weights_over_memory(_query(quantization="awq")) == [None]
    assert weights_over_memory(_query(weight_dtype="fp8")) == [None]
    # fp32 doubles the weights: two GH200s no longer hold them, three do.
    assert weights_over_memory(_query(weight_dtype="fp32", device_count=2))[0].startswith(
        "cannot run: llama-3-70b's weights, 282 GB in 32-bit, exceed the 192 GB of memory of 2 x gh200 "
        "(they alone need at least 3)")
    # The raw memory, read as the vendors mean it (GiB): 141.1e9 B of 16-bit weights fit a "141 GB" H200,
    # whose nvidia-smi shows 143,771 MiB; so do Llama-3-70B's on 4 x A100-40GB, which LLM-Inference-Bench ran.
    assert weights_over_memory(_query(hardware="h200")) == [None]
    assert weights_over_memory(_query(hardware="a100-40gb", device_count=4)) == [None]
    assert weights_over_memory(_query(hardware="h100-sxm"))[0] is not None  # 80 GB


def test_weights_over_memory_is_per_row_and_ignores_blank_dtype_cells() -> None:
    q = pd.concat([_query(model="llama-3-8b"), _query(), _query(device_count=2), _query()], ignore_index=True)
    q["weight_dtype"] = [None, np.nan, pd.NA, None]
    assert weights_over_memory(q) == [None, GH200_70B, None, GH200_70B]
    assert weights_over_memory(q.iloc[:0]) == []


def test_predict_with_latency_gives_no_throughput_for_a_configuration_that_cannot_run() -> None:
    # Any predictor: the linear baseline answers 70B on one GH200 like any other query by itself.
    model = get_predictor("linear").fit(synthetic_runs())
    q = pd.concat([_query(model="llama-3-8b"), _query(), _query(device_count=2)], ignore_index=True)
    q.index = [10, 11, 12]
    raw = model.predict(q)
    assert np.isfinite(raw["pred_throughput_tok_s"]).all()  # the baseline's own predict stays as published
    out = predict_with_latency(model, q)
    assert list(out.index) == [10, 11, 12]
    blocked = out.loc[11]
    assert math.isnan(blocked["pred_throughput_tok_s"]) and math.isnan(blocked["pred_e2e_latency_s"])
    assert math.isnan(blocked["pred_total_throughput_tok_s"]) and math.isnan(blocked["pred_ttft_s"])
    assert blocked["confidence"] == 0.0 and not bool(blocked["in_domain"])
    # The rows that can run keep the baseline's answer.
    for i in (10, 12):
        assert out.loc[i, "pred_throughput_tok_s"] == raw.loc[i, "pred_throughput_tok_s"]
        assert bool(out.loc[i, "in_domain"]) == bool(raw.loc[i, "in_domain"])
    assert model.cannot_run(q) == [None, GH200_70B, None]


QUERIES = """hardware,model,framework,device_count,input_len_tok,output_len_tok,batch_size
h100-sxm,llama-3-8b,vllm,1,128,128,16
gh200,llama-3-70b,vllm,1,128,128,16
a100-40gb,mistral-7b-v0.1,vllm,1,512,512,1
"""


def test_cli_predict_keeps_row_order_and_says_why_no_throughput(tmp_path) -> None:  # type: ignore[no-untyped-def]
    model_dir = tmp_path / "model"
    get_predictor("linear").fit(synthetic_runs()).save(model_dir)
    pred = cli_predict_csv(model_dir, QUERIES, tmp_path)
    assert list(pred["hardware"]) == ["h100-sxm", "gh200", "a100-40gb"]
    assert pred["pred_throughput_tok_s"].isna().tolist() == [False, True, False]
    assert pred["pred_lower"].isna().all()  # the linear baseline has no band anywhere
    assert pred.loc[1, "confidence"] == 0.0 and not pred.loc[1, "in_domain"]
    one = CliRunner().invoke(main, ["predict", str(model_dir), "--hardware", "gh200", "--model", "llama-3-70b",
                                    "--framework", "vllm", "--input-len", "128", "--output-len", "128",
                                    "--batch", "16"])
    assert one.exit_code == 0, one.output
    assert one.output == f"no prediction ({GH200_70B})  confidence 0.000  in_domain False\n"


def _runs() -> pd.DataFrame:
    """GH200 and Llama-3-70B both in the data, never together on one GH200: throughput = roofline bound x 0.4
    x a batch-saturation factor. Llama-3-70B also ran in AWQ on one A100-40GB (35 GB of weights)."""
    rows = []
    for hw, model, dev, quant in (("gh200", "llama-3-8b", 1, None), ("h100-sxm", "llama-3-8b", 1, None),
                                  ("gh200", "llama-3-70b", 2, None), ("h100-sxm", "llama-3-70b", 2, None),
                                  ("a100-40gb", "llama-3-70b", 1, "awq")):
        for length in (128.0, 512.0):
            for b in (1.0, 4.0, 16.0, 64.0):
                rows.append({"hardware": hw, "model": model, "framework": "vllm", "device_count": dev,
                             "quantization": quant, "input_len_tok": length, "output_len_tok": length,
                             "batch_size": b})
    df = pd.DataFrame(rows)
    sat = 1.0 / (1.0 + df["batch_size"].to_numpy() / 256.0)
    roof = physics.roofline(df)
    df["output_throughput_tok_s"] = roof["output_tok_s_max"].to_numpy() * 0.4 * sat
    df["ttft_s"] = roof["ttft_s_min"].to_numpy() * 3.0  # a TTFT model too, whose answer must go as well
    return df


@pytest.fixture(scope="module")
def fitted() -> tuple[RooflineGBM, pd.DataFrame]:
    df = _runs()
    return RooflineGBM(n_estimators=30, random_state=0).fit(df), df


def test_roofline_gbm_gives_no_throughput_where_the_weights_exceed_the_memory(
        fitted: tuple[RooflineGBM, pd.DataFrame]) -> None:
    model, train = fitted
    assert model.cannot_run(train) == [None] * len(train)  # every measured row ran
    q = pd.concat([_query(device_count=2), _query(), _query(model="llama-3-8b")], ignore_index=True)
    q.index = [7, 3, 5]
    pred = model.predict(q)
    assert list(pred.index) == [7, 3, 5]
    blocked = pred.loc[3]
    assert all(math.isnan(blocked[c]) for c in ("pred_throughput_tok_s", "pred_lower", "pred_upper"))
    assert blocked["confidence"] == 0.0 and not bool(blocked["in_domain"])
    # Its neighbours are answered as before: a measured configuration, a new batch of a measured model.
    for i in (7, 5):
        assert np.isfinite(pred.loc[i, ["pred_throughput_tok_s", "pred_lower", "pred_upper"]].astype(float)).all()
        assert pred.loc[i, "confidence"] > 0.05
    reasons = model.domain_reasons(q)
    assert reasons[1][0] == GH200_70B  # the first reason given, with the numbers
    assert not any(r.startswith("cannot run") for r in reasons[0] + reasons[2])
    out = predict_with_latency(model, q)
    assert out.loc[3, "confidence"] == 0.0 and not bool(out.loc[3, "in_domain"])
    assert out.loc[3, ["pred_e2e_latency_s", "pred_ttft_s", "pred_ttft_lower_s", "pred_ttft_upper_s",
                       "pred_tpot_s"]].isna().all()
    assert np.isfinite(out.loc[[7, 5], ["pred_throughput_tok_s", "pred_ttft_s"]].astype(float)).all().all()


def test_roofline_gbm_checks_the_dtype_of_the_trained_configuration_a_query_names(
        fitted: tuple[RooflineGBM, pd.DataFrame]) -> None:
    # Llama-3-70B on one A100-40GB ran in AWQ: a query that leaves the quantization out names that configuration
    # (roofline-gbm fills it in), so it can run, though its 16-bit default would not fit.
    model, _ = fitted
    q = _query(hardware="a100-40gb")
    assert model.cannot_run(q) == [None]
    assert get_predictor("linear").cannot_run(q)[0] is not None  # the plain rule reads the 16-bit default
    out = predict_with_latency(model, q)
    assert np.isfinite(out["pred_throughput_tok_s"]).all() and out["confidence"].iloc[0] > 0


def test_heads_that_do_not_split_over_the_tensor_parallel_devices_cannot_run() -> None:
    """Llama-3-8B's 32 heads on 3 H100s with vLLM had been predicted in domain (2,688 tok/s); only the planner
    refused it. Engines that split layers (llama.cpp) or pad heads (DeepSpeed ran Qwen2-7B's 28 heads on 8
    devices) are not held to it, nor is a pipeline whose TP size divides the heads."""
    from perfmodel.models.base import cannot_run_at_all, heads_unsplit

    q = pd.DataFrame({"hardware": "h100-sxm", "model": "llama-3-8b", "input_len_tok": 512.0,
                      "output_len_tok": 512.0, "batch_size": 16.0,
                      "framework": ["vllm", "vllm", "llama.cpp", "vllm", "vllm"],
                      "device_count": [3, 4, 3, 3, 6], "pp_size": [np.nan, np.nan, np.nan, 3, 3]})
    why = heads_unsplit(q)
    assert why[0] == (f"{MEMORY_REASON_PREFIX}llama-3-8b's 32 attention heads do not split over 3 tensor-parallel "
                      "devices (vllm needs a TP size that divides them)")
    assert why[1:] == [None, None, None, None]
    assert cannot_run_at_all(q) == why
    runs = synthetic_runs(noise=0.02)
    pred = predict_with_latency(get_predictor("xgboost").fit(runs), q)
    assert np.isnan(pred["pred_throughput_tok_s"].iloc[0]) and not pred["in_domain"].iloc[0]
    assert np.isfinite(pred["pred_throughput_tok_s"].iloc[1:]).all()


def test_weights_that_fill_more_than_the_serving_share_of_memory_leave_a_small_kv_cache() -> None:
    """Llama-3-70B in 16-bit on one H200 (141 of 151 GB): kv_fit_batch had been NaN, so nothing capped batch 256
    (747 tok/s, no note), while the What-if page said it could not run as asked."""
    from perfmodel.models.base import prediction_table

    q = _query(hardware="h200", model="llama-3-70b", device_count=1, batch_size=256.0, input_len_tok=1024.0,
               output_len_tok=1024.0)
    roof = physics.roofline(q)
    w, mem = float(roof["weight_bytes"].iloc[0]), float(roof["memory_bytes"].iloc[0])
    assert physics.KV_USABLE_FRACTION * mem < w < mem
    kv = float(roof["kv_fit_batch"].iloc[0])
    assert kv == pytest.approx((mem - w) / (float(roof["kv_bytes_per_token"].iloc[0]) * 2048.0))
    assert 5 < kv < 30
    runs = synthetic_runs(noise=0.02)
    note = prediction_table(get_predictor("xgboost").fit(runs), q)["note"].iloc[0]
    assert note.startswith("llama-3-70b's weights (141 GB) fill more than 90% of the 151 GB of 1 x h200: at the "
                           "serving default (vLLM's gpu_memory_utilization 0.9) no KV cache fits")
    assert f"about {kv:,.0f} sequence(s) of this length fit beside them" in note
