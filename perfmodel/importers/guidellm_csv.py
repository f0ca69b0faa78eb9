"""CSV summaries of GuideLLM benchmarks (format ``guidellm-csv``).

Some users flatten GuideLLM's ``benchmarks.json`` into one CSV row per benchmark:
``source_file,profile,rate,duration_s,total_requests,error_requests,ttft_*_ms,
itl_*_ms,req_latency_*_s,rps_mean,concurrency_mean,prompt_tokens_mean,
output_tokens_mean``. ``-`` marks a missing value; TTFT and ITL are in
milliseconds, request latency in seconds.

Profiles map to load kinds: ``concurrent`` -> ``concurrency`` with the level in
``rate`` (or, when ``rate`` is ``-``, the measured mean concurrency rounded);
``synchronous`` -> concurrency 1; ``constant``/``poisson`` -> ``request_rate``;
``throughput`` -> ``offline`` (everything at once; the measured concurrency is kept).
A ``constant`` or ``poisson`` profile is also the row's ``arrival`` (poisson with
``burstiness`` 1): at one rate they are two load points, not repeats of one.

The CSV has no token throughput. Output throughput is derived as ``rps_mean x
output_tokens_mean`` (basis ``"output"``): both are means over the successful
requests of the same benchmark window, so the product is the output tokens per
second of the window; its precision is limited by the file's rounding (rps to
0.01, i.e. up to ~1.5 % at 0.35 req/s, token means to whole tokens, ~0.4 %).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .base import Importer, ImportMeta, Issue, Parsed, Sample, register
from .generic_csv import csv_header_has, numeric_columns, read_csv_rows, require_columns, row_checks
from .lengths import MEAN_LENGTHS

__all__ = ["GuidellmCsvImporter", "PROFILE_LOAD_KINDS", "ARRIVAL_PROFILES"]

#: GuideLLM profile -> canonical load kind.
PROFILE_LOAD_KINDS: dict[str, str] = {
    "synchronous": "concurrency",
    "concurrent": "concurrency",
    "constant": "request_rate",
    "poisson": "request_rate",
    "throughput": "offline",
}

ARRIVAL_PROFILES = ("constant", "poisson")
"""Profiles that name their arrival process (``arrival``; poisson with ``burstiness`` 1)."""

_KEYS = ("profile", "rps_mean", "concurrency_mean", "prompt_tokens_mean", "output_tokens_mean")
# source column -> (canonical column, factor to seconds)
_LATENCIES: dict[str, tuple[str, float]] = {
    "ttft_mean_ms": ("ttft_s", 1e-3),
    "ttft_median_ms": ("ttft_p50_s", 1e-3),
    "ttft_p99_ms": ("ttft_p99_s", 1e-3),
    "itl_mean_ms": ("itl_s", 1e-3),
    "itl_median_ms": ("itl_p50_s", 1e-3),
    "itl_p99_ms": ("itl_p99_s", 1e-3),
    "req_latency_mean_s": ("e2e_latency_s", 1.0),
    "req_latency_median_s": ("e2e_latency_p50_s", 1.0),
    "req_latency_p99_s": ("e2e_latency_p99_s", 1.0),
}
_NUMERIC = ("rate", "duration_s", "total_requests", "error_requests", "rps_mean", "concurrency_mean",
            "prompt_tokens_mean", "output_tokens_mean", *_LATENCIES)


@register
class GuidellmCsvImporter(Importer):
    """One row per GuideLLM benchmark, flattened from benchmarks.json."""

    name = "guidellm-csv"
    label = "GuideLLM summary CSV"
    description = "profile,rate,...,ttft_mean_ms,...,rps_mean,concurrency_mean,prompt_tokens_mean,output_tokens_mean"

    def sniff(self, sample: Sample) -> float:
        return 0.9 if csv_header_has(sample, _KEYS) else 0.0

    def parse(self, sample: Sample, meta: ImportMeta) -> Parsed:
        """Read one benchmark per row.

        Raises
        ------
        ImportFormatError
            Only when the file has no header or the header lacks a column it needs
            (profile, rps_mean, concurrency_mean, prompt_tokens_mean, output_tokens_mean).
        """
        file = sample.name
        rows = read_csv_rows(sample, all_text=True)
        require_columns(rows, _KEYS, file, self.label)
        lower = {h.lower(): h for h in rows.header}
        keep, issues = row_checks(rows, file)
        num = numeric_columns(rows, _NUMERIC, keep, issues, file, columns=lower, expected="a number or '-'")
        n = len(rows.frame)
        nan = pd.Series(np.nan, index=rows.frame.index)
        profile = rows.col(lower["profile"]).astype("string").str.strip().str.lower()
        load_kind = profile.map(PROFILE_LOAD_KINDS).astype("string")
        unknown = keep & load_kind.isna().to_numpy()
        for i in np.flatnonzero(unknown):
            issues.append(Issue(file, int(rows.source_row[i]), lower["profile"],
                                f"unknown GuideLLM profile {profile.iloc[i]!r}; expected one of "
                                + ", ".join(PROFILE_LOAD_KINDS) + "; row skipped"))
        keep &= ~unknown
        rate = num.get("rate", nan)
        measured = num["concurrency_mean"]
        conc = (profile == "concurrent").fillna(False).to_numpy()
        batch = pd.Series(np.where(conc, rate, np.nan), index=rows.frame.index)
        guessed = conc & batch.isna().to_numpy() & measured.notna().to_numpy() & keep
        batch = batch.where(~guessed, measured.round())
        batch = batch.where(~(profile == "synchronous").fillna(False).to_numpy(), 1.0)
        if guessed.any():
            issues.append(Issue(file, None, lower.get("rate", "rate"),
                                f"{int(guessed.sum())} concurrent row(s) do not write their concurrency level; "
                                "taken as the measured mean concurrency, rounded", "warning"))
        request_rate = pd.Series(np.where((load_kind == "request_rate").fillna(False).to_numpy(), rate,
                                          np.nan), index=rows.frame.index)
        request_rate = request_rate.where(~(load_kind == "offline").fillna(False).to_numpy(), np.inf)
        no_rate = keep & (load_kind == "request_rate").fillna(False).to_numpy() & request_rate.isna().to_numpy()
        for i in np.flatnonzero(no_rate):
            issues.append(Issue(file, int(rows.source_row[i]), lower.get("rate", "rate"),
                                "a constant/poisson benchmark without its rate; row kept without it", "warning"))
        # The profile is the arrival process: constant5 and poisson5 (both at 5 req/s) are two points, not
        # repeats of one (4.68 against 5.58 req/s achieved in guidellm-pd-disaggregation).
        arrival = profile.where(profile.isin(ARRIVAL_PROFILES).fillna(False)).astype("string")
        burstiness = pd.Series(np.where((profile == "poisson").fillna(False).to_numpy(), 1.0, np.nan),
                               index=rows.frame.index)
        total = num.get("total_requests", nan)
        errors = num.get("error_requests", nan)
        rps = num["rps_mean"]
        out_len = num["output_tokens_mean"]
        runs = pd.DataFrame({
            "input_len_tok": num["prompt_tokens_mean"],
            "output_len_tok": out_len,
            "load_kind": load_kind,
            "batch_size": batch,
            "request_rate_rps": request_rate,
            "arrival": arrival,
            "burstiness": burstiness,
            "measured_concurrency": measured,
            "n_requests": (total - errors.fillna(0)),
            "n_failed": errors,
            "request_throughput_rps": rps,
            "output_throughput_tok_s": rps * out_len,
            "throughput_basis": "output",
            "source_row": rows.source_row,
        })
        for key, (col, factor) in _LATENCIES.items():
            if key in num:
                runs[col] = num[key] * factor
        if n:
            issues.append(Issue(file, None, "rps_mean", "output throughput derived as rps_mean x "
                                "output_tokens_mean (the file holds no token throughput); precise to the file's "
                                "rounding (rps to 0.01, lengths to whole tokens)", "info"))
        provenance = {"benchmarks": rows.col(lower["source_file"]).astype("string").tolist()} \
            if "source_file" in lower else {}
        provenance[MEAN_LENGTHS] = True  # prompt_tokens_mean, output_tokens_mean
        return Parsed(runs=runs.loc[keep].reset_index(drop=True), issues=issues, provenance=provenance)
