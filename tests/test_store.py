"""The SQLite store: exact round trips, content addressing, names, atomicity, WAL readers."""

from __future__ import annotations

import math
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pandas.testing import assert_frame_equal

from perfmodel.errors import NotFoundError, StoreError
from perfmodel.importers.base import ImportMeta, ImportResult, Issue
from perfmodel.schema import COLUMN_NAMES, coerce_runs
from perfmodel.store import SCHEMA_VERSION, Store, content_id

REPO = Path(__file__).resolve().parents[1]


def make_runs(n: int, seed: int = 0, *, extras: bool = True) -> pd.DataFrame:
    """A valid canonical runs table of ``n`` rows with awkward values (NaN, inf,
    tiny/huge floats, NA strings and ints, ns timestamps, sparse extras)."""
    rng = np.random.default_rng(seed)
    b = rng.integers(1, 257, n).astype(float)
    lat = rng.random(n) * 10 + 1e-3
    raw = {
        "hardware": rng.choice(["h100-sxm", "a100-80gb"], n),
        "hardware_raw": rng.choice(["NVIDIA H100", "A100 80GB", None], n),
        "device_count": rng.integers(1, 9, n),
        "tp_size": pd.array(np.where(rng.random(n) < 0.3, None, rng.integers(1, 9, n)), dtype="Int64"),
        "framework": rng.choice(["vllm", "sglang"], n),
        "framework_version": rng.choice(["0.10", "0.5.0", None], n),
        "model": rng.choice(["llama-3-8b", "mistral-7b"], n),
        "input_len_tok": rng.integers(1, 4096, n).astype(float),
        "output_len_tok": rng.integers(1, 4096, n).astype(float),
        "load_kind": "static_batch",
        "batch_size": b,
        "request_rate_rps": np.where(rng.random(n) < 0.5, np.inf, rng.random(n) * 100 + 1e-300),
        "output_throughput_tok_s": rng.random(n) * 1e4 + 1e-9,
        "total_throughput_tok_s": np.where(rng.random(n) < 0.2, np.nan, rng.random(n) * 1e5 + 1.0),
        "throughput_basis": "output",
        "e2e_latency_s": lat,
        "ttft_s": lat * rng.random(n),
        "repeat_idx": rng.integers(0, 3, n),
        "timestamp": pd.to_datetime(rng.integers(1.6e18, 1.8e18, n), utc=True).where(rng.random(n) < 0.8),
        "source_format": "synthetic",
        "source_file": "synth.csv",
        "source_row": np.arange(1, n + 1),
    }
    if extras:
        raw["fw_kv_cache_usage"] = np.where(rng.random(n) < 0.5, np.nan, rng.random(n))
        raw["hw_power_w"] = rng.random(n) * 700
        raw["fw_always_empty"] = np.nan
    df, problems = coerce_runs(pd.DataFrame(raw))
    assert not problems, problems
    return df


def make_result(n: int, seed: int = 0, *, file: str = "synth.csv", extras: bool = True,
                issues: tuple[Issue, ...] = ()) -> ImportResult:
    runs = make_runs(n, seed, extras=extras)
    return ImportResult(runs=runs, issues=issues, format="synthetic", file=file,
                        sha256=f"{seed:064x}", provenance={"client_version": "1.2", "n": np.int64(n)})


def dump(store: Store) -> dict[str, list[tuple]]:
    """Every table's rows, for 'nothing changed' comparisons."""
    con = sqlite3.connect(store.path)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        return {t: con.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in tables}
    finally:
        con.close()


def test_round_trip_is_exact(tmp_path: Path) -> None:
    store = Store(tmp_path)
    res = make_result(500, seed=1)
    info = store.add_dataset([res], meta=ImportMeta(hardware="h100-sxm"))
    assert info.n_runs == 500 and info.name == "synth" and len(info.id) == 16
    back = store.runs(info.id)
    assert_frame_equal(back, res.runs, check_exact=True)
    # Bit-exact floats, including inf and 1e-300-scale values.
    for c in ("request_rate_rps", "output_throughput_tok_s", "e2e_latency_s", "fw_kv_cache_usage"):
        a, b = back[c].to_numpy(), res.runs[c].to_numpy()
        assert np.array_equal(a.view(np.int64)[~np.isnan(a)], b.view(np.int64)[~np.isnan(b)])
    assert back["timestamp"].dtype == "datetime64[ns, UTC]"
    assert list(back.columns[-3:]) == ["fw_kv_cache_usage", "hw_power_w", "fw_always_empty"]
    assert back["fw_always_empty"].isna().all()
    assert info.provenance["files"][0]["n"] == 500
    assert info.provenance["meta"] == {"hardware": "h100-sxm"}


def test_nanosecond_timestamp_and_empty_optional_columns(tmp_path: Path) -> None:
    store = Store(tmp_path)
    res = make_result(3, seed=2, extras=False)
    res.runs.loc[0, "timestamp"] = pd.Timestamp("2024-05-06T07:08:09.123456789Z")
    info = store.add_dataset([res])
    back = store.runs(info.id)
    assert back.loc[0, "timestamp"] == pd.Timestamp("2024-05-06T07:08:09.123456789Z")
    assert back["pp_size"].isna().all() and back["pp_size"].dtype == "Int64"
    assert list(back.columns) == list(COLUMN_NAMES)


def test_multi_file_dataset_keeps_order_and_unions_extras(tmp_path: Path) -> None:
    store = Store(tmp_path)
    a = make_result(10, seed=3, file="a.csv")
    b = make_result(7, seed=4, file="b.csv", extras=False)
    info = store.add_dataset([a, b], name="both")
    assert info.files == ("a.csv", "b.csv") and info.n_runs == 17
    back = store.runs("both")
    expected = pd.concat([a.runs, b.runs], ignore_index=True)
    assert_frame_equal(back, expected[back.columns], check_exact=True)


def test_an_unnamed_dataset_of_several_files_says_how_many_more_it_holds(tmp_path: Path) -> None:
    # Ten sample files imported at once had been named after the first alone.
    store = Store(tmp_path)
    files = [make_result(3, seed=s, file=f"run{s}.csv") for s in range(3)]
    assert store.add_dataset(files).name == "run0 + 2 more files"
    assert store.add_dataset(files[1:]).name == "run1 + 1 more file"
    assert store.add_dataset(files[2:]).name == "run2"


def test_same_content_returns_existing(tmp_path: Path) -> None:
    store = Store(tmp_path)
    res = make_result(20, seed=5)
    first = store.add_dataset([res], name="x")
    before = store.runs(first.id)
    assert store.add_dataset([res]) == first  # no name given: unchanged
    # The same content under a name given now takes it (the name had gone unused); nothing else changes.
    again = store.add_dataset([res], name="other name")
    assert again.id == first.id and again.name == "other name" and again.n_runs == first.n_runs
    assert [d.name for d in store.datasets()] == ["other name"]
    pd.testing.assert_frame_equal(store.runs(first.id), before)
    # Different metadata is different content.
    third = store.add_dataset([res], meta=ImportMeta(model="llama-3-8b"))
    assert third.id != first.id and third.name == "synth"
    # a name another dataset has is not taken from it
    assert store.add_dataset([res], name="synth").name == "other name"
    assert content_id([res], None) == first.id


def test_names_are_unique(tmp_path: Path) -> None:
    store = Store(tmp_path)
    names = [store.add_dataset([make_result(2, seed=s)]).name for s in range(3)]
    assert names == ["synth", "synth (2)", "synth (3)"]
    with pytest.raises(StoreError, match="already exists"):
        store.rename_dataset("synth (2)", "synth")
    with pytest.raises(StoreError, match="empty"):
        store.rename_dataset("synth", "  ")
    info = store.rename_dataset("synth (3)", "renamed")
    assert store.dataset("renamed") == info


def test_lookup_by_prefix_and_not_found_lists_names(tmp_path: Path) -> None:
    store = Store(tmp_path)
    info = store.add_dataset([make_result(2, seed=6)], name="alpha")
    assert store.dataset(info.id[:4]) == info
    assert store.dataset(info.id.upper()[:6]) == info
    with pytest.raises(NotFoundError, match="'alpha'") as ei:
        store.dataset("nope")
    assert "known datasets" in str(ei.value)
    with pytest.raises(NotFoundError):
        store.dataset(info.id[:3])  # too short to be a prefix
    with pytest.raises(NotFoundError, match="store is empty"):
        Store(tmp_path / "other").runs("x")


def test_issues_and_delete(tmp_path: Path) -> None:
    store = Store(tmp_path)
    iss = (Issue("synth.csv", 3, "ttft_s", "latency -1 is not >= 0", "error"),
           Issue("synth.csv", None, "framework", "assumed", "warning"))
    info = store.add_dataset([make_result(5, seed=7, issues=iss)])
    issues = store.issues(info.id)
    assert list(issues.columns) == ["file", "row", "column", "message", "severity"]
    assert issues["row"].tolist()[0] == 3 and pd.isna(issues["row"].tolist()[1])
    assert issues["severity"].tolist() == ["error", "warning"] and info.n_issues == 2
    empty_before = dump(Store(tmp_path / "fresh"))
    store.delete_dataset(info.name)
    assert store.datasets() == []
    assert dump(store) == {k: [] for k in empty_before}
    with pytest.raises(NotFoundError):
        store.delete_dataset(info.id)


def test_failed_insert_rolls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store(tmp_path)
    store.add_dataset([make_result(5, seed=8)], name="keep")
    before = dump(store)

    def boom(*args: object, **kwargs: object) -> None:
        raise sqlite3.OperationalError("disk I/O error (simulated)")

    monkeypatch.setattr(Store, "_insert_runs", staticmethod(boom))
    with pytest.raises(StoreError, match="nothing was changed"):
        store.add_dataset([make_result(5, seed=9)])
    assert dump(store) == before


def test_schema_version_and_bad_files(tmp_path: Path) -> None:
    store = Store(tmp_path)
    con = sqlite3.connect(store.path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"datasets", "runs", "extras", "issues", "models", "analyses"} <= tables
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.close()
    with pytest.raises(StoreError, match="newer|upgrade"):
        Store(tmp_path)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "perfmodel.sqlite").write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="perfmodel.sqlite"):
        Store(bad)


def test_default_home_is_perfmodel_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERFMODEL_HOME", str(tmp_path / "h"))
    assert Store().path == tmp_path / "h" / "perfmodel.sqlite"
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("PERFMODEL_HOME", str(tmp_path / "file" / "sub"))
    with pytest.raises(StoreError, match="cannot create the data directory"):
        Store()


_READER = r"""
import sys, time
from perfmodel.store import Store
deadline = time.time() + float(sys.argv[2])
states = {}
slowest_open_s = 0.0
while time.time() < deadline:
    names = []
    t0 = time.time()
    store = Store(sys.argv[1])  # opening the store and listing must not wait for the writer
    infos = store.datasets()
    slowest_open_s = max(slowest_open_s, time.time() - t0)
    for info in infos:
        n = len(store.runs(info.id))
        assert n == info.n_runs, (info.name, n, info.n_runs)
        names.append(info.name)
    key = ",".join(sorted(names))
    if not states:
        print("ready", flush=True)
    states[key] = states.get(key, 0) + 1
    if "new" in names:
        break
print(" ".join(sorted(states)), flush=True)
print(slowest_open_s, flush=True)
"""


@pytest.mark.slow
def test_wal_reader_never_sees_half_a_dataset(tmp_path: Path) -> None:
    """A reader process polling while another process writes sees the old list, then the new one,
    and every dataset it lists has all its rows."""
    store = Store(tmp_path)
    store.add_dataset([make_result(50, seed=10)], name="old")
    reader = subprocess.Popen([sys.executable, "-c", _READER, str(tmp_path), "50"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert reader.stdout is not None
    assert reader.stdout.readline().strip() == "ready"
    writer_code = (
        "import sys; sys.path.insert(0, sys.argv[2]);"
        "from test_store import make_result; from perfmodel.store import Store;"
        "Store(sys.argv[1]).add_dataset([make_result(20000, seed=11)], name='new')"
    )
    env = {**os.environ, "PERFMODEL_TEST_PAUSE_BEFORE_COMMIT": "3"}
    writer = subprocess.run([sys.executable, "-c", writer_code, str(tmp_path), str(REPO / "tests")],
                            capture_output=True, text=True, env=env, timeout=60)
    assert writer.returncode == 0, writer.stderr
    assert "pausing" in writer.stderr
    out, err = reader.communicate(timeout=60)
    assert reader.returncode == 0, err
    states, slowest_open_s = out.strip().splitlines()
    # Two states only: before (old) and after (new,old).
    assert states.split() == ["new,old", "old"]
    # The writer held its transaction open for 3 s; the reader never waited for it.
    assert float(slowest_open_s) < 2.0
    assert store.dataset("new").n_runs == 20000


def test_inf_and_nan_are_distinct(tmp_path: Path) -> None:
    store = Store(tmp_path)
    res = make_result(4, seed=12)
    res.runs.loc[0, "request_rate_rps"] = math.inf
    res.runs.loc[1, "request_rate_rps"] = np.nan
    back = store.runs(store.add_dataset([res]).id)
    assert back.loc[0, "request_rate_rps"] == math.inf and np.isnan(back.loc[1, "request_rate_rps"])


HARDWARE_NAMES = ("H100-80GB-SXM", "A100-80GB")
MODEL_NAMES = ("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-2-70b-chat-hf")


def write_canonical_csv(path: Path, n: int, seed: int = 0) -> Path:
    """A canonical CSV as a user (or an older export) would write it: catalog names
    as raw hardware/model, canonical column names, fw_/hw_ extras."""
    df = make_runs(n, seed)
    rng = np.random.default_rng(seed + 1000)
    df["hardware_raw"] = rng.choice(HARDWARE_NAMES, n)
    df["hardware"] = df["hardware_raw"]
    df["model_raw"] = rng.choice(MODEL_NAMES, n)
    df["model"] = df["model_raw"]
    df.to_csv(path, index=False)
    return path
