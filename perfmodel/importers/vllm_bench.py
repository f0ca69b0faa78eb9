"""Importers for vLLM's own benchmark clients.

Formats
-------
``vllm-bench-serve``
    The result JSON of ``vllm bench serve`` (new CLI) and of the legacy
    ``benchmarks/benchmark_serving.py``: one flat object per run, several
    objects one per line (``--append-result``), or a JSON array of run objects
    (``vllm bench sweep serve`` ``summary.json``; its ``run=N.json`` files are
    single objects with ``run_number``). Latencies are in milliseconds
    (``{mean,median,std,p99}_{ttft,tpot,itl,e2el}_ms``), except the optional
    per-request arrays ``ttfts``/``itls`` which are in **seconds**. A run at a
    finite request rate records its arrival process (:func:`arrival_of`):
    ``burstiness`` 1 (the default) is ``poisson``, another value ``gamma`` of
    that shape; a result without the key (benchmark_serving.py before it, which
    drew Poisson gaps only) is ``poisson``.
``vllm-benchmark-throughput``
    ``benchmark_throughput.py`` / ``vllm bench throughput`` JSON: offline
    throughput over a whole request list (``tokens_per_second`` = input+output).
``vllm-benchmark-latency``
    ``benchmark_latency.py`` / ``vllm bench latency`` JSON: latency of one
    whole static batch ``generate`` call.
``vllm-bench-serve-log``
    The console output of ``vllm bench serve``: the ``Serving Benchmark
    Result`` block plus the ``Namespace(...)`` argument dump (read with
    regular expressions, never evaluated; its ``burstiness`` gives the arrival).

None of these files names the GPU; the user supplies it (``--hardware``).

The module also holds small JSON helpers shared by the other JSON importers
of this family (:func:`load_json_records`, :class:`FieldReader`,
:func:`latency_values`, :func:`finish_rows`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ImportFormatError
from ..schema import empty_runs
from .base import Importer, ImportMeta, Issue, Parsed, Sample, register

__all__ = [
    "VllmBenchServe",
    "VllmBenchmarkThroughput",
    "VllmBenchmarkLatency",
    "VllmBenchServeLog",
]

# ---------------------------------------------------------------------------
# shared JSON helpers


class BadValue(Exception):
    """A field of a record has the wrong type; the record is skipped."""

    def __init__(self, field: str, value: Any, expected: str) -> None:
        self.field = field
        self.value = value
        self.expected = expected
        super().__init__(f"field {field!r}: expected {expected}, got {value!r}")


def load_json_records(sample: Sample) -> list[dict[str, Any]]:
    """The JSON objects of a file: one object, an array of objects, or objects one per line.

    Parameters
    ----------
    sample
        The file.

    Returns
    -------
    list of dict
        The records in file order (``source_row`` = position + 1).

    Raises
    ------
    ImportFormatError
        The file is not valid JSON (the message names the line and column,
        which is where a truncated file ends), or holds something other than
        objects.
    """
    recs = sample.records
    if recs is not None:
        return recs
    text = sample.text
    decoder = json.JSONDecoder()
    objs: list[Any] = []
    pos = _skip_ws(text, 0)
    while pos < len(text):
        try:
            obj, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise ImportFormatError(
                f"{sample.name}: invalid JSON at line {exc.lineno} column {exc.colno} ({exc.msg}); "
                "the file is truncated or not a JSON result file") from None
        except RecursionError:
            raise ImportFormatError(f"{sample.name}: JSON nested too deeply") from None
        objs.append(obj)
        pos = _skip_ws(text, end)
    if len(objs) == 1 and isinstance(objs[0], list):
        objs = objs[0]
    if not objs or not all(isinstance(o, dict) for o in objs):
        raise ImportFormatError(
            f"{sample.name}: expected a JSON object, an array of objects or one object per line")
    return objs


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n\ufeff":
        pos += 1
    return pos


def first_record(sample: Sample) -> dict[str, Any] | None:
    """The first JSON object of a file for sniffing, or None."""
    recs = sample.records
    if recs:
        return recs[0]
    return None


class FieldReader:
    """Typed access to one JSON record; a wrong type raises :class:`BadValue` naming the field.

    Parameters
    ----------
    rec
        The record.
    prefix
        Prepended to field names in messages (for nested objects, e.g. ``"gpu_info."``).
    """

    def __init__(self, rec: Mapping[str, Any], prefix: str = "") -> None:
        self.rec = rec
        self.prefix = prefix

    def has(self, key: str) -> bool:
        return self.rec.get(key) is not None

    def num(self, key: str, *, inf_string: bool = False) -> float | None:
        """A number (None when absent or null).

        ``inf_string`` accepts the strings ``"inf"``/``"Infinity"`` that some
        clients write for an unlimited request rate.
        """
        v = self.rec.get(key)
        if v is None:
            return None
        if isinstance(v, bool):
            raise BadValue(self.prefix + key, v, "a number")
        if isinstance(v, int | float):
            return float(v)
        if inf_string and isinstance(v, str) and v.strip().lower() in ("inf", "infinity", "+inf"):
            return math.inf
        raise BadValue(self.prefix + key, v, "a number")

    def count(self, key: str) -> int | None:
        """A non-negative whole number (None when absent or null)."""
        f = self.num(key)
        if f is None:
            return None
        if not math.isfinite(f) or f < 0 or f != round(f):
            raise BadValue(self.prefix + key, self.rec.get(key), "a whole number >= 0")
        return int(f)

    def text(self, key: str) -> str | None:
        """A string (numbers are accepted and written out; None when absent or null)."""
        v = self.rec.get(key)
        if v is None:
            return None
        if isinstance(v, str):
            return v
        if isinstance(v, int | float) and not isinstance(v, bool):
            return str(v)
        raise BadValue(self.prefix + key, v, "a string")

    def numbers(self, key: str) -> list[float] | None:
        """A list of numbers (None when absent)."""
        v = self.rec.get(key)
        if v is None:
            return None
        if not isinstance(v, list) or not all(isinstance(x, int | float) and not isinstance(x, bool)
                                              for x in v):
            raise BadValue(self.prefix + key, _short(v), "a list of numbers")
        return [float(x) for x in v]

    def obj(self, key: str) -> dict[str, Any] | None:
        v = self.rec.get(key)
        if v is None:
            return None
        if not isinstance(v, dict):
            raise BadValue(self.prefix + key, _short(v), "an object")
        return v


def _short(v: Any) -> Any:
    s = repr(v)
    return s if len(s) <= 60 else s[:57] + "..."


#: canonical stat suffix for each statistic a client writes (std/p95 have no column)
_STATS = {"mean": "", "median": "_p50", "p50": "_p50", "p90": "_p90", "p99": "_p99"}


def latency_values(r: FieldReader, stems: Mapping[str, Sequence[str]], *, unit: str = "ms",
                   pattern: str = "{stat}_{src}_{unit}",
                   stats: Mapping[str, str] = _STATS) -> dict[str, float]:
    """Latency statistics of a record in canonical seconds.

    Parameters
    ----------
    r
        The record.
    stems
        Canonical stem (``"ttft"``, ``"e2e_latency"``...) to the source's names for it.
    unit
        ``"ms"`` or ``"s"``: the unit the source writes.
    pattern
        How the source names a statistic (``{stat}``, ``{src}``, ``{unit}``).
    stats
        The source's name of each statistic (``{stat}``) to the canonical suffix
        (``""`` for the mean, ``"_p50"``...); the first one found for a column wins.

    Returns
    -------
    dict
        ``{"ttft_s": ..., "ttft_p50_s": ...}`` for the statistics present.

    Raises
    ------
    BadValue
        A statistic is present but not a number.
    """
    scale = 1e-3 if unit == "ms" else 1.0
    out: dict[str, float] = {}
    for stem, sources in stems.items():
        for stat, suffix in stats.items():
            col = f"{stem}{suffix}_s"
            if col in out:
                continue
            for src in sources:
                v = r.num(pattern.format(stat=stat, src=src, unit=unit))
                if v is not None:
                    out[col] = v * scale
                    break
    return out


def basis_of(has_output: bool, has_total: bool) -> str:
    """The ``throughput_basis`` for what a source reported."""
    if has_output and has_total:
        return "output+total"
    if has_output:
        return "output"
    if has_total:
        return "total"
    return "none"


def bad_value_issue(file: str, row: int, exc: BadValue) -> Issue:
    """The error issue for a record skipped because of a wrongly typed field."""
    return Issue(file, row, exc.field, f"expected {exc.expected}, got {exc.value!r}; record skipped",
                 "error")


def finish_rows(rows: list[dict[str, Any]], issues: list[Issue], file: str, *,
                provenance: dict[str, Any] | None = None, allow_empty: bool = False) -> Parsed:
    """Wrap parsed rows into :class:`Parsed`.

    Raises
    ------
    ImportFormatError
        No row could be built and the file is not legitimately empty (the
        message lists the first record problems).
    """
    if not rows:
        errors = [i for i in issues if i.severity == "error"]
        if errors and not allow_empty:
            detail = "; ".join(str(i) for i in errors[:3])
            raise ImportFormatError(f"{file}: no record could be read ({detail})")
        return Parsed(runs=empty_runs(), issues=issues, allow_empty=True, provenance=provenance or {})
    return Parsed(runs=pd.DataFrame.from_records(rows), issues=issues, allow_empty=allow_empty,
                  provenance=provenance or {})


def meta_length(meta: ImportMeta, name: str) -> float | None:
    """A length the user supplied, once :class:`ImportMeta` carries lengths (it does not yet)."""
    v = getattr(meta, name, None)
    return float(v) if v is not None else None


def sniff_text(sample: Sample, needles: Iterable[str]) -> bool:
    """True when every needle occurs in the head of the file (for files that do not parse)."""
    head = sample.text_head
    return all(n in head for n in needles)


# ---------------------------------------------------------------------------
# vllm bench serve / benchmark_serving.py JSON

_SERVE_LAT = {"ttft": ("ttft",), "tpot": ("tpot",), "itl": ("itl",), "e2e_latency": ("e2el", "latency")}

#: keys of the serve result that are neither swept server parameters nor provenance
_SERVE_KEYS = {
    "date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "best_of", "use_beam_search",
    "num_prompts", "request_rate", "burstiness", "max_concurrency", "duration", "completed", "failed",
    "total_input_tokens", "total_output_tokens", "request_throughput", "request_goodput", "input_throughput",
    "output_throughput", "total_token_throughput", "max_output_tokens_per_s", "max_concurrent_requests",
    "rtfx", "run_number", "input_lens", "output_lens", "ttfts", "itls", "generated_texts", "errors",
    "start_times", "tpots", "e2els",
}
_PER_REQUEST = ("input_lens", "output_lens", "ttfts", "itls", "generated_texts", "errors", "start_times",
                "tpots", "e2els")


def _date_utc(value: str | None) -> str | None:
    # vLLM writes the client's local time without a zone; it is recorded as UTC.
    if not value:
        return None
    try:
        return datetime.strptime(value, "%Y%m%d-%H%M%S").isoformat()
    except ValueError:
        return None


def serve_row(rec: Mapping[str, Any], row: int, file: str, issues: list[Issue],
              meta: ImportMeta) -> dict[str, Any] | None:
    """One canonical row from a vLLM serving-benchmark result object.

    Returns None (with a warning issue) when the run has no successful request.

    Raises
    ------
    BadValue
        A field the row needs has the wrong type.
    """
    r = FieldReader(rec)
    out: dict[str, Any] = {"source_row": row}
    model = r.text("model_id") or r.text("model")
    if model:
        out["model_raw"] = model
    backend = (r.text("backend") or "").lower()
    endpoint = (r.text("endpoint_type") or "").lower()
    sweep = r.has("run_number")
    if "vllm" in (backend, endpoint) or sweep:
        # `vllm bench sweep serve` starts the vLLM server itself; backend "vllm" is its own API.
        out["framework"] = "vllm"
    completed = r.count("completed")
    failed = r.count("failed")
    if completed == 0:
        issues.append(Issue(file, row, "completed",
                            f"no request succeeded ({failed if failed is not None else 'all'} failed): the run "
                            "holds no measurement and is not imported (it is not a zero-throughput point)",
                            "warning"))
        return None
    out["n_requests"] = completed
    out["n_failed"] = failed
    rate = r.num("request_rate", inf_string=True)
    conc = r.num("max_concurrency")
    out["request_rate_rps"] = rate
    if conc is not None:
        out["load_kind"] = "concurrency"
        out["batch_size"] = conc
    else:
        # num_prompts is a burst size, not a concurrency: batch_size stays empty.
        out["load_kind"] = "request_rate"
        if rate is None:
            out["request_rate_rps"] = math.inf
            issues.append(Issue(file, row, "request_rate", "no request rate recorded; assumed 'inf' "
                                "(all requests at once, the client's default)", "warning"))
    out.update(arrival_of(r, out.get("request_rate_rps")))
    duration = r.num("duration")
    tin, tout = r.num("total_input_tokens"), r.num("total_output_tokens")
    if completed:
        if tin is not None:
            out["input_len_tok"] = tin / completed
        if tout is not None:
            out["output_len_tok"] = tout / completed
    for name in ("input_len_tok", "output_len_tok"):
        if name not in out and (v := meta_length(meta, name)) is not None:
            out[name] = v
    if "input_len_tok" not in out or "output_len_tok" not in out:
        issues.append(Issue(file, row, "total_input_tokens",
                            "the file records no token totals (total_input_tokens/total_output_tokens/completed), "
                            "so the input and output lengths of this run are unknown", "warning"))
    out_tp, tot_tp = r.num("output_throughput"), r.num("total_token_throughput")
    in_tp = r.num("input_throughput")
    if tot_tp is None and in_tp is not None and out_tp is not None:
        tot_tp = in_tp + out_tp  # both are token counts over the same duration
    out["output_throughput_tok_s"] = out_tp
    out["total_throughput_tok_s"] = tot_tp
    out["request_throughput_rps"] = r.num("request_throughput")
    out["throughput_basis"] = basis_of(out_tp is not None, r.has("total_token_throughput") or in_tp is not None)
    if out_tp is None and tot_tp is None and out["request_throughput_rps"] is None:
        issues.append(Issue(file, row, "output_throughput",
                            "the file records no duration or throughput (this benchmark_serving.py fork writes "
                            "latencies only); the row keeps its latencies with throughput_basis 'none'",
                            "warning"))
    out.update(latency_values(r, _SERVE_LAT))
    _per_request(r, row, file, issues, out)
    mean_e2e = out.get("e2e_latency_s")
    if mean_e2e is not None and duration and completed:
        # Little's law: the sum of request latencies over the wall time is the mean number in flight.
        out["measured_concurrency"] = mean_e2e * completed / duration
    if sweep:
        out["repeat_idx"] = r.count("run_number")
        for key, v in rec.items():
            if key in _SERVE_KEYS or key.endswith(("_ms",)) or isinstance(v, bool):
                continue
            if isinstance(v, int | float):
                # a swept `vllm serve` parameter (e.g. max_num_seqs): a server setting per row
                out[f"fw_{key}"] = float(v)
    ts = _date_utc(r.text("date"))
    if ts:
        out["timestamp"] = ts
    return out


def arrival_of(r: FieldReader, rate: float | None) -> dict[str, Any]:
    """``arrival`` and ``burstiness`` of a run at a finite request rate (empty at ``inf``: all at once).

    ``vllm bench serve`` draws gamma-distributed gaps of shape ``burstiness`` (1, its default, is a Poisson
    process); benchmark_serving.py before the option (late 2024) drew exponential gaps only, so a result
    without the key is Poisson too.

    Raises
    ------
    BadValue
        ``burstiness`` is not a number.
    """
    if rate is None or not math.isfinite(rate) or rate <= 0:
        return {}
    b = r.num("burstiness")
    if b is None or b == 1:
        return {"arrival": "poisson", "burstiness": 1.0}
    return {"arrival": "gamma", "burstiness": b}


def _per_request(r: FieldReader, row: int, file: str, issues: list[Issue], out: dict[str, Any]) -> None:
    """Use per-request arrays (``--save-detailed``, old benchmark_serving): ttfts/itls in seconds."""
    ttfts, out_lens = r.numbers("ttfts"), r.numbers("output_lens")
    if ttfts is None or out_lens is None or len(ttfts) != len(out_lens):
        return
    errors = r.rec.get("errors")
    ok = np.ones(len(ttfts), dtype=bool)
    if isinstance(errors, list) and len(errors) == len(ttfts):
        ok = np.array([not e for e in errors], dtype=bool)
    t = np.asarray(ttfts, dtype=float)
    olen = np.asarray(out_lens, dtype=float)
    zero = ok & (olen <= 0)
    valid = ok & (olen > 0)
    if zero.any() and valid.any():
        old = out.get("ttft_s")
        out["ttft_s"] = float(np.mean(t[valid]))
        out["ttft_p50_s"] = float(np.median(t[valid]))
        out["ttft_p99_s"] = float(np.percentile(t[valid], 99))
        old_txt = f"{old * 1000:.2f} ms" if old is not None else "not given"
        issues.append(Issue(
            file, row, "output_lens",
            f"{int(zero.sum())} of {int(ok.sum())} completed requests produced 0 output tokens (their TTFT is "
            f"written as 0); TTFT statistics are recomputed from the per-request ttfts over the "
            f"{int(valid.sum())} requests with output (mean {out['ttft_s'] * 1000:.2f} ms; the file's mean "
            f"{old_txt}); the output length and throughput still count them", "warning"))
    if valid.any():
        out.setdefault("ttft_p90_s", float(np.percentile(t[valid], 90)))
    itls = r.rec.get("itls")
    if isinstance(itls, list) and all(isinstance(x, list) for x in itls):
        flat = [float(v) for req, good in zip(itls, ok, strict=False) if good for v in req
                if isinstance(v, int | float) and not isinstance(v, bool)]
        if flat:
            out.setdefault("itl_p90_s", float(np.percentile(flat, 90)))


def _serve_client(rec: Mapping[str, Any]) -> str:
    if "run_number" in rec:
        return "vllm bench sweep serve"
    if "endpoint_type" in rec:
        return "vllm bench serve"
    return "benchmarks/benchmark_serving.py (legacy)"


def _record_provenance(rec: Mapping[str, Any], row: int) -> dict[str, Any]:
    prov: dict[str, Any] = {"source_row": row}
    for k, v in rec.items():
        if k in _PER_REQUEST or isinstance(v, list | dict):
            continue
        if k.startswith(("mean_", "median_", "p9", "std_")) and k.endswith("_ms"):
            continue
        prov[k] = v
    return prov


@register
class VllmBenchServe(Importer):
    """``vllm bench serve`` / legacy ``benchmark_serving.py`` / ``vllm bench sweep`` result JSON."""

    name = "vllm-bench-serve"
    label = "vLLM bench serve JSON"
    description = ("vllm bench serve / benchmark_serving.py result JSON (one object, one per line with "
                   "--append-result, or the sweep's summary.json array)")
    has_model = True

    def sniff(self, sample: Sample) -> float:
        rec = first_record(sample)
        if rec is None:
            # a file that does not parse (truncated): recognised from its keys so that the
            # parse error, with line and column, comes from the right importer
            if sniff_text(sample, ('"model_id"',)) and (
                    sniff_text(sample, ('"mean_ttft_ms"',)) or sniff_text(sample, ('"num_prompts"',))):
                return 0.5
            return 0.0
        if "mean_ttft_ms" in rec and ("model_id" in rec or "tokenizer_id" in rec):
            return 0.95
        if "mean_ttft_ms" in rec and "request_rate" in rec and "server_info" not in rec:
            return 0.6
        return 0.0

    def parse(self, sample: Sample, meta: ImportMeta) -> Parsed:
        recs = load_json_records(sample)
        rows: list[dict[str, Any]] = []
        issues: list[Issue] = []
        prov_records = []
        for i, rec in enumerate(recs, start=1):
            try:
                row = serve_row(rec, i, sample.name, issues, meta)
            except BadValue as exc:
                issues.append(bad_value_issue(sample.name, i, exc))
                continue
            prov_records.append(_record_provenance(rec, i))
            if row is not None:
                rows.append(row)
        all_failed = not rows and any(i.column == "completed" for i in issues)
        provenance = {"client": _serve_client(recs[0]), "records": prov_records}
        return finish_rows(rows, issues, sample.name, provenance=provenance, allow_empty=all_failed)


# ---------------------------------------------------------------------------
# benchmark_throughput.py


@register
class VllmBenchmarkThroughput(Importer):
    """``benchmark_throughput.py`` / ``vllm bench throughput`` JSON (offline throughput).

    The file holds only totals (``total_num_tokens`` = input + output over all
    requests), never the input/output split, so the row's lengths are missing
    and finalize reports them; :class:`ImportMeta` would need
    ``input_len_tok``/``output_len_tok`` fields to complete it.
    """

    name = "vllm-benchmark-throughput"
    label = "vLLM benchmark_throughput JSON"
    description = "benchmark_throughput.py / vllm bench throughput result JSON (offline, one point)"

    _KEYS = ("elapsed_time", "num_requests", "total_num_tokens", "tokens_per_second")

    def sniff(self, sample: Sample) -> float:
        rec = first_record(sample)
        if rec is None:
            return 0.5 if sniff_text(sample, ('"elapsed_time"', '"tokens_per_second"')) else 0.0
        return 0.95 if all(k in rec for k in self._KEYS) else 0.0

    def parse(self, sample: Sample, meta: ImportMeta) -> Parsed:
        recs = load_json_records(sample)
        rows: list[dict[str, Any]] = []
        issues: list[Issue] = []
        for i, rec in enumerate(recs, start=1):
            r = FieldReader(rec)
            try:
                n = r.count("num_requests")
                total_tok = r.num("total_num_tokens")
                row: dict[str, Any] = {
                    "source_row": i,
                    "framework": "vllm",  # the script runs vLLM in-process: nothing else can have served it
                    "load_kind": "offline",
                    "request_rate_rps": math.inf,
                    "n_requests": n,
                    "total_throughput_tok_s": r.num("tokens_per_second"),
                    "request_throughput_rps": r.num("requests_per_second"),
                    "throughput_basis": "total",
                }
                elapsed = r.num("elapsed_time")
            except BadValue as exc:
                issues.append(bad_value_issue(sample.name, i, exc))
                continue
            if row["request_throughput_rps"] is None and n and elapsed:
                row["request_throughput_rps"] = n / elapsed
            for name in ("input_len_tok", "output_len_tok"):
                if (v := meta_length(meta, name)) is not None:
                    row[name] = v
            if "input_len_tok" in row and "output_len_tok" in row and total_tok and n:
                given, per_req_tok = row["input_len_tok"] + row["output_len_tok"], total_tok / n
                if abs(given - per_req_tok) > 0.02 * per_req_tok:  # tokens are counted, not estimated
                    issues.append(Issue(
                        sample.name, i, "total_num_tokens",
                        f"the file records {per_req_tok:,.1f} input+output tokens per request, but the lengths given "
                        f"add up to {given:,.0f} ({row['input_len_tok']:g} + {row['output_len_tok']:g}): check "
                        "--input-len/--output-len against the run's command line", "warning"))
            if "input_len_tok" not in row or "output_len_tok" not in row:
                per_req = f" ({total_tok / n:.1f} input+output tokens per request)" if total_tok and n else ""
                issues.append(Issue(
                    sample.name, i, "total_num_tokens",
                    "the file records only the total of input and output tokens" + per_req + ", not the "
                    "input and output lengths, which the run set on its command line (--input-len/"
                    "--output-len or the dataset); the lengths are left empty", "warning"))
            rows.append(row)
        return finish_rows(rows, issues, sample.name,
                           provenance={"client": "benchmarks/benchmark_throughput.py", "records": recs})


# ---------------------------------------------------------------------------
# benchmark_latency.py

#: argparse defaults of benchmarks/benchmark_latency.py (the file itself does not record them)
LATENCY_DEFAULT_BATCH = 8
LATENCY_DEFAULT_INPUT_LEN_TOK = 32
LATENCY_DEFAULT_OUTPUT_LEN_TOK = 128


@register
class VllmBenchmarkLatency(Importer):
    """``benchmark_latency.py`` / ``vllm bench latency`` JSON: one static batch ``generate`` call.

    The file records only latencies; batch size and lengths are the script's
    defaults unless the run overrode them, so they are filled in with a warning.
    """

    name = "vllm-benchmark-latency"
    label = "vLLM benchmark_latency JSON"
    description = "benchmark_latency.py / vllm bench latency result JSON (static batch, one point)"

    def sniff(self, sample: Sample) -> float:
        rec = first_record(sample)
        if rec is None:
            return 0.5 if sniff_text(sample, ('"avg_latency"', '"percentiles"')) else 0.0
        return 0.95 if "avg_latency" in rec and "percentiles" in rec else 0.0

    def parse(self, sample: Sample, meta: ImportMeta) -> Parsed:
        recs = load_json_records(sample)
        rows: list[dict[str, Any]] = []
        issues: list[Issue] = []
        for i, rec in enumerate(recs, start=1):
            r = FieldReader(rec)
            try:
                avg = r.num("avg_latency")
                pct = FieldReader(r.obj("percentiles") or {}, prefix="percentiles.")
                r.numbers("latencies")  # checked for type only: iterations of one batch, not requests
                row: dict[str, Any] = {
                    "source_row": i,
                    "framework": "vllm",  # the script runs vLLM in-process
                    "load_kind": "static_batch",
                    "e2e_latency_s": avg,
                    "e2e_latency_p50_s": pct.num("50"),
                    "e2e_latency_p90_s": pct.num("90"),
                    "e2e_latency_p99_s": pct.num("99"),
                    "throughput_basis": "none",
                }
            except BadValue as exc:
                issues.append(bad_value_issue(sample.name, i, exc))
                continue
            in_len = meta_length(meta, "input_len_tok")
            out_len = meta_length(meta, "output_len_tok")
            assumed = []
            if in_len is None:
                in_len = float(LATENCY_DEFAULT_INPUT_LEN_TOK)
                assumed.append(f"input {LATENCY_DEFAULT_INPUT_LEN_TOK}")
            if out_len is None:
                out_len = float(LATENCY_DEFAULT_OUTPUT_LEN_TOK)
                assumed.append(f"output {LATENCY_DEFAULT_OUTPUT_LEN_TOK} tokens")
            row.update(batch_size=float(LATENCY_DEFAULT_BATCH), input_len_tok=in_len, output_len_tok=out_len)
            issues.append(Issue(
                sample.name, i, "batch_size",
                f"the file does not record batch size or lengths; assumed the script defaults (batch "
                f"{LATENCY_DEFAULT_BATCH}, {', '.join(assumed) or 'lengths as supplied'}). The output "
                "throughput is derived as batch × output / avg_latency; re-import if the run overrode "
                "--batch-size/--input-len/--output-len", "warning"))
            if avg:
                row["output_throughput_tok_s"] = LATENCY_DEFAULT_BATCH * out_len / avg
            rows.append(row)
        provenance = {"client": "benchmarks/benchmark_latency.py",
                      "iterations": [len(rec.get("latencies") or []) for rec in recs]}
        return finish_rows(rows, issues, sample.name, provenance=provenance)


# ---------------------------------------------------------------------------
# console log of vllm bench serve

_BLOCK_START = re.compile(r"=+ Serving Benchmark Result =+")
_BLOCK_END = re.compile(r"^=+\s*$")
_LINE = re.compile(r"^\s*([^:]+?):\s+(\S+)\s*$")
_STAT_LINE = re.compile(r"^(Mean|Median|P\d+)\s+(TTFT|TPOT|ITL|E2EL)\s+\(ms\)$")
_LOG_LABELS = {
    "Successful requests": "completed",
    "Failed requests": "failed",
    "Maximum request concurrency": "max_concurrency",
    "Traffic request rate": "request_rate",
    "Benchmark duration (s)": "duration",
    "Total input tokens": "total_input_tokens",
    "Total generated tokens": "total_output_tokens",
    "Request throughput (req/s)": "request_throughput",
    "Output token throughput (tok/s)": "output_throughput",
    "Total token throughput (tok/s)": "total_token_throughput",
    "Peak output token throughput (tok/s)": "max_output_tokens_per_s",
    "Peak concurrent requests": "max_concurrent_requests",
}
_NS_VALUE = r"('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^,()\[\]{}\s]+)"


def namespace_args(text: str) -> dict[str, str]:
    """Selected scalar arguments from a printed ``Namespace(...)`` (regexes only, never eval).

    Returns
    -------
    dict
        Argument name to its value as text (quotes removed; ``None`` stays the text "None").
    """
    m = re.search(r"Namespace\((.*)\)\s*$", text, flags=re.MULTILINE)
    if not m:
        return {}
    body = m.group(1)
    out: dict[str, str] = {}
    for km in re.finditer(r"(?:^|[,(]\s*)(\w+)=" + _NS_VALUE, body):
        key, val = km.group(1), km.group(2)
        if val[:1] in ("'", '"'):
            val = val[1:-1]
        out.setdefault(key, val)
    return out


def _ns_number(ns: Mapping[str, str], key: str) -> float | None:
    v = ns.get(key)
    if v is None or v == "None":
        return None
    try:
        return float(v)
    except ValueError:
        return None


def log_blocks(text: str) -> list[tuple[int, dict[str, Any]]]:
    """Each ``Serving Benchmark Result`` block as (1-based line of its header, result dict)."""
    lines = text.splitlines()
    blocks: list[tuple[int, dict[str, Any]]] = []
    i = 0
    while i < len(lines):
        if not _BLOCK_START.search(lines[i]):
            i += 1
            continue
        start = i + 1
        res: dict[str, Any] = {}
        i += 1
        while i < len(lines) and not _BLOCK_END.match(lines[i]):
            m = _LINE.match(lines[i])
            if m:
                label, value = m.group(1).strip(), m.group(2)
                key = _LOG_LABELS.get(label)
                sm = _STAT_LINE.match(label)
                if sm:
                    stat = sm.group(1).lower()
                    key = f"{stat}_{sm.group(2).lower()}_ms"
                if key:
                    try:
                        res[key] = float(value)
                    except ValueError:
                        res[key] = value  # kept as text: the row reader names the field
            i += 1
        blocks.append((start, res))
    return blocks


@register
class VllmBenchServeLog(Importer):
    """Console output of ``vllm bench serve`` (result block + Namespace dump)."""

    name = "vllm-bench-serve-log"
    label = "vLLM bench serve console log"
    description = "the printed output of vllm bench serve (the Serving Benchmark Result block)"
    has_model = True

    def sniff(self, sample: Sample) -> float:
        if sample.first_char in ("{", "["):
            return 0.0
        head = sample.text_head
        # the banner on a line of its own, as vLLM prints it: a Markdown file quoting it in prose (the format
        # notes' SOURCES.md) had been read as a console log
        if not _BLOCK_START.search(head) or not re.search(r"^\s*" + _BLOCK_START.pattern + r"\s*$", head, re.M):
            return 0.0
        if "Namespace(" in head or "Peak output token throughput" in head:
            return 0.9
        # SGLang prints a similar block that starts with a "Backend:" line.
        return 0.3 if "Backend:" in head else 0.6

    def parse(self, sample: Sample, meta: ImportMeta) -> Parsed:
        text = sample.text
        blocks = log_blocks(text)
        if not blocks:
            raise ImportFormatError(f"{sample.name}: no '============ Serving Benchmark Result ============' "
                                    "block found; expected the console output of vllm bench serve")
        ns = namespace_args(text)
        rows: list[dict[str, Any]] = []
        issues: list[Issue] = []
        for block_no, (_line_no, res) in enumerate(blocks, start=1):
            rec: dict[str, Any] = dict(res)
            rec["model_id"] = ns.get("model") if ns.get("model") not in (None, "None") else None
            rec["backend"] = ns.get("backend")
            if "max_concurrency" not in rec and _ns_number(ns, "max_concurrency") is not None:
                rec["max_concurrency"] = _ns_number(ns, "max_concurrency")
            if "request_rate" not in rec:
                rec["request_rate"] = _ns_number(ns, "request_rate")
            if _ns_number(ns, "burstiness") is not None:
                rec["burstiness"] = _ns_number(ns, "burstiness")
            try:
                row = serve_row(rec, block_no, sample.name, issues, meta)
            except BadValue as exc:
                issues.append(Issue(sample.name, block_no, exc.field,
                                    f"expected {exc.expected}, got {exc.value!r}; block skipped", "error"))
                continue
            if row is not None:
                rows.append(row)
        keep = ("model", "served_model_name", "backend", "dataset_name", "num_prompts", "random_input_len",
                "random_output_len", "random_range_ratio", "max_concurrency", "request_rate", "seed",
                "endpoint", "temperature", "ignore_eos")
        provenance = {"client": "vllm bench serve (console log)",
                      "args": {k: ns[k] for k in keep if k in ns},
                      "blocks_at_lines": [b[0] for b in blocks]}
        all_failed = not rows and any(i.column == "completed" for i in issues)
        return finish_rows(rows, issues, sample.name, provenance=provenance, allow_empty=all_failed)
