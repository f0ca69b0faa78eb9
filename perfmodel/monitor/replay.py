"""A stored dataset (or any runs table) replayed as a metric stream, one series per measurement.

A runs table is usually a sweep: its runs differ in batch size, concurrency and lengths, and the change from one
to the next is the sweep, not an anomaly. So each configuration and load (:func:`configuration_of`) is its own
series, in measurement order, and only repeats of the same measurement are judged against each other. The
Monitor page's replay and ``perfmodel detect DATASET`` both read a dataset this way.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..curve_tables import config_labels
from .streams import MetricStream, replay_runs

__all__ = ["REPLAY_LOAD", "REPLAY_GROUP", "replay_columns", "configuration_of", "replay_configurations"]

REPLAY_LOAD = ("load_kind", "batch_size", "request_rate_rps")
"""The load columns: with the configuration key (:func:`perfmodel.evaluate.config_key`) and the framework
version, they make two runs of a stored dataset the same measurement (only those are judged together)."""
REPLAY_GROUP = "configuration"
"""The group column of a replayed dataset: :func:`configuration_of`'s label."""


def _load(runs: pd.DataFrame) -> list[str]:
    """The load of each run, as the page names it ("batch 8", "concurrency 4", "rate 2/s")."""
    def col(name: str) -> list[Any]:
        return runs[name].tolist() if name in runs.columns else [None] * len(runs)

    out = []
    for b, r, k in zip(col("batch_size"), col("request_rate_rps"), col("load_kind"), strict=True):
        b, r = pd.to_numeric(b, errors="coerce"), pd.to_numeric(r, errors="coerce")
        if k == "request_rate" and pd.notna(r):
            out.append(f"rate {r:g}/s")
        elif pd.notna(b):
            out.append(f"{'concurrency' if k == 'concurrency' else 'batch'} {b:g}")
        else:
            out.append("")
    return out


def replay_columns(runs: pd.DataFrame) -> list[str]:
    """The columns that make two runs of ``runs`` the same measurement: the configuration key every page
    uses (:func:`perfmodel.evaluate.config_key`), the framework version and the load (:data:`REPLAY_LOAD`),
    each where it holds a value.

    Parameters
    ----------
    runs
        A canonical runs table.

    Returns
    -------
    list of str
    """
    from ..evaluate import config_key

    cols = [*config_key(runs), "framework_version", *REPLAY_LOAD]
    return [c for c in dict.fromkeys(cols) if c in runs.columns and runs[c].notna().any()]


def _group_codes(runs: pd.DataFrame, cols: list[str]) -> np.ndarray:
    if not cols:
        return np.zeros(len(runs), dtype=np.int64)
    return runs.groupby(cols, dropna=False, sort=False).ngroup().to_numpy()


def configuration_of(runs: pd.DataFrame) -> pd.Series:
    """One readable configuration label per run (hardware, model, lengths, batch size...): runs with the
    same label are repeats of one measurement.

    Parameters
    ----------
    runs
        A canonical runs table.

    Returns
    -------
    pandas.Series
    """
    cols = replay_columns(runs)
    if not cols:
        return pd.Series("all runs", index=runs.index, dtype=object)
    base = [c for c in cols if c not in REPLAY_LOAD]
    key, base_key = _group_codes(runs, cols), _group_codes(runs, base)
    # One label per configuration, built from its first run (no pass over every row in Python).
    base_codes, base_first = np.unique(base_key, return_index=True)
    uniq = runs.iloc[base_first][base].reset_index(drop=True)
    labels = config_labels(uniq, base) if base and len(uniq) > 1 else [""] * len(uniq)
    base_label = dict(zip(base_codes.tolist(), labels, strict=True))
    codes, first = np.unique(key, return_index=True)
    loads = _load(runs.iloc[first])
    named: dict[int, str] = {}
    seen: dict[str, int] = {}
    for code, pos, ld in zip(codes.tolist(), first.tolist(), loads, strict=True):
        b = base_label[int(base_key[pos])]
        lab = " · ".join(p for p in (b, ld) if p and p != "(all runs)") or "all runs"
        # Two configurations the label cannot tell apart (a column it leaves out) stay apart.
        seen[lab] = seen.get(lab, 0) + 1
        named[code] = lab if seen[lab] == 1 else f"{lab} #{seen[lab]}"
    return pd.Series([named[k] for k in key.tolist()], index=runs.index, dtype=object)


def replay_configurations(runs: pd.DataFrame, *, source: str) -> MetricStream:
    """``runs`` replayed as a stream with one group per measurement (:func:`configuration_of`), on the runs'
    clock where every run has a timestamp.

    Parameters
    ----------
    runs
        A canonical runs table.
    source
        Name used in messages.

    Returns
    -------
    MetricStream
    """
    from dataclasses import replace

    runs = runs.assign(**{REPLAY_GROUP: configuration_of(runs)})
    stream = replay_runs(runs, source=source, group_by=(REPLAY_GROUP,))
    if "timestamp" in runs.columns and runs["timestamp"].notna().all():
        # replay_runs counts seconds from the first run; on the clock, "71.25k s" becomes a date and a time
        first = pd.to_datetime(runs["timestamp"], utc=True).min().timestamp()
        stream = replace(stream, frame=stream.frame.assign(timestamp_s=stream.frame["timestamp_s"] + first))
    return stream
