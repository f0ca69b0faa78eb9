"""What-if: a predicted saturation curve for one configuration, with its band, the roofline and the data.

:func:`whatif` asks a fitted predictor for every batch of a range at one
(hardware, model, framework, lengths, devices) point, adds the physical bound
(:func:`perfmodel.physics.roofline`), the measured points of the same hardware,
model and lengths, and says in words why a query is outside the training data
(:func:`domain_reasons`, :func:`confidence_reason`). :func:`fit_whatif_model` trains a predictor with the
issue's rule for suspect points (left out unless asked to keep them). Where a dataset varies a measurement
setting (:data:`perfmodel.curves.VARYING_BY`: threads, llama.cpp's n_batch), :func:`setting_choices` says which
values a configuration offers and the point carries the one chosen.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from . import catalog, physics
from .curve_tables import compact_number as _tok_s
from .curves import VARYING_BY
from .errors import PerfmodelError, Problem, ValidationError
from .models.base import (
    DEFAULT_TARGET,
    MEMORY_REASON_PREFIX,
    RATIO_TOLERANCE,
    Predictor,
    ProgressCallback,
    domain_reason_column,
    nonpositive_note,
    predict_with_latency,
    query_notes,
)

__all__ = [
    "judgeable",
    "POINT_COLUMNS",
    "WHATIF_LEVELS",
    "MAX_BATCH",
    "MAX_LENGTH_TOK",
    "MAX_DEVICES",
    "LOW_CONFIDENCE",
    "BOUND_TOLERANCE",
    "WhatIfResult",
    "SettingChoice",
    "batch_grid",
    "bound_reason",
    "confidence_reason",
    "ttft_reason",
    "default_point",
    "domain_reasons",
    "fit_whatif_model",
    "setting_choices",
    "suspect_mask",
    "whatif",
]

POINT_COLUMNS = ("hardware", "model", "framework", "input_len_tok", "output_len_tok", "device_count")
"""What a what-if point fixes; the batch varies along the curve."""
WHATIF_LEVELS = (0.8, 0.9, 0.95)
"""Band levels offered (the levels the predictors are calibrated for)."""
MAX_BATCH = 4096
"""Largest batch a what-if curve may ask for."""
MAX_LENGTH_TOK = 10_000_000
"""Longest input or output length a what-if may ask for (the longest context any model advertises)."""
MAX_DEVICES = 1024
"""Most devices a what-if point may ask for."""
LOW_CONFIDENCE = 0.2
"""Below this confidence a prediction is flagged. roofline-gbm's confidence is exp(-half-width of its 90% band
in log space), so the band spans a factor 1/confidence^2: more than 25 here, an order of magnitude either side
of the prediction at best. (ALA's confidence, 1 / (1 + cosine distance), never falls below 0.5.)"""


@dataclass(frozen=True)
class WhatIfResult:
    """A predicted saturation curve for one configuration.

    Attributes
    ----------
    point
        The fixed query columns (:data:`POINT_COLUMNS`, and the :data:`perfmodel.curves.VARYING_BY` settings
        the query carries, None for unset).
    level
        Nominal coverage of the band.
    table
        One row per batch: the point's columns, ``batch_size``, ``pred_throughput_tok_s``,
        ``pred_lower``, ``pred_upper``, ``confidence``, ``in_domain``, the derived
        :data:`perfmodel.models.LATENCY_COLUMNS` (total throughput, end-to-end latency and its band, TTFT
        and TPOT where the model learnt TTFT) and ``roofline_tok_s``
        (the physical bound on output throughput, taken at the KV-cache-full batch beyond it; NaN where
        the catalog lacks a figure), ``ttft_floor_s`` (the shortest time to first token physics allows,
        :func:`perfmodel.physics.roofline`'s ``ttft_s_min``) and
        ``kv_fit_batch`` (the largest batch whose KV cache fits, :func:`perfmodel.physics.kv_fit_batch`).
    measured
        Measured runs of the same hardware, model and lengths (``batch_size``,
        ``output_throughput_tok_s``, ``framework``, ``device_count``, ``same_config``: also the
        same framework and devices, ``suspect``: faster than the physical bound); at the point's settings
        where it carries any (rows of another framework that do not record a setting stay).
    reasons
        Why the query lies outside the training data, or its confidence is low, in words (empty when
        neither applies).
    memory_note
        When the weights alone fill the usable memory of the devices (no batch fits its KV cache
        beside them, so the configuration cannot run as asked), that in words; None otherwise or where
        the catalog cannot say.
    bound_note
        When the prediction exceeds the roofline bound at some batch (:func:`bound_reason`), that in words;
        None otherwise.
    ttft_note
        Why the table has no TTFT (and so no TPOT) where it has none (:func:`ttft_reason`); None otherwise.
    overhead_note
        When the framework's least step overhead holds the prediction down at some batch (:func:`overhead_reason`),
        that in words; None otherwise.
    cannot_run
        When the weights alone exceed the memory of the devices (:meth:`perfmodel.models.base.Predictor.cannot_run`),
        that in one sentence, also the first of ``reasons``: the table then holds no prediction (NaN, confidence 0,
        out of domain) and a page shows this instead of a curve. None otherwise.
    """

    point: Mapping[str, Any]
    level: float
    table: pd.DataFrame
    measured: pd.DataFrame
    reasons: tuple[str, ...]
    memory_note: str | None = None
    bound_note: str | None = None
    ttft_note: str | None = None
    cannot_run: str | None = None
    overhead_note: str | None = None

    @property
    def kv_fit_batch(self) -> float:
        """The largest batch whose KV cache at full length fits in memory (NaN where the catalog cannot say)."""
        if "kv_fit_batch" not in self.table.columns or not len(self.table):
            return math.nan
        return float(self.table["kv_fit_batch"].iloc[0])

    @property
    def low_confidence(self) -> bool:
        """True when some batch of the curve has a confidence below :data:`LOW_CONFIDENCE`."""
        if "confidence" not in self.table.columns:
            return False
        return bool((pd.to_numeric(self.table["confidence"], errors="coerce") < LOW_CONFIDENCE).any())

    @property
    def in_domain(self) -> bool:
        """True when every batch of the curve is inside the predictor's domain."""
        return bool(self.table["in_domain"].all()) if len(self.table) else False


@dataclass(frozen=True)
class SettingChoice:
    """The values a what-if may ask for one measurement setting (a :data:`perfmodel.curves.VARYING_BY` column).

    Attributes
    ----------
    name
        The setting's column (``fw_num_threads``, ``fw_n_batch``).
    options
        The values to choose from, ascending; None (last) is "unset": runs that do not record the setting.
    default
        The most frequent of ``options`` among the rows they come from, those of the point's lengths and
        devices where there are some (ties: the value whose runs had the highest median output throughput,
        then the smallest, so shuffled rows keep the default; unset loses ties).
    measured
        True when ``options`` are the values measured for the point's hardware, model and framework; False
        when that combination was never measured and they are the whole dataset's.
    """

    name: str
    options: tuple[float | None, ...]
    default: float | None
    measured: bool


def setting_choices(runs: pd.DataFrame, point: Mapping[str, Any]) -> dict[str, SettingChoice]:
    """The measurement settings a what-if of ``point`` should ask for, with the values it may take.

    A setting is offered where the dataset records more than one value of it (as the Curves page then keeps
    its values apart) and the point's hardware x model x framework records it in some row, or, never measured,
    its framework does (LLM-Inference-Bench's vLLM rows have no llama.cpp ``n_batch``: none is offered for them);
    a framework the dataset never ran is offered none (the query leaves the setting unset).

    Parameters
    ----------
    runs
        Runs table.
    point
        ``hardware``, ``model`` and ``framework`` at least; ``input_len_tok``, ``output_len_tok`` and
        ``device_count`` narrow the rows the default is counted on, where some of the combination's rows match.

    Returns
    -------
    dict
        Setting column -> :class:`SettingChoice`, in :data:`perfmodel.curves.VARYING_BY` order; empty when the
        dataset varies none.
    """
    varying = [c for c in VARYING_BY if c in runs.columns and _setting_values(runs[c]).nunique() > 1]
    if not varying:
        return {}
    same = (_same_combination(runs, point) if all(c in runs.columns for c in _COMBINATION)
            else np.zeros(len(runs), dtype=bool))
    measured = bool(same.any())
    # A combination never measured takes its framework's values (llama.cpp's n_batch on a new GPU, not the
    # "unset" of the dataset's vLLM majority; the H200 sample's transformers thread count for an H100), and the
    # whole dataset's only where the framework was never measured.
    same_fw = (runs["framework"].astype("string") == str(point.get("framework"))).fillna(False).to_numpy(dtype=bool) \
        if "framework" in runs.columns else np.zeros(len(runs), dtype=bool)
    if not measured and not same_fw.any():
        # a framework the dataset never ran has no settings of its own: the sample's torch thread count had been
        # offered (and put in the link) for vLLM on an L4
        return {}
    pool = runs.loc[same] if measured else runs.loc[same_fw]
    # The default is counted on the runs of the point itself where there are some: the dataset's default point
    # then gets the setting of its own most measured curve.
    near = np.ones(len(pool), dtype=bool)
    for c in ("input_len_tok", "output_len_tok", "device_count"):
        if c in pool.columns and point.get(c) is not None:
            near &= (pd.to_numeric(pool[c], errors="coerce") == float(point[c])).fillna(False).to_numpy(dtype=bool)
    counted = pool.loc[near] if near.any() else pool
    out: dict[str, SettingChoice] = {}
    for c in varying:
        values = _setting_values(pool[c])
        if (measured or same_fw.any()) and not values.notna().any():
            continue  # the combination's (or its framework's) runs do not record it: nothing to choose
        options: list[float | None] = sorted({float(v) for v in values.dropna()})
        if values.isna().any():
            options.append(None)
        vals = _setting_values(counted[c])
        counts = vals.value_counts(dropna=False)
        # Ties (LLM-Inference-Bench measured llama.cpp at n_batch 1, 16, 32 and 64 alike) go to the setting
        # whose runs were fastest (median output throughput): how the engine would be run, not its slowest.
        speed = (pd.to_numeric(counted["output_throughput_tok_s"], errors="coerce").groupby(vals.fillna(-1.0)).median()
                 if "output_throughput_tok_s" in counted.columns else pd.Series(dtype=float))

        def rank(kv: tuple[Any, int], speed: pd.Series = speed) -> tuple[int, bool, float, float]:
            v, n = kv
            fast = speed.get(-1.0 if pd.isna(v) else float(v), np.nan)
            return n, not pd.isna(v), -math.inf if pd.isna(fast) else float(fast), \
                math.inf if pd.isna(v) else -float(v)

        best = max(counts.items(), key=rank)[0]
        out[c] = SettingChoice(name=c, options=tuple(options), default=None if pd.isna(best) else float(best),
                               measured=measured)
    return out


def _setting_values(column: pd.Series) -> pd.Series:
    """A setting column as floats (NaN where a row does not record it)."""
    return pd.to_numeric(column, errors="coerce").astype("float64")


def batch_grid(b_min: float, b_max: float) -> list[float]:
    """Batches for a curve: the powers of two between ``b_min`` and ``b_max`` and both ends.

    Parameters
    ----------
    b_min, b_max
        The range (1 <= b_min <= b_max <= :data:`MAX_BATCH`).

    Returns
    -------
    list of float
        Sorted, distinct.

    Raises
    ------
    ValidationError
        The range is empty, not positive or beyond :data:`MAX_BATCH`.
    """
    problems = []
    for name, what, v in (("batch_min", "smallest", b_min), ("batch_max", "largest", b_max)):
        if not (isinstance(v, (int, float)) and math.isfinite(v) and 1 <= v <= MAX_BATCH):
            problems.append(Problem(f"the {what} batch ({name}) must be a number from 1 to {MAX_BATCH}, got {v!r}"))
    if not problems and b_min > b_max:
        problems.append(Problem(f"the smallest batch (batch_min={b_min:g}) is larger than the largest "
                                f"(batch_max={b_max:g})"))
    if problems:
        raise ValidationError("invalid batch range:", problems)
    grid = {float(b_min), float(b_max)}
    p = 1.0
    while p <= b_max:
        if p >= b_min:
            grid.add(p)
        p *= 2
    return sorted(grid)


def suspect_mask(runs: pd.DataFrame) -> pd.Series:
    """Rows faster than the physical bound (:func:`perfmodel.physics.flag_suspect`), False where unknowable.

    Unlike ``flag_suspect`` this never raises for a row it cannot judge: a hardware or model
    missing from the catalog, or a missing column, leaves the row unflagged.

    Parameters
    ----------
    runs
        Runs table.

    Returns
    -------
    pandas.Series
        bool, index aligned, named ``suspect``.
    """
    out = pd.Series(False, index=runs.index, name="suspect")
    if "output_throughput_tok_s" not in runs.columns:
        return out
    okv = judgeable(runs)
    flags = np.zeros(len(runs), dtype=bool)
    if okv.any():  # positional: an index may repeat labels
        flags[okv] = physics.flag_suspect(runs.iloc[np.flatnonzero(okv)]).to_numpy(dtype=bool)
    return pd.Series(flags, index=runs.index, name="suspect")


def judgeable(runs: pd.DataFrame) -> np.ndarray:
    """The rows :func:`perfmodel.physics.roofline` can judge: every query column present and valid (a positive
    batch, device count and output length, an input length >= 0), hardware and model in the catalog.

    Parameters
    ----------
    runs
        Runs table.

    Returns
    -------
    numpy.ndarray
        bool, one per row (all False where a query column is missing).
    """
    if len(runs) == 0 or any(c not in runs.columns for c in physics.QUERY_COLUMNS):
        return np.zeros(len(runs), dtype=bool)
    ok = np.ones(len(runs), dtype=bool)
    for c in ("device_count", "input_len_tok", "output_len_tok", "batch_size"):
        v = pd.to_numeric(runs[c], errors="coerce").astype("float64")
        ok &= (v.notna() & (v >= 0 if c == "input_len_tok" else v > 0)).to_numpy(dtype=bool)
    for c in ("hardware", "model"):
        names = runs[c].astype("string")
        known = {str(v) for v in names.dropna().unique() if _known(c, str(v))}
        ok &= names.isin(list(known)).fillna(False).to_numpy(dtype=bool)
    return ok


def _known(column: str, name: str) -> bool:
    from . import catalog
    from .errors import UnknownNameError

    try:
        (catalog.resolve_hardware if column == "hardware" else catalog.resolve_model)(name)
    except UnknownNameError:
        return False
    return True


def default_point(runs: pd.DataFrame) -> dict[str, Any]:
    """The what-if inputs a dataset suggests: its most measured configuration and that configuration's batch range.

    Parameters
    ----------
    runs
        Runs table (may be empty).

    Returns
    -------
    dict
        :data:`POINT_COLUMNS` (values of the most frequent combination; None where the column is
        absent) plus ``batch_min`` and ``batch_max`` (the batch range measured for that
        configuration, the dataset's when it has none, 1..64 without batches), plus each
        :data:`perfmodel.curves.VARYING_BY` setting the dataset varies: its default for that configuration
        (:func:`setting_choices`; None where the configuration's runs do not record it).
    """
    out: dict[str, Any] = {c: None for c in POINT_COLUMNS}
    out.update(batch_min=1.0, batch_max=64.0)
    cols = [c for c in POINT_COLUMNS if c in runs.columns]
    if len(runs) == 0 or not cols:
        return out
    # Settings the curves keep apart (e.g. torch threads) count apart here too, so the default
    # is one real curve, not two settings measured 2-5x apart pooled together.
    apart = [c for c in VARYING_BY if c in runs.columns and runs[c].nunique() > 1]
    key = cols + apart
    counts = runs[key].astype(object).where(runs[key].notna(), None).value_counts(dropna=False)
    if len(counts):
        for c, v in zip(cols, counts.index[0][:len(cols)], strict=True):
            out[c] = None if v is None or (isinstance(v, float) and math.isnan(v)) else v
    for c in ("input_len_tok", "output_len_tok", "device_count"):
        if out[c] is not None:
            out[c] = float(out[c])
    if "batch_size" in runs.columns:
        # A dataset mixing a CPU model and a GPU one must not offer the CPU curve batch 512.
        same = pd.Series(True, index=runs.index)
        for c in cols:
            if out[c] is not None:
                same &= runs[c].astype(object).eq(out[c]).fillna(False) | (
                    pd.to_numeric(runs[c], errors="coerce").eq(out[c]).fillna(False)
                    if isinstance(out[c], float) else False)
        pool = runs.loc[same.to_numpy()] if same.any() else runs
        b = pd.to_numeric(pool["batch_size"], errors="coerce").dropna()
        b = b[(b >= 1) & (b <= MAX_BATCH)]
        if len(b):
            out.update(batch_min=float(b.min()), batch_max=float(b.max()))
    choices = setting_choices(runs, out)
    for c in apart:
        out[c] = choices[c].default if c in choices else None
    return out


def domain_reasons(train: pd.DataFrame, point: Mapping[str, Any], batches: Sequence[float], *,
                   range_factor: float = 1.0) -> list[str]:
    """Why a what-if query lies outside the training data, one sentence per reason.

    Parameters
    ----------
    train
        The rows the predictor was trained on.
    point
        The query's fixed columns (:data:`POINT_COLUMNS`).
    batches
        The batches asked for.
    range_factor
        The predictor's :attr:`perfmodel.models.base.Predictor.domain_range_factor`: a batch or length
        more than this factor outside the trained range is out of domain, one within it only extrapolated.
        The sentences keep the two apart, so the batches they call outside are those the predictor's
        ``in_domain`` flags for the range (1.0: every value outside the range is).

    Returns
    -------
    list of str
        Unseen hardware, model or framework; a hardware x model x framework combination (or its device
        count) never measured together; batch, input or output length outside the range of all training runs
        (by more than ``range_factor``), or beyond it but within the factor; device count outside that range.
        The range is said to be all the runs', as the predictor's own reasons name narrower ones (the batches
        the query's framework or configuration was trained at). Empty when none applies.
    """
    out: list[str] = []
    for c, what in (("hardware", "hardware"), ("model", "model"), ("framework", "framework")):
        if c in train.columns and point.get(c) is not None:
            seen = set(train[c].astype("string").dropna().tolist())
            if str(point[c]) not in seen:
                out.append(f"{what} {point[c]!r} is not in the training data (trained on "
                           f"{', '.join(sorted(seen)[:6])}{', ...' if len(seen) > 6 else ''})")
    combo = _COMBINATION
    if not out and all(c in train.columns and point.get(c) is not None for c in combo):
        # Each seen on its own, but a model learns little about a combination it never saw.
        same = _same_combination(train, point)
        name = " · ".join(str(point[c]) for c in combo)
        devices = pd.to_numeric(train.loc[same, "device_count"], errors="coerce").dropna() \
            if "device_count" in train.columns else pd.Series(dtype=float)
        if not same.any():
            out.append(f"{name} was never measured together: the prediction transfers from other combinations")
        elif point.get("device_count") is not None and len(devices) \
                and float(point["device_count"]) not in set(devices.astype(float)):
            counts = ", ".join(f"{d:g}" for d in sorted(set(devices.astype(float))))
            out.append(f"{name} was measured on {counts} device(s), never on {float(point['device_count']):g}: "
                       "the prediction transfers from other device counts")
    ranges = [("batch_size", "batch", list(batches))]
    ranges += [(c, label, [point.get(c)]) for c, label in (("input_len_tok", "input length"),
                                                           ("output_len_tok", "output length"),
                                                           ("device_count", "device count"))]
    for col, label, values in ranges:
        if col not in train.columns:
            continue
        v = pd.to_numeric(train[col], errors="coerce").dropna()
        vals = [float(x) for x in values if x is not None]
        if not len(v) or not vals:
            continue
        lo, hi = float(v.min()), float(v.max())
        # The predictors' range rule covers batch and lengths; the device count is strict for those that
        # take it as a plain feature (factor 1) and never a range test for the others.
        tol = range_factor if col != "device_count" or range_factor == 1.0 else math.inf
        far = [x for x in vals if x < lo / tol or x > hi * tol]
        near = [x for x in vals if (x < lo or x > hi) and x not in far]
        # Whose range: roofline-gbm adds "at batch 256, 512: ... the batches tensorrt-llm was trained at (1-64)"
        # below, and beside it "batch 512 beyond the trained range 1-256, but within twice of it" had read as if
        # the two ranges were one.
        trained = f"the range of all training runs ({lo:g})" if lo == hi else f"the range of all training runs " \
            f"({lo:g}-{hi:g})"
        if far:
            beyond = "" if tol == 1.0 else f"more than {_factor_words(tol)} "
            out.append(f"{label} {_listed(far)} {beyond}outside {trained}")
        if near:
            within = (f", but within {_factor_words(tol)} of it" if math.isfinite(tol)
                      else f" (this predictor puts no range limit on the {label}: only the distance to its "
                           "training points can put it out of its domain)")
            out.append(f"{label} {_listed(near)} beyond {trained}{within}: extrapolated")
    if (ratio := _ratio_reason(train, point)) is not None:
        out.append(ratio)
    return out




def _ratio_reason(train: pd.DataFrame, point: Mapping[str, Any]) -> str | None:
    """The sentence for an input/output length ratio the training data never had (of the point's hardware,
    model and framework where those were measured, else of every row); None within :data:`RATIO_TOLERANCE`.

    LLM-Inference-Bench measured input = output only: 2048 / 512 lies inside both length ranges, and the page
    said nothing, although how the time splits between prefill and decode is then the roofline's alone.
    """
    if not all(c in train.columns for c in ("input_len_tok", "output_len_tok")):
        return None
    try:
        q = float(point.get("input_len_tok")) / float(point.get("output_len_tok"))
    except (TypeError, ValueError, ZeroDivisionError):
        return None
    rows = train
    if all(c in train.columns for c in _COMBINATION) and (same := _same_combination(train, point)).any():
        rows = train.loc[same]
    r = (pd.to_numeric(rows["input_len_tok"], errors="coerce")
         / pd.to_numeric(rows["output_len_tok"], errors="coerce")).to_numpy(dtype=float)
    r = r[np.isfinite(r) & (r > 0)]
    if not len(r) or not math.isfinite(q) or q <= 0:
        return None
    lo, hi = float(r.min()), float(r.max())
    if lo / RATIO_TOLERANCE <= q <= hi * RATIO_TOLERANCE:
        return None
    trained = f"{lo:.3g}" if math.isclose(lo, hi) else f"{lo:.3g}-{hi:.3g}"
    whose = "its runs" if rows is not train else "the training runs"
    return (f"input/output length ratio {q:.3g} ({float(point['input_len_tok']):g} / "
            f"{float(point['output_len_tok']):g}) beyond the {trained} of {whose}: how the time splits between "
            "prefill and decode comes from the roofline alone, not from measurements: extrapolated")


def _listed(values: Sequence[float], most: int = 6) -> str:
    return ", ".join(f"{x:g}" for x in values[:most]) + (", ..." if len(values) > most else "")


def _factor_words(factor: float) -> str:
    return "twice" if factor == 2.0 else f"a factor {factor:g}"


def confidence_reason(table: pd.DataFrame) -> str | None:
    """The reason to give when some batch of a predicted curve has a confidence below :data:`LOW_CONFIDENCE`.

    Parameters
    ----------
    table
        ``batch_size``, ``confidence`` and (optionally) ``pred_lower``, ``pred_upper``.

    Returns
    -------
    str or None
        One sentence naming the batches, the lowest confidence and how wide the band is there.
    """
    if "confidence" not in table.columns or not len(table):
        return None
    conf = pd.to_numeric(table["confidence"], errors="coerce").reset_index(drop=True)
    low = np.flatnonzero((conf < LOW_CONFIDENCE).to_numpy(dtype=bool))
    if not len(low):
        return None
    batches = pd.to_numeric(table["batch_size"], errors="coerce").to_numpy(dtype=float)[low]
    shown = ", ".join(f"{b:g}" for b in batches[:8]) + (", ..." if len(batches) > 8 else "")
    worst = int(conf.idxmin())
    span = ""
    if {"pred_lower", "pred_upper"} <= set(table.columns):
        lo, hi = float(table["pred_lower"].iloc[worst]), float(table["pred_upper"].iloc[worst])
        if lo > 0 and math.isfinite(hi):
            factor = f"a factor {hi / lo:,.0f}" if hi / lo < 1e4 else "more than a factor 10,000"
            span = f", where the band spans {factor} from low to high"
    lowest = f"{conf[worst]:.2f}" if conf[worst] >= 0.01 else "under 0.01"
    return (f"confidence below {LOW_CONFIDENCE:g} at batch {shown} (lowest {lowest}{span}): "
            "the prediction is an order-of-magnitude guess at best")


BOUND_TOLERANCE = 1.01
"""A prediction more than this factor above the roofline bound is named by :func:`bound_reason` (1% for the
rounding of the figures the two are computed from)."""


def bound_reason(table: pd.DataFrame) -> str | None:
    """The warning to give when a predicted curve runs above its physical (roofline) bound.

    The bound stops growing at the batch whose KV cache fills the memory (``kv_fit_batch``); a predictor
    that learned its curve on configurations with memory to spare keeps growing past it, to throughputs this
    configuration cannot reach (Llama-3-70B on 2 x H100 at 1024 + 1024 tokens: 447 tok/s predicted at batch
    64, the bound 199 tok/s from batch 4 on, and the page said nothing).

    Parameters
    ----------
    table
        ``batch_size``, ``pred_throughput_tok_s``, ``roofline_tok_s`` and (optionally) ``kv_fit_batch``.

    Returns
    -------
    str or None
        One paragraph naming the batches, the largest excess and its cause; where the line stays under the
        bound but the band's upper end (``pred_upper``) does not, one sentence saying so (Llama-3-8B on one
        H100 to batch 1,024: a band top of 13,833 tok/s against a bound of 10,075); None where both stay
        within :data:`BOUND_TOLERANCE` of the bound (or the bound is unknown).
    """
    need = ("batch_size", "pred_throughput_tok_s", "roofline_tok_s")
    if any(c not in table.columns for c in need) or not len(table):
        return None
    b = pd.to_numeric(table["batch_size"], errors="coerce").to_numpy(dtype=float)
    pred = pd.to_numeric(table["pred_throughput_tok_s"], errors="coerce").to_numpy(dtype=float)
    roof = pd.to_numeric(table["roofline_tok_s"], errors="coerce").to_numpy(dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = pred / roof
    over = np.flatnonzero(np.isfinite(ratio) & (roof > 0) & (ratio > BOUND_TOLERANCE))
    if not len(over):
        top = (pd.to_numeric(table["pred_upper"], errors="coerce").to_numpy(dtype=float)
               if "pred_upper" in table.columns else np.full(len(table), np.nan))
        high = np.flatnonzero(np.isfinite(top) & (roof > 0) & (top > BOUND_TOLERANCE * roof))
        if not len(high):
            return None
        return (f"The band's upper end exceeds the physical (roofline) bound at batch {_listed(list(b[high]), 8)} "
                f"(up to {_tok_s(float(np.max(top[high])))} tok/s against {_tok_s(float(roof[high][np.argmax(top[high])]))}"
                " tok/s): no run can be faster than the bound, so read the band as ending there.")
    worst = int(over[np.argmax(ratio[over])])
    text = (f"The prediction exceeds the physical (roofline) bound at batch {_listed(list(b[over]), 8)}: "
            f"{_tok_s(pred[worst])} tok/s predicted at batch {b[worst]:g} against a bound of "
            f"{_tok_s(roof[worst])} tok/s ({ratio[worst]:.2f}x). ")
    cap = (pd.to_numeric(table["kv_fit_batch"], errors="coerce").to_numpy(dtype=float)
           if "kv_fit_batch" in table.columns else np.full(len(table), np.nan))
    if np.isfinite(cap[worst]) and b[worst] > cap[worst]:
        text += (f"Beyond batch {cap[worst]:,.0f} the KV cache no longer fits beside the weights, so no more "
                 "sequences run at once and the bound stops growing there; the predictor learned its curve on "
                 "configurations with memory to spare and does not know it. ")
    else:
        text += ("The predictor's learned efficiency is above 1 here (points near or above the bound in its "
                 "training data, or an extrapolation). ")
    return text + "Throughput above the bound is not physically expected: read the bound as the most to expect."


def ttft_reason(model: Predictor, train: pd.DataFrame, table: pd.DataFrame) -> str | None:
    """Why a predicted curve has no time to first token (and so no TPOT), in words.

    LLM-Inference-Bench's All_results.csv reports throughput and end-to-end latency only: its TTFT and TPOT
    tiles read a bare "n/a" whose help spoke of a band "calibrated on held-out rows" and of "the model"
    learning how far above the floor the platform runs, a model that was never trained.

    Parameters
    ----------
    model
        The predictor that made ``table``.
    train
        The rows it was trained on.
    table
        The curve's table (``pred_ttft_s``).

    Returns
    -------
    str or None
        None where some batch has a predicted TTFT; otherwise the reason, a clause without a final stop
        (``none of the 4,772 training runs measured TTFT ...``).
    """
    ttft = pd.to_numeric(table.get("pred_ttft_s", pd.Series(dtype="float64")), errors="coerce")
    if len(table) and ttft.notna().any():
        return None
    name = str(getattr(model, "name", type(model).__name__))
    if type(model).predict_ttft is Predictor.predict_ttft:
        return f"the {name} predictor has no TTFT model (roofline-gbm learns one where the data measured TTFT)"
    measured = pd.to_numeric(train["ttft_s"], errors="coerce") if "ttft_s" in train.columns else None
    n = int(((measured > 0) & np.isfinite(measured)).sum()) if measured is not None else 0
    if n == 0:
        return (f"none of the {len(train):,} training runs measured TTFT (their files report throughput and "
                "end-to-end latency only), so no model splits the latency into the first token and the rest")
    if getattr(model, "ttft_booster_", None) is None:
        return (f"only {n:,} of the {len(train):,} training runs measured TTFT (usable ones: at or above the "
                "physical floor), too few for a TTFT model")
    return "the catalogs lack a figure the TTFT model needs at this point (the hardware's peak FLOPS or bandwidth)"


def fit_whatif_model(runs: pd.DataFrame, predictor: str = "roofline-gbm", *, keep_suspect: bool = False,
                     settings: Mapping[str, Any] | None = None,
                     progress: ProgressCallback | None = None) -> tuple[Predictor, pd.DataFrame]:
    """Train a predictor for what-if queries, leaving suspect points out unless asked to keep them.

    Parameters
    ----------
    runs
        Runs table with the measured ``output_throughput_tok_s``.
    predictor
        Registry name (see :data:`perfmodel.models.PREDICTORS`).
    keep_suspect
        Keep rows faster than the physical bound (:func:`suspect_mask`); by default they are
        left out, as roofline-gbm itself does.
    settings
        Keyword settings of the predictor.
    progress
        Called as ``progress(stage, fraction)`` while training (:data:`perfmodel.models.base.ProgressCallback`):
        the predictor's own stages where its ``fit`` reports them (roofline-gbm), else one stage for the
        whole fit; ``("done", 1.0)`` last.

    Returns
    -------
    (Predictor, pandas.DataFrame)
        The fitted predictor and the rows it was trained on.

    Raises
    ------
    PerfmodelError
        Unknown predictor or setting, too few usable rows, or what the predictor's ``fit`` raises.
    """
    from .models import get_predictor

    if DEFAULT_TARGET not in runs.columns:
        raise ValidationError("cannot train", [Problem("required column is missing", column=DEFAULT_TARGET)])
    kw = dict(settings or {})
    model = get_predictor(predictor, **kw)
    y = pd.to_numeric(runs[DEFAULT_TARGET], errors="coerce")
    train = runs.loc[(y > 0).fillna(False).to_numpy(dtype=bool)]
    if not keep_suspect:
        train = train.loc[~suspect_mask(train).to_numpy(dtype=bool)]
    if hasattr(model, "keep_suspect"):
        # The user's choice: filtering again with the same rule removes nothing, and keep_suspect also decides
        # whether answers and bands stop at the physical bound (set to True to skip that filter, it had left
        # What-if bands 4x above the roofline).
        model.keep_suspect = keep_suspect
    if len(train) == 0:
        raise PerfmodelError(f"no row with a positive {DEFAULT_TARGET!r} to train {predictor} on")
    if progress is None:
        model.fit(train)
    elif "progress" in inspect.signature(model.fit).parameters:
        model.fit(train, progress=progress)
    else:
        progress(f"training {predictor} on {len(train):,} rows", 0.0)
        model.fit(train)
        progress("done", 1.0)
    return model, train


def whatif(model: Predictor, train: pd.DataFrame, point: Mapping[str, Any], batches: Sequence[float], *,
           level: float = 0.9, runs: pd.DataFrame | None = None) -> WhatIfResult:
    """Predict a saturation curve for one configuration.

    Parameters
    ----------
    model
        A fitted predictor.
    train
        The rows it was trained on (for :func:`domain_reasons`).
    point
        Values of :data:`POINT_COLUMNS`, and optionally of :data:`perfmodel.curves.VARYING_BY` settings
        (:func:`setting_choices`; None: unset, the runs that do not record it). A setting given goes into every
        query row and restricts the measured points to the runs at that value. One not given goes into the
        query at the value every measured run of the point's hardware, model and framework records where
        they agree on one (a dataset measured at one n_batch offers no choice, yet the roofline's prefill and
        the predictor's configuration depend on it); otherwise it is missing from the query (NaN).
    batches
        Batch sizes (see :func:`batch_grid`).
    level
        Band level (0 < level < 1).
    runs
        Where to look for measured points (default ``train``).

    Returns
    -------
    WhatIfResult

    Raises
    ------
    ValidationError
        A missing or invalid input (column named).
    UnknownNameError
        Hardware or model unknown to the catalog.
    """
    missing = [Problem("value is missing", column=c) for c in POINT_COLUMNS if point.get(c) in (None, "")]
    if missing:
        raise ValidationError("the what-if point is incomplete:", missing)
    if not batches:
        raise ValidationError("the what-if point is incomplete:", [Problem("no batch size", column="batch_size")])
    q = pd.DataFrame({c: [point[c]] * len(batches) for c in POINT_COLUMNS})
    for c in ("input_len_tok", "output_len_tok", "device_count"):
        q[c] = pd.to_numeric(q[c], errors="coerce").astype("float64")
    for c in _point_settings(point):
        q[c] = _setting_number(point[c], c)
    for c, v in _measured_settings(train, point).items():
        q[c] = v
    q["batch_size"] = np.asarray(batches, dtype=float)
    pred = predict_with_latency(model, q, level=level)
    # The bound at the dtypes the configuration was measured with (the CPU samples ran fp32: at the model's
    # default bf16 the catalog has no CPU peak, and the tile read n/a).
    roof = physics.roofline(q.assign(**_measured_dtypes(train, point)))
    cap = roof["kv_fit_batch"].to_numpy(dtype=float)
    over = q["batch_size"].to_numpy(dtype=float) > cap
    if over.any():  # no more sequences than the KV cache holds run at once: the bound stops there
        roof.loc[over, "output_tok_s_max"] = physics.roofline(
            q.loc[over].assign(batch_size=cap[over]))["output_tok_s_max"].to_numpy(dtype=float)
    table = pd.concat([q, pred], axis=1)
    table["roofline_tok_s"] = roof["output_tok_s_max"].to_numpy(dtype=float)
    table["ttft_floor_s"] = roof["ttft_s_min"].to_numpy(dtype=float)
    table["kv_fit_batch"] = cap
    src = train if runs is None else runs
    measured = _measured_near(src, point)
    reasons = domain_reasons(train, point, batches, range_factor=float(getattr(model, "domain_range_factor", 1.0)))
    reasons += [r for r in predictor_reasons(model, q, table) if r not in reasons]
    # per batch, as PRED.csv says them: the page's download had in_domain without a word of why
    table["note"] = query_notes(model, q, table)
    table["domain_reason"] = domain_reason_column(model, q, table)
    # Weights the devices cannot hold: every batch alike (predict_with_latency left no prediction), said first;
    # its confidence 0 means "cannot run", not "low confidence", and no TTFT is missing for want of data.
    blocked = next((r for r in model.cannot_run(q) if r is not None), None)
    tp = pd.to_numeric(table["pred_throughput_tok_s"], errors="coerce").to_numpy(dtype=float)
    if (np.isfinite(tp) & (tp <= 0)).any():  # the linear baseline's -19.56 tok/s had read as in domain
        at = q["batch_size"].to_numpy(dtype=float)[np.isfinite(tp) & (tp <= 0)]
        reasons.append(f"at batch {_listed(list(at), 8)} {nonpositive_note(str(getattr(model, 'name', '')))}")
    if blocked is not None:
        reasons.insert(0, blocked)
    elif (low := confidence_reason(table)) is not None:
        reasons.append(low)
    return WhatIfResult(point=dict(point), level=float(level), table=table, measured=measured,
                        reasons=tuple(reasons), memory_note=_weights_note(q, roof),
                        bound_note=bound_reason(table),
                        ttft_note=None if blocked else ttft_reason(model, train, table),
                        cannot_run=None if blocked is None else blocked[:1].upper() + blocked[1:] + ".",
                        overhead_note=None if blocked else overhead_reason(model, q, table))


_SAID_BY_THE_PAGE = frozenset({"unseen", "batch_range", "length_range", "device_range", "family_devices",
                               "combination"})
"""The kinds of predictor reason (:class:`perfmodel.models.base.Reason`) the page states itself
(:func:`domain_reasons`)."""


def predictor_reasons(model: Predictor, query: pd.DataFrame, table: pd.DataFrame) -> list[str]:
    """The predictor's own reasons (its ``domain_reasons``) for the batches it answered out of domain, each said
    once with the batches it holds at ("at batch 128, 256: ..."); the configuration's memory is left to the
    page's own message. The page had said "far from every training point in feature space" where ``perfmodel
    predict`` said "batch 256 is more than twice outside the batches this configuration was measured at
    (1-64)".

    Parameters
    ----------
    model
        The fitted predictor.
    query
        The what-if rows, one per batch.
    table
        Their predictions (``in_domain``).

    Returns
    -------
    list of str
    """
    method = getattr(model, "domain_reasons", None)
    outside = ~table["in_domain"].astype(bool).to_numpy()
    if not callable(method) or not outside.any():
        return []
    bb = pd.to_numeric(query["batch_size"], errors="coerce").to_numpy(dtype=float)
    rows = np.flatnonzero(outside)
    said: dict[str, list[float]] = {}
    for i, why in zip(rows.tolist(), method(query.iloc[rows].reset_index(drop=True)), strict=True):
        for r in why:
            # the memory is the page's own message; unseen names and the trained ranges are domain_reasons'
            if r.startswith(MEMORY_REASON_PREFIX) or getattr(r, "kind", "") in _SAID_BY_THE_PAGE:
                continue
            said.setdefault(r.replace(f"batch {bb[i]:g} is ", "the batch is "), []).append(float(bb[i]))
    return [f"at batch {_listed(at, 8)}: {r}" if r.startswith("the batch is ") else r for r, at in said.items()]


def overhead_reason(model: Predictor, query: pd.DataFrame, table: pd.DataFrame) -> str | None:
    """Why the curve is held down where the framework's least step overhead bounds it (roofline-gbm's
    :meth:`~perfmodel.models.roofline_gbm.RooflineGBM.step_overhead_bound`), in words; None where it does not.

    Parameters
    ----------
    model
        The fitted predictor (others than roofline-gbm have no such bound: None).
    query
        The query rows of :func:`whatif`.
    table
        Its table (``pred_throughput_tok_s``).

    Returns
    -------
    str or None
    """
    bound_of = getattr(model, "step_overhead_bound", None)
    if bound_of is None or not len(query):
        return None
    b = bound_of(query)
    pred = table["pred_throughput_tok_s"].to_numpy(dtype=float)
    bound = b["bound_tok_s"].to_numpy(dtype=float)
    held = np.isfinite(bound) & np.isclose(pred, bound, rtol=1e-6, atol=0.0)  # moved down to it, not just near
    if not held.any():
        return None
    first = int(np.flatnonzero(held)[0])
    per_layer, layers = float(b["overhead_s_per_layer"].iloc[first]), float(b["layers"].iloc[first])
    batches = query["batch_size"].to_numpy(dtype=float)[held]
    where = "every batch" if held.all() else f"batch{'es' if len(batches) > 1 else ''} {_listed(list(batches))}"
    fw = query["framework"].iloc[0]
    return (f"Held to the step overhead of {fw} at {where}: in the training data {fw} never spent less than "
            f"{per_layer * 1e6:,.0f} µs per layer and decode step beyond the roofline, so {layers:g} layers take "
            f"at least {per_layer * layers * 1e3:,.2f} ms a step more than the hardware needs. The learnt efficiency "
            "alone ran faster than that here (a model or a device faster than any this framework ran).")


def _weights_note(q: pd.DataFrame, roof: pd.DataFrame) -> str | None:
    """Why the configuration cannot run as asked when its weights alone fill the devices' usable memory
    (:data:`perfmodel.physics.KV_USABLE_FRACTION` of it, as :func:`perfmodel.physics.kv_fit_batch` counts)."""
    if not len(q):
        return None
    weights, memory = float(roof["weight_bytes"].iloc[0]), float(roof["memory_bytes"].iloc[0])
    usable = physics.KV_USABLE_FRACTION * memory
    if not (math.isfinite(weights) and math.isfinite(usable)) or weights <= usable:
        return None
    dev = float(q["device_count"].iloc[0])
    if physics.cramped(weights, memory):  # it runs at a higher utilisation, its batch held (as predict says)
        return physics.cramped_note(str(q["model"].iloc[0]), str(q["hardware"].iloc[0]), dev, weights, memory,
                                    float(roof["kv_fit_batch"].iloc[0])) + "."
    stated = memory / dev / catalog.BYTES_PER_MEMORY_GB  # the vendor's figure per device, binary GB
    return (f"The weights of {q['model'].iloc[0]} ({weights / 1e9:,.0f} GB) do not fit in "
            f"{physics.KV_USABLE_FRACTION:.0%} of the memory of {dev:g} x "
            f"{q['hardware'].iloc[0]} ({usable / 1e9:,.0f} GB of {memory / 1e9:,.0f} GB, counting the "
            f"{stated:,.0f} GB per device the vendor states as binary GB), let alone beside a KV "
            "cache: this configuration cannot run as asked (it needs more devices, a smaller weight dtype or "
            "offloading), so the prediction and the roofline bound describe no real run.")


_DTYPE_COLUMNS = ("weight_dtype", "kv_cache_dtype", "quantization")


_COMBINATION = ("hardware", "model", "framework")


def _same_combination(runs: pd.DataFrame, point: Mapping[str, Any]) -> np.ndarray:
    """The rows of the point's hardware, model and framework (the columns must exist)."""
    same = np.ones(len(runs), dtype=bool)
    for c in _COMBINATION:
        same &= (runs[c].astype("string") == str(point.get(c))).fillna(False).to_numpy(dtype=bool)
    return same


def _agreed_values(runs: pd.DataFrame, point: Mapping[str, Any], columns: Sequence[str], *,
                   every_row: bool) -> dict[str, Any]:
    """Per column of ``columns``, the one value the measured rows of the point's hardware, model and framework agree
    on: among the rows that record one, or (``every_row``) only where every row records it."""
    if not all(k in runs.columns for k in _COMBINATION):
        return {}
    same = _same_combination(runs, point)
    out: dict[str, Any] = {}
    for c in columns:
        if c not in runs.columns or not same.any():
            continue
        vals = runs.loc[same, c]
        if every_row and vals.isna().any():
            continue
        agreed = vals.dropna().unique()
        if len(agreed) == 1:
            out[c] = agreed[0]
    return out


def _measured_dtypes(runs: pd.DataFrame, point: Mapping[str, Any]) -> dict[str, Any]:
    """The dtype columns that every measured row of the point's hardware, model and framework agrees on."""
    return _agreed_values(runs, point, _DTYPE_COLUMNS, every_row=False)


def _measured_settings(runs: pd.DataFrame, point: Mapping[str, Any]) -> dict[str, float]:
    """The :data:`perfmodel.curves.VARYING_BY` settings the point does not carry on which every measured row of
    its hardware, model and framework agrees (all record it, at one value)."""
    return {c: float(v) for c, v in _agreed_values(runs, point, [c for c in VARYING_BY if c not in point],
                                                    every_row=True).items()}


def _point_settings(point: Mapping[str, Any]) -> list[str]:
    """The :data:`perfmodel.curves.VARYING_BY` settings a what-if point carries."""
    return [c for c in VARYING_BY if c in point]


def _setting_number(value: Any, column: str) -> float:
    """A point's setting as the query's float: NaN for unset (None)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValidationError("the what-if point is invalid:", [
            Problem(f"a setting must be a number or unset (None), got {value!r}", column=column)]) from None


def _at_settings(runs: pd.DataFrame, point: Mapping[str, Any]) -> np.ndarray:
    """The rows at the point's settings: those of its framework exactly (unset: rows without the setting),
    those of another framework also where they do not record the setting (it means nothing to them)."""
    keep = np.ones(len(runs), dtype=bool)
    own = ((runs["framework"].astype("string") == str(point.get("framework"))).fillna(False).to_numpy(dtype=bool)
           if "framework" in runs.columns else np.ones(len(runs), dtype=bool))
    for c in _point_settings(point):
        want = _setting_number(point[c], c)
        have = (_setting_values(runs[c]).to_numpy(dtype=float) if c in runs.columns
                else np.full(len(runs), np.nan))
        match = np.isnan(have) if math.isnan(want) else (have == want)
        keep &= match | (~own & np.isnan(have))
    return keep


def _measured_near(runs: pd.DataFrame, point: Mapping[str, Any]) -> pd.DataFrame:
    cols = ["batch_size", DEFAULT_TARGET, "framework", "device_count"]
    need = ("hardware", "model", "input_len_tok", "output_len_tok", *cols)
    if any(c not in runs.columns for c in need):
        return pd.DataFrame(columns=[*cols, "same_config", "suspect"])
    m = (runs["hardware"].astype("string") == str(point["hardware"])) \
        & (runs["model"].astype("string") == str(point["model"]))
    for c in ("input_len_tok", "output_len_tok"):
        m &= pd.to_numeric(runs[c], errors="coerce") == float(point[c])
    near = runs.loc[m.fillna(False).to_numpy(dtype=bool) & _at_settings(runs, point)]
    near = near.loc[pd.to_numeric(near[DEFAULT_TARGET], errors="coerce").notna().to_numpy(dtype=bool)]
    same = (near["framework"].astype("string") == str(point["framework"])) \
        & (pd.to_numeric(near["device_count"], errors="coerce") == float(point["device_count"]))
    out = near[cols].copy()
    out["batch_size"] = pd.to_numeric(out["batch_size"], errors="coerce").astype("float64")
    out[DEFAULT_TARGET] = pd.to_numeric(out[DEFAULT_TARGET], errors="coerce").astype("float64")
    out["same_config"] = same.fillna(False).to_numpy(dtype=bool)
    out["suspect"] = suspect_mask(near).to_numpy(dtype=bool)
    return out.sort_values("batch_size").reset_index(drop=True)
