"""In-process prediction latency of roofline-gbm: one query and 10,000 queries.

Trains on ``../shared/data/llm-inference-bench/All_results.csv`` (all rows), saves and reloads
the model as JSON (latency is measured on the loaded model, as the CLI and the app use it), then prints:

- one query, a different row of the file each call (catalog figures are memoised per
  hardware/model/dtype, so only the first call of a combination pays the catalog lookup);
- one query repeated (what ``perfmodel.evaluate`` reports as ``predict_1_ms``);
- 10,000 queries in one call;
- the same through the pandas reference path of the features (``_design_pandas``), for comparison;
- one query through ``predict_with_latency`` (throughput band, latencies and the TTFT band, as
  ``perfmodel predict`` and the What-if page ask) on a model of the bundled sample runs, which measured
  TTFT (the shared file did not), against its two calls made apart (``predict`` then ``predict_ttft_band``).

    python benchmarks/bench_predict_latency.py [--n-one 200]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from perfmodel.importers import read_file
from perfmodel.models import load_predictor, predict_with_latency
from perfmodel.models.base import Predictor
from perfmodel.models.roofline_gbm import RooflineGBM

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "llm-inference-bench" / "All_results.csv"
SAMPLES = Path(__file__).resolve().parents[1] / "sample_runs"
QUERY_COLUMNS = ["hardware", "framework", "model", "device_count", "input_len_tok", "output_len_tok",
                 "batch_size"]


def _one_each(model: RooflineGBM, queries: pd.DataFrame, n: int,
              call: Callable[[pd.DataFrame], object] | None = None) -> np.ndarray:
    call = call or model.predict
    times = []
    for i in range(n):
        q = queries.iloc[[i % len(queries)]]
        t0 = time.perf_counter()
        call(q)
        times.append(time.perf_counter() - t0)
    return np.array(times) * 1e3


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--n-one", type=int, default=200, help="single-query calls to time")
    ap.add_argument("--n-jobs", default="1,2", help="XGBoost threads of the timed fits (comma-separated)")
    args = ap.parse_args(argv)
    if not args.data.exists():
        print(f"needs {args.data} (../shared/data beside the repository)", file=sys.stderr)
        return 2
    runs = read_file(args.data).runs
    runs = runs[runs["output_throughput_tok_s"].notna()].reset_index(drop=True)
    # xgboost is imported on first use (2 s here): once per process, timed apart from training.
    t0 = time.perf_counter()
    import xgboost  # noqa: F401

    import_s = time.perf_counter() - t0
    fits = []
    for n_jobs in (int(x) for x in args.n_jobs.split(",")):
        t0 = time.perf_counter()
        fitted = RooflineGBM(n_jobs=n_jobs).fit(runs)
        fits.append(f"n_jobs={n_jobs} {time.perf_counter() - t0:.2f} s")
    fitted.n_jobs = 1  # the latencies below: one thread, as the CLI and the app load a model
    with tempfile.TemporaryDirectory() as d:
        fitted.save(d)
        model = load_predictor(d)
    assert isinstance(model, RooflineGBM)
    queries = runs[QUERY_COLUMNS].sample(frac=1.0, random_state=0).reset_index(drop=True)
    big = queries.iloc[np.resize(np.arange(len(queries)), 10_000)].reset_index(drop=True)

    first = _one_each(model, queries.iloc[:1], 1)[0]  # catalog lookups of the first combination
    rows = []
    fresh = _one_each(model, queries, args.n_one)
    rows.append(("one query, a new row each call", np.median(fresh), np.percentile(fresh, 90)))
    same = _one_each(model, queries.iloc[:1], args.n_one)
    rows.append(("one query, the same row repeated", np.median(same), np.percentile(same, 90)))
    t0 = time.perf_counter()
    model.predict(big)
    big_ms = (time.perf_counter() - t0) * 1e3
    rows.append(("10,000 queries in one call (total)", big_ms, float("nan")))

    fast_design = model._design
    model._design = model._design_pandas  # type: ignore[method-assign]
    ref = _one_each(model, queries, max(args.n_one // 4, 10))
    rows.append(("reference pandas features: one query", np.median(ref), np.percentile(ref, 90)))
    t0 = time.perf_counter()
    model.predict(big)
    rows.append(("reference pandas features: 10,000 queries", (time.perf_counter() - t0) * 1e3, float("nan")))
    model._design = fast_design  # type: ignore[method-assign]

    samples = pd.concat([read_file(f).runs for f in sorted(SAMPLES.glob("*.csv"))], ignore_index=True)
    with_ttft = RooflineGBM().fit(samples)
    sq = samples[QUERY_COLUMNS].sample(frac=1.0, random_state=0).reset_index(drop=True)
    for name, call in (("with latency and TTFT band (samples model): one query",
                        lambda q: predict_with_latency(with_ttft, q)),
                       ("the same as two calls, predict + predict_ttft_band",
                        lambda q: Predictor.predict_with_ttft_band(with_ttft, q))):
        t = _one_each(with_ttft, sq, max(args.n_one // 2, 10), call)
        rows.append((name, np.median(t), np.percentile(t, 90)))

    print(f"{len(runs)} training rows; xgboost import {import_s:.2f} s (once per process); fit {'; '.join(fits)}; "
          f"first call (catalog lookups) {first:.1f} ms\n")
    print("| case | median ms | p90 ms |")
    print("| --- | ---: | ---: |")
    for name, med, p90 in rows:
        print(f"| {name} | {med:.2f} | {'' if np.isnan(p90) else f'{p90:.2f}'} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
