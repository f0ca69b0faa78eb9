"""perfmodel.plots: throughput figures from runs tables (no Streamlit)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfmodel.plots import axis_title, lengths_label, throughput_figure


def _runs() -> pd.DataFrame:
    # Two GPUs; the A100 measured at two output lengths, so it holds two separate curves.
    return pd.DataFrame({
        "hardware": ["a100"] * 6 + ["h100"] * 3,
        "model": ["llama"] * 9,
        "framework": ["vllm"] * 9,
        "input_len_tok": [128.0] * 9,
        "output_len_tok": [128.0, 128.0, 128.0, 2048.0, 2048.0, 2048.0, 128.0, 128.0, 128.0],
        "load_kind": ["static_batch"] * 9,
        "batch_size": [4.0, 1.0, 2.0, 1.0, 2.0, 4.0, 1.0, 2.0, np.nan],
        "output_throughput_tok_s": [300.0, 100.0, 180.0, 90.0, 170.0, 290.0, 200.0, 350.0, 500.0],
        "source_file": ["a.csv"] * 9,
        "source_row": list(range(1, 10)),
    })


def test_one_trace_per_colour_with_gaps_between_configurations() -> None:
    fig = throughput_figure(_runs(), color="hardware")
    by_name = {t.name: t for t in fig.data}
    assert set(by_name) == {"a100", "h100"}
    # a100: the 128-token curve sorted by batch, a gap, then the 2048-token curve.
    assert list(by_name["a100"].x) == [1.0, 2.0, 4.0, None, 1.0, 2.0, 4.0]
    assert list(by_name["a100"].y) == [100.0, 180.0, 300.0, None, 90.0, 170.0, 290.0]
    assert by_name["a100"].connectgaps is False
    # The h100 point without a batch size is left out, and the title says so.
    assert list(by_name["h100"].x) == [1.0, 2.0]
    assert "1 run(s) without batch_size" in fig.layout.title.text


def test_colour_by_lengths_and_hover_names_the_configuration() -> None:
    fig = throughput_figure(_runs(), color="lengths", log_x=True)
    assert {t.name for t in fig.data} == {"128/128", "128/2048"}
    assert fig.layout.xaxis.type == "log"
    t = next(t for t in fig.data if t.name == "128/2048")
    assert "hardware: a100" in t.text[0] and "source_row: 4" in t.text[0]
    assert "batch size" in fig.layout.xaxis.title.text


def test_empty_and_unplottable_runs_give_an_annotated_empty_figure() -> None:
    fig = throughput_figure(_runs().iloc[0:0])
    assert len(fig.data) == 0 and fig.layout.annotations[0].text == "No runs to plot"
    rate_only = _runs().assign(batch_size=np.nan)
    fig = throughput_figure(rate_only)
    assert len(fig.data) == 0 and "9 run(s) without batch_size" in fig.layout.annotations[0].text


def test_bad_option_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="color must be one of"):
        throughput_figure(_runs(), color="nonsense")


def test_labels() -> None:
    assert lengths_label(_runs()).tolist()[2:4] == ["128/128", "128/2048"]
    assert axis_title("output_throughput_tok_s") == "output throughput (tok/s)"
    assert axis_title("request_rate_rps") == "request rate (req/s)"
