"""Hardware and model catalogs: public specs as data, loaded into frozen objects.

The built-in catalogs live in ``perfmodel/catalog/data/*.yaml``; every figure
carries a public source (vendor datasheet or whitepaper for devices, the
model's ``config.json`` on the Hugging Face hub or its paper for models).
Unknown figures are ``None``, never guessed.

>>> from perfmodel import catalog
>>> catalog.resolve_hardware("Nvidia H100 GPU").memory_bw_gbs
3350.0
>>> catalog.resolve_model("meta-llama/Meta-Llama-3-8B-Instruct").kv_bytes_per_token()
131072.0

Name resolution ignores case, spaces and ``-``/``_``/``.``-style punctuation,
vendor decorations for hardware ("NVIDIA", "AMD", "Habana", "GPU", "Tesla",
"GeForce"), and for models an organisation prefix or local path
(``meta-llama/``) and, when the exact name is unknown, fine-tune and
quantization suffixes (``-Instruct``, ``-chat-hf``, ``-FP8``, ``-AWQ-INT4``,
``-GPTQ``): a quantized variant has the architecture of its base model, and
recording the quantization is the importer's job. An unknown name raises
:class:`perfmodel.errors.UnknownNameError` listing the five closest keys.

Adding your own hardware and models
-----------------------------------
Put YAML files in ``<PERFMODEL_HOME>/catalog/*.yaml`` (``~/.perfmodel`` by
default) or list files/folders in ``$PERFMODEL_CATALOG`` (separated by
``os.pathsep``). They are merged over the built-ins in that order: an entry
whose key already exists replaces the built-in entry entirely (the built-in's
names and aliases keep resolving to that key); where two files claim the same
alias for different keys, the later file wins. Files are re-read when they change (or call
:func:`reload`). A file has up to three sections, every one optional::

    hardware:
      x100-sxm:                     # key: lower-case letters, digits, . _ + -
        name: Acme X100 SXM 96GB    # required
        vendor: Acme                # required
        platform: AcmeRT            # software stack the frameworks target (CUDA, ROCm, oneAPI, ...)
        kind: gpu                   # required: gpu | accelerator | cpu
        memory_gb: 96               # GB as the vendor states it: binary (2^30 bytes)
        memory_bw_gbs: 4000         # peak memory bandwidth, GB/s
        peak_tflops:                # dense (no sparsity) peaks, TFLOP/s (TOP/s for ints)
          fp32: 60                  #   dtypes: fp64 fp32 tf32 fp16 bf16 fp8 int8 fp4 int4
          bf16: 1000
          fp8: 2000
        sm_count: 128               # SMs / compute units / cores
        l2_cache_mb: 60
        interconnect_bw_gbs: 900    # device-to-device, bidirectional total as vendors quote it
        pcie_gen: 5
        pcie_lanes: 16
        pcie_bw_gbs: 128            # bidirectional
        tdp_w: 700
        price_per_hour_usd: 3.5     # on-demand cloud price per device-hour
        aliases: ["X100", "Acme X100 96GB"]
        sources: {all: "https://example.com/x100-datasheet.pdf"}
        notes: "anything a reader should know; say where figures are uncertain"
    models:
      my-llama-8b:
        name: My-Llama-8B           # required
        family: llama               # required
        architecture: LlamaForCausalLM
        params_b: 8.03              # billions, total
        active_params_b: 8.03       # per token; defaults to params_b for dense models
        n_layers: 32
        hidden_size: 4096
        n_heads: 32
        n_kv_heads: 8
        head_dim: 128
        intermediate_size: 14336
        vocab_size: 128256
        n_experts: 0                # routed experts per MoE layer (0 = dense)
        n_active_experts: 0         # experts per token (MoE only)
        moe_intermediate_size: null # per-expert FFN width (MoE only)
        n_shared_experts: 0
        kv_lora_rank: null          # multi-head latent attention (DeepSeek V3) only,
        qk_rope_head_dim: null      #   together with this one
        tie_word_embeddings: false
        max_context: 131072
        default_dtype: bf16         # fp32 bf16 fp16 fp8 mxfp4 int8 int4
        aliases: ["myorg/My-Llama-8B-v2"]
        sources: {all: "https://huggingface.co/myorg/My-Llama-8B/blob/main/config.json"}
    frameworks:
      my-engine: ["MyEngine", "my_engine v2"]   # canonical name: aliases

Unknown fields, out-of-range values (``memory_bw_gbs: -1``) and malformed
YAML raise :class:`perfmodel.errors.ValidationError` naming the file, the entry
and the field, e.g. ``my_gpus.yaml: hardware 'x100-sxm', field memory_bw_gbs:
must be > 0 (got -1)``. ``sources`` keys are field names, ``peak_tflops.<dtype>``
or ``all``; user files may omit sources (the built-ins may not).
"""

from __future__ import annotations

from ._load import (
    CatalogFile,
    canonical_framework,
    canonical_names,
    framework_aliases,
    hardware_catalog,
    load_file,
    model_catalog,
    normalize,
    reload,
    resolve_hardware,
    resolve_model,
    split_device_count,
    user_files,
)
from ._specs import (
    BYTES_PER_MEMORY_GB,
    DTYPES,
    HARDWARE_KINDS,
    MODEL_DTYPES,
    HardwareSpec,
    ModelSpec,
    canonical_dtype,
)

__all__ = [
    "BYTES_PER_MEMORY_GB",
    "HardwareSpec",
    "ModelSpec",
    "CatalogFile",
    "DTYPES",
    "HARDWARE_KINDS",
    "MODEL_DTYPES",
    "hardware_catalog",
    "model_catalog",
    "framework_aliases",
    "resolve_hardware",
    "resolve_model",
    "canonical_framework",
    "canonical_names",
    "canonical_dtype",
    "load_file",
    "user_files",
    "reload",
    "normalize",
    "split_device_count",
]
