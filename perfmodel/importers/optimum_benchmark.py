"""Hugging Face optimum-benchmark results (inference scenario).

optimum-benchmark writes two files per run into one folder:

* ``benchmark_report.json``: phases ``load_model``, ``prefill``, ``decode``,
  ``per_token``, each ``{memory, latency{unit "s", mean, p50, p90, p95, p99,
  count, values[]}, throughput{unit, value} | null, energy, efficiency}``.
  Prefill throughput is in **samples/s** (batches × batch size per second, not
  tokens); decode throughput is in **tokens/s** (all sequences of the batch).
* ``benchmark_config.json``: ``backend{name, model, device_ids, torch_dtype,
  quantization_scheme, ...}``, ``scenario{input_shapes{batch_size,
  sequence_length}, generate_kwargs{max_new_tokens, min_new_tokens}}``,
  ``environment{gpu[], optimum_benchmark_version, transformers_version, ...}``.
  The combined ``benchmark.json`` holds both as ``{"config": ..., "report": ...}``.

The report alone does not say the prompt length or the model, so a report is
read together with its config: (1) a combined ``benchmark.json`` or a report
with an embedded ``config``; (2) a report file on disk whose sibling config
follows optimum-benchmark's own naming (``benchmark_report`` replaced by
``benchmark_config`` in the same folder; its content is checked, and the
pairing is recorded as an info issue and in provenance); (3)
:func:`read_report_with_config` for two files given explicitly (uploads). A
report without any config raises a clear error saying what is missing, and so
does a config imported alone (it holds no measurement).

One row, ``load_kind = "static_batch"``: ``batch_size`` and
``input_len_tok = sequence_length`` from the config, ``output_len_tok =
max_new_tokens`` (min = max in a benchmark; a warning if not);
``output_throughput_tok_s`` = the decode throughput as reported
(``throughput_basis = "output"``; it excludes the prefill time); ``ttft_*`` =
prefill latency (the first token of a static batch comes out of the prefill
forward); ``tpot_*`` = per-token latency; ``e2e_latency_s`` = prefill + decode
mean. Framework-internal extras: ``fw_prefill_throughput_samples_s`` (as
reported), ``fw_prefill_throughput_tok_s`` (= samples/s × sequence_length, only
because the config gives the sequence length), ``fw_max_allocated_mb`` and
``fw_max_reserved_mb`` (torch allocator peaks of the decode phase).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path
from typing import Any

from ..errors import ImportFormatError
from .base import (
    Importer,
    ImportMeta,
    ImportResult,
    Issue,
    Parsed,
    Sample,
    dig,
    finalize,
    loads_lenient,
    records_frame,
    refuse_unread_meta,
    register,
    stat_columns,
)

__all__ = ["OptimumBenchmarkImporter", "read_report_with_config", "is_report", "is_config"]

_PHASES = ("prefill", "decode", "per_token")
# backend.name -> framework, where the backend is not the engine's own name.
_BACKEND_FRAMEWORKS = {"pytorch": "transformers", "py-txi": "tgi", "llama_cpp": "llama.cpp"}


def is_report(doc: Any) -> bool:
    """True for an optimum-benchmark ``benchmark_report.json`` object (phases at the top)."""
    return isinstance(doc, dict) and isinstance(doc.get("decode"), dict) and \
        isinstance(doc["decode"].get("latency"), dict) and ("prefill" in doc or "per_token" in doc)


def is_config(doc: Any) -> bool:
    """True for an optimum-benchmark ``benchmark_config.json`` object."""
    return isinstance(doc, dict) and isinstance(doc.get("backend"), dict) and \
        isinstance(doc.get("scenario"), dict) and "launcher" in doc


def _split(doc: Any) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(report, config) found in one JSON document."""
    if is_report(doc):
        cfg = doc.get("config")
        return doc, cfg if is_config(cfg) else None
    if isinstance(doc, dict) and is_report(doc.get("report")):
        cfg = doc.get("config")
        return doc["report"], cfg if is_config(cfg) else None
    if is_config(doc):
        return None, doc
    return None, None


def _sibling_config(path: Path) -> Path | None:
    if "benchmark_report" not in path.name:
        return None
    cand = path.with_name(path.name.replace("benchmark_report", "benchmark_config"))
    return cand if cand.is_file() else None


def _gpu_name(env: dict[str, Any], device_ids: Any) -> str | None:
    gpus = env.get("gpu")
    if not isinstance(gpus, list) or not gpus:
        return None
    names = [g for g in gpus if isinstance(g, str)]
    # DGX stations list a display adapter among the GPUs.
    compute = [g for g in names if "display" not in g.lower()]
    if not compute:
        return None
    ids = [s.strip() for s in str(device_ids).split(",")] if device_ids is not None else []
    picked = [names[int(i)] for i in ids if i.isdigit() and int(i) < len(names)]
    picked = [g for g in picked if "display" not in g.lower()]
    if picked and len(set(picked)) == 1:
        return picked[0]
    return Counter(compute).most_common(1)[0][0]


def parse_report(report: dict[str, Any], config: dict[str, Any] | None, file: str,
                 config_file: str | None = None) -> Parsed:
    """Rows of one optimum-benchmark report, with its config when known.

    Parameters
    ----------
    report
        The ``benchmark_report.json`` object.
    config
        The matching ``benchmark_config.json`` object, or None.
    file
        Report file name (for messages).
    config_file
        Where the config came from (for provenance), if not the report itself.

    Returns
    -------
    Parsed

    Raises
    ------
    ImportFormatError
        Without a config (the prompt length and batch size are unknown), or when the
        config lacks ``scenario.input_shapes``.
    """
    if config is None:
        raise ImportFormatError(
            f"{file}: an optimum-benchmark benchmark_report.json alone does not say the prompt length, "
            "batch size or model; import it together with the benchmark_config.json written beside it "
            "(same folder), or import the combined benchmark.json")
    issues: list[Issue] = []
    shapes = dig(config, "scenario", "input_shapes")
    if not isinstance(shapes, dict):
        raise ImportFormatError(f"{config_file or file}: benchmark config has no scenario.input_shapes "
                                "{batch_size, sequence_length}")
    gen = dig(config, "scenario", "generate_kwargs") or {}
    backend = config.get("backend") or {}
    env = config.get("environment") or {}
    batch, seq = shapes.get("batch_size"), shapes.get("sequence_length")
    new_max, new_min = gen.get("max_new_tokens"), gen.get("min_new_tokens")
    row: dict[str, Any] = {"source_row": 1, "load_kind": "static_batch", "batch_size": batch,
                           "input_len_tok": seq, "output_len_tok": new_max}
    if new_min is not None and new_max is not None and new_min != new_max:
        issues.append(Issue(file, 1, "output_len_tok",
                            f"min_new_tokens ({new_min}) != max_new_tokens ({new_max}): generation may stop "
                            "early; max_new_tokens used as the output length", "warning"))
    decode = report.get("decode") or {}
    prefill = report.get("prefill") or {}
    per_token = report.get("per_token") or {}
    d_tp = decode.get("throughput") or {}
    if d_tp and str(d_tp.get("unit", "tokens/s")).lower() not in ("tokens/s", "tokens/sec"):
        raise ImportFormatError(f"{file}: decode.throughput.unit is {d_tp.get('unit')!r}; expected 'tokens/s'")
    row["output_throughput_tok_s"] = d_tp.get("value")
    row["throughput_basis"] = "output"
    for stem, phase in (("ttft", prefill), ("tpot", per_token)):
        lat = phase.get("latency")
        if not isinstance(lat, dict):
            continue
        if str(lat.get("unit", "s")) != "s":
            raise ImportFormatError(f"{file}: latency unit {lat.get('unit')!r}; expected 's'")
        row.update(stat_columns(stem, lat))
    p_mean, d_mean = dig(prefill, "latency", "mean"), dig(decode, "latency", "mean")
    if isinstance(p_mean, (int, float)) and isinstance(d_mean, (int, float)):
        row["e2e_latency_s"] = p_mean + d_mean
    n_runs = dig(decode, "latency", "count")
    if isinstance(n_runs, int) and isinstance(batch, int):
        row["n_requests"] = n_runs * batch
    p_tp = prefill.get("throughput") or {}
    if p_tp.get("value") is not None:
        row["fw_prefill_throughput_samples_s"] = p_tp["value"]
        if str(p_tp.get("unit")) == "samples/s" and isinstance(seq, (int, float)):
            row["fw_prefill_throughput_tok_s"] = p_tp["value"] * seq
    for key, col in (("max_allocated", "fw_max_allocated_mb"), ("max_reserved", "fw_max_reserved_mb")):
        v = dig(decode, "memory", key)
        if v is not None and dig(decode, "memory", "unit") == "MB":
            row[col] = v
    # --- identity of the system
    if isinstance(backend.get("model"), str):
        row["model_raw"] = backend["model"]
    if str(backend.get("device", "")).startswith("cuda") or backend.get("device") == "rocm":
        gpu = _gpu_name(env, backend.get("device_ids"))
        if gpu:
            row["hardware_raw"] = gpu
        ids = backend.get("device_ids")
        if ids is not None:
            row["device_count"] = len([s for s in str(ids).split(",") if s.strip()])
    elif isinstance(env.get("cpu"), str):
        row["hardware_raw"] = env["cpu"].strip()
        row["device_count"] = 1
    bname = backend.get("name")
    if isinstance(bname, str):
        fw = _BACKEND_FRAMEWORKS.get(bname, bname)
        row["framework"] = fw
        version = env.get(f"{fw}_version") or backend.get("version")
        if version:
            row["framework_version"] = str(version)
    if backend.get("torch_dtype"):
        row["weight_dtype"] = str(backend["torch_dtype"])
    if backend.get("quantization_scheme"):
        row["quantization"] = str(backend["quantization_scheme"])
    prov: dict[str, Any] = {"client": "optimum-benchmark",
                            "client_version": env.get("optimum_benchmark_version"),
                            "benchmark_name": config.get("name"),
                            "config_from": config_file or "the report itself",
                            "quantization_config": backend.get("quantization_config"),
                            "scenario": {k: dig(config, "scenario", k)
                                         for k in ("iterations", "duration", "warmup_runs")},
                            "environment": {k: env.get(k) for k in ("gpu", "gpu_count", "cpu", "platform",
                                                                    "transformers_version")
                                            if k in env}}
    load = dig(report, "load_model", "latency", "mean")
    if load is not None:
        prov["load_model_s"] = load
    if config_file:
        issues.append(Issue(file, None, None, f"benchmark config read from {config_file}", "info"))
    return Parsed(runs=records_frame([row]), issues=issues, provenance=prov)


@register
class OptimumBenchmarkImporter(Importer):
    """optimum-benchmark ``benchmark_report.json`` (+ its ``benchmark_config.json``) or ``benchmark.json``."""

    name = "optimum-benchmark"
    label = "optimum-benchmark report"
    description = ("Hugging Face optimum-benchmark inference report with its config (same folder, or the "
                   "combined benchmark.json): one static-batch row")
    has_hardware = True
    has_model = True

    def sniff(self, sample: Sample) -> float:
        report, config = _split(sample.json_doc)
        if report is not None:
            return 0.95
        # A config alone is recognised so that the user gets a clear message.
        return 0.9 if config is not None else 0.0

    def parse(self, sample: Sample, meta: ImportMeta) -> Parsed:
        file = sample.name
        doc = sample.json_doc
        if doc is None:
            raise ImportFormatError(f"{file}: not readable as JSON; expected an optimum-benchmark "
                                    "benchmark_report.json")
        report, config = _split(doc)
        if report is None and config is not None:
            raise ImportFormatError(
                f"{file}: this is an optimum-benchmark config (benchmark_config.json), not a result; "
                "import the benchmark_report.json written beside it (the config is read with it)")
        if report is None:
            raise ImportFormatError(f"{file}: expected an optimum-benchmark report with phases "
                                    "'prefill', 'decode', 'per_token' (each with a 'latency' object)")
        config_file = None
        if config is None and sample._data is None:
            sib = _sibling_config(sample.path)
            if sib is not None:
                try:
                    cand = loads_lenient(sib.read_text(encoding="utf-8"))
                except (OSError, UnicodeDecodeError, ValueError) as exc:
                    raise ImportFormatError(f"{file}: its config {sib.name} could not be read ({exc})") from None
                if not is_config(cand):
                    raise ImportFormatError(f"{file}: {sib.name} is not an optimum-benchmark config "
                                            "(expected 'backend', 'scenario' and 'launcher')")
                config, config_file = cand, sib.name
        return parse_report(report, config, file, config_file)


def read_report_with_config(report: str | Path, config: str | Path, *, meta: ImportMeta | None = None,
                            report_data: bytes | None = None, config_data: bytes | None = None,
                            resolve: bool = True) -> ImportResult:
    """Import an optimum-benchmark report together with an explicitly given config.

    For uploads or files not named as optimum-benchmark names them; a report on
    disk next to its ``benchmark_config.json`` is paired by :func:`read_file` alone.

    Parameters
    ----------
    report, config
        Paths (or display names when the bytes are given).
    meta
        User-supplied metadata (fills what the files do not record).
    report_data, config_data
        The files' bytes when already in memory.
    resolve
        Resolve hardware and model names through the catalogs.

    Returns
    -------
    ImportResult

    Raises
    ------
    ImportFormatError
        A file is not valid JSON, or not an optimum-benchmark report / config.
    """
    meta = meta or ImportMeta()
    rp, cp = Path(report), Path(config)
    try:
        r_bytes = report_data if report_data is not None else rp.read_bytes()
        c_bytes = config_data if config_data is not None else cp.read_bytes()
    except OSError as exc:
        raise ImportFormatError(f"cannot read {exc.filename}: {exc.strerror}") from None
    docs = []
    for name, raw in ((rp.name, r_bytes), (cp.name, c_bytes)):
        try:
            docs.append(loads_lenient(raw.decode("utf-8")))
        except (UnicodeDecodeError, ValueError) as exc:
            raise ImportFormatError(f"{name}: not readable as JSON ({exc})") from None
    rep, _ = _split(docs[0])
    _, cfg = _split(docs[1])
    if rep is None:
        raise ImportFormatError(f"{rp.name}: not an optimum-benchmark benchmark_report.json")
    if cfg is None:
        raise ImportFormatError(f"{cp.name}: not an optimum-benchmark benchmark_config.json")
    refuse_unread_meta(OptimumBenchmarkImporter(), meta, rp.name)
    parsed = parse_report(rep, cfg, rp.name, cp.name)
    digest = hashlib.sha256(r_bytes + b"\0" + c_bytes).hexdigest()
    return finalize(parsed, meta=meta, fmt=OptimumBenchmarkImporter.name, file=rp.name, sha256=digest,
                    has_hardware=True, has_model=True, resolve=resolve)
