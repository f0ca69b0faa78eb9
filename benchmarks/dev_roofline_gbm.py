"""Developer loop for the roofline-gbm predictor: the issue-4 protocols on All_results.csv, 3 seeds.

Usage: python benchmarks/dev_roofline_gbm.py [--seeds 3] [--protocols random,config,...] [key=value settings]
Protocols: random, config, length, batch128, batch64, loho (hardware), lomo (model), lofo (framework).
Prints median / p90 APE, 90% band coverage and width, Spearman(confidence, |error|) per protocol.
The official harness is perfmodel/evaluate.py; this script is for iterating on the predictor.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from perfmodel.importers import read_file
from perfmodel.models.roofline_gbm import RooflineGBM, _config_keys

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "llm-inference-bench" / "All_results.csv"
Y = "output_throughput_tok_s"


def splits(runs: pd.DataFrame, protocol: str, seed: int):
    rng = np.random.default_rng(seed)
    n = len(runs)
    if protocol == "random":
        te = rng.random(n) < 0.2
        yield ~te, te
    elif protocol == "config":
        keys = _config_keys(runs).to_numpy()
        u = np.unique(keys)
        held = set(rng.choice(u, size=len(u) // 5, replace=False))
        te = np.array([k in held for k in keys])
        yield ~te, te
    elif protocol == "length":
        for length in sorted(runs.input_len_tok.unique()):
            te = (runs.input_len_tok == length).to_numpy()
            yield ~te, te
    elif protocol == "batch128":
        b = runs.batch_size.to_numpy()
        yield b <= 128, b == 256
    elif protocol == "batch64":
        b = runs.batch_size.to_numpy()
        yield b <= 64, b >= 128
    elif protocol == "loho":
        for hw in sorted(runs.hardware.unique()):
            te = (runs.hardware == hw).to_numpy()
            yield ~te, te
    elif protocol in ("lomo", "lofo"):
        col = "model" if protocol == "lomo" else "framework"
        for v in sorted(runs[col].astype(str).unique()):
            te = (runs[col].astype(str) == v).to_numpy()
            yield ~te, te


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--protocols", default="random,config,length,batch128,batch64,loho,lomo,lofo")
    ap.add_argument("settings", nargs="*")
    a = ap.parse_args()
    settings = {}
    for kv in a.settings:
        k, v = kv.split("=")
        settings[k] = type(getattr(RooflineGBM(), k))(v) if not isinstance(getattr(RooflineGBM(), k), bool) \
            else v.lower() in ("1", "true")
    runs = read_file(str(DATA)).runs
    ok = runs[Y].notna().to_numpy()
    runs = runs.loc[ok].reset_index(drop=True)
    print(f"{len(runs)} rows; settings {settings}")
    print(f"{'protocol':10s} {'medAPE':>7s} {'p90APE':>7s} {'cov90':>6s} {'width':>6s} {'spear':>6s} "
          f"{'inDom':>6s} {'fit_s':>6s}")
    for proto in a.protocols.split(","):
        seeds = range(a.seeds) if proto in ("random", "config") else range(1)
        ape, cov, wid, conf, err, dom, fit_s = [], [], [], [], [], [], []
        for seed in seeds:
            for tr, te in splits(runs, proto, seed):
                if te.sum() == 0:
                    continue
                t = time.perf_counter()
                m = RooflineGBM(random_state=seed, **settings).fit(runs.loc[tr])
                fit_s.append(time.perf_counter() - t)
                p = m.predict(runs.loc[te], level=0.9)
                y = runs.loc[te, Y].to_numpy()
                e = np.abs(p.pred_throughput_tok_s.to_numpy() / y - 1) * 100
                ape.append(e)
                cov.append((y >= p.pred_lower) & (y <= p.pred_upper))
                wid.append((p.pred_upper - p.pred_lower) / p.pred_throughput_tok_s)
                conf.append(p.confidence.to_numpy())
                err.append(e)
                dom.append(p.in_domain.to_numpy())
        e = np.concatenate(ape)
        rho = spearmanr(np.concatenate(conf), np.concatenate(err)).statistic
        print(f"{proto:10s} {np.median(e):7.2f} {np.percentile(e, 90):7.2f} "
              f"{np.concatenate(cov).mean() * 100:6.1f} {np.median(np.concatenate(wid)):6.2f} {rho:6.2f} "
              f"{np.concatenate(dom).mean() * 100:6.1f} {np.mean(fit_s):6.2f}", flush=True)


if __name__ == "__main__":
    main()
