"""One workload's lengths across the load points of a benchmark client that records per-point means.

GuideLLM and inference-perf write, for each load point, the *mean* prompt and output length of the requests
that point sent: 264/121, 264/123 and 264/128 for concurrencies 16, 4 and 1 of one workload, since the
sampled prompts and the model's stopping differ from point to point. Read as they are, every load point is its
own configuration ("264/121", "264/123"), the Data page draws no line and the Curves page fits nothing.

:func:`common_mean_lengths` reads the lengths of such points (those whose importer marks them with
:data:`MEAN_LENGTHS` in their provenance) as their workload's: within one import, points of the same hardware,
model, framework and device count whose mean lengths lie close together (each within
:data:`NEIGHBOUR_RATIO` of the next, all within :data:`SPAN_RATIO`) take the median of their means, rounded
to a whole token. A point whose mean lies apart (GuideLLM's saturating "throughput" profile, whose requests
stop early: 87 output tokens beside 118-128) keeps its own. Throughputs are left as measured, and each file
gets an info issue that says what was read how. Importers of exact lengths (a fixed ``--input-len``) are not
touched.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import pandas as pd

from .base import ImportResult, Issue

__all__ = ["MEAN_LENGTHS", "NEIGHBOUR_RATIO", "SPAN_RATIO", "common_mean_lengths"]

MEAN_LENGTHS = "mean_lengths"
"""Provenance key an importer sets (True) where its lengths are the means of each load point's requests."""
NEIGHBOUR_RATIO = 1.1
"""Sorted mean lengths at most this far apart (ratio) belong to one workload."""
SPAN_RATIO = 1.25
"""The largest over the smallest mean length of one workload."""
_KEYS = ("hardware", "model", "framework", "device_count")
_WORDS = {"input_len_tok": "input length", "output_len_tok": "output length"}


def _workloads(values: np.ndarray) -> list[np.ndarray]:
    """Groups of the distinct positive values, each value within NEIGHBOUR_RATIO of the previous one and the
    group within SPAN_RATIO."""
    u = np.unique(values[np.isfinite(values) & (values > 0)])
    groups: list[list[float]] = []
    for v in u:
        if groups and v <= groups[-1][-1] * NEIGHBOUR_RATIO and v <= groups[-1][0] * SPAN_RATIO:
            groups[-1].append(float(v))
        else:
            groups.append([float(v)])
    return [np.asarray(g) for g in groups if len(g) > 1]


def common_mean_lengths(results: Sequence[ImportResult]) -> list[ImportResult]:
    """The results with the per-point mean lengths of one workload read as the workload's (see the module).

    Parameters
    ----------
    results
        The files of one import.

    Returns
    -------
    list of ImportResult
        The same results; those with mean lengths changed get new runs and an info issue per length column.
    """
    flagged = [i for i, r in enumerate(results) if r.provenance.get(MEAN_LENGTHS) and len(r.runs)]
    if not flagged:
        return list(results)
    frames = [results[i].runs.assign(_result=i, _row=np.arange(len(results[i].runs))) for i in flagged]
    pool = pd.concat(frames, ignore_index=True)
    keys = [k for k in _KEYS if k in pool.columns]
    new = {col: pool[col].astype("float64").to_numpy(copy=True) for col in _WORDS if col in pool.columns}
    notes: dict[int, list[Issue]] = {}
    groups = pool.groupby([pool[k].astype("string").fillna("") for k in keys], sort=False).indices \
        if keys else {(): np.arange(len(pool))}
    for idx in groups.values():
        for col, out in new.items():
            v = out[idx]
            for members in _workloads(v):
                hit = idx[np.isin(v, members)]
                rep = float(np.round(np.median(out[hit])))
                out[hit] = rep
                for i in sorted(set(pool["_result"].to_numpy()[hit])):
                    r = results[i]
                    notes.setdefault(i, []).append(Issue(
                        r.file, None, col,
                        f"the load points' mean {_WORDS[col]}s ({members.min():.5g} to {members.max():.5g} tokens, one "
                        f"workload's requests sampled and stopped differently at each point) are read as their "
                        f"median, {rep:g}, so that the points form one curve; throughputs are as measured",
                        "info"))
    out_results = list(results)
    for i in notes:
        mine = (pool["_result"] == i).to_numpy()
        rows = pool.loc[mine, "_row"].to_numpy()
        runs = results[i].runs.copy()
        for col, values in new.items():
            runs.loc[runs.index[rows], col] = values[mine]
        out_results[i] = dataclasses.replace(results[i], runs=runs, issues=(*results[i].issues, *notes[i]))
    return out_results
