"""Named feature sets computed from a runs table and the catalogs.

One source of truth for the order of features: :func:`feature_names`.
:func:`build_features` returns a float frame (index aligned with the runs) in
that order. Sets:

``raw``
    ``input_len_tok`` (ii), ``output_len_tok`` (oo), ``batch_size`` (bb),
    ``device_count``, ``tp_size``, ``pp_size`` (NaN where not recorded),
    ``dtype_bytes`` (bytes per weight element, see :func:`perfmodel.physics.dtype_bytes`).
``derived``
    ``log1p_ii``, ``log1p_oo``, ``ii_over_oo`` (ii / (oo + 1e-9)), ``bb_over_len``
    (bb / (ii + oo)), ``log2_bb``.
``physical``
    catalog-based quantities, each with its unit in the name: ``kv_cache_bytes``
    (KV-cache bytes per token x bb x (ii + oo); MLA models use their compressed
    size), ``weight_bytes``, ``bytes_per_sm`` ((weights + KV) / (SMs x devices)),
    ``l2_reuse`` (L2 bytes / (bb x d_model x dtype bytes)), ``wavefronts``
    (ceil(bb / 32)), ``mem_bw_pressure_s`` ((ii + oo) x bb / memory bandwidth, in
    tokens per byte/s), ``compute_intensity_s`` (ii x oo x params / peak FLOP/s),
    ``pcie_contention`` (bb x TP / PCIe lanes), ``weight_bytes_over_bw_s``
    (weights / aggregate bandwidth: one decode step's floor), ``mem_fraction_used``
    ((weights + KV) / (memory x devices)), ``active_params``, ``mem_bw_gbs`` and
    ``peak_tflops`` (per device), ``flops_per_byte`` (the device's ridge point),
    and the roofline terms of :func:`perfmodel.physics.roofline`: ``log_prefill_s_min``,
    ``log_decode_step_s_min``, ``log_e2e_s_min``, ``log_output_tok_s_max``,
    ``kv_read_share`` (share of the decode step spent reading the KV cache).
``framework``
    every numeric ``fw_*`` column of the runs (dynamic: depends on the data),
    except :data:`CLIENT_FW_COLUMNS`, the HTTP sweep client's notes about its
    own measurement, and the settings below.
``identity``
    one-hot indicators ``id_hw_<hardware>``, ``id_fw_<framework>``,
    ``id_model_<model>`` and ``id_platform_<platform>`` (the hardware's software
    stack in the catalog: CUDA, ROCm, oneAPI, SynapseAI, ...) for the values
    present (dynamic). Efficiency is a property of the software on a platform,
    which no catalog figure describes.
``settings``
    the ``fw_*`` columns that are settings chosen before a run rather than
    metrics measured during it (:data:`perfmodel.curves.VARYING_BY`: the local
    engine's thread count, llama.cpp's ``n_batch``), where the data has them (dynamic).
``static``
    raw + derived + physical + settings + identity: what is known before a run,
    from the configuration and the catalogs (every set but the framework
    metrics, which are measured during the run). What a prediction for an
    unbenchmarked configuration can use; roofline-gbm's default.
``all``
    raw + derived + physical + settings + framework + identity.

:func:`feature_doc` gives every feature, static or dynamic, a human name, a unit and a one-line
formula (:data:`FEATURE_DOCS` for the static ones, :data:`DYNAMIC_DOCS` for the prefixes);
:func:`feature_label`, :func:`format_feature_value` and :func:`glossary` read it, so every chart,
table or command can name features the same way (the Attribution page does).

A figure the catalog does not know gives NaN in the features that need it
(tree ensembles handle NaN); an unknown hardware or model name raises
:class:`~perfmodel.errors.UnknownNameError` naming the row and column.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import pandas as pd

from . import physics
from .curve_tables import compact_number, compact_seconds
from .curves import VARYING_BY
from .errors import PerfmodelError
from .schema import FRAMEWORK_PREFIX

__all__ = [
    "FEATURE_SETS",
    "DYNAMIC_SETS",
    "RAW",
    "DERIVED",
    "PHYSICAL",
    "IDENTITY_PREFIXES",
    "LEGACY_IDENTITY_PREFIXES",
    "CLIENT_FW_COLUMNS",
    "is_token_rate",
    "FeatureDoc",
    "FEATURE_DOCS",
    "DYNAMIC_DOCS",
    "feature_doc",
    "feature_label",
    "format_feature_value",
    "glossary",
    "feature_names",
    "training_feature_names",
    "build_features",
]

RAW: tuple[str, ...] = ("input_len_tok", "output_len_tok", "batch_size", "device_count", "tp_size",
                        "pp_size", "dtype_bytes")
DERIVED: tuple[str, ...] = ("log1p_ii", "log1p_oo", "ii_over_oo", "bb_over_len", "log2_bb")
PHYSICAL: tuple[str, ...] = (
    "kv_cache_bytes", "weight_bytes", "bytes_per_sm", "l2_reuse", "wavefronts", "mem_bw_pressure_s",
    "compute_intensity_s", "pcie_contention", "weight_bytes_over_bw_s", "mem_fraction_used",
    "active_params", "mem_bw_gbs", "peak_tflops", "flops_per_byte", "log_prefill_s_min",
    "log_decode_step_s_min", "log_e2e_s_min", "log_output_tok_s_max", "kv_read_share",
)
IDENTITY_PREFIXES: Mapping[str, str] = MappingProxyType(
    {"hardware": "id_hw_", "framework": "id_fw_", "model": "id_model_", "platform": "id_platform_"})
"""Column of the runs (``platform``: the hardware's catalog peer group,
:attr:`perfmodel.catalog.HardwareSpec.peer_group`) -> indicator prefix."""
LEGACY_IDENTITY_PREFIXES: Mapping[str, str] = MappingProxyType({"vendor": "id_vendor_"})
"""Indicators that models saved before ``platform`` existed still name (the hardware's catalog vendor):
computed for them, never chosen for a new model."""
_ALL_IDENTITY_PREFIXES: Mapping[str, str] = MappingProxyType({**IDENTITY_PREFIXES, **LEGACY_IDENTITY_PREFIXES})


@dataclass(frozen=True)
class FeatureDoc:
    """What a feature is, for people: a name, its unit and how it is computed.

    Attributes
    ----------
    label
        Human name without the unit (``KV-cache size``).
    unit
        Unit of the value (``B``, ``s``, ``GB/s``), ``""`` for a pure number.
    formula
        One line: how the value is computed, with ii = input length, oo = output length,
        bb = batch size.
    """

    label: str
    unit: str
    formula: str

    @property
    def title(self) -> str:
        """The label with its unit in parentheses, e.g. ``KV-cache size (B)``."""
        return f"{self.label} ({self.unit})" if self.unit else self.label


_D = FeatureDoc
FEATURE_DOCS: Mapping[str, FeatureDoc] = MappingProxyType({
    # raw
    "input_len_tok": _D("input length", "tokens", "ii: prompt tokens per request"),
    "output_len_tok": _D("output length", "tokens", "oo: generated tokens per request"),
    "batch_size": _D("batch size", "sequences", "bb: sequences in flight at once"),
    "device_count": _D("devices", "", "accelerators serving one copy of the model"),
    "tp_size": _D("tensor-parallel size", "", "devices each layer is split over (NaN where not recorded)"),
    "pp_size": _D("pipeline-parallel size", "", "pipeline stages (NaN where not recorded)"),
    "dtype_bytes": _D("bytes per weight element", "B", "2 for bf16/fp16, 1 for fp8/int8, 4 for fp32"),
    # derived
    "log1p_ii": _D("ln(1 + input length)", "", "ln(1 + ii)"),
    "log1p_oo": _D("ln(1 + output length)", "", "ln(1 + oo)"),
    "ii_over_oo": _D("input / output length", "", "ii / oo"),
    "bb_over_len": _D("batch per token of length", "1/token", "bb / (ii + oo)"),
    "log2_bb": _D("log2 batch", "", "log2(bb)"),
    # physical
    "kv_cache_bytes": _D("KV-cache size", "B", "KV bytes per token × bb × (ii + oo); MLA models use their "
                                                "compressed size"),
    "weight_bytes": _D("weight size", "B", "parameters × bytes per weight element"),
    "bytes_per_sm": _D("bytes per SM", "B", "(weights + KV cache) / (SMs per device × devices)"),
    "l2_reuse": _D("L2 reuse", "", "L2 cache bytes / (bb × hidden size × bytes per element): how many times one "
                                     "step's activations fit in L2"),
    "wavefronts": _D("wavefronts of 32 sequences", "", "ceil(bb / 32)"),
    "mem_bw_pressure_s": _D("memory-bandwidth pressure", "token·s/B",
                            "(ii + oo) × bb / (memory bandwidth per device × devices)"),
    "compute_intensity_s": _D("compute intensity", "token²·s", "ii × oo × active parameters / peak FLOP/s of all "
                                                               "devices"),
    "pcie_contention": _D("PCIe contention", "sequences/lane", "bb × tensor-parallel size / PCIe lanes"),
    "weight_bytes_over_bw_s": _D("weight read time", "s", "weights / (memory bandwidth × devices): the floor "
                                                          "of one decode step"),
    "mem_fraction_used": _D("memory fraction used", "", "(weights + KV cache) / (memory per device × devices)"),
    "active_params": _D("active parameters", "", "parameters used per token (a mixture of experts uses some "
                                                 "experts only)"),
    "mem_bw_gbs": _D("memory bandwidth", "GB/s", "peak memory bandwidth per device (catalog)"),
    "peak_tflops": _D("peak compute", "TFLOP/s", "dense peak per device at the run's dtype (catalog)"),
    "flops_per_byte": _D("ridge point", "FLOP/B", "peak FLOP/s / memory bandwidth, per device"),
    "log_prefill_s_min": _D("roofline prefill time", "ln s", "ln(2 × active parameters × ii × bb / peak FLOP/s "
                                                             "of all devices)"),
    "log_decode_step_s_min": _D("roofline decode step", "ln s",
                                "ln(max(bytes read per step / bandwidth, step FLOPs / peak)) over all devices"),
    "log_e2e_s_min": _D("roofline end-to-end time", "ln s", "ln(prefill + (oo - 1) × decode step), both at the "
                                                           "roofline"),
    "log_output_tok_s_max": _D("roofline throughput bound", "ln tok/s",
                               "ln(bb × oo / roofline end-to-end time), as if every sequence's KV cache fit (the "
                               "What-if page's bound stops growing at the KV-cache-full batch)"),
    "kv_read_share": _D("KV-read share of a decode step", "", "KV bytes read per step (bb × (ii + oo/2) × KV bytes "
                                                              "per token) / bandwidth / roofline decode step"),
})
"""Every static feature (:data:`RAW`, :data:`DERIVED`, :data:`PHYSICAL`) -> its :class:`FeatureDoc`."""

SETTING_DOCS: Mapping[str, FeatureDoc] = MappingProxyType({
    "fw_num_threads": _D("framework setting: threads", "", "the local engine's torch threads, chosen before the run"),
    "fw_n_batch": _D("framework setting: llama.cpp n_batch", "tok", "prompt tokens fed per forward pass "
                                                                    "(llama.cpp --batch-size), chosen before the run"),
})
"""The settings of :data:`perfmodel.curves.VARYING_BY`, named in words."""

DYNAMIC_DOCS: Mapping[str, FeatureDoc] = MappingProxyType({
    FRAMEWORK_PREFIX: _D("framework-internal metric <name>", "unit in the name",
                         "a metric the serving framework reported during the run (its /metrics or logs), as "
                         "recorded; a setting such as fw_num_threads is chosen before the run"),
    "id_hw_": _D("hardware is <value>", "1/0", "1 when the run's hardware is <value>, else 0"),
    "id_fw_": _D("framework is <value>", "1/0", "1 when the run's framework is <value>, else 0"),
    "id_model_": _D("model is <value>", "1/0", "1 when the run's model is <value>, else 0"),
    "id_platform_": _D("platform is <value>", "1/0", "1 when the hardware's software stack in the catalog (CUDA, "
                                                     "ROCm, oneAPI, SynapseAI, ...) is <value>, else 0"),
    "id_vendor_": _D("vendor is <value>", "1/0", "1 when the hardware's catalog vendor is <value>, else 0 "
                                                 "(models saved before platform indicators existed)"),
    "prior_kind": _D("roofline prior kind", "", "roofline-gbm: which catalog figures its bound could use "
                                                "(full roofline, weights only, compute only, nominal)"),
})
"""Documentation of the dynamic features, by prefix (``fw_``, ``id_*_``), and roofline-gbm's ``prior_kind``."""
del _D

_FW_UNITS = (("_tok_s", "tok/s"), ("_per_s", "/s"), ("_ms", "ms"), ("_s", "s"), ("_pct", "%"), ("_mb", "MB"),
             ("_gb", "GB"), ("_frac", "fraction"), ("_tok", "tokens"))


def feature_doc(name: str) -> FeatureDoc | None:
    """The documentation of one feature, a dynamic one filled in with its own value or metric.

    Parameters
    ----------
    name
        A feature name (``kv_cache_bytes``, ``fw_kv_cache_usage_pct``, ``id_platform_rocm``...).

    Returns
    -------
    FeatureDoc or None
        None for a name that is no perfmodel feature.
    """
    if name in FEATURE_DOCS:
        return FEATURE_DOCS[name]
    if name in SETTING_DOCS:
        return SETTING_DOCS[name]
    if name == "prior_kind":
        return DYNAMIC_DOCS[name]
    if name.startswith(FRAMEWORK_PREFIX):
        stem, unit, agg = name[len(FRAMEWORK_PREFIX):], "", ""
        for a in ("_mean", "_max", "_min"):  # fw_server_prompt_ms_mean: a mean of milliseconds
            if stem.endswith(a) and len(stem) > len(a):
                stem, agg = stem[: -len(a)], f" ({a[1:]})"
                break
        for suffix, u in _FW_UNITS:
            if stem.endswith(suffix) and len(stem) > len(suffix):
                stem, unit = stem[: -len(suffix)], u
                break
        stem += agg
        generic = DYNAMIC_DOCS[FRAMEWORK_PREFIX]
        kind = "setting" if name in VARYING_BY else "metric"
        formula = ("a setting chosen before the run" if kind == "setting"
                   else generic.formula.split("; a setting")[0])
        return FeatureDoc(f"framework {kind}: {stem.replace('_', ' ')}", unit, formula)
    for prefix in (*IDENTITY_PREFIXES.values(), *LEGACY_IDENTITY_PREFIXES.values()):
        if name.startswith(prefix) and len(name) > len(prefix):
            value = name[len(prefix):]
            d = DYNAMIC_DOCS[prefix]
            return FeatureDoc(d.label.replace("<value>", value), d.unit, d.formula.replace("<value>", value))
    return None


def feature_label(name: str) -> str:
    """A feature's human name with its unit (``KV-cache size (B)``); the name itself when undocumented.

    Parameters
    ----------
    name
        A feature name.

    Returns
    -------
    str
    """
    doc = feature_doc(name)
    return name if doc is None else doc.title


def format_feature_value(name: str, value: float) -> str:
    """A feature's value for a chart label, short and with its unit: ``4.29 GB``, ``4.8 ms``,
    ``yes``/``no`` for an indicator, ``n/a`` for a missing one; a log feature (unit ``ln s``) as the
    quantity itself (``1.06 s``).

    Parameters
    ----------
    name
        A feature name.
    value
        Its value.

    Returns
    -------
    str
    """
    v = float(value)
    if not np.isfinite(v):
        return "n/a"
    doc = feature_doc(name)
    if doc is not None and doc.unit == "1/0":
        return "yes" if v >= 0.5 else "no"
    unit = "" if doc is None or doc.unit in ("", "unit in the name") else doc.unit
    if unit.startswith("ln "):  # a log feature reads as the quantity: 1.06 s, not 0.06173 ln s
        v, unit = float(np.exp(v)), unit[3:]
    if unit in ("s", "ms"):  # 4.8 ms, not 0.0048 s
        return compact_seconds(v / 1000.0 if unit == "ms" else v)
    if 0 < abs(v) < 1e-3 and unit.endswith("/B"):
        # per kB, MB or GB, whichever reads from 1 up: 75.9 token·s/GB, not 7.59e-08 token·s/B nor
        # 0.00000007585 (memory-bandwidth pressure)
        factor, prefix = next(((f, p) for f, p in ((1e3, "k"), (1e6, "M")) if abs(v) * f >= 1), (1e9, "G"))
        v, unit = v * factor, f"{unit[:-1]}{prefix}B"
    text = f"{v:.3g}" if 0 < abs(v) < 1e-3 else compact_number(v)
    if not unit:
        return text
    return f"{text}{unit}" if re.search(r" [kMGTPE]$", text) and unit[0].isalpha() else f"{text} {unit}"


def glossary(names: Iterable[str]) -> pd.DataFrame:
    """One line per feature, static features first in their fixed order, dynamic ones grouped by prefix.

    Parameters
    ----------
    names
        The features to document (e.g. :func:`feature_names` of a dataset's ``all`` set).

    Returns
    -------
    pandas.DataFrame
        ``feature`` (the name, or the prefix pattern such as ``id_platform_<value>``), ``name`` (label
        with unit), ``formula`` and ``features`` (the names the line covers, comma-separated: the
        values present for a prefix); a name no line documents gets a line saying so.
    """
    wanted = list(dict.fromkeys(str(n) for n in names))
    rows: list[dict[str, str]] = []
    for n in (*RAW, *DERIVED, *PHYSICAL):
        if n in wanted:
            d = FEATURE_DOCS[n]
            rows.append({"feature": n, "name": d.title, "formula": d.formula, "features": n})
    done = {r["feature"] for r in rows}
    prefixes = (FRAMEWORK_PREFIX, *IDENTITY_PREFIXES.values(), *LEGACY_IDENTITY_PREFIXES.values())
    for prefix in prefixes:
        covered = [n for n in wanted if n.startswith(prefix) and n not in done]
        if covered:
            d = DYNAMIC_DOCS[prefix]
            pattern = prefix + ("<name>" if prefix == FRAMEWORK_PREFIX else "<value>")
            rows.append({"feature": pattern, "name": d.title, "formula": d.formula, "features": ", ".join(covered)})
            done.update(covered)
    for n in wanted:
        if n in done:
            continue
        d = feature_doc(n)
        rows.append({"feature": n, "name": n if d is None else d.title,
                     "formula": "not a perfmodel feature" if d is None else d.formula, "features": n})
    return pd.DataFrame(rows, columns=["feature", "name", "formula", "features"])


DYNAMIC_SETS: tuple[str, ...] = ("framework", "settings", "identity")
"""Sets whose columns depend on the data (empty tuples in :data:`FEATURE_SETS`)."""

FEATURE_SETS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "raw": RAW,
    "derived": DERIVED,
    "physical": PHYSICAL,
    "framework": (),
    "identity": (),
    "settings": (),
    "static": RAW + DERIVED + PHYSICAL,
    "all": RAW + DERIVED + PHYSICAL,
})
"""Named sets and their static columns; ``framework``, ``settings`` and ``identity`` are filled from the data."""

# Composite sets a caller may ask for by name.
_COMPOSITE: Mapping[str, tuple[str, ...]] = {
    "static": ("raw", "derived", "physical", "settings", "identity"),
    "all": ("raw", "derived", "physical", "settings", "framework", "identity"),
}


def _parts(set: str) -> tuple[str, ...]:
    names = [s.strip() for s in str(set).split("+")]
    if not any(names):
        raise PerfmodelError(f"empty feature set name {set!r}; choose from {', '.join(FEATURE_SETS)}")
    if not all(names):  # 'raw+' had been read as 'raw'
        raise PerfmodelError(f"feature set {set!r} has an empty part: join set names with single '+' "
                             f"(e.g. 'raw+physical'); choose from {', '.join(FEATURE_SETS)}")
    out: list[str] = []
    for name in names:
        if name not in FEATURE_SETS:
            raise PerfmodelError(f"unknown feature set {name!r}; choose from {', '.join(FEATURE_SETS)} "
                                 f"(combine with '+', e.g. 'raw+physical')")
        for p in _COMPOSITE.get(name, (name,)):
            if p not in out:
                out.append(p)
    return tuple(out)


CLIENT_FW_COLUMNS = frozenset({"fw_requested_input_len_tok", "fw_requested_output_len_tok", "fw_output_short_frac",
                               "fw_prompt_len_off_frac", "fw_duration_s"})
"""``fw_`` columns written by the HTTP sweep client (``perfmodel.sweep.http_backend``) about its own measurement:
the requested lengths, the length checks and the measured window. They are not framework-internal metrics, and
``fw_duration_s`` is the target in disguise (output throughput = requests x output length / window), so the
``framework`` set leaves them out."""


def is_token_rate(column: str) -> bool:
    """Whether an ``fw_`` column is a server's rate of tokens or its inverse, the throughput counted by the server:
    a counter of tokens per second (``fw_llamacpp_tokens_predicted_per_s``, ``fw_vllm_generation_tokens_per_s``),
    a tokens-per-second gauge (llama-server's ``predicted_tokens_seconds``) or a per-request speed (its
    ``predicted_per_second``, ``predicted_per_token_ms``). Explaining throughput by it explains nothing (it topped
    the sample's Attribution ranking), so no feature set takes it; it stays in the runs table beside the client's
    figure, as a check of it. A share of time (``tokens_predicted_seconds_per_s``), decode calls per second,
    queue depths and busy slots stay features."""
    n = str(column).lower()
    if not n.startswith(FRAMEWORK_PREFIX):
        return False
    counter = "token" in n and n.endswith("_per_s") and not n.endswith("seconds_per_s")
    return counter or "tokens_seconds" in n or "per_second" in n or "per_token" in n


def _framework_columns(runs: pd.DataFrame) -> list[str]:
    return sorted(c for c in runs.columns
                  if str(c).startswith(FRAMEWORK_PREFIX) and str(c) not in CLIENT_FW_COLUMNS
                  and str(c) not in VARYING_BY and not is_token_rate(str(c))
                  and pd.api.types.is_numeric_dtype(runs[c]))


def _setting_columns(runs: pd.DataFrame) -> list[str]:
    return [c for c in VARYING_BY if c in runs.columns and pd.api.types.is_numeric_dtype(runs[c])]


def _hardware_group(runs: pd.DataFrame, attr: str) -> pd.Series:
    hws = physics.hardware_specs(runs)
    return pd.Series([str(getattr(h, attr)).lower() if h is not None else None for h in hws],
                     index=runs.index, dtype="string")


_GROUP_ATTR = {"platform": "peer_group", "vendor": "vendor"}


def _identity_values(runs: pd.DataFrame, prefixes: Mapping[str, str] = IDENTITY_PREFIXES
                     ) -> dict[str, pd.Series]:
    out: dict[str, pd.Series] = {}
    for col in prefixes:
        if col in _GROUP_ATTR:
            if "hardware" in runs.columns:
                out[col] = _hardware_group(runs, _GROUP_ATTR[col])
        elif col in runs.columns:
            out[col] = runs[col].astype("string").str.lower()
    return out


def _identity_columns(values: Mapping[str, pd.Series]) -> list[str]:
    cols: list[str] = []
    for col, s in values.items():
        cols += [IDENTITY_PREFIXES[col] + str(v) for v in sorted(pd.unique(s.dropna()))]
    return cols


def feature_names(runs: pd.DataFrame, set: str = "all") -> list[str]:
    """The columns of ``build_features(runs, set)``, in order.

    Parameters
    ----------
    runs
        Runs table (dynamic sets read its ``fw_*`` columns and identity values).
    set
        ``raw``, ``derived``, ``physical``, ``framework``, ``settings``, ``identity``, ``static`` or ``all``;
        several may be joined with ``+`` (``"raw+physical"``).

    Returns
    -------
    list of str
        Feature names, static sets first in their fixed order, then ``fw_*``
        sorted, then identity indicators sorted by column and value.

    Raises
    ------
    PerfmodelError
        Unknown set name.
    UnknownNameError
        An unknown hardware name (the vendor indicator needs the catalog).
    """
    names: list[str] = []
    for part in _parts(set):
        if part == "framework":
            names += _framework_columns(runs)
        elif part == "settings":
            names += _setting_columns(runs)
        elif part == "identity":
            names += _identity_columns(_identity_values(runs))
        else:
            names += list(FEATURE_SETS[part])
    return names


def training_feature_names(runs: pd.DataFrame, set: str) -> list[str]:
    """:func:`feature_names` of the rows a predictor trains on, refusing a set that gives none there.

    Raises
    ------
    ValidationError
        The set gives no feature on these rows (``framework`` on rows without server metrics had given a
        traceback from the regressor, or a model that learnt from nothing); the message names the option.
    PerfmodelError, UnknownNameError
        As :func:`feature_names`.
    """
    from .errors import ValidationError

    names = feature_names(runs, set)
    if not names:
        have = [s for s in FEATURE_SETS if s != set and feature_names(runs, s)]
        raise ValidationError(f"feature set {set!r} gives no feature on these training rows"
                              + (" (they carry no framework metric, no fw_* column)" if "framework" in _parts(set)
                                 else "") + f"; sets that do: {', '.join(have)}")
    return names


def _num(runs: pd.DataFrame, col: str) -> np.ndarray:
    if col not in runs.columns:
        return np.full(len(runs), np.nan)
    return pd.to_numeric(runs[col], errors="coerce").astype("float64").to_numpy()


def _physical(runs: pd.DataFrame, roof: pd.DataFrame) -> dict[str, np.ndarray]:
    hws = physics.hardware_specs(runs).to_numpy()
    ms = physics.model_specs(runs).to_numpy()

    def hw(attr: str) -> np.ndarray:
        return np.array([np.nan if getattr(h, attr) is None else float(getattr(h, attr)) for h in hws])

    ii, oo, bb = _num(runs, "input_len_tok"), _num(runs, "output_len_tok"), _num(runs, "batch_size")
    dev = _num(runs, "device_count")
    tp = _num(runs, "tp_size")
    tp = np.where(np.isnan(tp), dev, tp)  # the data rarely says; tensor parallel over all devices is the norm
    nbytes = roof["dtype_bytes"].to_numpy(dtype=float)
    kv_tok = roof["kv_bytes_per_token"].to_numpy(dtype=float)
    wbytes = roof["weight_bytes"].to_numpy(dtype=float)
    d_model = np.array([np.nan if m.hidden_size is None else float(m.hidden_size) for m in ms])
    bw_dev = hw("memory_bw_gbs") * 1e9
    peak_all = roof["peak_flops"].to_numpy(dtype=float)
    peak_dev = peak_all / dev
    kv = kv_tok * bb * (ii + oo)
    mem_dev = hw("memory_bytes")
    with np.errstate(divide="ignore", invalid="ignore"):
        step = roof["decode_step_s_min"].to_numpy(dtype=float)
        kv_read = kv_tok * bb * (ii + oo / 2.0) / roof["mem_bw_bps"].to_numpy(dtype=float)
        feats = {
            "kv_cache_bytes": kv,
            "weight_bytes": wbytes,
            "bytes_per_sm": (wbytes + kv) / (hw("sm_count") * dev),
            "l2_reuse": hw("l2_cache_mb") * 1e6 / (bb * d_model * nbytes),
            "wavefronts": np.ceil(bb / 32.0),
            "mem_bw_pressure_s": (ii + oo) * bb / (bw_dev * dev),
            "compute_intensity_s": ii * oo * roof["active_params"].to_numpy(dtype=float) / peak_all,
            "pcie_contention": bb * tp / hw("pcie_lanes"),
            "weight_bytes_over_bw_s": wbytes / (bw_dev * dev),
            "mem_fraction_used": (wbytes + kv) / (mem_dev * dev),
            "active_params": roof["active_params"].to_numpy(dtype=float),
            "mem_bw_gbs": bw_dev / 1e9,
            "peak_tflops": peak_dev / 1e12,
            "flops_per_byte": peak_dev / bw_dev,
            "log_prefill_s_min": np.log(roof["prefill_s_min"].to_numpy(dtype=float)),
            "log_decode_step_s_min": np.log(step),
            "log_e2e_s_min": np.log(roof["e2e_s_min"].to_numpy(dtype=float)),
            "log_output_tok_s_max": np.log(roof["output_tok_s_max"].to_numpy(dtype=float)),
            "kv_read_share": kv_read / step,
        }
    return {k: np.where(np.isfinite(v), v, np.nan) for k, v in feats.items()}


def build_features(runs: pd.DataFrame, set: str = "all", *, keep_suspect: bool = True,
                   names: list[str] | None = None) -> pd.DataFrame:
    """Compute a feature set for every row.

    Parameters
    ----------
    runs
        Runs or query table with canonical column names (``hardware``, ``model``,
        ``device_count``, ``input_len_tok``, ``output_len_tok``, ``batch_size``).
    set
        Feature set name (see :func:`feature_names`).
    keep_suspect
        When False, rows :func:`perfmodel.physics.flag_suspect` flags (measured
        faster than the weights-read bound) are dropped; needs ``output_throughput_tok_s``.
    names
        The exact columns to return, in order (a fitted model's feature list);
        indicators and ``fw_*`` columns absent from ``runs`` are 0 and NaN.
        Overrides ``set``.

    Returns
    -------
    pandas.DataFrame
        float64 features, index aligned with ``runs`` (minus dropped suspects).

    Raises
    ------
    ValidationError
        A needed column is missing, or a length, batch or device count is not a
        positive finite number (row and column named).
    UnknownNameError
        A hardware or model name is not in the catalog (row and column named).
    PerfmodelError
        Unknown set name.
    """
    physics.check_query(runs)
    cols = list(names) if names is not None else feature_names(runs, set)
    roof = physics.roofline(runs)
    if not keep_suspect:
        keep = ~physics.flag_suspect(runs, bounds=roof)
        runs, roof = runs.loc[keep], roof.loc[keep]
    want = frozenset(cols)
    ii, oo, bb = _num(runs, "input_len_tok"), _num(runs, "output_len_tok"), _num(runs, "batch_size")
    data: dict[str, np.ndarray] = {}
    for c in RAW:
        if c in want:
            data[c] = roof["dtype_bytes"].to_numpy(dtype=float) if c == "dtype_bytes" else _num(runs, c)
    if want & frozenset(DERIVED):
        data.update({
            "log1p_ii": np.log1p(ii), "log1p_oo": np.log1p(oo), "ii_over_oo": ii / (oo + 1e-9),
            "bb_over_len": bb / np.where(ii + oo > 0, ii + oo, np.nan), "log2_bb": np.log2(bb),
        })
    if want & frozenset(PHYSICAL):
        data.update(_physical(runs, roof))
    wanted = {col: p for col, p in _ALL_IDENTITY_PREFIXES.items() if any(c.startswith(p) for c in cols)}
    if wanted:
        for col, s in _identity_values(runs, wanted).items():
            prefix = wanted[col]
            for c in cols:
                if c.startswith(prefix):
                    data[c] = (s == c[len(prefix):]).fillna(False).to_numpy(dtype=float)
    out = {}
    for c in cols:
        if c in data:
            out[c] = data[c]
        elif c.startswith(FRAMEWORK_PREFIX):
            out[c] = _num(runs, c)
        elif any(c.startswith(p) for p in _ALL_IDENTITY_PREFIXES.values()):
            out[c] = np.zeros(len(runs))
        else:
            raise PerfmodelError(f"unknown feature {c!r}; known: {', '.join(FEATURE_SETS['all'])}, "
                                 f"fw_* columns and identity indicators")
    return pd.DataFrame(out, index=runs.index, columns=cols, dtype="float64")
