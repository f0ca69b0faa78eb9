"""LLM-Inference-Bench CSV family (Argonne, arXiv 2411.00136): format ``llm-inference-bench``.

One importer reads every CSV of the family (``All_results.csv``, the KV-cache,
power, quantisation, parallelism and TTFT tables): the common columns are
Hardware, Num of Hardware, Framework, Model, the lengths, Batch Size; the
others are optional and recognised by their header.

Semantics (checked against the data, see the module tests):

- "Input Output Length" L means input = output = L tokens per sequence; all
  points are static batches (``load_kind="static_batch"``).
- Latency is the whole batch's end-to-end time in seconds.
- Throughput is ``batch x (input + output) / Latency`` (input plus output tokens
  per second, basis ``"total"``) for almost every row. llama.cpp rows with
  batch > 1 report ``(input + output) / Latency``: the throughput of one
  sequence. Such rows are found by checking both identities against the
  latency (within 1 %), not by the framework's name. Their "Batch Size" is not
  a number of concurrent sequences: their latency falls from batch 1 to 16 and
  stays flat to 64 (0.7x batch 1's, where every other framework's grows
  1.3-2.5x), and at 32-64 31 of them would finish B sequences faster than
  reading the weights and B KV caches once per decode step allows
  (``benchmarks/bench_llamacpp_batch.py``). It is llama.cpp's ``n_batch``, the
  prompt tokens fed per forward pass (at 1 the prompt goes token by token,
  which doubles a run whose input and output lengths are equal). Such rows are
  read as one sequence: ``batch_size`` 1, the figure as written (basis
  ``"total"``), and the file's batch kept as the setting ``fw_n_batch``, which
  the batch-1 rows of the same framework get too (1). Imports made before
  2026-12-01 multiplied the figure by the batch instead (basis
  ``"total_per_sequence"``).
- ``avg_power`` is the mean of integer NVML samples in milliwatts: every value is
  a fraction whose denominator is a small sample count, and read as mW it gives
  222-377 W on A100 (TDP 400 W), 253-595 W on H100 (700 W) and 410-656 W on GH200;
  read as W summed over samples the per-sample values would be thousands of watts.
  Values in that range are converted to ``power_w``; anything else is kept as
  ``hw_avg_power_raw`` with an explanation.
- In ``ttft_itl.csv`` the "end_latency" of a row with output length 1 equals, to
  the last digit, the Latency of the input = output = 1024 run of the same system
  in ``All_results.csv``: it is not the latency of the 1-token run. When the end
  latency of a 1-token row is far above its TTFT it is therefore kept aside as
  ``fw_end_latency_s`` rather than as ``e2e_latency_s``.

The fast path is vectorised (pandas' C parser with typed columns); only the few
lines that do not fit the header (quant_results' unquoted comma) are repaired
one by one.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ImportFormatError
from .base import Importer, ImportMeta, Issue, Parsed, Sample, register
from .generic_csv import CsvRows, numeric_column, read_csv_rows, short_row_issues

__all__ = ["LlmInferenceBenchImporter", "ROLE_BY_HEADER", "IDENTITY_RTOL", "power_unit"]

#: Normalised header (lower case, runs of spaces/underscores as one space) -> role.
ROLE_BY_HEADER: dict[str, str] = {
    "hardware": "hardware",
    "num of hardware": "device_count",
    "framework": "framework",
    "model": "model",
    "input output length": "io_len",
    "input length": "in_len",
    "output length": "out_len",
    "batch size": "batch",
    "latency": "latency",
    "throughput": "throughput",
    "kv cache": "kv_cache",
    "kv cache dtype": "dtype_variant",
    "parallelism type": "parallelism",
    "avg power": "avg_power",
    "ttft latency": "ttft",
    "end latency": "end_latency",
}
_TEXT_ROLES = ("hardware", "framework", "model", "kv_cache", "dtype_variant", "parallelism")
_CORE_ROLES = ("hardware", "device_count", "framework", "model", "batch")

#: Relative tolerance of the throughput identities.
IDENTITY_RTOL = 0.01

# What the dtype words of quant_results mean: (weight_dtype, quantization).
_WEIGHT_WORDS: dict[str, tuple[str | None, str | None]] = {
    "fp16": ("fp16", None),
    "bf16": ("bf16", None),
    "fp8": ("fp8", "fp8"),
    "int8": ("int8", None),
    "int8_sq": ("int8", "smoothquant"),
    "int4": ("int4", None),
    "int4_awq": ("int4", "awq"),
    # "full precision" does not say fp16 or bf16: leave the dtype empty rather than guess.
    "full_prec": (None, None),
}


def _norm(h: str) -> str:
    return re.sub(r"[\s_]+", " ", h.strip().lower())


def power_unit(values: pd.Series) -> str:
    """Decide the unit of an ``avg_power`` column from its values.

    Parameters
    ----------
    values
        The non-missing power values.

    Returns
    -------
    str
        ``"mW"`` when the median lies between 20,000 and 2,000,000 (20 W to 2 kW
        read as milliwatts), ``"W"`` when it lies between 5 and 2,000, else
        ``"unknown"``.
    """
    v = values.dropna()
    if v.empty:
        return "unknown"
    med = float(v.median())
    if 2e4 <= med <= 2e6:
        return "mW"
    if 5 <= med <= 2e3:
        return "W"
    return "unknown"


def _parallelism(text: str, n: float) -> tuple[float, float, float, float, str | None]:
    """(tp, pp, moe_ep, moe_tp, problem) for one Parallelism Type and device count.

    The rows are TensorRT-LLM, whose world size is tp x pp; expert parallelism
    splits the experts inside the tp group (moe_tp x moe_ep = tp).
    """
    t = text.strip().lower()
    nan = float("nan")
    if not np.isfinite(n) or n <= 0:
        return nan, nan, nan, nan, None

    def num(pattern: str) -> float | None:
        m = re.search(pattern, t)
        return float(m.group(1)) if m else None

    if "hybrid" in t or "hybird" in t:
        tp = num(r"(?:tensor|tp)\D{0,6}?(\d+)")
        pp = num(r"(?:pipeline|pp)\D{0,6}?(\d+)")
        ep = num(r"\bep\D{0,6}?(\d+)")
        if tp and pp and not ep:
            return tp, pp, nan, nan, None
        if tp and ep and not pp:
            return n, 1.0, ep, tp, None
        return nan, nan, nan, nan, f"cannot read the parallel sizes from {text!r}"
    if t in ("tp", "tensor parallelism", "tensor parallel"):
        return n, 1.0, nan, nan, None
    if t in ("pp", "pipeline parallelism", "pipeline parallel"):
        return 1.0, n, nan, nan, None
    if t in ("ep", "expert parallelism", "expert parallel"):
        return n, 1.0, n, 1.0, None
    return nan, nan, nan, nan, f"unknown parallelism type {text!r}"


@register
class LlmInferenceBenchImporter(Importer):
    """The LLM-Inference-Bench result CSVs (All_results and the per-figure tables)."""

    name = "llm-inference-bench"
    label = "LLM-Inference-Bench CSV"
    description = ("Argonne LLM-Inference-Bench tables: Hardware, Num of Hardware, Framework, Model, "
                   "lengths, Batch Size, Latency, Throughput (+ KV cache, power, dtype, parallelism, TTFT).")
    has_hardware = True
    has_model = True

    def sniff(self, sample: Sample) -> float:
        header = sample.csv_header
        if not header:
            return 0.0
        roles = {ROLE_BY_HEADER.get(_norm(h)) for h in header}
        lengths = "io_len" in roles or {"in_len", "out_len"} <= roles
        if set(_CORE_ROLES) <= roles and lengths:
            return 0.95
        return 0.0

    def parse(self, sample: Sample, meta: ImportMeta) -> Parsed:
        """Read one LLM-Inference-Bench CSV into raw canonical rows.

        Raises
        ------
        ImportFormatError
            A required column (hardware, device count, framework, model, lengths,
            batch size) is missing from the header, or Throughput is missing from a
            table that is not a TTFT table.
        """
        file = sample.name
        text_headers: list[str] = []
        roles: dict[str, int] = {}
        header_probe = sample.csv_header or []
        for h in header_probe:
            if ROLE_BY_HEADER.get(_norm(h)) in _TEXT_ROLES:
                text_headers.append(h)
        rows = read_csv_rows(sample, text_columns=text_headers)
        issues: list[Issue] = []
        for i, h in enumerate(rows.header):
            role = ROLE_BY_HEADER.get(_norm(h))
            if role is None:
                issues.append(Issue(file, None, h, "column not used by the llm-inference-bench importer", "info"))
            elif role not in roles:
                roles[role] = i
        need = list(_CORE_ROLES) + (["io_len"] if "io_len" in roles else ["in_len", "out_len"])
        missing = [r for r in need if r not in roles]
        if missing:
            want = {v: k for k, v in ROLE_BY_HEADER.items()}
            raise ImportFormatError(
                f"{file}: missing column(s) " + ", ".join(repr(want[m].title()) for m in missing)
                + "; columns found: " + ", ".join(repr(h) for h in rows.header))
        if "throughput" not in roles and "ttft" not in roles:
            # Without it a throughput table would import as latency-only rows, silently.
            raise ImportFormatError(
                f"{file}: missing column 'Throughput' (tokens per second, the measurement of an "
                "LLM-Inference-Bench table; only the TTFT table, with 'TTFT Latency', goes without it); columns "
                "found: " + ", ".join(repr(h) for h in rows.header))
        name_of = {role: rows.header[i] for role, i in roles.items()}
        cols: dict[str, pd.Series] = {role: rows.frame[f"c{i}"] for role, i in roles.items()}
        keep = ~rows.blank
        for r in rows.source_row[rows.blank]:
            issues.append(Issue(file, int(r), None, "blank line skipped", "info"))
        self._repair_long_rows(rows, roles, cols, keep, issues, file)
        # The last row of a file cut off mid-row: its last field may be cut too. A row written short is
        # kept, its missing cells reported below.
        issues += short_row_issues(rows, keep, file, warn=False)

        # --- numbers, vectorised; a cell that is not a number drops its row
        num: dict[str, pd.Series] = {}
        for role in ("device_count", "io_len", "in_len", "out_len", "batch", "latency", "throughput",
                     "avg_power", "ttft", "end_latency"):
            if role not in cols:
                continue
            values, bad = numeric_column(cols[role])
            for i in np.flatnonzero(bad & keep):
                issues.append(Issue(file, int(rows.source_row[i]), name_of[role],
                                    f"expected a number, got {cols[role].iloc[i]!r}; row skipped"))
            keep &= ~bad
            num[role] = values
        text = {role: cols[role].astype("string").str.strip() for role in _TEXT_ROLES if role in cols}

        # --- missing values: core fields drop the row, results are reported
        core_present = {r: (text[r].notna().to_numpy() if r in text else num[r].notna().to_numpy())
                        for r in need}
        for role in need:
            if role in ("hardware", "model"):
                # Left empty for finalize: a supplied --hardware/--model fills it, else the row is an error
                # of its own (and a file that names none is refused with the option to pass).
                continue
            miss = ~core_present[role] & keep
            for i in np.flatnonzero(miss):
                issues.append(Issue(file, int(rows.source_row[i]), name_of[role],
                                    "missing value (empty cell or short row); row skipped"))
            keep &= ~miss
        if "throughput" in num:
            miss = num["throughput"].isna().to_numpy() & keep
            for i in np.flatnonzero(miss):
                issues.append(Issue(file, int(rows.source_row[i]), name_of["throughput"],
                                    "missing throughput (empty cell or short row); row skipped"))
            keep &= ~miss
        for role in ("latency", "end_latency"):
            if role in num:
                miss = num[role].isna().to_numpy() & keep
                for i in np.flatnonzero(miss):
                    issues.append(Issue(file, int(rows.source_row[i]), name_of[role],
                                        "missing value (empty cell or short row); row kept without it", "warning"))

        if "io_len" in num:
            in_len = out_len = num["io_len"]
        else:
            in_len, out_len = num["in_len"], num["out_len"]
        batch = num["batch"]
        runs = pd.DataFrame({
            "hardware_raw": text["hardware"],
            "device_count": num["device_count"],
            "framework": text["framework"],
            "model_raw": text["model"],
            "input_len_tok": in_len,
            "output_len_tok": out_len,
            "load_kind": "static_batch",
            "batch_size": batch,
            "source_row": rows.source_row,
        })
        provenance: dict[str, Any] = {"columns": list(rows.header)}
        if "latency" in num:
            runs["e2e_latency_s"] = num["latency"]
        if "throughput" in num:
            self._throughput(runs, num, text, keep, issues, file, provenance)
        else:
            runs["throughput_basis"] = "none"
            issues.append(Issue(file, None, None, "no 'Throughput' column (a TTFT table): rows keep their "
                                "latencies with throughput_basis 'none'", "info"))
        if "ttft" in num:
            runs["ttft_s"] = num["ttft"]
        if "end_latency" in num:
            self._end_latency(runs, num, keep, issues, file)
        if "avg_power" in num:
            self._power(runs, num["avg_power"], keep, issues, file, name_of["avg_power"])
        if "kv_cache" in text:
            self._kv_cache(runs, text["kv_cache"], rows, keep, issues, file, name_of["kv_cache"])
        if "dtype_variant" in text:
            self._dtypes(runs, text["dtype_variant"], keep, issues, file, name_of["dtype_variant"])
        if "parallelism" in text:
            self._parallel(runs, text["parallelism"], rows, keep, issues, file, name_of["parallelism"])
        runs = runs.loc[keep].reset_index(drop=True)
        return Parsed(runs=runs, issues=issues, provenance=provenance)

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _repair_long_rows(rows: CsvRows, roles: dict[str, int], cols: dict[str, pd.Series],
                          keep: np.ndarray, issues: list[Issue], file: str) -> None:
        """Recover rows broken by one unquoted comma in the dtype text; drop other long rows."""
        ncols = len(rows.header)
        k = roles.get("dtype_variant")
        for i in np.flatnonzero(rows.too_long & keep):
            fields = rows.fields(i)
            row_no = int(rows.source_row[i])
            if (k is not None and len(fields) == ncols + 1
                    and re.match(r"\s*kv\s*cache\s*=", fields[k + 1], re.I)
                    and re.match(r"\s*weight\s*=", fields[k], re.I)):
                merged = fields[:k] + [f"{fields[k].strip()}, {fields[k + 1].strip()}"] + fields[k + 2:]
                for role, j in roles.items():
                    s = cols[role]
                    if s.dtype != object:
                        s = s.astype(object)
                    s.iloc[i] = merged[j]
                    cols[role] = s
                issues.append(Issue(file, row_no, rows.header[k],
                                    f"unquoted comma in {merged[k]!r} split the row into {ncols + 1} fields; "
                                    "recovered by joining the two dtype fields", "warning"))
            else:
                issues.append(Issue(file, row_no, None,
                                    f"expected {ncols} fields, found {len(fields)}; row skipped"))
                keep[i] = False

    @staticmethod
    def _throughput(runs: pd.DataFrame, num: dict[str, pd.Series], text: dict[str, pd.Series],
                    keep: np.ndarray, issues: list[Issue], file: str, provenance: dict[str, Any]) -> None:
        thr = num["throughput"]
        tok_per_seq = runs["input_len_tok"] + runs["output_len_tok"]
        batch = runs["batch_size"]
        total = thr.copy()
        fix = np.zeros(len(runs), dtype=bool)
        if "latency" in num:
            lat = num["latency"]
            with np.errstate(divide="ignore", invalid="ignore"):
                by_batch = ((thr / (batch * tok_per_seq / lat) - 1).abs() <= IDENTITY_RTOL).to_numpy()
                per_seq = ((thr / (tok_per_seq / lat) - 1).abs() <= IDENTITY_RTOL).to_numpy()
            checked = (thr.notna() & lat.notna()).to_numpy() & keep
            fix = per_seq & ~by_batch & checked
            neither = ~per_seq & ~by_batch & checked
            # Integer codes and bincount: a million rows in milliseconds.
            fw_codes, fw_names = pd.factorize(text["framework"])
            kind = np.where(by_batch & per_seq, 0, np.where(by_batch, 1, np.where(per_seq, 2, 3)))
            kinds = ("both (batch 1)", "batch", "per_sequence", "neither")
            ok = checked & (fw_codes >= 0)
            counts = np.bincount(fw_codes[ok] * 4 + kind[ok], minlength=4 * len(fw_names))
            provenance["throughput_identity_counts"] = {
                f"{fw_names[j // 4]}|{kinds[j % 4]}": int(c) for j, c in enumerate(counts) if c}
            if fix.any():
                fix_fw = np.unique(fw_codes[fix & (fw_codes >= 0)])
                fws = sorted(str(fw_names[c]) for c in fix_fw)
                # The batch-1 rows of those frameworks ran at n_batch 1 (the prompt token by token).
                ones = (by_batch & per_seq & checked & np.isin(fw_codes, fix_fw)
                        & (batch == 1).fillna(False).to_numpy())
                n_batch = np.where(fix | ones, batch.to_numpy(dtype="float64"), np.nan)
                runs["fw_n_batch"] = n_batch
                runs["batch_size"] = batch.where(~fix, 1.0)
                issues.append(Issue(
                    file, None, "Batch Size",
                    f"{int(fix.sum())} row(s) (framework: {', '.join(fws)}) report the throughput of one "
                    "sequence, (input + output) / Latency, not batch x (input + output) / Latency: their "
                    "Batch Size is read as llama.cpp's n_batch (prompt tokens per forward pass) for one "
                    "sequence, kept as fw_n_batch with batch_size 1 and the throughput as written "
                    f"({int(ones.sum())} batch-1 row(s) of the same framework get fw_n_batch 1)", "info"))
            if neither.any():
                first = ", ".join(str(int(r)) for r in runs["source_row"].to_numpy()[neither][:5])
                issues.append(Issue(
                    file, None, "Throughput",
                    f"{int(neither.sum())} row(s) (first: {first}) match neither batch x (input + output) / "
                    "Latency nor (input + output) / Latency within 1 %; Throughput kept as written "
                    "(total tokens/s)", "warning"))
        runs["total_throughput_tok_s"] = total
        runs["output_throughput_tok_s"] = total * runs["output_len_tok"] / tok_per_seq
        # Categorical: one value over a million rows costs nothing to store or compare.
        runs["throughput_basis"] = pd.Categorical.from_codes(np.zeros(len(runs), dtype="int8"), ["total"])

    @staticmethod
    def _end_latency(runs: pd.DataFrame, num: dict[str, pd.Series], keep: np.ndarray,
                     issues: list[Issue], file: str) -> None:
        end = num["end_latency"]
        ttft = num.get("ttft")
        one_token = (runs["output_len_tok"] == 1).to_numpy()
        if ttft is not None:
            foreign = one_token & (end > 2 * ttft).fillna(False).to_numpy()
        else:
            foreign = np.zeros(len(runs), dtype=bool)
        runs["e2e_latency_s"] = end.where(~foreign)
        if foreign.any():
            runs["fw_end_latency_s"] = end.where(foreign)
            issues.append(Issue(
                file, None, "end_latency",
                f"{int((foreign & keep).sum())} row(s) with output length 1 have an end latency far above "
                "their TTFT, so it is not the latency of that 1-token run (in LLM-Inference-Bench it equals "
                "the Latency of the input = output = 1024 run of the same system); kept as fw_end_latency_s, "
                "not e2e_latency_s", "info"))

    @staticmethod
    def _power(runs: pd.DataFrame, power: pd.Series, keep: np.ndarray, issues: list[Issue], file: str,
               col: str) -> None:
        unit = power_unit(power[keep])
        if unit == "mW":
            runs["power_w"] = power / 1000.0
            issues.append(Issue(file, None, col,
                                "avg_power read as milliwatts (mean of integer NVML samples: values such as "
                                "222122.27 are 222 W, within the devices' power limits) and converted to watts",
                                "info"))
        elif unit == "W":
            runs["power_w"] = power
        else:
            runs["hw_avg_power_raw"] = power
            issues.append(Issue(file, None, col, "the unit of avg_power could not be decided from its values; "
                                "kept as hw_avg_power_raw, not as power_w", "info"))

    @staticmethod
    def _kv_cache(runs: pd.DataFrame, kv: pd.Series, rows: CsvRows, keep: np.ndarray,
                  issues: list[Issue], file: str, col: str) -> None:
        low = kv.str.lower()
        enabled = pd.Series(np.nan, index=runs.index)
        enabled = enabled.mask(low.str.startswith("without").fillna(False), 0.0)
        enabled = enabled.mask((low.str.startswith("with ") | (low == "with")).fillna(False), 1.0)
        unknown = (enabled.isna() & kv.notna()).to_numpy() & keep
        for i in np.flatnonzero(unknown):
            issues.append(Issue(file, int(rows.source_row[i]), col,
                                f"expected 'With KV Cache' or 'Without KV Cache', got {kv.iloc[i]!r}", "warning"))
        runs["fw_kv_cache_enabled"] = enabled

    @staticmethod
    def _dtypes(runs: pd.DataFrame, variant: pd.Series, keep: np.ndarray, issues: list[Issue],
                file: str, col: str) -> None:
        weight = variant.str.extract(r"(?i)weight\s*=\s*([\w.]+)", expand=False).str.lower()
        kv = variant.str.extract(r"(?i)kv\s*cache\s*=\s*([\w.]+)", expand=False).str.lower()
        w_dtype = weight.map(lambda w: _WEIGHT_WORDS.get(w, (w, None))[0] if isinstance(w, str) else None)
        quant = weight.map(lambda w: _WEIGHT_WORDS.get(w, (None, None))[1] if isinstance(w, str) else None)
        runs["weight_dtype"] = w_dtype.astype("string")
        runs["quantization"] = quant.astype("string")
        runs["kv_cache_dtype"] = kv.astype("string")
        full = (weight == "full_prec").fillna(False).to_numpy() & keep
        if full.any():
            issues.append(Issue(file, None, col, f"{int(full.sum())} row(s) say 'Weight = full_prec', which does "
                                "not name fp16 or bf16; weight_dtype left empty", "info"))

    @staticmethod
    def _parallel(runs: pd.DataFrame, ptype: pd.Series, rows: CsvRows, keep: np.ndarray,
                  issues: list[Issue], file: str, col: str) -> None:
        n = runs["device_count"].to_numpy(dtype="float64")
        keys = list(zip(ptype.fillna("").tolist(), n.tolist(), strict=True))
        decoded = {key: _parallelism(*key) for key in set(keys)}
        tp, pp, ep, mtp, prob = (list(x) for x in zip(*[decoded[k] for k in keys], strict=True)) \
            if keys else ([], [], [], [], [])
        runs["tp_size"] = np.asarray(tp, dtype="float64")
        runs["pp_size"] = np.asarray(pp, dtype="float64")
        if np.isfinite(np.asarray(ep, dtype="float64")).any():
            runs["fw_moe_ep_size"] = np.asarray(ep, dtype="float64")
            runs["fw_moe_tp_size"] = np.asarray(mtp, dtype="float64")
        for i, p in enumerate(prob):
            if p and keep[i]:
                issues.append(Issue(file, int(rows.source_row[i]), col, p + "; tp/pp sizes left empty", "warning"))
        with np.errstate(invalid="ignore"):
            mismatch = keep & np.isfinite(runs["tp_size"].to_numpy()) & \
                (runs["tp_size"].to_numpy() * runs["pp_size"].to_numpy() != n)
        for i in np.flatnonzero(mismatch):
            issues.append(Issue(file, int(rows.source_row[i]), col,
                                f"tp x pp = {runs['tp_size'].iloc[i] * runs['pp_size'].iloc[i]:g} but Num of "
                                f"Hardware = {n[i]:g}", "warning"))
