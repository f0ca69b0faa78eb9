"""Peer comparison: NVIDIA aiconfigurator vs perfmodel on the LLM-Inference-Bench rows it covers.

aiconfigurator (https://github.com/ai-dynamo/aiconfigurator) predicts TTFT/TPOT/throughput offline from a
measured per-kernel database. Its pins (pandas, pydantic, numpy, ...) must not touch perfmodel's environment,
so this script keeps it in its own virtual environment (``.venv-peers/``, created on first use, git-ignored)
and drives it through a subprocess: this same file run with ``--worker`` by that environment's Python,
JSON lines in on stdin, JSON lines out on stdout.

Rows. ``../shared/data/llm-inference-bench/All_results.csv`` imported through :func:`perfmodel.importers.read_file`
(canonical names), restricted to what aiconfigurator models:

- hardware in its database: ``h100-sxm`` -> ``h100_sxm``; ``a100-40gb`` -> ``a100_sxm`` (its only A100 SXM
  system is the 80 GB part, 2.04 TB/s; the data's A100 is the 40 GB one, 1.56 TB/s, same compute);
- frameworks it has kernel tables for: TensorRT-LLM -> ``trtllm``, vLLM -> ``vllm`` (its SGLang tables have no
  counterpart in this file; llama.cpp, DeepSpeed-MII and the other accelerators are not modelled);
- models whose architecture it models: Llama-3-8B / Llama-3-70B through its shipped Llama-3.1 configs (same
  shapes; 3.1 only changes RoPE scaling), Mixtral-8x7B through its shipped config, and Llama-2-7B/70B,
  Mistral-7B and Qwen2-7B/72B (``LlamaForCausalLM``/``Qwen2ForCausalLM`` families it supports but ships no config
  for) through a HF ``config.json`` written from perfmodel's model catalog (``--models shipped`` keeps only the
  first three).

Mapping. One static-batching estimate per row (``mode="static"``: the whole batch is prefilled together, then
decoded for ``osl`` steps, which is how LLM-Inference-Bench ran): batch = ``batch_size``, isl/osl = the row's
lengths, TP = device count (the benchmark ran TensorRT-LLM and vLLM tensor-parallel across the devices; MoE
experts tensor-parallel too), bf16 weights/KV (aiconfigurator's default; the file does not record the dtype).

Throughput definition. The row's ``output_throughput_tok_s`` is ``batch x output_len / Latency`` (the file's
Throughput is ``batch x (in + out) / Latency``; the importer scales it by ``out / (in + out)``). The estimate is
converted the same way: ``batch x osl / request_latency``, where aiconfigurator's static ``request_latency`` is
prefill of the whole batch + all decode steps (its own ``tokens/s`` is the same quantity; the worker checks
that they agree).

Scoring. Median / p90 APE (:func:`perfmodel.evaluate.score`) uncalibrated, then with one global correction
factor (the median of log(measured / predicted) on a random half of the covered rows) evaluated on the other
half, 3 seeds. On the same held-out halves, perfmodel's ``roofline-gbm`` and the reproduced published hybrid
(``ala``) are trained on every row of the file except the held-out ones. Predictions are cached in
``benchmarks/out/aiconfigurator_predictions.csv`` (git-ignored), so reruns only score.

    python benchmarks/bench_peer_aiconfigurator.py [--seeds 3] [--models all|shipped] [--predictors roofline-gbm,ala]
                                                   [--no-install] [--refresh]

If aiconfigurator cannot be installed or run, the script says why and exits 0 without numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "llm-inference-bench" / "All_results.csv"
PEER_VENV = REPO / ".venv-peers"
OUT = REPO / "benchmarks" / "out"
CACHE = OUT / "aiconfigurator_predictions.csv"
MODEL_DIR = OUT / "aiconfigurator_models"
AIC_REQUIREMENT = "aiconfigurator==0.12.0"
PREDICT_COLUMN = "output_throughput_tok_s"

#: perfmodel hardware key -> aiconfigurator system.
SYSTEMS = {"h100-sxm": "h100_sxm", "a100-40gb": "a100_sxm"}
#: perfmodel framework key -> aiconfigurator backend.
BACKENDS = {"tensorrt-llm": "trtllm", "vllm": "vllm"}
#: perfmodel model key -> config shipped inside aiconfigurator_core/model_configs.
SHIPPED = {"llama-3-8b": "meta-llama--Meta-Llama-3.1-8B", "llama-3-70b": "meta-llama--Meta-Llama-3.1-70B",
           "mixtral-8x7b": "mistralai--Mixtral-8x7B-v0.1"}
#: perfmodel model key -> HF architecture written into a config built from perfmodel's catalog. Mistral-7B is
#: Llama-shaped (its 4,096-token sliding window never binds at isl + osl <= 4,096), so it is written as Llama.
FROM_CATALOG = {"llama-2-7b": "LlamaForCausalLM", "llama-2-70b": "LlamaForCausalLM",
                "mistral-7b-v0.1": "LlamaForCausalLM", "qwen2-7b": "Qwen2ForCausalLM",
                "qwen2-72b": "Qwen2ForCausalLM"}
# Ray et al. 2025 (arXiv:2505.09319), median / p90 APE (%) on LLM-Inference-Bench (as in bench_predict.py).
PUBLISHED = {"linear": (103.32, 215.67), "random forest": (44.78, 98.23), "XGBoost": (47.09, 101.45),
             "hybrid": (23.65, 67.34)}
KEY_COLUMNS = ["system", "backend", "model", "isl", "osl", "batch", "tp"]
CACHE_COLUMNS = [*KEY_COLUMNS, "ok", "pred_output_tok_s", "aic_tokens_s", "ttft_ms", "tpot_ms",
                 "request_latency_ms", "backend_version", "config_source", "oom_warning", "elapsed_s", "error"]


# --------------------------------------------------------------------------- worker (runs in .venv-peers)

def _worker() -> int:
    """Answer estimate requests: one JSON object per stdin line, one per stdout line, same order."""
    import importlib.resources
    import shutil

    # aiconfigurator logs to stdout as well; keep stdout for the JSON answers only.
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    import logging

    logging.disable(logging.WARNING)
    from aiconfigurator.cli.api import cli_estimate
    from aiconfigurator_core.sdk.perf_database import get_latest_database_version

    versions: dict[tuple[str, str], str | None] = {}
    shipped_dir = importlib.resources.files("aiconfigurator_core") / "model_configs"
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        ans: dict[str, Any] = {"ok": False}
        t0 = time.perf_counter()
        try:
            model_dir = Path(req["model_dir"])
            if req.get("shipped"):
                # Shipped configs are read from a local directory: aiconfigurator only resolves the ids it
                # lists as default models offline, and Mixtral's shipped config is not among them.
                model_dir.mkdir(parents=True, exist_ok=True)
                with importlib.resources.as_file(shipped_dir / f"{req['shipped']}_config.json") as src:
                    shutil.copyfile(src, model_dir / "config.json")
            vkey = (req["system"], req["backend"])
            if vkey not in versions:
                # Resolving the latest version parses every YAML of the database (~3 s); once per pair.
                versions[vkey] = get_latest_database_version(system=vkey[0], backend=vkey[1])
            kw: dict[str, Any] = {}
            if req.get("moe"):
                kw = {"moe_tp_size": int(req["tp"]), "moe_ep_size": 1}
            r = cli_estimate(str(model_dir), req["system"], mode="static", backend_name=req["backend"],
                             backend_version=versions[vkey], isl=int(req["isl"]), osl=int(req["osl"]),
                             batch_size=int(req["batch"]), tp_size=int(req["tp"]), **kw)
            latency_ms = float(r.raw["request_latency"])
            pred = int(req["batch"]) * int(req["osl"]) / (latency_ms / 1e3)
            ans = {"ok": True, "pred_output_tok_s": pred, "aic_tokens_s": float(r.raw["tokens/s"]),
                   "ttft_ms": float(r.ttft), "tpot_ms": float(r.tpot), "request_latency_ms": latency_ms,
                   "backend_version": r.backend_version, "oom_warning": bool(r.kv_cache_warning)}
        except Exception as exc:  # one failed point must not stop the sweep; the error is recorded
            ans = {"ok": False, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        ans["elapsed_s"] = time.perf_counter() - t0
        out.write(json.dumps(ans) + "\n")
    return 0


# --------------------------------------------------------------------------- environment

def _peer_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def ensure_peer_env(venv: Path, install: bool) -> str | None:
    """Create/reuse the peer environment with aiconfigurator; return None when usable, else the reason."""
    py = _peer_python(venv)
    if not py.exists():
        if not install:
            return f"{venv} does not exist and --no-install was given"
        print(f"creating {venv} and installing {AIC_REQUIREMENT} (once; ~1 GB) ...", flush=True)
        r = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True)
        if r.returncode:
            return f"python -m venv failed: {r.stderr.strip()[-500:]}"
    check = [str(py), "-c", "import aiconfigurator.cli.api, aiconfigurator_core"]
    if subprocess.run(check, capture_output=True).returncode:
        if not install:
            return f"aiconfigurator is not importable in {venv} and --no-install was given"
        r = subprocess.run([str(py), "-m", "pip", "install", "--disable-pip-version-check", "-q", AIC_REQUIREMENT],
                           capture_output=True, text=True)
        if r.returncode:
            return f"pip install {AIC_REQUIREMENT} failed: {(r.stderr or r.stdout).strip()[-800:]}"
        r = subprocess.run(check, capture_output=True, text=True)
        if r.returncode:
            return f"aiconfigurator installed but does not import: {r.stderr.strip()[-800:]}"
    return None


# --------------------------------------------------------------------------- rows and requests

def covered_rows(runs: Any, models: str) -> Any:
    """Rows aiconfigurator can estimate, with the request columns (``KEY_COLUMNS``) added."""
    import numpy as np

    keep_models = dict(SHIPPED) if models == "shipped" else {**SHIPPED, **FROM_CATALOG}
    y = runs[PREDICT_COLUMN].to_numpy(dtype=float, na_value=np.nan)
    sel = (runs["hardware"].astype("string").isin(list(SYSTEMS)).fillna(False).to_numpy()
           & runs["framework"].astype("string").isin(list(BACKENDS)).fillna(False).to_numpy()
           & runs["model"].astype("string").isin(list(keep_models)).fillna(False).to_numpy()
           & np.isfinite(y) & (y > 0))
    rows = runs.loc[sel].copy()
    rows["system"] = rows["hardware"].astype("string").map(SYSTEMS)
    rows["backend"] = rows["framework"].astype("string").map(BACKENDS)
    rows["model"] = rows["model"].astype("string")
    rows["isl"] = rows["input_len_tok"].astype(int)
    rows["osl"] = rows["output_len_tok"].astype(int)
    rows["batch"] = rows["batch_size"].astype(int)
    # The file records device counts only; TensorRT-LLM and vLLM ran tensor-parallel across them.
    tp = rows["tp_size"] if "tp_size" in rows and rows["tp_size"].notna().all() else rows["device_count"]
    rows["tp"] = tp.astype(int)
    return rows


def _hf_config(model: str) -> dict[str, Any]:
    """A HF ``config.json`` for a catalog model (shape fields only; bf16 as aiconfigurator assumes)."""
    from perfmodel.catalog import model_catalog

    s = model_catalog()[model]
    return {"architectures": [FROM_CATALOG[model]], "model_type": "qwen2" if "Qwen2" in FROM_CATALOG[model]
            else "llama", "hidden_size": s.hidden_size, "intermediate_size": s.intermediate_size,
            "num_attention_heads": s.n_heads, "num_key_value_heads": s.n_kv_heads, "head_dim": s.head_dim,
            "num_hidden_layers": s.n_layers, "vocab_size": s.vocab_size, "max_position_embeddings": s.max_context,
            "hidden_act": "silu", "rms_norm_eps": 1e-5, "tie_word_embeddings": bool(s.tie_word_embeddings),
            "torch_dtype": "bfloat16", "_source": f"perfmodel catalog ({s.sources.get('all', '')})"}


def run_worker(venv: Path, requests: list[dict[str, Any]], on_answer: Any) -> None:
    """Send requests to one worker process in the peer environment; call ``on_answer(req, ans)`` per answer."""
    proc = subprocess.Popen([str(_peer_python(venv)), str(Path(__file__).resolve()), "--worker"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            bufsize=1)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        # One at a time so a crash loses at most one point and progress can be cached as it arrives.
        for req in requests:
            proc.stdin.write(json.dumps(req) + "\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"aiconfigurator worker exited (code {proc.poll()}) at {req}")
            on_answer(req, json.loads(line))
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)


def fetch_predictions(venv: Path, rows: Any, refresh: bool) -> tuple[Any, float]:
    """Cached or freshly computed estimates for every distinct request of ``rows``; also worker start-up seconds."""
    import pandas as pd

    OUT.mkdir(parents=True, exist_ok=True)
    cache = pd.read_csv(CACHE) if CACHE.exists() and not refresh else pd.DataFrame(columns=CACHE_COLUMNS)
    want = rows[KEY_COLUMNS].drop_duplicates()
    have = set(map(tuple, cache[KEY_COLUMNS].astype(str).to_numpy())) if len(cache) else set()
    todo = [r for r in want.to_dict("records") if tuple(str(r[k]) for k in KEY_COLUMNS) not in have]
    startup_s = float("nan")
    if todo:
        print(f"aiconfigurator: {len(todo)} new estimates ({len(want) - len(todo)} cached) ...", flush=True)
        reqs = []
        for r in todo:
            model_dir = MODEL_DIR / r["model"]
            if r["model"] in SHIPPED:
                src, shipped = "shipped " + SHIPPED[r["model"]], SHIPPED[r["model"]]
            else:
                src, shipped = "perfmodel catalog", None
                model_dir.mkdir(parents=True, exist_ok=True)
                (model_dir / "config.json").write_text(json.dumps(_hf_config(r["model"]), indent=1))
            reqs.append({**{k: (int(v) if k in ("isl", "osl", "batch", "tp") else v) for k, v in r.items()},
                         "model_dir": str(model_dir), "shipped": shipped, "config_source": src,
                         "moe": r["model"] == "mixtral-8x7b"})
        new: list[dict[str, Any]] = []
        t0 = time.perf_counter()

        def on_answer(req: dict[str, Any], ans: dict[str, Any]) -> None:
            new.append({**{k: req[k] for k in KEY_COLUMNS}, "config_source": req["config_source"], **ans})
            if len(new) % 100 == 0 or len(new) == len(reqs):
                part = pd.DataFrame(new).reindex(columns=CACHE_COLUMNS)
                pd.concat([cache, part], ignore_index=True).to_csv(CACHE, index=False)
                print(f"  {len(new)}/{len(reqs)} in {time.perf_counter() - t0:.1f} s", flush=True)

        run_worker(venv, reqs, on_answer)
        first = new[0]["elapsed_s"] if new else float("nan")
        rest = [a["elapsed_s"] for a in new[1:]]
        # The first call loads the kernel database; report it apart from the steady per-point time.
        startup_s = first - (sorted(rest)[len(rest) // 2] if rest else 0.0)
        cache = pd.read_csv(CACHE)
    for c in ("isl", "osl", "batch", "tp"):
        cache[c] = cache[c].astype(int)
    cache = cache.drop_duplicates(KEY_COLUMNS, keep="last")
    return cache, startup_s


# --------------------------------------------------------------------------- scoring

def _fmt(x: float, digits: int = 1) -> str:
    import math

    return "n/a" if not math.isfinite(x) else f"{x:,.{digits}f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--models", choices=("all", "shipped"), default="all",
                    help="all: shipped configs + catalog-built configs of supported architectures (default)")
    ap.add_argument("--predictors", default="roofline-gbm,ala", help="perfmodel predictors beside it")
    ap.add_argument("--venv", type=Path, default=PEER_VENV, help="aiconfigurator's own environment")
    ap.add_argument("--no-install", action="store_true", help="do not create the environment or pip install")
    ap.add_argument("--refresh", action="store_true", help="ignore the prediction cache")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return _worker()
    if not args.data.exists():
        print(f"needs {args.data} (../shared/data beside the repository)", file=sys.stderr)
        return 2

    reason = ensure_peer_env(args.venv, install=not args.no_install)
    if reason is not None:
        print(f"aiconfigurator unavailable, no comparison made: {reason}")
        return 0

    import numpy as np
    import pandas as pd

    from perfmodel.evaluate import score
    from perfmodel.importers import read_file
    from perfmodel.models import get_predictor

    runs = read_file(args.data).runs
    yv = pd.to_numeric(runs[PREDICT_COLUMN], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    # The same row set perfmodel.evaluate trains on: rows with a positive measured throughput.
    data = runs.loc[np.isfinite(yv) & (yv > 0)].reset_index(drop=True)
    rows = covered_rows(data, args.models)
    try:
        cache, startup_s = fetch_predictions(args.venv, rows, args.refresh)
    except (OSError, RuntimeError) as exc:
        print(f"aiconfigurator could not be run, no comparison made: {exc}")
        return 0
    merged = rows.reset_index().merge(cache, on=KEY_COLUMNS, how="left").set_index("index")
    merged = merged.loc[rows.index]
    ok = merged["ok"].astype("boolean").fillna(False).to_numpy(dtype=bool)
    failed = merged.loc[~ok]
    cov = merged.loc[ok]
    if cov.empty:
        errs = failed["error"].astype(str).value_counts().head(3).to_dict()
        print(f"aiconfigurator ran but estimated none of the {len(rows)} rows: {errs}")
        return 0
    y = cov[PREDICT_COLUMN].to_numpy(dtype=float)
    p = cov["pred_output_tok_s"].to_numpy(dtype=float)
    check = np.abs(cov["aic_tokens_s"].to_numpy(dtype=float) / p - 1)
    print(f"{len(data)} rows in the file; {len(rows)} on hardware/framework/model aiconfigurator models; "
          f"{len(cov)} estimated, {len(failed)} failed; its own tokens/s vs batch*osl/request_latency: "
          f"max rel. diff {check.max():.1e}")
    if len(failed):
        print("failures:", failed["error"].astype(str).str.slice(0, 120).value_counts().head(5).to_dict())

    def pred_frame(values: Any) -> pd.DataFrame:
        return pd.DataFrame({"pred_throughput_tok_s": np.asarray(values, dtype=float)})

    all_unc = score(y, pred_frame(p))
    ratio = y / p
    print("\n## Uncalibrated, by group (measured / aiconfigurator: median ratio; APE %)\n")
    print("| group | rows | median ratio | median APE | p90 APE |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for by in (["hardware", "framework"], ["tp"], ["batch"], ["config_source"]):
        for keys, g in cov.assign(_r=ratio).groupby(by, observed=True):
            s = score(g[PREDICT_COLUMN], pred_frame(g["pred_output_tok_s"]))
            name = ", ".join(f"{k} {v}" for k, v in zip(by, keys if isinstance(keys, tuple) else (keys,), strict=True))
            print(f"| {name} | {len(g)} | {np.median(g['_r']):.2f} | {_fmt(s['median_ape_pct'])} | "
                  f"{_fmt(s['p90_ape_pct'])} |")
    print(f"\nall {len(cov)} covered rows, uncalibrated: median APE {_fmt(all_unc['median_ape_pct'])} %, "
          f"p90 {_fmt(all_unc['p90_ape_pct'])} %, median ratio {np.median(ratio):.2f}, "
          f"OOM warnings (80 GB system) on {int(cov['oom_warning'].astype(bool).sum())} rows")

    # Random halves of the covered rows; positions in `data` for the perfmodel predictors.
    names = [n for n in args.predictors.split(",") if n]
    res: dict[str, list[dict[str, float]]] = {k: [] for k in ["aic-uncal", "aic-factor", *names]}
    timing: dict[str, list[float]] = {n: [] for n in names}
    train_s: dict[str, list[float]] = {n: [] for n in names}
    positions = cov.index.to_numpy()
    for seed in range(args.seeds):
        perm = np.random.default_rng(seed).permutation(len(cov))
        half = len(cov) // 2
        fit_i, test_i = perm[:half], perm[half:]
        factor = float(np.exp(np.median(np.log(y[fit_i] / p[fit_i]))))
        res["aic-uncal"].append(score(y[test_i], pred_frame(p[test_i])))
        res["aic-factor"].append(score(y[test_i], pred_frame(p[test_i] * factor)))
        print(f"seed {seed}: correction factor {factor:.3f}; factor-corrected median APE "
              f"{res['aic-factor'][-1]['median_ape_pct']:.1f} %", flush=True)
        held = positions[test_i]
        train = data.drop(index=held).reset_index(drop=True)
        test = data.loc[held].reset_index(drop=True)
        for name in names:
            model = get_predictor(name, **({"random_state": seed} if name == "roofline-gbm" else {"seed": seed}))
            t0 = time.perf_counter()
            model.fit(train, y=PREDICT_COLUMN)
            train_s[name].append(time.perf_counter() - t0)
            pred = model.predict(test)
            res[name].append(score(test[PREDICT_COLUMN], pred))
            one = test.iloc[:1]
            model.predict(one)  # first call warms lazy state
            ts = []
            for _ in range(5):
                t0 = time.perf_counter()
                model.predict(one)
                ts.append(time.perf_counter() - t0)
            timing[name].append(float(np.median(ts)))
            print(f"  {name}: trained on {len(train)} rows in {train_s[name][-1]:.1f} s; median APE "
                  f"{res[name][-1]['median_ape_pct']:.1f} %", flush=True)

    aic_point_ms = float(np.median(cov["elapsed_s"].to_numpy(dtype=float)) * 1e3)
    n_test = int(np.mean([r["n_test"] for r in res["aic-uncal"]]))
    print(f"\n## aiconfigurator vs perfmodel on the same held-out halves ({args.seeds} seeds, {n_test} rows each; "
          f"mean over seeds, ± seed sd)\n")
    print("| method | rows covered | median APE % | p90 APE % | time per point |")
    print("| --- | ---: | ---: | ---: | ---: |")
    label = {"aic-uncal": "aiconfigurator 0.12.0, uncalibrated",
             "aic-factor": "aiconfigurator, one global factor fitted on the other half",
             "roofline-gbm": "perfmodel roofline-gbm", "ala": "published hybrid (ala, reproduced)"}
    for key, recs in res.items():
        med = np.array([r["median_ape_pct"] for r in recs])
        p90 = np.array([r["p90_ape_pct"] for r in recs])
        if key.startswith("aic"):
            t = f"{aic_point_ms:.0f} ms" + (f" (+{startup_s:.0f} s start-up)" if np.isfinite(startup_s) else "")
            covered = f"{len(cov)} / {len(data)}"
        else:
            t = f"{np.mean(timing[key]) * 1e3:.1f} ms (train {np.mean(train_s[key]):.1f} s)"
            covered = f"{len(data)} / {len(data)}"
        print(f"| {label.get(key, key)} | {covered} | {med.mean():.1f} ± {med.std():.1f} | "
              f"{p90.mean():.1f} ± {p90.std():.1f} | {t} |")
    print("\nPublished (Ray et al. 2025, their random split of the whole file, not these rows), median / p90 APE %: "
          + "; ".join(f"{k} {m} / {q}" for k, (m, q) in PUBLISHED.items()))
    print(f"\naiconfigurator time per point: median wall time of one static estimate in its worker process "
          f"(database already loaded); perfmodel: one-row predict, in-process. Cache: {CACHE.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
