"""The arrival process of request-rate runs (``arrival``, ``burstiness``): read where a client's file says it,
empty where it does not.

GuideLLM's constant and Poisson benchmarks at 5 req/s (guidellm-pd-disaggregation: 4.68 against 5.58 req/s
achieved, 562 against 703 tok/s) had been stored alike, request rate 5 and repeat 0, nothing telling them apart.
"""

from __future__ import annotations

import copy
import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest

from perfmodel.importers import ImportMeta, read_file

# these tests pin the importers, not the catalog
pytestmark = pytest.mark.usefixtures("stub_catalog")

DATA = Path(__file__).resolve().parents[1] / "data"
META = ImportMeta(hardware="T4", model="Qwen/Qwen3-0.6B", framework="vllm", device_count=2)


def test_guidellm_csv_constant_and_poisson_at_one_rate_are_told_apart(formats_dir: Path) -> None:
    p = formats_dir / "guidellm-derived-csv" / "guidellm-pd-disaggregation__all-benchmarks.csv"
    runs = read_file(p, meta=META).runs.set_index("source_row")
    const, poisson = runs.loc[3], runs.loc[4]  # constant5, poisson5
    assert const["request_rate_rps"] == poisson["request_rate_rps"] == 5.0
    assert (const["arrival"], poisson["arrival"]) == ("constant", "poisson")
    assert math.isnan(const["burstiness"]) and poisson["burstiness"] == 1.0
    # the sweep's eight rates are constant; concurrency and throughput profiles have no arrival process
    assert (runs.loc[7:14, "arrival"] == "constant").all()
    assert runs.loc[[1, 2, 5, 6, 15, 16], "arrival"].isna().all()
    assert runs["burstiness"].notna().sum() == 1
    # two different points, each its own repeat 0 (not two repeats of one)
    assert runs.loc[[3, 4], "repeat_idx"].tolist() == [0, 0]
    keys = runs.loc[[3, 4], ["request_rate_rps", "arrival", "repeat_idx"]]
    assert not keys.duplicated().any()


def _guidellm(tmp_path: Path, strategies: list[dict]) -> Path:
    doc = json.loads((DATA / "guidellm" / "guidellm_v2_benchmarks.json").read_text())
    template = doc["benchmarks"][2]
    doc["benchmarks"] = []
    for s in strategies:
        b = copy.deepcopy(template)
        b["config"]["strategy"] = s
        doc["benchmarks"].append(b)
    p = tmp_path / "benchmarks.json"
    p.write_text(json.dumps(doc))
    return p


def test_guidellm_report_strategy_is_the_arrival(tmp_path: Path) -> None:
    p = _guidellm(tmp_path, [{"type_": "constant", "rate": 2.5}, {"type_": "poisson", "rate": 2.5},
                             {"type_": "trace"}, {"type_": "concurrent", "streams": 4}])
    runs = read_file(p, meta=ImportMeta(hardware="H100", model="Qwen/Qwen3-8B")).runs
    assert runs["arrival"].tolist()[:3] == ["constant", "poisson", "trace"] and pd.isna(runs["arrival"].iloc[3])
    assert runs["request_rate_rps"].tolist()[:2] == [2.5, 2.5] and math.isnan(runs["request_rate_rps"].iloc[2])
    assert runs["burstiness"].iloc[1] == 1.0 and runs["burstiness"].drop(index=1).isna().all()


def _serve(tmp_path: Path, name: str, **fields: object) -> Path:
    rec = {"date": "20260818-041350", "backend": "vllm", "model_id": "facebook/opt-125m", "num_prompts": 8,
           "duration": 2.0, "completed": 8, "failed": 0, "total_input_tokens": 800, "total_output_tokens": 400,
           "request_throughput": 4.0, "output_throughput": 200.0, "total_token_throughput": 600.0,
           "mean_ttft_ms": 20.0, "median_ttft_ms": 19.0, "p99_ttft_ms": 30.0, "mean_tpot_ms": 5.0,
           "mean_itl_ms": 5.0, "mean_e2el_ms": 300.0, "max_concurrency": None, **fields}
    rec = {k: v for k, v in rec.items() if v is not ...}
    p = tmp_path / name
    p.write_text(json.dumps(rec))
    return p


@pytest.mark.parametrize(("fields", "arrival", "burstiness"), [
    ({"request_rate": 4.0, "burstiness": 1.0}, "poisson", 1.0),
    ({"request_rate": 4.0, "burstiness": 0.5}, "gamma", 0.5),
    ({"request_rate": 4.0, "burstiness": 3}, "gamma", 3.0),
    # benchmark_serving.py before --burstiness drew exponential gaps only
    ({"request_rate": 4.0, "burstiness": ...}, "poisson", 1.0),
    # a rate cap on a concurrency is still an arrival process
    ({"request_rate": 4.0, "burstiness": 0.5, "max_concurrency": 2}, "gamma", 0.5),
    # all at once: no arrival process
    ({"request_rate": "inf", "burstiness": 1.0}, None, None),
    ({"request_rate": "inf", "burstiness": 1.0, "max_concurrency": 2}, None, None),
])
def test_vllm_bench_serve_burstiness(tmp_path: Path, fields: dict, arrival: str | None,
                                     burstiness: float | None) -> None:
    p = _serve(tmp_path, "serve.json", **fields)
    run = read_file(p, format="vllm-bench-serve", meta=ImportMeta(hardware="RTX 3090")).runs.iloc[0]
    if arrival is None:
        assert pd.isna(run["arrival"]) and math.isnan(run["burstiness"])
    else:
        assert (run["arrival"], run["burstiness"]) == (arrival, burstiness)


def test_vllm_bench_serve_log_reads_burstiness_from_the_namespace(formats_dir: Path, tmp_path: Path) -> None:
    src = next((formats_dir / "vllm-bench-serve-stdout").glob("*-16-320-*"))
    text = src.read_text()
    base = read_file(src, meta=ImportMeta(hardware="H100")).runs.iloc[0]
    assert pd.isna(base["arrival"])  # request rate inf: all at once
    text = text.replace("request_rate=inf", "request_rate=4.0").replace("burstiness=1.0", "burstiness=0.25")
    text = re.sub(r"Traffic request rate:\s+inf", "Traffic request rate: 4.0", text)
    p = tmp_path / "gamma.log"
    p.write_text(text)
    run = read_file(p, meta=ImportMeta(hardware="H100")).runs.iloc[0]
    assert (run["request_rate_rps"], run["arrival"], run["burstiness"]) == (4.0, "gamma", 0.25)


@pytest.mark.parametrize(("phase_type", "arrival"), [("poisson", "poisson"), ("constant", "constant"),
                                                     ("user_centric", None)])
def test_aiperf_json_rate_phase_type_is_the_arrival(tmp_path: Path, phase_type: str, arrival: str | None) -> None:
    doc = json.loads((DATA / "aiperf" / "profile_export_aiperf.json").read_text())
    doc["input_config"]["phases"][-1] = {"name": "profiling", "type": phase_type, "rate": 10.0, "requests": 192}
    p = tmp_path / "profile_export_aiperf.json"
    p.write_text(json.dumps(doc))
    run = read_file(p, meta=ImportMeta(hardware="H100")).runs.iloc[0]
    assert (run["load_kind"], run["request_rate_rps"]) == ("request_rate", 10.0)
    assert (None if pd.isna(run["arrival"]) else run["arrival"]) == arrival
    assert (run["burstiness"] == 1.0) if arrival == "poisson" else math.isnan(run["burstiness"])


def test_aiperf_json_loadgen_request_rate_mode(tmp_path: Path) -> None:
    doc = json.loads((DATA / "aiperf" / "profile_export_aiperf.json").read_text())
    doc["input_config"] = {"models": ["Qwen/Qwen3-8B"],
                           "loadgen": {"request_rate": 2.0, "request_rate_mode": "constant"}}
    p = tmp_path / "profile_export_aiperf.json"
    p.write_text(json.dumps(doc))
    run = read_file(p, meta=ImportMeta(hardware="H100")).runs.iloc[0]
    assert (run["request_rate_rps"], run["arrival"]) == (2.0, "constant")


def test_inference_perf_stage_says_its_arrival_is_not_recorded(formats_dir: Path) -> None:
    p = formats_dir / "inference-perf" / "inference-perf-kubecon25-vllm-h100__stage_3_lifecycle_metrics.json"
    res = read_file(p, meta=ImportMeta(hardware="H100", model="meta-llama/Meta-Llama-3-8B-Instruct"))
    assert pd.isna(res.runs["arrival"].iloc[0])
    note = [i for i in res.issues if i.column == "arrival"]
    assert len(note) == 1 and note[0].severity == "info" and "load.type" in note[0].message


def test_formats_that_do_not_record_an_arrival_leave_it_empty(formats_dir: Path) -> None:
    p = formats_dir / "vllm-server-qps-csv" / "neuralmagic-vllm-benchmarking__4xA4000_server_benchmarking_results.csv"
    runs = read_file(p, meta=ImportMeta(model="mistralai/Mistral-7B-v0.1")).runs
    assert (runs["load_kind"] == "request_rate").all() and runs["arrival"].isna().all()


def test_arrival_is_supplied_for_files_that_do_not_say_and_only_for_rate_rows(formats_dir: Path) -> None:
    """inference-perf's reports do not record the load type (its run config does): --arrival supplies it, on
    request-rate rows only, and the CLI, the Python API and the upload form take it."""
    from perfmodel.ui.forms import UploadForm, to_meta

    files = sorted((formats_dir / "inference-perf").glob("*stage_[0-6]_lifecycle_metrics.json"))
    plain = read_file(files[0], meta=META).runs
    assert plain["arrival"].isna().all()
    runs = read_file(files[0], meta=META.model_copy(update={"arrival": "constant"})).runs
    assert (runs["load_kind"] == "request_rate").all() and (runs["arrival"] == "constant").all()
    assert runs["burstiness"].isna().all()
    poisson = read_file(files[0], meta=META.model_copy(update={"arrival": "poisson"})).runs
    assert (poisson["arrival"] == "poisson").all()
    # a static batch or concurrency row takes none: nothing arrives at a rate there; said once
    from perfmodel.importers.base import _fill_arrival

    mixed = pd.DataFrame({"load_kind": ["request_rate", "static_batch", "concurrency"], "burstiness": math.nan})
    issues: list = []
    _fill_arrival(mixed, "poisson", issues, "f.json")
    assert mixed["arrival"].tolist() == ["poisson", None, None] and mixed["burstiness"].tolist()[0] == 1.0
    assert len(issues) == 1 and "2 of 3 row(s) are other loads" in issues[0].message
    assert to_meta(UploadForm.from_values({"arrival": "gamma"})).arrival == "gamma"
    assert to_meta(UploadForm.from_values({"arrival": "as in file"})) is None
    with pytest.raises(Exception, match="arrival"):
        ImportMeta(arrival="bursty")


def test_inference_perf_says_the_arrival_is_missing_only_when_it_is(formats_dir: Path) -> None:
    f = next((formats_dir / "inference-perf").glob("*stage_0_lifecycle_metrics.json"))
    said = [i.message for i in read_file(f, meta=META).issues if i.column == "arrival"]
    assert len(said) == 1 and said[0].endswith("arrival left empty (pass --arrival)")
    given = read_file(f, meta=META.model_copy(update={"arrival": "constant"}))
    assert not [i for i in given.issues if i.column == "arrival"]  # it had said "left empty" beside the value
    assert (given.runs["arrival"] == "constant").all()


# --- --burstiness: a gamma arrival's shape, for files that do not say ----------------------------------------


@pytest.mark.parametrize(("arrival", "burstiness", "words"), [
    (None, 0.5, "--burstiness 0.5 needs --arrival gamma"),
    ("gamma", 0.0, "--burstiness 0 is not a gamma shape"),
    ("gamma", -2.0, "--burstiness -2 is not a gamma shape"),
    ("gamma", math.nan, "--burstiness nan is not a gamma shape"),
    ("gamma", math.inf, "--burstiness inf is not a gamma shape"),
    ("gamma", 1.0, "--burstiness 1 with --arrival gamma is a Poisson process: choose --arrival poisson"),
    ("poisson", 2.0, "--burstiness 2 with --arrival poisson: a Poisson process is burstiness 1"),
    ("constant", 2.0, "--burstiness 2 with --arrival constant: only --arrival gamma takes a burstiness"),
    ("trace", 0.5, "--burstiness 0.5 with --arrival trace: only --arrival gamma takes a burstiness"),
])
def test_burstiness_is_refused_naming_the_options_and_valid_values(arrival: str | None, burstiness: float,
                                                                   words: str) -> None:
    from perfmodel.importers import check_burstiness

    with pytest.raises(ValueError) as err:
        check_burstiness(arrival, burstiness)
    assert words in str(err.value)
    if arrival != "gamma" or burstiness != 1.0:
        assert "valid: a finite number > 0" in str(err.value) or "choose --arrival gamma" in str(err.value)
    # ImportMeta (the CLI's and the upload form's way in) refuses it with the same words
    with pytest.raises(Exception, match=re.escape(words)):
        ImportMeta(arrival=arrival, burstiness=burstiness)


@pytest.mark.parametrize(("arrival", "burstiness"), [("gamma", 0.5), ("gamma", 4.0), ("poisson", 1.0)])
def test_burstiness_a_gamma_shape_or_poissons_one_is_accepted(arrival: str, burstiness: float) -> None:
    from perfmodel.importers import check_burstiness

    assert check_burstiness(arrival, burstiness) == burstiness
    assert ImportMeta(arrival=arrival, burstiness=burstiness).burstiness == burstiness


def _inference_perf_stages(formats_dir: Path) -> list[Path]:
    return sorted((formats_dir / "inference-perf").glob("*stage_[0-6]_lifecycle_metrics.json"))


def test_gamma_burstiness_is_supplied_for_files_that_do_not_say(formats_dir: Path) -> None:
    """inference-perf's reports record neither the load type nor a shape: --arrival gamma --burstiness B fills
    both on its request-rate rows, and the rows pass the schema's arrival/burstiness checks."""
    from perfmodel.schema import check_runs

    files = _inference_perf_stages(formats_dir)
    for b in (0.25, 3.0):
        runs = read_file(files[1], meta=META.model_copy(update={"arrival": "gamma", "burstiness": b})).runs
        assert (runs["load_kind"] == "request_rate").all()
        assert runs["arrival"].tolist() == ["gamma"] * len(runs) and runs["burstiness"].tolist() == [b] * len(runs)
        assert not check_runs(runs)
    # gamma without a shape: the arrival is known, the shape is not
    runs = read_file(files[1], meta=META.model_copy(update={"arrival": "gamma"})).runs
    assert (runs["arrival"] == "gamma").all() and runs["burstiness"].isna().all()


def test_supplied_arrival_keeps_a_files_own_and_says_so(formats_dir: Path) -> None:
    """vLLM's benchmark_serving.py at 4 req/s records burstiness 1 (Poisson): --arrival gamma --burstiness 0.5
    does not overwrite it and, as every supplied value does, says where it was not applied (it had said
    nothing)."""
    p = formats_dir / "vllm-benchmark-serving" / "vllm-ascend-nightly-nv-action__serving_llama8B_tp1_sharegpt_qps_4.json"
    res = read_file(p, meta=ImportMeta(hardware="T4", model="llama-3-8b", input_len_tok=200,
                                           output_len_tok=200, arrival="gamma", burstiness=0.5))
    assert res.runs["arrival"].tolist() == ["poisson"] and res.runs["burstiness"].tolist() == [1.0]
    said = [i for i in res.issues if i.column == "arrival" and i.severity == "warning"]
    assert len(said) == 1 and "--arrival gamma --burstiness 0.5 not applied to 1 of 1 row(s)" in said[0].message
    assert "the file says 'poisson'" in said[0].message and said[0].row == 1


def test_cli_takes_burstiness_and_refuses_a_bad_one_storing_nothing(formats_dir: Path, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from perfmodel.cli import main
    from perfmodel.store import Store

    home = tmp_path / "home"
    f = str(_inference_perf_stages(formats_dir)[2])
    base = ["--home", str(home), "import", f, "--hardware", "T4", "--model", "Qwen/Qwen3-0.6B"]
    bad = CliRunner().invoke(main, [*base, "--burstiness", "0.5"])
    assert bad.exit_code == 2 and "--burstiness 0.5 needs --arrival gamma" in bad.output
    assert "Value error" not in bad.output and "valid: a finite number > 0" in bad.output
    assert not (home / "perfmodel.sqlite").exists() or not Store(home).datasets()
    ok = CliRunner().invoke(main, [*base, "--arrival", "gamma", "--burstiness", "0.5", "--json"])
    assert ok.exit_code == 0, ok.output
    ds = json.loads(ok.output)["dataset"]["id"]
    runs = Store(home).runs(ds)
    assert runs["arrival"].tolist() == ["gamma"] and runs["burstiness"].tolist() == [0.5]


def test_upload_form_takes_burstiness_through_the_same_check(formats_dir: Path, tmp_path: Path) -> None:
    from perfmodel.errors import ValidationError
    from perfmodel.store import Store
    from perfmodel.ui.forms import UploadForm, import_uploads, in_form_words, to_meta

    meta = to_meta(UploadForm.from_values({"arrival": "gamma", "burstiness": 0.5}))
    assert meta is not None and (meta.arrival, meta.burstiness) == ("gamma", 0.5)
    with pytest.raises(ValidationError) as err:
        to_meta(UploadForm.from_values({"arrival": "poisson", "burstiness": 2.0}))
    text = in_form_words(str(err.value))
    assert "the form's Burstiness 2 with the form's Arrival (request-rate runs) set to poisson" in text
    assert "Value error" not in text and "--" not in text
    f = _inference_perf_stages(formats_dir)[3]
    store = Store(tmp_path / "home")
    form = UploadForm.from_values({"hardware": "T4", "model": "Qwen/Qwen3-0.6B", "arrival": "gamma",
                                   "burstiness": 2.0})
    info, _ = import_uploads([(f.name, f.read_bytes())], form, store)
    runs = store.runs(info.id)
    assert runs["arrival"].tolist() == ["gamma"] and runs["burstiness"].tolist() == [2.0]
