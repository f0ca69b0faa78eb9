"""Generic CSV importer (format ``csv``) and the CSV reading helper of the CSV family.

A plain CSV is only read this way when the user forces ``--format csv`` and says
which source column holds which canonical column (``ImportMeta.column_map``);
:meth:`GenericCsvImporter.sniff` therefore always returns 0.

:func:`read_csv_rows` is shared by the CSV-family importers: it reads a file
vectorised (pandas' C parser) while keeping every physical line, so blank
lines, short rows and rows with too many fields can be reported by the row
number a user sees. Row numbers are line numbers relative to the header: data
row ``N`` is line ``N + 1`` of a file whose header is on line 1 (blank lines
count, as in an editor or a spreadsheet).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import ImportFormatError
from ..schema import COLUMN_NAMES, LATENCY_COLUMNS, is_extra_column
from .base import Importer, ImportMeta, Issue, Parsed, Sample, register

__all__ = [
    "GenericCsvImporter",
    "CsvRows",
    "read_csv_rows",
    "numeric_column",
    "numeric_columns",
    "row_checks",
    "short_row_issues",
    "require_columns",
    "csv_header_has",
    "MISSING_TOKENS",
]

#: Cell texts that mean "no value" in the CSV family (besides an empty cell).
MISSING_TOKENS: tuple[str, ...] = ("-", "N/A", "n/a", "NA", "nan", "NaN", "None", "null")

# Extra slack columns so rows with a few fields too many still parse on the fast path.
_PAD_COLUMNS = 4


@dataclass
class CsvRows:
    """A CSV file read line by line into positional columns.

    Attributes
    ----------
    header
        Header names as written, stripped of surrounding spaces.
    frame
        One row per physical line after the header (blank lines included), columns
        ``c0 .. c{k}``: the header's columns then slack columns that are only
        filled by rows with too many fields.
    source_row
        1-based row number of each frame row (line number minus the header line).
    blank
        True for blank (or all-empty) lines.
    too_long
        True for rows with more fields than the header.
    n_fields
        Fields written on each row that has fewer than the header (a short or truncated
        row: pandas fills its missing cells with NaN, which would read as empty cells);
        the header's count on every other row (``too_long`` says which have more).
    cut_off
        The text does not end with a line break: its last row may be cut mid-field.
    """

    header: list[str]
    frame: pd.DataFrame
    source_row: np.ndarray
    blank: np.ndarray
    too_long: np.ndarray
    n_fields: np.ndarray
    cut_off: bool = False

    @property
    def too_short(self) -> np.ndarray:
        """True for non-blank rows with fewer fields than the header."""
        return ~self.blank & (self.n_fields < len(self.header))

    def col(self, name: str) -> pd.Series:
        """The column under header ``name`` (as written, stripped)."""
        return self.frame[f"c{self.header.index(name)}"]

    def fields(self, i: int) -> list[str]:
        """The fields of frame row ``i`` as text (trailing empty fields dropped)."""
        vals = self.frame.iloc[i].tolist()
        out = ["" if _isna(v) else _text(v) for v in vals]
        while out and out[-1] == "":
            out.pop()
        return out


def _isna(v: object) -> bool:
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def _text(v: object) -> str:
    # Floats parsed by pandas print back exactly with repr; whole floats lose the ".0".
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def read_csv_rows(sample: Sample, *, text_columns: Iterable[str] = (), all_text: bool = False) -> CsvRows:
    """Read a CSV file vectorised, keeping blank, short and long lines visible.

    Parameters
    ----------
    sample
        The file.
    text_columns
        Header names (as written, stripped) to read as text even when they look numeric.
    all_text
        Read every column as text (for small files whose cells mix numbers and markers).

    Returns
    -------
    CsvRows

    Raises
    ------
    ImportFormatError
        The file has no header line, or is not UTF-8 text.
    """
    lines_before = 0
    header_line = None
    for line in io.StringIO(sample.text_head):
        if line.strip():
            header_line = line
            break
        lines_before += 1
    if header_line is None:
        raise ImportFormatError(f"{sample.name}: the file is empty; expected a CSV with a header line")
    try:
        header = [h.strip() for h in next(csv.reader([header_line]))]
    except (csv.Error, StopIteration) as exc:
        raise ImportFormatError(f"{sample.name}: the header line is not valid CSV ({exc})") from exc
    ncols = len(header)
    names = [f"c{i}" for i in range(ncols + _PAD_COLUMNS)]
    text_set = set(text_columns)
    if all_text:
        dtype: object = str
    else:
        dtype = {f"c{i}": str for i, h in enumerate(header) if h in text_set}
    try:
        # Bytes, not decoded text: the C parser decodes faster than a StringIO feeds it.
        frame = pd.read_csv(io.BytesIO(sample.data), header=None, names=names, skiprows=lines_before + 1,
                            skip_blank_lines=False, dtype=dtype, engine="c", keep_default_na=False,
                            na_values=[""], quotechar='"')
    except pd.errors.ParserError:
        frame = _read_slow(sample.text, lines_before + 1, ncols)
    except pd.errors.EmptyDataError:
        frame = pd.DataFrame({c: pd.Series(dtype=str) for c in names})
    if all_text:
        frame = frame.astype(object)
    n = len(frame)
    blank = frame.isna().all(axis=1).to_numpy()
    extra = [c for c in frame.columns if int(c[1:]) >= ncols]
    too_long = frame[extra].notna().any(axis=1).to_numpy() if extra else np.zeros(n, dtype=bool)
    n_fields = _field_counts(sample.text, lines_before + 1, frame, ncols, blank)
    return CsvRows(header=header, frame=frame, source_row=np.arange(1, n + 1), blank=blank, too_long=too_long,
                   n_fields=n_fields, cut_off=not sample.text.endswith(("\n", "\r")))


def _field_counts(text: str, skip: int, frame: pd.DataFrame, ncols: int, blank: np.ndarray) -> np.ndarray:
    """Fields on each data row whose last header column is empty (the header's count elsewhere).

    A row cut short ("a,b" under a header "a,b,c", or a file cut off mid-row) and a row
    that writes the last cell empty ("a,b,") read alike in pandas; only the raw line
    tells them apart. Only rows whose last cell is empty are looked at, so a file
    without such rows costs nothing.
    """
    counts = np.full(len(frame), ncols, dtype="int64")
    candidates = np.flatnonzero(frame[f"c{ncols - 1}"].isna().to_numpy() & ~blank)
    if not len(candidates):
        return counts
    body = text.split("\n")[skip:]
    if body and body[-1] == "":
        body.pop()  # the file's final newline ends the last row; it starts no new one
    if len(body) == len(frame):
        for i in candidates:
            line = body[i].rstrip("\r")
            # Without a quote every comma separates two fields; the csv module only for quoted lines.
            counts[i] = line.count(",") + 1 if '"' not in line else len(next(csv.reader([line]), []))
    else:
        # A quoted field spans lines: count each record with the csv module instead.
        every = [len(r) for r in csv.reader(io.StringIO("\n".join(body)))]
        if len(every) == len(frame):
            for i in candidates:
                counts[i] = every[i]
    return counts


def _read_slow(text: str, skip: int, ncols: int) -> pd.DataFrame:
    """Line-by-line fallback for files with rows far longer than the header."""
    body = io.StringIO(text)
    for _ in range(skip):
        body.readline()
    rows = [r for r in csv.reader(body)]
    width = max([ncols + _PAD_COLUMNS] + [len(r) for r in rows])
    data = [[(v if v.strip() != "" else None) for v in r] + [None] * (width - len(r)) for r in rows]
    return pd.DataFrame(data, columns=[f"c{i}" for i in range(width)], dtype=object)


def numeric_column(s: pd.Series, *, missing: Iterable[str] = MISSING_TOKENS) -> tuple[pd.Series, np.ndarray]:
    """A column as float64 plus a mask of cells that held text that is not a number.

    Parameters
    ----------
    s
        The column as read (numbers or text).
    missing
        Cell texts that mean "no value" (become NaN without being flagged).

    Returns
    -------
    (values, bad)
        ``values`` as float64 (NaN where missing or bad); ``bad`` True where the
        cell held something that is neither a number nor a missing marker.
    """
    if pd.api.types.is_numeric_dtype(s.dtype):
        return s.astype("float64"), np.zeros(len(s), dtype=bool)
    txt = s.astype("string").str.strip()
    is_missing = txt.isna() | (txt == "") | txt.isin(list(missing))
    num = pd.to_numeric(txt.where(~is_missing), errors="coerce").astype("float64")
    bad = (num.isna() & ~is_missing).fillna(False).to_numpy(dtype=bool)
    return num, bad



def csv_header_has(sample: Sample, keys: Iterable[str]) -> bool:
    """Whether the sample is a CSV whose header holds every one of ``keys`` (lower-case)."""
    header = sample.csv_header
    if not header:
        return False
    return set(keys) <= {h.lower() for h in header}


def row_checks(rows: CsvRows, file: str) -> tuple[np.ndarray, list[Issue]]:
    """The rows to keep and the issues of the file's shape.

    Blank lines are skipped with an ``info`` issue; rows with more fields than
    the header, and rows with fewer (a short or truncated row, see
    :func:`short_row_issues`), are skipped with an ``error`` issue naming the counts.
    """
    keep = ~rows.blank
    issues = [Issue(file, int(r), None, "blank line skipped", "info") for r in rows.source_row[rows.blank]]
    for i in np.flatnonzero(rows.too_long & keep):
        issues.append(Issue(file, int(rows.source_row[i]), None,
                            f"expected {len(rows.header)} fields, found {len(rows.fields(i))}; row skipped"))
        keep[i] = False
    issues += short_row_issues(rows, keep, file)
    return keep, issues


def short_row_issues(rows: CsvRows, keep: np.ndarray, file: str, *, warn: bool = True) -> list[Issue]:
    """Issues for rows with fewer fields than the header: the last row of a file cut off mid-row is dropped
    from ``keep`` (in place) with an error; any other short row is kept, its missing cells empty, with a
    warning.

    A file that stops without a line break was cut off: its last row's last field may be cut too (a model
    name "NousResea", a number "12" of "1234.5"), so none of that row is kept (the cut name had failed the
    whole import as an unknown model). A short row that ends with a line break was written short: its
    fields are whole (LLM-Inference-Bench's ttft_itl.csv leaves end_latency off three GH200 rows), and a
    missing cell the importer needs is reported as missing by its own checks. Each issue names the row, the
    first missing column (``column``) and every missing one. ``warn=False``: no warning for the rows kept (an
    importer that reports their missing cells itself).
    """
    issues = []
    short = np.flatnonzero(rows.too_short & keep)
    written = np.flatnonzero(~rows.blank)
    last = int(written[-1]) if len(written) else -1
    for i in short:
        k = int(rows.n_fields[i])
        missing = rows.header[k:]
        head = (f"expected {len(rows.header)} fields, found {k} (a short or truncated row): no value for "
                "column(s) " + ", ".join(repr(h) for h in missing))
        if rows.cut_off and i == last:
            issues.append(Issue(file, int(rows.source_row[i]), missing[0],
                                head + "; row skipped (the file ends mid-row: its last field may be cut too)"))
            keep[i] = False
        elif warn:
            issues.append(Issue(file, int(rows.source_row[i]), missing[0], head + "; read as empty",
                                "warning"))
    return issues


def require_columns(rows: CsvRows, names: Iterable[str], file: str, label: str, *, exact: bool = False) -> None:
    """Refuse a file whose header lacks a column the importer needs (instead of a bare ``KeyError``).

    Parameters
    ----------
    rows
        The file as read.
    names
        The columns needed, compared without surrounding spaces.
    file
        The file's name, for the message.
    label
        The format's human name, for the message.
    exact
        Compare case too (for importers that look columns up as written).

    Raises
    ------
    ImportFormatError
        One or more columns are missing (the message names them all and lists the file's columns).
    """
    fold = (lambda h: h.strip()) if exact else (lambda h: h.strip().lower())
    have = {fold(h) for h in rows.header}
    missing = [n for n in names if fold(n) not in have]
    if missing:
        raise ImportFormatError(
            f"{file}: missing column(s) " + ", ".join(repr(m) for m in missing) + f" that a {label} file has; "
            "columns found: " + ", ".join(repr(h) for h in rows.header))


def numeric_columns(rows: CsvRows, names: Iterable[str], keep: np.ndarray, issues: list[Issue], file: str, *,
                    columns: Mapping[str, str] | None = None,
                    expected: str = "a number") -> dict[str, pd.Series]:
    """The columns ``names`` that the file has, as float64 (see :func:`numeric_column`).

    A kept row whose cell is neither a number nor a missing marker gets an issue
    ("expected ``expected``, got ...") and is dropped from ``keep`` (in place).
    ``columns`` maps a name to the file's header for it (default: the name is the
    header); the result is keyed by name.
    """
    out: dict[str, pd.Series] = {}
    for name in names:
        header = columns.get(name) if columns is not None else (name if name in rows.header else None)
        if header is None:
            continue
        values, bad = numeric_column(rows.col(header))
        for i in np.flatnonzero(bad & keep):
            issues.append(Issue(file, int(rows.source_row[i]), header,
                                f"expected {expected}, got {rows.col(header).iloc[i]!r}; row skipped"))
        keep &= ~bad
        out[name] = values
    return out


@register
class GenericCsvImporter(Importer):
    """Any CSV with a user-given mapping of canonical columns to source columns."""

    name = "csv"
    label = "generic CSV (column mapping)"
    description = ("Any CSV: pass --map canonical=source for each column (and --latency-unit s|ms); "
                   "hardware/model/framework may be supplied instead of mapped.")
    has_hardware = True
    has_model = True
    reads_column_map = True

    def sniff(self, sample: Sample) -> float:
        # A plain CSV is only read this way when forced: guessing a mapping would be silent guessing.
        return 0.0

    def parse(self, sample: Sample, meta: ImportMeta) -> Parsed:
        """Read the mapped columns; missing required ones are an error listing every gap.

        Raises
        ------
        ImportFormatError
            No ``column_map``; a mapped source column is not in the file; a required
            canonical column is neither mapped nor supplied (the message lists every
            missing mapping and the file's columns).
        """
        rows = read_csv_rows(sample, all_text=True)
        available = rows.header
        cmap: Mapping[str, str] = meta.column_map or {}
        avail_txt = ", ".join(repr(h) for h in available)
        if not cmap:
            raise ImportFormatError(
                f"{sample.name}: format 'csv' needs a column mapping (--map canonical=source, e.g. "
                f"--map output_throughput_tok_s=tput; in the app, the upload form's Column mapping). Columns in "
                f"the file: {avail_txt}")
        problems: list[str] = []
        unknown = [c for c in cmap if c not in COLUMN_NAMES and not is_extra_column(c)]
        if unknown:
            problems.append("not canonical column(s): " + ", ".join(repr(c) for c in unknown)
                            + " (use a canonical name, or a fw_/hw_ prefix for extras)")
        absent = [f"{c}={s!r}" for c, s in cmap.items() if s.strip() not in available]
        if absent:
            problems.append("mapped source column(s) not in the file: " + ", ".join(absent))
        supplied = {"hardware_raw": meta.hardware, "model_raw": meta.model, "framework": meta.framework,
                    "input_len_tok": meta.input_len_tok, "output_len_tok": meta.output_len_tok}
        mapped = {("hardware_raw" if c == "hardware" else "model_raw" if c == "model" else c): s
                  for c, s in cmap.items()}
        required = ("hardware_raw", "model_raw", "framework", "input_len_tok", "output_len_tok", "load_kind")
        missing = [c for c in required if c not in mapped and supplied.get(c) is None
                   and c != "load_kind"]
        has_tput = any(c in mapped for c in ("output_throughput_tok_s", "total_throughput_tok_s",
                                            "request_throughput_rps"))
        if not has_tput:
            missing.append("output_throughput_tok_s (or total_throughput_tok_s / request_throughput_rps)")
        if missing:
            # "(CLI) or the ... upload form", the words perfmodel.ui.forms.in_form_words gives the page's own: "on
            # the command line" had read "the form's Framework on the command line" there
            hint = {c: f"{w} (or --{w} (CLI) or the {w} field of the upload form)"
                    for c, w in (("hardware_raw", "hardware"), ("model_raw", "model"), ("framework", "framework"))}
            # the lengths can be given for the whole file too: the message had named only the mapping
            hint.update({c: f"{c} (or --{w} (CLI) or the {label} field of the upload form)"
                         for c, w, label in (("input_len_tok", "input-len", "Input tokens"),
                                             ("output_len_tok", "output-len", "Output tokens"))})
            problems.append("required canonical column(s) not mapped: "
                            + ", ".join(hint.get(m, m) for m in missing))
        if problems:
            raise ImportFormatError(f"{sample.name}: cannot read with format 'csv': " + "; ".join(problems)
                                    + f". Columns in the file: {avail_txt}")

        keep, issues = row_checks(rows, sample.name)
        out: dict[str, pd.Series] = {}
        scale = 1e-3 if meta.latency_unit == "ms" else 1.0
        for canon, src in mapped.items():
            s = rows.col(src.strip())
            if canon in COLUMN_NAMES and _is_text_column(canon):
                out[canon] = s.astype("string").str.strip()
                continue
            num, bad = numeric_column(s)
            for i in np.flatnonzero(bad & keep)[:50]:
                issues.append(Issue(sample.name, int(rows.source_row[i]), src,
                                    f"expected a number for {canon}, got {s.iloc[i]!r}; row skipped"))
            keep &= ~bad
            if canon in LATENCY_COLUMNS:
                num = num * scale
            out[canon] = num
        if meta.latency_unit is None and any(c in LATENCY_COLUMNS for c in mapped):
            issues.append(Issue(sample.name, None, None, "latency unit not given; latency columns read as "
                                "seconds (pass --latency-unit ms if they are milliseconds)", "warning"))
        runs = pd.DataFrame(out)
        runs["source_row"] = rows.source_row
        if "load_kind" not in runs.columns and meta.load_kind is None:
            runs["load_kind"] = "concurrency" if "batch_size" in runs.columns else "offline"
            issues.append(Issue(sample.name, None, "load_kind", f"load kind not mapped; assumed "
                                f"{runs['load_kind'].iloc[0] if len(runs) else 'offline'!r}", "warning"))
        if "throughput_basis" not in runs.columns:
            outp = "output_throughput_tok_s" in runs.columns
            tot = "total_throughput_tok_s" in runs.columns
            runs["throughput_basis"] = ("output+total" if outp and tot else "output" if outp
                                        else "total" if tot else "none")
        runs = runs.loc[keep].reset_index(drop=True)
        return Parsed(runs=runs, issues=issues, provenance={"column_map": dict(cmap)})


def _is_text_column(name: str) -> bool:
    from ..schema import column

    return column(name).kind in ("str", "datetime")
