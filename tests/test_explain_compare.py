"""Feature-set comparison and transfer test (perfmodel.explain), synthetic and on LLM-Inference-Bench."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from test_explain import make_runs

from perfmodel import explain as E
from perfmodel.errors import PerfmodelError, UnknownNameError, ValidationError

FAST = {"n_estimators": 40}


def test_comparison_finds_the_set_that_carries_the_signal() -> None:
    runs = make_runs(n=400, target="fw", seed=2)  # throughput = f(fw_step_s) only
    df = E.compare_feature_sets(runs, sets=("physical", "framework"), learners=("gbdt", "poly"), **FAST)
    assert list(df.columns[:3]) == ["protocol", "set", "learner"]
    assert len(df) == 4 and set(df["protocol"]) == {"random"}
    fw = df.set_index(["set", "learner"])
    assert fw.loc[("framework", "gbdt"), "r2_log"] > 0.95
    assert fw.loc[("framework", "poly"), "r2_log"] > 0.95
    assert fw.loc[("physical", "gbdt"), "r2_log"] < 0.2  # the physics knows nothing of this metric
    assert fw.loc[("framework", "gbdt"), "top_features"] == "fw_step_s"
    assert fw.loc[("framework", "gbdt"), "physics_agrees"] == "n/a"
    assert fw.loc[("framework", "gbdt"), "n_test"] == 80


def test_physics_agreement_on_a_kv_bound_dataset() -> None:
    runs = make_runs(n=400, target="kv", seed=3)
    df = E.compare_feature_sets(runs, sets=("physical", "identity"), learners=("gbdt",), **FAST)
    rec = df.set_index("set")
    assert rec.loc["physical", "top_features"].split(", ")[0] == "kv_cache_bytes"
    assert rec.loc["physical", "physics_agrees"] == "yes"
    assert rec.loc["identity", "physics_agrees"] == "n/a"
    assert rec.loc["physical", "mape_pct"] < rec.loc["identity", "mape_pct"]


def test_physics_agreement_rules() -> None:
    imp = pd.DataFrame({"feature": ["batch_size", "l2_reuse", "wavefronts", "kv_cache_bytes"],
                        "mean_abs_shap": [0.5, 0.4, 0.3, 0.1]})
    assert E.physics_agreement(imp) == "no"
    assert E.physics_agreement(imp, top=4) == "yes"
    assert E.physics_agreement(imp.iloc[:3]) == "n/a"  # no memory-traffic feature in the set
    assert E.physics_agreement(imp.assign(mean_abs_shap=0.0)) == "n/a"


def test_missing_framework_metrics_are_said_not_invented() -> None:
    runs = make_runs(n=200, seed=4).drop(columns=["fw_step_s"])
    df = E.compare_feature_sets(runs, sets=("framework", "physical"), learners=("gbdt",), **FAST)
    row = df.iloc[0]
    assert row["set"] == "framework" and row["n_features"] == 0
    assert math.isnan(row["r2_log"]) and math.isnan(row["mape_pct"])
    assert "no framework-internal metrics" in row["note"]
    assert df.iloc[1]["note"] == ""


def test_transfer_test_pairs_and_leave_one_out() -> None:
    runs = make_runs(n=400, seed=5)
    pair = E.transfer_test(runs, "hardware", sets=("physical", "identity"), learners=("gbdt",),
                           train_on="h100-sxm", test_on="a100-40gb", **FAST)
    assert set(pair["split"]) == {"h100-sxm->a100-40gb"}
    n_a100 = int((runs["hardware"] == "a100-40gb").sum())
    assert (pair["n_test"] == n_a100).all()
    np.testing.assert_allclose(pair["r2_drop"], pair["r2_random"] - pair["r2_transfer"])
    loo = E.transfer_test(runs, "framework", sets=("physical",), learners=("gbdt", "poly"), **FAST)
    assert set(loo["split"]) == {"leave-one-out"} and (loo["n_test"] == len(runs)).all()
    # throughput here is pure physics: leaving a framework out costs the physical set nothing
    assert (loo["r2_log_transfer"] > 0.9).all()


def test_comparison_errors() -> None:
    runs = make_runs(n=100, seed=6)
    with pytest.raises(UnknownNameError, match="protocol"):
        E.compare_feature_sets(runs, protocol="transfer-model")
    with pytest.raises(UnknownNameError, match="learner"):
        E.compare_feature_sets(runs, learners=("svm",))
    with pytest.raises(PerfmodelError, match="unknown feature set"):
        E.compare_feature_sets(runs, sets=("physics",), learners=("gbdt",), **FAST)
    with pytest.raises(ValidationError, match="no fold"):
        E.compare_feature_sets(runs.assign(framework="vllm"), protocol="transfer-framework", **FAST)
    with pytest.raises(UnknownNameError, match="tpu-v5"):
        E.transfer_test(runs, "hardware", train_on="h100-sxm", test_on="tpu-v5", **FAST)
    with pytest.raises(PerfmodelError, match="both"):
        E.transfer_test(runs, "hardware", train_on="h100-sxm")
    with pytest.raises(ValidationError, match="output_throughput_tok_s"):
        E.compare_feature_sets(runs.drop(columns=["output_throughput_tok_s"]))


@pytest.fixture(scope="module")
def bench_runs() -> pd.DataFrame:
    from conftest import ALL_RESULTS

    if not ALL_RESULTS.exists():
        pytest.skip(f"needs {ALL_RESULTS}")
    from perfmodel.importers import read_file

    return read_file(ALL_RESULTS).runs


def test_all_results_golden(bench_runs: pd.DataFrame) -> None:
    assert len(bench_runs) == 4772
    sub = bench_runs.iloc[::4].reset_index(drop=True)  # 1,193 rows keep the test fast
    df = E.compare_feature_sets(sub, sets=("physical", "framework", "identity"), learners=("gbdt",), **FAST)
    rec = df.set_index("set")
    assert rec.loc["physical", "n_features"] == 19
    assert rec.loc["framework", "n_features"] == 0  # All_results carries no framework-internal metric
    assert "no framework-internal metrics" in rec.loc["framework", "note"]
    assert rec.loc["identity", "n_features"] == 35  # 9 hardware + 6 frameworks + 15 models + 5 platforms
    assert rec.loc["physical", "n_test"] == round(0.2 * len(sub))
    assert rec.loc["physical", "r2_log"] > 0.8
    assert rec.loc["physical", "r2_log"] > rec.loc["identity", "r2_log"]
    model = E.fit_gbdt(sub, "all", n_estimators=40)
    ex = E.explain(model, sub, sample_size=300, engine="xgboost", cache=False)
    assert ex.additivity_ok and ex.sample_size == 300 and ex.n_total == 1193
    assert not any(k == "framework" for k in ex.kinds)


def test_the_page_sets_unscored_and_failing_comparison_rows_apart() -> None:
    # A reviewer saw "framework" rows of None with 0 test rows, and a polynomial R² of -691.7, in the table
    # without a word.
    from perfmodel.ui.explain import split_comparison

    t = pd.DataFrame({"set": ["physical", "framework", "all"], "learner": ["gbdt", "gbdt", "poly"],
                      "n_test": [10, 0, 10], "r2_random": [0.9, None, -34.4], "r2_transfer": [0.5, None, -691.7],
                      "note": ["", "the data has no framework metric", ""]})
    scored, unscored, failing = split_comparison(t)
    assert scored["set"].tolist() == ["physical", "all"] and unscored["set"].tolist() == ["framework"]
    assert failing == ["all / poly (R² (linear) random -34.40, R² (linear) transfer -691.70)"]
    assert split_comparison(t.iloc[:1])[2] == []
    # The caption names the R² that fails: a log R² of 0.879, shown first, had sat beside "R² below -1".
    one = pd.DataFrame({"set": ["all"], "learner": ["poly"], "n_test": [10], "r2_log": [0.879], "r2": [-3.2]})
    assert split_comparison(one)[2] == ["all / poly (R² (linear) -3.20)"]


def test_the_comparison_names_its_top_features_in_words() -> None:
    from perfmodel.ui.explain import top_features_in_words

    assert top_features_in_words("l2_reuse, id_fw_llama.cpp, fw_decode_s, log_output_tok_s_max") == \
        "L2 reuse, framework is llama.cpp, framework metric: decode, roofline throughput bound"
    assert top_features_in_words("") == "" and top_features_in_words(None) is None
