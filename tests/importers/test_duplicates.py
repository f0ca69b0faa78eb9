"""One measurement in two files of one import is stored once; distinct repeats never are merged (real files).

Regression: ``perfmodel import sweep_dir/*`` on a ``vllm bench sweep serve`` directory stored each run twice
(its ``run=N.json`` and the ``summary.json`` hold the same point), as did gpu_conc's per-level file beside its
summary and a trtllm-bench report beside its summary CSV; a file given twice was read twice.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from perfmodel.api import import_bytes, import_files, load_runs
from perfmodel.importers import ImportMeta, ImportResult, Issue, read_file
from perfmodel.importers.duplicates import drop_duplicate_points
from perfmodel.store import Store

SWEEP = "er0080-vllm-benchmarking__SERVE--max_num_seqs=4-BENCH--max_concurrency=2-num_prompts=8__"
H100 = ImportMeta(hardware="H100-80GB-SXM")


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "home")


def _sweep(formats_dir: Path, what: str) -> Path:
    return formats_dir / "vllm-bench-sweep" / f"{SWEEP}{what}.json"


def _duplicate_notes(results: list[ImportResult]) -> list[Issue]:
    return [i for r in results for i in r.issues if i.severity == "warning" and "the same measurement as" in i.message]


def _key(runs: pd.DataFrame) -> list[tuple[float, float]]:
    return sorted(zip(runs["repeat_idx"].astype(float), runs["output_throughput_tok_s"].astype(float), strict=True))


@pytest.mark.parametrize("order", [("run=0", "summary"), ("summary", "run=0")])
def test_vllm_sweep_run_file_and_summary_store_each_point_once(formats_dir: Path, store: Store,
                                                               order: tuple[str, str]) -> None:
    run0, summary = _sweep(formats_dir, "run=0"), _sweep(formats_dir, "summary")
    alone = read_file(summary, meta=H100).runs
    assert len(alone) >= 2 and alone["repeat_idx"].nunique() == len(alone)  # the summary's own repeats
    paths = [_sweep(formats_dir, o) for o in order]
    info, results = import_files(paths, meta=H100, store=store)
    stored = load_runs(info.id, store=store)
    # Every repeat of the summary once; run=0.json adds nothing the summary does not hold.
    assert info.n_runs == len(alone) and _key(stored) == _key(alone)
    [note] = _duplicate_notes(results)
    other = run0.name if note.file == summary.name else summary.name
    assert note.file in (run0.name, summary.name) and note.row == 1
    assert f"{other} row 1" in note.message


def test_distinct_repeats_and_measurements_are_kept(formats_dir: Path, tmp_path: Path, store: Store) -> None:
    """Same configuration, but another repeat index or another measurement: both are stored."""
    run0 = _sweep(formats_dir, "run=0")
    doc = json.loads(run0.read_text())
    again = dict(doc, run_number=int(doc["run_number"]) + 1)  # the same figures, recorded as the next repeat
    (tmp_path / "run=1.json").write_text(json.dumps(again))
    slower = dict(doc, **{k: doc[k] * (1 - 1e-4) for k in ("output_throughput", "total_token_throughput",
                                                           "request_throughput")})
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "run=0.json").write_text(json.dumps(slower))
    info, results = import_files([run0, tmp_path / "run=1.json", tmp_path / "other" / "run=0.json"], meta=H100,
                                 store=store)
    assert info.n_runs == 3 and not _duplicate_notes(results)
    stored = load_runs(info.id, store=store)
    assert sorted(stored["repeat_idx"]) == [0, 0, 1]


def test_a_row_stands_for_one_row_of_each_other_file(formats_dir: Path, tmp_path: Path, store: Store) -> None:
    """Two identical rows of one file are not merged with each other, and one copy elsewhere removes one."""
    run0 = _sweep(formats_dir, "run=0")
    doc = json.loads(run0.read_text())
    twice = tmp_path / "summary.json"
    twice.write_text(json.dumps([doc, doc]))
    assert len(read_file(twice, meta=H100).runs) == 2
    info, results = import_files([twice, run0], meta=H100, store=store)
    assert info.n_runs == 2 and [r.file for r in results] == ["summary.json", run0.name]
    assert len(results[1].runs) == 0 and len(_duplicate_notes(results)) == 1


def test_gpu_conc_level_file_beside_its_summary(formats_dir: Path, store: Store) -> None:
    d = formats_dir / "custom-concurrency-json"
    level = d / "gpu_conc__H200_benchmark_concurrency_128.json"
    summary = d / "gpu_conc__H200_benchmark_summary_20250814_182107.json"
    meta = ImportMeta(hardware="H200")
    alone = read_file(summary, meta=meta).runs
    info, results = import_files([level, summary], meta=meta, store=store)
    stored = load_runs(info.id, store=store)
    assert info.n_runs == len(alone)
    assert sorted(stored["batch_size"]) == sorted(alone["batch_size"])
    [note] = _duplicate_notes(results)
    row = int(alone.loc[alone["batch_size"] == 128, "source_row"].iloc[0])
    # The summary's row records its timestamp too: it is the one kept.
    assert note.file == level.name and f"{summary.name} row {row}" in note.message
    assert stored["timestamp"].notna().all()


def test_trtllm_report_beside_its_summary_csv(formats_dir: Path, store: Store) -> None:
    d = formats_dir / "trtllm-bench"
    report = d / "trtllm-benchmarks-etched__result_1024_1024_3000.report.txt"
    csv = d / "trtllm-benchmarks-etched__throughput_summary.csv"
    meta = ImportMeta(hardware="H100-80GB-SXM", model="meta-llama/Llama-3.1-70B-Instruct")
    rep = read_file(report, meta=meta).runs.iloc[0]
    table = read_file(csv, meta=meta).runs
    info, results = import_files([csv, report], meta=meta, store=store)
    stored = load_runs(info.id, store=store)
    assert info.n_runs == len(table)
    # The report's row, which records TP and dtypes the CSV does not, is the one kept.
    point = stored[(stored["input_len_tok"] == rep["input_len_tok"])
                   & (stored["output_len_tok"] == rep["output_len_tok"])]
    assert len(point) == 1 and point["source_file"].iloc[0] == report.name
    assert point["tp_size"].iloc[0] == rep["tp_size"] and point["weight_dtype"].iloc[0] == rep["weight_dtype"]
    [note] = _duplicate_notes(results)
    assert note.file == csv.name and f"{report.name} row 1" in note.message


def test_same_file_twice_is_read_once(formats_dir: Path, tmp_path: Path, store: Store) -> None:
    summary = _sweep(formats_dir, "summary")
    once, _ = import_files([summary], meta=H100, store=Store(tmp_path / "once"))
    info, results = import_files([summary, summary], meta=H100, store=store)
    assert len(results) == 1 and info.n_runs == once.n_runs and info.id == once.id
    [note] = [i for i in results[0].issues if "same SHA-256" in i.message]
    assert note.severity == "warning" and note.file == summary.name and "given twice" in note.message
    # A byte-identical copy in another folder (gpu_conc's summary sits in three of its folders).
    copy = tmp_path / "elsewhere" / "copy.json"
    copy.parent.mkdir()
    shutil.copyfile(summary, copy)
    info2, results2 = import_files([summary, copy], meta=H100, store=Store(tmp_path / "copy"))
    assert len(results2) == 1 and info2.n_runs == once.n_runs
    assert any(f"copy.json holds the same bytes as {summary.name}" in i.message for i in results2[0].issues)


def test_same_upload_twice_is_read_once(formats_dir: Path, store: Store) -> None:
    run0, summary = _sweep(formats_dir, "run=0"), _sweep(formats_dir, "summary")
    n = len(read_file(summary, meta=H100).runs)
    info, results = import_bytes([("summary.json", summary.read_bytes()), ("run=0.json", run0.read_bytes()),
                                  ("again.json", summary.read_bytes())], meta=H100, store=store)
    assert [r.file for r in results] == ["summary.json", "run=0.json"] and info.n_runs == n
    assert any("again.json holds the same bytes as summary.json" in i.message for i in results[0].issues)
    assert len(_duplicate_notes(results)) == 1


def test_no_duplicate_across_halves_of_one_table(all_results_csv: Path, tmp_path: Path, store: Store) -> None:
    """Two halves of one table share no point: nothing is left out (no false positive on 4,772 real rows);
    the first half given again under another name is found row by row."""
    df = pd.read_csv(all_results_csv)
    half = 300  # below the issues listed per file
    a, b, a_again = tmp_path / "a.csv", tmp_path / "b.csv", tmp_path / "a_again.csv"
    df.iloc[:half].to_csv(a, index=False)
    df.iloc[half:].to_csv(b, index=False)
    df.iloc[:half].to_csv(a_again, index=False, float_format="%.12g")  # other bytes, same figures
    whole = read_file(all_results_csv)
    info, results = import_files([a, b], store=store)
    assert info.n_runs == len(whole.runs) and not _duplicate_notes(results)
    n_a = len(read_file(a).runs)
    info2, results2 = import_files([a, b, a_again], store=Store(tmp_path / "again"))
    assert info2.n_runs == len(whole.runs) and len(results2[2].runs) == 0
    notes = _duplicate_notes(results2)
    assert len(notes) == n_a and {i.file for i in notes} == {a_again.name}
    assert [i.row for i in notes] == sorted(read_file(a).runs["source_row"])


def test_the_copy_that_records_most_stays_for_all_others(formats_dir: Path) -> None:
    """Three files holding one point: the one that records most stays, and both others name it."""
    base = read_file(_sweep(formats_dir, "run=0"), meta=H100)
    assert base.runs["tp_size"].isna().all()
    lean_a = dataclasses.replace(base, file="a.json")
    lean_b = dataclasses.replace(base, file="b.json")
    rich = dataclasses.replace(base, file="c.json", runs=base.runs.assign(tp_size=1))
    out = drop_duplicate_points([lean_a, lean_b, rich])
    assert [len(r.runs) for r in out] == [0, 0, 1]
    notes = _duplicate_notes(out)
    assert sorted(i.file for i in notes) == ["a.json", "b.json"]
    assert all("c.json row 1" in i.message for i in notes)


def test_llmperf_summary_beside_its_individual_responses(formats_dir: Path, store: Store) -> None:
    # Guards: the summary and the responses it summarises were stored as two rows of one run; they differ only
    # in the TPOT each derives (from the means, per request).
    folder = formats_dir / "llmperf"
    files = sorted(folder.glob("llmperf-leaderboard__anyscale_70b_*.json"))
    assert len(files) == 2
    meta = ImportMeta(hardware="H100", model="Llama-2-70B", batch_size=5)
    info, results = import_files(files, meta=meta, store=store)
    assert info.n_runs == 1
    [note] = _duplicate_notes(results)
    assert "individual_responses" in note.message or "summary" in note.message
