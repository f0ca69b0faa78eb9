"""Importer contract, registry, content sniffing and the shared finishing step.

An importer turns one file into *raw* canonical rows (:class:`Parsed`): canonical
column names, but hardware and model still as written in the file
(``hardware_raw``, ``model_raw``) and metadata possibly missing. The shared
:func:`finalize` then fills in what the user supplied (:class:`ImportMeta`) where
the file is silent, resolves names through the catalogs, derives the throughput
columns that follow exactly from the lengths, checks every row with
:func:`perfmodel.schema.check_runs`, drops invalid rows into row-level
:class:`Issue` records, and returns an :class:`ImportResult`.

Formats are chosen by content, not by file name: every importer scores a
:class:`Sample` of the file with :meth:`Importer.sniff`, and the best score wins.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from ..errors import ImportFormatError, PerfmodelError, Problem, UnknownNameError, as_written
from ..schema import check_runs, coerce_runs

__all__ = [
    "Issue",
    "ImportMeta",
    "Parsed",
    "ImportResult",
    "Sample",
    "Importer",
    "check_dtype",
    "check_burstiness",
    "register",
    "registry",
    "detect_format",
    "read_file",
    "finalize",
    "loads_lenient",
    "ms_to_s",
    "dig",
    "stat_columns",
]

HEAD_BYTES = 256 * 1024

#: CLI option that supplies each canonical column a file may omit (for messages).
META_OPTIONS = {
    "hardware": "--hardware", "model": "--model", "framework": "--framework",
    "framework_version": "--framework-version", "device_count": "--device-count", "tp_size": "--tp",
    "pp_size": "--pp", "weight_dtype": "--weight-dtype", "kv_cache_dtype": "--kv-cache-dtype",
    "quantization": "--quantization", "repeat_idx": "--repeat", "input_len_tok": "--input-len",
    "output_len_tok": "--output-len", "batch_size": "--batch-size", "load_kind": "--load-kind",
    "arrival": "--arrival", "burstiness": "--burstiness", "throughput_basis": "--format",
}
#: ImportMeta field -> the runs column it fills (hardware and model are resolved later from the raw
#: names); load_kind comes before batch_size, whose meaning it gives.
META_COLUMNS = {
    "hardware": "hardware_raw", "model": "model_raw", "framework": "framework",
    "framework_version": "framework_version", "device_count": "device_count", "tp_size": "tp_size",
    "pp_size": "pp_size", "weight_dtype": "weight_dtype", "kv_cache_dtype": "kv_cache_dtype",
    "quantization": "quantization", "repeat_idx": "repeat_idx", "input_len_tok": "input_len_tok",
    "output_len_tok": "output_len_tok", "load_kind": "load_kind", "batch_size": "batch_size",
    "arrival": "arrival",
}
_NUMERIC_META = frozenset({"device_count", "tp_size", "pp_size", "repeat_idx", "input_len_tok", "output_len_tok",
                           "batch_size"})
#: :func:`perfmodel.schema.check_runs`'s error of a batch or concurrency row without a batch size.
_NEEDS_BATCH = "a static_batch or concurrency point needs a batch size"
#: Cell texts the schema reads as "no value" (besides NA): a supplied value fills them.
_BLANK_TEXTS = ("", "nan", "NaN", "<NA>")
MAX_ISSUES_PER_FILE = 1000
#: The warning of a file whose device count was assumed (a duplicate check reads such a count as unrecorded).
ASSUMED_DEVICE_COUNT = ("the file does not say how many devices were used; assumed tp × pp or 1 "
                        "(pass --device-count)")

Severity = Literal["error", "warning", "info"]


@dataclass(frozen=True)
class Issue:
    """A row-level (or file-level, ``row=None``) import issue.

    ``severity="error"`` means the row was dropped; ``"warning"`` that it was
    kept but something was assumed or looks wrong; ``"info"`` a note.
    """

    file: str
    row: int | None
    column: str | None
    message: str
    severity: Severity = "error"

    def __str__(self) -> str:
        return str(Problem(self.message, file=self.file, row=self.row, column=self.column))

    @classmethod
    def from_problem(cls, p: Problem, severity: Severity = "error") -> Issue:
        return cls(file=p.file or "", row=p.row, column=p.column, message=p.message, severity=severity)


class ImportMeta(BaseModel):
    """What the user knows about a file that the file may not say.

    Values given here fill what the file does not record: a row that records its
    own value keeps it (a sweep over batch sizes or lengths must not collapse into
    one point), and rows that disagree with the supplied value are reported once
    per column as a warning. A hardware or model name written in the file that the
    catalog does not know is the exception: the supplied name is read for it (with
    a warning), since the user has said what ran. ``column_map`` (canonical column -> source column) and
    ``latency_unit`` (how latency columns are written) are read only by the generic
    CSV importer; other formats refuse them rather than ignore them. ``weight_dtype`` and
    ``kv_cache_dtype`` must name a dtype the catalog knows (:func:`check_dtype`): a typo such as
    ``fp9`` is refused, naming the option and the valid values, instead of being stored.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    hardware: str | None = Field(None, description="hardware name or alias from the catalog")
    model: str | None = Field(None, description="model name or alias from the catalog")
    framework: str | None = None
    framework_version: str | None = None
    device_count: int | None = Field(None, gt=0)
    tp_size: int | None = Field(None, gt=0)
    pp_size: int | None = Field(None, gt=0)
    weight_dtype: str | None = None
    kv_cache_dtype: str | None = None
    quantization: str | None = None
    repeat_idx: int | None = Field(None, ge=0)
    input_len_tok: float | None = Field(None, ge=0, description="input length, for files that do not record it")
    output_len_tok: float | None = Field(None, gt=0, description="output length, for files that do not record it")
    batch_size: float | None = Field(None, gt=0, description="batch size or concurrency, when the file omits it")
    load_kind: Literal["static_batch", "concurrency", "request_rate", "offline"] | None = None
    arrival: Literal["constant", "poisson", "gamma", "trace"] | None = Field(
        None, description="how a request-rate run's requests arrive, for files that do not say (request-rate rows only)")
    burstiness: float | None = Field(
        None, description="the gamma shape of the arrival gaps (vLLM's --burstiness), with arrival 'gamma' only: "
                          "below 1 burstier than Poisson, above 1 more even (:func:`check_burstiness`)")
    column_map: dict[str, str] | None = Field(None, description="canonical column -> source column (generic CSV)")
    latency_unit: Literal["s", "ms"] | None = Field(None, description="unit of latency columns (generic CSV)")

    @field_validator("weight_dtype", "kv_cache_dtype")
    @classmethod
    def _known_dtype(cls, value: str | None, info: ValidationInfo) -> str | None:
        """A dtype the catalog knows (:data:`perfmodel.physics.DTYPE_BYTES`, in any spelling
        :func:`perfmodel.catalog.canonical_dtype` maps); blank is not given. The value is kept as written."""
        if value is None or not value.strip():
            return None
        return check_dtype(value, META_OPTIONS[str(info.field_name)])

    @field_validator("burstiness")
    @classmethod
    def _gamma_shape(cls, value: float | None, info: ValidationInfo) -> float | None:
        """A gamma arrival's shape, checked against the arrival given with it (declared before it)."""
        if value is None:
            return None
        return check_burstiness(info.data.get("arrival"), value)


def _fill_arrival(runs: pd.DataFrame, value: str, issues: list[Issue], file: str,
                  burstiness: float | None = None) -> None:
    """``--arrival`` (and ``--burstiness``, a gamma arrival's shape): the arrival process of the file's
    request-rate rows that do not record one (inference-perf and SGLang's reports do not say; their runs' configs
    do). Rows of other load kinds take none: nothing arrives at a rate there. A row that records its own arrival
    keeps it, with a warning as every supplied value gives. The rows it was not applied to are said once."""
    rate = (runs["load_kind"].astype("string") == "request_rate").fillna(False).to_numpy(dtype=bool) \
        if "load_kind" in runs.columns else np.zeros(len(runs), dtype=bool)
    if "arrival" not in runs.columns:
        runs["arrival"] = pd.Series([None] * len(runs), index=runs.index, dtype=object)
    blank = _blank(runs["arrival"])
    fill = rate & blank
    shape = 1.0 if value == "poisson" else burstiness  # vLLM's burstiness 1 is Poisson
    if fill.any():
        runs["arrival"] = runs["arrival"].astype(object).where(~fill, value)
        if shape is not None:
            b = pd.to_numeric(runs["burstiness"], errors="coerce") if "burstiness" in runs.columns \
                else pd.Series(np.nan, index=runs.index, dtype="float64")
            runs["burstiness"] = b.where(~(fill & b.isna().to_numpy()), shape)
    said = f"--arrival {value}" + (f" --burstiness {burstiness:g}" if burstiness is not None else "")
    present = np.flatnonzero(rate & ~blank)
    differ = present[~_agrees(runs["arrival"].iloc[present], value, "arrival")] if len(present) else present
    if len(differ):
        row = _row_label(runs, differ[0])
        issues.append(Issue(
            file, row, "arrival",
            f"{said} not applied to {len(differ)} of {len(runs)} row(s) that record a different arrival (first: "
            f"row {row}, where the file says {as_written(runs['arrival'].iloc[differ[0]])}); the file's values were "
            "kept: --arrival only fills rows where the file records none", "warning"))
    if not rate.all():
        issues.append(Issue(file, None, "arrival", f"{said} applies to request-rate rows only: "
                                                   f"{int((~rate).sum())} of {len(runs)} row(s) are other loads",
                            "info"))


def check_burstiness(arrival: str | None, burstiness: float) -> float:
    """``burstiness`` when it is a valid shape for ``arrival``; otherwise a clear error.

    The one check behind ``perfmodel import --arrival gamma --burstiness B``, the upload form's fields of those
    names and :class:`ImportMeta`. ``vllm bench serve --burstiness`` draws gamma-distributed gaps of that shape:
    below 1 burstier than Poisson, above 1 more even, and 1 *is* Poisson, which perfmodel stores as arrival
    ``poisson`` with burstiness 1 (as its vLLM importer does): so a gamma of shape 1 is refused with that advice
    rather than stored as a second name of one process. Constant and trace arrivals have no shape.

    Parameters
    ----------
    arrival
        The arrival process given with it (``--arrival``), or None when none was.
    burstiness
        The shape as given.

    Returns
    -------
    float
        ``burstiness`` as a float.

    Raises
    ------
    ValueError
        Not a finite number > 0, 1 with ``gamma``, or given without ``--arrival gamma`` (``--arrival poisson``
        with exactly 1 is accepted); the message names the options and their valid values.
    """
    valid = ("valid: a finite number > 0 other than 1, with --arrival gamma (below 1 burstier than Poisson, above "
             "1 more even; 1 is --arrival poisson)")
    try:
        b = float(burstiness)
    except (TypeError, ValueError):
        raise ValueError(f"--burstiness {burstiness!r} is not a number; {valid}") from None
    if not (math.isfinite(b) and b > 0):
        raise ValueError(f"--burstiness {b:g} is not a gamma shape; {valid}")
    if arrival == "gamma":
        if b == 1:
            raise ValueError("--burstiness 1 with --arrival gamma is a Poisson process: choose --arrival poisson "
                             "(stored with burstiness 1) without --burstiness")
        return b
    if arrival == "poisson" and b == 1:
        return b
    if arrival is None:
        raise ValueError(f"--burstiness {b:g} needs --arrival gamma: it is the shape of a gamma arrival's gaps; "
                         f"{valid}")
    if arrival == "poisson":
        raise ValueError(f"--burstiness {b:g} with --arrival poisson: a Poisson process is burstiness 1; for "
                         "another shape choose --arrival gamma")
    raise ValueError(f"--burstiness {b:g} with --arrival {arrival}: only --arrival gamma takes a burstiness (the "
                     f"shape of its gaps; {arrival} arrivals have none); {valid}")


#: Words of quantization schemes, which name no dtype (the weight dtype option points to --quantization).
_QUANT_WORDS = ("awq", "gptq", "marlin", "nf4", "bnb", "bitsandbytes", "gguf", "w4a16", "w4a8", "w8a8", "w8a16",
                "smoothquant", "squeezellm", "exl2", "hqq", "aqlm", "q4_", "q5_", "q6_", "q8_", "q2_", "q3_")


def check_dtype(value: str, option: str) -> str:
    """``value`` stripped, when it names a dtype the catalog knows; otherwise a clear error.

    Parameters
    ----------
    value
        A weight or KV-cache dtype as the user wrote it (``bf16``, ``bfloat16``, ``torch.float16``, ``fp8_e4m3``).
    option
        The option that gave it, for the message (``--weight-dtype``).

    Returns
    -------
    str
        The value as written, stripped.

    Raises
    ------
    ValueError
        Not a dtype of :data:`perfmodel.physics.DTYPE_BYTES` in any spelling
        :func:`perfmodel.catalog.canonical_dtype` maps; the message names the option and the valid values.
    """
    from ..catalog._specs import DTYPE_ALIASES, canonical_dtype
    from ..physics import DTYPE_BYTES

    text = value.strip()
    key = canonical_dtype(text)
    if key in DTYPE_BYTES:
        return text
    spellings = ", ".join(a for a, k in DTYPE_ALIASES.items() if k in DTYPE_BYTES and a not in DTYPE_BYTES)
    hint = ""
    if option == "--kv-cache-dtype" and key == "auto":
        hint = "; leave --kv-cache-dtype out when the KV cache has the weights' dtype (vLLM's 'auto')"
    elif any(w in key for w in _QUANT_WORDS):
        hint = f"; {text!r} is a quantization scheme: give it with --quantization"
    raise ValueError(f"{option} {text!r} is not a dtype perfmodel knows; valid: {', '.join(DTYPE_BYTES)} "
                     f"(also written {spellings}){hint}")


@dataclass
class Parsed:
    """What an importer's ``parse`` returns: raw canonical rows plus issues.

    ``runs`` uses canonical column names; hardware and model go in
    ``hardware_raw``/``model_raw`` (or are left out when the file does not say);
    ``source_row`` names each row as the user would count it. ``allow_empty``
    marks a file that legitimately holds zero successful points (e.g. every
    request failed): it imports as zero rows with the warning in ``issues``.
    """

    runs: pd.DataFrame
    issues: list[Issue] = field(default_factory=list)
    allow_empty: bool = False
    provenance: dict[str, Any] = field(default_factory=dict)
    #: Keep the ``source_format``/``source_file``/``source_row`` values the rows already
    #: carry (perfmodel's own export re-imported), filling only missing cells; issues
    #: then name rows by their position in this file.
    keep_source: bool = False
    #: With ``keep_source``: each row's 1-based position among the file's data rows, when the
    #: importer left some out (a short row); None means 1..n. Issues name rows by it.
    positions: np.ndarray | None = None


@dataclass(frozen=True)
class ImportResult:
    """A file imported into canonical runs.

    Attributes
    ----------
    runs
        Valid canonical rows (invalid rows were dropped into ``issues``).
    issues
        Row- and file-level issues, errors first.
    format
        The importer's format id.
    file
        The file's base name.
    sha256
        Hex digest of the file's bytes (content address).
    provenance
        Extra facts about the source (client version, date, command line...).
    """

    runs: pd.DataFrame
    issues: tuple[Issue, ...]
    format: str
    file: str
    sha256: str
    provenance: Mapping[str, Any]

    @property
    def n_dropped(self) -> int:
        return len({i.row for i in self.issues if i.severity == "error" and i.row is not None})


class Sample:
    """Lazily decoded views of a file for sniffing and parsing (each computed once)."""

    def __init__(self, path: Path, data: bytes | None = None) -> None:
        self.path = Path(path)
        self.name = self.path.name
        self._data = data

    @cached_property
    def data(self) -> bytes:
        if self._data is not None:
            return self._data
        try:
            return self.path.read_bytes()
        except OSError as exc:
            raise ImportFormatError(f"{self.name}: cannot read the file ({exc.strerror or exc})") from exc

    @cached_property
    def head(self) -> bytes:
        if self._data is not None:
            return self._data[:HEAD_BYTES]
        try:
            with open(self.path, "rb") as fh:
                return fh.read(HEAD_BYTES)
        except OSError as exc:
            raise ImportFormatError(f"{self.name}: cannot read the file ({exc.strerror or exc})") from exc

    @cached_property
    def is_binary(self) -> bool:
        if b"\x00" in self.head:
            return True
        try:
            self.head.decode("utf-8")
        except UnicodeDecodeError as exc:
            # A multi-byte character cut at the end of the head is fine.
            return exc.start < len(self.head) - 4
        return False

    @cached_property
    def text_head(self) -> str:
        return self.head.decode("utf-8", errors="replace").lstrip("\ufeff")

    @cached_property
    def text(self) -> str:
        try:
            return self.data.decode("utf-8").lstrip("\ufeff")
        except UnicodeDecodeError as exc:
            raise ImportFormatError(
                f"{self.name}: not UTF-8 text (bad byte at offset {exc.start}); expected a CSV, JSON, "
                "JSONL, YAML or text report") from exc

    @cached_property
    def first_char(self) -> str:
        s = self.text_head.lstrip()
        return s[:1]

    @cached_property
    def json_doc(self) -> Any:
        """The whole file as one JSON document (``Infinity``/``NaN`` allowed), or None."""
        if self.is_binary or self.first_char not in ("{", "["):
            return None
        try:
            return loads_lenient(self.text)
        except (ValueError, ImportFormatError):
            return None

    @cached_property
    def jsonl_records(self) -> list[Any] | None:
        """Every non-blank line parsed as JSON, or None if any line is not JSON."""
        if self.is_binary or self.first_char != "{":
            return None
        recs = []
        for line in self.text.splitlines():
            if not line.strip():
                continue
            try:
                recs.append(loads_lenient(line))
            except ValueError:
                return None
        return recs or None

    @cached_property
    def records(self) -> list[dict[str, Any]] | None:
        """JSON objects of the file: the document if an object, its items if a list
        of objects, the lines of a JSONL file; None if not JSON."""
        doc = self.json_doc
        if isinstance(doc, dict):
            return [doc]
        if isinstance(doc, list):
            return doc if all(isinstance(d, dict) for d in doc) and doc else None
        recs = self.jsonl_records
        if recs and all(isinstance(r, dict) for r in recs):
            return recs
        return None

    @cached_property
    def csv_header(self) -> list[str] | None:
        """The first non-blank line split as CSV (stripped), or None for JSON/binary."""
        if self.is_binary or self.first_char in ("{", "["):
            return None
        for line in self.text_head.splitlines():
            if line.strip():
                try:
                    row = next(csv.reader(io.StringIO(line)))
                except (csv.Error, StopIteration):
                    return None
                return [c.strip() for c in row] if len(row) > 1 else None
        return None


def loads_lenient(text: str) -> Any:
    """``json.loads`` that also accepts bare ``Infinity``/``-Infinity``/``NaN`` (Python's
    default) and reports errors with line and column."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from exc
    except RecursionError as exc:
        raise ValueError("JSON nested too deeply") from exc


def ms_to_s(v: Any) -> float:
    """Milliseconds to seconds; ``None``/non-numbers become NaN."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return math.nan
    return f / 1000.0



def dig(obj: Any, *keys: str) -> Any:
    """``obj[k1][k2]...`` or None when a key is missing or a level is not a mapping."""
    for k in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(k)
    return obj



def stat_columns(stem: str, stats: Mapping[str, Any], *, p50: Iterable[str] = ("p50",)) -> dict[str, Any]:
    """``{stem}_s``, ``{stem}_p50_s``, ``{stem}_p90_s`` and ``{stem}_p99_s`` from a statistics
    mapping ``{mean, p50, p90, p99}``, values as written (None where absent; no unit conversion).

    ``p50`` names the keys that may hold the median; the first one present wins.
    """
    return {f"{stem}_s": stats.get("mean"),
            f"{stem}_p50_s": next((stats[k] for k in p50 if k in stats), None),
            f"{stem}_p90_s": stats.get("p90"),
            f"{stem}_p99_s": stats.get("p99")}


class Importer(ABC):
    """One source format.

    Subclasses set ``name`` (the ``--format`` id), ``label`` (human name) and
    ``description``, and implement :meth:`sniff` and :meth:`parse`.
    """

    name: ClassVar[str]
    label: ClassVar[str]
    description: ClassVar[str] = ""
    #: True when the format names the hardware / model in the file itself.
    has_hardware: ClassVar[bool] = False
    has_model: ClassVar[bool] = False
    #: Where only some of the format's files name the model, which ones (``perfmodel formats`` shows it).
    model_in_file_note: ClassVar[str | None] = None
    #: True when the format may be binary (Parquet): sniffed and parsed even with NUL bytes.
    binary: ClassVar[bool] = False
    #: True when ``parse`` reads ``ImportMeta.column_map`` and ``latency_unit``; :func:`read_file`
    #: refuses them for any other format instead of silently ignoring them.
    reads_column_map: ClassVar[bool] = False

    @abstractmethod
    def sniff(self, sample: Sample) -> float:
        """Confidence in [0, 1] that ``sample`` is this format (0: certainly not)."""

    @abstractmethod
    def parse(self, sample: Sample, meta: ImportMeta) -> Parsed:
        """Read the file into raw canonical rows.

        Raises
        ------
        ImportFormatError
            When the file is this format but broken as a whole (say which field
            and what was expected).
        """


_REGISTRY: dict[str, Importer] = {}


def register(cls: type[Importer]) -> type[Importer]:
    """Class decorator adding an importer to the registry under ``cls.name``."""
    if cls.name in _REGISTRY:
        raise RuntimeError(f"importer {cls.name!r} registered twice")
    _REGISTRY[cls.name] = cls()
    return cls


def registry() -> dict[str, Importer]:
    """All registered importers by format id (importing every importer module first)."""
    from . import _load_all

    _load_all()
    return dict(_REGISTRY)


def _json_error(sample: Sample) -> str | None:
    """Where a file that claims to be JSON (its name, or a first character ``{``/``[``) stops being JSON:
    ``"line 1, column 2: Expecting property name enclosed in double quotes"``; None for valid JSON, JSON Lines
    or a file that does not claim to be JSON. Only a file small enough to have been read whole is parsed."""
    text = sample.text_head.strip()
    claims = sample.name.lower().endswith(".json") or text[:1] in ("{", "[")
    if not claims or len(sample.head) >= HEAD_BYTES or sample.name.lower().endswith((".jsonl", ".ndjson")):
        return None
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        if len(lines) > 1 and lines[0].lstrip().startswith("{"):  # JSON Lines under another name
            try:
                for ln in lines:
                    json.loads(ln)
                return None
            except json.JSONDecodeError:
                pass
        return f"line {exc.lineno}, column {exc.colno}: {exc.msg}"
    return None


def detect_format(sample: Sample) -> Importer:
    """Pick the importer whose sniff scores ``sample`` highest.

    Raises
    ------
    ImportFormatError
        When the file is binary, empty, or no importer recognises it (the
        message lists the formats known), or two formats tie.
    """
    imps = registry()
    if not sample.head.strip():
        raise ImportFormatError(f"{sample.name}: the file is empty")
    if sample.is_binary:
        for imp in imps.values():
            try:
                if imp.binary and float(imp.sniff(sample)) > 0:
                    return imp
            except PerfmodelError:
                pass
        raise ImportFormatError(
            f"{sample.name}: binary data (NUL bytes or invalid UTF-8 at the start); expected a CSV, JSON, "
            "JSONL, YAML or text report from a benchmark client, or a perfmodel Parquet export")
    scores = []
    for imp in imps.values():
        try:
            s = float(imp.sniff(sample))
        except PerfmodelError:
            s = 0.0
        if s > 0:
            scores.append((s, imp.name))
    scores.sort(reverse=True)
    if not scores and (broken := _json_error(sample)) is not None:
        raise ImportFormatError(f"{sample.name}: not valid JSON ({broken}), so no format can read it")
    if not scores:
        raise ImportFormatError(
            f"{sample.name}: not a recognised benchmark result file. Known formats: "
            + ", ".join(sorted(imps)) + ". For any other CSV pass --format csv with --map "
            "canonical=column options.")
    if len(scores) > 1 and scores[0][0] == scores[1][0]:
        raise ImportFormatError(
            f"{sample.name}: matches several formats equally ({scores[0][1]}, {scores[1][1]}); "
            "choose one with --format")
    return imps[scores[0][1]]


def read_result_file(path: str | Path, *, command: str) -> ImportResult:
    """:func:`read_file` for a command that reads a result file directly but takes no import options (``fit``,
    ``compare``, ``detect``, ``train``): a file that needs them ("supply it with --hardware NAME (CLI)") is
    refused with how to get there, by importing it first. The advice had named options the command does not
    have (``perfmodel fit run.jsonl`` answered "supply it with --hardware NAME").

    Raises
    ------
    ImportFormatError
        As :func:`read_file`, with the way round where the file needs what only ``perfmodel import`` takes.
    """
    try:
        return read_file(path)
    except ImportFormatError as exc:
        if "(CLI)" not in str(exc):
            raise
        name = Path(path).name
        said = re.sub(r";? supply (it|the \w+) with .*?\(CLI\) or the [\w ]*?upload form", "", str(exc))
        raise ImportFormatError(
            f"{said}. `perfmodel {command}` does not take those options: import the file first (`perfmodel import "
            f"{name} --hardware NAME --model NAME ...`) and give {command} the dataset's name or id") from None


def read_file(path: str | Path, *, format: str | None = None, meta: ImportMeta | None = None,
              data: bytes | None = None, name: str | None = None) -> ImportResult:
    """Import one file into canonical runs (nothing is stored).

    Parameters
    ----------
    path
        The file. With ``data`` given, only its name is used.
    format
        Format id to force; auto-detected from the content when None.
    meta
        What the user supplies (hardware, model, ...) for what the file does not record;
        the file's own values win (see :class:`ImportMeta`).
    data
        The file's bytes when they are already in memory (uploads).
    name
        Display name for messages (defaults to the path's base name).

    Returns
    -------
    ImportResult

    Raises
    ------
    ImportFormatError
        The file is unreadable, unrecognised, or broken as a whole; or ``meta`` sets
        ``column_map``/``latency_unit`` for a format that does not read them.
    UnknownNameError
        An unknown ``format`` or a hardware/model name not in the catalog.
    """
    meta = meta or ImportMeta()
    p = Path(path)
    sample = Sample(p, data)
    if name:
        sample.name = name
    if format is not None:
        imps = registry()
        if format not in imps:
            from difflib import get_close_matches

            raise UnknownNameError("format", format, get_close_matches(format, list(imps), n=5, cutoff=0.3)
                                   or sorted(imps))
        imp = imps[format]
        if not sample.head.strip():
            raise ImportFormatError(f"{sample.name}: the file is empty")
        if sample.is_binary and not imp.binary:
            raise ImportFormatError(f"{sample.name}: binary data; expected a {imp.label} file")
    else:
        imp = detect_format(sample)
    refuse_unread_meta(imp, meta, sample.name)
    try:
        parsed = imp.parse(sample, meta)
    except PerfmodelError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, csv.Error,
            UnicodeDecodeError, RecursionError, OverflowError) as exc:
        # A file that looked like this format but whose structure is not what the
        # format promises: say so in one paragraph, never a traceback.
        raise ImportFormatError(
            f"{sample.name}: looks like a {imp.label} file but could not be read "
            f"({type(exc).__name__}: {exc}); expected the structure described for format "
            f"{imp.name!r}. Pass --format to choose another format.") from exc
    digest = hashlib.sha256(sample.data).hexdigest()
    return finalize(parsed, meta=meta, fmt=imp.name, file=sample.name, sha256=digest,
                    has_hardware=imp.has_hardware, has_model=imp.has_model)


def refuse_unread_meta(imp: Importer, meta: ImportMeta, file: str) -> None:
    """Refuse ``column_map``/``latency_unit`` for a format that does not read them.

    Raises
    ------
    ImportFormatError
        ``meta`` sets either and ``imp`` is not the generic CSV importer: a unit the
        format does not use, silently ignored, would leave the user believing their
        values were converted.
    """
    if imp.reads_column_map:
        return
    unused = [opt for opt, v in (("--map", meta.column_map), ("--latency-unit", meta.latency_unit)) if v]
    if unused:
        given = " and ".join(unused)
        raise ImportFormatError(
            f"{file}: {given} {'apply' if len(unused) > 1 else 'applies'} only to format 'csv' (any CSV "
            f"read with --format csv --map ...), but this file is read as {imp.name!r}, which records its "
            f"own columns and units; drop {given} for this file")


def _blank(s: pd.Series) -> np.ndarray:
    """Cells that hold no value (NA, or text the schema reads as empty)."""
    miss = s.isna().to_numpy(dtype=bool)
    if not pd.api.types.is_numeric_dtype(s.dtype):
        txt = s.astype("string").str.strip()
        miss = miss | txt.isin(_BLANK_TEXTS).fillna(True).to_numpy(dtype=bool)
    return miss


def _agrees(values: pd.Series, value: Any, name: str) -> np.ndarray:
    """Whether each (present) file value means the same as the supplied ``value``."""
    if name in _NUMERIC_META:
        num = pd.to_numeric(values, errors="coerce").astype("float64").to_numpy()
        with np.errstate(invalid="ignore"):
            return num == float(value)
    from .. import catalog

    def key(text: str) -> str | None:
        # Spellings of one catalog entry or framework agree: only a real difference is reported.
        if name in ("hardware", "model"):
            resolver = catalog.resolve_hardware if name == "hardware" else catalog.resolve_model
            try:
                return str(resolver(text).key)
            except UnknownNameError:
                # A name the catalog does not know is read as the supplied one (finalize warns).
                return None
        if name == "framework":
            return catalog.canonical_framework(text)
        return text.strip().casefold()

    # One comparison per distinct value, not per row (a million rows).
    codes, uniques = pd.factorize(values.astype("string").str.strip())
    want = key(str(value))
    same = np.array([key(str(u)) in (want, None) for u in uniques], dtype=bool)
    return same[codes] if len(uniques) else np.zeros(len(values), dtype=bool)


def _fill_supplied(runs: pd.DataFrame, meta: ImportMeta, issues: list[Issue], file: str) -> None:
    """Fill each column the user supplied where the file records no value.

    A row that records its own value keeps it: the supplied value describes files
    that do not say (``--batch-size``: "for files that do not record it"), and
    overwriting would collapse a sweep into one point. ``--load-kind`` says what
    ``--batch-size`` means, so a batch size is not put on a row the file records as
    another kind of point (a request-rate run has no batch size). The rows left
    alone are reported once per column, naming the option, how many rows and the
    first one.
    """
    for name, col in META_COLUMNS.items():
        value = getattr(meta, name)
        if value is None:
            continue
        opt = META_OPTIONS[name]
        if name == "arrival":
            _fill_arrival(runs, value, issues, file, meta.burstiness)
            continue
        numeric = name in _NUMERIC_META
        if col not in runs.columns:
            if name != "batch_size" or "load_kind" not in runs.columns:
                runs[col] = value  # a broadcast scalar: fast on a million rows
                continue
            runs[col] = np.nan
        cur = runs[col]
        missing = _blank(cur)
        fill = missing
        if name == "batch_size" and "load_kind" in runs.columns:
            lk = runs["load_kind"]
            kinds = (meta.load_kind,) if meta.load_kind is not None else ("static_batch", "concurrency")
            fill = missing & (_blank(lk) | lk.astype("string").str.strip().isin(kinds).fillna(False)
                              .to_numpy(dtype=bool))
            other = np.flatnonzero(missing & ~fill)
            if len(other):
                row = _row_label(runs, other[0])
                why = (f"not as {meta.load_kind!r} ones (--load-kind says what --batch-size means)"
                       if meta.load_kind is not None else "which take no batch size")
                issues.append(Issue(
                    file, row, name,
                    f"{opt} {as_written(value)} not applied to {len(other)} of {len(runs)} row(s) that the file records "
                    f"as {as_written(str(lk.iloc[other[0]]).strip())} points (first: row {row}), {why}", "warning"))
        if fill.all():
            runs[col] = value
        elif fill.any():
            if numeric and pd.api.types.is_numeric_dtype(cur.dtype):
                runs[col] = cur.astype("float64").where(~fill, float(value))
            else:
                runs[col] = cur.astype(object).where(~fill, value)
        present = np.flatnonzero(~missing)
        differ = present[~_agrees(cur.iloc[present], value, name)] if len(present) else present
        if len(differ):
            row = _row_label(runs, differ[0])
            issues.append(Issue(
                file, row, name,
                f"{opt} {as_written(value)} not applied to {len(differ)} of {len(runs)} row(s) that record a different "
                f"{name} (first: row {row}, where the file says {as_written(cur.iloc[differ[0]])}); the file's values "
                f"were kept: {opt} only fills rows where the file records none", "warning"))


def _too_few_devices(runs: pd.DataFrame, assumed: np.ndarray, devices: np.ndarray, issues: list[Issue],
                     file: str) -> None:
    """Where an assumed device count cannot hold the model's weights, say so: the count is then known to be
    wrong, not just unrecorded (vLLM's console log of MiniMax-M2.5, 230 B parameters in fp8, on "1" H100 of
    86 GB). A row that states no weight dtype is measured at 4 bits per weight, the fewest in common use, so
    that a quantized checkpoint is never called too big."""
    if not assumed.any() or not {"hardware", "model"} <= set(runs.columns):
        return
    from .. import catalog

    stated = np.full(len(runs), np.nan)
    if "weight_dtype" in runs.columns:
        codes, uniques = pd.factorize(runs["weight_dtype"].astype("string"))
        per = np.array([_dtype_bytes_of(u) for u in uniques] + [math.nan], dtype=float)
        stated = per[codes]  # code -1 (blank) reads the trailing NaN
    nbytes = np.where(np.isnan(stated), 0.5, stated)
    keys = pd.DataFrame({"hw": runs["hardware"].astype("string"), "model": runs["model"].astype("string"),
                         "bytes": nbytes, "dev": devices})
    over = np.zeros(len(runs), dtype=bool)
    first, first_pos = "", len(runs)
    # one check per configuration, not per row (a million rows)
    for (hw_key, model_key, b, dev), idx in keys[assumed].groupby(["hw", "model", "bytes", "dev"]).groups.items():
        try:
            hw, model = catalog.resolve_hardware(str(hw_key)), catalog.resolve_model(str(model_key))
        except PerfmodelError:
            continue
        mem = getattr(hw, "memory_bytes", None)  # a stub catalog's specs may carry no figures
        if mem is None or getattr(model, "params_b", None) is None or model.weight_bytes(float(b)) <= mem * dev:
            continue
        pos = runs.index.get_indexer(idx)
        over[pos] = True
        if pos.min() < first_pos:
            first_pos = int(pos.min())
            unknown = " (the fewest in common use: the file states no weight dtype)" if b == 0.5 and \
                np.isnan(stated[pos]).all() else ""
            first = (f"{model.key}'s weights, {model.weight_bytes(float(b)) / 1e9:,.0f} GB at {b * 8:g} bits per "
                     f"weight{unknown}, exceed the {mem * dev / 1e9:,.0f} GB of {dev:g} x {hw.key}")
    if over.any():
        row = _row_label(runs, first_pos)
        issues.append(Issue(
            file, row, "device_count",
            f"{int(over.sum())} of {len(runs)} row(s) were assumed to run on fewer devices than their weights need "
            f"(first: row {row}: {first}): the device count stored is wrong; pass --device-count", "warning"))


def _dtype_bytes_of(dtype: object) -> float:
    """Bytes per weight of a dtype as written (NaN when blank or not a dtype perfmodel knows)."""
    from ..catalog._specs import canonical_dtype
    from ..physics import DTYPE_BYTES

    if dtype is None or dtype is pd.NA or (isinstance(dtype, float) and math.isnan(dtype)) or not str(dtype).strip():
        return math.nan
    return float(DTYPE_BYTES.get(canonical_dtype(str(dtype)), math.nan))


def _row_label(runs: pd.DataFrame, pos: int) -> int:
    """How issues name the row at position ``pos`` (its ``source_row``, else its position)."""
    label = runs["source_row"].iloc[pos]
    return int(label) if pd.notna(label) else int(pos) + 1


def _provenance_rows(values: pd.Series, file: str, positions: np.ndarray) -> tuple[pd.Series, list[Problem]]:
    """The ``source_row`` a canonical table carries from the file it was first imported
    from, as integers; a value that is not a whole number is a problem of its row
    (rows named by their position in this file, ``positions``)."""
    num = pd.to_numeric(values, errors="coerce").astype("float64")
    present = values.notna().to_numpy(dtype=bool).copy()
    text = present & num.isna().to_numpy()
    if text.any():
        # Only cells that are not numbers can be blank text: the rest skip the string pass.
        present[text] = ~_blank(values[text])
    whole = num.notna().to_numpy() & np.isfinite(num.fillna(0).to_numpy()) & (num == num.round()).to_numpy()
    bad = np.flatnonzero(present & ~whole)
    problems = [Problem(f"expected a whole number, got {values.iloc[i]!r}", file=file, row=int(positions[i]),
                        column="source_row") for i in bad]
    return num.where(present & whole).round().astype("Int64").reset_index(drop=True), problems


def finalize(parsed: Parsed, *, meta: ImportMeta, fmt: str, file: str, sha256: str,
             has_hardware: bool = False, has_model: bool = False,
             resolve: bool = True) -> ImportResult:
    """Fill in supplied metadata, resolve names, derive throughputs and check every row.

    What ``meta`` supplies fills only the cells the file leaves empty (a file's own
    value wins; disagreements become one warning per column), and replaces hardware
    and model names the catalog does not know (one warning). Without a supplied name,
    rows naming an unknown hardware or model, or naming none (an empty cell), are dropped
    as ``error`` issues naming file, row and column, and the other rows are kept. Rows that fail
    :func:`perfmodel.schema.coerce_runs` or :func:`perfmodel.schema.check_runs` are
    dropped and kept as ``error`` issues naming file, row and column. A file with no
    valid rows raises unless the parser marked it ``allow_empty``.

    Raises
    ------
    ImportFormatError
        No valid row remains (the message names the first problems), or no row names the
        hardware or model and none was supplied (the message names the option to pass).
    UnknownNameError
        A supplied hardware or model not in the catalog, or a file whose rows all
        name an unknown one with none supplied (the message lists close names and
        the option to pass).
    """
    from .. import catalog

    runs = parsed.runs.copy()
    issues = list(parsed.issues)
    n = len(runs)
    provenance_rows: pd.Series | None = None
    if parsed.keep_source:
        # The rows carry the source_row of the file they were first imported from: it
        # names no row of *this* file (a sweep's rows have none, a merged dataset repeats
        # them). Rows are checked, named and dropped by their position here, and the
        # provenance is put back on the rows that are kept.
        positions = np.arange(1, n + 1) if parsed.positions is None else np.asarray(parsed.positions)
        provenance_rows = runs["source_row"] if "source_row" in runs.columns \
            else pd.Series(positions, index=runs.index)
        runs["source_row"] = positions
    elif "source_row" not in runs.columns:
        runs["source_row"] = np.arange(1, n + 1)

    if resolve:
        # A supplied name that is not in the catalog is an error even where the file
        # names its own (a typo must not pass unnoticed because no row needed it).
        for kind, opt in (("hardware", "--hardware"), ("model", "--model")):
            supplied = getattr(meta, kind)
            if supplied is not None:
                resolver: Callable[[str], Any] = (catalog.resolve_hardware if kind == "hardware"
                                                  else catalog.resolve_model)
                try:
                    spec = resolver(supplied)
                except UnknownNameError as exc:
                    raise UnknownNameError(
                        kind, supplied, exc.suggestions,
                        hint=f"given with {opt} for {file}; pass a catalog name, or add the {kind} to a "
                             f"catalog YAML file (see `perfmodel catalog --help`)") from None
                if str(supplied).strip().casefold() != spec.key:
                    # which entry an alias became ("h100" is the SXM part, not the PCIe one): said, not silent
                    issues.append(Issue(file, None, kind, f"{opt} {str(supplied).strip()!r} read as the catalog's "
                                        f"{spec.key} ({spec.name})", "info"))

    # --- user-supplied metadata fills what the file does not record
    _fill_supplied(runs, meta, issues, file)

    parse_errors = [i for i in issues if i.severity == "error"]
    if not n and parse_errors and not parsed.allow_empty:
        # The importer left out every row: say why, not which columns an empty table lacks.
        raise ImportFormatError(f"{file}: no valid measurement could be imported ("
                                + "; ".join(str(i) for i in parse_errors[:3]) + ")")
    if n:
        # --- names through the catalogs (unique values only: fast on a million rows)
        absent = [(kind, opt) for raw_col, kind, opt in (("hardware_raw", "hardware", "--hardware"),
                                                         ("model_raw", "model", "--model"))
                  if raw_col not in runs.columns or _blank(runs[raw_col]).all()]
        if absent:  # both at once, not one per attempt
            raise ImportFormatError(
                f"{file}: the file does not say which {' or '.join(k for k, _ in absent)} it ran on; supply "
                + " and ".join(f"it with {o} NAME" if len(absent) == 1 else f"the {k} with {o} NAME"
                               for k, o in absent)
                + " (CLI) or the " + " and ".join(k for k, _ in absent)
                + (" fields" if len(absent) > 1 else " field") + " of the upload form")
        for raw_col, col, kind, opt in (("hardware_raw", "hardware", "hardware", "--hardware"),
                                        ("model_raw", "model", "model", "--model")):
            # Some rows name none (every row naming none was refused above): each is an error of its row,
            # and the rows that name one still import.
            missing = _blank(runs[raw_col])
            if missing.any():
                _missing_names(runs, missing, kind, opt, issues, file)
                runs = runs.loc[~missing].reset_index(drop=True)
                if provenance_rows is not None:
                    provenance_rows = provenance_rows[~missing].reset_index(drop=True)
            if resolve:
                resolver = catalog.resolve_hardware if kind == "hardware" else catalog.resolve_model
                mapping = {}
                unknown: dict[str, UnknownNameError] = {}
                for raw in runs[raw_col].astype(str).unique():
                    try:
                        mapping[raw] = resolver(raw).key
                    except UnknownNameError as exc:
                        # A supplied name was checked above: this one is written in the file.
                        unknown[raw] = exc
                if unknown:
                    drop = _unknown_names(runs, raw_col, kind, opt, unknown, mapping, getattr(meta, kind),
                                          resolver, issues, file)
                    if drop.any():
                        runs = runs.loc[~drop].reset_index(drop=True)
                        if provenance_rows is not None:
                            provenance_rows = provenance_rows[~drop].reset_index(drop=True)
                runs[col] = runs[raw_col].astype(str).map(mapping)
        if "framework" in runs.columns:
            fw = runs["framework"].astype("string")
            uniq = {v: catalog.canonical_framework(v) for v in fw.dropna().unique()}
            # A dict lookup on the unique values, not a Python call per row (a million rows).
            runs["framework"] = fw.map(uniq)
        else:
            runs["framework"] = "unknown"
            issues.append(Issue(file, None, "framework",
                                "the file does not say which framework served it; recorded as 'unknown' "
                                "(pass --framework)", "warning"))
        runs["framework"] = runs["framework"].fillna("unknown")
        if "device_count" not in runs.columns or runs["device_count"].isna().any():
            fill = 1
            if "tp_size" in runs.columns:
                tp = pd.to_numeric(runs["tp_size"], errors="coerce")
                pp = pd.to_numeric(runs["pp_size"], errors="coerce") if "pp_size" in runs.columns else 1
                guess = (tp * pp).astype("float64")
            else:
                guess = pd.Series(np.nan, index=runs.index)
            dc = pd.to_numeric(runs.get("device_count", pd.Series(np.nan, index=runs.index)),
                               errors="coerce").astype("float64")
            filled = dc.fillna(guess).fillna(fill)
            if dc.isna().any():
                issues.append(Issue(file, None, "device_count", ASSUMED_DEVICE_COUNT, "warning"))
                if resolve:
                    _too_few_devices(runs, dc.isna().to_numpy(), filled.to_numpy(dtype=float), issues, file)
            runs["device_count"] = filled
        if "repeat_idx" not in runs.columns:
            runs["repeat_idx"] = 0
        runs["repeat_idx"] = pd.to_numeric(runs["repeat_idx"], errors="coerce").fillna(0)
        _derive_throughputs(runs)
    for col, value in (("source_format", fmt), ("source_file", file)):
        if parsed.keep_source and col in runs.columns:
            runs[col] = runs[col].astype("string").fillna(value)
        else:
            runs[col] = value
    if "throughput_basis" not in runs.columns:
        runs["throughput_basis"] = "none"

    table, problems = coerce_runs(runs, file=file)
    # Column-level problems (no row) are fatal: the importer produced a wrong table.
    fatal = [p for p in problems if p.row is None]
    if fatal:
        parts = []
        for p in fatal:
            opt = META_OPTIONS.get(p.column or "")
            if "missing" in p.message and opt:
                parts.append(f"the file does not record {p.column}; supply it with {opt} (CLI) or the upload form")
            else:
                parts.append(f"column {p.column!r}: {p.message}")
        raise ImportFormatError(f"{file}: " + "; ".join(parts))
    if provenance_rows is not None:
        provenance_rows, prov_problems = _provenance_rows(provenance_rows, file,
                                                          table["source_row"].to_numpy(dtype="int64"))
        problems += prov_problems
    problems += check_runs(table, file=file)
    if meta.batch_size is None:
        # a file without the batch or concurrency it ran at (llmperf's per-request records): say how to give it,
        # as a missing length or name does; the row error alone had left the user without a way forward
        problems = [Problem(f"{p.message}, and the file does not record it: supply it with --batch-size (CLI) or "
                            "the upload form", file=p.file, row=p.row, column=p.column)
                    if p.column == "batch_size" and p.message == _NEEDS_BATCH else p for p in problems]
    # Drop by the labels the problems were named with (check_runs names rows by a
    # complete source_row, else by position), so every row with an error goes.
    sr = table["source_row"]
    labels = sr.to_numpy(dtype="int64") if sr.notna().all() else np.arange(1, len(table) + 1)
    keep = ~np.isin(labels, [p.row for p in problems if p.row is not None])
    if provenance_rows is not None:
        table["source_row"] = provenance_rows
    if not keep.all():
        table = table.loc[keep].reset_index(drop=True)
    row_issues = [Issue.from_problem(p, "error") for p in problems]
    if len(row_issues) > MAX_ISSUES_PER_FILE:
        extra = len(row_issues) - MAX_ISSUES_PER_FILE
        row_issues = row_issues[:MAX_ISSUES_PER_FILE] + [
            Issue(file, None, None, f"{extra} more row issue(s) not listed", "error")]
    issues = row_issues + issues
    if len(table) and "batch_size" in table.columns:
        rate = pd.to_numeric(table.get("request_rate_rps", pd.Series(np.nan, index=table.index)), errors="coerce")
        # An online run (an offline throughput benchmark has no load axis by design) with none.
        online = (table["load_kind"].astype("string") == "request_rate").fillna(False).to_numpy(dtype=bool)
        r = rate.to_numpy(dtype=float)
        loadless = online & table["batch_size"].isna().to_numpy() & ~np.isfinite(r)
        burst = loadless & ~np.isnan(r)
        if burst.any():
            issues.append(Issue(file, None, "batch_size", (
                f"{int(burst.sum())} of {len(table)} run(s) record no batch size or concurrency and no finite "
                "request rate (all requests sent at once, with no concurrency limit): stored, but no curve, fit "
                "or prediction can use them; measure with a concurrency limit (e.g. vLLM's --max-concurrency) "
                "for a load axis"), "warning"))
        # no rate at all (inference-perf's pooled summary, a Prometheus report) is not a burst: it had been said
        # to be "all requests sent at once"
        unrated = loadless & np.isnan(r)
        said = {i.row for i in issues if i.column == "request_rate_rps" and i.row is not None}
        unrated &= ~table["source_row"].isin(said).to_numpy(dtype=bool)  # the importer said why already
        if unrated.any():
            issues.append(Issue(file, None, "request_rate_rps", (
                f"{int(unrated.sum())} of {len(table)} request-rate run(s) record neither the request rate nor a "
                "batch size or concurrency: stored, but no curve, fit or prediction can place them on a load "
                "axis"), "warning"))
    issues += _little_law_issues(table, file)
    if table.empty and not parsed.allow_empty:
        # check_runs' row errors first, then the rows left out for a missing or unknown name.
        detail = "; ".join(str(i) for i in [i for i in issues if i.severity == "error"][:3]) \
            or "the file holds no measurements"
        raise ImportFormatError(f"{file}: no valid measurement could be imported ({detail})")
    order = {"error": 0, "warning": 1, "info": 2}
    issues.sort(key=lambda i: order[i.severity])
    return ImportResult(runs=table, issues=tuple(issues), format=fmt, file=file, sha256=sha256,
                        provenance=dict(parsed.provenance))


def _missing_names(runs: pd.DataFrame, missing: np.ndarray, kind: str, opt: str, issues: list[Issue],
                   file: str) -> None:
    """Append an error for each row (``missing``) that names no hardware or model: it is left out.

    With the name supplied (``--hardware``/``--model``) no row is missing one (the supplied name fills
    them); when no row of the file names one, :func:`finalize` refuses the file instead.
    """
    for n, pos in enumerate(np.flatnonzero(missing)):
        if n == MAX_ISSUES_PER_FILE:
            issues.append(Issue(file, None, kind, f"{int(missing.sum()) - n} more row(s) with no {kind} left out, "
                                "not listed"))
            break
        issues.append(Issue(file, _row_label(runs, int(pos)), kind,
                            f"no {kind} in this row; row left out: pass {opt} NAME to supply it for the rows that "
                            "name none (the other rows keep their own)"))


LITTLE_LAW_SHORTFALL = 0.5
"""Below this share of its configured concurrency, a run's requests in flight (Little's law) are reported."""


def _little_law_issues(table: pd.DataFrame, file: str) -> list[Issue]:
    """A warning for concurrency runs whose requests in flight by Little's law (completed requests a second x
    mean e2e latency) fall under :data:`LITTLE_LAW_SHORTFALL` of the configured concurrency, where the file does
    not measure the concurrency itself: a client that configured 1,024 had about 25 in flight (2.53 req/s x
    10.0 s), and its "batch 1,024" had read as 1,024 sequences at once."""
    need = {"load_kind", "batch_size", "request_throughput_rps", "e2e_latency_s"}
    if table.empty or not need <= set(table.columns):
        return []
    conc = (table["load_kind"].astype("string") == "concurrency").fillna(False).to_numpy(dtype=bool)
    if "measured_concurrency" in table.columns:
        conc &= table["measured_concurrency"].isna().to_numpy()
    bb = pd.to_numeric(table["batch_size"], errors="coerce").to_numpy(dtype=float)
    flight = (pd.to_numeric(table["request_throughput_rps"], errors="coerce")
              * pd.to_numeric(table["e2e_latency_s"], errors="coerce")).to_numpy(dtype=float)
    short = conc & np.isfinite(bb) & np.isfinite(flight) & (flight < LITTLE_LAW_SHORTFALL * bb)
    if not short.any():
        return []
    rows = table["source_row"].to_numpy() if "source_row" in table.columns else np.arange(1, len(table) + 1)
    first = int(np.flatnonzero(short)[0])
    return [Issue(file, int(rows[first]), "batch_size", (
        f"{int(short.sum())} of {len(table)} concurrency run(s) had far fewer requests in flight than configured "
        f"(Little's law, completed requests a second x mean e2e; first: about {flight[first]:,.1f} at "
        f"concurrency {bb[first]:g}): the client or the server held the load below its limit, so the batch "
        "axis reads higher than what ran"), "warning")]


def _unknown_names(runs: pd.DataFrame, raw_col: str, kind: str, opt: str, unknown: Mapping[str, UnknownNameError],
                   mapping: dict[str, Any], supplied: str | None, resolver: Callable[[str], Any],
                   issues: list[Issue], file: str) -> np.ndarray:
    """Deal with hardware or model names written in the file that the catalog does not know.

    With a name supplied (``--hardware``/``--model``) the user has said what the file ran:
    the unknown names are read as it (``mapping`` is completed in place), with one warning.
    Without one, each row naming an unknown name is an error and is left out, so the rows
    with known names still import; when no row names a known one, nothing could be imported
    and the error is raised.

    Returns
    -------
    numpy.ndarray
        True for the rows to leave out (their issues are appended to ``issues``).

    Raises
    ------
    UnknownNameError
        No row names a known name and none was supplied (the message names the first
        unknown name, close catalog names and the option to pass).
    """
    raw = runs[raw_col].astype(str)
    bad = raw.isin(list(unknown)).to_numpy(dtype=bool)
    first = _row_label(runs, int(np.flatnonzero(bad)[0]))
    names = ", ".join(repr(u) for u in list(unknown)[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5
                                                            else "")
    if supplied is not None:
        key = resolver(supplied).key
        for u in unknown:
            mapping[u] = key
        issues.append(Issue(file, first, kind, (
            f"{int(bad.sum())} of {len(runs)} row(s) name a {kind} the catalog does not know ({names}; first: row "
            f"{first}): read as {opt} {supplied!r} ({key}), the name as written kept in {raw_col}"), "warning"))
        return np.zeros(len(runs), dtype=bool)
    how = (f"pass {opt} NAME to read it as a catalog {kind}, or add the {kind} (or this name as an alias) to a "
           "catalog YAML file (see `perfmodel catalog --help`)")
    if bad.all():
        u, exc = next(iter(unknown.items()))
        raise UnknownNameError(kind, u, exc.suggestions, hint=f"named in {file} (row {first}, column {kind}"
                               + (f"; also {names}" if len(unknown) > 1 else "") + f"); {how}")
    for n, pos in enumerate(np.flatnonzero(bad)):
        if n == MAX_ISSUES_PER_FILE:
            issues.append(Issue(file, None, kind, f"{int(bad.sum()) - n} more row(s) with an unknown {kind} "
                                "left out, not listed"))
            break
        exc = unknown[raw.iloc[pos]]
        close = f" (closest known: {', '.join(exc.suggestions)})" if exc.suggestions else ""
        issues.append(Issue(file, _row_label(runs, int(pos)), kind,
                            f"unknown {kind} {raw.iloc[pos]!r}{close}; row left out: {how}"))
    return bad


def _derive_throughputs(runs: pd.DataFrame) -> None:
    """Fill throughput columns that follow exactly from the others and the mean lengths."""
    def col(name: str) -> pd.Series:
        if name in runs.columns:
            return pd.to_numeric(runs[name], errors="coerce").astype("float64")
        return pd.Series(np.nan, index=runs.index)

    ii, oo = col("input_len_tok"), col("output_len_tok")
    out, tot, req = col("output_throughput_tok_s"), col("total_throughput_tok_s"), col("request_throughput_rps")
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (ii + oo) / oo
        out2 = out.fillna(tot / ratio).fillna(req * oo)
        tot2 = tot.fillna(out2 * ratio)
        req2 = req.fillna(out2 / oo)
    # Only fill what is missing: a value that is present but not a number must
    # reach coerce_runs unchanged, so it is reported as such instead of vanishing.
    for name, derived in (("output_throughput_tok_s", out2), ("total_throughput_tok_s", tot2),
                          ("request_throughput_rps", req2)):
        if name in runs.columns:
            orig = runs[name]
            if orig.isna().any():
                runs[name] = orig.astype(object).where(orig.notna(), derived)
        elif derived.notna().any():
            runs[name] = derived


def records_frame(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """A DataFrame from row dicts (helper for importers)."""
    return pd.DataFrame.from_records(list(records))
