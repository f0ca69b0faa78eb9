"""The HTTP sweep end to end against llama.cpp's REAL ``llama-server`` on CPU.

The server (tests/llama_server.py) serves the random-weight
``perfmodel-tiny-llama`` (12.6 M parameters) converted to GGUF, with ``--metrics``, 4 parallel slots
and one thread. A small sweep over concurrency 1, 2, 4 and two output lengths
runs through the real runner into the store (``server_type: llama.cpp``: the
output length is forced with ``ignore_eos``). Checks: the server decoded the
concurrent requests together and throughput rises with concurrency, throughput
agrees with the latencies, the requested lengths were honoured (from ``usage``), TTFT < E2E, the Prometheus ``/metrics`` counters and
gauges became ``fw_`` columns whose values agree with what the client measured,
and the points are in the store.

Skipped when the binary has not been built (``tools/build_llama_server.sh``),
unless ``PERFMODEL_REQUIRE_LLAMA_SERVER`` is set (CI): then it fails.
"""

from __future__ import annotations

import pandas as pd
import pytest
from llama_server import LLAMA_SERVER_ALIAS, LLAMA_SERVER_SLOTS, llama_server, tiny_gguf  # noqa: F401 - fixtures
from sweep_server import (
    ServerProcess,
    assert_sweep_stored,
    assert_throughput_latency_consistent,
    run_http_sweep,
)

from perfmodel.sweep.http_backend import HttpBackend

pytestmark = pytest.mark.slow

INPUT_LEN = 32
OUTPUT_LENS = (16, 48)
CONCURRENCY = (1, 2, 4)
assert max(CONCURRENCY) <= LLAMA_SERVER_SLOTS


@pytest.fixture(scope="module")
def sweep_runs(llama_server: ServerProcess, tmp_path_factory: pytest.TempPathFactory):  # noqa: F811
    home = tmp_path_factory.mktemp("llama-sweep-home")
    # scrape often: a point lasts about a second here
    return run_http_sweep(llama_server.url, home, name="tiny llama-server sweep", server_type="llama.cpp",
                          concurrency=CONCURRENCY, input_len=INPUT_LEN, output_lens=OUTPUT_LENS,
                          backend_options={"telemetry_period_s": 0.1, "metrics_period_s": 0.1})


def test_sweep_completes_and_points_are_in_the_store(sweep_runs) -> None:
    result, runs, points = sweep_runs
    assert_sweep_stored(result, runs, points, CONCURRENCY, OUTPUT_LENS)
    assert set(runs["framework"]) == {"llama.cpp"}
    # the served alias is the catalog name of the tiny model, so physical features resolve
    assert set(runs["model"]) == {LLAMA_SERVER_ALIAS}


def test_requested_lengths_honoured_from_usage(sweep_runs) -> None:
    _, runs, _ = sweep_runs
    # ignore_eos: every request generated exactly max_tokens (usage.completion_tokens)
    assert (runs["fw_requested_output_len_tok"] == runs["output_len_tok"]).all()
    assert (runs["fw_output_short_frac"] == 0).all()
    assert (runs["input_len_tok"] == INPUT_LEN).all()
    assert (runs["fw_prompt_len_off_frac"] == 0).all()
    # the server's own per-request timings agree: predicted_n is the generated count
    assert (runs["fw_server_predicted_n_mean"] == runs["output_len_tok"]).all()


def test_concurrent_requests_are_decoded_together(sweep_runs) -> None:
    _, runs, _ = sweep_runs
    # The server's own counters say whether the client's concurrency reached the engine: llama-server decodes
    # the busy slots in one llama_decode call, so tokens generated per decode call is the batch it ran.
    # Measured 1.00 / 1.97 / 3.82-3.92 at concurrency 1 / 2 / 4 on a quiet host.
    # A client that serialised its requests, or a server that ran one slot at a time, reads 1.0 everywhere.
    per_decode = runs["fw_llamacpp_tokens_predicted_per_s"] / runs["fw_llamacpp_n_decode_per_s"]
    for c, out_len, v in zip(runs["batch_size"], runs["output_len_tok"], per_decode, strict=True):
        # A point's requests start and finish apart, so some decode calls run fewer slots: on a host loaded by
        # other work, 2.23 at concurrency 4 with 16 output tokens. Serialised requests would read 1.0.
        assert (v == pytest.approx(1.0) if c == 1 else 1 + 0.3 * (c - 1) <= v <= c + 1e-9), (c, out_len, v)


def test_throughput_rises_with_concurrency(sweep_runs) -> None:
    _, runs, _ = sweep_runs
    for out_len in OUTPUT_LENS:
        tp = runs[runs["output_len_tok"] == out_len].set_index("batch_size")["output_throughput_tok_s"]
        # How much batching pays on one CPU thread depends on the host, and each point is one measurement:
        # 1 / 2 / 4 slots gave 253 / 380 / 491 tok/s here (16 output tokens, 1.9x), 539 / 594 / 693 in CI
        # (1.28x) and once 497 / 478 / 588 in CI (1.18x). The amount is not a property of the code, so this
        # asserts only that four slots decoded together beat one; the batching itself is asserted above
        # from the server's counters.
        assert tp[4.0] > tp[1.0], tp.to_dict()
        # two slots gain least and once read 286 against 326 tok/s at one slot: "does not collapse" holds
        assert tp[2.0] > 0.75 * tp[1.0], tp.to_dict()


def test_throughput_and_latency_consistent(sweep_runs) -> None:
    _, runs, _ = sweep_runs
    assert_throughput_latency_consistent(runs)


def test_ttft_below_e2e(sweep_runs) -> None:
    _, runs, _ = sweep_runs
    assert (runs["ttft_s"] > 0).all()
    assert (runs["ttft_s"] < runs["e2e_latency_s"]).all()
    assert (runs["tpot_s"] > 0).all()
    # the server's own decode time per token (its `timings`) is what the client saw per token
    # (measured: 0.99-1.00 of the client's TPOT; on a host loaded by other work one point of 16 tokens read 1.33,
    # the client's timestamps waiting on the CPU too, so the points agree in the median and each within 1.6x)
    ratio = runs["fw_server_predicted_per_token_ms_mean"] / 1000 / runs["tpot_s"]
    assert 0.85 <= ratio.median() <= 1.15 and ratio.between(0.6, 1.6).all(), ratio.tolist()


def test_server_metrics_scraped_into_fw_columns(sweep_runs) -> None:
    _, runs, _ = sweep_runs
    expected = {"fw_llamacpp_tokens_predicted_per_s", "fw_llamacpp_prompt_tokens_per_s",
                "fw_llamacpp_n_decode_per_s", "fw_llamacpp_requests_processing_mean",
                "fw_llamacpp_requests_processing_max", "fw_llamacpp_requests_deferred_max"}
    missing = expected - set(runs.columns)
    assert not missing, sorted(c for c in runs.columns if c.startswith("fw_"))
    # gauges come from the scrapes made while the point's requests ran; a point whose in-window scrapes all
    # failed on a loaded machine (seen once in CI, batch 4 x 48 tokens) has none rather than the idle value
    gauges = sorted(c for c in expected if c.endswith(("_mean", "_max")) and "_per_s" not in c)
    assert runs[sorted(expected - set(gauges))].notna().all().all()
    assert runs[gauges].notna().all(axis=1).sum() >= len(runs) - 1, runs[gauges].to_dict("list")
    for _, r in runs.iterrows():
        c = r["batch_size"]
        # the server's generated-token counter over the point matches the client's usage count
        # (the scrape window is a little longer than the measured one: a few percent lower)
        assert r["fw_llamacpp_tokens_predicted_per_s"] == pytest.approx(r["output_throughput_tok_s"], rel=0.25)
        # prompt tokens the server processed: at most what was sent (prefix cache), and most of it
        assert 0.5 * r["input_len_tok"] * r["request_throughput_rps"] < r["fw_llamacpp_prompt_tokens_per_s"]
        assert r["fw_llamacpp_prompt_tokens_per_s"] < 1.25 * r["input_len_tok"] * r["request_throughput_rps"]
        # never more requests in the server than the client kept in flight; none waited for a slot
        if pd.isna(r["fw_llamacpp_requests_processing_max"]):
            continue
        # (a point's in-window scrapes can all fall between two requests on a loaded machine: seen once, 0 at
        # concurrency 1, so a point may see none; every concurrency level as a whole saw requests in flight)
        assert 0 <= r["fw_llamacpp_requests_processing_max"] <= c
        assert r["fw_llamacpp_requests_deferred_max"] == 0
    assert (runs.groupby("batch_size")["fw_llamacpp_requests_processing_max"].max() >= 1).all()
    # batching is visible inside the server: tokens per llama_decode call grow with concurrency
    # (measured 1.0 / 1.9-2.0 / 3.8-3.9 at concurrency 1 / 2 / 4)
    per_decode = (runs["fw_llamacpp_tokens_predicted_per_s"] / runs["fw_llamacpp_n_decode_per_s"]).groupby(
        runs["batch_size"]).mean()
    assert per_decode[1.0] <= 1.05, per_decode.to_dict()
    assert per_decode[4.0] > 2.0, per_decode.to_dict()
    assert runs.groupby("batch_size")["fw_llamacpp_requests_processing_mean"].max()[4.0] > 2.0


def test_check_describes_metrics_and_health(llama_server: ServerProcess) -> None:  # noqa: F811
    backend = HttpBackend(target=llama_server.url, server_type="llama.cpp", telemetry=False)
    backend.check()
    described = backend.describe()
    assert described["length_control"] == "ignore_eos"
    assert backend.served_model_ == LLAMA_SERVER_ALIAS
    assert described["metrics"] == "scraped", described
