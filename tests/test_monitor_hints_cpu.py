"""The host-CPU rule of the root-cause hints (used by the end-to-end CPU-hog test)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfmodel.monitor.hints import explain


def _frame(cpu_before: float, cpu_during: float) -> pd.DataFrame:
    n = 40
    tp = np.r_[np.full(30, 300.0), np.full(10, 170.0)]
    cpu = np.r_[np.full(30, cpu_before), np.full(10, cpu_during)]
    return pd.DataFrame({"timestamp_s": np.arange(n, dtype=float), "output_throughput_tok_s": tp,
                         "hw_cpu_util_pct": cpu})


def test_newly_saturated_host_cpu_is_a_cause() -> None:
    h = explain(_frame(70.0, 99.0), 30, 39, "output_throughput_tok_s")
    assert h.codes == ["host_cpu_saturated"]
    assert h.causes[0].evidence == {"before": 70.0, "during": 99.0}
    assert "rose to 99% (from 70%)" in h.sentence and "changed -43%" in h.sentence


def test_cpu_already_saturated_or_below_90_is_not_a_cause() -> None:
    assert explain(_frame(95.0, 99.0), 30, 39, "output_throughput_tok_s").codes == []  # no rise of 10 points
    assert explain(_frame(50.0, 85.0), 30, 39, "output_throughput_tok_s").codes == []  # not saturated


def _gpu_frame(mean_before: float, mean_during: float, max_all: float = 100.0) -> pd.DataFrame:
    n = 40
    tp = np.r_[np.full(30, 2700.0), np.full(10, 1700.0)]
    return pd.DataFrame({"timestamp_s": np.arange(n, dtype=float), "output_throughput_tok_s": tp,
                         "hw_gpu_util_pct_mean": np.r_[np.full(30, mean_before), np.full(10, mean_during)],
                         "hw_gpu_util_pct_max": np.full(n, max_all)})


def test_gpu_saturation_is_read_from_the_mean_and_needs_a_rise() -> None:
    # The H200 sample: utilisation peaked at 100% in every run while its mean fell from 54% to 34%; the hint
    # read the peak and said "GPU utilisation rose to 100%".
    assert "compute_saturated" not in explain(_gpu_frame(54.0, 34.0), 30, 39, "output_throughput_tok_s").codes
    rose = explain(_gpu_frame(60.0, 99.0), 30, 39, "output_throughput_tok_s")
    assert rose.codes == ["compute_saturated"] and "rose to 99% (from 60%)" in rose.sentence
    # no reference before the anomaly: nothing to say it rose from
    assert "compute_saturated" not in explain(_gpu_frame(99.0, 99.0), 0, 39, "output_throughput_tok_s").codes
    # a recorder with the peak only still has it read
    only_max = _gpu_frame(60.0, 99.0).drop(columns="hw_gpu_util_pct_mean").assign(
        hw_gpu_util_pct_max=np.r_[np.full(30, 60.0), np.full(10, 99.0)])
    assert explain(only_max, 30, 39, "output_throughput_tok_s").codes == ["compute_saturated"]


def test_with_no_cause_a_replayed_repeat_is_told_to_measure_again() -> None:
    # A replayed local-engine run had been told to look at "the client, the network or the workload mix".
    live = explain(_frame(50.0, 50.0), 30, 39, "output_throughput_tok_s")
    assert live.codes == [] and "look at the client, the network or the workload mix" in live.sentence
    assert live.sentence.startswith("output throughput changed -43%")  # in words, as the table reads
    replay = explain(_frame(50.0, 50.0), 30, 39, "output_throughput_tok_s", replay=True)
    assert "the network" not in replay.sentence and "measure it again, with telemetry" in replay.sentence


def test_an_improvement_is_not_blamed_on_a_slowdown_cause() -> None:
    # A TTFT 32 % shorter had been blamed on the host CPU rising to 100 %.
    faster = _frame(70.0, 99.0).assign(output_throughput_tok_s=lambda f: f["output_throughput_tok_s"][::-1].to_numpy())
    h = explain(faster, 30, 39, "output_throughput_tok_s")
    assert h.codes == [] and "better, not worse" in h.sentence and "CPU" not in h.sentence
    f = _frame(70.0, 99.0).assign(ttft_s=np.r_[np.full(30, 0.3), np.full(10, 0.2)])
    shorter = explain(f, 30, 39, "ttft_s")
    assert shorter.codes == [] and shorter.sentence.startswith("TTFT changed -33%") and "better, not worse" in shorter.sentence
    longer = explain(f.assign(ttft_s=np.r_[np.full(30, 0.2), np.full(10, 0.3)]), 30, 39, "ttft_s")
    assert "host_cpu_saturated" in longer.codes  # worse: the causes stay
