"""The perfmodel CLI: commands, JSON output, exit codes (0 ok, 2 user error, 1 bug)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from pandas.testing import assert_frame_equal
from test_store import write_canonical_csv

from perfmodel import cli
from perfmodel.cli import main
from perfmodel.store import Store


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def invoke(runner: CliRunner, *args: str) -> tuple[int, str, str]:
    res = runner.invoke(main, list(args))
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.exit_code, res.stdout, res.stderr


def test_import_show_export_delete(runner: CliRunner, tmp_path: Path) -> None:
    home = tmp_path / "home"
    src = write_canonical_csv(tmp_path / "mine.csv", 25, seed=1)
    code, out, err = invoke(runner, "--home", str(home), "import", str(src), "--dataset", "My set")
    assert code == 0, err
    info = Store(home).dataset("My set")
    assert info.id in out and "25 rows" in out and "0 error, 0 warning, 0 info" in out

    code, out, _ = invoke(runner, "--home", str(home), "datasets")
    assert code == 0 and "My set" in out and info.id in out
    code, out, _ = invoke(runner, "--home", str(home), "--json", "datasets")
    assert json.loads(out)[0]["n_runs"] == 25

    code, out, _ = invoke(runner, "--home", str(home), "show", info.id[:6], "--head", "3")
    assert code == 0 and "22 more row(s)" in out and "hardware" in out
    code, out, _ = invoke(runner, "--home", str(home), "show", "My set", "--json", "--head", "2")
    doc = json.loads(out)
    assert len(doc["runs"]) == 2 and doc["dataset"]["provenance"]["files"][0]["file"] == "mine.csv"
    code, out, _ = invoke(runner, "--home", str(home), "show", "My set", "--issues")
    assert code == 0 and "(no issues)" in out

    for suffix in (".csv", ".parquet"):
        target = tmp_path / f"out{suffix}"
        code, out, _ = invoke(runner, "--home", str(home), "export", "My set", "-o", str(target))
        assert code == 0 and target.exists()
    back = pd.read_parquet(tmp_path / "out.parquet")
    assert_frame_equal(back, Store(home).runs(info.id), check_exact=True)

    code, out, _ = invoke(runner, "--home", str(home), "delete", "My set")
    assert code == 0 and "deleted" in out and Store(home).datasets() == []


def test_import_json_and_issues(runner: CliRunner, tmp_path: Path) -> None:
    src = write_canonical_csv(tmp_path / "x.csv", 10, seed=2)
    df = pd.read_csv(src, dtype=str)
    df.loc[3, "e2e_latency_s"] = "-5"
    df.to_csv(src, index=False)
    code, out, err = invoke(runner, "import", str(src), "--json", "--framework", "sglang")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["dataset"]["n_runs"] == 9
    assert doc["files"][0]["format"] == "canonical" and doc["issue_counts"]["error"] >= 1
    first = doc["issues"][0]
    assert first["severity"] == "error" and first["column"] == "e2e_latency_s" and first["row"] == 4
    code, out, _ = invoke(runner, "show", doc["dataset"]["id"], "--issues")
    assert "e2e_latency_s" in out


def test_formats_table(runner: CliRunner) -> None:
    code, out, _ = invoke(runner, "formats")
    assert code == 0
    header = out.splitlines()[0]
    assert "hardware in file" in header and "model in file" in header
    assert any(line.startswith("canonical ") and "yes" in line for line in out.splitlines())
    assert any(line.startswith("llm-inference-bench ") for line in out.splitlines())
    doc = json.loads(invoke(runner, "--json", "formats")[1])
    assert {"id", "label", "has_hardware", "has_model"} <= set(doc[0])


@pytest.mark.parametrize("args, expected", [
    (["import", "{src}", "--format", "nope"], ["canonical", "llm-inference-bench"]),
    (["import", "{src}", "--latency-unit", "us"], ["'s'", "'ms'"]),
    (["import", "{src}", "--map", "batch_size"], ["CANONICAL=SOURCE"]),
    (["import", "{src}", "--device-count", "0"], ["--device-count"]),
    (["import", "{tmp}/missing.csv"], ["does not exist"]),
    (["show", "nothing"], ["error: no dataset 'nothing'", "known datasets"]),
    (["export", "nothing", "-o", "{tmp}/x.csv"], ["error: no dataset"]),
    (["delete", "nothing"], ["error: no dataset"]),
])
def test_user_errors_exit_2(runner: CliRunner, tmp_path: Path, args: list[str], expected: list[str]) -> None:
    src = write_canonical_csv(tmp_path / "x.csv", 3, seed=3)
    argv = [a.format(src=src, tmp=tmp_path) for a in args]
    code, out, err = invoke(runner, *argv)
    assert code == 2
    for e in expected:
        assert e in err, err


def test_import_errors_are_one_paragraph(runner: CliRunner, tmp_path: Path) -> None:
    src = write_canonical_csv(tmp_path / "x.csv", 3, seed=4)
    invoke(runner, "import", str(src))
    code, _, err = invoke(runner, "export", "x", "-o", str(tmp_path / "x.xlsx"))
    assert code == 2 and err.startswith("error: ") and ".parquet" in err
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x00\x01\x02garbage" * 50)
    code, _, err = invoke(runner, "import", str(junk))
    assert code == 2 and err.startswith("error: junk.bin") and "Traceback" not in err
    code, _, err = invoke(runner, "import", str(src), "--hardware", "Nonexistent GPU 9000")
    assert code == 2 and "unknown hardware" in err


def test_a_bug_exits_1_with_traceback(runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import perfmodel.api

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(perfmodel.api, "import_files", broken)
    src = write_canonical_csv(tmp_path / "x.csv", 3, seed=5)
    res = runner.invoke(main, ["import", str(src)])
    assert res.exit_code == 1 and isinstance(res.exception, RuntimeError)


def test_app_command(runner: CliRunner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr(cli.subprocess, "call", lambda cmd: calls.append(cmd) or 0)
    app = tmp_path / "app.py"
    app.write_text("")
    monkeypatch.setattr(cli, "find_app", lambda: app)
    code, _, _ = invoke(runner, "app", "--server.port", "8600")
    assert code == 0 and calls[0][1:5] == ["-m", "streamlit", "run", str(app)]
    # headless (no first-run prompt) by default; the user's options come last, so they win
    assert calls[0][5:9] == ["--server.headless", "true", "--browser.gatherUsageStats", "false"]
    assert calls[0][-2:] == ["--server.port", "8600"]


def test_find_app_missing_is_clear(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(cli, "__file__", str(tmp_path / "pkg" / "perfmodel" / "cli.py"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(cli.PerfmodelError, match="cannot find the Streamlit app"):
        cli.find_app()


@pytest.mark.slow
def test_python_dash_m_and_console_script(tmp_path: Path) -> None:
    home = tmp_path / "h"
    res = subprocess.run([sys.executable, "-m", "perfmodel", "--home", str(home), "show", "zz"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and res.stderr.startswith("error: no dataset 'zz'")
    assert res.stderr.count("\n") == 1
    script = Path(sys.executable).parent / "perfmodel"
    if script.exists():
        res = subprocess.run([str(script), "--home", str(home), "--json", "datasets"], capture_output=True,
                             text=True, timeout=60)
        assert res.returncode == 0 and json.loads(res.stdout) == []


def test_missing_lengths_are_asked_for_then_supplied(runner: CliRunner, formats_dir: Path) -> None:
    """A file without token counts is refused naming the options, and imports once they are given."""
    src = formats_dir / "vllm-benchmark-serving" / \
        "vllm-ascend-nightly-nv-action__serving_llama8B_tp1_sharegpt_qps_16.json"
    code, _, err = invoke(runner, "import", str(src), "--hardware", "Ascend 910B")
    assert code == 2 and "--input-len" in err and "--output-len" in err and src.name in err
    code, _, err = invoke(runner, "import", str(src), "--hardware", "Ascend 910B", "--load-kind", "burst")
    assert code == 2 and "static_batch" in err
    code, out, err = invoke(runner, "--json", "import", str(src), "--hardware", "Ascend 910B",
                            "--input-len", "200", "--output-len", "180", "--batch-size", "4",
                            "--load-kind", "concurrency", "--repeat", "2")
    assert code == 0, err
    runs = Store().runs(json.loads(out)["dataset"]["id"])
    row = runs.iloc[0]
    assert (row["input_len_tok"], row["output_len_tok"], row["batch_size"]) == (200.0, 180.0, 4.0)
    assert row["load_kind"] == "concurrency" and row["repeat_idx"] == 2


def test_catalog_commands(runner: CliRunner, tmp_path: Path) -> None:
    code, out, _ = invoke(runner, "catalog", "hardware")
    assert code == 0 and "h100-sxm" in out and "3,350" in out
    assert "SynapseAI" in next(line for line in out.splitlines() if line.startswith("gaudi2"))
    code, out, _ = invoke(runner, "--json", "catalog", "show", "Nvidia A100 GPU")
    entry = json.loads(out)[0]
    assert code == 0 and entry["catalog"] == "hardware" and entry["key"] == "a100-40gb"
    assert entry["sources"]["all"].startswith("https://")
    assert entry["platform"] == "CUDA" and entry["sources"]["platform"].startswith("https://")
    code, _, err = invoke(runner, "catalog", "show", "Nvidia H300 GPU")
    assert code == 2 and "closest known" in err and "h100" in err
    bad = tmp_path / "mine.yaml"
    bad.write_text("hardware:\n  x1:\n    name: X\n    vendor: Y\n    kind: gpu\n    memory_bw_gbs: -5\n")
    code, _, err = invoke(runner, "catalog", "check", str(bad))
    assert code == 2 and "mine.yaml" in err and "'x1'" in err and "memory_bw_gbs" in err
    good = tmp_path / "ok.yaml"
    good.write_text("models:\n  m1:\n    name: M1\n    family: llama\n    params_b: 1.0\n")
    code, out, _ = invoke(runner, "catalog", "check", str(good))
    assert code == 0 and "1 model(s)" in out
