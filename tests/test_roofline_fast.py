"""roofline-gbm's numpy feature path: the same numbers as the pandas reference path, and the same errors.

The fast path (catalog figures memoised per hardware/model/dtypes, row arithmetic in numpy) exists
for latency only; any difference from ``features.build_features`` + ``physics.roofline`` is a bug.
Latency itself is measured by ``benchmarks/bench_predict_latency.py``, not asserted here.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfmodel import features as feats
from perfmodel.errors import UnknownNameError
from perfmodel.importers import read_file
from perfmodel.models.roofline_gbm import RooflineGBM, _config_keys


def _model_for(runs: pd.DataFrame) -> RooflineGBM:
    m = RooflineGBM()
    m.feature_names_ = feats.feature_names(runs, "all")
    return m


def _assert_same_design(m: RooflineGBM, runs: pd.DataFrame) -> None:
    fast = m._design(runs)
    ref = m._design_pandas(runs)
    for name, a, b in zip(("features", "log prior", "prior kind", "knn", "kv fit batch"), fast, ref, strict=True):
        assert a.shape == b.shape, name
        assert np.array_equal(a, b, equal_nan=True), f"{name} differs from the pandas path"


def test_fast_features_equal_pandas_path_on_all_results(all_results_csv) -> None:  # type: ignore[no-untyped-def]
    runs = read_file(all_results_csv).runs
    assert len(runs) == 4772
    m = _model_for(runs)
    _assert_same_design(m, runs)
    _assert_same_design(m, runs.iloc[[17]])  # one row, templates already memoised
    keys = _config_keys(runs)
    # The 1,202 configurations, llama.cpp's 409 of them split by n_batch into 1,570.
    assert keys.nunique() == 2363 and keys.iloc[0].count("|") == 11
    from perfmodel.models.roofline_gbm import _without_settings

    assert len(set(_without_settings(keys.to_numpy()))) == 1202


def test_fast_features_moe_dtypes_fw_columns_and_absent_kv_column() -> None:
    rows = []
    for hw, model, wd, quant, kvd in (("h100-sxm", "mixtral-8x7b", None, None, None),
                                      ("mi300x", "qwen3-30b-a3b", "fp8", None, "fp8"),
                                      ("a100-40gb", "llama-3-8b", None, "awq", None),
                                      ("cpu-x86-2vcpu", "llama-3-8b", "fp32", None, None)):
        for b in (1.0, 7.0, 64.0):
            rows.append({"hardware": hw, "model": model, "framework": "vllm", "device_count": 2,
                         "tp_size": 2, "input_len_tok": 300.0, "output_len_tok": 50.0, "batch_size": b,
                         "weight_dtype": wd, "quantization": quant, "kv_cache_dtype": kvd,
                         "fw_queue_depth": b / 2})
    runs = pd.DataFrame(rows)
    m = _model_for(runs)
    assert "fw_queue_depth" in m.feature_names_
    _assert_same_design(m, runs)
    # Without the kv_cache_dtype column physics picks another cache size: the memo must not mix them up.
    _assert_same_design(m, runs.drop(columns=["kv_cache_dtype"]))
    _assert_same_design(_model_for(runs.drop(columns=["weight_dtype", "quantization", "tp_size"])),
                        runs.drop(columns=["weight_dtype", "quantization", "tp_size"]))


def test_unknown_name_in_fast_path_names_its_row() -> None:
    q = pd.DataFrame({"hardware": ["h100-sxm", "h100-sxm", "warp-drive"], "model": "llama-3-8b",
                      "framework": "vllm", "device_count": 1, "input_len_tok": 128.0, "output_len_tok": 128.0,
                      "batch_size": 4.0})
    m = _model_for(q.iloc[:2])
    m._design(q.iloc[:2])  # memoise the known combination first
    with pytest.raises(UnknownNameError, match=r"warp-drive.*row 3, column 'hardware'"):
        m._design(q)


def test_prior_without_kv_cache_size_reads_the_weights_every_step() -> None:
    # DeciLM-7B's per-layer KV heads leave its KV-cache size unknown: the prior must still charge every
    # decode step for reading the weights (a valid upper bound that omits the cache), not fall back to
    # the compute-only bound, which put it 50x above its measurements.
    from perfmodel import physics
    from perfmodel.models.roofline_gbm import _log_prior

    q = pd.DataFrame({"hardware": "h100-sxm", "model": ["decilm-7b", "mistral-7b-v0.1"], "framework": "vllm",
                      "device_count": 1, "input_len_tok": 128.0, "output_len_tok": 128.0, "batch_size": 1.0})
    roof = physics.roofline(q)
    assert np.isnan(roof.output_tok_s_max.iloc[0]) and np.isfinite(roof.output_tok_s_max.iloc[1])
    log_prior, kind = _log_prior(roof, q)
    assert kind.tolist() == [0.0, 0.0]
    assert np.exp(log_prior[1]) == pytest.approx(roof.output_tok_s_max.iloc[1], rel=1e-12)  # KV known: unchanged
    weights_per_step = roof.weight_bytes_read.iloc[0] / roof.mem_bw_bps.iloc[0]
    expected = 128.0 / (roof.prefill_s_min.iloc[0] + 127.0 * weights_per_step)
    assert np.exp(log_prior[0]) == pytest.approx(expected, rel=1e-12)
    assert 150.0 < expected < 300.0  # 14 GB of weights at 3.35 TB/s: ~240 tok/s for one sequence
    m = _model_for(q)
    _assert_same_design(m, q)  # and the fast path agrees
