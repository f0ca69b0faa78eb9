"""Synthetic runs with known saturation curves, shared by the predictor tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

HARDWARE = ("h100-sxm", "a100-40gb")
MODELS = ("llama-3-8b", "mistral-7b-v0.1")
LENGTHS = (128.0, 512.0)
BATCHES = (1.0, 16.0, 32.0, 64.0)


def curve_params(hw: str, model: str, length: float) -> tuple[float, float, float]:
    """Known (a, b, c) of one configuration: plateau scales with hardware, falls with length."""
    c = (6000.0 if hw == "h100-sxm" else 3000.0) * (1.2 if model == "llama-3-8b" else 1.0) * (128 / length) ** 0.3
    return 0.95 * c, 0.05, c


def synthetic_runs(noise: float = 0.0, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for hw in HARDWARE:
        for model in MODELS:
            for length in LENGTHS:
                a, b, c = curve_params(hw, model, length)
                for bb in BATCHES:
                    y = (c - a * np.exp(-b * bb)) * (1 + noise * rng.standard_normal())
                    rows.append({"hardware": hw, "model": model, "framework": "vllm", "device_count": 1,
                                 "input_len_tok": length, "output_len_tok": length, "batch_size": bb,
                                 "load_kind": "static_batch", "output_throughput_tok_s": y,
                                 "throughput_basis": "output", "repeat_idx": 0, "source_format": "test"})
    from perfmodel.schema import validate_runs

    return validate_runs(pd.DataFrame(rows))


def cli_predict_csv(model_dir: Path, queries: str, tmp_path: Path) -> pd.DataFrame:
    """``perfmodel predict MODEL_DIR QUERIES.csv -o PRED.csv`` on the query text; PRED.csv read back."""
    from click.testing import CliRunner

    from perfmodel.cli import main

    q, out = tmp_path / "q.csv", tmp_path / "pred.csv"
    q.write_text(queries)
    res = CliRunner().invoke(main, ["predict", str(model_dir), str(q), "-o", str(out)])
    assert res.exit_code == 0, res.output
    return pd.read_csv(out)
