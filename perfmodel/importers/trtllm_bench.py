"""NVIDIA TensorRT-LLM ``trtllm-bench throughput`` results.

Two formats:

``trtllm-bench-csv``
    The summary CSV people extract from the reports (``ISL,OSL,Requests,
    Token_Throughput,Request_Throughput,Avg_Input_Len,Avg_Output_Len``): one offline
    (all requests submitted at once) run per row. ``Token_Throughput`` is
    **output** tokens per second (trtllm-bench 0.16 "Token Throughput"); it is
    checked against ``Request_Throughput x Avg_Output_Len``.
``trtllm-bench-report``
    The native text report printed at the end of a run: ``ENGINE DETAILS``,
    ``WORLD + RUNTIME INFORMATION`` and ``PERFORMANCE OVERVIEW`` sections of
    ``Key:<tab>value`` lines. Newer versions' keys (total/output token throughput,
    average request latency, TTFT, TPOT in ms) are read when present.

``trtllm-bench-json``
    The ``--report_json`` file: ``engine``, ``world_info``, ``request_info``,
    ``performance`` (ms latencies, output and total tok/s) and, for streaming runs,
    ``streaming_metrics`` (TTFT/TPOT percentiles in ms). No real file was at hand:
    the keys follow ``get_statistics_dict`` in TensorRT-LLM's
    ``tensorrt_llm/bench/dataclasses/reporting.py``, and the test sample is hand-made
    from it.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ImportFormatError
from .base import Importer, ImportMeta, Issue, Parsed, Sample, dig, ms_to_s, register
from .generic_csv import csv_header_has, numeric_columns, read_csv_rows, require_columns, row_checks

__all__ = ["TrtllmBenchCsvImporter", "TrtllmBenchReportImporter", "TrtllmBenchJsonImporter", "parse_report"]

_CSV_KEYS = ("isl", "osl", "requests", "token_throughput", "request_throughput")
_LINE = re.compile(r"^\s*([A-Za-z][^:\n]*?)\s*:\s*(\S.*?)\s*$")
_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "fp8": "fp8", "int8": "int8",
           "int4": "int4", "nvfp4": "fp4", "fp4": "fp4", "bf16": "bf16", "fp16": "fp16"}


@register
class TrtllmBenchCsvImporter(Importer):
    """Summary CSV of trtllm-bench throughput runs."""

    name = "trtllm-bench-csv"
    label = "trtllm-bench summary CSV"
    description = "ISL,OSL,Requests,Token_Throughput,Request_Throughput,Avg_Input_Len,Avg_Output_Len"

    def sniff(self, sample: Sample) -> float:
        return 0.9 if csv_header_has(sample, _CSV_KEYS) else 0.0

    def parse(self, sample: Sample, meta: ImportMeta) -> Parsed:
        """Read one offline run per row (output throughput, request throughput).

        Raises
        ------
        ImportFormatError
            Only when the file has no header or the header lacks a column it needs
            (ISL, OSL, Requests, Token_Throughput, Request_Throughput).
        """
        file = sample.name
        rows = read_csv_rows(sample)
        require_columns(rows, _CSV_KEYS, file, self.label)
        lower = {h.lower(): h for h in rows.header}
        keep, issues = row_checks(rows, file)
        num = numeric_columns(rows, ("isl", "osl", "requests", "token_throughput", "request_throughput",
                                     "avg_input_len", "avg_output_len"), keep, issues, file, columns=lower)
        in_len = num["avg_input_len"].fillna(num["isl"]) if "avg_input_len" in num else num["isl"]
        out_len = num["avg_output_len"].fillna(num["osl"]) if "avg_output_len" in num else num["osl"]
        runs = pd.DataFrame({
            "framework": "tensorrt-llm",
            "input_len_tok": in_len,
            "output_len_tok": out_len,
            "load_kind": "offline",
            "request_rate_rps": math.inf,
            "n_requests": num["requests"],
            "output_throughput_tok_s": num["token_throughput"],
            "request_throughput_rps": num["request_throughput"],
            "throughput_basis": "output",
            "source_row": rows.source_row,
        })
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = (num["token_throughput"] / (num["request_throughput"] * out_len) - 1).abs()
        # Request_Throughput has 4 decimals: 0.1544 req/s is only good to ~0.03 %; allow 2 %.
        off = keep & (rel > 0.02).fillna(False).to_numpy()
        if off.any():
            issues.append(Issue(file, None, lower["token_throughput"],
                                f"{int(off.sum())} row(s) where Token_Throughput differs from Request_Throughput x "
                                "output length by more than 2 %: is it total, not output, tokens/s?", "warning"))
        return Parsed(runs=runs.loc[keep].reset_index(drop=True), issues=issues)


def parse_report(text: str) -> dict[str, str]:
    """The ``Key: value`` pairs of a trtllm-bench text report (keys lower-cased).

    Parameters
    ----------
    text
        The report (log lines around it are ignored).

    Returns
    -------
    dict
        Lower-cased key -> value text; the first occurrence of a key wins.
    """
    out: dict[str, str] = {}
    for line in text.splitlines():
        if line.lstrip().startswith(("[", "=")):
            continue
        m = _LINE.match(line)
        if m:
            out.setdefault(m.group(1).strip().lower(), m.group(2).strip())
    return out


def _num(v: str | None) -> float:
    if v is None:
        return math.nan
    try:
        return float(v.rstrip("%").replace(",", ""))
    except ValueError:
        return math.nan


def _find(kv: dict[str, str], *patterns: str) -> str | None:
    for pat in patterns:
        for k, v in kv.items():
            if re.fullmatch(pat, k):
                return v
    return None


@register
class TrtllmBenchReportImporter(Importer):
    """Native text report of ``trtllm-bench throughput``."""

    name = "trtllm-bench-report"
    label = "trtllm-bench text report"
    description = "stdout of trtllm-bench throughput (ENGINE DETAILS / PERFORMANCE OVERVIEW sections)"
    has_model = True

    def sniff(self, sample: Sample) -> float:
        # No JSON guard: the report starts with a "[date] [TRT-LLM]" log prefix.
        # The report's own banner line and a "Key:<tab>value" throughput line: a Markdown file describing the
        # format (its SOURCES.md) names both in prose and had been read as a report.
        head = sample.text_head
        if re.search(r"^=\s*PERFORMANCE OVERVIEW", head, re.M) and \
                re.search(r"^[\w ]*Throughput \((?:tokens|req)/sec\):\s", head, re.M):
            return 0.95
        return 0.0

    def parse(self, sample: Sample, meta: ImportMeta) -> Parsed:
        """Read the one run the report describes.

        Raises
        ------
        ImportFormatError
            No token or request throughput, or no average lengths, in the report.
        """
        file = sample.name
        kv = parse_report(sample.text)
        issues: list[Issue] = []
        total_tput = _num(_find(kv, r"total token throughput.*"))
        out_tput = _num(_find(kv, r"total output throughput.*", r"token throughput.*"))
        req_tput = _num(_find(kv, r"request throughput.*"))
        in_len = _num(_find(kv, r"average input length.*"))
        out_len = _num(_find(kv, r"average output length.*"))
        missing = [name for name, v in (("Average Input Length", in_len), ("Average Output Length", out_len))
                   if math.isnan(v)]
        if math.isnan(out_tput) and math.isnan(req_tput) and math.isnan(total_tput):
            missing.append("Token Throughput (tokens/sec)")
        if missing:
            raise ImportFormatError(f"{file}: trtllm-bench report without " + ", ".join(missing)
                                    + " in its PERFORMANCE OVERVIEW section")
        row: dict[str, Any] = {
            "framework": "tensorrt-llm",
            "framework_version": _find(kv, r"tensorrt-llm version"),
            "input_len_tok": in_len,
            "output_len_tok": out_len,
            "load_kind": "offline",
            "n_requests": _num(_find(kv, r"number of requests")),
            "output_throughput_tok_s": out_tput,
            "total_throughput_tok_s": total_tput,
            "request_throughput_rps": req_tput,
            "throughput_basis": "output+total" if not math.isnan(total_tput) and not math.isnan(out_tput)
            else "total" if not math.isnan(total_tput) else "output",
            "tp_size": _num(_find(kv, r"tp size")),
            "pp_size": _num(_find(kv, r"pp size")),
            "fw_max_batch_size": _num(_find(kv, r"max runtime batch size")),
            "fw_max_num_tokens": _num(_find(kv, r"max runtime tokens")),
            "source_row": 1,
        }
        model = _find(kv, r"model")
        if model:
            row["model_raw"] = model
        rate = _num(_find(kv, r"issue rate.*"))
        # trtllm-bench prints ~1e14 req/s when every request is issued at once.
        row["request_rate_rps"] = math.inf if math.isnan(rate) or rate > 1e9 else rate
        quant = (_find(kv, r"quantization") or "").strip()
        dtype = (_find(kv, r"dtype") or "").strip().lower()
        if quant and quant.lower() not in ("none", "n/a"):
            row["quantization"] = quant.lower()
            row["weight_dtype"] = _DTYPES.get(quant.lower().split("_")[0], None)
        elif dtype:
            row["weight_dtype"] = _DTYPES.get(dtype, dtype)
        kv_dtype = (_find(kv, r"kv cache dtype") or "").strip().lower()
        if kv_dtype and kv_dtype not in ("none", "n/a"):
            row["kv_cache_dtype"] = _DTYPES.get(kv_dtype, kv_dtype)
        for col, pat in (("e2e_latency_s", r"average request latency.*\(ms\)"),
                         ("ttft_s", r"average time-to-first-token.*\(ms\)"),
                         ("tpot_s", r"average time-per-output-token.*\(ms\)")):
            v = _num(_find(kv, pat))
            if not math.isnan(v):
                row[col] = v / 1000.0
        duration_ms = _num(_find(kv, r"total latency \(ms\)"))
        provenance = {k: v for k, v in kv.items() if len(v) < 200}
        if not math.isnan(duration_ms):
            provenance["duration_s"] = duration_ms / 1000.0
        return Parsed(runs=pd.DataFrame([row]), issues=issues, provenance=provenance)


def _weight_and_quant(dtype: Any, quant: Any) -> dict[str, Any]:
    """Weight dtype and quantization from trtllm-bench's engine section."""
    out: dict[str, Any] = {}
    q = str(quant or "").strip().lower()
    d = str(dtype or "").strip().lower()
    if q and q not in ("none", "n/a", "null"):
        out["quantization"] = q
        out["weight_dtype"] = _DTYPES.get(q.split("_")[0])
    elif d:
        out["weight_dtype"] = _DTYPES.get(d, d)
    return out


def _pct_ms(stats: Any, stem: str) -> dict[str, float]:
    """``{stem}_s``/``_p50_s``/``_p90_s``/``_p99_s`` from a trtllm-bench percentile block in ms."""
    if not isinstance(stats, dict):
        return {}
    return {f"{stem}_s": ms_to_s(stats.get("average")), f"{stem}_p50_s": ms_to_s(stats.get("p50")),
            f"{stem}_p90_s": ms_to_s(stats.get("p90")), f"{stem}_p99_s": ms_to_s(stats.get("p99"))}


@register
class TrtllmBenchJsonImporter(Importer):
    """``trtllm-bench throughput --report_json`` statistics."""

    name = "trtllm-bench-json"
    label = "trtllm-bench report JSON"
    description = "engine / world_info / request_info / performance / streaming_metrics"
    has_model = True

    def sniff(self, sample: Sample) -> float:
        doc = sample.json_doc
        if not isinstance(doc, dict):
            return 0.0
        perf = doc.get("performance")
        if isinstance(perf, dict) and "system_output_throughput_tok_s" in perf and "request_info" in doc:
            return 0.95
        return 0.0

    def parse(self, sample: Sample, meta: ImportMeta) -> Parsed:
        """Read the one run the report describes (offline: every request issued at once).

        Raises
        ------
        ImportFormatError
            The report lacks the average lengths or every throughput.
        """
        doc = sample.json_doc
        req = doc.get("request_info") or {}
        perf = doc.get("performance") or {}
        world = doc.get("world_info") or {}
        engine = doc.get("engine") or {}
        in_len, out_len = req.get("avg_input_length"), req.get("avg_output_length")
        if in_len is None or out_len is None:
            raise ImportFormatError(f"{sample.name}: trtllm-bench report JSON without request_info."
                                    "avg_input_length / avg_output_length")
        row: dict[str, Any] = {
            "framework": "tensorrt-llm",
            "framework_version": engine.get("version"),
            "model_raw": engine.get("model"),
            "input_len_tok": in_len,
            "output_len_tok": out_len,
            "load_kind": "offline",
            "measured_concurrency": req.get("avg_num_concurrent_requests"),
            "n_requests": req.get("num_requests"),
            "output_throughput_tok_s": perf.get("system_output_throughput_tok_s"),
            "total_throughput_tok_s": perf.get("system_total_throughput_tok_s"),
            "request_throughput_rps": perf.get("request_throughput_req_s"),
            "throughput_basis": "output+total" if perf.get("system_total_throughput_tok_s") is not None
            else "output",
            "tp_size": world.get("tp_size"),
            "pp_size": world.get("pp_size"),
            "device_count": world.get("world_size"),
            "kv_cache_dtype": _DTYPES.get(str(engine.get("kv_cache_dtype") or "").lower())
            if str(engine.get("kv_cache_dtype") or "").lower() not in ("", "none", "null") else None,
            "fw_max_batch_size": world.get("max_batch_size"),
            "fw_max_num_tokens": world.get("max_num_tokens"),
            "source_row": 1,
            **_weight_and_quant(engine.get("dtype"), engine.get("quantization")),
        }
        rate = world.get("issue_rate")
        # trtllm-bench reports an enormous issue rate when every request is sent at once.
        row["request_rate_rps"] = math.inf if rate is None or float(rate) > 1e9 else float(rate)
        lat = perf.get("request_latency_percentiles_ms")
        row |= _pct_ms(lat, "e2e_latency") if isinstance(lat, dict) else \
            {"e2e_latency_s": ms_to_s(perf.get("avg_request_latency_ms"))}
        stream = doc.get("streaming_metrics")
        row |= _pct_ms(dig(stream, "ttft_percentiles"), "ttft")
        row |= _pct_ms(dig(stream, "tpot_percentiles"), "tpot")
        if isinstance(stream, dict) and "ttft_s" not in row:
            row["ttft_s"] = ms_to_s(stream.get("avg_ttft_ms"))
            row["tpot_s"] = ms_to_s(stream.get("avg_tpot_ms"))
        provenance = {"engine": engine, "world_info": world, "dataset": doc.get("dataset"),
                      "duration_s": ms_to_s(perf.get("total_latency_ms"))}
        return Parsed(runs=pd.DataFrame([row]), provenance=provenance)
