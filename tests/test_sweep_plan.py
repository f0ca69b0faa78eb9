"""Sweep plans: grids, validation messages, point order, estimate, refusal of huge grids."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfmodel.errors import PerfmodelError, ValidationError
from perfmodel.sweep.local_engine import TINY_LLAMA_CONFIG
from perfmodel.sweep.plan import (
    ENGINE_SIZES,
    MAX_POINTS,
    load_plan,
    parse_grid,
    plan_from_dict,
    plan_from_text,
    plan_overrides,
)

BASE = {"batch_sizes": [1, 2], "input_lens": [64], "output_lens": [32]}


def test_grid_text_forms() -> None:
    assert parse_grid("1:64:x2") == [1, 2, 4, 8, 16, 32, 64]
    assert parse_grid("128:512:+128") == [128, 256, 384, 512]
    assert parse_grid("4,1,2,2") == [1, 2, 4]
    assert parse_grid(["1:4:x2", 3, "16"]) == [1, 2, 3, 4, 16]
    assert parse_grid(8) == [8]
    assert parse_grid("1:10:x3") == [1, 3, 9]
    for bad in ("1:64:x1", "a,b", "0:64:x2", "1:64:+0", [True]):
        with pytest.raises(ValidationError):
            parse_grid(bad, option="batch_sizes")
    # a range backwards had read "needs at least one value"
    for bad in ("64:1:x2", "512:128:+128"):
        with pytest.raises(ValidationError, match="start <= stop"):
            parse_grid(bad, option="batch_sizes")


def test_every_problem_listed_with_option_and_valid_values() -> None:
    with pytest.raises(ValidationError) as info:
        plan_from_dict({"batch_sizes": [0, -4, 8], "input_lens": [64], "output_lens": [0], "engine_size": "huge",
                        "repeats": 0, "backend": "local", "colour": "red"})
    msg = str(info.value)
    assert "'colour'" in msg and "valid options: name, backend" in msg
    assert "repeats" in msg and "greater than or equal to 1" in msg
    assert "batch_sizes" in msg and "-4, 0 out of range" in msg
    assert "output_lens" in msg and "0 out of range" in msg
    assert "'huge' is not an engine size; valid sizes: micro, tiny, small, medium, large" in msg
    problems = {p.column for p in info.value.problems}
    assert {"colour", "repeats", "batch_sizes", "output_lens", "engine_size"} <= problems


def test_backend_choice_and_http_needs_a_target() -> None:
    with pytest.raises(ValidationError, match=r"backend.*'local' or 'http'.*got 'grpc'"):
        plan_from_dict({**BASE, "backend": "grpc"})
    with pytest.raises(ValidationError, match="target"):
        plan_from_dict({**BASE, "backend": "http"})
    plan = plan_from_dict({**BASE, "backend": "http", "target": "http://127.0.0.1:8000", "model": "m"})
    assert plan.load_kind == "concurrency"
    assert [p.n_requests for p in plan.points()[:2]] == [8, 8]  # max(4 x concurrency, 8)
    plan = plan_overrides(plan, {"n_requests": 20, "batch_sizes": "16"})
    assert {p.n_requests for p in plan.points()} == {20}


def test_huge_grid_needs_confirmation() -> None:
    huge = {"batch_sizes": "1:1000:+1", "input_lens": "1:100:+1", "output_lens": [4], "repeats": 1}
    with pytest.raises(ValidationError) as info:
        plan_from_dict(huge)
    assert "100,000 points" in str(info.value) and "confirm_large" in str(info.value)
    assert plan_from_dict({**huge, "confirm_large": True}).n_points == 100_000
    exactly = {"batch_sizes": "1:100:+1", "input_lens": "1:10:+1", "output_lens": [4], "repeats": 10}
    assert plan_from_dict(exactly).n_points == MAX_POINTS  # the limit itself is allowed


def test_lengths_beyond_the_engine_context_are_refused() -> None:
    with pytest.raises(ValidationError, match="2100 tokens exceeds the 'tiny' engine's context of 2048"):
        plan_from_dict({"batch_sizes": [1], "input_lens": [2000], "output_lens": [100]})


def test_interleaved_order_and_stable_keys() -> None:
    plan = plan_from_dict({"batch_sizes": "1,4,2", "input_lens": "256,64", "output_lens": [8], "repeats": 2,
                           "warmup": 2})
    keys = [p.key for p in plan.points()]
    assert keys[:6] == ["b1-i64-o8-r0", "b2-i64-o8-r0", "b4-i64-o8-r0", "b1-i64-o8-r1", "b2-i64-o8-r1",
                        "b4-i64-o8-r1"]
    assert keys[6] == "b1-i256-o8-r0" and len(keys) == len(set(keys)) == 12
    assert {p.warmup for p in plan.points()} == {2}
    grouped = plan_overrides(plan, {"order": "grouped", "cold_start": True})
    assert [p.key for p in grouped.points()][:3] == ["b1-i64-o8-r0", "b1-i64-o8-r1", "b2-i64-o8-r0"]
    assert {p.warmup for p in grouped.points()} == {0}
    assert sorted(keys) == sorted(p.key for p in grouped.points())


def test_estimate_grows_with_work() -> None:
    small = plan_from_dict({**BASE, "repeats": 1}).estimate()
    more = plan_from_dict({**BASE, "repeats": 2}).estimate()
    longer = plan_from_dict({**BASE, "repeats": 1, "output_lens": [512]}).estimate()
    assert small.n_points == 2 and small.startup_s == more.startup_s > 0
    assert more.total_s - more.startup_s == pytest.approx(2 * (small.total_s - small.startup_s))
    assert longer.total_s - longer.startup_s > 5 * (small.total_s - small.startup_s)
    assert "points, about" in small.text()


def test_estimate_counts_starting_the_local_engine() -> None:
    # A sweep of two short points on the micro engine was estimated "under a second"; it took 9 s,
    # nearly all of it importing torch and building the model. The start-up grows with the model.
    micro = plan_from_dict({**BASE, "repeats": 1, "engine_size": "micro"}).estimate()
    medium = plan_from_dict({**BASE, "repeats": 1, "engine_size": "medium"}).estimate()
    assert micro.total_s >= 5 and "to start the engine" in micro.basis
    assert micro.text() != "2 points, under a second"
    assert medium.startup_s > micro.startup_s + 20
    assert micro.per_point_s < micro.total_s / micro.n_points
    http = plan_from_dict({**BASE, "backend": "http", "target": "http://127.0.0.1:1"}).estimate()
    assert http.startup_s == 0


def test_yaml_file_round_trip_and_bad_file(tmp_path: Path) -> None:
    src = tmp_path / "plan.yaml"
    src.write_text("backend: local\nengine_size: micro\nbatch_sizes: 1:8:x2\ninput_lens: [16]\noutput_lens: '8'\n")
    plan = load_plan(src)
    assert plan.batch_sizes == [1, 2, 4, 8] and plan.engine_size == "micro"
    assert plan_from_text(plan.to_json()) == plan
    src.write_text("batch_sizes: [1\n")
    with pytest.raises(ValidationError, match="plan.yaml: not valid YAML"):
        load_plan(src)
    src.write_text("- 1\n- 2\n")
    with pytest.raises(ValidationError, match="expected a mapping"):
        load_plan(src)
    with pytest.raises(PerfmodelError, match="cannot read"):
        load_plan(tmp_path / "missing.yaml")


def test_tiny_engine_size_is_the_catalog_sample_model() -> None:
    assert dict(ENGINE_SIZES["tiny"].config) == dict(TINY_LLAMA_CONFIG)
    assert ENGINE_SIZES["tiny"].model == "perfmodel-tiny-llama"


def test_every_engine_size_has_a_matching_catalog_entry() -> None:
    """Rows of local-engine sweeps resolve to catalog models with the dimensions actually run."""
    from perfmodel import catalog
    from perfmodel.sweep.plan import ENGINE_SIZES

    for size, es in ENGINE_SIZES.items():
        spec = catalog.resolve_model(es.model)
        c = es.config
        assert (spec.hidden_size, spec.n_layers, spec.n_heads, spec.n_kv_heads, spec.intermediate_size,
                spec.vocab_size) == (c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"],
                                     c["num_key_value_heads"], c["intermediate_size"], c["vocab_size"]), size
    # the "large" size has Llama-3-8B's shape: the same parameter count as the published model
    assert catalog.resolve_model(ENGINE_SIZES["large"].model).params_b == pytest.approx(
        catalog.resolve_model("meta-llama/Meta-Llama-3-8B").params_b, rel=1e-3)


def test_estimate_on_an_accelerator_uses_the_catalog_peak_not_the_cpu_rate() -> None:
    # The first H200 sweep was estimated at "520 h" with the CPU cost model; it took 5 min.
    from perfmodel.sweep.plan import plan_from_dict

    base = {"backend": "local", "engine_size": "large", "engine_dtype": "bfloat16", "hardware": "h200",
            "batch_sizes": [1, 4, 16, 32, 64, 128, 256], "input_lens": [128, 512], "output_lens": [128],
            "repeats": 3, "order": "grouped"}
    gpu = plan_from_dict({**base, "engine_device": "cuda"}).estimate()
    cpu = plan_from_dict({**base, "engine_device": "cpu"}).estimate()
    assert 120 < gpu.total_s < 1200, gpu  # measured: about 290 s for this grid (with short warm-ups)
    assert "h200" in gpu.basis and "TFLOP/s" in gpu.basis
    assert cpu.total_s > 100 * gpu.total_s


def test_durations_read_as_words_a_user_expects() -> None:
    from perfmodel.sweep.plan import format_duration

    assert format_duration(0.2) == "under a second"  # a 2-point tiny sweep read "about 0 s"
    assert format_duration(45) == "45 s" and format_duration(180) == "3 min" and format_duration(9000) == "2.5 h"
    assert format_duration(float("nan")) == "?"
    from perfmodel.sweep.plan import about_duration

    # the sweep log had read "(about under a second)"
    assert about_duration(0.2) == "under a second" and about_duration(180) == "about 3 min"
