"""SHAP attributions of gradient-boosted throughput models, and feature-set comparisons.

Attribution
    :func:`fit_gbdt` trains the explainable learner (XGBoost on log throughput,
    so a SHAP value ``phi`` is a multiplicative factor ``exp(phi)`` on the
    throughput); :func:`tree_model` wraps a saved or fitted predictor instead
    (``xgboost``: output in tok/s; ``roofline-gbm``: output = log efficiency,
    measured / roofline bound). :func:`explain` computes exact TreeSHAP values
    on a stated sample of rows and checks additivity (values + base value =
    model output, within :data:`ADDITIVITY_TOL` x max(1, |output|));
    :meth:`Explanation.importance` gives the global mean |SHAP|,
    :meth:`Explanation.dependence` the dependence data of one feature coloured
    by a second, :func:`waterfall` the attribution of one what-if point and
    :func:`interactions` the strongest pairs on a small stated sample.
    Explanations and interaction tables are cached on disk under
    ``<home>/explain/`` keyed by model id + data hash, so a page serves a
    repeated request from the cache.

Feature kinds (:func:`feature_kind`)
    ``physical`` (catalog quantities, :data:`perfmodel.features.PHYSICAL`),
    ``framework`` (``fw_*`` server metrics), ``identity`` (one-hot names),
    ``workload`` (raw lengths/batch, derived terms and the settings of
    :data:`perfmodel.curves.VARYING_BY`) and ``other``.

Feature-set comparison
    :func:`compare_feature_sets` trains the same learners (``gbdt``:
    XGBoost on log throughput; ``poly``: degree-2 polynomial ridge regression on
    standardised signed-log features, scikit-learn ``PolynomialFeatures`` +
    ``Ridge``) on each feature set under a protocol (``random`` 80/20 split,
    ``transfer-framework`` / ``transfer-hardware``: leave one framework /
    accelerator out, pooled) and reports R^2 (throughput and log throughput),
    MAPE, median APE, the dominant features and whether the ranking agrees with
    hardware principles (:func:`physics_agreement`). :func:`transfer_test`
    puts the random and transfer scores side by side with the drop.

A dataset without ``fw_*`` columns (for example LLM-Inference-Bench's
``All_results.csv``) has no framework-internal set: its rows say so in
``note`` and carry NaN scores rather than invented numbers.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .curves import VARYING_BY
from .errors import PerfmodelError, Problem, UnknownNameError, ValidationError
from .features import (
    DERIVED,
    IDENTITY_PREFIXES,
    LEGACY_IDENTITY_PREFIXES,
    PHYSICAL,
    RAW,
    build_features,
    feature_names,
)
from .schema import FRAMEWORK_PREFIX

__all__ = [
    "READ_TOGETHER_RHO",
    "ReadTogether",
    "KINDS",
    "ENGINES",
    "LEARNERS",
    "COMPARE_PROTOCOLS",
    "DEFAULT_SETS",
    "MEMORY_FEATURES",
    "ADDITIVITY_TOL",
    "DEFAULT_SAMPLE",
    "DEFAULT_INTERACTION_SAMPLE",
    "TreeModel",
    "Explanation",
    "Waterfall",
    "Interactions",
    "feature_kind",
    "require_shap",
    "fit_gbdt",
    "tree_model",
    "shap_values",
    "explain",
    "waterfall",
    "interactions",
    "physics_agreement",
    "compare_feature_sets",
    "transfer_test",
    "cache_dir",
    "data_hash",
]

KINDS = ("physical", "framework", "setting", "identity", "workload", "other")
"""Feature kinds, the order the legend uses."""
ENGINES = ("shap", "xgboost")
"""``shap``: ``shap.TreeExplainer`` (extra ``explain``); ``xgboost`` (default): XGBoost's own ``pred_contribs``,
the same exact TreeSHAP values (equal within 1e-4, tested) and 2x faster here (5,000 rows x 200 trees:
7.4 s against 17.7 s on the loaded 2-core machine, benchmarks/bench_explain.py)."""
LEARNERS = ("gbdt", "poly")
COMPARE_PROTOCOLS = ("random", "transfer-framework", "transfer-hardware")
DEFAULT_SETS = ("physical", "framework", "identity", "all")
MEMORY_FEATURES = frozenset({
    "kv_cache_bytes", "mem_bw_pressure_s", "weight_bytes_over_bw_s", "log_decode_step_s_min",
    "log_output_tok_s_max", "kv_read_share", "bytes_per_sm", "mem_fraction_used", "weight_bytes",
    "mem_bw_gbs", "log_e2e_s_min",
})
"""Physical features that measure memory traffic (KV cache, weights, bandwidth): in the memory-bound
decode regime hardware principles say these should lead the ranking."""
ADDITIVITY_TOL = 1e-4
"""Largest allowed |sum(SHAP) + base - output| / max(1, |output|)."""
DEFAULT_SAMPLE = 5000
"""Rows explained by default; larger datasets are sampled (the sample size is stated in the result)."""
DEFAULT_INTERACTION_SAMPLE = 64
"""Rows used for interaction values (TreeSHAP interactions cost ~features x the plain values)."""
TOP_FEATURES = 3
_PROTOCOL_FOLDS = {"random": "random", "transfer-framework": "framework", "transfer-hardware": "hardware"}
_TARGET = "output_throughput_tok_s"
_IMPORTANCE_ROWS = 500
_CLIP_LOG = math.log(10.0)
_NO_FRAMEWORK_NOTE = ("no framework-internal metrics (fw_* columns) in this dataset; nothing is fabricated: "
                      "sweeps that scrape a server's /metrics carry them")


# --------------------------------------------------------------------------- kinds, optional dependency

def feature_kind(name: str) -> str:
    """The kind of a feature, for colours and legends.

    Parameters
    ----------
    name
        A feature name of :mod:`perfmodel.features` (or ``prior_kind`` of roofline-gbm).

    Returns
    -------
    str
        One of :data:`KINDS`.
    """
    if name in PHYSICAL:
        return "physical"
    if name in VARYING_BY:  # a framework setting chosen before the run (threads, llama.cpp's n_batch), not a metric
        return "setting"
    if name.startswith(FRAMEWORK_PREFIX):
        return "framework"
    if any(name.startswith(p) for p in (*IDENTITY_PREFIXES.values(), *LEGACY_IDENTITY_PREFIXES.values())):
        return "identity"
    if name in RAW or name in DERIVED:
        return "workload"
    return "other"


def require_shap() -> Any:
    """Import ``shap`` or explain how to install it.

    Returns
    -------
    module
        The ``shap`` module.

    Raises
    ------
    PerfmodelError
        shap is not installed (the message gives ``pip install 'perfmodel[explain]'``
        and the ``engine="xgboost"`` alternative).
    """
    try:
        import shap
    except ImportError:
        raise PerfmodelError("SHAP attributions with engine 'shap' need the shap package: "
                             "pip install 'perfmodel[explain]' (or use engine 'xgboost', XGBoost's own "
                             "exact TreeSHAP, which needs nothing extra)") from None
    return shap


def cache_dir() -> Path:
    """Where explanations and fitted explain models are cached: ``<home>/explain``.

    Returns
    -------
    Path
    """
    from .config import home_dir

    return home_dir() / "explain"


def data_hash(x: np.ndarray | pd.DataFrame, *extra: object) -> str:
    """A content hash of a design matrix (values, shape, column names) and extra key parts.

    Parameters
    ----------
    x
        The matrix or frame.
    *extra
        Further parts of the key (settings), hashed through ``repr``.

    Returns
    -------
    str
        40 hex digits.
    """
    h = hashlib.sha1()
    if isinstance(x, pd.DataFrame):
        h.update(json.dumps([str(c) for c in x.columns]).encode())
        x = x.to_numpy(dtype=float, na_value=np.nan)
    arr = np.ascontiguousarray(np.asarray(x, dtype=np.float64))
    h.update(repr(arr.shape).encode())
    h.update(arr.tobytes())
    for e in extra:
        h.update(repr(e).encode())
    return h.hexdigest()


# --------------------------------------------------------------------------- the explainable model

@dataclass(frozen=True)
class TreeModel:
    """A single-output gradient-boosted model with what explaining it needs.

    Attributes
    ----------
    booster
        The ``xgboost.Booster``.
    feature_names
        Its input columns, in order.
    output
        What the model's raw output (margin) is, in words with units.
    log_output
        The output is a natural log, so ``exp(SHAP)`` is a multiplicative factor.
    model_id
        Content hash of the booster and feature names (the cache key).
    design
        ``runs -> float matrix`` in :attr:`feature_names` order.
    description
        Where the model came from (a directory, or the data and settings it was fitted on).
    """

    booster: Any
    feature_names: tuple[str, ...]
    output: str
    log_output: bool
    model_id: str
    design: Callable[[pd.DataFrame], np.ndarray] = field(repr=False, compare=False)
    description: str = ""

    @property
    def kinds(self) -> tuple[str, ...]:
        """:func:`feature_kind` of every feature."""
        return tuple(feature_kind(n) for n in self.feature_names)

    def margin(self, x: np.ndarray) -> np.ndarray:
        """The raw model output for a design matrix.

        Parameters
        ----------
        x
            Matrix in :attr:`feature_names` order.

        Returns
        -------
        numpy.ndarray
        """
        import xgboost as xgb

        return np.asarray(self.booster.predict(xgb.DMatrix(x, missing=np.nan), output_margin=True), dtype=float)


def _booster_id(booster: Any, names: Sequence[str]) -> str:
    h = hashlib.sha1(bytes(booster.save_raw(raw_format="ubj")))
    h.update(json.dumps(list(names)).encode())
    return h.hexdigest()


def _xgb_params(max_depth: int, learning_rate: float, seed: int, n_jobs: int) -> dict[str, Any]:
    return {"objective": "reg:squarederror", "max_depth": max_depth, "eta": learning_rate, "seed": seed,
            "nthread": n_jobs, "tree_method": "hist", "min_child_weight": 2.0, "verbosity": 0}


def _positive_target(runs: pd.DataFrame, y: str, what: str) -> np.ndarray:
    if y not in runs.columns:
        raise ValidationError(f"{what}: the runs table has no throughput column to learn",
                              [Problem("missing column", column=y)])
    v = pd.to_numeric(runs[y], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    ok = np.isfinite(v) & (v > 0)
    if ok.sum() < 2:
        raise ValidationError(f"{what}: fewer than 2 rows have a positive {y}; nothing to learn from")
    return v


def _check_settings(n_estimators: int, max_depth: int, learning_rate: float) -> None:
    problems = []
    for name, v in (("n_estimators", n_estimators), ("max_depth", max_depth)):
        if not isinstance(v, int | np.integer) or isinstance(v, bool) or v < 1:
            problems.append(Problem(f"must be an integer >= 1, got {v!r}", column=name))
    if not isinstance(learning_rate, int | float) or not 0 < learning_rate <= 1:
        problems.append(Problem(f"must be in (0, 1], got {learning_rate!r}", column="learning_rate"))
    if problems:
        raise ValidationError("invalid gradient-boosting settings:", problems)


def fit_gbdt(runs: pd.DataFrame, features: str = "all", *, y: str = _TARGET, n_estimators: int = 200,
             max_depth: int = 5, learning_rate: float = 0.1, seed: int = 0, n_jobs: int = 1,
             cache: bool = False) -> TreeModel:
    """Fit the explainable learner: XGBoost on log throughput over a feature set.

    Parameters
    ----------
    runs
        Canonical runs table (rows without a positive finite ``y`` are ignored).
    features
        Feature set of :mod:`perfmodel.features` (``physical``, ``all``, ``raw+physical``...).
    y
        Throughput column.
    n_estimators, max_depth, learning_rate
        Boosting rounds, tree depth (5 by default: exact TreeSHAP costs ~leaves x depth^2 per
        tree and row, and depth 5 keeps 5,000 rows x 200 trees within seconds), shrinkage.
    seed, n_jobs
        XGBoost seed and threads.
    cache
        Keep the fitted booster (XGBoost JSON) under :func:`cache_dir` keyed by the data and
        settings, and reuse it next time.

    Returns
    -------
    TreeModel
        Output = log throughput (ln tok/s).

    Raises
    ------
    ValidationError
        ``y`` missing or fewer than 2 usable rows, a feature set that yields no column, invalid
        settings, or invalid query columns (row and column named).
    PerfmodelError
        Unknown feature set.
    """
    import xgboost as xgb

    _check_settings(n_estimators, max_depth, learning_rate)
    target = _positive_target(runs, y, "fit_gbdt")
    ok = np.isfinite(target) & (target > 0)
    data = runs.loc[ok]
    names = feature_names(data, features)
    if not names:
        raise ValidationError(f"feature set {features!r} has no column on this data"
                              + (f" ({_NO_FRAMEWORK_NOTE})" if "framework" in features else ""))
    x = build_features(data, names=names).to_numpy(dtype=float, na_value=np.nan)
    ly = np.log(target[ok])
    settings = (n_estimators, max_depth, learning_rate, seed)
    path = cache_dir() / "models" / f"gbdt-{data_hash(x, ly, names, settings)}.json"
    booster = None
    if cache and path.is_file():
        booster = xgb.Booster()
        try:
            booster.load_model(str(path))
        except xgb.core.XGBoostError:
            booster = None  # a damaged cache file is refitted, not fatal
    if booster is None:
        booster = xgb.train(_xgb_params(max_depth, learning_rate, seed, n_jobs),
                            xgb.DMatrix(x, label=ly, missing=np.nan), num_boost_round=n_estimators)
        if cache:
            path.parent.mkdir(parents=True, exist_ok=True)
            booster.save_model(str(path))
    booster.set_param({"nthread": n_jobs})
    cols = list(names)
    return TreeModel(
        booster=booster, feature_names=tuple(cols), output="log throughput, ln(tok/s) of " + y, log_output=True,
        model_id=_booster_id(booster, cols),
        design=lambda r: build_features(r, names=cols).to_numpy(dtype=float, na_value=np.nan),
        description=f"XGBoost, {n_estimators} trees of depth {max_depth}, on {int(ok.sum())} rows, "
                    f"feature set {features!r}")


def tree_model(model: Any) -> TreeModel:
    """Wrap a fitted predictor (or a saved model directory) for explanation.

    Parameters
    ----------
    model
        A :class:`TreeModel` (returned as is), a fitted ``xgboost`` or ``roofline-gbm``
        predictor, or the path of a directory written by ``perfmodel train``.

    Returns
    -------
    TreeModel

    Raises
    ------
    PerfmodelError
        Not a directory of a saved model, or a predictor that is not a single-output
        gradient-boosted model (linear, random forest and the ALA's three-output booster
        are not explained here), or not fitted.
    """
    if isinstance(model, TreeModel):
        return model
    if isinstance(model, str | os.PathLike):
        from .models import load_predictor

        path = str(model)
        model = load_predictor(model)
        where = f"model directory {path}"
    else:
        where = f"{type(model).__name__}"
    name = getattr(model, "name", "")
    if not hasattr(model, "booster_") or not hasattr(model, "feature_names_"):
        raise PerfmodelError(f"{where}: predictor {name or type(model).__name__!r} is not a fitted gradient-"
                             f"boosted model; explain takes 'xgboost' or 'roofline-gbm' models (or a dataset)")
    booster = model.booster_
    n_out = int(json.loads(booster.save_config())["learner"]["learner_model_param"].get("num_target", "1"))
    if n_out != 1:
        raise PerfmodelError(f"{where}: predictor {name!r} has a {n_out}-output booster (curve parameters); "
                             f"explain takes single-output models: 'xgboost', 'roofline-gbm', or a dataset")
    cols = [str(c) for c in model.feature_names_]
    if name == "roofline-gbm":
        names = cols + ["prior_kind"]
        output = "log efficiency, ln(measured / roofline bound)"
        log_output = True

        def design(r: pd.DataFrame) -> np.ndarray:
            return np.asarray(model._design(r)[0], dtype=float)
    elif name == "xgboost":
        names = cols
        output = f"throughput, tok/s of {getattr(model, 'y_', _TARGET)}"
        log_output = False

        def design(r: pd.DataFrame) -> np.ndarray:
            return np.asarray(model._design(r, fit=False)[0], dtype=float)
    else:
        names = cols
        output = "model output"
        log_output = False

        def design(r: pd.DataFrame) -> np.ndarray:
            return build_features(r, names=cols).to_numpy(dtype=float, na_value=np.nan)
    return TreeModel(booster=booster, feature_names=tuple(names), output=output, log_output=log_output,
                     model_id=_booster_id(booster, names), design=design, description=f"{name} ({where})")


# --------------------------------------------------------------------------- SHAP values

def shap_values(model: TreeModel, x: np.ndarray, *, engine: str = "xgboost") -> tuple[np.ndarray, float, np.ndarray]:
    """Exact TreeSHAP values of a design matrix.

    Parameters
    ----------
    model
        The model.
    x
        Matrix in ``model.feature_names`` order.
    engine
        One of :data:`ENGINES`.

    Returns
    -------
    (values, base_value, output)
        ``values`` of shape (rows, features), the base value (expected output) and the
        model output per row.

    Raises
    ------
    UnknownNameError
        Unknown engine.
    PerfmodelError
        ``engine="shap"`` without shap installed (install hint).
    """
    import xgboost as xgb

    if engine not in ENGINES:
        raise UnknownNameError("SHAP engine", engine, ENGINES)
    x = np.asarray(x, dtype=float)
    out = model.margin(x)
    if engine == "shap":
        shap = require_shap()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # shap's own version chatter, not the user's business
            explainer = shap.TreeExplainer(model.booster)
            vals = np.asarray(explainer.shap_values(x, check_additivity=False), dtype=float)
        base = float(np.ravel(explainer.expected_value)[0])
    else:
        contrib = np.asarray(model.booster.predict(xgb.DMatrix(x, missing=np.nan), pred_contribs=True),
                             dtype=float)
        vals, base = contrib[:, :-1], float(contrib[0, -1]) if len(contrib) else 0.0
    return vals.reshape(len(x), len(model.feature_names)), base, out


def _additivity(values: np.ndarray, base: float, out: np.ndarray) -> float:
    if not len(out):
        return 0.0
    err = np.abs(values.sum(axis=1) + base - out) / np.maximum(1.0, np.abs(out))
    return float(np.max(err))


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.array(a, copy=True)
    a.setflags(write=False)
    return a


READ_TOGETHER_RHO = 0.99
"""Spearman |ρ| at which :meth:`Explanation.read_together` counts two features as one ordering of the rows."""


@dataclass(frozen=True)
class ReadTogether:
    """Features whose attributions are one effect divided among them (:meth:`Explanation.read_together`).

    Attributes
    ----------
    features
        The group, the feature asked about first.
    min_rho
        The smallest Spearman |ρ| between two members (over the rows where both have a value).
    n_rows
        Rows explained.
    missing
        Member -> rows where it has no value (a CPU has no PCIe lanes), only for members missing somewhere:
        there the member carries something the others do not.
    """

    features: tuple[str, ...]
    min_rho: float
    n_rows: int
    missing: Mapping[str, int]


@dataclass(frozen=True)
class Explanation:
    """SHAP attributions of a model on a sample of rows.

    Attributes
    ----------
    feature_names, kinds
        Features and their :func:`feature_kind`.
    values
        SHAP values, shape (rows, features), read-only.
    base_value
        Expected model output (what the values are added to).
    data
        Feature values of the explained rows (same shape as ``values``).
    output
        Model output per row (= base + row sum of values within the additivity check).
    rows
        Positions of the explained rows in the table given to :func:`explain`.
    n_total, sample_size, seed
        Rows available, rows explained (a random sample when fewer), sampling seed.
    output_label, log_output
        What the output is; ``True`` when it is a natural log (``exp(value)`` is a factor).
    max_additivity_error, additivity_ok
        Largest relative additivity error and whether it is within :data:`ADDITIVITY_TOL`.
    model_id, data_hash, engine, elapsed_s, cached
        Cache key parts, engine, compute time of the values, and whether they came from the cache.
    """

    feature_names: tuple[str, ...]
    kinds: tuple[str, ...]
    values: np.ndarray
    base_value: float
    data: np.ndarray
    output: np.ndarray
    rows: np.ndarray
    n_total: int
    sample_size: int
    seed: int
    output_label: str
    log_output: bool
    max_additivity_error: float
    additivity_ok: bool
    model_id: str
    data_hash: str
    engine: str
    elapsed_s: float
    cached: bool = False

    @property
    def message(self) -> str:
        """One line saying what was explained and how."""
        sampled = (f"a random sample of {self.sample_size:,} of {self.n_total:,} rows (seed {self.seed})"
                   if self.sample_size < self.n_total else f"all {self.n_total:,} rows")
        check = "passed" if self.additivity_ok else "FAILED"
        return (f"TreeSHAP ({self.engine}) on {sampled}; output: {self.output_label}; additivity check "
                f"{check} (max relative error {self.max_additivity_error:.1e})"
                + ("; from the cache" if self.cached else f"; computed in {self.elapsed_s:.2f} s"))

    def importance(self, mask: np.ndarray | None = None) -> pd.DataFrame:
        """Global importance: mean |SHAP| per feature, largest first.

        Parameters
        ----------
        mask
            Boolean selection of the explained rows (a regime); all rows by default.

        Returns
        -------
        pandas.DataFrame
            ``feature, kind, mean_abs_shap, share`` (of the total), ``rank`` (1 = most important).
        """
        v = self.values if mask is None else self.values[np.asarray(mask, dtype=bool)]
        mean_abs = np.abs(v).mean(axis=0) if len(v) else np.zeros(len(self.feature_names))
        total = float(mean_abs.sum())
        df = pd.DataFrame({"feature": list(self.feature_names), "kind": list(self.kinds),
                           "mean_abs_shap": mean_abs,
                           "share": mean_abs / total if total > 0 else np.zeros_like(mean_abs)})
        df = df.sort_values("mean_abs_shap", ascending=False, kind="stable").reset_index(drop=True)
        df["rank"] = np.arange(1, len(df) + 1)
        return df

    def read_together(self, features: Sequence[str], *, min_rho: float = READ_TOGETHER_RHO,
                      min_rows: int = 10) -> list[ReadTogether]:
        """Groups of features that carry the same ordering of the explained rows, with one of ``features``.

        Trees split on whichever of several such features comes first, so SHAP divides one effect among them
        arbitrarily (the sample data's PCIe contention is batch / 16 on the GPU rows, and it outranked the
        batch size). A feature joins a group when its Spearman |ρ| with every member is at least ``min_rho``
        over the rows where both have a value (at least ``min_rows`` of them, neither constant there).

        Parameters
        ----------
        features
            The features to find companions for (e.g. the top of :meth:`importance`), in order.
        min_rho, min_rows
            The bar for "the same ordering".

        Returns
        -------
        list of ReadTogether
            One per group that holds one of ``features``, in the order of its first member among them.
        """
        frame = pd.DataFrame(self.data, columns=list(self.feature_names)).astype("float64")
        frame = frame.loc[:, frame.nunique(dropna=True) > 1]
        if frame.shape[1] < 2:
            return []
        rho = frame.corr(method="spearman", min_periods=min_rows).abs()
        groups: list[ReadTogether] = []
        seen: set[str] = set()
        for f in features:
            if f not in rho.index or f in seen:
                continue
            members = [f]
            for h in rho.loc[f].sort_values(ascending=False).index:  # closest first
                # with every member, not a chain (a ~ b and b ~ c with a and c at 0.8 is not one ordering)
                if h not in members and h not in seen and bool((rho.loc[members, h] >= min_rho).all()):
                    members.append(h)
            if len(members) < 2:
                continue
            seen.update(members)
            sub = rho.loc[members, members].to_numpy(dtype=float)
            missing = {m: int(frame[m].isna().sum()) for m in members if frame[m].isna().any()}
            groups.append(ReadTogether(features=tuple(members), min_rho=float(np.nanmin(sub)), n_rows=len(frame),
                                       missing=missing))
        return groups

    def _col(self, feature: str) -> int:
        try:
            return self.feature_names.index(feature)
        except ValueError:
            raise UnknownNameError("feature", feature, [f for f in self.feature_names if feature in f][:5]
                                   or list(self.feature_names[:5]),
                                   hint="the model was not trained on it") from None

    def dependence(self, feature: str, color: str | None = None) -> pd.DataFrame:
        """Dependence data: a feature's value against its SHAP value, coloured by a second feature.

        Parameters
        ----------
        feature
            The feature on the x axis.
        color
            The feature whose value colours the points (None: no colour column values, NaN).

        Returns
        -------
        pandas.DataFrame
            ``value, shap, color_value`` per explained row.

        Raises
        ------
        UnknownNameError
            A feature the model does not have.
        """
        j = self._col(feature)
        c = self.data[:, self._col(color)] if color is not None else np.full(len(self.data), np.nan)
        return pd.DataFrame({"value": self.data[:, j], "shap": self.values[:, j], "color_value": c})

    def to_frame(self) -> pd.DataFrame:
        """The SHAP values as a frame (one column per feature, ``row`` first)."""
        df = pd.DataFrame(self.values, columns=list(self.feature_names))
        df.insert(0, "row", self.rows)
        return df


def _save_npz(path: Path, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    # numeric and unicode arrays only: np.load(allow_pickle=False) reads them back, no pickle anywhere
    np.savez(tmp, **arrays, meta=np.array(json.dumps(meta)))
    os.replace(tmp, path)


def _load_npz(path: Path) -> tuple[dict[str, np.ndarray], dict[str, Any]] | None:
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files if k != "meta"}
            meta = json.loads(str(z["meta"]))
        return arrays, meta
    except (OSError, ValueError, KeyError):
        return None  # missing or damaged cache entry: recompute


def _sample(n: int, sample_size: int | None, seed: int) -> np.ndarray:
    if sample_size is not None and (not isinstance(sample_size, int | np.integer) or sample_size < 1):
        raise PerfmodelError(f"sample_size must be a positive integer, got {sample_size!r}")
    if sample_size is None or sample_size >= n:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=int(sample_size), replace=False))


def explain(model: Any, runs: pd.DataFrame, *, sample_size: int | None = DEFAULT_SAMPLE, seed: int = 0,
            engine: str = "xgboost", cache: bool = True) -> Explanation:
    """SHAP values of a model on (a stated sample of) a runs table.

    Parameters
    ----------
    model
        A :class:`TreeModel`, a fitted ``xgboost``/``roofline-gbm`` predictor or a model directory.
    runs
        Rows to explain (canonical columns; measured columns are ignored).
    sample_size
        Explain at most this many rows, drawn at random with ``seed`` (None: all rows).
    seed
        Sampling seed.
    engine
        One of :data:`ENGINES`.
    cache
        Read and write the result under :func:`cache_dir` (key: model id, data hash, engine).

    Returns
    -------
    Explanation

    Raises
    ------
    PerfmodelError
        Not an explainable model, bad ``sample_size``, empty ``runs``, or shap missing.
    ValidationError
        Invalid rows (row and column named).
    """
    tm = tree_model(model)
    if len(runs) == 0:
        raise PerfmodelError("explain: the runs table is empty; nothing to explain")
    rows = _sample(len(runs), sample_size, seed)
    x = np.asarray(tm.design(runs.iloc[rows]), dtype=float)
    dh = data_hash(x, tm.feature_names)
    path = cache_dir() / f"shap-{tm.model_id[:20]}-{dh[:20]}-{engine}.npz"
    if cache and path.is_file() and (hit := _load_npz(path)) is not None:
        arrays, meta = hit
        return _explanation(tm, arrays["values"], float(meta["base"]), x, arrays["output"], rows, len(runs),
                            seed, dh, engine, float(meta["elapsed_s"]), cached=True)
    t0 = time.perf_counter()
    values, base, out = shap_values(tm, x, engine=engine)
    elapsed = time.perf_counter() - t0
    if cache:
        _save_npz(path, {"values": values, "output": out}, {"base": base, "elapsed_s": elapsed})
    return _explanation(tm, values, base, x, out, rows, len(runs), seed, dh, engine, elapsed, cached=False)


def _explanation(tm: TreeModel, values: np.ndarray, base: float, x: np.ndarray, out: np.ndarray, rows: np.ndarray,
                 n_total: int, seed: int, dh: str, engine: str, elapsed: float, *, cached: bool) -> Explanation:
    err = _additivity(values, base, out)
    return Explanation(feature_names=tm.feature_names, kinds=tm.kinds, values=_readonly(values), base_value=base,
                       data=_readonly(x), output=_readonly(out), rows=_readonly(rows), n_total=n_total,
                       sample_size=len(rows), seed=seed, output_label=tm.output, log_output=tm.log_output,
                       max_additivity_error=err, additivity_ok=err <= ADDITIVITY_TOL, model_id=tm.model_id,
                       data_hash=dh, engine=engine, elapsed_s=elapsed, cached=cached)


# --------------------------------------------------------------------------- one point, interactions

@dataclass(frozen=True)
class Waterfall:
    """The attribution of one prediction, from the base value to the model output.

    Attributes
    ----------
    table
        ``feature, kind, value, shap, factor`` (``exp(shap)`` for log outputs, else NaN),
        largest |shap| first.
    base_value, output
        Start and end of the waterfall; ``output = base_value + table.shap.sum()``.
    output_label, log_output
        What the output is.
    prediction_tok_s
        The throughput the output stands for, where it is one (``exp(output)`` for a log-throughput
        model, the output for a tok/s model), else NaN (roofline-gbm's efficiency).
    additivity_error
        |sum + base - output| / max(1, |output|).
    query
        The query row as given.
    """

    table: pd.DataFrame
    base_value: float
    output: float
    output_label: str
    log_output: bool
    prediction_tok_s: float
    additivity_error: float
    query: dict[str, Any]

    def top(self, n: int = 10) -> pd.DataFrame:
        """The ``n`` largest contributions, the rest summed into one ``other (k features)`` row.

        Parameters
        ----------
        n
            Rows kept.

        Returns
        -------
        pandas.DataFrame
        """
        if len(self.table) <= n:
            return self.table
        head, rest = self.table.iloc[:n], self.table.iloc[n:]
        other = pd.DataFrame([{"feature": f"other ({len(rest)} features)", "kind": "other", "value": np.nan,
                               "shap": float(rest["shap"].sum()),
                               "factor": math.exp(float(rest["shap"].sum())) if self.log_output else np.nan}])
        return pd.concat([head, other], ignore_index=True)


def waterfall(model: Any, query: pd.DataFrame | dict[str, Any], *, engine: str = "xgboost") -> Waterfall:
    """The SHAP waterfall of one what-if point.

    Parameters
    ----------
    model
        A :class:`TreeModel`, fitted predictor or model directory.
    query
        One row with the canonical query columns (``hardware``, ``model``, ``framework``,
        ``device_count``, ``input_len_tok``, ``output_len_tok``, ``batch_size``), as a dict or a
        one-row frame.
    engine
        One of :data:`ENGINES`.

    Returns
    -------
    Waterfall

    Raises
    ------
    PerfmodelError
        Not exactly one query row, or not an explainable model.
    ValidationError, UnknownNameError
        An invalid value or unknown name in the query (column named).
    """
    tm = tree_model(model)
    q = pd.DataFrame([query]) if isinstance(query, dict) else query.reset_index(drop=True)
    if len(q) != 1:
        raise PerfmodelError(f"waterfall: give exactly one query row, got {len(q)}")
    x = np.asarray(tm.design(q), dtype=float)
    values, base, out = shap_values(tm, x, engine=engine)
    v = values[0]
    table = pd.DataFrame({"feature": list(tm.feature_names), "kind": list(tm.kinds), "value": x[0], "shap": v,
                          "factor": np.exp(v) if tm.log_output else np.full(len(v), np.nan)})
    table = table.iloc[np.argsort(-np.abs(v), kind="stable")].reset_index(drop=True)
    o = float(out[0])
    if tm.log_output and tm.output.startswith("log throughput"):
        pred = math.exp(o)
    elif not tm.log_output and tm.output.startswith("throughput"):
        pred = o
    else:
        pred = math.nan
    rec = {k: (v.item() if hasattr(v, "item") else v) for k, v in q.iloc[0].to_dict().items()}
    return Waterfall(table=table, base_value=base, output=o, output_label=tm.output, log_output=tm.log_output,
                     prediction_tok_s=pred, additivity_error=_additivity(values, base, out), query=rec)


@dataclass(frozen=True)
class Interactions:
    """Strength of the strongest feature pairs (mean |SHAP interaction value|, both halves summed).

    Attributes
    ----------
    table
        ``feature_a, kind_a, feature_b, kind_b, strength``, strongest first.
    sample_size, n_total, seed, elapsed_s, cached
        Rows used (a stated random sample), rows available, seed, compute time, cache hit.
    """

    table: pd.DataFrame
    sample_size: int
    n_total: int
    seed: int
    elapsed_s: float
    cached: bool = False

    @property
    def message(self) -> str:
        """One line saying on how many rows the interactions were computed."""
        return (f"SHAP interaction values on a random sample of {self.sample_size:,} of {self.n_total:,} rows "
                f"(seed {self.seed}): interactions cost about features x the plain values"
                + ("; from the cache" if self.cached else f"; computed in {self.elapsed_s:.2f} s"))


def interactions(model: Any, runs: pd.DataFrame, *, sample_size: int = DEFAULT_INTERACTION_SAMPLE,
                 top: int = 10, seed: int = 0, cache: bool = True) -> Interactions:
    """The strongest pairwise interactions on a stated sample (XGBoost's exact TreeSHAP interactions).

    Parameters
    ----------
    model
        A :class:`TreeModel`, fitted predictor or model directory.
    runs
        Rows to sample from.
    sample_size
        Rows used (interaction values are expensive; the result states the size).
    top
        Pairs returned.
    seed
        Sampling seed.
    cache
        Read and write the pair table under :func:`cache_dir`.

    Returns
    -------
    Interactions

    Raises
    ------
    PerfmodelError
        Empty table, bad sizes or not an explainable model.
    """
    import xgboost as xgb

    tm = tree_model(model)
    if len(runs) == 0:
        raise PerfmodelError("interactions: the runs table is empty")
    if not isinstance(top, int) or top < 1:
        raise PerfmodelError(f"interactions: top must be a positive integer, got {top!r}")
    rows = _sample(len(runs), sample_size, seed)
    x = np.asarray(tm.design(runs.iloc[rows]), dtype=float)
    path = cache_dir() / f"inter-{tm.model_id[:20]}-{data_hash(x, tm.feature_names)[:20]}.npz"
    strength: np.ndarray | None = None
    elapsed = 0.0
    cached = False
    if cache and path.is_file() and (hit := _load_npz(path)) is not None:
        strength, elapsed, cached = hit[0]["strength"], float(hit[1]["elapsed_s"]), True
    if strength is None:
        t0 = time.perf_counter()
        iv = np.asarray(tm.booster.predict(xgb.DMatrix(x, missing=np.nan), pred_interactions=True), dtype=float)
        strength = np.abs(iv[:, :-1, :-1]).mean(axis=0)
        elapsed = time.perf_counter() - t0
        if cache:
            _save_npz(path, {"strength": strength}, {"elapsed_s": elapsed})
    p = len(tm.feature_names)
    iu, ju = np.triu_indices(p, k=1)
    s = strength[iu, ju] + strength[ju, iu]
    order = np.argsort(-s, kind="stable")[:top]
    kinds = tm.kinds
    table = pd.DataFrame({"feature_a": [tm.feature_names[i] for i in iu[order]],
                          "kind_a": [kinds[i] for i in iu[order]],
                          "feature_b": [tm.feature_names[j] for j in ju[order]],
                          "kind_b": [kinds[j] for j in ju[order]], "strength": s[order]})
    return Interactions(table=table, sample_size=len(rows), n_total=len(runs), seed=seed, elapsed_s=elapsed,
                        cached=cached)


# --------------------------------------------------------------------------- physics agreement

def physics_agreement(importance: pd.DataFrame, *, top: int = TOP_FEATURES) -> str:
    """Whether a ranking agrees with hardware principles in the memory-bound decode regime.

    Parameters
    ----------
    importance
        ``feature`` and ``mean_abs_shap`` (or any importance column second), computed on the
        memory-bound rows (roofline ``bound == "memory"``).
    top
        How many leading features are looked at.

    Returns
    -------
    str
        ``"yes"`` when a memory-traffic feature (:data:`MEMORY_FEATURES`: KV-cache bytes,
        bandwidth pressure, weights over bandwidth...) is among the ``top`` features, ``"no"``
        when not, ``"n/a"`` when the set has no memory-traffic feature or no importance was
        measured.
    """
    if importance is None or importance.empty:
        return "n/a"
    feats = importance["feature"].astype(str).tolist()
    if not any(f in MEMORY_FEATURES for f in feats):
        return "n/a"
    col = "mean_abs_shap" if "mean_abs_shap" in importance.columns else importance.columns[1]
    ranked = importance.sort_values(col, ascending=False, kind="stable")
    if not (ranked[col].to_numpy(dtype=float) > 0).any():
        return "n/a"
    return "yes" if any(f in MEMORY_FEATURES for f in ranked["feature"].astype(str).head(top)) else "no"


# --------------------------------------------------------------------------- feature-set comparison

class _Poly:
    """Degree-2 polynomial ridge on standardised signed-log features (the reference analysis' polynomial)."""

    def __init__(self, seed: int) -> None:
        self.seed = seed

    @staticmethod
    def _slog(x: np.ndarray) -> np.ndarray:
        # physical quantities are multiplicative and span decades: a polynomial in their logs is a
        # product of power laws (the roofline's own form), a polynomial in raw bytes is not
        return np.sign(x) * np.log1p(np.abs(x))

    def fit(self, x: np.ndarray, ly: np.ndarray) -> _Poly:
        from sklearn.linear_model import Ridge
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import PolynomialFeatures, StandardScaler

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            med = np.nanmedian(x, axis=0) if len(x) else np.zeros(x.shape[1])
        self.fill_ = np.where(np.isfinite(med), med, 0.0)
        z = self._slog(np.where(np.isfinite(x), x, self.fill_))
        self.keep_ = np.ptp(z, axis=0) > 0 if len(z) else np.zeros(x.shape[1], dtype=bool)
        if not self.keep_.any():
            self.const_ = float(np.mean(ly))
            self.pipe_ = None
            return self
        self.pipe_ = make_pipeline(StandardScaler(), PolynomialFeatures(2, include_bias=False), StandardScaler(),
                                   Ridge(alpha=1.0))
        self.pipe_.fit(z[:, self.keep_], ly)
        return self

    def predict(self, x: np.ndarray) -> np.ndarray:
        if self.pipe_ is None:
            return np.full(len(x), self.const_)
        z = self._slog(np.where(np.isfinite(x), x, self.fill_))
        return np.asarray(self.pipe_.predict(z[:, self.keep_]), dtype=float)

    def importance(self, x: np.ndarray) -> np.ndarray:
        """Mean |change of the prediction| when one feature is set to its training median."""
        base = self.predict(x)
        out = np.zeros(x.shape[1])
        for j in np.flatnonzero(self.keep_):
            xj = x.copy()
            xj[:, j] = self.fill_[j]
            out[j] = float(np.mean(np.abs(self.predict(xj) - base)))
        return out


class _GBDT:
    def __init__(self, seed: int, n_estimators: int, max_depth: int) -> None:
        self.seed, self.n_estimators, self.max_depth = seed, n_estimators, max_depth

    def fit(self, x: np.ndarray, ly: np.ndarray) -> _GBDT:
        import xgboost as xgb

        self.booster_ = xgb.train(_xgb_params(self.max_depth, 0.1, self.seed, 1),
                                  xgb.DMatrix(x, label=ly, missing=np.nan), num_boost_round=self.n_estimators)
        return self

    def predict(self, x: np.ndarray) -> np.ndarray:
        import xgboost as xgb

        return np.asarray(self.booster_.predict(xgb.DMatrix(x, missing=np.nan)), dtype=float)

    def importance(self, x: np.ndarray) -> np.ndarray:
        import xgboost as xgb

        c = self.booster_.predict(xgb.DMatrix(x, missing=np.nan), pred_contribs=True)
        return np.abs(np.asarray(c, dtype=float)[:, :-1]).mean(axis=0)


def _learner(name: str, seed: int, n_estimators: int, max_depth: int) -> _GBDT | _Poly:
    return _GBDT(seed, n_estimators, max_depth) if name == "gbdt" else _Poly(seed)


def _r2(y: np.ndarray, p: np.ndarray) -> float:
    ok = np.isfinite(p)
    ss = float(np.sum((y - y.mean()) ** 2))
    return 1.0 - float(np.sum((y - np.where(ok, p, 0.0)) ** 2)) / ss if ss > 0 else math.nan


def _check_names(sets: Sequence[str], learners: Sequence[str], protocol: str) -> None:
    if protocol not in COMPARE_PROTOCOLS:
        raise UnknownNameError("comparison protocol", protocol, COMPARE_PROTOCOLS)
    for ln in learners:
        if ln not in LEARNERS:
            raise UnknownNameError("learner", ln, LEARNERS)
    if not sets:
        raise PerfmodelError("compare_feature_sets: give at least one feature set")


def _custom_folds(runs: pd.DataFrame, by: str, train_on: str, test_on: str) -> list[Any]:
    from .evaluate import Fold

    if by not in runs.columns:
        raise ValidationError("transfer test: the runs table lacks the column to split on",
                              [Problem("missing column", column=by)])
    values = runs[by].astype("string").fillna("<NA>").to_numpy()
    known = sorted(set(values))
    for v in (train_on, test_on):
        if v not in known:
            raise UnknownNameError(by, v, known, hint="values present in the data")
    return [Fold(f"{train_on}->{test_on}", np.flatnonzero(values == train_on), np.flatnonzero(values == test_on))]


def _compare(runs: pd.DataFrame, fold_list: Sequence[Any], protocol: str, sets: Sequence[str],
             learners: Sequence[str], *, y: str, seed: int, n_estimators: int, max_depth: int,
             on_progress: Callable[[str], None] | None) -> pd.DataFrame:
    from . import physics
    from .evaluate import score

    yv = runs[y].to_numpy(dtype=float, na_value=np.nan)
    memory = (physics.roofline(runs)["bound"] == "memory").fillna(False).to_numpy(dtype=bool)
    records: list[dict[str, Any]] = []
    for set_name in sets:
        names = feature_names(runs, set_name)
        x = build_features(runs, names=names).to_numpy(dtype=float, na_value=np.nan) if names else None
        for ln in learners:
            rec: dict[str, Any] = {"protocol": protocol, "set": set_name, "learner": ln, "n_features": len(names),
                                   "n_folds": len(fold_list)}
            if x is None:
                note = _NO_FRAMEWORK_NOTE if set_name == "framework" else f"feature set {set_name!r} is empty here"
                records.append({**rec, "n_test": 0, "r2": math.nan, "r2_log": math.nan, "mape_pct": math.nan,
                                "median_ape_pct": math.nan, "top_features": "", "physics_agrees": "n/a",
                                "fit_s": 0.0, "note": note})
                continue
            t0 = time.perf_counter()
            preds, truths = [], []
            imp_all = np.zeros(len(names))
            imp_mem = np.zeros(len(names))
            for fold in fold_list:
                ly = np.log(yv[fold.train])
                model = _learner(ln, seed, n_estimators, max_depth).fit(x[fold.train], ly)
                # a polynomial far outside its data explodes; clipping to a factor 10 beyond the training
                # range keeps one such row from deciding the pooled MAPE (trees never leave the range)
                lp = np.clip(model.predict(x[fold.test]), ly.min() - _CLIP_LOG, ly.max() + _CLIP_LOG)
                preds.append(np.exp(lp))
                truths.append(yv[fold.test])
                # importance on a bounded sample of the held-out rows: what the model relies on there
                pick = fold.test[_sample(len(fold.test), _IMPORTANCE_ROWS, seed)]
                w = len(fold.test)
                imp_all += model.importance(x[pick]) * w
                mem_pick = pick[memory[pick]]
                if len(mem_pick):
                    imp_mem += model.importance(x[mem_pick]) * len(mem_pick)
                if on_progress is not None:
                    on_progress(f"{protocol} / {set_name} / {ln} / {fold.name}: {len(fold.train)} train, "
                                f"{len(fold.test)} test rows")
            p, t = np.concatenate(preds), np.concatenate(truths)
            sc = score(t, pd.DataFrame({"pred_throughput_tok_s": p}))
            order = np.argsort(-imp_all, kind="stable")
            top = [names[i] for i in order[:TOP_FEATURES] if imp_all[i] > 0]
            agree = physics_agreement(pd.DataFrame({"feature": names, "mean_abs_shap": imp_mem}))
            records.append({**rec, "n_test": int(len(t)), "r2": _r2(t, p), "r2_log": sc["r2_log"],
                            "mape_pct": sc["mape_pct"], "median_ape_pct": sc["median_ape_pct"],
                            "top_features": ", ".join(top), "physics_agrees": agree,
                            "fit_s": time.perf_counter() - t0, "note": ""})
    return pd.DataFrame.from_records(records)


def _usable(runs: pd.DataFrame, y: str) -> pd.DataFrame:
    v = _positive_target(runs, y, "compare_feature_sets")
    return runs.loc[np.isfinite(v) & (v > 0)].reset_index(drop=True)


def compare_feature_sets(runs: pd.DataFrame, sets: Sequence[str] = DEFAULT_SETS,
                         learners: Sequence[str] = LEARNERS, protocol: str = "random", *,
                         y: str = _TARGET, seed: int = 0, n_estimators: int = 200, max_depth: int = 5,
                         on_progress: Callable[[str], None] | None = None) -> pd.DataFrame:
    """Train the same learners on each feature set and score them under one protocol.

    Parameters
    ----------
    runs
        Canonical runs table (rows without a positive ``y`` are dropped).
    sets
        Feature-set names of :mod:`perfmodel.features` (``physical``, ``framework``,
        ``identity``, ``all``, or ``+`` combinations).
    learners
        Subset of :data:`LEARNERS`: ``gbdt`` (XGBoost on log throughput) and ``poly``
        (degree-2 polynomial ridge on standardised signed-log features).
    protocol
        ``random`` (80/20), ``transfer-framework`` or ``transfer-hardware`` (leave one out, pooled).
    y
        Throughput column.
    seed
        Split and learner seed.
    n_estimators, max_depth
        GBDT settings.
    on_progress
        Called with one line per fitted fold.

    Returns
    -------
    pandas.DataFrame
        One row per (set, learner): ``protocol, set, learner, n_features, n_folds, n_test, r2``
        (throughput), ``r2_log``, ``mape_pct``, ``median_ape_pct``, ``top_features`` (the
        :data:`TOP_FEATURES` largest mean |SHAP| for gbdt, ablation importance for poly, on the
        held-out rows), ``physics_agrees`` (:func:`physics_agreement` on the memory-bound rows),
        ``fit_s`` and ``note`` (why a row has no scores). Predictions are clipped to a factor
        10 beyond the training throughput range (only the polynomial ever gets there).

    Raises
    ------
    UnknownNameError
        Unknown protocol or learner.
    ValidationError
        ``y`` missing, too few rows, or a protocol without a fold (one framework only, ...).
    PerfmodelError
        Unknown feature set.
    """
    _check_names(sets, learners, protocol)
    from .evaluate import folds

    data = _usable(runs, y)
    fold_list = folds(data, _PROTOCOL_FOLDS[protocol], seed)
    return _compare(data, fold_list, protocol, sets, learners, y=y, seed=seed, n_estimators=n_estimators,
                    max_depth=max_depth, on_progress=on_progress)


def transfer_test(runs: pd.DataFrame, by: str = "framework", sets: Sequence[str] = DEFAULT_SETS,
                  learners: Sequence[str] = LEARNERS, *, train_on: str | None = None, test_on: str | None = None,
                  y: str = _TARGET, seed: int = 0, n_estimators: int = 200, max_depth: int = 5,
                  on_progress: Callable[[str], None] | None = None) -> pd.DataFrame:
    """Train on one framework (or accelerator), test on another, per feature set, with the drop.

    Parameters
    ----------
    runs
        Canonical runs table.
    by
        ``framework`` or ``hardware``.
    sets, learners, y, seed, n_estimators, max_depth, on_progress
        As for :func:`compare_feature_sets`.
    train_on, test_on
        One value of ``by`` to train on and one to test on; both None: leave each value out in
        turn (pooled).

    Returns
    -------
    pandas.DataFrame
        Per (set, learner): ``by, split`` (``leave-one-out`` or ``A->B``), ``n_test``,
        ``r2_random``, ``r2_transfer``, ``r2_drop`` (random - transfer), the same for ``r2_log``,
        ``mape_random``, ``mape_transfer``, ``median_ape_random``, ``median_ape_transfer``,
        ``top_features`` (transfer), ``physics_agrees`` (transfer), ``note``.

    Raises
    ------
    PerfmodelError
        ``by`` not framework/hardware, only one of ``train_on``/``test_on`` given.
    UnknownNameError
        A ``train_on``/``test_on`` value not in the data, unknown learner.
    ValidationError
        Too few rows or values to split.
    """
    if by not in ("framework", "hardware"):
        raise PerfmodelError(f"transfer test: by must be 'framework' or 'hardware', got {by!r}")
    if (train_on is None) != (test_on is None):
        raise PerfmodelError("transfer test: give both train_on and test_on, or neither (leave one out)")
    protocol = f"transfer-{by}"
    _check_names(sets, learners, protocol)
    data = _usable(runs, y)
    kw: dict[str, Any] = {"y": y, "seed": seed, "n_estimators": n_estimators, "max_depth": max_depth,
                          "on_progress": on_progress}
    if train_on is not None and test_on is not None:
        fold_list = _custom_folds(data, by, train_on, test_on)
        split = f"{train_on}->{test_on}"
        from .evaluate import Fold

        # the reference: a random 80/20 split of the same two groups' rows
        rng = np.random.default_rng(seed)
        both = np.concatenate([fold_list[0].train, fold_list[0].test])
        perm = rng.permutation(both)
        k = min(max(int(round(0.2 * len(both))), 1), len(both) - 1)
        ref = [Fold("random", np.sort(perm[k:]), np.sort(perm[:k]))]
        sub = data
    else:
        from .evaluate import folds

        fold_list = folds(data, by, seed)
        split = "leave-one-out"
        ref = folds(data, "random", seed)
        sub = data
    rnd = _compare(sub, ref, "random", sets, learners, **kw)
    tr = _compare(sub, fold_list, protocol, sets, learners, **kw)
    out = pd.DataFrame({"by": by, "split": split, "set": tr["set"], "learner": tr["learner"],
                        "n_test": tr["n_test"],
                        "r2_random": rnd["r2"], "r2_transfer": tr["r2"], "r2_drop": rnd["r2"] - tr["r2"],
                        "r2_log_random": rnd["r2_log"], "r2_log_transfer": tr["r2_log"],
                        "r2_log_drop": rnd["r2_log"] - tr["r2_log"],
                        "mape_random": rnd["mape_pct"], "mape_transfer": tr["mape_pct"],
                        "median_ape_random": rnd["median_ape_pct"], "median_ape_transfer": tr["median_ape_pct"],
                        "top_features": tr["top_features"], "physics_agrees": tr["physics_agrees"],
                        "note": tr["note"]})
    return out
