"""The predictor contract, the registry and JSON persistence helpers.

Every predictor follows the scikit-learn estimator contract: ``__init__``
stores keyword-only settings and does no work; :meth:`Predictor.fit` checks
the settings, learns state in attributes ending in ``_`` and returns ``self``;
using an unfitted predictor raises :class:`NotFittedError`.

:meth:`Predictor.predict` returns one row per query, index aligned, with the
columns :data:`PREDICTION_COLUMNS`: ``pred_throughput_tok_s`` (same throughput
definition as the training target), ``pred_lower`` / ``pred_upper`` (the band
at ``level``), ``confidence`` (0..1, higher = more trustworthy) and
``in_domain`` (bool).

Persistence is a directory holding ``metadata.json`` (``{"predictor": NAME,
"format_version": 1, "perfmodel_version": ..., "settings": {...}, "state":
{...}}``) and any model files a predictor needs, written in a text or
portable binary format (XGBoost ``Booster.save_model("*.json")``, numpy arrays
as JSON lists). Never pickle or joblib: a model file must be safe to load from
an untrusted source. :func:`load_predictor` dispatches on ``"predictor"``.
"""

from __future__ import annotations

import json
import math
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Self

import numpy as np
import pandas as pd

from ..errors import PerfmodelError, UnknownNameError

__all__ = [
    "NotFittedError",
    "Predictor",
    "PREDICTORS",
    "PREDICTION_COLUMNS",
    "ProgressCallback",
    "LATENCY_COLUMNS",
    "derived_predictions",
    "predict_with_latency",
    "LEVELS",
    "METADATA_FILE",
    "FORMAT_VERSION",
    "DEFAULT_TARGET",
    "register_predictor",
    "register",
    "load_predictor",
    "check_level",
    "write_metadata",
    "read_metadata",
    "read_predictor_metadata",
    "to_jsonable",
]

PREDICTION_COLUMNS = ("pred_throughput_tok_s", "pred_lower", "pred_upper", "confidence", "in_domain")

LATENCY_COLUMNS = ("pred_total_throughput_tok_s", "pred_e2e_latency_s", "pred_e2e_lower_s", "pred_e2e_upper_s",
                   "pred_ttft_s", "pred_ttft_lower_s", "pred_ttft_upper_s", "pred_tpot_s")
"""Columns :func:`derived_predictions` adds: total (input + output) throughput, end-to-end latency with
its band, time to first token and time per output token (NaN where the predictor has no TTFT model)."""
LEVELS = (0.8, 0.9, 0.95)
"""Nominal band levels every predictor is calibrated for (others are interpolated or refused)."""
ProgressCallback = Callable[[str, float], None]
"""``progress(stage, fraction)``: what a long ``fit`` is doing now (a few words) and the fraction of it done
(0..1, never decreasing, 1.0 once at the end); a predictor whose ``fit`` takes ``progress=`` calls it
between stages, so an app can show a progress bar and a CLI can print."""
METADATA_FILE = "metadata.json"
FORMAT_VERSION = 1
DEFAULT_TARGET = "output_throughput_tok_s"


class NotFittedError(PerfmodelError, ValueError):
    """A predictor was used (predict, save) before ``fit``."""


PREDICTORS: dict[str, type[Predictor]] = {}
"""Registry: predictor name (``metadata.json`` ``"predictor"``) -> class."""


def register_predictor(cls: type[Predictor]) -> type[Predictor]:
    """Class decorator adding ``cls`` to :data:`PREDICTORS` under ``cls.name``.

    Parameters
    ----------
    cls
        A :class:`Predictor` subclass with a unique ``name``.

    Returns
    -------
    type
        ``cls`` unchanged.

    Raises
    ------
    ValueError
        The name is empty or already taken by another class (a programming error).
    """
    name = getattr(cls, "name", "")
    if not name:
        raise ValueError(f"{cls.__name__} has no name")
    if name in PREDICTORS and PREDICTORS[name] is not cls:
        raise ValueError(f"predictor name {name!r} already registered by {PREDICTORS[name].__name__}")
    PREDICTORS[name] = cls
    return cls


register = register_predictor
"""Alias of :func:`register_predictor` (the decorator name the predictor modules use)."""


def check_level(level: float) -> float:
    """Validate a band level (0 < level < 1) and return it as float.

    Parameters
    ----------
    level
        Nominal coverage, e.g. 0.9.

    Returns
    -------
    float

    Raises
    ------
    PerfmodelError
        ``level`` is not a number strictly between 0 and 1.
    """
    try:
        v = float(level)
    except (TypeError, ValueError):
        raise PerfmodelError(f"level must be a number between 0 and 1 (e.g. 0.9), got {level!r}") from None
    if not (0.0 < v < 1.0):
        raise PerfmodelError(f"level must be strictly between 0 and 1 (e.g. 0.9), got {level!r}")
    return v


def to_jsonable(obj: Any) -> Any:
    """Convert numpy scalars/arrays, tuples and non-finite floats to plain JSON values.

    NaN and infinities become ``None``.
    """
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, (np.bool_, bool)):
        return bool(obj)
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        return f if math.isfinite(f) else None
    return obj


def write_metadata(path: str | os.PathLike[str], predictor: str, settings: Mapping[str, Any],
                   state: Mapping[str, Any]) -> Path:
    """Create ``path`` (a directory) and write ``metadata.json`` into it.

    Parameters
    ----------
    path
        Model directory (created, parents too).
    predictor
        Registry name.
    settings
        The constructor settings (JSON-able).
    state
        Learned state that fits in JSON.

    Returns
    -------
    Path
        The directory.

    Raises
    ------
    PerfmodelError
        The directory cannot be created or written, or ``path`` is a file.
    """
    from .. import __version__ as version

    d = Path(path)
    try:
        d.mkdir(parents=True, exist_ok=True)
        meta = {"predictor": predictor, "format_version": FORMAT_VERSION, "perfmodel_version": version,
                "settings": to_jsonable(settings), "state": to_jsonable(state)}
        (d / METADATA_FILE).write_text(json.dumps(meta, indent=1, allow_nan=False), encoding="utf-8")
    except OSError as exc:
        raise PerfmodelError(f"{d}: cannot write the model directory ({exc.strerror or exc})") from None
    return d


def read_metadata(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and check ``<path>/metadata.json``.

    Parameters
    ----------
    path
        A model directory written by :meth:`Predictor.save`.

    Returns
    -------
    dict
        With keys ``predictor``, ``format_version``, ``settings``, ``state``.

    Raises
    ------
    PerfmodelError
        The directory or file is missing, not JSON, or of an unsupported format version.
    """
    f = Path(path) / METADATA_FILE
    if not f.is_file():
        raise PerfmodelError(f"{path}: not a saved model (no {METADATA_FILE}); save one with "
                             f"`perfmodel train ... -o DIR` or Predictor.save(DIR)")
    try:
        meta = json.loads(f.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PerfmodelError(f"{f}: cannot read the model metadata ({exc})") from None
    if not isinstance(meta, dict) or "predictor" not in meta:
        raise PerfmodelError(f"{f}: field 'predictor' is missing; expected a perfmodel model metadata file")
    if meta.get("format_version") != FORMAT_VERSION:
        raise PerfmodelError(f"{f}: format_version {meta.get('format_version')!r} is not supported "
                             f"(this perfmodel reads {FORMAT_VERSION})")
    meta.setdefault("settings", {})
    meta.setdefault("state", {})
    return meta


def read_predictor_metadata(path: str | os.PathLike[str], name: str) -> tuple[Path, dict[str, Any]]:
    """Read ``<path>/metadata.json`` (:func:`read_metadata`) of a model that must be a ``name`` predictor.

    Parameters
    ----------
    path
        A model directory written by :meth:`Predictor.save`.
    name
        The registered name of the predictor the directory must hold.

    Returns
    -------
    tuple
        The directory as a :class:`~pathlib.Path` and the metadata.

    Raises
    ------
    PerfmodelError
        As :func:`read_metadata`, or the directory holds another predictor.
    """
    d = Path(path)
    meta = read_metadata(d)
    if meta["predictor"] != name:
        raise PerfmodelError(f"{d}: holds a {meta['predictor']!r} model, not {name!r}")
    return d, meta


class Predictor(ABC):
    """Base class of throughput predictors (scikit-learn style).

    Subclasses set ``name`` (registry key), take keyword-only settings in
    ``__init__`` (stored as attributes of the same name, no work done), and
    implement :meth:`fit`, :meth:`predict`, :meth:`save` and :meth:`load`.
    """

    name: ClassVar[str] = ""
    domain_range_factor: ClassVar[float] = 1.0
    """How far outside the trained range of batch and lengths a query stays in domain, as a factor: a
    value below ``min / factor`` or above ``max * factor`` makes it out of domain (1.0: any value outside
    the range; ``math.inf``: the range alone never does). What-if reasons name batches with it, so they
    agree with ``in_domain``."""

    @abstractmethod
    def fit(self, runs: pd.DataFrame, y: str = DEFAULT_TARGET) -> Self:
        """Learn from a runs table.

        Parameters
        ----------
        runs
            Canonical runs table (training rows).
        y
            Target column (a throughput in tok/s).

        Returns
        -------
        Self

        Raises
        ------
        PerfmodelError
            Invalid settings, missing columns or no usable rows.
        """

    @abstractmethod
    def predict(self, runs: pd.DataFrame, *, level: float = 0.9) -> pd.DataFrame:
        """Predict for every query row.

        Parameters
        ----------
        runs
            Queries with the canonical columns the predictor needs; measured
            columns are ignored.
        level
            Nominal coverage of the band.

        Returns
        -------
        pandas.DataFrame
            Columns :data:`PREDICTION_COLUMNS`, index = ``runs.index``.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        PerfmodelError
            Bad queries (the message names row and column).
        """

    @abstractmethod
    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the fitted predictor to directory ``path`` (JSON, never pickle).

        Raises
        ------
        NotFittedError
            Before ``fit``.
        """

    @classmethod
    @abstractmethod
    def load(cls, path: str | os.PathLike[str]) -> Predictor:
        """Read a predictor written by :meth:`save`.

        Raises
        ------
        PerfmodelError
            Missing or unreadable files, or a different predictor's directory.
        """

    def predict_ttft(self, runs: pd.DataFrame) -> np.ndarray | None:
        """Predicted time to first token (s) per query, or None when this predictor has no TTFT model
        (the default: only predictors trained on rows that measured TTFT have one)."""
        return None

    def predict_ttft_band(self, runs: pd.DataFrame, *, level: float = 0.9
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """:meth:`predict_ttft` with the lower and upper bounds of its band at ``level``, or None without
        a TTFT model; this default has no band (NaN bounds)."""
        t = self.predict_ttft(runs)
        if t is None:
            return None
        return t, np.full(len(t), np.nan), np.full(len(t), np.nan)

    def predict_with_ttft_band(self, runs: pd.DataFrame, *, level: float = 0.9
                               ) -> tuple[pd.DataFrame, tuple[np.ndarray, np.ndarray, np.ndarray] | None]:
        """:meth:`predict` and :meth:`predict_ttft_band` of the same queries; a predictor may override it
        to share the work the two have in common (roofline-gbm builds the query's features once)."""
        return self.predict(runs, level=level), self.predict_ttft_band(runs, level=level)

    # ------------------------------------------------------------------ helpers for subclasses

    def get_params(self) -> dict[str, Any]:
        """The constructor settings as a dict (scikit-learn's ``get_params``)."""
        import inspect

        sig = inspect.signature(type(self).__init__)
        return {p: getattr(self, p) for p in sig.parameters if p != "self"}

    def _check_fitted(self, attr: str = "n_train_") -> None:
        if not hasattr(self, attr):
            raise NotFittedError(f"this {type(self).__name__} ({self.name}) is not fitted yet; call "
                                 f"fit(runs) first or load a saved model")

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"


def load_predictor(path: str | os.PathLike[str]) -> Predictor:
    """Load any saved predictor, dispatching on ``metadata.json``'s ``"predictor"``.

    Parameters
    ----------
    path
        A model directory.

    Returns
    -------
    Predictor

    Raises
    ------
    PerfmodelError
        Not a model directory or unreadable metadata.
    UnknownNameError
        The predictor name is not registered (lists the known names).
    """
    from . import _load_all

    meta = read_metadata(path)
    _load_all()
    name = str(meta["predictor"])
    if name not in PREDICTORS:
        raise UnknownNameError("predictor", name, sorted(PREDICTORS),
                               hint=f"in {Path(path) / METADATA_FILE}")
    return PREDICTORS[name].load(path)


def _frame(index: pd.Index, pred: np.ndarray, lo: np.ndarray, hi: np.ndarray, conf: np.ndarray,
           in_domain: np.ndarray) -> pd.DataFrame:
    """Assemble a prediction frame with the contract's columns and dtypes."""
    return pd.DataFrame({
        "pred_throughput_tok_s": np.asarray(pred, dtype=float),
        "pred_lower": np.asarray(lo, dtype=float),
        "pred_upper": np.asarray(hi, dtype=float),
        "confidence": np.clip(np.asarray(conf, dtype=float), 0.0, 1.0),
        "in_domain": np.asarray(in_domain, dtype=bool),
    }, index=index)


prediction_frame = _frame
__all__ += ["prediction_frame"]


def derived_predictions(runs: pd.DataFrame, pred: pd.DataFrame, ttft: np.ndarray | None = None, *,
                        target: str = DEFAULT_TARGET,
                        ttft_band: tuple[np.ndarray, np.ndarray] | None = None) -> pd.DataFrame:
    """What follows from a predicted output throughput: total throughput, end-to-end latency, TTFT and TPOT.

    With ``N`` requests in flight (the batch of a static batch, the concurrency of a closed loop) each
    producing ``output_len_tok`` tokens, Little's law gives the mean end-to-end latency
    ``N x output_len / output throughput``; the total throughput counts the input tokens too,
    ``output throughput x (input + output) / output``. Both hold to within 1 % on every bundled sample
    run and exactly on LLM-Inference-Bench (whose latency columns are derived that way). The latency
    band is the throughput band inverted; the TTFT band is the TTFT model's own
    (:meth:`Predictor.predict_ttft_band`). TPOT is what the latency leaves after the first token:
    ``(e2e - TTFT) / (output_len - 1)``.

    Parameters
    ----------
    runs
        The queries (``input_len_tok``, ``output_len_tok``, ``batch_size``).
    pred
        :meth:`Predictor.predict`'s frame for them (same index).
    ttft
        Predicted time to first token per query (:meth:`Predictor.predict_ttft`), or None.
    target
        What ``pred`` predicts: ``output_throughput_tok_s``, ``total_throughput_tok_s`` or
        ``request_throughput_rps`` (converted to output tokens/s first); any other column gives NaN.
    ttft_band
        Lower and upper bounds of the TTFT per query, or None (NaN).

    Returns
    -------
    pandas.DataFrame
        Columns :data:`LATENCY_COLUMNS`, index = ``runs.index``; NaN where an input is missing, and
        TPOT NaN where the output is one token or the TTFT exceeds the latency.
    """
    def col(c: str) -> np.ndarray:
        return (pd.to_numeric(runs[c], errors="coerce").to_numpy(dtype=float) if c in runs.columns
                else np.full(len(runs), np.nan))

    ii, oo, n = col("input_len_tok"), col("output_len_tok"), col("batch_size")
    with np.errstate(divide="ignore", invalid="ignore"):
        to_output = {"output_throughput_tok_s": 1.0, "total_throughput_tok_s": oo / (ii + oo),
                     "request_throughput_rps": oo}.get(target, np.nan)
        y, lo, hi = (pred[c].to_numpy(dtype=float) * to_output for c in ("pred_throughput_tok_s", "pred_lower",
                                                                         "pred_upper"))
        e2e = n * oo / y
        t = np.full(len(runs), np.nan) if ttft is None else np.asarray(ttft, dtype=float)
        tpot = np.where((oo > 1) & (t < e2e), (e2e - t) / (oo - 1), np.nan)
        t_lo, t_hi = ((np.full(len(runs), np.nan), np.full(len(runs), np.nan)) if ttft_band is None
                      else (np.asarray(ttft_band[0], dtype=float), np.asarray(ttft_band[1], dtype=float)))
        return pd.DataFrame({"pred_total_throughput_tok_s": y * (ii + oo) / oo, "pred_e2e_latency_s": e2e,
                             "pred_e2e_lower_s": n * oo / hi, "pred_e2e_upper_s": n * oo / lo,
                             "pred_ttft_s": t, "pred_ttft_lower_s": t_lo, "pred_ttft_upper_s": t_hi,
                             "pred_tpot_s": tpot}, index=runs.index)


def predict_with_latency(predictor: Predictor, runs: pd.DataFrame, *, level: float = 0.9) -> pd.DataFrame:
    """:meth:`Predictor.predict` followed by :func:`derived_predictions` (columns
    :data:`PREDICTION_COLUMNS` then :data:`LATENCY_COLUMNS`, index = ``runs.index``)."""
    if len(runs) == 0:
        return predictor.predict(runs, level=level).reindex(columns=[*PREDICTION_COLUMNS, *LATENCY_COLUMNS])
    pred, band = predictor.predict_with_ttft_band(runs, level=level)
    derived = derived_predictions(runs, pred, None if band is None else band[0],
                                  target=str(getattr(predictor, "y_", DEFAULT_TARGET)),
                                  ttft_band=None if band is None else band[1:])
    return pd.concat([pred, derived], axis=1)
