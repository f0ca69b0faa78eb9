"""The H200 sample runs are what sample_runs/README.md says: canonical, complete grids, on the catalog's H200, never
faster than the roofline, and with prefill (TTFT) bounded by compute the way the README reports."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from perfmodel import physics
from perfmodel.importers import read_file

SAMPLES = Path(__file__).resolve().parents[1] / "sample_runs"

# file -> (rows, model, batch sizes, input lengths, output lengths, repeats per point)
GPU_SAMPLES = {
    "perfmodel-large-llama_h200_local-sweep-warm.csv": (28, "perfmodel-large-llama", [1, 4, 16, 32, 64, 128, 256],
                                                        [128, 512], [128], 2),
    "perfmodel-medium-llama_h200_local-sweep-warm.csv": (14, "perfmodel-medium-llama",
                                                         [1, 4, 16, 64, 128, 256, 512], [512], [128], 2),
    "perfmodel-large-llama_h200_local-sweep-out512.csv": (12, "perfmodel-large-llama", [1, 16, 64, 256], [512],
                                                          [512], 3),
    "perfmodel-medium-llama_h200_local-sweep-lengths.csv": (24, "perfmodel-medium-llama", [1, 16, 64, 256],
                                                            [2048, 4096], [128], 3),
    "perfmodel-large-llama_h200_local-sweep-in2048.csv": (15, "perfmodel-large-llama", [1, 8, 32, 64, 128], [2048],
                                                          [128], 3),
}


@pytest.fixture(scope="module", params=sorted(GPU_SAMPLES))
def sample(request: pytest.FixtureRequest) -> tuple[str, pd.DataFrame]:
    res = read_file(SAMPLES / request.param)
    assert res.format == "canonical"
    return request.param, res.runs


def test_gpu_sample_grid_is_complete(sample: tuple[str, pd.DataFrame]) -> None:
    name, df = sample
    rows, model, batches, inputs, outputs, repeats = GPU_SAMPLES[name]
    assert len(df) == rows
    assert set(df["hardware"]) == {"h200"} and set(df["model"]) == {model}
    assert sorted(df["batch_size"].unique()) == batches
    assert sorted(df["input_len_tok"].unique()) == inputs
    assert sorted(df["output_len_tok"].unique()) == outputs
    assert df.groupby(["batch_size", "input_len_tok", "output_len_tok"]).size().eq(repeats).all()
    # NVML telemetry rode along on every row
    assert df["power_w"].between(100, 800).all() and df["energy_j"].gt(0).all()


def test_gpu_sample_is_never_faster_than_the_roofline(sample: tuple[str, pd.DataFrame]) -> None:
    _, df = sample
    assert not physics.flag_suspect(df).any()
    roof = physics.roofline(df)
    assert (df["output_throughput_tok_s"] < roof["output_tok_s_max"]).all()
    assert (df["ttft_s"] > roof["prefill_s_min"]).all()


def test_long_prompt_prefill_runs_near_sixty_percent_of_the_bf16_peak() -> None:
    """sample_runs/README.md: from batch 8 up, TTFT is 1.6-1.8x the roofline's compute-bound prefill at 2,048 and
    4,096 tokens, and it grows in proportion to batch x input."""
    df = pd.concat([read_file(SAMPLES / f).runs for f in ("perfmodel-medium-llama_h200_local-sweep-lengths.csv",
                                                          "perfmodel-large-llama_h200_local-sweep-in2048.csv")])
    df = df[df["batch_size"] >= 8].reset_index(drop=True)
    ratio = df["ttft_s"] / physics.roofline(df)["prefill_s_min"]
    med = ratio.groupby([df["model"], df["input_len_tok"], df["batch_size"]]).median()
    assert med.between(1.55, 1.85).all(), med.to_dict()
    # the longer prompt halves the 1.5 B model's plateau: prefill is most of each call at these lengths
    med_tput = df.groupby(["model", "input_len_tok", "batch_size"])["output_throughput_tok_s"].median()
    medium = med_tput.loc["perfmodel-medium-llama"]
    assert medium.loc[(4096, 256)] < 0.6 * medium.loc[(2048, 256)]
