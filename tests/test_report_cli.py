"""CLI: perfmodel plan / report / analyses on a small imported dataset."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_planner import synthetic_runs

from perfmodel.cli import main


@pytest.fixture
def dataset(tmp_path: Path) -> str:
    path = tmp_path / "bench.csv"
    synthetic_runs(noise=0.02).to_csv(path, index=False)
    r = CliRunner().invoke(main, ["import", str(path), "--dataset", "<b>bench</b>"])
    assert r.exit_code == 0, r.output
    return "<b>bench</b>"


def test_plan_flags_table_json_and_save(dataset: str, tmp_path: Path) -> None:
    args = ["plan", dataset, "--rate", "10", "--input-len", "1000", "--output-len", "1000", "--e2e", "12",
            "--price", "h100-sxm=2"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    assert "4 x h100-sxm" in r.output and "8.00 USD/h" in r.output
    r = CliRunner().invoke(main, [*args, "--json", "--save", "my plan"])
    out = json.loads(r.output)
    assert out["candidates"][0]["devices"] == 4 and out["analysis_id"]
    r = CliRunner().invoke(main, ["analyses"])
    assert out["analysis_id"] in r.output and "my plan" in r.output
    r = CliRunner().invoke(main, ["report", out["analysis_id"], "-o", str(tmp_path / "r.html"), "--no-accuracy"])
    assert r.exit_code == 0, r.output
    html = (tmp_path / "r.html").read_text()
    assert "4 x h100-sxm" in html and "&lt;b&gt;bench&lt;/b&gt;" in html and "<b>bench</b>" not in html
    r = CliRunner().invoke(main, ["analyses", "--delete", out["analysis_id"]])
    assert r.exit_code == 0


def test_plan_file_and_errors(dataset: str, tmp_path: Path) -> None:
    f = tmp_path / "plan.yaml"
    f.write_text("workload: {request_rate_rps: 10, input_len_tok: 1000, output_len_tok: 1000}\n"
                 "slo: {e2e_s: 12}\nprices: {h100-sxm: 2}\n")
    r = CliRunner().invoke(main, ["plan", dataset, "--plan", str(f)])
    assert r.exit_code == 0 and "4 x h100-sxm" in r.output
    r = CliRunner().invoke(main, ["plan", dataset, "--rate", "10"])
    assert r.exit_code == 2 and "input_len_tok" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(main, ["plan", dataset, "--plan", str(f), "--price", "h100"])
    assert r.exit_code == 2 and "HARDWARE=PRICE" in r.output
    r = CliRunner().invoke(main, ["report", "nope", "-o", str(tmp_path / "r.html")])
    assert r.exit_code == 2 and "no dataset 'nope'" in r.output
    r = CliRunner().invoke(main, ["report", dataset, "-o", str(tmp_path / "r.txt")])
    assert r.exit_code == 2 and ".html or .pdf" in r.output


@pytest.mark.parametrize("command", ["plan", "report"])
def test_plan_file_that_is_not_text_names_the_file(tmp_path: Path, command: str) -> None:
    """A binary --plan file was a UnicodeDecodeError traceback; it is reported like `perfmodel sweep pic.png`."""
    pic = tmp_path / "pic.png"
    pic.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe")
    args = [command, "nope", "--plan", str(pic)] + (["-o", str(tmp_path / "r.html")] if command == "report" else [])
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 2, r.output
    assert f"error: {pic}: cannot read the plan file (" in r.output and "utf-8" in r.output
    assert isinstance(r.exception, SystemExit), r.exception


def test_plan_file_section_that_is_not_a_mapping(tmp_path: Path) -> None:
    """`workload: 5` in a --plan file was a TypeError traceback (flags are laid over the section)."""
    f = tmp_path / "plan.yaml"
    f.write_text("workload: 5\nslo: {e2e_s: 12}\nprices: [1]\n")
    r = CliRunner().invoke(main, ["plan", "nope", "--plan", str(f), "--rate", "3", "--price", "h100-sxm=2"])
    assert r.exit_code == 2, r.output
    assert "plan.yaml, column 'workload'" in r.output and "plan.yaml, column 'prices'" in r.output
    assert isinstance(r.exception, SystemExit), r.exception
