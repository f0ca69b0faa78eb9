"""The ``framework`` feature set holds server metrics, not the HTTP sweep client's notes about its measurement.

Guards a leak: ``fw_duration_s`` (the measured window) with the request count and output length gives the output
throughput exactly, so a "framework-internal" model fed it predicts the target from itself.
"""

from __future__ import annotations

from pathlib import Path

from perfmodel import features
from perfmodel.features import CLIENT_FW_COLUMNS
from perfmodel.importers import read_file

REPO = Path(__file__).resolve().parents[1]
SERVED = REPO / "sample_runs" / "perfmodel-served-tiny-llama_cpu-x86-2vcpu_transformers-serve.csv"


def test_client_columns_of_a_real_http_sweep_are_not_framework_features() -> None:
    runs = read_file(SERVED).runs
    # transformers serve has no /metrics: every fw_ column of this sweep is the client's own
    fw = {c for c in runs.columns if c.startswith("fw_")}
    assert fw == set(CLIENT_FW_COLUMNS)
    assert features.feature_names(runs, "framework") == []
    assert not set(features.feature_names(runs, "all")) & CLIENT_FW_COLUMNS


def test_server_metrics_stay_framework_features() -> None:
    runs = read_file(SERVED).runs.assign(fw_llamacpp_requests_processing_mean=1.0, fw_server_prompt_ms_mean=2.0)
    assert features.feature_names(runs, "framework") == ["fw_llamacpp_requests_processing_mean",
                                                         "fw_server_prompt_ms_mean"]
    x = features.build_features(runs, "framework")
    assert list(x.columns) == ["fw_llamacpp_requests_processing_mean", "fw_server_prompt_ms_mean"]


def test_a_server_s_token_rate_is_the_target_and_no_feature() -> None:
    # The llama-server sample's fw_llamacpp_tokens_predicted_per_s is the output throughput counted by the
    # server (within a few percent of the client's): it topped the sample's Attribution ranking.
    runs = read_file(REPO / "sample_runs" / "perfmodel-tiny-llama_cpu-x86-2vcpu_llama-server.csv").runs
    rates = {"fw_llamacpp_tokens_predicted_per_s", "fw_llamacpp_prompt_tokens_per_s"}
    assert rates <= set(runs.columns)
    assert all(features.is_token_rate(c) for c in rates)
    for name in ("framework", "all"):
        names = features.feature_names(runs, name)
        assert not rates & set(names)
    # the server's other metrics stay: decode calls per second, requests in flight
    assert {"fw_llamacpp_n_decode_per_s", "fw_llamacpp_requests_processing_mean"} <= set(
        features.feature_names(runs, "framework"))
    assert not features.is_token_rate("fw_server_prompt_ms_mean") and not features.is_token_rate("tokens_per_s")
