"""Loading, merging, caching and name resolution for the catalogs."""

from __future__ import annotations

import difflib
import os
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml
from pydantic import ValidationError as PydanticValidationError

from ..config import CATALOG_ENV, user_catalog_paths
from ..errors import PerfmodelError, Problem, UnknownNameError, ValidationError
from ._schema import KEY_PATTERN, SECTIONS, HardwareEntry, ModelEntry, entry_error_text
from ._specs import HardwareSpec, ModelSpec

__all__ = [
    "CatalogFile",
    "load_file",
    "hardware_catalog",
    "model_catalog",
    "framework_aliases",
    "resolve_hardware",
    "resolve_model",
    "canonical_framework",
    "user_files",
    "reload",
    "normalize",
    "split_device_count",
]

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# Tokens that say nothing about which device it is ("NVIDIA H100 GPU" is an H100).
_HW_DECORATIONS = frozenset({"nvidia", "amd", "habana", "huawei", "gpu", "gpus", "tesla", "geforce",
                             "accelerator", "card", "tensor", "core"})
# Words in a model name that denote a fine-tune, packaging or quantization of the same
# architecture; the catalog describes the architecture, the importer records the quantization.
_MODEL_VARIANT_WORDS = re.compile(
    r"^(instruct|chat|hf|it|base|fp8|fp16|bf16|awq|gptq|marlin|nvfp4|mxfp4|gguf|dynamic|int4|int8|"
    r"w4a16|w8a8|w8a16|w4a8|4bit|8bit|bnb|exl2|quantized|quant)$")


def _tokens(text: str) -> list[str]:
    # Letter runs and number runs (keeping decimal points) so "Llama2-7B", "llama-2-7b" and
    # "LLAMA 2 7B" all read the same, while "3.1-8b" and "3-18b" stay different.
    return re.findall(r"[a-z]+|\d+(?:\.\d+)*", text.lower())


def normalize(text: str) -> str:
    """Case- and punctuation-insensitive form of a name (``"Llama_2 7B"`` -> ``"llama-2-7-b"``)."""
    return "-".join(_tokens(text))


_COUNT_PREFIX = re.compile(r"^\s*(\d+)\s*[x\u00d7*]\s*(?=[A-Za-z])")


def split_device_count(name: str) -> tuple[int | None, str]:
    """Split a leading device count off a hardware name: ``"4xA4000"`` -> ``(4, "A4000")``.

    Benchmark folders and files often write the count into the name
    (``1xH100-80GB-SXM``, ``8x A100``); the catalog resolves the device and an
    importer can record the count as ``device_count``.

    Parameters
    ----------
    name
        A hardware name as written in a source.

    Returns
    -------
    tuple[int | None, str]
        The count (``None`` when there is none) and the rest of the name.
    """
    m = _COUNT_PREFIX.match(name)
    if not m:
        return None, name
    return int(m.group(1)), name[m.end():]


def _hw_norm(text: str) -> str:
    toks = _tokens(split_device_count(text)[1])
    kept = [t for t in toks if t not in _HW_DECORATIONS]
    return "-".join(kept or toks)


def _model_base(text: str) -> str:
    # A hub id or a local path: the architecture is named by the last component.
    return text.strip().rstrip("/").split("/")[-1]


def _model_stripped(text: str) -> str:
    words = [w for w in re.split(r"[-_\s]+", _model_base(text).lower()) if w]
    kept = [w for w in words if not _MODEL_VARIANT_WORDS.match(w)]
    if len(kept) > 1 and kept[0] == "meta" and kept[1].startswith("llama"):
        kept = kept[1:]  # "Meta-Llama-3-8B" is Meta's spelling of "Llama-3-8B"
    return normalize("-".join(kept or words))


# ----------------------------------------------------------------------------- file parsing


@dataclass(frozen=True)
class CatalogFile:
    """The validated content of one catalog YAML file."""

    path: str
    hardware: Mapping[str, HardwareSpec] = field(default_factory=dict)
    models: Mapping[str, ModelSpec] = field(default_factory=dict)
    frameworks: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def _read_yaml(path: Path, label: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PerfmodelError(f"{label}: cannot read the catalog file ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:  # a binary or non-UTF-8 file: broken like a YAML syntax error
        raise ValidationError(f"{label}: not valid YAML (not UTF-8 text: byte 0x{exc.object[exc.start]:02x} "
                              f"at offset {exc.start} cannot be decoded)") from None
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f", line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ValidationError(f"{label}{where}: not valid YAML ({problem})") from None


def _parse(data: Any, label: str) -> CatalogFile:
    problems: list[Problem] = []
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ValidationError(f"{label}: a catalog file must be a mapping with sections "
                              f"{', '.join(SECTIONS)}; found {type(data).__name__}")
    for sec in data:
        if sec not in SECTIONS:
            problems.append(Problem(f"unknown section {sec!r}; allowed: {', '.join(SECTIONS)}", file=label))
    hardware: dict[str, HardwareSpec] = {}
    models: dict[str, ModelSpec] = {}
    for sec, kind, schema in (("hardware", "hardware", HardwareEntry), ("models", "model", ModelEntry)):
        entries = data.get(sec) or {}
        if not isinstance(entries, dict):
            problems.append(Problem(f"section {sec!r} must map keys to entries, found "
                                    f"{type(entries).__name__}", file=label))
            continue
        for key, raw in entries.items():
            skey = str(key)
            if not KEY_PATTERN.match(skey):
                problems.append(Problem(f"{kind} {skey!r}: key must be lower-case letters, digits and "
                                        f"'.', '_', '+', '-'", file=label))
                continue
            if not isinstance(raw, dict):
                problems.append(Problem(f"{kind} {skey!r}: entry must be a mapping of fields, found "
                                        f"{type(raw).__name__}", file=label))
                continue
            try:
                entry = schema.model_validate(raw)
            except PydanticValidationError as exc:
                for err in exc.errors():
                    fld, msg = entry_error_text(dict(err))
                    where = f"{kind} {skey!r}, field {fld}" if fld else f"{kind} {skey!r}"
                    problems.append(Problem(f"{where}: {msg}", file=label))
                continue
            values = entry.model_dump()
            if sec == "hardware":
                hardware[skey] = HardwareSpec(key=skey, **values)
            else:
                models[skey] = ModelSpec(key=skey, **values)
    frameworks: dict[str, tuple[str, ...]] = {}
    fw = data.get("frameworks") or {}
    if not isinstance(fw, dict):
        problems.append(Problem("section 'frameworks' must map a canonical name to a list of aliases",
                                file=label))
    else:
        for canon, aliases in fw.items():
            if aliases is None:
                aliases = []
            if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
                problems.append(Problem(f"framework {canon!r}: aliases must be a list of strings", file=label))
                continue
            frameworks[str(canon).strip().lower()] = tuple(aliases)
    if problems:
        raise ValidationError(f"catalog file {label} is not valid ({len(problems)} problem(s))", problems)
    return CatalogFile(label, MappingProxyType(hardware), MappingProxyType(models),
                       MappingProxyType(frameworks))


def load_file(path: str | os.PathLike[str]) -> CatalogFile:
    """Read and validate one catalog YAML file (without merging it into the catalogs).

    Parameters
    ----------
    path
        A YAML file with ``hardware:``, ``models:`` and/or ``frameworks:`` sections.

    Returns
    -------
    CatalogFile
        The validated entries, as spec objects.

    Raises
    ------
    ValidationError
        The file is not valid YAML or an entry breaks the schema; every problem is
        listed with the file, the entry key and the field.
    PerfmodelError
        The file cannot be read.
    """
    p = Path(path)
    return _parse(_read_yaml(p, str(p)), str(p))


# ----------------------------------------------------------------------------- merged state


@dataclass
class _State:
    hardware: Mapping[str, HardwareSpec]
    models: Mapping[str, ModelSpec]
    frameworks: Mapping[str, tuple[str, ...]]
    files: tuple[str, ...]
    hw_index: dict[str, str]
    model_index: dict[str, str]
    fw_index: dict[str, str]
    conflicts: list[str]
    memo: dict[tuple[str, str], str] = field(default_factory=dict)


_LOCK = threading.RLock()
_BUILTIN: CatalogFile | None = None
_CACHE: dict[tuple[Any, ...], _State] = {}


def _builtin() -> CatalogFile:
    global _BUILTIN
    with _LOCK:
        if _BUILTIN is None:
            merged: dict[str, dict[str, Any]] = {s: {} for s in SECTIONS}
            pkg = resources.files("perfmodel.catalog") / "data"
            for name in ("hardware.yaml", "models.yaml", "frameworks.yaml"):
                res = pkg / name
                label = f"perfmodel/catalog/data/{name}"
                data = yaml.load(res.read_text(encoding="utf-8"), Loader=_Loader)  # noqa: S506
                part = _parse(data, label)
                merged["hardware"].update(part.hardware)
                merged["models"].update(part.models)
                merged["frameworks"].update(part.frameworks)
            _BUILTIN = CatalogFile("<built-in>", MappingProxyType(merged["hardware"]),
                                   MappingProxyType(merged["models"]), MappingProxyType(merged["frameworks"]))
        return _BUILTIN


def _fingerprint(paths: Iterable[Path]) -> tuple[Any, ...]:
    fp: list[Any] = []
    for p in paths:
        try:
            st = p.stat()
        except OSError:
            raise PerfmodelError(
                f"catalog file {p} does not exist (listed in ${CATALOG_ENV} or the home catalog folder)"
            ) from None
        fp.append((str(p), st.st_mtime_ns, st.st_size))
    return tuple(fp)


def _index(entries: Mapping[str, Any], norm: Any, conflicts: list[str], kind: str,
           earlier: Mapping[str, str]) -> dict[str, str]:
    idx: dict[str, str] = {}
    for key, spec in entries.items():
        for label in (key, spec.name, *spec.aliases):
            n = norm(label)
            if not n:
                continue
            prev = idx.get(n)
            if prev is not None and prev != key:
                # Two entries of one file claim a name: ambiguous, reported (the built-ins have none).
                conflicts.append(f"{kind} name {label!r} ({n}) is claimed by {prev!r} and {key!r}")
            elif earlier.get(n, key) != key:
                conflicts.append(f"{kind} name {label!r} ({n}) moved from {earlier[n]!r} to {key!r}")
            idx[n] = key
    return idx


def _build(files: list[CatalogFile]) -> _State:
    hardware: dict[str, HardwareSpec] = {}
    models: dict[str, ModelSpec] = {}
    frameworks: dict[str, tuple[str, ...]] = {}
    for f in files:
        hardware.update(f.hardware)
        models.update(f.models)
        frameworks.update(f.frameworks)
    conflicts: list[str] = []
    hw_index: dict[str, str] = {}
    model_index: dict[str, str] = {}
    # Index file by file, so the names of a built-in entry that a user entry replaces keep
    # resolving to its key (real data names it that way) while later files win on clashes.
    for f in files:
        hw_index.update(_index(f.hardware, _hw_norm, conflicts, "hardware", hw_index))
        model_index.update(_index(f.models, normalize, conflicts, "model", model_index))
    fw_index: dict[str, str] = {}
    for canon, aliases in frameworks.items():
        for label in (canon, *aliases):
            fw_index[normalize(label)] = canon
    return _State(MappingProxyType(hardware), MappingProxyType(models), MappingProxyType(frameworks),
                  tuple(f.path for f in files[1:]), hw_index, model_index, fw_index, conflicts)


def _state() -> _State:
    paths = user_catalog_paths()
    fp = _fingerprint(paths)
    with _LOCK:
        st = _CACHE.get(fp)
        if st is None:
            files = [_builtin(), *(load_file(p) for p in paths)]
            st = _build(files)
            _CACHE.clear()  # only the current set of user files is worth keeping
            _CACHE[fp] = st
        return st


def reload() -> None:
    """Drop every cache, so the next call re-reads the built-in and user catalog files."""
    global _BUILTIN
    with _LOCK:
        _BUILTIN = None
        _CACHE.clear()


def user_files() -> tuple[str, ...]:
    """Paths of the user catalog files merged over the built-ins, in merge order.

    Raises
    ------
    ValidationError
        A user catalog file is invalid.
    """
    return _state().files


def hardware_catalog() -> Mapping[str, HardwareSpec]:
    """Every known device by key: the built-ins, then user files (a user key replaces a built-in).

    Returns
    -------
    Mapping[str, HardwareSpec]
        Read-only mapping, cached until a user catalog file changes or :func:`reload`.

    Raises
    ------
    ValidationError
        A user catalog file is invalid (the message names file, entry and field).
    """
    return _state().hardware


def model_catalog() -> Mapping[str, ModelSpec]:
    """Every known model architecture by key (built-ins merged with user files).

    Returns
    -------
    Mapping[str, ModelSpec]
        Read-only mapping, cached until a user catalog file changes or :func:`reload`.

    Raises
    ------
    ValidationError
        A user catalog file is invalid (the message names file, entry and field).
    """
    return _state().models


def framework_aliases() -> Mapping[str, tuple[str, ...]]:
    """Canonical framework names and the spellings that map to them."""
    return _state().frameworks


def _suggest(query: str, index: Mapping[str, str], n: int = 5) -> list[str]:
    # Always offer the n nearest keys: a wrong name is more often a typo than a new device.
    scored = sorted(index.items(), key=lambda kv: -difflib.SequenceMatcher(None, query, kv[0]).ratio())
    out: list[str] = []
    for _, key in scored:
        if key not in out:
            out.append(key)
        if len(out) == n:
            break
    return out


def resolve_hardware(name: str) -> HardwareSpec:
    """Find a device by key, name or alias, ignoring case, punctuation and vendor decorations.

    ``"Nvidia H100 GPU"``, ``"NVIDIA H100 80GB HBM3"`` and ``"h100_sxm"`` all
    resolve to ``h100-sxm``. A leading device count (``"4xA4000"``) is ignored
    here; see :func:`split_device_count`.

    Parameters
    ----------
    name
        The name as written anywhere (benchmark file, nvidia-smi, user input).

    Returns
    -------
    HardwareSpec
        The catalog entry.

    Raises
    ------
    UnknownNameError
        No entry matches; the message lists the 5 closest keys.
    ValidationError
        A user catalog file is invalid.
    """
    st = _state()
    raw = str(name)
    memo_key = ("hw", raw)
    key = st.memo.get(memo_key)
    if key is None:
        n = _hw_norm(raw)
        key = st.hw_index.get(n)
        if key is None:
            raise UnknownNameError("hardware", raw, _suggest(n, st.hw_index),
                                   hint="add it to a catalog YAML file (see perfmodel.catalog)")
        st.memo[memo_key] = key
    return st.hardware[key]


def resolve_model(name: str) -> ModelSpec:
    """Find a model architecture by key, name, alias or hub id.

    An organisation prefix or local path is dropped (``meta-llama/``,
    ``/root/.cache/.../``), then fine-tune and quantization suffixes
    (``-Instruct``, ``-chat-hf``, ``-FP8``, ``-AWQ-INT4``, ``-GPTQ``...) if the
    exact name is unknown: a quantized or instruction-tuned variant has its base
    model's architecture (the importer records the quantization).

    Parameters
    ----------
    name
        The model name as written in the source.

    Returns
    -------
    ModelSpec
        The catalog entry.

    Raises
    ------
    UnknownNameError
        No entry matches; the message lists the 5 closest keys.
    ValidationError
        A user catalog file is invalid.
    """
    st = _state()
    raw = str(name)
    memo_key = ("model", raw)
    key = st.memo.get(memo_key)
    if key is None:
        exact = normalize(_model_base(raw))
        key = st.model_index.get(exact) or st.model_index.get(normalize(raw))
        if key is None:
            stripped = _model_stripped(raw)
            key = st.model_index.get(stripped)
            if key is None:
                raise UnknownNameError("model", raw, _suggest(stripped or exact, st.model_index),
                                       hint="add it to a catalog YAML file (see perfmodel.catalog)")
        st.memo[memo_key] = key
    return st.models[key]


def canonical_framework(name: str) -> str:
    """Canonical lower-case framework name (``"TensorRT-LLM"`` -> ``"tensorrt-llm"``).

    Frameworks are open-ended: an unknown name is returned stripped and
    lower-cased, and this function never raises (a broken user catalog file
    falls back to the built-in aliases).

    Parameters
    ----------
    name
        The framework as written in the source.

    Returns
    -------
    str
        The canonical name.
    """
    raw = str(name).strip()
    try:
        index = _state().fw_index
    except PerfmodelError:
        index = _build([_builtin()]).fw_index
    return index.get(normalize(raw), raw.lower())


def canonical_names(table: Any, *, file: str | None = None, problems: list[Problem] | None = None) -> Any:
    """A copy of a table (pandas) with its ``hardware`` and ``model`` names catalog-resolved to their keys
    and its ``framework`` names canonical (:func:`canonical_framework`); the table itself when every name
    already is, so that tables read from the store cost nothing.

    Parameters
    ----------
    table
        A pandas DataFrame; the columns it lacks are left alone.
    file
        Where the table came from, for messages ("In FILE, row(s) ...").
    problems
        When given, every unknown name is appended to it (a :class:`~perfmodel.errors.Problem` at the first
        row that has it) and its cells are left empty, instead of raising on the first.

    Raises
    ------
    UnknownNameError
        A hardware or model name is not in the catalog (without ``problems``), naming its rows and column.
    """
    known = {"hardware": hardware_catalog(), "model": model_catalog()}

    def canonical(col: str, values: Any) -> bool:
        names = values.dropna().astype(str).unique()
        if col == "framework":
            return all(canonical_framework(v) == v for v in names)
        return all(v in known[col] for v in names)

    if all(c not in table.columns or canonical(c, table[c]) for c in ("hardware", "model", "framework")):
        return table
    out = table.copy()
    # the row a user would count in the source when the table says (source_row), else the 1-based position
    given = out["source_row"].tolist() if "source_row" in out.columns else []
    labels = given if given and all(isinstance(v, int | float) and v == v for v in given) \
        else list(range(1, len(out) + 1))
    labels = [int(v) for v in labels]
    for col, resolver in (("hardware", resolve_hardware), ("model", resolve_model)):
        if col not in out.columns or canonical(col, out[col]):
            continue
        mapping = {}
        as_text = out[col].astype("string")
        for raw in out[col].dropna().astype(str).unique():
            try:
                mapping[raw] = resolver(raw).key
            except UnknownNameError as exc:
                # (an empty cell is pandas.NA, whose == is neither true nor false: it had raised a TypeError)
                rows = [labels[i] for i, v in enumerate(as_text) if isinstance(v, str) and v == raw][:5]
                if problems is not None:
                    also = f" (also in row(s) {', '.join(map(str, rows[1:]))})" if len(rows) > 1 else ""
                    problems.append(Problem(str(UnknownNameError(col, raw, exc.suggestions)) + also, file=file,
                                            row=rows[0], column=col))
                    continue
                where = (f"In {file}, " if file else "In ") + ("row" if len(rows) == 1 else "rows")
                raise UnknownNameError(col, raw, exc.suggestions,
                                       hint=f"{where} {', '.join(map(str, rows))}, column {col!r}") from None
        out[col] = as_text.map(mapping).astype("string")
    if "framework" in out.columns:
        out["framework"] = out["framework"].astype("string").map(
            lambda v: canonical_framework(v) if isinstance(v, str) else v).astype("string")
    return out


def _conflicts() -> list[str]:
    """Names claimed by two entries (for the tests; the later entry wins)."""
    return list(_state().conflicts)
