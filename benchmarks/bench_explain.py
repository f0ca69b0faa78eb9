"""Benchmark the feature-set comparison, the transfer test and SHAP timing on LLM-Inference-Bench.

On ``../shared/data/llm-inference-bench/All_results.csv`` (4,772 rows):

1. :func:`perfmodel.explain.compare_feature_sets` for the physical, framework,
   identity and all sets, GBDT and polynomial learners, under a random 80/20
   split and leave-one-framework-out / leave-one-hardware-out transfer: R^2
   (throughput and log throughput), MAPE, median APE, dominant features,
   agreement with hardware principles. All_results carries no
   framework-internal metric: the framework rows say so instead of numbers.
2. The drop from random to transfer per set, and the answer (measured, not
   assumed) to "does the physical set lose less accuracy under transfer than the
   identity set?".
3. SHAP timing: 5,000 rows (All_results resampled with replacement) x a
   200-tree model, with shap's TreeExplainer and XGBoost's pred_contribs, and
   the cached rerun.

    python benchmarks/bench_explain.py [--protocols random,transfer-framework,transfer-hardware]
                                       [-o bench_explain.csv]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from perfmodel import explain as E
from perfmodel.evaluate import to_markdown
from perfmodel.features import feature_names
from perfmodel.importers import read_file

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "llm-inference-bench" / "All_results.csv"
COLUMNS = ["protocol", "set", "learner", "n_features", "n_test", "r2", "r2_log", "mape_pct", "median_ape_pct",
           "top_features", "physics_agrees", "fit_s"]
# Issue 6: the reference analysis (127 framework metrics; 9 physical features).
REFERENCE = ("reference analysis (issue 6): GBDT R2 0.989 / MAPE 1.53% on 127 framework metrics; "
             "GBDT R2 0.963 / MAPE 6.06% and polynomial R2 0.056 on 9 physical features; physical set kept "
             "R2 >= 0.94 on another framework")


def _fmt(df: pd.DataFrame) -> pd.DataFrame:
    """R^2 columns with 3 decimals (Markdown would give them one, like a percentage)."""
    out = df.copy()
    for c in out.columns:
        if str(c).startswith("r2"):
            out[c] = [("n/a" if v != v else f"{v:.3f}") for v in out[c].astype(float)]
    return out


def shap_timing(runs: pd.DataFrame, n_rows: int = 5000, n_trees: int = 200) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    big = runs.iloc[rng.choice(len(runs), n_rows, replace=True)].reset_index(drop=True)
    t0 = time.perf_counter()
    model = E.fit_gbdt(big, "all", n_estimators=n_trees)
    fit_s = time.perf_counter() - t0
    rows = []
    for engine in E.ENGINES:
        t0 = time.perf_counter()
        ex = E.explain(model, big, sample_size=None, engine=engine, cache=True)
        total = time.perf_counter() - t0
        t0 = time.perf_counter()
        again = E.explain(model, big, sample_size=None, engine=engine, cache=True)
        rows.append({"engine": engine, "rows": ex.sample_size, "trees": n_trees, "depth": 5,
                     "features": len(model.feature_names), "fit_s": fit_s, "shap_s": ex.elapsed_s,
                     "explain_total_s": total, "cached_rerun_s": time.perf_counter() - t0,
                     "cache_hit": again.cached, "max_additivity_error": ex.max_additivity_error})
    return pd.DataFrame(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--protocols", default=",".join(E.COMPARE_PROTOCOLS))
    ap.add_argument("-o", "--output", type=Path, default=None, help="write the comparison table as CSV")
    ap.add_argument("--skip-timing", action="store_true")
    args = ap.parse_args()
    if not DATA.exists():
        print(f"needs {DATA}", file=sys.stderr)
        return 2
    # explanations are cached under PERFMODEL_HOME: use a fresh one so the timing is a cold start
    os.environ.setdefault("PERFMODEL_HOME", tempfile.mkdtemp(prefix="bench-explain-"))
    runs = read_file(DATA).runs
    print(f"# Feature sets on {DATA.name}: {len(runs):,} rows, {runs['framework'].nunique()} frameworks, "
          f"{runs['hardware'].nunique()} accelerators")
    fw_cols = feature_names(runs, "framework")
    settings = feature_names(runs, "settings")
    print(f"framework-internal metric (fw_*) columns in this file: {len(fw_cols)}"
          + (" -> the framework set is empty here; it is real on sweeps that scrape a server's /metrics"
             if not fw_cols else "")
          + (f"; settings chosen before the runs (in 'all', not in 'framework'): {', '.join(settings)}"
             if settings else "") + "\n")
    tables = []
    for protocol in [p.strip() for p in args.protocols.split(",") if p.strip()]:
        t0 = time.perf_counter()
        df = E.compare_feature_sets(runs, protocol=protocol)
        print(f"## {protocol} ({time.perf_counter() - t0:.0f} s)\n")
        print(to_markdown(_fmt(df), COLUMNS))
        notes = sorted(set(n for n in df["note"] if n))
        for n in notes:
            print(f"\nnote: {n}")
        print()
        tables.append(df)
    table = pd.concat(tables, ignore_index=True)
    if args.output:
        table.to_csv(args.output, index=False)
        print(f"wrote {args.output}")
    print(REFERENCE + "\n")

    rnd = table[table["protocol"] == "random"].set_index(["set", "learner"])
    for protocol in sorted(set(table["protocol"]) - {"random"}):
        tr = table[table["protocol"] == protocol].set_index(["set", "learner"])
        if rnd.empty:
            break
        drop = pd.DataFrame({"r2_log_random": rnd["r2_log"], "r2_log_transfer": tr["r2_log"],
                             "r2_log_drop": rnd["r2_log"] - tr["r2_log"],
                             "median_ape_random": rnd["median_ape_pct"], "median_ape_transfer": tr["median_ape_pct"],
                             "median_ape_increase": tr["median_ape_pct"] - rnd["median_ape_pct"],
                             "mape_random": rnd["mape_pct"], "mape_transfer": tr["mape_pct"]}).dropna().reset_index()
        print(f"## drop from random to {protocol}\n")
        print(to_markdown(_fmt(drop)))
        for learner in E.LEARNERS:
            d = drop[drop["learner"] == learner].set_index("set")
            if {"physical", "identity"} <= set(d.index):
                p, i = d.loc["physical"], d.loc["identity"]
                less = p["r2_log_drop"] < i["r2_log_drop"]
                print(f"\n{learner}: physical loses {p['r2_log_drop']:.3f} of R2(log) vs identity "
                      f"{i['r2_log_drop']:.3f} -> physical loses less: {'YES' if less else 'NO'}; after transfer "
                      f"physical R2(log) {p['r2_log_transfer']:.3f} vs identity {i['r2_log_transfer']:.3f}, "
                      f"median APE {p['median_ape_transfer']:.1f}% vs {i['median_ape_transfer']:.1f}%")
        print()
    if not args.skip_timing:
        print("## SHAP timing (5,000 rows x 200 trees, depth 5, 1 thread)\n")
        print(to_markdown(shap_timing(runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
