"""Measure the bundled sample runs with perfmodel's local engine (real CPU numbers).

Runs a static-batch grid of the random-weight ``perfmodel-tiny-llama`` model
(:data:`perfmodel.sweep.TINY_LLAMA_CONFIG`, 12,587,904 parameters) in-process
with PyTorch + transformers on this machine's CPU, writes the canonical runs
table to ``sample_runs/<model>_<hardware>.csv`` (rewritten after every point, so
an interrupted run keeps what it measured) and ``sample_runs/README.md``
describing the machine, the versions and the command, and prints a table of
median throughput per point.

Needs the ``engine`` extra (``pip install perfmodel[engine]``)::

    python benchmarks/make_sample_runs.py                # the full default grid
    python benchmarks/make_sample_runs.py --batch-sizes 1 4 --input-lens 64 --output-lens 32 --repeats 1
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from perfmodel.errors import PerfmodelError
from perfmodel.sweep import (
    ENGINE_SOURCE_FORMAT,
    SAMPLE_HARDWARE,
    SAMPLE_MODEL,
    TINY_LLAMA_CONFIG,
    LocalEngine,
    StaticBatchPoint,
    runs_frame,
)
from perfmodel.sweep.local_engine import ENGINE_INSTALL_HINT

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "sample_runs"
DEFAULT_BATCH_SIZES = (1, 2, 4, 8, 16, 32, 64, 128)
DEFAULT_INPUT_LENS_TOK = (64, 256)
DEFAULT_OUTPUT_LENS_TOK = (32, 128)
DEFAULT_REPEATS = 3


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch-sizes", type=int, nargs="+", default=list(DEFAULT_BATCH_SIZES))
    p.add_argument("--input-lens", type=int, nargs="+", default=list(DEFAULT_INPUT_LENS_TOK))
    p.add_argument("--output-lens", type=int, nargs="+", default=list(DEFAULT_OUTPUT_LENS_TOK))
    p.add_argument("--repeats", type=int, default=DEFAULT_REPEATS)
    p.add_argument("--num-threads", type=int, default=1, help="torch intra-op threads (1: see README)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out-dir", type=Path, default=DEFAULT_OUT)
    p.add_argument("--nice", type=int, default=0,
                   help="add this to the process niceness before measuring (negative raises the priority; "
                        "needs root) so other jobs on a shared VM crowd the measurement out less")
    p.add_argument("--no-readme", action="store_true", help="write only the CSV")
    return p.parse_args(argv)


def _machine() -> dict[str, str]:
    """What the README says about the host; read from the OS, never typed in."""
    info: dict[str, str] = {"nproc": str(os.cpu_count()), "platform": platform.platform(),
                            "python": platform.python_version()}
    try:
        cpu = Path("/proc/cpuinfo").read_text().splitlines()
        for key in ("model name", "cpu MHz", "cache size"):
            vals = [ln.split(":", 1)[1].strip() for ln in cpu if ln.startswith(key)]
            if vals:
                info[key] = vals[0]
        flags = next((ln.split(":", 1)[1].split() for ln in cpu if ln.startswith("flags")), [])
        info["simd"] = " ".join(f for f in ("avx2", "avx512f", "avx512_bf16", "amx_tile") if f in flags) or "none"
    except OSError:
        info["model name"] = platform.processor()
    try:
        info["free -g"] = subprocess.run(["free", "-g"], capture_output=True, text=True, timeout=10).stdout.strip("\n").rstrip()
    except (OSError, subprocess.SubprocessError):
        pass
    return info


def _versions() -> dict[str, str]:
    import numpy
    import torch
    import transformers

    import perfmodel
    return {"perfmodel": perfmodel.__version__, "torch": torch.__version__,
            "transformers": transformers.__version__, "numpy": numpy.__version__, "pandas": pd.__version__}


def _write_csv(df: pd.DataFrame, path: Path) -> None:
    out = df.copy()
    out["timestamp"] = out["timestamp"].dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    out.to_csv(path, index=False, float_format="%.6g")


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """Median over repeats of the headline columns, one row per point."""
    keys = ["input_len_tok", "output_len_tok", "batch_size"]
    cols = {"output_throughput_tok_s": "out_tok_s", "total_throughput_tok_s": "total_tok_s",
            "e2e_latency_s": "e2e_s", "ttft_s": "ttft_s", "tpot_s": "tpot_s"}
    g = df.groupby(keys, sort=True)[list(cols)].median().rename(columns=cols)
    g["spread_pct"] = (df.groupby(keys, sort=True)["output_throughput_tok_s"]
                       .agg(lambda s: 100 * (s.max() - s.min()) / s.median()))
    return g.reset_index().astype({k: int for k in keys})


def _markdown(t: pd.DataFrame) -> str:
    cols = list(t.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---:" for _ in cols) + "|"]
    for _, r in t.iterrows():
        cells = [f"{int(r[c])}" if c in ("input_len_tok", "output_len_tok", "batch_size")
                 else f"{r[c]:.4g}" for c in cols]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _nice_note(nice: int) -> str:
    if not nice:
        return ""
    return (f"\n* Priority: the script ran with `--nice {nice}` (`os.nice`, and the same value for its Linux"
            "\n  scheduler autogroup, i.e. its login session), so that the one measuring thread was"
            "\n  crowded out less by the other jobs on the VM; it still shared the machine (see `hw_proc_cpu_pct`).")


def _readme(df: pd.DataFrame, csv_name: str, command: str, machine: Mapping[str, str],
            versions: Mapping[str, str], wall_s: float, args: argparse.Namespace,
            n_params: int) -> str:
    first = df["timestamp"].min().strftime("%Y-%m-%d %H:%M UTC")
    last = df["timestamp"].max().strftime("%Y-%m-%d %H:%M UTC")
    cfg = ", ".join(f"{k}={v}" for k, v in TINY_LLAMA_CONFIG.items())
    vers = ", ".join(f"{k} {v}" for k, v in versions.items())
    cpu_busy = df["hw_cpu_util_pct"].median() if "hw_cpu_util_pct" in df else float("nan")
    proc_cpu = df["hw_proc_cpu_pct"].median()
    return f"""# Bundled sample runs

**These are REAL CPU measurements made by perfmodel's own local engine**
(`perfmodel.sweep.LocalEngine`), not GPU numbers and not copied from anywhere.
They exist so the app and the tests open on data the project measured itself;
the absolute numbers describe a tiny model on a small shared CPU VM and say
nothing about GPU serving.

* File: `{csv_name}`: {len(df)} rows, one per repeat ({df.groupby(['input_len_tok', 'output_len_tok', 'batch_size']).ngroups} points x {args.repeats} repeats), canonical runs table
  (header = `perfmodel.schema.COLUMN_NAMES` in order, then `fw_`/`hw_` extras; format id `canonical`,
  `source_format` = `{ENGINE_SOURCE_FORMAT}`).
* Measured: {first} to {last} ({wall_s / 60:.1f} min wall time for the whole grid, warm-ups included).
* Command: `{command}` (from the repository root).

## What was measured

* Model `{SAMPLE_MODEL}`: `LlamaForCausalLM(LlamaConfig({cfg}))` with **random weights**
  (seed {args.seed}), {n_params:,} parameters, float32, built in-process (no model hub; decoding speed does not
  depend on weight values).
* Load: true static batches (`load_kind = static_batch`): `batch_size` random-token prompts of exactly
  `input_len_tok` tokens each, one `model.generate` call, greedy (`do_sample=False`),
  `min_new_tokens = max_new_tokens = output_len_tok`, no EOS stopping (the number of generated tokens is
  checked on every call).
* Grid: batch sizes {args.batch_sizes}; input lengths {args.input_lens}; output lengths {args.output_lens};
  {args.repeats} measured repeats per point after one unmeasured warm-up call of the same batch and prompt
  shape (8 output tokens).
* Timing: one `generate` per repeat; a streamer stamps the clock when the prompt is handed over and after each
  decoding step. `e2e_latency_s` = the whole batch (every sequence starts and ends together);
  `ttft_s` = prefill (setup + one forward pass over the whole prompt batch + first greedy pick);
  `tpot_s` = decode time after the first token / (output_len - 1); `itl_*` = percentiles of the per-step gaps;
  `output_throughput_tok_s` = batch x output_len / e2e; `total_throughput_tok_s` = batch x (input + output) / e2e;
  `fw_prefill_s`, `fw_decode_s` = the two phases (they add up to e2e within the set-up time).
* Threads: `torch.set_num_threads({args.num_threads})`. On this 2-vCPU VM, two torch threads under load from
  other processes were 10-20x slower than one, so one thread is the default.{_nice_note(args.nice)}
* Telemetry per repeat: `hw_proc_cpu_pct` (this process's CPU time / wall time; about 100 means it had its
  core), `hw_cpu_util_pct` (whole-machine CPU use, psutil, 100 = both vCPUs busy), `hw_loadavg_1m`,
  `hw_mem_used_pct`, `hw_proc_rss_gb`. Medians over the grid: process CPU {proc_cpu:.0f} %, machine CPU
  {cpu_busy:.0f} %.

## Machine

A **shared, noisy 2-vCPU VM**: other engineers' jobs ran on the same VM during the measurement, so expect
repeat-to-repeat spread (column `spread_pct` below = (max - min) / median of the repeats' output throughput).

* CPU (`/proc/cpuinfo`): {machine.get('model name', '?')}, {machine.get('cpu MHz', '?')} MHz reported,
  cache {machine.get('cache size', '?')}, SIMD: {machine.get('simd', '?')}; `nproc` = {machine['nproc']}
* Memory (`free -g`):

```
{machine.get('free -g', '(not available)')}
```

* OS: {machine['platform']}; Python {machine['python']}
* Versions: {vers}
* Catalog key of this hardware: `{SAMPLE_HARDWARE}`.

## Median over repeats

{_markdown(summary(df))}
"""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the grid, write the CSV and README, print the summary table."""
    args = _parse(argv)
    try:
        points = [StaticBatchPoint(batch_size=b, input_len_tok=i, output_len_tok=o)
                  for i in args.input_lens for o in args.output_lens for b in sorted(args.batch_sizes)]
        engine = LocalEngine(num_threads=args.num_threads, seed=args.seed).load()
    except PerfmodelError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:  # pragma: no cover - the engine raises PerfmodelError first
        print(f"error: {exc}; {ENGINE_INSTALL_HINT}", file=sys.stderr)
        return 2
    if args.nice:
        try:
            os.nice(args.nice)
        except OSError as exc:
            print(f"error: cannot change the niceness by {args.nice}: {exc}", file=sys.stderr)
            return 2
        # With Linux autogroup scheduling, CPU is first shared between sessions
        # and plain niceness only counts inside one, so set the session's too.
        autogroup = Path("/proc/self/autogroup")
        if autogroup.exists():
            try:
                autogroup.write_text(str(os.getpriority(os.PRIO_PROCESS, 0)))
            except OSError as exc:
                print(f"warning: autogroup niceness unchanged: {exc}", file=sys.stderr)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    csv_path = args.out_dir / f"{SAMPLE_MODEL}_{SAMPLE_HARDWARE}.csv"
    total = len(points) * args.repeats
    print(f"{engine.n_parameters_:,} parameters; {len(points)} points x {args.repeats} repeats -> {csv_path}")
    t0 = time.perf_counter()
    rows: list[dict[str, Any]] = []

    def progress(done: int, total_: int, row: Mapping[str, Any]) -> None:
        print(f"[{done:3d}/{total_}] B={int(row['batch_size']):4d} in={int(row['input_len_tok']):4d} "
              f"out={int(row['output_len_tok']):4d} r={row['repeat_idx']}  "
              f"{row['output_throughput_tok_s']:8.1f} out tok/s  e2e {row['e2e_latency_s']:7.3f} s  "
              f"proc cpu {row['hw_proc_cpu_pct']:5.1f}%  [{time.perf_counter() - t0:6.0f} s]", flush=True)

    df = None
    for p in points:
        rows += engine.measure(p, repeats=args.repeats, on_progress=progress, progress_offset=len(rows),
                               progress_total=total)
        df = runs_frame(rows)
        _write_csv(df, csv_path)
    wall_s = time.perf_counter() - t0
    assert df is not None
    print()
    print(summary(df).to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(f"\n{len(df)} rows in {wall_s:.0f} s -> {csv_path}")
    if not args.no_readme:
        command = "python benchmarks/make_sample_runs.py" + (" " + shlex.join(argv) if argv else
                                                             (" " + shlex.join(sys.argv[1:]) if sys.argv[1:] else ""))
        assert engine.n_parameters_ is not None
        text = _readme(df, csv_path.name, command, _machine(), _versions(), wall_s, args, engine.n_parameters_)
        (args.out_dir / "README.md").write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
