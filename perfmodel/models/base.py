"""The predictor contract, the registry and JSON persistence helpers.

Every predictor follows the scikit-learn estimator contract: ``__init__``
stores keyword-only settings and does no work; :meth:`Predictor.fit` checks
the settings, learns state in attributes ending in ``_`` and returns ``self``;
using an unfitted predictor raises :class:`NotFittedError`.

:meth:`Predictor.predict` returns one row per query, index aligned, with the
columns :data:`PREDICTION_COLUMNS`: ``pred_throughput_tok_s`` (same throughput
definition as the training target), ``pred_lower`` / ``pred_upper`` (the band
at ``level``), ``confidence`` (0..1, higher = more trustworthy) and
``in_domain`` (bool). A query whose weights alone exceed the memory of its devices cannot run at all
(:func:`weights_over_memory`, :meth:`Predictor.cannot_run`): roofline-gbm's ``predict``, and every
predictor's through :func:`predict_with_latency`, give it NaN throughput, band and latencies, confidence 0
and ``in_domain`` False.

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
from collections.abc import Callable, Iterable, Mapping
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
    "prediction_table",
    "cannot_run_at_all",
    "RATIO_TOLERANCE",
    "heads_unsplit",
    "LEVELS",
    "METADATA_FILE",
    "FORMAT_VERSION",
    "DEFAULT_TARGET",
    "register_predictor",
    "register",
    "load_predictor",
    "check_level",
    "as_queries",
    "check_target",
    "TARGETS",
    "write_metadata",
    "read_metadata",
    "read_predictor_metadata",
    "to_jsonable",
    "MEMORY_REASON_PREFIX",
    "weights_over_memory",
    "mask_weights_over_memory",
    "cannot_run_reasons",
    "Reason",
    "unseen_reason",
    "engine_unsupported",
    "beyond_context",
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


class Reason(str):
    """One out-of-domain reason in words (a plain ``str`` everywhere it goes) that also says which check gave it
    (``kind``), so a page that states some checks itself (the What-if page: unseen names, the trained batch,
    length and device ranges) can leave those out by kind instead of by matching their words.

    Kinds: ``"unseen"`` (a hardware, framework or model no training row had), ``"batch_range"``,
    ``"length_range"``, ``"device_range"`` (the trained ranges over all rows), ``"family_devices"`` (device
    counts a hardware x framework x model was measured on), ``"combination"`` (a hardware, framework and model
    each trained, never together); ``""`` for the rest."""

    kind: str

    def __new__(cls, text: str, kind: str = "") -> Reason:
        obj = super().__new__(cls, text)
        obj.kind = kind
        return obj


def unseen_reason(column: str, value: object, seen: Iterable[str]) -> Reason:
    """``"framework 'vlm' is not in the training data"``, with the closest trained names where one is close
    (``"; did you mean vllm?"``): a misspelt framework, which the catalog does not check (frameworks are
    open-ended), had been answered as a framework never seen, without a word of the one meant."""
    import difflib

    close = difflib.get_close_matches(str(value).lower(), sorted({str(v) for v in seen}), n=2, cutoff=0.75)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    return Reason(f"{column} {str(value)!r} is not in the training data{hint}", "unseen")


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


TARGETS = ("output_throughput_tok_s", "total_throughput_tok_s")
"""The throughputs a predictor may learn (``fit(runs, y=...)``); a predictor may take fewer (``targets``)."""


def check_target(predictor: str, y: str, targets: tuple[str, ...] = TARGETS, why: str = "") -> str:
    """``y`` when it is one of ``targets``, else a :class:`~perfmodel.errors.ValidationError` naming the valid
    ones (``e2e_latency_s`` had been learnt as if a throughput, and every latency derived from it)."""
    from ..errors import ValidationError

    if y not in targets:
        raise ValidationError(f"{predictor}: cannot learn {y!r}: the target (y) must be "
                              + " or ".join(repr(t) for t in targets) + (f" ({why})" if why else ""))
    return y


def as_queries(runs: pd.DataFrame) -> pd.DataFrame:
    """A query or training table as every predictor reads it: hardware and model names resolved to their
    catalog keys and frameworks canonical (:func:`perfmodel.catalog.canonical_names`, so that ``"H100"``,
    ``"vLLM"`` and ``"meta-llama/Meta-Llama-3-8B"`` are the configuration the CLI and the store call
    ``h100-sxm``, ``vllm`` and ``llama-3-8b``), and one device where ``device_count`` is absent (as in a
    query CSV). The table itself when nothing changes.

    Raises
    ------
    UnknownNameError
        A hardware or model name is not in the catalog (its rows and column named).
    """
    from .. import catalog

    if not isinstance(runs, pd.DataFrame):
        raise PerfmodelError(f"expected a runs table (pandas DataFrame), got {type(runs).__name__}")
    out = catalog.canonical_names(runs)
    if "device_count" not in out.columns:
        out = out.assign(device_count=1)
    return out


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
    context_in_domain: ClassVar[bool] = False
    """The predictor's ``in_domain`` and domain reasons cover a request beyond the model's context
    (:func:`beyond_context`), so a prediction file's note need not say it again."""
    applies_cannot_run: ClassVar[bool] = False
    """True when :meth:`predict` itself gives the queries :meth:`cannot_run` names no prediction (and
    :meth:`predict_with_ttft_band` no TTFT): :func:`predict_with_latency` then checks them no second time."""

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

    def cannot_run(self, runs: pd.DataFrame) -> list[str | None]:
        """Why each query cannot run at all, or None where it can: :func:`weights_over_memory` of the
        query as this predictor reads it (a predictor that fills a query's dtype from a trained
        configuration checks the filled one). :func:`predict_with_latency` masks these rows
        (:func:`mask_weights_over_memory`) whichever the predictor; and :func:`heads_unsplit`, attention heads
        that do not split over the tensor-parallel devices (:func:`cannot_run_at_all`).

        Raises
        ------
        UnknownNameError
            A hardware or model name is not in the catalog.
        """
        return cannot_run_at_all(runs)

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


RATIO_TOLERANCE = 1.5
"""An input/output length ratio this factor beyond every trained one is noted (What-if page, ``perfmodel
predict``): how the time splits between prefill and decode then comes from the roofline alone."""

MEMORY_REASON_PREFIX = "cannot run: "
"""How every reason of :func:`weights_over_memory` begins, so a reader of a list of reasons can pick it out."""

_WEIGHT_WORDS = {0.5: "4-bit", 1.0: "8-bit", 2.0: "16-bit", 4.0: "32-bit"}
_WEIGHTS_MEMO: dict[tuple[Any, ...], tuple[tuple[Any, Any], tuple[float, float, float]]] = {}
"""(columns, names) -> ((hardware spec, model spec), (weight bytes, memory bytes per device, bytes per weight))."""


def _floats_of(col: pd.Series) -> np.ndarray:
    """A column as floats, NaN where it is no number (numeric columns without pandas' conversion)."""
    if pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col):
        return col.to_numpy(dtype=float, na_value=np.nan)
    return pd.to_numeric(col, errors="coerce").to_numpy(dtype=float)


def _name_key(v: object) -> object:
    # A blank cell (None, NaN, pd.NA) is one key however pandas spells it.
    return None if v is None or v is pd.NA or (isinstance(v, float) and v != v) else v


def weights_over_memory(runs: pd.DataFrame) -> list[str | None]:
    """Why each query cannot run at all: its weights alone exceed the memory of its devices.

    The weights are :func:`perfmodel.physics.roofline`'s ``weight_bytes`` (every parameter at the row's
    weight dtype: ``weight_dtype``, else a 4- or 8-bit ``quantization``, else the model's default); the
    memory is all of the devices' memory, ``memory_gb`` x ``device_count``. Both choices make the rule
    err towards "it runs", since a query it flags gets no prediction at all:

    - the raw memory, not the :data:`perfmodel.physics.KV_USABLE_FRACTION` (0.9) that sizes the KV cache:
      that fraction is a serving default (vLLM's ``gpu_memory_utilization``), not a physical limit, and real
      runs come close to it (LLM-Inference-Bench ran Llama-3-70B in 16-bit on 4 x A100-40GB with
      TensorRT-LLM, weights at 0.88 of 160 GB), so above 0.9 a run is cramped but possible; above 1.0 it is
      not (short of offloading weights to the host, which no predictor here models);
    - the memory in binary GB (:attr:`perfmodel.catalog.HardwareSpec.memory_bytes`, as every memory check
      reads it): the vendors' HBM figures are binary, so Llama-3-70B's 141.1e9 B of 16-bit weights fit
      one "141 GB" H200 (150.8e9 B), if barely.

    Parameters
    ----------
    runs
        Queries with ``hardware``, ``model`` and ``device_count`` (``weight_dtype``, ``quantization``
        optional), names the catalog knows.

    Returns
    -------
    list
        Per row, a sentence starting with :data:`MEMORY_REASON_PREFIX` that names the model, its weights
        in GB and bits, the devices, their memory and how many of them the weights alone need; None where
        the weights fit or the catalog lacks a figure.

    Raises
    ------
    UnknownNameError
        A hardware or model name is not in the catalog (row and column named).
    """
    from .. import catalog, physics

    n = len(runs)
    if not n or not {"hardware", "model", "device_count"} <= set(runs.columns):
        return [None] * n
    cols = [c for c in ("hardware", "model", "weight_dtype", "quantization") if c in runs.columns]
    if n > 64:
        # Large queries repeat few combinations: one key per combination, not per row.
        codes = runs.groupby(cols, dropna=False, sort=False).ngroup().to_numpy()
        _, at = np.unique(codes, return_index=True)
        uniq = [tuple(_name_key(runs[c].iat[i]) for c in cols) for i in at.tolist()]
        keys = [uniq[c] for c in codes.tolist()]
        first = {k: int(i) for k, i in zip(uniq, at.tolist(), strict=True)}
    else:
        keys = list(zip(*([_name_key(v) for v in runs[c].tolist()] for c in cols), strict=True))
        first = {}
        for i, k in enumerate(keys):
            first.setdefault(k, i)
    per: dict[tuple[object, ...], tuple[float, float, float]] = {}
    for k, i in first.items():
        try:
            specs = (catalog.resolve_hardware(str(k[0])), catalog.resolve_model(str(k[1])))
        except PerfmodelError:
            specs = None  # physics below names the row and column
        hit = _WEIGHTS_MEMO.get((tuple(cols), k))
        if specs is not None and hit is not None and hit[0][0] is specs[0] and hit[0][1] is specs[1]:
            per[k] = hit[1]  # the catalog entries are the same objects: its figures have not changed
            continue
        # physics' own rules for the dtype (weight_dtype, else quantization, else the model's default).
        probe = runs.iloc[[i]][cols]
        m, h = physics.model_specs(probe).iloc[0], physics.hardware_specs(probe).iloc[0]
        b = float(physics.dtype_bytes(probe, pd.Series([m], index=probe.index)).iloc[0])
        per[k] = (math.nan if m.params_b is None else m.params_b * 1e9 * b,
                  math.nan if h.memory_bytes is None else h.memory_bytes, b)
        if len(_WEIGHTS_MEMO) > 4096:  # a long-lived app meets few combinations; never let it grow unbounded
            _WEIGHTS_MEMO.clear()
        _WEIGHTS_MEMO[(tuple(cols), k)] = ((h, m), per[k])
    dev = pd.to_numeric(runs["device_count"], errors="coerce").to_numpy(dtype=float)
    out: list[str | None] = [None] * n
    wm = np.array([per[k][:2] for k in keys], dtype=float).reshape(n, 2)
    with np.errstate(invalid="ignore"):
        over = wm[:, 0] > wm[:, 1] * dev  # NaN (an unknown figure) is never a reason
    for i in np.flatnonzero(over).tolist():
        k, d = keys[i], dev[i]
        weights, memory, b = per[k]
        bits = _WEIGHT_WORDS.get(float(b), f"{b:g} bytes per parameter")
        least = math.ceil(weights / memory * (1 - 1e-12))
        # The memory as the vendor states it ("96 GB"); the weights in 1e9 B, never fewer than that reads.
        stated = memory * d / catalog.BYTES_PER_MEMORY_GB
        out[i] = (f"{MEMORY_REASON_PREFIX}{k[1]}'s weights, {weights / 1e9:,.0f} GB in {bits}, exceed the "
                  f"{stated:,.0f} GB of memory of {d:g} x {k[0]} (they alone need at least {least:g}): "
                  "it takes more devices, a smaller weight dtype or offloading, so no throughput is predicted")
    return out


STRICT_TP_FRAMEWORKS = frozenset({"vllm", "sglang", "tensorrt-llm", "tgi", "lmdeploy"})
"""Engines whose tensor parallelism needs the attention heads to split evenly over the TP devices (vLLM refuses
to start otherwise). llama.cpp and transformers split layers, not heads; DeepSpeed ran Qwen2-7B's 28 heads on 8
devices in LLM-Inference-Bench."""


def heads_unsplit(runs: pd.DataFrame) -> list[str | None]:
    """Why each query cannot run on an engine of :data:`STRICT_TP_FRAMEWORKS`: its model's attention heads do
    not split over its tensor-parallel devices (``tp_size``, else ``device_count`` / ``pp_size``, else
    ``device_count``), or None. Llama-3-8B's 32 heads on 3 H100s with vLLM had been predicted in domain
    (2,688 tok/s); the planner already refused it.

    Raises
    ------
    UnknownNameError
        A model name is not in the catalog.
    """
    from .. import catalog

    n = len(runs)
    if not n or not {"model", "framework", "device_count"} <= set(runs.columns):
        return [None] * n
    fw = ["" if _name_key(v) is None else str(v).lower() for v in runs["framework"].tolist()]
    strict = np.array([f in STRICT_TP_FRAMEWORKS for f in fw], dtype=bool)
    out: list[str | None] = [None] * n
    if not strict.any():
        return out

    def num(col: str) -> np.ndarray:
        return _floats_of(runs[col]) if col in runs.columns else np.full(n, np.nan)

    dev, pp = num("device_count"), num("pp_size")
    tp = num("tp_size")
    tp = np.where(np.isfinite(tp), tp, dev / np.where(np.isfinite(pp) & (pp > 0), pp, 1.0))
    heads: dict[str, int | None] = {}
    models = [str(v) for v in runs["model"].tolist()]
    for i in np.flatnonzero(strict & np.isfinite(tp) & (tp > 1)).tolist():
        m = models[i]
        if m not in heads:
            try:
                heads[m] = catalog.resolve_model(m).n_heads
            except PerfmodelError:
                heads[m] = None
        h = heads[m]
        if h and h % tp[i]:
            out[i] = (f"{MEMORY_REASON_PREFIX}{m}'s {h} attention heads do not split over {tp[i]:g} tensor-parallel "
                      f"devices ({fw[i]} needs a TP size that divides them)")
    return out


ENGINE_ONLY_ON: dict[str, frozenset[str]] = {
    "tensorrt-llm": frozenset({"cuda"}),
    "sambaflow": frozenset({"sambaflow"}),
}
"""Engines that run on one vendor's software platform only (:attr:`perfmodel.catalog.HardwareSpec.platform`,
lower-case): TensorRT-LLM on NVIDIA GPUs (CUDA; https://github.com/NVIDIA/TensorRT-LLM, "TensorRT LLM ... to
optimize inference on NVIDIA GPUs"), SambaFlow on SambaNova RDUs (https://docs.sambanova.ai)."""

PLATFORM_ONLY_RUNS: dict[str, frozenset[str]] = {"sambaflow": frozenset({"sambaflow"})}
"""Platforms that run their own engine only: a SambaNova RDU serves through SambaFlow / SambaStudio
(https://docs.sambanova.ai), not vLLM or llama.cpp."""

ENGINE_NOT_ON: dict[str, frozenset[str]] = {"llama.cpp": frozenset({"synapseai"})}
"""Platforms an engine has no backend for: llama.cpp's backends (CPU, Metal, CUDA, HIP, SYCL, Vulkan, CANN,
MUSA, OpenCL, ...; https://github.com/ggml-org/llama.cpp#supported-backends) include none for Intel Gaudi
(SynapseAI)."""


def engine_unsupported(runs: pd.DataFrame) -> list[str | None]:
    """Why each query's engine cannot run on its hardware (:data:`ENGINE_ONLY_ON`, :data:`PLATFORM_ONLY_RUNS`,
    :data:`ENGINE_NOT_ON`), or None (also for hardware the catalog does not know or gives no platform). TensorRT-LLM
    on an MI300X had been answered 1,050 tok/s in domain, llama.cpp on a Gaudi2 85 tok/s."""
    from .. import catalog

    n = len(runs)
    out: list[str | None] = [None] * n
    if not n or not {"hardware", "framework"} <= set(runs.columns):
        return out
    fw = ["" if _name_key(v) is None else str(v).lower() for v in runs["framework"].tolist()]
    hw = ["" if _name_key(v) is None else str(v) for v in runs["hardware"].tolist()]
    platforms: dict[str, str] = {}
    for i in range(n):
        f, h = fw[i], hw[i]
        if not f or not h:
            continue
        if h not in platforms:
            try:
                platforms[h] = str(catalog.resolve_hardware(h).platform or "").lower()
            except PerfmodelError:
                platforms[h] = ""
        p = platforms[h]
        if not p:
            continue
        only, closed, never = ENGINE_ONLY_ON.get(f), PLATFORM_ONLY_RUNS.get(p), ENGINE_NOT_ON.get(f, frozenset())
        if (only is not None and p not in only) or (closed is not None and f not in closed) or p in never:
            out[i] = (f"{MEMORY_REASON_PREFIX}{f} does not run on {h} ({p} platform)"
                      + (f": it runs on {', '.join(sorted(only))} only" if only is not None and p not in only
                         else f": {h} runs {', '.join(sorted(closed))} only" if closed is not None and f not in closed
                         else f": it has no backend for {p}"))
    return out


def beyond_context(runs: pd.DataFrame) -> list[str | None]:
    """Per query, its input + output tokens beyond its model's context in the catalog (``max_context``), in words,
    or None (also for a model the catalog does not know or gives no context). Not a reason the query cannot run:
    a server started with a longer ``max_model_len`` serves them (LLM-Inference-Bench ran BLOOM-7B1, OPT-6.7B and
    GPT-J-6B, 2,048-token models, at 2,048 + 2,048 tokens with vLLM on a GH200), but no default one does, and
    the predictors know nothing of what it costs: roofline-gbm puts such a query out of domain."""
    from .. import catalog

    n = len(runs)
    out: list[str | None] = [None] * n
    if not n or not {"model", "input_len_tok", "output_len_tok"} <= set(runs.columns):
        return out
    # plain lists: pandas' string and numeric conversions had cost a one-row query 1.3 ms
    models = ["" if _name_key(v) is None else str(v) for v in runs["model"].tolist()]
    total = _floats_of(runs["input_len_tok"]) + _floats_of(runs["output_len_tok"])
    limits: dict[str, Any] = {}
    for m in dict.fromkeys(models):  # once per model, not per row (10,000-row query files)
        try:
            limits[m] = catalog.resolve_model(m).max_context if m else None
        except PerfmodelError:
            limits[m] = None
    for i in range(n):
        limit = limits.get(models[i])
        if limit is not None and np.isfinite(total[i]) and total[i] > limit:
            out[i] = (f"input + output length {total[i]:,.0f} tokens exceed {models[i]}'s context of {limit:,} "
                      "tokens (max_context in the model catalog): a server started with its defaults refuses such "
                      "a request")
    return out


def cannot_run_at_all(runs: pd.DataFrame) -> list[str | None]:
    """Why each query cannot run: :func:`weights_over_memory`, else :func:`heads_unsplit`, else
    :func:`engine_unsupported`; None where it can."""
    return [next((r for r in reasons if r is not None), None)
            for reasons in zip(weights_over_memory(runs), heads_unsplit(runs), engine_unsupported(runs), strict=True)]


def cannot_run_reasons(predictor: Any, runs: pd.DataFrame) -> list[str | None]:
    """:meth:`Predictor.cannot_run` of ``runs`` for any predictor-like object, for the callers of
    ``predict`` (planner, monitor, report), which :func:`predict_with_latency` does not mask for them.

    Parameters
    ----------
    predictor
        A predictor; a stand-in without ``cannot_run`` (anything with a ``predict``) is judged by
        :func:`weights_over_memory` of the queries as given.
    runs
        Queries.

    Returns
    -------
    list
        Per row, why it cannot run (a sentence starting with :data:`MEMORY_REASON_PREFIX`), or None.

    Raises
    ------
    UnknownNameError
        A hardware or model name is not in the catalog.
    """
    method = getattr(predictor, "cannot_run", None)
    return list(method(runs)) if callable(method) else cannot_run_at_all(runs)


def mask_weights_over_memory(pred: pd.DataFrame, over: np.ndarray) -> pd.DataFrame:
    """``pred`` with the rows of configurations that cannot run (``over``, :func:`weights_over_memory`
    not None) set to NaN throughput, band and latencies, confidence 0 and ``in_domain`` False.

    Parameters
    ----------
    pred
        A prediction frame (:data:`PREDICTION_COLUMNS`, optionally :data:`LATENCY_COLUMNS`).
    over
        Boolean per row.

    Returns
    -------
    pandas.DataFrame
        A copy (``pred`` itself when no row is masked).
    """
    over = np.asarray(over, dtype=bool)
    if not over.any():
        return pred
    out = pred.copy()
    nan_cols = [c for c in (*PREDICTION_COLUMNS, *LATENCY_COLUMNS) if c in out.columns
                and c not in ("confidence", "in_domain")]
    out.loc[over, nan_cols] = np.nan
    if "confidence" in out.columns:
        out.loc[over, "confidence"] = 0.0
    if "in_domain" in out.columns:
        out.loc[over, "in_domain"] = False
    return out


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
    :data:`PREDICTION_COLUMNS` then :data:`LATENCY_COLUMNS`, index = ``runs.index``), with the rows of
    configurations that cannot run (:meth:`Predictor.cannot_run`) masked by
    :func:`mask_weights_over_memory`, whichever the predictor."""
    runs = as_queries(runs)
    if len(runs) == 0:
        return predictor.predict(runs, level=level).reindex(columns=[*PREDICTION_COLUMNS, *LATENCY_COLUMNS])
    pred, band = predictor.predict_with_ttft_band(runs, level=level)
    derived = derived_predictions(runs, pred, None if band is None else band[0],
                                  target=str(getattr(predictor, "y_", DEFAULT_TARGET)),
                                  ttft_band=None if band is None else band[1:])
    out = flag_nonpositive(pd.concat([pred, derived], axis=1))
    if predictor.applies_cannot_run:  # its NaN throughput left NaN latencies; it gave no TTFT either
        return out
    # Whatever the predictor: a configuration whose weights exceed its devices' memory has no throughput,
    # latency or TTFT (the baselines' own predict stays as published).
    over = np.array([r is not None for r in predictor.cannot_run(runs)], dtype=bool)
    return mask_weights_over_memory(out, over)


def prediction_table(predictor: Predictor, queries: pd.DataFrame, *, level: float = 0.9) -> pd.DataFrame:
    """The columns ``perfmodel predict`` adds to each query row (PRED.csv's), for a table of queries.

    :func:`predict_with_latency` (:data:`PREDICTION_COLUMNS` with ``level`` after ``pred_upper``: the band's
    level where there is a band, NaN where the predictor gives none; then :data:`LATENCY_COLUMNS`), ``note``
    (:func:`query_notes`) and ``domain_reason`` (:func:`domain_reason_column`): why a row is out of domain,
    empty inside it.

    Parameters
    ----------
    predictor
        A fitted predictor.
    queries
        Query rows (names as the catalog or the CLI reads them, :func:`as_queries`).
    level
        Nominal coverage of the band.

    Returns
    -------
    pandas.DataFrame
        Index = ``queries.index``.

    Raises
    ------
    ValidationError, UnknownNameError
        Bad queries (row and column named).
    """
    from .. import physics

    q = as_queries(queries).reset_index(drop=True)
    # a user's queries: a dtype the catalog does not know, or more parallelism than devices, are refused here as
    # in the CLI's file form (Python had read 'nonsense' as bf16)
    physics.check_query(q, columns=(*physics.QUERY_COLUMNS, "framework"), query=True)
    pred = predict_with_latency(predictor, q, level=level).reset_index(drop=True)
    out = pred.copy()
    # which band pred_lower/upper are; none where the predictor gives no band (the baselines, the hybrid)
    banded = pd.to_numeric(out["pred_lower"], errors="coerce").notna().to_numpy()
    out.insert(out.columns.get_loc("pred_upper") + 1, "level", np.where(banded, level, np.nan))
    # what the numbers alone do not say: a configuration that cannot run (a blank row), a request longer than
    # the model's context, a throughput <= 0 from a baseline far from its data
    out["note"] = query_notes(predictor, q, pred)
    out["domain_reason"] = domain_reason_column(predictor, q, out)
    out.index = queries.index
    return out


def _cramped_notes(runs: pd.DataFrame, blocked: list[str | None]) -> list[str]:
    """Per query that can run, :func:`perfmodel.physics.cramped_note` where its weights fill more than the
    serving default's share of the memory, else ``""``: Llama-3-70B in 16-bit on one H200 had been answered
    747 tok/s at batch 256 without a word, where the What-if page said it could not run as asked."""
    from .. import physics

    out = [""] * len(runs)
    if not len(runs) or not {"hardware", "model", "device_count"} <= set(runs.columns):
        return out
    try:
        roof = physics.roofline(runs)
    except PerfmodelError:
        return out
    w, mem = roof["weight_bytes"].to_numpy(dtype=float), roof["memory_bytes"].to_numpy(dtype=float)
    kv = roof["kv_fit_batch"].to_numpy(dtype=float)
    dev = pd.to_numeric(runs["device_count"], errors="coerce").to_numpy(dtype=float)
    for i in np.flatnonzero(physics.cramped(w, mem)):
        if blocked[i] is None:
            out[i] = physics.cramped_note(str(runs["model"].iloc[i]), str(runs["hardware"].iloc[i]), dev[i], w[i],
                                          mem[i], kv[i])
    return out


def domain_reason_column(predictor: Any, runs: pd.DataFrame, pred: pd.DataFrame) -> list[str]:
    """PRED.csv's ``domain_reason``: why each row of ``pred`` is out of domain, ``""`` inside it. The
    predictor's own ``domain_reasons`` (an unknown framework had read ``in_domain`` False with an empty note;
    the baselines' and the hybrid's rows had had no reason at all), a configuration that cannot run, and a
    throughput of zero or less (:func:`flag_nonpositive`)."""
    outside = ~pred["in_domain"].astype(bool).to_numpy()
    if not outside.any():
        return [""] * len(pred)
    method = getattr(predictor, "domain_reasons", None)
    reasons = [list(r) for r in method(runs)] if callable(method) else [[] for _ in range(len(pred))]
    blocked = cannot_run_reasons(predictor, runs)
    tp = pd.to_numeric(pred["pred_throughput_tok_s"], errors="coerce").to_numpy(dtype=float)
    col = []
    for i, r in enumerate(reasons):
        if not outside[i]:
            col.append("")
            continue
        if blocked[i] is not None and blocked[i] not in r:
            r.insert(0, str(blocked[i]))
        if np.isfinite(tp[i]) and tp[i] <= 0:
            r.append("the predicted throughput is <= 0")
        col.append("; ".join(r) or "no single reason: several near-misses")
    return col


def nonpositive_note(name: str = "") -> str:
    """Why a row with a throughput of zero or less is out of domain (:func:`flag_nonpositive`), naming the
    predictor where ``name`` is given; the CLI's note and the What-if page's reason (after "at batch 1, 2")."""
    who = f"the {name} predictor" if name else "the predictor"
    return (f"{who} gives a throughput <= 0 (a straight-line or tree fit far from its data): no run can be that, "
            "so it is out of its domain and has no latency")


NONPOSITIVE_NOTE = nonpositive_note()
""":func:`nonpositive_note` without a name."""


def flag_nonpositive(pred: pd.DataFrame) -> pd.DataFrame:
    """``pred`` with rows whose predicted throughput is zero or negative out of domain (``in_domain`` False)
    and without latencies, the throughput itself kept as the predictor gave it. The published linear
    baseline answered -885 tok/s for 4 x A100 at batch 1 (and 26 s of negative latency on the What-if page)
    with ``in_domain`` True.

    Parameters
    ----------
    pred
        :data:`PREDICTION_COLUMNS`, optionally :data:`LATENCY_COLUMNS`.

    Returns
    -------
    pandas.DataFrame
        A copy (``pred`` itself where no row is flagged).
    """
    tp = pd.to_numeric(pred.get("pred_throughput_tok_s"), errors="coerce")
    bad = (np.isfinite(tp) & (tp <= 0)).to_numpy(dtype=bool) if tp is not None else np.zeros(len(pred), bool)
    if not bad.any():
        return pred
    out = pred.copy()
    if "in_domain" in out.columns:
        out.loc[bad, "in_domain"] = False
    lat = [c for c in LATENCY_COLUMNS if c in out.columns]
    out.loc[bad, lat] = np.nan
    return out


def query_notes(predictor: Any, runs: pd.DataFrame, pred: pd.DataFrame) -> list[str]:
    """Per query, what a prediction file should say beside its numbers (``""`` where nothing): a configuration
    that cannot run (:meth:`Predictor.cannot_run`, its row left blank), requests longer than the model's
    context in the catalog (:func:`beyond_context`), and a throughput of zero or less (:data:`NONPOSITIVE_NOTE`). The CLI's blank rows
    and impossible numbers had come without a word, where the What-if page explains each.

    Parameters
    ----------
    predictor
        The predictor that made ``pred``.
    runs
        The queries (catalog keys in ``model``).
    pred
        :func:`predict_with_latency` of ``runs`` (same order).

    Returns
    -------
    list of str
    """
    blocked = cannot_run_reasons(predictor, runs)
    tp = pd.to_numeric(pred["pred_throughput_tok_s"], errors="coerce").to_numpy(dtype=float)
    context = [None] * len(runs) if getattr(predictor, "context_in_domain", False) else beyond_context(runs)
    nonpositive = nonpositive_note(str(getattr(predictor, "name", "") or ""))
    # what the predictor left out of a query (a setting of another engine: llama.cpp's n_batch on vLLM)
    ignored = predictor.ignored_notes(runs) if hasattr(predictor, "ignored_notes") else [None] * len(runs)
    cramp = _cramped_notes(runs, blocked)
    # a length ratio no training row had (the What-if page said so; predict had not)
    ratio = predictor.ratio_notes(runs) if hasattr(predictor, "ratio_notes") else [None] * len(runs)
    notes = []
    for i, why in enumerate(blocked):
        # a memory reason already says so ("cannot run: cannot run: llama-3-70b's weights ..." had been written)
        parts = ([why if str(why).startswith(MEMORY_REASON_PREFIX) else MEMORY_REASON_PREFIX + str(why)]
                 if why is not None else [])
        if context[i]:
            parts.append(str(context[i]))
        if np.isfinite(tp[i]) and tp[i] <= 0:
            parts.append(nonpositive)
        if ignored[i]:
            parts.append(str(ignored[i]))
        if cramp[i]:
            parts.append(cramp[i])
        if ratio[i]:
            parts.append(str(ratio[i]))
        notes.append("; ".join(parts))
    return notes
