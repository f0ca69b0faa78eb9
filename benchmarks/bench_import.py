"""Import throughput: parse, finalize and store timed separately, with peak RSS.

Measures the largest shared file (LLM-Inference-Bench ``All_results.csv``) and a
generated 1,000,000-row CSV in the same format (written to a temporary
directory at run time). Each measurement runs in a fresh subprocess so that its
peak RSS is its own. Target: 1,000,000 rows imported and stored in under 30 s
with peak memory under 2 GB.

Usage::

    python benchmarks/bench_import.py [--rows 1000000]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ALL_RESULTS = REPO.parent / "shared" / "data" / "llm-inference-bench" / "All_results.csv"


def measure(path: Path, home: Path) -> dict[str, float]:
    """Import ``path`` into a store in ``home``; seconds per phase and peak RSS (MB)."""
    import hashlib

    from perfmodel.importers.base import ImportMeta, Sample, detect_format, finalize
    from perfmodel.store import Store

    meta = ImportMeta()
    t0 = time.perf_counter()
    sample = Sample(path)
    imp = detect_format(sample)
    parsed = imp.parse(sample, meta)
    t1 = time.perf_counter()
    result = finalize(parsed, meta=meta, fmt=imp.name, file=sample.name,
                      sha256=hashlib.sha256(sample.data).hexdigest(),
                      has_hardware=imp.has_hardware, has_model=imp.has_model)
    t2 = time.perf_counter()
    info = Store(home).add_dataset([result], meta=meta)
    t3 = time.perf_counter()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
    return {"rows": info.n_runs, "parse_s": t1 - t0, "finalize_s": t2 - t1, "store_s": t3 - t2,
            "total_s": t3 - t0, "peak_rss_mb": peak_mb}


def generate(n_rows: int, out: Path, seed: int = 0) -> Path:
    """A CSV in the All_results format: rows drawn from the real file, latencies jittered
    (throughput rescaled to stay consistent) so no two rows are identical."""
    import numpy as np
    import pandas as pd

    src = pd.read_csv(ALL_RESULTS)
    rng = np.random.default_rng(seed)
    df = src.iloc[rng.integers(0, len(src), n_rows)].reset_index(drop=True)
    k = 1 + rng.normal(0, 0.02, n_rows).clip(-0.1, 0.1)
    df["Latency"] = df["Latency"] * k
    df["Throughput"] = df["Throughput"] / k
    df.to_csv(out, index=False)
    return out


def _run_child(path: Path) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as home:
        res = subprocess.run([sys.executable, __file__, "--child", str(path), home], capture_output=True,
                             text=True, check=False)
    if res.returncode != 0:
        raise SystemExit(f"measurement of {path} failed:\n{res.stderr}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows of the generated CSV")
    ap.add_argument("--child", nargs=2, metavar=("FILE", "HOME"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(measure(Path(args.child[0]), Path(args.child[1]))))
        return
    if not ALL_RESULTS.exists():
        raise SystemExit(f"needs {ALL_RESULTS}")
    rows = [("All_results.csv", ALL_RESULTS.stat().st_size, _run_child(ALL_RESULTS))]
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        big = generate(args.rows, Path(tmp) / f"generated_{args.rows}.csv")
        print(f"(generated {args.rows:,} rows, {big.stat().st_size / 1e6:.0f} MB in "
              f"{time.perf_counter() - t0:.1f} s)")
        rows.append((big.name, big.stat().st_size, _run_child(big)))
    head = (f"{'file':<26}{'MB':>7}{'rows':>11}{'parse s':>9}{'final. s':>9}{'store s':>9}{'total s':>9}"
            f"{'rows/s':>11}{'peak RSS MB':>13}")
    print(head)
    print("-" * len(head))
    for name, size, m in rows:
        print(f"{name:<26}{size / 1e6:>7.1f}{int(m['rows']):>11,}{m['parse_s']:>9.2f}{m['finalize_s']:>9.2f}"
              f"{m['store_s']:>9.2f}{m['total_s']:>9.2f}{m['rows'] / m['total_s']:>11,.0f}{m['peak_rss_mb']:>13.0f}")


if __name__ == "__main__":
    main()
