"""perfmodel train / predict / evaluate through click's CliRunner."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from _predict_data import cli_predict_csv
from click.testing import CliRunner

from perfmodel.cli import main


@pytest.fixture
def slice_csv(all_results_csv, tmp_path):
    # a slice of the real file, written to the test's own temporary directory
    head = pd.read_csv(all_results_csv, nrows=0).columns
    df = pd.read_csv(all_results_csv)
    df = df[df[head[0]].astype(str).str.contains("H100|A100", case=False)]
    out = tmp_path / "slice.csv"
    df.to_csv(out, index=False)
    return out


@pytest.fixture
def model_dir(slice_csv, tmp_path):
    out = tmp_path / "model"
    res = CliRunner().invoke(main, ["train", str(slice_csv), "--predictor", "xgboost", "-o", str(out)])
    assert res.exit_code == 0, res.output
    return out


QUERIES = """hardware,model,framework,device_count,input_len_tok,output_len_tok,batch_size
H100,llama-3-8b,vllm,1,1024,1024,64
a100-40gb,Llama-2-7b,vllm,1,128,128,1
H100,mistral-7b-v0.1,tensorrt-llm,1,512,512,16
"""


def test_train_writes_json_only(model_dir):
    files = sorted(p.name for p in model_dir.iterdir())
    assert files == ["booster.json", "metadata.json"]
    assert json.loads((model_dir / "metadata.json").read_text())["predictor"] == "xgboost"


def test_predict_keeps_query_order(model_dir, tmp_path):
    from perfmodel.models import load_predictor

    pred = cli_predict_csv(model_dir, QUERIES, tmp_path)
    assert list(pred["hardware"]) == ["H100", "a100-40gb", "H100"]  # rows as written, in order
    assert list(pred.columns[-16:]) == ["pred_throughput_tok_s", "pred_lower", "pred_upper", "level", "confidence",
                                        "in_domain", "pred_total_throughput_tok_s", "pred_e2e_latency_s",
                                        "pred_e2e_lower_s", "pred_e2e_upper_s", "pred_ttft_s", "pred_ttft_lower_s",
                                        "pred_ttft_upper_s", "pred_tpot_s", "note", "domain_reason"]
    # Little's law: batch x output tokens / output throughput; total counts the input tokens too.
    y = pred["pred_throughput_tok_s"]
    assert pred["pred_e2e_latency_s"].to_numpy() == pytest.approx((pred.batch_size * pred.output_len_tok / y).to_numpy())
    assert pred["pred_e2e_upper_s"].to_numpy() == pytest.approx(  # the band inverted (xgboost has none: NaN)
        (pred.batch_size * pred.output_len_tok / pred["pred_lower"]).to_numpy(), nan_ok=True)
    assert pred["pred_total_throughput_tok_s"].to_numpy() == pytest.approx(
        (y * (pred.input_len_tok + pred.output_len_tok) / pred.output_len_tok).to_numpy())
    assert pred["pred_ttft_s"].isna().all()  # the shared data measured no TTFT, so no TTFT model
    canon = pd.DataFrame({"hardware": ["h100-sxm", "a100-40gb", "h100-sxm"],
                          "model": ["llama-3-8b", "llama-2-7b", "mistral-7b-v0.1"],
                          "framework": ["vllm", "vllm", "tensorrt-llm"], "device_count": 1,
                          "input_len_tok": [1024.0, 128.0, 512.0], "output_len_tok": [1024.0, 128.0, 512.0],
                          "batch_size": [64.0, 1.0, 16.0]})
    direct = load_predictor(model_dir).predict(canon)["pred_throughput_tok_s"].to_numpy()
    assert pred["pred_throughput_tok_s"].to_numpy() == pytest.approx(direct, rel=1e-6)


def test_predict_result_file_and_one_point(model_dir, slice_csv, tmp_path):
    out = tmp_path / "p.csv"
    res = CliRunner().invoke(main, ["predict", str(model_dir), str(slice_csv), "-o", str(out)])
    assert res.exit_code == 0, res.output
    pred = pd.read_csv(out)
    assert len(pred) == len(pd.read_csv(slice_csv)) and list(pred["source_row"]) == sorted(pred["source_row"])
    res = CliRunner().invoke(main, ["predict", str(model_dir), "--hardware", "H100", "--model", "llama-3-8b",
                                    "--framework", "vllm", "--input-len", "512", "--output-len", "512",
                                    "--batch", "32"])
    assert res.exit_code == 0, res.output
    assert "tok/s output  band none (this predictor gives none)  confidence n/a  in_domain True" in res.output
    assert "e2e latency" in res.output and "TTFT" not in res.output
    # which catalog entry a typed name became (a bare "A100" is the 40 GB part); nothing where typed as the key
    assert "read hardware 'H100' as h100-sxm (NVIDIA H100 SXM5 80GB)" in res.output and "model '" not in res.output


@pytest.mark.parametrize(("body", "needle"), [
    ("hardware,model,framework,input_len_tok,output_len_tok,batch_size\nH100,llama-3-8b,vllm,128,128,-2\n",
     r"row 1, column 'batch_size'"),
    ("hardware,model,framework,input_len_tok,output_len_tok,batch_size\nH100,llama-3-8b,vllm,128,128,1\n"
     "H999,llama-3-8b,vllm,128,128,1\n", "unknown hardware 'H999'"),
    ("hardware,model,input_len_tok,output_len_tok,batch_size\nH100,llama-3-8b,128,128,1\n", "'framework'"),
])
def test_bad_queries_exit_2(model_dir, tmp_path, body, needle):
    q = tmp_path / "bad.csv"
    q.write_text(body)
    res = CliRunner().invoke(main, ["predict", str(model_dir), str(q)])
    assert res.exit_code == 2
    assert needle in res.output
    assert "Traceback" not in res.output


def test_usage_errors(model_dir, slice_csv, tmp_path):
    res = CliRunner().invoke(main, ["predict", str(model_dir), "--hardware", "H100"])
    assert res.exit_code == 2 and "--model" in res.output
    res = CliRunner().invoke(main, ["train", str(slice_csv), "--predictor", "nope", "-o", str(tmp_path / "x")])
    assert res.exit_code == 2 and "xgboost" in res.output
    res = CliRunner().invoke(main, ["train", str(slice_csv), "--y", "e2e_latency_s", "-o", str(tmp_path / "x")])
    assert res.exit_code == 2 and "total_throughput_tok_s" in res.output


@pytest.mark.parametrize("predictor", ["xgboost", "linear", "roofline-gbm"])
def test_a_feature_set_that_gives_no_feature_is_refused(slice_csv, tmp_path, predictor):
    # LLM-Inference-Bench carries no server metric: 'framework' had given xgboost's C++ backtrace, a scikit-learn
    # traceback, and a roofline-gbm that learnt from nothing; 'raw+' had been read as 'raw'
    for features, says in (("framework", "gives no feature on these training rows (they carry no framework "
                                         "metric"), ("raw+", "has an empty part")):
        out = tmp_path / f"m-{features}"
        res = CliRunner().invoke(main, ["train", str(slice_csv), "--predictor", predictor, "--features", features,
                                        "-o", str(out)])
        assert res.exit_code != 0 and says in res.output and "Traceback" not in res.output, res.output
        assert not out.exists()


def test_evaluate_command(slice_csv, tmp_path):
    out = tmp_path / "table.csv"
    res = CliRunner().invoke(main, ["evaluate", str(slice_csv), "--predictors", "xgboost", "--protocols",
                                    "hardware,config", "--seeds", "1", "-o", str(out)])
    assert res.exit_code == 0, res.output
    table = pd.read_csv(out)
    assert list(table["protocol"]) == ["hardware", "config"] and table.loc[0, "n_folds"] == 2
    assert "| predictor | protocol |" in res.output
    # H100 and A100 rows never reach batch 128: a clear error, not an empty table
    res = CliRunner().invoke(main, ["evaluate", str(slice_csv), "--predictors", "xgboost", "--protocols",
                                    "batch64", "--seeds", "1"])
    assert res.exit_code == 2 and "gives no fold" in res.output


@pytest.fixture(scope="module")
def quick_model(tmp_path_factory):
    """A linear predictor on the synthetic curves (a fraction of a second, no shared data needed)."""
    from _predict_data import synthetic_runs

    from perfmodel.models import get_predictor

    out = tmp_path_factory.mktemp("quick") / "model"
    get_predictor("linear").fit(synthetic_runs()).save(out)
    return out


POINT = ["--hardware", "H100", "--model", "llama-3-8b", "--framework", "vllm", "--input-len", "128",
         "--output-len", "128", "--batch", "8"]


def _point(**changes: str) -> list[str]:
    args = list(POINT)
    for opt, value in changes.items():
        args[args.index("--" + opt.replace("_", "-")) + 1] = value
    return args


@pytest.mark.parametrize(("changes", "needles"), [
    ({"batch": "-4"}, ["error: option --batch: expected a finite number > 0, got -4\n"]),
    ({"output_len": "0.5e-300", "batch": "-2.5"}, ["option --batch: expected a finite number > 0, got -2.5"]),
    ({"input_len": "-1", "output_len": "inf"}, ["(2 problem(s))", "option --input-len: expected a finite number >= 0, "
                                                "got -1", "option --output-len: expected a finite number > 0, got inf"]),
    ({"hardware": "warp-drive-9000"}, ["unknown hardware 'warp-drive-9000'", "Given by option --hardware"]),
])
def test_one_point_errors_name_the_option(quick_model, changes, needles):
    """The one-point form reported "row 1, column 'batch_size' ... got np.float64(-4.0)": it names the
    option and shows the value as typed."""
    res = CliRunner().invoke(main, ["predict", str(quick_model), *_point(**changes)])
    assert res.exit_code == 2, res.output
    for needle in needles:
        assert needle in res.output
    assert "np." not in res.output and "row 1" not in res.output and "column" not in res.output
    assert isinstance(res.exception, SystemExit), res.exception


def test_query_file_values_are_reported_as_written(quick_model, tmp_path):
    """A non-numeric cell was reported as "got np.float64(nan)" (the text lost), a negative one as
    "got np.int64(-4)", and neither named the file."""
    q = tmp_path / "q.csv"
    q.write_text("hardware,model,framework,input_len_tok,output_len_tok,batch_size\n"
                 "H100,llama-3-8b,vllm,abc,128,1\nH100,llama-3-8b,vllm,128,128,-4\nH100,llama-3-8b,vllm,128,,2\n")
    res = CliRunner().invoke(main, ["predict", str(quick_model), str(q), "-o", str(tmp_path / "p.csv")])
    assert res.exit_code == 2, res.output
    assert "q.csv, row 1, column 'input_len_tok': expected a finite number >= 0, got 'abc'" in res.output
    assert "q.csv, row 2, column 'batch_size': expected a finite number > 0, got -4" in res.output
    assert "q.csv, row 3, column 'output_len_tok': value is missing" in res.output
    assert "np." not in res.output and not (tmp_path / "p.csv").exists()


@pytest.mark.parametrize(("header", "missing"), [
    ("hardware,model,framework,input_len_tok,output_len_tok", "column 'batch_size' ("),
    ("model,framework,input_len_tok,output_len_tok,batch_size", "column 'hardware' ("),
    ("hardware,model,batch_size", "columns 'framework', 'input_len_tok', 'output_len_tok' ("),
])
def test_query_file_missing_a_column_says_which(quick_model, tmp_path, header, missing):
    """A query CSV without batch_size was "not a recognised benchmark result file" and 23 format names."""
    q = tmp_path / "q.csv"
    q.write_text(header + "\n" + ",".join("1" for _ in header.split(",")) + "\n")
    res = CliRunner().invoke(main, ["predict", str(quick_model), str(q), "-o", str(tmp_path / "p.csv")])
    assert res.exit_code == 2, res.output
    assert "error: q.csv: not a usable query table: missing required " + missing in res.output
    assert "Known formats" not in res.output and "vllm-bench-serve" not in res.output
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")  # no query columns at all: still the list of result formats
    res = CliRunner().invoke(main, ["predict", str(quick_model), str(other)])
    assert res.exit_code == 2 and "not a recognised benchmark result file" in res.output


def test_train_refuses_a_directory_that_holds_something_else(model_dir, slice_csv, tmp_path):
    other = tmp_path / "photos"
    other.mkdir()
    (other / "holiday.jpg").write_bytes(b"\xff\xd8")
    res = CliRunner().invoke(main, ["train", str(slice_csv), "--predictor", "xgboost", "-o", str(other)])
    assert res.exit_code == 2 and "holds no perfmodel model" in res.output
    assert [p.name for p in other.iterdir()] == ["holiday.jpg"]
    # a model directory is retrained in place
    res = CliRunner().invoke(main, ["train", str(slice_csv), "--predictor", "linear", "-o", str(model_dir)])
    assert res.exit_code == 0, res.output


def test_one_point_without_a_framework_takes_the_models_only_one(quick_model, model_dir):
    # The one-point form names no framework; it had been refused with "give ... --framework".
    without = [a for a in POINT if a not in ("--framework", "vllm")]
    res = CliRunner().invoke(main, ["predict", str(quick_model), *without])
    named = CliRunner().invoke(main, ["predict", str(quick_model), *POINT])
    assert res.exit_code == 0 and named.exit_code == 0, res.output + named.output
    assert "framework: vllm (the only one the model was trained on)" in res.stderr
    assert res.stdout == named.stdout and "tok/s" in res.stdout
    # a model of several frameworks asks, and says which it knows
    res = CliRunner().invoke(main, ["predict", str(model_dir), *without])
    assert res.exit_code == 2 and "one point with --framework (the model was trained on " in res.output
    assert "vllm" in res.output.split("trained on", 1)[1]


def test_predict_and_evaluate_answer_in_json(model_dir, slice_csv, tmp_path):
    import json

    point = ["predict", str(model_dir), "--hardware", "H100", "--model", "llama-3-8b", "--framework", "vllm",
             "--input-len", "1024", "--output-len", "1024", "--batch", "64"]
    for args in (["--json", *point], [*point, "--json"]):  # the global flag and the command's own
        res = CliRunner().invoke(main, args)
        assert res.exit_code == 0, res.output
        doc = json.loads(res.output)
        assert doc["level"] == 0.9 and len(doc["predictions"]) == 1
        assert doc["predictions"][0]["hardware"] == "h100-sxm" and doc["predictions"][0]["pred_throughput_tok_s"] > 0
    res = CliRunner().invoke(main, ["--json", "evaluate", str(slice_csv), "--predictors", "linear", "--protocols",
                                    "config", "--seeds", "1"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert rows[0]["predictor"] == "linear" and rows[0]["protocol"] == "config" and rows[0]["n_test"] > 0


def test_one_point_out_of_domain_says_why(tmp_path):
    from _predict_data import synthetic_runs

    from perfmodel.models import get_predictor

    out = tmp_path / "rg"
    get_predictor("roofline-gbm", calibration_folds=0).fit(synthetic_runs()).save(out)
    args = ["predict", str(out), "--hardware", "H200", "--model", "llama-3-8b", "--framework", "vllm",
            "--input-len", "128", "--output-len", "128", "--batch", "1000"]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    assert "in_domain False" in res.output
    assert "out of domain: hardware 'h200' is not in the training data; batch 1000 is more than twice" in res.output
    inside = ["predict", str(out), "--hardware", "H100", "--model", "llama-3-8b", "--framework", "vllm",
              "--input-len", "128", "--output-len", "128", "--batch", "16"]
    res = CliRunner().invoke(main, inside)
    assert res.exit_code == 0 and "in_domain True" in res.output and "out of domain" not in res.output, res.output
    # the file form says it in a column (an unknown framework had read in_domain False with an empty note), and
    # --device-count beside a file is refused (it had been ignored: every row kept its own count)
    q, pred = tmp_path / "q.csv", tmp_path / "pred.csv"
    q.write_text("hardware,model,framework,input_len_tok,output_len_tok,batch_size\n"
                 "H100,llama-3-8b,vllm,128,128,16\nH100,llama-3-8b,myengine,128,128,16\n")
    res = CliRunner().invoke(main, ["predict", str(out), str(q), "-o", str(pred)])
    assert res.exit_code == 0, res.output
    rows = pd.read_csv(pred, keep_default_na=False)
    assert rows["in_domain"].tolist() == [True, False]
    assert rows["domain_reason"].iloc[0] == "" and "framework 'myengine'" in rows["domain_reason"].iloc[1]
    res = CliRunner().invoke(main, ["predict", str(out), str(q), "--device-count", "4"])
    assert res.exit_code == 2 and "not both (--device-count)" in res.output
    # a dtype the catalog does not know, and more tensor x pipeline parallelism than devices, are refused with
    # their rows ('float99' had been read as the model's default dtype, and TP 8 on one device predicted)
    q.write_text("hardware,model,framework,input_len_tok,output_len_tok,batch_size,weight_dtype,tp_size\n"
                 "H100,llama-3-8b,vllm,128,128,16,bfloat16,1\nH100,llama-3-8b,vllm,128,128,16,float99,1\n"
                 "H100,llama-3-8b,vllm,128,128,16,,8\n")
    res = CliRunner().invoke(main, ["predict", str(out), str(q)])
    assert res.exit_code != 0 and "Traceback" not in res.output
    assert "row 2, column 'weight_dtype': unknown dtype 'float99'; known: fp64" in res.output, res.output
    assert "row 3, column 'tp_size': tp_size x pp_size = 8 devices, more than device_count 1" in res.output
    # a misspelt load kind or KV-cache dtype had made a configuration never measured, in domain
    q.write_text("hardware,model,framework,input_len_tok,output_len_tok,batch_size,load_kind,kv_cache_dtype\n"
                 "H100,llama-3-8b,vllm,128,128,16,static,auto\nH100,llama-3-8b,vllm,128,128,16,static_batch,fp9\n")
    res = CliRunner().invoke(main, ["predict", str(out), str(q)])
    assert res.exit_code != 0 and "Traceback" not in res.output
    assert "row 1, column 'load_kind': unknown load_kind 'static'; valid: static_batch, concurrency" in res.output
    assert "row 2, column 'kv_cache_dtype': unknown dtype 'fp9'; known: auto, fp64" in res.output, res.output
    # half a sequence, or one and a half, had been answered in domain
    q.write_text("hardware,model,framework,input_len_tok,output_len_tok,batch_size\n"
                 "H100,llama-3-8b,vllm,128,128,0.5\nH100,llama-3-8b,vllm,128,128,16\nH100,llama-3-8b,vllm,128,128,1.5\n")
    res = CliRunner().invoke(main, ["predict", str(out), str(q)])
    assert res.exit_code != 0 and "Traceback" not in res.output
    assert "row 1, column 'batch_size': expected a whole number >= 1 (sequences at once), got 0.5" in res.output
    assert "row 3, column 'batch_size'" in res.output and "row 2," not in res.output


def test_help_lists_every_predictor_and_protocol():
    # `train --help` sent readers to `evaluate --help`, which listed neither.
    from perfmodel.evaluate import PROTOCOLS
    from perfmodel.models import PREDICTORS, _load_all

    _load_all()
    train = " ".join(CliRunner().invoke(main, ["train", "--help"]).output.split()).replace("- ", "-")
    evaluate = " ".join(CliRunner().invoke(main, ["evaluate", "--help"]).output.split()).replace("- ", "-")
    for name in PREDICTORS:
        assert name in train and name in evaluate, name
    for name in PROTOCOLS:
        assert f"{name} (" in evaluate or f"{name}," in evaluate or f"{name}." in evaluate, name


def test_query_file_problems_come_in_one_pass_in_row_order(quick_model, tmp_path):
    # Unknown names had come up only on the next run, after the numbers were fixed; rows were out of order.
    q = tmp_path / "q.csv"
    q.write_text("hardware,model,framework,device_count,input_len_tok,output_len_tok,batch_size\n"
                 "foo,llama-3-8b,vllm,1,128,128,1\nH100,llama-3-8b,vllm,1.5,128,128,1\n"
                 "H100,bar,vllm,1,abc,128,1\nfoo,llama-3-8b,vllm,1,128,128,2\n")
    res = CliRunner().invoke(main, ["predict", str(quick_model), str(q)])
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.splitlines() if "q.csv, row" in ln]
    assert [ln.split("row ")[1].split(",")[0] for ln in lines] == ["1", "2", "3", "3"], res.output
    assert "unknown hardware 'foo'" in lines[0] and "(also in row(s) 4)" in lines[0]
    assert "column 'device_count': expected a whole number >= 1, got 1.5" in lines[1]
    assert any("unknown model 'bar'" in ln for ln in lines[2:])
    header = tmp_path / "header.csv"
    header.write_text("hardware,model,framework,input_len_tok,output_len_tok,batch_size\n")
    res = CliRunner().invoke(main, ["predict", str(quick_model), str(header)])
    assert res.exit_code == 2 and "header.csv: no query rows, only a header" in res.output
    blank = tmp_path / "blank.csv"
    blank.write_text("hardware,model,framework,input_len_tok,output_len_tok,batch_size\nH100,llama-3-8b,,128,128,1\n")
    res = CliRunner().invoke(main, ["predict", str(quick_model), str(blank)])
    assert res.exit_code == 2 and "blank.csv, row 1, column 'framework': value is missing" in res.output
    semi = tmp_path / "semi.csv"
    semi.write_text("hardware;model;framework\nH100;llama-3-8b;vllm\n")
    res = CliRunner().invoke(main, ["predict", str(quick_model), str(semi)])
    assert res.exit_code == 2 and "not a recognised benchmark result file" in res.output
    assert "--map" in res.output and "pass --format csv" not in res.output and "Nor is it a query table" in res.output


def test_prediction_rows_say_what_the_numbers_do_not(quick_model, tmp_path):
    # A blank row for a configuration that cannot run, a request longer than the model's context and a
    # negative throughput from the linear baseline had all come with exit code 0 and no word.
    q = tmp_path / "q.csv"
    q.write_text("hardware,model,framework,device_count,input_len_tok,output_len_tok,batch_size\n"
                 "H100,llama-3-8b,vllm,1,128,128,8\n"
                 "l4,llama-3-70b,vllm,1,512,128,8\n"
                 "H100,llama-3-8b,vllm,1,100000,100000,8\n")
    out = tmp_path / "p.csv"
    res = CliRunner().invoke(main, ["predict", str(quick_model), str(q), "-o", str(out), "--level", "0.8"])
    assert res.exit_code == 0, res.output
    pred = pd.read_csv(out, keep_default_na=False)
    assert list(pred.columns[:7]) == ["hardware", "model", "framework", "device_count", "input_len_tok",
                                      "output_len_tok", "batch_size"]
    assert list(pred.columns).index("level") == list(pred.columns).index("pred_upper") + 1
    assert (pred["level"] == "").all()  # the linear baseline gives no band, so no band level
    assert pred.loc[0, "note"] == ""
    assert pred.loc[1, "note"].startswith("cannot run: ") and "exceed" in pred.loc[1, "note"]
    assert "cannot run: cannot run" not in pred.loc[1, "note"]  # the memory reason had been prefixed twice
    assert "exceed llama-3-8b's context of 8,192 tokens" in pred.loc[2, "note"]
    assert pred.loc[2, "note"].startswith("input + output length 200,000 tokens exceed")
    assert "warning: 2 row(s) have a note (see the note column), e.g. row 2: cannot run" in res.output
    # its own output as queries: the old answers replaced, not a crash on a second 'level' column
    again = tmp_path / "p2.csv"
    res = CliRunner().invoke(main, ["predict", str(quick_model), str(out), "-o", str(again)])
    assert res.exit_code == 0, res.output
    assert "the query file's own prediction columns (pred_throughput_tok_s" in res.output
    second = pd.read_csv(again, keep_default_na=False)
    assert list(second.columns) == list(pred.columns)
    # printed to stdout, the notes are still announced on stderr
    res = CliRunner().invoke(main, ["predict", str(quick_model), str(q)])
    assert res.exit_code == 0 and "warning: 2 row(s) have a note" in res.output


def test_a_throughput_below_zero_is_out_of_domain_without_latency():
    from perfmodel.models.base import NONPOSITIVE_NOTE, flag_nonpositive, query_notes

    pred = pd.DataFrame({"pred_throughput_tok_s": [100.0, -19.6, 0.0], "pred_lower": [80.0, -30.0, 0.0],
                         "pred_upper": [120.0, -10.0, 0.0], "confidence": [0.9, 0.9, 0.9],
                         "in_domain": [True, True, True], "pred_e2e_latency_s": [1.0, -26.2, float("inf")]})
    out = flag_nonpositive(pred)
    assert out["in_domain"].tolist() == [True, False, False]
    assert out["pred_throughput_tok_s"].tolist() == [100.0, -19.6, 0.0]  # as the predictor gave it
    assert out["pred_e2e_latency_s"].iloc[0] == 1.0 and out["pred_e2e_latency_s"].iloc[1:].isna().all()
    first = pred.iloc[:1]
    assert flag_nonpositive(first) is first  # nothing flagged: the frame itself, not a copy
    queries = pd.DataFrame({"hardware": ["h100-sxm"] * 3, "model": ["llama-3-8b"] * 3, "device_count": [1] * 3,
                            "input_len_tok": [128.0] * 3, "output_len_tok": [128.0] * 3, "batch_size": [1.0] * 3})
    assert query_notes(None, queries, out)[1:] == [NONPOSITIVE_NOTE] * 2


@pytest.fixture
def h100_a100_roofline(all_results_csv, tmp_path_factory):  # noqa: ANN001, ANN201
    from perfmodel.importers import read_file
    from perfmodel.models import get_predictor

    runs = read_file(all_results_csv).runs
    out = tmp_path_factory.mktemp("rg") / "model"
    get_predictor("roofline-gbm").fit(runs[runs["hardware"].isin(["h100-sxm", "a100-40gb"])]).save(out)
    return out


def test_a_llama_cpp_query_outside_what_llama_cpp_was_measured_at_is_out_of_domain(h100_a100_roofline):  # noqa: ANN001
    # Trained at n_batch 1, 16, 32 and 64 (49.6 to 91.7 tok/s), a query without n_batch was answered 100.9 tok/s,
    # band 92.3-110.4, in domain; at batch 16 llama.cpp (measured at one sequence only) was in domain too.
    point = ["predict", str(h100_a100_roofline), "--hardware", "H100", "--model", "llama-3-8b", "--framework",
             "llama.cpp", "--input-len", "1024", "--output-len", "1024"]
    res = CliRunner().invoke(main, [*point, "--batch", "1"])
    assert res.exit_code == 0, res.output
    assert "in_domain False" in res.output
    assert ("out of domain: llama.cpp ran this configuration at n_batch 1; n_batch 16; n_batch 32; n_batch 64, and "
            "the query gives none (the answer spans them): give the setting (fw_n_batch in a query file, --n-batch "
            "for one point)") in res.output
    # the answer spans the four settings' answers: its band holds every measurement, its confidence says so
    lo, hi = (float(v) for v in res.output.split("band [")[1].split("]")[0].split(", "))
    assert lo <= 49.6 and hi >= 91.7, res.output
    assert float(res.output.split("confidence ")[1].split()[0]) < 0.8, res.output
    given = CliRunner().invoke(main, [*point, "--batch", "1", "--n-batch", "64"])
    assert given.exit_code == 0 and "in_domain True" in given.output, given.output
    # a setting given but never measured asks for a measured one (it had said "give the setting")
    other = CliRunner().invoke(main, [*point, "--batch", "1", "--n-batch", "7"])
    assert "not at n_batch 7: give one of those (fw_n_batch in a query file" in other.output, other.output
    assert float(given.stdout.split(" tok/s")[0].replace(",", "")) == pytest.approx(91.7, rel=0.03)
    wide = CliRunner().invoke(main, [*point, "--batch", "16", "--n-batch", "64"])
    assert "in_domain False" in wide.output
    assert "batch 16 is more than twice outside the batches llama.cpp was trained at (1)" in wide.output
    # how llama.cpp scales with the batch was never measured: its band is an unknown framework's, not the
    # +-18 % (806-1,155 tok/s) of a known configuration's batch extrapolation
    lo, hi = (float(v.replace(",", "")) for v in wide.output.split("band [")[1].split("]")[0].split(", "))
    assert hi / lo > 4, wide.output
    vllm = CliRunner().invoke(main, [*point[:7], "vllm", *point[8:], "--batch", "16"])
    assert "in_domain True" in vllm.output  # vLLM was measured at batch 16
    lo, hi = (float(v.replace(",", "")) for v in vllm.output.split("band [")[1].split("]")[0].split(", "))
    assert hi / lo < 1.5, vllm.output  # a framework measured across batches keeps its own, narrow band
    # llama.cpp's setting on a vLLM query is left out and said so (the trees had answered 90.7 tok/s, in domain,
    # for a point measured at 3,484, on llama.cpp's branches)
    foreign = CliRunner().invoke(main, [*point[:7], "vllm", *point[8:], "--batch", "16", "--n-batch", "1"])
    assert foreign.output.split(" tok/s")[0] == vllm.output.split(" tok/s")[0], foreign.output
    assert "note: n_batch ignored: a setting of llama.cpp in the training data, not of vllm" in foreign.output
    # on a device count never measured, the settings of the nearest one measured are said and spanned: 8 H100s had
    # read 177 tok/s from the trees, twice 4 devices' answer, without asking for n_batch
    at4 = float(res.stdout.split(" tok/s")[0].replace(",", ""))
    eight = CliRunner().invoke(main, [*point, "--batch", "1", "--device-count", "8"])
    assert ("llama.cpp ran it on 4 device(s) at n_batch 1; n_batch 16; n_batch 32; n_batch 64, and the query gives "
            "none (the answer spans them): give the setting") in eight.output, eight.output
    assert float(eight.stdout.split(" tok/s")[0].replace(",", "")) < 1.2 * at4, (eight.output, res.output)
    measured = CliRunner().invoke(main, [*point, "--batch", "1", "--device-count", "8", "--n-batch", "64"])
    assert "n_batch 1; n_batch 16" not in measured.output, measured.output  # 64 was measured on 4: nothing to give
    # a setting that is no whole number of at least 1 is refused, naming the option (n_batch -5 had been answered)
    bad = CliRunner().invoke(main, [*point, "--batch", "1", "--n-batch", "-5"])
    assert bad.exit_code == 2 and "option --n-batch: expected a whole number >= 1 (n_batch), got -5" in bad.output
    # the setting is a one-point option only: beside a query file it is refused like the others
    both = CliRunner().invoke(main, ["predict", str(h100_a100_roofline), str(h100_a100_roofline / "metadata.json"),
                                     "--n-batch", "64"])
    assert both.exit_code == 2 and "--n-batch" in both.output


def test_train_says_what_it_left_out_and_predict_writes_only_what_it_says(tmp_path):
    # Guards: "trained roofline-gbm on 32 rows" for a model trained on fewer (suspect rows left out without a
    # word); -o pred.json had written CSV inside; the one-point JSON echoed the framework as typed ('vLLM')
    from _predict_data import synthetic_runs

    data = tmp_path / "runs.csv"
    runs = synthetic_runs()
    runs.to_csv(data, index=False)
    res = CliRunner().invoke(main, ["train", str(data), "--predictor", "roofline-gbm", "-o", str(tmp_path / "m")])
    assert res.exit_code == 0, res.output
    used = json.loads((tmp_path / "m" / "metadata.json").read_text())["state"]["n_train"]
    assert used < len(runs) and f"trained roofline-gbm on {used} of {len(runs)} rows ({len(runs) - used} left out" \
        in res.output
    point = ["predict", str(tmp_path / "m"), "--hardware", "H100", "--model", "llama-3-8b", "--framework", "vLLM",
             "--input-len", "128", "--output-len", "128", "--batch", "16"]
    res = CliRunner().invoke(main, [*point, "-o", str(tmp_path / "pred.json")])
    assert res.exit_code == 2 and "written as CSV" in res.output and not (tmp_path / "pred.json").exists()
    res = CliRunner().invoke(main, [*point, "--json"])
    assert json.loads(res.output)["predictions"][0]["framework"] == "vllm"


def test_a_model_of_the_total_throughput_says_its_answer_is_the_total(tmp_path):
    # Guards: an xgboost model trained with --y total_throughput_tok_s printed its total as if the output
    from _predict_data import synthetic_runs

    from perfmodel.models import get_predictor

    runs = synthetic_runs().assign(total_throughput_tok_s=lambda d: d["output_throughput_tok_s"] * 2)
    get_predictor("xgboost").fit(runs, y="total_throughput_tok_s").save(tmp_path / "m")
    res = CliRunner().invoke(main, ["predict", str(tmp_path / "m"), "--hardware", "H100", "--model", "llama-3-8b",
                                    "--framework", "vllm", "--input-len", "128", "--output-len", "128", "--batch", "16"])
    assert res.exit_code == 0 and " tok/s total  band" in res.output, res.output
