"""Measure the host CPU's sustained memory bandwidth and matmul rate (catalog figures for CPU entries).

A CPU VM has no datasheet: its memory bandwidth depends on the host and on the
neighbours. This script measures what one process sees, the way perfmodel's CPU
sample runs use the machine (one torch thread by default):

* memory bandwidth: the best of several ``numpy.copyto`` of a 512 MiB float64
  array, counting bytes read and written (a single-threaded STREAM "copy");
* fp32 matmul rate: the best of several 2048 x 2048 ``torch`` matrix products
  with 1 and with all threads, beside the peak implied by the clock and the
  core's FMA width (``--flop-per-cycle``, 32 for Zen 2/3/4 with AVX2: two 256-bit
  FMA pipes x 8 fp32 lanes x 2).

Run: ``.venv/bin/python benchmarks/measure_host.py``. Measured 2026-11-30 00:06 UTC on the
2-vCPU VM of the sample runs (catalog ``cpu-x86-2vcpu``; load 2.4 from other jobs):
copy 25.0 GB/s; matmul 67.1 GFLOP/s with 1 thread, 63.1 with 2 (the VM was shared);
peak 2 x 2.445 GHz x 32 = 156.5 GFLOP/s.
"""

from __future__ import annotations

import argparse
import os
import time


def copy_bandwidth_gbs(n_bytes: int = 2**29, repeats: int = 8) -> float:
    """Best single-threaded copy bandwidth, GB/s (read + write)."""
    import numpy as np

    a = np.ones(n_bytes // 8)
    b = np.empty_like(a)
    best = 0.0
    for _ in range(repeats):
        t0 = time.perf_counter()
        np.copyto(b, a)
        best = max(best, 2 * a.nbytes / (time.perf_counter() - t0) / 1e9)
    return best


def matmul_gflops(threads: int, n: int = 2048, repeats: int = 5) -> float:
    """Best fp32 matmul rate with ``threads`` torch threads, GFLOP/s."""
    import torch

    torch.set_num_threads(threads)
    x, y = torch.randn(n, n), torch.randn(n, n)
    best = 0.0
    for _ in range(repeats):
        t0 = time.perf_counter()
        x @ y
        best = max(best, 2 * n**3 / (time.perf_counter() - t0) / 1e9)
    return best


def clock_ghz() -> float | None:
    """The clock /proc/cpuinfo reports (the VM's nominal one), GHz."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("cpu MHz"):
                    return float(line.split(":")[1]) / 1000
    except OSError:
        pass
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--flop-per-cycle", type=float, default=32.0, help="fp32 FLOP per cycle per core")
    args = ap.parse_args()
    n_cpu = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    ghz = clock_ghz()
    print("| figure | value |\n| --- | ---: |")
    print(f"| CPUs | {n_cpu} |")
    print(f"| clock (/proc/cpuinfo) | {ghz:.3f} GHz |" if ghz else "| clock | unknown |")
    if ghz:
        print(f"| fp32 peak ({args.flop_per_cycle:g} FLOP/cycle/core) | {n_cpu * ghz * args.flop_per_cycle:.1f} GFLOP/s |")
    print(f"| copy bandwidth, 1 thread | {copy_bandwidth_gbs():.1f} GB/s |")
    print(f"| fp32 matmul, 1 thread | {matmul_gflops(1):.1f} GFLOP/s |")
    print(f"| fp32 matmul, {n_cpu} threads | {matmul_gflops(n_cpu):.1f} GFLOP/s |")


if __name__ == "__main__":
    main()
