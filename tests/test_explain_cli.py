"""CLI: perfmodel explain and perfmodel compare-features."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from click.testing import CliRunner
from test_explain import make_runs

from perfmodel.cli import main

SAMPLE = Path(__file__).resolve().parents[1] / "sample_runs" / "perfmodel-tiny-llama_cpu-x86-2vcpu.csv"


def _run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, list(args))
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.exit_code, res.stdout, res.stderr


def test_explain_dataset_writes_the_importance_table(tmp_path: Path) -> None:
    out = tmp_path / "report.csv"
    code, stdout, _ = _run("explain", str(SAMPLE), "--engine", "xgboost", "-o", str(out))
    assert code == 0, stdout
    assert "all 96 rows" in stdout and "additivity check passed" in stdout
    assert "share by kind:" in stdout
    rep = pd.read_csv(out)
    # label (the name in words) is added last: the columns before it keep their places for scripts
    assert list(rep.columns) == ["feature", "kind", "mean_abs_shap", "share", "rank", "label"]
    assert rep.set_index("feature").loc["kv_cache_bytes", "label"] == "KV-cache size (B)"
    assert "| rank | feature | label | kind |" in stdout and "| KV-cache size (B) |" in stdout
    # the sample's framework-internal metrics are real (fw_decode_s, fw_prefill_s); its thread count is a
    # setting chosen before the run, its own kind
    assert {"fw_decode_s", "fw_prefill_s"} <= set(rep["feature"])
    kinds = rep.set_index("feature")["kind"]
    assert set(kinds[[f for f in kinds.index if f.startswith("fw_") and f != "fw_num_threads"]]) == {"framework"}
    assert kinds.get("fw_num_threads", "setting") == "setting"
    assert rep["share"].sum() == __import__("pytest").approx(1.0)
    # the printed values read as the file's (3 significant digits, the share in percent): they had read 0.2/0.0
    top = rep.sort_values("rank").iloc[0]
    assert f"| {top['mean_abs_shap']:.3g} | {top['share']:.1%} |" in stdout


def test_explain_physical_only_never_lists_framework_columns(tmp_path: Path) -> None:
    out = tmp_path / "phys.csv"
    code, stdout, _ = _run("explain", str(SAMPLE), "--features", "physical", "--engine", "xgboost",
                           "--sample-size", "40", "--interactions", "3", "-o", str(out))
    assert code == 0, stdout
    assert "random sample of 40 of 96 rows" in stdout
    assert "SHAP interaction values on a random sample" in stdout
    rep = pd.read_csv(out)
    assert set(rep["kind"]) == {"physical"} and len(rep) == 19


def test_explain_saved_model_needs_data(tmp_path: Path) -> None:
    code, stdout, _ = _run("train", str(SAMPLE), "--predictor", "xgboost", "--features", "raw+physical",
                           "-o", str(tmp_path / "m"))
    assert code == 0, stdout
    code, _, err = _run("explain", str(tmp_path / "m"))
    assert code == 2 and "--data" in err
    code, stdout, _ = _run("explain", str(tmp_path / "m"), "--data", str(SAMPLE), "--engine", "xgboost")
    assert code == 0 and "throughput, tok/s" in stdout
    # a saved model explains its own features: --features was silently ignored
    code, _, err = _run("explain", str(tmp_path / "m"), "--data", str(SAMPLE), "--features", "physical")
    assert code == 2 and "--features goes with a DATASET" in err


def test_explain_user_errors_exit_2(tmp_path: Path) -> None:
    code, _, err = _run("explain", str(SAMPLE), "--features", "physics")
    assert code == 2 and "unknown feature set 'physics'" in err
    code, _, err = _run("explain", "no-such-dataset")
    assert code == 2 and "error:" in err


def _canonical_csv(path: Path) -> Path:
    from perfmodel.schema import validate_runs

    runs = make_runs(n=300, seed=7).assign(load_kind="static_batch", throughput_basis="output",
                                           source_format="test", repeat_idx=0)
    validate_runs(runs).to_csv(path, index=False)
    return path


def test_compare_features_random_and_transfer(tmp_path: Path) -> None:
    data = _canonical_csv(tmp_path / "runs.csv")
    out = tmp_path / "cmp.csv"
    code, stdout, _ = _run("compare-features", str(data), "--sets", "physical,identity", "--learners", "gbdt",
                           "-o", str(out))
    assert code == 0, stdout
    df = pd.read_csv(out)
    assert df["set"].tolist() == ["physical", "identity"] and (df["protocol"] == "random").all()
    code, stdout, _ = _run("compare-features", str(data), "--transfer", "hardware", "--train-on", "h100-sxm",
                           "--test-on", "mi300x", "--sets", "physical", "--learners", "poly")
    assert code == 0, stdout
    assert "h100-sxm->mi300x" in stdout and "r2_log_drop" in stdout


def test_compare_features_on_one_framework_says_why(tmp_path: Path) -> None:
    code, _, err = _run("compare-features", str(SAMPLE), "--transfer", "framework", "--sets", "physical")
    assert code == 2 and "no fold" in err
    code, _, err = _run("compare-features", str(SAMPLE), "--train-on", "vllm")
    assert code == 2 and "--transfer" in err


def test_explain_and_compare_features_answer_in_json(tmp_path: Path) -> None:
    # Guards: both commands ignored --json (local and global) and printed Markdown a script cannot read.
    import json

    out = tmp_path / "imp.csv"
    code, stdout, _ = _run("explain", str(SAMPLE), "--engine", "xgboost", "--interactions", "2", "--json",
                           "-o", str(out))
    assert code == 0, stdout
    doc = json.loads(stdout)  # nothing but the document on stdout
    assert doc["output"] == str(out) and "additivity check passed" in doc["message"]
    assert [r["feature"] for r in doc["importance"]] == pd.read_csv(out)["feature"].tolist()
    # the names in words ride along as added keys; the existing keys are unchanged
    assert {"feature", "label", "kind", "mean_abs_shap", "share", "rank"} == set(doc["importance"][0])
    assert {r["feature"]: r["label"] for r in doc["importance"]}["batch_size"] == "batch size (sequences)"
    assert {"feature_a", "label_a", "feature_b", "label_b", "strength"} <= set(doc["interactions"][0])
    assert sum(doc["share_by_kind"].values()) == __import__("pytest").approx(1.0)
    assert len(doc["interactions"]) == 2
    code, stdout, _ = _run("--json", "explain", str(SAMPLE), "--engine", "xgboost")
    assert code == 0 and "interactions" not in json.loads(stdout)
    data = _canonical_csv(tmp_path / "runs.csv")
    code, stdout, _ = _run("--json", "compare-features", str(data), "--sets", "physical,identity",
                           "--learners", "gbdt")
    assert code == 0, stdout
    doc = json.loads(stdout)
    assert [r["set"] for r in doc["table"]] == ["physical", "identity"] and isinstance(doc["notes"], list)


def test_explain_glossary_says_what_each_feature_is(tmp_path: Path) -> None:
    # Guards: outside the app the CLI printed raw names (l2_reuse, id_platform_rocm) with no way to look them up.
    import json

    from perfmodel.features import feature_names

    code, stdout, _ = _run("explain", str(SAMPLE), "--glossary")
    assert code == 0, stdout
    assert "| l2_reuse | L2 reuse |" in stdout and "| fw_<name> |" in stdout
    assert "fitted" not in stdout  # nothing is fitted or explained
    code, stdout, _ = _run("--json", "explain", str(SAMPLE), "--glossary", "--features", "physical")
    assert code == 0, stdout
    rows = json.loads(stdout)["glossary"]
    assert [r["feature"] for r in rows] == feature_names(pd.read_csv(SAMPLE), "physical")
    assert {"feature", "name", "formula", "features"} == set(rows[0])
    code, stdout, _ = _run("train", str(SAMPLE), "--predictor", "xgboost", "--features", "raw+physical",
                           "-o", str(tmp_path / "m"))
    assert code == 0, stdout
    code, stdout, _ = _run("explain", str(tmp_path / "m"), "--glossary")  # a saved model: no --data needed
    assert code == 0 and "| kv_cache_bytes | KV-cache size (B) |" in stdout and "fw_<name>" not in stdout
