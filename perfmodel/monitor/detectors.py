"""Streaming anomaly detectors: one interface, a streaming path and an identical batch path.

Three detectors judge one metric series (one group, one metric):

``point``
    z-score of each sample against a sliding baseline of the last ``window``
    accepted samples (mean/standard deviation, or median/MAD when ``robust``);
    alert outside ``center +- z * scale``.
``window``
    the same test on the mean of the last ``w`` samples, whose scale is
    ``scale / sqrt(w)`` (the standard error of a mean of ``w`` samples).
``threshold``
    relative deviation from an expected value (default 15%) supplied by the
    caller: a constant, or a callable of the timestamps (a curve fit or a
    predictor for the current batch size, lengths and hardware).

Design choices, each for a reason:

* The baseline statistics are recomputed every ``refresh`` samples (default:
  100, or the window when it is shorter) and frozen in between. Both paths compute them with the same numpy reduction on the same
  window contents, so the vectorised :meth:`Detector.run` gives exactly the
  answers of :meth:`Detector.update` sample by sample (tested), and a million
  samples take well under two seconds.
* The robust scale is the larger of the MAD and the interquartile range (both
  as a normal sigma): on quantised series such as per-second token counts the
  MAD alone collapses when most samples share one or two values. On such a
  series (at most half the baseline's values distinct) the scale is also at
  least the lattice step, the smallest gap between two levels: a count one
  request off its usual level is ordinary, yet a baseline that mostly sat on
  one level gives an interquartile range of a fraction of a step.
* Samples that raise an alert do not enter the baseline: an anomaly lasting a
  few hundred samples must not teach the baseline that it is normal.
* Cold start: until ``min_baseline`` samples are in the baseline, the dynamic
  detectors judge against the expected value (when one is given) with the
  fixed relative threshold, rather than alarm on nothing or stay blind. Every
  cold-start sample enters the baseline, so a wrong expectation cannot keep the
  baseline from ever forming.
* The scale has a floor (``sigma_floor_rel`` of the centre): a constant series
  gives no alert, and a 3% change after it does.
* NaN/inf samples are gaps: no alert, nothing learnt. Detectors never look at
  the clock except to stamp alerts, so clock jumps neither create nor hide
  alerts.
* Memory is bounded: a deque of ``window`` baseline samples and one of ``w``
  recent samples.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import PerfmodelError

__all__ = [
    "DETECTORS",
    "DEFAULT_WINDOW",
    "DEFAULT_Z",
    "DEFAULT_W",
    "DEFAULT_THRESHOLD_REL",
    "DEFAULT_MIN_BASELINE",
    "DEFAULT_REFRESH",
    "SIGMA_FLOOR_REL",
    "Expected",
    "Alert",
    "Event",
    "Detection",
    "Detector",
    "PointDetector",
    "WindowDetector",
    "ThresholdDetector",
    "make_detector",
    "DetectorSettingsError",
]

DETECTORS = ("point", "window", "threshold")
"""Names accepted by :func:`make_detector`."""
DEFAULT_WINDOW = 1000
"""Baseline length in samples (the reference analysis used 1,000)."""
DEFAULT_Z = 3.0
"""Alert outside mean +- 3 standard deviations."""
DEFAULT_W = 10
"""Samples averaged by the window detector."""
DEFAULT_THRESHOLD_REL = 0.15
"""Relative deviation from the expected value that raises a fixed-threshold alert."""
DEFAULT_MIN_BASELINE = 30
"""Baseline samples needed before the dynamic detectors trust it (cold start until then)."""
DEFAULT_REFRESH = 100
"""Most samples between two recomputations of the baseline statistics (never more than the window,
so a short sliding window does slide)."""
SIGMA_FLOOR_REL = 0.01
"""Lower bound of the scale, relative to the centre: a perfectly flat series still needs a 3% move to alert."""
_MAD_TO_SIGMA = 1.4826  # MAD of a normal distribution is 0.6745 sigma
_IQR_TO_SIGMA = 1.349  # the interquartile range of a normal distribution is 1.349 sigma
_TINY = 1e-12

Expected = float | Callable[[np.ndarray], Any] | None
"""An expected value: a constant, or a callable taking an array of timestamps (s) and returning
an array (or scalar) of expected values; ``None`` when there is no expectation."""


class DetectorSettingsError(PerfmodelError):
    """A detector setting is out of range or unknown."""


@dataclass(frozen=True)
class Alert:
    """One sample judged anomalous.

    Attributes
    ----------
    t
        Timestamp of the sample (s).
    index
        Position of the sample in the series given to the detector (0-based, gaps counted).
    value
        The judged value (the sample, or the mean of the last ``w`` samples).
    center, lower, upper
        The expected value (baseline centre or expectation) and the band it fell outside.
    score
        z-score (dynamic detectors) or relative deviation (threshold and cold start).
    detector
        Detector name.
    cold_start
        True when judged against the expectation because the baseline was not ready.
    """

    t: float
    index: int
    value: float
    center: float
    lower: float
    upper: float
    score: float
    detector: str
    cold_start: bool = False

    @property
    def direction(self) -> str:
        """``"high"`` or ``"low"``: which side of the band the value fell."""
        return "high" if self.value > self.center else "low"


@dataclass(frozen=True)
class Event:
    """Consecutive alerted samples merged into one anomaly.

    Attributes
    ----------
    start_index, end_index
        First and last alerted sample (inclusive).
    start_t, end_t
        Their timestamps (s).
    n_alerts
        Alerted samples in the event.
    peak_score
        The score of largest magnitude.
    direction
        ``"high"`` or ``"low"`` (side of the peak).
    """

    start_index: int
    end_index: int
    start_t: float
    end_t: float
    n_alerts: int
    peak_score: float
    direction: str


@dataclass(frozen=True)
class Detection:
    """The result of :meth:`Detector.run` on one series: per-sample band, score and flags.

    Attributes
    ----------
    detector
        Detector name.
    t, x
        The series as given.
    value
        What was judged per sample (the sample, or the window mean); NaN in gaps.
    center, lower, upper
        Baseline centre and band per sample; NaN where nothing was judged.
    score
        Score per sample; NaN where nothing was judged.
    flags
        True where an alert was raised.
    cold
        True where the sample was judged in cold start (against the expectation).
    """

    detector: str
    t: np.ndarray
    x: np.ndarray
    value: np.ndarray
    center: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    score: np.ndarray
    flags: np.ndarray
    cold: np.ndarray = field(repr=False)

    @property
    def n_alerts(self) -> int:
        """Number of alerted samples."""
        return int(self.flags.sum())

    def alerts(self) -> list[Alert]:
        """Every alert as an :class:`Alert` (what :meth:`Detector.update` returned, in order).

        Returns
        -------
        list of Alert
        """
        return [Alert(float(self.t[i]), int(i), float(self.value[i]), float(self.center[i]),
                      float(self.lower[i]), float(self.upper[i]), float(self.score[i]), self.detector,
                      bool(self.cold[i])) for i in np.flatnonzero(self.flags)]

    def events(self, max_gap: int = 1) -> list[Event]:
        """Merge alerts no more than ``max_gap`` samples apart, and on the same side of the expectation, into
        events.

        Parameters
        ----------
        max_gap
            Largest index difference between two alerts of one event (1: strictly consecutive).

        Returns
        -------
        list of Event
        """
        idx = np.flatnonzero(self.flags)
        if idx.size == 0:
            return []
        # An event is one direction: two repeats on either side of their median (-17 % and +17 %) had merged
        # into one, whose hint averaged them to "changed +0%" and whose score could carry the other's sign.
        high = self.value[idx] > self.center[idx]
        cuts = np.flatnonzero((np.diff(idx) > max(1, int(max_gap))) | (high[1:] != high[:-1])) + 1
        out = []
        for part in np.split(idx, cuts):
            sc = self.score[part]
            k = int(part[int(np.nanargmax(np.abs(np.where(np.isfinite(sc), sc, 0.0))))])
            out.append(Event(int(part[0]), int(part[-1]), float(self.t[part[0]]), float(self.t[part[-1]]),
                             int(part.size), float(self.score[k]),
                             "high" if self.value[k] > self.center[k] else "low"))
        return out


def _median(arr: np.ndarray) -> float:
    n = arr.size
    k = n // 2
    if n % 2:
        return float(np.partition(arr, k)[k])
    p = np.partition(arr, (k - 1, k))
    return (float(p[k - 1]) + float(p[k])) / 2.0


def _median_quartiles_step(arr: np.ndarray) -> tuple[float, float, float, float]:
    """Median, first and third quartiles (numpy's default linear interpolation) and the lattice step, from one sort.

    The step is the smallest gap between two levels of a quantised series (at most half its values
    distinct), else 0.
    """
    n = arr.size
    s = np.sort(arr)
    out = []
    for q in (0.5, 0.25, 0.75):
        p = q * (n - 1)
        lo, hi = math.floor(p), math.ceil(p)
        out.append(float(s[lo]) + (p - lo) * (float(s[hi]) - float(s[lo])))
    gaps = np.diff(s)
    gaps = gaps[gaps > 0]
    step = float(gaps.min()) if gaps.size and 2 * (gaps.size + 1) <= n else 0.0
    return out[0], out[1], out[2], step


def _expected_array(expected: Expected, t: np.ndarray) -> np.ndarray:
    if expected is None:
        return np.full(t.shape, np.nan)
    if callable(expected):
        out = np.asarray(expected(t), dtype="float64")
        return np.broadcast_to(out, t.shape).astype("float64", copy=True)
    return np.full(t.shape, float(expected))


def _expected_one(expected: Expected, t: float) -> float:
    if expected is None:
        return math.nan
    return float(_expected_array(expected, np.array([t], dtype="float64"))[0])


def _rel_band(e: np.ndarray, rel: float) -> tuple[np.ndarray, np.ndarray]:
    a, b = e * (1.0 - rel), e * (1.0 + rel)
    return np.minimum(a, b), np.maximum(a, b)


def _judge_expected(v: np.ndarray, e: np.ndarray, rel: float
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Band, score and flags of values ``v`` against expectations ``e`` (vectorised, exact per element)."""
    ok = np.isfinite(e) & (e != 0.0) & np.isfinite(v)
    e_ok = np.where(ok, e, np.nan)
    lo, hi = _rel_band(e_ok, rel)
    with np.errstate(invalid="ignore", divide="ignore"):
        score = (v - e_ok) / np.abs(e_ok)
    flags = ok & ((v < lo) | (v > hi))
    return e_ok, lo, hi, score, flags


class Detector(ABC):
    """The interface every detector follows: ``update`` one sample, or ``run`` a whole series.

    ``__init__`` stores settings and checks them; :meth:`reset` forgets what was learnt.
    """

    name: str = ""

    @abstractmethod
    def reset(self) -> None:
        """Forget every sample seen (settings are kept)."""

    @abstractmethod
    def update(self, t: float, x: float) -> Alert | None:
        """Judge one sample, then learn from it.

        Parameters
        ----------
        t
            Timestamp (s); used only to stamp the alert and to ask the expectation.
        x
            The sample; NaN or inf is a gap (no alert, nothing learnt).

        Returns
        -------
        Alert or None
        """

    @abstractmethod
    def run(self, t: Any, x: Any) -> Detection:
        """Judge a whole series from a fresh state (vectorised; same answers as ``update``).

        Parameters
        ----------
        t, x
            Timestamps (s) and values, 1-D, same length.

        Returns
        -------
        Detection

        Raises
        ------
        DetectorSettingsError
            When ``t`` and ``x`` differ in length or are not 1-D.
        """

    def settings(self) -> dict[str, Any]:
        """The detector's settings as plain values (for reports and links).

        Returns
        -------
        dict
        """
        return {k.lstrip("_"): v for k, v in vars(self).items()
                if k in ("window", "z", "w", "threshold_rel", "robust", "min_baseline", "refresh",
                         "sigma_floor_rel")}


def _arrays(t: Any, x: Any) -> tuple[np.ndarray, np.ndarray]:
    ta = np.asarray(t, dtype="float64").reshape(-1) if np.ndim(t) else np.asarray([t], dtype="float64")
    xa = np.asarray(x, dtype="float64").reshape(-1) if np.ndim(x) else np.asarray([x], dtype="float64")
    if np.ndim(t) > 1 or np.ndim(x) > 1 or ta.shape != xa.shape:
        raise DetectorSettingsError(
            f"a series needs 1-D timestamps and values of the same length, got {np.shape(t)} and {np.shape(x)}")
    return ta, xa


class _BaselineDetector(Detector):
    """Shared machinery of the point and window detectors."""

    def __init__(self, *, window: int = DEFAULT_WINDOW, z: float = DEFAULT_Z, w: int = 1,
                 robust: bool = False, expected: Expected = None,
                 threshold_rel: float = DEFAULT_THRESHOLD_REL, min_baseline: int = DEFAULT_MIN_BASELINE,
                 refresh: int | None = None, sigma_floor_rel: float = SIGMA_FLOOR_REL) -> None:
        problems = []
        if not (isinstance(window, int | np.integer) and window >= 2):
            problems.append(f"window must be a whole number >= 2, got {window!r}")
        if not (isinstance(w, int | np.integer) and w >= 1):
            problems.append(f"w must be a whole number >= 1, got {w!r}")
        if not (isinstance(z, int | float) and math.isfinite(z) and z > 0):
            problems.append(f"z must be a positive number, got {z!r}")
        if not (isinstance(threshold_rel, int | float) and 0 < threshold_rel < 10):
            problems.append(f"threshold must be a relative deviation in (0, 10), got {threshold_rel!r}")
        if refresh is None:
            refresh = min(DEFAULT_REFRESH, window) if isinstance(window, int | np.integer) and window >= 1 \
                else DEFAULT_REFRESH
        if not (isinstance(refresh, int | np.integer) and refresh >= 1):
            problems.append(f"refresh must be a whole number >= 1, got {refresh!r}")
        if not (isinstance(min_baseline, int | np.integer) and 2 <= min_baseline):
            problems.append(f"min_baseline must be a whole number >= 2, got {min_baseline!r}")
        elif isinstance(window, int | np.integer) and min_baseline > window:
            problems.append(f"min_baseline ({min_baseline}) cannot exceed the window ({window})")
        if not (isinstance(sigma_floor_rel, int | float) and sigma_floor_rel >= 0):
            problems.append(f"sigma_floor_rel must be >= 0, got {sigma_floor_rel!r}")
        if problems:
            raise DetectorSettingsError(f"invalid {self.name} detector settings: " + "; ".join(problems))
        self.window, self.z, self.w, self.robust = int(window), float(z), int(w), bool(robust)
        self.expected = expected
        self.threshold_rel, self.min_baseline = float(threshold_rel), int(min_baseline)
        self.refresh, self.sigma_floor_rel = int(refresh), float(sigma_floor_rel)
        self.reset()

    def reset(self) -> None:
        self._buf: deque[float] = deque(maxlen=self.window)
        self._short: deque[float] = deque(maxlen=self.w)
        self._ready = False
        self._since = 0
        self._center = math.nan
        self._scale = math.nan
        self._index = -1

    def _stats(self, arr: np.ndarray) -> tuple[float, float]:
        # Plain reductions on a fresh array: update() and run() call this on equal arrays, so their
        # statistics are bit-identical (and partition/sum are several times faster than median/std).
        n = arr.size
        if self.robust:
            # MAD collapses on quantised series (per-second token counts move in steps of the output
            # length: when most samples sit on one or two levels the MAD is a fraction of the real
            # spread), so the robust scale is the largest of the MAD and the interquartile range, each
            # converted to a normal sigma, and the lattice step (see the module notes).
            center, q1, q3, step = _median_quartiles_step(arr)
            scale = max(_MAD_TO_SIGMA * _median(np.abs(arr - center)), (q3 - q1) / _IQR_TO_SIGMA, step)
        else:
            center = float(arr.sum()) / n
            d = arr - center
            scale = math.sqrt(float((d * d).sum()) / n)
        return center, max(scale, self.sigma_floor_rel * abs(center), _TINY)

    def _refresh(self) -> None:
        self._center, self._scale = self._stats(np.fromiter(self._buf, dtype="float64", count=len(self._buf)))
        self._ready, self._since = True, 0

    def update(self, t: float, x: float) -> Alert | None:
        self._index += 1
        x = float(x)
        if not math.isfinite(x):
            return None
        self._short.append(x)
        if not self._ready:
            if len(self._buf) >= self.min_baseline:
                self._refresh()
        elif self._since >= self.refresh:
            self._refresh()
        s = 0.0
        for v_ in self._short:
            s += v_
        n = len(self._short)
        v = s / n
        if self._ready:
            half = self.z * self._scale / math.sqrt(n)
            lo, hi = self._center - half, self._center + half
            flag = v < lo or v > hi
            alert = Alert(float(t), self._index, v, self._center, lo, hi,
                          (v - self._center) / (self._scale / math.sqrt(n)), self.name) if flag else None
            if not flag:
                self._buf.append(x)
            self._since += 1
            return alert
        e = _expected_one(self.expected, float(t))
        self._buf.append(x)
        c, lo_a, hi_a, sc, fl = _judge_expected(np.array([v]), np.array([e]), self.threshold_rel)
        if fl[0]:
            return Alert(float(t), self._index, v, float(c[0]), float(lo_a[0]), float(hi_a[0]), float(sc[0]),
                         self.name, True)
        return None

    def run(self, t: Any, x: Any) -> Detection:
        t, x = _arrays(t, x)
        n_all = x.size
        valid = np.flatnonzero(np.isfinite(x))
        xv, tv = x[valid], t[valid]
        n = xv.size
        # Window means by sequential addition in the same order as update(), so both are bit-identical.
        acc = np.zeros(n)
        for k in range(self.w - 1, -1, -1):
            if k < n:
                acc[k:] = acc[k:] + xv[: n - k]
        cnt = np.minimum(np.arange(1, n + 1), self.w).astype("float64")
        value = acc / cnt if n else acc
        center = np.full(n, np.nan)
        lower, upper, score = center.copy(), center.copy(), center.copy()
        flags = np.zeros(n, dtype=bool)
        cold = np.zeros(n, dtype=bool)
        n_cold = min(self.min_baseline, n)
        if n_cold:
            e = _expected_array(self.expected, tv[:n_cold])
            c, lo, hi, sc, fl = _judge_expected(value[:n_cold], e, self.threshold_rel)
            center[:n_cold], lower[:n_cold], upper[:n_cold], score[:n_cold] = c, lo, hi, sc
            flags[:n_cold], cold[:n_cold] = fl, True
        buf = xv[max(0, n_cold - self.window):n_cold].copy()
        scl = np.full(n, np.nan)
        sqrt_w = math.sqrt(self.w)
        for s in range(n_cold, n, self.refresh):
            e_ = min(s + self.refresh, n)
            c0, scale = self._stats(buf)
            v = value[s:e_]
            if s >= self.w - 1:
                half = self.z * scale / sqrt_w
                fl = (v < c0 - half) | (v > c0 + half)
            else:
                half_a = self.z * scale / np.sqrt(cnt[s:e_])
                fl = (v < c0 - half_a) | (v > c0 + half_a)
            center[s:e_], scl[s:e_], flags[s:e_] = c0, scale, fl
            new = xv[s:e_][~fl] if fl.any() else xv[s:e_]
            keep = self.window - new.size
            # A fresh array of exactly the window's contents, as np.fromiter(deque) builds in update().
            buf = np.concatenate([buf[max(0, buf.size - keep):] if keep > 0 else buf[:0], new[-self.window:]])
        hot = slice(n_cold, n)
        sq = np.sqrt(cnt[hot])
        half_all = self.z * scl[hot] / sq
        lower[hot], upper[hot] = center[hot] - half_all, center[hot] + half_all
        score[hot] = (value[hot] - center[hot]) / (scl[hot] / sq)
        return _scatter(self.name, t, x, valid, n_all, value, center, lower, upper, score, flags, cold)


def _scatter(name: str, t: np.ndarray, x: np.ndarray, valid: np.ndarray, n_all: int, *cols: np.ndarray
             ) -> Detection:
    full = []
    for col in cols:
        if col.dtype == bool:
            out = np.zeros(n_all, dtype=bool)
        else:
            out = np.full(n_all, np.nan)
        out[valid] = col
        full.append(out)
    value, center, lower, upper, score, flags, cold = full
    return Detection(name, t, x, value, center, lower, upper, score, flags, cold)


class PointDetector(_BaselineDetector):
    """Dynamic point detection: each sample's z-score against a sliding baseline.

    Parameters
    ----------
    window
        Baseline length (accepted samples).
    z
        Alert when ``|x - center| > z * scale``.
    robust
        Median and the largest of MAD x 1.4826, IQR / 1.349 and (on a quantised series) the lattice
        step instead of mean and standard deviation.
    expected
        Expectation used during cold start (constant or callable of timestamps).
    threshold_rel
        Relative threshold against the expectation during cold start.
    min_baseline
        Samples needed before the baseline is trusted.
    refresh
        Samples between recomputations of the baseline statistics (default: ``min(100, window)``).
    sigma_floor_rel
        Lower bound of the scale relative to the centre.

    Raises
    ------
    DetectorSettingsError
        When a setting is out of range.
    """

    name = "point"

    def __init__(self, *, window: int = DEFAULT_WINDOW, z: float = DEFAULT_Z, robust: bool = False,
                 expected: Expected = None, threshold_rel: float = DEFAULT_THRESHOLD_REL,
                 min_baseline: int = DEFAULT_MIN_BASELINE, refresh: int | None = None,
                 sigma_floor_rel: float = SIGMA_FLOOR_REL) -> None:
        super().__init__(window=window, z=z, w=1, robust=robust, expected=expected, threshold_rel=threshold_rel,
                         min_baseline=min_baseline, refresh=refresh, sigma_floor_rel=sigma_floor_rel)


class WindowDetector(_BaselineDetector):
    """Dynamic window detection: the mean of the last ``w`` samples against the baseline.

    The band is ``center +- z * scale / sqrt(w)``: a sustained shift of a fraction
    of the noise is caught, a lone spike diluted. Parameters as
    :class:`PointDetector`, plus ``w`` (default 10).

    Raises
    ------
    DetectorSettingsError
        When a setting is out of range.
    """

    name = "window"

    def __init__(self, *, window: int = DEFAULT_WINDOW, w: int = DEFAULT_W, z: float = DEFAULT_Z,
                 robust: bool = False, expected: Expected = None, threshold_rel: float = DEFAULT_THRESHOLD_REL,
                 min_baseline: int = DEFAULT_MIN_BASELINE, refresh: int | None = None,
                 sigma_floor_rel: float = SIGMA_FLOOR_REL) -> None:
        super().__init__(window=window, z=z, w=w, robust=robust, expected=expected, threshold_rel=threshold_rel,
                         min_baseline=min_baseline, refresh=refresh, sigma_floor_rel=sigma_floor_rel)


class ThresholdDetector(Detector):
    """Fixed threshold: relative deviation from the expected value.

    Parameters
    ----------
    expected
        The expected value: a constant or a callable of the timestamps (e.g. a
        curve fit or a predictor for the current batch size, lengths and
        hardware). Samples without a finite, non-zero expectation are not judged.
    threshold_rel
        Alert when ``|x - expected| / |expected|`` exceeds this (default 0.15).

    Raises
    ------
    DetectorSettingsError
        When the threshold is out of range.
    """

    name = "threshold"

    def __init__(self, *, expected: Expected = None, threshold_rel: float = DEFAULT_THRESHOLD_REL) -> None:
        if not (isinstance(threshold_rel, int | float) and 0 < threshold_rel < 10):
            raise DetectorSettingsError(
                f"invalid threshold detector settings: threshold must be a relative deviation in (0, 10), "
                f"got {threshold_rel!r}")
        self.expected = expected
        self.threshold_rel = float(threshold_rel)
        self.reset()

    def reset(self) -> None:
        self._index = -1

    def update(self, t: float, x: float) -> Alert | None:
        self._index += 1
        x = float(x)
        if not math.isfinite(x):
            return None
        e = _expected_one(self.expected, float(t))
        c, lo, hi, sc, fl = _judge_expected(np.array([x]), np.array([e]), self.threshold_rel)
        if fl[0]:
            return Alert(float(t), self._index, x, float(c[0]), float(lo[0]), float(hi[0]), float(sc[0]),
                         self.name)
        return None

    def run(self, t: Any, x: Any) -> Detection:
        t, x = _arrays(t, x)
        valid = np.flatnonzero(np.isfinite(x))
        e = _expected_array(self.expected, t[valid])
        xv = x[valid]
        c, lo, hi, sc, fl = _judge_expected(xv, e, self.threshold_rel)
        return _scatter(self.name, t, x, valid, x.size, xv, c, lo, hi, sc, fl, np.zeros(valid.size, dtype=bool))


def make_detector(name: str, *, window: int = DEFAULT_WINDOW, z: float = DEFAULT_Z, w: int = DEFAULT_W,
                  threshold_rel: float = DEFAULT_THRESHOLD_REL, robust: bool = False, expected: Expected = None,
                  min_baseline: int | None = None, refresh: int | None = None) -> Detector:
    """Build a detector by name with the usual settings.

    Parameters
    ----------
    name
        One of :data:`DETECTORS`.
    window, z, w, threshold_rel, robust, expected, refresh
        Settings (see the detector classes); those a detector does not use are ignored.
    min_baseline
        Default: ``min(DEFAULT_MIN_BASELINE, window)``.

    Returns
    -------
    Detector

    Raises
    ------
    DetectorSettingsError
        When the name is unknown or a setting is out of range.
    """
    mb = min(DEFAULT_MIN_BASELINE, window) if min_baseline is None and isinstance(window, int) else min_baseline
    if name == "point":
        return PointDetector(window=window, z=z, robust=robust, expected=expected, threshold_rel=threshold_rel,
                             min_baseline=mb if mb is not None else DEFAULT_MIN_BASELINE, refresh=refresh)
    if name == "window":
        return WindowDetector(window=window, w=w, z=z, robust=robust, expected=expected,
                              threshold_rel=threshold_rel, min_baseline=mb if mb is not None else DEFAULT_MIN_BASELINE,
                              refresh=refresh)
    if name == "threshold":
        return ThresholdDetector(expected=expected, threshold_rel=threshold_rel)
    raise DetectorSettingsError(f"unknown detector {name!r}; choose one of: {', '.join(DETECTORS)}")
