"""Metric streams: time series of per-interval samples, each with a group key.

A :class:`MetricStream` is a frame with ``timestamp_s`` (seconds, epoch or
relative), ``group`` (deployment, GPU index, container: tenants sharing a GPU
are judged separately) and one float column per metric. Sources:

* CSV or JSON Lines of samples (:func:`read_stream`): a time column
  (``timestamp``, ``time``, ``ts``, ``t``, ``timestamp_s``, ``timestamp_ms``;
  numbers are seconds unless the name ends in ``_ms``, text is parsed as a
  date), an optional group column, numeric metric columns;
* Prometheus text exposition dumps: several scrapes, each starting with a
  comment ``# TIMESTAMP <epoch s or ISO time>`` (or samples carrying their own
  millisecond timestamps). Gauges are kept as they are, counters become rates
  (``<name>_per_s``), histograms/summaries the mean of the interval
  (``<name>_mean``, from the change of ``_sum`` over the change of ``_count``).
  Server metrics are prefixed ``fw_``, DCGM/GPU exporters ``hw_``;
* ``nvidia-smi --query-gpu=... --format=csv`` logs (one row per GPU per
  sample; the group is ``gpu<index>``);
* a replay of a stored sweep or dataset (:func:`replay_runs`), one sample per
  run in measurement order, grouped by configuration.

Every reader raises :class:`StreamFormatError` naming the file, row and column.
"""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import PerfmodelError, Problem, ValidationError

__all__ = [
    "STREAM_FORMATS",
    "TIME_COLUMNS",
    "GROUP_COLUMNS",
    "PRIMARY_HINTS",
    "GENERATED_TOKEN_RATES",
    "throughput_metrics",
    "StreamFormatError",
    "MetricStream",
    "read_stream",
    "read_stream_bytes",
    "parse_prometheus_scrape",
    "PrometheusRates",
    "replay_runs",
    "replay_dataset",
]

STREAM_FORMATS = ("auto", "csv", "jsonl", "prometheus", "nvidia-smi")
TIME_COLUMNS = ("timestamp_s", "timestamp", "time", "ts", "t", "time_s", "timestamp_ms", "time_ms")
GROUP_COLUMNS = ("group", "deployment", "gpu", "gpu_index", "index", "container", "container_id", "pod",
                 "instance", "tenant")
#: Label names that make a Prometheus sample belong to a group, in order of preference.
GROUP_LABELS = ("gpu", "GPU", "gpu_index", "device", "container", "pod", "model_name", "engine", "instance")
GENERATED_TOKEN_RATES = ("generation_tokens_per_s", "gen_throughput")
"""Substrings of the servers' own generated-token rates, their output throughput (tok/s):
vLLM's and SGLang's ``<server>:generation_tokens_total`` counters, which a dump or a live scrape turns into
``fw_vllm_generation_tokens_per_s`` / ``fw_sglang_generation_tokens_per_s``, and SGLang's
``sglang:gen_throughput`` gauge. TGI exposes no such counter (its ``tgi_request_generated_tokens`` is a
histogram of tokens per request, a length, not a rate), so none is named for it.

The prompt-token rate (``*_prompt_tokens_per_s``) is left out on purpose: a prompt is counted once, when it is
prefilled, so the rate follows how many requests arrive and how long their prompts are, not how fast the
server serves them; judged as a throughput it would alarm on a change of traffic (and stay quiet while decoding
slows down). It stays in the stream as evidence for the hints and can be judged by name (``--metric``)."""
#: Substrings of the metric names monitored by default (throughput and latency); the rest are evidence for hints.
PRIMARY_HINTS = ("throughput", "tok_s", *GENERATED_TOKEN_RATES, "latency", "ttft", "tpot", "itl", "e2e",
                 "time_to_first_token", "time_per_output_token", "inter_token")
_TS_COMMENT = re.compile(r"^#\s*(?:TIMESTAMP|scrape[_ ]time|time)\s*[:=]?\s*(\S+)\s*$", re.IGNORECASE)
_SANITIZE = re.compile(r"[^a-z0-9]+")
_HW_PREFIXES = ("dcgm_", "nvidia_", "nvml_", "gpu_", "amd_")
_RATIO_WORDS = ("perc", "ratio", "usage", "util")


class StreamFormatError(ValidationError):
    """A metric stream file could not be read; lists every problem with file, row and column."""


@dataclass(frozen=True)
class MetricStream:
    """A recorded or replayed metric stream.

    Attributes
    ----------
    frame
        ``timestamp_s``, ``group`` and one float column per metric, sorted by group then time.
    metrics
        The metric columns, in file order.
    source
        File name or dataset reference.
    kind
        One of :data:`STREAM_FORMATS` (or ``"replay"``).
    context
        Extra per-sample columns that are not metrics (``batch_size``, lengths, ``device``).
    notes
        What the reader warns of, one sentence each: timestamps that go back in time (the samples are still
        judged in file order), a seconds column that holds epoch milliseconds.
    """

    frame: pd.DataFrame
    metrics: tuple[str, ...]
    source: str
    kind: str
    context: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def groups(self) -> list[str]:
        """Distinct group keys in first-seen order."""
        return list(dict.fromkeys(self.frame["group"].astype(str).tolist()))

    def primary_metrics(self) -> list[str]:
        """Metrics monitored by default: throughput and latency columns (all metrics when none is).

        Returns
        -------
        list of str
        """
        prim = [m for m in self.metrics if any(h in m.lower() for h in PRIMARY_HINTS)]
        return prim or list(self.metrics)

    def throughput_metrics(self) -> list[str]:
        """The stream's output-throughput columns, best first (see :func:`throughput_metrics`).

        Returns
        -------
        list of str
        """
        return throughput_metrics(self.metrics)

    def series(self, metric: str, group: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Timestamps and values of one metric for one group.

        Parameters
        ----------
        metric
            A metric column.
        group
            A group key (default: the first group).

        Returns
        -------
        (t_s, values)

        Raises
        ------
        PerfmodelError
            When the metric or group is not in the stream.
        """
        if metric not in self.metrics:
            raise PerfmodelError(f"{self.source}: no metric {metric!r}; the stream has: "
                                 + ", ".join(self.metrics[:30]))
        g = self.groups[0] if group is None else str(group)
        sub = self.frame[self.frame["group"] == g]
        if sub.empty:
            raise PerfmodelError(f"{self.source}: no group {g!r}; the stream has: " + ", ".join(self.groups[:30]))
        return sub["timestamp_s"].to_numpy(dtype="float64"), sub[metric].to_numpy(dtype="float64")

    def group_frame(self, group: str) -> pd.DataFrame:
        """The samples of one group, in time order (index reset).

        Parameters
        ----------
        group
            A group key.

        Returns
        -------
        pandas.DataFrame
        """
        return self.frame[self.frame["group"] == str(group)].reset_index(drop=True)


def throughput_metrics(metrics: Sequence[str]) -> list[str]:
    """The output-throughput columns among ``metrics``, the ones an expected throughput (a saturation curve's or a
    predictor's output tok/s) applies to, best first: a column named output throughput, then a server's own
    generated-token rate (:data:`GENERATED_TOKEN_RATES`), then any other throughput column but a request rate
    (req/s) or a prompt-token rate.

    vLLM's dump had no column named "throughput" (its rate is ``fw_vllm_generation_tokens_per_s``), so
    ``--expect-from`` asked for ``--expect-metric`` although the stream held the token rate.

    Parameters
    ----------
    metrics
        Metric column names, in stream order.

    Returns
    -------
    list of str
    """
    low = {m: m.lower() for m in metrics}
    named = [m for m in metrics if "throughput" in low[m] and "output" in low[m]]
    served = [m for m in metrics if any(h in low[m] for h in GENERATED_TOKEN_RATES) and m not in named]
    other = [m for m in metrics if "throughput" in low[m] and m not in named and m not in served
             and "request" not in low[m] and "prompt" not in low[m] and not low[m].endswith("_rps")]
    return [*named, *served, *other]


def _sanitize(name: str) -> str:
    return _SANITIZE.sub("_", name.lower()).strip("_")


EPOCH_MS_FROM = 1e11
"""A time read as seconds from this on (the year 5138) is taken for epoch milliseconds, and said so."""


def _backwards_note(frame: pd.DataFrame, source: str, where: Sequence[str] | None) -> str | None:
    """A warning when timestamps go back in time within a group, in file order, or None.

    A file whose rows were shuffled had been judged as it came and gave "0 alert(s)" with nothing said: the
    samples stay in file order (the order a live monitor receives them), but the reader says how many go back
    and where the first does."""
    t = pd.to_numeric(frame["timestamp_s"], errors="coerce")
    prev = t.groupby(frame["group"].astype(str), sort=False).shift(1)
    back = (t < prev).fillna(False).to_numpy(dtype=bool)
    if not back.any():
        return None
    i = int(np.flatnonzero(back)[0])
    at = where[i] if where is not None else f"sample {i + 1}"
    groups = frame["group"].astype(str)
    grp = f" (group {groups.iloc[i]})" if groups.nunique() > 1 else ""
    return (f"{source}: {int(back.sum()):,} of {len(frame):,} sample(s) go back in time, the first at {at}{grp}: "
            f"t={float(t.iloc[i]):.15g} s after t={float(prev.iloc[i]):.15g} s. The samples are judged in file order "
            "(as a live monitor receives them), so shuffled rows are judged shuffled: sort the file by time if "
            "they are out of order")


def _finish(frame: pd.DataFrame, metrics: Sequence[str], source: str, kind: str,
            context: Sequence[str] = (), *, where: Sequence[str] | None = None,
            notes: Sequence[str] = ()) -> MetricStream:
    """The stream of a frame in file order; ``where`` names each row's place in the file (``row 7``) for the
    warning of :func:`_backwards_note`, ``notes`` are the reader's own warnings."""
    if frame.empty or not metrics:
        raise StreamFormatError(f"{source}: no samples with numeric metrics were found",
                                [Problem("expected a time column and at least one numeric metric column",
                                         file=source)])
    frame = frame.copy()
    frame["group"] = frame["group"].astype(str)
    back = _backwards_note(frame, source, where if where is not None and len(where) == len(frame) else None)
    notes = (*notes, *([back] if back else []))
    order = pd.Series(pd.Categorical(frame["group"], categories=list(dict.fromkeys(frame["group"]))))
    frame = frame.assign(_g=order.cat.codes.to_numpy(), _i=np.arange(len(frame)))
    # Arrival (file) order within a group, not timestamp order: that is the order a live monitor sees,
    # and a clock that jumps back must not reorder the samples.
    frame = frame.sort_values(["_g", "_i"], kind="stable").drop(columns=["_g", "_i"]).reset_index(drop=True)
    cols = ["timestamp_s", "group", *metrics, *[c for c in context if c in frame.columns]]
    return MetricStream(frame[cols], tuple(metrics), source, kind, tuple(c for c in context if c in frame.columns),
                        tuple(notes))


def _epoch_ms_note(times: np.ndarray, column: str, source: str) -> str | None:
    """A warning when a time column read as seconds holds epoch milliseconds (values from :data:`EPOCH_MS_FROM`),
    or None."""
    fin = times[np.isfinite(times)]
    if column.lower().endswith("_ms") or not fin.size or float(np.median(fin)) < EPOCH_MS_FROM:
        return None
    return (f"{source}: the time column {column!r} holds values like {float(np.median(fin)):.4g}, which as seconds "
            "would be thousands of years from now: they look like epoch milliseconds and are read as seconds, "
            "so every interval reads 1,000x too long; rename the column timestamp_ms (read as milliseconds), or write "
            "seconds")


def _parse_times(raw: pd.Series, column: str, source: str, row_offset: int = 1) -> np.ndarray:
    num = pd.to_numeric(raw, errors="coerce")
    if num.notna().all():
        out = num.to_numpy(dtype="float64")
        return out / 1000.0 if column.lower().endswith("_ms") else out
    txt = raw.astype("string").str.strip()
    dt = pd.to_datetime(txt, errors="coerce", utc=True, format="mixed")
    bad = dt.isna() & num.isna()
    if bad.any():
        problems = [Problem(f"expected a time (seconds or a date), got {raw.iloc[i]!r}", file=source,
                            row=int(i) + row_offset, column=column) for i in np.flatnonzero(bad.to_numpy())]
        raise StreamFormatError(f"{source}: {int(bad.sum())} timestamp(s) could not be read", problems)
    secs = (dt - pd.Timestamp("1970-01-01", tz="UTC")) / pd.Timedelta(seconds=1)
    out = np.where(num.notna().to_numpy(), num.to_numpy(dtype="float64"), secs.to_numpy(dtype="float64"))
    return out


def _pick(columns: Sequence[str], wanted: Iterable[str], given: str | None, what: str, source: str,
          required: bool) -> str | None:
    if given is not None:
        if given not in columns:
            raise StreamFormatError(f"{source}: no {what} column {given!r}",
                                    [Problem(f"the columns are: {', '.join(map(str, columns))}", file=source,
                                             column=given)])
        return given
    low = {str(c).lower(): c for c in columns}
    for w in wanted:
        if w in low:
            return str(low[w])
    if required:
        raise StreamFormatError(f"{source}: no {what} column",
                                [Problem(f"expected one of {', '.join(wanted)}; the columns are: "
                                         f"{', '.join(map(str, columns))}", file=source)])
    return None


def _samples_frame(df: pd.DataFrame, source: str, kind: str, time_col: str | None, group_col: str | None,
                   row_offset: int) -> MetricStream:
    cols = [str(c) for c in df.columns]
    df.columns = cols
    tcol = _pick(cols, TIME_COLUMNS, time_col, "time", source, True)
    assert tcol is not None
    gcol = _pick(cols, GROUP_COLUMNS, group_col, "group", source, False)
    long_form = {"metric", "value"} <= set(cols)
    if long_form:  # long form: one metric per row
        wide = df.pivot_table(index=[tcol] + ([gcol] if gcol else []), columns="metric", values="value",
                              aggfunc="mean", sort=False).reset_index()
        wide.columns = [str(c) for c in wide.columns]
        df, cols = wide, [str(c) for c in wide.columns]
    times = _parse_times(df[tcol], tcol, source, row_offset)
    notes = [n for n in (_epoch_ms_note(times, tcol, source),) if n]
    # a long-form file's rows are gathered into samples: its rows are not the file's
    where = None if long_form else [f"row {i + row_offset}" for i in range(len(df))]
    problems: list[Problem] = []
    metrics: list[str] = []
    out: dict[str, Any] = {"timestamp_s": times,
                           "group": df[gcol].astype("string").fillna("").to_numpy() if gcol else "all"}
    for c in cols:
        if c in (tcol, gcol):
            continue
        s = df[c]
        num = pd.to_numeric(s, errors="coerce")
        bad = num.isna() & s.notna()
        if bad.any():
            txt = s[bad].astype("string").str.strip().str.lower()
            bad.loc[bad] = ~txt.isin(["", "nan", "null", "none", "n/a", "[n/a]", "na"]).to_numpy(dtype=bool)
        if bad.all() and s.notna().any():
            continue  # a text column (labels, names): not a metric
        for i in np.flatnonzero(bad.to_numpy())[:10]:
            problems.append(Problem(f"expected a number, got {s.iloc[i]!r}", file=source, row=int(i) + row_offset,
                                    column=c))
        out[c] = num.astype("float64").to_numpy()
        metrics.append(c)
    if problems:
        raise StreamFormatError(f"{source}: {len(problems)} value(s) are not numbers", problems)
    return _finish(pd.DataFrame(out), metrics, source, kind, where=where, notes=notes)


def _read_csv_text(text: str, source: str, time_col: str | None, group_col: str | None) -> MetricStream:
    try:
        df = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, skipinitialspace=True)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise StreamFormatError(f"{source}: not a readable CSV file", [Problem(str(exc), file=source)]) from exc
    df = df.replace("", np.nan)
    return _samples_frame(df, source, "csv", time_col, group_col, 1)


def _read_jsonl_text(text: str, source: str, time_col: str | None, group_col: str | None) -> MetricStream:
    records: list[dict[str, Any]] = []
    problems: list[Problem] = []
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(Problem(f"not valid JSON ({exc.msg})", file=source, row=i))
            continue
        if not isinstance(rec, dict):
            problems.append(Problem("expected a JSON object per line", file=source, row=i))
            continue
        records.append({k: v for k, v in rec.items() if not isinstance(v, dict | list)})
    if problems:
        raise StreamFormatError(f"{source}: {len(problems)} line(s) could not be read", problems)
    if not records:
        raise StreamFormatError(f"{source}: the file has no samples", [Problem("no JSON lines", file=source)])
    return _samples_frame(pd.DataFrame.from_records(records), source, "jsonl", time_col, group_col, 1)


# ---------------------------------------------------------------- nvidia-smi

_SMI_NAMES = {
    "utilization.gpu": "hw_gpu_util_pct",
    "utilization.memory": "hw_gpu_mem_bw_util_pct",
    "memory.used": "hw_gpu_mem_used_mib",
    "memory.total": "hw_gpu_mem_total_mib",
    "memory.free": "hw_gpu_mem_free_mib",
    "power.draw": "hw_gpu_power_w",
    "power.draw.instant": "hw_gpu_power_w",
    "power.limit": "hw_gpu_power_limit_w",
    "enforced.power.limit": "hw_gpu_power_limit_w",
    "clocks.sm": "hw_gpu_sm_clock_mhz",
    "clocks.current.sm": "hw_gpu_sm_clock_mhz",
    "clocks.max.sm": "hw_gpu_sm_clock_max_mhz",
    "clocks.mem": "hw_gpu_mem_clock_mhz",
    "clocks.current.memory": "hw_gpu_mem_clock_mhz",
    "temperature.gpu": "hw_gpu_temp_c",
    "pcie.link.gen.current": "hw_pcie_gen",
    "pcie.link.width.current": "hw_pcie_width",
    "clocks_throttle_reasons.active": "hw_gpu_throttle_reasons",
    "clocks_event_reasons.active": "hw_gpu_throttle_reasons",
    "fan.speed": "hw_gpu_fan_pct",
}
_SMI_TEXT = {"name", "pci.bus_id", "uuid", "driver_version", "pstate", "serial", "vbios_version", "timestamp",
             "index", "gpu_name", "gpu_bus_id", "gpu_uuid"}
_UNIT = re.compile(r"\s*\[([^\]]*)\]\s*$")


def _looks_like_smi(header: Sequence[str]) -> bool:
    keys = {_UNIT.sub("", h).strip().lower() for h in header}
    return bool(keys & set(_SMI_NAMES)) and ("timestamp" in keys or "index" in keys)


def _read_smi_text(text: str, source: str) -> MetricStream:
    try:
        df = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, skipinitialspace=True)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise StreamFormatError(f"{source}: not a readable nvidia-smi CSV log", [Problem(str(exc), file=source)]
                                ) from exc
    # nvidia-smi repeats its header when -l restarts or logs are concatenated: drop those rows.
    df = df[df.iloc[:, 0].str.strip() != df.columns[0].strip()].reset_index(drop=True)
    raw_names = [str(c).strip() for c in df.columns]
    keys = [_UNIT.sub("", c).strip().lower() for c in raw_names]
    if "timestamp" not in keys:
        raise StreamFormatError(f"{source}: the nvidia-smi log has no timestamp column",
                                [Problem("query with --query-gpu=timestamp,index,... so samples have a time",
                                         file=source)])
    tcol = raw_names[keys.index("timestamp")]
    times = _parse_times(df[tcol].str.strip(), tcol, source)
    if "index" in keys:
        group = ("gpu" + df[raw_names[keys.index("index")]].str.strip()).to_numpy()
    elif "pci.bus_id" in keys:
        group = df[raw_names[keys.index("pci.bus_id")]].str.strip().to_numpy()
    else:
        group = np.full(len(df), "gpu0", dtype=object)
    out: dict[str, Any] = {"timestamp_s": times, "group": group}
    metrics: list[str] = []
    problems: list[Problem] = []
    for raw, key in zip(raw_names, keys, strict=True):
        if key in _SMI_TEXT:
            continue
        m = _UNIT.search(raw)
        unit = _sanitize(m.group(1)) if m else ""
        name = _SMI_NAMES.get(key) or ("hw_" + _sanitize(key) + (f"_{unit}" if unit else ""))
        if name in out:
            continue
        s = df[raw].str.strip()
        cleaned = s.str.replace(r"\s*(%|MiB|W|MHz|C|GiB|KiB|MB/s|KB/s)$", "", regex=True)
        na = cleaned.str.lower().isin(["[n/a]", "n/a", "[not supported]", "not supported", "", "[unknown error]"])
        hexes = cleaned.str.match(r"^0x[0-9a-fA-F]+$").fillna(False)
        num = pd.to_numeric(cleaned.where(~na & ~hexes), errors="coerce")
        if hexes.any():
            num = num.where(~hexes, cleaned[hexes].map(lambda v: float(int(v, 16))))
        bad = num.isna() & ~na
        if bad.all() and len(df):
            continue
        for i in np.flatnonzero(bad.to_numpy())[:10]:
            problems.append(Problem(f"expected a number, got {s.iloc[i]!r}", file=source, row=int(i) + 1,
                                    column=raw))
        out[name] = num.astype("float64").to_numpy()
        metrics.append(name)
    if problems:
        raise StreamFormatError(f"{source}: {len(problems)} value(s) are not numbers", problems)
    return _finish(pd.DataFrame(out), metrics, source, "nvidia-smi", where=[f"row {i + 1}" for i in range(len(df))])


# ---------------------------------------------------------------- Prometheus

@dataclass(frozen=True)
class _PromSample:
    name: str
    family: str
    kind: str
    labels: Mapping[str, str]
    value: float
    timestamp_s: float | None


_PROM_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)(?:\s+(\S+))?\s*$")
_PROM_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"')


def _fallback_parse(text: str) -> list[_PromSample]:
    types: dict[str, str] = {}
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line.startswith("#"):
            parts = line.split()
            if len(parts) >= 4 and parts[1] == "TYPE":
                types[parts[2]] = parts[3]
            continue
        m = _PROM_LINE.match(line)
        if not m:
            raise ValueError(f"not a Prometheus sample line: {line[:80]!r}")
        name, labels, value, ts = m.groups()
        fam = name
        for suf in ("_total", "_sum", "_count", "_bucket"):
            if name.endswith(suf) and name[: -len(suf)] in types:
                fam = name[: -len(suf)]
        out.append(_PromSample(name, fam, types.get(fam, "untyped"),
                               dict(_PROM_LABEL.findall(labels or "")), float(value),
                               float(ts) / 1000.0 if ts else None))
    return out


def _parse_samples(text: str) -> list[_PromSample]:
    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError:  # the small tolerant parser is enough for dumps
        return _fallback_parse(text)
    out = []
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            ts = None if s.timestamp is None else float(s.timestamp)
            out.append(_PromSample(s.name, fam.name, fam.type, dict(s.labels), float(s.value), ts))
    return out


def parse_prometheus_scrape(text: str, *, group_labels: Sequence[str] = GROUP_LABELS
                            ) -> dict[str, dict[str, tuple[str, float]]]:
    """One Prometheus text page -> ``{group: {column: (kind, value)}}``.

    Parameters
    ----------
    text
        The body of a ``/metrics`` scrape.
    group_labels
        Labels whose value becomes the group key (the first present wins; ``"all"`` otherwise).

    Returns
    -------
    dict
        ``kind`` is ``gauge``, ``counter``, ``hist_sum`` or ``hist_count``. Gauges are summed over
        the other labels (averaged when the name says it is a ratio: ``perc``, ``usage``, ``util``).

    Raises
    ------
    ValueError
        When the text is not in the exposition format.
    """
    acc: dict[str, dict[str, tuple[str, list[float]]]] = {}
    for s in _parse_samples(text):
        if s.name.endswith(("_created", "_bucket")) or s.family.endswith("_info") or s.kind == "info" \
                or s.name.startswith(("process_", "python_", "go_", "promhttp_")):
            continue
        grp = next((s.labels[g] for g in group_labels if g in s.labels), "all")
        if s.kind in ("histogram", "summary", "gaugehistogram"):
            if s.name.endswith("_sum"):
                kind, base = "hist_sum", s.name[:-4]
            elif s.name.endswith("_count"):
                kind, base = "hist_count", s.name[:-6]
            else:
                continue  # quantiles of a summary
        elif s.kind == "counter" or (s.kind in ("unknown", "untyped") and s.name.endswith("_total")):
            kind, base = "counter", s.name[:-6] if s.name.endswith("_total") else s.name
        else:
            kind, base = "gauge", s.name
        if not math.isfinite(s.value):
            continue
        key = f"{kind}:{base}" if kind.startswith("hist") else base
        slot = acc.setdefault(grp, {}).setdefault(key, (kind, []))
        slot[1].append(s.value)
    out: dict[str, dict[str, tuple[str, float]]] = {}
    for grp, cols in acc.items():
        for key, (kind, vals) in cols.items():
            ratio = kind == "gauge" and any(w in key for w in _RATIO_WORDS)
            out.setdefault(grp, {})[key] = (kind, sum(vals) / len(vals) if ratio else sum(vals))
    return out


def _prom_column(base: str, suffix: str = "") -> str:
    name = _sanitize(base)
    prefix = "hw_" if name.startswith(_HW_PREFIXES) else "fw_"
    return prefix + name + suffix


class PrometheusRates:
    """Turn successive scrapes into per-interval samples: gauges as read, counters as rates,
    histograms as the mean of the interval. Used for dumps and for live ``/metrics`` polling.

    Parameters
    ----------
    group_labels
        See :func:`parse_prometheus_scrape`.
    """

    def __init__(self, group_labels: Sequence[str] = GROUP_LABELS) -> None:
        self.group_labels = tuple(group_labels)
        self._last: dict[str, tuple[float, dict[str, tuple[str, float]]]] = {}

    def feed(self, t_s: float, text: str) -> list[dict[str, Any]]:
        """Add one scrape taken at ``t_s``; return one sample dict per group.

        Parameters
        ----------
        t_s
            When the scrape was taken (s).
        text
            The page.

        Returns
        -------
        list of dict
            ``timestamp_s``, ``group`` and the metric columns. Rates are NaN on the first scrape,
            after a counter reset, or when the clock did not move forward.

        Raises
        ------
        ValueError
            When the page is not in the exposition format.
        """
        rows = []
        for grp, cur in parse_prometheus_scrape(text, group_labels=self.group_labels).items():
            prev_t, prev = self._last.get(grp, (math.nan, {}))
            dt = t_s - prev_t
            row: dict[str, Any] = {"timestamp_s": t_s, "group": grp}
            for key, (kind, v) in cur.items():
                if kind == "gauge":
                    row[_prom_column(key)] = v
                elif kind == "counter":
                    old = prev.get(key)
                    ok = old is not None and dt > 0 and v >= old[1]
                    row[_prom_column(key, "_per_s")] = (v - old[1]) / dt if ok and old else math.nan
                elif kind == "hist_sum":
                    base = key.split(":", 1)[1]
                    cnt, o_s, o_c = cur.get(f"hist_count:{base}"), prev.get(key), prev.get(f"hist_count:{base}")
                    val = math.nan
                    if cnt and o_s and o_c and cnt[1] > o_c[1] and v >= o_s[1]:
                        val = (v - o_s[1]) / (cnt[1] - o_c[1])
                    row[_prom_column(base, "_mean")] = val
            self._last[grp] = (t_s, cur)
            rows.append(row)
        return rows


def _split_scrapes(text: str, source: str) -> list[tuple[float | None, str, int]]:
    blocks: list[tuple[float | None, str, int]] = []
    cur: list[str] = []
    cur_t: float | None = None
    start = 1
    for i, line in enumerate(text.splitlines(), start=1):
        m = _TS_COMMENT.match(line.strip())
        if m:
            if cur and any(ln.strip() and not ln.startswith("#") for ln in cur):
                blocks.append((cur_t, "\n".join(cur) + "\n", start))
            cur, start = [], i
            try:
                cur_t = float(m.group(1))
            except ValueError:
                ts = pd.to_datetime(m.group(1), errors="coerce", utc=True)
                if pd.isna(ts):
                    raise StreamFormatError(f"{source}: a scrape time could not be read",
                                            [Problem(f"expected seconds or an ISO time, got {m.group(1)!r}",
                                                     file=source, row=i)]) from None
                cur_t = ts.timestamp()
            continue
        cur.append(line)
    if cur and any(ln.strip() and not ln.startswith("#") for ln in cur):
        blocks.append((cur_t, "\n".join(cur) + "\n", start))
    return blocks


def _read_prometheus_text(text: str, source: str) -> MetricStream:
    rates = PrometheusRates()
    rows: list[dict[str, Any]] = []
    where: list[str] = []
    blocks = _split_scrapes(text, source)
    marked = not (len(blocks) == 1 and blocks[0][0] is None)
    if not marked:
        # No scrape markers: samples must carry their own timestamps; one block per timestamp.
        by_t: dict[float, list[str]] = {}
        for ln in blocks[0][1].splitlines():
            m = _PROM_LINE.match(ln.strip())
            if m and m.group(4):
                by_t.setdefault(float(m.group(4)) / 1000.0, []).append(ln)
        header = [ln for ln in blocks[0][1].splitlines() if ln.startswith("#")]
        if not by_t:
            raise StreamFormatError(f"{source}: the Prometheus dump has no timestamps", [Problem(
                "start each scrape with a line '# TIMESTAMP <epoch seconds>' or give samples a timestamp "
                "(ms) after the value", file=source)])
        blocks = [(t, "\n".join(header + lines) + "\n", 1) for t, lines in sorted(by_t.items())]
    for t, body, line in blocks:
        if t is None:
            raise StreamFormatError(f"{source}: a scrape has no time", [Problem(
                "expected a '# TIMESTAMP <epoch seconds>' line before the scrape", file=source, row=line)])
        try:
            fed = rates.feed(t, body)
            rows += fed
            where += [f"the scrape at line {line}" if marked else f"the samples stamped {t * 1000:.0f} ms"] * len(fed)
        except ValueError as exc:
            raise StreamFormatError(f"{source}: not in the Prometheus text format", [Problem(
                f"the scrape starting at line {line} could not be parsed: {exc}", file=source, row=line)]) from exc
    frame = pd.DataFrame(rows)
    metrics = [c for c in frame.columns if c not in ("timestamp_s", "group")]
    return _finish(frame, metrics, source, "prometheus", where=where)


# ---------------------------------------------------------------- entry points

def _detect(name: str, text: str) -> str:
    low = name.lower()
    head = text[:4000]
    if low.endswith((".jsonl", ".ndjson")) or head.lstrip().startswith("{"):
        return "jsonl"
    if low.endswith((".prom", ".metrics")) or "# TYPE " in head or "# HELP " in head or _TS_COMMENT.match(
            head.lstrip().split("\n", 1)[0]):
        return "prometheus"
    first = head.split("\n", 1)[0]
    if _looks_like_smi([h.strip() for h in first.split(",")]):
        return "nvidia-smi"
    return "csv"


def read_stream_bytes(name: str, data: bytes, *, format: str = "auto", time_col: str | None = None,
                      group_col: str | None = None) -> MetricStream:
    """Read a metric stream from the bytes of a file (an upload).

    Parameters
    ----------
    name
        File name (used to guess the format and in messages).
    data
        The content.
    format
        One of :data:`STREAM_FORMATS`.
    time_col, group_col
        Column names for CSV/JSONL when the defaults do not find them.

    Returns
    -------
    MetricStream

    Raises
    ------
    StreamFormatError
        When the content cannot be read (naming file, row and column).
    PerfmodelError
        When ``format`` is unknown.
    """
    if format not in STREAM_FORMATS:
        raise PerfmodelError(f"unknown stream format {format!r}; choose one of: {', '.join(STREAM_FORMATS)}")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise StreamFormatError(f"{name}: not a text file", [Problem(f"not UTF-8 text ({exc.reason})",
                                                                     file=name)]) from exc
    if not text.strip():
        raise StreamFormatError(f"{name}: the file is empty", [Problem("no samples", file=name)])
    kind = _detect(name, text) if format == "auto" else format
    if kind == "jsonl":
        return _read_jsonl_text(text, name, time_col, group_col)
    if kind == "prometheus":
        return _read_prometheus_text(text, name)
    if kind == "nvidia-smi":
        return _read_smi_text(text, name)
    return _read_csv_text(text, name, time_col, group_col)


def read_stream(path: str | Path, *, format: str = "auto", time_col: str | None = None,
                group_col: str | None = None) -> MetricStream:
    """Read a recorded metric stream file (CSV, JSONL, Prometheus dump, nvidia-smi log).

    Parameters
    ----------
    path
        The file.
    format, time_col, group_col
        See :func:`read_stream_bytes`.

    Returns
    -------
    MetricStream

    Raises
    ------
    PerfmodelError
        When the file is missing or cannot be read as a stream.
    """
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise PerfmodelError(f"{p}: cannot read the file ({exc.strerror or exc})") from exc
    return read_stream_bytes(p.name, data, format=format, time_col=time_col, group_col=group_col)


#: Columns of a runs table replayed as metrics (besides every fw_/hw_ column).
REPLAY_METRICS = ("output_throughput_tok_s", "total_throughput_tok_s", "request_throughput_rps", "e2e_latency_s",
                  "ttft_s", "tpot_s", "itl_s", "power_w")
REPLAY_CONTEXT = ("batch_size", "input_len_tok", "output_len_tok", "hardware", "model", "framework")


def replay_runs(runs: pd.DataFrame, *, source: str = "runs", group_by: Sequence[str] = ("hardware", "model",
                                                                                          "framework")
                ) -> MetricStream:
    """Replay a runs table (a stored sweep) as a stream: one sample per run, in measurement order.

    Parameters
    ----------
    runs
        A canonical runs table.
    source
        Name used in messages.
    group_by
        Columns whose values form the group key.

    Returns
    -------
    MetricStream
        ``timestamp_s`` is the run's timestamp (seconds since the first run) or its position when
        the table has no timestamps; context columns carry batch size and lengths.

    Raises
    ------
    PerfmodelError
        When the table is empty or has no numeric metric.
    """
    if runs.empty:
        raise PerfmodelError(f"{source}: the dataset has no runs to replay")
    df = runs.reset_index(drop=True)
    if "timestamp" in df.columns and df["timestamp"].notna().all():
        ts = pd.to_datetime(df["timestamp"], utc=True)
        order = np.argsort((ts - ts.min()).dt.total_seconds().to_numpy(), kind="stable")
        t = (ts - ts.min()).dt.total_seconds().to_numpy(dtype="float64")
    else:
        order = np.arange(len(df))
        t = np.arange(len(df), dtype="float64")
    df = df.iloc[order].reset_index(drop=True)
    t = t[order]
    metrics = [c for c in REPLAY_METRICS if c in df.columns and df[c].notna().any()]
    metrics += [c for c in df.columns if c.startswith(("fw_", "hw_")) and pd.to_numeric(df[c], errors="coerce")
                .notna().any()]
    keys = [c for c in group_by if c in df.columns]
    group = df[keys].astype("string").fillna("?").agg("/".join, axis=1) if keys else pd.Series("all", index=df.index)
    out = {"timestamp_s": t, "group": group.to_numpy()}
    for c in metrics:
        out[c] = pd.to_numeric(df[c], errors="coerce").to_numpy(dtype="float64")
    ctx = [c for c in REPLAY_CONTEXT if c in df.columns]
    for c in ctx:
        out[c] = df[c].to_numpy()
    if not metrics:
        raise PerfmodelError(f"{source}: the runs have no numeric metric to replay")
    return _finish(pd.DataFrame(out), metrics, source, "replay", ctx)


def replay_dataset(ref: str, *, store: Any = None) -> MetricStream:
    """Replay a stored dataset or sweep (by id or name) as a stream.

    Parameters
    ----------
    ref
        Dataset id or name (a sweep's dataset).
    store
        A :class:`perfmodel.store.Store` (default: the one in the data directory).

    Returns
    -------
    MetricStream

    Raises
    ------
    NotFoundError
        When the dataset does not exist.
    """
    from ..store import Store

    st = store if store is not None else Store()
    info = st.dataset(ref)
    return replay_runs(st.runs(info.id), source=f"dataset {info.name}")
