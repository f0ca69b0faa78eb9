"""``perfmodel compare`` on real data: two sample_runs measurements, two frameworks of LLM-Inference-Bench.

The sample files are perfmodel's own measurements of the same tiny Llama on the
same 2-vCPU host: the local engine (static batches, 3 repeats) and
``transformers serve`` over HTTP (concurrency 1, 2, 4, 2 repeats); they share
input 64 / output 32 at batch 1, 2 and 4, and differ by far more than their
run-to-run noise. LLM-Inference-Bench has one run per point, so nothing in it
can be judged against noise, and the command says so.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from perfmodel.api import import_files
from perfmodel.cli import main
from perfmodel.store import Store

REPO = Path(__file__).resolve().parents[1]
LOCAL = REPO / "sample_runs" / "perfmodel-tiny-llama_cpu-x86-2vcpu.csv"
SERVED = REPO / "sample_runs" / "perfmodel-served-tiny-llama_cpu-x86-2vcpu_transformers-serve.csv"


def _run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, list(args))
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.exit_code, res.stdout, res.stderr


def test_local_engine_vs_served_beyond_noise(tmp_path: Path) -> None:
    out = tmp_path / "diff.csv"
    code, stdout, _ = _run("compare", str(LOCAL), str(SERVED), "--ignore", "model", "-o", str(out), "--json")
    assert code == 0
    d = json.loads(stdout)
    # batch 2: +117 % at 6.6 standard errors, yet within noise: the served side's two runs (df ~ 1) are 54 tok/s apart
    assert (d["n_matched"], d["n_beyond_noise"], d["n_within_noise"], d["n_no_repeats"]) == (3, 2, 1, 0)
    assert (d["n_only_a"], d["n_only_b"]) == (29, 0)  # the local sweep has more batches and lengths
    pts = {p["batch_size"]: p for p in d["points"]}
    assert sorted(pts) == [1.0, 2.0, 4.0]
    assert (pts[1.0]["n_a"], pts[1.0]["n_b"]) == (3, 2)
    assert pts[1.0]["mean_a"] == pytest.approx(116.397, abs=0.01)
    assert pts[1.0]["mean_b"] == pytest.approx(176.711, abs=0.01)
    assert pts[1.0]["noise_se"] == pytest.approx(8.3215, abs=1e-3)
    assert pts[4.0]["diff_pct"] == pytest.approx(137.6, abs=0.1)
    assert [pts[b]["verdict"] for b in (1.0, 2.0, 4.0)] == ["beyond noise", "within noise", "beyond noise"]
    assert pts[2.0]["p_value"] == pytest.approx(0.0918, abs=1e-3) and pts[1.0]["p_value"] < 0.01
    assert "+117.0%" in d["message"]
    csv = pd.read_csv(out)
    assert len(csv) == 3 and list(csv["verdict"]) == ["beyond noise", "within noise", "beyond noise"]
    assert {"mean_a", "mean_b", "std_a", "std_b", "noise_se", "n_a", "n_b"} <= set(csv.columns)


def test_stored_datasets_by_name_in_text() -> None:
    import_files([LOCAL], name="local engine")
    import_files([SERVED], name="served")
    code, stdout, _ = _run("compare", "local engine", "served", "--ignore", "model")
    assert code == 0
    assert "A = local engine\nB = served\n" in stdout
    assert "2 of 3 with repeats on both sides differ beyond run-to-run noise (Welch's t-test, p < 0.05)" in stdout
    assert "1 within noise differ by 10% or more, which 2 repeats a side spread too widely to settle" in stdout
    assert stdout.count("beyond noise") == 2  # the verdict of each row (the summary says "beyond run-to-run noise")


def test_two_frameworks_of_one_file(all_results_csv: Path) -> None:
    a = str(all_results_csv)
    code, stdout, _ = _run("--json", "compare", a, a, "--where", "model=Llama-3-8B", "--where", "hardware=H100",
                           "--where-a", "framework=vllm", "--where-b", "framework=tensorrt-llm")
    assert code == 0
    d = json.loads(stdout)
    assert d["label_a"].endswith("framework=vllm]") and d["label_b"].endswith("framework=tensorrt-llm]")
    assert (d["n_matched"], d["n_no_repeats"], d["n_only_a"], d["n_only_b"]) == (51, 51, 9, 0)
    assert "+25.5%" in d["message"] and "none has repeats on both sides" in d["message"]
    first = next(p for p in d["points"] if p["batch_size"] == 1 and p["input_len_tok"] == 128
                 and p["device_count"] == 1)
    assert first["hardware"] == "h100-sxm" and first["model"] == "llama-3-8b"  # names resolved by the catalog
    assert first["mean_a"] == pytest.approx(128.781, abs=0.01) and first["mean_b"] == pytest.approx(142.737, abs=0.01)
    assert first["significant"] is None and first["verdict"] == "no repeats"


def test_user_errors_name_the_option_and_the_valid_values(all_results_csv: Path) -> None:
    a = str(all_results_csv)
    code, _, err = _run("compare", a, a, "--where-a", "framework=vlm")
    assert code == 2
    assert "column 'framework': no row has 'vlm'; valid: deepspeed, deepspeed-mii, llama.cpp" in err
    code, _, err = _run("compare", a, a, "--where-b", "framework")
    assert code == 2 and "not COLUMN=VALUE" in err
    code, _, err = _run("compare", str(LOCAL), "no-such-dataset")
    assert code == 2 and "no-such-dataset" in err
    assert Store().datasets() == []


THREADS = REPO / "sample_runs" / "perfmodel-tiny-llama_cpu-x86-2vcpu_threads-1-2_local-sweep.csv"


def test_a_dataset_against_itself_pools_only_true_repeats(all_results_csv: Path) -> None:
    """Frameworks of one file are configurations (as in ``perfmodel fit``), not repeats of one point."""
    a = str(all_results_csv)
    code, stdout, _ = _run("--json", "compare", a, a, "--where", "model=llama-3-8b", "--where", "hardware=h100-sxm")
    assert code == 0
    d = json.loads(stdout)
    assert d["n_matched"] == d["n_no_repeats"] > 100 and d["n_within_noise"] == 0
    pts = [p for p in d["points"] if p["batch_size"] == 1 and p["input_len_tok"] == 128 and p["output_len_tok"] == 128
           and p["device_count"] == 1]
    # llama.cpp's four rows at batch 1 are four n_batch settings (one sequence each), not repeats.
    got = {(p["framework"], p.get("fw_n_batch")): (p["n_a"], round(p["mean_a"], 2)) for p in pts}
    assert {k: v for k, v in got.items() if k[0] != "llama.cpp"} == {
        ("vllm", None): (1, 128.78), ("tensorrt-llm", None): (1, 142.74)}
    llama = sorted((k[1], v) for k, v in got.items() if k[0] == "llama.cpp")
    assert [nb for nb, _ in llama] == [1, 16, 32, 64] and all(v[0] == 1 for _, v in llama)
    assert llama[0][1][1] == 50.78 and llama[-1][1][1] > 1.5 * 50.78  # n_batch 1 feeds the prompt token by token


def test_thread_counts_are_not_repeats_of_each_other() -> None:
    code, stdout, _ = _run("--json", "compare", str(THREADS), str(THREADS))
    assert code == 0
    d = json.loads(stdout)
    pts = {p["fw_num_threads"]: p for p in d["points"] if p["batch_size"] == 1}
    assert sorted(pts) == [1.0, 2.0] and all(p["n_a"] == 3 for p in pts.values())
    assert pts[1.0]["mean_a"] == pytest.approx(86.13, abs=0.01) and pts[2.0]["mean_a"] == pytest.approx(24.62, abs=0.01)


def test_two_thread_counts_compared_against_each_other() -> None:
    code, stdout, _ = _run("--json", "compare", str(THREADS), str(THREADS), "--where-a", "fw_num_threads=1.0",
                           "--where-b", "fw_num_threads=2.0")
    assert code == 0
    d = json.loads(stdout)
    assert "not matched on fw_num_threads (1 vs 2)" in d["message"]
    assert d["n_matched"] == len({p["batch_size"] for p in d["points"]}) > 1
    assert pytest.approx(86.13, abs=0.01) == next(p["mean_a"] for p in d["points"] if p["batch_size"] == 1)


def _inference_perf(formats_dir: Path) -> str:
    files = sorted((formats_dir / "inference-perf").glob("*stage_*_lifecycle_metrics.json"))
    assert len(files) == 7
    from perfmodel.importers import ImportMeta

    info, _ = import_files(files, meta=ImportMeta(hardware="h100-sxm", model="llama-3.1-8b"), name="inference-perf")
    return info.name


def test_request_rates_are_points_not_repeats(formats_dir: Path) -> None:
    # inference-perf's seven rates (batch size empty) were pooled: 1-62 req/s against 123-183 req/s gave one
    # "matched point" with batch_size NaN, 3 runs a side, +227%, "within noise"; the file against itself n=7.
    ds = _inference_perf(formats_dir)
    code, stdout, _ = _run("--json", "compare", ds, ds, "--where-a", "request_rate_rps=1.0", "--where-a",
                           "request_rate_rps=31.4", "--where-a", "request_rate_rps=61.79", "--where-b",
                           "request_rate_rps=122.59", "--where-b", "request_rate_rps=152.98", "--where-b",
                           "request_rate_rps=183.38")
    assert code == 0
    d = json.loads(stdout)
    assert (d["n_matched"], d["n_only_a"], d["n_only_b"]) == (0, 3, 3)
    assert "request_rate_rps" in d["message"]
    code, stdout, _ = _run("compare", ds, ds)
    assert code == 0 and "7 matched point(s)" in stdout and "none has repeats on both sides" in stdout
    assert "request_rate_rps" in stdout and "183.4" in stdout and "batch_size" not in stdout
