"""Neural Magic's vLLM benchmark CSVs (github.com/neuralmagic/vllm-benchmarking, early 2024).

Two formats:

``neuralmagic-vllm-csv`` (offline batch sweep, ``model_id,seq_len,batch_size,weight_type,tput``)
    ``seq_len`` is overloaded. Rows with ``seq_len == 1`` are *decode* points: a
    batch of one-word prompts generating 20 tokens each (``ignore_eos``), ``tput`` =
    generated tokens per second (basis ``"output"``). Rows with ``seq_len > 1`` are
    *prefill* points at batch 1 with ``max_tokens=1``: ``tput`` = prompt tokens per
    second, recorded as total throughput with output length 1 (basis ``"total"``).
``neuralmagic-vllm-server-qps-csv`` (``api_server`` request-rate sweep)
    One row per (qps, input, output) point, whole-request latencies in seconds and
    no throughput: the completion rate was not recorded, so none is invented
    (basis ``"none"``). ``gpu_type`` such as ``4xA4000`` gives the device count.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from .base import Importer, ImportMeta, Issue, Parsed, Sample, register
from .generic_csv import csv_header_has, numeric_columns, read_csv_rows, require_columns, row_checks

__all__ = ["NeuralMagicOfflineImporter", "NeuralMagicServerImporter", "DECODE_OUTPUT_TOK"]

#: Tokens generated per sequence in the decode rows (the script's max_tokens with ignore_eos).
DECODE_OUTPUT_TOK = 20.0

_OFFLINE_HEADER = ("model_id", "seq_len", "batch_size", "weight_type", "tput")
_SERVER_KEYS = ("model_name", "gpu_type", "input_tokens", "output_tokens", "qps", "num_prompts", "mean_latency")
# The columns parse reads without a fallback (num_prompts and the percentiles are optional).
_SERVER_REQUIRED = ("model_name", "gpu_type", "input_tokens", "output_tokens", "qps", "mean_latency")

# weight_type -> (weight_dtype, quantization); GPTQ/Marlin checkpoints do not say their bit width here.
_WEIGHT_TYPES: dict[str, tuple[str | None, str | None]] = {
    "fp16": ("fp16", None),
    "bf16": ("bf16", None),
    "fp8": ("fp8", "fp8"),
    "gptq": (None, "gptq"),
    "marlin": (None, "marlin"),
    "awq": (None, "awq"),
}


@register
class NeuralMagicOfflineImporter(Importer):
    """vLLM offline batch sweep CSV (decode batch sweep + prefill length sweep)."""

    name = "neuralmagic-vllm-csv"
    label = "Neural Magic vLLM offline batch CSV"
    description = "model_id,seq_len,batch_size,weight_type,tput from neuralmagic/vllm-benchmarking"
    has_model = True

    def sniff(self, sample: Sample) -> float:
        header = sample.csv_header
        return 0.9 if header and tuple(h.lower() for h in header) == _OFFLINE_HEADER else 0.0

    def parse(self, sample: Sample, meta: ImportMeta) -> Parsed:
        """Split decode rows (seq_len 1) from prefill rows and read both.

        Raises
        ------
        ImportFormatError
            Never for row problems (those become issues); only when the file has no
            header or the header lacks one of its five columns.
        """
        file = sample.name
        rows = read_csv_rows(sample, text_columns=("model_id", "weight_type"))
        require_columns(rows, _OFFLINE_HEADER, file, self.label, exact=True)
        keep, issues = row_checks(rows, file)
        num = numeric_columns(rows, ("seq_len", "batch_size", "tput"), keep, issues, file)
        seq, batch, tput = num["seq_len"], num["batch_size"], num["tput"]
        decode = (seq == 1).to_numpy()
        prefill = ((seq > 1) & (batch == 1)).to_numpy()
        odd = keep & ~decode & ~prefill & seq.notna().to_numpy() & batch.notna().to_numpy()
        for i in np.flatnonzero(odd):
            issues.append(Issue(file, int(rows.source_row[i]), "seq_len",
                                f"seq_len {seq.iloc[i]:g} with batch_size {batch.iloc[i]:g} is neither a decode "
                                "row (seq_len 1) nor a prefill row (batch 1); row skipped"))
        keep &= ~odd
        wtype = rows.col("weight_type").astype("string").str.strip().str.lower()
        runs = pd.DataFrame({
            "model_raw": rows.col("model_id").astype("string").str.strip(),
            "framework": "vllm",
            "input_len_tok": seq,
            "output_len_tok": np.where(decode, DECODE_OUTPUT_TOK, 1.0),
            "load_kind": "static_batch",
            "batch_size": batch,
            "output_throughput_tok_s": tput.where(decode),
            "total_throughput_tok_s": tput.where(~decode),
            "throughput_basis": np.where(decode, "output", "total"),
            "weight_dtype": wtype.map(lambda w: _WEIGHT_TYPES.get(w, (w, None))[0] if isinstance(w, str)
                                      else None).astype("string"),
            "quantization": wtype.map(lambda w: _WEIGHT_TYPES.get(w, (None, None))[1] if isinstance(w, str)
                                      else None).astype("string"),
            "source_row": rows.source_row,
        })
        issues.append(Issue(file, None, "tput",
                            f"{int((decode & keep).sum())} decode row(s) (seq_len 1): output length "
                            f"{DECODE_OUTPUT_TOK:g} tokens per sequence, tput = generated tokens/s; "
                            f"{int((prefill & keep).sum())} prefill row(s) (batch 1): tput = prompt tokens/s, "
                            "recorded as total throughput with output length 1", "info"))
        return Parsed(runs=runs.loc[keep].reset_index(drop=True), issues=issues)


@register
class NeuralMagicServerImporter(Importer):
    """vLLM api_server request-rate sweep CSV (latencies only)."""

    name = "neuralmagic-vllm-server-qps-csv"
    label = "Neural Magic vLLM server QPS CSV"
    description = "model_name,gpu_type,input_tokens,output_tokens,qps,...,mean_latency,p50_latency,..."
    has_hardware = True
    has_model = True

    def sniff(self, sample: Sample) -> float:
        return 0.9 if csv_header_has(sample, _SERVER_KEYS) else 0.0

    def parse(self, sample: Sample, meta: ImportMeta) -> Parsed:
        """Read request-rate points; throughput is left empty (basis ``"none"``).

        Raises
        ------
        ImportFormatError
            Only when the file has no header or the header lacks a column it needs
            (model_name, gpu_type, input_tokens, output_tokens, qps, mean_latency).
        """
        file = sample.name
        rows = read_csv_rows(sample, text_columns=("model_name", "gpu_type", "use_beam_search"))
        require_columns(rows, _SERVER_REQUIRED, file, self.label, exact=True)
        keep, issues = row_checks(rows, file)
        names = ("input_tokens", "output_tokens", "qps", "best_of", "num_prompts", "mean_latency",
                 "p50_latency", "p90_latency", "p99_latency")
        num = numeric_columns(rows, names, keep, issues, file)
        gpu = rows.col("gpu_type").astype("string").str.strip()
        # "4xA4000": device count and device name in one cell.
        parts = gpu.str.extract(r"^\s*(\d+)\s*[xX×]\s*(.+?)\s*$")
        count = pd.to_numeric(parts[0], errors="coerce")
        hardware = parts[1].astype("string").fillna(gpu)
        runs = pd.DataFrame({
            "hardware_raw": hardware,
            "device_count": count,
            "model_raw": rows.col("model_name").astype("string").str.strip(),
            "framework": "vllm",
            "input_len_tok": num["input_tokens"],
            "output_len_tok": num["output_tokens"],
            "load_kind": "request_rate",
            "request_rate_rps": num["qps"],
            "n_requests": num.get("num_prompts"),
            "e2e_latency_s": num["mean_latency"],
            "e2e_latency_p50_s": num.get("p50_latency"),
            "e2e_latency_p90_s": num.get("p90_latency"),
            "e2e_latency_p99_s": num.get("p99_latency"),
            "throughput_basis": "none",
            "source_row": rows.source_row,
        })
        beam = rows.col("use_beam_search").astype("string").str.strip().str.lower() == "true" \
            if "use_beam_search" in rows.header else pd.Series(False, index=runs.index)
        best_of = num.get("best_of", pd.Series(1.0, index=runs.index))
        unusual = keep & (beam.fillna(False).to_numpy() | (best_of.fillna(1) != 1).to_numpy())
        for i in np.flatnonzero(unusual):
            issues.append(Issue(file, int(rows.source_row[i]), "best_of",
                                "beam search or best_of > 1: latencies are not comparable with plain sampling",
                                "warning"))
        issues.append(Issue(file, None, None, "the file records no throughput (the completion rate was not "
                            "measured); rows keep their latencies with throughput_basis 'none'", "info"))
        if re.search(r"\d", "".join(gpu.dropna().unique().tolist())) is None:
            issues.append(Issue(file, None, "gpu_type", "gpu_type gives no device count", "info"))
        return Parsed(runs=runs.loc[keep].reset_index(drop=True), issues=issues)
