"""perfmodel's own format: the canonical runs table as CSV or Parquet.

This is what ``perfmodel export`` writes. Re-importing an export gives back the
same table: values are read as text and converted exactly (floats through
Python's correctly rounded parser), ``hardware_raw``/``model_raw`` are resolved
again through the catalogs (a canonical key resolves to itself), and the rows
keep the ``source_format``/``source_file``/``source_row`` they were first imported
from. Those describe the first import, not this file: issues name a row by its
position in the file being imported, and a row with an error is dropped like in
any other format (:func:`~perfmodel.importers.base.finalize`).
"""

from __future__ import annotations

import csv
import io
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ImportFormatError
from ..schema import COLUMNS, is_extra_column
from .base import Importer, ImportMeta, Issue, Parsed, Sample, register

__all__ = ["CanonicalImporter", "SIGNATURE"]

#: Header columns that together identify a canonical table.
SIGNATURE = ("hardware", "model", "input_len_tok", "output_len_tok", "load_kind")
PARQUET_MAGIC = b"PAR1"
_FLOAT = {c.name for c in COLUMNS if c.kind == "float"}


def _is_parquet(sample: Sample) -> bool:
    return sample.head[:4] == PARQUET_MAGIC


def _parquet_columns(sample: Sample) -> list[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return list(pq.read_schema(pa.BufferReader(sample.data)).names)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise ImportFormatError(f"{sample.name}: not a readable Parquet file ({exc})") from exc


def _exact_float(s: pd.Series) -> pd.Series:
    text = s.astype("string").str.strip()
    try:
        return text.astype("float64")
    except (TypeError, ValueError):
        # Leave the text: coerce_runs names the cells that are not numbers.
        return text


def _short_rows(text: str, df: pd.DataFrame, file: str, issues: list[Issue]) -> np.ndarray:
    """True for a last data row with fewer fields than the header in a text that stops without a line
    break (a file cut off mid-row: the last field may be cut too), reported as an ``error`` naming its
    position and missing columns; any other short row is kept (its missing cells empty) with a warning
    (see :func:`perfmodel.importers.generic_csv.short_row_issues`).

    Only rows whose last cell is empty are looked at (an export's last column, source_row,
    is always written), so a whole file costs nothing. Rows are counted as pandas reads them
    (blank lines skipped); when the count differs (a field spanning lines), nothing is flagged.
    """
    header = [str(c) for c in df.columns]
    short = np.zeros(len(df), dtype=bool)
    candidates = np.flatnonzero(df.iloc[:, -1].isna().to_numpy())
    if not len(candidates):
        return short
    lines = [ln for ln in text.split("\n") if ln.strip()][1:]
    if len(lines) == len(df):
        counts = {int(i): len(next(csv.reader([lines[i].rstrip("\r")]), [])) for i in candidates}
    else:
        # A quoted field spans lines: count each record with the csv module instead.
        every = [len(r) for r in csv.reader(io.StringIO(text)) if r][1:]
        if len(every) != len(df):
            return short
        counts = {int(i): every[i] for i in candidates}
    cut_off = not text.endswith(("\n", "\r"))
    for i, k in counts.items():
        if k < len(header):
            missing = header[k:]
            head = (f"expected {len(header)} fields, found {k} (a short or truncated row): no value for "
                    "column(s) " + ", ".join(repr(h) for h in missing))
            if cut_off and i == len(df) - 1:
                short[i] = True
                issues.append(Issue(file, i + 1, missing[0], head + "; row skipped (the file ends mid-row: its "
                                    "last field may be cut too)"))
            else:
                issues.append(Issue(file, i + 1, missing[0], head + "; read as empty", "warning"))
    return short


@register
class CanonicalImporter(Importer):
    name = "canonical"
    label = "perfmodel canonical table"
    description = ("perfmodel's own export (`perfmodel export`): CSV or Parquet with the canonical column names "
                   "and fw_/hw_ extras")
    has_hardware = True
    has_model = True
    binary = True

    def sniff(self, sample: Sample) -> float:
        if _is_parquet(sample):
            cols = set(_parquet_columns(sample))
        else:
            header = sample.csv_header
            if header is None:
                return 0.0
            cols = set(header)
        if set(SIGNATURE) <= cols:
            return 0.95
        return 0.0

    def parse(self, sample: Sample, meta: ImportMeta) -> Parsed:
        issues: list[Issue] = []
        positions = None
        if _is_parquet(sample):
            df = self._read_parquet(sample)
        else:
            df = self._read_csv(sample)
            short = _short_rows(sample.text, df, sample.name, issues)
            if short.any():
                positions = np.flatnonzero(~short) + 1
                df = df.loc[~short].reset_index(drop=True)
        dup = df.columns[df.columns.duplicated()].tolist()
        if dup:
            raise ImportFormatError(f"{sample.name}: column(s) {dup} appear more than once in the header")
        for raw, key in (("hardware_raw", "hardware"), ("model_raw", "model")):
            # A table whose raw names are missing resolves its canonical keys (keys resolve to themselves).
            if key in df.columns:
                df[raw] = df[raw].astype("string").fillna(df[key].astype("string")) if raw in df.columns \
                    else df[key]
        provenance: dict[str, Any] = {"container": "parquet" if _is_parquet(sample) else "csv"}
        return Parsed(runs=df, issues=issues, provenance=provenance, keep_source=True, positions=positions)

    @staticmethod
    def _read_parquet(sample: Sample) -> pd.DataFrame:
        import pyarrow as pa

        try:
            return pd.read_parquet(io.BytesIO(sample.data))
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise ImportFormatError(f"{sample.name}: not a readable Parquet file ({exc})") from exc

    @staticmethod
    def _read_csv(sample: Sample) -> pd.DataFrame:
        try:
            # Everything as text: type inference would turn "0.10" versions into 0.1 and
            # ids into numbers; each column is converted by its canonical kind instead.
            df = pd.read_csv(io.StringIO(sample.text), dtype=str, keep_default_na=False, na_values=[""],
                             skipinitialspace=False)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
            raise ImportFormatError(f"{sample.name}: not a readable canonical CSV ({exc}); expected a header "
                                    "with canonical column names and one row per run") from exc
        df.columns = [str(c).strip() for c in df.columns]
        for c in df.columns:
            if c in _FLOAT or is_extra_column(c):
                df[c] = _exact_float(df[c])
        return df
