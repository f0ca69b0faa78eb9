"""Feature sets: order, hand-computed values, NaN for unknown catalog figures, clear errors."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from perfmodel import features
from perfmodel.errors import PerfmodelError, UnknownNameError, ValidationError


def _runs() -> pd.DataFrame:
    return pd.DataFrame({
        "hardware": ["h100-sxm", "sn40l", "a100-40gb"], "model": ["llama-3-8b", "llama-3-8b", "decilm-7b"],
        "framework": ["vllm", "sambaflow", "vllm"], "device_count": [1, 8, 2],
        "input_len_tok": [1024.0, 128.0, 256.0], "output_len_tok": [1024.0, 128.0, 256.0],
        "batch_size": [16.0, 1.0, 64.0], "fw_kv_usage": [0.5, np.nan, 0.9],
    })


def test_names_order_and_sets() -> None:
    r = _runs()
    names = features.feature_names(r, "all")
    assert names[:7] == list(features.RAW)
    assert names == features.feature_names(r.sample(frac=1, random_state=1), "all")  # row order irrelevant
    assert features.feature_names(r, "framework") == ["fw_kv_usage"]
    ident = features.feature_names(r, "identity")
    assert "id_hw_h100-sxm" in ident and "id_fw_sambaflow" in ident and "id_platform_cuda" in ident
    assert features.feature_names(r, "raw+physical") == list(features.RAW + features.PHYSICAL)
    with pytest.raises(PerfmodelError, match="unknown feature set 'bogus'"):
        features.feature_names(r, "bogus")


def test_static_set_keeps_settings_and_leaves_out_metrics_measured_during_a_run() -> None:
    r = _runs().assign(fw_num_threads=[1.0, 2.0, 1.0])
    static = features.feature_names(r, "static")
    # A query for a new configuration has its settings (thread count) but none of the run's metrics.
    assert "fw_num_threads" in static and "fw_kv_usage" not in static
    assert static == [n for n in features.feature_names(r, "all") if n != "fw_kv_usage"]
    assert features.feature_names(r, "settings") == ["fw_num_threads"]
    assert features.feature_names(r.drop(columns="fw_num_threads"), "settings") == []
    from perfmodel.models.roofline_gbm import RooflineGBM

    assert RooflineGBM().features == "static"


def test_settings_are_not_framework_metrics_and_are_named() -> None:
    from perfmodel.curves import VARYING_BY
    from perfmodel.explain import feature_kind

    r = _runs().assign(fw_n_batch=[16.0, np.nan, 1.0])
    assert features.feature_names(r, "framework") == ["fw_kv_usage"]  # a setting is no metric of the run
    assert features.feature_names(r, "settings") == ["fw_n_batch"]
    assert "fw_n_batch" in features.feature_names(r, "all") and "fw_n_batch" in features.feature_names(r, "static")
    assert feature_kind("fw_n_batch") == "setting" and feature_kind("fw_kv_usage") == "framework"
    assert set(features.SETTING_DOCS) == set(VARYING_BY)
    assert features.feature_label("fw_n_batch") == "framework setting: llama.cpp n_batch (tok)"


def test_llama3_8b_on_h100_by_hand() -> None:
    x = features.build_features(_runs()).iloc[0]
    kv = 2 * 32 * 8 * 128 * 2 * 16 * (1024 + 1024)
    assert x["kv_cache_bytes"] == pytest.approx(kv)  # 4.295e9
    assert x["weight_bytes"] == pytest.approx(8.03e9 * 2)
    assert x["l2_reuse"] == pytest.approx(50e6 / (16 * 4096 * 2))
    assert x["wavefronts"] == 1.0
    assert x["mem_bw_pressure_s"] == pytest.approx(2048 * 16 / 3350e9)
    assert x["compute_intensity_s"] == pytest.approx(1024 * 1024 * 8.03e9 / 989.5e12)
    assert x["pcie_contention"] == pytest.approx(16 * 1 / 16)
    assert x["weight_bytes_over_bw_s"] == pytest.approx(8.03e9 * 2 / 3350e9)
    assert x["mem_fraction_used"] == pytest.approx((8.03e9 * 2 + kv) / (80 * 2**30))  # binary GB
    assert x["bytes_per_sm"] == pytest.approx((8.03e9 * 2 + kv) / 132)
    assert x["ii_over_oo"] == pytest.approx(1.0) and x["log1p_ii"] == pytest.approx(math.log(1025))
    assert x["fw_kv_usage"] == 0.5 and x["id_hw_h100-sxm"] == 1.0 and x["id_hw_sn40l"] == 0.0


def test_unknown_catalog_figures_are_nan() -> None:
    x = features.build_features(_runs())
    sn = x.iloc[1]  # SN40L: no bandwidth, SMs, L2 or PCIe figures in the catalog
    for c in ("mem_bw_pressure_s", "weight_bytes_over_bw_s", "l2_reuse", "bytes_per_sm", "pcie_contention"):
        assert math.isnan(sn[c]), c
    assert sn["mem_fraction_used"] == pytest.approx((8.03e9 * 2 + 131072 * 256) / (64 * 2**30 * 8))
    deci = x.iloc[2]  # DeciLM: per-layer KV heads, no single KV size
    assert math.isnan(deci["kv_cache_bytes"]) and not math.isnan(deci["weight_bytes"])


def test_mla_model_uses_compressed_kv() -> None:
    r = _runs().iloc[[0]].assign(model="deepseek-v3", device_count=8, hardware="h200")
    x = features.build_features(r, "physical").iloc[0]
    assert x["kv_cache_bytes"] == pytest.approx(61 * (512 + 64) * 2 * 16 * 2048)  # not 2*61*128*128*2
    # the KV cache is 16-bit unless the runs say otherwise, even with fp8 weights


def test_names_argument_reindexes_for_a_fitted_model() -> None:
    cols = ["batch_size", "id_hw_mi300x", "fw_missing", "log2_bb"]
    x = features.build_features(_runs(), names=cols)
    assert list(x.columns) == cols
    assert (x["id_hw_mi300x"] == 0).all() and x["fw_missing"].isna().all()
    assert x["log2_bb"].tolist() == [4.0, 0.0, 6.0]


def test_errors_name_row_and_column() -> None:
    r = _runs()
    r.loc[2, "hardware"] = "quantum-toaster"
    with pytest.raises(UnknownNameError, match=r"quantum-toaster.*row 3, column 'hardware'"):
        features.build_features(r)
    r = _runs()
    r.loc[1, "batch_size"] = -2.0
    with pytest.raises(ValidationError, match=r"row 2, column 'batch_size'"):
        features.build_features(r)
    with pytest.raises(ValidationError, match=r"column 'model'"):
        features.build_features(_runs().drop(columns="model"))


def test_keep_suspect_false_drops_rows_beating_the_bound() -> None:
    r = _runs().assign(output_throughput_tok_s=[1e7, 10.0, 100.0])
    assert list(features.build_features(r, keep_suspect=False).index) == [1, 2]
    assert len(features.build_features(r)) == 3
