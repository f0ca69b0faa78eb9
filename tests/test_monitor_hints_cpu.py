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
