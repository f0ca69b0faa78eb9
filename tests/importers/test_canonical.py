"""perfmodel's own export re-imported: what the user supplies fills only the cells the file
leaves empty (the row checks and their drops are in tests/test_bad_input.py)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from test_store import write_canonical_csv

from perfmodel.importers import ImportMeta, read_file


def test_supplied_batch_fills_only_empty_cells(tmp_path: Path) -> None:
    """Rows without a batch size take --batch-size; rows with one keep theirs, and the rows that
    disagree are reported once, by count and first row. Regression: every row was overwritten."""
    src = write_canonical_csv(tmp_path / "some_empty.csv", 5, seed=2)
    df = pd.read_csv(src, dtype=str, keep_default_na=False)
    df["batch_size"] = ["", "4", "", "16", "4"]
    df["framework_version"] = ""
    df.to_csv(src, index=False)
    res = read_file(src, meta=ImportMeta(batch_size=4, framework_version="0.6.1"))
    assert res.runs["batch_size"].tolist() == [4, 4, 4, 16, 4]
    assert set(res.runs["framework_version"]) == {"0.6.1"}
    warned = [i for i in res.issues if i.severity == "warning"]
    assert [(i.row, i.column) for i in warned] == [(4, "batch_size")]
    assert "--batch-size 4 not applied to 1 of 5 row(s)" in warned[0].message
    assert "says 16" in warned[0].message


def test_supplied_batch_is_not_put_on_request_rate_points(tmp_path: Path) -> None:
    """--load-kind says what --batch-size means: a row the file records as a request-rate point
    keeps its load kind and gets no batch size (a concurrency 4 label on a qps run would be false)."""
    src = write_canonical_csv(tmp_path / "rate.csv", 3, seed=5)
    df = pd.read_csv(src, dtype=str, keep_default_na=False)
    df["load_kind"] = ["request_rate", "concurrency", ""]
    df["batch_size"] = ["", "", ""]
    df.to_csv(src, index=False)
    res = read_file(src, meta=ImportMeta(batch_size=4, load_kind="concurrency"))
    assert res.runs["load_kind"].tolist() == ["request_rate", "concurrency", "concurrency"]
    assert res.runs["batch_size"].isna().tolist() == [True, False, False]
    msgs: dict[str | None, str] = {}
    for i in res.issues:
        if i.severity == "warning":
            msgs[i.column] = msgs.get(i.column, "") + " | " + i.message
    assert "--load-kind 'concurrency' not applied to 1 of 3 row(s)" in msgs["load_kind"]
    assert "records as 'request_rate' points (first: row 1)" in msgs["batch_size"]
    # that row has no request rate either: nothing can draw it, which the import says
    assert "1 of 3 run(s) record no batch size or concurrency and no finite request rate" in msgs["batch_size"]


def _export(all_results_csv: Path, tmp_path: Path, n: int = 10) -> tuple[Path, list[str]]:
    """The first ``n`` runs of the real All_results.csv, imported and written back as a canonical CSV."""
    src = tmp_path / "ten.csv"
    pd.read_csv(all_results_csv).head(n).to_csv(src, index=False)
    out = tmp_path / "export.csv"
    read_file(src).runs.to_csv(out, index=False)
    return out, out.read_text().splitlines(keepends=True)


def test_canonical_csv_cut_off_mid_row(all_results_csv: Path, tmp_path: Path) -> None:
    """A canonical CSV cut off mid-row: that row is an error, not stored with its cells empty (and its last
    value cut). Regression: it was stored silently."""
    out, lines = _export(all_results_csv, tmp_path)
    header = lines[0].rstrip("\n").split(",")
    f = tmp_path / "cut.csv"
    f.write_text("".join(lines[:-1]) + ",".join(lines[-1].split(",")[:25])[:-2])
    res = read_file(f)
    assert res.runs["source_row"].tolist() == list(range(1, 10))
    (err,) = [i for i in res.issues if i.severity == "error"]
    assert (err.file, err.row, err.column) == ("cut.csv", 10, header[25])
    assert f"expected {len(header)} fields, found 25" in err.message and repr(header[-1]) in err.message


def test_canonical_short_row_mid_file_keeps_row_names(all_results_csv: Path, tmp_path: Path) -> None:
    """Issues name rows by their position in the file, and the rows kept carry their first import's
    source_row; a row written short (ending with a line break) is kept, its missing cells empty, with a warning."""
    out, lines = _export(all_results_csv, tmp_path)
    header = lines[0].rstrip("\n").split(",")
    assert header[-1] == "source_row"
    lines[2] = ",".join(lines[2].split(",")[:30]) + "\n"  # position 2: short
    fields = lines[5].rstrip("\n").split(",")
    lines[5] = ",".join(fields[:-1] + ["x5"]) + "\n"  # position 5: a source_row that is not a number
    f = tmp_path / "mid.csv"
    f.write_text("".join(lines))
    res = read_file(f)
    errors = {i.row: i for i in res.issues if i.severity == "error"}
    warnings = {i.row: i for i in res.issues if i.severity == "warning"}
    assert set(errors) == {5} and set(warnings) == {2}
    assert warnings[2].column == header[30] and "found 30" in warnings[2].message
    assert warnings[2].message.endswith("; read as empty")
    assert errors[5].column == "source_row" and "'x5'" in errors[5].message
    rows = res.runs["source_row"]
    assert rows.isna().tolist() == [False, True, *[False] * 7]
    assert rows.dropna().tolist() == [1, 3, 4, 6, 7, 8, 9, 10]
