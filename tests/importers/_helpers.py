"""Helpers shared by the importer tests (imported as ``_helpers``: pytest puts this folder on
``sys.path``). The ``stub_catalog`` fixture they pair with lives in ``tests/conftest.py``."""

from __future__ import annotations

from pathlib import Path

from perfmodel.importers import Importer, ImportMeta, ImportResult, Parsed, Sample, detect_format, read_file


class MetaWithConcurrency(ImportMeta):
    """ImportMeta plus the ``concurrency`` field some importers read when present."""

    concurrency: int | None = None


def parse(imp: Importer, path: Path, meta: ImportMeta | None = None) -> Parsed:
    """``imp.parse`` on the file, nothing finalised."""
    return imp.parse(Sample(path), meta or ImportMeta())


def parse_detected(fmt: str, path: Path, meta: ImportMeta | None = None) -> Parsed:
    """Detect the file's format, check it is ``fmt``, and parse it."""
    sample = Sample(path)
    imp = detect_format(sample)
    assert imp.name == fmt
    return imp.parse(sample, meta or ImportMeta())


def finish(imp: Importer, path: Path, meta: ImportMeta | None = None) -> ImportResult:
    """The full import with ``imp``'s format forced (pair it with the ``stub_catalog`` fixture to
    pin the importer alone, whatever names the catalog knows)."""
    return read_file(path, format=imp.name, meta=meta)
