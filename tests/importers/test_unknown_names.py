"""Names the catalog does not know, written in a file: the user's --model/--hardware is read for them,
and without one only the rows naming them are left out (real files, real catalog).

Regression: one unknown name blocked the whole import ("unknown model ...; --model only fills rows
that name no model"), and --model could not say what the file's name meant.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from perfmodel import catalog
from perfmodel.errors import UnknownNameError
from perfmodel.importers import ImportMeta, read_file

UNKNOWN = "acme/Unheard-Of-7B"


def _with_unknown_model(src: Path, dst: Path, rows: list[int], n: int = 40) -> pd.DataFrame:
    """The first ``n`` rows of ``src`` with the model of data rows ``rows`` (1-based) renamed."""
    df = pd.read_csv(src).head(n)
    df.loc[[r - 1 for r in rows], "Model"] = UNKNOWN
    df.to_csv(dst, index=False)
    return df


def test_unknown_model_rows_are_row_errors(all_results_csv: Path, tmp_path: Path) -> None:
    f = tmp_path / "some_unknown.csv"
    df = _with_unknown_model(all_results_csv, f, [3, 7])
    with pytest.raises(UnknownNameError):
        catalog.resolve_model(UNKNOWN)
    res = read_file(f)
    assert len(res.runs) == len(df) - 2 and {3, 7}.isdisjoint(set(res.runs["source_row"]))
    errors = [i for i in res.issues if i.severity == "error"]
    assert [(i.file, i.row, i.column) for i in errors] == [(f.name, 3, "model"), (f.name, 7, "model")]
    assert f"unknown model {UNKNOWN!r}" in errors[0].message and "--model" in errors[0].message
    assert res.n_dropped == 2


def test_supplied_model_is_read_for_unknown_names(all_results_csv: Path, tmp_path: Path) -> None:
    f = tmp_path / "some_unknown.csv"
    df = _with_unknown_model(all_results_csv, f, [3, 7])
    res = read_file(f, meta=ImportMeta(model="meta-llama/Llama-2-7b-hf"))
    assert len(res.runs) == len(df) and not [i for i in res.issues if i.severity == "error"]
    runs = res.runs.set_index("source_row")
    want = catalog.resolve_model("meta-llama/Llama-2-7b-hf").key
    assert runs.loc[3, "model"] == want and runs.loc[3, "model_raw"] == UNKNOWN
    # Rows whose name the catalog knows keep it: --model does not collapse a multi-model file.
    assert runs.loc[1, "model"] == catalog.resolve_model(df["Model"].iloc[0]).key
    warned = {i.message.split(" row(s)")[0]: i for i in res.issues if i.column == "model" and i.severity != "info"}
    assert set(warned) == {"2 of 40", "--model 'meta-llama/Llama-2-7b-hf' not applied to 38 of 40"}
    read_as = warned["2 of 40"]
    assert read_as.severity == "warning" and read_as.row == 3 and "the catalog does not know" in read_as.message
    assert "read as --model 'meta-llama/Llama-2-7b-hf'" in read_as.message


def test_llmperf_endpoint_name_with_model_supplied(formats_dir: Path, tmp_path: Path) -> None:
    """A hosted endpoint's own model name: --model says what it is."""
    summ = json.loads((formats_dir / "llmperf" / "llmperf-leaderboard__groq_70b_summary.json").read_text())
    summ["model"] = "my-private-endpoint"
    f = tmp_path / "endpoint_summary.json"
    f.write_text(json.dumps(summ))
    with pytest.raises(UnknownNameError, match=r"unknown model 'my-private-endpoint'.*pass --model NAME"):
        read_file(f, meta=ImportMeta(hardware="A100-80GB"))
    res = read_file(f, meta=ImportMeta(hardware="A100-80GB", model="meta-llama/Llama-2-70b-chat-hf"))
    r = res.runs.iloc[0]
    assert r["model"] == catalog.resolve_model("meta-llama/Llama-2-70b-chat-hf").key
    assert r["model_raw"] == "my-private-endpoint"
    assert any(i.column == "model" and i.severity == "warning" and "my-private-endpoint" in i.message
               for i in res.issues)
