"""Roofline bounds and suspect flags: hand-computed values and the real data's known suspects."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from perfmodel import physics
from perfmodel.errors import PerfmodelError, UnknownNameError, ValidationError


def _row(**kw: object) -> pd.DataFrame:
    base: dict[str, object] = {"hardware": "h100-sxm", "model": "llama-3-8b", "framework": "vllm",
                               "device_count": 1, "input_len_tok": 128.0, "output_len_tok": 128.0,
                               "batch_size": 1.0}
    base.update(kw)
    return pd.DataFrame([base])


def test_llama3_8b_h100_by_hand() -> None:
    r = physics.roofline(_row()).iloc[0]
    weights = 8.03e9 * 2  # bf16
    kv_tok = 2 * 32 * 8 * 128 * 2
    bw = 3350e9
    assert r["weight_bytes"] == pytest.approx(weights)
    assert r["kv_bytes_per_token"] == pytest.approx(kv_tok)
    # 128 prompt tokens at peak FLOPs take 2.1 ms, less than one read of the weights (4.8 ms)
    assert 2 * 8.03e9 * 128 / 989.5e12 < weights / bw
    assert r["prefill_s_min"] == pytest.approx(weights / bw)
    step = (weights + kv_tok * 1 * (128 + 64)) / bw
    assert r["decode_step_s_min"] == pytest.approx(step)
    e2e = weights / bw + 127 * step
    assert r["e2e_s_min"] == pytest.approx(e2e)
    assert r["output_tok_s_max"] == pytest.approx(128 / e2e)
    assert r["bound"] == "memory"


def test_a_short_request_pays_one_read_of_the_weights() -> None:
    # One output token after a 16-token prompt was bounded at 3,851 tok/s at batch 16 while the What-if page
    # said TTFT is at least one read of the weights (4.79 ms: 3,340 tok/s); an empty prompt's bound was infinite.
    r = physics.roofline(_row(input_len_tok=16.0, output_len_tok=1.0, batch_size=16.0)).iloc[0]
    assert r["output_tok_s_max"] == pytest.approx(16 / r["ttft_s_min"]) and r["output_tok_s_max"] < 3341
    empty = physics.roofline(_row(input_len_tok=0.0, output_len_tok=1.0, batch_size=3.0)).iloc[0]
    assert np.isfinite(empty["output_tok_s_max"]) and empty["e2e_s_min"] == pytest.approx(8.03e9 * 2 / 3350e9)


def test_kv_fit_batch_by_hand() -> None:
    # H100 SXM 80 GB (binary: 2^30 B each), llama-3-8b bf16 (8.03e9 parameters), 128 + 128 tokens per sequence.
    r = physics.roofline(_row()).iloc[0]
    kv_tok = 2 * 32 * 8 * 128 * 2
    expected = (0.9 * 80 * 2**30 - 8.03e9 * 2) / (kv_tok * (128 + 128))
    assert r["kv_fit_batch"] == pytest.approx(expected)
    four = physics.roofline(_row(device_count=4)).iloc[0]["kv_fit_batch"]
    assert four == pytest.approx((0.9 * 4 * 80 * 2**30 - 8.03e9 * 2) / (kv_tok * 256))  # the weights are paid once
    # Longer sequences fit fewer; the batch itself does not change what fits.
    long = physics.roofline(_row(input_len_tok=4096.0, batch_size=64.0)).iloc[0]["kv_fit_batch"]
    assert long == pytest.approx(expected * 256 / (4096 + 128))
    # 70B parameters in 16 bits do not fit one 80 GB device at all: the catalog cannot say (NaN).
    assert np.isnan(physics.roofline(_row(model="llama-2-70b")).iloc[0]["kv_fit_batch"])
    assert physics.kv_fit_batch(np.array([100.0]), np.array([0.0]), np.array([1.0]), np.array([500.0]),
                                np.array([500.0]))[0] == 1.0  # never below one sequence


def test_devices_scale_the_bound_and_batch_raises_it() -> None:
    one = physics.roofline(_row())["output_tok_s_max"].iloc[0]
    four = physics.roofline(_row(device_count=4))["output_tok_s_max"].iloc[0]
    assert four == pytest.approx(4 * one, rel=1e-9)
    b = physics.roofline(pd.concat([_row(batch_size=float(x)) for x in (1, 8, 64, 512)], ignore_index=True))
    assert np.all(np.diff(b["output_tok_s_max"].to_numpy()) > 0)


def test_compute_bound_at_huge_batch_and_long_prompt() -> None:
    r = physics.roofline(_row(input_len_tok=32768.0, output_len_tok=2.0, batch_size=256.0)).iloc[0]
    assert r["bound"] == "compute"


def test_moe_reads_fewer_weights_at_batch_one() -> None:
    r = physics.roofline(_row(model="mixtral-8x7b", batch_size=1.0)).iloc[0]
    assert r["weight_bytes_read"] < 0.35 * r["weight_bytes"]  # ~12.9B of 46.7B per token
    big = physics.roofline(_row(model="mixtral-8x7b", batch_size=64.0)).iloc[0]
    assert big["weight_bytes_read"] == pytest.approx(big["weight_bytes"], rel=1e-6)


def test_unknown_catalog_figure_gives_nan_not_crash() -> None:
    r = physics.roofline(_row(hardware="sn40l", device_count=8)).iloc[0]  # no HBM bandwidth known
    assert math.isnan(r["output_tok_s_max"]) and pd.isna(r["bound"])
    assert not physics.flag_suspect(_row(hardware="sn40l", output_throughput_tok_s=1e9)).iloc[0]


def test_a_16_bit_model_on_a_device_with_only_an_fp32_rate_is_bound_at_that_rate() -> None:
    # The 2-vCPU sample VM lists fp32 only (AVX2 has no 16-bit arithmetic: llama.cpp computes its f16
    # weights in fp32). Without the fallback its llama.cpp rows had no compute bound at all.
    r = physics.roofline(_row(hardware="cpu-x86-2vcpu", model="perfmodel-tiny-llama", weight_dtype="f16")).iloc[0]
    assert r["dtype_bytes"] == 2.0
    assert r["peak_flops"] == pytest.approx(0.2624e12)
    assert r["prefill_s_min"] == pytest.approx(2 * r["active_params"] * 128 / 0.2624e12)
    assert math.isfinite(r["output_tok_s_max"])


def test_every_published_ttft_lies_above_the_ttft_floor(llm_bench_dir) -> None:  # type: ignore[no-untyped-def]
    # LLM-Inference-Bench's ttft_itl.csv: 30 TTFTs (1,024-token prompts, batch 16) on 9 accelerators.
    from perfmodel.importers import read_file

    runs = read_file(llm_bench_dir / "ttft_itl.csv").runs
    assert len(runs) == 30
    floor = physics.roofline(runs)["ttft_s_min"].to_numpy()
    ratio = runs["ttft_s"].to_numpy() / floor
    assert np.isfinite(ratio).all() and ratio.min() >= 1.0, ratio.min()
    nvidia = runs["hardware"].isin(["h100-sxm", "gh200", "a100-40gb"]).to_numpy()
    assert 1.2 < ratio[nvidia].min() and ratio[nvidia & (runs["framework"] != "deepspeed-mii").to_numpy()].max() < 2.0


def test_ttft_floor_is_the_longer_of_the_prefill_and_one_weight_read() -> None:
    short = physics.roofline(_row(input_len_tok=16.0)).iloc[0]  # 16 tokens: reading 16 GB takes longer
    assert short["ttft_s_min"] == pytest.approx(8.03e9 * 2 / 3350e9)
    long = physics.roofline(_row(input_len_tok=4096.0)).iloc[0]
    assert long["ttft_s_min"] == pytest.approx(long["prefill_s_min"]) and long["prefill_s_min"] > 8.03e9 * 2 / 3350e9


def test_n_batch_makes_the_prefill_read_the_weights_once_per_pass() -> None:
    # llama.cpp's n_batch: 1,024 prompt tokens fed 1, 64 or 4,096 per forward pass, each pass reading 16 GB.
    read = 8.03e9 * 2 / 3350e9
    plain = physics.roofline(_row(input_len_tok=1024.0)).iloc[0]
    one = physics.roofline(_row(input_len_tok=1024.0, fw_n_batch=1.0)).iloc[0]
    sixty_four = physics.roofline(_row(input_len_tok=1024.0, fw_n_batch=64.0)).iloc[0]
    whole = physics.roofline(_row(input_len_tok=1024.0, fw_n_batch=4096.0)).iloc[0]
    assert one["prefill_s_min"] == pytest.approx(1024 * read)
    assert sixty_four["prefill_s_min"] == pytest.approx(16 * read)
    assert whole["prefill_s_min"] == pytest.approx(max(plain["prefill_s_min"], read))
    assert one["e2e_s_min"] - plain["e2e_s_min"] == pytest.approx(1024 * read - plain["prefill_s_min"])
    assert one["ttft_s_min"] == pytest.approx(1024 * read)
    # A missing or invalid setting leaves the compute floor alone.
    nan = physics.roofline(_row(input_len_tok=1024.0, fw_n_batch=np.nan)).iloc[0]
    zero = physics.roofline(_row(input_len_tok=1024.0, fw_n_batch=0.0)).iloc[0]
    assert nan["prefill_s_min"] == zero["prefill_s_min"] == plain["prefill_s_min"]


def test_a_ttft_below_the_floor_is_flagged_and_rows_without_one_are_not() -> None:
    rows = pd.concat([_row(batch_size=16.0, input_len_tok=512.0, ttft_s=t) for t in (0.001, 0.2, float("nan"))]
                     + [_row(hardware="sn40l", device_count=8, ttft_s=1e-6)], ignore_index=True)
    # SN40L has no bandwidth in the catalog, but its compute alone gives a floor
    assert physics.flag_fast_ttft(rows).tolist() == [True, False, False, True]
    assert physics.flag_fast_ttft(rows, tolerance=0.001).tolist() == [False, False, False, False]
    assert not physics.flag_fast_ttft(_row()).any()  # no ttft_s column: nothing to flag
    with pytest.raises(PerfmodelError, match="tolerance"):
        physics.flag_fast_ttft(rows, tolerance=0)


def test_a_server_scheduled_run_is_held_to_one_prompts_prefill() -> None:
    # A closed loop of 1,024 requests on an H200 measured a 0.131 s TTFT: flagged against 1,024 prompts of
    # 1,000 tokens prefilled at once (3.7 s), which a server never does; its floor is one prompt's prefill.
    conc = _row(hardware="h200", batch_size=1024.0, input_len_tok=1000.0, output_len_tok=1000.0, ttft_s=0.131)
    static = conc.assign(load_kind="static_batch")
    floors = physics.roofline(static)["ttft_s_min"].iloc[0], physics.roofline(conc.assign(batch_size=1.0))[
        "ttft_s_min"].iloc[0]
    assert floors[0] > 0.131 > floors[1]
    assert physics.flag_fast_ttft(static).tolist() == [True]
    assert physics.flag_fast_ttft(conc.assign(load_kind="concurrency")).tolist() == [False]
    assert physics.flag_fast_ttft(conc.assign(load_kind="request_rate", ttft_s=floors[1] / 2)).tolist() == [True]
    assert physics.prefills_together(None) and physics.prefills_together(float("nan"))
    assert physics.prefills_together("offline") and not physics.prefills_together("concurrency")


def test_unknown_hardware_names_row_and_column() -> None:
    df = pd.concat([_row(), _row(hardware="warp-drive-9000")], ignore_index=True)
    with pytest.raises(UnknownNameError) as e:
        physics.roofline(df)
    assert "warp-drive-9000" in str(e.value) and "row 2" in str(e.value) and "'hardware'" in str(e.value)


def test_bad_values_and_missing_column() -> None:
    with pytest.raises(ValidationError, match=r"row 1, column 'batch_size'"):
        physics.roofline(_row(batch_size=-4.0))
    with pytest.raises(ValidationError, match=r"column 'output_len_tok'.*missing"):
        physics.roofline(_row().drop(columns="output_len_tok"))
    with pytest.raises(PerfmodelError):
        physics.flag_suspect(_row(output_throughput_tok_s=1.0), tolerance=0)
    with pytest.raises(PerfmodelError):
        physics.flag_suspect(_row(output_throughput_tok_s=1.0), basis="vibes")


_CACHE: dict[str, pd.DataFrame] = {}


@pytest.fixture
def real_runs(all_results_csv) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    from perfmodel.importers import read_file

    if "runs" not in _CACHE:
        _CACHE["runs"] = read_file(str(all_results_csv)).runs
    return _CACHE["runs"]


CFG = ["hardware", "device_count", "framework", "model", "input_len_tok", "output_len_tok"]


def test_known_suspects_in_all_results(real_runs: pd.DataFrame) -> None:
    s = physics.flag_suspect(real_runs)
    flagged = real_runs[s]
    # Pinned: 33 rows in 9 configurations beat reading one token's active weights once per step.
    assert int(s.sum()) == 33
    assert flagged[CFG].drop_duplicates().shape[0] == 9
    # Qwen2-7B on TensorRT-LLM at 2048/2048 reports ~25-65k tok/s on 1-4 H100s at any batch.
    q = flagged[(flagged.model == "qwen2-7b") & (flagged.framework == "tensorrt-llm")]
    assert set(q.device_count.astype(int)) == {1, 2, 4} and len(q) == 12
    assert set(flagged[flagged.hardware == "gh200"].model) == {"aquila-7b", "bloom-7b1", "gpt-j-6b",
                                                               "llama-7b", "opt-6.7b"}
    full = physics.flag_suspect(real_runs, basis="roofline")
    # The stricter bound flags a superset. 83 while llama.cpp's n_batch was read as concurrent sequences:
    # 34 of its rows then beat B sequences' roofline.
    assert int(full.sum()) == 49 and bool((full | ~s).all())
    assert not full[real_runs["framework"] == "llama.cpp"].any()


def test_well_behaved_rows_never_beat_the_bound(real_runs: pd.DataFrame) -> None:
    b = physics.roofline(real_runs)
    ok = ~physics.flag_suspect(real_runs, basis="roofline", bounds=b)
    eff = real_runs["output_throughput_tok_s"][ok] / b["output_tok_s_max"][ok]
    assert float(eff.max()) <= 1.0
    assert 0.15 < float(eff.median()) < 0.35  # software reaches about a quarter of the hardware limit


def test_an_empty_kv_cache_dtype_cell_reads_as_an_absent_column() -> None:
    # Guards: an fp8 model's cache was 2 bytes without the column and 1 byte with it empty, so one query answered
    # 250 tok/s alone and 480 beside a row that had the column.
    absent = physics.roofline(_row(weight_dtype="fp8", batch_size=64.0, input_len_tok=1024.0, output_len_tok=1024.0))
    empty = physics.roofline(_row(weight_dtype="fp8", kv_cache_dtype=None, batch_size=64.0, input_len_tok=1024.0,
                                  output_len_tok=1024.0))
    pd.testing.assert_frame_equal(absent, empty)
    one = physics.roofline(_row(weight_dtype="fp8", kv_cache_dtype="fp8", batch_size=64.0, input_len_tok=1024.0,
                                output_len_tok=1024.0))
    assert one["output_tok_s_max"].iloc[0] > absent["output_tok_s_max"].iloc[0]  # a stated fp8 cache is read


def test_a_query_s_measurement_setting_is_a_whole_number_of_at_least_one() -> None:
    # llama.cpp's n_batch -5, 0, inf, 2.5 and "abc" had all been answered (99.2, 100.9, 70.5 tok/s ...), exit 0
    q = pd.DataFrame({"hardware": "h100-sxm", "model": "llama-3-8b", "framework": "llama.cpp", "device_count": 1,
                      "input_len_tok": 1024.0, "output_len_tok": 1024.0, "batch_size": 1.0,
                      "fw_n_batch": ["-5", "0", "inf", "2.5", "abc", "64", None]})
    with pytest.raises(ValidationError) as exc:
        physics.check_query(q, query=True)
    assert [(p.row, p.column) for p in exc.value.problems] == [(r, "fw_n_batch") for r in (1, 2, 3, 4, 5)]
    assert "expected a whole number >= 1 (n_batch), got '2.5'" in str(exc.value)
    physics.check_query(q.iloc[5:], query=True)  # 64 and none are fine
    physics.check_query(q)  # measurements are the importers' to check
