"""Saturation curves: throughput versus batch size, fitted per configuration.

Shapes are plain numpy functions shared by the fitter, the plots and the tests:

``exp``
    throughput(B) = c - a * exp(-b * B), with a, b, c >= 0. ``c`` is the plateau
    (maximum sustainable throughput), ``a`` the rise from batch 0, ``b`` how fast
    the curve saturates (per sequence of batch).
``nrh``
    throughput(B) = the non-rectangular hyperbola (:func:`nonrect_hyperbola`), a smooth
    ``min(k * B, c)``: a linear rise of slope ``k`` through the origin that stops at the
    plateau ``c``, with a corner whose sharpness ``theta`` lies in [:data:`NRH_THETA_MIN`,
    :data:`NRH_THETA_MAX`]. The exponential bends over a long range and cannot follow a
    rise that stops short (min(50 B, 3,200) at batches 1, 16, ..., 128: plateau 3,549
    [3,219, 4,175] and "not reached" against a measured 3,176 on five points); fitted by
    the same robust projected Levenberg-Marquardt (``_lm_nrh``), from three curvatures.
``piecewise``
    a continuous piecewise-linear function of log2(batch) whose slope changes at
    one or two breakpoints; the breakpoints are searched on the observed batch
    grid, so they are always batch sizes that were measured. Large batches often
    bend again when memory or cache limits bite; this shape captures that.
``loglin``
    throughput(B) = alpha + beta * log2(B); used only as the honestly labelled
    fallback when the exponential fit fails, or when asked for.

Fitting (:func:`fit_curve`)
    The exponential is fitted by bounded robust least squares (analytic
    Jacobian, ``loss="soft_l1"`` by default) on data scaled to unit batch and
    unit throughput, so the result is exactly equivariant to the units. The
    solver is a vectorised projected Levenberg-Marquardt (``_lm_exp``) that
    solves every curve of a data set, and every bootstrap replicate, in one
    numpy pass; it minimises the same cost as ``scipy.optimize.least_squares(
    loss=..., f_scale=..., bounds=...)`` and a test checks that both reach the
    same optimum (scipy's per-call overhead, about 1 ms per iteration, made a
    data set take several times the 2 s budget). Initial values
    come from the data's quantiles (:func:`quantile_init`). ``f_scale`` (the
    residual size beyond which a point counts as an outlier) is 1.4826 x the
    median absolute residual of a first plain least-squares fit, floored at 1% of
    the median throughput; with fewer than two residual degrees of freedom the
    robust stage is skipped because no noise estimate exists. Repeats of a
    batch size are *pooled*: every repeat is one point with equal weight (so a
    batch measured three times counts three times); ``weights`` lets a caller
    weight points otherwise. Bounds: a, b, c >= 0, and a, c <= ``PLATEAU_MAX_FACTOR``
    x the largest throughput (a curve still rising linearly has its optimum at
    infinity; the message says so). An exponential with ``a > c`` is below zero at
    small batches; where that reaches the smallest measured batch (an absolute loss
    lets the large batches pull the curve there) it is refitted through the origin
    (``a = c``, so the curve is >= 0 everywhere), and rejected if that refit fails.
    When the first fit fails (not converged or
    R^2 < ``R2_MIN_SUCCESS``), :data:`N_RESTARTS` other saturation rates are tried
    at once and the best kept; when all fail, the log-linear fallback is fitted
    and labelled ``shape="loglin"``.

Shape choice (``shape="auto"``)
    Every eligible candidate is fitted and scored by AICc and BIC (Gaussian,
    from the residual sum of squares); the piecewise form replaces the
    exponential only when its AICc is lower by more than :data:`AICC_MARGIN`,
    the nrh form (tried from :data:`NRH_MIN_BATCHES` distinct x values) by more
    than :data:`NRH_AICC_MARGIN`; of several that do, the lowest AICc.
    The scores of all candidates and the reason are in the result.

Intervals
    ``"bootstrap"`` (default): a wild bootstrap over residuals (Rademacher signs,
    residuals inflated by sqrt(n / (n - p))), refitted with a vectorised,
    warm-started Levenberg-Marquardt with the same robust loss and bounds;
    percentile intervals; fixed seed. ``"asymptotic"``: Wald intervals from the
    Jacobian at the optimum (cheap, symmetric, no knee intervals). ``"none"``.
    With no residual degrees of freedom (as many points as parameters) no
    interval is reported rather than a zero-width one.

Knees
    The knee is the Kneedle point (Satopaa et al. 2011) computed on the *fitted*
    curve, not on the raw points (with 3-7 points per curve, Kneedle on the
    points can only return a measured batch): the fitted curve is evaluated on a
    dense grid uniform in batch over the measured range, both axes are
    normalised to [0, 1], and the knee is where the normalised curve lies
    furthest above its chord (searched on :data:`KNEE_GRID_POINTS` points, then
    again on :data:`KNEE_REFINE_POINTS` points between the best one's
    neighbours, so the knee is not confined to the grid), i.e. where the
    marginal gain falls to the average gain over the range. The axis is linear in batch, as marginal gain is per
    added sequence (on a log axis a curve still rising linearly looks convex and
    has no knee). A curve whose
    largest distance is below :data:`KNEE_MIN_DISTANCE` has no knee. This matches
    ``kneed.KneeLocator(curve="concave", direction="increasing")`` on the same
    dense curve (tested) without making ``kneed`` a dependency, and is cheap to
    evaluate on every bootstrap replicate at once, which gives the knee its
    interval. On piecewise fits every breakpoint where the slope falls is a knee.
    ``b90`` / ``b95`` are the batch sizes where the curve reaches 90% / 95% of
    its plateau: of ``c`` for the exponential (analytic, may lie beyond the
    measured range: see ``plateau_reached`` and ``plateau_extrapolated``), of the
    highest fitted value over the measured range for the piecewise shape (solved
    exactly: the curve is linear in log2(batch) between breakpoints, so the first
    segment reaching the target gives the batch in closed form). With the
    bootstrap, each replicate's b90 / b95 follow the same definition (of that
    replicate's own highest value over the measured range), which gives their
    percentile intervals for both shapes.
    A log-linear curve has no plateau, and no knee, b90 or b95 is reported for it:
    normalised to [0, 1] it is ``log(B / B_min) / log(B_max / B_min)`` whatever its
    parameters, so its Kneedle point would be a property of the measured batch
    range alone (the same value, with a zero-width interval, for every curve).

All scipy warnings and exceptions are caught and turned into the result's
``message``; only invalid input raises (a :class:`~perfmodel.errors.PerfmodelError`).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from .errors import PerfmodelError, Problem, UnknownNameError, ValidationError

__all__ = [
    "SHAPES",
    "INTERVAL_METHODS",
    "INIT_METHODS",
    "LOSSES",
    "DEFAULT_BY",
    "LOAD_BY",
    "OPTIONAL_BY",
    "VARYING_BY",
    "MIN_BATCHES",
    "R2_MIN_SUCCESS",
    "REPEAT_SPREAD_MAX",
    "KNEE_MIN_DISTANCE",
    "KNEE_GRID_POINTS",
    "KNEE_REFINE_POINTS",
    "AICC_MARGIN",
    "NRH_AICC_MARGIN",
    "N_RESTARTS",
    "PLATEAU_SHAPES",
    "PLATEAU_EXTRAPOLATION_FACTOR",
    "NRH_THETA_MIN",
    "NRH_MIN_BATCHES",
    "NRH_THETA_MAX",
    "BOOTSTRAP_MAX_CONFIGS",
    "DEFAULT_N_BOOT",
    "DEFAULT_INTERVALS",
    "default_interval_method",
    "CurveFit",
    "saturating_exp",
    "nonrect_hyperbola",
    "nrh_batch_at_fraction",
    "X_WORDS",
    "x_words",
    "loglinear",
    "piecewise_loglinear",
    "quantile_init",
    "naive_init",
    "kneedle_knee",
    "exp_batch_at_fraction",
    "fit_curve",
    "fit_curves",
]

SHAPES = ("auto", "exp", "nrh", "piecewise", "loglin")
"""Allowed ``shape`` values; ``auto`` chooses between ``exp``, ``nrh`` and ``piecewise`` by AICc."""
INTERVAL_METHODS = ("bootstrap", "asymptotic", "none")
"""Allowed ``intervals`` values."""
INIT_METHODS = ("quantile", "naive")
"""``quantile``: initial values from data quantiles (the default); ``naive``: a = b = c = 1,
which is what ``scipy.optimize.curve_fit`` does without ``p0`` (kept for comparison)."""
LOSSES = ("soft_l1", "huber", "cauchy", "linear")
"""Robust losses accepted (those of ``scipy.optimize.least_squares`` that we also bootstrap)."""

DEFAULT_BY = ("hardware", "device_count", "framework", "model", "input_len_tok", "output_len_tok")
"""Columns that always identify a configuration."""
OPTIONAL_BY = ("weight_dtype", "kv_cache_dtype", "quantization", "tp_size", "pp_size")
"""Added to the default grouping when present with at least one value."""
VARYING_BY = ("fw_num_threads", "fw_n_batch")
"""Added to the default grouping when they take more than one value: measurement settings outside the
canonical columns that change the throughput (the local engine's torch threads; llama.cpp's ``n_batch``,
the prompt tokens per forward pass, which LLM-Inference-Bench's llama.cpp rows vary in their "Batch Size"
column). A dataset measured at one setting keeps its configurations (and their labels) unchanged."""

LOAD_BY = ("arrival", "burstiness")
"""Added to the default grouping when they take more than one value: how a request-rate run's requests arrive
(constant, Poisson, gamma of a burstiness). GuideLLM's constant and Poisson runs at 5 req/s had been one curve's
repeats."""

MIN_BATCHES = 3
"""A 3-parameter curve needs at least three distinct batch sizes."""
R2_MIN_SUCCESS = 0.5
"""A converged fit explaining less than half the variance is not a usable curve
(a stuck optimiser returns a flat line at the mean with R^2 near 0)."""
R2_POOR = 0.9
"""Below this R^2 a successful fit is flagged ``poor_fit`` for review."""
REPEAT_SPREAD_MAX = 3.0
"""Repeats of one batch size whose max/min throughput ratio exceeds this are contradictory."""
KNEE_MIN_DISTANCE = 0.05
"""Smallest normalised distance above the chord that counts as a knee (Kneedle)."""
AICC_MARGIN = 2.0
"""AICc improvement the piecewise shape needs over the exponential to be chosen."""
NRH_AICC_MARGIN = 4.0
"""AICc improvement the ``nrh`` shape needs over the exponential to be chosen. Both have three parameters and
both saturate, so on a curve the exponential fits a difference of 2 is often noise: on LLM-Inference-Bench's 695
curves a margin of 2 moved 14 well-fitted ones (R^2 0.96-1.0, Delta AICc 2.1-3.3 for most) to ``nrh``. 4 is
"considerably less support" for the exponential (Burnham & Anderson 2002, sec. 2.6); a linear rise that stops
short (min(50 B, 3,200) at 9 batches, 1% noise) clears it by about 30."""
N_RESTARTS = 4
"""Extra starts (other saturation rates) tried when the first exponential fit fails."""
PLATEAU_MAX_FACTOR = 10.0
"""Upper bound of ``a`` and ``c`` as a multiple of the largest measured throughput. A curve
still rising linearly has its optimum at infinity (c, a -> inf, b -> 0); the bound keeps the
optimiser finite and a fit that ends on it says the plateau is not identifiable."""
RATE_MAX = 1e3
"""Upper bound of ``b`` times the largest measured batch (saturation within 0.1% of the range)."""
RATE_PROFILE_POINTS = 241
"""Saturation rates, log-spaced from 1/1,000 to :data:`RATE_MAX` per largest batch, that :func:`_profile_rate`
tries when every start of the exponential fit failed."""
KNEE_GRID_POINTS = 256
"""Points of the grid, uniform in batch over the measured range, on which a fitted curve's Kneedle knee is found."""
KNEE_REFINE_POINTS = 65
"""Points of the second, local grid between the coarse knee's two neighbours (:func:`kneedle_knee` with
``curve_at``): the knee's resolution is the coarse step / 32, the same knee as on a uniform grid of 8,161 points,
at about a third more than the coarse grid's cost (that grid would cost 30 times more). Without it a curve measured from batch 1 to 256 had its knee on whole
batches, and bootstrap replicates that agreed within one batch gave a zero-width knee interval."""
PLATEAU_SHAPES = ("exp", "nrh", "piecewise")
"""Shapes that level off (or bend) and so have knees and b90/b95. A log-linear curve rises by the same amount
per doubling of the batch at every batch: it has no plateau, so no knee, b90 or b95 is reported for it."""
NRH_THETA_MIN = 0.9
"""Smallest curvature ``theta`` of the ``nrh`` shape: the shape is for saturation sharper than the exponential's.
At ``x = c / k`` (where its initial slope meets its plateau) the exponential through the origin stands at 63% of
its plateau, an nrh curve at ``(1 - sqrt(1 - theta)) / theta`` of it: 63% at theta 0.66, 76% at 0.9. Allowed down
to 0.5, it fitted 69 of LLM-Inference-Bench's gently rising curves by a long hyperbolic tail (``theta = 0`` is
Michaelis-Menten) and moved their b95 about 3x further out: a second way of fitting what the exponential fits."""
NRH_MIN_BATCHES = 5
"""Distinct x values ``shape="auto"`` needs before it tries the ``nrh`` shape (as the piecewise shape): with three
or four, two three-parameter curves both pass near every point and AICc cannot tell them apart."""
NRH_THETA_MAX = 0.99999
"""Largest ``theta`` of the ``nrh`` shape: at 1 the curve is ``min(k x, c)`` with a corner where its derivatives
do not exist; at 0.99999 it stands at 99.7% of ``c`` at the corner ``x = c / k``. At 0.999 (96.9%) the rounded
corner pulled the plateau of min(50 B, 3,200) up to 3,230 [3,215, 3,272], above the 3,209 measured on it."""
_NRH_K_MAX = 1e4
"""Upper bound of the ``nrh`` slope ``k`` in scaled units (plateau / largest x): the plateau reached within
1/1,000 of the range at a plateau 10x the largest throughput, :data:`RATE_MAX` and :data:`PLATEAU_MAX_FACTOR`."""
X_WORDS: dict[str, tuple[str, str, str]] = {
    "batch_size": ("batch", "batch sizes", ""),
    "measured_concurrency": ("concurrency", "concurrency levels", "requests"),
    "request_rate_rps": ("request rate", "request rates", "req/s"),
    "input_len_tok": ("input length", "input lengths", "tokens"),
    "output_len_tok": ("output length", "output lengths", "tokens"),
}
"""The words a fit's messages and tables use for its x column: (one value, values, unit). A curve along the
request rate said "measured up to batch 183.38" of a rate in req/s."""
PLATEAU_EXTRAPOLATION_FACTOR = 1.5
"""An exponential plateau ``c`` not reached in the measured range (``b95`` beyond the largest batch) and more than
this multiple of the fitted throughput at the largest measured batch is an extrapolation, not a measurement:
``plateau_extrapolated`` is set and the fits table shows "plateau not reached" instead of the number."""
DEFAULT_N_BOOT = 200
"""Bootstrap replicates of ``perfmodel fit``, the Curves page and the report, so the three give the same intervals
for the same data (the report had used 100 and so other knee intervals than the page)."""
DEFAULT_INTERVALS = "bootstrap"
"""The interval method of ``perfmodel fit`` and the report's curves (the Curves page: :func:`default_interval_method`)."""
BOOTSTRAP_MAX_CONFIGS = 250
"""Above this many configurations the interactive default interval method is ``asymptotic``, not ``bootstrap``
(:func:`default_interval_method`). Bootstrap (200 replicates) costs about 15 ms per configuration against about
5 ms for asymptotic intervals (``benchmarks/bench_curves.py`` data, 2-core machine): the 1,202 configurations of
LLM-Inference-Bench take 17-20 s with bootstrap and 5-6 s with asymptotic intervals; 250 of them about 3 s with
bootstrap."""
_TINY = 1e-12
_UPPER = np.array([PLATEAU_MAX_FACTOR, RATE_MAX, PLATEAU_MAX_FACTOR])
_MAX_PIECES = 2


# --------------------------------------------------------------------------- shapes


def saturating_exp(batch: Any, a: float, b: float, c: float) -> np.ndarray:
    """The generalized exponential saturation curve ``c - a * exp(-b * batch)``.

    Parameters
    ----------
    batch
        Batch sizes (array-like).
    a, b, c
        Rise from batch 0 (tok/s), saturation rate (1/sequence), plateau (tok/s).

    Returns
    -------
    numpy.ndarray
        Throughput at each batch size.
    """
    x = np.asarray(batch, dtype=float)
    return c - a * np.exp(-b * x)


def nonrect_hyperbola(batch: Any, k: float, c: float, theta: float) -> np.ndarray:
    """The non-rectangular hyperbola: a smooth ``min(k * batch, c)``.

    The smaller root ``P`` of ``theta P^2 - (k B + c) P + k B c = 0`` (Thornley's light-response curve, a
    roofline with a rounded corner): through the origin with slope ``k``, levelling off at ``c``; ``theta`` in
    [0, 1] sets how sharp the corner is (1: ``min(k B, c)`` exactly, 0: the rectangular hyperbola
    ``k B c / (k B + c)``). Evaluated as ``2 k B c / (k B + c + sqrt((k B + c)^2 - 4 theta k B c))``, which is
    stable at every ``theta``.

    Parameters
    ----------
    batch
        Batch sizes, or another load (array-like, >= 0).
    k, c, theta
        Initial slope (tok/s per unit of x), plateau (tok/s), curvature (0 to 1).

    Returns
    -------
    numpy.ndarray
        Throughput at each batch size.
    """
    x = np.asarray(batch, dtype=float)
    kx = k * x
    s = kx + c
    with np.errstate(divide="ignore", invalid="ignore"):
        out = 2.0 * kx * c / (s + np.sqrt(np.maximum(s * s - 4.0 * theta * kx * c, 0.0)))
    return np.where(s > 0, out, 0.0)


def nrh_batch_at_fraction(k: Any, c: Any, theta: Any, fraction: float) -> np.ndarray:
    """Batch where :func:`nonrect_hyperbola` reaches ``fraction`` of its plateau ``c``.

    Parameters
    ----------
    k, c, theta
        Curve parameters (scalars or arrays that broadcast).
    fraction
        In (0, 1).

    Returns
    -------
    numpy.ndarray
        ``(c / k) f (1 - theta f) / (1 - f)`` (the quadratic solved for the batch); ``inf`` where ``k`` is 0.
    """
    k, c, theta = (np.asarray(v, dtype=float) for v in (k, c, theta))
    f = float(fraction)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (c / k) * f * (1.0 - theta * f) / (1.0 - f)
    return np.where(k <= 0, np.inf, out)


def x_words(x: str) -> tuple[str, str, str]:
    """The words for a fit's x column: (one value, several values, unit), e.g. ``("request rate", "request
    rates", "req/s")``; a column :data:`X_WORDS` lacks is named as it is.

    Parameters
    ----------
    x
        The x column of a fit.

    Returns
    -------
    (str, str, str)
    """
    return X_WORDS.get(x, (x, f"{x} values", ""))


def loglinear(batch: Any, alpha: float, beta: float) -> np.ndarray:
    """``alpha + beta * log2(batch)``.

    Parameters
    ----------
    batch
        Batch sizes (> 0).
    alpha, beta
        Throughput at batch 1 and gain per doubling of the batch (tok/s).

    Returns
    -------
    numpy.ndarray
    """
    return alpha + beta * np.log2(np.asarray(batch, dtype=float))


def _pw_design(u: np.ndarray, knots_log2: Sequence[float]) -> np.ndarray:
    cols = [np.ones_like(u), u] + [np.maximum(u - t, 0.0) for t in knots_log2]
    return np.column_stack(cols)


def piecewise_loglinear(batch: Any, intercept: float, slopes: Sequence[float],
                        breakpoints: Sequence[float]) -> np.ndarray:
    """Continuous piecewise-linear function of log2(batch).

    Parameters
    ----------
    batch
        Batch sizes (> 0).
    intercept
        Value at batch 1 of the first segment's line (tok/s).
    slopes
        Slope of each segment in tok/s per doubling; ``len(breakpoints) + 1`` values.
    breakpoints
        Batch sizes where the slope changes, increasing.

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    PerfmodelError
        When the number of slopes does not match the breakpoints.
    """
    if len(slopes) != len(breakpoints) + 1:
        raise PerfmodelError(f"piecewise curve: expected {len(breakpoints) + 1} slopes for "
                             f"{len(breakpoints)} breakpoint(s), got {len(slopes)}")
    u = np.log2(np.asarray(batch, dtype=float))
    knots = np.log2(np.asarray(breakpoints, dtype=float))
    coef = [intercept, slopes[0]] + [slopes[i + 1] - slopes[i] for i in range(len(breakpoints))]
    return _pw_design(np.atleast_1d(u), knots) @ np.asarray(coef, dtype=float)


def quantile_init(batch: Any, throughput: Any) -> tuple[float, float, float]:
    """Initial (a, b, c) from the data's quantiles.

    ``a0 = max(q90 - q10, 1e-5)``, ``b0 = 1 / max(B90 - B10, 1e-5)``,
    ``c0 = max(q90, 1e-5)``, where q are throughput and B batch percentiles.

    Parameters
    ----------
    batch, throughput
        The points (same length, at least one).

    Returns
    -------
    (a0, b0, c0)
    """
    x = np.asarray(batch, dtype=float)
    y = np.asarray(throughput, dtype=float)
    # one percentile call for both arrays: this runs once per curve of a data set
    (q10, q90), (b10, b90) = np.percentile(np.vstack([y, x]), [10, 90], axis=1).T
    return max(q90 - q10, 1e-5), 1.0 / max(b90 - b10, 1e-5), max(q90, 1e-5)


def naive_init(batch: Any, throughput: Any) -> tuple[float, float, float]:
    """(1, 1, 1): ``curve_fit``'s default start, kept to show why quantiles matter.

    Parameters
    ----------
    batch, throughput
        Ignored (same signature as :func:`quantile_init`).

    Returns
    -------
    (1.0, 1.0, 1.0)
    """
    return 1.0, 1.0, 1.0


def exp_batch_at_fraction(a: Any, b: Any, c: Any, fraction: float) -> np.ndarray:
    """Batch where ``c - a exp(-b B)`` reaches ``fraction`` of the plateau ``c``.

    Parameters
    ----------
    a, b, c
        Curve parameters (scalars or arrays that broadcast).
    fraction
        In (0, 1).

    Returns
    -------
    numpy.ndarray
        ``ln(a / ((1 - fraction) c)) / b``; 0 when the curve starts above the
        target; ``inf`` when it never gets there (b = 0 or c = 0).
    """
    a, b, c = (np.asarray(v, dtype=float) for v in (a, b, c))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = a / ((1.0 - fraction) * c)
        out = np.log(ratio) / b
    out = np.where(ratio <= 1.0, 0.0, out)
    out = np.where((b <= 0) | (c <= 0) | ~np.isfinite(out), np.inf, out)
    out = np.where(np.isnan(a) | np.isnan(b) | np.isnan(c), np.nan, out)
    return out


def kneedle_knee(batch_grid: np.ndarray, curves: np.ndarray,
                 min_distance: float = KNEE_MIN_DISTANCE, axis: str = "linear", *,
                 curve_at: Callable[[np.ndarray], np.ndarray] | None = None,
                 refine_points: int = KNEE_REFINE_POINTS) -> np.ndarray:
    """Kneedle knee of one or many increasing concave curves on a shared grid.

    Parameters
    ----------
    batch_grid
        Increasing batch sizes (length m), usually uniform in log2.
    curves
        Curve values, shape (m,) or (r, m).
    min_distance
        Knees whose normalised distance above the chord is smaller are dropped.
    axis
        ``"linear"`` (default) normalises batch itself, ``"log"`` normalises log2(batch).
    curve_at
        The curves themselves, to refine the knee between grid points: called once with batches of shape
        (r, refine_points), row i for curve i, it returns the curves' values there. The normalisation (the
        curves' values at the grid's ends) and so the Kneedle definition are unchanged; only the argmax is
        searched again on ``refine_points`` points, uniform on the axis, between the coarse knee's two
        neighbours, where the distance above the chord of a concave curve has its maximum. None: the knee is
        a grid point.
    refine_points
        Points of that local grid.

    Returns
    -------
    numpy.ndarray
        Knee batch per curve (shape () or (r,)); NaN where there is no knee
        (flat, decreasing or nearly straight curve).
    """
    grid = np.asarray(batch_grid, dtype=float)
    ys = np.atleast_2d(np.asarray(curves, dtype=float))
    u = np.log2(grid) if axis == "log" else grid
    width = max(u[-1] - u[0], _TINY)
    xn = (u - u[0]) / width
    lo, hi = ys[:, :1], ys[:, -1:]
    span = hi - lo
    with np.errstate(divide="ignore", invalid="ignore"):
        yn = (ys - lo) / span
    diff = yn - xn
    diff = np.where(np.isfinite(diff), diff, -np.inf)
    idx = np.argmax(diff, axis=1)
    rows = np.arange(len(ys))
    best = diff[rows, idx]
    at = grid[idx]
    if curve_at is not None and refine_points > 2 and len(grid) > 2:
        left, right = u[np.maximum(idx - 1, 0)], u[np.minimum(idx + 1, len(grid) - 1)]
        uf = left[:, None] + (right - left)[:, None] * np.linspace(0.0, 1.0, refine_points)[None, :]
        bf = np.exp2(uf) if axis == "log" else uf
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            yf = np.broadcast_to(np.asarray(curve_at(bf), dtype=float), bf.shape)
            df = (yf - lo) / span - (uf - u[0]) / width
        df = np.where(np.isfinite(df), df, -np.inf)
        j = np.argmax(df, axis=1)
        fine = df[rows, j]
        better = fine > best  # never worse than the grid point (a non-concave curve may peak elsewhere)
        at = np.where(better, bf[rows, j], at)
        best = np.where(better, fine, best)
    knee = np.where((span[:, 0] > 0) & (best >= min_distance), at, np.nan)
    return knee[0] if np.ndim(curves) == 1 else knee


def default_interval_method(n_configs: int) -> str:
    """The interval method to offer by default for ``n_configs`` configurations.

    ``"bootstrap"`` (knee, b90 and b95 intervals and a confidence band) up to :data:`BOOTSTRAP_MAX_CONFIGS`
    configurations, ``"asymptotic"`` (parameter intervals only, several times faster) above. A default for
    interactive use; an explicit choice should always win.

    Parameters
    ----------
    n_configs
        Number of configurations (curves) to fit.

    Returns
    -------
    str
        One of :data:`INTERVAL_METHODS`.
    """
    return "bootstrap" if int(n_configs) <= BOOTSTRAP_MAX_CONFIGS else "asymptotic"


# --------------------------------------------------------------------------- result


@dataclass(frozen=True, eq=False)
class CurveFit:
    """A fitted saturation curve (modelled on lmfit's ``MinimizerResult``).

    Attributes
    ----------
    shape
        ``exp``, ``nrh``, ``piecewise``, ``loglin`` or ``none`` (nothing fitted).
    params
        Parameter values. exp: ``a, b, c``; nrh: ``k, c, theta``; loglin: ``alpha, beta``; piecewise:
        ``intercept, slope_1..slope_k+1, break_1..break_k`` (breakpoints in batch units).
    ci
        ``(low, high)`` per parameter at ``ci_level``; NaN when unavailable.
    ci_level
        Confidence level of every interval.
    interval_method
        How intervals were computed (``bootstrap``, ``asymptotic``, ``none``), in words.
    r2, rmse
        Coefficient of determination and root mean squared residual (tok/s).
    residuals
        Observed minus fitted for the points used (invalid points dropped), in
        order of increasing batch, ties by throughput.
    n_points, n_batches
        Points used and distinct batch sizes among them.
    success
        The fit converged, explains the data (R^2 >= R2_MIN_SUCCESS) and the data are consistent.
    message
        What happened, in plain words (fallbacks, dropped points, warnings).
    knees, knee_ci
        Knee batch sizes (increasing) and their intervals.
    b90, b90_ci, b95, b95_ci
        Batch reaching 90% / 95% of the plateau and intervals.
    plateau_reached
        ``b95`` lies within the measured batch range.
    plateau_extrapolated
        The exponential plateau is not reached and lies more than
        :data:`PLATEAU_EXTRAPOLATION_FACTOR` x above the curve at the largest measured
        batch: ``c`` is then a guess about batches never measured, not a measured plateau.
    poor_fit
        A successful fit with R^2 below R2_POOR.
    criteria
        Per candidate shape: ``{"aicc": .., "bic": .., "aic": .., "k": ..}``.
    shape_reason
        Why this shape was used.
    batch_range
        (min, max) measured batch.
    init
        Initialisation used for the exponential (``quantile`` or ``naive``).
    nfev
        Function evaluations of the final optimisation.
    rate_bounded_below
        The exponential's saturation rate is bounded only from below: the curve rises entirely between its two
        smallest measured batches (``rise_between``) and is flat from the second on, so any faster rise fits as
        well. The knee, b90 and b95 are then not estimates: their intervals are the ranges the data allow, from
        the smallest batch to at least the next one; ``b`` and ``a`` have no upper bound (``ci`` high = inf).
    rise_between
        The two measured batches the rise lies between (NaN unless ``rate_bounded_below``).
    x_name
        The column the curve runs along (``batch_size`` unless fitted along a request rate, a length, ...);
        "batch" in these attributes' names means a value of it.
    """

    shape: str
    params: Mapping[str, float]
    ci: Mapping[str, tuple[float, float]]
    ci_level: float
    interval_method: str
    r2: float
    rmse: float
    residuals: np.ndarray = field(repr=False)
    n_points: int
    n_batches: int
    success: bool
    message: str
    knees: tuple[float, ...] = ()
    knee_ci: tuple[tuple[float, float], ...] = ()
    b90: float = math.nan
    b90_ci: tuple[float, float] = (math.nan, math.nan)
    b95: float = math.nan
    b95_ci: tuple[float, float] = (math.nan, math.nan)
    plateau_reached: bool = False
    plateau_extrapolated: bool = False
    poor_fit: bool = False
    criteria: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    shape_reason: str = ""
    batch_range: tuple[float, float] = (math.nan, math.nan)
    init: str = "quantile"
    nfev: int = 0
    rate_bounded_below: bool = False
    rise_between: tuple[float, float] = (math.nan, math.nan)
    x_name: str = "batch_size"
    _boot: np.ndarray | None = field(default=None, repr=False)

    def predict(self, batch: Any) -> np.ndarray:
        """Fitted throughput at ``batch`` (NaN everywhere when nothing was fitted).

        Parameters
        ----------
        batch
            Batch sizes (> 0).

        Returns
        -------
        numpy.ndarray
        """
        return _evaluate(self.shape, self.params, np.atleast_1d(np.asarray(batch, dtype=float)))

    def band(self, batch: Any, level: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Pointwise confidence band of the fitted curve from the bootstrap replicates.

        Parameters
        ----------
        batch
            Batch sizes (> 0).
        level
            Confidence level in (0, 1); defaults to ``ci_level``.

        Returns
        -------
        (low, high)
            Arrays like ``batch``; NaN when no bootstrap replicates exist
            (``intervals`` other than ``bootstrap``, too few points, failed fit).

        Notes
        -----
        Where the rise lies between two measured batches (``rate_bounded_below``), the band strictly between
        them spans what any rising, concave (saturating) curve through the band at those two batches allows:
        from the chord joining the band's lower edge at both ends up to its upper edge at the second one. The
        replicates, all started at the point estimate, never move along the rate the data leave free: A100 /
        DeepSpeed-MII / Llama-2-7B at 2,048 + 2,048 tokens (59 tok/s at batch 1, 513 at 16) had its band at
        batch 2 read 325 to 386 tok/s, where nothing was measured and curves from 83 to 527 fit as well.
        """
        x = np.atleast_1d(np.asarray(batch, dtype=float))
        lvl = self.ci_level if level is None else float(level)
        if not 0 < lvl < 1:
            raise PerfmodelError(f"band level must be in (0, 1), got {level!r}")
        if self._boot is None or len(self._boot) == 0:
            nan = np.full(x.shape, np.nan)
            return nan, nan.copy()
        q = (1 - lvl) / 2
        lo, hi = np.nanquantile(_curve_matrix(self.shape, self._boot, x), [q, 1 - q], axis=0)
        x_lo, x_hi = self.rise_between
        gap = (x > x_lo) & (x < x_hi) if self.rate_bounded_below else np.zeros(x.shape, dtype=bool)
        if gap.any():
            (lo_lo, lo_hi), (_, hi_hi) = np.nanquantile(
                _curve_matrix(self.shape, self._boot, np.array([x_lo, x_hi])), [q, 1 - q], axis=0)
            chord = lo_lo + (lo_hi - lo_lo) * (x - x_lo) / (x_hi - x_lo)
            lo = np.where(gap, np.fmin(lo, chord), lo)
            hi = np.where(gap, np.fmax(hi, hi_hi), hi)
        return lo, hi

    def as_row(self) -> dict[str, Any]:
        """One flat dict for the fits table (see :func:`fit_curves` for the columns).

        Returns
        -------
        dict
        """
        row: dict[str, Any] = {"shape": self.shape}
        for name in ("a", "b", "c", "k"):
            # c is the plateau of both the exponential and the nrh shape
            own = self.shape == "exp" and name != "k" or self.shape == "nrh" and name in ("c", "k")
            v = self.params.get(name, math.nan) if own else math.nan
            lo, hi = self.ci.get(name, (math.nan, math.nan)) if own else (math.nan, math.nan)
            row[name] = v
            row[f"{name}_lo"] = lo
            row[f"{name}_hi"] = hi
        row["theta"] = self.params.get("theta", math.nan) if self.shape == "nrh" else math.nan
        row["plateau_tok_s"] = row["c"]
        row["breakpoints"] = ";".join(f"{self.params[k]:g}" for k in sorted(self.params) if k.startswith("break_"))
        row.update(r2=self.r2, rmse=self.rmse, n_points=self.n_points, n_batches=self.n_batches,
                   success=self.success, poor_fit=self.poor_fit, message=self.message)
        for j in range(_MAX_PIECES):
            if j < len(self.knees):
                row[f"knee_{j + 1}"] = self.knees[j]
                row[f"knee_{j + 1}_lo"], row[f"knee_{j + 1}_hi"] = self.knee_ci[j]
            else:
                row[f"knee_{j + 1}"] = row[f"knee_{j + 1}_lo"] = row[f"knee_{j + 1}_hi"] = math.nan
        row.update(b90=self.b90, b90_lo=self.b90_ci[0], b90_hi=self.b90_ci[1],
                   b95=self.b95, b95_lo=self.b95_ci[0], b95_hi=self.b95_ci[1],
                   plateau_reached=self.plateau_reached, plateau_extrapolated=self.plateau_extrapolated,
                   rate_bounded_below=self.rate_bounded_below, rise_lo=self.rise_between[0],
                   rise_hi=self.rise_between[1])
        for cand in ("exp", "nrh", "piecewise", "loglin"):
            crit = self.criteria.get(cand, {})
            row[f"aicc_{cand}"] = crit.get("aicc", math.nan)
            row[f"bic_{cand}"] = crit.get("bic", math.nan)
        row.update(shape_reason=self.shape_reason, interval_method=self.interval_method,
                   ci_level=self.ci_level, init=self.init, batch_min=self.batch_range[0],
                   batch_max=self.batch_range[1], x_name=self.x_name)
        return row


def _evaluate(shape: str, params: Mapping[str, float], x: np.ndarray) -> np.ndarray:
    if shape == "exp":
        return saturating_exp(x, params["a"], params["b"], params["c"])
    if shape == "nrh":
        return nonrect_hyperbola(x, params["k"], params["c"], params["theta"])
    if shape == "loglin":
        return loglinear(x, params["alpha"], params["beta"])
    if shape == "piecewise":
        k = sum(1 for n in params if n.startswith("break_"))
        return piecewise_loglinear(x, params["intercept"], [params[f"slope_{i + 1}"] for i in range(k + 1)],
                                   [params[f"break_{i + 1}"] for i in range(k)])
    return np.full(x.shape, np.nan)


# --------------------------------------------------------------------------- helpers


def _exp_params(res: Mapping[str, Any]) -> int:
    """Free parameters of an exponential fit: two when it was tied through the origin (``a = c``)."""
    return 2 if res.get("tied") else 3


def _criteria(rss: float, n: int, k: int, ss_scale: float) -> dict[str, float]:
    # floor the RSS relative to the data's scale so an exact fit gives a finite score
    rss = max(rss, ss_scale * 1e-12, _TINY)
    aic = n * math.log(rss / n) + 2 * k
    bic = n * math.log(rss / n) + k * math.log(n)
    aicc = aic + 2 * k * (k + 1) / (n - k - 1) if n - k - 1 > 0 else math.nan
    return {"aic": aic, "aicc": aicc, "bic": bic, "k": float(k)}


def _r2(y: np.ndarray, resid: np.ndarray) -> float:
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    ss_res = float(np.sum(resid ** 2))
    if ss_tot <= 0:
        return 1.0 if ss_res <= _TINY else 0.0
    return 1.0 - ss_res / ss_tot


def _irls_weights(r: np.ndarray, loss: str, f_scale: Any) -> np.ndarray:
    """rho'(z) with z = (r/f)^2: the IRLS weight matching least_squares' robust loss."""
    if loss == "linear":
        return np.ones_like(r)
    z = (r / f_scale) ** 2
    if loss == "soft_l1":
        return 1.0 / np.sqrt(1.0 + z)
    if loss == "huber":
        return np.where(z <= 1.0, 1.0, 1.0 / np.sqrt(np.maximum(z, _TINY)))
    return 1.0 / (1.0 + z)  # cauchy


def _rho(z: np.ndarray, loss: str) -> np.ndarray:
    if loss == "linear":
        return z
    if loss == "soft_l1":
        return 2 * (np.sqrt(1 + z) - 1)
    if loss == "huber":
        return np.where(z <= 1, z, 2 * np.sqrt(np.maximum(z, 0)) - 1)
    return np.log1p(z)


def _lm_exp(x: np.ndarray, ys: np.ndarray, w: np.ndarray, p0: np.ndarray, loss: str,
            f_scale: Any, iters: int = 200, tie: bool = False) -> tuple[np.ndarray, np.ndarray, int]:
    """Fit ``c - a exp(-b x)`` to many rows at once (scaled units).

    Projected Levenberg-Marquardt: analytic Jacobian, IRLS weights rho'(z) so the
    robust loss has exactly the gradient of ``least_squares``' cost (same fixed
    point), bounds enforced by projection. Rows are independent problems (curves
    padded with zero weight, or bootstrap replicates); ``x``/``w`` broadcast to
    ``ys`` (rows, points), ``p0`` is (3,) or (rows, 3), ``f_scale`` scalar or (rows,).
    ``tie`` fits the curve through the origin, ``c * (1 - exp(-b x))``: ``a`` is held equal to ``c``
    (the refit of a curve that went negative inside its measured range).

    Returns
    -------
    (params, converged, iterations)
    """
    n_rows = ys.shape[0]
    x2 = np.broadcast_to(x, ys.shape)
    sw = np.sqrt(np.broadcast_to(w, ys.shape))
    ys = np.asarray(ys, dtype=float)
    p = np.array(np.broadcast_to(np.asarray(p0, dtype=float), (n_rows, 3)))
    p = np.clip(p, 0.0, _UPPER)
    if tie:
        p[:, 0] = p[:, 2]
    fs = np.array(np.broadcast_to(np.asarray(f_scale, dtype=float), (n_rows,)))[:, None]
    lam = np.full(n_rows, 1e-3)
    done = np.zeros(n_rows, dtype=bool)

    def resid(pp: np.ndarray, rows: Any) -> tuple[np.ndarray, np.ndarray]:
        e = np.exp(-pp[:, 1:2] * x2[rows])
        return (pp[:, 2:3] - pp[:, 0:1] * e - ys[rows]) * sw[rows], e

    def cost(r: np.ndarray, rows: Any) -> np.ndarray:
        f = fs[rows]
        return np.sum(_rho((r / f) ** 2, loss), axis=1) * f[:, 0] ** 2

    r, e = resid(p, slice(None))
    cur = cost(r, slice(None))
    eye = np.eye(3)[None]
    it = 0
    for it in range(1, iters + 1):  # noqa: B007 - the count is returned
        # only rows still moving are computed; converged rows are frozen
        act = np.flatnonzero(~done)
        pa, ea, ra, sa, xa = p[act], e[act], r[act], sw[act], x2[act]
        jw = np.empty(ra.shape + (3,))
        jw[:, :, 0] = 0.0 if tie else -ea * sa
        jw[:, :, 1] = pa[:, 0:1] * xa * ea * sa
        jw[:, :, 2] = (1.0 - ea) * sa if tie else sa
        wt = _irls_weights(ra, loss, fs[act])
        jtw = np.transpose(jw * wt[:, :, None], (0, 2, 1))
        jtj = jtw @ jw
        g = (jtw @ ra[:, :, None])[:, :, 0]
        diag = np.maximum(np.diagonal(jtj, axis1=1, axis2=2), _TINY)
        mat = jtj + lam[act, None, None] * eye * diag[:, None, :]
        if tie:
            mat[:, 0, 0] = 1.0  # a follows c: no step of its own
        bad = ~np.isfinite(mat).all(axis=(1, 2)) | ~np.isfinite(g).all(axis=1)
        mat[bad] = np.eye(3)
        g[bad] = 0.0
        try:
            step = np.linalg.solve(mat, -g[:, :, None])[:, :, 0]
        except np.linalg.LinAlgError:
            step = -g / diag
        newp = np.clip(pa + step, 0.0, _UPPER)
        if tie:
            newp[:, 0] = newp[:, 2]
        nr, ne = resid(newp, act)
        nc = cost(nr, act)
        ca = cur[act]
        better = np.isfinite(nc) & (nc <= ca)
        rel = np.where(better, (ca - nc) / np.maximum(ca, _TINY), 0.0)
        small_step = np.max(np.abs(newp - pa) / (np.abs(pa) + 1e-8), axis=1) < 1e-9
        p[act] = np.where(better[:, None], newp, pa)
        r[act] = np.where(better[:, None], nr, ra)
        e[act] = np.where(better[:, None], ne, ea)
        cur[act] = np.where(better, nc, ca)
        lam_a = np.where(better, np.maximum(lam[act] / 3.0, 1e-12), lam[act] * 4.0)
        lam[act] = lam_a
        done[act] = (better & ((rel < 1e-9) | small_step)) | (lam_a > 1e10) | (cur[act] <= _TINY) | bad
        if done.all():
            break
    return p, done, it


# --------------------------------------------------------------------------- fitting one curve


def _validate_option(value: str, allowed: Sequence[str], what: str) -> None:
    if value not in allowed:
        raise UnknownNameError(what, value, list(allowed), hint=f"valid values: {', '.join(allowed)}")


def _not_enough(n: int, nb: int, x: np.ndarray, msg: str, level: float, method: str, init: str,
                x_name: str = "batch_size") -> CurveFit:
    rng = (float(x.min()), float(x.max())) if len(x) else (math.nan, math.nan)
    return CurveFit(shape="none", params={}, ci={}, ci_level=level, interval_method=method, r2=math.nan,
                    rmse=math.nan, residuals=np.full(n, np.nan), n_points=n, n_batches=nb, success=False,
                    message=msg, batch_range=rng, init=init, shape_reason="nothing fitted", x_name=x_name)


def _reword(note: str, xw: str) -> str:
    """A candidate's note (written for a batch axis) in the words of another x (:func:`x_words`)."""
    return (note.replace("measured batches", f"measured {xw} values").replace("measured batch", f"measured {xw}")
            .replace("largest batch", f"largest {xw}"))


def fit_curve(batch: Any, throughput: Any, *, shape: str = "auto", weights: Any = None,
              intervals: str = DEFAULT_INTERVALS, n_boot: int = DEFAULT_N_BOOT, level: float = 0.95, seed: int = 0,
              init: str = "quantile", loss: str = "soft_l1", restarts: bool = True,
              fallback: bool = True, origin_refit: bool = True, x_name: str = "batch_size",
              _pre_exp: Mapping[str, Any] | None = None) -> CurveFit:
    """Fit one saturation curve of throughput against batch size.

    Parameters
    ----------
    batch, throughput
        The measured points (1-D, same length). Repeats of a batch size are pooled.
        Points with NaN, zero or negative throughput, or a non-positive batch, are
        dropped and counted in the message.
    shape
        One of :data:`SHAPES`.
    weights
        Optional non-negative weight per point (e.g. inverse variance); default equal.
    intervals
        One of :data:`INTERVAL_METHODS`.
    n_boot
        Bootstrap replicates (``intervals="bootstrap"``).
    level
        Confidence level of every interval, in (0, 1).
    seed
        Seed of the bootstrap (results are reproducible).
    init
        One of :data:`INIT_METHODS`.
    loss
        One of :data:`LOSSES` (robust loss of the exponential fit).
    restarts, fallback
        Allow the multi-start and the log-linear fallback (switch off to measure
        a single start, as the benchmark does).
    origin_refit
        Refit an exponential that is below zero at the smallest measured batch
        through the origin (``a = c``); off for the published hybrid's
        reproduction, whose curves are plain least-squares fits.
    x_name
        The column ``batch`` holds (``batch_size``, ``request_rate_rps``, ...): the messages name its values
        with :func:`x_words` (a rate curve had said "95% of it at batch 240" of a rate in req/s).
    _pre_exp
        Private: the exponential point fit already computed for this curve by
        :func:`fit_curves`' vectorised pass (same solver, same result).

    Returns
    -------
    CurveFit
        Always a result: ``success`` False with a message when the data do not
        allow a curve (fewer than 3 batch sizes, contradictory repeats, failed fit).

    Raises
    ------
    ValidationError
        Inputs of different lengths, not 1-D, or bad weights.
    UnknownNameError
        An option outside its allowed values.
    PerfmodelError
        ``level`` outside (0, 1) or ``n_boot`` < 0.
    """
    _validate_option(shape, SHAPES, "curve shape")
    _validate_option(intervals, INTERVAL_METHODS, "interval method")
    _validate_option(init, INIT_METHODS, "initialisation")
    _validate_option(loss, LOSSES, "loss")
    if not 0 < level < 1:
        raise PerfmodelError(f"level must be in (0, 1), got {level!r}")
    if n_boot < 0:
        raise PerfmodelError(f"n_boot must be >= 0, got {n_boot!r}")
    try:
        x_all = np.asarray(batch, dtype=float)
        y_all = np.asarray(throughput, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValidationError("fit_curve: batch and throughput must be numbers",
                              [Problem(str(exc), column="batch/throughput")]) from exc
    problems = []
    if x_all.ndim != 1 or y_all.ndim != 1:
        problems.append(Problem(f"expected 1-D arrays, got shapes {x_all.shape} and {y_all.shape}"))
    elif len(x_all) != len(y_all):
        problems.append(Problem(f"batch has {len(x_all)} values but throughput has {len(y_all)}"))
    w_all = np.ones_like(x_all) if weights is None else np.asarray(weights, dtype=float)
    if not problems and w_all.shape != x_all.shape:
        problems.append(Problem(f"weights has {w_all.size} values, expected {len(x_all)}", column="weights"))
    elif not problems and np.any(~np.isfinite(w_all) | (w_all < 0)):
        problems.append(Problem("weights must be finite and >= 0", column="weights"))
    if problems:
        raise ValidationError("fit_curve: invalid input", problems)

    ok = _usable(x_all, y_all) & (w_all > 0)
    notes: list[str] = []
    xw, xws, xu = x_words(x_name)
    if not ok.all():
        bad = int((~ok).sum())
        notes.append(f"dropped {bad} point(s) with NaN, zero or negative throughput or {xw}")
    x, y, w = x_all[ok], y_all[ok], w_all[ok]
    # A canonical point order (batch, then throughput) makes the bootstrap draws,
    # and so the intervals, independent of the order rows arrived in.
    order = np.lexsort((w, y, x))
    x, y, w = x[order], y[order], w[order]
    n = len(x)
    uniq = np.unique(x)
    nb = len(uniq)
    method = "none" if intervals == "none" else (
        f"wild bootstrap over residuals ({n_boot} replicates, seed {seed}), percentile"
        if intervals == "bootstrap" else "asymptotic (Wald, from the Jacobian)")
    if nb < MIN_BATCHES:
        msg = (f"not enough points: {nb} distinct {xws[:-1]}(s) ({n} point(s)); a saturation curve "
               f"needs at least {MIN_BATCHES}")
        return _not_enough(n, nb, x, "; ".join([msg, *notes]), level, method, init, x_name)

    # plain numbers in messages (imported here: curve_tables imports this module)
    from .curve_tables import significant as sig

    def at(v: float, digits: int = 4) -> str:  # "batch 133", "request rate 240 req/s"
        return f"{xw} {sig(v, digits)}" + (f" {xu}" if xu else "")

    # Contradictory repeats: the same batch measured at wildly different throughput.
    spread_msgs = []
    for b_val in uniq:
        yy = y[x == b_val]
        if len(yy) > 1 and yy.max() / yy.min() > REPEAT_SPREAD_MAX:
            spread_msgs.append(f"{at(b_val)}: {sig(yy.min())} to {sig(yy.max())} tok/s "
                               f"({yy.max() / yy.min():.1f}x)")
    consistent = not spread_msgs
    spread_note = ("repeats disagree by more than " f"{REPEAT_SPREAD_MAX:g}x (" + "; ".join(spread_msgs[:3])
                   + "); check the data") if spread_msgs else ""

    # Scale to unit batch and throughput: makes the optimiser's tolerances unit-free
    # and the fit exactly equivariant to rescaling (guarded by tests).
    xs_scale = float(np.max(x))
    ys_scale = float(np.max(y))
    xs, ysn = x / xs_scale, y / ys_scale
    rng_seed = np.random.default_rng(seed)
    ss_tot = float(np.sum((ysn - ysn.mean()) ** 2))
    candidates: dict[str, dict[str, Any]] = {}
    criteria: dict[str, dict[str, float]] = {}

    want_exp = shape in ("auto", "exp")
    want_pw = shape in ("auto", "piecewise")
    want_nrh = shape == "nrh" or (shape == "auto" and nb >= NRH_MIN_BATCHES)
    if want_exp:
        exp_res = _fit_exp(xs, ysn, w, lambda: _scaled_init(init, x, y, xs_scale, ys_scale), loss, restarts,
                           _pre_exp, origin_refit)
        candidates["exp"] = exp_res
        criteria["exp"] = _criteria(exp_res["rss_ls"], n, _exp_params(exp_res), ss_tot)
    if want_pw:
        pw_res = _fit_piecewise(np.log2(x), ysn, w)
        if pw_res is not None:
            candidates["piecewise"] = pw_res
            criteria["piecewise"] = _criteria(pw_res["rss"], n, pw_res["k"], ss_tot)
        elif shape == "piecewise":
            notes.append("piecewise shape needs at least 5 batch sizes and 6 points; "
                         "fitted the exponential instead")
            exp_res = _fit_exp(xs, ysn, w, lambda: _scaled_init(init, x, y, xs_scale, ys_scale), loss,
                               restarts, _pre_exp, origin_refit)
            candidates["exp"] = exp_res
            criteria["exp"] = _criteria(exp_res["rss_ls"], n, _exp_params(exp_res), ss_tot)
    if want_nrh:
        nrh_res = _fit_nrh(xs, ysn, w, loss)
        if nrh_res["converged"]:
            candidates["nrh"] = nrh_res
            criteria["nrh"] = _criteria(nrh_res["rss_ls"], n, 3, ss_tot)
        elif shape == "nrh":
            notes.append("the nrh fit failed; fitted the exponential instead")
            exp_res = _fit_exp(xs, ysn, w, lambda: _scaled_init(init, x, y, xs_scale, ys_scale), loss,
                               restarts, _pre_exp, origin_refit)
            candidates["exp"] = exp_res
            criteria["exp"] = _criteria(exp_res["rss_ls"], n, _exp_params(exp_res), ss_tot)
    if shape == "loglin":
        candidates["loglin"] = _fit_loglin(np.log2(x), ysn, w)
        criteria["loglin"] = _criteria(candidates["loglin"]["rss"], n, 2, ss_tot)

    # Which shape: reported, never silent.
    chosen, reason = _choose(shape, candidates, criteria)
    if chosen is None and fallback:
        candidates["loglin"] = _fit_loglin(np.log2(x), ysn, w)
        criteria["loglin"] = _criteria(candidates["loglin"]["rss"], n, 2, ss_tot)
        chosen = "loglin"
        reason = "the exponential fit failed from every start; log-linear fallback"
    if chosen is None:
        exp_note = candidates.get("exp", {}).get("note", "")
        return _not_enough(n, nb, x, "; ".join(["exponential fit failed" + (f" ({exp_note})" if exp_note else ""),
                                                *filter(None, [spread_note]), *notes]), level, method, init,
                           x_name)
    cand = candidates[chosen]
    if cand.get("note"):
        notes.append(cand["note"] if x_name == "batch_size" else _reword(cand["note"], xw))
    fitted_scaled = cand["predict"](xs, np.log2(x))
    resid_scaled = ysn - fitted_scaled
    resid = resid_scaled * ys_scale
    r2 = _r2(ysn, resid_scaled)  # in scaled units: no overflow for huge throughputs
    rmse = float(np.sqrt(np.mean(resid_scaled ** 2)) * ys_scale)
    params = cand["to_params"](xs_scale, ys_scale)
    n_par = int(criteria[chosen]["k"])

    # Intervals, knees and b90/b95.
    ci: dict[str, tuple[float, float]] = {p: (math.nan, math.nan) for p in params}
    boot: np.ndarray | None = None
    dof = n - n_par
    q_lo, q_hi = (1 - level) / 2, 1 - (1 - level) / 2
    grid = np.linspace(x.min(), x.max(), KNEE_GRID_POINTS)
    if intervals != "none" and dof <= 0:
        notes.append(f"no intervals: {n} points for {n_par} parameters leave no residual degrees of freedom")
    elif intervals == "bootstrap" and n_boot > 0:
        resid_s = ysn - fitted_scaled
        infl = math.sqrt(n / dof)
        signs = rng_seed.choice(np.array([-1.0, 1.0]), size=(n_boot, n))
        ystar = fitted_scaled[None, :] + signs * resid_s[None, :] * infl
        boot = cand["boot"](xs, np.log2(x), ystar, w)
        boot_params = cand["boot_to_params"](boot, xs_scale, ys_scale)
        for name, vals in boot_params.items():
            if name in ci:
                fin = vals[np.isfinite(vals)]
                if len(fin):
                    ci[name] = (float(np.quantile(fin, q_lo)), float(np.quantile(fin, q_hi)))
        boot = cand["boot_store"](boot, xs_scale, ys_scale)
    elif intervals == "asymptotic" and "jac" in cand:
        ci = _wald(cand, params, dof, level, xs_scale, ys_scale)
        notes.append("knee and b90/b95 intervals need the bootstrap")

    knees, knee_ci = _knees(chosen, params, grid, boot, q_lo, q_hi)
    b90, b95, b90_ci, b95_ci = _fractions(chosen, params, grid, boot, q_lo, q_hi)
    rise = _rise_in_gap(xs, ysn, w) if chosen == "exp" and not cand.get("tied") else None
    rise_between = (math.nan, math.nan)
    if rise is not None:
        # any faster rise fits as well: the knee, b90 and b95 lie somewhere in the gap, whatever the bootstrap
        # (started at the point estimate, its replicates never move along the flat direction) or the Jacobian
        # (whose pseudo-inverse drops that direction) say
        x_lo, x_hi = float(uniq[0]), float(uniq[1])
        rise_between = (x_lo, x_hi)
        knee_ci, b90_ci, b95_ci, slow_b, slow_a = _gap_ranges(rise[0], x_lo, x_hi, xs_scale, ys_scale, grid,
                                                              knees, b90, b95)
        ci["b"] = (slow_b, math.inf)
        ci["a"] = (max(slow_a, ci.get("a", (math.nan,))[0]) if np.isfinite(ci.get("a", (math.nan,))[0])
                   else slow_a, math.inf)
        notes[:] = [nt.replace(_PROFILED_NOTE, "").strip("; ") for nt in notes]
        notes[:] = [nt for nt in notes if nt]
        notes.append(f"the saturation rate is bounded only from below: the curve rises between {at(x_lo)} "
                     f"and {sig(x_hi)}, where nothing was measured, and any faster rise fits as well, so the knee, "
                     "b90 and b95 are ranges across that gap, not estimates")
    converged = cand.get("converged", True)
    success = bool(converged and consistent and r2 >= R2_MIN_SUCCESS and np.isfinite(r2))
    # Why a fit failed leads the message (the shape choice is no reason for failing).
    failures = []
    if not consistent:
        failures.append(spread_note)
    if not converged:
        failures.append("the solver did not converge")
    if not (r2 >= R2_MIN_SUCCESS):
        failures.append(f"fit explains too little of the data (R^2 = {r2:.2f} < {R2_MIN_SUCCESS})")
    poor = bool(success and r2 < R2_POOR)
    if poor:
        notes.append(f"poor fit (R^2 = {r2:.2f})")
    if chosen not in PLATEAU_SHAPES:
        notes.append("a log-linear curve has no plateau: no knee, b90 or b95")
    neg = np.flatnonzero(fitted_scaled <= 0)
    if len(neg):
        notes.append(f"the {chosen} curve is below zero at measured {xw}(s) up to {x[neg].max():g} "
                     "(throughput cannot be negative; plots clip it at 0)")
    extrapolated = False
    if chosen in ("exp", "nrh") and np.isfinite(b95) and b95 > x.max():
        at_max = float(_evaluate(chosen, params, np.array([x.max()]))[0])
        extrapolated = bool(params["c"] > PLATEAU_EXTRAPOLATION_FACTOR * at_max)
        notes.append(f"plateau not reached in the measured range (95% of it at {at(b95, 3)} > "
                     f"{sig(x.max())})"
                     + (f"; the plateau {sig(params['c'])} is an extrapolation, {params['c'] / at_max:.1f}x the "
                        f"curve at the largest measured {xw}" if extrapolated else ""))
    elif chosen in ("exp", "nrh") and np.isfinite(b95) and rise is None:
        on = int(np.sum(uniq >= b95))
        if on >= 2:
            # a plateau the data reach is a measurement, not a forecast: say how many measured values lie on it
            notes.append(f"plateau reached: {on} measured {xws} lie at or beyond 95% of it ({at(b95, 3)})")
    head = (f"{chosen} fit converged ({reason})" if success
            else f"{chosen} fit failed: {'; '.join(failures)} (shape: {reason})")
    return CurveFit(shape=chosen, params=params, ci=ci, ci_level=level, interval_method=method, r2=r2,
                    rmse=rmse, residuals=resid, n_points=n, n_batches=nb, success=success,
                    message="; ".join([head, *notes]), knees=knees, knee_ci=knee_ci, b90=b90,
                    b90_ci=b90_ci, b95=b95, b95_ci=b95_ci,
                    plateau_reached=bool(np.isfinite(b95) and b95 <= x.max()), poor_fit=poor,
                    plateau_extrapolated=extrapolated,
                    criteria=criteria, shape_reason=reason, batch_range=(float(x.min()), float(x.max())),
                    init=init, nfev=int(cand.get("nfev", 0)), rate_bounded_below=rise is not None,
                    rise_between=rise_between, x_name=x_name, _boot=boot)


def _gap_ranges(p_shift: np.ndarray, x_lo: float, x_hi: float, xsc: float, ysc: float, grid: np.ndarray,
                knees: tuple[float, ...], b90: float, b95: float
                ) -> tuple[tuple[tuple[float, float], ...], tuple[float, float], tuple[float, float], float, float]:
    """Ranges of the knee, b90 and b95 of a curve whose rise lies in the gap ``(x_lo, x_hi)``, and the lower
    bounds of ``b`` and ``a``: from ``x_lo`` (the limit of an ever faster rise) to the slowest rise the data allow
    (:func:`_rise_in_gap`), and at least to ``x_hi``."""
    a_sh, rate, c = float(p_shift[0] * ysc), float(p_shift[1] / xsc), float(p_shift[2] * ysc)

    def slow(bb: Any) -> np.ndarray:
        return c - a_sh * np.exp(-rate * (np.asarray(bb, dtype=float) - x_lo))

    def at(frac: float) -> float:
        return x_lo + max(math.log(a_sh / ((1.0 - frac) * c)), 0.0) / rate

    knee_slow = float(kneedle_knee(grid, slow(grid), curve_at=slow))
    top_knee = max(x_hi, knee_slow if np.isfinite(knee_slow) else x_hi)
    knee_ci = tuple((x_lo, max(top_knee, k)) for k in knees)
    b90_ci = (x_lo, max(x_hi, at(0.90), b90 if np.isfinite(b90) else x_hi))
    b95_ci = (x_lo, max(x_hi, at(0.95), b95 if np.isfinite(b95) else x_hi))
    try:
        a_lo = a_sh * math.exp(rate * x_lo)
    except OverflowError:
        a_lo = math.inf
    return knee_ci, b90_ci, b95_ci, rate, a_lo


def _choose(shape: str, candidates: Mapping[str, Any], criteria: Mapping[str, Mapping[str, float]]
            ) -> tuple[str | None, str]:
    ok = {k: v for k, v in candidates.items() if v.get("converged", True)}
    if shape == "loglin":
        return "loglin", "log-linear shape requested"
    if shape == "piecewise" and "piecewise" in ok:
        return "piecewise", f"piecewise shape requested ({candidates['piecewise']['k_breaks']} breakpoint(s))"
    if shape == "nrh" and "nrh" in ok:
        return "nrh", "nrh shape requested"
    if "exp" not in ok:
        if "nrh" in ok and shape == "auto":
            return "nrh", "exponential fit failed, so nrh was tried"
        if "piecewise" in ok:
            return "piecewise", "exponential fit failed, so piecewise was tried"
        return None, ""
    others = [k for k in ("piecewise", "nrh") if k in ok]
    if shape == "exp" or not others:
        return "exp", ("exponential shape requested" if shape == "exp"
                       else "exponential (too few points for the piecewise shape)")
    ae = criteria["exp"]["aicc"]
    if not np.isfinite(ae):
        return "exp", "exponential by default: too few points to compare shapes by AICc"
    # the exponential stays unless another shape is clearly better; of those, the lowest AICc
    scores = {k: criteria[k]["aicc"] for k in others if np.isfinite(criteria[k]["aicc"])}
    vs = ", ".join(f"{v:.1f} for {'piecewise' if k == 'piecewise' else 'nrh'}" for k, v in scores.items())
    better = {k: v for k, v in scores.items() if v < ae - (NRH_AICC_MARGIN if k == "nrh" else AICC_MARGIN)}
    if better:
        best = min(better, key=lambda k: better[k])
        rest = ", ".join([f"{ae:.1f} for the exponential"]
                         + [f"{v:.1f} for {k}" for k, v in scores.items() if k != best])
        return best, f"{best} chosen by AICc ({better[best]:.1f} vs {rest})"
    return "exp", f"exponential chosen by AICc ({ae:.1f} vs {vs})"


def _scaled_init(init: str, x: np.ndarray, y: np.ndarray, xsc: float, ysc: float) -> np.ndarray:
    """Initial (a, b, c) in scaled units; naive starts are (1, 1, 1) in the data's own units."""
    a0, b0, c0 = quantile_init(x, y) if init == "quantile" else naive_init(x, y)
    return np.array([a0 / ysc, b0 * xsc, c0 / ysc])


def _exp_point_fits(xs2: np.ndarray, ys2: np.ndarray, w2: np.ndarray, p0: np.ndarray,
                    loss: str, tie: bool = False) -> dict[str, np.ndarray]:
    """Least squares, then the noise scale, then the robust fit, for every row at once.

    Rows are curves in scaled units padded with zero weight. The robust stage runs
    only where the least-squares fit converged and leaves at least two residual
    degrees of freedom (otherwise no noise estimate exists). ``tie``: as in :func:`_lm_exp`.
    """
    n_rows = ys2.shape[0]
    with np.errstate(all="ignore"):
        p_ls, conv_ls, it1 = _lm_exp(xs2, ys2, w2, p0, "linear", 1.0, tie=tie)
        valid = w2 > 0
        fitted = p_ls[:, 2:3] - p_ls[:, 0:1] * np.exp(-p_ls[:, 1:2] * xs2)
        resid = np.where(valid, ys2 - fitted, np.nan)
        rss_ls = np.nansum(w2 * np.where(valid, resid, 0.0) ** 2, axis=1)
        n_valid = valid.sum(axis=1)
        med = np.nanmedian(resid, axis=1)
        mad = 1.4826 * np.nanmedian(np.abs(resid - med[:, None]), axis=1)
        ymed = np.nanmedian(np.where(valid, ys2, np.nan), axis=1)
        fsc = np.maximum(np.maximum(mad, 0.01 * ymed), _TINY)
        p_fin = p_ls.copy()
        conv = conv_ls.copy()
        used_robust = np.zeros(n_rows, dtype=bool)
        rows = conv_ls & (n_valid - 3 >= 2) & np.isfinite(fsc) & (loss != "linear")
        it2 = 0
        if rows.any():
            pr, cr, it2 = _lm_exp(xs2[rows], ys2[rows], w2[rows], p_ls[rows], loss, fsc[rows], tie=tie)
            ok = cr & np.isfinite(pr).all(axis=1)
            sub = np.flatnonzero(rows)
            p_fin[sub[ok]] = pr[ok]
            used_robust[sub[ok]] = True
    return {"p": p_fin, "converged": conv, "rss_ls": rss_ls, "p_ls": p_ls, "robust": used_robust,
            "f_scale": np.where(used_robust, fsc, 1.0), "iterations": np.full(n_rows, it1 + it2)}


def _profile_rate(xs: np.ndarray, ys: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, float, float] | None:
    """The slowest saturation the data allow, where the solver found no optimum: a curve flat from its
    second measured batch (45, 208, 209, 207 tok/s at batch 1, 16, 32 and 64) fits equally well at every rate
    fast enough, so the solver crept up that valley until it ran out of steps and the curve fell back to a
    log-linear one with no plateau. For each rate on a grid ``a`` and ``c`` are a weighted linear fit; the
    answer is the smallest rate whose residual sum of squares is within one residual variance of the best
    (``rss <= best * (1 + 1 / (n - 3))``), so the knee, b90 and b95 read from it are upper bounds.

    Returns
    -------
    (params, rss, best rate) or None
        Scaled ``(a, b, c)``, its residual sum of squares and the best rate on the grid; None when no rate
        gives a rising curve (``a > 0``) with a plateau in bounds.
    """
    rates = np.geomspace(1e-3, RATE_MAX, RATE_PROFILE_POINTS)
    sw = np.sqrt(w)
    e = np.exp(-rates[:, None] * xs[None, :])  # (rates, points)
    # weighted least squares of y = c - a e for each rate: normal equations of the 2 x 2 system
    s_ee, s_e, s_1 = (w * e * e).sum(axis=1), (w * e).sum(axis=1), float(w.sum())
    s_ey, s_y = (w * e * ys).sum(axis=1), float((w * ys).sum())
    det = s_ee * s_1 - s_e ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        a = (s_e * s_y - s_1 * s_ey) / det
        c = (s_ee * s_y - s_e * s_ey) / det
        rss = (((c[:, None] - a[:, None] * e - ys[None, :]) * sw[None, :]) ** 2).sum(axis=1)
    ok = (np.isfinite(rss) & (a > 0) & (c > 0) & (a <= PLATEAU_MAX_FACTOR) & (c <= PLATEAU_MAX_FACTOR)
          & (np.abs(det) > _TINY))
    if not ok.any():
        return None
    best = float(np.min(rss[ok]))
    dof = max(len(xs) - 3, 1)
    i = int(np.flatnonzero(ok & (rss <= best * (1.0 + 1.0 / dof) + _TINY))[0])
    return np.array([a[i], rates[i], c[i]]), float(rss[i]), float(rates[int(np.argmin(np.where(ok, rss, np.inf)))])


def _rise_in_gap(xs: np.ndarray, ys: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, float] | None:
    """Whether the data bound the saturation rate from below only: the curve may rise anywhere between its
    smallest measured batch and the next one.

    Profiles ``c - a' exp(-b (x - x_min))`` over ``b`` (for each rate ``a'``, the rise at the smallest batch, and
    ``c`` are a weighted linear fit; unlike ``a`` they stay finite as ``b`` grows). As ``b`` goes to infinity the
    curve becomes a step: the smallest batch's points at ``c - a'``, every other point at ``c``. When that step
    fits within one residual variance of the best rate (``rss <= best * (1 + 1 / (n - 3))``, the criterion of
    :func:`_profile_rate`), no rate is too fast for the data, and the knee, b90 and b95 of a fit are not
    estimates: they can lie anywhere in the gap (LLM-Inference-Bench's A100 / DeepSpeed-MII / Llama-2-7B at
    2,048 + 2,048 tokens, measured at 1, 16, 32 and 64 and flat from 16, had fitted the same for b from 0.8 to 2,
    b90 from 3.7 to 2.1, and the bootstrap, started at the point estimate, gave b90 2.72 [2.62, 2.82]).

    Returns
    -------
    (params, rate) or None
        Scaled ``(a', b, c)`` of the slowest rate on the profile grid still within the criterion (the upper ends
        of the knee, b90 and b95 ranges; ``a'`` is the rise at the smallest batch, ``a = a' exp(b x_min)``) and
        that rate; None when the rate is bounded from above as well.
    """
    x0 = float(xs.min())
    dx = xs - x0
    if not (dx > 0).any() or not (dx == 0).any():
        return None
    rates = np.geomspace(1e-3, 1e6, 361)  # per largest batch (x is scaled to it)
    sw = np.sqrt(w)
    e = np.exp(-rates[:, None] * dx[None, :])
    e_inf = (dx == 0).astype(float)[None, :]  # the step: the limit as the rate grows without end
    e = np.vstack([e, e_inf])
    s_ee, s_e, s_1 = (w * e * e).sum(axis=1), (w * e).sum(axis=1), float(w.sum())
    s_ey, s_y = (w * e * ys).sum(axis=1), float((w * ys).sum())
    det = s_ee * s_1 - s_e ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        a = (s_e * s_y - s_1 * s_ey) / det
        c = (s_ee * s_y - s_e * s_ey) / det
        rss = (((c[:, None] - a[:, None] * e - ys[None, :]) * sw[None, :]) ** 2).sum(axis=1)
    ok = np.isfinite(rss) & np.isfinite(a) & np.isfinite(c) & (a > 0) & (c > 0) & (np.abs(det) > 1e-300)
    if not ok[-1]:
        return None
    best = float(np.min(rss[ok]))
    dof = max(len(xs) - 3, 1)
    limit = best * (1.0 + 1.0 / dof) + _TINY * max(float(np.sum(w * ys ** 2)), _TINY)
    if rss[-1] > limit:
        return None
    # the slowest rate of the flat stretch that reaches the step (walking down from the fastest rate)
    within = ok[:-1] & (rss[:-1] <= limit)
    i = len(rates) - 1
    if not within[i]:
        return None
    while i > 0 and within[i - 1]:
        i -= 1
    return np.array([a[i], rates[i], c[i]]), float(rates[i])


_PROFILED_NOTE = ("the saturation rate is bounded only from below (the curve is flat after its first measured "
                  "batches): the slowest saturation the data allow is shown, so the knee, b90 and b95 are upper bounds")


def _fit_exp(xs: np.ndarray, ys: np.ndarray, w: np.ndarray, p0: Callable[[], np.ndarray], loss: str,
             restarts: bool, pre: Mapping[str, Any] | None, origin_refit: bool = True) -> dict[str, Any]:
    n = len(xs)
    if pre is None:
        res = _exp_point_fits(xs[None, :], ys[None, :], w[None, :], p0(), loss)
        pre = {k: v[0] for k, v in res.items()}

    def r2_of(pp: np.ndarray) -> float:
        return _r2(ys, ys - (pp[2] - pp[0] * np.exp(-pp[1] * xs)))

    p = np.asarray(pre["p"], dtype=float)
    converged = bool(pre["converged"]) and bool(np.all(np.isfinite(p))) and r2_of(p) >= R2_MIN_SUCCESS
    used_loss = loss if bool(pre["robust"]) else "linear"
    fscale = float(pre["f_scale"])
    rss_ls = float(pre["rss_ls"])
    nfev = int(pre["iterations"])
    note = ""
    if restarts and not converged:
        # The data's start failed: start again from saturation rates spread over
        # three decades of the (scaled) batch range, all at once, and keep the best.
        rates = np.array([1.0, 0.3, 3.0, 30.0, 0.03])[: N_RESTARTS + 1]
        starts = np.column_stack([np.full(len(rates), max(ys.max() - ys.min(), 1e-5)), rates,
                                  np.full(len(rates), ys.max())])
        res = _exp_point_fits(np.tile(xs, (len(rates), 1)), np.tile(ys, (len(rates), 1)),
                              np.tile(w, (len(rates), 1)), starts, loss)
        r2s = np.array([r2_of(pp) if np.all(np.isfinite(pp)) else -np.inf for pp in res["p"]])
        ok = res["converged"] & (r2s >= R2_MIN_SUCCESS)
        if ok.any():
            i = int(np.argmin(np.where(ok, res["rss_ls"], np.inf)))
            p, converged = res["p"][i], True
            used_loss = loss if bool(res["robust"][i]) else "linear"
            fscale, rss_ls = float(res["f_scale"][i]), float(res["rss_ls"][i])
            nfev += int(res["iterations"][i])
            note = f"needed a restart (saturation rate start {rates[i]:g} / largest batch)"
        else:
            prof = _profile_rate(xs, ys, w)
            if prof is not None and r2_of(prof[0]) >= R2_MIN_SUCCESS and prof[2] > prof[0][1] * (1 + 1e-9):
                # the best rate is faster than the one kept: the data bound the rate from below only
                p, converged, used_loss, fscale = prof[0], True, "linear", 1.0
                rss_ls = prof[1]
                note = _PROFILED_NOTE
    p = np.asarray(p, dtype=float).copy()
    tied = False
    if origin_refit and converged and p[2] - p[0] * np.exp(-p[1] * xs.min()) <= 0:
        # a > c puts the curve below zero at small batches; where that reaches a measured batch the
        # fit is not a throughput curve (an absolute loss lets the large batches pull it there).
        # Refit through the origin (a = c): the curve is then >= 0 at every batch.
        res = _exp_point_fits(xs[None, :], ys[None, :], w[None, :], np.array([p[2], p[1], p[2]]), loss,
                              tie=True)
        pt = res["p"][0]
        ok_t = bool(res["converged"][0]) and bool(np.all(np.isfinite(pt))) and r2_of(pt) >= R2_MIN_SUCCESS
        neg = "the exponential was below zero at the smallest measured batch"
        nfev += int(res["iterations"][0])
        if ok_t:
            p, tied = np.asarray(pt, dtype=float).copy(), True
            used_loss = loss if bool(res["robust"][0]) else "linear"
            fscale, rss_ls = float(res["f_scale"][0]), float(res["rss_ls"][0])
            note = "; ".join(filter(None, [note, neg + "; refitted through the origin (a = c)"]))
        else:
            # The data rise faster than any saturating curve through the origin (llama.cpp's nearly
            # linear rows, 51 -> 6,133 tok/s from batch 1 to 64 on GH200): keep the fit, whose large
            # batches are right (the log-linear fallback missed them: R^2 0.74), and say so.
            note = "; ".join(filter(None, [note, neg + " and no curve through the origin fits (the data rise "
                                                  "faster than a saturating curve): kept, do not read it there"]))
    resid_s = ys - (p[2] - p[0] * np.exp(-p[1] * xs))
    if converged and (p[2] >= PLATEAU_MAX_FACTOR * 0.999 or p[0] >= PLATEAU_MAX_FACTOR * 0.999):
        note = "; ".join(filter(None, [note, f"plateau not identifiable: still rising at the largest batch "
                                              f"(c at its bound, {PLATEAU_MAX_FACTOR:g}x the largest throughput)"]))
    e = np.exp(-p[1] * xs)
    if tied:  # a = c: the Jacobian of c (1 - exp(-b x)) in (b, c); a shares c's column
        jac = np.column_stack([np.zeros_like(xs), p[0] * xs * e, 1.0 - e]) * np.sqrt(w)[:, None]
    else:
        jac = np.column_stack([-e, p[0] * xs * e, np.ones_like(xs)]) * np.sqrt(w)[:, None]

    def to_params(xsc: float, ysc: float) -> dict[str, float]:
        return {"a": float(p[0] * ysc), "b": float(p[1] / xsc), "c": float(p[2] * ysc)}

    def boot(xs_: np.ndarray, u: np.ndarray, ystar: np.ndarray, w_: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return _lm_exp(xs_, ystar, w_, p, used_loss, fscale, iters=60, tie=tied)[0]

    def boot_to_params(bt: np.ndarray, xsc: float, ysc: float) -> dict[str, np.ndarray]:
        return {"a": bt[:, 0] * ysc, "b": bt[:, 1] / xsc, "c": bt[:, 2] * ysc}

    def boot_store(bt: np.ndarray, xsc: float, ysc: float) -> np.ndarray:
        return np.column_stack([bt[:, 0] * ysc, bt[:, 1] / xsc, bt[:, 2] * ysc])

    return {"rss": float(np.sum(w * resid_s ** 2)), "rss_ls": rss_ls, "converged": converged, "note": note,
            "nfev": nfev, "predict": lambda xs_, u: p[2] - p[0] * np.exp(-p[1] * xs_), "to_params": to_params,
            "boot": boot, "boot_to_params": boot_to_params, "boot_store": boot_store,
            "jac": jac, "p_scaled": p, "n": n, "loss": used_loss, "tied": tied}


def _nrh_model(p: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`nonrect_hyperbola` of rows ``p`` (r, 3: k, c, theta) at ``x`` (r, n), and its Jacobian (r, n, 3)."""
    k, c, th = p[:, 0:1], p[:, 1:2], p[:, 2:3]
    kx = k * x
    s = kx + c
    d = np.maximum(s * s - 4.0 * th * kx * c, _TINY)
    r = np.sqrt(d)
    q = np.maximum(s + r, _TINY)
    pred = 2.0 * kx * c / q
    dq_dk = x + (2.0 * s * x - 4.0 * th * x * c) / (2.0 * r)
    dq_dc = 1.0 + (2.0 * s - 4.0 * th * kx) / (2.0 * r)
    dq_dth = -4.0 * kx * c / (2.0 * r)
    jac = np.stack([(2.0 * x * c - pred * dq_dk) / q, (2.0 * kx - pred * dq_dc) / q, -pred * dq_dth / q], axis=2)
    return pred, jac


_NRH_LOWER = np.array([0.0, 0.0, NRH_THETA_MIN])
_NRH_UPPER = np.array([_NRH_K_MAX, PLATEAU_MAX_FACTOR, NRH_THETA_MAX])


def _lm_nrh(x: np.ndarray, ys: np.ndarray, w: np.ndarray, p0: np.ndarray, loss: str, f_scale: Any,
            iters: int = 200) -> tuple[np.ndarray, np.ndarray, int]:
    """Fit :func:`nonrect_hyperbola` to many rows at once (scaled units): :func:`_lm_exp`'s projected
    Levenberg-Marquardt with the same IRLS weights (the cost of ``least_squares`` with ``loss``), bounds
    ``_NRH_LOWER`` to ``_NRH_UPPER``.

    Returns
    -------
    (params, converged, iterations)
    """
    n_rows = ys.shape[0]
    x2 = np.broadcast_to(x, ys.shape)
    sw = np.sqrt(np.broadcast_to(w, ys.shape))
    ys = np.asarray(ys, dtype=float)
    p = np.clip(np.array(np.broadcast_to(np.asarray(p0, dtype=float), (n_rows, 3))), _NRH_LOWER, _NRH_UPPER)
    fs = np.array(np.broadcast_to(np.asarray(f_scale, dtype=float), (n_rows,)))[:, None]
    lam = np.full(n_rows, 1e-3)
    done = np.zeros(n_rows, dtype=bool)

    def resid(pp: np.ndarray, rows: Any) -> tuple[np.ndarray, np.ndarray]:
        pred, jac = _nrh_model(pp, x2[rows])
        return (pred - ys[rows]) * sw[rows], jac * sw[rows][:, :, None]

    def cost(rr: np.ndarray, rows: Any) -> np.ndarray:
        f = fs[rows]
        return np.sum(_rho((rr / f) ** 2, loss), axis=1) * f[:, 0] ** 2

    r, jw_all = resid(p, slice(None))
    cur = cost(r, slice(None))
    eye = np.eye(3)[None]
    it = 0
    for it in range(1, iters + 1):  # noqa: B007 - the count is returned
        act = np.flatnonzero(~done)
        pa, ra, jw = p[act], r[act], jw_all[act]
        wt = _irls_weights(ra, loss, fs[act])
        jtw = np.transpose(jw * wt[:, :, None], (0, 2, 1))
        jtj = jtw @ jw
        g = (jtw @ ra[:, :, None])[:, :, 0]
        diag = np.maximum(np.diagonal(jtj, axis1=1, axis2=2), _TINY)
        mat = jtj + lam[act, None, None] * eye * diag[:, None, :]
        # a parameter on its bound whose gradient pushes it outwards is held there (active set): projecting
        # its step instead let theta at 0.999 creep the others along for every iteration without converging
        held = ((pa <= _NRH_LOWER) & (g > 0)) | ((pa >= _NRH_UPPER) & (g < 0))
        if held.any():
            hm = held[:, :, None] | held[:, None, :]
            mat = np.where(hm, 0.0, mat) + np.where(held[:, :, None], eye, 0.0)
            g = np.where(held, 0.0, g)
        bad = ~np.isfinite(mat).all(axis=(1, 2)) | ~np.isfinite(g).all(axis=1)
        mat[bad] = np.eye(3)
        g[bad] = 0.0
        try:
            step = np.linalg.solve(mat, -g[:, :, None])[:, :, 0]
        except np.linalg.LinAlgError:
            step = -g / diag
        newp = np.clip(pa + step, _NRH_LOWER, _NRH_UPPER)
        nr, nj = resid(newp, act)
        nc = cost(nr, act)
        ca = cur[act]
        better = np.isfinite(nc) & (nc <= ca)
        rel = np.where(better, (ca - nc) / np.maximum(ca, _TINY), 0.0)
        small_step = np.max(np.abs(newp - pa) / (np.abs(pa) + 1e-8), axis=1) < 1e-9
        p[act] = np.where(better[:, None], newp, pa)
        r[act] = np.where(better[:, None], nr, ra)
        jw_all[act] = np.where(better[:, None, None], nj, jw)
        cur[act] = np.where(better, nc, ca)
        lam_a = np.where(better, np.maximum(lam[act] / 3.0, 1e-12), lam[act] * 4.0)
        lam[act] = lam_a
        done[act] = (better & ((rel < 1e-9) | small_step)) | (lam_a > 1e10) | (cur[act] <= _TINY) | bad
        if done.all():
            break
    return p, done, it


NRH_THETA_STARTS = (0.92, 0.98, 0.995)
"""Curvatures the ``nrh`` fit starts from (all at once, the best kept): the cost has a shallow valley along
``theta`` where the corner falls between measured points."""


def _fit_nrh(xs: np.ndarray, ys: np.ndarray, w: np.ndarray, loss: str) -> dict[str, Any]:
    """The ``nrh`` candidate in scaled units: least squares from :data:`NRH_THETA_STARTS`, the noise scale
    from its residuals, then the robust fit (as :func:`_exp_point_fits` does for the exponential)."""
    n = len(xs)
    k0 = float(np.max(ys / xs))  # the steepest line from the origin through a point: the linear part's slope
    starts = np.array([[k0, float(ys.max()), t] for t in NRH_THETA_STARTS])
    m = len(starts)
    with np.errstate(all="ignore"):
        p_ls, conv, it1 = _lm_nrh(xs, np.tile(ys, (m, 1)), w, starts, "linear", 1.0)
        pred = _nrh_model(p_ls, np.broadcast_to(xs, (m, n)))[0]
        rss = np.sum(w * (ys - pred) ** 2, axis=1)
    ok = conv & np.isfinite(rss) & np.isfinite(p_ls).all(axis=1)
    if not ok.any():
        return {"converged": False, "rss": math.inf, "rss_ls": math.inf, "note": ""}
    i = int(np.argmin(np.where(ok, rss, np.inf)))
    p, rss_ls, nfev = p_ls[i].copy(), float(rss[i]), it1
    resid = ys - pred[i]
    mad = 1.4826 * float(np.median(np.abs(resid - np.median(resid))))
    fscale = max(mad, 0.01 * float(np.median(ys)), _TINY)
    used_loss = "linear"
    if loss != "linear" and n - 3 >= 2:
        with np.errstate(all="ignore"):
            pr, cr, it2 = _lm_nrh(xs, ys[None, :], w, p[None, :], loss, fscale)
        nfev += it2
        if bool(cr[0]) and np.isfinite(pr[0]).all():
            p, used_loss = pr[0].copy(), loss
    if used_loss == "linear":
        fscale = 1.0
    fitted = _nrh_model(p[None, :], xs[None, :])[0][0]
    converged = _r2(ys, ys - fitted) >= R2_MIN_SUCCESS
    note = ""
    if p[1] >= PLATEAU_MAX_FACTOR * 0.999:
        note = (f"plateau not identifiable: still rising at the largest measured value (c at its bound, "
                f"{PLATEAU_MAX_FACTOR:g}x the largest throughput)")
    jac = _nrh_model(p[None, :], xs[None, :])[1][0] * np.sqrt(w)[:, None]

    def boot(xs_: np.ndarray, u: np.ndarray, ystar: np.ndarray, w_: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return _lm_nrh(xs_, ystar, w_, p, used_loss, fscale, iters=60)[0]

    def boot_to_params(bt: np.ndarray, xsc: float, ysc: float) -> dict[str, np.ndarray]:
        return {"k": bt[:, 0] * ysc / xsc, "c": bt[:, 1] * ysc, "theta": bt[:, 2]}

    def boot_store(bt: np.ndarray, xsc: float, ysc: float) -> np.ndarray:
        return np.column_stack([bt[:, 0] * ysc / xsc, bt[:, 1] * ysc, bt[:, 2]])

    return {"rss": float(np.sum(w * (ys - fitted) ** 2)), "rss_ls": rss_ls, "converged": converged,
            "note": note, "nfev": int(nfev), "k": 3,
            "predict": lambda xs_, u: _nrh_model(p[None, :], np.asarray(xs_, dtype=float)[None, :])[0][0],
            "to_params": lambda xsc, ysc: {"k": float(p[0] * ysc / xsc), "c": float(p[1] * ysc),
                                           "theta": float(p[2])},
            "boot": boot, "boot_to_params": boot_to_params, "boot_store": boot_store,
            "jac": jac, "p_scaled": p, "n": n, "loss": used_loss}


def _fit_loglin(u: np.ndarray, ys: np.ndarray, w: np.ndarray) -> dict[str, Any]:
    design = np.column_stack([np.ones_like(u), u])
    sw = np.sqrt(w)
    coef, *_ = np.linalg.lstsq(design * sw[:, None], ys * sw, rcond=None)
    resid = ys - design @ coef

    def boot(xs_: np.ndarray, u_: np.ndarray, ystar: np.ndarray, w_: np.ndarray) -> np.ndarray:
        pinv = np.linalg.pinv(design * sw[:, None])
        return (pinv @ (ystar * sw[None, :]).T).T

    return {"rss": float(np.sum(w * resid ** 2)), "converged": True, "k": 2,
            "predict": lambda xs_, u_: coef[0] + coef[1] * u_,
            "to_params": lambda xsc, ysc: {"alpha": float(coef[0] * ysc), "beta": float(coef[1] * ysc)},
            "boot": boot,
            "boot_to_params": lambda bt, xsc, ysc: {"alpha": bt[:, 0] * ysc, "beta": bt[:, 1] * ysc},
            "boot_store": lambda bt, xsc, ysc: bt * ysc,
            "jac": design * sw[:, None], "p_scaled": coef}


def _pw_candidates(u: np.ndarray) -> list[tuple[float, ...]]:
    uniq = np.unique(u)
    interior = uniq[1:-1]
    out: list[tuple[float, ...]] = []
    for k in range(1, _MAX_PIECES + 1):
        # k breakpoints need k + 3 distinct batches (two per end segment, one between)
        # and 2 + 2k parameters (coefficients and breakpoints) plus two degrees of freedom.
        if len(uniq) < k + 4 or len(u) < 2 * k + 4:
            continue
        for combo in combinations(interior, k):
            out.append(tuple(float(t) for t in combo))
    return out


def _pw_best(u: np.ndarray, ys: np.ndarray, w: np.ndarray, combos: list[tuple[float, ...]]
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Best breakpoints per replicate column of ys (n, r): returns (combo index, coef list, rss)."""
    sw = np.sqrt(w)[:, None]
    n_par_penalty = []
    rss_all = []
    coefs = []
    for combo in combos:
        design = _pw_design(u, combo)
        pinv = np.linalg.pinv(design * sw)
        coef = pinv @ (ys * sw)
        rss = np.sum(w[:, None] * (ys - design @ coef) ** 2, axis=0)
        n = len(u)
        k = 2 + 2 * len(combo)
        n_par_penalty.append(k)
        # compare different numbers of breakpoints by AICc, same number by RSS
        rss_all.append(n * np.log(np.maximum(rss, _TINY) / n) + 2 * k + 2 * k * (k + 1) / max(n - k - 1, 1))
        coefs.append(coef)
    score = np.array(rss_all)
    idx = np.argmin(score, axis=0)
    return idx, np.array(coefs, dtype=object), score


def _fit_piecewise(u: np.ndarray, ys: np.ndarray, w: np.ndarray) -> dict[str, Any] | None:
    combos = _pw_candidates(u)
    if not combos:
        return None
    idx, _, _ = _pw_best(u, ys[:, None], w, combos)
    combo = combos[int(idx[0])]
    design = _pw_design(u, combo)
    sw = np.sqrt(w)
    coef, *_ = np.linalg.lstsq(design * sw[:, None], ys * sw, rcond=None)
    resid = ys - design @ coef
    kb = len(combo)

    def to_params(xsc: float, ysc: float) -> dict[str, float]:
        out = {"intercept": float(coef[0] * ysc)}
        slope = coef[1]
        out["slope_1"] = float(slope * ysc)
        for i in range(kb):
            slope = slope + coef[2 + i]
            out[f"slope_{i + 2}"] = float(slope * ysc)
        for i, t in enumerate(combo):
            out[f"break_{i + 1}"] = float(2.0 ** t)
        return out

    def boot(xs_: np.ndarray, u_: np.ndarray, ystar: np.ndarray, w_: np.ndarray) -> np.ndarray:
        bidx, bcoefs, _ = _pw_best(u_, ystar.T, w_, combos)
        kmax = max(len(c) for c in combos)
        rows = np.full((ystar.shape[0], 2 + 2 * kmax), np.nan)
        for j, ci_ in enumerate(bidx):
            cf = bcoefs[ci_][:, j]
            rows[j, : len(cf)] = cf
            kn = combos[ci_]
            rows[j, 2 + kmax: 2 + kmax + len(kn)] = kn
            # pad missing coefficients with zero (no slope change) for evaluation
            rows[j, len(cf): 2 + kmax] = 0.0
        return rows

    def boot_to_params(bt: np.ndarray, xsc: float, ysc: float) -> dict[str, np.ndarray]:
        kmax = (bt.shape[1] - 2) // 2
        out = {"intercept": bt[:, 0] * ysc, "slope_1": bt[:, 1] * ysc}
        slope = bt[:, 1].copy()
        for i in range(kmax):
            slope = slope + bt[:, 2 + i]
            out[f"slope_{i + 2}"] = slope * ysc
        knots = np.sort(bt[:, 2 + kmax:], axis=1)
        for i in range(kb):
            # breakpoint i of the chosen fit matched to the replicate's i-th breakpoint
            col = knots[:, i] if i < knots.shape[1] else np.full(len(bt), np.nan)
            out[f"break_{i + 1}"] = np.exp2(col)
        return out

    def boot_store(bt: np.ndarray, xsc: float, ysc: float) -> np.ndarray:
        kmax = (bt.shape[1] - 2) // 2
        out = bt.copy()
        out[:, : 2 + kmax] *= ysc
        return out

    return {"rss": float(np.sum(w * resid ** 2)), "converged": True, "k": 2 + 2 * kb, "k_breaks": kb,
            "predict": lambda xs_, u_: _pw_design(u_, combo) @ coef, "to_params": to_params,
            "boot": boot, "boot_to_params": boot_to_params, "boot_store": boot_store, "combo": combo}


def _wald(cand: Mapping[str, Any], params: Mapping[str, float], dof: int, level: float,
          xsc: float, ysc: float) -> dict[str, tuple[float, float]]:
    from scipy.stats import t as student_t

    jac = np.asarray(cand["jac"], dtype=float)
    names = list(params)
    out = {p: (math.nan, math.nan) for p in names}
    p_scaled = np.asarray(cand["p_scaled"], dtype=float)
    try:
        cov = np.linalg.pinv(jac.T @ jac) * (cand["rss"] / dof)
    except np.linalg.LinAlgError:
        return out
    tq = float(student_t.ppf(1 - (1 - level) / 2, dof))
    se = np.sqrt(np.clip(np.diag(cov), 0, None))
    scale = ([ysc, 1.0 / xsc, ysc] if names == ["a", "b", "c"] else [ysc / xsc, ysc, 1.0] if names == ["k", "c", "theta"]
             else [ysc] * len(names))
    for i, name in enumerate(names[: len(se)]):
        v = p_scaled[i] * scale[i]
        half = tq * se[i] * scale[i]
        lo = v - half
        if names in (["a", "b", "c"], ["k", "c", "theta"]):
            lo = max(lo, 0.0)  # parameters are bounded at zero
        out[name] = (float(lo), float(v + half))
    if cand.get("tied") and "c" in out:
        out["a"] = out["c"]  # fitted through the origin: a is c
    return out


def _curve_matrix(shape: str, boot: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Each replicate's curve on ``grid``: shared (m,) or one row of batches per replicate (r, m)."""
    g = grid[None, :] if grid.ndim == 1 else grid
    if shape == "exp":
        return boot[:, 2:3] - boot[:, 0:1] * np.exp(-boot[:, 1:2] * g)
    if shape == "nrh":
        return _nrh_model(boot, np.broadcast_to(g, (len(boot), g.shape[1])))[0]
    if shape == "loglin":
        return boot[:, 0:1] + boot[:, 1:2] * np.log2(g)
    if shape == "piecewise":
        return _pw_rows_at(boot, np.log2(g))
    return np.full((len(boot), g.shape[1]), np.nan)


def _pw_row(params: Mapping[str, float]) -> np.ndarray:
    """A piecewise fit's parameters as one row of the replicate layout (see :func:`_pw_rows_at`)."""
    k = sum(1 for n in params if n.startswith("break_"))
    slopes = [params[f"slope_{i + 1}"] for i in range(k + 1)]
    return np.array([[params["intercept"], slopes[0], *np.diff(slopes),
                      *np.log2([params[f"break_{i + 1}"] for i in range(k)])]], dtype=float)


def _pw_rows_at(rows: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Piecewise curves at log2 batches ``u`` ((m,) shared, or (r, m) one row per curve).

    ``rows`` (r, 2 + 2k) holds per curve ``[intercept, slope_1, slope change at each breakpoint..., breakpoint
    log2 batches...]`` (the stored bootstrap replicates, in tok/s); a NaN breakpoint (a replicate with fewer
    breakpoints) changes nothing.
    """
    k = (rows.shape[1] - 2) // 2
    uu = np.atleast_2d(u)
    coef = np.nan_to_num(rows[:, : 2 + k])
    out = coef[:, 0:1] + coef[:, 1:2] * uu
    for j in range(k):
        t = rows[:, 2 + k + j: 3 + k + j]
        out = out + np.where(np.isfinite(t), coef[:, 2 + j: 3 + j] * np.maximum(uu - np.nan_to_num(t), 0.0), 0.0)
    return out


def _pw_batch_at_fraction(rows: np.ndarray, batch_min: float, batch_max: float,
                          fractions: Sequence[float]) -> np.ndarray:
    """Smallest batch in [batch_min, batch_max] where each piecewise curve reaches ``fraction`` of its highest
    value over that range, exactly.

    The curve is linear in log2(batch) between the range's ends and the breakpoints inside it, so its highest
    value is at one of these nodes, and the first segment that reaches the target is solved in closed form
    (``u = u0 + (target - v0) / (v1 - v0) * (u1 - u0)``). Returns shape (len(fractions), r); NaN where the
    highest value is not positive (no plateau to take a fraction of).
    """
    k = (rows.shape[1] - 2) // 2
    u_lo, u_hi = math.log2(batch_min), math.log2(batch_max)
    knots = np.clip(np.where(np.isfinite(rows[:, 2 + k:]), rows[:, 2 + k:], u_hi), u_lo, u_hi)
    nodes = np.sort(np.column_stack([np.full(len(rows), u_lo), knots, np.full(len(rows), u_hi)]), axis=1)
    vals = _pw_rows_at(rows, nodes)
    top = np.max(vals, axis=1)
    ok = np.isfinite(top) & (top > 0)
    r = np.arange(len(rows))
    out = np.full((len(fractions), len(rows)), np.nan)
    for f, frac in enumerate(fractions):
        target = frac * top
        i = np.argmax(vals >= target[:, None], axis=1)  # the node at the top always qualifies
        j = np.maximum(i - 1, 0)
        v0, v1, u0, u1 = vals[r, j], vals[r, i], nodes[r, j], nodes[r, i]
        with np.errstate(divide="ignore", invalid="ignore"):
            at = np.where(i == 0, u_lo, u0 + np.clip((target - v0) / (v1 - v0), 0.0, 1.0) * (u1 - u0))
        out[f] = np.where(ok, np.exp2(at), np.nan)
    return out


def _interval(vals: np.ndarray, q_lo: float, q_hi: float) -> tuple[float, float]:
    fin = vals[np.isfinite(vals)]
    if len(fin) < max(10, 0.5 * len(vals)):
        # most replicates have no knee (or no finite b90): the interval is unbounded
        return (math.nan, math.nan)
    return float(np.quantile(fin, q_lo)), float(np.quantile(fin, q_hi))


def _knees(shape: str, params: Mapping[str, float], grid: np.ndarray, boot: np.ndarray | None,
           q_lo: float, q_hi: float) -> tuple[tuple[float, ...], tuple[tuple[float, float], ...]]:
    if shape == "piecewise":
        k = sum(1 for p in params if p.startswith("break_"))
        knees, cis = [], []
        for i in range(k):
            if params[f"slope_{i + 2}"] < params[f"slope_{i + 1}"]:
                knees.append(params[f"break_{i + 1}"])
                if boot is not None:
                    kmax = (boot.shape[1] - 2) // 2
                    knots = np.sort(boot[:, 2 + kmax:], axis=1)
                    col = np.exp2(knots[:, i]) if i < knots.shape[1] else np.full(len(boot), np.nan)
                    cis.append(_interval(col, q_lo, q_hi))
                else:
                    cis.append((math.nan, math.nan))
        return tuple(knees), tuple(cis)
    if shape not in PLATEAU_SHAPES:
        # alpha + beta log2(B) normalised to [0, 1] is log(B / B_min) / log(B_max / B_min) whatever alpha and
        # beta are: its Kneedle point depends on the measured batch range only (the same "knee", with a
        # zero-width interval, for every curve measured over the same batches). Not a property of the data.
        return (), ()
    # the knee is refined between grid points (kneedle_knee's curve_at): on the grid alone a curve measured from
    # batch 1 to 256 had whole-batch knees and a zero-width interval whenever the replicates agreed within a batch
    knee = float(kneedle_knee(grid, _evaluate(shape, params, grid),
                              curve_at=lambda b: _evaluate(shape, params, b)))
    if not np.isfinite(knee):
        return (), ()
    ci = (math.nan, math.nan)
    if boot is not None:
        bs = boot
        ci = _interval(kneedle_knee(grid, _curve_matrix(shape, bs, grid),
                                    curve_at=lambda b: _curve_matrix(shape, bs, b)), q_lo, q_hi)
    return (knee,), (ci,)


def _fractions(shape: str, params: Mapping[str, float], grid: np.ndarray, boot: np.ndarray | None,
               q_lo: float, q_hi: float) -> tuple[float, float, tuple[float, float], tuple[float, float]]:
    nan2 = (math.nan, math.nan)
    if shape not in PLATEAU_SHAPES:
        # no plateau: "90% of the highest value over the range" would only restate the range's end
        return math.nan, math.nan, nan2, nan2
    if shape == "exp":
        a, b, c = params["a"], params["b"], params["c"]
        b90 = float(exp_batch_at_fraction(a, b, c, 0.90))
        b95 = float(exp_batch_at_fraction(a, b, c, 0.95))
        if boot is None:
            return b90, b95, nan2, nan2
        ci90 = _interval(exp_batch_at_fraction(boot[:, 0], boot[:, 1], boot[:, 2], 0.90), q_lo, q_hi)
        ci95 = _interval(exp_batch_at_fraction(boot[:, 0], boot[:, 1], boot[:, 2], 0.95), q_lo, q_hi)
        return b90, b95, ci90, ci95
    if shape == "nrh":
        k, c, th = params["k"], params["c"], params["theta"]
        b90 = float(nrh_batch_at_fraction(k, c, th, 0.90))
        b95 = float(nrh_batch_at_fraction(k, c, th, 0.95))
        if boot is None:
            return b90, b95, nan2, nan2
        return (b90, b95, _interval(nrh_batch_at_fraction(boot[:, 0], boot[:, 1], boot[:, 2], 0.90), q_lo, q_hi),
                _interval(nrh_batch_at_fraction(boot[:, 0], boot[:, 1], boot[:, 2], 0.95), q_lo, q_hi))

    # piecewise: of the highest value over the measured range, solved exactly on the segment that reaches it
    # (a grid search confined b90/b95 to steps of 1/255 of the range); the same definition for each replicate
    lo, hi = float(grid[0]), float(grid[-1])
    b90, b95 = (float(v) for v in _pw_batch_at_fraction(_pw_row(params), lo, hi, (0.90, 0.95))[:, 0])
    if boot is None:
        return b90, b95, nan2, nan2
    r90, r95 = _pw_batch_at_fraction(boot, lo, hi, (0.90, 0.95))
    return b90, b95, _interval(r90, q_lo, q_hi), _interval(r95, q_lo, q_hi)


# --------------------------------------------------------------------------- many curves


def _resolve_by(runs: pd.DataFrame, by: Sequence[str] | None) -> list[str]:
    if by is None or tuple(by) == DEFAULT_BY:
        cols = (list(DEFAULT_BY) + [c for c in OPTIONAL_BY if c in runs.columns and runs[c].notna().any()]
                + [c for c in (*VARYING_BY, *LOAD_BY) if c in runs.columns and runs[c].nunique() > 1])
        missing = [c for c in DEFAULT_BY if c not in runs.columns]
    else:
        cols = list(by)
        missing = [c for c in cols if c not in runs.columns]
    if missing:
        raise ValidationError("fit_curves: grouping column(s) not in the runs table",
                              [Problem(f"no column {c!r}; available: {', '.join(map(str, runs.columns))}",
                                       column=c) for c in missing])
    return cols


def fit_curves(runs: pd.DataFrame, by: Sequence[str] | None = DEFAULT_BY, *, shape: str = "auto",
               x: str = "batch_size", y: str = "output_throughput_tok_s", intervals: str = DEFAULT_INTERVALS,
               n_boot: int = DEFAULT_N_BOOT, level: float = 0.95, seed: int = 0, init: str = "quantile",
               loss: str = "soft_l1", restarts: bool = True, fallback: bool = True,
               origin_refit: bool = True, return_fits: bool = False) -> pd.DataFrame | tuple[pd.DataFrame, dict[tuple[Any, ...], CurveFit]]:
    """Fit one saturation curve per configuration of a runs table.

    Parameters
    ----------
    runs
        Canonical runs table (or any frame with the ``by``, ``x`` and ``y`` columns).
    by
        Columns identifying a configuration. The default :data:`DEFAULT_BY` also
        adds the :data:`OPTIONAL_BY` columns that are present with values and the
        :data:`VARYING_BY` and :data:`LOAD_BY` columns that take more than one value.
        Missing key values (NaN) form their own group.
    shape, intervals, n_boot, level, init, loss, restarts, fallback, origin_refit
        As in :func:`fit_curve`.
    x, y
        Batch and throughput columns.
    seed
        Base seed; each configuration's bootstrap seed is derived from it and the
        configuration's key, so results do not depend on row or group order.
    return_fits
        Also return the :class:`CurveFit` objects keyed by configuration.

    Returns
    -------
    pandas.DataFrame
        One row per configuration, sorted by the keys: the key columns, ``shape``,
        ``a, b, c`` (exp only) with ``_lo``/``_hi`` bounds, ``plateau_tok_s``,
        ``breakpoints`` (piecewise), ``r2, rmse, n_points, n_batches, success,
        poor_fit, message``, ``knee_1, knee_2`` with bounds, ``b90, b95`` with
        bounds, ``plateau_reached``, ``aicc_*``/``bic_*`` of the candidate shapes,
        ``shape_reason, interval_method, ci_level, init, batch_min, batch_max``.
        With ``return_fits``, a tuple ``(table, fits)``.

    Raises
    ------
    ValidationError
        A grouping, batch or throughput column is missing or not numeric.
    UnknownNameError
        An option outside its allowed values.
    """
    _validate_option(shape, SHAPES, "curve shape")
    _validate_option(intervals, INTERVAL_METHODS, "interval method")
    _validate_option(init, INIT_METHODS, "initialisation")
    _validate_option(loss, LOSSES, "loss")
    cols = _resolve_by(runs, by)
    problems = [Problem(f"no column {c!r}", column=c) for c in (x, y) if c not in runs.columns]
    if problems:
        raise ValidationError("fit_curves: the runs table lacks the columns to fit", problems)
    try:
        xv = pd.to_numeric(runs[x], errors="raise").to_numpy(dtype=float, na_value=np.nan)
        yv = pd.to_numeric(runs[y], errors="raise").to_numpy(dtype=float, na_value=np.nan)
    except (TypeError, ValueError) as exc:
        raise ValidationError("fit_curves: batch and throughput columns must be numeric",
                              [Problem(str(exc), column=f"{x}/{y}")]) from exc
    rows: list[dict[str, Any]] = []
    fits: dict[tuple[Any, ...], CurveFit] = {}
    if len(runs) == 0:
        empty = pd.DataFrame(columns=cols + list(_empty_row().keys()))
        return (empty, fits) if return_fits else empty
    groups = runs.groupby(cols, dropna=False, sort=True).indices
    pre = _vectorised_exp_pass(groups, xv, yv, init, loss) if shape != "loglin" else {}
    for key, idx in groups.items():
        key_t = key if isinstance(key, tuple) else (key,)
        gseed = (seed * 1_000_003 + zlib.crc32(repr(tuple(_plain(k) for k in key_t)).encode())) % (2 ** 32)
        fit = fit_curve(xv[idx], yv[idx], shape=shape, intervals=intervals, n_boot=n_boot, level=level,
                        seed=gseed, init=init, loss=loss, restarts=restarts, fallback=fallback,
                        origin_refit=origin_refit, x_name=x, _pre_exp=pre.get(key))
        row = dict(zip(cols, key_t, strict=True))
        row.update(fit.as_row())
        rows.append(row)
        if return_fits:
            fits[key_t] = fit
    table = pd.DataFrame(rows)
    return (table, fits) if return_fits else table


def _usable(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Points a curve can use: finite, positive batch and throughput."""
    return np.isfinite(x) & (x > 0) & np.isfinite(y) & (y > 0)


def _vectorised_exp_pass(groups: Mapping[Any, np.ndarray], xv: np.ndarray, yv: np.ndarray, init: str,
                         loss: str) -> dict[Any, dict[str, Any]]:
    """The exponential point fit of every curve in one padded, vectorised solve.

    Per-curve Python calls into scipy cost about a millisecond per iteration;
    solving all curves together is what keeps a whole data set under two seconds.
    Each curve is prepared exactly as :func:`fit_curve` prepares it, so the
    result is the same as fitting it alone.
    """
    items = []
    for key, idx in groups.items():
        x, y = xv[idx], yv[idx]
        ok = _usable(x, y)
        x, y = x[ok], y[ok]
        if len(np.unique(x)) < MIN_BATCHES:
            continue
        xsc, ysc = float(x.max()), float(y.max())
        items.append((key, x / xsc, y / ysc, _scaled_init(init, x, y, xsc, ysc)))
    if not items:
        return {}
    n_max = max(len(it[1]) for it in items)
    xs2 = np.ones((len(items), n_max))
    ys2 = np.zeros((len(items), n_max))
    w2 = np.zeros((len(items), n_max))
    for i, (_, xs, ys, _p0) in enumerate(items):
        xs2[i, : len(xs)] = xs
        ys2[i, : len(ys)] = ys
        w2[i, : len(xs)] = 1.0
    p0 = np.array([it[3] for it in items])
    res = _exp_point_fits(xs2, ys2, w2, p0, loss)
    return {it[0]: {k: v[i] for k, v in res.items()} for i, it in enumerate(items)}


def _plain(v: Any) -> Any:
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
        return None
    if isinstance(v, (np.integer, np.floating)):
        return v.item()
    return v


def _empty_row() -> dict[str, Any]:
    return _not_enough(0, 0, np.array([]), "", 0.95, "none", "quantile").as_row()
