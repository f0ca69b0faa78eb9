"""The embedded store: datasets of canonical runs in one SQLite file.

The store lives in ``<home>/perfmodel.sqlite`` (``home`` defaults to
:func:`perfmodel.config.home_dir`). It runs in WAL mode so that readers (the app,
a second CLI) see either the state before or after an import, never half of it,
while one writer inserts.

Layout (schema version in ``PRAGMA user_version``, upgraded by :data:`_MIGRATIONS`):

``datasets``
    one row per dataset: content id, unique name, counts, files, formats,
    provenance JSON and the ordered list of extra (``fw_``/``hw_``) columns.
``runs``
    one typed column per canonical column (:data:`perfmodel.schema.COLUMNS`)
    plus ``dataset_id`` and ``run_idx`` (the row order); timestamps as ISO-8601
    text. Floats are SQLite REAL (IEEE float64), so values round-trip exactly
    (NaN is stored as NULL; ``-0.0`` comes back as ``0.0``, which SQLite cannot
    tell apart).
``extras``
    long table ``(dataset_id, run_idx, name, value)`` of the ``fw_``/``hw_``
    columns, only non-missing cells. Chosen over a JSON column because values
    stay typed REAL (exact, no text round trip) and a sparse set of framework
    metrics costs nothing on the rows that lack them. Measured on 100,000 rows x
    5 extras (2 shared cores): long table 1.6 s to write, 0.45 s to read; a JSON
    column 1.3 s to write, 0.9 s to read and parse.
``issues``
    the import issues of every file.
``models``, ``analyses``
    reserved (empty) for fitted models and saved analyses.
``sweeps`` (schema v2)
    one row per sweep: id, name, plan JSON, status (:data:`SWEEP_STATUSES`),
    the dataset it fills, created/updated times, the pid of the process
    running it and the error that ended it.
``sweep_points`` (schema v2)
    one row per planned point of a sweep: its stable key, plan order, status
    (``pending``/``done``/``failed``), attempts, the reason of the last
    failure and the ``run_idx`` of its row once done.

Schema v3 adds to ``runs`` the canonical columns an older store lacks (the arrival process of request-rate
runs, ``arrival`` and ``burstiness``); the rows stored before keep them empty, as an import without them would.

A sweep dataset is created empty (:meth:`Store.create_dataset`) and grows by
one point per transaction (:meth:`Store.record_point`): the row, the point's
status and the dataset's ``n_runs`` are committed together, so a crash loses
at most the point in flight and a resumed sweep neither loses nor repeats one.
Imported datasets stay content-addressed and immutable.

An import is one transaction (``BEGIN IMMEDIATE``): all of a dataset's rows,
its issues and its ``datasets`` row are committed together or not at all.

Test hook: when the environment variable ``PERFMODEL_TEST_PAUSE_BEFORE_COMMIT``
holds a number of seconds, :meth:`Store.add_dataset` prints
``PERFMODEL_TEST_PAUSE_BEFORE_COMMIT: pausing`` on stderr and sleeps that long
just before committing, so a test can kill the process mid-import.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .errors import NotFoundError, StoreError
from .importers.base import ImportMeta, ImportResult
from .schema import COLUMNS, empty_runs, is_extra_column

__all__ = ["DatasetInfo", "Store", "STORE_FILENAME", "SCHEMA_VERSION", "PAUSE_ENV", "content_id", "SweepInfo",
           "check_resumable", "ADDED_COLUMNS", "SWEEP_STATUSES", "POINT_STATUSES", "SWEEP_DATASET_KIND", "AnalysisInfo", "ANALYSIS_ID_BYTES"]

STORE_FILENAME = "perfmodel.sqlite"
PAUSE_ENV = "PERFMODEL_TEST_PAUSE_BEFORE_COMMIT"
# Long enough for an import by another process to finish; short enough that a
# stuck writer is reported instead of hanging the app.
BUSY_TIMEOUT_MS = 30_000
# Rows converted to Python objects per executemany call: bounds peak memory on
# million-row imports while keeping the per-call overhead negligible.
CHUNK_ROWS = 50_000
MIN_PREFIX = 4

_SQL_TYPE = {"str": "TEXT", "int": "INTEGER", "float": "REAL", "datetime": "TEXT"}
_CANON = [c.name for c in COLUMNS]
_KIND = {c.name: c.kind for c in COLUMNS}


def _q(name: str) -> str:
    """Quote an identifier (``model`` and ``timestamp`` are SQL words)."""
    return '"' + name.replace('"', '""') + '"'


def _migrate_v1(con: sqlite3.Connection) -> None:
    cols = ",\n  ".join(f"{_q(c.name)} {_SQL_TYPE[c.kind]}" for c in COLUMNS)
    # executescript() would COMMIT first; run the statements inside the caller's transaction.
    script = f"""
CREATE TABLE datasets (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  created_at TEXT NOT NULL,
  n_runs INTEGER NOT NULL,
  n_issues INTEGER NOT NULL,
  files TEXT NOT NULL,
  formats TEXT NOT NULL,
  provenance TEXT NOT NULL,
  extra_columns TEXT NOT NULL
);
CREATE TABLE runs (
  dataset_id TEXT NOT NULL,
  run_idx INTEGER NOT NULL,
  {cols},
  PRIMARY KEY (dataset_id, run_idx)
) WITHOUT ROWID;
CREATE TABLE extras (
  dataset_id TEXT NOT NULL,
  run_idx INTEGER NOT NULL,
  name TEXT NOT NULL,
  value REAL,
  PRIMARY KEY (dataset_id, run_idx, name)
) WITHOUT ROWID;
CREATE TABLE issues (
  dataset_id TEXT NOT NULL,
  idx INTEGER NOT NULL,
  file TEXT,
  "row" INTEGER,
  "column" TEXT,
  message TEXT NOT NULL,
  severity TEXT NOT NULL,
  PRIMARY KEY (dataset_id, idx)
) WITHOUT ROWID;
CREATE TABLE models (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  created_at TEXT NOT NULL,
  kind TEXT NOT NULL,
  payload TEXT NOT NULL
);
CREATE TABLE analyses (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  created_at TEXT NOT NULL,
  kind TEXT NOT NULL,
  payload TEXT NOT NULL
);
"""
    for statement in script.split(";"):
        if statement.strip():
            con.execute(statement)


def _migrate_v2(con: sqlite3.Connection) -> None:
    con.execute("""
CREATE TABLE sweeps (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  plan TEXT NOT NULL,
  status TEXT NOT NULL,
  dataset_id TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  pid INTEGER,
  error TEXT,
  backend TEXT
)""")
    con.execute("""
CREATE TABLE sweep_points (
  sweep_id TEXT NOT NULL,
  key TEXT NOT NULL,
  idx INTEGER NOT NULL,
  status TEXT NOT NULL,
  attempts INTEGER NOT NULL,
  error TEXT,
  run_idx INTEGER,
  updated_at TEXT,
  PRIMARY KEY (sweep_id, key)
) WITHOUT ROWID""")


def _migrate_v3(con: sqlite3.Connection) -> None:
    """Add the canonical columns a store made before them lacks (``arrival`` and ``burstiness``), empty
    for the rows already stored: they were imported when no importer read them, and re-importing the files
    fills them. A store created by this version has them from :func:`_migrate_v1`, which writes every column."""
    have = {row[1] for row in con.execute("PRAGMA table_info(runs)")}
    for c in COLUMNS:
        if c.name not in have:
            con.execute(f"ALTER TABLE runs ADD COLUMN {_q(c.name)} {_SQL_TYPE[c.kind]}")


#: Schema upgrades; entry ``i`` takes a store from version ``i`` to ``i + 1``.
#: Append a function to change the layout; never edit a released one.
_MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (_migrate_v1, _migrate_v2, _migrate_v3)
SCHEMA_VERSION = len(_MIGRATIONS)


@dataclass(frozen=True)
class DatasetInfo:
    """One stored dataset.

    Attributes
    ----------
    id
        Content address: 16 hex characters of SHA-256 over the sorted file
        digests (with their formats) and the import metadata JSON.
    name
        Unique human name.
    created_at
        ISO-8601 UTC time of the import.
    n_runs, n_issues
        Stored rows and import issues (all severities).
    files, formats
        Base names of the imported files and their format ids, in import order.
    provenance
        ``{"files": [per-file facts], "meta": supplied metadata, "perfmodel_version": ...}``.
    """

    id: str
    name: str
    created_at: str
    n_runs: int
    n_issues: int
    files: tuple[str, ...]
    formats: tuple[str, ...]
    provenance: Mapping[str, Any]


SWEEP_STATUSES = ("pending", "running", "done", "failed", "stopped")
"""Stored status of a sweep; a ``running`` sweep whose process is gone reads as ``interrupted``."""
POINT_STATUSES = ("pending", "done", "failed")
"""Status of one planned point of a sweep."""
SWEEP_DATASET_KIND = "sweep"
"""``provenance["kind"]`` of a dataset that a sweep fills (the only kind :meth:`Store.append_runs` grows)."""


ANALYSIS_ID_BYTES = 12
"""Random bytes of an analysis id (``secrets.token_urlsafe``: 16 URL-safe characters, 96 bits, unguessable).
Ids never start with ``-`` or ``_``: one beginning with ``-`` would read as an option on the command line."""


@dataclass(frozen=True)
class AnalysisInfo:
    """One saved analysis: a named snapshot of a page's state.

    Attributes
    ----------
    id
        Unguessable URL-safe id (the ``?analysis=ID`` of a link).
    name
        Human name (not necessarily unique).
    created_at
        ISO-8601 UTC time it was saved.
    kind
        Which page saved it (``planner``, ``curves``, ``data``, ``report``...).
    payload
        The state as a JSON object (what the page needs to restore it exactly).
    """

    id: str
    name: str
    created_at: str
    kind: str
    payload: Mapping[str, Any]


def _pid_alive(pid: int | None) -> bool:
    """Whether a process with this id runs on this machine (zombies count as gone)."""
    if not pid or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    try:
        # A killed child its parent has not reaped yet still answers kill(0).
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return True


@dataclass(frozen=True)
class SweepInfo:
    """One stored sweep.

    Attributes
    ----------
    id
        16 hex characters (random).
    name
        The dataset name it was started with.
    plan
        The plan as stored (JSON object; :func:`perfmodel.sweep.plan.plan_from_dict` reads it).
    status
        Stored status, one of :data:`SWEEP_STATUSES`.
    dataset_id
        The dataset its rows go to.
    created_at, updated_at
        ISO-8601 UTC times.
    pid
        Process running (or last running) it.
    error
        Why it failed or stopped early, else ``None``.
    backend
        Backend name.
    n_points, n_done, n_failed
        Planned, finished and failed points.
    alive
        Whether ``pid`` is a live process now.
    dataset_exists
        Whether its dataset is still stored (deleting it leaves the sweep with nowhere to add rows).
    """

    id: str
    name: str
    plan: Mapping[str, Any]
    status: str
    dataset_id: str
    created_at: str
    updated_at: str
    pid: int | None
    error: str | None
    backend: str | None
    n_points: int
    n_done: int
    n_failed: int
    alive: bool
    dataset_exists: bool = True

    @property
    def state(self) -> str:
        """The status a user should see: ``interrupted`` for a ``running`` sweep whose process is gone."""
        if self.status == "running" and not self.alive:
            return "interrupted"
        return self.status

    @property
    def n_remaining(self) -> int:
        """Points neither done nor failed."""
        return self.n_points - self.n_done - self.n_failed


def check_resumable(info: SweepInfo) -> None:
    """Refuse to run a sweep whose dataset was deleted: its rows would have nowhere to go.

    Parameters
    ----------
    info
        The sweep.

    Raises
    ------
    NotFoundError
        Its dataset is gone; the message says what to do instead.
    """
    if not info.dataset_exists:
        lost = f" with the {info.n_done} point(s) it had measured" if info.n_done else ""
        raise NotFoundError(f"sweep {info.id} ({info.name!r}) cannot resume: its dataset {info.dataset_id} was "
                            f"deleted{lost}. Start its plan again as a new sweep: `perfmodel sweep --again {info.id}`, or "
                            "Run again on the Sweeps page.")


def _known_datasets(ref: str, names: Sequence[str], n: int = 5) -> str:
    """The tail of a "no dataset" message: every name when there are few, else the closest few."""
    if not names:
        return "known datasets: none (the store is empty)"
    if len(names) <= n:
        return "known datasets: " + ", ".join(repr(x) for x in names)
    import difflib

    close = difflib.get_close_matches(ref, names, n=n, cutoff=0.5)
    if not close:  # a prefix of a long name scores low on the ratio
        close = [x for x in names if x.lower().startswith(ref.lower())][:n]
    if not close:
        return f"no close match among the {len(names)} known datasets (list them with `perfmodel datasets`)"
    return f"closest of the {len(names)} known datasets: " + ", ".join(repr(x) for x in close)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _free_name(con: sqlite3.Connection, base_name: str) -> str:
    # ``base_name``, or ``base_name (2)``, ``(3)``... when a dataset already has it.
    final_name = base_name
    k = 2
    while con.execute("SELECT 1 FROM datasets WHERE name = ?", (final_name,)).fetchone():
        final_name = f"{base_name} ({k})"
        k += 1
    return final_name


def _name_taken(con: sqlite3.Connection, name: str, other_than: str) -> str | None:
    # The id of another dataset (not ``other_than``) already named ``name``, or None.
    row = con.execute("SELECT id FROM datasets WHERE name = ? AND id != ?", (name, other_than)).fetchone()
    return None if row is None else str(row[0])


def _default_name(results: Sequence[ImportResult]) -> str:
    """The first file's stem, and how many more files went in: ten sample files imported at once had been
    named after the first alone."""
    files = list(dict.fromkeys(r.file for r in results))
    first = Path(files[0]).stem or "dataset"
    more = len(files) - 1
    return first if more == 0 else f"{first} + {more} more file{'s' if more > 1 else ''}"


def content_id(results: Sequence[ImportResult], meta: ImportMeta | None) -> str:
    """The content address of an import: same files + same metadata -> same id.

    Parameters
    ----------
    results
        The imported files.
    meta
        The metadata supplied with them.

    Returns
    -------
    str
        16 lower-case hex characters.
    """
    meta_json = _meta_dict(meta)
    digests = sorted(f"{r.sha256}:{r.format}" for r in results)
    material = json.dumps({"files": digests, "meta": meta_json}, sort_keys=True)
    return hashlib.sha256(material.encode()).hexdigest()[:16]


def _meta_dict(meta: ImportMeta | None) -> dict[str, Any]:
    if meta is None:
        return {}
    return meta.model_dump(mode="json", exclude_none=True)


def _json_default(o: Any) -> Any:
    # Provenance comes from many importers; anything JSON cannot hold is kept as text.
    if isinstance(o, np.generic):
        return o.item()
    return str(o)


def _py_floats(values: np.ndarray) -> list[Any]:
    # NaN binds as NULL in SQLite, so a plain float list is enough.
    return values.astype("float64", copy=False).tolist()


def _column_lists(df: pd.DataFrame, cols: Sequence[str]) -> list[list[Any]]:
    out: list[list[Any]] = []
    for name in cols:
        s = df[name]
        kind = _KIND.get(name, "float")
        if kind == "float":
            out.append(_py_floats(s.to_numpy(dtype="float64", na_value=np.nan)))
        elif kind == "datetime":
            ts = pd.to_datetime(s, utc=True).astype("datetime64[ns, UTC]")
            naive = ts.dt.tz_localize(None).to_numpy(dtype="datetime64[ns]")
            # numpy formats in C (pandas' str formatting is 20x slower on a million rows).
            text = np.char.add(np.datetime_as_string(naive, unit="ns"), "Z").astype(object)
            text[np.isnat(naive)] = None
            out.append(text.tolist())
        else:
            out.append(s.to_numpy(dtype=object, na_value=None).tolist())
    return out


ADDED_COLUMNS = ("arrival", "burstiness")
"""Canonical columns added after datasets had been stored (schema v3). A dataset stored before has them empty;
importing the same content again fills them in its stored rows (:meth:`Store.add_dataset`), where it is the same
rows in the same order and the stored cells are all empty (nothing a user could have relied on is changed)."""


def _backfill(con: sqlite3.Connection, ds_id: str, frames: Sequence[pd.DataFrame]) -> int:
    """Fill the :data:`ADDED_COLUMNS` of a dataset stored before them from a new import of the same content.

    Returns the number of rows updated (0 when the rows are not the same, by source file and row, or a column
    already holds a value)."""
    new = pd.concat([f.reindex(columns=["source_file", "source_row", *ADDED_COLUMNS]) for f in frames],
                    ignore_index=True)
    cols = [c for c in ADDED_COLUMNS if new[c].notna().any()]
    if not cols:
        return 0
    sel = ", ".join(_q(c) for c in ("source_file", "source_row", *cols))
    stored = con.execute(f"SELECT run_idx, {sel} FROM runs WHERE dataset_id = ? ORDER BY run_idx",
                         (ds_id,)).fetchall()
    if len(stored) != len(new) or any(v is not None for r in stored for v in r[3:]):
        return 0
    names = list(zip(*_column_lists(new, ["source_file", "source_row"]), strict=True))
    if any((r[1], r[2]) != k for r, k in zip(stored, names, strict=True)):
        return 0
    lists = _column_lists(new, cols)
    con.executemany(f"UPDATE runs SET {', '.join(_q(c) + ' = ?' for c in cols)} "
                    "WHERE dataset_id = ? AND run_idx = ?",
                    zip(*lists, [ds_id] * len(new), [r[0] for r in stored], strict=True))
    return len(new)


class Store:
    """The SQLite store of datasets.

    Parameters
    ----------
    home
        Data directory (created if missing); defaults to
        :func:`perfmodel.config.home_dir`. The database is ``home/perfmodel.sqlite``.

    Raises
    ------
    StoreError
        The file exists but is not a perfmodel store, or was written by a newer
        perfmodel (schema version too high).
    """

    def __init__(self, home: str | Path | None = None) -> None:
        if home is None:
            from .config import home_dir

            home_path = home_dir(create=False)
        else:
            home_path = Path(home).expanduser()
        try:
            home_path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the data directory {home_path}: {exc.strerror or exc}; "
                             "set PERFMODEL_HOME or pass --home") from exc
        self.path: Path = home_path / STORE_FILENAME
        self._init_schema()

    # ------------------------------------------------------------------ plumbing
    def _connect(self) -> sqlite3.Connection:
        try:
            con = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            con.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            con.execute("PRAGMA journal_mode = WAL")
            # NORMAL is safe in WAL mode: a crash loses at most the last commit, never consistency.
            con.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: cannot open the store ({exc}); is it a perfmodel.sqlite file? "
                             "Move it away to start a new store.") from exc
        return con

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        con = self._connect()
        try:
            # One read transaction: every query sees the same snapshot.
            con.execute("BEGIN")
            yield con
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: reading the store failed ({exc})") from exc
        finally:
            try:
                con.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            con.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        con = self._connect()
        try:
            try:
                con.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise StoreError(f"{self.path}: the store is busy or locked ({exc}); nothing was changed. "
                                 "Retry when the other import has finished.") from exc
            try:
                yield con
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: writing to the store failed ({exc}); nothing was changed") from exc
        finally:
            con.close()

    def _schema_version(self, con: sqlite3.Connection) -> int:
        # The store's schema version; newer than this perfmodel's is an error.
        version = con.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: the store has schema version {version}, this perfmodel knows up to "
                f"{SCHEMA_VERSION}; upgrade perfmodel or use another --home")
        return version

    def _init_schema(self) -> None:
        # Check the version without the write lock: opening a store must not wait
        # for another process's import to finish.
        with self._read() as con:
            version = self._schema_version(con)
        if version == SCHEMA_VERSION:
            return
        with self._write() as con:
            version = self._schema_version(con)
            for step in range(version, SCHEMA_VERSION):
                _MIGRATIONS[step](con)
            if version != SCHEMA_VERSION:
                con.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    # ------------------------------------------------------------------ datasets
    @staticmethod
    def _info(row: Sequence[Any]) -> DatasetInfo:
        return DatasetInfo(id=row[0], name=row[1], created_at=row[2], n_runs=int(row[3]), n_issues=int(row[4]),
                           files=tuple(json.loads(row[5])), formats=tuple(json.loads(row[6])),
                           provenance=json.loads(row[7]))

    _INFO_COLS = "id, name, created_at, n_runs, n_issues, files, formats, provenance"

    def datasets(self) -> list[DatasetInfo]:
        """Every stored dataset, oldest first.

        Returns
        -------
        list of DatasetInfo
        """
        with self._read() as con:
            rows = con.execute(f"SELECT {self._INFO_COLS} FROM datasets ORDER BY created_at, rowid").fetchall()
        return [self._info(r) for r in rows]

    def _resolve(self, con: sqlite3.Connection, ref: str) -> tuple[DatasetInfo, list[str]]:
        ref = str(ref).strip()
        sel = f"SELECT {self._INFO_COLS}, extra_columns FROM datasets"
        row = con.execute(f"{sel} WHERE id = ?", (ref,)).fetchone()
        if row is None:
            row = con.execute(f"{sel} WHERE name = ?", (ref,)).fetchone()
        if row is None and len(ref) >= MIN_PREFIX and all(ch in "0123456789abcdef" for ch in ref.lower()):
            hits = con.execute(f"{sel} WHERE id LIKE ? ESCAPE '\\'", (ref.lower() + "%",)).fetchall()
            if len(hits) > 1:
                raise NotFoundError(f"dataset id prefix {ref!r} matches {len(hits)} datasets ("
                                    + ", ".join(f"{h[0]} {h[1]!r}" for h in hits)
                                    + "); give more characters of the id")
            row = hits[0] if hits else None
        if row is None:
            names = [r[0] for r in con.execute("SELECT name FROM datasets ORDER BY created_at, rowid")]
            raise NotFoundError(f"no dataset {ref!r} in {self.path} (by id, id prefix of at least "
                                f"{MIN_PREFIX} characters, or name); {_known_datasets(ref, names)}")
        return self._info(row), json.loads(row[8])

    def dataset(self, ref: str) -> DatasetInfo:
        """Look a dataset up by id, unique id prefix (at least 4 characters) or name.

        Parameters
        ----------
        ref
            Id, id prefix or name.

        Returns
        -------
        DatasetInfo

        Raises
        ------
        NotFoundError
            No such dataset (the message lists the known names), or the prefix is ambiguous.
        """
        with self._read() as con:
            return self._resolve(con, ref)[0]

    def runs(self, ref: str) -> pd.DataFrame:
        """The runs of a dataset in canonical dtypes, extras after the canonical columns.

        Parameters
        ----------
        ref
            Id, id prefix or name.

        Returns
        -------
        pandas.DataFrame
            Rows in stored order, index 0..n-1.

        Raises
        ------
        NotFoundError
            No such dataset.
        """
        with self._read() as con:
            info, extra_cols = self._resolve(con, ref)
            cur = con.execute(f"SELECT {', '.join(_q(c) for c in _CANON)} FROM runs WHERE dataset_id = ? "
                              "ORDER BY run_idx", (info.id,))
            rows = cur.fetchall()
            ex = con.execute("SELECT run_idx, name, value FROM extras WHERE dataset_id = ?",
                             (info.id,)).fetchall() if extra_cols else []
        df = _frame_from_rows(rows)
        if extra_cols:
            n = len(df)
            by_name: dict[str, np.ndarray] = {c: np.full(n, np.nan) for c in extra_cols}
            for idx, name, value in ex:
                if name in by_name and value is not None:
                    by_name[name][idx] = value
            for c in extra_cols:
                df[c] = by_name[c]
        return df

    def issues(self, ref: str) -> pd.DataFrame:
        """The import issues of a dataset.

        Parameters
        ----------
        ref
            Id, id prefix or name.

        Returns
        -------
        pandas.DataFrame
            Columns ``file, row, column, message, severity`` (``row`` is nullable Int64).

        Raises
        ------
        NotFoundError
            No such dataset.
        """
        with self._read() as con:
            info, _ = self._resolve(con, ref)
            rows = con.execute('SELECT file, "row", "column", message, severity FROM issues '
                               "WHERE dataset_id = ? ORDER BY idx", (info.id,)).fetchall()
        cols: list[Sequence[Any]] = list(zip(*rows, strict=True)) if rows else [(), (), (), (), ()]
        return pd.DataFrame({
            "file": pd.array(list(cols[0]), dtype="string"),
            "row": pd.array(list(cols[1]), dtype="Int64"),
            "column": pd.array(list(cols[2]), dtype="string"),
            "message": pd.array(list(cols[3]), dtype="string"),
            "severity": pd.array(list(cols[4]), dtype="string"),
        })

    def delete_dataset(self, ref: str) -> None:
        """Delete a dataset with its runs and issues (one transaction).

        Parameters
        ----------
        ref
            Id, id prefix or name.

        Raises
        ------
        NotFoundError
            No such dataset.
        """
        with self._write() as con:
            info, _ = self._resolve(con, ref)
            for table in ("runs", "extras", "issues"):
                con.execute(f"DELETE FROM {table} WHERE dataset_id = ?", (info.id,))
            con.execute("DELETE FROM datasets WHERE id = ?", (info.id,))

    def rename_dataset(self, ref: str, name: str) -> DatasetInfo:
        """Give a dataset a new (unique, non-empty) name.

        Parameters
        ----------
        ref
            Id, id prefix or current name.
        name
            The new name.

        Returns
        -------
        DatasetInfo
            The renamed dataset.

        Raises
        ------
        NotFoundError
            No such dataset.
        StoreError
            The name is empty or already used by another dataset.
        """
        name = str(name).strip()
        if not name:
            raise StoreError("a dataset name cannot be empty")
        with self._write() as con:
            info, _ = self._resolve(con, ref)
            if (other := _name_taken(con, name, info.id)) is not None:
                raise StoreError(f"a dataset named {name!r} already exists (id {other}); choose another name")
            con.execute("UPDATE datasets SET name = ? WHERE id = ?", (name, info.id))
        return DatasetInfo(**{**info.__dict__, "name": name})

    # ------------------------------------------------------------------ import
    def add_dataset(self, results: Sequence[ImportResult], *, name: str | None = None,
                    meta: ImportMeta | None = None) -> DatasetInfo:
        """Store imported files as one dataset, in one transaction.

        Parameters
        ----------
        results
            The imported files (at least one), rows stored in this order.
        name
            Dataset name; defaults to the first file's stem, with "+ N more files" when there are several. A name already in use
            gets `` (2)``, `` (3)``... appended.
        meta
            The metadata supplied with the import (part of the content id).

        Returns
        -------
        DatasetInfo
            The new dataset, or the existing one when the same content (same files,
            formats and metadata) is already stored: renamed to ``name`` where one is
            given and no other dataset has it, otherwise unchanged.

        Raises
        ------
        StoreError
            Nothing to store, or the database could not be written (nothing was changed).
        """
        results = list(results)
        if not results:
            raise StoreError("nothing to store: no imported file was given")
        ds_id = content_id(results, meta)
        base_name = (name or "").strip() or _default_name(results)
        frames = [r.runs for r in results]
        extra_cols: list[str] = []
        for f in frames:
            extra_cols += [c for c in f.columns if is_extra_column(c) and c not in extra_cols]
        unknown = [c for f in frames for c in f.columns if c not in _KIND and not is_extra_column(c)]
        if unknown:
            raise StoreError(f"cannot store column(s) {sorted(set(unknown))}: not canonical and not fw_/hw_ extras")
        n_runs = sum(len(f) for f in frames)
        issues = [i for r in results for i in r.issues]
        from . import __version__

        provenance = {
            "files": [{"file": r.file, "format": r.format, "sha256": r.sha256, "n_runs": len(r.runs),
                       "n_issues": len(r.issues), **dict(r.provenance)} for r in results],
            "meta": _meta_dict(meta),
            "perfmodel_version": __version__,
        }
        prov_json = json.dumps(provenance, default=_json_default, allow_nan=True)
        created = datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
        with self._write() as con:
            row = con.execute(f"SELECT {self._INFO_COLS} FROM datasets WHERE id = ?", (ds_id,)).fetchone()
            if row is not None:
                # The same content again under a name given now: it takes the name where no other dataset has
                # it (the app said "Already stored" and the CLI named a dataset that did not exist, the name
                # unused either way)
                info = self._info(row)
                _backfill(con, ds_id, frames)
                wanted = (name or "").strip()
                if wanted and wanted != info.name and _name_taken(con, wanted, ds_id) is None:
                    con.execute("UPDATE datasets SET name = ? WHERE id = ?", (wanted, ds_id))
                    info = DatasetInfo(**{**info.__dict__, "name": wanted})
                return info
            final_name = _free_name(con, base_name)
            offset = 0
            for f in frames:
                self._insert_runs(con, ds_id, f, offset)
                offset += len(f)
            con.executemany(
                'INSERT INTO issues (dataset_id, idx, file, "row", "column", message, severity) '
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                ((ds_id, k, i.file, i.row, i.column, i.message, i.severity) for k, i in enumerate(issues)))
            con.execute(
                "INSERT INTO datasets (id, name, created_at, n_runs, n_issues, files, formats, provenance, "
                "extra_columns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (ds_id, final_name, created, n_runs, len(issues), json.dumps([r.file for r in results]),
                 json.dumps([r.format for r in results]), prov_json, json.dumps(extra_cols)))
            pause = os.environ.get(PAUSE_ENV)
            if pause:
                print(f"{PAUSE_ENV}: pausing {pause} s before commit", file=sys.stderr, flush=True)
                time.sleep(float(pause))
        return DatasetInfo(id=ds_id, name=final_name, created_at=created, n_runs=n_runs, n_issues=len(issues),
                           files=tuple(r.file for r in results), formats=tuple(r.format for r in results),
                           provenance=json.loads(prov_json))

    @staticmethod
    def _insert_runs(con: sqlite3.Connection, ds_id: str, df: pd.DataFrame, offset: int) -> None:
        n = len(df)
        if n == 0:
            return
        # Columns that are empty in the whole frame are left to their NULL default:
        # binding fewer parameters is most of the insert speed.
        cols = [c for c in _CANON if c in df.columns and df[c].notna().any()]
        sql = (f"INSERT INTO runs (dataset_id, run_idx{''.join(', ' + _q(c) for c in cols)}) "
               f"VALUES (?, ?{', ?' * len(cols)})")
        extras = [c for c in df.columns if is_extra_column(c)]
        for start in range(0, n, CHUNK_ROWS):
            part = df.iloc[start:start + CHUNK_ROWS]
            m = len(part)
            idx = range(offset + start, offset + start + m)
            lists = _column_lists(part, cols)
            con.executemany(sql, zip([ds_id] * m, idx, *lists, strict=True))
            for c in extras:
                v = part[c].to_numpy(dtype="float64", na_value=np.nan)
                keep = np.flatnonzero(~np.isnan(v))
                if len(keep):
                    con.executemany("INSERT INTO extras (dataset_id, run_idx, name, value) VALUES (?, ?, ?, ?)",
                                    zip([ds_id] * len(keep), (keep + offset + start).tolist(), [c] * len(keep),
                                        v[keep].tolist(), strict=True))


    # ------------------------------------------------------------------ sweeps
    def create_dataset(self, name: str, provenance: Mapping[str, Any]) -> DatasetInfo:
        """Create an empty dataset that a sweep fills point by point.

        Parameters
        ----------
        name
            Dataset name; `` (2)``, `` (3)``... is appended when it is taken.
        provenance
            JSON-serialisable facts (backend description, plan, machine); ``kind``
            is set to :data:`SWEEP_DATASET_KIND`.

        Returns
        -------
        DatasetInfo
            The new dataset (0 runs).

        Raises
        ------
        StoreError
            The store could not be written.
        """
        with self._write() as con:
            return self._create_dataset(con, name, provenance)

    def _create_dataset(self, con: sqlite3.Connection, name: str, provenance: Mapping[str, Any]) -> DatasetInfo:
        from . import __version__

        # Not content-addressed: the content does not exist yet and will grow.
        ds_id = os.urandom(8).hex()
        base_name = str(name).strip() or "sweep"
        final_name = _free_name(con, base_name)
        prov = {**dict(provenance), "kind": SWEEP_DATASET_KIND, "perfmodel_version": __version__}
        prov_json = json.dumps(prov, default=_json_default, allow_nan=True)
        created = _now()
        con.execute(
            "INSERT INTO datasets (id, name, created_at, n_runs, n_issues, files, formats, provenance, "
            "extra_columns) VALUES (?, ?, ?, 0, 0, '[]', '[]', ?, '[]')", (ds_id, final_name, created, prov_json))
        return DatasetInfo(id=ds_id, name=final_name, created_at=created, n_runs=0, n_issues=0, files=(),
                           formats=(), provenance=json.loads(prov_json))

    def append_runs(self, dataset_id: str, runs: pd.DataFrame) -> DatasetInfo:
        """Append rows to a sweep dataset in one transaction (``n_runs`` kept in sync).

        Parameters
        ----------
        dataset_id
            Id of a dataset made by :meth:`create_dataset`.
        runs
            Canonical runs (validated by the caller), extras allowed.

        Returns
        -------
        DatasetInfo
            The dataset after the append.

        Raises
        ------
        NotFoundError
            No such dataset.
        StoreError
            The dataset was imported (imports are immutable), a column is not
            canonical, or the store could not be written (nothing was changed).
        """
        with self._write() as con:
            self._append(con, dataset_id, runs)
            return self._resolve(con, dataset_id)[0]

    def _append(self, con: sqlite3.Connection, dataset_id: str, runs: pd.DataFrame) -> int:
        """Insert ``runs`` after the dataset's last row; returns the first new ``run_idx``."""
        row = con.execute("SELECT n_runs, provenance, extra_columns, formats FROM datasets WHERE id = ?",
                          (dataset_id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no dataset with id {dataset_id!r} in {self.path}")
        n_runs, prov, extra_json = int(row[0]), json.loads(row[1]), json.loads(row[2])
        # the formats its rows came in (a sweep's dataset had shown an empty "formats" cell on the Data page)
        formats = list(json.loads(row[3]))
        if "source_format" in runs.columns:
            formats += [str(f) for f in pd.unique(runs["source_format"].dropna()) if str(f) not in formats]
        if prov.get("kind") != SWEEP_DATASET_KIND:
            raise StoreError(f"dataset {dataset_id} was imported and cannot grow; imported datasets are "
                             "immutable (only sweep datasets take appended runs)")
        unknown = [c for c in runs.columns if c not in _KIND and not is_extra_column(c)]
        if unknown:
            raise StoreError(f"cannot store column(s) {sorted(unknown)}: not canonical and not fw_/hw_ extras")
        extra_cols = list(extra_json) + [c for c in runs.columns if is_extra_column(c) and c not in extra_json]
        self._insert_runs(con, dataset_id, runs, n_runs)
        con.execute("UPDATE datasets SET n_runs = ?, extra_columns = ?, formats = ? WHERE id = ?",
                    (n_runs + len(runs), json.dumps(extra_cols), json.dumps(formats), dataset_id))
        return n_runs

    def create_sweep(self, name: str, plan: Mapping[str, Any], point_keys: Sequence[str], *,
                     backend: str | None = None, provenance: Mapping[str, Any] | None = None) -> SweepInfo:
        """Record a new sweep (status ``pending``), its empty dataset and its planned points, together.

        Parameters
        ----------
        name
            Dataset name (made unique).
        plan
            The plan as a JSON object.
        point_keys
            Stable keys of the planned points, in run order (distinct).
        backend
            Backend name.
        provenance
            Extra provenance of the dataset (the plan is added).

        Returns
        -------
        SweepInfo

        Raises
        ------
        StoreError
            Duplicate keys, or the store could not be written.
        """
        keys = list(point_keys)
        if len(set(keys)) != len(keys):
            raise StoreError("the sweep's point keys are not distinct")
        sweep_id = os.urandom(8).hex()
        now = _now()
        with self._write() as con:
            info = self._create_dataset(con, name, {**dict(provenance or {}), "plan": dict(plan),
                                                    "sweep_id": sweep_id, "backend": backend})
            con.execute("INSERT INTO sweeps (id, name, plan, status, dataset_id, created_at, updated_at, pid, "
                        "error, backend) VALUES (?, ?, ?, 'pending', ?, ?, ?, NULL, NULL, ?)",
                        (sweep_id, info.name, json.dumps(dict(plan), default=_json_default), info.id, now, now,
                         backend))
            con.executemany("INSERT INTO sweep_points (sweep_id, key, idx, status, attempts) "
                            "VALUES (?, ?, ?, 'pending', 0)", ((sweep_id, k, i) for i, k in enumerate(keys)))
        return self.sweep(sweep_id)

    _SWEEP_SELECT = """SELECT s.id, s.name, s.plan, s.status, s.dataset_id, s.created_at, s.updated_at, s.pid,
  s.error, s.backend, COUNT(p.key), COALESCE(SUM(p.status = 'done'), 0), COALESCE(SUM(p.status = 'failed'), 0),
  EXISTS(SELECT 1 FROM datasets d WHERE d.id = s.dataset_id)
FROM sweeps s LEFT JOIN sweep_points p ON p.sweep_id = s.id"""

    @staticmethod
    def _sweep_info(row: Sequence[Any]) -> SweepInfo:
        pid = None if row[7] is None else int(row[7])
        return SweepInfo(id=row[0], name=row[1], plan=json.loads(row[2]), status=row[3], dataset_id=row[4],
                         created_at=row[5], updated_at=row[6], pid=pid, error=row[8], backend=row[9],
                         n_points=int(row[10]), n_done=int(row[11]), n_failed=int(row[12]), alive=_pid_alive(pid),
                         dataset_exists=bool(row[13]))

    def sweeps(self) -> list[SweepInfo]:
        """Every sweep, newest first.

        Returns
        -------
        list of SweepInfo
        """
        with self._read() as con:
            rows = con.execute(f"{self._SWEEP_SELECT} GROUP BY s.id ORDER BY s.created_at DESC, s.id").fetchall()
        return [self._sweep_info(r) for r in rows]

    def _sweep_row(self, con: sqlite3.Connection, ref: str) -> Sequence[Any]:
        ref = str(ref).strip()
        row = con.execute(f"{self._SWEEP_SELECT} WHERE s.id = ? GROUP BY s.id", (ref,)).fetchone()
        if row is None and len(ref) >= MIN_PREFIX:
            hits = con.execute(f"{self._SWEEP_SELECT} WHERE s.id LIKE ? GROUP BY s.id",
                               (ref.lower().replace("%", "").replace("_", "") + "%",)).fetchall()
            if len(hits) > 1:
                raise NotFoundError(f"sweep id prefix {ref!r} matches {len(hits)} sweeps; give more characters")
            row = hits[0] if hits else None
        if row is None:
            known = [r[0] for r in con.execute("SELECT id FROM sweeps ORDER BY created_at DESC LIMIT 10")]
            raise NotFoundError(f"no sweep {ref!r} in {self.path}; recent sweeps: "
                                + (", ".join(known) if known else "none") + " (see `perfmodel sweeps`)")
        return row

    def sweep(self, ref: str) -> SweepInfo:
        """Look a sweep up by id or unique id prefix (at least 4 characters).

        Parameters
        ----------
        ref
            Id or id prefix.

        Returns
        -------
        SweepInfo

        Raises
        ------
        NotFoundError
            No such sweep, or the prefix is ambiguous.
        """
        with self._read() as con:
            return self._sweep_info(self._sweep_row(con, ref))

    def sweep_points(self, sweep_id: str) -> pd.DataFrame:
        """The planned points of a sweep in run order.

        Parameters
        ----------
        sweep_id
            Sweep id or prefix.

        Returns
        -------
        pandas.DataFrame
            Columns ``key, idx, status, attempts, error, run_idx, updated_at``.

        Raises
        ------
        NotFoundError
            No such sweep.
        """
        with self._read() as con:
            sid = self._sweep_row(con, sweep_id)[0]
            rows = con.execute("SELECT key, idx, status, attempts, error, run_idx, updated_at FROM sweep_points "
                               "WHERE sweep_id = ? ORDER BY idx", (sid,)).fetchall()
        cols: list[Sequence[Any]] = list(zip(*rows, strict=True)) if rows else [()] * 7
        return pd.DataFrame({
            "key": pd.array(list(cols[0]), dtype="string"),
            "idx": pd.array(list(cols[1]), dtype="Int64"),
            "status": pd.array(list(cols[2]), dtype="string"),
            "attempts": pd.array(list(cols[3]), dtype="Int64"),
            "error": pd.array(list(cols[4]), dtype="string"),
            "run_idx": pd.array(list(cols[5]), dtype="Int64"),
            "updated_at": pd.array(list(cols[6]), dtype="string"),
        })

    def claim_sweep(self, sweep_id: str, pid: int) -> SweepInfo:
        """Mark a sweep ``running`` in process ``pid``, unless another live process runs it.

        Parameters
        ----------
        sweep_id
            Sweep id or prefix.
        pid
            The claiming process.

        Returns
        -------
        SweepInfo
            The sweep, now running.

        Raises
        ------
        StoreError
            Another live process runs it (nothing was changed).
        NotFoundError
            No such sweep, or its dataset was deleted (nothing was changed).
        """
        with self._write() as con:
            row = self._sweep_row(con, sweep_id)
            info = self._sweep_info(row)
            check_resumable(info)
            if info.status == "running" and info.alive and info.pid != pid:
                raise StoreError(f"sweep {info.id} is already running in process {info.pid}; stop it first "
                                 "(Stop on the Sweeps page, or kill that process)")
            con.execute("UPDATE sweeps SET status = 'running', pid = ?, error = NULL, updated_at = ? WHERE id = ?",
                        (pid, _now(), info.id))
        return self.sweep(info.id)

    def set_sweep_status(self, sweep_id: str, status: str, *, error: str | None = None) -> None:
        """Set a sweep's status (and the error that ended it).

        Parameters
        ----------
        sweep_id
            Sweep id.
        status
            One of :data:`SWEEP_STATUSES`.
        error
            Why it failed or stopped early.

        Raises
        ------
        StoreError
            Unknown status or the store could not be written.
        """
        if status not in SWEEP_STATUSES:
            raise StoreError(f"sweep status {status!r} is not one of {', '.join(SWEEP_STATUSES)}")
        with self._write() as con:
            con.execute("UPDATE sweeps SET status = ?, error = ?, updated_at = ? WHERE id = ?",
                        (status, error, _now(), sweep_id))

    def record_point(self, sweep_id: str, key: str, *, status: str, attempts: int, error: str | None = None,
                     runs: pd.DataFrame | None = None) -> int | None:
        """Record a finished point: its row (if any), its status and the dataset's count, in one transaction.

        Parameters
        ----------
        sweep_id
            Sweep id.
        key
            The point's key.
        status
            ``done``, ``failed`` or ``pending`` (one of :data:`POINT_STATUSES`).
        attempts
            Attempts made so far.
        error
            Reason of the last failure.
        runs
            The point's validated row(s) (``done`` only).

        Returns
        -------
        int or None
            ``run_idx`` of the first stored row, ``None`` when no row was stored.

        Raises
        ------
        StoreError
            Unknown point or status, a ``done`` point recorded twice, or the
            store could not be written (nothing was changed).
        """
        if status not in POINT_STATUSES:
            raise StoreError(f"point status {status!r} is not one of {', '.join(POINT_STATUSES)}")
        now = _now()
        with self._write() as con:
            row = con.execute("SELECT s.dataset_id, p.status FROM sweeps s JOIN sweep_points p ON p.sweep_id = s.id "
                              "WHERE s.id = ? AND p.key = ?", (sweep_id, key)).fetchone()
            if row is None:
                raise StoreError(f"sweep {sweep_id} has no planned point {key!r}")
            if row[1] == "done":
                # The guard that makes resume unable to store a point twice.
                raise StoreError(f"point {key!r} of sweep {sweep_id} is already done")
            run_idx = self._append(con, row[0], runs) if runs is not None and len(runs) else None
            con.execute("UPDATE sweep_points SET status = ?, attempts = ?, error = ?, run_idx = ?, updated_at = ? "
                        "WHERE sweep_id = ? AND key = ?", (status, attempts, error, run_idx, now, sweep_id, key))
            con.execute("UPDATE sweeps SET updated_at = ? WHERE id = ?", (now, sweep_id))
        return run_idx

    def reset_failed_points(self, sweep_id: str) -> int:
        """Make a sweep's failed points pending again (to retry them on resume).

        Parameters
        ----------
        sweep_id
            Sweep id.

        Returns
        -------
        int
            Points reset.
        """
        with self._write() as con:
            cur = con.execute("UPDATE sweep_points SET status = 'pending', attempts = 0, error = NULL "
                              "WHERE sweep_id = ? AND status = 'failed'", (sweep_id,))
            return int(cur.rowcount)

    # ------------------------------------------------------------------ saved analyses
    def save_analysis(self, name: str, kind: str, payload: Mapping[str, Any]) -> AnalysisInfo:
        """Save a page state as a named analysis under a new unguessable id, unless the same name, kind and
        state are saved already: then that analysis is returned (a form sent twice, by Enter in its name
        field and then its button, had saved two identical analyses).

        Parameters
        ----------
        name
            Human name (non-empty).
        kind
            Page that saved it.
        payload
            JSON-serialisable state.

        Returns
        -------
        AnalysisInfo

        Raises
        ------
        StoreError
            Empty name or kind, a payload JSON cannot hold, or the store could not be written.
        """
        import secrets

        name, kind = str(name).strip(), str(kind).strip()
        if not name or not kind:
            raise StoreError("an analysis needs a non-empty name and kind")
        try:
            text = json.dumps(dict(payload), sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise StoreError(f"analysis {name!r}: the state cannot be saved as JSON ({exc})") from None
        created = _now()
        with self._write() as con:
            same = con.execute("SELECT id, created_at FROM analyses WHERE name = ? AND kind = ? AND payload = ? "
                               "ORDER BY created_at LIMIT 1", (name, kind, text)).fetchone()
            if same is not None:
                return AnalysisInfo(id=same[0], name=name, created_at=same[1], kind=kind, payload=json.loads(text))
            while True:
                aid = secrets.token_urlsafe(ANALYSIS_ID_BYTES)
                if aid[0] in "-_":
                    continue
                if con.execute("SELECT 1 FROM analyses WHERE id = ?", (aid,)).fetchone() is None:
                    break
            con.execute("INSERT INTO analyses (id, name, created_at, kind, payload) VALUES (?, ?, ?, ?, ?)",
                        (aid, name, created, kind, text))
        return AnalysisInfo(id=aid, name=name, created_at=created, kind=kind, payload=json.loads(text))

    def analyses(self, kind: str | None = None) -> list[AnalysisInfo]:
        """Saved analyses, newest first.

        Parameters
        ----------
        kind
            Only those saved by this page.

        Returns
        -------
        list of AnalysisInfo
        """
        sql = "SELECT id, name, created_at, kind, payload FROM analyses"
        args: tuple[Any, ...] = ()
        if kind is not None:
            sql += " WHERE kind = ?"
            args = (kind,)
        with self._read() as con:
            rows = con.execute(sql + " ORDER BY created_at DESC, rowid DESC", args).fetchall()
        return [AnalysisInfo(r[0], r[1], r[2], r[3], json.loads(r[4])) for r in rows]

    def analysis(self, analysis_id: str) -> AnalysisInfo:
        """One saved analysis by its exact id (ids are never matched by prefix: they are the access key).

        Parameters
        ----------
        analysis_id
            The id.

        Returns
        -------
        AnalysisInfo

        Raises
        ------
        NotFoundError
            No analysis has this id.
        """
        with self._read() as con:
            r = con.execute("SELECT id, name, created_at, kind, payload FROM analyses WHERE id = ?",
                            (str(analysis_id).strip(),)).fetchone()
        if r is None:
            raise NotFoundError(f"no saved analysis with id {analysis_id!r} in {self.path} (it may have been "
                                "deleted; `perfmodel analyses` lists them)")
        return AnalysisInfo(r[0], r[1], r[2], r[3], json.loads(r[4]))

    def rename_analysis(self, analysis_id: str, name: str) -> AnalysisInfo:
        """Rename a saved analysis (its id, and so its links, stay).

        Parameters
        ----------
        analysis_id
            The id.
        name
            New non-empty name.

        Returns
        -------
        AnalysisInfo

        Raises
        ------
        NotFoundError
            No analysis has this id.
        StoreError
            Empty name.
        """
        name = str(name).strip()
        if not name:
            raise StoreError("an analysis name cannot be empty")
        with self._write() as con:
            cur = con.execute("UPDATE analyses SET name = ? WHERE id = ?", (name, str(analysis_id)))
            if cur.rowcount == 0:
                raise NotFoundError(f"no saved analysis with id {analysis_id!r}")
        return self.analysis(analysis_id)

    def delete_analysis(self, analysis_id: str) -> None:
        """Delete a saved analysis; its links stop working.

        Parameters
        ----------
        analysis_id
            The id.

        Raises
        ------
        NotFoundError
            No analysis has this id.
        """
        with self._write() as con:
            cur = con.execute("DELETE FROM analyses WHERE id = ?", (str(analysis_id),))
            if cur.rowcount == 0:
                raise NotFoundError(f"no saved analysis with id {analysis_id!r}")


def _frame_from_rows(rows: list[tuple[Any, ...]]) -> pd.DataFrame:
    if not rows:
        return empty_runs()
    cols = list(zip(*rows, strict=True))
    out: dict[str, Any] = {}
    for name, values in zip(_CANON, cols, strict=True):
        kind = _KIND[name]
        if kind == "float":
            out[name] = np.array(values, dtype="float64")
        elif kind == "int":
            out[name] = pd.array(values, dtype="Int64")
        elif kind == "str":
            out[name] = pd.array(values, dtype="string")
        else:
            out[name] = pd.to_datetime(pd.Series(values, dtype=object), utc=True, format="ISO8601") \
                .astype("datetime64[ns, UTC]")
    return pd.DataFrame(out)
