"""Benchmark the saturation-curve fits on LLM-Inference-Bench ``All_results.csv``.

Prints, for the configurations of the file (hardware, device count, framework, model,
length, and llama.cpp's ``n_batch``: 2,363, of which 695 have >= 3 batch sizes):

* the share of configurations with >= 3 batch sizes whose exponential fit
  succeeds with quantile initialisation versus naive (a = b = c = 1)
  initialisation, each from a single start without fallbacks (the published
  method reports 93% vs 72%), and with the full pipeline (restarts + fallback);
* the median and 10th-percentile R^2 (all fitted curves, and those with >= 4 points,
  since a 3-parameter curve through 3 points is exact);
* the distribution of knee positions per hardware;
* the time to fit every curve without and with bootstrap intervals.

Usage::

    python benchmarks/bench_curves.py [path/to/All_results.csv] [--n-boot 200]

The file is read with perfmodel's ``llm_inference_bench`` importer when it is
available, else directly with pandas using the same conversion: output
throughput = Throughput x output / (input + output) (input = output length in
this file); llama.cpp rows, which report one sequence's throughput, are one sequence
at the file's batch as ``n_batch`` (see ``bench_llamacpp_batch.py``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from perfmodel.curves import fit_curves

DEFAULT_CSV = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "llm-inference-bench" / "All_results.csv"
BY = ["hardware", "device_count", "framework", "model", "input_len_tok", "output_len_tok"]


def load_runs(path: Path) -> tuple[pd.DataFrame, str]:
    """The file as canonical runs (only the columns the fits need) and how it was read."""
    try:
        from perfmodel.importers import read_file

        res = read_file(path, format="llm-inference-bench")
        runs = res.runs
        if len(runs) and runs["output_throughput_tok_s"].notna().all():
            # the importer canonicalises names; the raw names keep configurations apart
            for col in ("hardware", "model"):
                raw = f"{col}_raw"
                if raw in runs.columns and runs[raw].notna().all():
                    runs = runs.assign(**{col: runs[raw]})
            return runs, f"perfmodel importer ({len(runs)} rows, {res.n_dropped} dropped)"
    except Exception as exc:  # noqa: BLE001 - the importer may not exist yet; fall back below
        reason = f"{type(exc).__name__}: {exc}".splitlines()[0][:120]
    else:
        reason = "importer returned no throughput"
    raw = pd.read_csv(path)
    length = raw["Input Output Length"].astype(float)
    batch = raw["Batch Size"].astype(float)
    llama = (raw["Framework"] == "llama.cpp").to_numpy()
    total = raw["Throughput"].astype(float)
    runs = pd.DataFrame({
        "hardware": raw["Hardware"], "device_count": raw["Num of Hardware"], "framework": raw["Framework"],
        "model": raw["Model"], "input_len_tok": length, "output_len_tok": length,
        "batch_size": np.where(llama, 1.0, batch), "fw_n_batch": np.where(llama, batch, np.nan),
        "output_throughput_tok_s": total * length / (length + length),
    })
    return runs, f"pandas fallback ({len(runs)} rows; importer unavailable: {reason})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="?", type=Path, default=DEFAULT_CSV)
    ap.add_argument("--n-boot", type=int, default=200)
    args = ap.parse_args(argv)
    if not args.csv.exists():
        print(f"missing {args.csv}", file=sys.stderr)
        return 2
    runs, how = load_runs(args.csv)
    print(f"data: {args.csv.name} via {how}")

    t0 = time.perf_counter()
    fits = fit_curves(runs, BY, intervals="none")
    t_fit = time.perf_counter() - t0
    t0 = time.perf_counter()
    fits_boot = fit_curves(runs, BY, intervals="bootstrap", n_boot=args.n_boot)
    t_boot = time.perf_counter() - t0
    single_q = fit_curves(runs, BY, shape="exp", intervals="none", restarts=False, fallback=False)
    single_n = fit_curves(runs, BY, shape="exp", intervals="none", init="naive", restarts=False,
                          fallback=False)

    n_cfg = len(fits)
    enough = fits["n_batches"] >= 3
    print(f"configurations: {n_cfg}; with >= 3 batch sizes: {int(enough.sum())}; "
          f"fewer (honest 'not enough points'): {int((~enough).sum())}")
    print("\nsuccess among configurations with >= 3 batch sizes")
    print(f"{'method':52s} {'success':>8s}")
    for label, tab in (("exp, quantile init, single start, no fallback", single_q),
                       ("exp, naive init (a=b=c=1), single start, no fallback", single_n),
                       ("full pipeline (auto shape, restarts, fallback)", fits)):
        m = tab["n_batches"] >= 3
        print(f"{label:52s} {tab.loc[m, 'success'].mean():8.1%}")
    print("shapes used (full pipeline): " + ", ".join(
        f"{k}={v}" for k, v in fits.loc[enough, "shape"].value_counts().items()))
    failed = fits[enough & ~fits["success"]]
    for _, r in failed.head(5).iterrows():
        print(f"  failed: {r['hardware']} / {r['framework']} / {r['model']} / {r['input_len_tok']:g}: "
              f"{r['message']}")

    ok = fits[enough & fits["success"]]
    print("\nR^2 of successful fits")
    for label, sub in (("all (>= 3 points)", ok), (">= 4 points", ok[ok["n_points"] >= 4]),
                       (">= 5 points", ok[ok["n_points"] >= 5])):
        r2 = sub["r2"].to_numpy(dtype=float)
        print(f"  {label:18s} n={len(r2):4d}  median={np.median(r2):.4f}  p10={np.quantile(r2, 0.1):.4f}")
    print(f"  flagged poor (R^2 < 0.9): {int(ok['poor_fit'].sum())}; plateau reached in range: "
          f"{int(ok['plateau_reached'].sum())}")

    print("\nknee positions per hardware (successful fits; batch sizes)")
    kb = fits_boot[fits_boot["success"]]
    rows = []
    for hw, sub in kb.groupby("hardware"):
        k = pd.concat([sub["knee_1"], sub["knee_2"]]).dropna().to_numpy(dtype=float)
        rows.append({"hardware": hw, "fits": len(sub), "with_knee": int(sub["knee_1"].notna().sum()),
                     "knee_p10": np.quantile(k, 0.1) if len(k) else np.nan,
                     "knee_median": np.median(k) if len(k) else np.nan,
                     "knee_p90": np.quantile(k, 0.9) if len(k) else np.nan,
                     "median_b90": sub["b90"].replace(np.inf, np.nan).median(),
                     "knee_ci_width_median": (sub["knee_1_hi"] - sub["knee_1_lo"]).median()})
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(pd.DataFrame(rows).to_string(index=False, float_format=lambda v: f"{v:8.1f}"))

    print("\ntiming (all configurations)")
    print(f"  fit without intervals: {t_fit:6.2f} s  (target < 2 s)")
    print(f"  fit with bootstrap ({args.n_boot} replicates): {t_boot:6.2f} s  (target < 30 s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
