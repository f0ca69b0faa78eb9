"""Device-count extrapolation on LLM-Inference-Bench: every (hardware, framework, model) family measured on three or
more device counts has its largest device count held out (every length and batch of it), roofline-gbm is trained on
the rest, with and without its device cap (``device_cap``), and the held-out rows are predicted.

Usage: python benchmarks/bench_device_extrapolation.py [--seeds 3]
Prints median / p90 APE, 90 % band coverage and median band width (log upper/lower) per setting, then per family.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from perfmodel.importers import read_file
from perfmodel.models.roofline_gbm import RooflineGBM

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "llm-inference-bench" / "All_results.csv"
FAMILY = ["hardware", "framework", "model"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--data", type=Path, default=DATA)
    args = ap.parse_args()
    runs = read_file(args.data).runs
    counts = runs.groupby(FAMILY)["device_count"].transform(lambda s: s.nunique())
    top = runs.groupby(FAMILY)["device_count"].transform("max")
    held = ((counts >= 3) & (runs["device_count"] == top)).to_numpy()
    train, test = runs[~held], runs[held].reset_index(drop=True)
    y = test["output_throughput_tok_s"].to_numpy(dtype=float)
    print(f"{len(test)} held-out rows of {test.groupby(FAMILY).ngroups} families; {len(train)} training rows")
    print(f"{'setting':<12}{'seed':>5}{'medAPE':>8}{'p90APE':>8}{'cov90':>7}{'width':>7}")
    per = {}
    for cap in (False, True):
        apes = []
        for seed in range(args.seeds):
            p = RooflineGBM(device_cap=cap, random_state=seed).fit(train).predict(test, level=0.9)
            ape = np.abs(p["pred_throughput_tok_s"].to_numpy() / y - 1) * 100
            cov = float(((p["pred_lower"] <= y) & (y <= p["pred_upper"])).mean() * 100)
            width = float(np.nanmedian(np.log(p["pred_upper"] / p["pred_lower"])))
            name = "device_cap" if cap else "no cap"
            print(f"{name:<12}{seed:>5}{np.nanmedian(ape):>8.1f}{np.nanpercentile(ape, 90):>8.1f}{cov:>7.1f}"
                  f"{width:>7.2f}")
            apes.append(ape)
        per[name] = np.nanmean(apes, axis=0)
    table = test[FAMILY + ["device_count"]].assign(**{f"APE {k}": v for k, v in per.items()})
    print(table.groupby(FAMILY + ["device_count"]).median().round(1).to_string())


if __name__ == "__main__":
    pd.set_option("display.width", 160)
    main()
