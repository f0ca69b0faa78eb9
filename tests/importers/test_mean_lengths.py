"""Per-load-point mean lengths of one workload (GuideLLM, inference-perf) read as the workload's."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from perfmodel.api import import_files
from perfmodel.curve_tables import default_curve_by
from perfmodel.curves import fit_curves
from perfmodel.importers import ImportMeta, read_file
from perfmodel.importers.lengths import common_mean_lengths
from perfmodel.store import Store

META = ImportMeta(hardware="h100-sxm", model="llama-3.1-8b")


def test_guidellm_concurrency_points_form_one_curve(formats_dir: Path) -> None:
    # concurrency 1 / 4 / 16 were "264/128", "264/123", "264/121": three one-point configurations, none fitted
    path = formats_dir / "guidellm-derived-csv" / "guidellm-pd-disaggregation__all-benchmarks.csv"
    raw = read_file(path, meta=META).runs
    assert raw["output_len_tok"].nunique() > 5
    info, results = import_files([path], meta=META, store=Store())
    runs = Store().runs(info.id)
    # the saturating "throughput" profile stopped early (87 tokens): a workload apart, kept as measured
    assert sorted(set(zip(runs["input_len_tok"], runs["output_len_tok"], strict=True))) == [(264.0, 87.0),
                                                                                           (264.0, 120.0)]
    pd.testing.assert_series_equal(runs["output_throughput_tok_s"], raw["output_throughput_tok_s"],
                                   check_dtype=False, check_names=False, check_index=False)
    notes = [i.message for i in results[0].issues if i.column == "output_len_tok"]
    assert notes == ["the load points' mean output lengths (111 to 128 tokens, one workload's requests sampled and "
                     "stopped differently at each point) are read as their median, 120, so that the points form "
                     "one curve; throughputs are as measured"]
    fits = fit_curves(runs, by=default_curve_by(runs))
    assert int(fits["success"].sum()) == 1


def test_inference_perf_stages_of_one_workload_share_its_lengths(formats_dir: Path) -> None:
    stages = sorted((formats_dir / "inference-perf").glob("*stage_[0-9]_lifecycle_metrics.json"))
    info, _ = import_files(stages, meta=META, store=Store())
    runs = Store().runs(info.id)
    assert len(runs) == len(stages) == 7
    assert set(zip(runs["input_len_tok"], runs["output_len_tok"], strict=True)) == {(204.0, 62.0)}


def test_exact_lengths_and_far_apart_workloads_are_left_alone(formats_dir: Path) -> None:
    # a format with exact lengths is not touched, nor are two workloads of one client 2x apart
    vllm = formats_dir / "vllm-bench-serve" / "er0080-vllm-benchmarking__bench_serve_v0.25.1.json"
    res = read_file(vllm, meta=META)
    assert common_mean_lengths([res])[0] is res
    path = formats_dir / "guidellm-derived-csv" / "guidellm-pd-disaggregation__all-benchmarks.csv"
    g = read_file(path, meta=META)
    doubled = g.runs.assign(input_len_tok=g.runs["input_len_tok"] * 2, source_file="other.csv")
    two = [g, type(g)(runs=doubled, issues=(), format=g.format, file="other.csv", sha256="x",
                      provenance=g.provenance)]
    out = common_mean_lengths(two)
    assert set(out[0].runs["input_len_tok"]) == {264.0} and set(out[1].runs["input_len_tok"]) == {528.0}
