"""The perfmodel CLI: commands, JSON output, exit codes (0 ok, 2 user error, 1 bug)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pandas as pd
import pytest
from click.testing import CliRunner
from pandas.testing import assert_frame_equal
from test_store import make_result, write_canonical_csv

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
    assert (doc["shown"], doc["total"], doc["truncated"]) == (2, 25, True)  # the cut had not been said
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


def test_importing_the_same_files_again_says_they_are_stored(runner: CliRunner, tmp_path: Path) -> None:
    # The Data page said "Already stored"; the CLI printed the dataset as if imported, and a new --dataset name
    # renamed the stored one without a word.
    home = tmp_path / "home"
    src = write_canonical_csv(tmp_path / "mine.csv", 12, seed=3)
    code, _, err = invoke(runner, "--home", str(home), "import", str(src), "--dataset", "first")
    assert code == 0 and "already stored" not in err
    code, out, err = invoke(runner, "--home", str(home), "import", str(src), "--dataset", "second")
    assert code == 0, err
    assert "note: already stored: these files, with these settings, are this dataset; nothing was added " \
        "(renamed from 'first' as given)" in err
    assert [i.name for i in Store(home).datasets()] == ["second"] and Store(home).datasets()[0].n_runs == 12
    code, out, _ = invoke(runner, "--home", str(home), "--json", "import", str(src))
    assert json.loads(out)["already_stored"] is True


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
    # AIPerf's CSV export names no model, its JSON does (the table had said "yes" for both)
    assert any(line.startswith("aiperf ") and line.rstrip().endswith("yes (JSON only)") for line in out.splitlines())


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
    assert (row["input_len_tok"], row["output_len_tok"], row["repeat_idx"]) == (200.0, 180.0, 2)
    # The file records a request-rate run (qps 16): its own load wins over --load-kind, and a
    # request-rate point takes no --batch-size; both options are reported, not silently applied.
    assert row["load_kind"] == "request_rate" and pd.isna(row["batch_size"])
    warned = " ".join(i["message"] for i in json.loads(out)["issues"])
    assert "--load-kind" in warned and "--batch-size 4 not applied" in warned


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




# A made-up LLM-Inference-Bench sweep: batch 1-64 at 128 tokens, then batch 1 at 256.
LIB_SWEEP = Path(__file__).parent / "data" / "csv_family" / "lib_sweep.csv"


def test_supplied_batch_and_length_do_not_collapse_a_recorded_sweep(runner: CliRunner, tmp_path: Path) -> None:
    """`import FILE --batch-size 7 --input-len 999` on a file that records both: the stored sweep is the
    file's, and one warning per option says how many rows disagree and the first. Regression: all five
    rows were stored as batch 7, input 999, with one warning naming only row 1's value."""
    src = tmp_path / "five.csv"
    src.write_text(LIB_SWEEP.read_text())
    code, out, err = invoke(runner, "--json", "import", str(src), "--batch-size", "7", "--input-len", "999")
    assert code == 0, err
    doc = json.loads(out)
    runs = Store().runs(doc["dataset"]["id"])
    assert runs["batch_size"].tolist() == [1, 16, 32, 64, 1]
    assert runs["input_len_tok"].tolist() == [128, 128, 128, 128, 256]
    warned = {i["column"]: i for i in doc["issues"] if i["severity"] == "warning"}
    assert warned["batch_size"]["row"] == 1 and "--batch-size 7 not applied to 5 of 5" in warned["batch_size"]["message"]
    assert "--input-len 999 not applied to 5 of 5" in warned["input_len_tok"]["message"]


def test_latency_unit_for_a_format_that_does_not_read_it_is_an_error(runner: CliRunner, tmp_path: Path) -> None:
    """--latency-unit is read only by --format csv; elsewhere it was silently ignored."""
    src = tmp_path / "five.csv"
    src.write_text(LIB_SWEEP.read_text())
    code, _, err = invoke(runner, "import", str(src), "--latency-unit", "ms")
    assert code == 2 and err.startswith("error: five.csv: --latency-unit applies only to format 'csv'")
    assert "'llm-inference-bench'" in err and not Store().datasets()


def _stdout_closed_echo(monkeypatch: pytest.MonkeyPatch) -> None:
    """click.echo as it fails when the reader of a pipe has gone (`perfmodel ... | head`)."""
    import errno

    real = click.echo

    def echo(message: object = None, file: object = None, nl: bool = True, err: bool = False, **kw: object) -> None:
        if err:
            return real(message, file=file, nl=nl, err=err, **kw)  # type: ignore[arg-type]
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    monkeypatch.setattr(click, "echo", echo)


def test_closed_stdout_exits_quietly(runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`perfmodel fit DS | head -3` exited 1 (the exit code of a bug) on BrokenPipeError; now 141 (128 +
    SIGPIPE, as a shell reports `yes | head`) with nothing on stderr."""
    src = write_canonical_csv(tmp_path / "x.csv", 12, seed=2)
    assert invoke(runner, "import", str(src), "--dataset", "d")[0] == 0
    _stdout_closed_echo(monkeypatch)
    for args in (["formats"], ["show", "d"], ["fit", "d", "--n-boot", "0"]):
        res = runner.invoke(main, args)
        assert res.exit_code == 141 == cli.SIGPIPE_EXIT, (args, res.exception)
        assert res.stderr == "" and isinstance(res.exception, SystemExit)


@pytest.mark.slow
def test_closed_pipe_in_a_real_process(tmp_path: Path) -> None:
    """The same through a real pipe whose reader is gone: no traceback, no 'Exception ignored' at exit."""
    r, w = os.pipe()
    os.close(r)
    try:
        res = subprocess.run([sys.executable, "-m", "perfmodel", "--home", str(tmp_path / "h"), "formats"],
                             stdout=w, stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(w)
    assert res.returncode == 141 and res.stderr == ""


def test_no_dataset_names_the_closest_few(runner: CliRunner) -> None:
    """With ~40 datasets the error listed every name; now the closest few (all of them when few)."""
    store = Store()
    names = ["alpha", "beta", "gamma", "delta", "epsilon", "sweep-h100-a", "sweep-h100-b", "sweep-a100"]
    for seed, name in enumerate(names):
        store.add_dataset([make_result(2, seed=seed)], name=name)
    code, _, err = invoke(runner, "show", "sweep-h100")
    assert code == 2 and "closest of the 8 known datasets: " in err
    assert "'sweep-h100-a'" in err and "'sweep-h100-b'" in err and "'alpha'" not in err
    code, _, err = invoke(runner, "show", "zzzzzz")
    assert code == 2 and "no close match among the 8 known datasets" in err and "'alpha'" not in err


@pytest.mark.parametrize("command", ["train", "evaluate"])
def test_training_data_path_that_does_not_exist(runner: CliRunner, tmp_path: Path, command: str) -> None:
    """`perfmodel train /nonexistent.csv` said "no dataset '/nonexistent.csv'"."""
    missing = tmp_path / "nonexistent.csv"
    args = [command, str(missing)] + (["-o", str(tmp_path / "m")] if command == "train" else [])
    code, _, err = invoke(runner, *args)
    assert code == 2 and err.startswith(f"error: {missing}: does not exist") and "no dataset" not in err


def test_show_head_zero_and_fit_without_bootstrap(runner: CliRunner, tmp_path: Path) -> None:
    """`show DS --head 0` printed "(no runs)" for a dataset with runs; `fit --n-boot 0` said "intervals:
    bootstrap" though none were computed."""
    src = write_canonical_csv(tmp_path / "x.csv", 12, seed=2)
    assert invoke(runner, "import", str(src), "--dataset", "d")[0] == 0
    code, out, _ = invoke(runner, "show", "d", "--head", "0")
    assert code == 0 and "(no runs)" not in out and "12 more row(s)" in out
    code, out, _ = invoke(runner, "fit", "d", "--n-boot", "0")
    assert code == 0 and "intervals: none (--n-boot 0)" in out and "intervals: bootstrap" not in out


def test_strict_import_stores_nothing_when_a_row_has_an_error(runner: CliRunner, tmp_path: Path) -> None:
    src = tmp_path / "sweep.csv"
    lines = LIB_SWEEP.read_text().splitlines()
    lines[3] = lines[3].replace(",32,", ",-32,")  # row 3: a negative batch
    src.write_text("\n".join(lines) + "\n")
    code, out, err = invoke(runner, "import", str(src), "--strict")
    assert code == 2 and "strict import: nothing was stored" in err
    assert "row 3" in err and "batch" in err.lower() and not Store().datasets()
    code, out, _ = invoke(runner, "import", str(src))  # by default the row is left out and reported
    assert code == 0 and "4 rows" in out and "1 error" in out


def test_a_taken_dataset_name_is_said(runner: CliRunner, tmp_path: Path) -> None:
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    lines = LIB_SWEEP.read_text().splitlines()
    a.write_text("\n".join(lines[:3]) + "\n")
    b.write_text("\n".join([lines[0], *lines[3:]]) + "\n")
    assert invoke(runner, "import", str(a), "--dataset", "gh200")[0] == 0
    code, out, err = invoke(runner, "import", str(b), "--dataset", "gh200")
    assert code == 0 and "'gh200 (2)'" in out
    assert "a dataset is already named 'gh200'; this one is 'gh200 (2)'" in err
    # the same file again under a free name: the stored dataset takes it, and no note names a dataset that
    # does not exist ("a dataset is already named 'second'" had been said of a name nobody had)
    code, out, err = invoke(runner, "import", str(a), "--dataset", "second")
    assert code == 0 and "'second'" in out and "already named" not in err


@pytest.mark.parametrize("command", [["fit"], ["detect"], ["monitor"], ["train", "-o", "MODEL"], ["compare", "FILE"]])
def test_a_file_that_needs_import_options_says_to_import_it_first(formats_dir, tmp_path, command):
    """fit, compare, detect, monitor and train read a result file directly but take no --hardware: the advice
    "supply it with --hardware NAME (CLI)" could not be followed there."""
    f = next((formats_dir / "sglang-bench-serving").glob("*.jsonl"))
    args = [a.replace("MODEL", str(tmp_path / "m")).replace("FILE", str(f)) for a in command]
    res = CliRunner().invoke(main, [args[0], str(f), *args[1:]])
    assert res.exit_code != 0 and "Traceback" not in res.output
    assert "--hardware NAME (CLI)" not in res.output, res.output
    assert f"`perfmodel {args[0]}` does not take those options: import the file first" in res.output, res.output
