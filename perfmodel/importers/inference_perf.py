"""kubernetes-sigs/inference-perf reports.

Three JSON shapes, told apart by content:

* **stage lifecycle report** (``stage_<n>_lifecycle_metrics.json``): one load
  stage, i.e. one request-rate point. ``load_summary{requested_rate,
  achieved_rate, count, send_duration}``; ``successes{count, latency{...},
  throughput{input/output/total_tokens_per_sec, requests_per_sec}, prompt_len,
  output_len}``; ``failures{count}``. Every latency is in **seconds**; each is a
  stats object ``{mean, median, p90, p99, ...}``. ``request_rate_rps`` is the
  *requested* rate (the x of a load curve; the achieved rate is in provenance and
  a warning says when the generator fell more than 5 % short of it).
* **summary lifecycle report** (``summary_lifecycle_metrics.json``): the same
  statistics pooled over *every* stage of the run; its ``load_summary`` has only
  ``count`` and ``schedule_delay``. It is imported as one ``request_rate`` row with
  no rate and a warning: it is not one load point and should not be fitted with
  the stage rows.
* **Prometheus report** (``*_prometheus_metrics.json``): server-side statistics
  scraped from the model server. Framework-internal gauges go to ``fw_`` columns
  (``fw_kv_cache_usage_pct``, ``fw_queue_len``, ``fw_num_preemptions_total``,
  ``fw_prefix_cache_hit_pct``, ``fw_num_requests_swapped``). Its
  ``prompt_len.mean``/``output_len.mean`` are Prometheus aggregates, not
  per-request means, so mean lengths are taken as token rate / request rate and a
  warning says so; the throughputs are the server's rates over its scrape window.

The stage index is not written inside the files (only in their names), so
``source_row`` is 1 and the stage goes to provenance when the caller knows it.
Times: none are recorded, so ``timestamp`` stays empty. Nor is the arrival process:
the run's ``load.type`` (``constant``, the default, or ``poisson``) is written only in
its config file, so ``arrival`` stays empty and an info issue says so.
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import ImportFormatError
from .base import Importer, ImportMeta, Issue, Parsed, Sample, records_frame, register, stat_columns
from .lengths import MEAN_LENGTHS

__all__ = ["InferencePerfImporter", "LATENCY_KEYS", "PROMETHEUS_FW_COLUMNS"]

#: canonical latency stem -> inference-perf latency key (all in seconds).
LATENCY_KEYS = {
    "e2e_latency": "request_latency",
    "ttft": "time_to_first_token",
    "tpot": "time_per_output_token",
    "itl": "inter_token_latency",
}

#: Prometheus report key -> fw_ column (values are server-side means over the stage).
PROMETHEUS_FW_COLUMNS = {
    "kv_cache_usage_percentage": "fw_kv_cache_usage_pct",
    "queue_len": "fw_queue_len",
    "num_preemptions_total": "fw_num_preemptions_total",
    "prefix_cache_hit_percent": "fw_prefix_cache_hit_pct",
    "num_requests_swapped": "fw_num_requests_swapped",
}

_ACHIEVED_SHORTFALL_WARN = 0.05


def _kind(doc: Any) -> str | None:
    """``stage``, ``summary``, ``prometheus`` or None."""
    if not isinstance(doc, dict) or "load_summary" not in doc or not isinstance(doc.get("successes"), dict):
        return None
    succ = doc["successes"]
    ls = doc.get("load_summary")
    if isinstance(succ.get("latency"), dict) and isinstance(succ.get("throughput"), dict):
        if isinstance(ls, dict) and ("requested_rate" in ls or "achieved_rate" in ls):
            return "stage"
        return "summary"
    if "rate" in succ and any(k in succ for k in PROMETHEUS_FW_COLUMNS):
        return "prometheus"
    return None


def _num(v: Any) -> float | None:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    return None


@register
class InferencePerfImporter(Importer):
    """inference-perf lifecycle (per stage or summary) and Prometheus reports."""

    name = "inference-perf"
    label = "inference-perf report"
    description = ("kubernetes-sigs/inference-perf stage_<n>_lifecycle_metrics.json (one rate point), "
                   "summary_lifecycle_metrics.json (whole run) or *_prometheus_metrics.json (server side)")

    def sniff(self, sample: Sample) -> float:
        k = _kind(sample.json_doc)
        return {"stage": 0.95, "summary": 0.9, "prometheus": 0.9}.get(k or "", 0.0)

    def parse(self, sample: Sample, meta: ImportMeta) -> Parsed:
        doc = sample.json_doc
        if doc is None:
            raise ImportFormatError(f"{sample.name}: not readable as JSON; expected an inference-perf report")
        kind = _kind(doc)
        if kind is None:
            raise ImportFormatError(
                f"{sample.name}: expected an inference-perf report with 'load_summary' and 'successes' "
                "(lifecycle: successes.latency and successes.throughput; Prometheus: successes.rate)")
        if kind == "prometheus":
            return self._prometheus(doc, sample.name)
        return self._lifecycle(doc, sample.name, kind, meta)

    @staticmethod
    def _failures(doc: dict[str, Any]) -> Any:
        fail = doc.get("failures")
        if isinstance(fail, dict):
            return fail.get("count", 0) if fail else 0
        return 0 if fail is None else fail

    def _lifecycle(self, doc: dict[str, Any], file: str, kind: str, meta: ImportMeta) -> Parsed:
        succ = doc["successes"]
        ls = doc.get("load_summary") or {}
        issues: list[Issue] = []
        row: dict[str, Any] = {"source_row": 1, "load_kind": "request_rate"}
        prov: dict[str, Any] = {"client": "inference-perf", "report": f"{kind} lifecycle"}
        if kind == "stage":
            requested, achieved = ls.get("requested_rate"), ls.get("achieved_rate")
            row["request_rate_rps"] = requested
            prov.update(requested_rate_rps=requested, achieved_rate_rps=achieved,
                        send_duration_s=ls.get("send_duration"), n_sent=ls.get("count"))
            if meta.arrival is None:  # given, it fills the column (base._fill_arrival): nothing to say
                issues.append(Issue(file, 1, "arrival", "the report does not record the arrival process (the "
                                    "run's load.type, constant or poisson, is only in its config); arrival left "
                                    "empty (pass --arrival)", "info"))
            r, a = _num(requested), _num(achieved)
            if r and a is not None and a < r * (1 - _ACHIEVED_SHORTFALL_WARN):
                issues.append(Issue(file, 1, "request_rate_rps",
                                    f"the load generator achieved {a:.4g} req/s of the requested {r:.4g} req/s: "
                                    "the requested rate was not delivered (client-side saturation)", "warning"))
        else:
            issues.append(Issue(file, 1, "request_rate_rps",
                                "summary lifecycle report: statistics pooled over every stage of the run, not "
                                "one load point; imported without a request rate (import the "
                                "stage_<n>_lifecycle_metrics.json files for the rate curve)", "warning"))
            prov["n_sent"] = ls.get("count")
        row["n_requests"] = succ.get("count")
        row["n_failed"] = self._failures(doc)
        tp = succ["throughput"]
        row["output_throughput_tok_s"] = tp.get("output_tokens_per_sec")
        row["total_throughput_tok_s"] = tp.get("total_tokens_per_sec")
        row["request_throughput_rps"] = tp.get("requests_per_sec")
        row["throughput_basis"] = "output+total"
        row["input_len_tok"] = (succ.get("prompt_len") or {}).get("mean")
        row["output_len_tok"] = (succ.get("output_len") or {}).get("mean")
        prov[MEAN_LENGTHS] = True
        lat = succ["latency"]
        for stem, key in LATENCY_KEYS.items():
            st = lat.get(key)
            if not isinstance(st, dict):
                continue
            row.update(stat_columns(stem, st, p50=("median", "p50")))
        return Parsed(runs=records_frame([row]), issues=issues, provenance=prov)

    def _prometheus(self, doc: dict[str, Any], file: str) -> Parsed:
        succ = doc["successes"]
        issues: list[Issue] = []
        row: dict[str, Any] = {"source_row": 1, "load_kind": "request_rate"}
        rate = _num(succ.get("rate"))
        row["request_throughput_rps"] = succ.get("rate")
        row["n_requests"] = succ.get("count")
        if isinstance(doc.get("failures"), dict) and "count" in doc["failures"]:
            row["n_failed"] = doc["failures"]["count"]
        p_rate = _num((succ.get("prompt_len") or {}).get("rate"))
        o_rate = _num((succ.get("output_len") or {}).get("rate"))
        if o_rate is not None:
            row["output_throughput_tok_s"] = o_rate
        if o_rate is not None and p_rate is not None:
            row["total_throughput_tok_s"] = o_rate + p_rate
            row["throughput_basis"] = "output+total"
        else:
            row["throughput_basis"] = "output" if o_rate is not None else "none"
        if rate and rate > 0 and math.isfinite(rate):
            if p_rate is not None:
                row["input_len_tok"] = p_rate / rate
            if o_rate is not None:
                row["output_len_tok"] = o_rate / rate
        issues.append(Issue(file, 1, "input_len_tok",
                            "Prometheus report: prompt_len.mean / output_len.mean are Prometheus aggregates "
                            f"({(succ.get('prompt_len') or {}).get('mean')!r} / "
                            f"{(succ.get('output_len') or {}).get('mean')!r}), not per-request means; mean "
                            "lengths taken as token rate / request rate instead", "warning"))
        issues.append(Issue(file, 1, None,
                            "Prometheus report: server-side statistics over the scrape window; the report "
                            "does not say the offered request rate (left empty) and its rates can differ "
                            "from the client's lifecycle report of the same stage", "warning"))
        for stem, key in LATENCY_KEYS.items():
            st = succ.get(key)
            if not isinstance(st, dict):
                continue
            row.update(stat_columns(stem, st, p50=("median",)))
        for key, col in PROMETHEUS_FW_COLUMNS.items():
            st = succ.get(key)
            if isinstance(st, dict) and "mean" in st:
                row[col] = st["mean"]
        prov = {"client": "inference-perf", "report": "prometheus",
                "prometheus_prompt_len_mean": (succ.get("prompt_len") or {}).get("mean"),
                "prometheus_output_len_mean": (succ.get("output_len") or {}).get("mean")}
        return Parsed(runs=records_frame([row]), issues=issues, provenance=prov)
