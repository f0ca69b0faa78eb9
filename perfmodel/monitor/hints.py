"""Root-cause hints: for one anomaly, which phase grew, which telemetry moved with it, and what to do.

Rules compare the anomaly interval with the samples just before it (the
reference) in the same group, and with the other groups at the same time.
They read only column names and values, so they work on any stream whose
columns follow the naming conventions (``ttft``/``tpot``/``itl`` latencies,
``hw_`` telemetry, ``fw_`` server metrics). Thresholds are module constants.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..schema import column_words
from .streams import GENERATED_TOKEN_RATES

__all__ = [
    "improves",
    "PHASE_GROWTH_REL",
    "SATURATION_PCT",
    "KV_FULL_FRACTION",
    "QUEUE_GROWTH_REL",
    "TP_IMBALANCE_REL",
    "THROTTLE_CLOCK_DROP_REL",
    "HOST_CPU_RISE_PCT",
    "REFERENCE_SAMPLES",
    "Cause",
    "Hint",
    "explain",
]

PHASE_GROWTH_REL = 0.10
"""A phase (prefill/decode) counts as grown when its time rose by more than 10%."""
SATURATION_PCT = 90.0
"""Utilisation (%) from which memory bandwidth or compute counts as saturated."""
KV_FULL_FRACTION = 0.95
"""KV-cache usage (fraction) from which the batch no longer fits."""
QUEUE_GROWTH_REL = 0.5
"""Waiting requests grew by more than 50% (and by at least one request)."""
TP_IMBALANCE_REL = 0.30
"""Per-GPU values differing by more than 30% in one tensor-parallel group (the issue's rule)."""
THROTTLE_CLOCK_DROP_REL = 0.10
"""An SM clock 10% below its reference means power or thermal throttling."""
MOVED_REL = 0.20
"""Telemetry that changed by more than 20% moved with the anomaly."""
HOST_CPU_RISE_PCT = 10.0
"""Host CPU utilisation counts as newly saturated when at least 90% and 10 points above the reference."""
REFERENCE_SAMPLES = 100
"""Samples before the anomaly used as the reference."""

_TTFT = ("ttft", "time_to_first_token")
_TPOT = ("tpot", "time_per_output_token", "itl", "inter_token")
_KV = ("kv_cache_usage", "gpu_cache_usage", "cache_usage", "kv_usage")
_QUEUE = ("waiting", "queue", "pending")
_RUNNING = ("num_requests_running", "running")


@dataclass(frozen=True)
class Cause:
    """One finding: a code, a sentence and the numbers behind it."""

    code: str
    message: str
    evidence: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Hint:
    """The explanation of one anomaly.

    Attributes
    ----------
    causes
        Findings, strongest first.
    sentence
        One plain-language sentence with a suggestion (``""`` when nothing was found).
    """

    causes: tuple[Cause, ...]
    sentence: str

    @property
    def codes(self) -> list[str]:
        """The cause codes, e.g. ``["decode_grew", "kv_cache_full"]``."""
        return [c.code for c in self.causes]


def _cols(frame: pd.DataFrame, words: tuple[str, ...], prefix: tuple[str, ...] = ()) -> list[str]:
    return [c for c in frame.columns if any(w in c.lower() for w in words)
            and (not prefix or c.startswith(prefix)) and pd.api.types.is_numeric_dtype(frame[c])]


def _mean(frame: pd.DataFrame, col: str, sl: slice) -> float:
    v = frame[col].iloc[sl].to_numpy(dtype="float64")
    v = v[np.isfinite(v)]
    return float(v.mean()) if v.size else math.nan


def _rel(a: float, b: float) -> float:
    return (a - b) / abs(b) if math.isfinite(a) and math.isfinite(b) and b != 0 else math.nan


def _pct(x: float) -> str:
    return f"{x * 100:+.0f}%"


def _as_fraction(v: float) -> float:
    return v / 100.0 if v > 1.5 else v  # a percentage written 0-100


def explain(group_frame: pd.DataFrame, start: int, end: int, metric: str, *,
            others: dict[str, pd.DataFrame] | None = None, device_col: str = "device",
            expected: float | None = None, replay: bool = False) -> Hint:
    """Root-cause hints for an anomaly of ``metric`` over samples ``start..end`` of one group.

    Parameters
    ----------
    group_frame
        The group's samples in time order (``timestamp_s`` and metric columns).
    start, end
        First and last anomalous sample (positions in ``group_frame``, inclusive).
    metric
        The metric that raised the alert.
    others
        Other groups' frames (group -> frame): GPUs of the same tensor-parallel group for the
        imbalance rule, tenants for the noisy-neighbour rule (those sharing ``device_col`` when the
        frames have it; every other group otherwise).
    device_col
        Column naming the physical GPU of a group (for noisy neighbours).
    expected
        The detector's expectation at the anomaly: the sentence's change of ``metric`` is then against it, as the
        alert's value and expectation read (the causes still compare each phase with the samples before).
    replay
        The samples are a stored dataset's repeats of one configuration, not a live server's: with no cause
        found, the advice is to rerun the measurement (a replayed local-engine run had been told to look at
        "the client, the network or the workload mix", which it has none of).

    Returns
    -------
    Hint
    """
    n = len(group_frame)
    start, end = max(0, min(start, n - 1)), max(0, min(end, n - 1))
    ref = slice(max(0, start - REFERENCE_SAMPLES), start)
    ev = slice(start, end + 1)
    causes: list[Cause] = []
    has_ref = start > 0
    change = _rel(_mean(group_frame, metric, ev), _mean(group_frame, metric, ref)) if has_ref else math.nan

    # Phase: prefill (TTFT) vs decode (TPOT/ITL).
    grew: dict[str, float] = {}
    for phase, words in (("prefill", _TTFT), ("decode", _TPOT)):
        cols = _cols(group_frame, words)
        if cols and has_ref:
            grew[phase] = max((_rel(_mean(group_frame, c, ev), _mean(group_frame, c, ref)) for c in cols),
                              key=lambda v: -math.inf if math.isnan(v) else v)
    big = {k: v for k, v in grew.items() if math.isfinite(v) and v > PHASE_GROWTH_REL}
    if big:
        phase = max(big, key=lambda k: big[k])
        what = "time to first token" if phase == "prefill" else "decode time per token"
        other = {"prefill": "decode", "decode": "prefill"}[phase]
        o = grew.get(other, math.nan)
        tail = f" while {other} changed {_pct(o)}" if math.isfinite(o) else ""
        causes.append(Cause(f"{phase}_grew", f"{what} rose {_pct(big[phase])}{tail}",
                            {"growth_rel": big[phase]}))

    # KV cache near full.
    for c in _cols(group_frame, _KV):
        peak = group_frame[c].iloc[ev].max()
        if pd.notna(peak) and _as_fraction(float(peak)) >= KV_FULL_FRACTION:
            frac = _as_fraction(float(peak))
            ev_d = {"kv_usage": frac}
            run_cols = _cols(group_frame, _RUNNING, ("fw_",))
            msg = f"KV-cache usage reached {frac * 100:.0f}%"
            if run_cols:
                running = _mean(group_frame, run_cols[0], ev)
                if math.isfinite(running) and running > 0:
                    target = max(1, int(running * 0.85 / frac))
                    ev_d["suggested_concurrency"] = float(target)
                    msg += f": the batch no longer fits; lower max concurrency to about {target}"
            else:
                msg += ": the batch no longer fits; lower max concurrency"
            causes.append(Cause("kv_cache_full", msg, ev_d))
            break

    # Queue depth growing.
    for c in _cols(group_frame, _QUEUE, ("fw_",)):
        a, b = _mean(group_frame, c, ev), _mean(group_frame, c, ref) if has_ref else math.nan
        if math.isfinite(a) and math.isfinite(b) and a - b >= 1 and (b == 0 or (a - b) / b > QUEUE_GROWTH_REL):
            causes.append(Cause("queue_growing", f"requests waiting grew from {b:.1f} to {a:.1f}: offered load "
                                "exceeds capacity; add replicas or shed load", {"before": b, "during": a}))
            break

    # Telemetry that saturated or moved, read from the means where a recorder kept per-run aggregates: the
    # H200 sample's GPU utilisation peaked at 100% in a fast repeat and a slow one alike (hw_gpu_util_pct_max),
    # while its mean fell from 54% to 34%, and the hint said "GPU utilisation rose to 100%".
    tele = [c for c in group_frame.columns if c.startswith("hw_") and c not in (metric,)]
    tele = [c for c in tele if not (c.endswith(("_max", "_min")) and c.rsplit("_", 1)[0] + "_mean" in tele)]
    for c in tele:
        a = _mean(group_frame, c, ev)
        b = _mean(group_frame, c, ref) if has_ref else math.nan
        low = c.lower()
        if "clock" in low and "max" not in low and math.isfinite(a) and math.isfinite(b) and b > 0 \
                and (b - a) / b > THROTTLE_CLOCK_DROP_REL:
            causes.append(Cause("clock_throttling", f"SM clock fell {_pct((a - b) / b)} ({b:.0f} -> {a:.0f} MHz): "
                                "power or thermal throttling; check cooling and power limits",
                                {"before": b, "during": a}))
        elif "throttle" in low and math.isfinite(a) and a > 0 and not (math.isfinite(b) and b > 0):
            causes.append(Cause("clock_throttling", "the GPU reported active throttle reasons during the anomaly",
                                {"during": a}))
        elif ("mem_bw" in low or "memory_bandwidth" in low or "utilization_memory" in low) and "pct" in low \
                and math.isfinite(a) and a >= SATURATION_PCT:
            causes.append(Cause("memory_bandwidth_saturated", f"memory bandwidth utilisation at {a:.0f}%: "
                                "decode is memory-bound; a smaller batch or quantised KV cache helps",
                                {"during": a}))
        elif "util" in low and "gpu" in low and "mem" not in low and math.isfinite(a) and a >= SATURATION_PCT \
                and math.isfinite(b) and b < SATURATION_PCT:
            # a rise to saturation, against a reference: busy all along (or no reference) explains no change
            causes.append(Cause("compute_saturated", f"GPU utilisation rose to {a:.0f}% (from {b:.0f}%)",
                                {"before": b, "during": a}))
        elif "cpu" in low and ("util" in low or "pct" in low) and "gpu" not in low and math.isfinite(a) \
                and a >= SATURATION_PCT and math.isfinite(b) and a - b >= HOST_CPU_RISE_PCT:
            # CPU-side serving (tokenisation, scheduling, a CPU engine) slows when another process takes its cores.
            causes.append(Cause("host_cpu_saturated", f"host CPU utilisation rose to {a:.0f}% (from {b:.0f}%): "
                                "a competing process starves the server; pin the server to its own cores or "
                                "move the neighbour", {"before": b, "during": a}))
        elif "pcie" in low and math.isfinite(a) and math.isfinite(b) and b > 0 and _rel(a, b) > MOVED_REL:
            causes.append(Cause("pcie_traffic", f"PCIe traffic rose {_pct(_rel(a, b))}: host-device transfers "
                                "(swapping or offload) compete with inference", {"before": b, "during": a}))
        elif "power" in low and "limit" not in low and math.isfinite(a):
            lim_cols = [x for x in group_frame.columns if "power_limit" in x]
            lim = _mean(group_frame, lim_cols[0], ev) if lim_cols else math.nan
            if math.isfinite(lim) and a >= 0.97 * lim:
                causes.append(Cause("power_capped", f"power draw {a:.0f} W at the {lim:.0f} W limit: power "
                                    "capping slows the clocks", {"during": a, "limit": lim}))

    # Tensor-parallel imbalance and noisy neighbours, from the other groups.
    others = others or {}
    if others and metric in group_frame.columns:
        t0 = float(group_frame["timestamp_s"].iloc[start])
        t1 = float(group_frame["timestamp_s"].iloc[end])
        mine = _mean(group_frame, metric, ev)
        peers = {}
        for g, f in others.items():
            if metric not in f.columns:
                continue
            m = (f["timestamp_s"] >= t0) & (f["timestamp_s"] <= t1)
            if m.any():
                peers[g] = float(np.nanmean(f.loc[m, metric].to_numpy(dtype="float64")))
        fin = {g: v for g, v in peers.items() if math.isfinite(v)}
        if fin and math.isfinite(mine):
            med = float(np.median(list(fin.values())))
            dev = _rel(mine, med)
            if math.isfinite(dev) and abs(dev) > TP_IMBALANCE_REL:
                causes.append(Cause("tp_imbalance", f"this group's {column_words(metric)} differs {_pct(dev)} from its "
                                    f"{len(fin)} peer(s) over the same interval: a straggler GPU; check its "
                                    "clocks, temperature and PCIe link", {"deviation_rel": dev}))
        dev_of = group_frame[device_col].iloc[0] if device_col in group_frame.columns else None
        for g, f in others.items():
            if dev_of is not None and (device_col not in f.columns or f[device_col].iloc[0] != dev_of):
                continue
            if dev_of is None:
                continue
            load = [c for c in f.columns if any(w in c for w in ("throughput", "tok_s", "util", "running"))]
            for c in load:
                before = f[(f["timestamp_s"] < t0)][c].tail(REFERENCE_SAMPLES).mean()
                during = f[(f["timestamp_s"] >= t0) & (f["timestamp_s"] <= t1)][c].mean()
                r = _rel(float(during), float(before))
                if math.isfinite(r) and r > MOVED_REL:
                    causes.append(Cause("noisy_neighbour", f"{g} on the same GPU raised its {column_words(c)} {_pct(r)} at "
                                        "the same time: a noisy neighbour; isolate it (MIG, separate GPU)",
                                        {"neighbour_change_rel": r}))
                    break

    against = None
    if expected is not None and math.isfinite(expected) and expected != 0:
        change, against = _rel(_mean(group_frame, metric, ev), float(expected)), "its expected value"
    better = _better(metric)
    if better is not None and math.isfinite(change) and change != 0 and (change > 0) == (better == "higher"):
        # Faster, not slower: the slowdown causes explain nothing (a TTFT 32 % shorter had been blamed on the host
        # CPU rising to 100 %).
        name = column_words(metric)
        where = against or f"the mean of the {ref.stop - ref.start:,} sample(s) before it"
        return Hint((), f"{name} changed {_pct(change)} from {where}: better, not worse, so there is no fault to "
                        "look for (if it lasts, the expectation is out of date).")
    sentence = _sentence(metric, change, causes, ref.stop - ref.start, against, replay=replay)
    return Hint(tuple(causes), sentence)


def improves(metric: str, direction: str) -> bool:
    """Whether an alert in ``direction`` (``"high"`` or ``"low"``) is ``metric`` getting better: a throughput
    above its band, a latency below it. Such an alert is no fault (its hint says so).

    Parameters
    ----------
    metric
        The metric's column name.
    direction
        The alert's direction.

    Returns
    -------
    bool
    """
    better = _better(metric)
    return better is not None and (direction == "high") == (better == "higher")


def _better(metric: str) -> str | None:
    """Which way ``metric`` improves: ``"higher"`` for a throughput, ``"lower"`` for a latency, None otherwise
    (utilisation, power, queue: no direction is good in itself)."""
    low = metric.lower()
    if "throughput" in low or low.endswith(("_tok_s", "_rps")) or any(h in low for h in GENERATED_TOKEN_RATES):
        return "higher"  # vLLM's generated-token rate too (fw_vllm_generation_tokens_per_s)
    if any(w in low for w in ("latency", "ttft", "tpot", "itl")):
        return "lower"
    return None


def _sentence(metric: str, change: float, causes: list[Cause], n_ref: int, against: str | None = None, *,
              replay: bool = False) -> str:
    # The change is against the detector's expectation where it is given (as the alert's value and expected
    # read), else against the samples just before; the causes compare the phases with those samples, and say so.
    where = against or f"the mean of the {n_ref:,} sample(s) before it"
    name = column_words(metric)  # "TPOT", as the alerts table's header reads, not tpot_s
    head = f"{name} changed {_pct(change)} from {where}" if math.isfinite(change) else f"{name} left its band"
    if against and causes and n_ref:
        head += f" (against the {n_ref:,} sample(s) before it"
        return f"{head}: " + "; ".join(c.message for c in causes[:3]) + ")."
    if not causes:
        if replay:
            return (f"{head}; nothing recorded with the run moved with it (a repeat unlike its siblings with no "
                    "recorded cause: measure it again, with telemetry, before trusting either).")
        return f"{head}; no telemetry moved with it (look at the client, the network or the workload mix)."
    return f"{head}: " + "; ".join(c.message for c in causes[:3]) + "."


def hint_dict(h: Hint) -> dict[str, Any]:
    """A JSON-ready form of a hint.

    Parameters
    ----------
    h
        The hint.

    Returns
    -------
    dict
    """
    return {"sentence": h.sentence, "causes": [{"code": c.code, "message": c.message,
                                                "evidence": c.evidence} for c in h.causes]}
