"""The local-engine backend: sweep points measured by :class:`~perfmodel.sweep.local_engine.LocalEngine`.

A thin adapter: the engine size (:data:`perfmodel.sweep.plan.ENGINE_SIZES`)
picks the model config, each :class:`~perfmodel.sweep.backend.SweepPoint`
becomes one measured ``generate`` call (after ``point.warmup`` short warm-up
calls), and an engine failure (out of memory, a transformers error) becomes a
recorded failure instead of a crash. torch is imported when the engine loads
(:meth:`LocalEngineBackend.check`), never at import.
"""

from __future__ import annotations

import threading
import time
from typing import Any, ClassVar

from ..errors import PerfmodelError
from .backend import Backend, PointResult, SweepPoint
from .local_engine import SAMPLE_HARDWARE, LocalEngine, StaticBatchPoint
from .plan import ENGINE_SIZES

__all__ = ["LocalEngineBackend"]


class LocalEngineBackend(Backend):
    """Measure static batches of a random-weight Llama in this process.

    Parameters
    ----------
    engine_size
        A key of :data:`perfmodel.sweep.plan.ENGINE_SIZES`.
    num_threads, dtype, device, seed
        Passed to :class:`~perfmodel.sweep.local_engine.LocalEngine`.
    hardware, model
        Written into the rows (the runner overrides them from the plan).

    Raises
    ------
    PerfmodelError
        Unknown engine size.
    """

    name: ClassVar[str] = "local"

    def __init__(self, *, engine_size: str = "tiny", num_threads: int = 1, dtype: str = "float32",
                 device: str = "cpu", seed: int = 0, hardware: str = SAMPLE_HARDWARE,
                 model: str | None = None) -> None:
        if engine_size not in ENGINE_SIZES:
            raise PerfmodelError(f"unknown engine size {engine_size!r}; valid sizes: {', '.join(ENGINE_SIZES)}")
        size = ENGINE_SIZES[engine_size]
        self.engine_size = engine_size
        self.engine = LocalEngine(model_config=dict(size.config), model=model or size.model, hardware=hardware,
                                  num_threads=num_threads, dtype=dtype, device=device, seed=seed)

    def describe(self) -> dict[str, Any]:
        """Engine size, model config, threads, dtype, device, parameter count and library versions.

        Returns
        -------
        dict
        """
        out: dict[str, Any] = {"backend": self.name, "engine_size": self.engine_size,
                               "model_config": dict(self.engine.model_config), "num_threads": self.engine.num_threads,
                               "dtype": self.engine.dtype, "device": self.engine.device, "seed": self.engine.seed}
        if self.engine.model_ is not None:
            torch, transformers = self.engine._torch, self.engine._transformers
            out["n_parameters"] = self.engine.n_parameters_
            out["torch_version"] = str(getattr(torch, "__version__", ""))
            out["transformers_version"] = str(getattr(transformers, "__version__", ""))
        return out

    def check(self) -> None:
        """Load the model (so a missing torch or a bad setting shows before the first point).

        Raises
        ------
        EngineUnavailableError
            torch or transformers is not installed.
        ValidationError
            An engine setting is invalid.
        """
        self.engine.load()

    def run_point(self, point: SweepPoint, *, cancel: threading.Event) -> PointResult:
        """Measure one static batch (one ``generate`` call after the warm-up).

        Parameters
        ----------
        point
            ``load_kind`` must be ``static_batch``.
        cancel
            Checked before starting; a ``generate`` call in progress is not interrupted
            (points are short; the runner finishes them cleanly).

        Returns
        -------
        PointResult
        """
        if cancel.is_set():
            return PointResult(point, None, "cancelled")
        if point.load_kind != "static_batch":
            return PointResult(point, None, f"the local engine runs static batches, not {point.load_kind!r}")
        self.engine.warmup_runs = point.warmup
        started = time.perf_counter()
        try:
            rows = self.engine.measure(StaticBatchPoint(batch_size=point.batch_size, input_len_tok=point.input_len_tok,
                                                        output_len_tok=point.output_len_tok), repeats=1)
        except PerfmodelError as exc:
            return PointResult(point, None, f"invalid point: {exc}", n_failed=point.batch_size)
        except MemoryError:
            return PointResult(point, None, "out of memory (MemoryError)", n_failed=point.batch_size)
        except RuntimeError as exc:  # torch reports OOM and kernel failures as RuntimeError
            text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            reason = "out of memory" if "out of memory" in text.lower() else "engine error"
            return PointResult(point, None, f"{reason}: {text}", n_failed=point.batch_size)
        elapsed_s = time.perf_counter() - started
        if elapsed_s > point.timeout_s:
            return PointResult(point, None, f"timeout: the point took {elapsed_s:.1f} s, more than its "
                               f"{point.timeout_s:g} s budget", n_failed=point.batch_size)
        row = dict(rows[0])
        row["repeat_idx"] = point.repeat_idx
        return PointResult(point, row, None, n_ok=point.batch_size)

    def close(self) -> None:
        """Drop the model (frees its memory)."""
        self.engine.model_ = None
