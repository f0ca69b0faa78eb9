"""Planner at lengths nobody measured: sizing from the nearest measured lengths against predicting at the
workload's lengths (``predict: true``), on LLM-Inference-Bench with each length held out in turn.

Usage: python benchmarks/bench_plan_lengths.py [ALL_RESULTS_CSV] [--rate RPS]

For each length L of the file (input = output = L tokens), every run at L is removed; the planner then sizes
every candidate for a workload of L/L tokens twice, from the remaining runs: once from the nearest measured
lengths (the default) and once with roofline-gbm, trained on the remaining runs, predicting at L/L. Both are
compared with the held-out measurements: at every operating point (candidate and batch) the mean measured
throughput at L, its absolute percentage error (median and p90), whether the 90% band holds it, and whether
the devices the demand needs (``ceil(demand x 1.2 / throughput) x devices per replica``) come out right.
Prints a Markdown table per length and method, pooled, and pooled per framework.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from perfmodel.curves import VARYING_BY
from perfmodel.importers import read_file
from perfmodel.planner import CANDIDATE_KEYS, plan

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "llm-inference-bench" / "All_results.csv"
KEYS = [*CANDIDATE_KEYS, "batch_size"]


def _compare(truth: pd.DataFrame, got: pd.DataFrame, demand: float) -> pd.DataFrame:
    """Operating points of ``got`` matched to the measured means ``truth``: APE, band coverage, devices. A
    candidate run at several settings (llama.cpp's n_batch) is sized at its best one, and its points say which:
    they are matched to the held-out runs at that setting, the others' to the runs at every setting."""
    sets = [c for c in VARYING_BY if c in got.columns]
    got = got.assign(**{c: got[c].astype(float) for c in sets})
    per_setting = truth.groupby([*KEYS, *sets], dropna=False).output_throughput_tok_s.mean() \
        .rename("measured").reset_index() if sets else None
    pooled = truth.groupby(KEYS).output_throughput_tok_s.mean().rename("measured").reset_index()
    if per_setting is None:
        m = pooled.merge(got, on=KEYS)
    else:
        with_setting = got[got[sets].notna().any(axis=1)]
        m = pd.concat([per_setting.merge(with_setting, on=[*KEYS, *sets]),
                       pooled.merge(got[got[sets].isna().all(axis=1)].drop(columns=sets), on=KEYS)],
                      ignore_index=True)
    t, y = m["measured"].to_numpy(float), m["throughput_tok_s"].to_numpy(float)
    need = np.ceil(demand / t - 1e-9) * m["device_count"].to_numpy(float)
    return pd.DataFrame({"framework": m["framework"], "ape": np.abs(y / t - 1) * 100,
                         "covered": (m["throughput_tok_s_lo"] <= t) & (t <= m["throughput_tok_s_hi"]),
                         "devices_right": need == m["devices"]})


def _row(name: str, d: pd.DataFrame, n_truth: int) -> str:
    if d.empty:
        return f"| {name} | 0 of {n_truth} | | | | |"
    return (f"| {name} | {len(d)} of {n_truth} | {np.median(d.ape):.1f} | {np.percentile(d.ape, 90):.1f} | "
            f"{d.covered.mean() * 100:.0f} % | {d.devices_right.mean() * 100:.0f} % |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("csv", nargs="?", default=str(DEFAULT))
    ap.add_argument("--rate", type=float, default=50.0, help="requests per second to serve")
    args = ap.parse_args()
    runs = read_file(args.csv).runs
    runs = runs[runs["output_throughput_tok_s"] > 0].reset_index(drop=True)
    pairs = runs[["input_len_tok", "output_len_tok"]].drop_duplicates().sort_values(["input_len_tok", "output_len_tok"])
    pooled: dict[str, list[pd.DataFrame]] = {"nearest": [], "predicted": []}
    n_pooled = 0
    lines = []
    for i_len, o_len in pairs.itertuples(index=False):
        at = (runs["input_len_tok"] == i_len) & (runs["output_len_tok"] == o_len)
        inputs = {"workload": {"request_rate_rps": args.rate, "input_len_tok": i_len, "output_len_tok": o_len},
                  "slo": {}}
        truth = runs[at]
        n_truth = truth.groupby(KEYS).ngroups  # measured operating points (candidate and batch)
        demand = args.rate * o_len * 1.2  # the planner's default headroom
        t0 = time.perf_counter()
        near = plan(inputs, runs[~at]).points
        t1 = time.perf_counter()
        pred = plan({**inputs, "predict": True}, runs[~at]).points
        t2 = time.perf_counter()
        for name, got in (("nearest", near), ("predicted", pred)):
            d = _compare(truth, got, demand)
            pooled[name].append(d)
            lines.append(_row(f"{i_len:g}/{o_len:g} {name}", d, n_truth))
        n_pooled += n_truth
        print(f"{i_len:g}/{o_len:g}: {n_truth} measured operating points; nearest {t1 - t0:.1f} s, "
              f"predicted {t2 - t1:.1f} s (training included)", flush=True)
    print("\n| held-out lengths, method | operating points matched | median APE % | p90 APE % | "
          "inside the 90% band | devices right |")
    print("|---|---|---|---|---|---|")
    for line in lines:
        print(line)
    for name, parts in pooled.items():
        print(_row(f"pooled, {name}", pd.concat(parts, ignore_index=True), n_pooled))
    print("\n| framework, method | operating points | median APE % | p90 APE % | inside the 90% band | "
          "devices right |")
    print("|---|---|---|---|---|---|")
    both = {name: pd.concat(parts, ignore_index=True) for name, parts in pooled.items()}
    for fw in sorted(set(both["nearest"].framework) | set(both["predicted"].framework)):
        for name, d in both.items():
            sub = d[d.framework == fw]
            print(_row(f"{fw}, {name}", sub, len(sub)))


if __name__ == "__main__":
    main()
