"""The frozen spec objects the catalogs load into."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from ..errors import PerfmodelError, UnknownNameError

__all__ = [
    "BYTES_PER_MEMORY_GB",
    "DTYPES",
    "DTYPE_ALIASES",
    "HARDWARE_KINDS",
    "MODEL_DTYPES",
    "HardwareSpec",
    "ModelSpec",
    "canonical_dtype",
]

DTYPES: tuple[str, ...] = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "fp4", "int4")
"""Keys allowed in ``HardwareSpec.peak_tflops`` (dense peak, no structured sparsity)."""

DTYPE_ALIASES: Mapping[str, str] = MappingProxyType({
    "float64": "fp64", "double": "fp64",
    "float32": "fp32", "float": "fp32", "f32": "fp32",  # f32/f16: llama.cpp's (GGUF's) spellings
    "float16": "fp16", "half": "fp16", "f16": "fp16",
    "bfloat16": "bf16",
    "float8": "fp8", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "e4m3": "fp8",
    "float4": "fp4", "nvfp4": "fp4", "mxfp4": "fp4",
})

HARDWARE_KINDS: tuple[str, ...] = ("gpu", "accelerator", "cpu")

BYTES_PER_MEMORY_GB = float(2**30)
"""Bytes in one GB of ``HardwareSpec.memory_gb`` (see :attr:`HardwareSpec.memory_bytes`)."""

MODEL_DTYPES: tuple[str, ...] = ("fp32", "bf16", "fp16", "fp8", "mxfp4", "int8", "int4")
"""Allowed ``ModelSpec.default_dtype`` values: the dtype the published weights are stored in."""

HardwareKind = Literal["gpu", "accelerator", "cpu"]


def canonical_dtype(dtype: str) -> str:
    """Lower-case ``dtype`` and map common spellings (``bfloat16``, ``half``...) to catalog keys."""
    d = str(dtype).strip().lower().replace("-", "_")
    d = d.removeprefix("torch.")
    return DTYPE_ALIASES.get(d, d)


def _frozen(m: Mapping[str, object] | None) -> Mapping[str, object]:
    return MappingProxyType(dict(m or {}))


@dataclass(frozen=True)
class HardwareSpec:
    """One device (GPU, accelerator or CPU) with its public figures.

    Unknown figures are ``None``, never guessed. Bandwidths are GB/s (1e9 B/s);
    ``interconnect_bw_gbs`` and ``pcie_bw_gbs`` are the bidirectional totals
    vendors quote (e.g. NVLink 4 = 900 GB/s, PCIe Gen5 x16 = 128 GB/s).
    ``peak_tflops`` holds dense peaks (no 2:4 sparsity) per dtype, in TFLOP/s
    (TOP/s for int8/int4). ``platform`` is the software stack the serving
    frameworks target on the device (CUDA, ROCm, oneAPI, SynapseAI, ...).
    """

    key: str
    name: str
    vendor: str
    kind: HardwareKind
    platform: str | None = None
    memory_gb: float | None = None
    memory_bw_gbs: float | None = None
    peak_tflops: Mapping[str, float] = field(default_factory=dict)
    sm_count: int | None = None
    l2_cache_mb: float | None = None
    interconnect_bw_gbs: float | None = None
    pcie_gen: int | None = None
    pcie_lanes: int | None = None
    pcie_bw_gbs: float | None = None
    tdp_w: float | None = None
    price_per_hour_usd: float | None = None
    aliases: tuple[str, ...] = ()
    sources: Mapping[str, str] = field(default_factory=dict)
    notes: str = ""

    def __post_init__(self) -> None:
        # Mappings become read-only views so a shared cached spec cannot be mutated by a caller.
        object.__setattr__(self, "peak_tflops", _frozen(self.peak_tflops))
        object.__setattr__(self, "sources", _frozen(self.sources))
        object.__setattr__(self, "aliases", tuple(self.aliases))

    def __hash__(self) -> int:
        return hash(("hardware", self.key))

    @property
    def memory_bytes(self) -> float | None:
        """Memory per device in bytes: ``memory_gb`` read as binary gigabytes (2^30 B), as vendors' HBM
        figures are. nvidia-smi reports 81,559 MiB (85.5e9 B) for an "80 GB" H100, 40,960 MiB for an
        A100-40GB and 143,771 MiB (150.8e9 B) for a "141 GB" H200
        (https://github.com/modal-labs/modal-client/pull/2797 lists the first two). Every memory check
        (weights that cannot fit, the batch whose KV cache fills the memory, memory used, the Planner's
        fit) reads the memory through this, so they agree. None where the catalog has no figure."""
        return None if self.memory_gb is None else float(self.memory_gb) * BYTES_PER_MEMORY_GB

    @property
    def peer_group(self) -> str:
        """The group whose software efficiency this device is expected to share: its platform, lower-case
        (the vendor's where the catalog gives none). Intel's Gaudi (SynapseAI) and Data Center GPU Max
        (oneAPI) share a vendor, not a software stack."""
        return str(self.platform or self.vendor).lower()

    def peak_flops(self, dtype: str) -> float:
        """Dense peak throughput for ``dtype`` in FLOP/s (OP/s for integer types).

        Parameters
        ----------
        dtype
            ``fp32``, ``tf32``, ``fp16``, ``bf16``, ``fp8``, ``int8``, ``fp4``...
            (``bfloat16``, ``float16``, ``half`` are accepted too).

        Returns
        -------
        float
            Peak FLOP/s, i.e. ``peak_tflops[dtype] * 1e12``.

        Raises
        ------
        UnknownNameError
            The dtype has no published figure for this device; the message lists
            the dtypes that do.
        """
        d = canonical_dtype(dtype)
        if d not in self.peak_tflops:
            avail = sorted(self.peak_tflops, key=lambda k: DTYPES.index(k) if k in DTYPES else 99)
            raise UnknownNameError(f"dtype for hardware {self.key!r}", dtype, avail,
                                   hint="no figure is recorded for it" if avail else
                                   "no peak figures are recorded for this device")
        return float(self.peak_tflops[d]) * 1e12

    def figures(self) -> dict[str, object]:
        """The numeric figures by field name (``None`` where unknown)."""
        return {f: getattr(self, f) for f in _HARDWARE_FIGURES}


_HARDWARE_FIGURES = ("memory_gb", "memory_bw_gbs", "sm_count", "l2_cache_mb", "interconnect_bw_gbs",
                     "pcie_gen", "pcie_lanes", "pcie_bw_gbs", "tdp_w", "price_per_hour_usd")


@dataclass(frozen=True)
class ModelSpec:
    """One model architecture (quantized or fine-tuned variants resolve to their base).

    ``params_b`` and ``active_params_b`` are billions of parameters
    (``active_params_b == params_b`` for dense models). ``n_experts`` is 0 for
    dense models and ``None`` where an MoE's expert count is unknown. For multi-head latent
    attention (DeepSeek V2/V3) ``kv_lora_rank`` and ``qk_rope_head_dim`` are set
    and the KV cache holds one compressed latent plus one RoPE key per layer, not
    per-head K and V.
    """

    key: str
    name: str
    family: str
    params_b: float | None = None
    active_params_b: float | None = None
    n_layers: int | None = None
    hidden_size: int | None = None
    n_heads: int | None = None
    n_kv_heads: int | None = None
    head_dim: int | None = None
    intermediate_size: int | None = None
    vocab_size: int | None = None
    n_experts: int | None = 0
    n_active_experts: int | None = 0
    max_context: int | None = None
    default_dtype: str | None = None
    aliases: tuple[str, ...] = ()
    sources: Mapping[str, str] = field(default_factory=dict)
    notes: str = ""
    architecture: str | None = None
    moe_intermediate_size: int | None = None
    n_shared_experts: int = 0
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    tie_word_embeddings: bool | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "sources", _frozen(self.sources))
        object.__setattr__(self, "aliases", tuple(self.aliases))

    def __hash__(self) -> int:
        return hash(("model", self.key))

    @property
    def is_moe(self) -> bool:
        """True for mixture-of-experts models (also when the expert count is unknown but fewer
        parameters are active than stored)."""
        if self.n_experts:
            return True
        return (self.params_b is not None and self.active_params_b is not None
                and self.active_params_b < self.params_b)

    @property
    def uses_mla(self) -> bool:
        """True when the KV cache is multi-head latent attention (compressed)."""
        return self.kv_lora_rank is not None

    def kv_bytes_per_token(self, dtype_bytes: float = 2) -> float:
        """Bytes of KV cache one token occupies across all layers.

        ``2 * n_layers * n_kv_heads * head_dim * dtype_bytes`` for (grouped-query)
        multi-head attention; ``n_layers * (kv_lora_rank + qk_rope_head_dim) *
        dtype_bytes`` for multi-head latent attention, which caches one shared
        latent instead of per-head K and V.

        Parameters
        ----------
        dtype_bytes
            Bytes per cached element (2 for fp16/bf16, 1 for fp8).

        Returns
        -------
        float
            Bytes per token.

        Raises
        ------
        PerfmodelError
            A figure the formula needs is unknown for this model.
        """
        if self.uses_mla:
            need = {"n_layers": self.n_layers, "qk_rope_head_dim": self.qk_rope_head_dim}
            self._require(need, "the KV cache size")
            assert self.n_layers is not None and self.kv_lora_rank is not None
            assert self.qk_rope_head_dim is not None
            return float(self.n_layers * (self.kv_lora_rank + self.qk_rope_head_dim) * dtype_bytes)
        need = {"n_layers": self.n_layers, "n_kv_heads": self.n_kv_heads, "head_dim": self.head_dim}
        self._require(need, "the KV cache size")
        assert self.n_layers is not None and self.n_kv_heads is not None and self.head_dim is not None
        return float(2 * self.n_layers * self.n_kv_heads * self.head_dim * dtype_bytes)

    def weight_bytes(self, dtype_bytes: float = 2) -> float:
        """Bytes of all weights at ``dtype_bytes`` per parameter (``params_b * 1e9 * dtype_bytes``).

        Parameters
        ----------
        dtype_bytes
            Bytes per parameter (2 for bf16, 1 for fp8, 0.5 for 4-bit).

        Returns
        -------
        float
            Bytes.

        Raises
        ------
        PerfmodelError
            The parameter count is unknown for this model.
        """
        self._require({"params_b": self.params_b}, "the weight size")
        assert self.params_b is not None
        return float(self.params_b * 1e9 * dtype_bytes)

    def _require(self, figures: Mapping[str, object], what: str) -> None:
        missing = [k for k, v in figures.items() if v is None]
        if missing:
            raise PerfmodelError(
                f"model {self.key!r}: cannot compute {what} because {', '.join(missing)} "
                f"{'is' if len(missing) == 1 else 'are'} unknown in the catalog; add the figure in a "
                f"catalog YAML file (see perfmodel.catalog)")

    def figures(self) -> dict[str, object]:
        """The numeric figures by field name (``None`` where unknown)."""
        return {f: getattr(self, f) for f in _MODEL_FIGURES}


_MODEL_FIGURES = ("params_b", "active_params_b", "n_layers", "hidden_size", "n_heads", "n_kv_heads",
                  "head_dim", "intermediate_size", "vocab_size", "max_context", "moe_intermediate_size",
                  "kv_lora_rank", "qk_rope_head_dim")
