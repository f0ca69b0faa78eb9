"""Sweeps: measure throughput points and return them as canonical runs.

Only the in-process local engine exists so far (:mod:`perfmodel.sweep.local_engine`);
it is written as one backend of the future sweep launcher (plans, HTTP backend,
telemetry, resume). Importing this package does not import torch: the engine
loads torch and transformers only when it runs, and raises a
:class:`~perfmodel.errors.PerfmodelError` with the install hint
(``pip install perfmodel[engine]``) when they are missing.
"""

from __future__ import annotations

from .local_engine import (
    ENGINE_SOURCE_FORMAT,
    SAMPLE_HARDWARE,
    SAMPLE_MODEL,
    TINY_LLAMA_CONFIG,
    EngineUnavailableError,
    LocalEngine,
    StaticBatchPoint,
    count_parameters,
    run_static_batches,
    runs_frame,
)

__all__ = [
    "ENGINE_SOURCE_FORMAT",
    "SAMPLE_HARDWARE",
    "SAMPLE_MODEL",
    "TINY_LLAMA_CONFIG",
    "EngineUnavailableError",
    "LocalEngine",
    "StaticBatchPoint",
    "count_parameters",
    "run_static_batches",
    "runs_frame",
]
