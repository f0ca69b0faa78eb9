"""Time report generation for the full shared dataset (All_results.csv): HTML and PDF.

Usage: python benchmarks/bench_report.py [ALL_RESULTS_CSV] [--out DIR]
Targets: HTML < 20 s, PDF < 60 s on 2 cores (build included in both).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from perfmodel.importers import read_file
from perfmodel.report import build_report, write_report

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "llm-inference-bench" / "All_results.csv"
PLAN = {"workload": {"request_rate_rps": 200, "input_len_tok": 1024, "output_len_tok": 1024},
        "models": ["Llama-3-8B"], "slo": {"e2e_s": 60}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("csv", nargs="?", default=str(DEFAULT))
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    out = Path(args.out or tempfile.mkdtemp())
    runs = read_file(args.csv).runs
    rows = []
    for suffix in (".html", ".pdf"):
        t0 = time.perf_counter()
        rep = build_report(runs, dataset_name="LLM-Inference-Bench All_results", plan_inputs=PLAN)
        t_build = time.perf_counter() - t0
        path = write_report(rep, out / f"report{suffix}")
        total = time.perf_counter() - t0
        rows.append((suffix, t_build, total - t_build, total, path.stat().st_size / 1e6, rep.timings_s))
    print("| output | build s | render s | total s | size MB | steps (s) |")
    print("|---|---|---|---|---|---|")
    for suffix, b, r, t, mb, steps in rows:
        detail = ", ".join(f"{k} {v:.1f}" for k, v in steps.items())
        print(f"| {suffix} | {b:.1f} | {r:.1f} | {t:.1f} | {mb:.2f} | {detail} |")
    print(f"files in {out}")


if __name__ == "__main__":
    main()
