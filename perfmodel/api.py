"""The public import/load/export/train/predict API shared by the CLI and the app.

>>> from perfmodel.api import import_files, load_runs, predict, train
>>> info, results = import_files(["bench.json"], meta=ImportMeta(hardware="H100-80GB-SXM"))  # doctest: +SKIP
>>> runs = load_runs(info.id)  # doctest: +SKIP
>>> model = train(runs, output="model/")  # doctest: +SKIP
>>> pred = predict("model/", queries)  # PRED.csv's columns beside the queries  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from .errors import ImportFormatError, PerfmodelError, Problem, UnknownNameError, ValidationError
from .importers.base import ImportMeta, ImportResult, read_file
from .importers.duplicates import drop_duplicate_points, file_sha256, note_same_content, same_content
from .importers.lengths import common_mean_lengths
from .store import DatasetInfo, Store

__all__ = ["import_files", "import_bytes", "load_runs", "export_runs", "train", "predict", "EXPORT_SUFFIXES"]

EXPORT_SUFFIXES = (".csv", ".parquet")


def _store(store: Store | None) -> Store:
    return store if store is not None else Store()


def import_files(paths: Sequence[str | Path], *, format: str | None = None, meta: ImportMeta | None = None,
                 name: str | None = None, store: Store | None = None,
                 strict: bool = False) -> tuple[DatasetInfo, list[ImportResult]]:
    """Import result files and store them as one dataset (all files or none).

    A file given twice (the same bytes, by SHA-256) is read once, and a point that two files both hold
    (``vllm bench sweep``'s ``run=N.json`` and ``summary.json``) is stored once, each with a warning that
    names both files (see :mod:`perfmodel.importers.duplicates`).

    Parameters
    ----------
    paths
        The files; each file's format is detected from its content unless ``format`` is given.
    format
        Format id to force for every file (see ``perfmodel formats``).
    meta
        What the user supplies (hardware, model, ...), applied to every file.
    name
        Dataset name (defaults to the first file's stem, + N more files when several; made unique).
    store
        Store to write to (default: the store in :func:`perfmodel.config.home_dir`).
    strict
        Store nothing when any row has an error (by default such rows are left out
        and reported as issues).

    Returns
    -------
    (DatasetInfo, list of ImportResult)
        The stored dataset (the existing one when the same content was imported
        before) and each file's import result with its issues.

    Raises
    ------
    ImportFormatError
        No file given, or a file is unreadable, unrecognised or holds no valid row.
    ValidationError
        ``strict`` and a row has an error (each one named by file, row and column).
    UnknownNameError
        Unknown format id, hardware or model.
    StoreError
        The store could not be written (nothing was changed).
    """
    if not paths:
        raise ImportFormatError("no file to import: give at least one result file")
    meta = meta or ImportMeta()
    # An optimum-benchmark config given beside its report (`perfmodel import run/*.json`) is read with the
    # report, which finds it on disk; imported on its own it is refused as holding no measurement.
    names = {Path(p).name for p in paths}
    paths = [p for p in paths if not ("benchmark_config" in Path(p).name
                                      and Path(p).name.replace("benchmark_config", "benchmark_report") in names)]
    # The same bytes given twice (a path twice, or a file copied into two folders) are read once.
    repeats = same_content([file_sha256(p) for p in paths])
    again: dict[int, list[tuple[str, str]]] = {}
    for i, first in repeats.items():
        again.setdefault(first, []).append((Path(paths[i]).name, Path(paths[first]).name))
    results = [note_same_content(read_file(p, format=format, meta=meta), again.get(i, []))
               for i, p in enumerate(paths) if i not in repeats]
    results = common_mean_lengths(drop_duplicate_points(results))
    if strict:
        _refuse_errors(results)
    info = _store(store).add_dataset(results, name=name, meta=meta)
    return info, results


def _refuse_errors(results: Sequence[ImportResult]) -> None:
    errors = [i for r in results for i in r.issues if i.severity == "error"]
    if errors:
        raise ValidationError(f"{len(errors)} row error(s) and strict import: nothing was stored", [
            Problem(i.message, file=i.file, row=i.row, column=i.column) for i in errors])


def import_bytes(files: Sequence[tuple[str, bytes]], *, format: str | None = None, meta: ImportMeta | None = None,
                 name: str | None = None, store: Store | None = None) -> tuple[DatasetInfo, list[ImportResult]]:
    """Import uploaded files (name and bytes) as one dataset; see :func:`import_files`.

    Parameters
    ----------
    files
        ``(file name, content)`` pairs; the name is used in messages and provenance.
    format, meta, name, store
        As for :func:`import_files`.

    Returns
    -------
    (DatasetInfo, list of ImportResult)

    Raises
    ------
    ImportFormatError, UnknownNameError, StoreError
        As for :func:`import_files`.
    """
    if not files:
        raise ImportFormatError("no file to import: upload at least one result file")
    meta = meta or ImportMeta()
    results = []
    named = [(Path(str(file_name)).name or "upload", bytes(data)) for file_name, data in files]
    # The same bytes uploaded twice are read once; the file read notes the others.
    repeats = same_content([hashlib.sha256(data).hexdigest() for _name, data in named])
    again_by_file: dict[tuple[str, bytes], list[tuple[str, str]]] = {}
    for i, first in repeats.items():
        again_by_file.setdefault(named[first], []).append((named[i][0], named[first][0]))
    named = [f for i, f in enumerate(named) if i not in repeats]
    again: list[list[tuple[str, str]]] = []
    rest, pairs = _optimum_pairs(named) if format in (None, "optimum-benchmark") else (named, [])
    for (report, r_data), (config, c_data) in pairs:
        from .importers.optimum_benchmark import read_report_with_config

        results.append(read_report_with_config(report, config, meta=meta, report_data=r_data, config_data=c_data))
        again.append(again_by_file.get((report, r_data), []) + again_by_file.get((config, c_data), []))
    for base, data in rest:
        results.append(read_file(Path(base), format=format, meta=meta, data=data, name=base))
        again.append(again_by_file.get((base, data), []))
    results = [note_same_content(r, names) for r, names in zip(results, again, strict=True)]
    results = common_mean_lengths(drop_duplicate_points(results))
    info = _store(store).add_dataset(results, name=name, meta=meta)
    return info, results


def _optimum_pairs(files: list[tuple[str, bytes]]) -> tuple[list[tuple[str, bytes]],
                                                               list[tuple[tuple[str, bytes], tuple[str, bytes]]]]:
    """Uploaded optimum-benchmark reports paired with their configs (which an upload cannot find beside it on
    disk): by optimum-benchmark's own naming (``benchmark_report`` -> ``benchmark_config``), or the one report
    with the one config. Returns the other files and the pairs; a file not read as JSON stays with the others."""
    from .importers.base import loads_lenient
    from .importers.optimum_benchmark import _split

    kinds: dict[int, str] = {}
    for i, (_name, data) in enumerate(files):
        if len(data) > 50_000_000 or not (b'"decode"' in data or b'"backend"' in data):
            continue
        try:
            rep, cfg = _split(loads_lenient(data.decode("utf-8")))
        except (UnicodeDecodeError, ValueError):
            continue
        if rep is not None and cfg is None:
            kinds[i] = "report"
        elif rep is None and cfg is not None:
            kinds[i] = "config"
    reports = [i for i, k in kinds.items() if k == "report"]
    configs = [i for i, k in kinds.items() if k == "config"]
    pairs: list[tuple[int, int]] = []
    for r in reports:
        twin = files[r][0].replace("benchmark_report", "benchmark_config")
        match = [c for c in configs if files[c][0] == twin and twin != files[r][0]]
        if match:
            pairs.append((r, match[0]))
            configs.remove(match[0])
    left = [r for r in reports if r not in {p[0] for p in pairs}]
    if len(left) == 1 and len(configs) == 1:
        pairs.append((left[0], configs[0]))
    used = {i for p in pairs for i in p}
    return [f for i, f in enumerate(files) if i not in used], [(files[r], files[c]) for r, c in pairs]


def load_runs(ref: str, *, store: Store | None = None) -> pd.DataFrame:
    """The canonical runs of a stored dataset.

    Parameters
    ----------
    ref
        Dataset id, unique id prefix (at least 4 characters) or name.
    store
        Store to read (default store when None).

    Returns
    -------
    pandas.DataFrame
        Canonical columns and dtypes, then ``fw_``/``hw_`` extras, in stored order.

    Raises
    ------
    NotFoundError
        No such dataset (the message lists the known names).
    """
    return _store(store).runs(ref)


def export_runs(ref: str, path: str | Path, *, store: Store | None = None) -> Path:
    """Write a dataset's runs to ``.csv`` or ``.parquet`` (chosen by the suffix).

    The file re-imports unchanged with ``perfmodel import`` (format ``canonical``).

    Parameters
    ----------
    ref
        Dataset id, id prefix or name.
    path
        Output file; its suffix picks the format.
    store
        Store to read (default store when None).

    Returns
    -------
    pathlib.Path
        The written file.

    Raises
    ------
    PerfmodelError
        The suffix is not ``.csv`` or ``.parquet``, or the file cannot be written.
    NotFoundError
        No such dataset.
    """
    out = Path(path).expanduser()
    suffix = out.suffix.lower()
    if suffix not in EXPORT_SUFFIXES:
        raise PerfmodelError(f"cannot export to {out.name!r}: the file name must end in "
                             + " or ".join(EXPORT_SUFFIXES) + " (the suffix picks the format)")
    df = _store(store).runs(ref)
    try:
        if suffix == ".csv":
            # float_format=None writes the shortest repr that reads back bit-exactly.
            df.to_csv(out, index=False)
        else:
            df.to_parquet(out, index=False)
    except OSError as exc:
        raise PerfmodelError(f"cannot write {out}: {exc.strerror or exc}") from exc
    return out


def train(data: pd.DataFrame | str | Path, *, predictor: str = "roofline-gbm", features: str | None = None,
          y: str = "output_throughput_tok_s", seed: int | None = None, output: str | Path | None = None,
          store: Store | None = None) -> Any:
    """Train a predictor, as ``perfmodel train`` does.

    Parameters
    ----------
    data
        A runs table, a result file (any importable format) or a stored dataset's id or name.
    predictor
        A registered predictor (``roofline-gbm``, ``ala``, ``xgboost``, ``random-forest``, ``linear``).
    features
        Feature set (default: the predictor's own).
    y
        The throughput to learn.
    seed
        Seed of the predictor's randomness, where it has one.
    output
        When given, the model directory to write (JSON only).
    store
        Store to read a dataset from (default store when None).

    Returns
    -------
    Predictor
        The fitted predictor.

    Raises
    ------
    UnknownNameError
        An unknown predictor (``kind`` "predictor", listing the known ones).
    ValidationError
        A feature set given to a predictor that takes none (the problem's column: ``features``).
    PerfmodelError
        No usable training row, or a file that cannot be read.
    """
    import inspect

    from .models import PREDICTORS, _load_all, get_predictor

    _load_all()
    if predictor not in PREDICTORS:
        raise UnknownNameError("predictor", predictor, list(PREDICTORS))
    params = inspect.signature(PREDICTORS[predictor]).parameters
    settings: dict[str, Any] = {}
    if features is not None:
        if "features" not in params:
            raise ValidationError(f"predictor {predictor!r} does not take a feature set",
                                  [Problem(f"not taken by {predictor}", column="features")])
        settings["features"] = features
    if seed is not None and "seed" in params:
        settings["seed"] = seed
    if isinstance(data, pd.DataFrame):
        runs = data
    elif Path(data).is_file():
        runs = read_file(Path(data)).runs
    else:
        runs = _store(store).runs(str(data))
    model = get_predictor(predictor, **settings).fit(runs, y=y)
    if output is not None:
        model.save(output)
    return model


def predict(model: Any, queries: pd.DataFrame, *, level: float = 0.9) -> pd.DataFrame:
    """Predict for every query row, as ``perfmodel predict MODEL_DIR QUERIES.csv`` does.

    Parameters
    ----------
    model
        A fitted predictor, or the directory one was saved to.
    queries
        Query rows: hardware, model, framework, lengths, batch (names as the catalog reads them; one device
        where ``device_count`` is absent).
    level
        Nominal coverage of the band.

    Returns
    -------
    pandas.DataFrame
        The queries with PRED.csv's columns beside them (:func:`perfmodel.models.base.prediction_table`),
        index = ``queries.index``.

    Raises
    ------
    ValidationError, UnknownNameError
        Bad queries (row and column named).
    """
    from .models import load_predictor
    from .models.base import prediction_table

    predictor = load_predictor(model) if isinstance(model, str | Path) else model
    table = prediction_table(predictor, queries, level=level)
    return pd.concat([queries.drop(columns=[c for c in table.columns if c in queries.columns]), table], axis=1)
