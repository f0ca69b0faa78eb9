"""Import messages a user acts on: each says what to do in the words of the client that shows it.

Found importing every real file under ../shared/data as a user would (CLI and the Data page): the page told a
user to "supply it with the form's Input tokens (CLI) or the upload form", an llmperf per-request file refused
for its missing concurrency did not say how to give it, and inference-perf's pooled summary and Prometheus
reports, which record no rate, were said to have sent "all requests at once".
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from streamlit.testing.v1 import AppTest

from perfmodel.cli import main
from perfmodel.importers import ImportMeta, read_file
from perfmodel.store import Store
from perfmodel.ui import samples
from perfmodel.ui import state as K

APP = str(Path(__file__).resolve().parents[1] / "app.py")


@pytest.fixture(autouse=True)
def no_samples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty sample directory: the page starts with an empty store."""
    d = tmp_path / "no-samples"
    d.mkdir()
    monkeypatch.setattr(samples, "SAMPLE_DIR", d)


def test_llmperf_records_without_a_concurrency_say_how_to_give_it(formats_dir: Path, tmp_path: Path) -> None:
    f = formats_dir / "llmperf" / "llmperf-leaderboard__anyscale_70b_individual_responses.json"
    home = tmp_path / "home"
    res = CliRunner().invoke(main, ["--home", str(home), "import", str(f), "--hardware", "h100-sxm",
                                    "--model", "llama-2-70b"])
    assert res.exit_code == 2
    assert f"{f.name}, row 1, column 'batch_size'" in res.output and "supply it with --batch-size" in res.output
    assert Store(home).datasets() == []  # nothing stored
    ok = CliRunner().invoke(main, ["--home", str(home), "import", str(f), "--hardware", "h100-sxm",
                                   "--model", "llama-2-70b", "--batch-size", "5"])
    assert ok.exit_code == 0, ok.output
    assert len(Store(home).datasets()) == 1


@pytest.mark.parametrize("report", ["summary_lifecycle_metrics", "stage_6_prometheus_metrics"])
def test_a_report_without_a_rate_is_not_called_a_burst(formats_dir: Path, report: str) -> None:
    f = formats_dir / "inference-perf" / f"inference-perf-kubecon25-vllm-h100__{report}.json"
    res = read_file(f, meta=ImportMeta(hardware="h100-sxm", model="llama-3-8b"))
    assert res.runs["request_rate_rps"].isna().all() and res.runs["batch_size"].isna().all()
    said = " | ".join(i.message for i in res.issues)
    assert "all requests sent at once" not in said
    # each report says once that the run has no load axis: the summary in its own words, Prometheus by finalize
    rate = [i for i in res.issues if i.column == "request_rate_rps"]
    assert len(rate) == 1 and rate[0].severity == "warning"
    assert ("pooled over every stage" in rate[0].message) == (report == "summary_lifecycle_metrics")


def test_an_unlimited_burst_is_still_called_one(formats_dir: Path) -> None:
    f = formats_dir / "vllm-benchmark-serving" / "vllm-ascend-nightly-nv-action__serving_llama8B_tp1_sharegpt_qps_inf.json"
    res = read_file(f, meta=ImportMeta(hardware="ascend-910b", input_len_tok=200, output_len_tok=200))
    [w] = [i for i in res.issues if i.column == "batch_size"]
    assert "no finite request rate (all requests sent at once" in w.message


def _upload(at: AppTest, files: list[Path], **form: object) -> AppTest:
    at.file_uploader(key=K.UPLOAD_FILES).set_value([(p.name, p.read_bytes(), "application/json") for p in files])
    for name, value in form.items():
        key = K.FORM_FIELD[name]
        [w] = [w for kind in ("selectbox", "number_input") for w in at.get(kind) if w.key == key]
        w.set_value(value)
    return at.button(key=K.UPLOAD_SUBMIT).click().run()


@pytest.mark.parametrize(("folder", "form", "words"), [
    ("vllm-benchmark-throughput", {"hardware": "ascend-910b", "model": "llama-3-8b"},
     "supply it with the form's Input tokens; the file does not record output_len_tok; supply it with the form's "
     "Output tokens"),
    ("vllm-bench-serve-stdout", {},
     "the file does not say which hardware it ran on; supply it with the form's Hardware"),
    ("aiperf", {"hardware": "h100-sxm", "model": "qwen3-30b-a3b"},
     "supply the concurrency: the form's Batch size / concurrency (read as the concurrency)."),
    ("llmperf", {"hardware": "h100-sxm", "model": "llama-2-70b"},
     "supply it with the form's Batch size / concurrency"),
])
def test_the_data_page_says_what_to_fill_in_its_own_words(formats_dir: Path, folder: str, form: dict,
                                                          words: str) -> None:
    files = sorted((formats_dir / folder).iterdir())
    files = [p for p in files if "individual" in p.name] if folder == "llmperf" else files[:1]
    at = _upload(AppTest.from_file(APP, default_timeout=60).run(), files, **form)
    assert not at.exception, [e.value for e in at.exception]
    [err] = [e.value for e in at.error]
    assert "Nothing was imported" in err and files[0].name in err and words in err, err
    assert "(CLI" not in err and "--" not in err and "upload form" not in err
    assert Store().datasets() == []


def test_a_generic_csv_missing_mappings_reads_in_the_forms_words(tmp_path: Path) -> None:
    """The page had said "framework (or the form's Framework on the command line, the framework field of the
    upload form)"."""
    from perfmodel.errors import ImportFormatError
    from perfmodel.ui.forms import UploadForm, import_uploads, in_form_words

    text = b"conc,tps,lat_ms\n1,100,50\n2,200,60\n"
    with pytest.raises(ImportFormatError) as err:
        import_uploads([("mine.csv", text)], UploadForm(column_map="batch_size=conc, output_throughput_tok_s=tps"),
                       Store(tmp_path / "home"))
    said = in_form_words(str(err.value))
    assert "framework (or the form's Framework)" in said and "input_len_tok (or the form's Input tokens)" in said
    assert "hardware (or the form's Hardware)" in said
    assert "command line" not in said and "(CLI" not in said and "--" not in said
