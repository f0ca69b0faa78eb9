"""CLI: perfmodel detect / monitor on a recorded stream."""

from __future__ import annotations

import contextlib
import json
import re
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from click.testing import CliRunner

from perfmodel.cli import main

DATA = Path(__file__).parent / "data" / "monitor"
RUNNING_4 = b'# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name="m"} 4\n'


@contextlib.contextmanager
def _prometheus(page: Callable[[int], bytes | None]) -> Iterator[str]:
    """A real HTTP server on 127.0.0.1 whose n-th scrape (from 0) gets ``page(n)`` in the Prometheus text
    format (None: HTTP 503); yields its base URL."""

    class Page(BaseHTTPRequestHandler):
        n = 0

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            body, Page.n = page(Page.n), Page.n + 1
            if body is None:
                self.send_error(503)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def test_detect_json_lists_alerts_with_hints() -> None:
    res = CliRunner().invoke(main, ["detect", str(DATA / "stream.csv"), "--metric", "tpot_s", "--json"])
    assert res.exit_code == 0, res.output
    recs = json.loads(res.output)
    # the root's --json too, as every other command reads it (it had printed text)
    root = CliRunner().invoke(main, ["--json", "detect", str(DATA / "stream.csv"), "--metric", "tpot_s"])
    assert root.exit_code == 0 and json.loads(root.output) == recs
    big = [r for r in recs if r["score"] > 10]
    assert len(big) == 1
    r = big[0]
    assert r["group"] == "replica-a" and r["detector"] == "window" and r["start_timestamp_s"] == 1700000150.0
    assert [c["code"] for c in r["hint"]["causes"]][:2] == ["decode_grew", "kv_cache_full"]


def test_monitor_file_text_and_threshold_expectation() -> None:
    res = CliRunner().invoke(main, ["monitor", str(DATA / "stream.csv"), "--detector", "threshold",
                                    "--metric", "output_throughput_tok_s", "--expected", "output_throughput_tok_s=1200"])
    assert res.exit_code == 0, res.output
    assert res.output.startswith("stream.csv: 400 samples, 1 group(s), detector threshold: 1 alert(s) in 1 incident(s)")
    assert "output throughput changed -3" in res.output or "decode time per token" in res.output


def test_bad_input_exits_2_with_location() -> None:
    res = CliRunner().invoke(main, ["detect", str(DATA / "bad_value.csv")])
    assert res.exit_code == 2 and "row 3, column 'ttft_s'" in res.output
    res = CliRunner().invoke(main, ["monitor"])
    assert res.exit_code == 2 and "give a FILE or --target URL" in res.output
    res = CliRunner().invoke(main, ["detect", str(DATA / "stream.csv"), "--expected", "x"])
    assert res.exit_code == 2 and "METRIC=VALUE" in res.output
    res = CliRunner().invoke(main, ["monitor", "--target", "http://127.0.0.1:9", "--duration", "1"])
    assert res.exit_code == 2 and "cannot scrape" in res.output


def test_live_target_alerts_with_root_cause_hints() -> None:
    """A real HTTP server on 127.0.0.1 serves a vLLM-style Prometheus page; after 60 scrapes the queue
    jumps and the KV cache fills: the live monitor alerts on the queue with the same hints as a recording."""
    import json as _json

    def page(n: int) -> bytes:
        waiting, kv = (25, 0.99) if n >= 60 else (n % 3, 0.5)
        return (f'# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{{model_name="m"}} {waiting}\n'
                f'# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{{model_name="m"}} {kv}\n'
                '# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name="m"} 8\n').encode()

    with _prometheus(page) as url:
        res = CliRunner().invoke(main, ["monitor", "--target", url, "--interval", "0.01", "--duration", "6",
                                        "--detector", "point", "--metric", "fw_vllm_num_requests_waiting",
                                        "--json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    alerts = [_json.loads(line) for line in res.output.splitlines() if line.startswith("{")]
    assert alerts, res.output
    first = alerts[0]
    assert first["metric"] == "fw_vllm_num_requests_waiting"
    assert "kv_cache_full" in first["causes"] and "queue_growing" in first["causes"]
    assert "KV-cache usage reached 99%" in first["hint"]


def test_live_telemetry_is_context_not_an_alarm() -> None:
    """With or without per-scrape telemetry (host CPU here: no GPU), a steady server raises nothing: the
    hw_ columns feed the hints and are not judged unless named with --metric."""
    with _prometheus(lambda n: RUNNING_4) as url:
        for period in (0.0, 0.02):
            res = CliRunner().invoke(main, ["monitor", "--target", url, "--interval", "0.05", "--duration", "1",
                                            "--telemetry-period", str(period), "--json"], catch_exceptions=False)
            assert res.exit_code == 0, res.output
            # a constant gauge and unnamed hw_ columns raise nothing
            assert not [ln for ln in res.output.splitlines() if ln.startswith("{")], res.output


def test_target_that_is_not_a_url_is_an_option_error() -> None:
    """`--target not-a-url` was a ValueError traceback from urllib; it is a usage error naming --target."""
    for target in ("not-a-url", "localhost:8000", "http://localhost:port", "ftp://host"):
        res = CliRunner().invoke(main, ["monitor", "--target", target, "--duration", "1"])
        assert res.exit_code == 2, (target, res.output)
        assert "--target" in res.output and "http://127.0.0.1:8000" in res.output and repr(target) in res.output
        assert isinstance(res.exception, SystemExit), res.exception


def test_model_expectation_names_the_query_option(tmp_path: Path) -> None:
    """An unknown --hardware for --model-dir is reported against the option, not "row 1, column"."""
    model = tmp_path / "model"
    model.mkdir()
    res = CliRunner().invoke(main, ["detect", str(DATA / "stream.csv"), "--model-dir", str(model),
                                    "--hardware", "warp-drive-9000", "--model", "llama-3-8b", "--framework", "vllm",
                                    "--input-len", "128", "--output-len", "128", "--batch", "8",
                                    "--expect-metric", "output_throughput_tok_s"])
    assert res.exit_code == 2, res.output
    assert "unknown hardware 'warp-drive-9000'" in res.output and "--hardware" in res.output
    assert "row(s) 1" not in res.output


def test_live_target_that_stops_answering_is_retried_then_given_up() -> None:
    """A server that answered and then fails (HTTP 503 for a while: a restart) is reported on stderr and
    scraped again; one that never comes back ends the session with an error."""
    import perfmodel.cli_monitor as cm

    down = {"from": 20, "to": 40, "seen": 0}

    def page(n: int) -> bytes | None:
        down["seen"] = n + 1
        return None if down["from"] <= n < down["to"] else RUNNING_4

    with _prometheus(page) as url:
        args = ["monitor", "--target", url, "--interval", "0.01", "--duration", "2", "--detector", "point"]
        res = CliRunner().invoke(main, args, catch_exceptions=False)
        assert res.exit_code == 0, res.output
        assert "scrape failed (HTTP Error 503" in res.stderr and "scrape answered again after" in res.stderr
        assert down["seen"] > 60  # kept scraping after the outage
        down.update({"from": down["seen"] + 5, "to": 10**9})  # answers 5 more scrapes, then never again
        # (ten intervals are far below the 60 s floor: lowered to give up in the test's time)
        floor, cm._OUTAGE_GIVE_UP_S = cm._OUTAGE_GIVE_UP_S, 0.3
        try:
            res = CliRunner().invoke(main, args, catch_exceptions=False)
        finally:
            cm._OUTAGE_GIVE_UP_S = floor
        assert res.exit_code == 2 and "HTTP Error 503" in res.output
        assert re.search(r"cannot scrape \S+ for \d+ s: HTTP Error 503", res.output), res.output  # gave up
        assert "scrape failed" in res.stderr  # it was an outage, retried before giving up


def test_detect_replays_a_result_file_or_a_dataset_one_series_per_measurement(tmp_path: Path) -> None:
    # A canonical runs file (a sweep from batch 1 to 32) had been one stream whose TTFT "changed +700%" as the
    # batch grew; a stored dataset could not be replayed from the command line at all.
    from perfmodel.api import import_files

    sample = Path(__file__).resolve().parents[1] / "sample_runs" / "perfmodel-tiny-llama_cpu-x86-2vcpu.csv"
    res = CliRunner().invoke(main, ["--json", "detect", str(sample)])
    assert res.exit_code == 0, res.output
    assert not [r for r in json.loads(res.output) if r["group"] == "all"]
    text = CliRunner().invoke(main, ["detect", str(sample)]).output
    assert text.startswith(f"{sample.name}: 96 samples, 32 group(s)")  # 32 configuration x batch series
    info, _ = import_files([sample], name="tiny sweep")
    by_name = CliRunner().invoke(main, ["detect", "tiny sweep", "--detector", "threshold"])
    assert by_name.exit_code == 0 and by_name.output.startswith("dataset tiny sweep: 96 samples, 32 group(s)")
    assert "batch 4]" in by_name.output  # each alert names its measurement
    missing = CliRunner().invoke(main, ["detect", "no such thing"])
    assert missing.exit_code == 2 and "no dataset 'no such thing'" in missing.output
