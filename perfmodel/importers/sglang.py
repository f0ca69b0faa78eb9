"""Importers for SGLang's benchmark clients.

Formats
-------
``sglang-bench-serving``
    ``python -m sglang.bench_serving --output-file``: JSON Lines, one object
    per run, with bare ``Infinity`` tokens for an unlimited request rate.
    ``server_info`` carries the server's arguments and version; for
    prefill/decode-disaggregated runs it is ``{internal_states, prefill, decode}``,
    one entry per role rather than per server, so the device count of such a
    run is derived only where its ``tag`` or file name gives the server counts
    ("1p2d": one prefill, two decode servers) and is otherwise left empty.
    No role's hardware is recorded (``device`` is "cuda") and a run holds one
    hardware name: the one given on import is stored for every device, with a
    warning on the row, since prefill and decode may have run on different GPUs.
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
import re
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
                "chunked_prefill_size", "max_running_requests", "mem_fraction_static", "attention_backend",
                "enable_dp_attention")


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
        _pd_servers(info, row, file, issues, out, prov, r.text("tag"))
    else:
        prov["server"] = _server_summary(info)
        if (v := info.get("version")) is not None:
            out["framework_version"] = str(v)
        for key in ("tp_size", "pp_size"):
            if (n := _positive_int(info.get(key))) is not None:
                out[key] = n
        if (n := _server_devices(info)) is not None:
            out["device_count"] = n
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


#: "1p2d", "2P4D", "1p-2d" in a tag or file name: how many prefill and decode servers ran
_PD_COUNTS = re.compile(r"(?<![0-9a-z])(\d+)p[-_]?(\d+)d(?![0-9a-z])", re.IGNORECASE)


def _server_devices(info: Mapping[str, Any]) -> int | None:
    """Devices one server uses, from its arguments (None when a size is missing)."""
    tp, pp, dp = (_positive_int(info.get(k)) for k in ("tp_size", "pp_size", "dp_size"))
    if not (tp and pp and dp):
        return None
    # With DP attention the dp ranks live inside the tp group (dp divides tp); otherwise
    # each dp replica is a full tp x pp engine on its own devices.
    return tp * pp if info.get("enable_dp_attention") is True else tp * pp * dp


def _role_devices(servers: list[Mapping[str, Any]]) -> int | None:
    """Devices per server of one role, when every listed server of it has the same known size."""
    sizes = {_server_devices(s) for s in servers}
    if len(sizes) != 1:
        return None
    return sizes.pop()


def _pd_counts(text: str) -> set[tuple[int, int]]:
    return {(int(m.group(1)), int(m.group(2))) for m in _PD_COUNTS.finditer(text)}


def _pd_servers(info: Mapping[str, Any], row: int, file: str, issues: list[Issue], out: dict[str, Any],
                prov: dict[str, Any], tag: str | None) -> None:
    """Prefill/decode-disaggregated run: record both server sets and the devices they span.

    The router reports one ``server_info`` per role, not one per server (a "1p2d" run lists
    one decode entry), so the number of servers of each role comes from the run's name:
    the ``tag`` or the file name ("pd_1p2d_..."). Without it the device count is unknown and
    left empty: it is never taken as one device.
    """
    prefill, decode = _servers(info.get("prefill")), _servers(info.get("decode"))
    server: dict[str, Any] = {"disaggregated": True,
                              "prefill": [_server_summary(s) for s in prefill],
                              "decode": [_server_summary(s) for s in decode]}
    prov["server"] = server
    versions = sorted({str(s["version"]) for s in prefill + decode if s.get("version") is not None})
    if len(versions) == 1:
        out["framework_version"] = versions[0]
    elif len(versions) > 1:
        issues.append(Issue(file, row, "framework_version",
                            f"prefill/decode-disaggregated run whose servers report different versions "
                            f"({', '.join(versions)}); framework_version is left empty", "warning"))
    # server_info names no GPU (``device`` is "cuda"), and a run holds one hardware name: the one given on import
    # is stored for every device, which is wrong for one role where prefill and decode ran on different hardware
    # (this format's real 1P2D run: prefill on a GH200, decode on two A100s, the servers on two SGLang versions).
    hosts = (f" (its prefill and decode servers run different SGLang versions, {', '.join(versions)}, as servers "
             "on different hosts would)") if len(versions) > 1 else ""
    issues.append(Issue(
        file, row, "hardware",
        "prefill/decode-disaggregated run: the file does not name the hardware of its prefill or decode servers, "
        "and a run records one hardware, so the one given on import (--hardware) is stored for all its devices"
        f"{hosts}; where the two roles ran on different hardware this run's hardware and device count describe "
        "neither: keep it in a dataset of its own, apart from fits and training on other runs", "warning"))
    models = {s.get("model_path") or s.get("served_model_name") for s in prefill + decode}
    models.discard(None)
    if len(models) == 1:
        out["model_raw"] = str(models.pop())
    listed = ", ".join(f"{role} tp{s.get('tp_size', '?')}×dp{s.get('dp_size', '?')}×pp{s.get('pp_size', '?')}"
                       for role, servers in (("prefill", prefill), ("decode", decode)) for s in servers)
    listed = listed or "no servers"
    named = [(where, _pd_counts(text)) for where, text in (("tag", tag), ("file name", file)) if text]
    named = [(where, found) for where, found in named if found]
    counts: set[tuple[int, int]] = set().union(*(found for _, found in named))
    per_p, per_d = _role_devices(prefill), _role_devices(decode)
    why = None
    if not counts:
        why = ("neither the tag nor the file name says how many servers of each role ran (e.g. '1p2d'), and "
               "server_info lists one entry per role, not one per server")
    elif len(counts) > 1:
        said = "; ".join(f"{where} says " + ", ".join(f"{p}p{d}d" for p, d in sorted(found))
                         for where, found in named)
        why = f"the run's name gives conflicting server counts ({said})"
    elif per_p is None or per_d is None:
        why = ("server_info does not give one tp/pp/dp size per role (missing, or different between the "
               "servers it lists)")
    else:
        (n_p, n_d), = counts
        if len(prefill) > n_p or len(decode) > n_d:
            why = (f"server_info lists {len(prefill)} prefill and {len(decode)} decode server(s), more than the "
                   f"{n_p}p{n_d}d of the run's name")
    if why is not None or per_p is None or per_d is None:
        issues.append(Issue(
            file, row, "device_count",
            f"prefill/decode-disaggregated run; server_info lists {listed}, but {why}, so the device count "
            "cannot be known and device_count is left empty: give it with --device-count on import", "warning"))
        return
    (n_p, n_d), = counts
    out["device_count"] = n_p * per_p + n_d * per_d
    source = " and ".join(where for where, _ in named)
    server.update(prefill_servers=n_p, decode_servers=n_d, server_counts_from=source)
    issues.append(Issue(
        file, row, "device_count",
        f"prefill/decode-disaggregated run: {n_p} prefill server(s) × {per_p} device(s) + {n_d} decode server(s) "
        f"× {per_d} device(s) = {out['device_count']} devices (server counts from the {source}, sizes from "
        f"server_info: {listed})", "info"))


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
