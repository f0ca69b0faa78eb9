"""The bundled llama-server sample run (``perfmodel sweep --backend http`` against llama.cpp on CPU) is what
sample_runs/README.md says it is: canonical, complete, lengths honoured, server metrics scraped, and a dataset on
which the framework-internal feature set is real (issue 6)."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfmodel import explain as E
from perfmodel import features
from perfmodel.importers import read_file

CSV = Path(__file__).resolve().parents[1] / "sample_runs" / "perfmodel-tiny-llama_cpu-x86-2vcpu_llama-server.csv"


@pytest.fixture(scope="module")
def runs():
    res = read_file(CSV)
    assert res.format == "canonical"
    return res.runs


def test_llama_server_sample_is_complete_and_pinned(runs) -> None:
    assert len(runs) == 96  # concurrency 1..16 x input 64, 256 x 3 repeats
    assert set(runs["model"]) == {"perfmodel-tiny-llama"} and set(runs["framework"]) == {"llama.cpp"}
    assert set(runs["load_kind"]) == {"concurrency"} and (runs["n_failed"] == 0).all()
    assert runs["batch_size"].tolist()[:16] == list(range(1, 17))
    assert runs["n_requests"].tolist()[:16] == [8, 8] + [4 * c for c in range(3, 17)]
    # ignore_eos: every request generated 64 tokens (usage), every prompt had the requested length
    assert (runs["output_len_tok"] == 64).all() and (runs["fw_output_short_frac"] == 0).all()
    assert set(runs["input_len_tok"]) == {64.0, 256.0} and (runs["fw_prompt_len_off_frac"] == 0).all()
    assert (runs["fw_server_predicted_n_mean"] == 64).all()
    assert runs["output_throughput_tok_s"].iloc[0] == pytest.approx(247.549434, rel=1e-6)
    assert (runs["ttft_s"] < runs["e2e_latency_s"]).all()
    med = runs.groupby(["input_len_tok", "batch_size"])["output_throughput_tok_s"].median()
    for n_in in (64.0, 256.0):
        # batching pays even on one server thread (the top of the grid, to look past the shared machine's noise)
        assert med[n_in].loc[13:16].mean() > 1.3 * med[n_in][1.0], med[n_in].to_dict()


def test_llama_server_sample_carries_scraped_server_metrics(runs) -> None:
    # the server's generated-token counter over each point agrees with the client's usage count
    ratio = runs["fw_llamacpp_tokens_predicted_per_s"] / runs["output_throughput_tok_s"]
    assert ratio.between(0.99, 1.01).all(), ratio.describe()
    assert (runs["fw_llamacpp_requests_processing_max"] <= runs["batch_size"]).all()
    assert (runs["fw_llamacpp_requests_deferred_max"] == 0).all()  # -np 16: no request waited for a slot
    per_decode = runs["fw_llamacpp_tokens_predicted_per_s"] / runs["fw_llamacpp_n_decode_per_s"]
    assert (per_decode <= runs["batch_size"] + 1e-9).all()
    assert per_decode[runs["batch_size"] == 16].mean() > 12


def test_framework_set_is_the_server_metrics_and_predicts(runs) -> None:
    names = features.feature_names(runs, "framework")
    assert len(names) == 15 and not set(names) & features.CLIENT_FW_COLUMNS
    assert all(n.startswith(("fw_llamacpp_", "fw_server_")) for n in names)
    # The server's token counters and speeds are the output rate itself: with them the framework set scored
    # R^2 0.98, led by fw_llamacpp_tokens_predicted_per_s. Without them it is what the server's state says.
    assert not [n for n in names if features.is_token_rate(n)]
    assert "fw_llamacpp_tokens_predicted_per_s" in runs.columns  # kept in the table, as a check of the client
    df = E.compare_feature_sets(runs, sets=("physical", "framework"), learners=("gbdt",), n_estimators=100,
                                max_depth=4).set_index("set")
    # measured 2026-12-02: framework 0.77 (prompt sizes, requests in flight, decode time share), physical 0.60
    # (measured CPU bandwidth and fp32 peak from the catalog), under the shared VM's repeat noise
    assert 0.5 < df.loc["framework", "r2"] < 0.95
    assert 0.3 < df.loc["physical", "r2"] < 0.9
    assert not any(features.is_token_rate(f.strip()) for f in df.loc["framework", "top_features"].split(","))
