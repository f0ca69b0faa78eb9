"""A store made before the arrival columns (schema v2) opens, loads and is upgraded; re-importing the same files
fills the arrival of the rows stored before."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from pandas.testing import assert_frame_equal

from perfmodel.importers import ImportMeta, read_file
from perfmodel.schema import COLUMN_NAMES
from perfmodel.store import ADDED_COLUMNS, SCHEMA_VERSION, Store

META = ImportMeta(hardware="T4", model="Qwen/Qwen3-0.6B", framework="vllm", device_count=2)
pytestmark = pytest.mark.usefixtures("stub_catalog")


def _guidellm_csv(formats_dir: Path) -> Path:
    return formats_dir / "guidellm-derived-csv" / "guidellm-pd-disaggregation__all-benchmarks.csv"


def _as_v2(store: Store) -> None:
    """Turn a store back into the layout of schema v2 (no arrival columns), keeping its rows."""
    con = sqlite3.connect(store.path)
    try:
        for c in ADDED_COLUMNS:
            con.execute(f'ALTER TABLE runs DROP COLUMN "{c}"')
        con.execute("PRAGMA user_version = 2")
        con.commit()
    finally:
        con.close()


def test_a_store_without_the_arrival_columns_is_upgraded_and_loads(tmp_path: Path, formats_dir: Path) -> None:
    res = read_file(_guidellm_csv(formats_dir), meta=META)
    info = Store(tmp_path).add_dataset([res], meta=META)
    _as_v2(Store(tmp_path))
    store = Store(tmp_path)  # opens the v2 store: migrates it
    con = sqlite3.connect(store.path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 3
    have = [r[1] for r in con.execute("PRAGMA table_info(runs)")]
    con.close()
    assert set(ADDED_COLUMNS) <= set(have)
    back = store.runs(info.id)
    assert list(back.columns) == list(COLUMN_NAMES)
    assert back["arrival"].dtype == "string" and back["arrival"].isna().all()
    assert back["burstiness"].dtype == "float64" and back["burstiness"].isna().all()
    assert_frame_equal(back.drop(columns=list(ADDED_COLUMNS)), res.runs.drop(columns=list(ADDED_COLUMNS)))
    # the same files again fill the stored rows (the same content id returns the stored dataset)
    again = store.add_dataset([read_file(_guidellm_csv(formats_dir), meta=META)], meta=META)
    assert again.id == info.id and len(store.datasets()) == 1
    filled = store.runs(info.id)
    assert_frame_equal(filled, res.runs)
    assert filled.loc[[2, 3], "arrival"].tolist() == ["constant", "poisson"]


def test_arrival_round_trips_and_a_fresh_store_has_it(tmp_path: Path, formats_dir: Path) -> None:
    res = read_file(_guidellm_csv(formats_dir), meta=META)
    store = Store(tmp_path)
    info = store.add_dataset([res])
    back = store.runs(info.id)
    assert_frame_equal(back, res.runs, check_exact=True)
    assert back["arrival"].value_counts().to_dict() == {"constant": 9, "poisson": 1}


def test_a_re_import_never_overwrites_a_stored_arrival_or_other_rows(tmp_path: Path, formats_dir: Path) -> None:
    res = read_file(_guidellm_csv(formats_dir), meta=META)
    store = Store(tmp_path)
    info = store.add_dataset([res])
    con = sqlite3.connect(store.path)
    con.execute("UPDATE runs SET arrival = 'trace', burstiness = NULL WHERE run_idx = 2")
    con.commit()
    con.close()
    store.add_dataset([res])
    back = store.runs(info.id)
    assert back.loc[2, "arrival"] == "trace" and back.loc[3, "arrival"] == "poisson"
    # rows that are not the same rows (fewer, here) are left as they are
    _as_v2(store)
    store = Store(tmp_path)
    short = type(res)(runs=res.runs.iloc[:-1], issues=res.issues, format=res.format, file=res.file,
                      sha256=res.sha256, provenance=res.provenance)
    store.add_dataset([short])
    kept = store.runs(info.id)
    assert kept["arrival"].isna().all() and kept["burstiness"].isna().all()
