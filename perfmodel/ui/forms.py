"""The upload form's values and what the Import button does with them.

Pure Python (no Streamlit): the page reads the widgets into an
:class:`UploadForm` and calls :func:`import_uploads`, so the whole import path
is testable without a browser.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

import pydantic

from ..errors import ImportFormatError, Problem, ValidationError

if TYPE_CHECKING:
    from ..importers import ImportMeta, ImportResult
    from ..store import DatasetInfo, Store

__all__ = ["AUTO_FORMAT", "AS_IN_FILE", "LOAD_KINDS", "COLUMN_MAP_LABEL", "UploadForm", "to_meta", "parse_column_map",
           "in_form_words",
           "import_uploads"]

AUTO_FORMAT = "auto"
"""Format choice meaning: detect each file's format from its content."""
AS_IN_FILE = "as in file"
"""Choice meaning: take the value from the file itself."""

_META_FIELDS = ("hardware", "model", "framework", "framework_version", "device_count", "tp_size", "pp_size",
                "weight_dtype", "kv_cache_dtype", "quantization", "input_len_tok", "output_len_tok", "batch_size",
                "load_kind", "arrival", "burstiness", "latency_unit")
LOAD_KINDS = ("static_batch", "concurrency", "request_rate", "offline")
"""Load kinds a file that does not record one can be given (:class:`perfmodel.importers.ImportMeta`)."""
COLUMN_MAP_LABEL = "Column mapping (generic CSV)"
"""The form's column-mapping field, named in its errors."""


@dataclass(frozen=True)
class UploadForm:
    """What the user entered in the upload form (``None``: as in the file).

    Attributes
    ----------
    format
        A registry format id, or :data:`AUTO_FORMAT`.
    hardware, model
        Catalog keys (or names/aliases the catalog resolves).
    framework, framework_version, weight_dtype, kv_cache_dtype, quantization
        Free text; blank means as in the file.
    device_count, tp_size, pp_size
        Positive integers.
    input_len_tok, output_len_tok, batch_size, load_kind, arrival, latency_unit
        For files that do not record them (a throughput benchmark's lengths, an AIPerf CSV's concurrency).
    burstiness
        With ``arrival`` gamma: the shape of its gaps (vLLM's ``--burstiness``), checked by
        :func:`perfmodel.importers.check_burstiness` as ``perfmodel import --burstiness`` is.
    column_map
        A generic CSV's columns, ``canonical=source`` per line or separated by commas or semicolons; given with
        the format left to detection, the generic CSV format is used.
    name
        Dataset name; blank lets the store choose one from the file names.
    """

    format: str = AUTO_FORMAT
    hardware: str | None = None
    model: str | None = None
    framework: str | None = None
    framework_version: str | None = None
    device_count: int | None = None
    tp_size: int | None = None
    pp_size: int | None = None
    weight_dtype: str | None = None
    kv_cache_dtype: str | None = None
    quantization: str | None = None
    input_len_tok: float | None = None
    output_len_tok: float | None = None
    batch_size: float | None = None
    load_kind: str | None = None
    arrival: str | None = None
    burstiness: float | None = None
    latency_unit: str | None = None
    column_map: str | None = None
    name: str | None = None

    @classmethod
    def from_values(cls, values: dict[str, Any]) -> UploadForm:
        """Build a form from raw widget values, treating blanks and "as in file" as unset.

        Parameters
        ----------
        values
            Field name -> widget value; unknown names are ignored.

        Returns
        -------
        UploadForm
        """
        known = {f.name for f in fields(cls)}
        clean: dict[str, Any] = {}
        for key, value in values.items():
            if key not in known:
                continue
            if isinstance(value, str):
                value = value.strip()
                if value == "" or value == AS_IN_FILE:
                    value = None
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            if value is None and key == "format":
                value = AUTO_FORMAT
            clean[key] = value
        return cls(**clean)


def to_meta(form: UploadForm) -> ImportMeta | None:
    """The :class:`~perfmodel.importers.ImportMeta` a form asks for (``None`` if nothing set).

    Parameters
    ----------
    form
        The form values.

    Returns
    -------
    ImportMeta or None

    Raises
    ------
    ValidationError
        A value is out of range (e.g. a device count of 0); the message names the field.
    """
    from ..importers import ImportMeta

    given = {k: getattr(form, k) for k in _META_FIELDS if getattr(form, k) is not None}
    if form.column_map:
        given["column_map"] = parse_column_map(form.column_map)
    if not given:
        return None
    try:
        return ImportMeta(**given)
    except pydantic.ValidationError as exc:
        # a check's own message ("Value error, --burstiness 0 is not ...") names the field: pydantic's prefix goes
        problems = [Problem(f"{str(err['msg']).removeprefix('Value error, ')} (got {err.get('input')!r})",
                            column=".".join(str(p) for p in err["loc"])) for err in exc.errors()]
        raise ValidationError("the upload form has invalid values:", problems) from None


def parse_column_map(text: str) -> dict[str, str]:
    """A column mapping typed in the form: ``canonical=source`` pairs, one per line or comma-separated.

    Parameters
    ----------
    text
        The field's text.

    Returns
    -------
    dict
        Canonical column -> the file's column.

    Raises
    ------
    ValidationError
        An entry is not ``canonical=source``; the message names it.
    """
    out: dict[str, str] = {}
    problems = []
    for entry in (e.strip() for line in text.splitlines() for e in line.replace(";", ",").split(",")):
        if not entry:
            continue
        canon, sep, source = entry.partition("=")
        if not sep or not canon.strip() or not source.strip():
            problems.append(Problem(f"{entry!r} is not canonical=source (e.g. batch_size=concurrency)",
                                    column=COLUMN_MAP_LABEL))
            continue
        out[canon.strip()] = source.strip()
    if problems:
        raise ValidationError("the upload form has invalid values:", problems)
    return out


def import_uploads(files: Sequence[tuple[str, bytes]], form: UploadForm, store: Store,
                   ) -> tuple[DatasetInfo, list[ImportResult]]:
    """Import uploaded files into one new dataset, as the Import button does.

    Nothing is stored when any file fails: the whole upload is one dataset.

    Parameters
    ----------
    files
        ``(file name, content)`` pairs.
    form
        The form values (format, metadata, dataset name).
    store
        Where to store the dataset.

    Returns
    -------
    (DatasetInfo, list of ImportResult)
        The new dataset and one result per file (runs and row-level issues).

    Raises
    ------
    ImportFormatError
        No file was given, or a file is unreadable or not the chosen format.
    ValidationError
        The form holds an invalid value.
    UnknownNameError
        An unknown format, hardware or model.
    """
    from ..api import import_bytes

    if not files:
        raise ImportFormatError("no file to import: choose one or more result files first")
    meta = to_meta(form)
    fmt = None if form.format in (AUTO_FORMAT, "", None) else form.format
    if fmt is None and form.column_map:  # a column mapping is for the generic CSV reader: it asks for that format
        fmt = "csv"
    return import_bytes([(name, bytes(data)) for name, data in files], format=fmt, meta=meta,
                        name=form.name or None, store=store)


_FORM_LABELS = {
    "--format": "Format", "--map": COLUMN_MAP_LABEL, "--latency-unit": "Latency unit", "--hardware": "Hardware",
    "--model": "Model", "--framework-version": "Framework version", "--framework": "Framework",
    "--device-count": "Devices", "--tp": "Tensor parallel", "--pp": "Pipeline parallel",
    "--weight-dtype": "Weight dtype", "--kv-cache-dtype": "KV-cache dtype", "--quantization": "Quantization",
    "--input-len": "Input tokens", "--output-len": "Output tokens", "--batch-size": "Batch size / concurrency",
    "--load-kind": "Load kind", "--arrival": "Arrival (request-rate runs)", "--burstiness": "Burstiness"}
"""The import's CLI options (:data:`perfmodel.importers.base.META_OPTIONS`) and the upload form's fields."""


def in_form_words(text: str) -> str:
    """An import error in the upload form's words: the importers' messages name the CLI's options ("For any
    other CSV pass --format csv with --map canonical=column options"), which the Data page does not have.

    Parameters
    ----------
    text
        The message.

    Returns
    -------
    str
    """
    import re

    text = text.replace(
        "For any other CSV pass --format csv with --map canonical=column options.",
        f"For any other CSV choose Format csv and fill in its {COLUMN_MAP_LABEL} (under \"What the file does not "
        "record\").")
    text = re.sub(r"--format csv --map \.\.\.", f"Format csv and a {COLUMN_MAP_LABEL}", text)
    # "supply it with --input-len (CLI) or the upload form": both clients' ways, of which the page has one; it had
    # read "supply it with the form's Input tokens (CLI) or the upload form"
    text = re.sub(r" \(CLI(?:, ([^)]*))?\) or the (?:upload form's [^.;]*?|[\w ]*?upload form)(?=[.;)]|$)",
                  lambda m: f" ({m.group(1)})" if m.group(1) else "", text)
    # a choice the option is set to ("--arrival gamma"), which "the form's Arrival gamma" would not say
    text = re.sub(r"--arrival (constant|poisson|gamma|trace)\b",
                  lambda m: f"the form's {_FORM_LABELS['--arrival']} set to {m.group(1)}", text)

    def field(m: re.Match[str]) -> str:
        label = _FORM_LABELS.get(m.group(1))
        return m.group(0) if label is None else f"the form's {label}"

    return re.sub(r"(--[a-z][a-z-]*)(?: [A-Z]+\b)?", field, text)
