"""Table shaping for the pages: dataset lists, filters, column choices, CSV export.

Pure pandas (no Streamlit), so the page logic is tested without running the app.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..curve_tables import has_positive
from ..plots import COLOR_OPTIONS, X_AXES, with_lengths
from ..schema import COLUMN_NAMES

if TYPE_CHECKING:
    from ..store import DatasetInfo

__all__ = [
    "DATASET_COLUMNS",
    "ISSUE_COLUMNS",
    "SEVERITIES",
    "FILTER_COLUMNS",
    "DEFAULT_RUN_COLUMNS",
    "datasets_frame",
    "filter_options",
    "filter_runs",
    "default_columns",
    "runs_csv_bytes",
    "issues_frame",
    "severity_counts",
    "skipped_rows",
    "default_x",
    "per_file_counts",
    "column_words",
    "column_help",
]

_WORDS = {"device_count": "devices", "tp_size": "tensor parallel", "pp_size": "pipeline parallel",
          "input_len_tok": "input length (tokens)", "output_len_tok": "output length (tokens)",
          "kv_cache_dtype": "KV-cache dtype", "fw_num_threads": "threads", "fw_n_batch": "n_batch (llama.cpp)",
          "batch_size": "batch / concurrency", "e2e_latency_s": "e2e latency (s)", "hardware_raw": "hardware (as written)",
          "model_raw": "model (as written)", "n_requests": "requests", "n_failed": "failed requests",
          "repeat_idx": "repeat", "power_w": "power (W)", "energy_j": "energy (J)"}
_SUFFIXES = (("_tok_s", " (tok/s)"), ("_rps", " (req/s)"), ("_tok", " (tokens)"), ("_gb", " (GB)"),
             ("_pct", " (%)"), ("_w", " (W)"), ("_s", " (s)"))
_PREFIXES = (("fw_", "framework: "), ("hw_", "telemetry: "))
_TOKENS = {"ttft": "TTFT", "tpot": "TPOT", "itl": "ITL", "gb": "GB", "pct": "%", "cpu": "CPU", "gpu": "GPU",
           "mem": "memory", "util": "use", "proc": "process", "rss": "RSS", "len": "length"}


def column_words(name: str) -> str:
    """A runs-table column in words for a header or an option: ``output_throughput_tok_s`` ->
    ``output throughput (tok/s)``, ``device_count`` -> ``devices``, ``fw_num_threads`` -> ``threads``.

    Parameters
    ----------
    name
        Column name.

    Returns
    -------
    str
    """
    if name in _WORDS:
        return _WORDS[name]
    head, tail = "", name
    for prefix, words in _PREFIXES:
        if tail.startswith(prefix):
            head, tail = words, tail[len(prefix):]
    unit = ""
    for suffix, words in _SUFFIXES:
        if tail.endswith(suffix) and len(tail) > len(suffix):
            tail, unit = tail[: -len(suffix)], words
            break
    return head + " ".join(_TOKENS.get(t, t) for t in tail.split("_")) + unit


def column_help(name: str) -> str:
    """The canonical column's description and raw name (for a header's tooltip), or the raw name alone.

    Parameters
    ----------
    name
        Column name.

    Returns
    -------
    str
    """
    from ..schema import COLUMNS

    desc = next((c.description for c in COLUMNS if c.name == name), "")
    return f"{desc} (column {name})" if desc else f"column {name}"

DATASET_COLUMNS = ("id", "name", "rows", "issues", "formats", "created")
ISSUE_COLUMNS = ("file", "row", "column", "message", "severity")
SEVERITIES = ("error", "warning", "info")
FILTER_COLUMNS = ("hardware", "model", "framework", "lengths")
"""Columns the runs table can be filtered on (``lengths`` is ``input/output``)."""

DEFAULT_RUN_COLUMNS = ("hardware", "model", "framework", "device_count", "tp_size", "input_len_tok",
                       "output_len_tok", "load_kind", "batch_size", "request_rate_rps",
                       "output_throughput_tok_s", "total_throughput_tok_s", "request_throughput_rps",
                       "e2e_latency_s", "ttft_s", "tpot_s", "source_file", "source_row")
"""Columns shown in the runs table until the user picks others (those with values only)."""


UNLIMITED_RATE = "unlimited"
"""How the runs table shows a request rate of ``inf`` (every request sent at once, as SGLang and vLLM record a
run without a rate limit); it had read "Infinity"."""


def runs_display(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs as the Data page's table shows them: a request rate of ``inf`` reads :data:`UNLIMITED_RATE`
    (the column becomes text, the other rates written as numbers); a copy, other columns unchanged."""
    if "request_rate_rps" not in runs.columns:
        return runs
    rate = pd.to_numeric(runs["request_rate_rps"], errors="coerce")
    if not np.isinf(rate.to_numpy(dtype=float, na_value=np.nan)).any():
        return runs
    text = [None if pd.isna(v) else UNLIMITED_RATE if np.isinf(v) else f"{v:g}" for v in rate]
    return runs.assign(request_rate_rps=pd.Series(text, index=runs.index, dtype="string"))


def datasets_frame(infos: Sequence[DatasetInfo]) -> pd.DataFrame:
    """One row per dataset for the browse table, newest first.

    Parameters
    ----------
    infos
        What ``Store.datasets()`` returns.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`DATASET_COLUMNS`.
    """
    rows = [{
        "id": str(d.id),
        "name": str(d.name),
        "rows": int(d.n_runs),
        "issues": int(d.n_issues),
        "formats": ", ".join(dict.fromkeys(str(f) for f in (d.formats or ()))),  # one per format, not per file
        "created": pd.Timestamp(d.created_at) if d.created_at is not None else pd.NaT,
    } for d in infos]
    df = pd.DataFrame(rows, columns=list(DATASET_COLUMNS))
    if not df.empty:
        df = df.sort_values("created", ascending=False, kind="stable").reset_index(drop=True)
    return df


def filter_options(runs: pd.DataFrame) -> dict[str, list[str]]:
    """The distinct values each filter can take in ``runs`` (sorted, as text).

    Parameters
    ----------
    runs
        A runs table.

    Returns
    -------
    dict
        Filter column -> sorted distinct values (empty values left out).
    """
    df = with_lengths(runs)
    out: dict[str, list[str]] = {}
    for col in FILTER_COLUMNS:
        if col not in df.columns:
            out[col] = []
            continue
        vals = df[col].dropna().astype(str).unique().tolist()
        out[col] = sorted(vals, key=_natural_key)
    return out


def _natural_key(s: str) -> tuple[object, ...]:
    # "128/2048" must sort before "1024/128": compare numbers as numbers.
    parts: list[object] = []
    for piece in s.replace("/", " / ").split():
        try:
            parts.append((0, float(piece), ""))
        except ValueError:
            parts.append((1, 0.0, piece))
    return tuple(parts)


def filter_runs(runs: pd.DataFrame, filters: Mapping[str, Sequence[str]]) -> pd.DataFrame:
    """Rows of ``runs`` whose filter columns take one of the chosen values.

    An empty or missing selection for a column keeps every row (no filter).

    Parameters
    ----------
    runs
        A runs table.
    filters
        Filter column (:data:`FILTER_COLUMNS`) -> chosen values (as text).

    Returns
    -------
    pandas.DataFrame
        The kept rows (with the derived ``lengths`` column), index reset.

    Raises
    ------
    ValueError
        A filter names a column that is not in :data:`FILTER_COLUMNS`.
    """
    df = with_lengths(runs)
    keep = pd.Series(True, index=df.index)
    for col, chosen in filters.items():
        if col not in FILTER_COLUMNS:
            raise ValueError(f"cannot filter on {col!r}; choose from {FILTER_COLUMNS}")
        if not chosen or col not in df.columns:
            continue
        keep &= df[col].astype("string").isin([str(c) for c in chosen]).fillna(False)
    return df.loc[keep.to_numpy()].reset_index(drop=True)


def default_columns(runs: pd.DataFrame) -> list[str]:
    """The columns to show first: :data:`DEFAULT_RUN_COLUMNS` that hold any value.

    Parameters
    ----------
    runs
        A runs table.

    Returns
    -------
    list of str
    """
    return [c for c in DEFAULT_RUN_COLUMNS if c in runs.columns and runs[c].notna().any()]


def runs_csv_bytes(runs: pd.DataFrame) -> bytes:
    """The runs as UTF-8 CSV in canonical column order (derived helper columns dropped).

    Parameters
    ----------
    runs
        A runs table, possibly with the derived ``lengths`` column.

    Returns
    -------
    bytes
    """
    canonical = [c for c in COLUMN_NAMES if c in runs.columns]
    extras = [c for c in runs.columns if c not in COLUMN_NAMES and c != "lengths"]
    return runs[canonical + extras].to_csv(index=False).encode("utf-8")


def issues_frame(issues: pd.DataFrame | Sequence[object], severities: Sequence[str] | None = None,
                 ) -> pd.DataFrame:
    """Issues as a table (file, row, column, message, severity), optionally by severity.

    Parameters
    ----------
    issues
        What ``Store.issues()`` returns, or a sequence of
        :class:`~perfmodel.importers.Issue` objects.
    severities
        Keep only these severities; ``None`` or empty keeps all.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`ISSUE_COLUMNS`, errors first.
    """
    if isinstance(issues, pd.DataFrame):
        df = issues.copy()
    else:
        df = pd.DataFrame([{c: getattr(i, c, None) for c in ISSUE_COLUMNS} for i in issues])
    for col in ISSUE_COLUMNS:
        if col not in df.columns:
            df[col] = pd.Series(pd.NA, index=df.index, dtype="object")
    df = df[list(ISSUE_COLUMNS)]
    df["row"] = pd.to_numeric(df["row"], errors="coerce").astype("Int64")
    if severities:
        df = df[df["severity"].isin(list(severities)).fillna(False)]
    order = {s: i for i, s in enumerate(SEVERITIES)}
    rank = df["severity"].map(lambda s: order.get(s, len(order)))
    df = df.assign(_rank=rank).sort_values(["_rank", "file", "row"], kind="stable", na_position="first")
    return df.drop(columns="_rank").reset_index(drop=True)


def skipped_rows(issues: pd.DataFrame) -> int:
    """How many rows an import left out: the distinct (file, row) of its error-severity issues that name a row
    (an error on a row drops it; warnings and notes keep it).

    Parameters
    ----------
    issues
        An issues table (:data:`ISSUE_COLUMNS`).

    Returns
    -------
    int
    """
    if not {"severity", "row"} <= set(issues.columns) or issues.empty:
        return 0
    errors = issues[(issues["severity"] == "error") & issues["row"].notna()]
    return int(len(errors.drop_duplicates([c for c in ("file", "row") if c in errors.columns])))


def severity_counts(issues: pd.DataFrame) -> dict[str, int]:
    """How many issues of each severity (every severity present, zero when none).

    Parameters
    ----------
    issues
        An issues table with a ``severity`` column.

    Returns
    -------
    dict
    """
    counts = {s: 0 for s in SEVERITIES}
    if "severity" in issues.columns:
        for sev, n in issues["severity"].value_counts().items():
            counts[str(sev)] = int(n)
    return counts


def default_color(runs: pd.DataFrame) -> str:
    """The colour column to offer first: the first of :data:`~perfmodel.plots.COLOR_OPTIONS` that
    tells the runs apart (more than one value), else ``hardware``. Never ``source_file``: a client that writes
    one file per load point (SGLang's bench_serving) had split one curve into single points, one per colour.

    Parameters
    ----------
    runs
        A runs table (``lengths`` already derived where present).

    Returns
    -------
    str
    """
    for col in COLOR_OPTIONS:
        if col != "source_file" and col in runs.columns and runs[col].nunique(dropna=True) > 1:
            return col
    return "hardware"


def default_x(runs: pd.DataFrame) -> str:
    """The x axis to plot first: the first of :data:`~perfmodel.plots.X_AXES` (the load axes, then the
    lengths) with a finite, positive value (an offline run's request rate is ``inf``: chosen for it, the chart
    showed nothing).

    Parameters
    ----------
    runs
        A runs table.

    Returns
    -------
    str
        ``batch_size`` when no load column has a value.
    """
    return next((col for col in X_AXES if has_positive(runs, col)), X_AXES[0])


def per_file_counts(runs: pd.DataFrame, issues: pd.DataFrame) -> pd.DataFrame:
    """Runs imported and issues by severity, per source file.

    Parameters
    ----------
    runs
        A dataset's runs (``source_file`` column).
    issues
        Its issues (``file``, ``severity`` columns).

    Returns
    -------
    pandas.DataFrame
        Columns file, runs, error, warning, info; one row per file seen in either.
    """
    n_runs = runs["source_file"].value_counts() if "source_file" in runs.columns else pd.Series(dtype=int)
    files = sorted({*map(str, n_runs.index), *map(str, issues.get("file", pd.Series(dtype=str)).dropna())})
    rows = []
    for f in files:
        sev = issues.loc[issues["file"] == f, "severity"].value_counts() if len(issues) else {}
        rows.append({"file": f, "runs": int(n_runs.get(f, 0)),
                     **{s: int(sev.get(s, 0)) for s in SEVERITIES}})
    return pd.DataFrame(rows, columns=["file", "runs", *SEVERITIES])
