"""Importers for SGLang's benchmark clients.

Formats
-------
``sglang-bench-serving``
    ``python -m sglang.bench_serving --output-file``: JSON Lines, one object
    per run, with bare ``Infinity`` tokens for an unlimited request rate.
    ``server_info`` carries the server's arguments and version; for
    prefill/decode-disaggregated runs it is ``{internal_states, prefill, decode}``.
    ``concurrency`` is the *measured* mean number of requests in flight;
    ``max_concurrency`` the client's limit. Input lengths are taken from the
    measured ``total_input_tokens / completed`` because ``random_range_ratio``
    makes the nominal ``random_input_len`` an upper bound, not the mean.
``sglang-bench-one-batch``
    ``python -m sglang.bench_one_batch --result-filename``: JSON Lines, one
    object per (batch_size, input_len, output_len) with ``prefill_latency``,
    ``median_decode_latency``, ``total_latency`` (s) and ``overall_throughput``
    ((input + output) × batch / total_latency, tok/s). A static batch run
    in-process; no hardware or model is recorded.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .base import Importer, ImportMeta, Issue, Parsed, Sample, register
from .vllm_bench import (
    BadValue,
    FieldReader,
    bad_value_issue,
    basis_of,
    finish_rows,
    first_record,
    latency_values,
    load_json_records,
    sniff_text,
)

__all__ = ["SglangBenchServing", "SglangBenchOneBatch"]

_LAT = {"ttft": ("ttft",), "tpot": ("tpot",), "itl": ("itl",), "e2e_latency": ("e2e_latency",)}

#: server_info keys worth keeping in provenance (the full dict has ~300 server arguments)
_SERVER_KEYS = ("version", "model_path", "served_model_name", "tp_size", "pp_size", "dp_size", "ep_size",
                "dtype", "kv_cache_dtype", "quantization", "device", "disaggregation_mode",
                "chunked_prefill_size", "max_running_requests", "mem_fraction_static", "attention_backend")


def _server_summary(info: Mapping[str, Any]) -> dict[str, Any]:
    return {k: info[k] for k in _SERVER_KEYS if k in info}


def _servers(info: Any) -> list[Mapping[str, Any]]:
    if isinstance(info, list):
        return [s for s in info if isinstance(s, Mapping)]
    if isinstance(info, Mapping):
        return [info]
    return []


def _positive_int(v: Any) -> int | None:
    if isinstance(v, int) and not isinstance(v, bool) and v > 0:
        return v
    return None


def _dtype(v: Any) -> str | None:
    # "auto" means "whatever the checkpoint says": not a dtype the file states.
    if isinstance(v, str) and v and v.lower() not in ("auto", "none", "null"):
        return v
    return None


def serving_row(rec: Mapping[str, Any], row: int, file: str, issues: list[Issue],
                prov: dict[str, Any]) -> dict[str, Any] | None:
    """One canonical row from a ``bench_serving`` result object (None when nothing succeeded).

    Raises
    ------
    BadValue
        A field the row needs has the wrong type.
    """
    r = FieldReader(rec)
    out: dict[str, Any] = {"source_row": row, "framework": "sglang"}
    info = r.obj("server_info") or {}
    completed = r.count("completed")
    if completed == 0:
        issues.append(Issue(file, row, "completed", "no request completed: the run holds no measurement and "
                            "is not imported (it is not a zero-throughput point)", "warning"))
        return None
    out["n_requests"] = completed
    if "prefill" in info or "decode" in info:
        _pd_servers(info, row, file, issues, out, prov)
    else:
        prov["server"] = _server_summary(info)
        if (v := info.get("version")) is not None:
            out["framework_version"] = str(v)
        for key in ("tp_size", "pp_size"):
            if (n := _positive_int(info.get(key))) is not None:
                out[key] = n
        tp, pp, dp = (_positive_int(info.get(k)) for k in ("tp_size", "pp_size", "dp_size"))
        if tp and pp and dp:
            out["device_count"] = tp * pp * dp
        if (v := _dtype(info.get("dtype"))) is not None:
            out["weight_dtype"] = v
        if (v := _dtype(info.get("kv_cache_dtype"))) is not None:
            out["kv_cache_dtype"] = v
        if (v := _dtype(info.get("quantization"))) is not None:
            out["quantization"] = v
        model = info.get("model_path") or info.get("served_model_name")
        if isinstance(model, str) and model:
            out["model_raw"] = model
    if "model_raw" not in out and (m := r.text("model_id") or r.text("model")):
        out["model_raw"] = m
    rate = r.num("request_rate", inf_string=True)
    conc = r.num("max_concurrency")
    out["request_rate_rps"] = rate if rate is not None else math.inf
    if conc is not None:
        out["load_kind"] = "concurrency"
        out["batch_size"] = conc
    else:
        out["load_kind"] = "request_rate"
    # `concurrency` is measured (mean in flight), not the limit.
    out["measured_concurrency"] = r.num("concurrency")
    tin, tout = r.num("total_input_tokens"), r.num("total_output_tokens")
    if completed:
        if tin is not None:
            out["input_len_tok"] = tin / completed
        if tout is not None:
            out["output_len_tok"] = tout / completed
    nominal_in = r.num("random_input_len")
    ratio = r.num("random_range_ratio")
    if (r.text("dataset_name") == "random" and nominal_in and "input_len_tok" in out
            and abs(out["input_len_tok"] - nominal_in) > 0.05 * nominal_in):
        issues.append(Issue(
            file, row, "input_len_tok",
            f"nominal random_input_len {nominal_in:g} but the measured mean input is {out['input_len_tok']:.1f} "
            f"tokens (random_range_ratio {ratio if ratio is not None else '?'}: lengths are drawn below the "
            "nominal); using the measured mean", "info"))
    out_tp, tot_tp = r.num("output_throughput"), r.num("total_throughput")
    out["output_throughput_tok_s"] = out_tp
    out["total_throughput_tok_s"] = tot_tp
    out["request_throughput_rps"] = r.num("request_throughput")
    out["throughput_basis"] = basis_of(out_tp is not None, tot_tp is not None)
    out.update(latency_values(r, _LAT))
    return out


def _pd_servers(info: Mapping[str, Any], row: int, file: str, issues: list[Issue], out: dict[str, Any],
                prov: dict[str, Any]) -> None:
    """Prefill/decode-disaggregated run: record both server sets honestly."""
    prefill, decode = _servers(info.get("prefill")), _servers(info.get("decode"))
    prov["server"] = {"disaggregated": True,
                      "prefill": [_server_summary(s) for s in prefill],
                      "decode": [_server_summary(s) for s in decode]}
    versions = sorted({str(s["version"]) for s in prefill + decode if s.get("version") is not None})
    if len(versions) == 1:
        out["framework_version"] = versions[0]
    models = {s.get("model_path") or s.get("served_model_name") for s in prefill + decode}
    models.discard(None)
    if len(models) == 1:
        out["model_raw"] = str(models.pop())
    listed = []
    for role, servers in (("prefill", prefill), ("decode", decode)):
        for s in servers:
            listed.append(f"{role} tp{s.get('tp_size', '?')}×dp{s.get('dp_size', '?')}×pp{s.get('pp_size', '?')}")
    vtxt = f"; versions differ ({', '.join(versions)}), so framework_version is left empty" \
        if len(versions) > 1 else ""
    # The router reports one server_info per role, not one per server, so the device
    # count cannot be derived from the file (a "1p2d" run lists one decode entry).
    issues.append(Issue(
        file, row, "device_count",
        f"prefill/decode-disaggregated run; server_info lists {', '.join(listed) or 'no servers'} but not how "
        f"many servers of each role ran, so the device count is not derived (pass --device-count){vtxt}",
        "warning"))


@register
class SglangBenchServing(Importer):
    """``sglang.bench_serving --output-file`` JSON Lines."""

    name = "sglang-bench-serving"
    label = "SGLang bench_serving JSONL"
    description = "python -m sglang.bench_serving --output-file results (JSON Lines, one object per run)"
    has_model = True

    def sniff(self, sample: Sample) -> float:
        rec = first_record(sample)
        if rec is None:
            return 0.5 if sniff_text(sample, ('"mean_e2e_latency_ms"', '"total_throughput"')) else 0.0
        if "model_id" in rec or "mean_e2e_latency_ms" not in rec:
            return 0.0
        if "server_info" in rec or "random_range_ratio" in rec or "total_throughput" in rec:
            return 0.95
        return 0.4

    def parse(self, sample: Sample, meta: ImportMeta) -> Parsed:
        recs = load_json_records(sample)
        rows: list[dict[str, Any]] = []
        issues: list[Issue] = []
        prov_records: list[dict[str, Any]] = []
        for i, rec in enumerate(recs, start=1):
            prov: dict[str, Any] = {"source_row": i}
            for k in ("tag", "backend", "dataset_name", "random_input_len", "random_output_len",
                      "random_range_ratio", "sharegpt_output_len", "max_concurrency", "accept_length",
                      "total_output_tokens_retokenized"):
                if k in rec:
                    prov[k] = rec[k]
            try:
                row = serving_row(rec, i, sample.name, issues, prov)
            except BadValue as exc:
                issues.append(bad_value_issue(sample.name, i, exc))
                continue
            prov_records.append(prov)
            if row is not None:
                rows.append(row)
        all_failed = not rows and any(i.column == "completed" for i in issues)
        return finish_rows(rows, issues, sample.name,
                           provenance={"client": "sglang.bench_serving", "records": prov_records},
                           allow_empty=all_failed)


@register
class SglangBenchOneBatch(Importer):
    """``sglang.bench_one_batch --result-filename`` JSON Lines (static batch, in-process)."""

    name = "sglang-bench-one-batch"
    label = "SGLang bench_one_batch JSONL"
    description = "python -m sglang.bench_one_batch --result-filename results (one object per batch/lengths)"

    def sniff(self, sample: Sample) -> float:
        rec = first_record(sample)
        if rec is None:
            return 0.5 if sniff_text(sample, ('"prefill_latency"', '"overall_throughput"')) else 0.0
        if "prefill_latency" in rec and "batch_size" in rec and (
                "overall_throughput" in rec or "total_latency" in rec):
            return 0.95
        return 0.0

    def parse(self, sample: Sample, meta: ImportMeta) -> Parsed:
        recs = load_json_records(sample)
        rows: list[dict[str, Any]] = []
        issues: list[Issue] = []
        for i, rec in enumerate(recs, start=1):
            r = FieldReader(rec)
            try:
                batch = r.count("batch_size")
                in_len = r.num("input_len")
                in_lens = r.numbers("input_lens")  # --skewed-input-lens: one length per sequence
                out_len = r.num("output_len")
                # older releases and some docs call the total "overall_latency"
                total_s = r.num("total_latency")
                if total_s is None:
                    total_s = r.num("overall_latency")
                row: dict[str, Any] = {
                    "source_row": i,
                    "framework": "sglang",
                    "load_kind": "static_batch",
                    "batch_size": batch,
                    "input_len_tok": sum(in_lens) / len(in_lens) if in_lens else in_len,
                    "output_len_tok": out_len,
                    "n_requests": batch,
                    # every sequence of the batch gets its first token when the prefill ends
                    "ttft_s": r.num("prefill_latency"),
                    # median decode step of the batch = median time per output token of each sequence
                    "tpot_p50_s": r.num("median_decode_latency"),
                    "e2e_latency_s": total_s,
                    "total_throughput_tok_s": r.num("overall_throughput"),
                    "throughput_basis": "total",
                }
                r.num("prefill_throughput")
                r.num("median_decode_throughput")
            except BadValue as exc:
                issues.append(bad_value_issue(sample.name, i, exc))
                continue
            if row["total_throughput_tok_s"] is None:
                row["throughput_basis"] = "none"
            rows.append(row)
        run_names = sorted({str(rec.get("run_name")) for rec in recs if rec.get("run_name") is not None})
        return finish_rows(rows, issues, sample.name,
                           provenance={"client": "sglang.bench_one_batch", "run_names": run_names})
