"""The labelled benchmark: real measured series with injected anomalies of known start and length.

Base series are built from real measurements only:

* per-request latencies and throughputs of real benchmark clients (llmperf
  individual responses, vLLM ``benchmark_serving`` per-request TTFT/ITL
  arrays): each sample is the mean of ``requests_per_sample`` requests drawn
  from the real population, as a per-interval server metric is;
* throughputs of LLM-Inference-Bench (``All_results.csv``) and of the bundled
  ``sample_runs`` points: the measured value times one real run-to-run
  deviation, drawn from the relative deviations of the repeats in
  ``sample_runs`` (std 4.3%); the sampling period is the measured latency.

On each base one anomaly is injected (kinds cycle through
:data:`ANOMALY_KINDS`): a step drop, a spike of 1-3 samples, a slow drift,
periodic noise, or a straggler GPU (four GPU series of one tensor-parallel
group; one of them slows down, the three others are clean and count towards
the false positives). Latency-like series get worse by growing, throughput by
falling. Everything is seeded: :func:`generate` with the same arguments gives
the same streams.

Scores per detector (:func:`score`): sample-level precision, event-level
recall (an anomaly is found when an alert falls inside it or within ``grace``
samples after it), false-positive rate over normal samples (the ``grace``
samples after an anomaly are not counted either way), and the mean detection
delay in samples and seconds.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import PerfmodelError
from .detectors import Detector, make_detector

__all__ = [
    "ANOMALY_KINDS",
    "BaseSeries",
    "LabelledStream",
    "real_bases",
    "generate",
    "DetectorScore",
    "score",
    "evaluate",
    "to_markdown",
]

ANOMALY_KINDS = ("step", "spike", "drift", "periodic", "straggler")
N_SAMPLES = 1500
REQUESTS_PER_SAMPLE = 64
GRACE = 10
N_TP_GPUS = 4


@dataclass(frozen=True)
class BaseSeries:
    """A real measured population to sample a stream from.

    Attributes
    ----------
    name
        Where it comes from (file and column or configuration).
    level
        The measured value (the expectation of a perfect predictor).
    population
        Real values (absolute, for per-request series) or relative deviations (``relative``).
    relative
        True when ``population`` holds relative deviations around ``level``.
    period_s
        Seconds per sample.
    higher_is_worse
        True for latencies.
    """

    name: str
    level: float
    population: np.ndarray = field(repr=False)
    relative: bool
    period_s: float
    higher_is_worse: bool

    def sample(self, n: int, rng: np.random.Generator, k: int = REQUESTS_PER_SAMPLE) -> np.ndarray:
        """``n`` normal samples drawn from the real population."""
        if self.relative:
            return self.level * (1.0 + rng.choice(self.population, size=n))
        return rng.choice(self.population, size=(n, k)).mean(axis=1)


@dataclass(frozen=True)
class LabelledStream:
    """One benchmark stream: values, labels and what was injected."""

    name: str
    kind: str
    t: np.ndarray = field(repr=False)
    x: np.ndarray = field(repr=False)
    labels: np.ndarray = field(repr=False)
    start: int
    length: int
    expected: float
    period_s: float


def _llmperf(path: Path) -> list[BaseSeries]:
    recs = [r for r in json.loads(path.read_text()) if not r.get("error_code")]
    out = []
    cols = {"ttft_s": True, "end_to_end_latency_s": True, "inter_token_latency_s": True,
            "request_output_throughput_token_per_s": False}
    period = 1.0
    for col, worse in cols.items():
        v = np.array([float(r[col]) for r in recs if r.get(col) is not None], dtype="float64")
        v = v[np.isfinite(v) & (v > 0)]
        out.append(BaseSeries(f"{path.name}:{col}", float(v.mean()), v, False, period, worse))
    return out


def _vllm_serving(path: Path) -> list[BaseSeries]:
    doc = json.loads(path.read_text())
    ttfts = np.array([t for t in doc.get("ttfts", []) if t and t > 0], dtype="float64")
    itls = np.array([v for row in doc.get("itls", []) for v in row if v and v > 0], dtype="float64")
    out = []
    for col, v in (("ttfts", ttfts), ("itls", itls)):
        if v.size >= 5:
            out.append(BaseSeries(f"{path.name}:{col}", float(v.mean()), v, False, 1.0, True))
    return out


def _repeat_deviations(sample_csv: Path) -> tuple[np.ndarray, pd.DataFrame]:
    d = pd.read_csv(sample_csv)
    keys = ["input_len_tok", "output_len_tok", "batch_size"]
    g = d.groupby(keys)["output_throughput_tok_s"]
    dev = (d["output_throughput_tok_s"] / g.transform("mean") - 1.0).to_numpy(dtype="float64")
    points = d.groupby(keys, as_index=False).agg(tok_s=("output_throughput_tok_s", "mean"),
                                                 lat_s=("e2e_latency_s", "mean"))
    return dev[np.isfinite(dev)], points


def real_bases(shared_data: Path | None, sample_csv: Path, *, n_all_results: int = 60, seed: int = 0
               ) -> list[BaseSeries]:
    """Every real base series: client per-request files, LLM-Inference-Bench and the sample runs.

    Parameters
    ----------
    shared_data
        ``../shared/data`` (``None`` or missing: the sample runs only).
    sample_csv
        The bundled sample runs CSV.
    n_all_results
        Configurations drawn (seeded) from ``All_results.csv``.
    seed
        Seed of that draw.

    Returns
    -------
    list of BaseSeries

    Raises
    ------
    PerfmodelError
        When the sample runs file is missing.
    """
    if not sample_csv.exists():
        raise PerfmodelError(f"{sample_csv}: the bundled sample runs are missing")
    dev, points = _repeat_deviations(sample_csv)
    bases: list[BaseSeries] = []
    for r in points.itertuples(index=False):
        bases.append(BaseSeries(f"sample_runs:{r.input_len_tok}/{r.output_len_tok}/b{r.batch_size}",
                                float(r.tok_s), dev, True, float(r.lat_s), False))
    if shared_data is not None and shared_data.exists():
        fm = shared_data / "formats"
        for p in sorted((fm / "llmperf").glob("*individual_responses.json")):
            bases += _llmperf(p)
        for p in sorted((fm / "vllm-benchmark-serving").glob("*.json")):
            bases += _vllm_serving(p)
        ar = shared_data / "llm-inference-bench" / "All_results.csv"
        if ar.exists():
            df = pd.read_csv(ar)
            df = df[(df["Throughput"] > 0) & (df["Latency"] > 0)].reset_index(drop=True)
            pick = np.random.default_rng(seed).choice(len(df), size=min(n_all_results, len(df)), replace=False)
            for i in sorted(pick):
                r = df.iloc[i]
                bases.append(BaseSeries(
                    f"All_results:{r['Hardware']}/{r['Framework']}/{r['Model']}/io{r['Input Output Length']}/"
                    f"b{r['Batch Size']}", float(r["Throughput"]), dev, True, float(r["Latency"]), False))
    return bases


def _inject(x: np.ndarray, kind: str, start: int, length: int, level: float, worse_up: bool,
            rng: np.random.Generator) -> np.ndarray:
    y = x.copy()
    sl = slice(start, start + length)
    sign = 1.0 if worse_up else -1.0
    if kind in ("step", "straggler"):
        mag = rng.uniform(0.3, 0.6)
        y[sl] = y[sl] * (1.0 + sign * mag)
    elif kind == "spike":
        mag = rng.uniform(1.0, 3.0) if worse_up else rng.uniform(0.5, 0.8)
        y[sl] = y[sl] * (1.0 + sign * mag)
    elif kind == "drift":
        mag = rng.uniform(0.4, 0.8)
        ramp = np.linspace(0.0, mag, length)
        y[sl] = y[sl] * (1.0 + sign * ramp)
    elif kind == "periodic":
        amp = rng.uniform(0.3, 0.5)
        period = rng.integers(8, 21)
        y[sl] = y[sl] + amp * level * np.sin(2 * np.pi * np.arange(length) / period)
    return np.maximum(y, 0.0)


def generate(bases: Sequence[BaseSeries], *, n_samples: int = N_SAMPLES, seed: int = 0,
             kinds: Sequence[str] = ANOMALY_KINDS) -> list[LabelledStream]:
    """The labelled streams: one anomaly per base (kinds in turn), plus clean peer GPUs for stragglers.

    Parameters
    ----------
    bases
        From :func:`real_bases`.
    n_samples
        Samples per stream.
    seed
        Seed of everything random (the same seed gives the same streams).
    kinds
        Anomaly kinds to cycle through.

    Returns
    -------
    list of LabelledStream
    """
    rng = np.random.default_rng(seed)
    lengths = {"step": (50, 200), "spike": (1, 4), "drift": (100, 300), "periodic": (100, 200),
               "straggler": (100, 300)}
    out: list[LabelledStream] = []
    for i, b in enumerate(bases):
        kind = kinds[i % len(kinds)]
        lo, hi = lengths[kind]
        length = int(rng.integers(lo, hi))
        start = int(rng.integers(300, n_samples - 300))
        t = np.arange(n_samples) * b.period_s
        n_series = N_TP_GPUS if kind == "straggler" else 1
        for gpu in range(n_series):
            x = b.sample(n_samples, rng)
            labels = np.zeros(n_samples, dtype=bool)
            name = b.name if n_series == 1 else f"{b.name}#gpu{gpu}"
            if gpu == 0:
                x = _inject(x, kind, start, length, b.level, b.higher_is_worse, rng)
                labels[start:start + length] = True
                out.append(LabelledStream(name, kind, t, x, labels, start, length, b.level, b.period_s))
            else:
                out.append(LabelledStream(name, "none", t, x, labels, -1, 0, b.level, b.period_s))
    return out


@dataclass(frozen=True)
class DetectorScore:
    """Scores of one detector over the benchmark."""

    detector: str
    precision: float
    recall: float
    fpr: float
    delay_samples: float
    delay_s: float
    n_streams: int
    n_anomalies: int
    seconds: float


def score(streams: Sequence[LabelledStream], make: Callable[[LabelledStream], Detector], name: str, *,
          grace: int = GRACE) -> DetectorScore:
    """Run one detector over every stream and score it.

    Parameters
    ----------
    streams
        From :func:`generate`.
    make
        Builds a fresh detector for a stream (so it can use the stream's expectation).
    name
        Row label.
    grace
        Samples after an anomaly in which alerts count neither way.

    Returns
    -------
    DetectorScore
    """
    import time

    tp = fp = neg = found = n_anom = 0
    delays: list[int] = []
    delays_s: list[float] = []
    t0 = time.perf_counter()
    for s in streams:
        flags = make(s).run(s.t, s.x).flags
        ignore = np.zeros(flags.size, dtype=bool)
        if s.start >= 0:
            end = s.start + s.length
            ignore[end:end + grace] = True
            hit = np.flatnonzero(flags[s.start:end + grace])
            n_anom += 1
            if hit.size:
                found += 1
                delays.append(int(hit[0]))
                delays_s.append(float(hit[0]) * s.period_s)
        tp += int((flags & s.labels).sum())
        normal = ~s.labels & ~ignore
        fp += int((flags & normal).sum())
        neg += int(normal.sum())
    secs = time.perf_counter() - t0
    prec = tp / (tp + fp) if tp + fp else math.nan
    return DetectorScore(name, prec, found / n_anom if n_anom else math.nan, fp / neg if neg else math.nan,
                         float(np.mean(delays)) if delays else math.nan,
                         float(np.mean(delays_s)) if delays_s else math.nan, len(streams), n_anom, secs)


def evaluate(streams: Sequence[LabelledStream], *, expected_error_rel: float = 0.05, seed: int = 0
             ) -> pd.DataFrame:
    """Score the three detectors (and their robust variants) on the benchmark.

    The threshold detector is scored twice: with the measured level as the
    expectation (a perfect predictor) and with a seeded prediction error of
    ``expected_error_rel`` (normal, per stream), closer to a real model.

    Parameters
    ----------
    streams
        From :func:`generate`.
    expected_error_rel
        Standard deviation of the simulated prediction error.
    seed
        Seed of that error.

    Returns
    -------
    pandas.DataFrame
        One row per detector: precision, recall, fpr, delay_samples, delay_s, n_streams, n_anomalies, seconds.
    """
    err = np.random.default_rng(seed).normal(0.0, expected_error_rel, size=len(streams))
    err_of = {id(s): e for s, e in zip(streams, err, strict=True)}
    runs: list[tuple[str, Callable[[LabelledStream], Detector]]] = [
        ("point (z=3, window 1000)", lambda s: make_detector("point")),
        ("point robust (median/MAD)", lambda s: make_detector("point", robust=True)),
        ("window (W=10)", lambda s: make_detector("window")),
        ("window robust (W=10, median/MAD)", lambda s: make_detector("window", robust=True)),
        ("threshold 15% (measured level)", lambda s: make_detector("threshold", expected=s.expected)),
        (f"threshold 15% (level +-{expected_error_rel:.0%} error)",
         lambda s: make_detector("threshold", expected=s.expected * (1 + err_of[id(s)]))),
    ]
    rows: list[dict[str, Any]] = []
    for name, make in runs:
        rows.append(vars(score(streams, make, name)))
    return pd.DataFrame(rows)


def to_markdown(table: pd.DataFrame) -> str:
    """The score table as Markdown.

    Parameters
    ----------
    table
        From :func:`evaluate`.

    Returns
    -------
    str
    """
    lines = ["| detector | precision | recall | FPR | delay (samples) | delay (s) |", "|---|---|---|---|---|---|"]
    for r in table.itertuples(index=False):
        lines.append(f"| {r.detector} | {r.precision:.3f} | {r.recall:.3f} | {r.fpr:.2%} | "
                     f"{r.delay_samples:.1f} | {r.delay_s:.2f} |")
    return "\n".join(lines)
