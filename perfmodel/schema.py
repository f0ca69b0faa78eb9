"""The canonical runs table: one row per measured point.

Every importer and every sweep produces this table; everything downstream reads
only this table. Column names are snake_case and carry their unit
(``_s`` seconds, ``_tok`` tokens, ``_tok_s`` tokens per second, ``_rps``
requests per second, ``_w`` watts, ``_j`` joules). Framework-internal metrics
ride along as extra float columns named ``fw_<name>``; hardware telemetry as
``hw_<name>``.

Throughput is recorded in two normalised columns, ``output_throughput_tok_s``
(generated tokens per second over all concurrent requests) and
``total_throughput_tok_s`` (input plus output tokens per second); a source that
reports only one leaves the other empty unless it can be derived exactly from
the lengths, and ``throughput_basis`` records what the source itself reported,
so nothing is guessed silently.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from .errors import Problem, ValidationError

__all__ = [
    "column_words",
    "Column",
    "COLUMNS",
    "COLUMN_NAMES",
    "REQUIRED",
    "FRAMEWORK_PREFIX",
    "TELEMETRY_PREFIX",
    "LOAD_KINDS",
    "ARRIVALS",
    "THROUGHPUT_BASES",
    "LATENCY_COLUMNS",
    "column",
    "empty_runs",
    "coerce_runs",
    "check_runs",
    "validate_runs",
    "is_extra_column",
]

FRAMEWORK_PREFIX = "fw_"
"""Prefix of framework-internal metric columns (server ``/metrics``, scheduler stats)."""
TELEMETRY_PREFIX = "hw_"
"""Prefix of hardware-telemetry columns (NVML samples aggregated per point)."""

LOAD_KINDS = ("static_batch", "concurrency", "request_rate", "offline")
"""What ``batch_size`` means for a point.

``static_batch``: ``batch_size`` sequences processed together (offline generate);
``concurrency``: a closed loop keeping ``batch_size`` requests in flight;
``request_rate``: an open loop at ``request_rate_rps`` (``batch_size`` may be empty);
``offline``: a whole request list submitted at once (throughput mode), batch chosen by the engine.
"""

ARRIVALS = ("constant", "poisson", "gamma", "trace")
"""How the requests of an open-loop load (a ``request_rate_rps`` that limits it) arrive, in ``arrival``.

``constant``: evenly spaced at the rate (GuideLLM ``constant``, AIPerf ``constant``);
``poisson``: exponential gaps (GuideLLM ``poisson``, ``vllm bench serve`` at ``--burstiness 1``, the
default, and vLLM's benchmark_serving.py before it had the option, which knew no other);
``gamma``: gamma-distributed gaps of shape ``burstiness`` (``vllm bench serve --burstiness`` other than 1:
below 1 burstier than Poisson, above 1 more even); ``trace``: replayed timestamps (GuideLLM ``trace``).
At one rate the process changes what is measured (GuideLLM at 5 req/s on two T4s, guidellm-pd-disaggregation: constant 4.68
req/s and 562 tok/s, Poisson 5.58 req/s and 703 tok/s), so runs that differ in it are different points,
never repeats of one. Empty where the source does not record it and where no finite rate limits the load
(closed loops, offline runs); a concurrency run with a finite rate cap (vLLM ``--max-concurrency`` with
``--request-rate``) has one.
"""

THROUGHPUT_BASES = ("output", "total", "output+total", "total_per_sequence", "none")
"""What throughput figure(s) the *source* reported.

``total_per_sequence`` marks rows imported before 2026-12-01 from
LLM-Inference-Bench's llama.cpp rows, whose per-sequence figure was multiplied
by the file's "Batch Size"; that batch is now read as llama.cpp's ``n_batch``
(``fw_n_batch``) for one sequence and the figure kept as written (``total``).
"""

Kind = Literal["str", "int", "float", "datetime"]


@dataclass(frozen=True)
class Column:
    """One canonical column."""

    name: str
    kind: Kind
    unit: str
    description: str
    required: bool = False


def _lat(stem: str, what: str) -> list[Column]:
    cols = [Column(f"{stem}_s", "float", "s", f"{what}, mean over requests")]
    for p in ("p50", "p90", "p99"):
        cols.append(Column(f"{stem}_{p}_s", "float", "s", f"{what}, {p} over requests"))
    return cols


COLUMNS: tuple[Column, ...] = (
    # --- identity of the system under test
    Column("hardware", "str", "", "canonical hardware id from the catalog", True),
    Column("hardware_raw", "str", "", "hardware name as written in the source"),
    Column("device_count", "int", "devices", "accelerators used by the deployment", True),
    Column("tp_size", "int", "", "tensor-parallel size"),
    Column("pp_size", "int", "", "pipeline-parallel size"),
    Column("framework", "str", "", "serving framework or engine (canonical lower-case name)", True),
    Column("framework_version", "str", "", "framework version as reported"),
    Column("model", "str", "", "canonical model id from the catalog", True),
    Column("model_raw", "str", "", "model name as written in the source"),
    Column("weight_dtype", "str", "", "dtype of the weights (bf16, fp16, fp8, int4, ...)"),
    Column("kv_cache_dtype", "str", "", "dtype of the KV cache"),
    Column("quantization", "str", "", "quantization scheme (awq, gptq, marlin, fp8, ...)"),
    # --- workload
    Column("input_len_tok", "float", "tokens", "input (prompt) length per request (mean where varied)", True),
    Column("output_len_tok", "float", "tokens", "output length per request (mean where varied)", True),
    Column("load_kind", "str", "", "static_batch | concurrency | request_rate | offline", True),
    Column("batch_size", "float", "sequences", "static batch size or concurrency level"),
    Column("request_rate_rps", "float", "req/s", "offered request rate (inf = all at once)"),
    Column("arrival", "str", "", "arrival process at the request rate: constant | poisson | gamma | trace "
           "(see ARRIVALS); empty where not recorded"),
    Column("burstiness", "float", "", "gamma shape of the inter-arrival gaps (vLLM --burstiness): 1 for "
           "poisson, < 1 burstier, > 1 more even; empty for constant, trace or unrecorded"),
    Column("measured_concurrency", "float", "requests", "mean requests in flight, as measured"),
    Column("n_requests", "int", "requests", "successful requests measured in the point"),
    Column("n_failed", "int", "requests", "failed requests in the point"),
    # --- results
    Column("output_throughput_tok_s", "float", "tok/s", "generated tokens per second, all requests"),
    Column("total_throughput_tok_s", "float", "tok/s", "input + output tokens per second, all requests"),
    Column("request_throughput_rps", "float", "req/s", "completed requests per second"),
    Column("throughput_basis", "str", "", "which throughput the source reported (see THROUGHPUT_BASES)", True),
    *_lat("e2e_latency", "end-to-end request latency"),
    *_lat("ttft", "time to first token"),
    *_lat("tpot", "time per output token after the first"),
    *_lat("itl", "inter-token latency"),
    Column("power_w", "float", "W", "mean accelerator power during the point"),
    Column("energy_j", "float", "J", "accelerator energy for the point"),
    # --- provenance
    Column("repeat_idx", "int", "", "index of this repeat of the same configuration", True),
    Column("timestamp", "datetime", "UTC", "when the point was measured"),
    Column("source_format", "str", "", "importer or sweep backend that produced the row", True),
    Column("source_file", "str", "", "file the row came from (base name)"),
    Column("source_row", "int", "", "1-based row/record in the source file"),
)

COLUMN_NAMES: tuple[str, ...] = tuple(c.name for c in COLUMNS)
REQUIRED: tuple[str, ...] = tuple(c.name for c in COLUMNS if c.required)
LATENCY_COLUMNS: tuple[str, ...] = tuple(c.name for c in COLUMNS if c.unit == "s")
_BY_NAME = {c.name: c for c in COLUMNS}
_THROUGHPUT_COLUMNS = ("output_throughput_tok_s", "total_throughput_tok_s", "request_throughput_rps")

# Latencies beyond a day for one request are a unit error, not a measurement.
MAX_LATENCY_S = 86_400.0


def column(name: str) -> Column:
    """Return the :class:`Column` named ``name`` (``KeyError`` if not canonical)."""
    return _BY_NAME[name]


_WORDS = {"ttft": "TTFT", "tpot": "TPOT", "itl": "ITL", "len": "length"}
"""Words of column names written out in titles and sentences (``input_len_tok`` is "input length")."""


def column_words(name: str) -> str:
    """A canonical column's name in words, without its unit: ``"TPOT"`` for ``tpot_s``, ``"output throughput"``
    for ``output_throughput_tok_s``, ``"e2e latency"`` for ``e2e_latency_s``; any other name as it is.

    Sentences (a Monitor hint) use it; :func:`perfmodel.plots.axis_title` adds the unit for headers.
    """
    try:
        column(name)
    except KeyError:
        return name
    stem = name
    for suffix in ("_tok_s", "_rps", "_tok", "_s", "_w", "_j"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    return " ".join(_WORDS.get(w, w) for w in stem.split("_"))


def is_extra_column(name: str) -> bool:
    """True for framework-internal (``fw_``) and telemetry (``hw_``) columns."""
    return name.startswith(FRAMEWORK_PREFIX) or name.startswith(TELEMETRY_PREFIX)


def _pandas_dtype(kind: Kind) -> object:
    return {
        "str": "string",
        "int": "Int64",
        "float": "float64",
        "datetime": "datetime64[ns, UTC]",
    }[kind]


def empty_runs() -> pd.DataFrame:
    """An empty runs table with every canonical column and its dtype."""
    return pd.DataFrame({c.name: pd.Series(dtype=_pandas_dtype(c.kind)) for c in COLUMNS})


def coerce_runs(df: pd.DataFrame, *, file: str | None = None) -> tuple[pd.DataFrame, list[Problem]]:
    """Cast a candidate runs table to canonical dtypes and column order.

    Missing optional columns are added empty; unknown columns that are not
    ``fw_``/``hw_`` extras are reported. Values that do not parse are reported
    (by row and column) and left empty.

    Parameters
    ----------
    df
        Candidate table; a ``source_row`` column, when present, is used to name rows.
    file
        File name used in problem messages.

    Returns
    -------
    (table, problems)
        The coerced table (a new frame) and the problems found while coercing.
    """
    problems: list[Problem] = []
    n = len(df)
    rows = _row_labels(df)
    out: dict[str, pd.Series] = {}
    for c in COLUMNS:
        if c.name not in df.columns:
            if c.required:
                problems.append(Problem(f"required column is missing ({c.description})",
                                        file=file, column=c.name))
            # A broadcast scalar, not a list of n NAs: ~20x faster on a million rows.
            out[c.name] = pd.Series(pd.NA if c.kind in ("str", "int") else np.nan,
                                    index=df.index, dtype=_pandas_dtype(c.kind)) if n else \
                pd.Series(dtype=_pandas_dtype(c.kind))
            continue
        s = df[c.name]
        out[c.name] = _coerce_series(s, c, rows, file, problems)
    for name in df.columns:
        if name in _BY_NAME:
            continue
        if is_extra_column(name):
            s = df[name]
            num = pd.to_numeric(s, errors="coerce")
            bad = num.isna() & s.notna()
            for i in np.flatnonzero(bad.to_numpy())[:5]:
                problems.append(Problem(f"expected a number, got {s.iloc[i]!r}", file=file,
                                        row=rows[i], column=name))
            out[name] = num.astype("float64")
        else:
            problems.append(Problem(
                f"not a canonical column; framework metrics must start with {FRAMEWORK_PREFIX!r} "
                f"and telemetry with {TELEMETRY_PREFIX!r}", file=file, column=name))
    table = pd.DataFrame(out, index=df.index)
    return table.reset_index(drop=True), problems


def _row_labels(df: pd.DataFrame) -> list[int]:
    if "source_row" in df.columns:
        sr = pd.to_numeric(df["source_row"], errors="coerce")
        if sr.notna().all():
            return sr.astype("int64").tolist()
    return list(range(1, len(df) + 1))


def _coerce_series(s: pd.Series, c: Column, rows: list[int], file: str | None,
                   problems: list[Problem]) -> pd.Series:
    if c.kind == "str":
        res = s.astype("string")
        return res.str.strip().replace("", pd.NA)
    if c.kind == "datetime":
        res = pd.to_datetime(s, errors="coerce", utc=True, format="mixed")
        bad = res.isna() & s.notna()
        for i in np.flatnonzero(bad.to_numpy())[:5]:
            problems.append(Problem(f"expected a date/time, got {s.iloc[i]!r}", file=file,
                                    row=rows[i], column=c.name))
        return res.astype("datetime64[ns, UTC]")
    num = pd.to_numeric(s, errors="coerce")
    bad = num.isna() & s.notna()
    if bad.any():
        # Only the cells that failed are turned into text: converting a whole numeric
        # column to strings costs seconds on a million rows.
        blank = s[bad].astype("string").str.strip().isin(["", "nan", "NaN", "<NA>"]).fillna(False)
        bad.loc[bad] = ~blank.to_numpy(dtype=bool)
    idx = np.flatnonzero(bad.to_numpy())
    for i in idx[:5]:
        problems.append(Problem(f"expected a number, got {s.iloc[i]!r}", file=file, row=rows[i],
                                column=c.name))
    if len(idx) > 5:
        problems.append(Problem(f"{len(idx) - 5} more non-numeric values", file=file, column=c.name))
    if c.kind == "int":
        frac = num.notna() & np.isfinite(num) & (num != np.round(num))
        for i in np.flatnonzero(frac.to_numpy())[:5]:
            problems.append(Problem(f"expected a whole number, got {s.iloc[i]!r}", file=file,
                                    row=rows[i], column=c.name))
        num = num.where(~frac)
        num = num.where(np.isfinite(num.astype("float64")))
        return num.round().astype("Int64")
    return num.astype("float64")


def check_runs(df: pd.DataFrame, *, file: str | None = None) -> list[Problem]:
    """Every row-level problem of a coerced runs table.

    Checks required values present, positive lengths and batch, at least one
    positive finite throughput, non-negative finite latencies below a day,
    TTFT not above end-to-end latency, valid ``load_kind``, ``arrival`` and
    ``throughput_basis``, a positive ``burstiness`` that agrees with its
    ``arrival``, and positive device counts. Each problem names its
    row (``source_row`` when present) and column.

    Parameters
    ----------
    df
        A table as returned by :func:`coerce_runs`.
    file
        File name used in messages.

    Returns
    -------
    list of Problem
        Empty when the table is valid.
    """
    problems: list[Problem] = []
    rows = _row_labels(df)

    def flag(mask: pd.Series | np.ndarray, col: str, msg: str) -> None:
        m = np.asarray(mask, dtype=bool)
        for i in np.flatnonzero(m):
            val = df[col].iloc[i] if col in df.columns else None
            problems.append(Problem(msg.format(v=val), file=file, row=rows[i], column=col))

    for name in REQUIRED:
        if name not in df.columns:
            problems.append(Problem("required column is missing", file=file, column=name))
            continue
        flag(df[name].isna().to_numpy(), name, "required value is missing")
    if "load_kind" in df.columns:
        lk = df["load_kind"]
        flag((lk.notna() & ~lk.isin(LOAD_KINDS)).to_numpy(), "load_kind",
             "{v!r} is not one of " + ", ".join(LOAD_KINDS))
    if "arrival" in df.columns:
        ar = df["arrival"]
        flag((ar.notna() & ~ar.isin(ARRIVALS)).to_numpy(), "arrival",
             "{v!r} is not one of " + ", ".join(ARRIVALS))
    if "burstiness" in df.columns:
        v = df["burstiness"].astype("float64")
        flag((v.notna() & ~(np.isfinite(v) & (v > 0))).to_numpy(), "burstiness", "{v} is not a finite number > 0")
        if "arrival" in df.columns:
            ar = df["arrival"]
            flag(((ar == "poisson").fillna(False) & v.notna() & (v != 1)).to_numpy(), "burstiness",
                 "burstiness {v} with arrival 'poisson' (a Poisson process is burstiness 1; other values are "
                 "'gamma')")
            flag((ar.isin(("constant", "trace")).fillna(False) & v.notna()).to_numpy(), "burstiness",
                 "burstiness {v} with a constant or trace arrival (it is the shape of gamma gaps)")
    if "throughput_basis" in df.columns:
        tb = df["throughput_basis"]
        flag((tb.notna() & ~tb.isin(THROUGHPUT_BASES)).to_numpy(), "throughput_basis",
             "{v!r} is not one of " + ", ".join(THROUGHPUT_BASES))
    for name in ("input_len_tok",):
        if name in df.columns:
            v = df[name].astype("float64")
            flag((v.notna() & ~(np.isfinite(v) & (v >= 0))).to_numpy(), name,
                 "{v} is not a finite length >= 0")
    if "output_len_tok" in df.columns:
        v = df["output_len_tok"].astype("float64")
        flag((v.notna() & ~(np.isfinite(v) & (v > 0))).to_numpy(), "output_len_tok",
             "{v} is not a finite length > 0")
    for name in ("batch_size", "device_count", "tp_size", "pp_size"):
        if name in df.columns:
            v = df[name].astype("float64")
            flag((v.notna() & ~(np.isfinite(v) & (v > 0))).to_numpy(), name, "{v} is not > 0")
    if "request_rate_rps" in df.columns:
        v = df["request_rate_rps"].astype("float64")
        flag((v.notna() & ~(v > 0)).to_numpy(), "request_rate_rps", "{v} is not > 0 (use inf for 'all at once')")
    if {"load_kind", "batch_size"} <= set(df.columns):
        need_b = df["load_kind"].isin(("static_batch", "concurrency")).fillna(False)
        flag((need_b & df["batch_size"].isna()).to_numpy(), "batch_size",
             "a static_batch or concurrency point needs a batch size")
    present = [c for c in _THROUGHPUT_COLUMNS if c in df.columns]
    any_pos = np.zeros(len(df), dtype=bool)
    for name in present:
        v = df[name].astype("float64")
        flag((v.notna() & ~(np.isfinite(v) & (v > 0))).to_numpy(), name,
             "throughput {v} is not a positive finite number")
        any_pos |= (v > 0).fillna(False).to_numpy() & np.isfinite(v.fillna(0).to_numpy())
    if present:
        basis_none = (df["throughput_basis"] == "none").fillna(False).to_numpy() \
            if "throughput_basis" in df.columns else np.zeros(len(df), dtype=bool)
        none_valid = ~any_pos & ~basis_none
        all_missing = np.ones(len(df), dtype=bool)
        for name in present:
            all_missing &= df[name].isna().to_numpy()
        flag(none_valid & all_missing, "output_throughput_tok_s",
             "no throughput: the row has no output, total or request throughput")
    for name in LATENCY_COLUMNS:
        if name not in df.columns:
            continue
        v = df[name].astype("float64")
        flag((v.notna() & ~(np.isfinite(v) & (v >= 0))).to_numpy(), name,
             "latency {v} is not a finite number >= 0")
        flag((v > MAX_LATENCY_S).fillna(False).to_numpy(), name,
             "latency {v} s is longer than a day: probably milliseconds written as seconds")
    if {"ttft_s", "e2e_latency_s"} <= set(df.columns):
        t, e = df["ttft_s"].astype("float64"), df["e2e_latency_s"].astype("float64")
        flag((t > e * (1 + 1e-6) + 1e-9).fillna(False).to_numpy(), "ttft_s",
             "time to first token {v} s exceeds the end-to-end latency")
    for name in ("power_w", "energy_j", "n_requests", "n_failed", "measured_concurrency"):
        if name in df.columns:
            v = df[name].astype("float64")
            flag((v.notna() & ~(np.isfinite(v) & (v >= 0))).to_numpy(), name, "{v} is not >= 0")
    return problems


def validate_runs(df: pd.DataFrame, *, file: str | None = None) -> pd.DataFrame:
    """Coerce and check a runs table; raise one error listing every problem.

    Parameters
    ----------
    df
        Candidate runs table.
    file
        File name used in the error message.

    Returns
    -------
    pandas.DataFrame
        The table in canonical dtypes and column order (extras after canonical columns).

    Raises
    ------
    ValidationError
        With every problem found (missing columns, wrong types, non-positive or
        NaN throughput, impossible latencies), each naming its row and column.
    """
    table, problems = coerce_runs(df, file=file)
    problems += check_runs(table, file=file)
    if problems:
        where = f" in {file}" if file else ""
        raise ValidationError(f"the runs table{where} is not valid ({len(problems)} problem(s)):", problems)
    return table


def finite_or_none(x: float | None) -> float | None:
    """``x`` if it is a finite number, else ``None`` (for JSON output)."""
    if x is None:
        return None
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None
