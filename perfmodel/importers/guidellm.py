"""GuideLLM benchmark reports (``guidellm benchmark`` / ``guidellm run`` output).

Two report schemas are read, from JSON or the identical-content YAML:

* **"args" schema (guidellm 0.3.x)**: ``benchmarks[]`` with ``args.strategy``,
  ``worker.backend_model``/``backend_target``, ``request_totals`` and
  ``metrics`` (each metric split by status ``successful``/``errored``/
  ``incomplete``/``total``, each a distribution with ``mean``, ``median`` and
  ``percentiles{p90, p99, ...}``).
* **"config" schema (guidellm 0.4.0 on; "version 2" with ``metadata{version: 2,
  guidellm_version}`` in 0.8)**: ``benchmarks[]`` with ``config{strategy,
  backend{kind, target, model}, ...}``, ``metrics{request_totals, ...}`` and
  percentiles that include ``p50``; top-level ``args`` (0.4) or ``config`` (0.8)
  hold the run's arguments (their ``model`` is used when a benchmark's backend
  does not name one).

One row per benchmark (``source_row`` = 1-based position in ``benchmarks``).
Statistics are those of the *successful* requests; ``n_failed`` is the errored
count (incomplete requests are cancelled at the end of a benchmark, not failures,
and are recorded in provenance). ``request_latency`` is in seconds, the ``*_ms``
metrics in milliseconds. Strategy to load: synchronous -> concurrency 1,
concurrent -> concurrency ``streams``, throughput -> offline, constant/poisson ->
request_rate at ``rate``, trace -> request_rate without one; members of a sweep are read as
they are. The strategy of a request-rate benchmark is its ``arrival`` (constant, poisson
with ``burstiness`` 1, or trace).
GuideLLM reports both output and total tokens per second, so
``throughput_basis`` is ``output+total``. Its total figure is the mean of a
per-interval rate series in which prompt tokens arrive in bursts, so it can be
well above ``output × (input + output) / output``; a warning says so when the
gap exceeds 25 %.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import yaml

from ..errors import ImportFormatError
from .base import Importer, ImportMeta, Issue, Parsed, Sample, dig, loads_lenient, records_frame, register
from .lengths import MEAN_LENGTHS

__all__ = ["GuideLLMImporter", "STRATEGY_LOAD_KINDS"]

#: GuideLLM strategy ``type_`` -> canonical ``load_kind``.
STRATEGY_LOAD_KINDS = {
    "synchronous": "concurrency",
    "concurrent": "concurrency",
    "throughput": "offline",
    "constant": "request_rate",
    "poisson": "request_rate",
    "trace": "request_rate",
}

# GuideLLM's own test assets anonymise the backend as example_model/example_target.
_PLACEHOLDER_MODELS = {"", "none", "null", "model", "default"}

# Canonical latency stem -> (GuideLLM metric, divisor to seconds).
_LATENCIES = {
    "e2e_latency": ("request_latency", 1.0),
    "ttft": ("time_to_first_token_ms", 1000.0),
    "tpot": ("time_per_output_token_ms", 1000.0),
    "itl": ("inter_token_latency_ms", 1000.0),
}

_TOTAL_GAP_WARN = 0.25


def _is_report(doc: Any) -> bool:
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        return False
    first = doc["benchmarks"][0] if doc["benchmarks"] else None
    return isinstance(first, dict) and first.get("type_") == "generative_benchmark"


def _model_name(raw: Any) -> str | None:
    if not isinstance(raw, str):
        return None
    name = raw.strip()
    if name.lower() in _PLACEHOLDER_MODELS or name.lower().startswith("example"):
        return None
    return name


def _ts(unix_s: Any) -> pd.Timestamp | None:
    if isinstance(unix_s, (int, float)) and not isinstance(unix_s, bool) and math.isfinite(unix_s) \
            and unix_s > 0:
        return pd.Timestamp(unix_s, unit="s", tz="UTC")
    return None


def _stat(dist: Any, which: str) -> Any:
    """One statistic of a GuideLLM distribution (``mean``, ``p50``, ``p90``, ``p99``).

    v0.3 has no ``percentiles.p50``; its ``median`` is the same figure.
    """
    if not isinstance(dist, dict):
        return None
    if which == "mean":
        return dist.get("mean")
    pct = dist.get("percentiles")
    val = pct.get(which) if isinstance(pct, dict) else None
    if val is None and which == "p50":
        val = dist.get("median")
    return val


def _scaled(v: Any, divisor: float) -> Any:
    # Non-numbers pass through so that schema coercion names the row and column.
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return v / divisor
    return v


@register
class GuideLLMImporter(Importer):
    """GuideLLM report (0.3 ``args`` schema and 0.4+ ``config`` schema), JSON or YAML."""

    name = "guidellm"
    label = "GuideLLM report"
    description = ("guidellm benchmark report (benchmarks.json / .yaml): one row per benchmark of the "
                   "sweep; guidellm 0.3 (args) and 0.4+ (config, report version 2) schemas")
    has_hardware = False
    has_model = True

    def sniff(self, sample: Sample) -> float:
        if sample.is_binary:
            return 0.0
        if _is_report(sample.json_doc):
            return 0.95
        head = sample.text_head
        if sample.first_char not in ("{", "[") and "generative_benchmark" in head \
                and "benchmarks:" in head:
            return 0.9
        return 0.0

    def _load(self, sample: Sample) -> dict[str, Any]:
        text = sample.text
        if sample.first_char in ("{", "["):
            try:
                doc = loads_lenient(text)
            except ValueError as exc:
                raise ImportFormatError(f"{sample.name}: not a readable GuideLLM JSON report ({exc})") from None
        else:
            loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
            try:
                doc = yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
                raise ImportFormatError(
                    f"{sample.name}: not a readable GuideLLM YAML report (invalid YAML{where})") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
            raise ImportFormatError(
                f"{sample.name}: expected a GuideLLM report with a top-level 'benchmarks' list")
        return doc

    def parse(self, sample: Sample, meta: ImportMeta) -> Parsed:
        doc = self._load(sample)
        file = sample.name
        issues: list[Issue] = []
        rows: list[dict[str, Any]] = []
        backends: set[tuple[str, str, str]] = set()
        incomplete_total = 0
        run_model = dig(doc, "args", "model") or dig(doc, "config", "model")
        for i, b in enumerate(doc["benchmarks"], start=1):
            if not isinstance(b, dict):
                issues.append(Issue(file, i, None, f"benchmark {i} is a {type(b).__name__}, "
                                    "expected an object", "error"))
                continue
            row, backend, n_incomplete = self._row(b, i, file, issues, run_model)
            if row is None:
                continue
            rows.append(row)
            backends.add(backend)
            incomplete_total += n_incomplete or 0
        if not doc["benchmarks"]:
            raise ImportFormatError(f"{file}: the GuideLLM report holds no benchmarks")
        prov: dict[str, Any] = {"client": "guidellm", "n_benchmarks": len(doc["benchmarks"])}
        version = dig(doc, "metadata", "guidellm_version")
        schema_version = dig(doc, "metadata", "version")
        prov["schema"] = "config" if schema_version is not None or dig(doc["benchmarks"][0], "config") \
            else "args"
        if version is not None:
            prov["client_version"] = str(version)
        if schema_version is not None:
            prov["report_version"] = schema_version
        if backends:
            prov["backend"] = [{"type": t, "target": tg, "model": m} for t, tg, m in sorted(backends)]
        if incomplete_total:
            prov["n_incomplete"] = incomplete_total
        first = doc["benchmarks"][0] if isinstance(doc["benchmarks"][0], dict) else {}
        profile = dig(first, "args", "profile") or dig(first, "config", "profile")
        if isinstance(profile, dict):
            prov["profile"] = {k: profile.get(k) for k in ("type_", "strategy_types", "sweep_size",
                                                            "rate_type", "rate") if k in profile}
        loader = first.get("request_loader") or dig(first, "config", "requests")
        if isinstance(loader, dict) and "data" in loader:
            prov["data"] = loader.get("data")
        if rows and all(r.get("model_raw") is None for r in rows):
            # with --model given the user has done what this asks: say that it is used, not "supply the model"
            issues.append(Issue(file, None, "model_raw", "the report's backend model is missing or anonymised; "
                                + ("supply the model" if meta.model is None else "the model given (--model) is used"),
                                "info"))
        runs = records_frame(rows)
        prov[MEAN_LENGTHS] = True  # each benchmark's lengths are its requests' means
        return Parsed(runs=runs, issues=issues, provenance=prov)

    def _row(self, b: dict[str, Any], i: int, file: str, issues: list[Issue],
             run_model: Any = None) -> tuple[dict[str, Any] | None, tuple[str, str, str], int | None]:
        cfg_schema = isinstance(b.get("config"), dict)
        if cfg_schema:
            strategy = dig(b, "config", "strategy")
            backend = dig(b, "config", "backend") or {}
            b_type, b_target, b_model = backend.get("kind"), backend.get("target"), backend.get("model")
        else:
            strategy = dig(b, "args", "strategy")
            worker = b.get("worker") or {}
            b_type = worker.get("backend_type")
            b_target, b_model = worker.get("backend_target"), worker.get("backend_model")
        backend_key = (str(b_type), str(b_target), str(b_model))
        metrics = b.get("metrics")
        if not isinstance(metrics, dict):
            issues.append(Issue(file, i, "metrics", "benchmark has no 'metrics' object", "error"))
            return None, backend_key, None
        if not isinstance(strategy, dict) or not isinstance(strategy.get("type_"), str):
            where = "config.strategy.type_" if cfg_schema else "args.strategy.type_"
            issues.append(Issue(file, i, where, "missing scheduling strategy; expected one of "
                                + ", ".join(STRATEGY_LOAD_KINDS), "error"))
            return None, backend_key, None
        kind = strategy["type_"]
        if kind not in STRATEGY_LOAD_KINDS:
            issues.append(Issue(file, i, "strategy", f"unknown GuideLLM strategy {kind!r}; expected one of "
                                + ", ".join(STRATEGY_LOAD_KINDS), "error"))
            return None, backend_key, None

        def ok(name: str) -> Any:
            return dig(metrics, name, "successful")

        row: dict[str, Any] = {"source_row": i, "load_kind": STRATEGY_LOAD_KINDS[kind]}
        if kind == "synchronous":
            row["batch_size"] = 1
        elif kind == "concurrent":
            row["batch_size"] = strategy.get("streams")
        elif kind == "throughput":
            row["request_rate_rps"] = math.inf
        elif kind in ("constant", "poisson"):
            row["request_rate_rps"] = strategy.get("rate")
            row["arrival"] = kind
            if kind == "poisson":
                row["burstiness"] = 1.0
        else:  # trace replay: the rate follows the trace
            row["arrival"] = "trace"
            issues.append(Issue(file, i, "request_rate_rps", "trace replay has no single request rate; "
                                "left empty", "warning"))
        model = _model_name(b_model) or _model_name(run_model)
        if model is not None:
            row["model_raw"] = model
        if b_type in ("vllm_python", "vllm_python_async", "vllm_python_batch"):
            row["framework"] = "vllm"  # the engine ran inside GuideLLM
        totals = metrics.get("request_totals") if cfg_schema else b.get("request_totals")
        if not isinstance(totals, dict):
            totals = dig(b, "run_stats", "requests_made") or {}
        n_ok = totals.get("successful")
        if n_ok is None:
            n_ok = dig(ok("request_latency"), "count")
        row["n_requests"] = n_ok
        row["n_failed"] = totals.get("errored")
        row["measured_concurrency"] = _stat(ok("request_concurrency"), "mean")
        row["request_throughput_rps"] = _stat(ok("requests_per_second"), "mean")
        row["output_throughput_tok_s"] = _stat(ok("output_tokens_per_second"), "mean")
        row["total_throughput_tok_s"] = _stat(ok("tokens_per_second"), "mean")
        row["throughput_basis"] = "output+total"
        row["input_len_tok"] = _stat(ok("prompt_token_count"), "mean")
        row["output_len_tok"] = _stat(ok("output_token_count"), "mean")
        for stem, (metric, div) in _LATENCIES.items():
            dist = ok(metric)
            if dist is None:
                continue
            row[f"{stem}_s"] = _scaled(_stat(dist, "mean"), div)
            for p in ("p50", "p90", "p99"):
                row[f"{stem}_{p}_s"] = _scaled(_stat(dist, p), div)
        ts = _ts(b.get("start_time") if b.get("start_time") is not None else dig(b, "run_stats", "start_time"))
        if ts is not None:
            row["timestamp"] = ts
        self._check_total(row, i, file, issues)
        return row, backend_key, totals.get("incomplete")

    @staticmethod
    def _check_total(row: dict[str, Any], i: int, file: str, issues: list[Issue]) -> None:
        try:
            out, tot = float(row["output_throughput_tok_s"]), float(row["total_throughput_tok_s"])
            ii, oo = float(row["input_len_tok"]), float(row["output_len_tok"])
        except (TypeError, ValueError):
            return
        if not all(math.isfinite(x) and x > 0 for x in (out, tot, oo)) or not math.isfinite(ii):
            return
        expected = out * (ii + oo) / oo
        if abs(tot - expected) > _TOTAL_GAP_WARN * expected:
            issues.append(Issue(file, i, "total_throughput_tok_s",
                                f"GuideLLM's total tokens/s ({tot:.4g}) differs from output tokens/s × "
                                f"(input + output) / output ({expected:.4g}) by more than "
                                f"{_TOTAL_GAP_WARN:.0%}; kept as reported", "warning"))
