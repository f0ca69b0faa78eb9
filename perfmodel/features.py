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
    own measurement.
``identity``
    one-hot indicators ``id_hw_<hardware>``, ``id_fw_<framework>``,
    ``id_model_<model>`` and ``id_platform_<platform>`` (the hardware's software
    stack in the catalog: CUDA, ROCm, oneAPI, SynapseAI, ...) for the values
    present (dynamic). Efficiency is a property of the software on a platform,
    which no catalog figure describes.
``settings``
    the ``fw_*`` columns that are settings chosen before a run rather than
    metrics measured during it (:data:`perfmodel.curves.VARYING_BY`: the local
    engine's thread count), where the data has them (dynamic).
``static``
    raw + derived + physical + settings + identity: what is known before a run,
    from the configuration and the catalogs (every set but the framework
    metrics, which are measured during the run). What a prediction for an
    unbenchmarked configuration can use; roofline-gbm's default.
``all``
    raw + derived + physical + framework + identity.

A figure the catalog does not know gives NaN in the features that need it
(tree ensembles handle NaN); an unknown hardware or model name raises
:class:`~perfmodel.errors.UnknownNameError` naming the row and column.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import numpy as np
import pandas as pd

from . import physics
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
    "feature_names",
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
    "all": ("raw", "derived", "physical", "framework", "identity"),
}


def _parts(set: str) -> tuple[str, ...]:
    names = [s.strip() for s in str(set).split("+") if s.strip()]
    if not names:
        raise PerfmodelError(f"empty feature set name {set!r}; choose from {', '.join(FEATURE_SETS)}")
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


def _framework_columns(runs: pd.DataFrame) -> list[str]:
    return sorted(c for c in runs.columns
                  if str(c).startswith(FRAMEWORK_PREFIX) and str(c) not in CLIENT_FW_COLUMNS
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
    mem_dev = hw("memory_gb") * 1e9
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
