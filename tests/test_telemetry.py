"""TelemetrySampler: the no-GPU path on this machine, the NVML path against a fake pynvml."""

from __future__ import annotations

import time
import types

import pytest

from perfmodel.sweep import telemetry
from perfmodel.sweep.telemetry import NO_GPU_NOTE, TelemetrySampler


class _NVMLError(Exception):
    pass


class _LibraryNotFound(_NVMLError):
    pass


class _NotSupported(_NVMLError):
    pass


def _fake_pynvml(n_gpus: int = 2, *, fail_init: bool = False, energy: bool = True) -> types.SimpleNamespace:
    """A pynvml stand-in with fixed readings per GPU (GPU i: util 50+10i %, power 100+50i W, ...)."""
    state = {"energy_mj": [0.0] * n_gpus, "shutdown": 0}

    def init() -> None:
        if fail_init:
            raise _LibraryNotFound("NVML Shared Library Not Found")

    def util(h: int) -> types.SimpleNamespace:
        return types.SimpleNamespace(gpu=50 + 10 * h, memory=20 + h)

    def meminfo(h: int) -> types.SimpleNamespace:
        return types.SimpleNamespace(used=(10 + h) * 1e9, total=80e9)

    def clock(h: int, kind: int) -> int:
        return 1980 if kind == 0 else 2619

    def pcie(h: int, kind: int) -> int:
        raise _NotSupported("Not Supported")  # e.g. a GPU behind a switch without counters

    def total_energy(h: int) -> float:
        if not energy:
            raise _NotSupported("Not Supported")
        state["energy_mj"][h] += 1000.0 * (h + 1)  # 1 J per reading on GPU 0, 2 J on GPU 1
        return state["energy_mj"][h]

    def shutdown() -> None:
        state["shutdown"] += 1

    return types.SimpleNamespace(
        NVMLError=_NVMLError, NVML_CLOCK_SM=0, NVML_CLOCK_MEM=1, NVML_TEMPERATURE_GPU=0,
        NVML_PCIE_UTIL_RX_BYTES=1, NVML_PCIE_UTIL_TX_BYTES=0,
        nvmlInit=init, nvmlShutdown=shutdown, nvmlDeviceGetCount=lambda: n_gpus,
        nvmlDeviceGetHandleByIndex=lambda i: i, nvmlDeviceGetName=lambda h: f"NVIDIA H100 #{h}".encode(),
        nvmlDeviceGetUtilizationRates=util, nvmlDeviceGetMemoryInfo=meminfo,
        nvmlDeviceGetPowerUsage=lambda h: 100_000 + 50_000 * h, nvmlDeviceGetClockInfo=clock,
        nvmlDeviceGetPcieThroughput=pcie, nvmlDeviceGetTemperature=lambda h, k: 60 + 5 * h,
        nvmlDeviceGetTotalEnergyConsumption=total_energy, state=state,
    )


def test_no_gpu_host_telemetry_here() -> None:
    """This machine has no NVIDIA driver: host CPU/memory columns and the note, never a crash."""
    with TelemetrySampler(period_s=0.01) as tele:
        time.sleep(0.1)
    s = tele.summary()
    if tele.gpu_available:  # pragma: no cover - a GPU machine
        pytest.skip("a GPU is present: the no-GPU path cannot be observed here")
    assert tele.note.startswith(NO_GPU_NOTE)
    assert tele.describe()["source"] == "host"
    assert {"hw_cpu_util_pct_mean", "hw_cpu_util_pct_max", "hw_mem_used_gb_mean",
            "hw_mem_used_pct_mean", "hw_telemetry_samples"} <= set(s)
    assert not any(k.startswith("hw_gpu") for k in s)
    assert 0.0 <= s["hw_cpu_util_pct_mean"] <= s["hw_cpu_util_pct_max"] <= 100.0
    assert 0.0 < s["hw_mem_used_gb_mean"] < 10_000
    # 0.1 s at 10 ms: well over a handful of samples even on a loaded machine
    assert s["hw_telemetry_samples"] >= 4
    assert all(k.startswith("hw_") for k in s)


def test_library_not_found_is_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(telemetry, "_import_pynvml", lambda: _fake_pynvml(fail_init=True))
    with TelemetrySampler(period_s=0.01) as tele:
        time.sleep(0.03)
    assert not tele.gpu_available
    assert tele.note == f"{NO_GPU_NOTE} (NVML Shared Library Not Found)"
    assert "hw_cpu_util_pct_mean" in tele.summary()


def test_pynvml_missing_is_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(telemetry, "_import_pynvml", lambda: None)
    with TelemetrySampler(period_s=0.01) as tele:
        pass
    assert "pip install nvidia-ml-py" in tele.note


def test_nvml_two_gpus_aggregated_and_per_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _fake_pynvml(2)
    monkeypatch.setattr(telemetry, "_import_pynvml", lambda: fake)
    with TelemetrySampler(period_s=0.005) as tele:
        time.sleep(0.05)
    s = tele.summary()
    assert tele.gpu_available and tele.note == ""
    assert tele.gpu_names == ["NVIDIA H100 #0", "NVIDIA H100 #1"]
    # power adds up over GPUs (100 + 150 W), utilisation is averaged (50, 60 %),
    # memory adds up (10 + 11 GB), the hottest GPU counts (65 C)
    assert s["hw_gpu_power_w_mean"] == pytest.approx(250.0)
    assert s["hw_gpu_util_pct_mean"] == pytest.approx(55.0)
    assert s["hw_gpu_mem_util_pct_max"] == pytest.approx(20.5)
    assert s["hw_gpu_mem_used_gb_mean"] == pytest.approx(21.0)
    assert s["hw_gpu_temp_c_max"] == pytest.approx(65.0)
    assert s["hw_gpu_sm_clock_mhz_mean"] == pytest.approx(1980.0)
    assert s["hw_gpu_mem_clock_mhz_mean"] == pytest.approx(2619.0)
    assert s["hw_gpu1_power_w_mean"] == pytest.approx(150.0)
    assert s["hw_gpu0_util_pct_max"] == pytest.approx(50.0)
    # energy from the driver's counter: one reading at start and one at stop, 1 J + 2 J apart
    assert s["hw_gpu_energy_j"] == pytest.approx(3.0)
    # an unsupported field (PCIe here) is dropped, not a crash, and not a column
    assert not any("pcie" in k for k in s)
    assert not any(k.startswith("hw_cpu") for k in s)
    assert fake.state["shutdown"] == 1
    assert tele.describe()["source"] == "nvml"


def test_nvml_single_gpu_energy_integrated_without_counter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(telemetry, "_import_pynvml", lambda: _fake_pynvml(1, energy=False))
    with TelemetrySampler(period_s=0.005) as tele:
        time.sleep(0.05)
    s = tele.summary()
    assert not any(k.startswith("hw_gpu0_") for k in s)  # one GPU: aggregated columns only
    # 100 W over the point's duration
    assert s["hw_gpu_energy_j"] == pytest.approx(100.0 * tele.duration_s, rel=1e-6)


def test_summary_before_start_is_empty() -> None:
    assert TelemetrySampler().summary() == {}


def test_bad_period() -> None:
    with pytest.raises(ValueError, match="period_s"):
        TelemetrySampler(period_s=0)
