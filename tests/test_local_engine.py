"""The local engine: real random-weight Llama static batches as canonical runs."""

from __future__ import annotations

import math
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from perfmodel.errors import PerfmodelError, ValidationError
from perfmodel.schema import COLUMN_NAMES, validate_runs
from perfmodel.sweep import (
    ENGINE_SOURCE_FORMAT,
    TINY_LLAMA_CONFIG,
    EngineUnavailableError,
    LocalEngine,
    StaticBatchPoint,
    count_parameters,
    local_backend,
    run_static_batches,
)
from perfmodel.sweep.backend import SweepPoint
from perfmodel.sweep.local_backend import LocalEngineBackend
from perfmodel.sweep.telemetry import TelemetrySampler

REPO = Path(__file__).resolve().parents[1]

# A model small enough that three batch sizes run in about a second on one thread.
SMALL_CONFIG: dict[str, Any] = {
    "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
    "head_dim": 16, "intermediate_size": 128, "vocab_size": 256, "tie_word_embeddings": False,
    "max_position_embeddings": 128,
}
BATCHES = (1, 4, 16)
IN_TOK, OUT_TOK, REPEATS = 12, 6, 2


def _need_engine() -> None:
    for name in ("torch", "transformers"):
        pytest.importorskip(name, reason=f"the local engine needs {name} (pip install perfmodel[engine])")


@pytest.fixture(scope="module")
def small_runs() -> tuple[pd.DataFrame, list[tuple[int, int]]]:
    _need_engine()
    calls: list[tuple[int, int]] = []
    df = run_static_batches(
        [{"batch_size": b, "input_len_tok": IN_TOK, "output_len_tok": OUT_TOK} for b in BATCHES],
        repeats=REPEATS, on_progress=lambda done, total, row: calls.append((done, total)),
        model_config=SMALL_CONFIG, model="test-small-llama", hardware="test-cpu", warmup_output_len_tok=2)
    return df, calls


# ---------------------------------------------------------------- without torch

def test_missing_torch_raises_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    # None in sys.modules makes `import torch` raise ImportError, as if it were not installed.
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(EngineUnavailableError) as info:
        LocalEngine(model_config=SMALL_CONFIG).load()
    assert isinstance(info.value, PerfmodelError)
    msg = str(info.value)
    assert "torch" in msg and "pip install perfmodel[engine]" in msg
    assert "transformers" not in msg.split("install")[0]  # names only what is missing


def test_missing_torch_and_transformers_are_both_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(EngineUnavailableError, match=r"needs torch and transformers.*pip install perfmodel\[engine\]"):
        run_static_batches([{"batch_size": 1, "input_len_tok": 4, "output_len_tok": 2}], model_config=SMALL_CONFIG)


def test_importing_sweep_does_not_import_torch() -> None:
    code = "import sys, perfmodel.sweep; print('torch' in sys.modules, 'transformers' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]


@pytest.mark.parametrize("point, column", [
    ({"batch_size": 0, "input_len_tok": 8, "output_len_tok": 4}, "batch_size"),
    ({"batch_size": 2, "input_len_tok": 8, "output_len_tok": 0}, "output_len_tok"),
    ({"batch_size": 2, "input_len_tok": 8, "output_len_tok": 4, "prompt": "x"}, "prompt"),
])
def test_invalid_point_is_a_validation_error_naming_the_field(point: dict[str, Any], column: str) -> None:
    with pytest.raises(ValidationError) as info:
        run_static_batches([point], model_config=SMALL_CONFIG)
    assert any(p.column == column for p in info.value.problems), str(info.value)


def test_invalid_settings_list_every_problem() -> None:
    with pytest.raises(ValidationError) as info:
        LocalEngine(model_config={**SMALL_CONFIG, "hidden_size": 0}, num_threads=0, dtype="int3").load()
    columns = {p.column for p in info.value.problems}
    assert {"num_threads", "dtype", "model_config.hidden_size"} <= columns
    assert "float32" in str(info.value)  # names the valid options


# ---------------------------------------------------------------- with torch

def test_sample_model_parameter_count() -> None:
    _need_engine()
    # The catalog entry of perfmodel-tiny-llama is written from this number.
    assert count_parameters(TINY_LLAMA_CONFIG) == 12_587_904


def test_rows_are_valid_canonical_runs(small_runs: tuple[pd.DataFrame, list[tuple[int, int]]]) -> None:
    df, _ = small_runs
    assert len(df) == len(BATCHES) * REPEATS
    again = validate_runs(df)  # raises on any schema problem
    assert list(again.columns[: len(COLUMN_NAMES)]) == list(COLUMN_NAMES)
    extras = list(df.columns[len(COLUMN_NAMES):])
    assert extras and all(c.startswith(("fw_", "hw_")) for c in extras)
    assert set(df["load_kind"]) == {"static_batch"}
    assert set(df["framework"]) == {"transformers"}
    assert set(df["source_format"]) == {ENGINE_SOURCE_FORMAT}
    assert set(df["throughput_basis"]) == {"output+total"}
    assert set(df["model"]) == {"test-small-llama"} and set(df["hardware"]) == {"test-cpu"}
    import transformers
    assert set(df["framework_version"]) == {transformers.__version__}
    assert sorted(df["batch_size"].unique()) == list(BATCHES)
    assert df.groupby("batch_size")["repeat_idx"].apply(sorted).map(list).tolist() == [[0, 1]] * len(BATCHES)
    assert (df["input_len_tok"] == IN_TOK).all() and (df["output_len_tok"] == OUT_TOK).all()
    assert df["timestamp"].notna().all()


def test_throughput_and_latency_arithmetic(small_runs: tuple[pd.DataFrame, list[tuple[int, int]]]) -> None:
    df, _ = small_runs
    b, e2e = df["batch_size"].to_numpy(float), df["e2e_latency_s"].to_numpy(float)
    np.testing.assert_allclose(df["output_throughput_tok_s"], b * OUT_TOK / e2e, rtol=1e-12)
    np.testing.assert_allclose(df["total_throughput_tok_s"], b * (IN_TOK + OUT_TOK) / e2e, rtol=1e-12)
    np.testing.assert_allclose(df["request_throughput_rps"], b / e2e, rtol=1e-12)
    ttft, decode = df["ttft_s"].to_numpy(float), df["fw_decode_s"].to_numpy(float)
    assert (ttft > 0).all() and (decode > 0).all()
    # prefill + decode happen inside the same generate call, so they cannot exceed it
    assert (ttft + decode <= e2e + 1e-9).all()
    np.testing.assert_allclose(df["tpot_s"], decode / (OUT_TOK - 1), rtol=1e-12)
    assert (df["itl_p50_s"] <= df["itl_p99_s"]).all()


def test_throughput_rises_with_batch(small_runs: tuple[pd.DataFrame, list[tuple[int, int]]]) -> None:
    df, _ = small_runs
    med = df.groupby("batch_size")["output_throughput_tok_s"].median()
    assert med[16] > med[1], med.to_dict()


def test_progress_callback_counts_every_repeat(small_runs: tuple[pd.DataFrame, list[tuple[int, int]]]) -> None:
    _, calls = small_runs
    total = len(BATCHES) * REPEATS
    assert calls == [(i, total) for i in range(1, total + 1)]


def test_output_length_is_honoured_even_when_greedy_would_emit_eos() -> None:
    _need_engine()
    import torch

    engine = LocalEngine(model_config=SMALL_CONFIG, warmup_runs=0).load()
    point = StaticBatchPoint(batch_size=1, input_len_tok=IN_TOK, output_len_tok=5)
    ids = engine._prompts(point)
    with torch.inference_mode():
        first = int(engine.model_(input_ids=ids).logits[0, -1].argmax())
    # Make the token greedy decoding picks first the EOS: only min_new_tokens keeps it going.
    engine.model_.generation_config.eos_token_id = first
    timing, n_generated = engine._generate(ids, 5)
    assert n_generated == 5
    assert len(timing.step_gaps_s) == 4
    rows = engine.measure(point, repeats=1)
    assert rows[0]["output_len_tok"] == 5.0


def test_thread_setting_is_restored() -> None:
    _need_engine()
    import torch

    before = torch.get_num_threads()
    engine = LocalEngine(model_config=SMALL_CONFIG, num_threads=1, warmup_runs=0)
    rows = engine.measure({"batch_size": 2, "input_len_tok": 4, "output_len_tok": 2}, repeats=1)
    assert torch.get_num_threads() == before
    assert rows[0]["fw_num_threads"] == 1.0


def test_point_longer_than_the_model_context_is_rejected() -> None:
    _need_engine()
    engine = LocalEngine(model_config=SMALL_CONFIG)
    with pytest.raises(ValidationError, match="max_position_embeddings"):
        engine.run([{"batch_size": 1, "input_len_tok": 100, "output_len_tok": 100}])


# ---------------------------------------------------------------- telemetry in the local backend

def _micro_point(warmup: int = 1) -> SweepPoint:
    return SweepPoint(load_kind="static_batch", batch_size=2, input_len_tok=16, output_len_tok=24, repeat_idx=3,
                      n_requests=None, warmup=warmup, timeout_s=600.0, key="b2-i16-o24-r3")


def test_local_point_carries_host_telemetry_columns() -> None:
    """A CPU point gets the sampler's hw_ means/maxima and a note; no GPU power is invented."""
    _need_engine()
    backend = LocalEngineBackend(engine_size="micro", telemetry_period_s=0.002)
    backend.check()
    res = backend.run_point(_micro_point(), cancel=threading.Event())
    assert res.error is None and res.row is not None
    row = res.row
    assert row["repeat_idx"] == 3
    assert {"hw_cpu_util_pct_mean", "hw_cpu_util_pct_max", "hw_mem_used_gb_mean", "hw_mem_used_pct_mean",
            "hw_telemetry_samples"} <= set(row)
    assert 0.0 <= row["hw_cpu_util_pct_mean"] <= row["hw_cpu_util_pct_max"] <= 100.0
    assert row["hw_telemetry_samples"] >= 2  # a first sample at start and a last one at stop, at least
    assert not any(k.startswith("hw_gpu") for k in row)
    assert math.isnan(row.get("power_w", math.nan))
    # the engine's own per-repeat snapshot columns are still there beside the sampled ones
    assert "hw_proc_cpu_pct" in row
    assert backend.describe()["telemetry"].endswith("host telemetry only")
    # the row stays a valid canonical run
    validate_runs(pd.DataFrame([row]), file="local point")


def test_local_telemetry_off_and_warmups_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sampler starts after the warm-up calls (they would dilute the point's means); off means off."""
    _need_engine()
    events: list[str] = []

    class Recording(TelemetrySampler):
        def start(self) -> TelemetrySampler:
            events.append("telemetry")
            return super().start()

    monkeypatch.setattr(local_backend, "TelemetrySampler", Recording)
    backend = LocalEngineBackend(engine_size="micro")
    backend.check()
    generate = backend.engine._generate
    monkeypatch.setattr(backend.engine, "_generate", lambda ids, n: (events.append(f"generate {n}"),
                                                                      generate(ids, n))[1])
    res = backend.run_point(_micro_point(warmup=2), cancel=threading.Event())
    assert res.error is None
    assert events == ["generate 8", "generate 8", "telemetry", "generate 24"]

    off = LocalEngineBackend(engine_size="micro", telemetry=False)
    off.check()
    row = off.run_point(_micro_point(warmup=0), cancel=threading.Event()).row
    assert row is not None and not any(k.endswith(("_mean", "_max")) for k in row)
    assert off.describe()["telemetry"] == "off"
    with pytest.raises(PerfmodelError, match="telemetry_period_s"):
        LocalEngineBackend(engine_size="micro", telemetry_period_s=0)


# ---------------------------------------------------------------- bundled sample runs (no torch needed)

SAMPLE_CSV = REPO / "sample_runs" / "perfmodel-tiny-llama_cpu-x86-2vcpu.csv"


def test_bundled_sample_runs_are_valid_and_pinned() -> None:
    raw = pd.read_csv(SAMPLE_CSV)
    df = validate_runs(raw, file=SAMPLE_CSV.name)
    assert list(raw.columns[: len(COLUMN_NAMES)]) == list(COLUMN_NAMES)
    assert len(df) == 96  # 8 batch sizes x 2 input x 2 output lengths x 3 repeats
    assert set(df["model"]) == {"perfmodel-tiny-llama"} and set(df["hardware"]) == {"cpu-x86-2vcpu"}
    assert set(df["source_format"]) == {ENGINE_SOURCE_FORMAT}
    assert sorted(df["batch_size"].unique()) == [1, 2, 4, 8, 16, 32, 64, 128]
    assert df.groupby(["batch_size", "input_len_tok", "output_len_tok"]).size().eq(3).all()
    # golden values from the measured file
    first, last = df.iloc[0], df.iloc[-1]
    assert (first["batch_size"], first["input_len_tok"], first["output_len_tok"]) == (1, 64, 32)
    assert first["output_throughput_tok_s"] == pytest.approx(126.238)
    assert first["e2e_latency_s"] == pytest.approx(0.25349)
    assert (last["batch_size"], last["input_len_tok"], last["output_len_tok"]) == (128, 256, 128)
    assert last["output_throughput_tok_s"] == pytest.approx(488.489)
    # the measuring thread had its core: the numbers are not contention artefacts
    assert df["hw_proc_cpu_pct"].min() > 95


def test_bundled_sample_runs_rise_then_flatten() -> None:
    df = pd.read_csv(SAMPLE_CSV)
    med = df.groupby(["input_len_tok", "output_len_tok", "batch_size"])["output_throughput_tok_s"].median()
    for (n_in, n_out), curve in med.groupby(level=[0, 1]):
        tput = curve.droplevel([0, 1])
        assert tput[16] > 2.5 * tput[1], (n_in, n_out, tput.to_dict())  # batching pays at first ...
        assert tput[128] < 1.5 * tput[32], (n_in, n_out, tput.to_dict())  # ... then saturates


def test_bundled_sample_runs_import_as_canonical() -> None:
    from perfmodel.importers import read_file

    res = read_file(SAMPLE_CSV)
    assert res.format == "canonical"
    assert len(res.runs) == 96
    assert set(res.runs["hardware"]) == {"cpu-x86-2vcpu"}
    assert set(res.runs["model"]) == {"perfmodel-tiny-llama"}


# ---------------------------------------------------------------- sample runs measured with the launcher

LAUNCHER_LOCAL_CSV = REPO / "sample_runs" / "perfmodel-small-llama_cpu-x86-2vcpu_local-sweep.csv"
LAUNCHER_HTTP_CSV = REPO / "sample_runs" / "perfmodel-served-tiny-llama_cpu-x86-2vcpu_transformers-serve.csv"


def test_launcher_local_sample_is_canonical_and_pinned() -> None:
    from perfmodel.importers import read_file

    res = read_file(LAUNCHER_LOCAL_CSV)
    assert res.format == "canonical"
    df = res.runs
    assert len(df) == 10  # batch 1..16 (5 sizes) x 2 repeats
    assert set(df["model"]) == {"perfmodel-small-llama"} and set(df["load_kind"]) == {"static_batch"}
    assert df["batch_size"].tolist() == [1, 2, 4, 8, 16] * 2  # interleaved repeats
    assert df["output_throughput_tok_s"].iloc[0] == pytest.approx(18.795047, rel=1e-6)
    assert df["output_throughput_tok_s"].iloc[-1] == pytest.approx(62.067572, rel=1e-6)
    # the sampler's columns ride along (host telemetry: no GPU power)
    assert df["hw_telemetry_samples"].min() >= 2 and df["hw_cpu_util_pct_mean"].between(0, 100).all()
    assert df["power_w"].isna().all()
    med = df.groupby("batch_size")["output_throughput_tok_s"].median()
    assert med[16] > 2.5 * med[1]  # batching pays


def test_launcher_http_sample_is_canonical_and_pinned() -> None:
    from perfmodel.importers import read_file

    res = read_file(LAUNCHER_HTTP_CSV)
    assert res.format == "canonical"
    df = res.runs
    assert len(df) == 6  # concurrency 1, 2, 4 x 2 repeats
    assert set(df["model"]) == {"perfmodel-served-tiny-llama"} and set(df["load_kind"]) == {"concurrency"}
    assert df["n_requests"].tolist() == [8, 8, 16] * 2
    assert (df["output_len_tok"] == 32).all() and (df["fw_output_short_frac"] == 0).all()  # length honoured
    assert (df["ttft_s"] < df["e2e_latency_s"]).all()
    assert df["output_throughput_tok_s"].iloc[0] == pytest.approx(182.728974, rel=1e-6)
    med = df.groupby("batch_size")["output_throughput_tok_s"].median()
    assert med[4] > 2 * med[1]


LAUNCHER_THREADS_CSV = REPO / "sample_runs" / "perfmodel-tiny-llama_cpu-x86-2vcpu_threads-1-2_local-sweep.csv"


def test_launcher_threads_sample_is_canonical_pinned_and_two_curves() -> None:
    from perfmodel.curves import fit_curves
    from perfmodel.importers import read_file

    res = read_file(LAUNCHER_THREADS_CSV)
    assert res.format == "canonical"
    df = res.runs
    assert len(df) == 36  # threads 1 and 2 x batch 1..32 (6 sizes) x 3 repeats
    assert set(df["model"]) == {"perfmodel-tiny-llama"} and set(df["load_kind"]) == {"static_batch"}
    assert df["fw_num_threads"].tolist() == [1] * 18 + [2] * 18
    assert df["batch_size"].tolist() == [1, 2, 4, 8, 16, 32] * 6  # interleaved repeats, per sweep
    assert set(df["input_len_tok"]) == {128} and set(df["output_len_tok"]) == {32}
    assert df["output_throughput_tok_s"].iloc[0] == pytest.approx(70.906027, rel=1e-6)
    assert df["output_throughput_tok_s"].iloc[-1] == pytest.approx(153.376490, rel=1e-6)
    med = df.groupby(["fw_num_threads", "batch_size"])["output_throughput_tok_s"].median()
    assert med[1, 32] > 3 * med[1, 1]  # batching pays
    assert (med[2] < med[1]).all()  # on the busy 2-vCPU VM a second thread made every point slower
    # The default grouping separates the thread counts: two curves, the noisy 2-thread one flagged.
    table = fit_curves(df, intervals="none")
    assert table["fw_num_threads"].tolist() == [1, 2]
    assert table["success"].tolist() == [True, False]
    assert "repeats disagree" in table["message"].iloc[1]


def test_warmup_length_full_on_accelerators_short_on_cpu() -> None:
    # On an H200 a first repeat after an 8-token warm-up ran 2-4x slower than the next ones
    # (the caching allocator met each new KV-cache length for the first time), so
    # accelerators warm up over the whole output; a CPU keeps the cheap 8-token warm-up.
    from perfmodel.sweep.local_engine import LocalEngine, StaticBatchPoint

    point = StaticBatchPoint(batch_size=4, input_len_tok=16, output_len_tok=128)
    assert LocalEngine(device="cpu")._warmup_len(point) == 8
    assert LocalEngine(device="cuda")._warmup_len(point) == 128
    assert LocalEngine(device="cuda:1", warmup_output_len_tok=16)._warmup_len(point) == 16
    assert LocalEngine(device="cpu")._warmup_len(StaticBatchPoint(batch_size=1, input_len_tok=4,
                                                                  output_len_tok=3)) == 3
