"""The What-if page, headless: trains on the sample data, restores a shared link, warns out of domain,
links to the Attribution page with the same inputs; and the core it draws from (perfmodel.whatif)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from perfmodel import physics
from perfmodel import whatif as core
from perfmodel.errors import ValidationError
from perfmodel.store import Store
from perfmodel.ui import samples
from perfmodel.ui import whatif as W

REPO = Path(__file__).resolve().parents[1]
APP = str(REPO / "app.py")
PAGE = "pages/whatif.py"
TIMEOUT_S = 90
K = W.KEYS


TINY_SAMPLE = REPO / "sample_runs" / "perfmodel-tiny-llama_cpu-x86-2vcpu.csv"


@pytest.fixture
def tiny_sample_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tiny-llama sample alone: the page's defaults come from the sample's most measured configuration,
    which a new file in sample_runs/ can change (the 1-and-2-thread sweep at 128/32 has more rows)."""
    d = tmp_path / "tiny-sample"
    d.mkdir()
    (d / TINY_SAMPLE.name).symlink_to(TINY_SAMPLE)
    monkeypatch.setattr(samples, "SAMPLE_DIR", d)


THREADS_SAMPLE = REPO / "sample_runs" / "perfmodel-tiny-llama_cpu-x86-2vcpu_threads-1-2_local-sweep.csv"
LLAMA_CPP_SAMPLE = REPO / "sample_runs" / "perfmodel-tiny-llama_cpu-x86-2vcpu_llama-server.csv"


def _samples_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *files: Path) -> None:
    d = tmp_path / "samples"
    d.mkdir()
    for f in files:
        (d / f.name).symlink_to(f)
    monkeypatch.setattr(samples, "SAMPLE_DIR", d)


@pytest.fixture
def threads_sample_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The 1-and-2-thread sweep alone (36 runs of one configuration, 18 at each thread count)."""
    _samples_only(tmp_path, monkeypatch, THREADS_SAMPLE)


@pytest.fixture
def threads_and_llama_cpp_samples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The thread sweep (transformers, threads 1 and 2) beside llama-server runs that record no threads."""
    _samples_only(tmp_path, monkeypatch, THREADS_SAMPLE, LLAMA_CPP_SAMPLE)


def _sample_id() -> str:
    samples.ensure_sample_data(Store())
    return Store().dataset(samples.SAMPLE_DATASET_NAME).id


def _whatif(**query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT_S)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    return at.switch_page(PAGE).run()


def _train(at: AppTest) -> AppTest:
    return at.button(key=W.P + "train").click().run()


def _no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def _table_in_seconds(at: AppTest) -> pd.DataFrame:
    """The predictions table the page shows, its TTFT and TPOT (shown in ms) back in seconds (end-to-end latency
    is shown in seconds)."""
    t = at.dataframe[0].value.copy()
    ms = [c for c in t.columns if c.endswith("_ms")]
    assert not [c for c in ms if c.startswith("pred_e2e_")]  # end-to-end is shown in seconds
    t[ms] = t[ms] / 1e3
    return t.rename(columns={c: c[:-3] + "_s" for c in ms})


def _traces(at: AppTest) -> list[dict]:
    charts = at.get("plotly_chart")
    assert charts, "no chart"
    return json.loads(charts[0].proto.spec)["data"]


@pytest.mark.usefixtures("tiny_sample_only")
def test_page_trains_on_sample_and_draws_curve_band_and_measured_points() -> None:
    at = _whatif()
    _no_exception(at)
    assert [t.value for t in at.title] == ["What-if"]
    # Defaults from the tiny sample: its most measured configuration and batch range 1..128.
    assert at.selectbox(key=K["hardware"]).value == "cpu-x86-2vcpu"
    assert at.selectbox(key=K["model"]).value == "perfmodel-tiny-llama"
    assert at.number_input(key=K["batch_min"]).value == 1 and at.number_input(key=K["batch_max"]).value == 128
    assert not at.get("plotly_chart")  # nothing until the model is trained
    assert not at.status
    at = _train(at)
    _no_exception(at)
    assert not at.error
    # Training shows its stages in a status box with a progress bar, not a bare spinner.
    [box] = at.status
    assert box.label.startswith("Training roofline-gbm on") and "done in" in box.label, box.label
    assert box.state == "complete"
    [bar] = at.progress
    assert bar.value == 100 and bar.text.startswith("done"), bar.text
    # The model in words (it was a raw file path).
    assert any(c.value.startswith("roofline-gbm trained today at ") and " UTC in " in c.value
               and "saved as JSON" in c.value for c in at.caption)
    # the button was drawn before the model existed: it read "Train" (primary) until the next interaction
    assert at.button(key=W.P + "train").label == "Retrain roofline-gbm"
    assert at.button(key=W.P + "train").proto.type == "secondary"
    traces = _traces(at)
    metas = [t.get("meta") for t in traces]
    assert metas.count("band") == 2 and "prediction" in metas and "measured" in metas
    assert "roofline" in metas  # at the fp32 the sample ran (the catalog has no bf16 peak for its CPU)
    # The Roofline bound tile says why it is n/a only where it is: its help had said "n/a: the catalog lacks a
    # figure ..." beside a value.
    [roof] = [m for m in at.metric if m.label == "Roofline bound"]
    assert roof.value.endswith(" tok/s") and roof.proto.help == W.ROOFLINE_HELP and "n/a" not in roof.proto.help
    pred = next(t for t in traces if t.get("meta") == "prediction")
    assert pred["x"] == [1, 2, 4, 8, 16, 32, 64, 128]
    table = at.dataframe[0].value
    assert len(table) == 8 and (table["pred_lower"] <= table["pred_throughput_tok_s"]).all()
    # On 96 sample rows the kNN cut is tight: some batches between measured ones may fall outside it.
    assert table["in_domain"].any()
    assert bool(at.warning) == (not table["in_domain"].all())
    assert at.get("download_button")
    # the download names its band level beside the band (it had not); none where there is no band
    import io

    from _predict_data import synthetic_runs

    runs = synthetic_runs(noise=0.02)
    point = {c: runs[c].iloc[0] for c in ("hardware", "model", "framework", "input_len_tok", "output_len_tok",
                                          "device_count")}
    for name, want in (("roofline-gbm", 0.8), ("linear", None)):
        model, rows = core.fit_whatif_model(runs, name)
        csv = pd.read_csv(io.BytesIO(W.result_csv(core.whatif(model, rows, point, [1.0, 2.0], level=0.8))))
        assert list(csv.columns).index("level") == list(csv.columns).index("pred_upper") + 1
        assert (csv["level"] == want).all() if want else csv["level"].isna().all(), name
    # The Confidence tile says what the number is for the predictor shown (the three kinds differ).
    [tile] = [m for m in at.metric if m.label == "Confidence"]
    assert tile.proto.help == W.confidence_help("roofline-gbm", core.LOW_CONFIDENCE) and "calibrated" in tile.proto.help
    assert "nearest-neighbour" in W.confidence_help("ala", 0.2) and "no confidence" in W.confidence_help("xgboost", 0.2)
    # Every input is in the URL.
    qp = dict(at.query_params)
    for name in ("hardware", "model", "framework", "input_len", "output_len", "device_count", "batch",
                 "batch_min", "batch_max", "level", "predictor", "keep_suspect", "log_x", "dataset"):
        assert name in qp, name


def test_shared_link_restores_every_input_and_far_query_is_out_of_domain() -> None:
    ds = _sample_id()
    link = {"dataset": ds, "hardware": "cpu-x86-2vcpu", "model": "perfmodel-tiny-llama",
            "framework": "transformers", "input_len": "2000", "output_len": "32", "device_count": "1",
            "batch_min": "4", "batch_max": "2048", "batch": "512", "level": "0.8",
            "predictor": "roofline-gbm", "keep_suspect": "1", "log_x": "0"}
    at = _whatif(**link)
    _no_exception(at)
    assert at.selectbox(key=K["hardware"]).value == "cpu-x86-2vcpu"
    assert at.selectbox(key=K["framework"]).value == "transformers"
    assert at.number_input(key=K["input_len_tok"]).value == 2000  # within the tiny model's context of 2,048
    assert at.number_input(key=K["output_len_tok"]).value == 32
    assert at.number_input(key=K["batch_min"]).value == 4 and at.number_input(key=K["batch_max"]).value == 2048
    assert at.session_state[K["level"]] == 0.8 and at.checkbox(key=K["keep_suspect"]).value is True
    assert at.toggle(key=K["log_x"]).value is False  # the axis was left out of the link
    assert at.selectbox(key=K["predictor"]).value == "roofline-gbm"
    at = _train(at)
    _no_exception(at)
    assert at.selectbox(key=K["batch_size"]).value == 512
    warning = " ".join(w.value for w in at.warning)
    assert "Out of domain" in warning
    table = at.dataframe[0].value
    out = [f"{b:g}" for b in table.loc[~table["in_domain"].astype(bool), "batch_size"]]
    assert f"**Out of domain** at batch {', '.join(out[:8])}" in warning and f"({len(out)} of 10)" in warning
    sample = pd.concat([pd.read_csv(f, usecols=["input_len_tok", "batch_size"]) for f in samples.sample_files()])
    batches = sample["batch_size"]
    # roofline-gbm counts a batch up to twice the largest trained one in its domain: the reasons say so.
    grid = (4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048)
    far = [b for b in grid if b > 2 * batches.max()]
    near = [b for b in grid if batches.max() < b <= 2 * batches.max()]
    trained = f"the range of all training runs ({batches.min():g}-{batches.max():g})"
    assert f"batch {', '.join(map(str, far))} more than twice outside {trained}" in warning
    assert f"batch {', '.join(map(str, near))} beyond {trained}, but within twice of it: extrapolated" in warning
    pred = next(t for t in _traces(at) if t.get("meta") == "prediction")
    assert "circle-open" in pred["marker"]["symbol"]
    # The link survives the rerun unchanged (same inputs written back).
    assert {k: at.query_params[k][0] if isinstance(at.query_params[k], list) else at.query_params[k]
            for k in link} == link


@pytest.mark.usefixtures("tiny_sample_only")
def test_a_link_batch_off_the_grid_is_shown_and_one_outside_the_range_is_named() -> None:
    ds = _sample_id()
    base = {"dataset": ds, "batch_min": "1", "batch_max": "128"}
    # Between the grid's powers of two: it joins the grid, is predicted and explained, and stays in the link.
    at = _train(_whatif(**base, batch="100"))
    _no_exception(at)
    assert not [w for w in at.warning if "batch range" in w.value]
    assert at.selectbox(key=K["batch_size"]).value == 100
    assert at.selectbox(key=K["batch_size"]).options == ["1", "2", "4", "8", "16", "32", "64", "100", "128"]
    assert 100.0 in at.dataframe[0].value["batch_size"].tolist()
    assert at.metric[0].label == "Predicted at batch 100"
    assert at.query_params["batch"] in ("100", ["100"])
    # Outside the range: the nearer end, and a warning naming the parameter and the range.
    at = _whatif(**base, batch="4096")
    _no_exception(at)
    msg = [w.value for w in at.warning if "batch range" in w.value]
    assert msg == ["batch=4096 lies outside the batch range 1-128 (batch_min, batch_max): showing batch 128"]
    assert at.session_state[K["batch_size"]] == 128
    # A change of range afterwards moves the batch quietly (the link's batch was placed once).
    at.number_input(key=K["batch_max"]).set_value(64).run()
    _no_exception(at)
    assert at.session_state[K["batch_size"]] == 64 and not [w for w in at.warning if "batch range" in w.value]
    # A link naming a batch but no range: the dataset's default range widens to take it in, no warning.
    at = _whatif(dataset=ds, batch="4096")
    _no_exception(at)
    assert not [w for w in at.warning if "batch range" in w.value]
    assert at.session_state[K["batch_size"]] == 4096 and at.number_input(key=K["batch_max"]).value == 4096
    assert at.query_params["batch_max"] in ("4096", ["4096"])


@pytest.mark.usefixtures("threads_sample_only")
def test_a_setting_the_dataset_varies_is_chosen_predicted_at_and_kept_in_the_link() -> None:
    ds = _sample_id()
    at = _whatif(dataset=ds)
    _no_exception(at)
    threads = at.selectbox(key=K["fw_num_threads"])
    # Both thread counts were measured for the configuration, 18 runs each: the tie goes to the faster (one
    # thread: two ran slower on the 2-vCPU VM).
    assert threads.label == "Threads" and threads.options == ["1", "2"] and threads.value == 1.0
    assert not [s for s in at.selectbox if s.key == K["fw_n_batch"]]  # the sample has no n_batch
    assert at.query_params["num_threads"] in ("1", ["1"]) and "n_batch" not in at.query_params
    at = _train(at)
    _no_exception(at)
    one = _table_in_seconds(at).set_index("batch_size")
    assert (one["fw_num_threads"] == 1.0).all()
    sample = pd.read_csv(THREADS_SAMPLE)
    measured = next(t for t in _traces(at) if t.get("meta") == "measured")
    assert len(measured["x"]) == (sample["fw_num_threads"] == 1).sum() == 18  # not both thread counts pooled
    assert any(c.value.startswith("18 measured run(s) of this hardware, model and lengths at threads 1")
               for c in at.caption)
    at = at.selectbox(key=K["fw_num_threads"]).set_value(2.0).run()
    _no_exception(at)
    two = _table_in_seconds(at).set_index("batch_size")
    assert (two["fw_num_threads"] == 2.0).all()
    assert at.query_params["num_threads"] in ("2", ["2"])
    measured = next(t for t in _traces(at) if t.get("meta") == "measured")
    at_two = sample[sample["fw_num_threads"] == 2]
    assert sorted(measured["y"]) == pytest.approx(sorted(at_two["output_throughput_tok_s"]))
    # On this 2-vCPU VM two torch threads ran 2-4x slower than one (sample_runs/README.md); so do the predictions.
    assert (one["pred_throughput_tok_s"] > 1.2 * two["pred_throughput_tok_s"]).all()
    # A shared link reopens the 2-thread curve (the model trained above is on disk).
    at = _whatif(dataset=ds, num_threads="2")
    _no_exception(at)
    assert at.selectbox(key=K["fw_num_threads"]).value == 2.0 and not at.warning
    np.testing.assert_allclose(_table_in_seconds(at).set_index("batch_size")["pred_throughput_tok_s"],
                               two["pred_throughput_tok_s"])
    # A value the configuration never ran at, or no number at all, falls back to its default and says so.
    at = _whatif(dataset=ds, num_threads="3")
    _no_exception(at)
    assert [w.value for w in at.warning if "num_threads" in w.value] == [
        "num_threads='3' was not measured for cpu-x86-2vcpu · perfmodel-tiny-llama · transformers (measured: 1, 2): "
        "showing 1, the configuration's default"]
    assert at.selectbox(key=K["fw_num_threads"]).value == 1.0 and at.query_params["num_threads"] in ("1", ["1"])
    at = _whatif(dataset=ds, num_threads="many")
    _no_exception(at)
    assert [w.value for w in at.warning if "num_threads" in w.value] == [
        "num_threads='many' is not a number or unset: showing 1, the configuration's default"]


@pytest.mark.usefixtures("threads_and_llama_cpp_samples")
def test_a_setting_is_offered_only_for_a_configuration_whose_runs_record_it() -> None:
    ds = _sample_id()
    link = {"dataset": ds, "hardware": "cpu-x86-2vcpu", "model": "perfmodel-tiny-llama", "framework": "llama.cpp",
            "input_len": "64", "output_len": "64"}
    at = _whatif(**link, num_threads="1")
    _no_exception(at)
    # llama-server's runs record no thread count: no widget, nothing in the link, and the link's value is named.
    assert not [s for s in at.selectbox if s.key == K["fw_num_threads"]]
    assert "num_threads" not in at.query_params
    assert [w.value for w in at.warning if "num_threads" in w.value] == [
        "num_threads='1' does not apply: the runs of cpu-x86-2vcpu · perfmodel-tiny-llama · llama.cpp do not "
        "record threads, so the what-if leaves it out"]
    # The transformers runs of the same hardware and model do: the widget appears at their default, quietly.
    at = at.selectbox(key=K["framework"]).set_value("transformers").run()
    _no_exception(at)
    assert at.selectbox(key=K["fw_num_threads"]).options == ["1", "2"]
    assert at.selectbox(key=K["fw_num_threads"]).value == 1.0 and not at.warning
    assert at.query_params["num_threads"] in ("1", ["1"])
    # A combination never measured offers its framework's values: the transformers runs' 1 and 2, not the
    # llama-server runs' unset, which a link's "unset" is then told.
    at = _page(**{**link, "hardware": "h200", "framework": "transformers"}, num_threads="unset")
    _no_exception(at)
    threads = at.selectbox(key=K["fw_num_threads"])
    assert threads.options == ["1", "2"] and threads.value == 1.0
    assert at.query_params["num_threads"] in ("1", ["1"])
    assert [w.value for w in at.warning if "num_threads" in w.value] == [
        "num_threads='unset' is not among the values measured with transformers elsewhere (1, 2): showing 1, the "
        "most frequent elsewhere"]


def _page(**query: str) -> AppTest:
    """The What-if page opened on its own URL (``/whatif?...``), as a browser does: the app's default page does
    not run first. It cannot draw the Attribution link, so use it only for what shows before training."""
    at = AppTest.from_file(str(REPO / PAGE), default_timeout=TIMEOUT_S)
    for k, v in query.items():
        at.query_params[k] = v
    return at.run()


@pytest.mark.usefixtures("tiny_sample_only")
def test_every_link_value_the_page_cannot_use_is_named_with_what_is_shown_instead() -> None:
    ds = _sample_id()
    # Reviewer's link: each bad value silently became the first option ("NVIDIA A100 SXM4 40GB", "Aquila-7B").
    at = _page(dataset=ds, hardware="zz9", model="Llama-2-13B", predictor="bogus", keep_suspect="maybe",
               input_len="1e9", level="0.5", device_count="1.5")
    _no_exception(at)
    # An unknown hardware falls back to the dataset's default point, not to the catalog's first entry; a
    # catalog display name resolves to its entry.
    assert at.selectbox(key=K["hardware"]).value == "cpu-x86-2vcpu"
    assert at.selectbox(key=K["model"]).value == "llama-2-13b"
    assert at.selectbox(key=K["predictor"]).value == "roofline-gbm"
    assert at.checkbox(key=K["keep_suspect"]).value is False
    assert at.number_input(key=K["input_len_tok"]).value == 64 and at.session_state[K["level"]] == 0.9
    warnings = sorted(w.value for w in at.warning)
    assert warnings == sorted([
        "hardware='zz9' is neither in the hardware catalog nor in this dataset: showing cpu-x86-2vcpu, "
        "the dataset's default",
        "predictor='bogus' is not one of roofline-gbm, ala, xgboost, random-forest, linear: showing roofline-gbm",
        "keep_suspect='maybe' is not 1 or 0 (true or false): showing 0 (suspect points left out)",
        "input_len='1e9' is not a number from 0 to 10,000,000: showing 64",
        "level='0.5' is not one of 0.8, 0.9, 0.95: showing 0.9",
        "device_count='1.5' is not a whole number from 1 to 1,024: showing 1",  # 1.5 GPUs had been predicted
    ])
    assert at.query_params["hardware"] in ("cpu-x86-2vcpu", ["cpu-x86-2vcpu"])
    # A hardware alias in another case is accepted quietly.
    at = _page(dataset=ds, hardware="H200")
    _no_exception(at)
    assert at.selectbox(key=K["hardware"]).value == "h200" and not at.warning
    # So is a framework: "Transformers" had stayed as written, a framework the dataset never ran
    at = _page(dataset=ds, hardware="H200", framework="Transformers")
    _no_exception(at)
    assert at.selectbox(key=K["framework"]).value == "transformers" and not at.warning
    assert at.selectbox(key=K["framework"]).options.count("transformers") == 1
    at = _page(dataset=ds, framework="TensorRT-LLM")  # open-ended, written as the catalog writes it
    assert at.selectbox(key=K["framework"]).value == "tensorrt-llm"
    # A batch range the wrong way round names the link parameters in words, not "column 'batch_min'".
    at = _page(dataset=ds, batch_min="64", batch_max="8")
    _no_exception(at)
    error = " ".join(e.value for e in at.error)
    assert "the smallest batch (batch_min=64) is larger than the largest (batch_max=8)" in error
    assert "column" not in error


@pytest.mark.usefixtures("tiny_sample_only")
def test_lengths_beyond_the_models_context_are_warned_about_and_the_inputs_have_maxima() -> None:
    ds = _sample_id()
    # perfmodel-tiny-llama holds 2048 tokens (max_context in the catalog).
    at = _whatif(dataset=ds, input_len="4000", output_len="64")
    _no_exception(at)
    assert [w.value for w in at.warning if "context length" in w.value] == [
        "input length 4,000 + output length 64 = 4,064 tokens exceed the context length of perfmodel-tiny-llama, "
        "2,048 tokens (input_len, output_len; max_context in the model catalog): the model cannot serve such a "
        "request, so the prediction and its latencies describe no real run"]
    assert at.number_input(key=K["input_len_tok"]).value == 4000  # warned about, not changed
    at = _whatif(dataset=ds, input_len="1984", output_len="64")
    assert not [w for w in at.warning if "context length" in w.value]
    for key, top in (("input_len_tok", core.MAX_LENGTH_TOK), ("output_len_tok", core.MAX_LENGTH_TOK),
                     ("device_count", core.MAX_DEVICES)):
        assert at.number_input(key=K[key]).proto.max == top


def test_an_unmeasured_combination_with_low_confidence_is_flagged_and_its_ttft_fits_the_latency() -> None:
    # Reviewer's link: each value is in the sample, the combination is not. It predicted 1.48 M tok/s,
    # confidence 0.05, end-to-end latency 0.691 ms against a TTFT of 236 ms, and warned of nothing.
    # The page now warns; and since the TTFT model learns the TTFT relative to the prefill's physical
    # floor (not per prefilled token, which carried the CPU's rate to the GPU), the TTFT no longer
    # exceeds the latency (the warning for that case is tested on its function below).
    link = {"dataset": _sample_id(), "hardware": "h200", "model": "perfmodel-tiny-llama", "framework": "llama.cpp",
            "input_len": "64", "output_len": "64", "batch": "16"}
    at = _train(_whatif(**link))
    _no_exception(at)
    table = _table_in_seconds(at)
    notes = " ".join(n.value for n in [*at.warning, *at.info])
    assert ("h200 · perfmodel-tiny-llama · llama.cpp was never measured together: the prediction transfers "
            "from other combinations") in notes
    low = table["confidence"] < core.LOW_CONFIDENCE
    assert ("confidence below 0.2 at batch" in notes) == bool(low.any())
    if low.any():  # a low confidence is a warning, not an info box
        assert any("confidence below 0.2" in w.value for w in at.warning)
    at16 = table.set_index("batch_size").loc[16.0]
    assert 0 < at16["pred_ttft_s"] < at16["pred_e2e_latency_s"]
    # the TTFT's physical floor: 16 prompts of 64 tokens on the H200, or one read of the weights
    roof = physics.roofline(pd.DataFrame([{**{k: link[k] for k in ("hardware", "model", "framework")},
                                           "device_count": 1, "input_len_tok": 64.0, "output_len_tok": 64.0,
                                           "batch_size": 16.0}])).iloc[0]
    assert at16["ttft_floor_s"] == pytest.approx(roof["ttft_s_min"])
    assert at16["ttft_floor_s"] == pytest.approx(max(roof["prefill_s_min"], roof["weight_bytes"] / roof["mem_bw_bps"]))
    ttft_help = next(m.help for m in at.metric if m.label == "TTFT")
    assert f"Physical floor: {W.seconds(at16['ttft_floor_s'])}" in ttft_help
    assert not [w.value for w in at.warning if "exceeds the predicted end-to-end latency" in w.value]
    # Tiles: compact where large, and the bound has its unit.
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Predicted at batch 16"] == f"{W.rate(at16['pred_throughput_tok_s'])} tok/s"
    assert metrics["Roofline bound"] == f"{W.rate(at16['roofline_tok_s'])} tok/s"
    assert all(len(v) <= 20 for v in metrics.values()), metrics


@pytest.mark.usefixtures("tiny_sample_only")
def test_the_predictions_table_has_labels_units_and_precision() -> None:
    at = _train(_whatif(dataset=_sample_id()))
    _no_exception(at)
    frame = at.dataframe[0]
    config = json.loads(frame.proto.columns)
    assert config["pred_throughput_tok_s"]["label"] == "Output throughput (tok/s)"
    assert config["pred_throughput_tok_s"]["type_config"]["format"] == "%,.1f"
    assert config["confidence"]["type_config"]["format"] == "%.2f"
    # End-to-end in seconds (a 1024-token answer at batch 256 read 1,660,000 ms), TTFT and TPOT in milliseconds.
    assert config["pred_e2e_latency_s"]["label"] == "E2E latency (s)"
    assert config["ttft_floor_ms"]["label"] == "TTFT floor (ms)"  # named in its unit: the table's CSV says ms
    v = frame.value  # Little's law in seconds
    np.testing.assert_allclose(v["pred_e2e_latency_s"],
                               v["batch_size"] * v["output_len_tok"] / v["pred_throughput_tok_s"], rtol=1e-6)
    assert config["roofline_tok_s"]["label"] == "Roofline bound (tok/s)"
    shown = list(frame.proto.column_order)
    assert shown[:2] == ["batch_size", "pred_throughput_tok_s"] and "hardware" not in shown
    assert all(c in config for c in shown)
    assert "hardware" in frame.value.columns  # the data (and the CSV) keep every column


def test_a_link_without_a_dataset_keeps_its_inputs_on_the_default_dataset() -> None:
    # A hand-made link (or one cut short) names the configuration but no dataset. Opened in a new browser
    # session the What-if page runs first, before any dataset is selected: the inputs must apply to the
    # dataset it opens on, not give way to that dataset's defaults (llama.cpp, 64/64 here).
    _sample_id()
    at = AppTest.from_file(str(REPO / PAGE), default_timeout=TIMEOUT_S)
    for k, v in {"hardware": "cpu-x86-2vcpu", "model": "perfmodel-tiny-llama", "framework": "transformers",
                 "input_len": "256", "output_len": "128", "batch_max": "64"}.items():
        at.query_params[k] = v
    at.run()
    _no_exception(at)
    assert at.selectbox(key=K["framework"]).value == "transformers"
    assert at.number_input(key=K["input_len_tok"]).value == 256
    assert at.number_input(key=K["output_len_tok"]).value == 128
    assert at.number_input(key=K["batch_max"]).value == 64


def test_the_batch_where_the_kv_cache_is_full_is_drawn_and_explained() -> None:
    # The bundled H200 sweep: an 8B Llama-shaped model, 512 + 512 tokens. 141 GB hold about 826 such
    # sequences beside the 16 GB of weights; the curve is asked up to batch 2048.
    link = {"dataset": _sample_id(), "hardware": "h200", "model": "perfmodel-large-llama",
            "framework": "transformers", "input_len": "512", "output_len": "512", "device_count": "1",
            "batch_min": "1", "batch_max": "2048", "batch": "256"}
    at = _train(_whatif(**link))
    _no_exception(at)
    q = pd.DataFrame({"hardware": ["h200"], "model": ["perfmodel-large-llama"], "device_count": [1],
                      "input_len_tok": [512.0], "output_len_tok": [512.0], "batch_size": [1.0]})
    cap = float(physics.roofline(q)["kv_fit_batch"].iloc[0])
    assert 700 < cap < 900
    line = [t for t in _traces(at) if t.get("meta") == "kv-fit"]
    assert len(line) == 1 and line[0]["x"] == pytest.approx([cap, cap])
    assert any(f"about {cap:,.0f} sequences" in c.value for c in at.caption)
    table = _table_in_seconds(at)
    # Latency follows from the throughput (Little's law), TTFT from the sample's measured TTFTs.
    metrics = {m.label: m.value for m in at.metric}
    at256 = table.set_index("batch_size").loc[256.0]
    assert at256["pred_e2e_latency_s"] == pytest.approx(256 * 512 / at256["pred_throughput_tok_s"])
    assert metrics["End-to-end latency"] == W.e2e_seconds(at256["pred_e2e_latency_s"]) != "n/a"
    assert 0 < at256["pred_ttft_s"] < at256["pred_e2e_latency_s"] and metrics["TTFT"] != "n/a"
    assert metrics["TPOT"] == W.seconds(at256["pred_tpot_s"]) != "n/a"
    pred = table.set_index("batch_size")["pred_throughput_tok_s"]
    assert pred[2048.0] == pytest.approx(pred[1024.0], rel=0.02)  # past the cap the curve is flat
    roof = table.set_index("batch_size")["roofline_tok_s"]  # and so is the bound
    assert roof[1024.0] == pytest.approx(roof[2048.0]) and roof[512.0] < roof[1024.0]
    assert roof[1024.0] == pytest.approx(float(physics.roofline(q.assign(batch_size=cap))["output_tok_s_max"].iloc[0]))
    # A range that stays below the cap draws no line.
    at = _train(_whatif(**{**link, "batch_max": "512"}))
    assert not [t for t in _traces(at) if t.get("meta") == "kv-fit"]


@pytest.mark.usefixtures("tiny_sample_only")
def test_attribution_link_carries_the_inputs() -> None:
    ds = _sample_id()
    at = _train(_whatif(dataset=ds, input_len="256", output_len="32", batch_min="2", batch_max="16",
                        batch="8"))
    _no_exception(at)
    links = at.get("page_link")
    assert links, "no link to the Attribution page"
    proto = links[0].proto
    assert "attribution" in proto.page
    from urllib.parse import parse_qs

    params = {k: v[0] for k, v in parse_qs(proto.query_string).items()}
    assert params == {"dataset": ds, "hardware": "cpu-x86-2vcpu", "model": "perfmodel-tiny-llama",
                      "framework": "transformers", "input_len": "256", "output_len": "32", "batch": "8",
                      "device_count": "1"}


# ------------------------------------------------------------------------------------------ core

def _runs() -> pd.DataFrame:
    rows = []
    for hw in ("h100-sxm", "a100-40gb"):
        for b in (1.0, 8.0, 32.0):
            rows.append({"hardware": hw, "model": "llama-3-8b", "framework": "vllm", "device_count": 1,
                         "input_len_tok": 128.0, "output_len_tok": 128.0, "batch_size": b,
                         "output_throughput_tok_s": 40.0 * b})
    return pd.DataFrame(rows)


def _significant_digits(text: str) -> int:
    mantissa = text.lstrip("-").lower().split("e")[0].replace(".", "")
    return len(mantissa.strip("0"))


def test_the_download_writes_clean_numbers_in_the_tables_columns() -> None:
    # It had written floats such as 91.72733500000002.
    import io

    from _predict_data import synthetic_runs

    runs = synthetic_runs(noise=0.02)
    point = {c: runs[c].iloc[0] for c in core.POINT_COLUMNS}
    model, rows = core.fit_whatif_model(runs, "roofline-gbm", settings={"n_estimators": 10, "calibration_folds": 0})
    res = core.whatif(model, rows, point, [1.0, 3.0, 48.0, 1000.0], level=0.9)
    text = W.result_csv(res).decode()
    shown = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    want = list(res.table.columns)
    want.insert(want.index("pred_upper") + 1, "level")
    assert list(shown.columns) == want  # names and order unchanged
    back = pd.read_csv(io.StringIO(text))
    floats = [c for c in res.table.columns if pd.api.types.is_float_dtype(res.table[c])]
    assert "pred_throughput_tok_s" in floats and "roofline_tok_s" in floats
    for c in floats:
        for cell, v in zip(shown[c], res.table[c], strict=True):
            assert cell == "" or float(v).is_integer() or _significant_digits(cell) <= W.CSV_SIGNIFICANT, (c, cell)
        # nothing meaningful lost: each number within the 6th significant digit, a whole one exact
        np.testing.assert_allclose(back[c].to_numpy(dtype=float), res.table[c].to_numpy(dtype=float), rtol=5e-6,
                                   equal_nan=True, err_msg=c)
    assert (back["batch_size"] == [1.0, 3.0, 48.0, 1000.0]).all()


def test_batch_grid_and_domain_reasons() -> None:
    assert core.batch_grid(3, 40) == [3.0, 4.0, 8.0, 16.0, 32.0, 40.0]
    with pytest.raises(ValidationError, match="batch_min"):
        core.batch_grid(64, 8)
    point = {"hardware": "mi300x", "model": "llama-3-8b", "framework": "sglang", "input_len_tok": 128.0,
             "output_len_tok": 4096.0, "device_count": 1.0}
    reasons = core.domain_reasons(_runs(), point, [1.0, 64.0])
    assert reasons[0].startswith("hardware 'mi300x' is not in the training data")
    assert reasons[1].startswith("framework 'sglang'")
    assert "batch 64 outside the range of all training runs (1-32)" in reasons
    assert "output length 4096 outside the range of all training runs (128)" in reasons
    assert not [r for r in reasons if "together" in r]  # the unseen hardware already says it


def test_fit_whatif_model_reports_progress_for_every_predictor() -> None:
    calls: list[tuple[str, float]] = []
    core.fit_whatif_model(_runs(), "linear", progress=lambda stage, frac: calls.append((stage, frac)))
    assert calls == [("training linear on 6 rows", 0.0), ("done", 1.0)]
    calls.clear()
    big = pd.concat([_runs().assign(input_len_tok=float(n)) for n in (64, 128, 256)], ignore_index=True)
    core.fit_whatif_model(big, "roofline-gbm", settings={"n_estimators": 10, "calibration_folds": 0},
                          progress=lambda stage, frac: calls.append((stage, frac)))
    assert calls[0][1] == 0.0 and calls[-1] == ("done", 1.0)
    assert any(stage == "efficiency model" for stage, _ in calls)
    assert [f for _, f in calls] == sorted(f for _, f in calls)


def test_out_of_domain_batches_and_the_reasons_naming_them_agree() -> None:
    """Batches 512-1024 on data up to 256 read "out of domain at batch 1024 (1 of 2)" while the reason
    said "batch 512, 1024 outside the trained range": the flag allowed twice the range, the reason none."""
    train = pd.concat([_runs().assign(input_len_tok=float(n)) for n in (64, 128, 256)], ignore_index=True)
    train["batch_size"] *= 8  # trained batches 8-256
    model, rows = core.fit_whatif_model(train, "roofline-gbm", settings={"n_estimators": 10, "calibration_folds": 0})
    point = {"hardware": "h100-sxm", "model": "llama-3-8b", "framework": "vllm", "input_len_tok": 128.0,
             "output_len_tok": 128.0, "device_count": 1.0}
    res = core.whatif(model, rows, point, [2.0, 4.0, 512.0, 1024.0])
    assert W.out_of_domain_text(res) == "batch 2, 1024 (2 of 4)"
    assert "batch 2, 1024 more than twice outside the range of all training runs (8-256)" in res.reasons
    assert "batch 4, 512 beyond the range of all training runs (8-256), but within twice of it: extrapolated" \
        in res.reasons
    # The predictor's own reasons say the same.
    q = pd.DataFrame([{**point, "batch_size": b} for b in (2.0, 4.0, 512.0, 1024.0)])
    assert [bool(r) for r in model.domain_reasons(q)] == [True, False, False, True]
    # A predictor that flags anything outside the range (factor 1) keeps the plain wording.
    assert "batch 512, 1024 outside the range of all training runs (8-256)" \
        in core.domain_reasons(rows, point, [512.0, 1024.0])


def test_the_range_of_all_runs_and_a_frameworks_own_batches_read_as_two_ranges() -> None:
    """Beside roofline-gbm's "at batch 256, 512: ... the batches tensorrt-llm was trained at (1-64)" the page had
    said "batch 512 beyond the trained range 1-256, but within twice of it", as if the two were one range."""
    rows = []
    for fw, top in (("vllm", 256), ("tensorrt-llm", 64)):
        for hw in ("h100-sxm", "a100-80gb"):
            for n in (128.0, 512.0):
                rows += [{"hardware": hw, "model": "llama-3-8b", "framework": fw, "device_count": 1,
                          "input_len_tok": n, "output_len_tok": n, "batch_size": float(2 ** k),
                          "output_throughput_tok_s": 40.0 * 2 ** (0.8 * k)} for k in range(top.bit_length())]
    model, train = core.fit_whatif_model(pd.DataFrame(rows), "roofline-gbm",
                                         settings={"n_estimators": 10, "calibration_folds": 0})
    point = {"hardware": "h100-sxm", "model": "llama-3-8b", "framework": "tensorrt-llm", "input_len_tok": 128.0,
             "output_len_tok": 128.0, "device_count": 1.0}
    res = core.whatif(model, train, point, [16.0, 64.0, 256.0, 512.0, 1024.0])
    assert W.out_of_domain_text(res) == "batch 256, 512, 1024 (3 of 5)"
    batch = [r for r in res.reasons if "batch" in r]
    assert batch == [
        "batch 1024 more than twice outside the range of all training runs (1-256)",
        "batch 512 beyond the range of all training runs (1-256), but within twice of it: extrapolated",
        "at batch 256, 512: the batch is more than twice outside the batches tensorrt-llm was trained at (1-64)",
    ], res.reasons


def test_domain_reasons_name_a_combination_or_device_count_never_measured_together() -> None:
    runs = pd.concat([_runs(), _runs().assign(model="llama-2-13b", hardware="a100-40gb", framework="sglang")])
    point = {"hardware": "h100-sxm", "model": "llama-2-13b", "framework": "vllm", "input_len_tok": 128.0,
             "output_len_tok": 128.0, "device_count": 1.0}
    assert core.domain_reasons(runs, point, [1.0, 8.0]) == [
        "h100-sxm · llama-2-13b · vllm was never measured together: the prediction transfers from other combinations"]
    point.update(model="llama-3-8b")
    assert core.domain_reasons(runs, point, [1.0, 8.0]) == []
    runs.loc[runs["model"] == "llama-2-13b", "device_count"] = 2  # 2 devices are in the trained range
    point.update(device_count=2.0)
    assert core.domain_reasons(runs, point, [8.0]) == [
        "h100-sxm · llama-3-8b · vllm was measured on 1 device(s), never on 2: the prediction transfers from "
        "other device counts"]


def test_low_confidence_is_a_reason_and_ttft_beyond_the_latency_is_a_conflict() -> None:
    table = pd.DataFrame({"batch_size": [1.0, 8.0, 64.0], "confidence": [0.9, 0.1, 0.05],
                          "pred_lower": [10.0, 10.0, 10.0], "pred_upper": [12.0, 1000.0, 4000.0]})
    assert core.confidence_reason(table) == (
        "confidence below 0.2 at batch 8, 64 (lowest 0.05, where the band spans a factor 400 from low to high): "
        "the prediction is an order-of-magnitude guess at best")
    assert core.confidence_reason(table.iloc[:1]) is None
    row = pd.Series({"batch_size": 16.0, "pred_ttft_s": 0.236, "pred_e2e_latency_s": 0.000691,
                     "pred_lower": 77061.0, "pred_upper": 28521209.0, "pred_ttft_lower_s": 0.1,
                     "pred_ttft_upper_s": 0.5})
    msg = W.latency_conflict(row, 0.9)
    assert msg is not None and msg.startswith("The predicted TTFT (236 ms) exceeds the predicted end-to-end "
                                              "latency (0.691 ms) at batch 16")
    assert "Distrust the throughput, and the end-to-end latency derived from it" in msg
    assert "Distrust the TTFT" in W.latency_conflict(pd.Series({**row, "pred_upper": 80000.0}), 0.9)
    assert W.latency_conflict(pd.Series({**row, "pred_ttft_s": 0.0001}), 0.9) is None
    assert W.latency_conflict(pd.Series({**row, "pred_ttft_s": float("nan")}), 0.9) is None


def test_suspect_mask_flags_points_above_the_weights_bound_only() -> None:
    runs = _runs()
    # Llama-3-8B bf16 on an H100 (3.35 TB/s): at batch 1 about 209 tok/s at most.
    runs.loc[0, "output_throughput_tok_s"] = 5000.0
    runs.loc[1, "hardware"] = "warp-drive"  # unknown to the catalog: not judged, never an error
    mask = core.suspect_mask(runs)
    assert mask.tolist() == [True, False, False, False, False, False]
    model, train = core.fit_whatif_model(pd.concat([runs] * 3, ignore_index=True).iloc[[0, 2, 3, 4, 5] * 3],
                                         "linear")
    assert len(train) == 12  # the three copies of the suspect row are left out



def test_default_batch_range_is_the_chosen_configurations() -> None:
    # A CPU model measured to batch 128 beside a GPU model measured to 512: the default
    # configuration (the most measured) gets its own batch range, not the dataset's.
    cpu = pd.DataFrame({"hardware": "cpu", "model": "tiny", "framework": "transformers", "device_count": 1,
                        "input_len_tok": 64.0, "output_len_tok": 32.0, "batch_size": [1.0, 8.0, 128.0] * 2})
    gpu = pd.DataFrame({"hardware": "h200", "model": "large", "framework": "transformers", "device_count": 1,
                        "input_len_tok": 512.0, "output_len_tok": 128.0, "batch_size": [4.0, 512.0]})
    d = core.default_point(pd.concat([cpu, gpu], ignore_index=True))
    assert (d["hardware"], d["batch_min"], d["batch_max"]) == ("cpu", 1.0, 128.0)
    d = core.default_point(pd.concat([cpu.head(1), gpu], ignore_index=True))
    assert (d["hardware"], d["batch_min"], d["batch_max"]) == ("h200", 4.0, 512.0)


def test_default_configuration_counts_thread_settings_apart() -> None:
    # 3 rows at 1 thread + 3 at 2 threads of one configuration lose to 4 rows of another:
    # the curves keep thread counts apart, so the what-if default does too.
    a = pd.DataFrame({"hardware": "cpu", "model": "tiny", "input_len_tok": 128.0, "output_len_tok": 32.0,
                      "batch_size": [1.0, 2.0, 4.0] * 2, "fw_num_threads": [1.0] * 3 + [2.0] * 3})
    b = pd.DataFrame({"hardware": "cpu", "model": "tiny", "input_len_tok": 64.0, "output_len_tok": 32.0,
                      "batch_size": [1.0, 2.0, 4.0, 8.0], "fw_num_threads": 1.0})
    d = core.default_point(pd.concat([a, b], ignore_index=True))
    assert (d["input_len_tok"], d["batch_max"]) == (64.0, 8.0)
    d = core.default_point(pd.concat([a, b], ignore_index=True).drop(columns="fw_num_threads"))
    assert (d["input_len_tok"], d["batch_max"]) == (128.0, 4.0)


def _n_batch_runs() -> pd.DataFrame:
    """LLM-Inference-Bench's shape: llama.cpp runs one sequence at n_batch 16 and 64 (64 measured more),
    vLLM runs record no n_batch."""
    base = {"hardware": "a100-40gb", "model": "llama-3-8b", "device_count": 1.0, "input_len_tok": 128.0,
            "output_len_tok": 128.0}
    cpp = pd.DataFrame({**base, "framework": "llama.cpp", "batch_size": 1.0, "fw_n_batch": [16.0, 64.0, 64.0],
                        "output_throughput_tok_s": [60.0, 80.0, 82.0]})
    vllm = pd.DataFrame({**base, "framework": "vllm", "batch_size": [1.0, 8.0, 32.0, 64.0], "fw_n_batch": np.nan,
                         "output_throughput_tok_s": [70.0, 500.0, 1500.0, 2500.0]})
    return pd.concat([cpp, vllm], ignore_index=True)


def test_setting_choices_are_the_configurations_values_and_none_where_it_records_none() -> None:
    runs = _n_batch_runs()
    cpp = {"hardware": "a100-40gb", "model": "llama-3-8b", "framework": "llama.cpp"}
    assert core.setting_choices(runs, cpp) == {
        "fw_n_batch": core.SettingChoice("fw_n_batch", options=(16.0, 64.0), default=64.0, measured=True)}
    # vLLM's runs do not record llama.cpp's n_batch: nothing to choose.
    assert core.setting_choices(runs, {**cpp, "framework": "vllm"}) == {}
    # A combination never measured: its framework's values (it had been offered the dataset's, with "unset",
    # the vLLM majority's, as its default), none for a framework never measured (it had been offered the whole
    # dataset's: the sample's torch threads for vLLM on an L4), and none for a framework whose runs do not
    # record the setting.
    assert core.setting_choices(runs, {**cpp, "hardware": "h100-sxm"}) == {
        "fw_n_batch": core.SettingChoice("fw_n_batch", options=(16.0, 64.0), default=64.0, measured=False)}
    assert core.setting_choices(runs, {**cpp, "hardware": "h100-sxm", "framework": "sglang"}) == {}
    assert core.setting_choices(runs, {**cpp, "hardware": "h100-sxm", "framework": "vllm"}) == {}
    # A tie goes to the faster setting (its runs' median throughput: 80 against 60 tok/s), whatever the rows'
    # order, and at equal speed to the smaller value; a dataset measured at one value offers nothing.
    tie = runs.drop(index=2)
    assert core.setting_choices(tie, cpp)["fw_n_batch"].default == 64.0
    assert core.setting_choices(tie.iloc[::-1], cpp)["fw_n_batch"].default == 64.0
    same_speed = tie.assign(output_throughput_tok_s=70.0)
    assert core.setting_choices(same_speed, cpp)["fw_n_batch"].default == 16.0
    assert core.setting_choices(same_speed.iloc[::-1], cpp)["fw_n_batch"].default == 16.0
    assert core.setting_choices(runs.assign(fw_n_batch=runs["fw_n_batch"].where(runs["fw_n_batch"] != 16, 64.0)),
                                cpp) == {}
    # The default point carries its configuration's default setting (None where it records none).
    assert core.default_point(runs)["fw_n_batch"] is None  # vLLM has the most runs
    assert core.default_point(runs.iloc[:3])["fw_n_batch"] == 64.0
    assert "fw_num_threads" not in core.default_point(runs)  # not in the dataset


def test_the_chosen_setting_reaches_every_query_row_and_picks_the_measured_points() -> None:
    runs = _n_batch_runs()
    model, rows = core.fit_whatif_model(runs, "linear")
    point = {"hardware": "a100-40gb", "model": "llama-3-8b", "framework": "llama.cpp", "input_len_tok": 128.0,
             "output_len_tok": 128.0, "device_count": 1.0}
    seen: list[pd.DataFrame] = []
    predict = model.predict

    def spy(X: pd.DataFrame, *args: object, **kwargs: object) -> object:
        seen.append(X.copy())
        return predict(X, *args, **kwargs)

    model.predict = spy  # type: ignore[method-assign]
    res = core.whatif(model, rows, {**point, "fw_n_batch": 16.0}, [1.0, 2.0])
    assert seen and all(X["fw_n_batch"].tolist() == [16.0, 16.0] for X in seen)
    assert res.table["fw_n_batch"].tolist() == [16.0, 16.0] and res.point["fw_n_batch"] == 16.0
    # The measured points of llama.cpp are those at n_batch 16; vLLM's, which record none, stay beside them.
    mine = res.measured[res.measured["framework"] == "llama.cpp"]
    assert mine[core.DEFAULT_TARGET].tolist() == [60.0]
    assert (res.measured["framework"] == "vllm").sum() == 4
    res = core.whatif(model, rows, {**point, "fw_n_batch": 64.0}, [1.0])
    assert sorted(res.measured.loc[res.measured["framework"] == "llama.cpp", core.DEFAULT_TARGET]) == [80.0, 82.0]
    # Unset: the query's setting is missing (NaN) and the rows kept are those without it.
    res = core.whatif(model, rows, {**point, "framework": "vllm", "fw_n_batch": None}, [1.0])
    assert res.table["fw_n_batch"].isna().all() and set(res.measured["framework"]) == {"vllm"}
    with pytest.raises(ValidationError, match="fw_n_batch"):
        core.whatif(model, rows, {**point, "fw_n_batch": "lots"}, [1.0])


def test_a_setting_measured_at_one_value_reaches_the_query_and_the_bound() -> None:
    # Bug: a dataset whose llama.cpp runs all record n_batch 16 offers no choice, and the query went without it:
    # the roofline then read the weights once for the whole prompt, not once per 16 of its tokens.
    runs = _n_batch_runs()
    one = runs.assign(fw_n_batch=runs["fw_n_batch"].where(runs["framework"] != "llama.cpp", 16.0))
    model, rows = core.fit_whatif_model(one, "linear")
    point = {"hardware": "a100-40gb", "model": "llama-3-8b", "framework": "llama.cpp", "input_len_tok": 128.0,
             "output_len_tok": 128.0, "device_count": 1.0}
    assert core.setting_choices(one, point) == {}
    res = core.whatif(model, rows, point, [1.0])
    assert res.table["fw_n_batch"].tolist() == [16.0]
    q = pd.DataFrame([{**point, "batch_size": 1.0}])
    assert res.table["roofline_tok_s"].iloc[0] == pytest.approx(
        float(physics.roofline(q.assign(fw_n_batch=16.0))["output_tok_s_max"].iloc[0]))
    assert res.table["roofline_tok_s"].iloc[0] < float(physics.roofline(q)["output_tok_s_max"].iloc[0])
    # vLLM's runs record none: nothing is added; a setting the point gives is kept as given.
    assert "fw_n_batch" not in core.whatif(model, rows, {**point, "framework": "vllm"}, [1.0]).table
    assert core.whatif(model, rows, {**point, "fw_n_batch": 64.0}, [1.0]).table["fw_n_batch"].tolist() == [64.0]


def test_metric_tiles_never_show_e_notation() -> None:
    assert W.rate(19920.4) == "19,920" and W.rate(5792.3) == "5,792" and W.rate(41.42371) == "41.42"
    # Large values are compact, so that a tile does not overflow ("1,482,525 to..." in the browser).
    assert W.rate(1.2e6) == "1.2 M" and W.rate(1482525.0) == "1.48 M" and W.rate(168661.0) == "169 k"
    assert W.rate(99999.0) == "99,999" and W.rate(999999.0) == "1 M" and W.rate(2.1e9) == "2.1 G"
    assert W.rate(1.4e17) == "140,000 T" and W.rate(float("nan")) == "n/a"
    assert W.seconds(4.41e5 * 60) == "306 d" and W.seconds(3 * 3600) == "3 h" and W.seconds(1e12) == "11,574,074 d"
    assert W.seconds(0.0123) == "12.3 ms" and W.seconds(2.345) == "2.35 s" and W.seconds(600.0) == "10 min"
    assert W.seconds(float("nan")) == "n/a"


def test_the_roofline_tile_explains_n_a_only_where_it_shows_n_a() -> None:
    value, text = W.roofline_tile(2499.3)
    assert value == "2,499 tok/s" and "n/a" not in text and "lacks a figure" not in text
    for missing in (float("nan"), float("inf")):
        value, text = W.roofline_tile(missing)
        assert value == "n/a" and text.startswith(W.ROOFLINE_HELP) and "n/a here: the catalog lacks a figure" in text


def test_the_end_to_end_tile_reads_in_the_tables_seconds() -> None:
    # The tile had read "3.11 min" above a predictions table whose E2E column (s) read 187.
    assert W.e2e_seconds(186.6) == "187 s (3.11 min)" and W.e2e_seconds(2.345) == "2.35 s"
    assert W.e2e_seconds(119.4) == "119 s" and W.e2e_seconds(0.34) == "340 ms"
    assert W.e2e_seconds(7200.0) == "7,200 s (2 h)" and W.e2e_seconds(float("inf")) == "n/a"


def test_hardware_and_model_choices_carry_their_keys_and_list_the_measured_ones_first() -> None:
    # The reviewer typed "h200" into the Hardware box and found nothing: it listed catalog display names only.
    at = _whatif(dataset=_sample_id())
    _no_exception(at)
    labels = at.selectbox(key=K["hardware"]).options  # as shown
    assert "NVIDIA H200 SXM 141GB · h200" in labels
    assert {label.split(" · ")[-1] for label in labels[:2]} == {"cpu-x86-2vcpu", "h200"}  # the measured ones
    assert at.selectbox(key=K["model"]).options[0].split(" · ")[-1].startswith("perfmodel-")
    assert W.choice_label("x-unknown", {}) == "x-unknown"


def test_the_roofline_bound_uses_the_dtype_the_configuration_was_measured_with() -> None:
    # The CPU samples ran fp32: at the model's default bf16 the catalog has no CPU peak and the tile read n/a.
    from perfmodel.importers import read_file

    train = read_file(TINY_SAMPLE).runs
    point = core.default_point(train)
    assert point["hardware"] == "cpu-x86-2vcpu" and set(train["weight_dtype"].dropna()) == {"fp32"}
    model, used = core.fit_whatif_model(train, "linear")
    res = core.whatif(model, used, point, [1.0, 4.0])
    roof = res.table["roofline_tok_s"]
    assert roof.notna().all() and (roof > 0).all()


def test_weights_that_do_not_fit_the_devices_memory_are_named() -> None:
    # Reviewer's query: Llama-3-70B (141 GB of bf16 weights) on one 96 GB GH200 drew a curve (180 tok/s at
    # batch 64) and a roofline bound, and said nothing: the KV-cache caption just disappeared.
    model, used = core.fit_whatif_model(_runs(), "linear")
    point = {"hardware": "h100-sxm", "model": "llama-3-70b", "framework": "vllm", "device_count": 1,
             "input_len_tok": 128.0, "output_len_tok": 128.0}
    note = core.whatif(model, used, point, [1.0, 8.0]).memory_note
    assert note is not None and note.startswith(
        "The weights of llama-3-70b (141 GB) do not fit in 90% of the memory of 1 x h100-sxm (77 GB of 86 GB, "
        "counting the 80 GB per device the vendor states as binary GB)")
    assert core.whatif(model, used, {**point, "device_count": 2}, [1.0, 8.0]).memory_note is None  # 155 GB
    assert core.whatif(model, used, {**point, "model": "llama-3-8b"}, [1.0, 8.0]).memory_note is None


def test_the_page_warns_when_the_weights_do_not_fit() -> None:
    link = {"dataset": _sample_id(), "hardware": "h200", "input_len": "128", "output_len": "32",
            "batch_min": "1", "batch_max": "8", "batch": "8"}
    at = _train(_whatif(**link))
    at = at.selectbox(key=K["model"]).set_value("llama-3-70b").run()
    _no_exception(at)
    # 141 of 151 GB: no KV cache at the serving default's 90 %, a small one with all of the memory (the page had
    # said it could not run as asked, while predict answered batch 256 as if 172 GB of KV cache fitted)
    [said] = [w.value for w in at.warning if "fill more than 90%" in w.value]
    assert said.startswith("llama-3-70b's weights (141 GB) fill more than 90% of the 151 GB of 1 x h200: at the "
                           "serving default (vLLM's gpu_memory_utilization 0.9) no KV cache fits and the server does "
                           "not start; with all of the memory about "), said
    assert said.endswith(" sequence(s) of this length fit beside them (more wait or are preempted).")
    at = at.number_input(key=K["device_count"]).set_value(2.0).run()
    _no_exception(at)
    assert not [w for w in at.warning if "fill more than" in w.value]


def test_a_prediction_above_the_roofline_bound_is_named_with_its_cause() -> None:
    # Reviewer's query on LLM-Inference-Bench: Llama-3-70B on 2 x H100 at 1024 + 1024 tokens predicted 447 tok/s
    # at batch 64 beside a roofline bound of 199 tok/s (the KV cache is full from batch 4 on), and the page
    # said nothing about it. (With the memory read in binary GB the cache is full from batch 20 there; at
    # 2048 + 2048 tokens from batch 10.)
    model, used = core.fit_whatif_model(_runs(), "linear")  # 40 tok/s per sequence, whatever the model
    point = {"hardware": "h100-sxm", "model": "llama-3-70b", "framework": "vllm", "device_count": 2,
             "input_len_tok": 2048.0, "output_len_tok": 2048.0}
    res = core.whatif(model, used, point, [1.0, 2.0, 64.0])
    note = res.bound_note
    assert note is not None and note.startswith(
        "The prediction exceeds the physical (roofline) bound at batch 64: 2,560 tok/s predicted at batch 64 "
        "against a bound of 432.7 tok/s (5.92x). Beyond batch 10 the KV cache no longer fits beside the weights")
    # Llama-3-8B on one H100 stays under its bound: nothing to say.
    assert core.whatif(model, used, {**point, "model": "llama-3-8b", "device_count": 1}, [1.0, 64.0]).bound_note is None
    # Above the bound below the KV-cache-full batch: the efficiency, not the memory, is named.
    table = pd.DataFrame({"batch_size": [1.0, 8.0], "pred_throughput_tok_s": [100.0, 900.0],
                          "roofline_tok_s": [100.5, 800.0], "kv_fit_batch": [64.0, 64.0]})
    note = core.bound_reason(table)
    assert note is not None and "at batch 8: 900 tok/s" in note and "learned efficiency is above 1" in note
    assert "KV cache" not in note
    assert core.bound_reason(table.assign(roofline_tok_s=np.nan)) is None  # no bound, nothing to compare
    # The line under the bound, the band's top above it: said in one sentence.
    under = table.assign(pred_throughput_tok_s=[90.0, 700.0], pred_upper=[95.0, 1_300.0])
    assert core.bound_reason(under) == (
        "The band's upper end exceeds the physical (roofline) bound at batch 8 (up to 1,300 tok/s against 800 "
        "tok/s): no run can be faster than the bound, so read the band as ending there.")
    assert core.bound_reason(under.assign(pred_upper=[95.0, 790.0])) is None


def test_a_curve_without_ttft_says_why() -> None:
    # LLM-Inference-Bench has no TTFT: the tiles read a bare n/a whose help described a calibrated TTFT band.
    point = {"hardware": "h100-sxm", "model": "llama-3-8b", "framework": "vllm", "device_count": 1,
             "input_len_tok": 128.0, "output_len_tok": 128.0}
    model, used = core.fit_whatif_model(_runs(), "linear")
    assert core.whatif(model, used, point, [1.0]).ttft_note == (
        "the linear predictor has no TTFT model (roofline-gbm learns one where the data measured TTFT)")
    big = pd.concat([_runs().assign(input_len_tok=float(n)) for n in (64, 128, 256)], ignore_index=True)
    gbm, used = core.fit_whatif_model(big, "roofline-gbm", settings={"n_estimators": 10, "calibration_folds": 0})
    res = core.whatif(gbm, used, point, [1.0, 8.0])
    assert res.ttft_note is not None and res.ttft_note.startswith("none of the 18 training runs measured TTFT")
    text = W.no_ttft_text(res, res.table.iloc[1])
    assert text is not None and text.startswith("TTFT and TPOT: n/a, as none of the 18 training runs")
    row = res.table.iloc[1]
    tpot_max = (row["pred_e2e_latency_s"] - row["ttft_floor_s"]) / 127
    assert f"TTFT is at least {W.seconds(row['ttft_floor_s'])}" in text
    assert f"TPOT is at most {W.seconds(tpot_max)}" in text and "over the 127 tokens after the first" in text
    few = big.assign(ttft_s=np.where(np.arange(len(big)) < 5, 0.05, np.nan))
    gbm, used = core.fit_whatif_model(few, "roofline-gbm", settings={"n_estimators": 10, "calibration_folds": 0})
    assert core.whatif(gbm, used, point, [1.0]).ttft_note.startswith("only 5 of the 18 training runs measured TTFT")


def test_the_page_says_why_ttft_is_missing_and_warns_above_the_bound() -> None:
    link = {"dataset": _sample_id(), "hardware": "h100-sxm", "model": "llama-3-70b", "framework": "vllm",
            "input_len": "2048", "output_len": "2048", "device_count": "2", "batch_min": "1", "batch_max": "64",
            "batch": "64", "predictor": "linear"}
    # Straight to /whatif, as a browser opens the link (the Data page, run first, drops its own filters'
    # hardware and model values that the dataset lacks from the URL).
    at = AppTest.from_file(APP, default_timeout=TIMEOUT_S)
    for k, v in link.items():
        at.query_params[k] = v
    at = _train(at.switch_page(PAGE).run())
    _no_exception(at)
    metrics = {m.label: m for m in at.metric}
    assert metrics["TTFT"].value == metrics["TPOT"].value == "n/a"
    [cap] = [c.value for c in at.caption if c.value.startswith("TTFT and TPOT: n/a")]
    assert cap.startswith("TTFT and TPOT: n/a, as the linear predictor has no TTFT model")
    assert metrics["TTFT"].help == cap and "calibrated" not in metrics["TTFT"].help
    # roofline-gbm, trained on the samples' H200 and CPU runs, kept growing past batch 10, where 2 x 80 GB hold
    # no more KV cache of 4096-token sequences beside 141 GB of weights, to 1.01x and more the bound at batch 64
    # (the page warned). Its answer is now held there: flat past batch 10, under the bound, no warning.
    at = _train(at.selectbox(key=K["predictor"]).set_value("roofline-gbm").run())
    _no_exception(at)
    table = at.dataframe[0].value.set_index("batch_size")
    past = table.loc[[16.0, 32.0, 64.0], "pred_throughput_tok_s"].to_numpy()
    np.testing.assert_allclose(past, past[0], rtol=1e-9)
    assert (past <= table.loc[[16.0, 32.0, 64.0], "roofline_tok_s"].to_numpy()).all()
    assert not [w.value for w in at.warning if w.value.startswith("The prediction exceeds the physical")]
    # The band's top stops at the bound too (the model caps it there; set to skip a second filter of suspect
    # points it had not, and this far from the data the band had run past the bound, said by a warning)
    tops = table.loc[[16.0, 32.0, 64.0], "pred_upper"].to_numpy()
    assert (tops <= table.loc[[16.0, 32.0, 64.0], "roofline_tok_s"].to_numpy() * 1.001).all()
    assert not any(w.value.startswith("The band's upper end exceeds the physical") for w in at.warning)
    assert not [c for c in at.caption if c.value.startswith("TTFT and TPOT: n/a")]  # the samples measured TTFT


def test_a_combination_the_data_never_ran_is_named() -> None:
    """After picking H200 and a model it ran with transformers, the framework stayed llama.cpp, a combination
    nobody measured, with no hint."""
    runs = pd.DataFrame({"hardware": ["h200", "cpu"], "model": ["big", "tiny"], "framework": ["transformers", "llama.cpp"]})
    assert W.combination_note(runs, "h200", "big", "transformers") is None
    assert W.combination_note(runs, "h200", "big", "llama.cpp") == (
        "llama.cpp never ran on h200 in this dataset (it ran transformers): the prediction transfers llama.cpp's "
        "efficiency from other hardware, so expect a wider band.")
    assert W.combination_note(runs, "h100-sxm", "big", "vllm") is None  # new hardware: the band says it
    at = _whatif()  # the samples: H200 ran transformers only
    at.selectbox(key=K["hardware"]).set_value("h200")
    at.selectbox(key=K["framework"]).set_value("llama.cpp").run()
    _no_exception(at)
    assert any(c.value.startswith("llama.cpp never ran on h200 in this dataset (it ran transformers)")
               for c in at.caption)
    at.selectbox(key=K["framework"]).set_value("transformers").run()
    assert not any("never ran on" in c.value for c in at.caption)


def test_a_length_ratio_the_runs_never_had_is_named_as_extrapolated() -> None:
    # LLM-Inference-Bench measured input = output only: 2048 / 512 lies inside both length ranges and the page
    # said nothing, though the prefill/decode split is then the roofline's alone.
    runs = pd.concat([_runs().assign(input_len_tok=float(n), output_len_tok=float(n)) for n in (128, 2048)])
    point = {"hardware": "h100-sxm", "model": "llama-3-8b", "framework": "vllm", "input_len_tok": 2048.0,
             "output_len_tok": 512.0, "device_count": 1.0}
    [why] = core.domain_reasons(runs, point, [1.0, 8.0])
    assert why.startswith("input/output length ratio 4 (2048 / 512) beyond the 1 of its runs") and \
        why.endswith("extrapolated")
    assert core.domain_reasons(runs, {**point, "output_len_tok": 2048.0}, [1.0]) == []
    assert core.domain_reasons(runs, {**point, "input_len_tok": 700.0}, [1.0]) == []  # within 1.5x of 1
    # the combination's own runs decide: another hardware's 4:1 runs do not cover this one
    other = _runs().assign(hardware="a100-40gb", input_len_tok=2048.0, output_len_tok=512.0)
    assert core.domain_reasons(pd.concat([runs, other]), point, [1.0])[0].startswith("input/output length ratio 4")


def test_a_throughput_below_zero_is_out_of_domain_and_named(monkeypatch: pytest.MonkeyPatch) -> None:
    # The linear baseline read -19.56 tok/s, -26.2 s of latency, In domain: checked, with no warning.
    model, rows = core.fit_whatif_model(_n_batch_runs(), "linear")
    point = {"hardware": "a100-40gb", "model": "llama-3-8b", "framework": "vllm", "input_len_tok": 128.0,
             "output_len_tok": 128.0, "device_count": 1.0}
    honest = core.whatif(model, rows, point, [1.0, 2.0, 64.0])
    assert not any("<= 0" in r for r in honest.reasons)
    predict = type(model).predict

    def shifted(self, runs, level=0.9):  # noqa: ANN001, ANN202
        out = predict(self, runs, level=level)
        low = runs["batch_size"].to_numpy() < 64
        return out.assign(pred_throughput_tok_s=np.where(low, -19.56, out["pred_throughput_tok_s"]))

    monkeypatch.setattr(type(model), "predict", shifted)
    res = core.whatif(model, rows, point, [1.0, 2.0, 64.0])
    t = res.table
    assert t["in_domain"].tolist()[:2] == [False, False] and t["pred_e2e_latency_s"].iloc[:2].isna().all()
    assert t["pred_e2e_latency_s"].iloc[2] > 0
    assert any(r.startswith("at batch 1, 2 the linear predictor gives a throughput <= 0") and "out of its domain" in r
               for r in res.reasons), res.reasons


def test_the_measured_runs_caption_splits_them_as_the_chart_does() -> None:
    m = pd.DataFrame({"same_config": [True, True, False]})
    assert W.measured_caption(m) == ("3 measured run(s) of this hardware, model and lengths: 2 with this framework "
                                     "and device count, 1 with another (drawn apart)")
    assert W.measured_caption(m.iloc[:2], " at threads 2") == (
        "2 measured run(s) of this hardware, model and lengths at threads 2, all with this framework and device count")


def test_the_band_level_applies_to_the_predictors_that_give_a_band() -> None:
    # The band level stayed active under xgboost, linear and random-forest, whose band is n/a.
    from _predict_data import synthetic_runs

    runs = synthetic_runs(noise=0.02)
    point = {c: runs[c].iloc[0] for c in ("hardware", "model", "framework", "input_len_tok", "output_len_tok",
                                          "device_count")}
    for name in ("roofline-gbm", "xgboost", "linear", "random-forest"):
        model, rows = core.fit_whatif_model(runs, name)
        t = core.whatif(model, rows, point, [1.0, 8.0]).table
        assert t["pred_lower"].notna().all() == (name in W.BANDED_PREDICTORS), name
    for predictor, off in (("linear", True), ("roofline-gbm", False)):
        at = _page(dataset=_sample_id(), predictor=predictor)
        _no_exception(at)
        [band] = [e for e in at.get("button_group") if e.proto.label == "Band level"]
        assert band.proto.disabled is off, predictor


@pytest.mark.usefixtures("tiny_sample_only")
def test_switching_datasets_keeps_what_is_not_the_datas() -> None:
    # Switching to another dataset and back reset the band level, the predictor, the suspect-point choice and
    # the axis, and put the point on the dataset's first configuration.
    from perfmodel.api import import_files

    samples.ensure_sample_data(Store())
    other = import_files([str(LLAMA_CPP_SAMPLE)], name="llama-server")[0].id
    first = Store().dataset(samples.SAMPLE_DATASET_NAME).id
    at = _whatif()
    _no_exception(at)
    at.selectbox(key=K["dataset"]).set_value(first).run()
    assert at.selectbox(key=K["dataset"]).value == first
    at.session_state[K["level"]] = 0.95
    at.session_state[K["log_x"]] = False
    at.session_state[K["predictor"]] = "xgboost"
    at.run()
    hardware, model = at.selectbox(key=K["hardware"]).value, at.selectbox(key=K["model"]).value
    at.selectbox(key=K["dataset"]).set_value(other).run()
    _no_exception(at)
    at.selectbox(key=K["dataset"]).set_value(first).run()
    _no_exception(at)
    assert at.session_state[K["level"]] == 0.95 and at.session_state[K["log_x"]] is False
    assert at.session_state[K["predictor"]] == "xgboost"
    assert (at.selectbox(key=K["hardware"]).value, at.selectbox(key=K["model"]).value) == (hardware, model)
    # the llama-server runs are llama.cpp's: the tiny sample's transformers point is not theirs
    at.selectbox(key=K["dataset"]).set_value(other).run()
    assert at.selectbox(key=K["framework"]).value == "llama.cpp"
