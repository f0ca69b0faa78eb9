"""NVIDIA AIPerf exports: ``profile_export_aiperf.csv`` and ``profile_export_aiperf.json``.

**CSV** (CRLF, blocks separated by blank lines): (1) a per-request statistics
table, header ``Metric,avg,min,max,sum,p1,...,p99,std``, the unit in the metric
name ("Time to First Token (ms)"); (2) run aggregates, header ``Metric,Value``
(Request Count, Request Throughput (requests/sec), Output/Total Token Throughput
(tokens/sec), Benchmark Duration (sec), ...); (3) GPU telemetry per GPU, header
``Endpoint,GPU_Index,GPU_Name,GPU_UUID,Metric,avg,...`` (often empty). When the
telemetry block names one GPU model it becomes ``hardware_raw`` and the summed
mean ``GPU Power Usage`` becomes ``power_w``.

**JSON** (``schema_version`` 1.x): the same metrics as objects ``{unit, avg,
p50, p90, p99, ...}`` at the top level, plus ``input_config``: model and load
setting (``loadgen{concurrency, request_rate}`` in early releases,
``models{items[{name}]}`` and ``phases[{type, concurrency, rate}]`` from 0.10). A
request-rate load's arrival process is ``loadgen.request_rate_mode`` (early) or
the phase ``type`` (0.10): ``constant`` or ``poisson`` fill ``arrival``.

Mapping: AIPerf's "Inter Token Latency" is per request ``(latency - TTFT) /
(OSL - 1)``, i.e. TPOT, so it fills ``tpot_*``; "Inter Chunk Latency" (gaps
between streamed chunks) fills ``itl_*``. ``measured_concurrency`` is the
time-average of requests in flight, sum of request latencies / benchmark
duration (Little's law over the run). Both output and total throughput are
reported: ``throughput_basis = "output+total"``.

**The load setting.** The CSV does not record the concurrency or request rate
(only the folder or file name does, which an importer must not trust). Nothing
is guessed: the load comes from the JSON's ``input_config``, or from what the
user supplies (an ``ImportMeta`` field ``concurrency``, or ``batch_size``/
``request_rate_rps``, once the shared ``ImportMeta`` has one; read with
``getattr`` so this module needs no change then). Without it a CSV cannot be
placed on a load curve, and :meth:`AIPerfImporter.parse` raises a clear
:class:`~perfmodel.errors.ImportFormatError` naming what to supply.
"""

from __future__ import annotations

import csv
import io
import math
import re
from typing import Any

from ..errors import ImportFormatError
from .base import Importer, ImportMeta, Issue, Parsed, Sample, dig, records_frame, register

__all__ = [
    "AIPerfImporter",
    "csv_blocks",
    "metric_table",
    "metrics_row",
    "load_from_meta",
    "load_from_input_config",
    "is_metrics_json",
    "is_aiperf_json",
    "json_metrics",
    "UNIT_TO_S",
]

#: Time unit as written by AIPerf / genai-perf -> seconds.
UNIT_TO_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0, "secs": 1.0}

# canonical latency stem -> metric name (lower case, unit removed).
_LATENCY_NAMES = {
    "e2e_latency": "request latency",
    "ttft": "time to first token",
    "tpot": "inter token latency",
    "itl": "inter chunk latency",
}
_PCTS = ("p50", "p90", "p99")
_LABEL_RE = re.compile(r"^(.*?)\s*\(([^()]*)\)\s*$")
_AIPERF_HEADER = ["metric", "avg", "min", "max", "sum"]
_TELEMETRY_HEADER = ["endpoint", "gpu_index", "gpu_name"]


def csv_blocks(text: str) -> list[list[list[str]]]:
    """Split a multi-table CSV export into blocks (separated by blank lines) of rows."""
    blocks: list[list[list[str]]] = []
    cur: list[str] = []
    for line in text.splitlines():
        if line.strip():
            cur.append(line)
        elif cur:
            blocks.append(cur)
            cur = []
    if cur:
        blocks.append(cur)
    return [[[c.strip() for c in row] for row in csv.reader(io.StringIO("\n".join(b)))] for b in blocks]


def _split_label(label: str) -> tuple[str, str]:
    m = _LABEL_RE.match(label)
    if m:
        return m.group(1).strip().lower(), m.group(2).strip()
    return label.strip().lower(), ""


def _cell(v: str) -> Any:
    """A CSV cell as a number; genai-perf writes thousands separators ("1,234.56") and "N/A"."""
    s = v.strip().replace(",", "")
    if s in ("", "N/A", "n/a", "None", "null"):
        return None
    try:
        return float(s)
    except ValueError:
        return v  # left as text: schema coercion names the row and column


def metric_table(block: list[list[str]], file: str,
                 issues: list[Issue] | None = None) -> dict[str, dict[str, Any]]:
    """A ``Metric,stat1,stat2,...`` (or ``Metric,Value``) block as ``{name: {"unit", stat: value}}``.

    Parameters
    ----------
    block
        Rows of the block, header first.
    file
        File name for messages.
    issues
        Where a metric row with fewer cells than the header (a file cut off mid-row: its
        last cell may be cut too) is reported as an ``error`` naming the metric and the
        missing columns; the metric is left out. None: such a row raises instead.

    Returns
    -------
    dict
        Metric name (lower case, unit removed) -> ``{"unit": unit, "avg": ..., "p50": ...}``;
        a ``Metric,Value`` table gives ``{"unit": unit, "avg": value}``.

    Raises
    ------
    ImportFormatError
        When a row has more cells than the header, or fewer and ``issues`` is None.
    """
    header = [h.lower() for h in block[0]]
    stats = ["avg" if h == "value" else h for h in header[1:]]
    out: dict[str, dict[str, Any]] = {}
    for n, row in enumerate(block[1:], start=2):
        if not row or not row[0]:
            continue
        if len(row) > len(header):
            raise ImportFormatError(f"{file}: metric row {row[0]!r} has {len(row)} cells but its table "
                                    f"header has {len(header)} (line {n} of the block)")
        if len(row) < len(header):
            msg = (f"metric row {row[0]!r} has {len(row)} cells but its table header has {len(header)} (line {n} "
                   "of the block; a short or truncated row): no value for column(s) "
                   + ", ".join(repr(h) for h in block[0][len(row):]) + "; the metric is left out")
            if issues is None:
                raise ImportFormatError(f"{file}: {msg}")
            issues.append(Issue(file, None, row[0], msg))
            continue
        name, unit = _split_label(row[0])
        entry: dict[str, Any] = {"unit": unit}
        for stat, v in zip(stats, row[1:], strict=False):
            entry[stat] = _cell(v)
        out[name] = entry
    return out


def _num(v: Any) -> float | None:
    if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
        return float(v)
    return None


def _to_s(v: Any, unit: str, name: str, file: str, issues: list[Issue]) -> Any:
    factor = UNIT_TO_S.get(unit.strip().lower()) if unit else 1e-3
    if factor is None:
        issues.append(Issue(file, 1, None, f"{name}: unknown time unit {unit!r}; expected one of "
                            + ", ".join(UNIT_TO_S) + " (value left out)", "warning"))
        return None
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return v * factor
    return v


def metrics_row(metrics: dict[str, dict[str, Any]], file: str, issues: list[Issue]) -> dict[str, Any]:
    """One canonical row from AIPerf/genai-perf metrics keyed by lower-case name without unit.

    Shared by the AIPerf and genai-perf importers (JSON tags like
    ``time_to_first_token`` are passed with underscores replaced by spaces).

    Parameters
    ----------
    metrics
        ``{name: {"unit": ..., "avg": ..., "p50": ..., ...}}``.
    file
        File name for issues.
    issues
        Appended to when a unit is not understood.

    Returns
    -------
    dict
        Canonical columns (latencies in seconds); the load setting is not included.
    """
    row: dict[str, Any] = {"source_row": 1}

    def avg(name: str) -> Any:
        m = metrics.get(name)
        return m.get("avg") if isinstance(m, dict) else None

    for stem, name in _LATENCY_NAMES.items():
        m = metrics.get(name)
        if not isinstance(m, dict):
            continue
        unit = str(m.get("unit") or "ms")
        row[f"{stem}_s"] = _to_s(m.get("avg"), unit, name, file, issues)
        for p in _PCTS:
            if m.get(p) is not None:
                row[f"{stem}_{p}_s"] = _to_s(m.get(p), unit, name, file, issues)
    row["input_len_tok"] = avg("input sequence length")
    row["output_len_tok"] = avg("output sequence length")
    row["request_throughput_rps"] = avg("request throughput")
    row["output_throughput_tok_s"] = avg("output token throughput")
    tot = avg("total token throughput")
    if tot is not None:
        row["total_throughput_tok_s"] = tot
    reported = [row["output_throughput_tok_s"] is not None, tot is not None]
    row["throughput_basis"] = {(True, True): "output+total", (True, False): "output",
                               (False, True): "total"}.get((reported[0], reported[1]), "none")
    count = avg("request count")
    if count is not None:
        row["n_requests"] = count
    errors = avg("error request count")
    if errors is not None:
        row["n_failed"] = errors
    lat = metrics.get("request latency")
    dur_s = avg("benchmark duration")
    if isinstance(lat, dict) and _num(lat.get("sum")) is not None and _num(dur_s) and dur_s > 0:
        factor = UNIT_TO_S.get(str(lat.get("unit") or "ms").lower())
        if factor is not None:
            # Little's law over the run: time-average of requests in flight.
            row["measured_concurrency"] = lat["sum"] * factor / dur_s
    return row


SUPPLY_CONCURRENCY = ("supply the concurrency: --batch-size N (CLI, read as the concurrency) or the upload form's "
                      "Batch size / concurrency")
"""How a user gives an AIPerf or genai-perf CSV its load setting, in both clients."""


def load_from_meta(meta: ImportMeta) -> dict[str, Any]:
    """The load setting the user supplied, if the shared ImportMeta carries one.

    Reads ``concurrency``/``batch_size`` (closed loop) and ``request_rate_rps``
    (open loop) with ``getattr`` so that it works as soon as those fields exist.

    Returns
    -------
    dict
        ``load_kind`` plus ``batch_size`` or ``request_rate_rps``; empty when nothing was supplied.
    """
    conc = getattr(meta, "concurrency", None) or getattr(meta, "batch_size", None)
    rate = getattr(meta, "request_rate_rps", None)
    if conc is not None:
        return {"load_kind": "concurrency", "batch_size": conc}
    if rate is not None:
        return {"load_kind": "request_rate", "request_rate_rps": rate}
    return {}


def _arrival(mode: Any) -> dict[str, Any]:
    """``arrival`` (and a Poisson process's ``burstiness`` 1) from AIPerf's ``loadgen.request_rate_mode`` or a
    rate phase's ``type``; empty for anything else (``concurrency_burst``, an absent or unknown mode)."""
    m = str(mode).strip().lower() if isinstance(mode, str) else ""
    if m == "poisson":
        return {"arrival": "poisson", "burstiness": 1.0}
    if m == "constant":
        return {"arrival": "constant"}
    return {}


def load_from_input_config(cfg: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Load setting and model from an AIPerf or genai-perf ``input_config``.

    Returns
    -------
    (load, extra)
        ``load`` as in :func:`load_from_meta` (empty when unknown), with ``arrival`` where AIPerf
        records it (``loadgen.request_rate_mode`` or a rate phase's ``type``: constant or poisson); ``extra`` may hold
        ``model_raw`` and ``max_concurrency`` (a cap on an open loop, for provenance).
    """
    load: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    if not isinstance(cfg, dict):
        return load, extra
    # --- model: aiperf 0.10 models.items[].name; early aiperf endpoint.model_names;
    # genai-perf model_names / model (list or str)
    names: Any = None
    items = dig(cfg, "models", "items")
    if isinstance(items, list) and items and isinstance(items[0], dict):
        names = [it.get("name") for it in items]
    for cand in (cfg.get("models"), dig(cfg, "endpoint", "model_names"), cfg.get("model_names"),
                 cfg.get("model")):
        if names is None and cand:
            names = cand
    if isinstance(names, str):
        names = [names]
    if isinstance(names, list) and names and isinstance(names[0], str):
        extra["model_raw"] = names[0]
        if len(names) > 1:
            extra["models"] = names
    # --- load: aiperf loadgen{}, genai-perf perf_analyzer.stimulus{}, flat genai-perf keys
    sources = [cfg.get("loadgen"), dig(cfg, "perf_analyzer", "stimulus"), cfg]
    for src in sources:
        if not isinstance(src, dict):
            continue
        rate, conc = src.get("request_rate"), src.get("concurrency")
        if _num(rate) is not None and rate > 0:
            load = {"load_kind": "request_rate", "request_rate_rps": rate,
                    **_arrival(src.get("request_rate_mode"))}
            if _num(conc) is not None:
                extra["max_concurrency"] = conc
            break
        if _num(conc) is not None and conc > 0:
            load = {"load_kind": "concurrency", "batch_size": conc}
            break
    if not load:
        phases = cfg.get("phases")
        if isinstance(phases, list):
            measured = [p for p in phases if isinstance(p, dict) and not p.get("exclude_from_results")
                        and str(p.get("name", "")).lower() != "warmup"]
            if measured:
                p = measured[-1]
                ptype = str(p.get("type", "")).lower()
                if ptype == "concurrency" and _num(p.get("concurrency")) is not None:
                    load = {"load_kind": "concurrency", "batch_size": p["concurrency"]}
                elif _num(p.get("rate")) is not None:
                    load = {"load_kind": "request_rate", "request_rate_rps": p["rate"], **_arrival(ptype)}
                    if _num(p.get("concurrency")) is not None:
                        extra["max_concurrency"] = p["concurrency"]
    return load, extra


_JSON_MARKERS = ("time_to_first_token", "request_latency", "request_throughput", "output_token_throughput")


def is_metrics_json(doc: Any) -> bool:
    return isinstance(doc, dict) and sum(isinstance(doc.get(k), dict) and "avg" in doc[k]
                                         for k in _JSON_MARKERS) >= 2


def is_aiperf_json(doc: Any) -> bool:
    """True for an AIPerf profile_export_aiperf.json (not a genai-perf export)."""
    if not is_metrics_json(doc):
        return False
    cfg = doc.get("input_config")
    return "aiperf_version" in doc or "schema_version" in doc or (
        isinstance(cfg, dict) and any(k in cfg for k in ("loadgen", "phases", "models")))


def json_metrics(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Top-level metric objects of an AIPerf/genai-perf JSON, keyed like :func:`metrics_row` expects."""
    return {k.replace("_", " "): v for k, v in doc.items() if isinstance(v, dict) and "avg" in v}


@register
class AIPerfImporter(Importer):
    """AIPerf ``profile_export_aiperf.csv`` (three blocks) and ``profile_export_aiperf.json``."""

    name = "aiperf"
    label = "AIPerf export"
    description = ("NVIDIA AIPerf profile_export_aiperf.csv / .json: one row per export; the CSV needs the "
                   "load setting (concurrency or rate) from the user")
    has_hardware = False
    has_model = True
    model_in_file_note = "JSON only"  # the CSV export does not name the model

    def sniff(self, sample: Sample) -> float:
        if sample.is_binary:
            return 0.0
        hdr = sample.csv_header
        if hdr is not None:
            low = [h.lower() for h in hdr]
            if low[:5] == _AIPERF_HEADER and "std" in low:
                return 0.95
            return 0.0
        return 0.95 if is_aiperf_json(sample.json_doc) else 0.0

    def parse(self, sample: Sample, meta: ImportMeta) -> Parsed:
        if sample.first_char in ("{", "["):
            return self._parse_json(sample, meta)
        return self._parse_csv(sample, meta)

    def _parse_csv(self, sample: Sample, meta: ImportMeta) -> Parsed:
        file = sample.name
        blocks = csv_blocks(sample.text)
        issues: list[Issue] = []
        metrics: dict[str, dict[str, Any]] = {}
        telemetry: list[list[str]] | None = None
        for block in blocks:
            head = [h.lower() for h in block[0]]
            if head[:3] == _TELEMETRY_HEADER:
                telemetry = block
            elif head and head[0] == "metric":
                metrics.update(metric_table(block, file, issues))
        if "request latency" not in metrics and "time to first token" not in metrics:
            raise ImportFormatError(f"{file}: expected AIPerf's per-request table (rows 'Request Latency (ms)', "
                                    "'Time to First Token (ms)', ...) but found none")
        row = metrics_row(metrics, file, issues)
        prov: dict[str, Any] = {"client": "aiperf", "export": "csv"}
        if telemetry is not None:
            self._telemetry(telemetry, row, prov, file)
        load = load_from_meta(meta)
        if not load:
            raise ImportFormatError(
                f"{file}: an AIPerf CSV export does not record the load setting (concurrency or request "
                "rate), so its point cannot be placed on a load curve and nothing is guessed from the file "
                "name. Import the profile_export_aiperf.json written beside it (its input_config has the "
                "setting), or " + SUPPLY_CONCURRENCY + ".")
        row.update(load)
        prov["load_from"] = "user"
        return Parsed(runs=records_frame([row]), issues=issues, provenance=prov)

    @staticmethod
    def _telemetry(block: list[list[str]], row: dict[str, Any], prov: dict[str, Any], file: str) -> None:
        head = [h.lower() for h in block[0]]
        try:
            i_name, i_metric, i_avg = head.index("gpu_name"), head.index("metric"), head.index("avg")
        except ValueError:
            return
        i_idx = head.index("gpu_index")
        names: set[str] = set()
        power_w = 0.0
        n_power = 0
        gpus: set[tuple[str, str]] = set()
        for r in block[1:]:
            if len(r) <= max(i_name, i_metric, i_avg):
                continue
            names.add(r[i_name])
            gpus.add((r[0], r[i_idx]))
            label, unit = _split_label(r[i_metric])
            val = _cell(r[i_avg])
            if label == "gpu power usage" and unit.upper() == "W" and isinstance(val, float):
                power_w += val
                n_power += 1
        if names:
            prov["gpu_names"] = sorted(names)
            prov["n_gpus_monitored"] = len(gpus)
        if len(names) == 1:
            row["hardware_raw"] = next(iter(names))
        if n_power:
            row["power_w"] = power_w

    def _parse_json(self, sample: Sample, meta: ImportMeta) -> Parsed:
        file = sample.name
        doc = sample.json_doc
        if doc is None:
            raise ImportFormatError(f"{file}: not readable as JSON; expected profile_export_aiperf.json")
        if not is_metrics_json(doc):
            raise ImportFormatError(f"{file}: expected AIPerf metric objects such as "
                                    "'request_latency': {unit, avg, p50, ...} at the top level")
        issues: list[Issue] = []
        row = metrics_row(json_metrics(doc), file, issues)
        load, extra = load_from_input_config(doc.get("input_config"))
        user = load_from_meta(meta)
        prov: dict[str, Any] = {"client": "aiperf", "export": "json"}
        for k in ("aiperf_version", "schema_version", "benchmark_id", "start_time", "end_time",
                  "was_cancelled"):
            if k in doc:
                prov["client_version" if k == "aiperf_version" else k] = doc[k]
        if "model_raw" in extra:
            row["model_raw"] = extra["model_raw"]
        for k in ("models", "max_concurrency"):
            if k in extra:
                prov[k] = extra[k]
        if user and not load:
            # The file's own setting wins; finalize reports a supplied value that differs.
            load = user
            prov["load_from"] = "user"
        if not load:
            raise ImportFormatError(f"{file}: input_config does not say the concurrency or request rate "
                                    "(expected loadgen.concurrency / request_rate or phases[].concurrency / "
                                    "rate); supply the concurrency")
        row.update(load)
        # start_time is written as naive *local* time of the client machine: provenance only.
        if doc.get("was_cancelled"):
            issues.append(Issue(file, 1, None, "the AIPerf run was cancelled before it finished", "warning"))
        return Parsed(runs=records_frame([row]), issues=issues, provenance=prov)
