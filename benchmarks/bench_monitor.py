"""Labelled anomaly benchmark for perfmodel.monitor: prints precision, recall, FPR and detection delay.

Usage: ``python benchmarks/bench_monitor.py [--seed 0] [--n-samples 1500]``. Reads the real series from
``../shared/data`` (beside the repository) and ``sample_runs/``; see perfmodel/monitor/evaluation.py for
the generator. Also times 1,000,000 samples through each detector.
"""

from __future__ import annotations

import argparse
import collections
import time
from pathlib import Path

import numpy as np

from perfmodel.monitor.detectors import make_detector
from perfmodel.monitor.evaluation import evaluate, generate, real_bases, to_markdown

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-samples", type=int, default=1500)
    args = ap.parse_args()
    bases = real_bases(REPO.parent / "shared" / "data", REPO / "sample_runs" / "perfmodel-tiny-llama_cpu-x86-2vcpu.csv",
                       seed=args.seed)
    streams = generate(bases, n_samples=args.n_samples, seed=args.seed)
    kinds = collections.Counter(s.kind for s in streams)
    print(f"{len(bases)} real base series -> {len(streams)} labelled streams of {args.n_samples} samples "
          f"({dict(kinds)})")
    table = evaluate(streams, seed=args.seed)
    print(to_markdown(table))
    print("\nreference (issue 7): point 0.960/0.996/0.84%; window 0.971/0.999/0.59%; threshold 1.000/0.993/0.00%")
    rng = np.random.default_rng(args.seed)
    x = 100 + rng.normal(0, 3, 1_000_000)
    t = np.arange(x.size) * 0.05
    print("\n1,000,000 samples (batch path):")
    for name in ("point", "window", "threshold"):
        for robust in (False, True):
            det = make_detector(name, robust=robust, expected=100.0)
            t0 = time.perf_counter()
            det.run(t, x)
            print(f"  {name:<9} robust={robust!s:<5} {time.perf_counter() - t0:.2f} s")


if __name__ == "__main__":
    main()
