"""Hardware telemetry sampled in the background while a sweep point runs.

:class:`TelemetrySampler` is a context manager that starts a daemon thread
sampling every ``period_s`` seconds and, when the point is over, aggregates the
samples into ``hw_`` columns of the runs table (:meth:`TelemetrySampler.summary`).

With an NVIDIA driver it reads NVML (``pynvml``, from ``nvidia-ml-py``): GPU
and memory utilisation, memory used, power, SM and memory clocks, PCIe
receive/transmit throughput and temperature, per GPU; power is summed over the
GPUs of the deployment, utilisation and clocks averaged, memory summed,
temperature maximised. Without a GPU (no driver, no ``pynvml``, or no device)
it samples the host's CPU utilisation and memory with ``psutil`` and says so
in :attr:`TelemetrySampler.note`; telemetry never crashes a sweep, it is
recorded as absent with a note.

Column names carry units: ``hw_gpu_util_pct_mean``, ``hw_gpu_power_w_max``,
``hw_gpu_mem_used_gb_mean``, ``hw_pcie_rx_mb_s_mean``, ``hw_cpu_util_pct_mean``, ...
Each sampled quantity gets a ``_mean`` and a ``_max`` column; with more than
one GPU each GPU also gets its own ``hw_gpu<i>_...`` columns.
"""

from __future__ import annotations

import importlib
import logging
import math
import threading
import time
from collections.abc import Callable
from types import ModuleType, TracebackType
from typing import Any

__all__ = [
    "DEFAULT_PERIOD_S",
    "NO_GPU_NOTE",
    "TelemetrySampler",
]

log = logging.getLogger(__name__)

DEFAULT_PERIOD_S = 0.05
"""Default sampling period (50 ms: short points still get a few samples)."""
NO_GPU_NOTE = "no GPU: host telemetry only"
""":attr:`TelemetrySampler.note` when NVML is not usable."""

# nvmlDeviceGetPcieThroughput blocks for ~20 ms per call (the driver measures over
# that window), so PCIe is read only every Nth sample to keep the period honest.
_PCIE_EVERY = 10
_MIB = 1024.0 * 1024.0
_GB = 1e9


def _import_pynvml() -> ModuleType | None:
    try:
        return importlib.import_module("pynvml")
    except ImportError:
        return None


class _Series:
    """Running mean and max of one sampled quantity (no list kept: long points stay cheap)."""

    __slots__ = ("n", "total", "peak")

    def __init__(self) -> None:
        self.n = 0
        self.total = 0.0
        self.peak = -math.inf

    def add(self, value: float) -> None:
        if value is None or not math.isfinite(value):
            return
        self.n += 1
        self.total += value
        self.peak = max(self.peak, value)

    def columns(self, stem: str) -> dict[str, float]:
        if self.n == 0:
            return {}
        return {f"{stem}_mean": self.total / self.n, f"{stem}_max": self.peak}


class TelemetrySampler:
    """Sample GPU (NVML) or host (psutil) telemetry in a background thread.

    ``__init__`` does no work; :meth:`start` (or entering the ``with`` block)
    probes NVML, takes a first sample and starts the thread; :meth:`stop` (or
    leaving the block) takes a last sample and joins it.

    Parameters
    ----------
    period_s
        Seconds between samples (10-100 ms is typical; at least 1 ms).
    gpu_indices
        NVML indices of the GPUs to sample (``None``: every visible GPU).
    use_gpu
        ``False`` skips NVML even where a driver exists (host telemetry only).

    Attributes
    ----------
    gpu_available
        True once NVML initialised and found at least one device.
    note
        Why telemetry is partial or absent (``""`` when GPU telemetry ran).
    n_samples
        Samples taken so far.
    gpu_names
        Names NVML reported for the sampled GPUs.

    Examples
    --------
    >>> with TelemetrySampler(period_s=0.05) as tele:   # doctest: +SKIP
    ...     run_the_point()
    >>> row.update(tele.summary())                       # doctest: +SKIP
    """

    def __init__(self, period_s: float = DEFAULT_PERIOD_S, *, gpu_indices: list[int] | None = None,
                 use_gpu: bool = True) -> None:
        if not isinstance(period_s, int | float) or not period_s >= 0.001:
            # A programming error of the caller, not user data: still a clear message.
            raise ValueError(f"period_s must be a number >= 0.001, got {period_s!r}")
        self.period_s = float(period_s)
        self.gpu_indices = gpu_indices
        self.use_gpu = use_gpu
        self.gpu_available = False
        self.note = ""
        self.n_samples = 0
        self.gpu_names: list[str] = []
        self._nvml: ModuleType | None = None
        self._handles: list[Any] = []
        self._psutil: ModuleType | None = None
        self._series: dict[str, _Series] = {}
        self._unsupported: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t_start = math.nan
        self._t_stop = math.nan
        self._energy_start_mj: list[float | None] = []
        self._energy_stop_mj: list[float | None] = []

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> TelemetrySampler:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def start(self) -> TelemetrySampler:
        """Probe the telemetry source, take a first sample and start sampling.

        Returns
        -------
        TelemetrySampler
            ``self``.
        """
        if self._thread is not None:
            return self
        self._open_source()
        self._t_start = time.perf_counter()
        self._energy_start_mj = self._energies_mj()
        self._sample()
        self._thread = threading.Thread(target=self._loop, name="perfmodel-telemetry", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Take a last sample and stop the thread (idempotent)."""
        if self._thread is None or self._stop.is_set():
            return
        self._stop.set()
        self._thread.join(timeout=max(5.0, 10 * self.period_s))
        self._t_stop = time.perf_counter()
        self._sample()
        self._energy_stop_mj = self._energies_mj()
        if self._nvml is not None:
            try:
                self._nvml.nvmlShutdown()
            except Exception:  # shutting down a driver that went away: nothing to save
                pass

    def _loop(self) -> None:
        while not self._stop.wait(self.period_s):
            self._sample()

    # ------------------------------------------------------------------ sources
    def _open_source(self) -> None:
        if self.use_gpu:
            self._open_nvml()
        else:
            self.note = "GPU telemetry disabled: host telemetry only"
        if not self.gpu_available:
            try:
                self._psutil = importlib.import_module("psutil")
                self._psutil.cpu_percent(interval=None)  # opens the system-wide CPU window
            except ImportError:
                self._psutil = None
                self.note = (self.note + "; " if self.note else "") + "psutil not installed: no host telemetry"

    def _open_nvml(self) -> None:
        nvml = _import_pynvml()
        if nvml is None:
            self.note = NO_GPU_NOTE + " (pynvml not installed: pip install nvidia-ml-py)"
            return
        try:
            nvml.nvmlInit()
        except nvml.NVMLError as exc:  # NVMLError_LibraryNotFound without a driver
            self.note = f"{NO_GPU_NOTE} ({exc})"
            return
        try:
            count = int(nvml.nvmlDeviceGetCount())
            indices = list(range(count)) if self.gpu_indices is None else list(self.gpu_indices)
            handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in indices if 0 <= i < count]
            names = []
            for h in handles:
                name = nvml.nvmlDeviceGetName(h)
                names.append(name.decode() if isinstance(name, bytes) else str(name))
        except nvml.NVMLError as exc:
            self.note = f"{NO_GPU_NOTE} (NVML: {exc})"
            self._safe_shutdown(nvml)
            return
        if not handles:
            self.note = f"{NO_GPU_NOTE} (NVML found no device among {count})"
            self._safe_shutdown(nvml)
            return
        self._nvml, self._handles, self.gpu_names = nvml, handles, names
        self.gpu_available = True
        self.note = ""

    @staticmethod
    def _safe_shutdown(nvml: ModuleType) -> None:
        try:
            nvml.nvmlShutdown()
        except Exception:
            pass

    # ------------------------------------------------------------------ sampling
    def _add(self, stem: str, value: float) -> None:
        series = self._series.get(stem)
        if series is None:
            series = self._series[stem] = _Series()
        series.add(value)

    def _read(self, field: str, fn: Callable[..., Any], *args: Any, attr: str | None = None) -> float | None:
        """``fn(*args)`` (its ``attr``); a field the device does not support is dropped after its first failure."""
        if field in self._unsupported:
            return None
        try:
            value = fn(*args)
            return float(getattr(value, attr) if attr else value)
        except Exception as exc:  # NVMLError_NotSupported, a GPU fallen off the bus, ...
            self._unsupported.add(field)
            log.debug("telemetry: %s unavailable (%s)", field, exc)
            return None

    def _sample(self) -> None:
        with self._lock:
            try:
                if self.gpu_available:
                    self._sample_gpus()
                elif self._psutil is not None:
                    self._sample_host()
                self.n_samples += 1
            except Exception as exc:  # telemetry must never take a sweep down
                log.warning("telemetry sample failed: %s", exc)

    def _sample_gpus(self) -> None:
        nvml = self._nvml
        assert nvml is not None
        with_pcie = self.n_samples % _PCIE_EVERY == 0
        totals: dict[str, list[float]] = {}
        multi = len(self._handles) > 1
        for i, h in enumerate(self._handles):
            values: dict[str, float | None] = {}
            util = self._read(f"util{i}", nvml.nvmlDeviceGetUtilizationRates, h, attr="gpu")
            values["util_pct"] = util
            values["mem_util_pct"] = self._read(
                f"memutil{i}", nvml.nvmlDeviceGetUtilizationRates, h, attr="memory")
            used = self._read(f"mem{i}", nvml.nvmlDeviceGetMemoryInfo, h, attr="used")
            values["mem_used_gb"] = None if used is None else used / _GB
            power_mw = self._read(f"power{i}", nvml.nvmlDeviceGetPowerUsage, h)
            values["power_w"] = None if power_mw is None else power_mw / 1000.0
            values["sm_clock_mhz"] = self._read(
                f"smclk{i}", nvml.nvmlDeviceGetClockInfo, h, nvml.NVML_CLOCK_SM)
            values["mem_clock_mhz"] = self._read(
                f"memclk{i}", nvml.nvmlDeviceGetClockInfo, h, nvml.NVML_CLOCK_MEM)
            values["temp_c"] = self._read(
                f"temp{i}", nvml.nvmlDeviceGetTemperature, h, nvml.NVML_TEMPERATURE_GPU)
            if with_pcie:
                # NVML reports KB/s; columns are MB/s.
                rx = self._read(f"pcierx{i}", nvml.nvmlDeviceGetPcieThroughput, h,
                               nvml.NVML_PCIE_UTIL_RX_BYTES)
                tx = self._read(f"pcietx{i}", nvml.nvmlDeviceGetPcieThroughput, h,
                               nvml.NVML_PCIE_UTIL_TX_BYTES)
                values["pcie_rx_mb_s"] = None if rx is None else rx / 1000.0
                values["pcie_tx_mb_s"] = None if tx is None else tx / 1000.0
            for key, v in values.items():
                if v is None:
                    continue
                totals.setdefault(key, []).append(v)
                if multi:
                    self._add(f"hw_gpu{i}_{key}", v)
        # The deployment as a whole: power and memory add up, the hottest GPU
        # matters, utilisation and clocks are averaged over GPUs.
        for key, vs in totals.items():
            if key in ("power_w", "mem_used_gb"):
                agg = sum(vs)
            elif key == "temp_c":
                agg = max(vs)
            else:
                agg = sum(vs) / len(vs)
            stem = "hw_pcie_" + key[len("pcie_"):] if key.startswith("pcie_") else f"hw_gpu_{key}"
            self._add(stem, agg)

    def _sample_host(self) -> None:
        ps = self._psutil
        assert ps is not None
        self._add("hw_cpu_util_pct", float(ps.cpu_percent(interval=None)))
        mem = ps.virtual_memory()
        self._add("hw_mem_used_gb", float(mem.total - mem.available) / _GB)
        self._add("hw_mem_used_pct", float(mem.percent))

    def _energies_mj(self) -> list[float | None]:
        if not self.gpu_available or self._nvml is None:
            return []
        nvml = self._nvml
        return [self._read(f"energy{i}", nvml.nvmlDeviceGetTotalEnergyConsumption, h)
                for i, h in enumerate(self._handles)]

    # ------------------------------------------------------------------ results
    @property
    def duration_s(self) -> float:
        """Seconds between :meth:`start` and :meth:`stop` (up to now while running)."""
        if math.isnan(self._t_start):
            return math.nan
        end = self._t_stop if not math.isnan(self._t_stop) else time.perf_counter()
        return end - self._t_start

    def summary(self) -> dict[str, float]:
        """Aggregate the samples into ``hw_`` columns.

        Returns
        -------
        dict of str to float
            ``hw_<quantity>_mean`` / ``_max`` for every quantity sampled, plus
            ``hw_gpu_energy_j`` (from the driver's energy counter when the GPU
            has one, else power integrated over the point) and
            ``hw_telemetry_samples``. Empty when nothing could be sampled.
        """
        with self._lock:
            out: dict[str, float] = {}
            for stem, series in sorted(self._series.items()):
                out.update(series.columns(stem))
            if not out:
                return {}
            out["hw_telemetry_samples"] = float(self.n_samples)
            energy = self._energy_j()
            if energy is not None:
                out["hw_gpu_energy_j"] = energy
            return out

    def _energy_j(self) -> float | None:
        if not self.gpu_available:
            return None
        starts, stops = self._energy_start_mj, self._energy_stop_mj
        pairs = [(a, b) for a, b in zip(starts, stops, strict=False) if a is not None and b is not None]
        if starts and len(pairs) == len(starts) == len(stops):
            return sum(b - a for a, b in pairs) / 1000.0
        power = self._series.get("hw_gpu_power_w")
        if power is None or power.n == 0 or not math.isfinite(self.duration_s):
            return None
        return power.total / power.n * self.duration_s

    def describe(self) -> dict[str, Any]:
        """What was sampled, for a sweep's provenance.

        Returns
        -------
        dict
            ``source`` (``"nvml"``, ``"host"`` or ``"none"``), ``gpus``, ``period_s``, ``note``.
        """
        source = "nvml" if self.gpu_available else ("host" if self._psutil is not None else "none")
        return {"source": source, "gpus": list(self.gpu_names), "period_s": self.period_s, "note": self.note}
