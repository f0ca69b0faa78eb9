"""Serve 200 req/s of 1,024/1,024 tokens with Llama-3-8B across the accelerators in LLM-Inference-Bench.

Usage: python benchmarks/bench_plan.py [ALL_RESULTS_CSV] [--e2e SECONDS]
Prints the candidate table (best operating point, devices with the band, cost, energy) and the infeasible ones.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from perfmodel.importers import read_file
from perfmodel.planner import plan

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "llm-inference-bench" / "All_results.csv"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("csv", nargs="?", default=str(DEFAULT))
    ap.add_argument("--e2e", type=float, default=60.0, help="end-to-end SLO, seconds")
    args = ap.parse_args()
    runs = read_file(args.csv).runs
    t0 = time.perf_counter()
    res = plan({"workload": {"request_rate_rps": 200, "input_len_tok": 1024, "output_len_tok": 1024},
                "models": ["Llama-3-8B"], "slo": {"e2e_s": args.e2e}}, runs)
    took = time.perf_counter() - t0
    print(res.summary())
    print(f"plan computed in {took:.2f} s over {len(runs):,} runs; {len(res.table)} feasible, "
          f"{len(res.infeasible)} infeasible\n")
    print("| hardware | framework | dev/replica | batch | tok/s/device [band] | devices [band] | USD/h | "
          "USD/M out tok [band] | J/out tok (basis) | e2e s | status |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for _, r in res.table.iterrows():
        cost = f"{r['cost_per_hour']:,.2f}" if r["cost_per_hour"] == r["cost_per_hour"] else "n/a"
        cpm = (f"{r['cost_per_m_output_tok']:.3f} [{r['cost_per_m_output_tok_lo']:.3f}, "
               f"{r['cost_per_m_output_tok_hi']:.3f}]") if cost != "n/a" else "no price"
        print(f"| {r['hardware']} | {r['framework']} | {r['device_count']} | {r['batch_size']:g} | "
              f"{r['throughput_per_device_tok_s']:,.0f} [{r['throughput_per_device_tok_s_lo']:,.0f}, "
              f"{r['throughput_per_device_tok_s_hi']:,.0f}] | {r['devices']} [{r['devices_lo']}, {r['devices_hi']}] | "
              f"{cost} | {cpm} | {r['energy_j_per_output_tok']:.3g} ({r['energy_basis']}) | {r['e2e_s']:.3g} | "
              f"{r['status']}{'' if r['robust'] else ' (not robust)'} |")
    for _, r in res.infeasible.iterrows():
        print(f"infeasible: {r['hardware']} {r['framework']} x{r['device_count']}: {r['reason']}")


if __name__ == "__main__":
    main()
