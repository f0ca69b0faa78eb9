"""The Curves page, headless: AppTest on the bundled sample runs and on hand-made datasets.

The sample dataset (``sample_runs/perfmodel-tiny-llama_cpu-x86-2vcpu.csv`` alone,
4 configurations x 8 batch sizes x 3 repeats of a tiny model on a CPU) is imported by the app itself on start-up
(an empty store gets the samples), or beforehand by the test to know its id.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from perfmodel.api import import_files
from perfmodel.curve_tables import NO_PLATEAU
from perfmodel.plots import FAILED_FIT_META, KNEE_META
from perfmodel.store import Store
from perfmodel.ui import samples
from perfmodel.ui import state as K

REPO = Path(__file__).resolve().parents[1]
APP = str(REPO / "app.py")
PAGE = "pages/curves.py"
TIMEOUT_S = 60
TINY_SAMPLE = REPO / "sample_runs" / "perfmodel-tiny-llama_cpu-x86-2vcpu.csv"


@pytest.fixture(autouse=True)
def tiny_sample_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tiny-llama sample alone: sample_runs/ also holds launcher sweeps of other models, which would
    change the configurations these tests pin (a test that needs no sample points SAMPLE_DIR elsewhere)."""
    d = tmp_path / "tiny-sample"
    d.mkdir()
    (d / TINY_SAMPLE.name).symlink_to(TINY_SAMPLE)
    monkeypatch.setattr(samples, "SAMPLE_DIR", d)


def _curves(**query: str | list[str]) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT_S)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    return at.switch_page(PAGE).run()


def _no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def _figure(at: AppTest) -> dict:
    charts = at.get("plotly_chart")
    assert charts, "no plotly chart on the page"
    return json.loads(charts[0].proto.spec)


def _sample_id() -> str:
    names = samples.ensure_sample_data(Store())
    assert names == ["perfmodel-tiny-llama_cpu-x86-2vcpu.csv"]
    return Store().dataset(samples.SAMPLE_DATASET_NAME).id


def test_page_renders_sample_curves_with_knees_and_table() -> None:
    at = _curves()
    _no_exception(at)
    assert not at.error
    assert [t.value for t in at.title] == ["Curves"]
    # Sample: lengths 64/256 in x 32/128 out are the only varying columns.
    assert at.multiselect(key=K.CURVES_CONFIGS).value == ["64/32", "64/128", "256/32"]
    fig = _figure(at)
    knees = [t for t in fig["data"] if t.get("meta") == KNEE_META]
    assert len(knees) == 3 and all(t["x"] for t in knees)
    assert {t["name"] for t in knees} == {"knee · 64/32", "knee · 64/128", "knee · 256/32"}
    # Measured points carry error bars across the 3 repeats; fitted lines and bands are drawn.
    measured = [t for t in fig["data"] if t.get("meta") == "measured"]
    assert len(measured) == 3 and all(len(t["x"]) == 8 for t in measured)
    assert all(any(e > 0 for e in t["error_y"]["array"]) for t in measured)
    assert sum(t.get("meta") == "fit" for t in fig["data"]) == 3
    assert any(t.get("fill") == "tonexty" for t in fig["data"])
    table = at.dataframe[0].value
    assert len(table) == 4 and table["success"].all()
    assert table["configuration"].tolist()[:3] == ["64/32", "64/128", "256/32"]  # the overlaid ones first
    assert any(c.value == "Every configuration, the 3 on the chart first." for c in at.caption)
    assert {"configuration", "shape", "plateau_tok_s", "knees", "b90", "b95", "r2"} <= set(table.columns)
    assert at.get("download_button")
    assert at.query_params["config"] == ["64/32", "64/128", "256/32"]


def test_legend_lists_each_configuration_once_below_the_plot() -> None:
    # Guards: a legend of long labels beside the plot ate most of its width, and every configuration with a
    # knee was listed twice ("64/32" and "knee · 64/32"), so it grew twice as long.
    at = _curves()
    _no_exception(at)
    fig = _figure(at)
    entries = [t["name"] for t in fig["data"] if t.get("showlegend", True)]
    configs = at.multiselect(key=K.CURVES_CONFIGS).value
    assert [e for e in entries if e in configs] == configs
    assert not [e for e in entries if e.startswith("knee ·")]
    assert [e for e in entries if e not in configs] == ["knee (with its interval)", "batch at 90% / 95% of plateau"]
    legend = fig["layout"]["legend"]
    assert legend["orientation"] == "h" and legend["y"] < 0 and legend["yanchor"] == "top"


def test_fits_tables_head_columns_with_labels_and_units() -> None:
    # Guards: the Fits and Curves-to-review tables headed by raw names (plateau_ci, b90, n_batches, r2).
    at = _curves(shape="exp")
    _no_exception(at)
    assert "output throughput (tok/s) vs batch size" in " ".join(c.value for c in at.caption)
    for frame in at.dataframe[:2]:
        config = json.loads(frame.proto.columns)
        labels = {c: (config.get(c) or {}).get("label") or c for c in frame.value.columns}
        raw = [c for c, label in labels.items() if "_" in label or label in ("r2", "b90", "b95", "knees")]
        assert not raw, labels
    config = json.loads(at.dataframe[0].proto.columns)
    assert config["plateau_tok_s"]["label"] == "plateau c (tok/s)"
    assert config["plateau_ci"]["label"] == "plateau interval (tok/s)"
    assert config["b90"]["label"] == "batch at 90% of plateau" and config["r2"]["label"] == "R²"


def test_link_restores_grouping_selection_and_shape() -> None:
    ds = _sample_id()
    at = _curves(dataset=ds, by=["input_len_tok"], config=["in 256"], shape="exp", ci="asymptotic")
    _no_exception(at)
    assert at.multiselect(key=K.CURVES_BY).value == ["input_len_tok"]
    assert at.multiselect(key=K.CURVES_CONFIGS).value == ["in 256"]
    assert at.selectbox(key=K.CURVES_SHAPE).value == "exp"
    assert at.selectbox(key=K.CURVES_INTERVALS).value == "asymptotic"
    table = at.dataframe[0].value
    assert table["configuration"].tolist() == ["in 256", "in 64"]  # the linked overlay first
    assert set(table["shape"]) == {"exp"} and (table["n_points"] == 48).all()
    fig = _figure(at)
    assert [t["name"] for t in fig["data"] if t.get("meta") == "measured"] == ["in 256"]
    # Overlaying another configuration writes it into the link.
    at.multiselect(key=K.CURVES_CONFIGS).select("in 64").run()
    assert at.query_params["config"] == ["in 256", "in 64"]
    assert at.query_params["dataset"] == ds and at.query_params["shape"] == "exp"


def test_bad_values_in_link_fall_back_to_defaults() -> None:
    _sample_id()
    at = _curves(by="gpu_colour", config="nonsense", shape="cubic")
    _no_exception(at)
    assert "input_len_tok" in at.multiselect(key=K.CURVES_BY).value
    assert at.selectbox(key=K.CURVES_SHAPE).value == "auto"
    assert len(at.multiselect(key=K.CURVES_CONFIGS).value) == 3


def test_numbers_in_the_link_that_the_page_cannot_use_are_named() -> None:
    # n_boot=inf stopped the page with an OverflowError; r2_min=nan flagged a perfect fit as "R² < nan";
    # r2_min=7 became 0 without a word.
    _sample_id()
    at = _curves(n_boot="inf", r2_min="nan", ci="bootstrap")
    _no_exception(at)
    assert sorted(w.value for w in at.warning) == [
        "n_boot='inf' is not a whole number from 10 to 2,000: showing 200",
        "r2_min='nan' is not a number from 0 to 1: showing 0.9"]
    assert at.number_input(key=K.CURVES_N_BOOT).value == 200 and at.number_input(key=K.CURVES_R2_MIN).value == 0.9
    assert not any("nan" in s.value for s in at.success)
    at = _curves(r2_min="7", n_boot="100000")
    _no_exception(at)
    assert len(at.warning) == 2 and at.number_input(key=K.CURVES_R2_MIN).value == 0.9
    assert at.query_params["r2_min"] in ("0.9", ["0.9"])


def test_poor_fits_are_flagged_with_their_message() -> None:
    at = _curves()
    assert at.success and "R² ≥ 0.9" in at.success[0].value  # every sample curve fits well
    at.number_input(key=K.CURVES_R2_MIN).set_value(0.99).run()
    _no_exception(at)
    review = at.dataframe[1].value
    assert len(review) >= 1 and (review["reason"] == "R² < 0.99").all()
    assert (review["r2"] < 0.99).all() and review["message"].str.contains("converged").all()


def _store_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, **columns: object) -> None:
    """A store holding only these synthetic canonical runs (no sample data)."""
    monkeypatch.setattr(samples, "SAMPLE_DIR", tmp_path / "none")
    src = tmp_path / name
    n = max(len(v) for v in columns.values() if isinstance(v, list))
    pd.DataFrame({**columns, "source_format": "synthetic", "source_file": name,
                  "source_row": range(1, n + 1)}).to_csv(src, index=False)
    import_files([src], format="canonical", store=Store())


def test_too_few_batch_sizes_says_not_enough_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _store_only(tmp_path, monkeypatch, "two.csv",
                hardware=["h100-sxm"] * 4 + ["a100-80gb"] * 2, device_count=1, framework="vllm",
                model="llama-3-8b", input_len_tok=512.0, output_len_tok=128.0, load_kind="static_batch",
                batch_size=[1.0, 8.0, 1.0, 8.0, 4.0, 4.0],
                output_throughput_tok_s=[90.0, 600.0, 95.0, 610.0, 300.0, 320.0], repeat_idx=[0, 0, 1, 1, 0, 1])
    at = _curves()
    _no_exception(at)
    assert at.warning and "Not enough points" in at.warning[0].value
    table = at.dataframe[0].value
    assert len(table) == 2 and not table["success"].any()
    assert table["message"].str.contains("not enough").all()
    # Failed curves are listed for review; the measured points are still drawn, with no curve.
    assert len(at.dataframe[1].value) == 2
    assert at.dataframe[1].proto.placeholder == "—"  # a failed fit's R² is a dash, as in the Fits table, not "None"
    fig = _figure(at)
    assert [t.get("meta") for t in fig["data"]] == ["measured", "measured"]


def test_suspect_points_are_drawn_as_x_with_hover(suspect_dataset: None) -> None:
    # Llama-3-8B in bf16 on one H100 (3.35 TB/s) reads its 16 GB of weights at most ~209 times a second:
    # 3,000 tok/s at batch 8 is above 8 x 209 = 1,670, so that run is suspect; the others are not.
    at = _curves()
    _no_exception(at)
    sus = [t for t in _figure(at)["data"] if t.get("meta") == "suspect"]
    assert len(sus) == 1 and sus[0]["x"] == [8] and sus[0]["y"] == [3000]
    assert sus[0]["marker"]["symbol"] == "x" and "faster than the roofline bound" in sus[0]["hovertemplate"]
    assert any("1 run(s) faster than the roofline bound" in c.value for c in at.caption)


def test_suspect_points_are_drawn_along_the_chosen_axis(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Along the requests measured in flight the page drew no suspect marker at all (its markers sat at the batch).
    _store_only(tmp_path, monkeypatch, "s.csv", hardware="h100-sxm", device_count=1, framework="vllm",
                model="llama-3-8b", input_len_tok=512.0, output_len_tok=128.0, load_kind="concurrency",
                batch_size=[1.0, 4.0, 8.0, 16.0], measured_concurrency=[0.9, 3.7, 7.5, 14.8],
                output_throughput_tok_s=[90.0, 300.0, 3000.0, 900.0], repeat_idx=0)
    at = _curves(x="measured_concurrency")
    _no_exception(at)
    assert at.selectbox(key="curves.x").value == "measured_concurrency"
    sus = [t for t in _figure(at)["data"] if t.get("meta") == "suspect"]
    assert len(sus) == 1 and sus[0]["x"] == [7.5] and sus[0]["y"] == [3000]
    assert any("1 run(s) faster than the roofline bound" in c.value for c in at.caption)


def _known_runs_csv(path: Path) -> Path:
    """Four configurations (output 32/64/128/256): the first has repeats disagreeing by ~3.5x (a failed fit)."""
    rng = np.random.default_rng(0)
    rows = []
    for out_len in (32.0, 64.0, 128.0, 256.0):
        for batch in (1.0, 2.0, 4.0, 8.0, 16.0, 32.0):
            for rep in range(3):
                tput = (1000.0 - 900.0 * np.exp(-0.1 * batch)) * (1 + 0.02 * rng.standard_normal())
                if out_len == 32.0 and batch == 1.0:
                    tput *= (0.4, 1.0, 1.4)[rep]
                rows.append({"output_len_tok": out_len, "batch_size": batch, "repeat_idx": rep,
                             "output_throughput_tok_s": tput})
    df = pd.DataFrame(rows).assign(hardware="h100-sxm", device_count=1, framework="vllm", model="llama-3-8b",
                                   input_len_tok=512.0, load_kind="static_batch", source_format="synthetic",
                                   source_file="four.csv")
    df["source_row"] = np.arange(1, len(df) + 1)
    df.to_csv(path, index=False)
    return path


def test_default_overlay_skips_failed_fits_and_draws_a_chosen_one_dashed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Guards: the default overlay included a failed fit and drew its curve and band as if valid.
    monkeypatch.setattr(samples, "SAMPLE_DIR", tmp_path / "none")
    import_files([_known_runs_csv(tmp_path / "four.csv")], format="canonical", store=Store())
    at = _curves()
    _no_exception(at)
    table = at.dataframe[0].value
    assert table["success"].tolist() == [True, True, True, False]  # the three overlaid first
    assert table["message"].iloc[3].startswith("exp fit failed: repeats disagree by more than 3x")
    assert at.multiselect(key=K.CURVES_CONFIGS).value == ["512/64", "512/128", "512/256"]
    assert sum(t.get("meta") == "fit" for t in _figure(at)["data"]) == 3
    at.multiselect(key=K.CURVES_CONFIGS).select("512/32").run()
    _no_exception(at)
    failed = [t for t in _figure(at)["data"] if t.get("legendgroup") == "512/32"]
    assert [t.get("meta") for t in failed] == ["measured", FAILED_FIT_META]
    assert failed[1]["line"]["dash"] == "dash" and "fit failed" in failed[1]["name"]
    assert any("Dashed: 1 fit(s) failed (512/32)" in c.value for c in at.caption)


def test_loglin_shape_shows_no_knees_and_never_draws_below_zero() -> None:
    # Guards: Shape = loglin gave every configuration the same knee with a zero-width interval, b90/b95
    # of a curve without a plateau, and curves drawn below zero.
    ds = _sample_id()
    at = _curves(dataset=ds, shape="loglin")
    _no_exception(at)
    assert at.selectbox(key=K.CURVES_SHAPE).value == "loglin"
    table = at.dataframe[0].value
    assert (table["shape"] == "loglin").all()
    assert (table[["knees", "b90", "b95"]] == NO_PLATEAU).all().all()
    assert any("a log-linear curve has no plateau" in c.value for c in at.caption)
    fig = _figure(at)
    assert not [t for t in fig["data"] if t.get("meta") in (KNEE_META, "fraction")]
    drawn = [t for t in fig["data"] if t.get("meta") in ("fit", "band")]
    assert drawn and all(min(t["y"]) >= 0 for t in drawn)


def _many_configs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the sample's 4 configurations count as a large dataset (over the bootstrap threshold)."""
    from perfmodel import curves

    monkeypatch.setattr(curves, "BOOTSTRAP_MAX_CONFIGS", 3)


def _size_caption(at: AppTest) -> list[str]:
    return [c.value for c in at.caption if "by default for" in c.value]


def test_large_dataset_defaults_to_asymptotic_intervals_until_bootstrap_is_chosen(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Guards: LLM-Inference-Bench (1,202 configurations) took 16-40 s to first show, bootstrapping every one.
    _many_configs(monkeypatch)
    at = _curves()
    _no_exception(at)
    assert at.selectbox(key=K.CURVES_INTERVALS).value == "asymptotic"
    (caption,) = _size_caption(at)
    assert "4 configurations (more than 3)" in caption and "Choose **bootstrap**" in caption
    assert "intervals: asymptotic" in " ".join(c.value for c in at.caption)
    assert "ci" not in at.query_params  # a default: a copied link gets the default of the size it opens on
    table = at.dataframe[0].value
    assert len(table) == 4 and table["success"].all()
    # Fewer configurations (grouped by input length only: 2) bring bootstrap back, as nothing was chosen.
    at.multiselect(key=K.CURVES_BY).set_value(["input_len_tok"]).run()
    _no_exception(at)
    assert at.selectbox(key=K.CURVES_INTERVALS).value == "bootstrap" and not _size_caption(at)
    at.multiselect(key=K.CURVES_BY).set_value(["input_len_tok", "output_len_tok"]).run()
    assert at.selectbox(key=K.CURVES_INTERVALS).value == "asymptotic" and _size_caption(at)
    # A choice wins over the size: bootstrap stays, whatever the grouping, and goes into the link.
    at.selectbox(key=K.CURVES_INTERVALS).set_value("bootstrap").run()
    _no_exception(at)
    assert at.selectbox(key=K.CURVES_INTERVALS).value == "bootstrap" and not _size_caption(at)
    at.multiselect(key=K.CURVES_BY).set_value(["input_len_tok"]).run()
    at.multiselect(key=K.CURVES_BY).set_value(["input_len_tok", "output_len_tok"]).run()
    _no_exception(at)
    assert len(at.dataframe[0].value) == 4
    assert at.selectbox(key=K.CURVES_INTERVALS).value == "bootstrap" and not _size_caption(at)
    assert at.query_params["ci"] == "bootstrap"


def test_link_choice_of_intervals_wins_over_the_size_default(monkeypatch: pytest.MonkeyPatch) -> None:
    _many_configs(monkeypatch)
    ds = _sample_id()
    at = _curves(dataset=ds, ci="bootstrap")
    _no_exception(at)
    assert at.selectbox(key=K.CURVES_INTERVALS).value == "bootstrap" and not _size_caption(at)
    assert at.query_params["ci"] == "bootstrap"
    # A bad value in the link is no choice: the size decides.
    at = _curves(dataset=ds, ci="jackknife")
    _no_exception(at)
    assert at.selectbox(key=K.CURVES_INTERVALS).value == "asymptotic" and _size_caption(at)


def test_small_dataset_keeps_bootstrap_intervals() -> None:
    at = _curves()
    _no_exception(at)
    assert at.selectbox(key=K.CURVES_INTERVALS).value == "bootstrap" and not _size_caption(at)
    assert "ci" not in at.query_params


def test_a_cpu_curve_beside_a_gpu_curve_gets_a_log_throughput_axis(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(samples, "SAMPLE_DIR", REPO / "sample_runs")  # CPU and H200 sweeps
    at = _curves()
    _no_exception(at)
    ms = at.multiselect(key=K.CURVES_CONFIGS)
    ms.set_value(list(ms.options)).run()
    tops = {t["name"]: max(t["y"]) for t in _figure(at)["data"] if t.get("meta") == "measured"}
    slow, fast = min(tops, key=tops.get), max(tops, key=tops.get)
    assert tops[fast] > 30 * tops[slow]  # the samples' slowest CPU curve and fastest H200 curve
    at.multiselect(key=K.CURVES_CONFIGS).set_value([slow]).run()
    assert _figure(at)["layout"]["yaxis"].get("type") != "log"
    assert not any("logarithmic" in c.value for c in at.caption)
    at.multiselect(key=K.CURVES_CONFIGS).set_value([slow, fast]).run()
    _no_exception(at)
    assert _figure(at)["layout"]["yaxis"]["type"] == "log"
    assert any("logarithmic" in c.value for c in at.caption)


def test_an_emptied_overlay_stays_empty_until_the_grouping_changes() -> None:
    # A reviewer removed the last overlaid configuration and the three defaults came straight back.
    at = _curves()
    at.multiselect(key=K.CURVES_CONFIGS).set_value([]).run()
    _no_exception(at)
    assert at.multiselect(key=K.CURVES_CONFIGS).value == []
    assert not at.get("plotly_chart") and any("No configuration chosen" in i.value for i in at.info)
    at.run()
    assert at.multiselect(key=K.CURVES_CONFIGS).value == []
    # and its link reopens it empty (without config in the URL the default overlay came back)
    query = {k: v for k, v in at.query_params.items()}
    assert query["config"] in ("(none)", ["(none)"])
    again = _curves(**{k: v for k, v in query.items()})
    _no_exception(again)
    assert again.multiselect(key=K.CURVES_CONFIGS).value == [] and not again.get("plotly_chart")
    by = at.multiselect(key=K.CURVES_BY)
    by.set_value(list(by.value)[:-1]).run()  # another grouping: its own default overlay
    _no_exception(at)
    assert at.multiselect(key=K.CURVES_CONFIGS).value


def test_import_warning_on_the_batch_axis_stands_beside_the_fit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                formats_dir: Path) -> None:
    # gpu_conc's H200: 5 of 10 concurrency levels had about 20 requests in flight where 64-1,024 were configured;
    # the page had shown knee 52.3 and b90 26 with no caveat
    monkeypatch.setattr(samples, "SAMPLE_DIR", tmp_path / "none")
    import_files([formats_dir / "custom-concurrency-json" / "gpu_conc__H200_benchmark_summary_20250814_182107.json"],
                 store=Store())
    at = _curves()
    _no_exception(at)
    warnings = [w.value for w in at.warning]
    assert any("requests in flight than configured" in w and w.startswith("Import warning for") for w in warnings)


def test_a_rise_between_measured_batches_reads_as_a_range(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A100-40GB / DeepSpeed-MII / Llama-2-7B 2048/2048 (LLM-Inference-Bench): flat from batch 16; b90 had read
    # 2.72 [2.62, 2.82]
    _store_only(tmp_path, monkeypatch, "gap.csv", hardware="a100-40gb", device_count=1, framework="deepspeed-mii",
                model="llama-2-7b", input_len_tok=2048.0, output_len_tok=2048.0, load_kind="static_batch",
                batch_size=[1.0, 16.0, 32.0, 64.0],
                output_throughput_tok_s=[59.11264725337496, 513.4978786200209, 443.57693797860445,
                                         464.51767480862184])
    at = _curves()
    _no_exception(at)
    row = at.dataframe[0].value.iloc[0]
    assert row["b90"].startswith("between 1 and 16") and row["knees"].startswith("between 1 and 16"), row


# --------------------------------------------------------------------------- the x axis: batch, request rate, in flight


def _import_real(files: list[Path], **meta: str) -> str:
    from perfmodel.importers.base import ImportMeta

    info, _ = import_files(files, meta=ImportMeta(**meta), store=Store())
    return info.id


def test_a_request_rate_sweep_opens_on_its_request_rate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        formats_dir: Path) -> None:
    # inference-perf's 7 stages at 1-183 req/s record no batch: the page had said there was no curve to fit, where
    # `perfmodel fit --x request_rate_rps` fits one
    monkeypatch.setattr(samples, "SAMPLE_DIR", tmp_path / "none")
    ds = _import_real(sorted((formats_dir / "inference-perf").glob("*stage_*_lifecycle_metrics.json")),
                      hardware="h100-sxm", model="llama-3-8b", framework="vllm")
    at = _curves(dataset=ds)
    _no_exception(at)
    assert not any("no saturation curve" in w.value for w in at.warning)
    x = at.selectbox(key="curves.x")
    assert x.value == "request_rate_rps" and x.options == ["request rate (req/s)"]
    assert at.query_params["x"] == "request_rate_rps"
    captions = " ".join(c.value for c in at.caption)
    assert "output throughput (tok/s) vs request rate (req/s)" in captions
    assert "knees, b90 and b95 are request rates in req/s" in captions and "KV-full" in captions
    table = at.dataframe[0].value
    assert len(table) == 1 and bool(table["success"].iloc[0]) and "kv_full_batch" not in table.columns
    assert "batch" not in table["b90"].iloc[0] and "request rate" in table["message"].iloc[0]
    fig = _figure(at)
    assert "request rate" in fig["layout"]["xaxis"]["title"]["text"]
    measured = [t for t in fig["data"] if t.get("meta") == "measured"]
    assert len(measured) == 1 and max(measured[0]["x"]) > 180  # the rates, not batches
    assert at.toggle(key=K.CURVES_LOG_X).label == "log request rate axis"


def test_a_mixed_sweep_offers_each_load_and_the_link_keeps_the_choice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                      formats_dir: Path) -> None:
    # GuideLLM's llm-d sweep: 4 concurrency runs, 10 at a request rate (constant and Poisson), 2 offline bursts
    monkeypatch.setattr(samples, "SAMPLE_DIR", tmp_path / "none")
    ds = _import_real([formats_dir / "guidellm-derived-csv" / "guidellm-pd-disaggregation__all-benchmarks.csv"],
                      hardware="t4", model="qwen3-0.6b")
    at = _curves(dataset=ds)
    _no_exception(at)
    x = at.selectbox(key="curves.x")
    assert x.value == "batch_size"
    assert x.options == ["batch size (sequences)", "request rate (req/s)", "measured concurrency (requests)"]
    captions = " ".join(c.value for c in at.caption)
    assert "Not on these curves: 10 run(s) with a request rate and no batch size" in captions
    # only the curve with points is overlaid: the three configurations with none on this axis drew nothing
    assert at.multiselect(key=K.CURVES_CONFIGS).value == ["264/120"]
    at.selectbox(key="curves.x").set_value("request_rate_rps").run()
    _no_exception(at)
    assert at.query_params["x"] == "request_rate_rps"
    # the batch curve has no point along the rate: the rate's curve and its one Poisson point take its place
    assert set(at.multiselect(key=K.CURVES_CONFIGS).value) == {"264/120 · arrival=constant",
                                                              "264/120 · arrival=poisson"}
    table = at.dataframe[0].value.set_index("configuration")
    assert table.loc["264/120 · arrival=constant", "success"] and table.loc["264/120 · arrival=constant",
                                                                            "n_batches"] == 9
    review = at.dataframe[1].value
    assert set(review["reason"]) == {"too few request rates"}
    assert "had too few request rates to fit" in " ".join(c.value for c in at.caption)
    # the link reopens the rate axis
    again = _curves(dataset=ds, x="request_rate_rps")
    _no_exception(again)
    assert again.selectbox(key="curves.x").value == "request_rate_rps"
    assert again.dataframe[0].value["success"].sum() == 1


def test_a_link_to_an_axis_the_data_lack_says_so() -> None:
    at = _curves(dataset=_sample_id(), x="request_rate_rps")
    _no_exception(at)
    x = at.selectbox(key="curves.x")
    assert x.value == "batch_size" and x.options == ["batch size (sequences)"] and x.disabled
    assert any("'request_rate_rps' is not among the choices" in w.value for w in at.warning)
