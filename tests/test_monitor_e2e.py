"""The monitor end to end against a REAL inference server: a CPU hog slows it down and an alert says why.

The server is ``transformers serve`` on CPU (tests/sweep_server.py: a tiny
random-weight Llama, one thread). A closed-loop load generator (two client
threads, streaming completions of 16 forced tokens) runs throughout; every
second the test turns the requests finished in that second into one sample:
output throughput, median TTFT and median time per output token (client-side)
and host CPU utilisation (``hw_cpu_util_pct``, psutil, as the sweep telemetry
names it). After a quiet baseline, busy-loop processes pinned to the server's
cores compete with it, and its threads are throttled (stopped three quarters
of every 0.2 s), for about ten seconds.

Checks: the streaming window detector (fed sample by sample while the load
runs) and :func:`perfmodel.monitor.monitor_stream` on the recorded samples both
raise an alert during the slowdown, its hint names a phase that grew or the
saturated host CPU, and at most two anomalies that claim a slowdown (throughput
low, latency high) come before it. The tiny server keeps speeding up for a
while after its warm-up (+10-25 % over the baseline on this VM): the detectors
rightly report that as "high" throughput, which is no false alarm of a slowdown.
When the baseline itself dropped by more than 15 % (other load on a shared
machine, seen once in CI: 330 -> 256 tok/s ten seconds before the hogs) or rose
by more than 35 % (a server still warming up, seen once in CI: 240 -> 416 tok/s,
which widened the detector's band past the halving the hogs caused), the run is
measured once more; the second run is judged whatever its baseline.

Margins for a shared 2-core machine: robust (median/MAD) baseline, means of
three samples, z = 4; the hogs (two per server core) cut the server's share of
the CPU by half or more, a drop far beyond that band. Measured on the 2-vCPU
machine: about 100-300 tok/s before, a drop of 50-75% during the hogs (60-65% with the throttle at three
quarters: 128 -> 48 tok/s).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sweep_server import ServerProcess, tiny_model_dir, transformers_server  # noqa: F401 - fixtures

from perfmodel.monitor import make_detector, monitor_stream, read_stream_bytes

pytestmark = pytest.mark.slow

CONCURRENCY = 2
OUTPUT_TOK = 16
PROMPT = "the of and to in is " * 4
INTERVAL_S = 1.0
WARMUP_S = 5.0
BASELINE_S = 20.0
SLOWDOWN_S = 10.0
DETECTOR = {"window": 12, "w": 3, "z": 4.0, "robust": True}
WORSE = {"output_throughput_tok_s": "low", "ttft_s": "high", "tpot_s": "high"}
PHASE_OR_CPU = {"prefill_grew", "decode_grew", "host_cpu_saturated"}


@dataclass(frozen=True)
class _Request:
    t_end_s: float
    ttft_s: float
    e2e_s: float
    n_tok: int


class _Load:
    """Closed-loop streaming clients: each sends its next request when the previous one ends."""

    def __init__(self, url: str, model: str) -> None:
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname or "127.0.0.1", u.port or 80
        self.body = json.dumps({"model": model, "prompt": PROMPT, "max_tokens": OUTPUT_TOK, "stream": True,
                                "generation_config": json.dumps({"min_new_tokens": OUTPUT_TOK})}).encode()
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.done: list[_Request] = []
        self.errors: list[str] = []
        self.threads = [threading.Thread(target=self._worker, daemon=True) for _ in range(CONCURRENCY)]

    def __enter__(self) -> _Load:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=30)

    def take(self) -> list[_Request]:
        with self.lock:
            out, self.done = self.done, []
        return out

    def _worker(self) -> None:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
        while not self.stop.is_set():
            t0 = time.perf_counter()
            first = math.nan
            n = 0
            try:
                conn.request("POST", "/v1/completions", self.body, {"content-type": "application/json"})
                resp = conn.getresponse()
                if resp.status != 200:
                    raise OSError(f"HTTP {resp.status}: {resp.read()[:200]!r}")
                for line in resp:
                    if not line.startswith(b"data: ") or line.strip() == b"data: [DONE]":
                        continue
                    choices = json.loads(line[6:]).get("choices") or []
                    if choices and choices[0].get("text"):
                        n += 1
                        if math.isnan(first):
                            first = time.perf_counter() - t0
            except (OSError, ValueError, http.client.HTTPException) as exc:
                with self.lock:
                    self.errors.append(repr(exc))
                conn.close()
                conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
                time.sleep(0.1)
                continue
            with self.lock:
                self.done.append(_Request(time.time(), first, time.perf_counter() - t0, n))
        conn.close()


def _sample(t_s: float, reqs: list[_Request], cpu_pct: float) -> dict[str, float]:
    ok = [r for r in reqs if r.n_tok > 0 and math.isfinite(r.ttft_s)]
    tpot = [(r.e2e_s - r.ttft_s) / (r.n_tok - 1) for r in ok if r.n_tok > 1]
    return {"timestamp": t_s, "output_throughput_tok_s": sum(r.n_tok for r in ok) / INTERVAL_S,
            "ttft_s": float(np.median([r.ttft_s for r in ok])) if ok else math.nan,
            "tpot_s": float(np.median(tpot)) if tpot else math.nan, "hw_cpu_util_pct": cpu_pct}


def _start_hogs(cpus: set[int]) -> list[subprocess.Popen[bytes]]:
    code = f"import os\nos.sched_setaffinity(0, {sorted(cpus)!r})\nwhile True:\n    pass\n"
    return [subprocess.Popen([sys.executable, "-c", code]) for _ in range(2 * len(cpus))]


class _Throttle:
    """Throttled server: stopped (SIGSTOP) for ``stopped`` of every period, so the slowdown is real even when
    the CPU hogs alone do not bite (an idle second core, or a machine whose other load just went away).
    Three quarters: at one half, with CI's other test worker making the baseline noisy (128-304 tok/s),
    a run dropped only 192 -> 128 tok/s in the median and the band, widened by that noise, held it."""

    def __init__(self, pid: int, period_s: float = 0.2, stopped: float = 0.75) -> None:
        self.pid, self.period_s, self.stopped = pid, period_s, stopped
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop_event.is_set():
            os.kill(self.pid, signal.SIGSTOP)
            self.stop_event.wait(self.period_s * self.stopped)
            os.kill(self.pid, signal.SIGCONT)
            self.stop_event.wait(self.period_s * (1 - self.stopped))

    def start(self) -> _Throttle:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stop_event.set()
        if self.thread.is_alive():
            self.thread.join(timeout=5)
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGCONT)


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        with contextlib.suppress(ProcessLookupError):
            p.kill()
    for p in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(timeout=10)


def _measure(server: ServerProcess, model: str, psutil: Any) -> tuple[list[dict[str, float]], list[float],
                                                                   list[float], list[float], list[str]]:
    """One run: baseline, then the hogs; samples, live alerts (all, and drops), hog start, client errors."""
    server_cpus = os.sched_getaffinity(server.proc.pid)
    live = make_detector("window", **DETECTOR)  # type: ignore[arg-type]
    live_alerts: list[float] = []
    live_drops: list[float] = []
    rows: list[dict[str, float]] = []
    hogs: list[subprocess.Popen[bytes]] = []
    throttle: _Throttle | None = None
    hog_t: list[float] = []
    psutil.cpu_percent(interval=None)
    try:
        with _Load(server.url, model) as load:
            time.sleep(WARMUP_S)
            load.take()
            psutil.cpu_percent(interval=None)
            t_next = time.monotonic() + INTERVAL_S
            t_stop = time.monotonic() + BASELINE_S + SLOWDOWN_S
            t_hog = time.monotonic() + BASELINE_S
            while time.monotonic() < t_stop:
                time.sleep(max(0.0, t_next - time.monotonic()))
                t_next += INTERVAL_S
                row = _sample(time.time(), load.take(), float(psutil.cpu_percent(interval=None)))
                rows.append(row)
                alert = live.update(row["timestamp"], row["output_throughput_tok_s"])
                if alert is not None:
                    live_alerts.append(row["timestamp"])
                    if alert.direction == "low":
                        live_drops.append(row["timestamp"])
                if not hogs and time.monotonic() >= t_hog:
                    hog_t.append(time.time())
                    hogs = _start_hogs(server_cpus)
                    throttle = _Throttle(server.proc.pid).start()
            errors = list(load.errors)
    finally:
        if throttle is not None:
            throttle.stop()
        _stop(hogs)
    return rows, live_alerts, live_drops, hog_t, errors


def _baseline_steady(rows: list[dict[str, float]], t_hog: float) -> bool:
    """Whether the server ran steadily before the hogs: the second half of the baseline within -15 % and
    +35 % of the first, and the detector's band at the hog start narrow enough to see a 40 % drop.

    Something else on a shared machine can slow it, a real drop the detector rightly flags but the test
    did not make; a server still warming up (seen once in CI: 240 -> 416 tok/s) spreads the baseline so
    wide that a halving stays inside the detector's band. So does a dip inside the detector's first
    window alone (seen in CI: 400, 416 ... 192, 240 tok/s among the first 12 samples, halves 336 and 312
    tok/s; its lower bound was 120 tok/s, and 320 -> 144 tok/s went unflagged)."""
    tp = [r["output_throughput_tok_s"] for r in rows if r["timestamp"] < t_hog]
    h = len(tp) // 2
    first, second = float(np.median(tp[:h])), float(np.median(tp[h:]))
    if not 0.85 * first <= second <= 1.35 * first:
        return False
    band = make_detector("window", **DETECTOR).run(np.arange(len(tp), dtype=float), tp)  # type: ignore[arg-type]
    lower, center = float(band.lower[-1]), float(band.center[-1])
    return bool(np.isfinite(lower) and lower > 0.6 * center)


def _recorded_alerts(rows: list[dict[str, float]]) -> list[dict]:
    """The whole measured stream through monitor_stream (the recorded path), as alert records with hints."""
    stream = read_stream_bytes("e2e.csv", pd.DataFrame(rows).to_csv(index=False).encode())
    rep = monitor_stream(stream, detector="window", metrics=["output_throughput_tok_s", "ttft_s", "tpot_s"],
                         **DETECTOR)  # type: ignore[arg-type]
    return rep.records()


def _early_alerts(rows: list[dict[str, float]], t_hog: float, recs: list[dict] | None = None) -> list[dict]:
    """The recorded alerts of a worsening that began and ended before the hogs."""
    recs = _recorded_alerts(rows) if recs is None else recs
    return [r for r in recs if r["start_timestamp_s"] < t_hog and r["end_timestamp_s"] < t_hog
            and r["direction"] == WORSE[r["metric"]]]


def test_cpu_hog_on_the_server_raises_an_alert_with_a_hint(transformers_server: ServerProcess) -> None:  # noqa: F811
    psutil = pytest.importorskip("psutil")
    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("pinning the CPU hog next to the server needs os.sched_setaffinity (Linux)")
    with urllib.request.urlopen(transformers_server.url + "/v1/models", timeout=10) as resp:  # noqa: S310
        model = json.loads(resp.read())["data"][0]["id"]
    # A baseline disturbed by other load (a drop the test did not cause) is measured again, up to three times;
    # so is one in which the live detector already saw drops (seen in CI: 288 -> 224-240 tok/s four samples before
    # the hogs, flagged four times, while the halves stayed within 15 %).
    for _attempt in range(3):
        rows, live_alerts, live_drops, hog_t, errors = _measure(transformers_server, model, psutil)
        assert hog_t, "the slowdown never started"
        # the recorded stream's early alerts too (seen under a parallel test run: a steady-looking baseline
        # whose dip to 352 tok/s, from load the test did not make, the replay flagged three times)
        if _baseline_steady(rows, hog_t[0]) and sum(t < hog_t[0] for t in live_drops) <= 2 \
                and len(_early_alerts(rows, hog_t[0])) <= 2:
            break
    # Only a disturbed baseline skips; false drops on a steady one stay a failure (asserted below).
    if not _baseline_steady(rows, hog_t[0]):
        # Three baselines disturbed by load the test did not make (seen with two browser sessions on the same two
        # cores: 608, 480, 576, 304, 256, 624 ... 144, 96 tok/s before any hog): no drop the test causes can be
        # told from them, so the run says so rather than judging the detector on noise.
        pytest.skip("the host was too busy for a steady baseline in 3 attempts (throughput before the hogs: "
                    f"{[round(r['output_throughput_tok_s']) for r in rows if r['timestamp'] < hog_t[0]]} tok/s)")
    assert not errors or len(errors) < 3, errors[:3]
    frame = pd.DataFrame(rows)
    before = frame[frame["timestamp"] < hog_t[0]]
    during = frame[frame["timestamp"] > hog_t[0] + INTERVAL_S]
    tp_before = float(before["output_throughput_tok_s"].median())
    tp_during = float(during["output_throughput_tok_s"].median())
    summary = (f"throughput median {tp_before:.0f} -> {tp_during:.0f} tok/s, CPU "
               f"{before['hw_cpu_util_pct'].median():.0f} -> {during['hw_cpu_util_pct'].median():.0f}%, "
               f"live alerts at {[round(t - hog_t[0], 1) for t in live_alerts]} s from the hog start; throughput "
               f"{[round(v) for v in frame['output_throughput_tok_s']]}")
    assert tp_before > 0, summary
    # the slowdown itself must be real before the monitor can be judged on it
    assert tp_during < 0.8 * tp_before, summary

    # live: the streaming detector fed while the load ran
    assert any(t >= hog_t[0] for t in live_alerts), summary
    assert sum(t < hog_t[0] for t in live_drops) <= 2, summary

    # recorded: the whole stream through monitor_stream, with hints
    recs = _recorded_alerts(rows)
    in_slowdown = [r for r in recs if r["end_timestamp_s"] >= hog_t[0]]
    early = _early_alerts(rows, hog_t[0], recs)
    detail = summary + "; alerts: " + "; ".join(
        f"{r['metric']} {r['start_timestamp_s'] - hog_t[0]:+.1f}..{r['end_timestamp_s'] - hog_t[0]:+.1f} s "
        f"{[c['code'] for c in r['hint']['causes']]}" for r in recs)
    print(detail)  # shown with -s: the measured margins
    assert len(early) <= 2, detail
    tp = [r for r in in_slowdown if r["metric"] == "output_throughput_tok_s"]
    assert tp and tp[0]["direction"] == "low", detail
    codes = {c["code"] for r in in_slowdown for c in r["hint"]["causes"]}
    assert codes & PHASE_OR_CPU, detail
    assert all(r["hint"]["sentence"] for r in in_slowdown), detail
