"""The local-engine backend: sweep points measured by :class:`~perfmodel.sweep.local_engine.LocalEngine`.

A thin adapter: the engine size (:data:`perfmodel.sweep.plan.ENGINE_SIZES`)
picks the model config, each :class:`~perfmodel.sweep.backend.SweepPoint`
becomes one measured ``generate`` call (after ``point.warmup`` short warm-up
calls), and an engine failure (out of memory, a transformers error) becomes a
recorded failure instead of a crash. torch is imported when the engine loads
(:meth:`LocalEngineBackend.check`), never at import.

Telemetry: like the HTTP backend, a
:class:`~perfmodel.sweep.telemetry.TelemetrySampler` runs during the measured
``generate`` call (not the warm-ups) and its ``hw_`` columns are added to the
point's row; on a GPU device its mean power and energy also fill ``power_w`` and
``energy_j``. Without a GPU the sampler falls back to host CPU and memory and
the note says so (:meth:`LocalEngineBackend.describe`); it never fails a point.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any, ClassVar

from ..errors import PerfmodelError
from .backend import Backend, PointResult, SweepPoint
from .local_engine import SAMPLE_HARDWARE, LocalEngine, StaticBatchPoint
from .plan import ENGINE_SIZES
from .telemetry import DEFAULT_PERIOD_S, TelemetrySampler

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
    telemetry
        Sample GPU (NVML) or host telemetry during each measured call.
    telemetry_period_s
        Sampling period, seconds (at least 1 ms).

    Raises
    ------
    PerfmodelError
        Unknown engine size or a bad telemetry period.
    """

    name: ClassVar[str] = "local"

    def __init__(self, *, engine_size: str = "tiny", num_threads: int = 1, dtype: str = "float32",
                 device: str = "cpu", seed: int = 0, hardware: str = SAMPLE_HARDWARE,
                 model: str | None = None, telemetry: bool = True,
                 telemetry_period_s: float = DEFAULT_PERIOD_S) -> None:
        if engine_size not in ENGINE_SIZES:
            raise PerfmodelError(f"unknown engine size {engine_size!r}; valid sizes: {', '.join(ENGINE_SIZES)}")
        if not isinstance(telemetry_period_s, int | float) or not telemetry_period_s >= 0.001:
            raise PerfmodelError(f"backend option telemetry_period_s must be a number of seconds >= 0.001, "
                                 f"got {telemetry_period_s!r}")
        self.telemetry = bool(telemetry)
        self.telemetry_period_s = float(telemetry_period_s)
        self._telemetry_note = ""
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
                               "dtype": self.engine.dtype, "device": self.engine.device, "seed": self.engine.seed,
                               "telemetry": (self._telemetry_note or "on") if self.telemetry else "off"}
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
        # GPU telemetry only where the engine runs on a GPU: a CPU point on a machine
        # that happens to have one is described by the host, not by an idle GPU.
        sampler = (TelemetrySampler(self.telemetry_period_s, use_gpu=not self.engine.device.startswith("cpu"))
                   if self.telemetry else None)
        started = time.perf_counter()
        try:
            rows = self.engine.measure(StaticBatchPoint(batch_size=point.batch_size, input_len_tok=point.input_len_tok,
                                                        output_len_tok=point.output_len_tok), repeats=1,
                                       on_warm=None if sampler is None else sampler.start)
        except PerfmodelError as exc:
            return PointResult(point, None, f"invalid point: {exc}", n_failed=point.batch_size)
        except MemoryError:
            return PointResult(point, None, "out of memory (MemoryError)", n_failed=point.batch_size)
        except RuntimeError as exc:  # torch reports OOM and kernel failures as RuntimeError
            text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            reason = "out of memory" if "out of memory" in text.lower() else "engine error"
            return PointResult(point, None, f"{reason}: {text}", n_failed=point.batch_size)
        finally:
            if sampler is not None:
                sampler.stop()
                self._telemetry_note = sampler.note
        elapsed_s = time.perf_counter() - started
        if elapsed_s > point.timeout_s:
            return PointResult(point, None, f"timeout: the point took {elapsed_s:.1f} s, more than its "
                               f"{point.timeout_s:g} s budget", n_failed=point.batch_size)
        row = dict(rows[0])
        row["repeat_idx"] = point.repeat_idx
        if sampler is not None:
            tele = sampler.summary()
            row.update(tele)
            if sampler.gpu_available:
                row["power_w"] = tele.get("hw_gpu_power_w_mean", math.nan)
                row["energy_j"] = tele.get("hw_gpu_energy_j", math.nan)
        return PointResult(point, row, None, n_ok=point.batch_size)

    def close(self) -> None:
        """Drop the model (frees its memory)."""
        self.engine.model_ = None
