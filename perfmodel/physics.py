"""Roofline bounds from the catalogs, and the points that beat them.

For every row of a runs table, :func:`roofline` computes what the hardware
could do at best for that workload, from public figures only (peak dense
FLOP/s and peak memory bandwidth of the device, parameter count and KV-cache
geometry of the model), with no efficiency factor:

- prefill (compute bound): ``2 * active_params * input_len * batch`` FLOPs over
  the devices' aggregate peak; where the runs record llama.cpp's ``n_batch``
  (``fw_n_batch``, prompt tokens per forward pass), also no shorter than one read
  of the weights per pass, ``ceil(batch * input_len / n_batch)`` of them (at
  ``n_batch`` 1 the prompt is fed token by token, as slow as decoding it);
- one decode step (memory bound): the weights each step must read (all of a
  dense model; for a mixture of experts the experts a batch of this size is
  expected to touch under uniform routing, never fewer than one token's
  active experts) plus the KV cache of every sequence at its mean context,
  over the devices' aggregate bandwidth; or the step's compute
  (``2 * active_params * batch``) if that takes longer;
- ``e2e_s_min = prefill_s_min + (output_len - 1) * decode_step_s_min`` (the
  prefill emits the first token) and ``output_tok_s_max = batch * output_len /
  e2e_s_min``, the upper bound on output throughput;
- ``ttft_s_min``, the floor of the time to first token: the prefill's FLOPs at
  peak, or one read of all the weights, whichever is longer (a short prompt is
  bound by the read). Every one of the 30 TTFTs of LLM-Inference-Bench's
  ``ttft_itl.csv`` lies above it, NVIDIA's at 1.2-1.9x (tested).

:func:`flag_suspect` marks measured points that run faster than the bound: a
throughput no hardware with the catalogued figures can reach points to a unit
error, a mislabelled device or a miscounted batch in the source.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from . import catalog
from .catalog import HardwareSpec, ModelSpec
from .errors import PerfmodelError, Problem, UnknownNameError, ValidationError, as_written

__all__ = [
    "BOUND_KINDS",
    "PREFILLED_TOGETHER",
    "prefills_together",
    "QUERY_COLUMNS",
    "DTYPE_BYTES",
    "ROOFLINE_COLUMNS",
    "KV_USABLE_FRACTION",
    "check_query",
    "cramped",
    "cramped_note",
    "kv_fit_batch",
    "dtype_bytes",
    "hardware_specs",
    "model_specs",
    "roofline",
    "prefill_s_min",
    "n_batch_of",
    "flag_suspect",
    "flag_fast_ttft",
    "SUSPECT_BASES",
]

BOUND_KINDS = ("compute", "memory")
"""Values of ``roofline(...)["bound"]``: which limit dominates the end-to-end time."""

QUERY_COLUMNS = ("hardware", "model", "device_count", "input_len_tok", "output_len_tok", "batch_size")
"""Columns a row needs for its physical features and bounds."""

DTYPE_BYTES: Mapping[str, float] = {
    "fp64": 8.0, "fp32": 4.0, "tf32": 4.0, "fp16": 2.0, "bf16": 2.0, "fp8": 1.0, "int8": 1.0,
    "fp4": 0.5, "mxfp4": 0.5, "int4": 0.5,
}
"""Bytes per weight element by (canonical) dtype."""

# Quantization schemes whose weights are 4-bit (the weight_dtype column is often empty for them).
_FOUR_BIT_QUANT = ("awq", "gptq", "marlin", "int4", "w4a16", "w4a8", "nf4", "bnb4", "q4")
_EIGHT_BIT_QUANT = ("fp8", "int8", "w8a8", "w8a16", "q8")

ROOFLINE_COLUMNS = ("dtype_bytes", "active_params", "weight_bytes", "weight_bytes_read", "kv_bytes_per_token",
                    "peak_flops", "mem_bw_bps", "prefill_s_min", "decode_mem_s_min",
                    "decode_compute_s_min", "decode_step_s_min", "e2e_s_min", "output_tok_s_max",
                    "total_tok_s_max", "bound", "kv_fit_batch", "memory_bytes", "ttft_s_min")
"""Columns of :func:`roofline`'s result, in order."""

KV_USABLE_FRACTION = 0.9
"""Share of device memory a server gives the weights and the KV cache together (vLLM's default
``gpu_memory_utilization``; TensorRT-LLM's ``free_gpu_memory_fraction`` is also 0.9, of what the weights leave)."""


def _row_labels(runs: pd.DataFrame) -> np.ndarray:
    # The row a user would count in the source when known, else the 1-based position.
    if "source_row" in runs.columns:
        sr = pd.to_numeric(runs["source_row"], errors="coerce")
        if sr.notna().all():
            return sr.to_numpy(dtype="int64")
    return np.arange(1, len(runs) + 1)


_NUMERIC_QUERY = frozenset({"device_count", "input_len_tok", "output_len_tok", "batch_size", "tp_size",
                            "pp_size"})
_WHOLE_QUERY = frozenset({"device_count", "tp_size", "pp_size"})
"""Query columns that count devices: whole numbers (lengths and batches may be means, as clients report them)."""


def _is_missing(value: object) -> bool:
    # An empty cell (NaN, None, pd.NA); "nan" typed in a CSV reads the same as an empty cell.
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def check_query(runs: pd.DataFrame, *, columns: tuple[str, ...] = QUERY_COLUMNS,
                file: str | None = None, query: bool = False, what: str = "query table") -> None:
    """Check that ``runs`` has what physical features and bounds need.

    Parameters
    ----------
    runs
        A runs table or a table of queries with canonical column names.
    columns
        The columns required. Lengths, batch and device/parallel sizes must be valid
        numbers; any other column (names) must be present and non-empty.
    file
        File name for messages.
    query
        The rows are a user's queries (``perfmodel predict``'s file), not measurements: a ``weight_dtype`` the
        catalog does not know and ``tp_size`` x ``pp_size`` above ``device_count`` are refused (in
        measurements, which predictors also read, an engine's own name for the dtype, such as ``auto``, is
        read as the model's default, and the sizes as recorded).
    what
        What the rows are, for the message: ``"training table"`` where a predictor's ``fit`` checks its rows.

    Raises
    ------
    ValidationError
        A required column is missing, or a length, batch or device count is
        missing, non-numeric, not finite or not positive (input length may be
        0), or a device count (device_count, tp_size, pp_size) is not a whole
        number; with ``query``, a ``weight_dtype`` the catalog does not know or
        ``tp_size`` x ``pp_size`` above ``device_count``; every problem names
        its row and column.
    """
    if not isinstance(runs, pd.DataFrame):
        raise PerfmodelError(f"expected a runs table (pandas DataFrame), got {type(runs).__name__}")
    problems: list[Problem] = []
    missing = [c for c in columns if c not in runs.columns]
    for c in missing:
        problems.append(Problem("required column is missing", file=file, column=c))
    rows = _row_labels(runs)
    for c in columns:
        if c in missing:
            continue
        s = runs[c]
        if c not in _NUMERIC_QUERY:
            bad = s.isna().to_numpy()
            for i in np.flatnonzero(bad)[:10]:
                problems.append(Problem("value is missing", file=file, row=int(rows[i]), column=c))
            continue
        if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
            v = s.to_numpy(dtype="float64", na_value=np.nan)  # to_numeric/astype cost more on small queries
        else:
            v = pd.to_numeric(s, errors="coerce").astype("float64").to_numpy()
        low = 0.0 if c == "input_len_tok" else None
        ok = np.isfinite(v) & ((v >= 0) if low is not None else (v > 0))
        need = "a finite number >= 0" if low is not None else "a finite number > 0"
        if c in _WHOLE_QUERY:  # 1.5 devices had been predicted as if they existed (4,399 tok/s against 3,489 at 1)
            ok &= np.isfinite(v) & (v >= 1) & (np.round(v) == v)
            need = "a whole number >= 1"
        for i in np.flatnonzero(~ok)[:10]:
            value = s.iloc[i]
            msg = f"value is missing (expected {need})" if _is_missing(value) else \
                f"expected {need}, got {as_written(value)}"
            problems.append(Problem(msg, file=file, row=int(rows[i]), column=c))
        if (~ok).sum() > 10:
            problems.append(Problem(f"{int((~ok).sum()) - 10} more invalid values", file=file, column=c))
    if query:
        problems += _optional_problems(runs, rows, file)
    if problems:
        raise ValidationError(f"the {what} is not usable ({len(problems)} problem(s)):", problems)


def _optional_problems(runs: pd.DataFrame, rows: np.ndarray, file: str | None) -> list[Problem]:
    """:func:`check_query`'s checks of a user's queries: a whole batch of at least 1, a ``weight_dtype`` and
    ``kv_cache_dtype`` the catalog knows (``float99`` had been read as the model's default), a valid ``load_kind``, and ``tp_size`` x ``pp_size``
    within ``device_count`` (TP 8 on 4 devices had been predicted)."""
    out: list[Problem] = []
    if "weight_dtype" in runs.columns:
        dtypes = runs["weight_dtype"].astype(object)
        bad = {v for v in pd.unique(dtypes.dropna()) if not _is_missing(v) and math.isnan(_bytes_of(v))}
        for i in [i for i, v in enumerate(dtypes) if v in bad][:10] if bad else []:
            out.append(Problem(f"unknown dtype {as_written(dtypes.iloc[i])}; known: {', '.join(DTYPE_BYTES)}",
                               file=file, row=int(rows[i]), column="weight_dtype"))
    if "batch_size" in runs.columns:  # sequences or requests at once: batch 0.5 had been answered in domain
        bb = pd.to_numeric(runs["batch_size"], errors="coerce").to_numpy(dtype=float)
        for i in np.flatnonzero(np.isfinite(bb) & (bb > 0) & ((bb < 1) | (np.round(bb) != bb)))[:10]:
            got = as_written(runs["batch_size"].iloc[i])
            out.append(Problem(f"expected a whole number >= 1 (sequences at once), got {got}", file=file,
                               row=int(rows[i]), column="batch_size"))
    if "kv_cache_dtype" in runs.columns:  # vLLM's "auto" is the activations' dtype
        kv = runs["kv_cache_dtype"].astype(object)
        bad = {v for v in pd.unique(kv.dropna()) if not _is_missing(v) and str(v).strip().lower() != "auto"
               and math.isnan(_bytes_of(v))}
        for i in [i for i, v in enumerate(kv) if v in bad][:10] if bad else []:
            out.append(Problem(f"unknown dtype {as_written(kv.iloc[i])}; known: auto, {', '.join(DTYPE_BYTES)}",
                               file=file, row=int(rows[i]), column="kv_cache_dtype"))
    if "load_kind" in runs.columns:  # a misspelt kind ("static") had made a configuration never measured
        from .schema import LOAD_KINDS

        lk = runs["load_kind"].astype(object)
        for i in [i for i, v in enumerate(lk) if not _is_missing(v) and str(v) not in LOAD_KINDS][:10]:
            out.append(Problem(f"unknown load_kind {as_written(lk.iloc[i])}; valid: {', '.join(LOAD_KINDS)}",
                               file=file, row=int(rows[i]), column="load_kind"))
    from .curves import VARYING_BY

    for c in (c for c in VARYING_BY if c in runs.columns):  # n_batch -5, 0, inf, 2.5 or "abc" had been answered
        raw = runs[c].astype(object)
        v = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
        bad = [i for i in range(len(raw)) if not _is_missing(raw.iloc[i])
               and not (np.isfinite(v[i]) and v[i] >= 1 and np.round(v[i]) == v[i])]
        for i in bad[:10]:
            out.append(Problem(f"expected a whole number >= 1 ({c.removeprefix('fw_')}), got {as_written(raw.iloc[i])}",
                               file=file, row=int(rows[i]), column=c))
    if "tp_size" in runs.columns and "device_count" in runs.columns:
        def num(c: str) -> np.ndarray:
            return pd.to_numeric(runs[c], errors="coerce").to_numpy(dtype=float) if c in runs.columns \
                else np.ones(len(runs))

        tp, pp, dc = num("tp_size"), np.nan_to_num(num("pp_size"), nan=1.0), num("device_count")
        for i in np.flatnonzero(np.isfinite(tp) & np.isfinite(dc) & (tp * pp > dc))[:10]:
            out.append(Problem(f"tp_size x pp_size = {tp[i] * pp[i]:g} devices, more than device_count "
                               f"{dc[i]:g}", file=file, row=int(rows[i]), column="tp_size"))
    return out


def _resolve(runs: pd.DataFrame, column: str, kind: str) -> dict[str, HardwareSpec | ModelSpec]:
    rows = _row_labels(runs)
    out: dict[str, HardwareSpec | ModelSpec] = {}
    values = runs[column].astype("string")
    for name in pd.unique(values.dropna()):
        try:
            out[str(name)] = (catalog.resolve_hardware(str(name)) if kind == "hardware"
                              else catalog.resolve_model(str(name)))
        except UnknownNameError as exc:
            first = int(np.flatnonzero((values == name).fillna(False).to_numpy())[0])
            raise UnknownNameError(
                kind, str(name), exc.suggestions,
                hint=f"first seen at row {int(rows[first])}, column {column!r}; add it to a catalog "
                     f"file (see perfmodel.catalog)") from None
    return out


def _specs(runs: pd.DataFrame, column: str) -> pd.Series:
    # The catalog spec of every row's ``column`` ("hardware" or "model"), index aligned.
    specs = _resolve(runs, column, column)
    return runs[column].astype("string").map(lambda v: specs.get(str(v))).astype(object)


def hardware_specs(runs: pd.DataFrame) -> pd.Series:
    """The catalog :class:`~perfmodel.catalog.HardwareSpec` of every row (index aligned).

    Parameters
    ----------
    runs
        Table with a ``hardware`` column.

    Returns
    -------
    pandas.Series
        Object series of specs.

    Raises
    ------
    UnknownNameError
        A hardware name is not in the catalog; the message names the first row and the column.
    """
    return _specs(runs, "hardware")


def model_specs(runs: pd.DataFrame) -> pd.Series:
    """The catalog :class:`~perfmodel.catalog.ModelSpec` of every row (index aligned).

    Parameters
    ----------
    runs
        Table with a ``model`` column.

    Returns
    -------
    pandas.Series
        Object series of specs.

    Raises
    ------
    UnknownNameError
        A model name is not in the catalog; the message names the first row and the column.
    """
    return _specs(runs, "model")


def _bytes_of(dtype: object) -> float:
    if dtype is None or (isinstance(dtype, float) and math.isnan(dtype)) or dtype is pd.NA:
        return math.nan
    return DTYPE_BYTES.get(catalog.canonical_dtype(str(dtype)), math.nan)


def dtype_bytes(runs: pd.DataFrame, models: pd.Series | None = None) -> pd.Series:
    """Bytes per weight element of every row.

    The ``weight_dtype`` column when set; else a 4-bit or 8-bit ``quantization``
    scheme; else the model's published ``default_dtype``; else 2 (fp16/bf16,
    how the benchmark suites of the data serve unquantized models).

    Parameters
    ----------
    runs
        Runs table (``weight_dtype``, ``quantization`` optional).
    models
        Pre-resolved model specs (from :func:`model_specs`), to avoid resolving twice.

    Returns
    -------
    pandas.Series
        float64, index aligned with ``runs``.
    """
    n = len(runs)
    out = np.full(n, np.nan)
    if "weight_dtype" in runs.columns:
        out = np.array([_bytes_of(v) for v in runs["weight_dtype"].astype(object)], dtype=float)
    if "quantization" in runs.columns:
        q = runs["quantization"].astype("string").str.lower().fillna("")
        four = q.map(lambda s: any(k in s for k in _FOUR_BIT_QUANT)).to_numpy(dtype=bool)
        eight = q.map(lambda s: any(k in s for k in _EIGHT_BIT_QUANT)).to_numpy(dtype=bool)
        out = np.where(np.isnan(out) & four, 0.5, out)
        out = np.where(np.isnan(out) & eight, 1.0, out)
    if np.isnan(out).any() and "model" in runs.columns:
        ms = models if models is not None else model_specs(runs)
        # mxfp4 MoE checkpoints keep attention in bf16; their default stays a lower bound on bytes.
        dflt = np.array([_bytes_of(getattr(m, "default_dtype", None)) for m in ms], dtype=float)
        out = np.where(np.isnan(out), dflt, out)
    out = np.where(np.isnan(out), 2.0, out)
    return pd.Series(out, index=runs.index, name="dtype_bytes")


def _peak_flops(hw: HardwareSpec, nbytes: float) -> float:
    # The tensor-core rate at the weights' precision; 16-bit when the dtype has no figure; fp32 on a
    # device with no 16-bit figure (a CPU without 16-bit units, such as AVX2, computes 16-bit weights in
    # fp32: llama.cpp's f16 models on the 2-vCPU sample VM otherwise had no compute bound at all).
    prefs = {0.5: ("int4", "fp4", "fp8", "int8", "bf16", "fp16"), 1.0: ("fp8", "int8", "bf16", "fp16"),
             4.0: ("fp32",)}.get(nbytes, ("bf16", "fp16"))
    for d in (*prefs, "bf16", "fp16", "fp32"):
        if d in hw.peak_tflops:
            return float(hw.peak_tflops[d]) * 1e12
    return math.nan


def _f(x: object) -> float:
    return math.nan if x is None else float(x)  # type: ignore[arg-type]


def kv_fit_batch(memory_bytes: np.ndarray, weight_bytes: np.ndarray, kv_bytes_per_token: np.ndarray,
                 input_len: np.ndarray, output_len: np.ndarray) -> np.ndarray:
    """The most sequences whose KV cache at full length (input + output tokens) fits beside the weights.

    Parameters
    ----------
    memory_bytes
        Memory of all the devices together, bytes.
    weight_bytes
        All the weights, bytes.
    kv_bytes_per_token
        KV-cache bytes per token of one sequence (all layers).
    input_len, output_len
        Tokens per sequence.

    Returns
    -------
    numpy.ndarray
        ``(KV_USABLE_FRACTION x memory - weights) / (KV bytes per token x (input + output))``, at least 1;
        where the weights fill more than that fraction but fit the memory (:func:`cramped`), all of the
        memory less the weights (a server run at a higher utilisation: Llama-3-70B in 16-bit on one H200 had
        no cap at all, and batch 256 was answered as if its 172 GB of KV cache fitted); NaN where a figure is
        missing or the weights exceed the memory (the catalog then cannot say how the server fits, e.g.
        offloading). Above this batch a server that admits every
        request preempts sequences (vLLM recomputes them), so throughput stops growing with batch; on
        LLM-Inference-Bench, the 17 rows at batch 128/256 past it ran at 0.71-1.09x (median 0.85) their
        batch-64 throughput, the rows within it at a median 1.13x (21 rows, median 0.87 and 1.14, with the
        memory read in 1e9 B rather than binary GB).
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        mem, w = np.asarray(memory_bytes, dtype=float), np.asarray(weight_bytes, dtype=float)
        free = KV_USABLE_FRACTION * mem - w
        free = np.where(free > 0, free, mem - w)
        per_seq = np.asarray(kv_bytes_per_token, dtype=float) * (np.asarray(input_len, dtype=float)
                                                                 + np.asarray(output_len, dtype=float))
        cap = free / per_seq
    return np.where(np.isfinite(cap) & (free > 0) & (per_seq > 0), np.maximum(cap, 1.0), np.nan)


def cramped(weight_bytes: np.ndarray, memory_bytes: np.ndarray) -> np.ndarray:
    """Where the weights fill more than :data:`KV_USABLE_FRACTION` of the memory but fit it: the serving
    default (vLLM's ``gpu_memory_utilization`` 0.9) leaves no KV cache, a higher one a small cache
    (:func:`kv_fit_batch` counts all of the memory there)."""
    w, mem = np.asarray(weight_bytes, dtype=float), np.asarray(memory_bytes, dtype=float)
    with np.errstate(invalid="ignore"):
        return (w > KV_USABLE_FRACTION * mem) & (w <= mem)


def cramped_note(model: str, hardware: str, devices: float, weight_bytes: float, memory_bytes: float,
                 kv_fit: float) -> str:
    """What :func:`cramped` means for one configuration, in words (the What-if page and ``perfmodel predict``)."""
    fits = (f"about {kv_fit:,.0f} sequence(s) of this length fit beside them (more wait or are preempted)"
            if math.isfinite(kv_fit) else "how many sequences then fit is not known")
    return (f"{model}'s weights ({weight_bytes / 1e9:,.0f} GB) fill more than {KV_USABLE_FRACTION:.0%} of the "
            f"{memory_bytes / 1e9:,.0f} GB of {devices:g} x {hardware}: at the serving default (vLLM's "
            f"gpu_memory_utilization {KV_USABLE_FRACTION:g}) no KV cache fits and the server does not start; "
            f"with all of the memory {fits}")


def _expected_weight_fraction(m: ModelSpec, batch: np.ndarray) -> np.ndarray:
    """Fraction of the stored weights one decode step reads (1 for dense models)."""
    if not m.is_moe or m.params_b is None or m.active_params_b is None:
        return np.ones_like(batch)
    total, active = m.params_b, m.active_params_b
    n_e, k = m.n_experts or 0, m.n_active_experts or 0
    if n_e <= 0 or k <= 0:
        return np.full_like(batch, active / total)
    # Expert weights scale with coverage; the rest (attention, embeddings) is always read.
    expert_total = (total - active) * n_e / max(n_e - k, 1)
    shared = total - expert_total
    covered = 1.0 - (1.0 - k / n_e) ** np.maximum(batch, 1.0)
    return np.clip((shared + expert_total * covered) / total, active / total, 1.0)


def roofline(runs: pd.DataFrame) -> pd.DataFrame:
    """Physical upper bounds on throughput (lower bounds on time) for every row.

    Parameters
    ----------
    runs
        Runs or query table with ``hardware``, ``model``, ``device_count``,
        ``input_len_tok``, ``output_len_tok`` and ``batch_size``
        (``weight_dtype``/``quantization``/``kv_cache_dtype`` optional).

    Returns
    -------
    pandas.DataFrame
        Index aligned with ``runs``; columns :data:`ROOFLINE_COLUMNS`:
        ``dtype_bytes``; ``active_params`` (parameters per token); ``weight_bytes`` (all weights); ``weight_bytes_read``
        (per decode step, all devices together); ``kv_bytes_per_token``;
        ``peak_flops`` and ``mem_bw_bps`` (aggregate over the devices);
        ``prefill_s_min``; ``decode_mem_s_min``, ``decode_compute_s_min`` and
        ``decode_step_s_min`` (their maximum); ``e2e_s_min``;
        ``output_tok_s_max`` and ``total_tok_s_max`` (tokens/s over the batch);
        ``bound`` (``"compute"`` or ``"memory"``: the larger share of
        ``e2e_s_min``); ``kv_fit_batch`` (:func:`kv_fit_batch`: the largest batch whose KV
        cache fits; the bounds above assume it does); ``memory_bytes`` (all the devices' memory);
        ``ttft_s_min`` (``prefill_s_min`` or ``weight_bytes / mem_bw_bps``, the longer). A
        figure the catalog does not know makes the
        quantities that need it NaN (``bound`` missing), never an error.

    Raises
    ------
    ValidationError
        A needed column is missing or a value is invalid (row and column named).
    UnknownNameError
        A hardware or model name is not in the catalog (row and column named).
    """
    check_query(runs)
    hws = hardware_specs(runs)
    ms = model_specs(runs)
    nbytes = dtype_bytes(runs, ms).to_numpy()
    # 4-bit and 8-bit weight schemes keep a 16-bit cache unless told otherwise (vLLM's "auto": the activations'
    # dtype), whether the column is absent or its cell empty (an empty column had put an fp8 model's cache at
    # 1 byte, and one query answered 250 tok/s alone and 480 beside a row that had the column).
    kv_bytes = np.where(nbytes < 2.0, 2.0, nbytes)
    if "kv_cache_dtype" in runs.columns:
        kvd = np.array([_bytes_of(v) for v in runs["kv_cache_dtype"].astype(object)], dtype=float)
        kv_bytes = np.where(np.isnan(kvd), kv_bytes, kvd)
    dev = pd.to_numeric(runs["device_count"], errors="coerce").astype("float64").to_numpy()
    ii = runs["input_len_tok"].astype("float64").to_numpy()
    oo = runs["output_len_tok"].astype("float64").to_numpy()
    bb = runs["batch_size"].astype("float64").to_numpy()
    n = len(runs)
    params = np.full(n, np.nan)
    active = np.full(n, np.nan)
    kv_tok = np.full(n, np.nan)
    frac = np.ones(n)
    peak = np.full(n, np.nan)
    bw = np.full(n, np.nan)
    mem = np.full(n, np.nan)
    hw_arr = hws.to_numpy()
    m_arr = ms.to_numpy()
    for key in pd.unique(runs["model"].astype("string")):
        idx = np.flatnonzero((runs["model"].astype("string") == key).fillna(False).to_numpy())
        m: ModelSpec = m_arr[idx[0]]
        params[idx] = _f(m.params_b) * 1e9
        active[idx] = _f(m.active_params_b if m.active_params_b is not None else m.params_b) * 1e9
        frac[idx] = _expected_weight_fraction(m, bb[idx])
        try:
            kv_tok[idx] = m.kv_bytes_per_token(1.0) * kv_bytes[idx]
        except PerfmodelError:
            kv_tok[idx] = np.nan
    for key in pd.unique(runs["hardware"].astype("string")):
        idx = np.flatnonzero((runs["hardware"].astype("string") == key).fillna(False).to_numpy())
        h: HardwareSpec = hw_arr[idx[0]]
        bw[idx] = _f(h.memory_bw_gbs) * 1e9
        mem[idx] = _f(h.memory_bytes)
        peak[idx] = [_peak_flops(h, b) for b in nbytes[idx]]
    peak_all = peak * dev
    bw_all = bw * dev
    weight_bytes = params * nbytes
    read_bytes = weight_bytes * frac
    ctx = ii + oo / 2.0  # mean context over the decode steps
    prefill = prefill_s_min(active, ii, bb, peak_all, read_bytes, bw_all, n_batch_of(runs))
    dec_mem = (read_bytes + kv_tok * bb * ctx) / bw_all
    dec_cmp = 2.0 * active * bb / peak_all
    step = np.fmax(dec_mem, dec_cmp)
    step = np.where(np.isnan(dec_mem) | np.isnan(dec_cmp), np.nan, step)
    steps = np.maximum(oo - 1.0, 0.0)
    e2e = prefill + steps * step
    with np.errstate(divide="ignore", invalid="ignore"):
        out_max = bb * oo / e2e
        tot_max = bb * (ii + oo) / e2e
    compute_part = prefill + steps * np.where(dec_cmp >= dec_mem, dec_cmp, 0.0)
    bound = np.where(np.isnan(e2e), None, np.where(compute_part * 2 > e2e, "compute", "memory"))
    out = pd.DataFrame({
        "dtype_bytes": nbytes, "active_params": active, "weight_bytes": weight_bytes, "weight_bytes_read": read_bytes,
        "kv_bytes_per_token": kv_tok, "peak_flops": peak_all, "mem_bw_bps": bw_all,
        "prefill_s_min": prefill, "decode_mem_s_min": dec_mem, "decode_compute_s_min": dec_cmp,
        "decode_step_s_min": step, "e2e_s_min": e2e, "output_tok_s_max": out_max,
        "total_tok_s_max": tot_max,
        "bound": pd.array(bound, dtype="string"),
        "kv_fit_batch": kv_fit_batch(mem * dev, weight_bytes, kv_tok, ii, oo),
        "memory_bytes": mem * dev,
        "ttft_s_min": np.fmax(prefill, weight_bytes / bw_all),
    }, index=runs.index)
    return out


def n_batch_of(runs: pd.DataFrame) -> np.ndarray:
    """llama.cpp's ``n_batch`` (prompt tokens per forward pass) per row: ``fw_n_batch``, NaN where absent."""
    if "fw_n_batch" not in runs.columns:
        return np.full(len(runs), np.nan)
    return pd.to_numeric(runs["fw_n_batch"], errors="coerce").astype("float64").to_numpy()


def prefill_s_min(active: np.ndarray, ii: np.ndarray, bb: np.ndarray, peak_all: np.ndarray,
                  read_bytes: np.ndarray, bw_all: np.ndarray, n_batch: np.ndarray) -> np.ndarray:
    """The prefill's floor: its FLOPs at the devices' peak, and no shorter than one read of the weights
    per forward pass: one pass, or, where llama.cpp's ``n_batch`` is known, one per ``n_batch`` prompt tokens.

    Without the weights' read a short prompt's bound ran far above what one read allows (a 16-token prompt
    and one output token on an H100 was bounded at 3,851 tok/s at batch 16, where one read of Llama-3-8B's
    weights allows 3,340), and an empty prompt's was infinite. ``read_bytes`` NaN (unknown) leaves the FLOPs.
    """
    prefill = 2.0 * active * ii * bb / peak_all
    ok = np.isfinite(n_batch) & (n_batch >= 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        passes = np.where(ok, np.maximum(np.ceil(ii * bb / np.where(ok, n_batch, 1.0)), 1.0), 1.0)
        return np.fmax(prefill, passes * read_bytes / bw_all)


SUSPECT_BASES = ("weights", "roofline")
"""What :func:`flag_suspect` compares against (see there)."""


def flag_suspect(runs: pd.DataFrame, *, tolerance: float = 1.0, basis: str = "weights",
                 bounds: pd.DataFrame | None = None) -> pd.Series:
    """Flag measured points faster than a physical bound.

    ``basis="weights"`` (default) is the strict bound: a decode step cannot be
    shorter than reading one token's active weights once at the devices'
    aggregate peak bandwidth, so output throughput cannot exceed
    ``batch * mem_bw / (active_params * dtype_bytes)``. No routing, cache or
    kernel detail can beat it, so a point above it is a data problem.
    ``basis="roofline"`` compares with :func:`roofline`'s ``output_tok_s_max``,
    which also charges the KV-cache reads, the prefill and the experts a batch
    is expected to touch: stricter, and it also catches engines that silently
    truncate the context (e.g. a shared llama.cpp context window).

    Rows without a bound (catalog figure unknown) or without a measured
    throughput are not flagged.

    Parameters
    ----------
    runs
        Runs table with the columns :func:`roofline` needs and ``output_throughput_tok_s``.
    tolerance
        Factor on the bound (> 0); 1.0 flags anything above it, 1.1 allows 10% slack
        for rounded catalog figures.
    basis
        ``"weights"`` or ``"roofline"`` (:data:`SUSPECT_BASES`).
    bounds
        Pre-computed ``roofline(runs)`` to avoid recomputing it.

    Returns
    -------
    pandas.Series
        bool, index aligned with ``runs``, named ``suspect``.

    Raises
    ------
    PerfmodelError
        ``tolerance`` is not a positive number or ``basis`` is unknown.
    ValidationError
        ``output_throughput_tok_s`` or a column :func:`roofline` needs is missing.
    UnknownNameError
        As for :func:`roofline`.
    """
    if not (isinstance(tolerance, (int, float)) and math.isfinite(tolerance) and tolerance > 0):
        raise PerfmodelError(f"tolerance must be a positive number, got {tolerance!r}")
    if basis not in SUSPECT_BASES:
        raise PerfmodelError(f"basis must be one of {', '.join(SUSPECT_BASES)}, got {basis!r}")
    if "output_throughput_tok_s" not in runs.columns:
        raise ValidationError("cannot flag suspect points", [
            Problem("required column is missing", column="output_throughput_tok_s")])
    b = bounds if bounds is not None else roofline(runs)
    y = pd.to_numeric(runs["output_throughput_tok_s"], errors="coerce").astype("float64")
    if basis == "roofline":
        lim = b["output_tok_s_max"].astype("float64")
    else:
        lim = (runs["batch_size"].astype("float64") * b["mem_bw_bps"]
               / (b["active_params"] * b["dtype_bytes"]))
    flag = (y > tolerance * lim).fillna(False) & lim.notna()
    return flag.astype(bool).rename("suspect")


PREFILLED_TOGETHER = ("static_batch", "offline")
"""Load kinds whose prompts are prefilled together (the batch's TTFT floor is the whole batch's prefill); under a
server's own scheduling (``concurrency``, ``request_rate``) a request may be prefilled alone."""


def prefills_together(load_kind: Any) -> bool:
    """Whether a run's prompts are prefilled together: a static batch, an offline run, or no load kind recorded.

    Parameters
    ----------
    load_kind
        A run's ``load_kind`` (missing allowed).

    Returns
    -------
    bool
    """
    return load_kind is None or bool(pd.isna(load_kind)) or str(load_kind) in PREFILLED_TOGETHER


def flag_fast_ttft(runs: pd.DataFrame, *, tolerance: float = 1.0, bounds: pd.DataFrame | None = None) -> pd.Series:
    """Flag measured times to first token shorter than physics allows (:func:`roofline`'s ``ttft_s_min``).

    No prefill of ``batch x input length`` prompt tokens finishes before its FLOPs at the devices' peak
    rate, nor before one read of the weights; under a server's own scheduling (``concurrency``,
    ``request_rate``: :func:`prefills_together` is false) a request may be prefilled alone, so the floor is one
    prompt's (a closed loop of 1,024 requests was flagged against 1,024 prompts prefilled at once). A TTFT
    below its floor is a data problem (a client that
    timed the response headers, a prompt cache that skipped the prefill, a miscounted batch), and the TTFT
    model leaves such rows out of training unless told to keep suspect points. Rows without a measured
    ``ttft_s`` or without a floor (catalog figure unknown) are not flagged. The 30 published TTFTs of
    LLM-Inference-Bench and every bundled sample run lie above it (1.2x and 1.5x at the closest).

    Parameters
    ----------
    runs
        Runs table with the columns :func:`roofline` needs and, where measured, ``ttft_s``.
    tolerance
        Factor on the floor (> 0); 1.0 flags anything below it, 0.9 allows 10 % slack.
    bounds
        Pre-computed ``roofline(runs)``.

    Returns
    -------
    pandas.Series
        bool, index aligned with ``runs``, named ``suspect_ttft``.

    Raises
    ------
    PerfmodelError
        ``tolerance`` is not a positive number.
    """
    if not (isinstance(tolerance, (int, float)) and math.isfinite(tolerance) and tolerance > 0):
        raise PerfmodelError(f"tolerance must be a positive number, got {tolerance!r}")
    if "ttft_s" not in runs.columns or len(runs) == 0:
        return pd.Series(False, index=runs.index, name="suspect_ttft", dtype=bool)
    floor = (bounds if bounds is not None else roofline(runs))["ttft_s_min"].astype("float64")
    if "load_kind" in runs.columns:
        alone = ~runs["load_kind"].map(prefills_together).astype(bool)
        if alone.any():
            one = runs.loc[alone].assign(batch_size=1.0)
            floor = floor.copy()
            floor.loc[alone] = roofline(one)["ttft_s_min"].astype("float64").to_numpy()
    t = pd.to_numeric(runs["ttft_s"], errors="coerce").astype("float64")
    flag = (t < tolerance * floor).fillna(False) & floor.notna() & (t > 0)
    return flag.astype(bool).rename("suspect_ttft")
