"""Importers for the result files of common benchmark clients.

One module per source family; each registers :class:`~perfmodel.importers.base.Importer`
subclasses with :func:`~perfmodel.importers.base.register`. The format of a file is
detected from its content (:func:`detect_format`); ``read_file`` imports one file.
"""

from __future__ import annotations

import importlib

from .base import (
    Importer,
    ImportMeta,
    ImportResult,
    Issue,
    Parsed,
    Sample,
    check_burstiness,
    detect_format,
    finalize,
    read_file,
    read_result_file,
    register,
    registry,
)

__all__ = [
    "ImportMeta",
    "Importer",
    "ImportResult",
    "Issue",
    "Parsed",
    "Sample",
    "check_burstiness",
    "detect_format",
    "finalize",
    "read_file",
    "read_result_file",
    "register",
    "registry",
    "IMPORTER_MODULES",
]

#: Every importer module, in the order their importers are registered.
IMPORTER_MODULES = (
    "llm_inference_bench",
    "generic_csv",
    "neuralmagic_csv",
    "trtllm_bench",
    "guidellm_csv",
    "aiperf",
    "genai_perf",
    "guidellm",
    "vllm_bench",
    "sglang",
    "llmperf",
    "inference_perf",
    "optimum_benchmark",
    "gpu_conc",
    "canonical",
)

_loaded = False


def _load_all() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for mod in IMPORTER_MODULES:
        importlib.import_module(f"{__name__}.{mod}")
