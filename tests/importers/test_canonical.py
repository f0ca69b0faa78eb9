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
