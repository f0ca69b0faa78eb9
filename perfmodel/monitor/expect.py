"""Expected values for the fixed-threshold detector and the cold-start rule, from a curve or a predictor.

The threshold detector and the dynamic detectors' cold start judge a sample
against an expected value (:data:`perfmodel.monitor.detectors.Expected`: a
constant, or a callable of timestamps). This module turns the project's two
sources of expectations into one:

* a fitted saturation curve (:class:`perfmodel.curves.CurveFit`) evaluated at
  the current batch size (:func:`expectation_from_curve`), usually the curve of
  the stored configuration that matches the deployment
  (:func:`curve_for_query`);
* a trained predictor (:class:`perfmodel.models.base.Predictor`) asked about
  one query row: hardware, model, framework, lengths and batch size
  (:func:`expectation_from_predictor`).

A failed fit or a non-finite prediction raises rather than returning NaN: a
NaN expectation would silently disable the threshold detector. So does a query
whose weights exceed its devices' memory, saying so with the figures, whichever
the predictor (a baseline would otherwise expect a throughput of a deployment
that cannot exist).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..errors import PerfmodelError
from .detectors import Expected

if TYPE_CHECKING:
    from ..curves import CurveFit
    from ..models.base import Predictor

__all__ = [
    "QUERY_COLUMNS",
    "ExpectationError",
    "expectation_from_curve",
    "expectation_from_predictor",
    "matching_runs",
    "curve_for_query",
]

QUERY_COLUMNS = ("hardware", "model", "framework", "device_count", "input_len_tok", "output_len_tok")
"""Columns of a query that select a stored configuration (the batch size is the curve's x)."""
_NUMERIC = ("device_count", "input_len_tok", "output_len_tok")


class ExpectationError(PerfmodelError):
    """No usable expected value: no matching configuration, a failed fit or a non-finite prediction."""


def _positive(value: float, what: str) -> float:
    if not (math.isfinite(value) and value > 0):
        raise ExpectationError(f"{what} gave {value!r}, not a positive finite throughput; the threshold detector "
                               "needs one (give --expected METRIC=VALUE instead)")
    return value


def expectation_from_curve(fit: CurveFit, batch: float | Callable[[np.ndarray], Any]) -> Expected:
    """The expected throughput of a fitted curve at the current batch size.

    Parameters
    ----------
    fit
        A fitted saturation curve.
    batch
        The batch size (concurrency) of the deployment, or a callable of the
        sample timestamps (s) returning the batch size at each one (e.g. looked
        up from the stream's ``batch_size`` column).

    Returns
    -------
    float or callable
        A constant expectation for a constant batch; otherwise a callable of
        timestamps returning the curve at each sample's batch (NaN where the
        batch is unknown, which the detectors treat as "no expectation").

    Raises
    ------
    ExpectationError
        When the fit did not succeed, or the curve is not a positive number at ``batch``.
    """
    if not fit.success:
        raise ExpectationError(f"the curve fit failed ({fit.message}); it cannot give an expected value")
    if callable(batch):
        def at(t: np.ndarray) -> np.ndarray:
            b = np.asarray(batch(np.asarray(t, dtype="float64")), dtype="float64")
            out = np.full(b.shape, np.nan)
            ok = np.isfinite(b) & (b > 0)
            out[ok] = fit.predict(b[ok])
            return out

        return at
    b = float(batch)
    if not (math.isfinite(b) and b > 0):
        raise ExpectationError(f"batch size {batch!r} is not a positive number")
    return _positive(float(fit.predict(b)[0]), f"the {fit.shape} curve at batch {b:g}")


def expectation_from_predictor(predictor: Predictor, query_row: Mapping[str, Any], *,
                               level: float = 0.9) -> float:
    """The expected throughput a trained predictor gives for one query.

    Parameters
    ----------
    predictor
        A fitted (or loaded) predictor.
    query_row
        Canonical columns of the query: ``hardware``, ``model``, ``framework``,
        ``device_count``, ``input_len_tok``, ``output_len_tok``, ``batch_size``
        (catalog keys, as :func:`perfmodel.models.load_predictor`'s models expect).
    level
        Band level passed to ``predict`` (only the point prediction is used).

    Returns
    -------
    float
        ``pred_throughput_tok_s`` of the query (tok/s).

    Raises
    ------
    ExpectationError
        When the configuration cannot run (:func:`perfmodel.models.base.cannot_run_reasons`: its weights alone
        exceed the devices' memory; the message gives the figures), or the prediction is not a positive finite
        number.
    PerfmodelError
        From the predictor, for a bad query (the message names the column).
    """
    from ..models.base import cannot_run_reasons

    q = pd.DataFrame([dict(query_row)])
    what = f"predictor {getattr(predictor, 'name', 'model')!r} for {dict(query_row)}"
    # Asked before predicting: roofline-gbm would answer NaN, a baseline a throughput of a deployment that
    # cannot exist; either way the query (hardware, devices, dtype) is what is wrong.
    why = cannot_run_reasons(predictor, q)[0]
    if why is not None:
        raise ExpectationError(f"{what}: the configuration {why}; check the query's hardware and device count, "
                               "or give --expected METRIC=VALUE instead")
    pred = predictor.predict(q, level=level)
    value = float(pred["pred_throughput_tok_s"].iloc[0])
    return _positive(value, what)


def matching_runs(runs: pd.DataFrame, query: Mapping[str, Any], *, source: str = "runs") -> pd.DataFrame:
    """Rows of a runs table matching the given :data:`QUERY_COLUMNS` of a query.

    Keys missing from ``query`` (or ``None``) match anything. Lengths and
    device counts compare numerically, names exactly.

    Parameters
    ----------
    runs
        Canonical runs table.
    query
        Column -> wanted value.
    source
        Name of the table for messages (a dataset reference).

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    ExpectationError
        When a queried column is missing or nothing matches (the message lists
        the values present for the first key that filtered everything out).
    """
    mask = np.ones(len(runs), dtype=bool)
    for col in QUERY_COLUMNS:
        want = query.get(col)
        if want is None:
            continue
        if col not in runs.columns:
            raise ExpectationError(f"{source}: no column {col!r} to match the query's {col}={want!r}")
        if col in _NUMERIC:
            vals = pd.to_numeric(runs[col], errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
            m = np.isclose(vals, float(want))
        else:
            m = (runs[col].astype("string") == str(want)).fillna(False).to_numpy(dtype=bool)
        if not (mask & m).any():
            present = sorted({str(v) for v in runs.loc[mask, col].dropna().unique()})[:20]
            raise ExpectationError(f"{source}: no run with {col}={want!r} among the runs matching the other keys; "
                                   f"present: {', '.join(present) or 'none'}")
        mask &= m
    return runs.loc[mask]


def curve_for_query(runs: pd.DataFrame, query: Mapping[str, Any], *, y: str = "output_throughput_tok_s",
                    source: str = "runs") -> CurveFit:
    """Fit the saturation curve of the one stored configuration matching a query.

    Parameters
    ----------
    runs
        Canonical runs table (e.g. a stored dataset).
    query
        Column -> value for :data:`QUERY_COLUMNS` (``batch_size`` is ignored here).
    y
        Throughput column fitted against ``batch_size``.
    source
        Name of the table for messages.

    Returns
    -------
    CurveFit
        Fitted without intervals (only the centre is used as an expectation).

    Raises
    ------
    ExpectationError
        When nothing matches, or the matching runs hold several configurations
        (the message names the column that tells them apart and its values).
    """
    from ..curves import DEFAULT_BY, fit_curve

    sub = matching_runs(runs, query, source=source)
    if y not in sub.columns:
        raise ExpectationError(f"{source}: no column {y!r} to fit")
    for col in DEFAULT_BY:
        if col in sub.columns and sub[col].nunique(dropna=True) > 1:
            vals = sorted(str(v) for v in sub[col].dropna().unique())[:10]
            raise ExpectationError(f"{source}: {len(sub)} matching runs span several configurations; give "
                                   f"{col} (one of: {', '.join(vals)})")
    return fit_curve(sub["batch_size"].to_numpy(dtype="float64", na_value=np.nan),
                     sub[y].to_numpy(dtype="float64", na_value=np.nan), intervals="none")
