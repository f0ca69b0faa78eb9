"""Curves along another load than the batch: which loads a dataset offers, the grouping, and the words.

GuideLLM's llm-d sweep (guidellm-pd-disaggregation, imported from the real file) holds 4 concurrency runs, 10 at a
request rate (9 constant, 1 Poisson) and 2 offline bursts (request rate inf, with their requests in flight).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfmodel.curve_tables import (
    LOAD_AXES,
    curve_by_for_x,
    curve_x_options,
    default_curve_by,
    default_overlay,
    fit_caveats,
    fit_counts_words,
    fits_summary,
    off_axis_runs,
    poor_fits,
    x_axis_note,
)
from perfmodel.curves import fit_curves


@pytest.fixture()
def guidellm_runs(formats_dir) -> pd.DataFrame:  # noqa: ANN001
    from perfmodel.api import import_files
    from perfmodel.importers.base import ImportMeta
    from perfmodel.store import Store

    path = formats_dir / "guidellm-derived-csv" / "guidellm-pd-disaggregation__all-benchmarks.csv"
    info, _ = import_files([path], meta=ImportMeta(hardware="t4", model="qwen3-0.6b"), store=Store())
    return Store().runs(info.id)


def test_the_loads_offered_are_those_the_runs_hold(guidellm_runs: pd.DataFrame) -> None:
    assert curve_x_options(guidellm_runs) == list(LOAD_AXES)
    rate_only = guidellm_runs[guidellm_runs["load_kind"] == "request_rate"].drop(columns="measured_concurrency")
    assert curve_x_options(rate_only) == ["request_rate_rps"]
    # offline bursts: request rate inf, nothing measured in flight: no load at all
    offline = guidellm_runs[guidellm_runs["load_kind"] == "offline"].drop(columns="measured_concurrency")
    assert curve_x_options(offline) == []


def test_runs_left_off_the_axis_are_counted_by_the_load_they_have(guidellm_runs: pd.DataFrame) -> None:
    assert off_axis_runs(guidellm_runs, "batch_size") == {"request_rate_rps": 10, "measured_concurrency": 2}
    assert off_axis_runs(guidellm_runs, "request_rate_rps") == {"batch_size": 4, "measured_concurrency": 2}
    assert off_axis_runs(guidellm_runs, "measured_concurrency") == {}


def test_the_grouping_along_a_load_keeps_the_batch_out_and_along_a_length_adds_it(guidellm_runs: pd.DataFrame
                                                                                   ) -> None:
    by = default_curve_by(guidellm_runs)
    assert curve_by_for_x(guidellm_runs, by, "batch_size") == (by, "")
    assert curve_by_for_x(guidellm_runs, by, "request_rate_rps") == (by, "")
    along_len, note = curve_by_for_x(guidellm_runs, by, "output_len_tok")
    assert "output_len_tok" not in along_len and along_len[-1] == "batch_size" and "one per batch" in note


def test_a_rate_sweep_fits_along_its_rate_in_its_own_words(guidellm_runs: pd.DataFrame) -> None:
    by = default_curve_by(guidellm_runs)
    table = fit_curves(guidellm_runs, by, x="request_rate_rps", intervals="none")
    summary = fits_summary(table, by)
    [ok] = summary.index[summary["success"]]
    assert summary.loc[ok, "configuration"] == "264/120 · arrival=constant" and summary.loc[ok, "n_batches"] == 9
    assert fit_counts_words(summary, x="request_rate_rps") == (
        "4 configuration(s): 1 fitted, 3 with fewer than 3 request rates (too few for a curve)")
    assert set(poor_fits(summary, 0.9, x="request_rate_rps")["reason"]) == {"too few request rates"}
    caveats = " ".join(fit_caveats(table))
    assert "batch" not in caveats and "request rate" in caveats
    assert x_axis_note("request_rate_rps").startswith("x: request rate (req/s); knees, b90 and b95 are request "
                                                      "rates in req/s")
    assert x_axis_note("batch_size") == ""
    # the default overlay draws what has points on this axis: the rate curve and the one Poisson point, not the
    # concurrency runs' configuration nor the offline one (no point along the rate)
    assert set(default_overlay(summary, 3)) == {"264/120 · arrival=constant", "264/120 · arrival=poisson"}


def test_the_default_overlay_never_picks_a_configuration_without_points() -> None:
    summary = pd.DataFrame({"configuration": ["a", "b", "c"], "r2": [np.nan, 0.99, np.nan],
                            "success": [False, True, False], "n_batches": [0, 5, 0], "n_points": [0, 5, 0]})
    assert default_overlay(summary, 3) == ["b"]
    assert default_overlay(summary.iloc[[0, 2]], 3) == []


def test_a_warning_every_file_gave_alike_is_one_caveat(formats_dir) -> None:  # noqa: ANN001
    # inference-perf's seven stages each say the device count is assumed: seven caveats had stood beside one curve
    from perfmodel.api import import_files
    from perfmodel.curve_tables import fit_import_warnings, import_caveats
    from perfmodel.importers.base import ImportMeta
    from perfmodel.store import Store

    files = sorted((formats_dir / "inference-perf").glob("*stage_*_lifecycle_metrics.json"))
    info, _ = import_files(files, meta=ImportMeta(hardware="h100-sxm", model="llama-3-8b", framework="vllm"),
                           store=Store())
    runs, issues = Store().runs(info.id), Store().issues(info.id)
    by = default_curve_by(runs)
    table = fit_curves(runs, by, x="request_rate_rps", intervals="none")
    [warned] = fit_import_warnings(runs, issues, table, by, x="request_rate_rps")
    devices = [w for w in warned if "'device_count'" in w]
    assert len(devices) == 1 and devices[0].startswith(f"{files[0].name}, {files[1].name} and 5 more file(s), "
                                                       "column 'device_count': ")
    # warnings that differ (each stage's rate not delivered) stay apart, each with its own file and row
    rates = [w for w in warned if "'request_rate_rps'" in w]
    assert len(rates) == 3 and len({w.split(",")[0] for w in rates}) == 3 and all(", row 1," in w for w in rates)
    assert len(import_caveats(["c"], [warned])) == len(warned) == 4
