"""A row with an empty model or hardware cell is an error of that row; the other rows import (real files).

Regression: one empty cell failed the whole file ("row 3 has no model; supply it with --model"), though
every other row named its model. A file where no row names one is still refused as a whole, with the option.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from perfmodel.api import export_runs, import_files
from perfmodel.errors import ImportFormatError
from perfmodel.importers import ImportMeta, read_file
from perfmodel.store import Store

OFFLINE = ("vllm-offline-batch-csv", "neuralmagic-vllm-benchmarking__a100_model_benchmarking_results.csv", "model_id")
SERVER = ("vllm-server-qps-csv", "neuralmagic-vllm-benchmarking__4xA4000_server_benchmarking_results.csv")
A100 = ImportMeta(hardware="A100-80GB")


def _blanked(src: Path, dst: Path, column: str, rows: list[int]) -> pd.DataFrame:
    """``src`` with the cells of ``column`` in data rows ``rows`` (1-based) emptied, as written."""
    df = pd.read_csv(src, dtype=str, keep_default_na=False)
    df.loc[[r - 1 for r in rows], column] = ""
    df.to_csv(dst, index=False)
    return df


@pytest.mark.parametrize(("folder", "name", "column", "kind", "meta"), [
    (*OFFLINE, "model", A100),
    (*SERVER, "model_name", "model", None),
    (*SERVER, "gpu_type", "hardware", None),
])
def test_row_without_a_name_is_a_row_error(formats_dir: Path, tmp_path: Path, folder: str, name: str, column: str,
                                           kind: str, meta: ImportMeta | None) -> None:
    src = formats_dir / folder / name
    whole = read_file(src, meta=meta)
    f = tmp_path / name
    _blanked(src, f, column, [3, 7])
    res = read_file(f, meta=meta)
    assert len(res.runs) == len(whole.runs) - 2 and {3, 7}.isdisjoint(set(res.runs["source_row"]))
    errors = [i for i in res.issues if i.severity == "error"]
    assert [(i.file, i.row, i.column) for i in errors] == [(f.name, 3, kind), (f.name, 7, kind)]
    assert f"no {kind}" in errors[0].message and f"--{kind} NAME" in errors[0].message
    assert res.n_dropped == 2
    # The rows kept are the file's other rows, unchanged.
    kept = whole.runs[~whole.runs["source_row"].isin([3, 7])].reset_index(drop=True)
    assert res.runs[kind].tolist() == kept[kind].tolist()
    assert res.runs["source_row"].tolist() == kept["source_row"].tolist()


def test_supplied_name_fills_the_empty_rows(formats_dir: Path, tmp_path: Path) -> None:
    folder, name, column = OFFLINE
    src = formats_dir / folder / name
    f = tmp_path / name
    df = _blanked(src, f, column, [3, 7])
    res = read_file(f, meta=ImportMeta(hardware="A100-80GB", model=df[column].iloc[0]))
    assert len(res.runs) == len(df) and not [i for i in res.issues if i.severity == "error"]


@pytest.mark.parametrize(("column", "kind"), [("model_name", "model"), ("gpu_type", "hardware")])
def test_no_row_with_a_name_is_still_a_file_error(formats_dir: Path, tmp_path: Path, column: str, kind: str) -> None:
    folder, name = SERVER
    src = formats_dir / folder / name
    f = tmp_path / name
    n = len(pd.read_csv(src))
    _blanked(src, f, column, list(range(1, n + 1)))
    with pytest.raises(ImportFormatError, match=rf"does not say which {kind} it ran on; supply it with --{kind} NAME"):
        read_file(f)


def test_rows_without_hardware_or_model_leave_nothing(formats_dir: Path, tmp_path: Path) -> None:
    """Each row lacks one of the two: nothing imports, and the error names the rows, not 'no measurements'."""
    folder, name = SERVER
    src = formats_dir / folder / name
    df = pd.read_csv(src, dtype=str, keep_default_na=False)
    half = len(df) // 2
    df.loc[: half - 1, "gpu_type"] = ""
    df.loc[half:, "model_name"] = ""
    f = tmp_path / name
    df.to_csv(f, index=False)
    with pytest.raises(ImportFormatError, match=r"no valid measurement.*row 1, column 'hardware': no hardware"):
        read_file(f)


def test_canonical_reimport_names_the_row_by_its_position(formats_dir: Path, tmp_path: Path) -> None:
    """perfmodel's own export re-imported: the error names the row of this file, and the rows kept keep the
    source_row of the file they came from."""
    folder, name = SERVER
    store = Store(tmp_path / "home")
    info, _ = import_files([formats_dir / folder / name], store=store)
    out = export_runs(info.id, tmp_path / "export.csv", store=store)
    df = pd.read_csv(out, dtype=str, keep_default_na=False).iloc[::-1].reset_index(drop=True)  # rows reordered
    df.loc[4, ["model", "model_raw"]] = ""  # the 5th row of this file
    df.to_csv(out, index=False)
    res = read_file(out)
    errors = [i for i in res.issues if i.severity == "error"]
    assert [(i.row, i.column) for i in errors] == [(5, "model")]
    want = [int(v) for k, v in enumerate(df["source_row"]) if k != 4]
    assert res.runs["source_row"].tolist() == want


def test_llm_inference_bench_empty_cells(all_results_csv: Path, tmp_path: Path) -> None:
    """The LLM-Inference-Bench importer had dropped such rows itself, even with --model given to fill them,
    and a table naming no model was refused as not recording its hardware."""
    df = pd.read_csv(all_results_csv, dtype=str, keep_default_na=False).head(40)
    whole = read_file(_written(df, tmp_path / "whole.csv"))
    df.loc[[2, 6], "Model"] = ""
    df.loc[10, "Hardware"] = ""
    f = _written(df, tmp_path / "holes.csv")
    res = read_file(f)
    errors = sorted((i.row, i.column) for i in res.issues if i.severity == "error")
    assert errors == [(3, "model"), (7, "model"), (11, "hardware")]
    assert len(res.runs) == len(whole.runs) - 3
    filled = read_file(f, meta=ImportMeta(model=df["Model"].iloc[0], hardware=df["Hardware"].iloc[0]))
    assert len(filled.runs) == len(whole.runs) and not [i for i in filled.issues if i.severity == "error"]
    df["Model"] = ""
    with pytest.raises(ImportFormatError, match=r"does not say which model it ran on; supply it with --model NAME"):
        read_file(_written(df, tmp_path / "none.csv"))


def test_every_row_left_out_by_the_importer_says_why(all_results_csv: Path, tmp_path: Path) -> None:
    df = pd.read_csv(all_results_csv, dtype=str, keep_default_na=False).head(10)
    df["Batch Size"] = ""
    with pytest.raises(ImportFormatError, match=r"no valid measurement.*row 1, column 'Batch Size': missing value"):
        read_file(_written(df, tmp_path / "x.csv"))


def _written(df: pd.DataFrame, path: Path) -> Path:
    df.to_csv(path, index=False)
    return path
