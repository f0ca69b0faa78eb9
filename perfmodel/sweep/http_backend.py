"""Measure an OpenAI-compatible HTTP inference server with closed-loop concurrency.

:class:`HttpBackend` is the sweep backend for vLLM, SGLang, TGI, TensorRT-LLM
serve, llama.cpp's ``llama-server``, ``transformers serve`` and any other server
speaking the OpenAI ``/v1/completions`` (or ``/v1/chat/completions``) API.

One point = ``batch_size`` requests kept in flight (asyncio, one keep-alive
connection per in-flight request) until ``n_requests`` have completed, after
``warmup`` unmeasured requests. ``httpx`` does the checks, the calibration
probes and the ``/metrics`` scrapes; the measured streams use a minimal
HTTP/1.1 reader over asyncio streams, because one streamed httpx request cost
~1.4-1.6 ms of client CPU on a 2-vCPU machine against ~0.1 ms for the plain
exchange (see ``benchmarks/bench_http_client.py``). Per point:

* **Prompts of an exact token count without a tokenizer.** A prompt is a
  sequence of common words; its length is calibrated against the server's own
  count (``usage.prompt_tokens`` of ``max_tokens=1`` probes, a short monotone
  search, then single-token filler), cached per length. Each request then
  shuffles the words after the first: tokenizers split on whitespace before
  merging, so the count is unchanged while no two requests share a prefix
  beyond the first word (no prefix-cache hits inflating throughput). Every
  request's real count is read back from ``usage`` anyway.
* **Output length forced** the way the server understands (:data:`LENGTH_CONTROLS`,
  default per :data:`SERVER_TYPES`): ``ignore_eos`` (vLLM, SGLang, llama.cpp,
  TensorRT-LLM), ``min_tokens``, or ``transformers serve``'s
  ``"generation_config": "{\\"min_new_tokens\\": N}"`` (it rejects
  ``ignore_eos`` with HTTP 422). The generated count is read from ``usage``
  (never from chunk counts: chunks are not tokens); requests that came back
  shorter are counted in ``fw_output_short_frac``.
* **Streaming timings** per request: TTFT (first chunk carrying text), ITL (gaps
  between text chunks), TPOT ``(e2e - ttft) / (out - 1)`` and end-to-end latency;
  mean, p50, p90 and p99 over the point's requests.
* **Aggregate throughput** over the measured window (first send to last
  completion): output and total (input + output) tokens per second from ``usage``.
* **Failures per request** (HTTP status, timeout, dropped connection, malformed
  stream, error event, no ``usage``) are counted and summarised in the point's
  ``error``; the point never raises. After ``max_consecutive_failures`` failures
  in a row without a success the point stops early (a dead server should not
  cost the whole budget).
* **Server metrics**: the Prometheus ``/metrics`` page is scraped before, during
  (every ``metrics_period_s``) and after the point and turned into ``fw_``
  columns (gauges: ``_mean``/``_max``; counters: ``_per_s`` rate over the point;
  histograms: ``_mean`` of the observations made during the point). A server
  without ``/metrics`` gets no ``fw_`` metric columns and a note in :meth:`HttpBackend.describe`.
* **Telemetry**: :class:`~perfmodel.sweep.telemetry.TelemetrySampler` runs during
  the measured window (GPU via NVML where the server's GPUs are local, else host
  CPU/memory); the client's own CPU time per request is
  ``hw_client_cpu_ms_per_req`` (CPU time of the client's event-loop thread).

A point whose ``batch_size`` is the concurrency has ``load_kind="concurrency"``.
The point's ``timeout_s`` is the budget of the whole point (warm-up included):
requests still in flight when it runs out count as timeouts.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import random
import re
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import httpx
import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as _PydanticValidationError

from ..errors import PerfmodelError, Problem, ValidationError
from .backend import Backend, PointResult, SweepPoint
from .plan import DEFAULT_LENGTH_CONTROL, LENGTH_CONTROLS, SERVER_TYPES  # re-exported (see below)
from .telemetry import TelemetrySampler

__all__ = [
    "HTTP_SOURCE_FORMAT",
    "SERVER_TYPES",
    "LENGTH_CONTROLS",
    "ENDPOINTS",
    "DEFAULT_LENGTH_CONTROL",
    "HttpBackendError",
    "HttpSettings",
    "HttpBackend",
    "RequestRecord",
    "parse_metrics",
    "metrics_columns",
    "summarise_failures",
]

log = logging.getLogger(__name__)

HTTP_SOURCE_FORMAT = "perfmodel-http"
"""``source_format`` of every row this backend produces."""

# SERVER_TYPES, LENGTH_CONTROLS and DEFAULT_LENGTH_CONTROL are defined with the plan (its server_type
# option), so the app's sweep form lists them without importing httpx; this module re-exports them.

ENDPOINTS: Mapping[str, str] = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}
"""``endpoint`` setting -> path."""

_FRAMEWORK = {"vllm": "vllm", "sglang": "sglang", "llama.cpp": "llama.cpp", "transformers": "transformers",
              "tgi": "tgi", "trtllm": "tensorrt-llm", "generic": "unknown"}

# Common English words: nearly every tokenizer has most of them as single tokens,
# and a word never merges with its neighbours (pre-tokenisation splits on spaces).
_WORDS = (
    "the of and to in is that for it as was with be by on not he this are or his from at which but have an "
    "they you were her she there one all we their has been would more if no when will so can its who said "
    "may into some them time only than other new these two could like then first over also after did made "
    "many most people way years work any through well where much should where long great state because"
).split()
# Single-character fillers that top a prompt up to the exact count (tried in order).
_FILLERS = ("a", "x", "1", "I", "s", "e", "o", ".")
_MAX_PROBES = 24

_SANITIZE = re.compile(r"[^a-z0-9]+")
# Prometheus families that describe the process, not the inference engine.
_SKIP_METRIC_PREFIXES = ("process_", "python_", "go_", "http_", "promhttp_")
_MAX_METRIC_COLUMNS = 300


class HttpBackendError(PerfmodelError):
    """The server is unreachable, misconfigured, or cannot serve the requested prompt lengths."""


class HttpSettings(BaseModel):
    """Settings of :class:`HttpBackend` (validated; a misspelt option is an error)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    target: str = Field(pattern=r"^https?://\S+$", description="base URL, e.g. http://127.0.0.1:8000")
    model: str | None = Field(None, description="served model name sent in requests (default: first of /v1/models)")
    model_label: str | None = Field(None, description="`model` column of the rows (default: the served name)")
    hardware: str = Field("unknown", description="`hardware` column of the rows")
    device_count: int = Field(1, ge=1, le=65_536, description="accelerators behind the server")
    framework: str | None = Field(None, description="`framework` column (default: from server_type)")
    framework_version: str | None = Field(None, description="`framework_version` column")
    server_type: Literal["vllm", "sglang", "llama.cpp", "transformers", "tgi", "trtllm", "generic"] = Field(
        "generic", description="server kind: chooses the default length control")
    length_control: Literal["ignore_eos", "min_tokens", "generation_config", "none"] | None = Field(
        None, description="how the output length is forced (default: per server_type)")
    endpoint: Literal["completions", "chat"] = Field("completions", description="OpenAI route used")
    api_key: str | None = Field(None, description="sent as a Bearer token when set")
    extra_body: dict[str, Any] = Field(default_factory=dict, description="merged into every request body")
    metrics_path: str | None = Field("/metrics", description="Prometheus page (None: do not scrape)")
    metrics_period_s: float = Field(0.5, gt=0, le=3600, description="seconds between /metrics scrapes")
    telemetry: bool = Field(True, description="sample GPU/host telemetry during each point")
    telemetry_period_s: float = Field(0.05, ge=0.001, le=60, description="telemetry sampling period")
    max_consecutive_failures: int | None = Field(
        None, ge=1, description="stop a point after this many failures in a row (default: max(4, concurrency))")
    connect_timeout_s: float = Field(10.0, gt=0, le=3600, description="TCP connect timeout per request")
    check_timeout_s: float = Field(30.0, gt=0, le=3600, description="timeout of check() and calibration probes")
    seed: int = Field(0, ge=0, description="seed of the per-request prompt shuffles")


@dataclass
class RequestRecord:
    """What one request measured (seconds from ``perf_counter``).

    Attributes
    ----------
    ok
        True when the stream completed with ``usage``.
    reason
        Failure category (``"http 500"``, ``"timeout"``, ``"dropped connection"``,
        ``"malformed stream"``, ...), ``""`` when ok.
    detail
        The failure's first words (status body, exception text).
    start_s, end_s
        Send and completion times.
    ttft_s
        First text chunk, relative to ``start_s`` (NaN if none came).
    chunk_times_s
        Arrival times of text chunks, relative to ``start_s``.
    prompt_tokens, completion_tokens
        From ``usage`` (-1 when absent).
    server_timings
        The server's own per-request timings where it sends them (llama.cpp's
        ``timings``: ``prompt_ms``, ``predicted_per_token_ms``, ...).
    """

    ok: bool = False
    reason: str = ""
    detail: str = ""
    start_s: float = math.nan
    end_s: float = math.nan
    ttft_s: float = math.nan
    chunk_times_s: list[float] = field(default_factory=list)
    prompt_tokens: int = -1
    completion_tokens: int = -1
    server_timings: dict[str, float] = field(default_factory=dict)

    @property
    def e2e_s(self) -> float:
        """End-to-end latency."""
        return self.end_s - self.start_s


class _StreamError(Exception):
    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


@dataclass
class _Prompt:
    """A calibrated prompt: ``words`` give exactly ``tokens`` prompt tokens on this server."""

    words: list[str]
    tokens: int

    def render(self, rng: random.Random | None) -> str:
        if rng is None or len(self.words) < 3:
            return " ".join(self.words)
        rest = self.words[1:]
        rng.shuffle(rest)
        return " ".join([self.words[0], *rest])


# ---------------------------------------------------------------------- metrics
def _sanitize(name: str) -> str:
    return _SANITIZE.sub("_", name.lower()).strip("_")


def parse_metrics(text: str) -> dict[str, tuple[str, float]]:
    """Parse a Prometheus text page into ``{metric: (kind, value)}`` summed over label sets.

    Parameters
    ----------
    text
        The body of ``/metrics``.

    Returns
    -------
    dict
        ``kind`` is ``"gauge"``, ``"counter"``, ``"hist_sum"`` or ``"hist_count"``
        (histograms and summaries give a ``<name>`` sum and count pair). Gauges
        that are ratios (``perc``, ``ratio``, ``usage``, ``util`` in the name) are
        averaged over label sets, others summed. Process/runtime families
        (``process_``, ``python_``, ...) and ``_info``/``_created`` samples are left out.

    Raises
    ------
    ValueError
        When the page is not in the Prometheus text format.
    """
    from prometheus_client.parser import text_string_to_metric_families

    values: dict[str, list[float]] = {}
    kinds: dict[str, str] = {}

    def put(name: str, kind: str, v: float) -> None:
        if not math.isfinite(v):
            return
        key = f"{kind}:{name}" if kind.startswith("hist") else name
        kinds.setdefault(key, kind)
        values.setdefault(key, []).append(float(v))

    for fam in text_string_to_metric_families(text):
        if fam.name.startswith(_SKIP_METRIC_PREFIXES) or fam.name.endswith("_info") or fam.type == "info":
            continue
        for s in fam.samples:
            name = s.name
            if name.endswith("_created") or name.startswith(_SKIP_METRIC_PREFIXES):
                continue
            if fam.type in ("histogram", "summary", "gaugehistogram"):
                if name.endswith("_sum"):
                    put(name[:-4], "hist_sum", s.value)
                elif name.endswith("_count"):
                    put(name[:-6], "hist_count", s.value)
            elif fam.type == "counter" or (fam.type in ("unknown", "untyped") and name.endswith("_total")):
                put(name[:-6] if name.endswith("_total") else name, "counter", s.value)
            elif fam.type in ("gauge", "unknown", "untyped", "stateset"):
                put(name, "gauge", s.value)
    out: dict[str, tuple[str, float]] = {}
    for name, vs in values.items():
        kind = kinds[name]
        ratio = kind == "gauge" and any(w in name for w in ("perc", "ratio", "usage", "util"))
        out[name] = (kind, sum(vs) / len(vs) if ratio else sum(vs))
    return out


def metrics_columns(before: Mapping[str, tuple[str, float]], after: Mapping[str, tuple[str, float]],
                    samples: Sequence[Mapping[str, tuple[str, float]]], duration_s: float) -> dict[str, float]:
    """Turn scraped ``/metrics`` snapshots of one point into ``fw_`` columns.

    Parameters
    ----------
    before, after
        :func:`parse_metrics` of the pages scraped just before the first and
        just after the last measured request.
    samples
        The pages scraped while the measured requests ran, ``before`` and ``after`` left out: an idle page
        pulls a gauge's mean and max toward its idle value, and a point whose in-window scrapes all failed
        would report the idle value (0 requests running) as if measured. With none, no gauge column.
    duration_s
        The measured window, seconds.

    Returns
    -------
    dict of str to float
        ``fw_<gauge>_mean`` and ``fw_<gauge>_max`` over the samples,
        ``fw_<counter>_per_s`` (increase over the window / duration; a counter
        that went backwards, i.e. a server restart, is left out) and
        ``fw_<histogram>_mean`` (mean of the observations made in the window).
        Names are lower-case with every run of other characters turned into ``_``.
    """
    cols: dict[str, float] = {}
    gauges: dict[str, list[float]] = {}
    for page in samples:
        for key, (kind, v) in page.items():
            if kind == "gauge":
                gauges.setdefault(key, []).append(v)
    for key, vs in gauges.items():
        stem = "fw_" + _sanitize(key)
        cols[f"{stem}_mean"] = float(np.mean(vs))
        cols[f"{stem}_max"] = float(np.max(vs))
    if duration_s > 0:
        for key, (kind, v1) in after.items():
            if kind != "counter" or key not in before:
                continue
            delta = v1 - before[key][1]
            if delta >= 0:
                cols[f"fw_{_sanitize(key)}_per_s"] = delta / duration_s
    for key, (kind, s1) in after.items():
        if kind != "hist_sum":
            continue
        name = key[len("hist_sum:"):]
        ck = f"hist_count:{name}"
        if key in before and ck in before and ck in after:
            dn = after[ck][1] - before[ck][1]
            ds = s1 - before[key][1]
            if dn > 0 and ds >= 0:
                cols[f"fw_{_sanitize(name)}_mean"] = ds / dn
    if len(cols) > _MAX_METRIC_COLUMNS:
        cols = dict(sorted(cols.items())[:_MAX_METRIC_COLUMNS])
    return cols


# ---------------------------------------------------------------------- failures
def summarise_failures(records: list[RequestRecord], n_total: int | None = None) -> str:
    """``"3 of 8 requests failed: timeout x2, http 500 x1 (first: http 500: ...)"``.

    Parameters
    ----------
    records
        Every request of the point (ok ones are skipped).
    n_total
        Requests planned (default: ``len(records)``).

    Returns
    -------
    str
        ``""`` when nothing failed.
    """
    failed = [r for r in records if not r.ok]
    if not failed:
        return ""
    counts = Counter(r.reason for r in failed)
    parts = ", ".join(f"{reason} x{n}" for reason, n in counts.most_common())
    first = next((r for r in failed if r.detail), failed[0])
    detail = f"{first.reason}: {first.detail}" if first.detail else first.reason
    total = len(records) if n_total is None else n_total
    return f"{len(failed)} of {total} requests failed: {parts} (first: {detail[:300]})"


def _server_timings(ok: list[RequestRecord]) -> dict[str, float]:
    """Means of the server's own per-request timings (llama.cpp), as ``fw_server_<field>_mean``."""
    fields = sorted({k for r in ok for k in r.server_timings})
    out: dict[str, float] = {}
    for k in fields:
        vals = [r.server_timings[k] for r in ok if k in r.server_timings and math.isfinite(r.server_timings[k])]
        if vals:
            out[f"fw_server_{_sanitize(k)}_mean"] = float(np.mean(vals))
    return out


def _pct(values: list[float], stem: str) -> dict[str, float]:
    arr = np.asarray([v for v in values if math.isfinite(v)], dtype=float)
    if arr.size == 0:
        return {}
    p50, p90, p99 = np.percentile(arr, [50, 90, 99])
    return {f"{stem}_s": float(arr.mean()), f"{stem}_p50_s": float(p50), f"{stem}_p90_s": float(p90),
            f"{stem}_p99_s": float(p99)}


# ---------------------------------------------------------------------- raw HTTP/1.1
class _RawHttpConnection:
    """One keep-alive HTTP/1.1 connection over asyncio streams, for the measured requests.

    Why not httpx here: on the project's 2-vCPU machine one streamed httpx request
    costs ~1.4-1.6 ms of client CPU before any parsing (its transport, anyio and
    h11 layers), against ~0.1 ms for a plain asyncio exchange; the client's own
    cost must stay far below the server's per-request time. Only what an
    OpenAI-compatible server answers is handled: ``Content-Length``,
    ``Transfer-Encoding: chunked`` or read-to-close bodies; TLS for ``https``.
    httpx still does everything else (checks, calibration, ``/metrics``).
    """

    def __init__(self, url: str, headers: Mapping[str, str], connect_timeout_s: float,
                 ssl_context: Any | None) -> None:
        u = httpx.URL(url)
        self.host = u.host
        self.port = u.port or (443 if u.scheme == "https" else 80)
        self.ssl = ssl_context if u.scheme == "https" else None
        host_header = self.host if u.port is None else f"{self.host}:{u.port}"
        self._head = "".join(f"{k}: {v}\r\n" for k, v in {
            "host": host_header, "accept": "text/event-stream", "accept-encoding": "identity",
            "connection": "keep-alive", **headers}.items())
        self.connect_timeout_s = connect_timeout_s
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def _open(self) -> None:
        async with asyncio.timeout(self.connect_timeout_s):
            self._reader, self._writer = await asyncio.open_connection(
                self.host, self.port, ssl=self.ssl, server_hostname=self.host if self.ssl else None)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None

    async def post(self, path: str, body: bytes) -> tuple[int, AsyncIterator[bytes]]:
        """Send a POST; return the status and an iterator over the (de-chunked) body.

        The body must be read to its end for the connection to be reused; on any
        error the connection is closed and the next request opens a new one.
        """
        request = (f"POST {path} HTTP/1.1\r\n{self._head}content-length: {len(body)}\r\n\r\n").encode() + body
        for attempt in (0, 1):
            reused = self._writer is not None
            if not reused:
                await self._open()
            assert self._reader is not None and self._writer is not None
            try:
                self._writer.write(request)
                head = await self._reader.readuntil(b"\r\n\r\n")
                break
            except (asyncio.IncompleteReadError, ConnectionError) as exc:
                self.close()
                # A kept-alive connection the server closed while idle fails before
                # any byte of the answer: open a fresh one once, like every client.
                if not reused or attempt or (isinstance(exc, asyncio.IncompleteReadError) and exc.partial):
                    raise
            except asyncio.LimitOverrunError:
                self.close()
                raise _StreamError("malformed response", "response headers longer than 64 KiB") from None
        lines = head.decode("latin-1").split("\r\n")
        try:
            status = int(lines[0].split(" ", 2)[1])
        except (IndexError, ValueError):
            self.close()
            raise _StreamError("malformed response", f"not an HTTP status line: {lines[0][:80]!r}") from None
        fields: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                fields[name.strip().lower()] = value.strip()
        keep = fields.get("connection", "").lower() != "close"
        if "chunked" in fields.get("transfer-encoding", "").lower():
            return status, self._chunked(keep)
        if "content-length" in fields:
            try:
                length = int(fields["content-length"])
            except ValueError:
                self.close()
                raise _StreamError("malformed response", "bad content-length") from None
            return status, self._sized(length, keep)
        return status, self._to_close()

    async def _chunked(self, keep: bool) -> AsyncIterator[bytes]:
        reader = self._reader
        assert reader is not None
        try:
            while True:
                size_line = await reader.readuntil(b"\r\n")
                try:
                    size = int(size_line.split(b";", 1)[0].strip(), 16)
                except ValueError:
                    raise _StreamError("malformed response", f"bad chunk size {size_line[:40]!r}") from None
                if size == 0:
                    while (await reader.readuntil(b"\r\n")) != b"\r\n":
                        pass  # trailers
                    break
                data = await reader.readexactly(size + 2)
                yield data[:-2]
        except BaseException:
            self.close()
            raise
        if not keep:
            self.close()

    async def _sized(self, length: int, keep: bool) -> AsyncIterator[bytes]:
        reader = self._reader
        assert reader is not None
        try:
            while length > 0:
                data = await reader.read(min(length, 65_536))
                if not data:
                    raise asyncio.IncompleteReadError(b"", length)
                length -= len(data)
                yield data
        except BaseException:
            self.close()
            raise
        if not keep:
            self.close()

    async def _to_close(self) -> AsyncIterator[bytes]:
        reader = self._reader
        assert reader is not None
        try:
            while data := await reader.read(65_536):
                yield data
        finally:
            self.close()


# ---------------------------------------------------------------------- backend
class HttpBackend(Backend):
    """Sweep backend measuring an OpenAI-compatible server (see the module docstring).

    Parameters
    ----------
    **settings
        Keyword settings of :class:`HttpSettings` (``target`` is required).

    Raises
    ------
    ValidationError
        When a setting is invalid (every problem listed, with the valid values).

    Attributes
    ----------
    settings
        The validated settings.
    served_model_
        The model name sent in requests (resolved by :meth:`check`).
    metrics_note_
        Why there are no server metrics (``""`` when ``/metrics`` is scraped).
    """

    name: ClassVar[str] = "http"

    def __init__(self, **settings: Any) -> None:
        try:
            self.settings = HttpSettings(**settings)
        except _PydanticValidationError as exc:
            raise ValidationError("the http backend settings are not valid:", [
                Problem(f"{e['msg']} (got {e.get('input')!r})", column=".".join(str(x) for x in e["loc"]))
                for e in exc.errors()]) from None
        self.served_model_: str | None = self.settings.model
        self.metrics_note_ = ""
        self._metrics_ok: bool | None = None
        self._checked = False
        self._prompts: dict[int, _Prompt] = {}
        self._telemetry_note = ""
        self._n_points = 0

    # ------------------------------------------------------------------ settings
    @property
    def base_url(self) -> str:
        """The target URL without a trailing slash (nor a trailing ``/v1``)."""
        url = self.settings.target.rstrip("/")
        return url[: -len("/v1")] if url.endswith("/v1") else url

    @property
    def length_control(self) -> str:
        """The length control in use (setting, else the server type's default)."""
        return self.settings.length_control or DEFAULT_LENGTH_CONTROL[self.settings.server_type]

    def _headers(self) -> dict[str, str]:
        h = {"content-type": "application/json"}
        if self.settings.api_key:
            h["authorization"] = f"Bearer {self.settings.api_key}"
        return h

    def _body(self, prompt: str, max_tokens: int, *, stream: bool, force: bool) -> dict[str, Any]:
        s = self.settings
        body: dict[str, Any] = {"model": self.served_model_, "max_tokens": max_tokens}
        if s.endpoint == "chat":
            body["messages"] = [{"role": "user", "content": prompt}]
        else:
            body["prompt"] = prompt
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        if force:
            control = self.length_control
            if control == "ignore_eos":
                body["ignore_eos"] = True
            elif control == "min_tokens":
                body["min_tokens"] = max_tokens
            elif control == "generation_config":
                body["generation_config"] = json.dumps({"min_new_tokens": max_tokens})
        body.update(s.extra_body)
        return body

    # ------------------------------------------------------------------ Backend API
    def describe(self) -> dict[str, Any]:
        """Provenance: target, served model, server type, length control, metrics and telemetry notes.

        Returns
        -------
        dict
        """
        s = self.settings
        return {
            "backend": self.name,
            "target": self.base_url,
            "endpoint": ENDPOINTS[s.endpoint],
            "model": self.served_model_,
            "server_type": s.server_type,
            "length_control": self.length_control,
            "metrics": "scraped" if self._metrics_ok else (self.metrics_note_ or "not checked yet"),
            "telemetry": self._telemetry_note or ("on" if s.telemetry else "off"),
            "httpx_version": httpx.__version__,
        }

    def check(self) -> None:
        """Reach the server, resolve the model from ``/v1/models`` and probe ``/metrics``.

        Raises
        ------
        HttpBackendError
            When the server does not answer, lists no model, or does not serve
            the configured one (the message lists those it serves).
        """
        asyncio.run(self._check_async())

    async def _check_async(self) -> None:
        timeout = httpx.Timeout(self.settings.check_timeout_s, connect=self.settings.connect_timeout_s)
        async with httpx.AsyncClient(timeout=timeout, headers=self._headers()) as client:
            await self._ensure_checked(client)

    async def _ensure_checked(self, client: httpx.AsyncClient) -> None:
        if self._checked:
            return
        url = f"{self.base_url}/v1/models"
        try:
            resp = await client.get(url)
        except httpx.HTTPError as exc:
            raise HttpBackendError(
                f"cannot reach the server at {self.base_url} ({type(exc).__name__}: {exc}); "
                "check the target URL and that the server is running") from None
        served: list[str] = []
        if resp.status_code == 200:
            try:
                served = [str(m["id"]) for m in resp.json().get("data", [])]
            except (ValueError, KeyError, TypeError, AttributeError):
                served = []
        if self.served_model_ is None:
            if not served:
                raise HttpBackendError(
                    f"{url} answered HTTP {resp.status_code} without a model list; set the model option "
                    "to the served model name")
            self.served_model_ = served[0]
        elif served and self.served_model_ not in served:
            raise HttpBackendError(
                f"the server at {self.base_url} does not serve model {self.served_model_!r}; "
                f"it serves: {', '.join(served)}")
        await self._probe_metrics(client)
        self._checked = True

    async def _probe_metrics(self, client: httpx.AsyncClient) -> None:
        path = self.settings.metrics_path
        if not path:
            self._metrics_ok, self.metrics_note_ = False, "metrics scraping disabled"
            return
        url = self.base_url + path
        try:
            resp = await client.get(url)
        except httpx.HTTPError as exc:
            self._metrics_ok, self.metrics_note_ = False, f"no server metrics: {url} failed ({type(exc).__name__})"
            return
        if resp.status_code != 200:
            self._metrics_ok = False
            self.metrics_note_ = f"no server metrics: {url} answered HTTP {resp.status_code}"
            return
        try:
            parsed = parse_metrics(resp.text)
        except ValueError as exc:
            self._metrics_ok, self.metrics_note_ = False, f"no server metrics: {url} is not Prometheus text ({exc})"
            return
        if not parsed:
            self._metrics_ok, self.metrics_note_ = False, f"no server metrics: {url} has no engine metrics"
            return
        self._metrics_ok, self.metrics_note_ = True, ""

    def run_point(self, point: SweepPoint, *, cancel: threading.Event) -> PointResult:
        """Measure one closed-loop concurrency point (never raises for a failed measurement).

        Parameters
        ----------
        point
            ``batch_size`` is the concurrency; ``n_requests`` (default
            ``max(4 * concurrency, 8)``) are measured after ``warmup`` requests;
            ``timeout_s`` bounds the whole point.
        cancel
            Set to stop: the point returns ``error="cancelled"`` within ~50 ms.

        Returns
        -------
        PointResult
            ``row`` when at least one request succeeded; ``error`` summarises
            failed requests (``None`` when all succeeded) or says why the point
            could not run at all.
        """
        try:
            return asyncio.run(self._run_point_async(point, cancel))
        except PerfmodelError as exc:
            return PointResult(point=point, row=None, error=str(exc))

    def close(self) -> None:
        """Nothing is held between points (each point opens its own connection pool)."""
        return None

    # ------------------------------------------------------------------ calibration
    async def _probe_tokens(self, client: httpx.AsyncClient, words: list[str]) -> int:
        body = self._body(" ".join(words), 1, stream=False, force=False)
        url = self.base_url + ENDPOINTS[self.settings.endpoint]
        try:
            resp = await client.post(url, json=body, timeout=self.settings.check_timeout_s)
        except httpx.HTTPError as exc:
            raise HttpBackendError(f"calibrating the prompt length: {url} failed "
                                   f"({type(exc).__name__}: {exc})") from None
        if resp.status_code != 200:
            raise HttpBackendError(f"calibrating the prompt length: {url} answered HTTP {resp.status_code}: "
                                   f"{resp.text[:300]}")
        try:
            return int(resp.json()["usage"]["prompt_tokens"])
        except (ValueError, KeyError, TypeError):
            raise HttpBackendError(f"calibrating the prompt length: {url} returned no usage.prompt_tokens "
                                   f"(got {resp.text[:200]!r}); exact prompt lengths need a server that "
                                   "reports usage") from None

    async def _calibrate(self, client: httpx.AsyncClient, target_tok: int) -> _Prompt:
        """Find words whose prompt is exactly ``target_tok`` tokens on this server (cached)."""
        if target_tok in self._prompts:
            return self._prompts[target_tok]
        cache: dict[int, int] = {}
        probes = 0

        def words_for(n: int) -> list[str]:
            return [_WORDS[i % len(_WORDS)] for i in range(n)]

        async def f(n: int) -> int:
            nonlocal probes
            if n not in cache:
                probes += 1
                cache[n] = await self._probe_tokens(client, words_for(n))
            return cache[n]

        lo, c_lo = 1, await f(1)
        if c_lo > target_tok:
            raise HttpBackendError(
                f"cannot build a prompt of {target_tok} tokens on this server: one word already gives "
                f"{c_lo} prompt tokens (template and special tokens); use input lengths >= {c_lo}")
        # Largest n with f(n) <= target: f grows by >= 1 per word, so the secant
        # estimate from the last bracket converges in a few probes.
        hi: int | None = None
        n = max(2, target_tok - c_lo + 1)
        while probes < _MAX_PROBES:
            c = await f(n)
            if c <= target_tok:
                lo, c_lo = n, c
                if c == target_tok:
                    break
            else:
                hi = n
            if hi is not None and hi - lo <= 1:
                break
            rate = (c - (await f(1))) / max(n - 1, 1) if n > 1 else 1.0
            # every word is at least one token: never more words than tokens still missing
            step = min(max(1, int((target_tok - c_lo) / max(rate, 1e-9))), max(1, target_tok - c_lo))
            n = lo + step if hi is None else min(max(lo + 1, lo + step), hi - 1)
        best = _Prompt(words_for(lo), c_lo)
        remainder = target_tok - c_lo
        if remainder > 0:
            for filler in _FILLERS:
                if probes >= _MAX_PROBES:
                    break
                words = words_for(lo) + [filler] * remainder
                probes += 1
                c = await self._probe_tokens(client, words)
                if c == target_tok:
                    best = _Prompt(words, c)
                    break
        if best.tokens != target_tok:
            log.warning("prompt of %d tokens not reachable exactly on %s; using %d tokens",
                        target_tok, self.base_url, best.tokens)
        self._prompts[target_tok] = best
        return best

    # ------------------------------------------------------------------ one request
    async def _one_request(self, conn: _RawHttpConnection, prompt: str, max_tokens: int,
                           deadline_s: float) -> RequestRecord:
        rec = RequestRecord()
        path = httpx.URL(self.base_url).raw_path.decode().rstrip("/") + ENDPOINTS[self.settings.endpoint]
        body = json.dumps(self._body(prompt, max_tokens, stream=True, force=True)).encode()
        rec.start_s = time.perf_counter()
        budget_s = deadline_s - rec.start_s
        if budget_s <= 0:
            rec.end_s, rec.reason, rec.detail = rec.start_s, "timeout", "the point's budget ran out"
            return rec
        try:
            async with asyncio.timeout(budget_s):
                await self._stream(conn, path, body, rec)
            rec.ok = True
        except TimeoutError:
            conn.close()
            rec.reason, rec.detail = "timeout", f"no complete answer within the point's budget ({budget_s:.1f} s left)"
        except ConnectionRefusedError as exc:
            rec.reason, rec.detail = "connection refused", str(exc)[:200]
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            conn.close()
            rec.reason, rec.detail = "dropped connection", f"{type(exc).__name__}: {exc}"[:200]
        except OSError as exc:  # unreachable host, name not resolved, TLS failure
            conn.close()
            rec.reason, rec.detail = "connection error", f"{type(exc).__name__}: {exc}"[:200]
        except _StreamError as exc:
            conn.close()
            rec.reason, rec.detail = exc.reason, exc.detail
        except asyncio.LimitOverrunError:
            conn.close()
            rec.reason, rec.detail = "malformed response", "a line of the response is longer than 64 KiB"
        rec.end_s = time.perf_counter()
        return rec

    async def _stream(self, conn: _RawHttpConnection, path: str, body: bytes, rec: RequestRecord) -> None:
        chat = self.settings.endpoint == "chat"
        t0 = rec.start_s
        first_event_s = math.nan
        usage: dict[str, Any] | None = None
        status, chunks = await conn.post(path, body)
        if status != 200:
            text = b"".join([c async for c in chunks]).decode("utf-8", "replace")
            raise _StreamError(f"http {status}", text.strip()[:200])
        done = False
        pending = b""
        # One clock reading per network read: events that arrived together get the
        # same stamp (they were not separately observable).
        async for data in chunks:
            if done:
                continue  # read the rest so the connection can be reused
            now = time.perf_counter() - t0
            lines = (pending + data).split(b"\n")
            pending = lines.pop()
            for raw in lines:
                line = raw.strip()
                if not line or line.startswith(b":"):
                    continue
                if not line.startswith(b"data:"):
                    if line.startswith((b"event:", b"id:", b"retry:")):
                        continue
                    raise _StreamError("malformed stream",
                                       f"expected server-sent 'data:' lines, got {line[:80]!r}")
                payload = line[5:].strip()
                if payload == b"[DONE]":  # optional: a stream may also just end
                    done = True
                    break
                if math.isnan(first_event_s):
                    first_event_s = now
                u = self._event(payload, chat, now, rec)
                if u is not None:
                    usage = u
        if pending.strip() and not done:
            raise _StreamError("malformed stream", f"the stream ended mid-line: {pending[:80]!r}")
        if usage is None:
            raise _StreamError("no usage in stream", "the stream ended without a usage object "
                                                     "(stream_options.include_usage unsupported?)")
        try:
            rec.prompt_tokens = int(usage["prompt_tokens"])
            rec.completion_tokens = int(usage["completion_tokens"])
        except (KeyError, TypeError, ValueError):
            raise _StreamError("malformed stream", f"usage without token counts: {usage!r}"[:200]) from None
        # TTFT is the first chunk carrying text; a stream that carried none (all
        # tokens decoded to empty strings) falls back to its first event.
        rec.ttft_s = rec.chunk_times_s[0] if rec.chunk_times_s else first_event_s

    @staticmethod
    def _event(payload: bytes, chat: bool, now_s: float, rec: RequestRecord) -> dict[str, Any] | None:
        """Parse one SSE ``data:`` payload; record a text chunk; return its ``usage`` if any."""
        try:
            event = json.loads(payload)
        except ValueError:
            text = payload.decode("utf-8", "replace")
            if '"error"' in text[:20]:
                # transformers serve sends decode errors as invalid JSON ({"error": "...\'..."})
                raise _StreamError("error in stream", text[:200]) from None
            raise _StreamError("malformed stream", f"not JSON: {text[:80]!r}") from None
        if not isinstance(event, dict):
            raise _StreamError("malformed stream", f"not a JSON object: {payload[:80]!r}")
        if event.get("error") is not None:
            err = event["error"]
            msg = err.get("message", err) if isinstance(err, dict) else err
            raise _StreamError("error in stream", str(msg)[:200])
        for choice in event.get("choices") or ():
            if not isinstance(choice, dict):
                continue
            if chat:
                delta = choice.get("delta") or {}
                text = delta.get("content") or delta.get("reasoning_content") or ""
            else:
                text = choice.get("text") or ""
            if text:
                rec.chunk_times_s.append(now_s)
                break
        timings = event.get("timings")
        if isinstance(timings, dict):
            rec.server_timings = {k: float(v) for k, v in timings.items()
                                  if isinstance(v, int | float) and not isinstance(v, bool)}
        usage = event.get("usage")
        return usage if usage else None

    # ------------------------------------------------------------------ the point
    async def _run_point_async(self, point: SweepPoint, cancel: threading.Event) -> PointResult:
        if point.load_kind != "concurrency":
            return PointResult(point=point, row=None, error=(
                f"the http backend measures load_kind 'concurrency' (closed loop), not {point.load_kind!r}"))
        concurrency = int(point.batch_size)
        n_requests = point.n_requests if point.n_requests is not None else max(4 * concurrency, 8)
        t_begin = time.perf_counter()
        deadline_s = t_begin + float(point.timeout_s)
        s = self.settings
        timeout = httpx.Timeout(s.check_timeout_s, connect=s.connect_timeout_s)
        # Loading the CA bundle costs ~0.1 s: one SSL context for every connection of the point.
        ssl_context = httpx.create_ssl_context() if self.base_url.startswith("https") else None
        async with httpx.AsyncClient(timeout=timeout, headers=self._headers(),
                                     verify=ssl_context or True) as client:
            workers = [_RawHttpConnection(self.base_url, self._headers(), s.connect_timeout_s, ssl_context)
                       for _ in range(concurrency)]
            await self._ensure_checked(client)
            prompt = await self._calibrate(client, point.input_len_tok)
            # A different shuffle per point and request, reproducible from the seed.
            rng = random.Random(f"{s.seed}:{point.key}")
            self._n_points += 1

            main = asyncio.current_task()
            assert main is not None

            async def watch_cancel() -> None:
                while not cancel.is_set():
                    await asyncio.sleep(0.05)
                main.cancel()

            watcher = asyncio.create_task(watch_cancel())
            try:
                if point.warmup > 0:
                    await self._closed_loop(workers[:point.warmup], prompt, rng, point, point.warmup,
                                            deadline_s, measure=False)
                return await self._measure(client, workers, prompt, rng, point, n_requests, deadline_s)
            except asyncio.CancelledError:
                if cancel.is_set():
                    return PointResult(point=point, row=None, error="cancelled")
                raise
            finally:
                watcher.cancel()
                for w in workers:
                    w.close()

    async def _closed_loop(self, clients: list[_RawHttpConnection], prompt: _Prompt, rng: random.Random,
                           point: SweepPoint, n_requests: int, deadline_s: float,
                           *, measure: bool) -> tuple[list[RequestRecord], bool]:
        """Keep one request in flight per client until ``n_requests`` are done; returns (records, aborted)."""
        records: list[RequestRecord] = []
        issued = 0
        streak = 0
        limit = self.settings.max_consecutive_failures or max(4, len(clients))
        aborted = False

        async def worker(client: _RawHttpConnection) -> None:
            nonlocal issued, streak, aborted
            while issued < n_requests and not aborted:
                issued += 1
                rec = await self._one_request(client, prompt.render(rng), point.output_len_tok, deadline_s)
                records.append(rec)
                if rec.ok:
                    streak = 0
                else:
                    streak += 1
                    if measure and streak >= limit:
                        aborted = True
                if time.perf_counter() >= deadline_s:
                    break

        await asyncio.gather(*(worker(c) for c in clients))
        return records, aborted

    async def _measure(self, client: httpx.AsyncClient, workers: list[_RawHttpConnection], prompt: _Prompt,
                       rng: random.Random, point: SweepPoint, n_requests: int, deadline_s: float) -> PointResult:
        s = self.settings
        scrape = bool(self._metrics_ok) and bool(s.metrics_path)
        pages: list[dict[str, tuple[str, float]]] = []  # scraped while the load ran (the gauges' samples)
        metrics_url = self.base_url + (s.metrics_path or "")

        async def scrape_once(in_window: bool = False) -> dict[str, tuple[str, float]] | None:
            try:
                resp = await client.get(metrics_url, timeout=max(1.0, s.metrics_period_s * 4))
                if resp.status_code == 200:
                    page = parse_metrics(resp.text)
                    if in_window:
                        pages.append(page)
                    return page
            except (httpx.HTTPError, ValueError) as exc:
                log.debug("scraping %s failed: %s", metrics_url, exc)
            return None

        async def scrape_loop() -> None:
            while True:
                await asyncio.sleep(s.metrics_period_s)
                await scrape_once(in_window=True)

        before = await scrape_once() if scrape else None
        sampler = TelemetrySampler(s.telemetry_period_s) if s.telemetry else None
        if sampler is not None:
            sampler.start()
        scraper = asyncio.create_task(scrape_loop()) if scrape else None
        cpu0 = time.thread_time()
        t0 = time.perf_counter()
        started = pd.Timestamp.now(tz="UTC")
        try:
            records, aborted = await self._closed_loop(workers, prompt, rng, point, n_requests, deadline_s,
                                                       measure=True)
        finally:
            cpu_s = time.thread_time() - cpu0
            if scraper is not None:
                scraper.cancel()
            if sampler is not None:
                sampler.stop()
                self._telemetry_note = sampler.note
        after = await scrape_once() if scrape else None
        ok = [r for r in records if r.ok]
        error = summarise_failures(records, n_total=max(n_requests, len(records))) or None
        if aborted and error:
            limit = s.max_consecutive_failures or max(4, len(workers))
            error = f"stopped after {len(records)} of {n_requests} requests ({limit} failures in a row); {error}"
        elif len(records) < n_requests and not aborted:
            missing = n_requests - len(records)
            note = f"{missing} of {n_requests} requests not sent: the point's {point.timeout_s:g} s budget ran out"
            error = f"{note}; {error}" if error else note
        if not ok:
            return PointResult(point=point, row=None, error=error or "no request completed",
                               n_ok=0, n_failed=len(records))
        window_end = max(r.end_s for r in records)
        duration_s = window_end - min(r.start_s for r in records)
        row = self._row(point, ok, records, duration_s, started, cpu_s)
        if before is not None and after is not None:
            row.update(metrics_columns(before, after, pages, max(window_end - t0, 1e-9)))
        if sampler is not None:
            tele = sampler.summary()
            row.update(tele)
            if sampler.gpu_available:
                row["power_w"] = tele.get("hw_gpu_power_w_mean", math.nan)
                row["energy_j"] = tele.get("hw_gpu_energy_j", math.nan)
        return PointResult(point=point, row=row, error=error, n_ok=len(ok), n_failed=len(records) - len(ok))

    def _row(self, point: SweepPoint, ok: list[RequestRecord], records: list[RequestRecord], duration_s: float,
             started: pd.Timestamp, cpu_s: float) -> dict[str, Any]:
        s = self.settings
        prompt_tok = np.array([r.prompt_tokens for r in ok], dtype=float)
        out_tok = np.array([r.completion_tokens for r in ok], dtype=float)
        e2e = [r.e2e_s for r in ok]
        ttft = [r.ttft_s for r in ok]
        tpot = [(r.e2e_s - r.ttft_s) / (r.completion_tokens - 1) for r in ok
                if r.completion_tokens > 1 and math.isfinite(r.ttft_s)]
        itl: list[float] = []
        for r in ok:
            itl += np.diff(r.chunk_times_s).tolist() if len(r.chunk_times_s) > 1 else []
        short = int(np.sum(out_tok < point.output_len_tok))
        if short:
            log.warning("%s: %d of %d requests returned fewer than %d tokens (length control %r)",
                        point.key, short, len(ok), point.output_len_tok, self.length_control)
        model_raw = self.served_model_ or "unknown"
        return {
            "hardware": s.hardware,
            "hardware_raw": s.hardware,
            "device_count": s.device_count,
            "framework": s.framework or _FRAMEWORK[s.server_type],
            "framework_version": s.framework_version,
            "model": s.model_label or model_raw,
            "model_raw": model_raw,
            # What the server really processed, from usage (the requested lengths are in fw_requested_*).
            "input_len_tok": float(prompt_tok.mean()),
            "output_len_tok": float(out_tok.mean()),
            "load_kind": "concurrency",
            "batch_size": float(point.batch_size),
            # Little's law over the window: time spent in requests / window length.
            "measured_concurrency": float(sum(r.e2e_s for r in records) / duration_s) if duration_s > 0 else math.nan,
            "n_requests": len(ok),
            "n_failed": len(records) - len(ok),
            "output_throughput_tok_s": float(out_tok.sum() / duration_s),
            "total_throughput_tok_s": float((out_tok.sum() + prompt_tok.sum()) / duration_s),
            "request_throughput_rps": len(ok) / duration_s,
            "throughput_basis": "output+total",
            **_pct(e2e, "e2e_latency"),
            **_pct(ttft, "ttft"),
            **_pct(tpot, "tpot"),
            **_pct(itl, "itl"),
            "repeat_idx": point.repeat_idx,
            "timestamp": started,
            "source_format": HTTP_SOURCE_FORMAT,
            "fw_requested_input_len_tok": float(point.input_len_tok),
            "fw_requested_output_len_tok": float(point.output_len_tok),
            "fw_output_short_frac": short / len(ok),
            "fw_prompt_len_off_frac": float(np.mean(prompt_tok != point.input_len_tok)),
            "fw_duration_s": duration_s,
            "hw_client_cpu_ms_per_req": 1000.0 * cpu_s / max(len(records), 1),
            **_server_timings(ok),
        }
