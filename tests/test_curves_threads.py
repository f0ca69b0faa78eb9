"""A thread-count axis: runs measured at several torch thread counts are separate curves by default.

Guards the bug where a local-engine sweep at 1 and 2 threads (same model, lengths, hardware) was
fitted as one configuration, mixing two saturation curves into one noisy one.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfmodel.curves import DEFAULT_BY, fit_curves, saturating_exp
from perfmodel.plots import config_labels, curve_group_columns, default_curve_by

REPO = Path(__file__).resolve().parents[1]

BATCHES = np.array([1, 2, 4, 8, 16, 32, 64], dtype=float)
# Plateau and rate per thread count (known answers).
CURVES = {1: (600.0, 0.08), 2: (900.0, 0.05)}


def _runs(threads: tuple[float, ...]) -> pd.DataFrame:
    rows = []
    for t in threads:
        a, k = CURVES[int(t)] if not np.isnan(t) else (400.0, 0.2)
        for b in BATCHES:
            rows.append({"hardware": "cpu-x86-2vcpu", "device_count": 1, "framework": "transformers",
                         "model": "perfmodel-tiny-llama", "input_len_tok": 128.0, "output_len_tok": 32.0,
                         "batch_size": b, "fw_num_threads": t,
                         "output_throughput_tok_s": float(saturating_exp(b, a, k, a))})
    return pd.DataFrame(rows)


def test_two_thread_counts_are_two_configurations_with_their_own_plateau() -> None:
    runs = _runs((1.0, 2.0))
    table = fit_curves(runs, shape="exp", intervals="none")
    assert len(table) == 2
    assert table["fw_num_threads"].tolist() == [1.0, 2.0]
    assert table["plateau_tok_s"].tolist() == pytest.approx([600.0, 900.0], rel=1e-3)
    by = default_curve_by(runs)
    assert by == [*DEFAULT_BY, "fw_num_threads"]
    assert config_labels(table, by) == ["1 thread", "2 threads"]


def test_a_thread_count_is_named_only_on_hardware_where_it_varies() -> None:
    # The sample's H200 curves read "1 thread" because its CPU runs ran at 1 and 2 torch threads.
    gpu = _runs((1.0,)).assign(hardware="h200", model="perfmodel-large-llama")
    runs = pd.concat([_runs((1.0, 2.0)), gpu], ignore_index=True)
    table = fit_curves(runs, shape="exp", intervals="none")
    by = default_curve_by(runs)
    assert "fw_num_threads" in by and len(table) == 3
    labels = dict(zip(table["hardware"] + "/" + table["fw_num_threads"].astype(str), config_labels(table, by),
                      strict=True))
    assert labels["cpu-x86-2vcpu/1.0"].endswith("1 thread") and labels["cpu-x86-2vcpu/2.0"].endswith("2 threads")
    assert "thread" not in labels["h200/1.0"] and len(set(labels.values())) == 3


def test_one_thread_count_leaves_the_grouping_and_labels_unchanged() -> None:
    runs = _runs((1.0,))
    table = fit_curves(runs, shape="exp", intervals="none")
    assert len(table) == 1 and "fw_num_threads" not in table.columns
    assert default_curve_by(runs) == list(DEFAULT_BY)
    # Still offered as a grouping choice, since it has values.
    assert "fw_num_threads" in curve_group_columns(runs)


def test_missing_thread_count_with_one_value_is_not_varying() -> None:
    # An HTTP sweep (no thread count) next to a local one at 1 thread: nothing to separate by threads.
    runs = pd.concat([_runs((1.0,)), _runs((np.nan,)).assign(framework="vllm")], ignore_index=True)
    assert "fw_num_threads" not in default_curve_by(runs)
    assert len(fit_curves(runs, shape="exp", intervals="none")) == 2  # split by framework, as before


def test_curves_page_shows_the_thread_sample_as_two_curves() -> None:
    # The bundled sample (every sample_runs/*.csv in one dataset) holds the tiny-llama sweep at 1 and 2 threads.
    from streamlit.testing.v1 import AppTest

    from perfmodel.ui import state as K

    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=90)
    at.run()
    at = at.switch_page("pages/curves.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert "fw_num_threads" in at.multiselect(key=K.CURVES_BY).value
    labels = at.multiselect(key=K.CURVES_CONFIGS).options
    threads = [lb for lb in labels if "perfmodel-tiny-llama · 128/32" in lb]
    assert [lb.rsplit(" · ", 1)[1] for lb in threads] == ["1 thread", "2 threads"]
