"""The HTTP sweep backend end to end against a REAL inference server on CPU (``transformers serve``).

The server (tests/sweep_server.py) serves a tiny random-weight Llama built at
test time; a small sweep over concurrency 1, 2, 4 and two output lengths runs
through the real runner into the store. Checks: throughput rises with
concurrency, throughput agrees with the latencies (Little's law), the requested
prompt and output lengths were honoured (from ``usage``), TTFT < E2E, the
absence of server metrics is recorded honestly (this server has no
``/metrics``), and the points are in the store.
"""

from __future__ import annotations

import threading

import pytest
from sweep_server import (  # noqa: F401 - fixtures
    ServerProcess,
    assert_sweep_stored,
    assert_throughput_latency_consistent,
    run_http_sweep,
    tiny_model_dir,
    transformers_server,
)

from perfmodel.features import CLIENT_FW_COLUMNS
from perfmodel.sweep.backend import SweepPoint
from perfmodel.sweep.http_backend import HttpBackend, HttpBackendError

pytestmark = pytest.mark.slow

INPUT_LEN = 32
OUTPUT_LENS = (16, 32)
CONCURRENCY = (1, 2, 4)


@pytest.fixture(scope="module")
def sweep_runs(transformers_server: ServerProcess, tmp_path_factory: pytest.TempPathFactory):  # noqa: F811
    home = tmp_path_factory.mktemp("http-sweep-home")
    # the 2-vCPU test machine is shared: 1 ms telemetry would only steal from the server
    return run_http_sweep(transformers_server.url, home, name="tiny http sweep", server_type="transformers",
                          concurrency=CONCURRENCY, input_len=INPUT_LEN, output_lens=OUTPUT_LENS,
                          backend_options={"telemetry_period_s": 0.1})


def test_sweep_completes_and_points_are_in_the_store(sweep_runs) -> None:
    result, runs, points = sweep_runs
    assert_sweep_stored(result, runs, points, CONCURRENCY, OUTPUT_LENS)
    assert set(runs["load_kind"]) == {"concurrency"}
    assert set(runs["source_format"]) == {"perfmodel-http"}


def test_requested_lengths_honoured_from_usage(sweep_runs) -> None:
    _, runs, _ = sweep_runs
    # the columns hold the means of usage.prompt_tokens / completion_tokens over requests
    assert (runs["input_len_tok"] == INPUT_LEN).all()
    assert (runs["fw_requested_output_len_tok"] == runs["output_len_tok"]).all()
    assert (runs["fw_output_short_frac"] == 0).all()
    assert (runs["fw_prompt_len_off_frac"] == 0).all()


def test_throughput_rises_with_concurrency(sweep_runs) -> None:
    _, runs, _ = sweep_runs
    for out_len in OUTPUT_LENS:
        tp = runs[runs["output_len_tok"] == out_len].set_index("batch_size")["output_throughput_tok_s"]
        # Continuous batching: requests in flight share each decoding step. On the
        # shared 2-vCPU machine one server thread gave 141 / 152 / 292 tok/s at 1 / 2 / 4
        # in one run and 147 / 348 / 282 in the next, and 435 / 587 / 611 in a clean-clone CI
        # run (2026-12-02): the order of 2 and 4 is noise, the rise from 1 is not (one request
        # at a time, without batching, stays at 1.0x).
        assert tp[4.0] > 1.3 * tp[1.0], tp.to_dict()
        assert max(tp[2.0], tp[4.0]) > 1.35 * tp[1.0], tp.to_dict()
        assert tp[2.0] > 0.85 * tp[1.0], tp.to_dict()


def test_throughput_and_latency_consistent(sweep_runs) -> None:
    _, runs, _ = sweep_runs
    assert_throughput_latency_consistent(runs)


def test_ttft_below_e2e_and_percentiles_ordered(sweep_runs) -> None:
    _, runs, _ = sweep_runs
    assert (runs["ttft_s"] > 0).all()
    assert (runs["ttft_s"] < runs["e2e_latency_s"]).all()
    for stem in ("e2e_latency", "ttft", "tpot", "itl"):
        assert (runs[f"{stem}_p50_s"] <= runs[f"{stem}_p90_s"]).all()
        assert (runs[f"{stem}_p90_s"] <= runs[f"{stem}_p99_s"]).all()
    assert (runs["tpot_s"] > 0).all() and (runs["itl_s"] > 0).all()


def test_no_metrics_endpoint_is_recorded_honestly(sweep_runs, transformers_server: ServerProcess) -> None:  # noqa: F811
    _, runs, _ = sweep_runs
    fw = {c for c in runs.columns if c.startswith("fw_") and runs[c].notna().any()}
    assert fw == CLIENT_FW_COLUMNS  # transformers serve has no /metrics: no server columns at all
    backend = HttpBackend(target=transformers_server.url, server_type="transformers")
    backend.check()
    assert backend.describe()["metrics"] == f"no server metrics: {transformers_server.url}/metrics answered HTTP 404"
    # host telemetry and the client's own cost ride along
    assert runs["hw_cpu_util_pct_mean"].notna().all()
    assert (runs["hw_client_cpu_ms_per_req"] > 0).all()


def test_check_rejects_a_model_the_server_does_not_serve(transformers_server: ServerProcess) -> None:  # noqa: F811
    backend = HttpBackend(target=transformers_server.url, model="no-such-model")
    with pytest.raises(HttpBackendError, match="does not serve model 'no-such-model'; it serves: "):
        backend.check()


def test_prompt_calibration_exact_on_real_tokenizer(transformers_server: ServerProcess) -> None:  # noqa: F811
    """Odd lengths too: the calibrated prompt gives exactly the count asked for, per shuffled request."""
    backend = HttpBackend(target=transformers_server.url, server_type="transformers", telemetry=False)
    for n_in in (5, 77):
        point = SweepPoint(load_kind="concurrency", batch_size=2, input_len_tok=n_in, output_len_tok=4,
                           repeat_idx=0, n_requests=4, warmup=0, timeout_s=60, key=f"cal{n_in}")
        res = backend.run_point(point, cancel=threading.Event())
        assert res.error is None and res.row is not None
        assert res.row["input_len_tok"] == n_in
        assert res.row["output_len_tok"] == 4
