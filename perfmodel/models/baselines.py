"""The published baselines: linear regression, random forest and XGBoost on the features.

These are the three comparison methods of the ALA paper (Ray et al. 2025,
"Statistical Modeling and Uncertainty Estimation of LLM Inference Systems",
arXiv:2505.09319, Table of median / p90 APE: linear 103.32 / 215.67, random
forest 44.78 / 98.23, XGBoost 47.09 / 101.45). As published they regress the
throughput itself, directly on the feature vector, with the library defaults and
no uncertainty estimate; here the feature vector is a named set of
:mod:`perfmodel.features`, by default ``raw+derived+identity``: the workload
(lengths, batch, devices, dtype), the paper's derived terms (log(1+ii),
log(1+oo), ii/oo, ...) and one-hot hardware, framework and model indicators
(without the identities no regressor can tell an A100 from a Gaudi 2).

They give no prediction band (``pred_lower``/``pred_upper`` are NaN, coverage is
reported as n/a) and no confidence (NaN); ``in_domain`` is False when a query
names a hardware, framework or model never seen in training or a numeric
feature lies outside the training range.

Persistence is JSON only: the linear model's coefficients, the random forest's
trees as node arrays (predicted here by a vectorised traversal that reproduces
scikit-learn's float32 comparison, so a loaded forest predicts exactly what the
fitted one did), XGBoost's own ``Booster.save_model`` JSON.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ..errors import PerfmodelError, Problem, ValidationError
from .base import (
    NotFittedError,
    Predictor,
    as_queries,
    check_level,
    check_target,
    prediction_frame,
    read_predictor_metadata,
    register,
    unseen_reason,
    write_metadata,
)

__all__ = [
    "CATEGORICAL_COLUMNS",
    "LinearBaseline",
    "RandomForestBaseline",
    "XGBoostBaseline",
    "check_queries",
    "unseen_reasons",
]

CATEGORICAL_COLUMNS = ("hardware", "framework", "model")
"""Identity columns a query must carry; a value unseen in training makes it out of domain."""
DEFAULT_FEATURES = "raw+derived+identity"
_RANGE_SLACK = 1e-9


def check_queries(runs: pd.DataFrame, *, columns: Sequence[str] = CATEGORICAL_COLUMNS,
                  what: str = "queries") -> None:
    """Check that queries carry the identity columns and valid lengths, batch and device count.

    Parameters
    ----------
    runs
        Query rows with canonical column names.
    columns
        Identity (text) columns that must be present and filled.
    what
        What the rows are, for the message (``"training rows"`` in ``fit``).

    Raises
    ------
    ValidationError
        Every missing column or value, and every non-positive or non-numeric
        length, batch or device count, naming the row and column.
    """
    from ..physics import check_query

    problems: list[Problem] = []
    for c in columns:
        if c not in runs.columns:
            problems.append(Problem("required column is missing", column=c))
        else:
            for i in np.flatnonzero(runs[c].isna().to_numpy())[:10]:
                problems.append(Problem("value is missing", row=int(i) + 1, column=c))
    try:
        check_query(runs, columns=("hardware", "model", "device_count", "input_len_tok", "output_len_tok",
                                   "batch_size"))
    except ValidationError as exc:
        problems += [p for p in exc.problems if (p.column, p.row) not in {(q.column, q.row) for q in problems}]
    if problems:
        raise ValidationError(f"the {what} are not valid ({len(problems)} problem(s)):", problems)


def unseen_reasons(runs: pd.DataFrame, seen: dict[str, list[str]]) -> list[list[str]]:
    """Per query, each identity (:data:`CATEGORICAL_COLUMNS`) whose value no training row had, in words."""
    out: list[list[str]] = [[] for _ in range(len(runs))]
    for c in CATEGORICAL_COLUMNS:
        values = runs[c].astype("string")
        for i in np.flatnonzero(~values.isin(seen[c]).fillna(False).to_numpy(dtype=bool)):
            out[i].append(unseen_reason(c, values.iloc[i], seen[c]))
    return out


def _target(runs: pd.DataFrame, y: str) -> np.ndarray:
    if y not in runs.columns:
        raise ValidationError("fit: the training table has no target column", [Problem("missing column", column=y)])
    v = pd.to_numeric(runs[y], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    return v


class _FeatureBaseline(Predictor):
    """Shared fit/predict/save of the regressors that work on one feature vector per row."""

    name: ClassVar[str] = ""
    _model_file: ClassVar[str] = "model.json"

    def __init__(self, *, features: str = DEFAULT_FEATURES, seed: int = 0) -> None:
        self.features = features
        self.seed = seed

    # -------------------------------------------------------------- design matrix
    def _settings(self) -> dict[str, Any]:
        return {"features": self.features, "seed": self.seed}

    def _design(self, runs: pd.DataFrame, *, fit: bool) -> tuple[np.ndarray, np.ndarray]:
        from ..features import build_features, training_feature_names

        if fit:
            self.feature_names_ = training_feature_names(runs, self.features)
            self.seen_ = {c: sorted(set(runs[c].dropna().astype(str))) for c in CATEGORICAL_COLUMNS}
        x = build_features(runs, names=self.feature_names_).to_numpy(dtype=float, na_value=np.nan)
        fin = np.where(np.isfinite(x), x, np.nan)
        if fit:
            with warnings.catch_warnings():
                # an all-NaN column (TP size never recorded) is expected, not news
                warnings.simplefilter("ignore", RuntimeWarning)
                med = np.nanmedian(fin, axis=0)
                self.lo_ = np.nan_to_num(np.nanmin(fin, axis=0), nan=-np.inf).tolist()
                self.hi_ = np.nan_to_num(np.nanmax(fin, axis=0), nan=np.inf).tolist()
            self.fill_ = np.where(np.isfinite(med), med, 0.0).tolist()
        inside = ~self._outside_range(x).any(axis=1)
        for c in CATEGORICAL_COLUMNS:
            inside &= self._seen(runs, c)
        # Missing figures (a catalog gap, an unrecorded TP size) get the training median:
        # linear regression and the forest cannot take NaN, and the paper's models had none.
        x = np.where(np.isfinite(x), x, np.asarray(self.fill_, dtype=float))
        return x, inside

    def _outside_range(self, x: np.ndarray) -> np.ndarray:
        """Per query and feature, whether a finite value lies outside the training range."""
        lo, hi = np.asarray(self.lo_, dtype=float), np.asarray(self.hi_, dtype=float)
        slack = np.where(np.isfinite(hi - lo), np.maximum(np.abs(hi - lo), 1.0) * _RANGE_SLACK, 0.0)
        with np.errstate(invalid="ignore"):
            return np.isfinite(x) & ((x < lo - slack) | (x > hi + slack))

    def _seen(self, runs: pd.DataFrame, column: str) -> np.ndarray:
        return runs[column].astype("string").isin(self.seen_[column]).fillna(False).to_numpy(dtype=bool)

    def domain_reasons(self, runs: pd.DataFrame) -> list[list[str]]:
        """Why each query is out of domain (``in_domain`` false in :meth:`predict`), in words; an empty list
        for a query inside it: a hardware, framework or model never seen in training, and each feature
        outside the training range, with the range. PRED.csv's ``domain_reason`` (a baseline's rows had been
        out of domain without a word).

        Raises
        ------
        NotFittedError
            Called before :meth:`fit`.
        ValidationError
            A query lacks a column or has an invalid value (row and column named).
        """
        self._check_fitted("feature_names_")
        runs = as_queries(runs)
        check_queries(runs)
        from ..features import build_features

        out = unseen_reasons(runs, self.seen_)
        x = build_features(runs, names=self.feature_names_).to_numpy(dtype=float, na_value=np.nan)
        for i, j in zip(*np.nonzero(self._outside_range(x)), strict=True):
            name = self.feature_names_[j]
            if not name.startswith("id_"):  # a one-hot indicator: the identity's own reason says it
                out[i].append(f"{name} = {x[i, j]:.4g} is outside the trained range {self.lo_[j]:.4g} to "
                              f"{self.hi_[j]:.4g}")
        return out

    # -------------------------------------------------------------- contract
    def fit(self, runs: pd.DataFrame, y: str = "output_throughput_tok_s") -> _FeatureBaseline:
        """Fit on a runs table.

        Parameters
        ----------
        runs
            Canonical runs table (rows without a positive finite ``y`` are ignored).
        y
            Throughput column to learn.

        Returns
        -------
        self

        Raises
        ------
        ValidationError
            No usable training row, or a column the features need is missing.
        """
        check_target(self.name, y)
        runs = as_queries(runs)
        target = _target(runs, y)
        ok = np.isfinite(target) & (target > 0)
        if not ok.any():
            raise ValidationError(f"{self.name}: no training row has a positive finite {y}")
        train = runs.loc[ok].reset_index(drop=True)
        check_queries(train, what="training rows")
        x, _ = self._design(train, fit=True)
        self.y_ = y
        self._fit_matrix(x, target[ok])
        self.n_train_ = int(ok.sum())
        return self

    def predict(self, runs: pd.DataFrame, *, level: float = 0.9) -> pd.DataFrame:
        """Predict throughput for query rows (no band, no confidence: the method has none).

        Parameters
        ----------
        runs
            Query rows with the canonical identity, length, batch and device columns;
            measured columns are ignored.
        level
            Accepted for the common contract; the baselines give no band.

        Returns
        -------
        pandas.DataFrame
            ``pred_throughput_tok_s, pred_lower, pred_upper, confidence, in_domain``, in query order.

        Raises
        ------
        NotFittedError
            Called before :meth:`fit`.
        ValidationError
            A query lacks a column or has an invalid value (row and column named).
        """
        self._check_fitted("feature_names_")
        check_level(level)
        runs = as_queries(runs)
        check_queries(runs)
        x, inside = self._design(runs, fit=False)
        nan = np.full(len(x), np.nan)
        return prediction_frame(runs.index, self._predict_matrix(x), nan, nan, nan, inside)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write ``metadata.json`` (settings, feature names, ranges) and the model JSON.

        Parameters
        ----------
        path
            Model directory, created when missing.

        Raises
        ------
        NotFittedError
            Called before :meth:`fit`.
        PerfmodelError
            The directory cannot be written.
        """
        if not hasattr(self, "feature_names_"):
            raise NotFittedError(f"this {self.name} predictor is not fitted yet: nothing to save")
        state = {"y": self.y_, "n_train": self.n_train_, "feature_names": self.feature_names_,
                 "fill": self.fill_, "lo": self.lo_, "hi": self.hi_, "seen": self.seen_,
                 "model_file": self._model_file}
        d = write_metadata(path, self.name, self._settings(), state)
        try:
            self._save_model(d / self._model_file)
        except OSError as exc:
            raise PerfmodelError(f"{d}: cannot write {self._model_file} ({exc.strerror or exc})") from None

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> _FeatureBaseline:
        """Read a predictor written by :meth:`save`.

        Parameters
        ----------
        path
            The model directory.

        Returns
        -------
        The fitted predictor.

        Raises
        ------
        PerfmodelError
            The directory holds no model of this kind, or its files are damaged.
        """
        d, meta = read_predictor_metadata(path, cls.name)
        st = meta["state"]
        try:
            obj = cls(**meta["settings"])
            obj.y_ = st["y"]
            obj.n_train_ = int(st["n_train"])
            obj.feature_names_ = [str(v) for v in st["feature_names"]]
            obj.fill_ = [float(v) for v in st["fill"]]
            obj.lo_ = [-math.inf if v is None else float(v) for v in st["lo"]]
            obj.hi_ = [math.inf if v is None else float(v) for v in st["hi"]]
            obj.seen_ = {k: [str(x) for x in v] for k, v in st["seen"].items()}
            obj._load_model(d / st["model_file"])
        except (OSError, KeyError, TypeError, ValueError) as exc:
            raise PerfmodelError(f"{d}: damaged {cls.name} model ({type(exc).__name__}: {exc})") from None
        return obj

    # -------------------------------------------------------------- per model
    def _fit_matrix(self, x: np.ndarray, y: np.ndarray) -> None:
        raise NotImplementedError

    def _predict_matrix(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _save_model(self, path: Path) -> None:
        raise NotImplementedError

    def _load_model(self, path: Path) -> None:
        raise NotImplementedError


@register
class LinearBaseline(_FeatureBaseline):
    """Ordinary least squares on the features (scikit-learn ``LinearRegression``), as published.

    Parameters
    ----------
    features
        Feature set of :mod:`perfmodel.features`.
    seed
        Unused (the fit is deterministic); accepted for a uniform interface.
    """

    name = "linear"

    def _fit_matrix(self, x: np.ndarray, y: np.ndarray) -> None:
        from sklearn.linear_model import LinearRegression

        lr = LinearRegression().fit(x, y)
        self.coef_ = lr.coef_.tolist()
        self.intercept_ = float(lr.intercept_)

    def _predict_matrix(self, x: np.ndarray) -> np.ndarray:
        return x @ np.asarray(self.coef_, dtype=float) + self.intercept_

    def _save_model(self, path: Path) -> None:
        path.write_text(json.dumps({"coef": self.coef_, "intercept": self.intercept_}))

    def _load_model(self, path: Path) -> None:
        obj = json.loads(path.read_text())
        self.coef_ = [float(v) for v in obj["coef"]]
        self.intercept_ = float(obj["intercept"])


class _EnsembleBaseline(_FeatureBaseline):
    """A baseline of ``n_estimators`` trees grown on ``n_jobs`` threads."""

    def __init__(self, *, features: str = DEFAULT_FEATURES, seed: int = 0,
                 n_estimators: int = 100, n_jobs: int = 1) -> None:
        super().__init__(features=features, seed=seed)
        self.n_estimators = n_estimators
        self.n_jobs = n_jobs

    def _settings(self) -> dict[str, Any]:
        return {**super()._settings(), "n_estimators": self.n_estimators, "n_jobs": self.n_jobs}

    def _check_n_estimators(self) -> None:
        if not isinstance(self.n_estimators, int) or self.n_estimators < 1:
            raise PerfmodelError(f"{self.name}: n_estimators must be a positive integer, got {self.n_estimators!r}")


@register
class RandomForestBaseline(_EnsembleBaseline):
    """scikit-learn ``RandomForestRegressor`` (library defaults) on the features, as published.

    Parameters
    ----------
    features, seed
        As for :class:`LinearBaseline`; ``seed`` is the forest's ``random_state``.
    n_estimators
        Number of trees (scikit-learn's default, 100).
    n_jobs
        Threads used to grow the trees.
    """

    name = "random-forest"

    def _fit_matrix(self, x: np.ndarray, y: np.ndarray) -> None:
        from sklearn.ensemble import RandomForestRegressor

        self._check_n_estimators()
        rf = RandomForestRegressor(n_estimators=self.n_estimators, random_state=self.seed, n_jobs=self.n_jobs)
        rf.fit(x, y)
        trees = [est.tree_ for est in rf.estimators_]
        self._pack([(t.children_left, t.children_right, t.feature, t.threshold, t.value[:, 0, 0]) for t in trees])

    def _pack(self, trees: Sequence[tuple[np.ndarray, ...]]) -> None:
        # All trees in one flat node array with offsets: every query walks every tree at
        # once, so 10,000 queries cost ~depth numpy steps instead of trees x depth.
        sizes = [len(t[0]) for t in trees]
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        left = np.concatenate([np.where(t[0] >= 0, t[0] + o, -1) for t, o in zip(trees, offsets, strict=True)])
        right = np.concatenate([np.where(t[1] >= 0, t[1] + o, -1) for t, o in zip(trees, offsets, strict=True)])
        self.trees_ = {
            "sizes": [int(s) for s in sizes],
            "left": left.astype(np.int64), "right": right.astype(np.int64),
            "feature": np.concatenate([t[2] for t in trees]).astype(np.int64),
            "threshold": np.concatenate([t[3] for t in trees]).astype(np.float64),
            "value": np.concatenate([t[4] for t in trees]).astype(np.float64),
            "offsets": offsets,
        }

    def _predict_matrix(self, x: np.ndarray) -> np.ndarray:
        t = self.trees_
        # scikit-learn compares float32 features with float64 thresholds; doing the same
        # makes the loaded forest predict exactly what the fitted one did.
        xf = x.astype(np.float32).astype(np.float64)
        n, n_trees = len(xf), len(t["offsets"])
        node = np.broadcast_to(t["offsets"], (n, n_trees)).copy()
        rows = np.broadcast_to(np.arange(n)[:, None], (n, n_trees))
        while True:
            inner = t["left"][node] >= 0
            if not inner.any():
                break
            f = t["feature"][node]
            go_left = xf[rows, np.where(inner, f, 0)] <= t["threshold"][node]
            node = np.where(inner, np.where(go_left, t["left"][node], t["right"][node]), node)
        return t["value"][node].mean(axis=1)

    def _save_model(self, path: Path) -> None:
        t = self.trees_
        path.write_text(json.dumps({
            "sizes": t["sizes"], "left": t["left"].tolist(), "right": t["right"].tolist(),
            "feature": t["feature"].tolist(), "threshold": t["threshold"].tolist(), "value": t["value"].tolist(),
        }))

    def _load_model(self, path: Path) -> None:
        obj = json.loads(path.read_text())
        sizes = [int(s) for s in obj["sizes"]]
        self.trees_ = {
            "sizes": sizes, "left": np.asarray(obj["left"], dtype=np.int64),
            "right": np.asarray(obj["right"], dtype=np.int64), "feature": np.asarray(obj["feature"], dtype=np.int64),
            "threshold": np.asarray(obj["threshold"], dtype=np.float64),
            "value": np.asarray(obj["value"], dtype=np.float64),
            "offsets": np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64),
        }


@register
class XGBoostBaseline(_EnsembleBaseline):
    """XGBoost regression (library defaults: 100 rounds, depth 6, eta 0.3) on the features, as published.

    Parameters
    ----------
    features, seed
        As for :class:`LinearBaseline`; ``seed`` seeds XGBoost.
    n_estimators
        Boosting rounds.
    n_jobs
        Threads.
    """

    name = "xgboost"
    _model_file = "booster.json"

    def _fit_matrix(self, x: np.ndarray, y: np.ndarray) -> None:
        import xgboost as xgb

        self._check_n_estimators()
        params = {"objective": "reg:squarederror", "seed": self.seed, "nthread": self.n_jobs,
                  "tree_method": "hist"}
        self.booster_ = xgb.train(params, xgb.DMatrix(x, label=y), num_boost_round=self.n_estimators)

    def _predict_matrix(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(self.booster_.inplace_predict(x), dtype=float)

    def _save_model(self, path: Path) -> None:
        self.booster_.save_model(str(path))

    def _load_model(self, path: Path) -> None:
        import xgboost as xgb

        booster = xgb.Booster()
        try:
            booster.load_model(str(path))
        except xgb.core.XGBoostError as exc:
            raise ValueError(str(exc)) from exc
        booster.set_param({"nthread": self.n_jobs})
        self.booster_ = booster
