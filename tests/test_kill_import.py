"""SIGKILL during `perfmodel import`: the store stays consistent, the dataset is all or nothing.

Uses the documented test hook ``PERFMODEL_TEST_PAUSE_BEFORE_COMMIT`` (perfmodel/store.py)
to kill the process after every row is inserted but before the commit, and a
second, hook-free kill while the WAL file is growing.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_store import write_canonical_csv

from perfmodel.store import PAUSE_ENV, Store

N_ROWS = 30_000

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def big_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_canonical_csv(tmp_path_factory.mktemp("big") / "big.csv", N_ROWS, seed=42)


def _start(home: Path, src: Path, env_extra: dict[str, str]) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != PAUSE_ENV}
    env.update({"PERFMODEL_HOME": str(home), **env_extra})
    return subprocess.Popen([sys.executable, "-m", "perfmodel", "import", str(src)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _check_consistent(home: Path) -> list[int]:
    con = sqlite3.connect(home / "perfmodel.sqlite")
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        counts = con.execute("SELECT d.n_runs, (SELECT count(*) FROM runs r WHERE r.dataset_id = d.id) "
                             "FROM datasets d").fetchall()
        orphans = con.execute("SELECT count(*) FROM runs WHERE dataset_id NOT IN (SELECT id FROM datasets)")
        assert orphans.fetchone()[0] == 0
    finally:
        con.close()
    for declared, stored in counts:
        assert declared == stored
    return [c[1] for c in counts]


def test_kill_before_commit_leaves_nothing(tmp_path: Path, big_csv: Path) -> None:
    home = tmp_path / "home"
    proc = _start(home, big_csv, {PAUSE_ENV: "60"})
    assert proc.stderr is not None
    deadline = time.time() + 50
    line = ""
    while time.time() < deadline:
        line = proc.stderr.readline()
        if PAUSE_ENV in line or not line:
            break
    assert PAUSE_ENV in line, f"never reached the commit: {line!r} (rc={proc.poll()})"
    wal = home / "perfmodel.sqlite-wal"
    assert wal.exists() and wal.stat().st_size > 1_000_000  # the rows were written, uncommitted
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert _check_consistent(home) == []
    assert Store(home).datasets() == []
    # The store is usable after the crash: the same import now completes in full.
    res = subprocess.run([sys.executable, "-m", "perfmodel", "--home", str(home), "import", str(big_csv)],
                         capture_output=True, text=True, timeout=60,
                         env={k: v for k, v in os.environ.items() if k != PAUSE_ENV})
    assert res.returncode == 0, res.stderr
    assert _check_consistent(home) == [N_ROWS]


def test_kill_while_inserting_is_all_or_nothing(tmp_path: Path, big_csv: Path) -> None:
    home = tmp_path / "home"
    Store(home)
    wal = home / "perfmodel.sqlite-wal"
    base = wal.stat().st_size if wal.exists() else 0
    proc = _start(home, big_csv, {})
    deadline = time.time() + 50
    while time.time() < deadline and proc.poll() is None:
        if wal.exists() and wal.stat().st_size > base + 2_000_000:
            break
        time.sleep(0.01)
    alive = proc.poll() is None
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert alive, "the import finished before the WAL grew: nothing was killed mid-insert"
    assert _check_consistent(home) in ([], [N_ROWS])
