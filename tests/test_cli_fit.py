"""``perfmodel fit``: saturation curves per configuration from the command line.

The small dataset is generated here from known exponential curves
(throughput = c - a * exp(-b * batch), 3 repeats with 3% noise), so the
plateau the command reports can be checked against the truth.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from perfmodel.api import import_files
from perfmodel.cli import main
from perfmodel.store import Store

BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
#: hardware -> (a, b, c) of the generating curve; the third configuration has two batch sizes only.
TRUE_CURVES = {"h100-sxm": (900.0, 0.05, 1000.0), "a100-80gb": (450.0, 0.02, 500.0)}
NOISE = 0.03


def write_known_curves(path: Path, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    rows = []
    for hw, (a, b, c) in TRUE_CURVES.items():
        for batch in BATCHES:
            for rep in range(3):
                tput = (c - a * np.exp(-b * batch)) * (1 + NOISE * rng.standard_normal())
                rows.append({"hardware": hw, "batch": batch, "rep": rep, "tput": tput, "out": 128})
    for batch in (1, 2):  # too few batch sizes for a curve
        rows.append({"hardware": "h100-sxm", "batch": batch, "rep": 0, "tput": 100.0 * batch, "out": 256})
    df = pd.DataFrame(rows)
    out = pd.DataFrame({
        "hardware": df["hardware"], "device_count": 1, "framework": "vllm", "model": "llama-3-8b",
        "input_len_tok": 512.0, "output_len_tok": df["out"].astype(float), "load_kind": "static_batch",
        "batch_size": df["batch"].astype(float), "output_throughput_tok_s": df["tput"],
        "throughput_basis": "output", "repeat_idx": df["rep"], "source_format": "synthetic",
        "source_file": "known.csv", "source_row": np.arange(1, len(df) + 1)})
    out.to_csv(path, index=False)
    return path


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def known_dataset(tmp_path: Path) -> str:
    info, _ = import_files([write_known_curves(tmp_path / "known.csv")], format="canonical", name="known",
                           store=Store())
    assert info.n_runs == 2 * len(BATCHES) * 3 + 2
    return info.id


def invoke(runner: CliRunner, *args: str) -> tuple[int, str, str]:
    res = runner.invoke(main, list(args))
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.exit_code, res.stdout, res.stderr


def test_fit_json_recovers_known_plateaus(runner: CliRunner, known_dataset: str) -> None:
    code, out, err = invoke(runner, "fit", "known", "--shape", "exp", "--n-boot", "40", "--json")
    assert code == 0, err
    recs = json.loads(out)
    assert len(recs) == 3
    by_key = {(r["hardware"], r["output_len_tok"]): r for r in recs}
    for hw, (_a, _b, c) in TRUE_CURVES.items():
        r = by_key[(hw, 128.0)]
        assert r["success"] is True and r["shape"] == "exp"
        assert r["c"] == pytest.approx(c, rel=0.08)
        assert r["c_lo"] <= r["c"] <= r["c_hi"]
        assert r["r2"] > 0.95 and r["n_points"] == 27
    short = by_key[("h100-sxm", 256.0)]
    assert short["success"] is False and short["n_batches"] == 2 and "not enough" in short["message"]
    assert short["c"] is None  # NaN becomes null


def test_fit_table_and_csv(runner: CliRunner, known_dataset: str, tmp_path: Path) -> None:
    dest = tmp_path / "out" / "fits.csv"
    code, out, err = invoke(runner, "fit", known_dataset[:8], "--by", "hardware", "--by", "output_len_tok",
                            "--intervals", "asymptotic", "-o", str(dest))
    assert code == 0, err
    assert "3 configuration(s) by hardware, output_len_tok: 2 fitted, 1 not" in out
    header = out.splitlines()[1]
    for col in ("configuration", "shape", "c (plateau)", "knees", "b90", "b95", "R2", "ok", "message"):
        assert col in header
    assert "h100-sxm · out 128" in out and " NO " in out and f"wrote 3 fit(s) to {dest}" in out
    table = pd.read_csv(dest)
    assert len(table) == 3 and {"hardware", "output_len_tok", "c", "knee_1", "b90", "r2"} <= set(table.columns)
    assert table["success"].tolist().count(True) == 2


def test_fit_loglinear_alias_and_global_json(runner: CliRunner, known_dataset: str) -> None:
    code, out, err = invoke(runner, "--json", "fit", "known", "--shape", "loglinear", "--intervals", "none")
    assert code == 0, err
    shapes = {r["shape"] for r in json.loads(out)}
    assert shapes == {"loglin", "none"}


@pytest.mark.parametrize(("args", "expected"), [
    (("--shape", "cubic"), "'auto', 'exp', 'nrh', 'piecewise', 'loglin'"),
    (("--intervals", "jackknife"), "'bootstrap', 'asymptotic', 'none'"),
    (("--n-boot", "-1"), "--n-boot"),
    (("--by", "gpu_colour"), "gpu_colour"),
    (("--y", "speed"), "speed"),
    (("--json", "-o", "x.csv"), "--json"),
])
def test_fit_bad_options_exit_2(runner: CliRunner, known_dataset: str, args: tuple[str, ...],
                                expected: str) -> None:
    code, out, err = invoke(runner, "fit", "known", *args)
    assert code == 2
    assert expected in err and "Traceback" not in err + out


def test_fit_unknown_dataset_exit_2(runner: CliRunner) -> None:
    code, _, err = invoke(runner, "fit", "no-such-dataset")
    assert code == 2 and err.startswith("error:")


def test_fit_all_results(runner: CliRunner, all_results_csv: Path) -> None:
    info, _ = import_files([all_results_csv], store=Store())
    code, out, err = invoke(runner, "fit", info.id, "--intervals", "none", "--json")
    assert code == 0, err
    recs = pd.DataFrame(json.loads(out))
    # LLM-Inference-Bench: 1,202 configurations with 1-7 batch sizes each as the file's columns group
    # them; llama.cpp's 409 are 1,570 (one per n_batch, one sequence each), so 2,363.
    assert len(recs) == 2363
    assert recs["n_batches"].between(1, 7).all() and recs["n_batches"].max() == 6
    assert (recs.loc[recs["framework"] == "llama.cpp", "n_batches"] == 1).all()
    enough = recs[recs["n_batches"] >= 3]
    assert len(enough) == 695  # pinned from the file: 98 other configurations have 1-2 batch sizes
    assert enough["success"].mean() >= 0.99
    assert (~recs.loc[recs["n_batches"] < 3, "success"]).all()


_NO_PLOTLY = """
import sys, importlib.abc
class _Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "plotly" or name.startswith("plotly."):
            raise ImportError("plotly is not installed here")
        return None
sys.meta_path.insert(0, _Block())
from perfmodel.cli import main
main(sys.argv[1:])
"""


def test_fit_prints_its_table_without_the_plotting_library(known_dataset: str) -> None:
    # A GPU image that runs perfmodel from source may lack plotly: the text-only fit must not need it.
    import os
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-c", _NO_PLOTLY, "fit", known_dataset, "--n-boot", "20"],
                         capture_output=True, text=True, env=os.environ.copy(), timeout=300)
    assert res.returncode == 0, res.stderr
    assert "h100-sxm" in res.stdout and "a100-80gb" in res.stdout
    # and the guard works: importing the figures module fails the same way
    bad = subprocess.run([sys.executable, "-c", _NO_PLOTLY.replace("from perfmodel.cli import main\nmain(sys.argv[1:])",
                                                                   "import perfmodel.plots")],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode != 0 and "plotly is not installed here" in bad.stderr


def test_detect_expectation_from_a_curve_that_rose_linearly_from_the_origin(
        runner: CliRunner, tmp_path: Path) -> None:
    # Guards: `perfmodel detect ... --expect-from samples --batch 1` failed with "the exp curve at batch 1 gave
    # -7.936..." although about 40 tok/s was measured there: the exponential fit had a > c (negative at small
    # batches) and was accepted. Points: perfmodel-large-llama on one H200, 512/128 (sample_runs).
    batch = [1, 1, 4, 4, 16, 16, 32, 32, 64, 64, 128, 128, 256, 256]
    tput = [41.23, 37.67, 157.45, 165.85, 708.87, 629.48, 1328.04, 1371.7, 2351.51, 2393.78, 3892.98, 3900.79,
            4570.7, 4524.85]
    src = tmp_path / "h200.csv"
    pd.DataFrame({
        "hardware": "h200", "device_count": 1, "framework": "transformers", "model": "perfmodel-large-llama",
        "input_len_tok": 512.0, "output_len_tok": 128.0, "load_kind": "static_batch",
        "batch_size": [float(b) for b in batch], "output_throughput_tok_s": tput, "throughput_basis": "output",
        "repeat_idx": [i % 2 for i in range(len(batch))], "source_format": "synthetic", "source_file": "h200.csv",
        "source_row": np.arange(1, len(batch) + 1)}).to_csv(src, index=False)
    import_files([src], format="canonical", name="samples", store=Store())
    stream = tmp_path / "stream.csv"
    pd.DataFrame({"timestamp": [0.0, 1.0, 2.0], "output_throughput_tok_s": [40.0, 41.0, 39.0]}).to_csv(
        stream, index=False)
    code, out, err = invoke(runner, "detect", str(stream), "--detector", "threshold", "--threshold", "0.5",
                            "--expect-from", "samples", "--hardware", "h200", "--batch", "1")
    assert code == 0, err
    expected = float(out.split("expected output_throughput_tok_s:")[1].split()[0].replace(",", ""))
    assert 20.0 < expected < 80.0


def test_table_cells_never_read_in_e_notation(runner: CliRunner, tmp_path: Path) -> None:
    # Guards: plateaus above 9,999 tok/s read "1.903e+04" in `perfmodel fit`'s table.
    from perfmodel.cli import _cell

    assert (_cell(19033.4), _cell(405.9), _cell(0.000106816), _cell(2.5e6)) == ("19,033", "405.9", "0.0001068",
                                                                                 "2.5 M")
    assert _cell(float("nan")) == "-" and _cell(0.91234, "{:.3f}") == "0.912"
    df = pd.read_csv(write_known_curves(tmp_path / "known.csv"))
    big = tmp_path / "big.csv"
    df.assign(output_throughput_tok_s=df["output_throughput_tok_s"] * 40).to_csv(big, index=False)
    info, _ = import_files([big], format="canonical")
    res = runner.invoke(main, ["fit", info.id, "--intervals", "none"])
    assert res.exit_code == 0, res.output
    import re

    assert "e+0" not in res.output and len(re.findall(r" \d\d,\d\d\d ", res.output)) == 2  # both plateaus


def test_fit_reads_a_result_file_writes_the_kv_full_batch_and_names_another_x(runner: CliRunner,
                                                                             tmp_path: Path) -> None:
    # Guards: `fit FILE.csv` was refused (train and evaluate take files), the file and JSON lacked the KV-full
    # batch the printed table shows, and --x output_len_tok grouped by output length too and said "batch size(s)"
    path = write_known_curves(tmp_path / "known.csv")
    dest = tmp_path / "fits.csv"
    code, out, err = invoke(runner, "fit", str(path), "--n-boot", "0", "-o", str(dest))
    assert code == 0, err
    table = pd.read_csv(dest)
    assert "kv_full_batch" in table.columns and (table["kv_full_batch"] > 100).all()
    code, out, err = invoke(runner, "fit", str(path), "--n-boot", "0", "--x", "output_len_tok", "--json")
    recs = json.loads(out)
    assert code == 0 and all("output_len_tok" not in r and r["batch_size"] in BATCHES for r in recs)
    assert all("distinct output length(s)" in r["message"] and "batch size" not in r["message"]
               for r in recs if not r["success"])
    code, out, err = invoke(runner, "fit", str(path), "--n-boot", "0", "--x", "output_len_tok")
    assert "note: no configuration has three output_len_tok values" in err


H200_CONC = Path("custom-concurrency-json") / "gpu_conc__H200_benchmark_summary_20250814_182107.json"


def test_fit_says_the_import_warning_that_the_batch_axis_read_higher_than_what_ran(runner: CliRunner,
                                                                                   formats_dir: Path) -> None:
    # gpu_conc's H200: 5 of 10 concurrency levels had about 20 requests in flight where 64-1,024 were configured.
    # The import warned; fit read knee 52.3, b90 26 without a word.
    path = formats_dir / H200_CONC
    info, _ = import_files([path], store=Store())
    for target in (info.id, str(path)):  # a stored dataset, and the file read directly
        code, out, err = invoke(runner, "fit", target, "--n-boot", "20")
        assert code == 0, err
        caveats = [ln for ln in out.splitlines() if ln.startswith("caveat: ")]
        assert any("requests in flight than configured" in ln and "h200" in ln for ln in caveats), out
    code, out, _ = invoke(runner, "fit", info.id, "--n-boot", "0", "--json")
    assert "requests in flight" in json.loads(out)[0]["import_warnings"]


def test_fit_without_import_warnings_prints_no_caveat(runner: CliRunner, known_dataset: str) -> None:
    code, out, _ = invoke(runner, "fit", "known", "--n-boot", "0")
    assert code == 0 and "caveat:" not in out


def test_fit_default_replicates_are_the_shared_setting() -> None:
    from perfmodel.cli import fit_cmd
    from perfmodel.curves import DEFAULT_N_BOOT

    assert next(p for p in fit_cmd.params if p.name == "n_boot").default == DEFAULT_N_BOOT


def test_fit_along_the_request_rate_names_rates_and_keeps_the_grouping(runner: CliRunner,
                                                                       formats_dir: Path) -> None:
    # Guards: `fit DS --x request_rate_rps` on inference-perf's rate sweep said "measured up to batch 183.38",
    # gave a KV-full batch, added batch_size to the grouping unasked, and its exponential read "plateau not
    # reached" with three points on the plateau
    files = sorted((formats_dir / "inference-perf").glob("*stage_[0-6]_lifecycle_metrics.json"))
    assert len(files) == 7
    code, out, err = invoke(runner, "import", *map(str, files), "--hardware", "h100-sxm", "--model", "llama-3-8b",
                            "--dataset", "rates")
    assert code == 0, err
    code, out, err = invoke(runner, "fit", "rates", "--x", "request_rate_rps", "--n-boot", "50")
    assert code == 0, err
    head, words, header, row = out.splitlines()[:4]
    assert "batch_size" not in head and "x: request rate (req/s)" in words
    assert "KV full" not in header and "batch" not in row and " nrh " in row
    code, out, _ = invoke(runner, "fit", "rates", "--x", "request_rate_rps", "--n-boot", "50", "--json")
    [rec] = json.loads(out)
    assert rec["kv_full_batch"] is None and rec["plateau_reached"] and rec["x_name"] == "request_rate_rps"
    assert "batch" not in rec["message"] and rec["c_lo"] <= 6357 <= rec["c_hi"]
    # without --x a sweep that records no batch runs along the load it holds, and says so (it had read "0
    # configuration(s)" and nothing of the rates); a --x batch_size given asks for another
    code, auto, err = invoke(runner, "fit", "rates", "--n-boot", "50")
    assert code == 0, err
    assert "the runs record no batch size: curves along request_rate_rps (choose with --x)" in auto
    assert " nrh " in auto.splitlines()[3]
    code, _, err = invoke(runner, "fit", "rates", "--x", "batch_size")
    assert code == 2 and "records no batch size; its runs have request_rate_rps" in err, err
