"""Importer for the custom asyncio/OpenAI-client concurrency sweep of sariekr/gpu_conc.

Format ``gpu-conc``: either the summary file (``test_info`` + ``results[]``, one
object per concurrency level) or a per-level ``benchmark_concurrency_N.json``
(one element of ``results[]``). Latencies are in **milliseconds**; output
tokens are *estimated by the client* from streamed text (about 0.75 tokens per
word), not counted by a tokenizer, so every file gets a warning saying so.
``gpu_info.model`` may be ``"Unknown GPU"``: that is treated as absent so the
user must supply the hardware.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from .base import Importer, ImportMeta, Issue, Parsed, Sample, register
from .vllm_bench import (
    BadValue,
    FieldReader,
    bad_value_issue,
    finish_rows,
    first_record,
    load_json_records,
    sniff_text,
)

__all__ = ["GpuConc"]

#: gpu_info.model values that mean "the script could not tell"
_UNKNOWN_GPU = {"", "unknown", "unknown gpu", "n/a", "none"}

_LATENCY_KEYS = {
    "e2e_latency_s": "average_latency_per_request",
    "e2e_latency_p50_s": "median_end_to_end_latency",
    "e2e_latency_p99_s": "p99_end_to_end_latency",
    "ttft_s": "average_ttft",
    "ttft_p50_s": "median_ttft",
    "ttft_p99_s": "p99_ttft",
}


def _gpu(info: Mapping[str, Any] | None) -> tuple[str | None, int | None]:
    if not isinstance(info, Mapping):
        return None, None
    name = info.get("model")
    if not isinstance(name, str) or name.strip().lower() in _UNKNOWN_GPU:
        name = None
    count = info.get("count")
    if not (isinstance(count, int) and not isinstance(count, bool) and count > 0):
        count = None
    return name, count


def level_row(rec: Mapping[str, Any], row: int, file: str, issues: list[Issue],
              defaults: Mapping[str, Any]) -> dict[str, Any] | None:
    """One canonical row from one concurrency level (None when no request succeeded).

    Raises
    ------
    BadValue
        A field the row needs has the wrong type.
    """
    r = FieldReader(rec)
    # the script only talks to a vLLM server (its config key is `vllm_url`)
    out: dict[str, Any] = {"source_row": row, "load_kind": "concurrency", "framework": "vllm"}
    conc = r.num("concurrency")
    out["batch_size"] = conc
    ok, failed = r.count("successful_requests"), r.count("failed_requests")
    if ok == 0:
        issues.append(Issue(file, row, "successful_requests",
                            f"no request succeeded at concurrency {conc:g}: the level holds no measurement and "
                            "is not imported" if conc is not None else "no request succeeded", "warning"))
        return None
    out["n_requests"] = ok
    out["n_failed"] = failed
    if failed:
        errs = r.obj("error_summary") or {}
        issues.append(Issue(file, row, "failed_requests",
                            f"{failed} of {ok + failed} requests failed at concurrency {conc:g} "
                            f"(timeouts: {errs.get('timeout_errors', '?')}); latencies and throughput count "
                            "the successful requests only", "warning"))
    name, count = _gpu(r.obj("gpu_info")) if "gpu_info" in rec else (None, None)
    name = name or defaults.get("hardware_raw")
    count = count or defaults.get("device_count")
    if name:
        out["hardware_raw"] = name
    if count:
        out["device_count"] = count
    model = r.text("model") or defaults.get("model_raw")
    if model:
        out["model_raw"] = model
    out_tp = r.num("system_output_throughput")
    rps = r.num("requests_per_second")
    out["output_throughput_tok_s"] = out_tp
    out["request_throughput_rps"] = rps
    out["throughput_basis"] = "output" if out_tp is not None else "none"
    cfg = FieldReader(r.obj("test_config") or defaults.get("config") or {}, prefix="test_config.")
    out["input_len_tok"] = cfg.num("input_tokens")
    # The configured output length names the configuration; the client's estimate of the tokens it got
    # (throughput / request rate, 929-944 for 1,000 asked on the H200 file) moves with every level and had split
    # one sweep into ten one-point configurations on the Curves page.
    out["output_len_tok"] = cfg.num("output_tokens")
    if out["output_len_tok"] is None and out_tp and rps:
        out["output_len_tok"] = out_tp / rps  # the same (estimated) token count the throughput is built from
    for col, key in _LATENCY_KEYS.items():
        v = r.num(key)
        out[col] = v / 1000.0 if v is not None else None
    for col, key in (("hw_memory_peak_gb", "peak_memory_gb"), ("hw_memory_mean_gb", "average_memory_gb")):
        v = r.num(key)
        if v:  # the script writes 0.0 when it could not read the GPU memory
            out[col] = v
    ts = r.num("test_timestamp")
    if ts is not None:
        out["timestamp"] = datetime.fromtimestamp(ts, tz=UTC).isoformat()
    return out


@register
class GpuConc(Importer):
    """sariekr/gpu_conc concurrency sweep JSON (summary or one level)."""

    name = "gpu-conc"
    label = "gpu_conc concurrency sweep JSON"
    description = "custom asyncio/OpenAI-client concurrency sweep (sariekr/gpu_conc): summary or per-level JSON"
    has_hardware = True
    has_model = True

    def sniff(self, sample: Sample) -> float:
        rec = first_record(sample)
        if rec is None:
            return 0.5 if sniff_text(sample, ('"system_output_throughput"',)) else 0.0
        if "test_info" in rec and isinstance(rec.get("results"), list):
            first = rec["results"][0] if rec["results"] else {}
            return 0.95 if isinstance(first, Mapping) and "system_output_throughput" in first else 0.6
        if "system_output_throughput" in rec and "concurrency" in rec:
            return 0.95
        return 0.0

    def parse(self, sample: Sample, meta: ImportMeta) -> Parsed:
        recs = load_json_records(sample)
        issues: list[Issue] = []
        rows: list[dict[str, Any]] = []
        levels: list[tuple[int, Mapping[str, Any]]] = []
        defaults: dict[str, Any] = {}
        provenance: dict[str, Any] = {"client": "gpu_conc (custom asyncio OpenAI client)"}
        for i, rec in enumerate(recs, start=1):
            if "test_info" in rec:
                info = rec.get("test_info")
                results = rec.get("results")
                if not isinstance(info, Mapping) or not isinstance(results, list):
                    issues.append(Issue(sample.name, i, "results", "expected test_info to be an object and "
                                        "results a list of concurrency levels; record skipped", "error"))
                    continue
                cfg = info.get("config") if isinstance(info.get("config"), Mapping) else {}
                name, count = _gpu(info.get("gpu_info"))
                defaults = {"hardware_raw": name, "device_count": count, "model_raw": cfg.get("model"),
                            "config": {k: cfg.get(k) for k in ("input_tokens", "output_tokens")}}
                provenance["test_info"] = {k: v for k, v in info.items() if k != "config"}
                # the API key and URL are the user's, not facts about the measurement
                provenance["config"] = {k: v for k, v in cfg.items() if k not in ("api_key", "vllm_url")}
                for j, level in enumerate(results, start=1):
                    levels.append((j, level))
            else:
                levels.append((i, rec))
        for row_no, level in levels:
            if not isinstance(level, Mapping):
                issues.append(Issue(sample.name, row_no, "results", f"expected an object, got {level!r:.40}; "
                                    "level skipped", "error"))
                continue
            try:
                row = level_row(level, row_no, sample.name, issues, defaults)
            except BadValue as exc:
                issues.append(bad_value_issue(sample.name, row_no, exc))
                continue
            if row is not None:
                rows.append(row)
        if rows:
            if not any(r.get("hardware_raw") for r in rows) and not meta.hardware:  # given: nothing to ask
                issues.append(Issue(sample.name, None, "gpu_info.model",
                                    "the file says 'Unknown GPU' (or nothing): supply the hardware with "
                                    "--hardware", "warning"))
            # what is stored, in the message: the configured lengths, beside the client's own estimate
            est = [r["output_throughput_tok_s"] / r["request_throughput_rps"] for r in rows
                   if r.get("output_throughput_tok_s") and r.get("request_throughput_rps")]
            configured = {r.get("output_len_tok") for r in rows} - {None}
            told = (f"the output length stored is the configured {', '.join(f'{v:g}' for v in sorted(configured))} "
                    f"tokens, where the client's estimate (throughput / request rate) averages "
                    f"{sum(est) / len(est):,.0f}" if est and configured else
                    "the output length is the client's estimate (throughput / request rate)")
            issues.append(Issue(
                sample.name, None, "output_len_tok",
                "output tokens are estimated by the client from streamed text (~0.75 tokens per word), not "
                f"counted by a tokenizer: output throughput carries that estimate, and {told}; input length is "
                "the configured target", "warning"))
        all_failed = not rows and any(i.column == "successful_requests" for i in issues)
        return finish_rows(rows, issues, sample.name, provenance=provenance, allow_empty=all_failed)
