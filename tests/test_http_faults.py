"""Faults of an OpenAI-compatible server: every point gets a recorded reason, nothing crashes.

A small real HTTP server (stdlib ``http.server`` on 127.0.0.1, chunked SSE
streaming like uvicorn) plays the inference server; its ``mode`` decides how
streamed completions go wrong: HTTP 500, a stall past the point's budget, a
malformed stream, a dropped connection, a stream without ``usage``, or the
server stopping mid-sweep. Sweeps run through the real runner and store.
Also here: ``/metrics`` scraping into ``fw_`` columns, partial failures,
cancelling a point, and the Prometheus parser on vLLM/llama.cpp-style pages.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from perfmodel.errors import ValidationError
from perfmodel.store import Store
from perfmodel.sweep.backend import SweepPoint
from perfmodel.sweep.http_backend import (
    HttpBackend,
    HttpBackendError,
    RequestRecord,
    metrics_columns,
    parse_metrics,
    summarise_failures,
)
from perfmodel.sweep.plan import plan_from_dict
from perfmodel.sweep.runner import create_sweep, run_sweep

MODEL = "fake-model"


class FakeServer:
    """An OpenAI-compatible server whose streamed completions fail on demand.

    ``prompt_tokens`` is the number of words plus one (a BOS token), so the
    backend's prompt calibration has a real count to match. Each streamed token
    is its own chunk of a chunked response, ``token_delay_s`` apart.
    """

    def __init__(self, *, metrics: bool = False, token_delay_s: float = 0.002) -> None:
        self.mode = "ok"
        self.metrics = metrics
        self.token_delay_s = token_delay_s
        self.fail_every = 0  # with mode "ok": every Nth streamed request answers 500
        self.stop_after = 0  # shut the server down after this many streamed requests
        self.n_streamed = 0
        self.running = 0
        self.tokens_total = 0.0
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.closed = False

    def close(self) -> None:
        self.release.set()
        if not self.closed:
            self.closed = True
            self.httpd.shutdown()
            self.httpd.server_close()

    def _metrics_page(self) -> str:
        with self.lock:
            running, tokens = self.running, self.tokens_total
        return (
            "# HELP vllm:num_requests_running Running requests.\n# TYPE vllm:num_requests_running gauge\n"
            f'vllm:num_requests_running{{model_name="{MODEL}"}} {running}\n'
            "# TYPE vllm:kv_cache_usage_perc gauge\n"
            f'vllm:kv_cache_usage_perc{{model_name="{MODEL}"}} {0.1 * running}\n'
            "# TYPE vllm:generation_tokens_total counter\n"
            f'vllm:generation_tokens_total{{model_name="{MODEL}"}} {tokens}\n'
            "# TYPE vllm:iteration_tokens_total histogram\n"
            f'vllm:iteration_tokens_total_bucket{{le="+Inf",model_name="{MODEL}"}} {tokens}\n'
            f'vllm:iteration_tokens_total_count{{model_name="{MODEL}"}} {tokens}\n'
            f'vllm:iteration_tokens_total_sum{{model_name="{MODEL}"}} {3 * tokens}\n'
            "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 12.5\n"
        )

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # like uvicorn: without it Nagle + delayed ACKs merge the token chunks
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
                pass

            def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _chunk(self, data: bytes) -> None:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()

            def do_GET(self) -> None:  # noqa: N802 - stdlib name
                if self.path == "/v1/models":
                    self._send(200, json.dumps({"data": [{"id": MODEL, "object": "model"}]}).encode())
                elif self.path == "/metrics" and server.metrics:
                    self._send(200, server._metrics_page().encode(), "text/plain; version=0.0.4")
                else:
                    self._send(404, b'{"detail":"Not Found"}')

            def do_POST(self) -> None:  # noqa: N802 - stdlib name
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                n_prompt = len(str(body.get("prompt", "")).split()) + 1
                n_out = int(body.get("max_tokens", 16))
                if not body.get("stream"):
                    self._send(200, json.dumps({"choices": [{"text": "x"}], "usage": {
                        "prompt_tokens": n_prompt, "completion_tokens": 1, "total_tokens": n_prompt + 1}}).encode())
                    return
                with server.lock:
                    server.n_streamed += 1
                    nth = server.n_streamed
                if server.stop_after and nth > server.stop_after:
                    threading.Thread(target=server.close, daemon=True).start()
                    self.close_connection = True
                    return  # connection dropped without an answer, then nothing listens
                mode = server.mode
                if mode == "500" or (server.fail_every and nth % server.fail_every == 0):
                    self._send(500, b'{"error": "CUDA out of memory (simulated)"}')
                    return
                if mode == "stall":
                    server.release.wait(30)
                    self.close_connection = True
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                with server.lock:
                    server.running += 1
                try:
                    for i in range(n_out):
                        if mode == "drop" and i == 2:
                            self.close_connection = True
                            self.connection.shutdown(2)
                            return
                        if mode == "malformed" and i == 2:
                            self._chunk(b'data: {"choices": [{"text": "tok"\n\n')
                            break
                        time.sleep(server.token_delay_s)
                        self._chunk(b"data: " + json.dumps({"choices": [{"index": 0, "text": f" t{i}"}]}).encode()
                                    + b"\n\n")
                        with server.lock:
                            server.tokens_total += 1
                    if mode != "no_usage":
                        usage = {"prompt_tokens": n_prompt, "completion_tokens": n_out,
                                 "total_tokens": n_prompt + n_out}
                        # llama.cpp-style server timings ride along in the last event
                        timings = {"prompt_n": n_prompt, "predicted_n": n_out,
                                   "predicted_per_token_ms": 1000 * server.token_delay_s}
                        self._chunk(b"data: " + json.dumps({"choices": [], "usage": usage, "timings": timings}).encode()
                                    + b"\n\n")
                    self._chunk(b"data: [DONE]\n\n")
                    self.wfile.write(b"0\r\n\r\n")
                finally:
                    with server.lock:
                        server.running -= 1

        return Handler


@pytest.fixture
def fake_server() -> Iterator[FakeServer]:
    server = FakeServer()
    try:
        yield server
    finally:
        server.close()


def _point(c: int = 2, n: int = 6, *, timeout_s: float = 10.0, out: int = 8, warmup: int = 0) -> SweepPoint:
    return SweepPoint(load_kind="concurrency", batch_size=c, input_len_tok=9, output_len_tok=out, repeat_idx=0,
                      n_requests=n, warmup=warmup, timeout_s=timeout_s, key=f"c{c}-n{n}")


def _sweep(server: FakeServer, home: Any, *, timeout_s: float = 5.0, concurrency: tuple[int, ...] = (1, 2),
           repeats: int = 1):
    store = Store(home)
    plan = plan_from_dict({
        "backend": "http", "target": server.url, "batch_sizes": list(concurrency), "input_lens": [9],
        "output_lens": [8], "repeats": repeats, "warmup": 0, "retries": 0, "timeout_s": timeout_s,
        "n_requests": 4, "backend_options": {"telemetry": False}}).check()
    info = create_sweep(plan, store=store)
    result = run_sweep(info.id, store=store)
    return result, store.sweep_points(result.sweep_id), store


# ---------------------------------------------------------------------- sweeps with faults
@pytest.mark.parametrize(("mode", "reason"), [
    ("500", "http 500"),
    ("malformed", "malformed stream"),
    ("drop", "dropped connection"),
    ("no_usage", "no usage in stream"),
])
def test_every_point_fails_with_its_reason(fake_server: FakeServer, tmp_path: Any, mode: str, reason: str) -> None:
    fake_server.mode = mode
    result, points, store = _sweep(fake_server, tmp_path)
    assert result.status == "failed" and result.n_failed == 2 and result.n_done == 0
    assert list(points["status"]) == ["failed", "failed"]
    for err in points["error"]:
        assert f"requests failed: {reason} x" in err, err
    assert len(store.runs(result.dataset_id)) == 0


def test_500_reason_keeps_the_servers_words(fake_server: FakeServer) -> None:
    fake_server.mode = "500"
    res = HttpBackend(target=fake_server.url, telemetry=False).run_point(_point(2, 6), cancel=threading.Event())
    assert res.row is None and res.n_ok == 0
    # four failures in a row (max(4, concurrency)) stop the point: a dead server costs seconds, not the budget
    # (the other worker's request in flight when the 4th failed still counts)
    assert re.fullmatch(r"stopped after (\d) of 6 requests \(4 failures in a row\); \1 of 6 requests failed: "
                        r"http 500 x\1 \(first: http 500: \{\"error\": \"CUDA out of memory \(simulated\)\"\}\)",
                        res.error), res.error
    assert res.n_failed in (4, 5)


def test_stall_past_the_budget_is_a_timeout(fake_server: FakeServer, tmp_path: Any) -> None:
    fake_server.mode = "stall"
    t0 = time.perf_counter()
    result, points, _ = _sweep(fake_server, tmp_path, timeout_s=1.0)
    elapsed = time.perf_counter() - t0
    assert result.status == "failed" and result.n_failed == 2
    for err in points["error"]:
        assert "requests failed: timeout x" in err, err
        assert "budget" in err
    assert elapsed < 15, elapsed  # two 1-s points, not the server's 30-s stall


def test_server_stops_mid_sweep(fake_server: FakeServer, tmp_path: Any) -> None:
    """The first point completes, then the server goes away: later points record why, the sweep finishes."""
    fake_server.stop_after = 4  # the first point (concurrency 1, 4 requests)
    result, points, store = _sweep(fake_server, tmp_path, concurrency=(1, 2, 4))
    assert result.status == "done"  # finished, with failed points
    assert list(points["status"]) == ["done", "failed", "failed"]
    assert len(store.runs(result.dataset_id)) == 1
    errors = points["error"].tolist()[1:]
    assert "dropped connection" in errors[0] or "connection refused" in errors[0], errors[0]
    assert "connection refused" in errors[1], errors[1]


def test_partial_failures_keep_the_row_and_say_why(fake_server: FakeServer) -> None:
    fake_server.fail_every = 3
    res = HttpBackend(target=fake_server.url, telemetry=False).run_point(_point(2, 9), cancel=threading.Event())
    assert res.n_ok == 6 and res.n_failed == 3
    assert res.row is not None and res.row["n_requests"] == 6 and res.row["n_failed"] == 3
    assert res.error.startswith("3 of 9 requests failed: http 500 x3")


def test_cancel_returns_quickly(fake_server: FakeServer) -> None:
    fake_server.mode = "stall"
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    t0 = time.perf_counter()
    res = HttpBackend(target=fake_server.url, telemetry=False).run_point(_point(2, 4, timeout_s=30),
                                                                         cancel=cancel)
    assert res.error == "cancelled" and res.row is None
    assert time.perf_counter() - t0 < 3


def test_unreachable_server_check_and_point(fake_server: FakeServer) -> None:
    url = fake_server.url
    fake_server.close()
    backend = HttpBackend(target=url, model=MODEL, telemetry=False)
    with pytest.raises(HttpBackendError, match=f"cannot reach the server at {url}"):
        backend.check()
    res = backend.run_point(_point(), cancel=threading.Event())  # never raises
    assert res.row is None and "cannot reach the server" in res.error


# ---------------------------------------------------------------------- a healthy fake server
def test_healthy_point_against_fake_server(fake_server: FakeServer) -> None:
    backend = HttpBackend(target=fake_server.url, telemetry=False, server_type="vllm")
    res = backend.run_point(_point(2, 6, out=8, warmup=2), cancel=threading.Event())
    assert res.error is None and res.n_ok == 6
    row = res.row
    # 8 words + BOS = 9 prompt tokens, calibrated without a tokenizer
    assert row["input_len_tok"] == 9 and row["output_len_tok"] == 8
    assert row["output_throughput_tok_s"] == pytest.approx(6 * 8 / row["fw_duration_s"])
    assert row["ttft_s"] < row["e2e_latency_s"]
    # 8 tokens 2 ms apart: 7 gaps per request of at least 2 ms
    assert row["itl_p50_s"] >= 0.0015 and row["tpot_s"] >= 0.0015
    assert backend.describe()["metrics"] == f"no server metrics: {fake_server.url}/metrics answered HTTP 404"
    assert not any(k.startswith("fw_vllm") for k in row)
    # the server's own timings, where it sends them, become fw_server_* means
    assert row["fw_server_predicted_per_token_ms_mean"] == pytest.approx(2.0)
    assert row["fw_server_prompt_n_mean"] == 9 and row["fw_server_predicted_n_mean"] == 8


def test_metrics_scraped_into_fw_columns() -> None:
    server = FakeServer(metrics=True, token_delay_s=0.01)
    try:
        backend = HttpBackend(target=server.url, telemetry=False, metrics_period_s=0.05)
        backend.check()
        assert backend.describe()["metrics"] == "scraped"
        res = backend.run_point(_point(4, 8, out=10), cancel=threading.Event())
    finally:
        server.close()
    row = res.row
    assert res.error is None
    # 8 requests x 10 tokens generated during the window
    assert row["fw_vllm_generation_tokens_per_s"] * row["fw_duration_s"] == pytest.approx(80, rel=0.2)
    assert row["fw_vllm_iteration_tokens_total_mean"] == pytest.approx(3.0)  # sum / count of the window
    assert 1.0 <= row["fw_vllm_num_requests_running_max"] <= 4.0
    assert 0.0 < row["fw_vllm_num_requests_running_mean"] <= 4.0
    assert row["fw_vllm_kv_cache_usage_perc_max"] == pytest.approx(0.1 * row["fw_vllm_num_requests_running_max"])
    assert not any(k.startswith("fw_process") for k in row)


def test_length_control_per_server_type() -> None:
    def body(**kw: Any) -> dict[str, Any]:
        b = HttpBackend(target="http://127.0.0.1:1", **kw)
        b.served_model_ = MODEL
        return b._body("p", 7, stream=True, force=True)

    assert body(server_type="vllm")["ignore_eos"] is True
    assert body(server_type="llama.cpp")["ignore_eos"] is True
    assert json.loads(body(server_type="transformers")["generation_config"]) == {"min_new_tokens": 7}
    assert "ignore_eos" not in body(server_type="transformers")
    assert body(server_type="generic", length_control="min_tokens")["min_tokens"] == 7
    g = body(server_type="generic")
    assert "ignore_eos" not in g and "min_tokens" not in g and g["max_tokens"] == 7
    chat = body(endpoint="chat", server_type="sglang")
    assert chat["messages"] == [{"role": "user", "content": "p"}] and chat["stream_options"] == {
        "include_usage": True}


def test_bad_settings_list_every_problem() -> None:
    with pytest.raises(ValidationError) as info:
        HttpBackend(target="localhost:8000", server_type="vlm", metrics_period_s=0, bogus=1)
    msg = str(info.value)
    for needle in ("target", "server_type", "'vllm'", "metrics_period_s", "bogus"):
        assert needle in msg, msg


# ---------------------------------------------------------------------- pure helpers
VLLM_PAGE = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
vllm:num_requests_running{engine="1",model_name="m"} 1.0
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{engine="0",model_name="m"} 0.5
vllm:gpu_cache_usage_perc{engine="1",model_name="m"} 0.25
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{model_name="m"} 1000.0
vllm:prompt_tokens_created{model_name="m"} 1.7e9
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.1",model_name="m"} 2.0
vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 4.0
vllm:time_to_first_token_seconds_count{model_name="m"} 4.0
vllm:time_to_first_token_seconds_sum{model_name="m"} 0.8
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16"} 1.0
# TYPE python_gc_objects_collected_total counter
python_gc_objects_collected_total{generation="0"} 123.0
"""

LLAMACPP_PAGE = """\
# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 640
# HELP llamacpp:kv_cache_usage_ratio KV-cache usage. 1 means 100 percent usage.
# TYPE llamacpp:kv_cache_usage_ratio gauge
llamacpp:kv_cache_usage_ratio 0.125
# HELP llamacpp:requests_processing Number of requests processing.
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 2
"""


def test_parse_metrics_vllm_page() -> None:
    m = parse_metrics(VLLM_PAGE)
    assert m["vllm:num_requests_running"] == ("gauge", 4.0)  # summed over engines
    assert m["vllm:gpu_cache_usage_perc"] == ("gauge", 0.375)  # a ratio: averaged
    assert m["vllm:prompt_tokens"] == ("counter", 1000.0)
    assert m["hist_sum:vllm:time_to_first_token_seconds"] == ("hist_sum", 0.8)
    assert m["hist_count:vllm:time_to_first_token_seconds"] == ("hist_count", 4.0)
    assert not any("info" in k or "python" in k or "created" in k for k in m)


def test_parse_metrics_llamacpp_page() -> None:
    m = parse_metrics(LLAMACPP_PAGE)
    assert m == {"llamacpp:prompt_tokens": ("counter", 640.0), "llamacpp:kv_cache_usage_ratio": ("gauge", 0.125),
                 "llamacpp:requests_processing": ("gauge", 2.0)}


def test_metrics_columns_rates_means_and_restarts() -> None:
    before = parse_metrics(VLLM_PAGE)
    after = parse_metrics(VLLM_PAGE.replace("} 1000.0", "} 1500.0").replace("_count{model_name=\"m\"} 4.0",
                                                                             "_count{model_name=\"m\"} 6.0")
                          .replace("_sum{model_name=\"m\"} 0.8", "_sum{model_name=\"m\"} 1.4"))
    mid = parse_metrics(VLLM_PAGE.replace('engine="0",model_name="m"} 3.0', 'engine="0",model_name="m"} 7.0'))
    cols = metrics_columns(before, after, [before, mid, after], duration_s=2.0)
    # gauges come from the pages passed as in-window only: an idle page does not dilute them
    assert metrics_columns(before, after, [mid], duration_s=2.0)["fw_vllm_num_requests_running_mean"] == 8.0
    idle_only = metrics_columns(before, after, [], duration_s=2.0)
    assert not any(k.startswith("fw_vllm_num_requests_running") for k in idle_only)
    assert idle_only["fw_vllm_prompt_tokens_per_s"] == pytest.approx(250.0)  # counters need before/after only
    assert cols["fw_vllm_prompt_tokens_per_s"] == pytest.approx(250.0)
    assert cols["fw_vllm_time_to_first_token_seconds_mean"] == pytest.approx(0.3)  # 0.6 s over 2 requests
    assert cols["fw_vllm_num_requests_running_max"] == 8.0
    assert cols["fw_vllm_num_requests_running_mean"] == pytest.approx((4 + 8 + 4) / 3)
    # a counter that went backwards (server restarted) gives no rate rather than a negative one
    restarted = metrics_columns(after, before, [after, before], duration_s=2.0)
    assert "fw_vllm_prompt_tokens_per_s" not in restarted
    assert all(k.startswith("fw_") and k == k.lower() and ":" not in k for k in cols)


def test_summarise_failures() -> None:
    recs = [RequestRecord(ok=True), RequestRecord(reason="timeout"),
            RequestRecord(reason="http 500", detail="boom"), RequestRecord(reason="timeout")]
    assert summarise_failures(recs) == "3 of 4 requests failed: timeout x2, http 500 x1 (first: http 500: boom)"
    assert summarise_failures([RequestRecord(ok=True)]) == ""
