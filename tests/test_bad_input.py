"""Corrupt input never escapes as a raw exception and never changes the store.

Every case goes through the public import path (``import_bytes``/``import_files``):
the outcome must be a clean import (possibly with row issues) or a
:class:`PerfmodelError` whose message names the file, and on error the store's
tables are byte-for-byte what they were before.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from test_import_shared import _files, _rel, meta_for
from test_store import dump, write_canonical_csv

from perfmodel.api import import_bytes, import_files
from perfmodel.errors import ImportFormatError, PerfmodelError
from perfmodel.importers import ImportMeta
from perfmodel.store import Store

FAST = settings(deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
META = ImportMeta(hardware="H100-80GB-SXM", model="meta-llama/Llama-3.1-8B-Instruct")

# Field names the JSON importers look for, so random documents reach their parsers.
KNOWN_KEYS = ["benchmarks", "results", "metrics", "config", "request_throughput", "output_throughput",
              "mean_ttft_ms", "median_ttft_ms", "p99_itl_ms", "completed", "num_prompts", "max_concurrency",
              "model_id", "backend", "date", "duration", "input_lens", "output_lens", "ttfts", "itls",
              "total_input_tokens", "total_output_tokens", "concurrency", "request_rate", "summary",
              "load_summary", "successes", "failures", "latency", "throughput", "decode", "prefill",
              "results_ttft_s_mean", "results_mean_output_throughput_token_per_s", "num_concurrent_requests",
              "mean_input_tokens", "mean_output_tokens", "version", "model", "report", "per_token"]


@pytest.fixture(scope="module")
def seeded_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding one dataset, so 'unchanged' compares something non-empty."""
    home = tmp_path_factory.mktemp("bad-home")
    src = write_canonical_csv(home / "seed.csv", 20, seed=9)
    import_files([src], store=Store(home))
    return home


def check_outcome(home: Path, name: str, data: bytes, meta: ImportMeta | None = None,
                  format: str | None = None) -> None:
    store = Store(home)
    before = dump(store)
    before_ids = {d.id for d in store.datasets()}
    try:
        info, results = import_bytes([(name, data)], meta=meta, format=format, store=store)
    except PerfmodelError as exc:
        msg = str(exc)
        assert msg.strip(), "empty error message"
        assert "Traceback" not in msg
        assert dump(store) == before, "a failed import changed the store"
        return
    # A clean import: every stored row is valid, issues name the file.
    assert info.n_runs == sum(len(r.runs) for r in results)
    for r in results:
        assert all(i.file == name or i.file == "" for i in r.issues)
    # Put the store back so later examples compare against the seeded state.
    if info.id not in before_ids:
        store.delete_dataset(info.id)
    assert dump(store) == before


@settings(FAST, max_examples=40)
@given(data=st.binary(min_size=0, max_size=2000))
def test_random_bytes(seeded_home: Path, data: bytes) -> None:
    check_outcome(seeded_home, "random.bin", data, META)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.sampled_from(KNOWN_KEYS) | st.text(max_size=6), children, max_size=6),
    max_leaves=25,
)


@settings(FAST, max_examples=60)
@given(doc=json_values, jsonl=st.booleans())
def test_random_json(seeded_home: Path, doc: object, jsonl: bool) -> None:
    if jsonl and isinstance(doc, list):
        text = "\n".join(json.dumps(d) for d in doc)
    else:
        text = json.dumps(doc)
    check_outcome(seeded_home, "random.json", text.encode(), META)


def _shared_files() -> list[Path]:
    return [p for p in _files() if p.stat().st_size > 0]


@pytest.mark.parametrize("path", _shared_files(), ids=_rel)
def test_truncated_real_files(seeded_home: Path, path: Path) -> None:
    """Real files cut at several points (mid-record, mid-number, mid-UTF-8)."""
    data = path.read_bytes()
    meta = meta_for(_rel(path))
    for frac in (0.03, 0.31, 0.5, 0.77, 0.999):
        cut = max(1, int(len(data) * frac))
        check_outcome(seeded_home, path.name, data[:cut], meta)


@settings(FAST, max_examples=10)
@given(cut=st.integers(1, 10_000), junk=st.binary(min_size=1, max_size=40))
def test_truncated_and_spliced_all_results(seeded_home: Path, all_results_csv: Path, cut: int, junk: bytes) -> None:
    data = all_results_csv.read_bytes()
    check_outcome(seeded_home, "All_results.csv", data[:cut] + junk + data[cut:cut + 3000])


# --- canonical tables with wrong values: row issues, never a crash
BAD_CELLS = [
    ("e2e_latency_s", "abc", "expected a number"),
    ("e2e_latency_s", "-1", ">= 0"),
    ("e2e_latency_s", "1e308", "longer than a day"),
    ("output_throughput_tok_s", "nan", "throughput"),
    ("output_throughput_tok_s", "-inf", "positive finite"),
    ("batch_size", "0", "not > 0"),
    ("device_count", "2.5", "whole number"),
    ("load_kind", "burst", "not one of"),
    ("input_len_tok", "inf", "finite length"),
    ("timestamp", "yesterday", "date/time"),
]


@pytest.mark.parametrize("column, value, expected", BAD_CELLS, ids=[f"{c}={v}" for c, v, _ in BAD_CELLS])
def test_wrong_values_become_row_issues(tmp_path: Path, column: str, value: str, expected: str) -> None:
    src = write_canonical_csv(tmp_path / "t.csv", 6, seed=3)
    df = pd.read_csv(src, dtype=str, keep_default_na=False)
    df.loc[2, column] = value
    df.loc[2, "total_throughput_tok_s"] = ""
    if column == "output_throughput_tok_s":
        df.loc[2, "request_throughput_rps"] = ""
    df.to_csv(src, index=False)
    store = Store(tmp_path / "h")
    info, results = import_files([src], store=store)
    issues = store.issues(info.id)
    hits = issues[issues["message"].str.contains(expected, regex=False)]
    assert len(hits) >= 1, issues.to_dict("records")
    row = df.loc[2, "source_row"]
    assert str(hits["row"].iloc[0]) == row and hits["file"].iloc[0] == "t.csv"
    if column != "timestamp":  # an unparseable time is reported and left empty; the row stays
        assert info.n_runs == 5
        assert row not in store.runs(info.id)["source_row"].astype(str).tolist()


def test_one_row_csv(tmp_path: Path) -> None:
    src = write_canonical_csv(tmp_path / "one.csv", 1, seed=4)
    info, _ = import_files([src], store=Store(tmp_path / "h"))
    assert info.n_runs == 1
    header_only = tmp_path / "header.csv"
    header_only.write_text(src.read_text().splitlines()[0] + "\n")
    with pytest.raises(ImportFormatError, match="header.csv"):
        import_files([header_only], store=Store(tmp_path / "h"))


def test_all_rows_invalid_is_one_clear_error(tmp_path: Path) -> None:
    src = write_canonical_csv(tmp_path / "bad.csv", 5, seed=5)
    df = pd.read_csv(src, dtype=str, keep_default_na=False)
    df["output_len_tok"] = "-3"
    df.to_csv(src, index=False)
    store = Store(tmp_path / "h")
    before = dump(store)
    with pytest.raises(ImportFormatError, match=r"bad\.csv.*no valid measurement.*output_len_tok"):
        import_files([src], store=store)
    assert dump(store) == before


@pytest.mark.slow
def test_200_mb_files_fail_fast_and_clearly(tmp_path: Path, seeded_home: Path) -> None:
    """200 MB of unrecognised text and 200 MB of binary: a clear error from the sniffed head,
    quickly, without touching the store."""
    mb = 1 << 20
    text = tmp_path / "huge.log"
    line = b"2024-01-01 12:00:00 INFO worker heartbeat ok, nothing to see here\n"
    with open(text, "wb") as fh:
        block = line * (mb // len(line) + 1)
        for _ in range(200):
            fh.write(block[:mb])
    binary = tmp_path / "huge.bin"
    with open(binary, "wb") as fh:
        for i in range(200):
            fh.write(bytes([i % 256]) * mb)
    store = Store(seeded_home)
    before = dump(store)
    for path, expected in ((text, "not a recognised benchmark result file"), (binary, "binary data")):
        assert path.stat().st_size >= 200 * mb
        t0 = time.perf_counter()
        with pytest.raises(ImportFormatError, match=expected) as ei:
            import_files([path], meta=META, store=store)
        assert path.name in str(ei.value)
        assert time.perf_counter() - t0 < 30
    assert dump(store) == before


def test_edited_sweep_export_drops_every_row_with_an_error(tmp_path: Path) -> None:
    """A re-imported `perfmodel export` of a sweep (source_row empty: a sweep has no source file)
    with three cells edited: those rows are dropped with issues naming file, row and column, the
    others stored. Regression: the problems were reported but all 6 rows were stored (batch -3,
    input length NaN, load_kind 'sometimes'), as the rows were dropped by source_row."""
    src = write_canonical_csv(tmp_path / "edited.csv", 6, seed=3)
    df = pd.read_csv(src, dtype=str, keep_default_na=False)
    df["source_row"] = ""
    df.loc[2, "batch_size"] = "-3"
    df.loc[3, "input_len_tok"] = "lots"
    df.loc[4, "load_kind"] = "sometimes"
    df.to_csv(src, index=False)
    store = Store(tmp_path / "h")
    info, (res,) = import_files([src], store=store)
    errors = {(i.file, i.row, i.column) for i in res.issues if i.severity == "error"}
    assert errors == {("edited.csv", 3, "batch_size"), ("edited.csv", 4, "input_len_tok"),
                      ("edited.csv", 5, "load_kind")}
    assert info.n_runs == 3 and res.n_dropped == 3
    runs = store.runs(info.id)
    assert (runs["batch_size"] > 0).all() and runs["input_len_tok"].notna().all()
    assert set(runs["load_kind"]) == {"static_batch"}
    assert runs["source_row"].isna().all()  # provenance kept as exported


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_merged_export_drops_only_the_bad_row(tmp_path: Path, suffix: str) -> None:
    """An export of a dataset merged from two files repeats source_row (1, 2, 3, 1, 2, 3): a bad
    cell drops only its own row, named by its row in the file being imported, and the kept rows
    keep their provenance. Regression: both rows with source_row 2 were dropped as 'row 2'."""
    df = pd.read_csv(write_canonical_csv(tmp_path / "w.csv", 6, seed=8))
    df["source_row"] = [1, 2, 3, 1, 2, 3]
    df.loc[4, "batch_size"] = -3.0
    src = tmp_path / f"merged{suffix}"
    df.to_csv(src, index=False) if suffix == ".csv" else df.to_parquet(src, index=False)
    info, (res,) = import_files([src], store=Store(tmp_path / "h"))
    assert [(i.row, i.column) for i in res.issues if i.severity == "error"] == [(5, "batch_size")]
    assert info.n_runs == 5
    assert res.runs["source_row"].tolist() == [1, 2, 3, 1, 3]


def test_edited_export_with_a_bad_source_row_drops_that_row(tmp_path: Path) -> None:
    """source_row is provenance in a canonical file, but still a whole number: a bad one is an
    error of its row (named by position), like any other cell."""
    src = write_canonical_csv(tmp_path / "sr.csv", 4, seed=6)
    df = pd.read_csv(src, dtype=str, keep_default_na=False)
    df.loc[1, "source_row"] = "2.5"
    df.to_csv(src, index=False)
    info, (res,) = import_files([src], store=Store(tmp_path / "h"))
    assert [(i.row, i.column) for i in res.issues if i.severity == "error"] == [(2, "source_row")]
    assert info.n_runs == 3 and res.runs["source_row"].tolist() == [1, 3, 4]


def test_notes_that_describe_a_format_are_not_read_as_it(tmp_path: Path) -> None:
    # The shared format notes (SOURCES.md) quote vLLM's result banner and trtllm-bench's section names in prose:
    # the file was read as a vLLM console log, before that as a trtllm-bench report.
    from perfmodel.importers import read_file

    notes = tmp_path / "NOTES.md"
    notes.write_text("- Structure: free text. The `============ Serving Benchmark Result ============` block has "
                     "lines `Label:  value`.\n- trtllm-bench stdout report: sections `PERFORMANCE OVERVIEW` "
                     "(Token Throughput (tokens/sec), Request Throughput (req/sec)).\n")
    with pytest.raises(ImportFormatError, match="NOTES.md: not a recognised benchmark result file"):
        read_file(notes)
