"""The Streamlit app, headless: AppTest drives app.py and the Data page.

Every test runs in its own empty PERFMODEL_HOME (tests/conftest.py); the sample
directory is pointed at a test directory so that the shipped sample files do
not change what these tests see (one test runs the real ``sample_runs/``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from perfmodel.api import import_bytes, import_files
from perfmodel.errors import ImportFormatError, ValidationError
from perfmodel.store import Store
from perfmodel.ui import samples, tables
from perfmodel.ui import state as K
from perfmodel.ui.forms import UploadForm, import_uploads, to_meta

REPO = Path(__file__).resolve().parents[1]
APP = str(REPO / "app.py")
UI_RUNS = REPO / "tests" / "data" / "ui" / "ui_runs.csv"
TIMEOUT_S = 60  # the first run imports plotly and the importers


@pytest.fixture(autouse=True)
def no_samples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty sample directory unless a test points it elsewhere."""
    d = tmp_path / "no-samples"
    d.mkdir()
    monkeypatch.setattr(samples, "SAMPLE_DIR", d)
    return d


def _app(**query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT_S)
    for k, v in query.items():
        at.query_params[k] = v
    return at.run()


def _no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def _texts(elements: object) -> list[str]:
    return [e.value for e in elements]  # type: ignore[attr-defined]


def _figure(at: AppTest) -> dict:
    charts = at.get("plotly_chart")
    assert charts, "no plotly chart on the page"
    return json.loads(charts[0].proto.spec)


def _store_ui_runs() -> str:
    info, _ = import_files([UI_RUNS], store=Store())
    return info.id


# --------------------------------------------------------------------------------------------------
# pure helpers behind the page


def test_form_values_become_import_meta() -> None:
    form = UploadForm.from_values({"format": "auto", "hardware": "as in file", "model": "llama-3.1-8b",
                                   "framework": "  ", "device_count": 8.0, "tp_size": None, "name": ""})
    assert form.format == "auto" and form.hardware is None and form.framework is None and form.name is None
    meta = to_meta(form)
    assert meta is not None and meta.model == "llama-3.1-8b" and meta.device_count == 8
    assert to_meta(UploadForm()) is None
    with pytest.raises(ValidationError, match="device_count"):
        to_meta(UploadForm(device_count=0))


def test_import_uploads_stores_one_dataset_or_nothing() -> None:
    store = Store()
    with pytest.raises(ImportFormatError, match="no file to import"):
        import_uploads([], UploadForm(), store)
    good = UI_RUNS.read_bytes()
    with pytest.raises(ImportFormatError):
        import_uploads([("ui_runs.csv", good), ("junk.bin", b"\x00\x01\x02binary")], UploadForm(), store)
    assert store.datasets() == []  # all files or none
    info, results = import_uploads([("ui_runs.csv", good)], UploadForm(name="mine"), store)
    assert (info.name, info.n_runs, len(results)) == ("mine", 12, 1)
    issues = tables.issues_frame(store.issues(info.id))
    err = issues[issues["severity"] == "error"]
    assert err[["file", "row", "column"]].values.tolist() == [["ui_runs.csv", 13, "load_kind"]]


def test_form_metadata_fills_what_the_file_does_not_say(formats_dir: Path) -> None:
    # vLLM's bench-serve JSON names neither the GPU nor (resolvably) the serving hardware.
    path = formats_dir / "vllm-bench-serve" / "er0080-vllm-benchmarking__bench_serve_v0.25.1.json"
    form = UploadForm(hardware="h100-sxm", device_count=1)
    info, results = import_uploads([(path.name, path.read_bytes())], form, Store())
    runs = Store().runs(info.id)
    assert set(runs["hardware"]) == {"h100-sxm"} and info.formats == (results[0].format,)


def test_the_form_gives_what_a_file_does_not_record(formats_dir: Path) -> None:
    # Four formats could not be imported from the browser: the errors sent the user to form fields that did not
    # exist (an AIPerf CSV's concurrency, a throughput benchmark's lengths, a generic CSV's column mapping), and
    # an optimum-benchmark report was read apart from its config.
    aiperf = formats_dir / "aiperf" / "anud18-qwen36-aiperf__h100_chatbot_c8_profile_export_aiperf.csv"
    with pytest.raises(ImportFormatError, match="does not say which hardware or model it ran on; supply the "
                                                "hardware with --hardware NAME and the model with --model NAME"):
        import_uploads([(aiperf.name, aiperf.read_bytes())], UploadForm(batch_size=8), Store())
    with pytest.raises(ImportFormatError, match="the upload form's Batch size / concurrency"):
        import_uploads([(aiperf.name, aiperf.read_bytes())], UploadForm(hardware="h100-sxm"), Store())
    form = UploadForm.from_values({"hardware": "h100-sxm", "model": "qwen2.5-7b", "batch_size": 8.0,
                                   "load_kind": "as in file"})
    info, _ = import_uploads([(aiperf.name, aiperf.read_bytes())], form, Store())
    run = Store().runs(info.id).iloc[0]
    assert (run["load_kind"], run["batch_size"]) == ("concurrency", 8.0)

    thr = formats_dir / "vllm-benchmark-throughput" / "vllm-ascend-nightly-nv-action__throughput_llama8B_tp1.json"
    form = UploadForm(hardware="h100-sxm", model="llama-3.1-8b", input_len_tok=1024.0, output_len_tok=512.0)
    info, _ = import_uploads([(thr.name, thr.read_bytes())], form, Store())
    runs = Store().runs(info.id)
    assert set(runs["input_len_tok"]) == {1024.0} and set(runs["output_len_tok"]) == {512.0}

    pair = sorted((formats_dir / "optimum-benchmark").glob("*llama_awq*"))
    assert [p.name.endswith("config.json") for p in pair] == [True, False]
    info, results = import_uploads([(p.name, p.read_bytes()) for p in pair], UploadForm(), Store())
    assert info.n_runs == 1 and [r.file for r in results] == [pair[1].name]

    csv = b"gpu,model,conc,tps,lat_ms\nh100-sxm,llama-3.1-8b,1,100,50\nh100-sxm,llama-3.1-8b,4,320,60\n"
    form = UploadForm(format="csv", column_map="hardware=gpu, model=model\nbatch_size=conc,output_throughput_tok_s=tps",
                      framework="vllm", input_len_tok=128.0, output_len_tok=128.0, load_kind="concurrency")
    info, _ = import_uploads([("mine.csv", csv)], form, Store())
    assert Store().runs(info.id)["output_throughput_tok_s"].tolist() == [100.0, 320.0]
    # semicolons separate entries too, and a mapping with the format left to detection means the generic CSV
    form = UploadForm(column_map="hardware=gpu; model=model; batch_size=conc; output_throughput_tok_s=tps",
                      framework="vllm", input_len_tok=128.0, output_len_tok=128.0, load_kind="concurrency",
                      name="auto")
    info, _ = import_uploads([("mine.csv", csv)], form, Store())
    assert info.formats == ("csv",)
    with pytest.raises(ValidationError, match="'batch_size conc' is not canonical=source") as err:
        to_meta(UploadForm(column_map="hardware=gpu, batch_size conc"))
    assert "Column mapping (generic CSV)" in str(err.value)


def test_table_helpers() -> None:
    runs = import_bytes([("ui_runs.csv", UI_RUNS.read_bytes())], store=Store())[0]
    df = Store().runs(runs.id)
    opts = tables.filter_options(df)
    assert opts["lengths"] == ["128/128", "128/1024"]
    assert opts["hardware"] == ["a100-80gb", "h100-sxm"]
    kept = tables.filter_runs(df, {"hardware": ["a100-80gb"], "lengths": ["128/1024"]})
    assert kept["output_throughput_tok_s"].tolist() == [88.5, 320.0, 1010.25]
    assert len(tables.filter_runs(df, {"hardware": []})) == 12  # empty selection: no filter
    with pytest.raises(ValueError, match="cannot filter"):
        tables.filter_runs(df, {"batch_size": ["1"]})
    assert tables.default_x(df) == "batch_size"
    # one configuration written one file per load point is one curve, not a colour per file
    one = df[(df["hardware"] == "a100-80gb") & (df["output_len_tok"] == 1024)].assign(
        source_file=lambda d: [f"c{i}.jsonl" for i in range(len(d))])
    assert one["source_file"].nunique() > 1 and tables.default_color(one) == "hardware"
    # The CSV download re-imports as the canonical format with the same rows.
    again, res = import_bytes([("again.csv", tables.runs_csv_bytes(kept))], store=Store())
    assert res[0].format == "canonical" and again.n_runs == 3


def test_an_unlimited_request_rate_reads_unlimited_in_the_runs_table() -> None:
    # Guards: SGLang's request rate of inf (every request at once) read "Infinity" in the Data page's table.
    df = pd.DataFrame({"batch_size": [8.0, 32.0, 4.0], "request_rate_rps": [float("inf"), 2.5, np.nan]})
    shown = tables.runs_display(df)
    assert shown["request_rate_rps"].tolist() == [tables.UNLIMITED_RATE, "2.5", pd.NA]
    assert shown["batch_size"].tolist() == [8.0, 32.0, 4.0] and df["request_rate_rps"].iloc[0] == float("inf")
    finite = df.iloc[1:]
    assert tables.runs_display(finite) is finite  # nothing to rewrite: numbers stay numbers


def test_ensure_sample_data_fills_only_an_empty_store(tmp_path: Path) -> None:
    d = tmp_path / "samples"
    d.mkdir()
    (d / "cpu_sweep.csv").write_bytes(UI_RUNS.read_bytes())
    store = Store()
    assert samples.ensure_sample_data(store, d) == ["cpu_sweep.csv"]
    (info,) = store.datasets()
    assert (info.name, info.n_runs) == (samples.SAMPLE_DATASET_NAME, 12)
    assert samples.ensure_sample_data(store, d) == []  # not twice
    assert len(store.datasets()) == 1


# --------------------------------------------------------------------------------------------------
# the app


def test_empty_store_imports_the_samples_and_shows_them(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    d = tmp_path / "samples"
    d.mkdir()
    (d / "cpu_sweep.csv").write_bytes(UI_RUNS.read_bytes())
    monkeypatch.setattr(samples, "SAMPLE_DIR", d)
    at = _app()
    _no_exception(at)
    info = " ".join(_texts(at.info))
    assert "sample data (1 file)" in info and "real measurements made by perfmodel itself" in info
    (ds,) = Store().datasets()
    assert at.selectbox(key=K.DATASET_WIDGET).value == ds.id
    assert at.query_params["dataset"] == ds.id
    fig = _figure(at)
    assert {t["name"] for t in fig["data"]} == {"a100-80gb", "h100-sxm"}
    # A second run in the same session says it again but imports nothing more; "Got it" hides it.
    at.run()
    assert len(Store().datasets()) == 1 and any("sample data" in t for t in _texts(at.info))
    at.button(key="ui.sample_notice.dismiss").click().run()
    _no_exception(at)
    assert not any("sample data" in t for t in _texts(at.info))


def test_real_sample_runs_import(monkeypatch: pytest.MonkeyPatch) -> None:
    files = sorted((REPO / "sample_runs").glob("*.csv"))
    if not files:
        pytest.skip("sample_runs/ holds no CSV file yet")
    monkeypatch.setattr(samples, "SAMPLE_DIR", REPO / "sample_runs")
    at = _app()
    _no_exception(at)
    (ds,) = Store().datasets()
    n_rows = sum(len(pd.read_csv(f)) for f in files)
    assert ds.n_runs == n_rows  # perfmodel's own measurements import without a dropped row
    notice = " ".join(_texts(at.info))
    assert f"sample data ({len(files)} files)" in notice  # counted, not listed (ten names filled the notice)
    # Half the files were measured on a GPU: the notice used to call them all "real CPU measurements".
    assert "CPU measurements" not in notice
    if any("h200" in f.name for f in files):
        assert "NVIDIA H200 GPU" in notice
    assert _figure(at)["data"], "the sample data plots nothing"


def test_empty_store_without_samples_says_what_to_do() -> None:
    at = _app()
    _no_exception(at)
    assert any("No dataset yet" in t for t in _texts(at.info))
    assert not at.get("plotly_chart")


def test_upload_import_shows_counts_and_issues() -> None:
    at = _app()
    at.file_uploader(key=K.UPLOAD_FILES).set_value([("ui_runs.csv", UI_RUNS.read_bytes(), "text/csv")])
    at.text_input(key=K.FORM_FIELD["name"]).input("uploaded runs")
    at.button(key=K.UPLOAD_SUBMIT).click().run()
    _no_exception(at)
    assert not at.error
    (ds,) = Store().datasets()
    # the file's warm-up row is left out for an error: a warning, not a green banner
    assert not at.success
    banner = " ".join(w for w in _texts(at.warning) if w.startswith("Imported"))
    assert "**12**" in banner and "uploaded runs" in banner and "**1** row(s) of the file(s) were left out" in banner
    # The per-file counts and the issues table of the import.
    frames = [d.value for d in at.dataframe]
    counts = next(f for f in frames if list(f.columns) == ["file", "runs", "error", "warning", "info"])
    assert counts.iloc[0].tolist() == ["ui_runs.csv", 12, 1, 0, 0]
    issue_tables = [f for f in frames if list(f.columns) == list(tables.ISSUE_COLUMNS)]
    assert issue_tables[0][["row", "column"]].values.tolist() == [[13, "load_kind"]]
    assert "'warmup' is not one of" in issue_tables[0].iloc[0]["message"]
    # The new dataset is selected and in the link.
    assert at.selectbox(key=K.DATASET_WIDGET).value == ds.id
    assert at.query_params["dataset"] == ds.id
    # Filtering the issues by severity.
    at.multiselect(key=K.IMPORT_ISSUE_SEVERITY).set_value(["warning", "info"]).run()
    frames = [d.value for d in at.dataframe if list(d.value.columns) == list(tables.ISSUE_COLUMNS)]
    assert [len(f) for f in frames] == [0, 1]  # the dataset's own Issues tab keeps its selection


def test_after_an_import_the_form_starts_empty_and_a_failure_drops_the_old_banner() -> None:
    # The uploader kept the imported file and the form its hardware: adding a second file and pressing Import
    # stored the first again, with the second file's rows labelled with the first one's hardware.
    at = _app()
    at.file_uploader(key=K.UPLOAD_FILES).set_value([("ui_runs.csv", UI_RUNS.read_bytes(), "text/csv")])
    at.selectbox(key=K.FORM_FIELD["weight_dtype"]).set_value("fp8")
    at.button(key=K.UPLOAD_SUBMIT).click().run()
    _no_exception(at)
    assert any(w.startswith("Imported") for w in _texts(at.warning)) and len(Store().datasets()) == 1
    assert [u.key for u in at.file_uploader] == [f"{K.UPLOAD_FILES}.1"]
    fresh = at.file_uploader(key=f"{K.UPLOAD_FILES}.1")
    # the fields too have new keys (the browser keeps a widget's value and sends it back: popped from the
    # session state, the old hardware stayed in the form and went with the next file)
    field = f"{K.FORM_FIELD['weight_dtype']}.1"
    assert fresh.value in (None, []) and at.selectbox(key=field).value == "as in file"
    assert not [w for w in at.selectbox if w.key == K.FORM_FIELD["weight_dtype"]]
    fresh.set_value([("notes.txt", b"hello, this is not a benchmark\n", "text/plain")])
    at.button(key=K.UPLOAD_SUBMIT).click().run()
    _no_exception(at)
    assert at.error and "Nothing was imported" in at.error[0].value
    # the earlier import's banner is gone, its data kept
    assert not [w for w in _texts(at.warning) if w.startswith("Imported")] and len(Store().datasets()) == 1
    # the same file again: nothing new is stored, and the page says so rather than "Imported 12 run(s)"
    at.file_uploader(key=f"{K.UPLOAD_FILES}.1").set_value([("ui_runs.csv", UI_RUNS.read_bytes(), "text/csv")])
    at.selectbox(key=field).set_value("fp8")
    at.button(key=K.UPLOAD_SUBMIT).click().run()
    _no_exception(at)
    assert not at.success and any(i.value.startswith("Already stored") for i in at.info)
    assert len(Store().datasets()) == 1
    # again, with a dataset name typed: the stored dataset takes it (the typed name had gone unused)
    [before] = Store().datasets()
    at.file_uploader(key=f"{K.UPLOAD_FILES}.2").set_value([("ui_runs.csv", UI_RUNS.read_bytes(), "text/csv")])
    at.selectbox(key=f"{K.FORM_FIELD['weight_dtype']}.2").set_value("fp8")
    at.text_input(key=f"{K.FORM_FIELD['name']}.2").set_value("fp8 rerun")
    at.button(key=K.UPLOAD_SUBMIT).click().run()
    _no_exception(at)
    [after] = Store().datasets()
    assert after.id == before.id and after.name == "fp8 rerun" != before.name
    [note] = [i.value for i in at.info if i.value.startswith("Already stored")]
    assert "**fp8 rerun**" in note and f"renamed from **{before.name}** as typed" in note


def test_a_file_whose_every_request_failed_is_not_a_green_import(formats_dir: Path) -> None:
    # It read "Imported 0 run(s)" in green: a dataset with nothing to plot.
    path = formats_dir / "vllm-bench-serve" / "er0080-vllm-benchmarking__bench_serve_all_requests_failed_v0.25.1.json"
    at = _app()
    at.file_uploader(key=K.UPLOAD_FILES).set_value([(path.name, path.read_bytes(), "application/json")])
    at.selectbox(key=K.FORM_FIELD["hardware"]).set_value("h100-sxm")
    at.button(key=K.UPLOAD_SUBMIT).click().run()
    _no_exception(at)
    assert not at.success and any("holds **no run**" in w.value for w in at.warning)
    # an issue of the whole file has no row or column: shown as a dash, not "None"
    [issues] = [d for d in at.dataframe if list(d.value.columns) == list(tables.ISSUE_COLUMNS)][:1]
    assert issues.proto.placeholder == "—"


def test_upload_error_is_shown_and_nothing_is_stored() -> None:
    at = _app()
    at.file_uploader(key=K.UPLOAD_FILES).set_value([("notes.txt", b"hello, this is not a benchmark\n",
                                                      "text/plain")])
    at.button(key=K.UPLOAD_SUBMIT).click().run()
    _no_exception(at)
    assert at.error and "Nothing was imported" in at.error[0].value and "notes.txt" in at.error[0].value
    assert Store().datasets() == []
    # in the form's words: the page has no --format or --map ("For any other CSV pass --format csv ...")
    assert "--" not in at.error[0].value and "choose Format csv" in at.error[0].value
    # broken JSON: where it stops being JSON, not "not a recognised benchmark result file"
    at.file_uploader(key=K.UPLOAD_FILES).set_value([("broken.json", b'{"results": [1, 2,, 3]}', "application/json")])
    at.button(key=K.UPLOAD_SUBMIT).click().run()
    assert "broken.json: not valid JSON (line 1, column 19: Expecting value)" in at.error[0].value
    assert Store().datasets() == []


def test_an_import_that_left_rows_out_is_not_a_green_import() -> None:
    # "Imported 4 run(s) with 1 issue(s)" in green, the issue being a row skipped for a text throughput
    lines = UI_RUNS.read_text().splitlines()
    header = lines[0].split(",")
    col = header.index("output_throughput_tok_s")
    bad = lines[2].split(",")
    bad[col] = "fast"
    text = "\n".join([lines[0], lines[1], ",".join(bad), *lines[3:]]) + "\n"
    at = _app()
    at.file_uploader(key=K.UPLOAD_FILES).set_value([("one_bad.csv", text.encode(), "text/csv")])
    at.button(key=K.UPLOAD_SUBMIT).click().run()
    _no_exception(at)
    assert not at.success, [s.value for s in at.success]
    [warning] = [w.value for w in at.warning if w.value.startswith("Imported")]
    # the text throughput's row, and the file's warm-up row (load kind "warmup")
    assert "**2** row(s) of the file(s) were left out for errors" in warning
    assert Store().datasets()[0].n_runs == len(lines) - 3


def test_upload_with_unknown_hardware_is_a_clear_error() -> None:
    # Each row naming hardware the catalog lacks is a row error; the other rows import (one unknown name had
    # blocked the whole file); a file whose every row names it is refused.
    at = _app()
    text = UI_RUNS.read_text().replace("h100-sxm", "Quantum Abacus 9000")
    at.file_uploader(key=K.UPLOAD_FILES).set_value([("odd.csv", text.encode(), "text/csv")])
    at.button(key=K.UPLOAD_SUBMIT).click().run()
    _no_exception(at)
    [warning] = [w.value for w in at.warning if w.value.startswith("Imported")]
    assert "**7** row(s) of the file(s) were left out for errors" in warning  # 6 unknown, 1 warm-up row
    (info,) = Store().datasets()
    issues = Store().issues(info.id)
    odd = issues[issues["message"].str.contains("Quantum Abacus 9000", regex=False)]
    assert info.n_runs == 6 and len(odd) == 6 and set(odd["column"]) == {"hardware"}
    Store().delete_dataset(info.id)
    only = "\n".join(ln for ln in text.splitlines() if not ln.startswith("a100-80gb")) + "\n"
    at = _app()
    at.file_uploader(key=K.UPLOAD_FILES).set_value([("all_odd.csv", only.encode(), "text/csv")])
    at.button(key=K.UPLOAD_SUBMIT).click().run()
    _no_exception(at)
    assert at.error and "Quantum Abacus 9000" in at.error[0].value
    assert Store().datasets() == []


def test_deep_link_restores_dataset_and_filters() -> None:
    first = _store_ui_runs()
    # Same content and metadata is the same dataset, so the second one leaves out the bad row.
    other_bytes = b"\n".join(UI_RUNS.read_bytes().splitlines()[:-1])
    other, _ = import_bytes([("b.csv", other_bytes)], name="second", store=Store())
    at = _app(dataset=first, hardware="h100-sxm")
    _no_exception(at)
    assert not at.warning
    assert at.selectbox(key=K.DATASET_WIDGET).value == first != other.id
    assert at.multiselect(key=K.FILTER["hardware"]).value == ["h100-sxm"]
    # One hardware left after the filter, so the chart colours by what still varies.
    assert at.selectbox(key=K.COLOR).value != "hardware"
    at.selectbox(key=K.COLOR).set_value("hardware").run()
    fig = _figure(at)
    assert [t["name"] for t in fig["data"]] == ["h100-sxm"]
    # Choosing another dataset updates the link.
    at.selectbox(key=K.DATASET_WIDGET).select(other.id).run()
    assert at.query_params["dataset"] == other.id


def test_unknown_dataset_in_link_warns_and_shows_another() -> None:
    ds = _store_ui_runs()
    at = _app(dataset="0123456789abcdef")
    _no_exception(at)
    assert at.warning and "0123456789abcdef" in at.warning[0].value
    assert at.selectbox(key=K.DATASET_WIDGET).value == ds
    assert _figure(at)["data"]


def test_chart_controls_colour_and_log_axis() -> None:
    _store_ui_runs()
    at = _app()
    at.selectbox(key=K.COLOR).select("lengths").run()
    at.toggle(key=K.LOG_X).set_value(False).run()
    _no_exception(at)
    fig = _figure(at)
    assert sorted(t["name"] for t in fig["data"]) == ["128/1024", "128/128"]
    assert fig["layout"]["xaxis"].get("type") != "log"
    trace = next(t for t in fig["data"] if t["name"] == "128/128")
    assert [x for x in trace["x"] if x is not None] == [1, 4, 16, 1, 4, 16]
    assert "hardware: a100-80gb" in trace["text"][0]
    # Filters narrow the chart and the runs table.
    at.multiselect(key=K.FILTER["lengths"]).select("128/1024").run()
    fig = _figure(at)
    assert [t["name"] for t in fig["data"]] == ["128/1024"]
    runs_table = next(d.value for d in at.dataframe if "output_throughput_tok_s" in d.value.columns)
    assert len(runs_table) == 6


def _confirm(at: AppTest, dataset_id: str):  # noqa: ANN202
    return at.checkbox(key=f"{K.DELETE_CONFIRM}.{dataset_id}")


def test_delete_dataset() -> None:
    ds = _store_ui_runs()
    at = _app()
    box = _confirm(at, ds)
    assert "12 run(s) will be deleted" in box.label and not box.value
    _confirm(at, ds).check().run()
    at.button(key="data.delete").click().run()
    _no_exception(at)
    assert Store().datasets() == [] and "dataset" not in at.query_params
    assert any("No dataset yet" in t for t in _texts(at.info))


def test_delete_needs_confirming_and_does_not_arm_the_next_dataset() -> None:
    # "Delete" used to delete in one click, and the button then stood live for the next dataset shown.
    first = _store_ui_runs()
    other_bytes = b"\n".join(UI_RUNS.read_bytes().splitlines()[:-1])
    second, _ = import_bytes([("b.csv", other_bytes)], name="second", store=Store())
    at = _app(dataset=first)
    _no_exception(at)
    assert at.button(key="data.delete").disabled  # not clickable before the box is ticked
    _confirm(at, first).check().run()
    assert not at.button(key="data.delete").disabled
    at.button(key="data.delete").click().run()
    _no_exception(at)
    assert [d.id for d in Store().datasets()] == [second.id]
    # The page now shows the other dataset, not armed: a second click cannot delete it.
    assert at.selectbox(key=K.DATASET_WIDGET).value == second.id
    assert not _confirm(at, second.id).value and at.button(key="data.delete").disabled


def test_broken_sample_file_is_reported_not_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = tmp_path / "samples"
    d.mkdir()
    # every row unknown (a file with some known rows imports those, the others as row errors)
    (d / "broken.csv").write_text(UI_RUNS.read_text().replace("h100-sxm", "Quantum Abacus 9000")
                                  .replace("a100-80gb", "Quantum Abacus 9000"))
    monkeypatch.setattr(samples, "SAMPLE_DIR", d)
    at = _app()
    _no_exception(at)
    assert any("sample data could not be imported" in t and "Quantum Abacus 9000" in t for t in _texts(at.error))
    at.run()  # still said on the next rerun
    assert any("sample data could not be imported" in t for t in _texts(at.error))
    assert Store().datasets() == []


def test_data_page_lists_suspect_runs(suspect_dataset: None) -> None:
    # 3,000 tok/s at batch 8 beats reading Llama-3-8B's bf16 weights once per step on one H100 (~1,670).
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=60).run()
    assert not at.exception
    exp = [e for e in at.expander if "suspect run" in e.label]
    assert len(exp) == 1 and exp[0].label.startswith("1 suspect run(s)")
    table = exp[0].dataframe[0].value
    assert table["batch_size"].tolist() == [8.0] and table["output_throughput_tok_s"].tolist() == [3000.0]
    assert abs(float(table["bound_tok_s"].iloc[0]) - 1669) < 20
    # and a TTFT of 1 ms for 16 prompts of 512 tokens, below the 133 ms their FLOPs take at the H100's peak
    fast = [e for e in at.expander if "TTFT shorter than physics allows" in e.label]
    assert len(fast) == 1 and fast[0].label.startswith("1 run(s)")
    t = fast[0].dataframe[0].value
    assert t["batch_size"].tolist() == [16.0] and t["ttft_s"].tolist() == [0.001]
    assert abs(float(t["ttft_floor_s"].iloc[0]) - 2 * 8.03e9 * 8192 / 989.5e12) < 1e-3
    # and batch 8 ran 10 times batch 4's throughput for twice the sequences: listed, not left out of training
    faster = [e for e in at.expander if "faster per sequence than a smaller batch" in e.label]
    assert len(faster) == 1 and faster[0].label.startswith("1 batch(es)")
    f = faster[0].dataframe[0].value
    assert f[["batch_size", "smaller_batch"]].values.tolist() == [[8.0, 4.0]]
    assert f["growth_over_batch"].iloc[0] == pytest.approx(5.0)


def test_dataset_table_lists_each_format_once() -> None:
    # The sample dataset (ten canonical files) read "canonical, canonical, ..." once per file.
    from perfmodel.store import DatasetInfo

    info = DatasetInfo(id="0" * 16, name="s", created_at="2026-12-01T00:00:00", n_runs=3, n_issues=0,
                       files=("a.csv", "b.csv", "c.json"), formats=("canonical", "canonical", "vllm-bench"),
                       provenance={})
    assert tables.datasets_frame([info])["formats"].tolist() == ["canonical, vllm-bench"]


def test_kept_choices_are_not_rewritten_when_all_still_valid() -> None:
    """keep_valid wrote the Data page's column choice back on every run, so Streamlit warned on every run
    that the widget had a default and a value set through the Session State API."""
    def script() -> None:
        import streamlit as st

        from perfmodel.ui.widgets import keep_valid

        st.session_state.setdefault("writes", 0)
        if "cols" in st.session_state:
            before = st.session_state["cols"]
            keep_valid("cols", ["a", "b", "c"])
            st.session_state["writes"] += st.session_state["cols"] is not before
        st.multiselect("Columns", ["a", "b", "c"], key="cols")

    at = AppTest.from_function(script).run()
    at.multiselect(key="cols").set_value(["a", "b"]).run()
    at.run()
    assert at.session_state["writes"] == 0 and at.multiselect(key="cols").value == ["a", "b"]


def test_a_run_without_a_batch_size_does_not_break_the_pages(formats_dir: Path) -> None:
    """vLLM benchmark_serving with request_rate "inf" and no max_concurrency records no batch: the Data page
    raised "row 1, column 'batch_size': value is missing" from the TTFT check, and drew nothing below it."""
    path = formats_dir / "vllm-benchmark-serving" / \
        "lambdalabs-vllm-benchmark__prompt_10_1xH100-80GB-SXM_Meta-Llama-3.1-8B-FP8_tp1_len2048.json"
    info, _ = import_uploads([(path.name, path.read_bytes())], UploadForm(hardware="h100-sxm", device_count=1),
                             Store())
    assert Store().runs(info.id)["batch_size"].isna().all()
    at = _app(dataset=info.id)
    _no_exception(at)
    assert any("runs match the filters" in c.value for c in at.caption)
    assert any("Delete this dataset" in e.label for e in at.expander)  # the page was drawn to its end
    for page in ("pages/curves.py", "pages/whatif.py", "pages/planner.py"):
        _no_exception(at.switch_page(page).run())


def test_offline_runs_are_drawn_against_their_lengths(formats_dir: Path) -> None:
    # trtllm-bench's offline ISL x OSL runs record no load (request rate inf): the chart defaulted to the request
    # rate and drew nothing, "63 run(s) without request_rate_rps > 0 ... not shown".
    path = formats_dir / "trtllm-bench" / "trtllm-benchmarks-etched__throughput_summary.csv"
    info, _ = import_uploads([(path.name, path.read_bytes())], UploadForm(hardware="h100-sxm", model="llama-3.1-70b"),
                             Store())
    runs = Store().runs(info.id)
    assert tables.default_x(runs) == "input_len_tok"
    at = _app(dataset=info.id)
    _no_exception(at)
    assert at.selectbox(key=K.X_AXIS).value == "input_len_tok"
    fig = _figure(at)
    assert fig["data"] and "not shown" not in fig["layout"]["title"]["text"]
    # Curves says why there is no curve, not "measure more batch sizes"
    at.switch_page("pages/curves.py").run()
    _no_exception(at)
    [why] = [w.value for w in at.warning if "no saturation curve" in w.value]
    assert why.startswith("These runs record no batch size or concurrency") and "Measure more" not in why
    assert not at.get("plotly_chart") and not at.dataframe  # no empty chart, no table of 63 "none" fits
    assert not any("fewer than" in c.value for c in at.caption)  # nor "63 with fewer than 3 batch sizes"


def test_runs_columns_read_in_words() -> None:
    """The Runs table, its column chooser and the Curves grouping showed raw names (output_throughput_tok_s)."""
    words = {c: tables.column_words(c) for c in ("output_throughput_tok_s", "device_count", "fw_num_threads",
                                                 "ttft_p90_s", "hw_cpu_util_pct", "input_len_tok", "weight_dtype")}
    assert words == {"output_throughput_tok_s": "output throughput (tok/s)", "device_count": "devices",
                     "fw_num_threads": "threads", "ttft_p90_s": "TTFT p90 (s)",
                     "hw_cpu_util_pct": "telemetry: CPU use (%)", "input_len_tok": "input length (tokens)",
                     "weight_dtype": "weight dtype"}
    assert tables.column_help("output_throughput_tok_s") == ("generated tokens per second, all requests "
                                                             "(column output_throughput_tok_s)")
    _store_ui_runs()
    at = _app()
    assert "output throughput (tok/s)" in at.multiselect(key=K.COLUMNS).options


def test_a_burst_without_a_concurrency_limit_is_said_at_import(formats_dir: Path) -> None:
    """The import reported success with two warnings, neither saying that the run has no load axis."""
    path = formats_dir / "vllm-benchmark-serving" / \
        "lambdalabs-vllm-benchmark__prompt_10_1xH100-80GB-SXM_Meta-Llama-3.1-8B-FP8_tp1_len2048.json"
    _, results = import_uploads([(path.name, path.read_bytes())], UploadForm(hardware="h100-sxm", device_count=1),
                                Store())
    [warn] = [i for i in results[0].issues if i.column == "batch_size"]
    assert warn.severity == "warning" and warn.message.startswith(
        "1 of 1 run(s) record no batch size or concurrency and no finite request rate")


def test_the_upload_forms_hardware_and_model_read_with_their_catalog_keys() -> None:
    # Guards: the pickers showed names only, so typing the catalog key ("h100-sxm") found nothing.
    from perfmodel import catalog
    from perfmodel.ui.widgets import upload_field_keys

    at = _app()
    _no_exception(at)
    f = upload_field_keys()
    hw = at.selectbox(key=f["hardware"]).options
    h100 = catalog.resolve_hardware("h100-sxm").name
    assert f"{h100} (h100-sxm)" in hw
    assert f"{catalog.resolve_model('llama-3-8b').name} (llama-3-8b)" in at.selectbox(key=f["model"]).options


def test_the_upload_form_gives_a_gamma_arrival_its_burstiness(formats_dir: Path) -> None:
    # inference-perf does not record how its requests arrived; the form's Arrival supplied it, and a gamma
    # arrival's shape had no field at all (the CLI takes --burstiness).
    src = formats_dir / "inference-perf" / "inference-perf-kubecon25-vllm-h100__stage_3_lifecycle_metrics.json"
    at = _app()
    at.file_uploader(key=K.UPLOAD_FILES).set_value([(src.name, src.read_bytes(), "application/json")])
    at.selectbox(key=K.FORM_FIELD["hardware"]).set_value("h100-sxm")
    at.selectbox(key=K.FORM_FIELD["model"]).set_value("llama-3-8b")
    at.selectbox(key=K.FORM_FIELD["arrival"]).set_value("gamma")
    at.number_input(key=K.FORM_FIELD["burstiness"]).set_value(0.5)
    at.button(key=K.UPLOAD_SUBMIT).click().run()
    _no_exception(at)
    (ds,) = Store().datasets()
    runs = Store().runs(ds.id)
    assert runs["arrival"].tolist() == ["gamma"] and runs["burstiness"].tolist() == [0.5]
    # a shape without gamma is refused, naming the form's fields, and nothing is stored
    at.file_uploader(key=f"{K.UPLOAD_FILES}.1").set_value([(src.name, src.read_bytes(), "application/json")])
    at.number_input(key=f"{K.FORM_FIELD['burstiness']}.1").set_value(0.5)
    at.button(key=K.UPLOAD_SUBMIT).click().run()
    _no_exception(at)
    assert at.error and "Burstiness" in at.error[0].value, [e.value for e in at.error]
    assert len(Store().datasets()) == 1
