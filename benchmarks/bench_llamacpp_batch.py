"""What LLM-Inference-Bench's llama.cpp "Batch Size" means: concurrent sequences, or one sequence?

perfmodel's importer reads a llama.cpp row with batch B > 1, whose throughput the file gives per sequence,
``(input + output) / Latency``, as one sequence run with llama.cpp's ``n_batch`` = B (prompt tokens per
forward pass): ``batch_size`` 1, ``fw_n_batch`` B, the figure as written. Until 2026-12-01 it read B
concurrent sequences and multiplied the figure by B. This script prints the evidence that decided it, per
framework and batch, against the physics of :func:`perfmodel.physics.roofline`, with the llama.cpp rows put
back to the concurrency reading:

- ``latency vs batch 1``: the median ratio of a configuration's end-to-end latency at batch B to its
  latency at batch 1. B concurrent sequences never finish sooner than one alone does;
- ``below e2e floor``: rows whose measured latency is shorter than the roofline's ``e2e_s_min`` for B
  sequences (the weights and every sequence's KV cache read once per decode step at peak bandwidth);
- ``beyond KV fit``: rows whose B full-length sequences would not fit their KV cache beside the weights
  (:func:`perfmodel.physics.kv_fit_batch`).

Read as concurrency, llama.cpp's latency falls to about half from batch 1 to 16 and stays flat to 64, and
its rows at batch 32-64 finish faster than physics allows B sequences to: the signature of one sequence
whose prompt is processed B tokens at a time (at 1 the prompt is fed token by token, which doubles a run
whose input and output lengths are equal). The other frameworks' latencies grow with the batch. The last
table checks perfmodel's reading against the same floor (one sequence, ``ceil(input / n_batch)`` reads of
the weights for the prompt).

    python benchmarks/bench_llamacpp_batch.py [--data PATH]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from perfmodel import physics
from perfmodel.evaluate import to_markdown
from perfmodel.importers import read_file

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "llm-inference-bench" / "All_results.csv"


def evidence(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per framework and batch: latency against batch 1, and the rows physics rules out."""
    roof = physics.roofline(runs)
    df = runs.assign(lat=runs["e2e_latency_s"].astype(float), e2e_min=roof["e2e_s_min"].to_numpy(),
                     kv_fit=roof["kv_fit_batch"].to_numpy())
    keys = ["hardware", "device_count", "framework", "model", "input_len_tok", "output_len_tok"]
    one = df[df["batch_size"] == 1].groupby(keys, observed=True)["lat"].median().rename("lat1")
    df = df.join(one, on=keys)
    rows = []
    for (fw, b), g in df.groupby(["framework", "batch_size"], observed=True):
        if b not in (1, 16, 32, 64):
            continue
        rel = (g["lat"] / g["lat1"]).to_numpy(dtype=float)
        rel = rel[np.isfinite(rel)]
        rows.append({"framework": fw, "batch": int(b), "rows": len(g),
                     "latency vs batch 1 (median)": round(float(np.median(rel)), 2) if len(rel) else np.nan,
                     "below e2e floor": int((g["lat"] < g["e2e_min"]).sum()),
                     "beyond KV fit": int((g["batch_size"] > g["kv_fit"]).sum())})
    return pd.DataFrame(rows)


def as_concurrency(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs with llama.cpp's ``n_batch`` rows put back to B concurrent sequences (the old reading)."""
    if "fw_n_batch" not in runs.columns:
        return runs
    nb = pd.to_numeric(runs["fw_n_batch"], errors="coerce")
    out = runs.drop(columns=["fw_n_batch"])
    out["batch_size"] = nb.where(nb.notna(), runs["batch_size"]).astype("float64")
    return out


def one_sequence_check(runs: pd.DataFrame) -> pd.DataFrame:
    """perfmodel's reading: llama.cpp rows as one sequence at n_batch B, against their e2e floor."""
    if "fw_n_batch" not in runs.columns:
        return pd.DataFrame()
    sel = runs[pd.to_numeric(runs["fw_n_batch"], errors="coerce").notna()]
    roof = physics.roofline(sel)
    ratio = sel["e2e_latency_s"].astype(float).to_numpy() / roof["e2e_s_min"].to_numpy()
    rows = []
    for nb in sorted(sel["fw_n_batch"].unique()):
        m = (sel["fw_n_batch"] == nb).to_numpy() & np.isfinite(ratio)
        rows.append({"n_batch": int(nb), "rows": int(m.sum()), "below e2e floor": int((ratio[m] < 1).sum()),
                     "latency / floor (median)": round(float(np.median(ratio[m])), 2) if m.any() else np.nan})
    return pd.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    args = ap.parse_args()
    runs = read_file(args.data).runs
    n_nb = int(pd.to_numeric(runs.get("fw_n_batch"), errors="coerce").notna().sum()) \
        if "fw_n_batch" in runs.columns else 0
    print(f"{args.data.name}: {len(runs):,} rows; {n_nb:,} llama.cpp rows carry n_batch (fw_n_batch)\n")
    print("Read as concurrent sequences (batch = the file's Batch Size):\n")
    print(to_markdown(evidence(as_concurrency(runs))))
    check = one_sequence_check(runs)
    if len(check):
        print("\nRead as one sequence at n_batch = the file's Batch Size (perfmodel's reading):\n")
        print(to_markdown(check))


if __name__ == "__main__":
    main()
