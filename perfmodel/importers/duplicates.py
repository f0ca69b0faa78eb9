"""The same measurement given twice in one import: read once, stored once.

Benchmark clients write one load point into more than one file: ``vllm bench sweep serve`` writes each run
to ``run=N.json`` and all of them again to the directory's ``summary.json``; the gpu_conc client writes
``benchmark_concurrency_N.json`` per level and the same objects into ``benchmark_summary_*.json``;
``trtllm-bench`` prints a report from which a summary CSV is extracted. Given together (``perfmodel import
dir/*``), every such point was stored twice, and a fit or an anomaly check then counted it twice.

:func:`same_content` finds files given twice (the same bytes, by SHA-256) so they are read once, and
:func:`drop_duplicate_points` keeps one of two rows of *different* files that are the same point: the
same hardware, model, load kind, repeat index, input and output length, batch size or concurrency and
request rate, no configuration cell that differs where both files record one (device count, TP, PP,
dtypes, quantization, framework and its version, request counts, timestamp), and the same measured
throughputs and latencies within :data:`DUPLICATE_RTOL`. A row is never compared with rows of its own file,
and two repeats of one configuration differ in ``repeat_idx`` or in what they measured, so neither is
taken for a copy of the other. Each row left out is a warning issue naming both files and rows.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..schema import LATENCY_COLUMNS
from .base import ASSUMED_DEVICE_COUNT, MAX_ISSUES_PER_FILE, ImportResult, Issue

__all__ = ["DUPLICATE_RTOL", "TIMESTAMP_TOL_S", "file_sha256", "same_content", "note_same_content",
           "drop_duplicate_points"]

DUPLICATE_RTOL = 1e-6
"""Relative difference under which two measured figures are the same figure written twice (a JSON float and
its copy in a CSV printed to 4 decimals of ~10,000 tok/s differ by ~1e-9; two runs of one configuration
differ by far more than 1e-6)."""
TIMESTAMP_TOL_S = 1.0
"""Two recorded start times at most this far apart are the same (one file may keep fractions of a second)."""

#: Cells that must hold the same value (empty in both counts as the same).
_KEY_TEXT = ("hardware", "model", "load_kind", "repeat_idx")
_KEY_NUMBER = ("input_len_tok", "output_len_tok", "batch_size", "request_rate_rps")
#: Configuration cells compared only where both files record them (a summary CSV that names no TP size
#: still holds the report's point).
_COMPATIBLE_TEXT = ("framework", "framework_version", "weight_dtype", "kv_cache_dtype", "quantization")
_COMPATIBLE_NUMBER = ("device_count", "tp_size", "pp_size", "n_requests", "n_failed")
#: Measured figures: at least one throughput recorded by both (or the mean e2e and TTFT of as many requests), and
#: every figure both record, equal.
_THROUGHPUTS = ("output_throughput_tok_s", "total_throughput_tok_s", "request_throughput_rps")
_MEASURED = (*_THROUGHPUTS, *(c for c in LATENCY_COLUMNS if not c.startswith(("tpot", "itl"))))
"""TPOT and ITL left out: clients derive them in their own ways from the same requests (llmperf's summary from
the means, its individual responses per request: 14.83 against 14.43 ms for one run, whose throughputs, e2e and
TTFT agree exactly), so they told one measurement apart from itself."""
#: Text cells that say the file did not record a value (finalize writes them).
_UNRECORDED = {"framework": "unknown"}


def file_sha256(path: str | Path) -> str | None:
    """Hex SHA-256 of a file's bytes, or None when it cannot be read (the import then says why).

    Parameters
    ----------
    path
        The file.

    Returns
    -------
    str or None
    """
    try:
        with open(path, "rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest()
    except OSError:
        return None


def same_content(digests: Sequence[str | None]) -> dict[int, int]:
    """Which files repeat an earlier one's content.

    Parameters
    ----------
    digests
        Each file's SHA-256 (None: unknown, never a repeat).

    Returns
    -------
    dict
        Index of each repeated file -> index of the first file with its content.
    """
    first: dict[str, int] = {}
    repeats: dict[int, int] = {}
    for i, d in enumerate(digests):
        if d is None:
            continue
        if d in first:
            repeats[i] = first[d]
        else:
            first[d] = i
    return repeats


def note_same_content(result: ImportResult, repeats: Sequence[tuple[str, str]]) -> ImportResult:
    """``result`` with a warning for each file that held the bytes of one it was read from, and was not read.

    Parameters
    ----------
    result
        The file that was read (with its config, for an optimum-benchmark report).
    repeats
        ``(name given again, name of the file read)`` pairs; the names are equal for a file given twice.

    Returns
    -------
    ImportResult
    """
    if not repeats:
        return result
    notes = [Issue(result.file, None, None, (
        ("the file was given twice" if again == first else f"{again} holds the same bytes as {first}")
        + " (same SHA-256): read once, its rows stored once"), "warning")
        for again, first in repeats]
    return _with_issues(result, notes)


def _with_issues(result: ImportResult, extra: Sequence[Issue]) -> ImportResult:
    order = {"error": 0, "warning": 1, "info": 2}
    issues = sorted((*result.issues, *extra), key=lambda i: order[i.severity])  # stable: errors first
    return dataclasses.replace(result, issues=tuple(issues))


def _text(s: pd.Series, unrecorded: str | None = None) -> np.ndarray:
    t = s.astype("string").str.strip().str.casefold()
    if unrecorded is not None:
        t = t.mask(t == unrecorded)
    return t.fillna("").to_numpy(dtype=object)


def _number(s: pd.Series) -> np.ndarray:
    return pd.to_numeric(s, errors="coerce").astype("float64").to_numpy(na_value=np.nan)


def _close(a: np.ndarray, b: np.ndarray, rtol: float) -> np.ndarray:
    """Whether ``a[i]`` and ``b[i]`` are the same figure; NaN on either side is no evidence (True)."""
    with np.errstate(invalid="ignore"):
        same = (a == b) | (np.abs(a - b) <= rtol * np.maximum(np.abs(a), np.abs(b)))
    return same | np.isnan(b) | np.isnan(a)


def drop_duplicate_points(results: Sequence[ImportResult]) -> list[ImportResult]:
    """The results with each point that two files of one import both hold stored once.

    Of two matching rows the one with more recorded cells is kept (the report that names the TP size and
    dtypes over the summary CSV that does not), the earlier on a tie; the other row is left out of its file's
    runs with a warning naming both files and rows. A row matches at most one row of each other file.

    Parameters
    ----------
    results
        The files of one import, in order.

    Returns
    -------
    list of ImportResult
        The same results; those that lost rows get new runs and the warnings.
    """
    results = list(results)
    live = [i for i, r in enumerate(results) if len(r.runs)]
    if len(live) < 2:
        return results
    pool = pd.concat([results[i].runs.assign(_result=i, _pos=np.arange(len(results[i].runs))) for i in live],
                     ignore_index=True)
    n = len(pool)
    owner_all = pool["_result"].to_numpy()
    # One integer per distinct key (a factorized code per column, combined), so that only the keys rows of
    # two files share are looked at row by row: a million distinct points cost no Python loop.
    code = np.zeros(n, dtype="int64")
    for c in (*_KEY_TEXT, *_KEY_NUMBER):
        if c not in pool.columns:
            continue
        # Lengths and loads of one point are written the same way in both files; rounding only absorbs
        # float noise (a mean of 1000 tokens read as 999.9999999).
        values = np.round(_number(pool[c]), 6) if c in _KEY_NUMBER else pool[c]
        c_codes, uniques = pd.factorize(values, use_na_sentinel=False)
        code, _ = pd.factorize(code * (len(uniques) + 1) + c_codes)
    by_key = pd.DataFrame({"code": code, "owner": owner_all}).groupby("code")["owner"]
    shared = np.flatnonzero((by_key.transform("min") != by_key.transform("max")).to_numpy())
    if not len(shared):
        return results
    # From here on only the rows whose key another file shares (positions in ``sub``).
    sub = pool.iloc[shared].reset_index(drop=True)
    owner = owner_all[shared]
    groups = pd.Series(np.arange(len(sub))).groupby(code[shared], sort=False).indices

    def column(c: str) -> pd.Series:
        return sub[c] if c in sub.columns else pd.Series(np.nan, index=sub.index)

    texts = {c: _text(column(c), _UNRECORDED.get(c)) for c in _COMPATIBLE_TEXT}
    numbers = {c: _number(column(c)) for c in _COMPATIBLE_NUMBER}
    # A device count the file did not record was assumed (tp x pp or 1): it says nothing about the point.
    assumed = np.isin(owner, [i for i in live if any(x.column == "device_count" and x.row is None
                                                      and x.message == ASSUMED_DEVICE_COUNT
                                                      for x in results[i].issues)])
    numbers["device_count"] = np.where(assumed, np.nan, numbers["device_count"])
    measured = {c: _number(column(c)) for c in _MEASURED}
    ts = pd.to_datetime(column("timestamp"), errors="coerce", utc=True)
    stamp = (ts - pd.Timestamp(0, tz="UTC")).dt.total_seconds().to_numpy(dtype="float64", na_value=np.nan)
    richness = sub.drop(columns=["_result", "_pos"]).notna().sum(axis=1).to_numpy()
    pos = sub["_pos"].to_numpy()
    labels = _number(column("source_row"))
    labels = np.where(np.isnan(labels), pos + 1, labels).astype("int64")

    def same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Whether rows ``a[i]`` and ``b[i]`` are one measurement."""
        ok = np.ones(len(a), dtype=bool)
        for t in texts.values():
            ok &= (t[a] == "") | (t[b] == "") | (t[a] == t[b])
        for v in numbers.values():
            ok &= np.isnan(v[a]) | np.isnan(v[b]) | (v[a] == v[b])
        ok &= np.isnan(stamp[a]) | np.isnan(stamp[b]) | (np.abs(stamp[a] - stamp[b]) <= TIMESTAMP_TOL_S)
        both = np.zeros(len(a), dtype=bool)
        for c in _THROUGHPUTS:
            both |= ~np.isnan(measured[c][a]) & ~np.isnan(measured[c][b])
        # ... or, for a file of requests that gives no throughput (llmperf's individual responses), the mean
        # e2e and TTFT of the same number of requests, both recorded
        same_requests = ~np.isnan(numbers["n_requests"][a]) & ~np.isnan(numbers["n_requests"][b])
        for c in ("e2e_latency_s", "ttft_s"):
            same_requests &= ~np.isnan(measured[c][a]) & ~np.isnan(measured[c][b])
        ok &= both | same_requests
        for v in measured.values():
            ok &= _close(v[a], v[b], DUPLICATE_RTOL)
        return ok

    lost_rows: list[np.ndarray] = []   # rows left out ...
    stay_rows: list[np.ndarray] = []   # ... and the row of another file that stays for each

    # A key two rows share (one of each of two files, by how ``shared`` was chosen): all such pairs at once.
    pairs = np.array([idx for idx in groups.values() if len(idx) == 2], dtype=int).reshape(-1, 2)
    if len(pairs):
        a, b = pairs[:, 0], pairs[:, 1]
        hit = same(a, b)
        # The copy that records more stays (the earlier file's on a tie).
        b_stays = richness[b] > richness[a]
        lost_rows.append(np.where(b_stays, a, b)[hit])
        stay_rows.append(np.where(b_stays, b, a)[hit])
    # Keys more rows share: each row against the rows kept so far, in file order.
    for idx in groups.values():
        if len(idx) == 2:
            continue
        kept: list[int] = []
        partners: dict[int, set[int]] = {}  # kept row -> the files whose row it already stands for
        found: list[list[int]] = []         # [row left out, row that stays]
        for r in idx:
            cand = np.array([k for k in kept if owner[k] != owner[r] and owner[r] not in partners[k]], dtype=int)
            hits = cand[same(np.full(len(cand), r), cand)] if len(cand) else cand
            if not len(hits):
                kept.append(r)
                partners[r] = set()
                continue
            k = int(hits[0])
            if richness[r] > richness[k]:
                # The copy that records more stays; it stands for the files the other stood for.
                kept[kept.index(k)] = r
                partners[r] = partners.pop(k) | {owner[k]}
                for pair in found:
                    if pair[1] == k:
                        pair[1] = r
                r, k = k, r
            else:
                partners[k].add(owner[r])
            found.append([r, k])
        if found:
            lost_rows.append(np.array([p[0] for p in found], dtype=int))
            stay_rows.append(np.array([p[1] for p in found], dtype=int))
    out = list(results)
    if not lost_rows:
        return out
    lost_all, stay_all = np.concatenate(lost_rows), np.concatenate(stay_rows)
    for i in np.unique(owner[lost_all]).tolist():
        mine = owner[lost_all] == i
        order = np.argsort(labels[lost_all[mine]], kind="stable")
        lost, stays = lost_all[mine][order], stay_all[mine][order]
        notes = [Issue(results[i].file, int(labels[r]), None, (
            f"the same measurement as {results[owner[k]].file} row {int(labels[k])} (same configuration, lengths "
            f"and load; throughputs and latencies equal within {DUPLICATE_RTOL:g}): left out here, so the point "
            "is stored once"), "warning") for r, k in zip(lost[:MAX_ISSUES_PER_FILE].tolist(),
                                                          stays[:MAX_ISSUES_PER_FILE].tolist(), strict=True)]
        if len(lost) > MAX_ISSUES_PER_FILE:
            notes.append(Issue(results[i].file, None, None, (
                f"{len(lost) - MAX_ISSUES_PER_FILE} more row(s) that another file of this import also holds left "
                "out, not listed"), "warning"))
        rows = pos[lost]
        runs = results[i].runs.drop(index=results[i].runs.index[rows]).reset_index(drop=True)
        out[i] = _with_issues(dataclasses.replace(results[i], runs=runs), notes)
    return out
