"""Evaluation harness: every predictor under every hold-out protocol, several seeds.

Protocols (:data:`PROTOCOLS`)
    ``random``      a random 80/20 split of the rows;
    ``config``      whole configurations held out (20% of them), grouped by the
                    curve key (:func:`config_key`): hardware, device count,
                    framework, model, lengths and the dtype/parallelism columns;
    ``hardware``    leave one accelerator out, one fold per accelerator, errors
                    pooled over the folds;
    ``model``       leave one model out (pooled);
    ``framework``   leave one framework out (pooled);
    ``batch128``    train on batch <= 128, test on batch 256;
    ``batch64``     train on batch <= 64, test on batch 128 and 256;
    ``length``      all rows of one (input, output) length pair held out, one fold
                    per pair (pooled).

Seeds change the random splits and each predictor's own randomness; the
deterministic protocols still differ across seeds through the predictor's seed.
For each (predictor, protocol, seed) the held-out predictions of all folds are
pooled and scored (:func:`score`); :attr:`Evaluation.table` averages the seeds.

Metrics: median and 90th-percentile absolute percentage error (APE, %), MAPE
(%), R^2 of log throughput, coverage of the band at ``level`` and its median
relative width ((upper - lower) / prediction; NaN = the predictor gives no band),
Spearman correlation between the reported confidence and the absolute
*percentage* error (relative, because throughputs span four decades and the
absolute error would mostly measure the magnitude), mean training time per fit,
and prediction latency for one query and for 10,000 queries, in-process.
"""

from __future__ import annotations

import inspect
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pandas as pd

from .curves import DEFAULT_BY, OPTIONAL_BY, VARYING_BY
from .errors import PerfmodelError, Problem, UnknownNameError, ValidationError

__all__ = [
    "PROTOCOLS",
    "METRIC_COLUMNS",
    "LATENCY_QUERIES",
    "Fold",
    "Evaluation",
    "config_key",
    "folds",
    "score",
    "evaluate",
    "to_markdown",
]

PROTOCOLS = ("random", "config", "hardware", "model", "framework", "batch128", "batch64", "length")
"""Hold-out protocols, see the module docstring."""

TEST_FRACTION = 0.2
LATENCY_QUERIES = 10_000
"""Size of the batched latency query."""

METRIC_COLUMNS = ("n_test", "median_ape_pct", "p90_ape_pct", "mape_pct", "r2_log", "coverage",
                  "median_rel_width", "spearman_conf_err", "train_s", "predict_1_ms", "predict_10k_s")
"""Metric columns of every evaluation table, in order."""


class _Predictor(Protocol):
    def fit(self, runs: pd.DataFrame, y: str = ...) -> Any: ...

    def predict(self, runs: pd.DataFrame, *, level: float = ...) -> pd.DataFrame: ...


Factory = Callable[[int], _Predictor]


@dataclass(frozen=True)
class Fold:
    """One train/test split: positional row indices into the runs table."""

    name: str
    train: np.ndarray
    test: np.ndarray


def config_key(runs: pd.DataFrame) -> list[str]:
    """The columns that identify a configuration (the curve key of :mod:`perfmodel.curves`).

    Parameters
    ----------
    runs
        Canonical runs table.

    Returns
    -------
    list of str
        :data:`~perfmodel.curves.DEFAULT_BY` plus the optional dtype/parallelism
        columns that carry at least one value (plus ``quantization`` when present), then the
        :data:`~perfmodel.curves.VARYING_BY` settings that take more than one value, as the Curves
        page groups them (so a sweep at two thread counts is two configurations on every page).
    """
    optional = list(OPTIONAL_BY)
    return (list(DEFAULT_BY) + [c for c in optional if c in runs.columns and runs[c].notna().any()]
            + [c for c in VARYING_BY if c in runs.columns and runs[c].nunique() > 1])


def _codes(runs: pd.DataFrame, cols: Sequence[str]) -> np.ndarray:
    """One integer per row, equal for rows with the same values in ``cols`` (NaN is a value)."""
    return runs.groupby(list(cols), dropna=False, sort=True).ngroup().to_numpy()


def _leave_one_out(runs: pd.DataFrame, col: str) -> list[Fold]:
    values = runs[col].astype("string").fillna("<NA>").to_numpy()
    out = []
    for v in sorted(set(values)):
        test = np.flatnonzero(values == v)
        train = np.flatnonzero(values != v)
        if len(train) and len(test):
            out.append(Fold(f"{col}={v}", train, test))
    return out


def folds(runs: pd.DataFrame, protocol: str, seed: int = 0) -> list[Fold]:
    """The train/test folds of one protocol.

    Parameters
    ----------
    runs
        Canonical runs table (positional indices are returned).
    protocol
        One of :data:`PROTOCOLS`.
    seed
        Seed of the random protocols (``random``, ``config``).

    Returns
    -------
    list of Fold
        Folds with non-empty train and test sets; test sets of one protocol never overlap.

    Raises
    ------
    UnknownNameError
        ``protocol`` is not one of :data:`PROTOCOLS`.
    ValidationError
        A column the protocol needs is missing, or the protocol yields no fold.
    """
    if protocol not in PROTOCOLS:
        raise UnknownNameError("evaluation protocol", protocol, PROTOCOLS)
    need = {"random": [], "config": config_key(runs), "hardware": ["hardware"], "model": ["model"],
            "framework": ["framework"], "batch128": ["batch_size"], "batch64": ["batch_size"],
            "length": ["input_len_tok", "output_len_tok"]}[protocol]
    missing = [c for c in need if c not in runs.columns]
    if missing:
        raise ValidationError(f"protocol {protocol!r} needs columns the runs table lacks",
                              [Problem("missing column", column=c) for c in missing])
    n = len(runs)
    rng = np.random.default_rng(seed)
    out: list[Fold]
    if protocol == "random":
        perm = rng.permutation(n)
        n_test = int(round(TEST_FRACTION * n))
        out = [Fold("random", np.sort(perm[n_test:]), np.sort(perm[:n_test]))]
    elif protocol == "config":
        codes = _codes(runs, need)
        groups = rng.permutation(codes.max() + 1 if n else 0)
        n_test = int(round(TEST_FRACTION * len(groups)))
        is_test = np.isin(codes, groups[:n_test])
        out = [Fold("config", np.flatnonzero(~is_test), np.flatnonzero(is_test))]
    elif protocol in ("hardware", "model", "framework"):
        out = _leave_one_out(runs, protocol)
    elif protocol in ("batch128", "batch64"):
        b = runs["batch_size"].to_numpy(dtype=float, na_value=np.nan)
        limit, test_values = (128.0, (256.0,)) if protocol == "batch128" else (64.0, (128.0, 256.0))
        out = [Fold(protocol, np.flatnonzero(b <= limit), np.flatnonzero(np.isin(b, test_values)))]
    else:
        codes = _codes(runs, need)
        out = [Fold(f"length#{c}", np.flatnonzero(codes != c), np.flatnonzero(codes == c))
               for c in np.unique(codes)]
    out = [f for f in out if len(f.train) and len(f.test)]
    if not out:
        raise ValidationError(f"protocol {protocol!r} gives no fold with both training and test rows on "
                              f"this data ({n} rows)")
    return out


def score(y_true: Any, pred: pd.DataFrame) -> dict[str, float]:
    """Accuracy, band and confidence metrics of held-out predictions.

    Parameters
    ----------
    y_true
        Measured throughput (tok/s), aligned with ``pred``.
    pred
        Predictions with ``pred_throughput_tok_s`` and optionally ``pred_lower``,
        ``pred_upper``, ``confidence``.

    Returns
    -------
    dict
        ``n_test``, ``median_ape_pct``, ``p90_ape_pct``, ``mape_pct``, ``r2_log``,
        ``coverage``, ``median_rel_width``, ``spearman_conf_err`` (NaN where undefined).
    """
    from scipy.stats import spearmanr

    y = np.asarray(y_true, dtype=float)
    p = pred["pred_throughput_tok_s"].to_numpy(dtype=float, na_value=np.nan)
    ok = np.isfinite(y) & (y > 0)
    y, p = y[ok], p[ok]
    # A missing or non-positive prediction is a 100% miss, not a skipped point.
    p_used = np.where(np.isfinite(p), p, 0.0)
    ape = np.abs(p_used - y) / y * 100.0
    out: dict[str, float] = {"n_test": float(len(y))}
    if not len(y):
        return {**out, **{k: math.nan for k in METRIC_COLUMNS[1:8]}}
    out["median_ape_pct"] = float(np.median(ape))
    out["p90_ape_pct"] = float(np.quantile(ape, 0.9))
    out["mape_pct"] = float(np.mean(ape))
    ly, lp = np.log(y), np.log(np.clip(p_used, 1e-9, None))
    ss_tot = float(np.sum((ly - ly.mean()) ** 2))
    out["r2_log"] = 1.0 - float(np.sum((ly - lp) ** 2)) / ss_tot if ss_tot > 0 else math.nan
    lo = _col(pred, "pred_lower")[ok]
    hi = _col(pred, "pred_upper")[ok]
    banded = np.isfinite(lo) & np.isfinite(hi)
    if banded.any():
        out["coverage"] = float(np.mean((y[banded] >= lo[banded]) & (y[banded] <= hi[banded])))
        width = (hi[banded] - lo[banded]) / np.where(p_used[banded] > 0, p_used[banded], np.nan)
        out["median_rel_width"] = float(np.nanmedian(width)) if np.isfinite(width).any() else math.nan
    else:
        out["coverage"] = out["median_rel_width"] = math.nan
    conf = _col(pred, "confidence")[ok]
    fin = np.isfinite(conf)
    if fin.sum() > 2 and np.ptp(conf[fin]) > 0 and np.ptp(ape[fin]) > 0:
        out["spearman_conf_err"] = float(spearmanr(conf[fin], ape[fin]).statistic)
    else:
        out["spearman_conf_err"] = math.nan
    return out


def _col(df: pd.DataFrame, name: str) -> np.ndarray:
    if name not in df.columns:
        return np.full(len(df), np.nan)
    return pd.to_numeric(df[name], errors="coerce").to_numpy(dtype=float, na_value=np.nan)


@dataclass(frozen=True)
class Evaluation:
    """The result of :func:`evaluate`.

    Attributes
    ----------
    table
        One row per (predictor, protocol): metrics averaged over seeds, plus
        ``n_seeds``, ``n_folds`` and the seed-to-seed standard deviation of the
        median and p90 APE (``*_sd``).
    per_seed
        One row per (predictor, protocol, seed) with the pooled metrics.
    predictions
        Every held-out prediction: ``predictor, protocol, seed, fold, row`` (position
        in the runs table), ``y_true`` and the predictor's output columns.
    """

    table: pd.DataFrame
    per_seed: pd.DataFrame
    predictions: pd.DataFrame


def _factory(name: str, options: Mapping[str, Any]) -> Factory:
    from .models import PREDICTORS, _load_all

    _load_all()
    if name not in PREDICTORS:
        raise UnknownNameError("predictor", name, sorted(PREDICTORS))
    cls = PREDICTORS[name]
    params = inspect.signature(cls).parameters
    seed_arg = next((a for a in ("seed", "random_state") if a in params), None)

    def make(seed: int) -> _Predictor:
        kw = dict(options)
        if seed_arg is not None:
            kw.setdefault(seed_arg, seed)
        return cls(**kw)

    return make


def _latency(model: _Predictor, queries: pd.DataFrame, level: float) -> tuple[float, float]:
    one = queries.iloc[:1]
    model.predict(one, level=level)  # warm caches (first-call imports, lazy state)
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        model.predict(one, level=level)
        times.append(time.perf_counter() - t0)
    idx = np.resize(np.arange(len(queries)), LATENCY_QUERIES)
    big = queries.iloc[idx].reset_index(drop=True)
    t0 = time.perf_counter()
    model.predict(big, level=level)
    return float(np.median(times) * 1e3), time.perf_counter() - t0


def _iter_jobs(names: Sequence[str], protocols: Sequence[str], seeds: Sequence[int]
               ) -> Iterator[tuple[str, str, int]]:
    for name in names:
        for protocol in protocols:
            for seed in seeds:
                yield name, protocol, seed


def evaluate(runs: pd.DataFrame, predictors: Sequence[str] | Mapping[str, Factory] | None = None,
             protocols: Sequence[str] | None = None, seeds: Sequence[int] = (0, 1, 2), *,
             y: str = "output_throughput_tok_s", level: float = 0.9,
             options: Mapping[str, Mapping[str, Any]] | None = None, measure_latency: bool = True,
             on_progress: Callable[[str], None] | None = None) -> Evaluation:
    """Fit and score predictors under hold-out protocols.

    Parameters
    ----------
    runs
        Canonical runs table; rows without a positive ``y`` are dropped first.
    predictors
        Names in :data:`perfmodel.models.base.PREDICTORS` (default: all of them),
        or a mapping name -> factory ``f(seed) -> unfitted predictor``.
    protocols
        Subset of :data:`PROTOCOLS` (default: all).
    seeds
        Seeds; each gives one pooled score per (predictor, protocol).
    y
        Throughput column to predict.
    level
        Nominal level of the prediction band scored as ``coverage``.
    options
        Per predictor name, keyword settings passed to its constructor.
    measure_latency
        Time one and 10,000 predictions on the first fold of each (predictor, protocol, seed).
    on_progress
        Called with a short line after every fitted fold.

    Returns
    -------
    Evaluation

    Raises
    ------
    UnknownNameError
        Unknown predictor or protocol.
    ValidationError
        No usable rows, or ``y`` missing, or a protocol yields no fold.
    PerfmodelError
        ``level`` outside (0, 1) or no seed given.
    """
    if y not in runs.columns:
        raise ValidationError("evaluate: the runs table has no throughput column to predict",
                              [Problem("missing column", column=y)])
    if not 0 < level < 1:
        raise PerfmodelError(f"evaluate: level must be in (0, 1), got {level!r}")
    if not len(seeds):
        raise PerfmodelError("evaluate: give at least one seed")
    protocols = list(PROTOCOLS if protocols is None else protocols)
    for p in protocols:
        if p not in PROTOCOLS:
            raise UnknownNameError("evaluation protocol", p, PROTOCOLS)
    yv = pd.to_numeric(runs[y], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    data = runs.loc[np.isfinite(yv) & (yv > 0)].reset_index(drop=True)
    if data.empty:
        raise ValidationError(f"evaluate: no row has a positive {y}")
    options = options or {}
    if predictors is None:
        from .models import PREDICTORS, _load_all

        _load_all()
        predictors = list(PREDICTORS)
    factories: dict[str, Factory] = (dict(predictors) if isinstance(predictors, Mapping)
                                     else {n: _factory(n, options.get(n, {})) for n in predictors})
    y_all = data[y].to_numpy(dtype=float)
    per_seed: list[dict[str, Any]] = []
    preds: list[pd.DataFrame] = []
    fold_cache: dict[tuple[str, int], list[Fold]] = {}
    # Every protocol's folds before any fit: one that gives none on this data had failed after the others'
    # minutes of training, which were lost.
    failed: list[str] = []
    for protocol in protocols:
        for seed in (seeds if protocol in ("random", "config") else seeds[:1]):
            try:
                fold_cache[(protocol, seed if protocol in ("random", "config") else 0)] = folds(data, protocol, seed)
            except ValidationError as exc:
                failed.append(exc.headline)
                break
    if failed:
        ok = [p for p in protocols if not any(f"protocol {p!r}" in f for f in failed)]
        raise ValidationError("evaluate: " + "; ".join(failed) + (
            f"; the others can run: {', '.join(ok)}" if ok else ""))
    for name, protocol, seed in _iter_jobs(list(factories), protocols, seeds):
        key = (protocol, seed if protocol in ("random", "config") else 0)
        train_s: list[float] = []
        lat = (math.nan, math.nan)
        parts = []
        for k, fold in enumerate(fold_cache[key]):
            model = factories[name](seed)
            t0 = time.perf_counter()
            model.fit(data.iloc[fold.train].reset_index(drop=True), y=y)
            train_s.append(time.perf_counter() - t0)
            test = data.iloc[fold.test].reset_index(drop=True)
            out = model.predict(test, level=level).reset_index(drop=True)
            if measure_latency and k == 0:
                lat = _latency(model, test, level)
            out.insert(0, "y_true", y_all[fold.test])
            out.insert(0, "row", fold.test)
            out.insert(0, "fold", fold.name)
            parts.append(out)
            if on_progress is not None:
                on_progress(f"{name} / {protocol} / seed {seed} / {fold.name}: "
                            f"trained in {train_s[-1]:.2f} s on {len(fold.train)} rows, "
                            f"tested on {len(fold.test)}")
        pooled = pd.concat(parts, ignore_index=True)
        row: dict[str, Any] = {"predictor": name, "protocol": protocol, "seed": seed,
                               "n_folds": len(parts), **score(pooled["y_true"], pooled),
                               "train_s": float(np.mean(train_s)), "predict_1_ms": lat[0],
                               "predict_10k_s": lat[1]}
        per_seed.append(row)
        pooled.insert(0, "seed", seed)
        pooled.insert(0, "protocol", protocol)
        pooled.insert(0, "predictor", name)
        preds.append(pooled)
    seed_table = pd.DataFrame(per_seed)
    return Evaluation(table=_aggregate(seed_table), per_seed=seed_table,
                      predictions=pd.concat(preds, ignore_index=True) if preds else pd.DataFrame())


def _aggregate(per_seed: pd.DataFrame) -> pd.DataFrame:
    if per_seed.empty:
        return pd.DataFrame(columns=["predictor", "protocol", "n_seeds", "n_folds", *METRIC_COLUMNS])
    g = per_seed.groupby(["predictor", "protocol"], sort=False)
    table = g[list(METRIC_COLUMNS)].mean()
    table.insert(0, "n_folds", g["n_folds"].first())
    table.insert(0, "n_seeds", g.size())
    # one seed has no spread to speak of: n/a, not 0.0
    several = table["n_seeds"] > 1
    table["median_ape_sd"] = g["median_ape_pct"].std(ddof=0).where(several)
    table["p90_ape_sd"] = g["p90_ape_pct"].std(ddof=0).where(several)
    return table.reset_index()


_FORMATS = {"n_test": "{:.0f}", "coverage": "{:.3f}", "median_rel_width": "{:.3f}", "r2_log": "{:.3f}",
            "spearman_conf_err": "{:+.2f}", "train_s": "{:.2f}", "predict_1_ms": "{:.2f}",
            "predict_10k_s": "{:.3f}", "n_seeds": "{:.0f}", "n_folds": "{:.0f}"}


def to_markdown(table: pd.DataFrame, columns: Sequence[str] | None = None) -> str:
    """A GitHub Markdown table of an evaluation table (NaN shown as ``n/a``).

    Parameters
    ----------
    table
        :attr:`Evaluation.table` (or any frame).
    columns
        Columns to show, in order (default: all).

    Returns
    -------
    str
    """
    cols = list(columns) if columns is not None else list(table.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for rec in table[cols].to_dict("records"):
        cells = []
        for c in cols:
            v = rec[c]
            if isinstance(v, float | np.floating):
                cells.append("n/a" if not math.isfinite(v) else _FORMATS.get(c, "{:.1f}").format(v))
            else:
                cells.append(str(v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
