"""Throughput predictors with a scikit-learn-style contract, persisted as JSON.

``PREDICTORS`` maps a name to its class; :func:`load_predictor` reads any saved
model. Modules register their predictors on import; :func:`_load_all` imports
the known ones (optional modules that are missing are skipped).
"""

from __future__ import annotations

import importlib

from .base import (
    LATENCY_COLUMNS,
    LEVELS,
    PREDICTION_COLUMNS,
    PREDICTORS,
    NotFittedError,
    Predictor,
    check_level,
    derived_predictions,
    load_predictor,
    predict_with_latency,
    prediction_frame,
    register_predictor,
)

__all__ = [
    "LATENCY_COLUMNS",
    "LEVELS",
    "PREDICTION_COLUMNS",
    "PREDICTORS",
    "NotFittedError",
    "Predictor",
    "check_level",
    "derived_predictions",
    "load_predictor",
    "predict_with_latency",
    "prediction_frame",
    "register_predictor",
    "get_predictor",
    "PREDICTOR_MODULES",
]

#: Modules that register predictors, imported on first registry use.
PREDICTOR_MODULES = ("roofline_gbm", "baselines", "hybrid")


def _load_all() -> None:
    for mod in PREDICTOR_MODULES:
        try:
            importlib.import_module(f"{__name__}.{mod}")
        except ModuleNotFoundError as exc:
            # A module not written yet (or an optional dependency absent) hides its predictors only.
            if exc.name not in (f"{__name__}.{mod}",):
                raise


def get_predictor(name: str, **settings: object) -> Predictor:
    """A new, unfitted predictor by registry name.

    Parameters
    ----------
    name
        ``roofline-gbm``, ... (see :data:`PREDICTORS` after loading).
    **settings
        Keyword settings for its constructor.

    Returns
    -------
    Predictor

    Raises
    ------
    UnknownNameError
        Unknown name (lists the known ones).
    PerfmodelError
        A setting the predictor does not take.
    """
    from ..errors import PerfmodelError, UnknownNameError

    _load_all()
    if name not in PREDICTORS:
        raise UnknownNameError("predictor", name, sorted(PREDICTORS))
    try:
        return PREDICTORS[name](**settings)
    except TypeError as exc:
        raise PerfmodelError(f"predictor {name!r}: {exc}") from None
