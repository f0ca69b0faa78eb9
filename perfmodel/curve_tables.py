"""Tables and labels of throughput curves: configuration labels, the default grouping, repeat and fit
summaries.

Kept apart from :mod:`perfmodel.plots` so that text-only callers (``perfmodel fit``) need no plotting
library; :mod:`perfmodel.plots` re-exports every name here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    pass

__all__ = [
    "in_seconds",
    "UNSATURATED_KNEE",
    "knees_text",
    "fit_caveats",
    "CURVE_GROUP_COLUMNS",
    "has_positive",
    "LOAD_AXES",
    "curve_x_options",
    "curve_by_for_x",
    "off_axis_runs",
    "x_axis_note",
    "short_reason",
    "SHORT_REASON",
    "fit_counts_words",
    "overlaid_first",
    "lengths_label",
    "with_lengths",
    "config_label",
    "config_labels",
    "curve_group_columns",
    "default_curve_by",
    "repeat_summary",
    "fits_summary",
    "kv_full_batches",
    "poor_fits",
    "default_overlay",
    "NO_PLATEAU",
    "FIT_FAILED",
    "NO_PLATEAU_HELP",
    "NOT_ESTIMABLE",
    "BATCH_ESTIMATE_HELP",
    "RISE_NOT_MEASURED",
    "batch_estimate_text",
    "significant",
    "compact_number",
    "compact_seconds",
    "fit_import_warnings",
    "import_caveats",
    "IMPORT_WARNING_LEAD",
]


def _fmt_len(v: object) -> str:
    return "?" if v is None or pd.isna(v) else _num(v)


def lengths_label(runs: pd.DataFrame) -> pd.Series:
    """Input/output lengths of each run as one label, e.g. ``"128/2048"``.

    Parameters
    ----------
    runs
        A runs table; missing length columns give ``"?"``.

    Returns
    -------
    pandas.Series
        String labels aligned with ``runs.index``.
    """
    if runs.empty:
        return pd.Series([], index=runs.index, dtype="string")
    ii = runs["input_len_tok"] if "input_len_tok" in runs.columns else pd.Series(np.nan, index=runs.index)
    oo = runs["output_len_tok"] if "output_len_tok" in runs.columns else pd.Series(np.nan, index=runs.index)
    labels = [f"{_fmt_len(a)}/{_fmt_len(b)}" for a, b in zip(ii, oo, strict=True)]
    return pd.Series(labels, index=runs.index, dtype="string")


def with_lengths(runs: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``runs`` with a ``lengths`` column (see :func:`lengths_label`).

    Parameters
    ----------
    runs
        A runs table.

    Returns
    -------
    pandas.DataFrame
        The same rows with ``lengths`` added (or replaced).
    """
    out = runs.copy()
    out["lengths"] = lengths_label(runs)
    return out


CURVE_GROUP_COLUMNS: tuple[str, ...] = ("hardware", "device_count", "framework", "model", "input_len_tok",
                                        "output_len_tok", "weight_dtype", "kv_cache_dtype", "quantization",
                                        "tp_size", "pp_size",
                                        "fw_num_threads", "fw_n_batch", "arrival", "burstiness")
"""Columns a saturation curve can be grouped by (the configuration keys offered by the app)."""


def _is_missing(v: object) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def _num(v: object) -> str:
    f = float(v)  # type: ignore[arg-type]
    return str(int(f)) if f.is_integer() else f"{f:g}"


# --------------------------------------------------------------------------- numbers for people
# The one place that turns numbers into text for tables, tiles and reports: Python's "g" format switches to
# e-notation at 10**digits and below 1e-4 ("1.02e+03", "1e+03 ms"), which no reader wants.


def significant(v: float, digits: int = 4) -> str:
    """``v`` rounded to ``digits`` significant digits, in plain notation with thousands separators.

    Never e-notation: ``1,235`` (not ``1.235e+03``), ``0.0001234`` (not ``1.234e-04``); trailing zeros
    dropped (``2.5``, ``10``).

    Parameters
    ----------
    v
        Any number.
    digits
        Significant digits (at least 1).

    Returns
    -------
    str
        ``"n/a"`` when ``v`` is NaN or infinite.
    """
    v = float(v)
    if not math.isfinite(v):
        return "n/a"
    if v == 0:
        return "0"
    r = float(f"{v:.{max(1, digits)}g}")  # rounded first: 999.97 becomes 1000, then one more digit before the point
    decimals = max(0, max(1, digits) - 1 - math.floor(math.log10(abs(r))))
    text = f"{r:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _rounded(v: float, digits: int = 3) -> float:
    return abs(float(f"{v:.{digits}g}"))


_SI = (("k", 1e3), ("M", 1e6), ("G", 1e9), ("T", 1e12))


def compact_number(v: float) -> str:
    """A number for a tile, a table cell or a report, short and never in e-notation.

    Four significant digits below 1,000 (``41.42``, ``0.0001234``), whole numbers up to 99,999
    (``19,920``), then three significant digits with an SI prefix (``169 k``, ``1.48 M``, ``2.1 G``,
    ``140,000 T``). The prefix is chosen after rounding, so 999,999 is ``1 M``, not ``1e+03 k``.

    Parameters
    ----------
    v
        Any number (a throughput, a feature value, a cell).

    Returns
    -------
    str
        ``"n/a"`` when ``v`` is NaN or infinite.
    """
    v = float(v)
    if not math.isfinite(v):
        return "n/a"
    if abs(round(v)) < 1e5:
        return f"{v:,.0f}" if abs(v) >= 1000 else significant(v, 4)
    for unit, scale in _SI:
        if _rounded(v / scale) < 1000:
            return f"{significant(v / scale, 3)} {unit}"
    return f"{v / 1e12:,.0f} T"


_TIME_UNITS = (("ns", 1e-9, 1000.0), ("ms", 1e-3, 1000.0), ("s", 1.0, 120.0),
               ("min", 60.0, 120.0), ("h", 3600.0, 48.0))
"""(unit, seconds per unit, first value shown in the next unit)."""


def in_seconds(v: float, digits: int = 3) -> str:
    """A duration always in seconds, ``digits`` significant digits, never e-notation: ``"3.85 s"``,
    ``"0.996 s"``, ``"636 s"``. For a column or a comparison read in one unit (a report's e2e column had mixed
    ``3.85 s`` and ``996 ms``; a Planner reason read "10.6 min > 10 min" for a target typed as 600 s), where
    :func:`compact_seconds` picks a unit per value.

    Parameters
    ----------
    v
        Seconds.
    digits
        Significant digits.

    Returns
    -------
    str
        ``"n/a"`` when ``v`` is NaN or infinite.
    """
    v = float(v)
    return f"{significant(v, digits)} s" if math.isfinite(v) else "n/a"


def compact_seconds(v: float) -> str:
    """A duration in seconds in a readable unit, three significant digits, never in e-notation.

    ``850 ns``, ``0.691 ms``, ``340 ms``, ``2.35 s``, ``1.9 min``, ``5.5 h``, ``12 d``, ``4,560 d`` (latencies
    read in milliseconds from 1 µs on). The unit is chosen after rounding, so 0.9997 s is ``1 s`` (not
    ``1e+03 ms``) and 119.97 s is ``2 min``.

    Parameters
    ----------
    v
        Seconds.

    Returns
    -------
    str
        ``"n/a"`` when ``v`` is NaN or infinite.
    """
    v = float(v)
    if not math.isfinite(v):
        return "n/a"
    if v == 0:
        return "0 s"
    for unit, scale, limit in _TIME_UNITS:
        if _rounded(v / scale) < limit:
            return f"{significant(v / scale, 3)} {unit}"
    days = v / 86400
    return f"{significant(days, 3)} d" if _rounded(days) < 1000 else f"{days:,.0f} d"


def config_label(key: Mapping[str, Any]) -> str:
    """A short readable label of one configuration, e.g. ``"a100 x4 · vllm · llama-3-8b · 128/2048"``.

    Parameters
    ----------
    key
        Grouping column -> value (missing values are left out).

    Returns
    -------
    str
        ``"(all runs)"`` when no value is known.
    """
    parts: list[str] = []
    i, o = key.get("input_len_tok"), key.get("output_len_tok")
    if "input_len_tok" in key and "output_len_tok" in key:
        lengths = f"{'?' if _is_missing(i) else _num(i)}/{'?' if _is_missing(o) else _num(o)}"
    elif "input_len_tok" in key:
        lengths = "" if _is_missing(i) else f"in {_num(i)}"
    elif "output_len_tok" in key:
        lengths = "" if _is_missing(o) else f"out {_num(o)}"
    else:
        lengths = ""
    for col, v in key.items():
        if col in ("input_len_tok", "output_len_tok"):
            if lengths:
                parts.append(lengths)
                lengths = ""
            continue
        if _is_missing(v):
            continue
        if col == "device_count":
            if parts and "hardware" in key:
                parts[-1] += f" x{_num(v)}"
            else:
                parts.append(f"x{_num(v)}")
        elif col in ("tp_size", "pp_size"):
            parts.append(f"{col[:2]}{_num(v)}")
        elif col in ("hardware", "framework", "model"):
            parts.append(str(v))
        elif col in ("weight_dtype", "kv_cache_dtype"):
            parts.append(f"{'w' if col == 'weight_dtype' else 'kv'} {v}")
        elif col == "fw_num_threads":
            parts.append(f"{_num(v)} thread{'' if v == 1 else 's'}")
        elif col == "fw_n_batch":
            parts.append(f"n_batch {_num(v)}")
        elif col == "framework_version":  # "v5.24.0", not "framework_version=5.24.0"
            parts.append(f"v{v}" if str(v)[:1].isdigit() else str(v))
        elif col == "quantization":
            parts.append(f"quant {v}")
        else:
            parts.append(f"{col}={_num(v) if isinstance(v, int | float) else v}")
    return " · ".join(parts) or "(all runs)"


def config_labels(table: pd.DataFrame, by: Sequence[str]) -> list[str]:
    """One unique label per row of a fits table, naming only the columns that differ between rows.

    A ``#2`` suffix is added where two labels would collide.

    Parameters
    ----------
    table
        Rows with the ``by`` columns (the output of :func:`perfmodel.curves.fit_curves`).
    by
        The grouping columns, in order.

    Returns
    -------
    list of str
    """
    keys = list(by)
    if len(table) > 1:
        # Columns with one value in every row say nothing about which curve is which.
        varying = [c for c in keys if table[c].nunique(dropna=False) > 1]
        if "input_len_tok" in varying or "output_len_tok" in varying:
            varying += [c for c in ("input_len_tok", "output_len_tok") if c in keys and c not in varying]
        keys = [c for c in keys if c in varying]
    # A measurement setting (torch threads, llama.cpp n_batch) is named only on hardware where it varies: the
    # sample's H200 runs read "1 thread" because its CPU runs ran at 1 and 2 threads. Rows that differ by the
    # setting alone share a hardware, so their labels still differ.
    from .curves import VARYING_BY

    hidden = {c: _uniform_on_hardware(table, c) for c in keys if c in VARYING_BY and "hardware" in table.columns}
    seen: dict[str, int] = {}
    out = []
    for i, rec in enumerate(table[list(by)].to_dict("records")):
        label = config_label({c: rec[c] for c in keys if not (c in hidden and hidden[c][i])})
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label} #{seen[label]}")
    return out


def _uniform_on_hardware(table: pd.DataFrame, c: str) -> np.ndarray:
    """Per row, whether column ``c`` takes one value (missing counted as one) over the rows of its hardware."""
    hw = table["hardware"].astype("string").fillna("")
    n = table[c].astype("string").fillna("").groupby(hw.to_numpy()).transform("nunique")
    return (n <= 1).to_numpy()


def curve_group_columns(runs: pd.DataFrame) -> list[str]:
    """The :data:`CURVE_GROUP_COLUMNS` that hold at least one value in ``runs``.

    Parameters
    ----------
    runs
        A runs table.

    Returns
    -------
    list of str
    """
    return [c for c in CURVE_GROUP_COLUMNS if c in runs.columns and runs[c].notna().any()]


def default_curve_by(runs: pd.DataFrame) -> list[str]:
    """The default grouping: what :func:`perfmodel.curves.fit_curves` uses by default, present in ``runs``.

    Parameters
    ----------
    runs
        A runs table.

    Returns
    -------
    list of str
        :data:`perfmodel.curves.DEFAULT_BY` then the :data:`perfmodel.curves.OPTIONAL_BY` columns
        with values and the :data:`perfmodel.curves.VARYING_BY` and :data:`perfmodel.curves.LOAD_BY` columns with
        more than one value,
        restricted to the columns of ``runs`` (and in the order of :data:`CURVE_GROUP_COLUMNS`).
    """
    from .curves import DEFAULT_BY, LOAD_BY, OPTIONAL_BY, VARYING_BY

    with_values = set(curve_group_columns(runs))
    varying = {c for c in (*VARYING_BY, *LOAD_BY) if c in runs.columns and runs[c].nunique() > 1}
    return [c for c in CURVE_GROUP_COLUMNS
            if (c in DEFAULT_BY and c in runs.columns) or (c in OPTIONAL_BY and c in with_values) or c in varying]


def repeat_summary(runs: pd.DataFrame, by: Sequence[str], *, x: str = "batch_size",
                   y: str = "output_throughput_tok_s") -> pd.DataFrame:
    """Measured points per configuration and batch: mean, standard deviation and count of the repeats.

    Parameters
    ----------
    runs
        A runs table with the ``by``, ``x`` and ``y`` columns.
    by
        Grouping columns (a configuration).
    x, y
        Batch and throughput columns. Rows with a missing or non-positive value are left out,
        as the fit leaves them out.

    Returns
    -------
    pandas.DataFrame
        The ``by`` columns, then ``x`` (batch), ``y_mean``, ``y_std`` (0 for a single repeat),
        ``n_repeats``; sorted by the keys and the batch.
    """
    cols = list(by)
    xv = pd.to_numeric(runs[x], errors="coerce").astype("float64")
    yv = pd.to_numeric(runs[y], errors="coerce").astype("float64")
    ok = (np.isfinite(xv) & (xv > 0) & np.isfinite(yv) & (yv > 0)).to_numpy()
    df = runs.loc[ok, cols].copy()
    df["x"], df["_y"] = xv[ok], yv[ok]
    if df.empty:
        return pd.DataFrame(columns=[*cols, "x", "y_mean", "y_std", "n_repeats"])
    g = df.groupby([*cols, "x"], dropna=False, sort=True)["_y"]
    out = g.agg(y_mean="mean", y_std="std", n_repeats="count").reset_index()
    out["y_std"] = out["y_std"].fillna(0.0)
    return out


def _ci_text(v: float, lo: float, hi: float, digits: int = 4) -> str:
    """``"v [lo, hi]"`` to ``digits`` significant digits (:func:`significant`: 1,020, not 1.02e+03)."""
    if not np.isfinite(v):
        return ""
    text = significant(v, digits)
    if np.isfinite(lo) and np.isfinite(hi):
        text += f" [{significant(lo, digits)}, {significant(hi, digits)}]"
    return text


NOT_ESTIMABLE = "interval not estimable"
"""Shown instead of an interval with no width at the digits shown (:func:`batch_estimate_text`)."""
BATCH_ESTIMATE_HELP = (
    f"'{NOT_ESTIMABLE} from N batch sizes': every bootstrap replicate gave the same value to the digits shown, "
    "as happens with few measured batch sizes (a curve through 3 or 4 points leaves tiny residuals); the value "
    "is not exact, its uncertainty is unknown. 'extrapolated: measured up to batch B': the value lies beyond the "
    "largest measured batch, on a part of the curve never measured. 'between A and B (the rise lies between "
    "measured batches ...)': the curve rises entirely between two measured batches and is flat after, so any "
    "faster rise fits as well: the data give a range, not an estimate.")
"""Tooltip of the knees, b90 and b95 columns: what :func:`batch_estimate_text`'s notes mean."""


def _no_width(lo: float, hi: float, digits: int) -> bool:
    """An interval that reads ``[x, x]`` at ``digits`` significant digits (zero width, or within rounding)."""
    return significant(lo, digits) == significant(hi, digits)


def _x_words(x: object) -> tuple[str, str, str]:
    from .curves import x_words

    return x_words(str(x) if isinstance(x, str) and x else "batch_size")


def _not_estimable(n_batches: object, x: str = "batch_size") -> str:
    return (NOT_ESTIMABLE if _is_missing(n_batches)
            else f"{NOT_ESTIMABLE} from {_num(n_batches)} {_x_words(x)[1]}")


def _measured_up_to(batch_max: object, x: str = "batch_size") -> str:
    """How far a configuration was measured: the note of a plateau, b90 or b95 beyond its batches (or the
    request rates, lengths... of a curve along another x: a rate curve had said "measured up to batch 183.38")."""
    word, _, unit = _x_words(x)
    return f"measured up to {word} {_num(batch_max)}" + (f" {unit}" if unit else "")


UNSATURATED_KNEE = "still growing: plateau not reached in the measured batches"
"""Said after a knee on a curve short of 95% of its plateau at its largest measured batch: such a knee sits near
0.45x the largest batch whatever the hardware (477 of LLM-Inference-Bench's 681 knees), a mark of the range
measured, not of saturation."""


def knees_text(knees: Sequence[float], cis: Sequence[tuple[float, float]], *, b95: float,
               n_batches: object = None, batch_max: float = math.nan,
               rise_between: tuple[float, float] = (math.nan, math.nan), x: str = "batch_size") -> str:
    """A curve's knees with their intervals (:func:`batch_estimate_text`), ``;``-separated, followed by
    :data:`UNSATURATED_KNEE` where b95 lies beyond the largest measured batch.

    Parameters
    ----------
    knees, cis
        The knees and their intervals.
    b95
        The batch reaching 95% of the plateau (NaN: not said).
    n_batches, batch_max, rise_between, x
        As in :func:`batch_estimate_text`.

    Returns
    -------
    str
        ``""`` where no knee is finite.
    """
    where = {"n_batches": n_batches, "batch_max": batch_max, "rise_between": rise_between, "x": x}
    parts = [batch_estimate_text(k, lo, hi, **where) for k, (lo, hi) in zip(knees, cis, strict=True)
             if np.isfinite(k)]
    text = "; ".join(p for p in parts if p)
    if text and np.isfinite(b95) and np.isfinite(batch_max) and b95 > batch_max:
        text += f" ({UNSATURATED_KNEE})" if x == "batch_size" else \
            f" ({UNSATURATED_KNEE.replace('measured batches', 'measured ' + _x_words(x)[1])})"
    return text


RISE_NOT_MEASURED = "the rise lies between measured batches"
"""Said after the range of a knee, b90 or b95 whose curve rises entirely between two measured batches
(:attr:`perfmodel.curves.CurveFit.rate_bounded_below`): any faster rise fits as well, so there is no estimate."""


def batch_estimate_text(v: float, lo: float, hi: float, *, n_batches: object = None,
                        batch_max: float = math.nan, digits: int = 3,
                        rise_between: tuple[float, float] = (math.nan, math.nan), x: str = "batch_size") -> str:
    """A batch-valued estimate of a curve (a knee, b90, b95) with its interval, for tables and reports.

    ``"29.4 [27.1, 33.5]"`` (:func:`significant` digits, never e-notation). Two cases are said in words
    rather than shown as numbers that mislead:

    * an interval with no width at the digits shown (``[29.4, 29.4]``: every bootstrap replicate landed on
      the same value, as happens with few batch sizes) reads ``"29.4 (interval not estimable from 4 batch
      sizes)"``, not a false precision;
    * a value beyond the largest measured batch ends with ``"(extrapolated: measured up to batch 64)"``, the
      words of a plateau not reached (:func:`fits_summary`'s ``plateau_ci``);
    * on a curve that rises entirely between two measured batches (``rise_between``, the saturation rate bounded
      only from below) the value is no estimate: only the range reads, ``"between 1 and 16 (the rise lies between
      measured batches 1 and 16)"`` (it had read ``"2.72 [2.62, 2.82]"``).

    Parameters
    ----------
    v, lo, hi
        The estimate and its interval (NaN bounds: no interval, nothing said).
    n_batches
        Distinct batch sizes measured (named in the "not estimable" note when given).
    batch_max
        Largest measured batch; NaN: not checked.
    digits
        Significant digits.
    rise_between
        The two measured batches a curve rises between when its rate is bounded only from below (NaN: not so).
    x
        The curve's x column: the notes name its values (:func:`perfmodel.curves.x_words`), "measured up to
        request rate 183.4 req/s" on a rate curve.

    Returns
    -------
    str
        ``""`` when ``v`` is NaN or infinite.
    """
    if not np.isfinite(v):
        return ""
    r_lo, r_hi = (float(b) for b in rise_between)
    if np.isfinite(r_lo) and np.isfinite(r_hi):
        lo_v = lo if np.isfinite(lo) else r_lo
        hi_v = max(hi, r_hi) if np.isfinite(hi) else r_hi
        rise = RISE_NOT_MEASURED if x == "batch_size" else RISE_NOT_MEASURED.replace(
            "measured batches", "measured " + _x_words(x)[1])
        return (f"between {significant(lo_v, digits)} and {significant(hi_v, digits)} ({rise} "
                f"{significant(r_lo, digits)} and {significant(r_hi, digits)})")
    text = significant(v, digits)
    notes = []
    if np.isfinite(lo) and np.isfinite(hi):
        if _no_width(lo, hi, digits):
            notes.append(_not_estimable(n_batches, x))
        else:
            text += f" [{significant(lo, digits)}, {significant(hi, digits)}]"
    if np.isfinite(batch_max) and v > batch_max:
        notes.append(f"extrapolated: {_measured_up_to(batch_max, x)}")
    return f"{text} ({'; '.join(notes)})" if notes else text


NO_PLATEAU = "—"
"""Shown for the knees, b90 and b95 of a shape without a plateau (log-linear: it never levels off)."""
NO_PLATEAU_HELP = ("— : the curve's shape has no plateau (log-linear rises by the same amount per doubling of the "
                   "batch at every batch), so it has no knee and never reaches 90%/95% of a plateau.")
"""Tooltip of the knees, b90 and b95 columns where they may hold :data:`NO_PLATEAU`."""
FIT_FAILED = "fit failed (see message)"
"""Shown instead of the plateau's interval, the knees, b90 and b95 of a fit that failed (contradictory repeats, no
convergence): its numbers had stood in the table like any other's, plateau 201.7 [154.7, 381.9] beside "repeats
disagree by more than 3x"."""


def _plateau_text(rec: Mapping[str, Any]) -> str:
    x = str(rec.get("x_name") or "batch_size")
    if bool(rec.get("plateau_extrapolated", False)):
        return f"plateau not reached: {_measured_up_to(rec['batch_max'], x)}"
    c, lo, hi = rec["c"], rec["c_lo"], rec["c_hi"]
    if np.isfinite(c) and not (np.isfinite(lo) and np.isfinite(hi)):
        # three points for three parameters leave no residual to bootstrap: say so (the cell had been empty
        # while its help promised "interval not estimable"); other missing intervals were not asked for
        from .curves import MIN_BATCHES

        nb = rec.get("n_batches")
        return _not_estimable(nb, x) if not _is_missing(nb) and float(nb) <= MIN_BATCHES else ""
    if not (np.isfinite(c) and np.isfinite(lo) and np.isfinite(hi)):
        return ""
    if _no_width(lo, hi, 4):
        return _not_estimable(rec.get("n_batches"), x)
    # a lower end at zero: the data allow any plateau up to the upper end (108 on LLM-Inference-Bench)
    loose = " (not pinned down by the data)" if lo <= 0 else ""
    return f"[{significant(lo, 4)}, {significant(hi, 4)}]{loose}"


def _rise_between(rec: Mapping[str, Any]) -> tuple[float, float]:
    """The gap a curve rises in (:attr:`perfmodel.curves.CurveFit.rise_between`), NaN when its rate is bounded."""
    if not bool(rec.get("rate_bounded_below", False)):
        return (math.nan, math.nan)
    return (float(rec.get("rise_lo", math.nan)), float(rec.get("rise_hi", math.nan)))


def fits_summary(table: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """The readable fits table shown by the CLI and the Curves page.

    Parameters
    ----------
    table
        The output of :func:`perfmodel.curves.fit_curves` (its ``by`` columns included).
    by
        The grouping columns.

    Returns
    -------
    pandas.DataFrame
        One row per configuration: ``configuration`` (a :func:`config_labels` label), ``shape``,
        ``plateau_tok_s`` (exponential plateau ``c``, empty for other shapes and where the plateau is an
        extrapolation far beyond the measured batches, ``plateau_extrapolated``) and ``plateau_ci`` (its
        interval, or ``"plateau not reached: measured up to batch B"``, or :data:`NOT_ESTIMABLE` for an
        interval of no width), ``knees`` (``"batch [low, high]"``, ``;``-separated), ``b90``, ``b95`` (with
        intervals, :func:`batch_estimate_text`: an interval of no width is "not estimable", a value beyond the
        largest measured batch is marked an extrapolation; :data:`NO_PLATEAU` for shapes without a plateau,
        :data:`perfmodel.curves.PLATEAU_SHAPES`),
        :data:`FIT_FAILED` in the plateau's interval, the knees, b90 and b95 of a fit that failed (its plateau
        empty), ``kv_full_batch`` (:func:`kv_full_batches`; NaN on curves along another x than the batch),
        ``r2``, ``n_points``, ``n_batches``, ``success``,
        ``poor_fit``, ``message``.
    """
    from .curves import PLATEAU_SHAPES

    labels = config_labels(table, by)
    kv_full = kv_full_batches(table)
    rows = []
    for label, rec, kv in zip(labels, table.to_dict("records"), kv_full.tolist(), strict=True):
        where = {"n_batches": rec["n_batches"], "batch_max": float(rec.get("batch_max", math.nan)),
                 "rise_between": _rise_between(rec), "x": str(rec.get("x_name") or "batch_size")}
        js = [j for j in (1, 2) if f"knee_{j}" in rec]
        knees = knees_text([rec[f"knee_{j}"] for j in js], [(rec[f"knee_{j}_lo"], rec[f"knee_{j}_hi"]) for j in js],
                           b95=float(rec["b95"]), **where)
        flat = rec["shape"] in ("none", *PLATEAU_SHAPES)
        extrapolated = bool(rec.get("plateau_extrapolated", False))
        failed = not bool(rec["success"]) and rec["shape"] != "none"
        rows.append({
            "configuration": label, "shape": rec["shape"],
            "plateau_tok_s": math.nan if extrapolated or failed else rec["c"],
            "plateau_ci": FIT_FAILED if failed else _plateau_text(rec),
            "knees": FIT_FAILED if failed else knees if flat else NO_PLATEAU,
            "b90": FIT_FAILED if failed else batch_estimate_text(rec["b90"], rec["b90_lo"], rec["b90_hi"], **where)
            if flat else NO_PLATEAU,
            "b95": FIT_FAILED if failed else batch_estimate_text(rec["b95"], rec["b95_lo"], rec["b95_hi"], **where)
            if flat else NO_PLATEAU,
            "kv_full_batch": kv,
            "r2": rec["r2"], "n_points": int(rec["n_points"]), "n_batches": int(rec["n_batches"]),
            "success": bool(rec["success"]), "poor_fit": bool(rec["poor_fit"]), "message": rec["message"]})
    cols = ["configuration", "shape", "plateau_tok_s", "plateau_ci", "knees", "b90", "b95", "kv_full_batch", "r2",
            "n_points", "n_batches", "success", "poor_fit", "message"]
    return pd.DataFrame(rows, columns=cols)


_KV_COLUMNS = ("hardware", "model", "device_count", "input_len_tok", "output_len_tok")


def kv_full_batches(table: pd.DataFrame) -> pd.Series:
    """Per row (a configuration), the batch beyond which its KV cache no longer fits beside the weights
    (:func:`perfmodel.physics.kv_fit_batch`): past it a server preempts sequences and the curve flattens
    or drops, so a knee near it has a memory-capacity cause.

    Parameters
    ----------
    table
        Rows with ``hardware``, ``model``, ``device_count``, ``input_len_tok`` and ``output_len_tok``
        (``weight_dtype``, ``quantization``, ``kv_cache_dtype`` used where present).

    Returns
    -------
    pandas.Series
        Float, index aligned with ``table``; NaN where a column is missing or empty, a name is not in
        the catalog, the catalog lacks a figure, or the curve runs along another x than the batch (its
        ``x_name``: a batch on a request-rate axis means nothing there).
    """
    from . import physics
    from .errors import PerfmodelError

    out = pd.Series(np.nan, index=table.index, dtype="float64")
    if len(table) == 0 or any(c not in table.columns for c in _KV_COLUMNS):
        return out
    cols = [c for c in (*_KV_COLUMNS, "weight_dtype", "quantization", "kv_cache_dtype") if c in table.columns]
    probe = table[cols].assign(batch_size=1.0)
    if "x_name" in table.columns:
        probe = probe.loc[table["x_name"].fillna("batch_size").astype(str).eq("batch_size").to_numpy()]
    for c in ("device_count", "input_len_tok", "output_len_tok"):
        probe[c] = pd.to_numeric(probe[c], errors="coerce")
    complete = probe[list(_KV_COLUMNS)].notna().all(axis=1).to_numpy()
    probe = probe.loc[complete]
    # One catalog look-up per (hardware, model): a name the catalog lacks leaves its rows NaN only.
    for _, grp in probe.groupby(["hardware", "model"], sort=False):
        try:
            out.loc[grp.index] = physics.roofline(grp)["kv_fit_batch"].to_numpy(dtype=float)
        except PerfmodelError:
            continue
    return out


def overlaid_first(summary: pd.DataFrame, configs: Sequence[str]) -> tuple[pd.DataFrame, int]:
    """The fits table with the configurations drawn on the chart first (in the table's order), and how many
    those are.

    Parameters
    ----------
    summary
        :func:`fits_summary` (``configuration``).
    configs
        The configurations on the chart.

    Returns
    -------
    (pandas.DataFrame, int)
    """
    if not len(configs) or "configuration" not in summary.columns:
        return summary, 0
    on = summary["configuration"].isin(list(configs)).to_numpy(dtype=bool)
    return pd.concat([summary[on], summary[~on]], ignore_index=True), int(on.sum())


def poor_fits(summary: pd.DataFrame, r2_min: float, *, x: str = "batch_size") -> pd.DataFrame:
    """The curves to review: failed fits, and fits explaining less than ``r2_min`` of the variance.

    Parameters
    ----------
    summary
        The output of :func:`fits_summary`.
    r2_min
        R^2 threshold.
    x
        The column the curves run along (names the reason of a configuration with too few values of it).

    Returns
    -------
    pandas.DataFrame
        ``configuration``, ``r2``, ``n_batches``, ``reason`` (``"failed"``, ``"R² < ..."`` or
        :func:`short_reason`) and ``message``, failed fits first.
    """
    r2 = pd.to_numeric(summary["r2"], errors="coerce")
    failed = ~summary["success"].astype(bool)
    low = ~failed & ~(r2 >= r2_min)
    out = summary.loc[failed | low, ["configuration", "r2", "n_batches", "message"]].copy()
    from .curves import MIN_BATCHES

    short = (pd.to_numeric(out["n_batches"], errors="coerce") < MIN_BATCHES).to_numpy()
    too_few = short_reason(x)
    out.insert(1, "reason", np.where(failed[failed | low], np.where(short, too_few, "failed"),
                                     f"R² < {r2_min:g}"))
    order = {"failed": 0, too_few: 2}
    return out.sort_values("reason", key=lambda s: s.map(order).fillna(1), kind="stable").reset_index(drop=True)


SHORT_REASON = "too few batch sizes"
""":func:`poor_fits`' reason for a configuration measured at fewer than ``MIN_BATCHES`` batch sizes (nothing to
fit, not a failed fit: most of LLM-Inference-Bench's llama.cpp ``n_batch`` settings ran at one batch)."""


def short_reason(x: str = "batch_size") -> str:
    """:data:`SHORT_REASON` for curves along ``x`` ("too few request rates").

    Parameters
    ----------
    x
        The column the curves run along.

    Returns
    -------
    str
    """
    return SHORT_REASON if x == "batch_size" else f"too few {_x_words(x)[1]}"


def fit_counts_words(summary: pd.DataFrame, *, x: str = "batch_size") -> str:
    """How many configurations were fitted, had too few batch sizes for a curve, or failed, in words.

    Parameters
    ----------
    summary
        :func:`fits_summary` (or :func:`perfmodel.curves.fit_curves`' table): ``success`` and ``n_batches``.
    x
        The column the curves run along ("fewer than 3 request rates" along the request rate).

    Returns
    -------
    str
        E.g. "2,363 configuration(s): 695 fitted, 1,668 with fewer than 3 batch sizes (too few for a curve)".
    """
    from .curves import MIN_BATCHES

    ok = summary["success"].astype(bool)
    short = ~ok & (pd.to_numeric(summary["n_batches"], errors="coerce") < MIN_BATCHES)
    failed = ~ok & ~short
    parts = [f"{int(ok.sum()):,} fitted"]
    if short.any():
        parts.append(f"{int(short.sum()):,} with fewer than {MIN_BATCHES} {_x_words(x)[1]} (too few for a curve)")
    if failed.any():
        parts.append(f"{int(failed.sum()):,} failed")
    return f"{len(summary):,} configuration(s): " + ", ".join(parts)


def fit_caveats(table: pd.DataFrame) -> list[str]:
    """Sentences that warn how far to trust the successful fits of a fit table, for the Curves page.

    Three cases read wrongly without a word (the third: a knee on a curve still growing at its largest batch,
    :data:`UNSATURATED_KNEE`; 477 of LLM-Inference-Bench's 681 knees): a curve through exactly :data:`perfmodel.curves.MIN_BATCHES`
    batch sizes (three parameters through three points: its R² is 1 by construction and says nothing about
    the shape; 41 of LLM-Inference-Bench's 695 fits), and a Kneedle knee past b95 (the knee is relative to the
    measured range, so on a curve that saturates early it lies where the curve is already flat; 41 fits there).

    Parameters
    ----------
    table
        :func:`perfmodel.curves.fit_curves` output: ``success``, ``n_batches``, ``knee_1``, ``b95`` and
        ``batch_max``.

    Returns
    -------
    list of str
        Zero to three sentences, in the words of the table's x (``x_name``: request rates along a rate sweep's
        request rate, where they had spoken of batches).
    """
    from .curves import MIN_BATCHES

    if not len(table):
        return []
    xname = str(table["x_name"].dropna().iloc[0]) if "x_name" in table.columns and table["x_name"].notna().any() \
        else "batch_size"
    xw, xws, _ = _x_words(xname)
    ok = table["success"].astype(bool)
    out = []
    nb = pd.to_numeric(table["n_batches"], errors="coerce")
    exact = int((ok & (nb == MIN_BATCHES)).sum())
    if exact:
        out.append(f"{exact:,} fit(s) rest on exactly {MIN_BATCHES} {xws}: three parameters pass through "
                   "three points, so their R² is 1 by construction and says nothing about the shape. Read their "
                   f"plateau, knees and b90/b95 as rough until more {xws} are measured.")
    if "knee_1" in table.columns and "b95" in table.columns:
        knee = pd.to_numeric(table["knee_1"], errors="coerce")
        past = int((ok & (knee > pd.to_numeric(table["b95"], errors="coerce"))).sum())
        if past:
            out.append(f"{past:,} fit(s) have their knee past b95: the knee is where the curve bends most over "
                       f"the measured {xws}, so on a curve that saturates early it lies where the curve is "
                       f"already within 5% of its plateau. There b90/b95 tell how close to saturation a {xw} is.")
        if "batch_max" in table.columns:
            growing = ok & knee.notna() & (pd.to_numeric(table["b95"], errors="coerce")
                                           > pd.to_numeric(table["batch_max"], errors="coerce"))
            if growing.any():
                out.append(f"{int(growing.sum()):,} knee(s), drawn open, lie on curves still growing at their "
                           f"largest measured {xw} (b95 beyond it): such a knee falls near half the largest {xw} "
                           "measured, whatever the hardware, so it marks the range measured, not saturation.")
    return out


def default_overlay(summary: pd.DataFrame, n: int, *, r2_min: float | None = None,
                    spread: Sequence[Any] | None = None) -> list[str]:
    """The configurations a curves chart overlays before the user picks: the ``n`` best-measured curves.

    Fits that succeeded with R^2 of at least ``r2_min`` (default :data:`perfmodel.curves.R2_POOR`) come
    first, those with the most batch sizes and then the highest R^2 first; failed or poor fits only where too
    few others exist (a sample's llama.cpp curve at R^2 0.69 had opened the page, above its 8-batch curves at
    0.98-1.00). A configuration with no point on the curve's x (``n_points`` 0: a GuideLLM sweep's request-rate
    runs on the batch axis) is never chosen: it would draw nothing, and had filled two of the three places
    beside the one curve there was. Returned in the summary's order, so the legend keeps the table's.

    Parameters
    ----------
    summary
        The output of :func:`fits_summary`.
    n
        How many.
    r2_min
        R^2 a fit needs to count as good.
    spread
        Per row of ``summary``, a group (its hardware) to spread the choice over: the best curve of each group
        first, in rank order, then the rest by rank. LLM-Inference-Bench had opened on two MI300X curves of
        Llama-3-70B whose plateaus (231 and 225 tok/s) hid one line under the other.

    Returns
    -------
    list of str
        Configuration labels.
    """
    from .curves import R2_POOR

    if not len(summary) or n <= 0:
        return []
    r2 = pd.to_numeric(summary["r2"], errors="coerce").fillna(-np.inf)
    ok = summary["success"].astype(bool)
    good = ok & (r2 >= (R2_POOR if r2_min is None else r2_min))
    nb = pd.to_numeric(summary["n_batches"], errors="coerce").fillna(0)
    # tiers: good fits, other successful fits, the rest; within a tier more batch sizes, then higher R^2
    rank = pd.DataFrame({"tier": np.where(good, 0, np.where(ok, 1, 2)), "nb": -nb, "r2": -r2},
                        index=summary.index).sort_values(["tier", "nb", "r2"], kind="stable")
    order = list(rank.index)
    if "n_points" in summary.columns:
        drawn = pd.to_numeric(summary["n_points"], errors="coerce").fillna(0) > 0
        order = [i for i in order if drawn[i]]
        if not order:
            return []
    if spread is not None:
        group = pd.Series(list(spread), index=summary.index).astype(str)
        tier = rank["tier"]
        # within the best tier, one curve per group first; the other tiers only after it, as before
        best = [i for i in order if tier[i] == tier[order[0]]]
        firsts = list(dict.fromkeys(group[best]))
        lead = [next(i for i in best if group[i] == g) for g in firsts]
        order = lead + [i for i in order if i not in set(lead)]
    chosen = set(order[:n])
    return [str(c) for i, c in summary["configuration"].items() if i in chosen]


def has_positive(runs: pd.DataFrame, column: str = "batch_size") -> bool:
    """Whether any run has a finite, positive value in ``column``: by default a batch size (or concurrency) a
    saturation curve can be fitted against, which offline runs and request-rate runs without a concurrency limit
    lack (their request rate is ``inf``).

    Parameters
    ----------
    runs
        A runs table.
    column
        The load (or length) column.

    Returns
    -------
    bool
    """
    if column not in runs.columns:
        return False
    b = pd.to_numeric(runs[column], errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
    return bool((np.isfinite(b) & (b > 0)).any())


LOAD_AXES: tuple[str, ...] = ("batch_size", "request_rate_rps", "measured_concurrency")
"""The loads a saturation curve can run along: the batch (or the configured concurrency), the request rate of a
rate sweep (GuideLLM, inference-perf, ``vllm bench serve --request-rate``) and the requests measured in flight.
The Curves page offers those a dataset holds; ``perfmodel fit --x`` takes any column."""


def curve_x_options(runs: pd.DataFrame) -> list[str]:
    """The :data:`LOAD_AXES` a curve of ``runs`` can run along: those with a finite, positive value
    (:func:`has_positive`), in that order.

    Parameters
    ----------
    runs
        A runs table.

    Returns
    -------
    list of str
        Empty for runs that record no load at all (offline runs: their request rate is ``inf``).
    """
    return [c for c in LOAD_AXES if has_positive(runs, c)]


def curve_by_for_x(runs: pd.DataFrame, by: Sequence[str], x: str) -> tuple[list[str], str]:
    """The grouping of curves along ``x``: ``by`` without ``x`` itself (grouped by its own x, every group
    holds one value and no curve is fitted), and, along a column that is no load (a length), with
    ``batch_size`` added where the runs have one (such a curve is one per batch).

    The CLI (``perfmodel fit --x``) applies it to its default grouping, the Curves page to the grouping it
    offers.

    Parameters
    ----------
    runs
        A runs table.
    by
        The grouping for a curve along the batch.
    x
        The column the curves run along.

    Returns
    -------
    (list of str, str)
        The grouping, and what was added to it in words (``""`` when nothing was).
    """
    if x == "batch_size":
        return list(by), ""
    out = [c for c in by if c != x]
    if x not in LOAD_AXES and has_positive(runs) and "batch_size" not in out:
        out.append("batch_size")
        return out, f"batch_size added to the grouping (a curve along {x} is one per batch; choose with --by)"
    return out, ""


def off_axis_runs(runs: pd.DataFrame, x: str) -> dict[str, int]:
    """How many runs have no value on the curve's x but one on another load axis, per that axis: the runs a
    curve along ``x`` leaves out (a mixed GuideLLM sweep's request-rate runs on the batch axis).

    Parameters
    ----------
    runs
        A runs table.
    x
        The column the curves run along.

    Returns
    -------
    dict
        Other :data:`LOAD_AXES` column -> runs without ``x`` that have it, only the non-zero counts, in
        :data:`LOAD_AXES` order; a run is counted on its first such axis.
    """
    def positive(c: str) -> np.ndarray:
        if c not in runs.columns:
            return np.zeros(len(runs), dtype=bool)
        v = pd.to_numeric(runs[c], errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
        return np.isfinite(v) & (v > 0)

    left = ~positive(x)
    out: dict[str, int] = {}
    for c in LOAD_AXES:
        if c == x:
            continue
        on = left & positive(c)
        if on.any():
            out[c] = int(on.sum())
        left &= ~on
    return out


def x_axis_note(x: str) -> str:
    """What the fits of curves along ``x`` report, in words, for a curve along another x than the batch: its
    knees, b90 and b95 are values of ``x`` and no KV-full batch is given (``perfmodel fit --x`` and the Curves
    page say it alike).

    Parameters
    ----------
    x
        The column the curves run along.

    Returns
    -------
    str
        E.g. "x: request rate (req/s); knees, b90 and b95 are request rates in req/s, and no KV-full batch is
        given (it counts sequences at once, not this x)"; ``""`` for ``batch_size``.
    """
    if x == "batch_size":
        return ""
    word, words, unit = _x_words(x)
    return (f"x: {word}" + (f" ({unit})" if unit else "") + f"; knees, b90 and b95 are {words}"
            + (f" in {unit}" if unit else "")
            + ", and no KV-full batch is given (it counts sequences at once, not this x)")


# --------------------------------------------------------------------------- import warnings beside the fits

_OFF_CURVE_WORDS = ("latency", "ttft", "tpot", "itl", "power", "energy")
"""A warning on a column naming one of these (a latency, a power reading) does not concern a throughput curve."""


def _issue_records(issues: pd.DataFrame | Sequence[object] | None) -> list[dict[str, Any]]:
    if issues is None:
        return []
    if isinstance(issues, pd.DataFrame):
        recs = issues.to_dict("records")
    else:
        recs = [{c: getattr(i, c, None) for c in ("file", "row", "column", "message", "severity")} for i in issues]
    return [r for r in recs if str(r.get("severity") or "") == "warning" and not _is_missing(r.get("message"))]


def _key(values: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(None if _is_missing(v) else (v.item() if isinstance(v, np.generic) else v) for v in values)


def fit_import_warnings(runs: pd.DataFrame, issues: pd.DataFrame | Sequence[object] | None, table: pd.DataFrame,
                        by: Sequence[str], *, x: str = "batch_size",
                        y: str = "output_throughput_tok_s") -> list[tuple[str, ...]]:
    """The import warnings that concern each fitted configuration, so they can stand beside its fit.

    An import warning is stored per file (and row) with the dataset (:meth:`perfmodel.store.Store.issues`); a fit
    is per configuration, and had never said that its batch axis was in doubt: gpu_conc's H200 file warns that 5
    of its 10 concurrency levels had about 20 requests in flight where 64-1,024 were configured (Little's law),
    and its fit read knee 52.3, b90 26 without a word. A warning concerns a configuration when it comes from a
    file its runs came from and is about the whole file (no row), about the batch axis ``x`` (such a warning
    sums up the file's rows and cites the first), or about one of the configuration's own rows; warnings about a
    latency or power column are left out (they say nothing about a throughput curve), as are errors (their rows
    were not imported) and notes.

    Parameters
    ----------
    runs
        The runs table the fits were made from (``source_file`` and ``source_row`` name where each run came from).
    issues
        The dataset's import issues: :meth:`perfmodel.store.Store.issues`, or a sequence of
        :class:`perfmodel.importers.Issue` (a file read directly). None: none.
    table
        :func:`perfmodel.curves.fit_curves` output made from ``runs`` grouped by ``by``.
    by
        The grouping columns.
    x, y
        The batch and throughput columns of the fits.

    Returns
    -------
    list of tuple of str
        Per row of ``table``, its warnings as ``"FILE, row R, column C: MESSAGE"``, in the order stored; a
        warning several files gave alike (same row, column and message) is one, naming its files
        (``"A.json, B.json and 5 more file(s), column C: MESSAGE"``).
    """
    out: list[tuple[str, ...]] = [() for _ in range(len(table))]
    recs = _issue_records(issues)
    cols = list(by)
    if not recs or not len(table) or "source_file" not in runs.columns or any(c not in runs.columns for c in cols):
        return out
    files = runs["source_file"].astype("string").fillna("").to_numpy(dtype=object)
    rows = (pd.to_numeric(runs["source_row"], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
            if "source_row" in runs.columns else np.full(len(runs), np.nan))
    groups = {_key(k if isinstance(k, tuple) else (k,)): idx
              for k, idx in runs.groupby(cols, dropna=False, sort=False).indices.items()}
    for i, rec in enumerate(table[cols].to_dict("records")):
        idx = groups.get(_key([rec[c] for c in cols]))
        if idx is None:
            continue
        own_files = set(files[idx])
        own_rows = {(f, int(r)) for f, r in zip(files[idx], rows[idx], strict=True) if np.isfinite(r)}
        found: dict[tuple[object, ...], list[str]] = {}  # (row, column, message) -> its files, in order
        for iss in recs:
            file = "" if _is_missing(iss.get("file")) else str(iss["file"])
            if file not in own_files:
                continue
            column = None if _is_missing(iss.get("column")) else str(iss["column"])
            if column is not None and column not in (x, y) and any(w in column.lower() for w in _OFF_CURVE_WORDS):
                continue
            row = None if _is_missing(iss.get("row")) else int(iss["row"])
            if row is not None and column != x and (file, row) not in own_rows:
                continue
            files_of = found.setdefault((row, column, str(iss["message"])), [])
            if file not in files_of:
                files_of.append(file)
        out[i] = tuple(_issue_text(f, r, c, m) for (r, c, m), f in found.items())
    return out


_FILES_NAMED = 2
"""Files an import warning names before "and N more file(s)"."""


def _issue_text(files: Sequence[str], row: int | None, column: str | None, message: str) -> str:
    """``"FILE, row R, column C: MESSAGE"``; one warning that several files gave alike (inference-perf's seven
    stages each saying the device count is assumed) names the files once, where it had been seven caveats."""
    named = ", ".join(files[:_FILES_NAMED]) + (f" and {len(files) - _FILES_NAMED} more file(s)"
                                               if len(files) > _FILES_NAMED else "")
    where = ", ".join(filter(None, [named, f"row {row}" if row is not None else "",
                                    f"column {column!r}" if column else ""]))
    return f"{where}: {message}"


IMPORT_WARNING_LEAD = "Import warning"
"""How a caveat from the import begins (:func:`import_caveats`)."""


def import_caveats(labels: Sequence[str], warnings: Sequence[Sequence[str]], *, max_names: int = 5) -> list[str]:
    """One sentence per distinct import warning, naming the configurations it concerns, to stand beside fits.

    Parameters
    ----------
    labels
        Configuration labels, one per fit.
    warnings
        :func:`fit_import_warnings` (aligned with ``labels``).
    max_names
        Configurations named before "and N more".

    Returns
    -------
    list of str
        E.g. ``"Import warning for h200 x1 · vllm · llama-3.1-8b · 1000/1000: FILE, row 6, column
        'batch_size': 5 of 10 concurrency run(s) had far fewer requests in flight ..."``; empty when none.
    """
    by_warning: dict[str, list[str]] = {}
    for label, ws in zip(labels, warnings, strict=True):
        for w in ws:
            by_warning.setdefault(w, []).append(str(label))
    out = []
    for w, names in by_warning.items():
        shown = ", ".join(names[:max_names]) + (f" and {len(names) - max_names:,} more" if len(names) > max_names
                                                 else "")
        whom = shown if len(names) <= max_names else f"{len(names):,} configurations ({shown})"
        out.append(f"{IMPORT_WARNING_LEAD} for {whom}: {w}")
    return out


# --------------------------------------------------------------------------- batches that outrun the batch
SUPERLINEAR_TOLERANCE = 1.1
"""How much faster than the batch ratio a larger batch's throughput may grow before :func:`superlinear_runs`
lists it (10 %: repeat-to-repeat noise)."""


def superlinear_runs(runs: pd.DataFrame, *, tolerance: float = SUPERLINEAR_TOLERANCE) -> pd.DataFrame:
    """Measured batches whose throughput grew faster than the batch from the next smaller batch of the same
    configuration (:func:`default_curve_by`): each sequence ran faster beside more sequences, which a serving
    engine does not do, so one of the two measurements is suspect (a slow warm-up at the smaller batch, a
    miscounted batch). LLM-Inference-Bench's MI300X with vLLM ran Qwen2-7B at 128/128 tokens at 42.8 tok/s at
    batch 1 and 1,414 at batch 16 (33 times for 16 times the sequences); 13 such pairs in all, 12 of them
    MI300X's. They stay in training: which of the two is wrong is not known.

    Parameters
    ----------
    runs
        A runs table (``batch_size`` and ``output_throughput_tok_s``; repeats are averaged per batch).
    tolerance
        The factor beyond the batch ratio that is listed.

    Returns
    -------
    pandas.DataFrame
        One row per pair: ``configuration``, ``batch_size``, ``output_throughput_tok_s``, ``smaller_batch``,
        ``smaller_throughput_tok_s`` and ``growth_over_batch`` (throughput ratio over batch ratio); empty
        (those columns) where none.
    """
    cols = ["configuration", "batch_size", "output_throughput_tok_s", "smaller_batch", "smaller_throughput_tok_s",
            "growth_over_batch"]
    if not len(runs) or not {"batch_size", "output_throughput_tok_s"} <= set(runs.columns):
        return pd.DataFrame(columns=cols)
    by = [c for c in default_curve_by(runs) if c != "batch_size"]
    b = pd.to_numeric(runs["batch_size"], errors="coerce")
    t = pd.to_numeric(runs["output_throughput_tok_s"], errors="coerce")
    ok = (b > 0) & (t > 0)
    if not ok.any():
        return pd.DataFrame(columns=cols)
    data = runs.loc[ok, by].assign(batch_size=b[ok], tput=t[ok])
    mean = data.groupby([*by, "batch_size"], dropna=False, sort=True)["tput"].mean().reset_index()
    out = []
    for key, sub in mean.groupby(by, dropna=False, sort=True) if by else [((), mean)]:
        bs, ts = sub["batch_size"].to_numpy(dtype=float), sub["tput"].to_numpy(dtype=float)
        growth = (ts[1:] / ts[:-1]) / (bs[1:] / bs[:-1])
        for i in np.flatnonzero(growth > tolerance):
            label = config_label(dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True)))
            out.append((label, bs[i + 1], ts[i + 1], bs[i], ts[i], growth[i]))
    return pd.DataFrame(out, columns=cols)
