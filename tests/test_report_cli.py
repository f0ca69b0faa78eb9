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
    # attributions name each feature in words beside its raw name (it was the raw name only)
    assert "What these features mean" in html and "<th>label</th>" in html
    r = CliRunner().invoke(main, ["analyses", "--delete", out["analysis_id"]])
    assert r.exit_code == 0


def test_plan_in_another_currency_takes_the_exchange_rate_and_the_report_shows_it(dataset: str,
                                                                                   tmp_path: Path) -> None:
    # Guards: the CLI had no flag for the rate (the note named usd_to_currency, which no flag set), and the
    # report's workload table showed "EUR" with no rate.
    from perfmodel import catalog

    args = ["plan", dataset, "--rate", "10", "--input-len", "1000", "--output-len", "1000", "--e2e", "12",
            "--currency", "EUR", "--usd-to-currency", "0.5", "--json", "--save", "eur"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    usd = catalog.resolve_hardware("h100-sxm").price_per_hour_usd
    assert out["candidates"][0]["price_per_device_hour"] == pytest.approx(0.5 * usd)
    r = CliRunner().invoke(main, ["report", out["analysis_id"], "-o", str(tmp_path / "r.html"), "--no-accuracy"])
    assert r.exit_code == 0, r.output
    assert "EUR at 1 USD = 0.5 EUR (catalog prices converted)" in (tmp_path / "r.html").read_text()


def test_plan_file_and_errors(dataset: str, tmp_path: Path) -> None:
    f = tmp_path / "plan.yaml"
    f.write_text("workload: {request_rate_rps: 10, input_len_tok: 1000, output_len_tok: 1000}\n"
                 "slo: {e2e_s: 12}\nprices: {h100-sxm: 2}\n")
    r = CliRunner().invoke(main, ["plan", dataset, "--plan", str(f)])
    assert r.exit_code == 0 and "4 x h100-sxm" in r.output
    assert "load_batch" in r.output and "e2e_at_load_s" in r.output  # as the app's table and the report show
    r = CliRunner().invoke(main, ["plan", dataset, "--rate", "10"])
    assert r.exit_code == 2 and "--input-len" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(main, ["plan", dataset, "--plan", str(f), "--price", "h100"])
    assert r.exit_code == 2 and "HARDWARE=PRICE" in r.output
    r = CliRunner().invoke(main, ["report", "nope", "-o", str(tmp_path / "r.html")])
    assert r.exit_code == 2 and "no dataset 'nope'" in r.output
    # SOURCE may be a saved analysis too: the message had spoken of datasets only
    assert "nor is 'nope' a saved analysis (saved: none; see `perfmodel analyses`)" in r.output
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


@pytest.fixture
def two_models(tmp_path: Path) -> str:
    """llama-3-8b on h100-sxm with vllm (catalog price) and perfmodel-tiny-llama on cpu-x86-2vcpu with llama.cpp
    (no price), both at 1000/1000 tokens."""
    paths = [tmp_path / "gpu.csv", tmp_path / "cpu.csv"]
    synthetic_runs(noise=0.02).to_csv(paths[0], index=False)
    synthetic_runs(noise=0.02, hardware="cpu-x86-2vcpu", model="perfmodel-tiny-llama") \
        .assign(framework="llama.cpp").to_csv(paths[1], index=False)
    r = CliRunner().invoke(main, ["import", *map(str, paths), "--dataset", "two"])
    assert r.exit_code == 0, r.output
    return "two"


def test_plan_table_names_the_model_and_the_lengths_it_was_sized_from(two_models: str) -> None:
    """The table had no model column, the nearest-lengths caveat was only in the -o CSV, and an unknown
    cost printed as NaN: two models' rows looked alike and the headline hid that 1000/1000 was used."""
    args = ["plan", two_models, "--rate", "10", "--output-len", "1000", "--e2e", "12"]
    r = CliRunner().invoke(main, [*args, "--input-len", "500"])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[1].startswith("caveat: Not measured at 500/1000 input/output tokens: every candidate was sized "
                               "from the nearest measured lengths") and "runs at 1000/1000 tokens" in lines[1]
    header = next(line for line in lines if line.split()[:1] == ["hardware"]).split()  # after the plan's notes
    assert header[:5] == ["hardware", "model", "framework", "device_count", "sized_at"]
    cpu = next(line for line in lines if line.lstrip().startswith("cpu-x86-2vcpu"))
    assert "perfmodel-tiny-llama" in cpu and "1000/1000" in cpu and "—" in cpu
    assert "NaN" not in r.output and "llama-3-8b" in r.output
    r = CliRunner().invoke(main, [*args, "--input-len", "1000"])  # measured lengths: no caveat, no column
    assert r.exit_code == 0, r.output
    assert "caveat" not in r.output and "sized_at" not in r.output
    assert "model" in next(line for line in r.output.splitlines() if line.split()[:1] == ["hardware"])


@pytest.mark.parametrize("flag, value, expected", [
    ("--framework", "nosuch", "--framework: framework 'nosuch' not in dataset 'two'; valid values: llama.cpp, vllm"),
    ("--hardware", "h200", "--hardware: hardware 'h200' not in dataset 'two'; valid values: cpu-x86-2vcpu, "
                           "h100-sxm"),
    ("--model", "llama-3-70b", "--model: model 'llama-3-70b' not in dataset 'two'; valid values: llama-3-8b, "
                               "perfmodel-tiny-llama"),
    ("--devices", "3", "--devices: device count '3' not in dataset 'two'; valid values: 1"),
    ("--price", "zz9000=3", "--price: hardware 'zz9000' not in dataset 'two'; valid values: cpu-x86-2vcpu, "
                            "h100-sxm"),
])
def test_plan_option_naming_nothing_in_the_data_lists_the_valid_values(two_models: str, flag: str, value: str,
                                                                        expected: str) -> None:
    """`--framework nosuch` exited 0 with "0 rejected; see the reasons" and no reasons; `--price zz9000=3`
    was silently ignored."""
    r = CliRunner().invoke(main, ["plan", two_models, "--rate", "1", "--input-len", "1000", "--output-len", "1000",
                                  flag, value])
    assert r.exit_code == 2, r.output
    assert expected in r.output and isinstance(r.exception, SystemExit)


def test_plan_devices_zero_is_an_option_error(two_models: str) -> None:
    r = CliRunner().invoke(main, ["plan", two_models, "--rate", "1", "--input-len", "10", "--output-len", "10",
                                  "--devices", "0"])
    assert r.exit_code == 2 and "--devices" in r.output and "see the reasons" not in r.output


def test_plan_errors_name_the_flag_not_the_field(two_models: str) -> None:
    """`--rate -1` was reported as "column 'workload.request_rate_rps'"."""
    r = CliRunner().invoke(main, ["plan", two_models, "--rate", "-1", "--input-len", "10", "--output-len", "10"])
    assert r.exit_code == 2 and "--rate: Input should be greater than 0" in r.output
    assert "request_rate_rps" not in r.output
    r = CliRunner().invoke(main, ["plan", two_models, "--rate", "1", "--tok-s", "5", "--input-len", "10",
                                  "--output-len", "10"])
    assert r.exit_code == 2 and "give exactly one of --rate and --tok-s" in r.output


def test_plan_with_no_candidate_left_says_why(two_models: str) -> None:
    """Each filter matches the data but no run matches them together: the summary said "0 rejected; see
    the reasons" and listed none."""
    r = CliRunner().invoke(main, ["plan", two_models, "--rate", "1", "--input-len", "1000", "--output-len", "1000",
                                  "--hardware", "cpu-x86-2vcpu", "--framework", "vllm"])
    assert r.exit_code == 0, r.output
    assert "see the reasons" not in r.output
    assert "a positive throughput matches the chosen models, hardware" in r.output
    r = CliRunner().invoke(main, ["plan", two_models, "--rate", "1", "--input-len", "1000", "--output-len", "1000",
                                  "--hardware", "cpu-x86-2vcpu", "--model", "llama-3-8b"])
    assert r.exit_code == 0 and "1 rejected; see the reasons" in r.output
    assert "cpu-x86-2vcpu llama-3-8b: no measurements and no predictor given" in r.output  # at no device count


def test_plan_predict_sizes_at_the_workload_lengths_and_predicts_catalog_hardware(two_models: str,
                                                                                 tmp_path: Path) -> None:
    """Without --predict a workload at 500/1000 tokens is sized from the runs at 1000/1000 (a caveat says so,
    and how to do better); with it each measured candidate is predicted at 500/1000 and catalog hardware
    with no runs (l40s) is predicted too, the table saying which rows are predicted. --model-dir takes a
    model saved by `perfmodel train` instead of training one."""
    args = ["plan", two_models, "--rate", "1", "--input-len", "500", "--output-len", "1000", "--e2e", "60",
            "--model", "llama-3-8b"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    assert "(--predict predicts them at the workload's lengths instead)" in r.output
    r = CliRunner().invoke(main, [*args, "--predict", "--hardware", "h100-sxm", "--hardware", "l40s", "--json"])
    assert r.exit_code == 0, r.output
    rows = {c["hardware"]: c for c in json.loads(r.output)["candidates"]}
    assert set(rows) == {"h100-sxm", "l40s"}
    assert rows["h100-sxm"]["lengths"] == "500/1000"
    assert rows["h100-sxm"]["source"] == "predicted at the workload's lengths (roofline-gbm)"
    assert "from the runs at 1000/1000" in rows["h100-sxm"]["note"]
    assert rows["l40s"]["source"] == "predicted (roofline-gbm)" and rows["l40s"]["framework"] == "vllm"
    r = CliRunner().invoke(main, [*args, "--predict"])
    assert r.exit_code == 0, r.output
    assert "caveat" not in r.output and "sized_from" in r.output and "training roofline-gbm" in r.output
    model = tmp_path / "model"
    data = tmp_path / "gpu.csv"  # written by the fixture
    r = CliRunner().invoke(main, ["train", str(data), "-o", str(model)])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, [*args, "--model-dir", str(model), "--json"])
    assert r.exit_code == 0, r.output
    [row] = json.loads(r.output)["candidates"]
    assert row["source"] == "predicted at the workload's lengths (roofline-gbm)"
    # A model, hardware and device count the dataset lacks are options of a predicted plan, not errors.
    r = CliRunner().invoke(main, ["plan", two_models, "--rate", "1", "--input-len", "500", "--output-len", "500",
                                  "--model", "llama-3-70b", "--hardware", "h200", "--devices", "2",
                                  "--model-dir", str(model), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert [(c["hardware"], c["device_count"]) for c in [*out["candidates"], *out["infeasible"]]] == [("h200", 2)]


def test_report_of_a_plan_that_predicts_says_what_each_candidate_was_sized_from(dataset: str, tmp_path: Path) -> None:
    """A saved plan with predict: the report trains its predictor once and the plan uses it; the candidate
    table says the row was predicted at the workload's lengths, and the measured curve drawn for it is the
    one at its nearest measured lengths (there was none at the plan's lengths to draw)."""
    f = tmp_path / "plan.yaml"
    f.write_text("workload: {request_rate_rps: 10, input_len_tok: 700, output_len_tok: 1000}\n"
                 "slo: {e2e_s: 60}\nprices: {h100-sxm: 2}\npredict: true\n")
    r = CliRunner().invoke(main, ["report", dataset, "--plan", str(f), "-o", str(tmp_path / "r.html"), "--no-accuracy"])
    assert r.exit_code == 0, r.output
    html = (tmp_path / "r.html").read_text()
    assert "<td>predicted at the workload&#39;s lengths (roofline-gbm) at 700/1000</td>" in html
    assert "1000/1000" in html and "Throughput vs batch" in html
    # 21 runs of one configuration leave the band's low end at 0 tok/s: devices unbounded, not "-1"
    assert ", -1]" not in html and "unbounded]" in html


def test_a_p99_target_judged_against_means_is_said_in_the_cli_and_the_report(dataset: str, tmp_path: Path) -> None:
    # Guards: the report's table read "SLO percentile p99" beside candidates all "ok" on means (these runs record
    # no latency: it is derived from throughput), with no caveat outside the Planner page.
    from perfmodel.store import Store

    said = "the p99 end-to-end target is judged against that mean there"
    args = ["plan", dataset, "--rate", "10", "--input-len", "1000", "--output-len", "1000", "--e2e", "60",
            "--percentile", "p99", "--save", "p99"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0 and said in " ".join(r.output.split()), r.output
    [aid] = [a.id for a in Store().analyses() if a.name == "p99"]
    r = CliRunner().invoke(main, ["report", aid, "-o", str(tmp_path / "r.html"), "--no-accuracy"])
    assert r.exit_code == 0, r.output
    assert said in (tmp_path / "r.html").read_text()


def _import_cli(files: list[Path], *extra: str) -> str:
    r = CliRunner().invoke(main, ["import", *map(str, files), "--dataset", "d", *extra])
    assert r.exit_code == 0, r.output
    return "d"


def _row(output: str, hardware: str) -> str:
    return next(line for line in output.splitlines() if line.lstrip().startswith(hardware))


def test_plan_table_says_not_robust_and_prints_each_candidates_notes(tmp_path: Path) -> None:
    """The printed table's status read "ok" for a row that is not robust (its robust column and its note, which
    says why, were only in --json and -o)."""
    slow = synthetic_runs(latency=True)
    slow = slow[slow["batch_size"] >= 16].copy()
    slow.loc[slow["batch_size"] == 16, "e2e_latency_p90_s"] = [6.0, 8.0, 13.0]
    slow.to_csv(tmp_path / "slow.csv", index=False)
    ds = _import_cli([tmp_path / "slow.csv"])
    r = CliRunner().invoke(main, ["plan", ds, "--rate", "10", "--input-len", "1000", "--output-len", "1000",
                                  "--e2e", "12", "--percentile", "p90"])
    assert r.exit_code == 0, r.output
    assert " ok, not robust " in _row(r.output, "h100-sxm")
    notes = r.output.split("\ncandidate notes:\n")[1].splitlines()
    assert notes[0].startswith("  h100-sxm vllm x1 llama-3-8b: SLO missed at the pessimistic end: the slowest of "
                               "the repeats measured at this batch")


def test_plan_names_the_cheaper_batch_that_is_not_robust_on_the_h200_sample(tmp_path: Path) -> None:
    sample = Path(__file__).resolve().parents[1] / "sample_runs" / "perfmodel-large-llama_h200_local-sweep-out512.csv"
    ds = _import_cli([sample])
    r = CliRunner().invoke(main, ["plan", ds, "--rate", "20", "--input-len", "512", "--output-len", "512",
                                  "--e2e", "17", "--percentile", "mean"])
    assert r.exit_code == 0, r.output
    summary = r.output.splitlines()[0]
    assert summary.startswith("Serving 20 req/s (10,240 output tok/s) of 512/512 input/output tokens: 17 x h200")
    assert summary.endswith("Cheaper but not robust: batch 64 would need 5 x h200 (12 fewer), but 1 of its 3 runs "
                            "measured a mean e2e of 19.5 s against the 17 s target.")
    assert " ok " in _row(r.output, "h200")
    assert "  h200 transformers x1 perfmodel-large-llama: batch 64 would need 5 devices, not 17" in r.output
    help_text = CliRunner().invoke(main, ["plan", "--help"]).output
    assert "robust batch" in help_text and "overloaded" in help_text


def test_plan_table_says_overloaded_with_no_load_read_off_its_peak(formats_dir: Path) -> None:
    files = sorted((formats_dir / "inference-perf").glob("*stage_[4-6]_lifecycle_metrics.json"))
    ds = _import_cli(files, "--hardware", "h100", "--model", "llama-3-8b", "--framework", "vllm")
    r = CliRunner().invoke(main, ["plan", ds, "--rate", "250", "--input-len", "204", "--output-len", "62"])
    assert r.exit_code == 0, r.output
    row = _row(r.output, "h100-sxm").split()
    assert row[4:6] == ["ok,", "overloaded"] and row[-2:] == ["—", "—"]  # load_batch, e2e_at_load_s
    assert "an overloaded rate: its run(s) completed 103.1 of the 183.4 req/s asked" in \
        r.output.split("\ncandidate notes:\n")[1]
