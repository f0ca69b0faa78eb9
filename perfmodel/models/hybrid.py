"""The published hybrid, ALA ("Analytical with Learning Augmentation"), reproduced.

Ray et al. 2025, "Statistical Modeling and Uncertainty Estimation of LLM
Inference Systems" (arXiv:2505.09319); published median / p90 APE 23.65 / 67.34,
training 126.5 s. The steps, as published, and where we had to choose:

1. **Exponential parameter database.** Every training configuration (the curve
   key: hardware, device count, framework, model, lengths, dtype columns) with at
   least three batch sizes gets ``throughput(B) = c - a * exp(-b * B)`` fitted by
   :func:`perfmodel.curves.fit_curves` (``shape="exp"``); configurations whose fit
   fails are left out, as in the paper.
2. **Parameter model.** One XGBoost model with three outputs maps workload
   features of a configuration to its (a, b, c): XGBoost's native multi-output
   trees (``multi_strategy="multi_output_tree"``: each leaf holds a vector, one
   booster for the three targets). Features: the paper's ``log(1+ii)``,
   ``log(1+oo)``, ``ii/oo``, the device count, and one-hot hardware, framework
   and model indicators (:mod:`perfmodel.features`, ``identity``). Our choice:
   the targets are ``log a, log b, log c`` because plateaus span four decades and
   a squared loss on raw ``c`` ignores every small system.
3. **Simulated annealing over training subsets.** A random
   :attr:`ALAPredictor.val_fraction` of the fitted configurations is set aside to
   score subsets; the state is the subset of the other configurations used for
   training; a move adds or removes ``move_fraction`` of them at random; the
   energy is the median APE of the resulting model on the set-aside
   configurations' measured points; a worse state is accepted with probability
   ``exp(-dE / T)`` (Metropolis); ``T`` starts at ``t0_factor`` (1-2) times the
   largest error seen before the search (the initial state's energy) and decays
   by ``alpha`` (0.95-0.99) per step, for ``sa_iterations`` steps. The paper's
   separate "error predictor" is not reproduced. Our choice: the final model is
   trained on every fitted configuration except those the best state dropped
   (the set-aside ones included: they were only held out to score subsets).
4. **Prediction** evaluates the curve with the predicted (a, b, c) at the
   query's batch (never the fitted parameters of a known configuration).
5. **Confidence** = 1 / (1 + median cosine distance to the k = 5 nearest
   training points), in the feature space above plus log2(batch), each feature
   min-max normalised over the training points.

The method gives no interval: ``pred_lower``/``pred_upper`` are NaN and the
evaluation reports coverage as n/a. ``in_domain`` is False for a batch or length more than twice
outside the trained ones, for a hardware,
framework or model never seen in training, and for a confidence below the
1st percentile of the training points' own (leave-self-out) confidence.
"""

from __future__ import annotations

import math
import os
import time
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ..errors import PerfmodelError, ValidationError
from .base import (
    NotFittedError,
    Predictor,
    Reason,
    as_queries,
    check_level,
    check_target,
    prediction_frame,
    read_predictor_metadata,
    register,
    write_metadata,
)
from .baselines import CATEGORICAL_COLUMNS, check_queries, unseen_reasons

__all__ = ["ALAPredictor", "CONFIG_FEATURES", "cosine_confidence"]

CONFIG_FEATURES = ("device_count", "log1p_ii", "log1p_oo", "ii_over_oo")
"""Workload features of a configuration (the paper's, plus the device count); identities are added."""
_LOG_FLOOR = 1e-9
_CHUNK = 2048
_FLOOR_FRACTION = 0.01
_RANGE_COLUMNS = ("batch_size", "input_len_tok", "output_len_tok")
"""Columns whose trained range bounds the domain (a value more than twice outside it is out of domain)."""
_RANGE_WORDS = {"input_len_tok": "input length", "output_len_tok": "output length"}
_PLURAL = {"batch": "batches", "input length": "input lengths", "output length": "output lengths"}
_MODEL_FILE = "booster.json"


def cosine_confidence(queries: np.ndarray, points: np.ndarray, k: int = 5, *,
                      exclude_self: bool = False) -> np.ndarray:
    """ALA's confidence: 1 / (1 + median cosine distance to the ``k`` nearest points.

    Parameters
    ----------
    queries
        ``(n, d)`` normalised feature vectors.
    points
        ``(m, d)`` normalised training vectors.
    k
        Neighbours (the paper's 5).
    exclude_self
        ``queries`` are ``points`` (same order): skip each one's own distance.

    Returns
    -------
    numpy.ndarray
        Confidence in (0, 1], one per query.
    """
    pn = points / np.maximum(np.linalg.norm(points, axis=1, keepdims=True), 1e-12)
    out = np.empty(len(queries))
    kk = min(k, len(points) - (1 if exclude_self else 0))
    if kk < 1:
        return np.full(len(queries), np.nan)
    for s in range(0, len(queries), _CHUNK):
        q = queries[s: s + _CHUNK]
        qn = q / np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-12)
        dist = np.clip(1.0 - qn @ pn.T, 0.0, 2.0)
        if exclude_self:
            dist[np.arange(len(q)), np.arange(s, s + len(q))] = np.inf
        near = np.partition(dist, kk - 1, axis=1)[:, :kk]
        out[s: s + _CHUNK] = 1.0 / (1.0 + np.median(near, axis=1))
    return out


@register
class ALAPredictor(Predictor):
    """The published hybrid: per-configuration exponential curves, XGBoost on (a, b, c), annealed subsets.

    Parameters
    ----------
    seed
        Seeds the validation split, the annealing moves and XGBoost.
    sa_iterations
        Annealing steps (each trains one parameter model); 0 trains on everything.
    alpha
        Temperature decay per step, in [0.95, 0.99].
    t0_factor
        Initial temperature as a multiple (1-2) of the largest error seen before the search.
    move_fraction
        Share of the candidate configurations toggled by one move (at least one).
    val_fraction
        Share of the fitted configurations set aside to score subsets.
    n_estimators, max_depth, learning_rate
        XGBoost settings of the parameter model (library defaults: 100, 6, 0.3).
    k
        Neighbours of the confidence (the paper's 5).
    n_jobs
        XGBoost threads.
    """

    name: ClassVar[str] = "ala"
    domain_range_factor: ClassVar[float] = 2.0  # as roofline-gbm's: a batch or length more than twice outside

    def __init__(self, *, seed: int = 0, sa_iterations: int = 60, alpha: float = 0.97, t0_factor: float = 1.5,
                 move_fraction: float = 0.02, val_fraction: float = 0.2, n_estimators: int = 100,
                 max_depth: int = 6, learning_rate: float = 0.3, k: int = 5, n_jobs: int = 1) -> None:
        self.seed = seed
        self.sa_iterations = sa_iterations
        self.alpha = alpha
        self.t0_factor = t0_factor
        self.move_fraction = move_fraction
        self.val_fraction = val_fraction
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.learning_rate = learning_rate
        self.k = k
        self.n_jobs = n_jobs

    def _settings(self) -> dict[str, Any]:
        return {"seed": self.seed, "sa_iterations": self.sa_iterations, "alpha": self.alpha,
                "t0_factor": self.t0_factor, "move_fraction": self.move_fraction,
                "val_fraction": self.val_fraction, "n_estimators": self.n_estimators,
                "max_depth": self.max_depth, "learning_rate": self.learning_rate, "k": self.k,
                "n_jobs": self.n_jobs}

    def _check_settings(self) -> None:
        bad = []
        if not isinstance(self.sa_iterations, int) or self.sa_iterations < 0:
            bad.append(f"sa_iterations must be an integer >= 0, got {self.sa_iterations!r}")
        if not 0.95 <= float(self.alpha) <= 0.99:
            bad.append(f"alpha must be in [0.95, 0.99] (the published range), got {self.alpha!r}")
        if not 1.0 <= float(self.t0_factor) <= 2.0:
            bad.append(f"t0_factor must be in [1, 2] (the published range), got {self.t0_factor!r}")
        if not 0 < float(self.move_fraction) <= 0.5:
            bad.append(f"move_fraction must be in (0, 0.5], got {self.move_fraction!r}")
        if not 0 < float(self.val_fraction) < 1:
            bad.append(f"val_fraction must be in (0, 1), got {self.val_fraction!r}")
        if not isinstance(self.k, int) or self.k < 1:
            bad.append(f"k must be a positive integer, got {self.k!r}")
        if not isinstance(self.n_estimators, int) or self.n_estimators < 1:
            bad.append(f"n_estimators must be a positive integer, got {self.n_estimators!r}")
        if bad:
            raise PerfmodelError("ala: " + "; ".join(bad))

    # -------------------------------------------------------------- features
    def _config_x(self, runs: pd.DataFrame) -> np.ndarray:
        from ..features import build_features

        return build_features(runs, names=self.feature_names_).to_numpy(dtype=float, na_value=np.nan)

    def _conf_x(self, xc: np.ndarray, batch: np.ndarray) -> np.ndarray:
        x = np.column_stack([np.nan_to_num(xc, nan=0.0), np.log2(batch)])
        lo, span = np.asarray(self.norm_lo_), np.asarray(self.norm_span_)
        return (x - lo) / span

    # -------------------------------------------------------------- parameter model
    def _train(self, x: np.ndarray, t: np.ndarray) -> Any:
        import xgboost as xgb

        params = {"tree_method": "hist", "multi_strategy": "multi_output_tree", "max_depth": self.max_depth,
                  "learning_rate": self.learning_rate, "seed": self.seed, "nthread": self.n_jobs,
                  "objective": "reg:squarederror"}
        return xgb.train(params, xgb.DMatrix(x, label=t), num_boost_round=self.n_estimators)

    @staticmethod
    def _curve(booster: Any, x: np.ndarray, batch: np.ndarray) -> np.ndarray:
        la, lb, lc = np.asarray(booster.inplace_predict(x), dtype=float).reshape(len(x), 3).T
        a, b, c = np.exp(la), np.exp(lb), np.exp(lc)
        # c - a e^{-bB} goes negative when a predicted rise exceeds the plateau; a throughput
        # cannot, so the curve is floored at a small share of its plateau.
        return np.maximum(c - a * np.exp(-b * batch), _FLOOR_FRACTION * c)

    # -------------------------------------------------------------- contract
    def fit(self, runs: pd.DataFrame, y: str = "output_throughput_tok_s") -> ALAPredictor:
        """Fit the curves, anneal the training subset and train the parameter model.

        Parameters
        ----------
        runs
            Canonical runs table; rows without a positive finite ``y`` are ignored.
        y
            Throughput column.

        Returns
        -------
        self

        Raises
        ------
        ValidationError
            No configuration has the three batch sizes a curve needs, or a column is missing.
        PerfmodelError
            A setting outside its range.
        """
        from ..curves import fit_curves
        from ..evaluate import config_key
        from ..features import feature_names

        self._check_settings()
        t_start = time.perf_counter()
        check_target("ala", y)
        runs = as_queries(runs)
        if y not in runs.columns:
            raise ValidationError(f"ala: the training table has no column {y!r}")
        yv = pd.to_numeric(runs[y], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        train = runs.loc[np.isfinite(yv) & (yv > 0)].reset_index(drop=True)
        if train.empty:
            raise ValidationError(f"ala: no training row has a positive finite {y}")
        check_queries(train, what="training rows")
        key = config_key(train)
        # As published: plain least-squares curves (no refit through the origin of a curve below zero).
        table = fit_curves(train, key, shape="exp", intervals="none", y=y, origin_refit=False)
        assert isinstance(table, pd.DataFrame)
        ok = (table["shape"] == "exp") & table["success"].astype(bool) & \
            np.isfinite(table[["a", "b", "c"]].to_numpy(dtype=float)).all(axis=1)
        fitted = table.loc[ok].reset_index(drop=True)
        if len(fitted) < 2:
            raise ValidationError(f"ala: {len(fitted)} configuration(s) have a fitted exponential curve "
                                  "(three batch sizes or more each); at least 2 are needed")
        self.feature_names_ = list(CONFIG_FEATURES) + feature_names(train, "identity")
        self.seen_ = {c: sorted(set(train[c].dropna().astype(str))) for c in CATEGORICAL_COLUMNS}
        # fit_curves walks groupby(key, sort=True), so table row i is configuration code i
        codes = train.groupby(key, dropna=False, sort=True).ngroup().to_numpy()
        table_codes = np.flatnonzero(ok.to_numpy())
        first_row = pd.Series(np.arange(len(train))).groupby(codes).first().to_numpy()
        xc = self._config_x(train.iloc[first_row[table_codes]].reset_index(drop=True))
        a, b, c = (fitted[p].to_numpy(dtype=float) for p in ("a", "b", "c"))
        targets = np.column_stack([np.log(np.maximum(a, _LOG_FLOOR * c + _LOG_FLOOR)),
                                   np.log(np.maximum(b, _LOG_FLOOR)), np.log(np.maximum(c, _LOG_FLOOR))])
        keep, log = self._anneal(xc, targets, table_codes, codes, train, yv_train=train[y].to_numpy(float))
        self.booster_ = self._train(xc[keep], targets[keep])
        # confidence space: the training points of the configurations the model learned from
        used = np.isin(codes, table_codes[keep])
        xr = self._config_x(train.loc[used].reset_index(drop=True))
        raw = np.column_stack([np.nan_to_num(xr, nan=0.0), np.log2(train.loc[used, "batch_size"].to_numpy(float))])
        pts = np.unique(raw, axis=0)
        lo, hi = pts.min(axis=0), pts.max(axis=0)
        self.norm_lo_ = lo.tolist()
        self.norm_span_ = np.where(hi > lo, hi - lo, 1.0).tolist()
        self.points_ = (pts - lo) / np.asarray(self.norm_span_)
        own = cosine_confidence(self.points_, self.points_, self.k, exclude_self=True)
        self.conf_threshold_ = float(np.nanquantile(own, 0.01)) if np.isfinite(own).any() else 0.0
        self.ranges_ = {c: [float(train[c].min()), float(train[c].max())] for c in _RANGE_COLUMNS}
        self.y_ = y
        self.n_train_ = int(len(train))
        self.n_configs_ = int(len(table))
        self.n_fitted_ = int(len(fitted))
        self.n_used_ = int(keep.sum())
        self.sa_log_ = log
        self.train_s_ = time.perf_counter() - t_start
        return self

    def _anneal(self, xc: np.ndarray, targets: np.ndarray, table_codes: np.ndarray, codes: np.ndarray,
                train: pd.DataFrame, yv_train: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        n = len(xc)
        keep_all = np.ones(n, dtype=bool)
        n_val = int(round(self.val_fraction * n))
        if self.sa_iterations == 0 or n_val < 1 or n - n_val < 2:
            return keep_all, {"iterations": 0, "note": "no annealing (too few configurations or 0 iterations)"}
        rng = np.random.default_rng(self.seed)
        perm = rng.permutation(n)
        val, pool = perm[:n_val], perm[n_val:]
        val_rows = np.flatnonzero(np.isin(codes, table_codes[val]))
        # the validation configurations' feature rows, expanded to their measured points
        pos = {int(cd): i for i, cd in enumerate(table_codes)}
        xv = xc[[pos[int(cd)] for cd in codes[val_rows]]]
        bv = train["batch_size"].to_numpy(float)[val_rows]
        yv = yv_train[val_rows]

        def energy(state: np.ndarray) -> float:
            sub = pool[state]
            booster = self._train(xc[sub], targets[sub])
            return float(np.median(np.abs(self._curve(booster, xv, bv) - yv) / yv))

        state = np.ones(len(pool), dtype=bool)
        e = e0 = energy(state)
        best_state, best_e = state.copy(), e
        temp0 = self.t0_factor * e
        temp = temp0
        m = max(1, int(round(self.move_fraction * len(pool))))
        min_size = max(2, len(pool) // 2)
        accepted = 0
        for _ in range(self.sa_iterations):
            cand = state.copy()
            flip = rng.choice(len(pool), size=m, replace=False)
            cand[flip] = ~cand[flip]
            if cand.sum() < min_size:
                temp *= self.alpha
                continue
            e_new = energy(cand)
            if e_new <= e or rng.random() < math.exp(-(e_new - e) / max(temp, 1e-12)):
                state, e = cand, e_new
                accepted += 1
                if e < best_e:
                    best_state, best_e = state.copy(), e
            temp *= self.alpha
        keep = keep_all.copy()
        keep[pool[~best_state]] = False
        return keep, {"iterations": int(self.sa_iterations), "accepted": accepted, "t0": temp0,
                      "initial_energy": e0, "best_energy": best_e,
                      "dropped": int((~best_state).sum()), "pool": int(len(pool)), "validation": int(n_val)}

    def predict(self, runs: pd.DataFrame, *, level: float = 0.9) -> pd.DataFrame:
        """Throughput from the predicted curve, with ALA's nearest-neighbour confidence (no band).

        Parameters
        ----------
        runs
            Query rows (canonical identity, length, batch and device columns; measured columns ignored).
        level
            Accepted for the common contract; ALA gives no band (NaN).

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
        self._check_fitted("booster_")
        check_level(level)
        runs = as_queries(runs)
        check_queries(runs)
        q = runs
        xc = self._config_x(q)
        batch = q["batch_size"].to_numpy(dtype=float)
        pred = self._curve(self.booster_, xc, batch)
        conf = cosine_confidence(self._conf_x(xc, batch), self.points_, self.k)
        inside = (conf >= self.conf_threshold_) & ~self._outside(q).any(axis=1)
        for c in CATEGORICAL_COLUMNS:
            inside &= q[c].astype("string").isin(self.seen_[c]).fillna(False).to_numpy(dtype=bool)
        nan = np.full(len(q), np.nan)
        return prediction_frame(runs.index, pred, nan, nan, conf, inside)

    def domain_reasons(self, runs: pd.DataFrame) -> list[list[str]]:
        """Why each query is out of domain (``in_domain`` false in :meth:`predict`), in words; an empty list
        for a query inside it: a hardware, framework or model never seen in training, a nearest-neighbour
        confidence below the 1st percentile of the training points' own, and a batch or length more than twice
        outside the trained ones. PRED.csv's ``domain_reason``.

        Raises
        ------
        NotFittedError
            Called before :meth:`fit`.
        ValidationError
            A query lacks a column or has an invalid value (row and column named).
        """
        self._check_fitted("booster_")
        runs = as_queries(runs)
        check_queries(runs)
        out = unseen_reasons(runs, self.seen_)
        batch = runs["batch_size"].to_numpy(dtype=float)
        conf = cosine_confidence(self._conf_x(self._config_x(runs), batch), self.points_, self.k)
        for i in np.flatnonzero(~(conf >= self.conf_threshold_)):
            out[i].append(f"its nearest-neighbour confidence {conf[i]:.2f} is below that of 99 % of the training "
                          f"points ({self.conf_threshold_:.2f})")
        far = self._outside(runs)
        for j, c in enumerate(_RANGE_COLUMNS):
            lo, hi = self.ranges_[c]
            what, kind = ("batch", "batch_range") if c == "batch_size" else (_RANGE_WORDS[c], "length_range")
            for i in np.flatnonzero(far[:, j]):
                v = float(runs[c].iloc[i])
                out[i].append(Reason(f"{what} {v:g} is more than twice outside the trained {_PLURAL[what]} "
                                     f"{lo:g}-{hi:g}", kind))
        return out

    def _outside(self, runs: pd.DataFrame) -> np.ndarray:
        """Per query and :data:`_RANGE_COLUMNS` column: more than :attr:`domain_range_factor` outside the trained
        range (all False for a model saved before the ranges were kept). Batch 1,024, four times the largest
        trained, had been in domain at confidence 0.98 where every other predictor said it was not."""
        out = np.zeros((len(runs), len(_RANGE_COLUMNS)), dtype=bool)
        for j, c in enumerate(_RANGE_COLUMNS):
            if c in getattr(self, "ranges_", {}):
                lo, hi = self.ranges_[c]
                v = pd.to_numeric(runs[c], errors="coerce").to_numpy(dtype=float)
                tol = self.domain_range_factor
                out[:, j] = (v < lo / tol) | (v > hi * tol)
        return out

    # -------------------------------------------------------------- persistence
    def save(self, path: str | os.PathLike[str]) -> None:
        """Write ``metadata.json`` and the parameter model's ``booster.json``.

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
        if not hasattr(self, "booster_"):
            raise NotFittedError("this ala predictor is not fitted yet: nothing to save")
        state = {"y": self.y_, "feature_names": self.feature_names_, "seen": self.seen_,
                 "norm_lo": self.norm_lo_, "norm_span": self.norm_span_, "points": self.points_,
                 "conf_threshold": self.conf_threshold_, "n_train": self.n_train_, "n_configs": self.n_configs_,
                 "n_fitted": self.n_fitted_, "n_used": self.n_used_, "sa_log": self.sa_log_,
                 "train_s": self.train_s_, "model_file": _MODEL_FILE, "ranges": self.ranges_}
        d = write_metadata(path, self.name, self._settings(), state)
        try:
            self.booster_.save_model(str(d / _MODEL_FILE))
        except Exception as exc:  # xgboost raises its own error type for I/O failures
            raise PerfmodelError(f"{d}: cannot write {_MODEL_FILE} ({exc})") from None

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ALAPredictor:
        """Read a predictor written by :meth:`save`.

        Parameters
        ----------
        path
            The model directory.

        Returns
        -------
        ALAPredictor

        Raises
        ------
        PerfmodelError
            Not an ALA model directory, or damaged files.
        """
        import xgboost as xgb

        d, meta = read_predictor_metadata(path, cls.name)
        st = meta["state"]
        try:
            obj = cls(**meta["settings"])
            obj.y_ = st["y"]
            obj.feature_names_ = [str(v) for v in st["feature_names"]]
            obj.seen_ = {k: [str(x) for x in v] for k, v in st["seen"].items()}
            obj.norm_lo_ = [float(v) for v in st["norm_lo"]]
            obj.norm_span_ = [float(v) for v in st["norm_span"]]
            obj.points_ = np.asarray(st["points"], dtype=float)
            obj.conf_threshold_ = float(st["conf_threshold"])
            obj.ranges_ = {str(k): [float(x) for x in v] for k, v in st.get("ranges", {}).items()}  # none before
            for name in ("n_train", "n_configs", "n_fitted", "n_used"):
                setattr(obj, f"{name}_", int(st[name]))
            obj.sa_log_ = dict(st["sa_log"])
            obj.train_s_ = float(st["train_s"])
            booster = xgb.Booster()
            booster.load_model(str(d / st["model_file"]))
        except (OSError, KeyError, TypeError, ValueError, xgb.core.XGBoostError) as exc:
            raise PerfmodelError(f"{d}: damaged ala model ({type(exc).__name__}: {exc})") from None
        booster.set_param({"nthread": obj.n_jobs})
        obj.booster_ = booster
        return obj
