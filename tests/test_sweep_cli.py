"""``perfmodel sweep`` / ``perfmodel sweeps``: flags, plan files, exit codes, SIGKILL and resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from perfmodel.cli import main
from perfmodel.store import Store

REPO = Path(__file__).resolve().parents[1]


def _need_engine() -> None:
    for name in ("torch", "transformers"):
        pytest.importorskip(name, reason=f"the local engine needs {name}")


def test_dry_run_lists_points_and_estimate(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text("engine_size: micro\nbatch_sizes: 1:4:x2\ninput_lens: [8]\noutput_lens: [4]\nrepeats: 2\n")
    res = CliRunner().invoke(main, ["sweep", str(plan), "--dry-run", "--repeats", "1", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["n_points"] == 3 and out["points"] == ["b1-i8-o4-r0", "b2-i8-o4-r0", "b4-i8-o4-r0"]
    assert out["estimate_s"] > 0 and out["plan"]["repeats"] == 1  # the flag overrides the file
    root = CliRunner().invoke(main, ["--json", "sweep", str(plan), "--dry-run", "--repeats", "1"])
    assert root.exit_code == 0 and json.loads(root.output)["n_points"] == 3  # the root's --json too
    assert json.loads(CliRunner().invoke(main, ["--json", "sweeps"]).output) == []  # had printed "no sweeps yet"
    assert Store().sweeps() == []


def test_bad_flags_exit_2_with_every_problem() -> None:
    res = CliRunner().invoke(main, ["sweep", "--batch", "0,2", "--input-len", "8", "--output-len", "-1",
                                    "--engine-size", "giant"])
    assert res.exit_code == 2
    for part in ("batch_sizes", "0 out of range", "output_lens", "engine_size", "valid sizes: micro, tiny"):
        assert part in res.output
    res = CliRunner().invoke(main, ["sweep"])
    assert res.exit_code == 2 and "PLAN_FILE" in res.output
    res = CliRunner().invoke(main, ["sweep", "--resume", "feedfacecafe"])
    assert res.exit_code == 2 and "no sweep 'feedfacecafe'" in res.output
    res = CliRunner().invoke(main, ["sweep", "--batch", "1:2000:+1", "--input-len", "1:10:+1", "--output-len", "4"])
    assert res.exit_code == 2 and "confirm_large" in res.output and "--yes" in res.output


def test_quick_local_sweep_then_listed_and_visible_to_show() -> None:
    _need_engine()
    runner = CliRunner()
    res = runner.invoke(main, ["sweep", "--backend", "local", "--engine-size", "micro", "--batch", "1,2",
                               "--input-len", "8", "--output-len", "4", "--repeats", "1", "--dataset", "quick"])
    assert res.exit_code == 0, res.output
    assert "[1/2] b1-i8-o4-r0" in res.output and "tok/s" in res.output and "done: 2 done, 0 failed" in res.output
    (info,) = Store().sweeps()
    assert (info.state, info.n_done, info.name) == ("done", 2, "quick")
    listed = json.loads(runner.invoke(main, ["sweeps", "--json"]).output)
    assert listed[0]["status"] == "done" and listed[0]["n_done"] == 2
    shown = runner.invoke(main, ["show", "quick", "--json"])
    assert shown.exit_code == 0 and len(json.loads(shown.output)["runs"]) == 2


def test_sigkill_mid_sweep_then_resume_loses_and_repeats_nothing(tmp_path: Path) -> None:
    """The issue's acceptance: kill -9 a running sweep, resume it, every point exactly once."""
    _need_engine()
    home = os.environ["PERFMODEL_HOME"]
    cmd = [sys.executable, "-m", "perfmodel", "--home", home, "sweep", "--engine-size", "micro", "--batch",
           "1:32:x2", "--input-len", "16", "--output-len", "16", "--repeats", "3", "--dataset", "killed"]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        sweep_id = None
        while time.monotonic() < deadline:
            sweeps = Store().sweeps()
            if sweeps and sweeps[0].n_done >= 3:
                sweep_id = sweeps[0].id
                break
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
            time.sleep(0.2)
        assert sweep_id is not None, "the sweep did not get going"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    store = Store()
    before = store.sweep(sweep_id)
    assert before.state == "interrupted" and 3 <= before.n_done < before.n_points == 18
    kept = store.runs(before.dataset_id)
    assert len(kept) == before.n_done == store.dataset(before.dataset_id).n_runs

    res = CliRunner().invoke(main, ["sweep", "--resume", sweep_id[:8]])
    assert res.exit_code == 0, res.output
    after = store.sweep(sweep_id)
    assert (after.state, after.n_done, after.n_failed) == ("done", 18, 0)
    runs = store.runs(after.dataset_id)
    assert len(runs) == 18 == store.dataset(after.dataset_id).n_runs
    assert not runs.duplicated(["batch_size", "repeat_idx"]).any()
    assert sorted(zip(runs["batch_size"], runs["repeat_idx"], strict=True)) == sorted(
        (float(b), r) for b in (1, 2, 4, 8, 16, 32) for r in range(3))
    # The rows stored before the kill are untouched by the resume.
    assert runs.iloc[: len(kept)]["timestamp"].tolist() == kept["timestamp"].tolist()
    points = store.sweep_points(sweep_id)
    assert (points["status"] == "done").all() and points["run_idx"].is_unique


def test_a_sweep_whose_dataset_was_deleted_is_run_again_not_resumed() -> None:
    # Guards: --resume of such a sweep claimed it and then failed every point; and there was no way to start
    # its stored plan again from the command line.
    from perfmodel.sweep.plan import plan_from_dict
    from perfmodel.sweep.runner import create_sweep

    plan = plan_from_dict({"engine_size": "micro", "batch_sizes": [1, 2], "input_lens": [8], "output_lens": [4],
                           "repeats": 1, "name": "lost"})
    info = create_sweep(plan)
    Store().set_sweep_status(info.id, "stopped")
    Store().delete_dataset(info.dataset_id)
    res = CliRunner().invoke(main, ["sweep", "--resume", info.id])
    assert res.exit_code == 2 and f"perfmodel sweep --again {info.id}" in res.output
    assert Store().sweep(info.id).status == "stopped"
    listed = CliRunner().invoke(main, ["sweeps"]).output
    assert f"{info.dataset_id} (deleted)" in listed
    assert json.loads(CliRunner().invoke(main, ["sweeps", "--json"]).output)[0]["dataset_exists"] is False
    res = CliRunner().invoke(main, ["sweep", "--again", info.id[:8], "--repeats", "2", "--dry-run", "--json"])
    assert res.exit_code == 0, res.output
    again = json.loads(res.output)
    assert again["plan"]["batch_sizes"] == [1, 2] and again["plan"]["name"] == "lost" and again["n_points"] == 4
    res = CliRunner().invoke(main, ["sweep", "--again", info.id, "--resume", info.id])
    assert res.exit_code == 2 and "not both" in res.output
