"""Accuracy of the latencies a prediction carries (total throughput, end-to-end latency, TTFT, TPOT).

roofline-gbm on the bundled sample runs (``sample_runs/*.csv``: every row measured TTFT and TPOT; the
shared LLM-Inference-Bench file measured neither), under the random 80/20 and whole-configuration
holdout protocols of ``perfmodel evaluate``, several seeds. For each derived quantity it prints the
median and p90 absolute percentage error on the held-out rows, pooled over the seeds:

- ``e2e`` and ``total`` follow from the predicted output throughput (Little's law; input + output
  tokens), so their error is the throughput's, seen through the batch and the lengths;
- ``ttft`` comes from roofline-gbm's TTFT model (log TTFT over the prefill's physical floor), with its own 90 %
  band (split-conformal, one class for a measured configuration and one for a new one): its coverage
  and median relative width (upper / lower - 1) are printed too;
- ``tpot`` is what the predicted latency leaves after the predicted TTFT.

    python benchmarks/bench_latency_predictions.py [--seeds 3]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from perfmodel.evaluate import folds, to_markdown
from perfmodel.importers import read_file
from perfmodel.models import predict_with_latency
from perfmodel.models.roofline_gbm import RooflineGBM

SAMPLES = Path(__file__).resolve().parents[1] / "sample_runs"

QUANTITIES = {"throughput": ("pred_throughput_tok_s", "output_throughput_tok_s"),
              "total": ("pred_total_throughput_tok_s", "total_throughput_tok_s"),
              "e2e": ("pred_e2e_latency_s", "e2e_latency_s"),
              "ttft": ("pred_ttft_s", "ttft_s"), "tpot": ("pred_tpot_s", "tpot_s")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args()
    runs = pd.concat([read_file(f).runs for f in sorted(SAMPLES.glob("*.csv"))], ignore_index=True)
    print(f"{len(runs)} sample rows, {runs['ttft_s'].notna().sum()} with TTFT; seeds 0..{args.seeds - 1}")
    rows = []
    for protocol in ("random", "config"):
        ape: dict[str, list[np.ndarray]] = {k: [] for k in QUANTITIES}
        covered: list[np.ndarray] = []
        width: list[np.ndarray] = []
        for seed in range(args.seeds):
            for f in folds(runs, protocol, seed):
                tr, te = runs.iloc[f.train], runs.iloc[f.test]
                m = RooflineGBM(random_state=seed).fit(tr)
                pred = predict_with_latency(m, te.reset_index(drop=True))
                for k, (p, y) in QUANTITIES.items():
                    truth = pd.to_numeric(te[y], errors="coerce").to_numpy(dtype=float)
                    err = np.abs(pred[p].to_numpy(dtype=float) / truth - 1)
                    ape[k].append(err[np.isfinite(err)])
                t = pd.to_numeric(te["ttft_s"], errors="coerce").to_numpy(dtype=float)
                lo, hi = pred["pred_ttft_lower_s"].to_numpy(dtype=float), pred["pred_ttft_upper_s"].to_numpy(dtype=float)
                ok = np.isfinite(t) & np.isfinite(lo) & np.isfinite(hi)
                covered.append((t[ok] >= lo[ok]) & (t[ok] <= hi[ok]))
                width.append(hi[ok] / lo[ok] - 1)
        for k, parts in ape.items():
            e = np.concatenate(parts) * 100
            rows.append({"protocol": protocol, "quantity": k, "n": len(e), "median APE %": np.median(e),
                         "p90 APE %": np.percentile(e, 90)})
            if k == "ttft" and covered:
                rows[-1].update({"90 % band coverage %": 100 * float(np.concatenate(covered).mean()),
                                 "median band width": np.median(np.concatenate(width))})
    print(to_markdown(pd.DataFrame(rows)))


if __name__ == "__main__":
    main()
