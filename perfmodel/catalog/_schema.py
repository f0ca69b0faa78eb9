"""Strict pydantic schemas of catalog YAML entries (built-in and user files alike)."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ._specs import _HARDWARE_FIGURES, _MODEL_FIGURES, DTYPES

__all__ = ["HardwareEntry", "ModelEntry", "KEY_PATTERN", "SECTIONS", "source_keys_allowed", "entry_error_text"]

KEY_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._+-]*$")
"""Catalog keys: lower-case letters, digits and ``. _ + -`` (they end up in the runs table)."""

SECTIONS = ("hardware", "models", "frameworks")


def _check_sources(sources: dict[str, str], allowed: set[str]) -> dict[str, str]:
    bad = [k for k in sources if k not in allowed and not k.startswith("peak_tflops.")]
    if bad:
        raise ValueError(f"unknown source key(s) {bad}; use a field name, 'peak_tflops.<dtype>' or 'all'")
    empty = [k for k, v in sources.items() if not str(v).strip()]
    if empty:
        raise ValueError(f"empty source for {empty}")
    return sources


def source_keys_allowed(kind: str) -> set[str]:
    """Field names a ``sources`` mapping may use for ``kind`` ("hardware" or "models")."""
    figures = _HARDWARE_FIGURES + ("peak_tflops",) if kind == "hardware" else _MODEL_FIGURES
    return {*figures, "all", "name", "architecture", "platform", "n_experts", "n_active_experts", "default_dtype",
            "n_shared_experts", "tie_word_embeddings"}


class HardwareEntry(BaseModel):
    """One ``hardware:`` entry of a catalog YAML file."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, description="display name")
    vendor: str = Field(min_length=1)
    platform: str | None = Field(None, min_length=1,
                                 description="software stack the frameworks target (CUDA, ROCm, oneAPI, ...)")
    kind: Literal["gpu", "accelerator", "cpu"]
    memory_gb: float | None = Field(None, gt=0,
                                    description="device memory as the vendor states it, binary GB (2^30 B)")
    memory_bw_gbs: float | None = Field(None, gt=0, description="peak memory bandwidth, GB/s")
    peak_tflops: dict[str, float] = Field(default_factory=dict, description="dense peak per dtype, TFLOP/s")
    sm_count: int | None = Field(None, gt=0, description="SMs / compute units / cores")
    l2_cache_mb: float | None = Field(None, gt=0)
    interconnect_bw_gbs: float | None = Field(None, gt=0, description="device-to-device, bidirectional, GB/s")
    pcie_gen: int | None = Field(None, ge=1, le=7)
    pcie_lanes: int | None = Field(None, ge=1, le=32)
    pcie_bw_gbs: float | None = Field(None, gt=0, description="host link, bidirectional, GB/s")
    tdp_w: float | None = Field(None, gt=0)
    price_per_hour_usd: float | None = Field(None, ge=0, description="on-demand cloud price per device-hour")
    aliases: list[str] = Field(default_factory=list)
    sources: dict[str, str] = Field(default_factory=dict)
    notes: str = ""

    @field_validator("peak_tflops")
    @classmethod
    def _dtypes(cls, v: dict[str, float]) -> dict[str, float]:
        bad = [k for k in v if k not in DTYPES]
        if bad:
            raise ValueError(f"unknown dtype(s) {bad}; allowed: {', '.join(DTYPES)}")
        neg = [k for k, x in v.items() if not x > 0]
        if neg:
            raise ValueError(f"must be > 0 for {neg}")
        return v

    @field_validator("sources")
    @classmethod
    def _sources(cls, v: dict[str, str]) -> dict[str, str]:
        return _check_sources(v, source_keys_allowed("hardware"))


class ModelEntry(BaseModel):
    """One ``models:`` entry of a catalog YAML file."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    family: str = Field(min_length=1)
    architecture: str | None = None
    params_b: float | None = Field(None, gt=0, description="total parameters, billions")
    active_params_b: float | None = Field(None, gt=0, description="parameters used per token, billions")
    n_layers: int | None = Field(None, gt=0)
    hidden_size: int | None = Field(None, gt=0)
    n_heads: int | None = Field(None, gt=0)
    n_kv_heads: int | None = Field(None, gt=0)
    head_dim: int | None = Field(None, gt=0)
    intermediate_size: int | None = Field(None, gt=0)
    moe_intermediate_size: int | None = Field(None, gt=0)
    vocab_size: int | None = Field(None, gt=0)
    n_experts: int | None = Field(0, ge=0, description="routed experts per MoE layer, 0 for dense, null if unknown")
    n_active_experts: int | None = Field(0, ge=0, description="routed experts per token, null if unknown")
    n_shared_experts: int = Field(0, ge=0)
    kv_lora_rank: int | None = Field(None, gt=0, description="MLA compressed KV dimension")
    qk_rope_head_dim: int | None = Field(None, gt=0, description="MLA decoupled RoPE key dimension")
    tie_word_embeddings: bool | None = None
    max_context: int | None = Field(None, gt=0)
    default_dtype: Literal["fp32", "bf16", "fp16", "fp8", "mxfp4", "int8", "int4"] | None = None
    aliases: list[str] = Field(default_factory=list)
    sources: dict[str, str] = Field(default_factory=dict)
    notes: str = ""

    @field_validator("sources")
    @classmethod
    def _sources(cls, v: dict[str, str]) -> dict[str, str]:
        return _check_sources(v, source_keys_allowed("models"))

    @model_validator(mode="after")
    def _consistent(self) -> ModelEntry:
        if self.n_experts is None or self.n_active_experts is None:
            # An MoE whose expert counts are unknown: only the parameter ordering can be checked.
            if (self.params_b is not None and self.active_params_b is not None
                    and self.active_params_b > self.params_b):
                raise ValueError("active_params_b must not exceed params_b")
        elif self.n_experts == 0:
            if self.n_active_experts:
                raise ValueError("n_active_experts must be 0 for a dense model (n_experts 0)")
            if self.active_params_b is None:
                self.active_params_b = self.params_b
            elif self.params_b is not None and abs(self.active_params_b - self.params_b) > 1e-9:
                raise ValueError("active_params_b must equal params_b for a dense model (n_experts 0)")
        else:
            if not 1 <= self.n_active_experts <= self.n_experts:
                raise ValueError(f"n_active_experts must be between 1 and n_experts ({self.n_experts})")
            if (self.params_b is not None and self.active_params_b is not None
                    and self.active_params_b > self.params_b):
                raise ValueError("active_params_b must not exceed params_b")
        if (self.kv_lora_rank is None) != (self.qk_rope_head_dim is None):
            raise ValueError("kv_lora_rank and qk_rope_head_dim go together (multi-head latent attention)")
        return self


def _num(x: Any) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def entry_error_text(err: dict[str, Any]) -> tuple[str | None, str]:
    """(field or None for the whole entry, message) for one pydantic error dict, in plain words."""
    loc = [str(p) for p in err.get("loc", ())]
    fld = ".".join(loc) if loc else None
    typ = err.get("type", "")
    ctx = err.get("ctx") or {}
    if typ == "greater_than":
        msg = f"must be > {_num(ctx.get('gt'))}"
    elif typ == "greater_than_equal":
        msg = f"must be >= {_num(ctx.get('ge'))}"
    elif typ == "less_than_equal":
        msg = f"must be <= {_num(ctx.get('le'))}"
    elif typ == "extra_forbidden":
        return fld, "unknown field (check the spelling; see perfmodel.catalog for the schema)"
    elif typ == "missing":
        return fld, "required field is missing"
    elif typ in ("value_error", "assertion_error"):
        msg = str(err.get("msg", "")).removeprefix("Value error, ")
    else:
        msg = str(err.get("msg", ""))
    if "input" in err and typ not in ("value_error",) and not isinstance(err["input"], dict):
        msg += f" (got {err['input']!r})"
    return fld, msg
