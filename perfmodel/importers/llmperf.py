"""Importers for ray-project/llmperf result files.

Formats
-------
``llmperf``
    The ``*_summary.json`` file: one flat object with the run configuration
    (``model``, ``mean_input_tokens``, ``mean_output_tokens``,
    ``num_concurrent_requests``) and flattened statistics
    ``results_<metric>_<stat>`` in **seconds** (``quantiles_p50``/``p90``/``p99``,
    ``mean``...), plus ``results_mean_output_throughput_token_per_s`` (the
    aggregate output tokens per second of the run).
``llmperf-individual``
    The ``*_individual_responses.json`` file: a JSON array of per-request
    records. It is aggregated into ONE point (latency mean/p50/p90/p99,
    requests and errors); it holds no timestamps, so the run's wall time and
    therefore its aggregate throughput cannot be derived.

llmperf's ``inter_token_latency_s`` is not the time between tokens: it is the
sum of the gaps from the request's start to each streamed chunk (the first gap is
the TTFT) divided by the output tokens, i.e. about end-to-end latency / output
tokens, TTFT included (the anyscale leaderboard summary's mean is 0.0158 s, against
e2e / out = 0.0160 s and (e2e - TTFT) / (out - 1) = 0.0144 s from its means). It is therefore not
stored as ``itl_*``; ``tpot_s`` is derived as (e2e - TTFT) / (output tokens - 1):
from the means in a summary, per request (then mean and percentiles) from the
individual responses. An ``info`` issue says so.

llmperf measures hosted endpoints: no file names the hardware (pass
``--hardware``). The leaderboard's ``framework`` field names the *provider*
(e.g. "anyscale", "groq"), not the serving engine, so it goes to provenance.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import numpy as np

from .base import Importer, ImportMeta, Issue, Parsed, Sample, register
from .vllm_bench import (
    BadValue,
    FieldReader,
    bad_value_issue,
    finish_rows,
    first_record,
    latency_values,
    load_json_records,
    sniff_text,
)

__all__ = ["LlmperfSummary", "LlmperfIndividual"]

# inter_token_latency_s is left out on purpose: it includes the TTFT (see the module docstring).
_LAT = {"ttft": ("ttft_s",), "e2e_latency": ("end_to_end_latency_s",)}
#: What llmperf's inter_token_latency_s is, for the info issue of both importers.
_ITL_NOTE = ("llmperf's inter_token_latency_s is (sum of the gaps from the request's start to each chunk) / "
             "output tokens, about end-to-end latency / output tokens with the TTFT included, not the time "
             "between tokens: it is not stored as itl_*")


_STATS = {"mean": "", "quantiles_p50": "_p50", "quantiles_p90": "_p90", "quantiles_p99": "_p99"}


def _summary_latencies(r: FieldReader) -> dict[str, float]:
    return latency_values(r, _LAT, unit="s", pattern="results_{src}_{stat}", stats=_STATS)


@register
class LlmperfSummary(Importer):
    """llmperf ``*_summary.json`` (one point)."""

    name = "llmperf"
    label = "llmperf summary JSON"
    description = "ray-project/llmperf token_benchmark_ray summary JSON (results_* keys, seconds)"
    has_model = True

    def sniff(self, sample: Sample) -> float:
        rec = first_record(sample)
        if rec is None:
            # unparseable (truncated): recognised by its config key and flattened results_ prefix
            return 0.5 if sniff_text(sample, ('"num_concurrent_requests"', '"results_')) else 0.0
        if "results_ttft_s_mean" in rec or "results_mean_output_throughput_token_per_s" in rec:
            return 0.95
        return 0.0

    def parse(self, sample: Sample, meta: ImportMeta) -> Parsed:
        recs = load_json_records(sample)
        rows: list[dict[str, Any]] = []
        issues: list[Issue] = []
        prov_records: list[dict[str, Any]] = []
        for i, rec in enumerate(recs, start=1):
            r = FieldReader(rec)
            try:
                row = self._row(r, i, sample.name, issues)
            except BadValue as exc:
                issues.append(bad_value_issue(sample.name, i, exc))
                continue
            prov_records.append({k: v for k, v in rec.items() if not k.startswith("results_")
                                 or k in ("results_error_code_frequency", "results_error_rate")})
            if row is not None:
                rows.append(row)
        all_failed = not rows and any(i.column == "results_num_completed_requests" for i in issues)
        return finish_rows(rows, issues, sample.name, provenance={"client": "llmperf", "records": prov_records},
                           allow_empty=all_failed)

    @staticmethod
    def _row(r: FieldReader, row: int, file: str, issues: list[Issue]) -> dict[str, Any] | None:
        out: dict[str, Any] = {"source_row": row, "load_kind": "concurrency"}
        if m := r.text("model"):
            out["model_raw"] = m
        completed = r.count("results_num_completed_requests")
        errors = r.count("results_number_errors")
        if completed == 0:
            issues.append(Issue(file, row, "results_num_completed_requests",
                                "no request completed: the run holds no measurement and is not imported",
                                "warning"))
            return None
        out["n_requests"] = completed
        out["n_failed"] = errors
        out["batch_size"] = r.num("num_concurrent_requests")
        # measured means beat the configured targets (outputs can stop early)
        out["input_len_tok"] = r.num("results_number_input_tokens_mean") or r.num("mean_input_tokens")
        out["output_len_tok"] = r.num("results_number_output_tokens_mean") or r.num("mean_output_tokens")
        out_tp = r.num("results_mean_output_throughput_token_per_s")
        out["output_throughput_tok_s"] = out_tp
        per_min = r.num("results_num_completed_requests_per_min")
        out["request_throughput_rps"] = per_min / 60.0 if per_min is not None else None
        out["throughput_basis"] = "output" if out_tp is not None else "none"
        out.update(_summary_latencies(r))
        out["tpot_s"] = _summary_tpot(r, out, row, file, issues)
        ts = r.num("timestamp")
        if ts is not None and math.isfinite(ts):
            out["timestamp"] = datetime.fromtimestamp(ts, tz=UTC).isoformat()
        return out


def _summary_tpot(r: FieldReader, out: Mapping[str, Any], row: int, file: str,
                  issues: list[Issue]) -> float | None:
    """TPOT of a summary, (mean e2e - mean TTFT) / (mean output tokens - 1), with an info issue.

    Parameters
    ----------
    r
        The summary record.
    out
        The row built so far (its ``e2e_latency_s`` and ``ttft_s``; the output length is the
        measured ``results_number_output_tokens_mean``, never the configured target).
    row, file
        Where the record is, for the issue.
    issues
        The issue saying what was stored instead of llmperf's ITL is appended here.

    Returns
    -------
    float or None
        The TPOT in seconds; None when a mean is missing or the output is one token or less.
    """
    try:
        itl = r.num("results_inter_token_latency_s_mean")
    except BadValue:  # not stored: a wrong type here must not cost the row
        itl = None
    e2e, ttft, n_out = out.get("e2e_latency_s"), out.get("ttft_s"), r.num("results_number_output_tokens_mean")
    written = f" (the file's mean: {itl:.6g} s)" if itl is not None else ""
    if e2e is None or ttft is None or n_out is None or not n_out > 1:
        issues.append(Issue(file, row, "results_inter_token_latency_s_mean",
                            f"{_ITL_NOTE}{written}; tpot_s left empty (it needs the means of end-to-end "
                            "latency, TTFT and output tokens, with more than one output token)", "info"))
        return None
    tpot = (e2e - ttft) / (n_out - 1)
    issues.append(Issue(file, row, "results_inter_token_latency_s_mean",
                        f"{_ITL_NOTE}{written}; tpot_s = (mean end-to-end latency - mean TTFT) / (mean output "
                        f"tokens - 1) = ({e2e:.6g} - {ttft:.6g}) / ({n_out:.6g} - 1) = {tpot:.6g} s, from the "
                        "means (its percentiles cannot be derived from the file)", "info"))
    return tpot


def _stats(values: np.ndarray) -> dict[str, float]:
    return {"": float(np.mean(values)), "_p50": float(np.percentile(values, 50)),
            "_p90": float(np.percentile(values, 90)), "_p99": float(np.percentile(values, 99))}


@register
class LlmperfIndividual(Importer):
    """llmperf ``*_individual_responses.json``, aggregated into one point."""

    name = "llmperf-individual"
    label = "llmperf individual responses JSON"
    description = "ray-project/llmperf individual_responses JSON (array of per-request records -> one point)"

    _KEYS = ("ttft_s", "end_to_end_latency_s", "number_output_tokens")

    def sniff(self, sample: Sample) -> float:
        doc = sample.json_doc
        if doc is None:
            return 0.5 if sniff_text(sample, ('"end_to_end_latency_s"', '"error_code"')) else 0.0
        if isinstance(doc, list) and doc and isinstance(doc[0], Mapping) and all(k in doc[0] for k in self._KEYS):
            return 0.95
        return 0.0

    def parse(self, sample: Sample, meta: ImportMeta) -> Parsed:
        recs = load_json_records(sample)
        issues: list[Issue] = []
        ok: list[dict[str, float]] = []
        n_failed = 0
        for i, rec in enumerate(recs, start=1):
            r = FieldReader(rec)
            try:
                code = rec.get("error_code")
                if code not in (None, "", 0) or (rec.get("error_msg") or ""):
                    n_failed += 1
                    continue
                vals = {k: r.num(k) for k in ("ttft_s", "end_to_end_latency_s", "inter_token_latency_s",
                                              "number_input_tokens", "number_output_tokens")}
            except BadValue as exc:
                issues.append(bad_value_issue(sample.name, i, exc))
                continue
            if any(vals[k] is None for k in ("ttft_s", "end_to_end_latency_s", "number_output_tokens")):
                issues.append(Issue(sample.name, i, "ttft_s", "request record lacks ttft_s, "
                                    "end_to_end_latency_s or number_output_tokens; left out of the point",
                                    "error"))
                continue
            ok.append({k: float(v) for k, v in vals.items() if v is not None})
        if not ok:
            bad = [i for i in issues if i.severity == "error"]
            if bad:
                return finish_rows([], issues, sample.name)
            issues.append(Issue(sample.name, None, "error_code",
                                f"all {n_failed} requests failed: no measurement to import", "warning"))
            return finish_rows([], issues, sample.name, allow_empty=True)
        row: dict[str, Any] = {"source_row": 1, "n_requests": len(ok), "n_failed": n_failed,
                               "throughput_basis": "none"}
        for stem, key in (("ttft", "ttft_s"), ("e2e_latency", "end_to_end_latency_s")):
            vals = np.array([d[key] for d in ok if key in d], dtype=float)
            if len(vals):
                for suffix, v in _stats(vals).items():
                    row[f"{stem}{suffix}_s"] = v
        # Per request (e2e - TTFT) / (output tokens - 1): llmperf's inter_token_latency_s includes the TTFT.
        tpot = np.array([(d["end_to_end_latency_s"] - d["ttft_s"]) / (d["number_output_tokens"] - 1)
                         for d in ok if d["number_output_tokens"] > 1], dtype=float)
        if len(tpot):
            for suffix, v in _stats(tpot).items():
                row[f"tpot{suffix}_s"] = v
        issues.append(Issue(
            sample.name, None, "inter_token_latency_s",
            f"{_ITL_NOTE}; tpot_* = per request (end_to_end_latency_s - ttft_s) / (number_output_tokens - 1) "
            f"over the {len(tpot)} successful request(s) with more than one output token"
            + ("" if len(tpot) else " (none: tpot_* left empty)"), "info"))
        ins = [d["number_input_tokens"] for d in ok if "number_input_tokens" in d]
        if ins:
            row["input_len_tok"] = float(np.mean(ins))
        row["output_len_tok"] = float(np.mean([d["number_output_tokens"] for d in ok]))
        issues.append(Issue(
            sample.name, None, "output_throughput_tok_s",
            f"aggregated {len(ok)} successful request records ({n_failed} failed) into one point: latency "
            "mean/p50/p90/p99, mean lengths and counts are exact; the file has no timestamps, so the run's "
            "wall time, aggregate throughput and concurrency cannot be derived (throughput_basis 'none'; "
            "import the matching *_summary.json for them)", "warning"))
        # llmperf always runs a closed loop, but its concurrency is written only in the
        # summary file: without it (or a user-supplied value) finalize rejects the row
        # with "a concurrency point needs a batch size" rather than guessing.
        row["load_kind"] = "concurrency"
        conc = getattr(meta, "batch_size", None)
        if conc is not None:
            row["batch_size"] = float(conc)
        else:
            issues.append(Issue(sample.name, None, "batch_size",
                                "the number of concurrent requests is not in this file (it is "
                                "num_concurrent_requests in the matching *_summary.json)", "warning"))
        provenance = {"client": "llmperf (individual responses)", "n_records": len(recs),
                      "error_codes": json.dumps(sorted({str(rec.get("error_code")) for rec in recs
                                                        if rec.get("error_code") is not None}))}
        return finish_rows([row], issues, sample.name, provenance=provenance)
