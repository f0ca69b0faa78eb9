"""NVIDIA genai-perf exports: ``profile_export_genai_perf.json`` and ``..._genai_perf.csv``.

**JSON**: one metric object per metric, ``{unit, avg, min, max, std, p25, p50,
p75, p90, p95, p99}`` (``time_to_first_token``, ``inter_token_latency``,
``request_latency`` in ms; ``output_token_throughput`` tokens/sec;
``request_throughput`` per sec; ``input_sequence_length``/``output_sequence_length``
tokens), and ``input_config`` with the arguments: model (``model`` or
``model_names``) and the load, flat (``concurrency``, ``request_rate``, genai-perf
<= 0.0.12) or as ``perf_analyzer.stimulus{concurrency | request_rate}`` (newer).

**CSV**: two blocks separated by a blank line: per-request statistics
``Metric,avg,min,max,p99,p95,p90,p75,p50,p25,...`` (metric names in Title Case
with the unit: "Time To First Token (ms)") and ``Metric,Value`` (Output Token
Throughput (tokens/sec), Request Throughput (per sec), Request Count (count));
values may carry thousands separators ("1,234.56") and "N/A".

Mapping is shared with AIPerf (its successor, same metric names):
"Inter Token Latency" is genai-perf's per-request ``(latency - TTFT) / (OSL - 1)``
and fills ``tpot_*``. genai-perf reports output throughput only
(``throughput_basis = "output"``; the total follows from the mean lengths in
:func:`~perfmodel.importers.base.finalize`). As with the AIPerf CSV, the CSV does
not record the load setting: it must come from the user (see
:func:`perfmodel.importers.aiperf.load_from_meta`), else a clear error is raised.

No real genai-perf export was available; the tests use small files written from
genai-perf 0.0.16's exporters (``json_exporter.py``, ``csv_exporter.py``).
"""

from __future__ import annotations

from typing import Any

from ..errors import ImportFormatError
from .aiperf import (
    SUPPLY_CONCURRENCY,
    csv_blocks,
    is_aiperf_json,
    is_metrics_json,
    json_metrics,
    load_from_input_config,
    load_from_meta,
    metric_table,
    metrics_row,
)
from .base import Importer, ImportMeta, Issue, Parsed, Sample, records_frame, register

__all__ = ["GenAIPerfImporter"]

_GENAI_PERF_CONFIG_KEYS = ("model_names", "model", "perf_analyzer", "service_kind", "endpoint_type",
                           "concurrency", "request_rate")


@register
class GenAIPerfImporter(Importer):
    """genai-perf ``profile_export_genai_perf.json`` / ``.csv``."""

    name = "genai-perf"
    label = "genai-perf export"
    description = ("NVIDIA genai-perf profile_export_genai_perf.json / .csv: one row per export; the CSV "
                   "needs the load setting from the user")
    has_hardware = False
    has_model = True

    def sniff(self, sample: Sample) -> float:
        if sample.is_binary:
            return 0.0
        hdr = sample.csv_header
        if hdr is not None:
            low = [h.lower() for h in hdr]
            return 0.9 if low[:5] == ["metric", "avg", "min", "max", "p99"] else 0.0
        doc = sample.json_doc
        if not is_metrics_json(doc) or is_aiperf_json(doc):
            return 0.0
        cfg = doc.get("input_config")
        if isinstance(cfg, dict) and any(k in cfg for k in _GENAI_PERF_CONFIG_KEYS):
            return 0.9
        return 0.5

    def parse(self, sample: Sample, meta: ImportMeta) -> Parsed:
        file = sample.name
        issues: list[Issue] = []
        user = load_from_meta(meta)
        prov: dict[str, Any] = {"client": "genai-perf"}
        if sample.first_char in ("{", "["):
            doc = sample.json_doc
            if doc is None:
                raise ImportFormatError(f"{file}: not readable as JSON; expected profile_export_genai_perf.json")
            if not is_metrics_json(doc):
                raise ImportFormatError(f"{file}: expected genai-perf metric objects such as "
                                        "'request_latency': {unit, avg, p50, ...} at the top level")
            row = metrics_row(json_metrics(doc), file, issues)
            load, extra = load_from_input_config(doc.get("input_config"))
            prov["export"] = "json"
            if "model_raw" in extra:
                row["model_raw"] = extra["model_raw"]
            for k in ("models", "max_concurrency"):
                if k in extra:
                    prov[k] = extra[k]
            cfg = doc.get("input_config")
            if isinstance(cfg, dict):
                for k in ("endpoint_type", "service_kind", "backend", "subcommand"):
                    if isinstance(cfg.get(k), str):
                        prov[k] = cfg[k]
                if cfg.get("service_kind") == "triton" and isinstance(cfg.get("backend"), str):
                    row["framework"] = cfg["backend"]  # Triton's engine: tensorrtllm or vllm
                ep = cfg.get("endpoint")
                if isinstance(ep, dict):
                    prov["endpoint"] = {k: ep[k] for k in ("type", "service_kind", "streaming", "url")
                                        if k in ep}
        else:
            metrics: dict[str, dict[str, Any]] = {}
            for block in csv_blocks(sample.text):
                if block and block[0] and block[0][0].lower() == "metric":
                    metrics.update(metric_table(block, file, issues))
            if "request latency" not in metrics and "time to first token" not in metrics:
                raise ImportFormatError(f"{file}: expected genai-perf's statistics table (rows 'Request "
                                        "Latency (ms)', 'Time To First Token (ms)', ...) but found none")
            row = metrics_row(metrics, file, issues)
            load, prov["export"] = {}, "csv"
        if user and not load:
            # The file's own setting wins; finalize reports a supplied value that differs.
            load = user
            prov["load_from"] = "user"
        if not load:
            raise ImportFormatError(
                f"{file}: the genai-perf export does not record the load setting (concurrency or request "
                "rate), so its point cannot be placed on a load curve. Import profile_export_genai_perf.json "
                "(its input_config has the setting) or " + SUPPLY_CONCURRENCY + ".")
        row.update(load)
        return Parsed(runs=records_frame([row]), issues=issues, provenance=prov)
