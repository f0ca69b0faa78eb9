"""SHAP attributions (perfmodel.explain): additivity, known rankings, framework columns, cache, errors."""

from __future__ import annotations

import sys
from dataclasses import FrozenInstanceError

import numpy as np
import pandas as pd
import pytest

from perfmodel import explain as E
from perfmodel.errors import PerfmodelError, UnknownNameError
from perfmodel.features import PHYSICAL, build_features

HARDWARE = ("h100-sxm", "a100-40gb", "mi300x")
MODELS = ("llama-3-8b", "mistral-7b-v0.1", "llama-2-7b")
FRAMEWORKS = ("vllm", "llama.cpp")


def make_runs(n: int = 600, seed: int = 0, target: str = "kv") -> pd.DataFrame:
    """Random configurations on catalog hardware/models; throughput from one chosen quantity.

    ``kv``: throughput depends only on the physical ``kv_cache_bytes``; ``fw``: only on a
    framework-internal column ``fw_step_s`` (unrelated to the physics).
    """
    rng = np.random.default_rng(seed)
    runs = pd.DataFrame({
        "hardware": rng.choice(HARDWARE, n), "model": rng.choice(MODELS, n), "framework": rng.choice(FRAMEWORKS, n),
        "device_count": 1, "input_len_tok": rng.choice([128.0, 512.0, 1024.0, 2048.0], n),
        "output_len_tok": rng.choice([64.0, 128.0, 512.0, 1024.0], n),
        "batch_size": rng.choice([1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0], n),
    })
    runs["fw_step_s"] = rng.uniform(0.01, 0.1, n)
    kv = build_features(runs, names=["kv_cache_bytes"])["kv_cache_bytes"].to_numpy()
    if target == "kv":
        y = 5000.0 / (1.0 + kv / 2e9)
    else:
        y = 50.0 / runs["fw_step_s"].to_numpy()
    runs["output_throughput_tok_s"] = y
    return runs


@pytest.fixture(scope="module")
def kv_runs() -> pd.DataFrame:
    return make_runs()


@pytest.fixture(scope="module")
def kv_model(kv_runs: pd.DataFrame) -> E.TreeModel:
    return E.fit_gbdt(kv_runs, "all", n_estimators=60)


def test_shap_values_add_up_to_the_output_with_both_engines(kv_model: E.TreeModel, kv_runs: pd.DataFrame) -> None:
    by_engine = {}
    for engine in E.ENGINES:
        ex = E.explain(kv_model, kv_runs, sample_size=100, engine=engine, cache=False)
        assert ex.sample_size == 100 and ex.n_total == len(kv_runs)
        recon = ex.values.sum(axis=1) + ex.base_value
        np.testing.assert_allclose(recon, ex.output, atol=1e-4)
        # the output really is the booster's prediction (log throughput) for the sampled rows
        np.testing.assert_allclose(ex.output, kv_model.margin(kv_model.design(kv_runs.iloc[ex.rows])), atol=1e-6)
        assert ex.additivity_ok and ex.max_additivity_error < 1e-4
        by_engine[engine] = ex.values
    # shap's TreeExplainer and XGBoost's pred_contribs are the same exact algorithm
    np.testing.assert_allclose(by_engine["shap"], by_engine["xgboost"], atol=1e-4)


def test_one_physical_driver_is_ranked_first(kv_model: E.TreeModel, kv_runs: pd.DataFrame) -> None:
    imp = E.explain(kv_model, kv_runs, engine="xgboost", cache=False).importance()
    assert imp.iloc[0]["feature"] == "kv_cache_bytes"
    assert imp.iloc[0]["kind"] == "physical"
    assert imp.iloc[0]["share"] > 0.5
    assert imp["rank"].tolist() == list(range(1, len(imp) + 1))
    # the (random) framework metric carries no information here
    assert imp.loc[imp["feature"] == "fw_step_s", "share"].iloc[0] < 0.02


def test_features_that_order_the_rows_alike_are_grouped_to_be_read_together(kv_model: E.TreeModel,
                                                                             kv_runs: pd.DataFrame) -> None:
    import dataclasses

    ex = E.explain(kv_model, kv_runs, sample_size=200, engine="xgboost", cache=False)
    rng = np.random.default_rng(3)
    bb = rng.integers(1, 257, 200).astype(float)
    noise = rng.normal(size=200)
    per_lane = np.where(np.arange(200) < 50, np.nan, bb / 16)  # no lanes on a quarter of the rows
    data = np.column_stack([bb, np.log2(bb), per_lane,
                            bb + 40 * noise,  # correlated but not the same ordering
                            noise, np.ones(200)])
    names = ("batch_size", "log2_bb", "pcie_contention", "rough", "other", "const")
    ex = dataclasses.replace(ex, feature_names=names, kinds=("raw",) * 6, data=data)
    groups = ex.read_together(["pcie_contention", "other", "batch_size"])
    assert len(groups) == 1  # batch size is in the first group; "other" orders the rows like nothing else
    g = groups[0]
    assert g.features[0] == "pcie_contention" and set(g.features) == {"pcie_contention", "batch_size", "log2_bb"}
    assert g.min_rho == pytest.approx(1.0) and g.n_rows == 200
    assert dict(g.missing) == {"pcie_contention": 50}
    # every member must order the rows like every other one: a looser bar admits "rough" only when it holds
    # against all three
    rho = pd.Series(bb).corr(pd.Series(bb + 40 * noise), method="spearman")
    assert 0.5 < rho < 0.99
    loose = ex.read_together(["batch_size"], min_rho=rho - 0.01)[0]
    assert "rough" in loose.features and loose.min_rho == pytest.approx(rho, abs=0.02)
    assert ex.read_together(["const"]) == [] and ex.read_together(["other"]) == []


def test_a_model_without_framework_columns_attributes_nothing_to_them() -> None:
    runs = make_runs(target="fw", seed=1)  # throughput is a pure function of fw_step_s
    with_fw = E.explain(E.fit_gbdt(runs, "all", n_estimators=40), runs, engine="xgboost", cache=False)
    assert with_fw.importance().iloc[0]["feature"] == "fw_step_s"  # the guard below can fail
    without = E.fit_gbdt(runs, "raw+derived+physical+identity", n_estimators=40)
    assert not any(n.startswith("fw_") for n in without.feature_names)
    ex = E.explain(without, runs, engine="xgboost", cache=False)
    imp = ex.importance()
    assert "framework" not in set(imp["kind"])
    assert not any(f.startswith("fw_") for f in imp["feature"])
    assert ex.values.shape[1] == len(without.feature_names)
    with pytest.raises(UnknownNameError, match="fw_step_s"):
        ex.dependence("fw_step_s")


def test_kinds_cover_every_set() -> None:
    assert {E.feature_kind(f) for f in PHYSICAL} == {"physical"}
    assert E.feature_kind("fw_num_requests_running") == "framework"
    assert E.feature_kind("id_hw_h100-sxm") == "identity"
    assert E.feature_kind("batch_size") == E.feature_kind("log1p_ii") == "workload"
    assert E.feature_kind("prior_kind") == "other"
    # llama.cpp's n_batch and torch's threads were counted as "workload": they are chosen settings of the framework
    assert E.feature_kind("fw_n_batch") == E.feature_kind("fw_num_threads") == "setting"


def test_the_legend_names_and_explains_every_kind() -> None:
    from perfmodel.ui import explain as X

    assert set(X.KIND_STYLE) == set(E.KINDS)
    legend = X.legend_markdown()
    for kind in E.KINDS:
        assert f"{X.KIND_STYLE[kind][2]} {kind}]" in legend and f"**{kind}**" in X.KIND_HELP


def test_explanation_is_frozen_cached_and_states_its_sample(kv_model: E.TreeModel, kv_runs: pd.DataFrame) -> None:
    first = E.explain(kv_model, kv_runs, sample_size=50, seed=3, engine="xgboost")
    assert not first.cached
    again = E.explain(kv_model, kv_runs, sample_size=50, seed=3, engine="xgboost")
    assert again.cached and "from the cache" in again.message
    np.testing.assert_array_equal(first.values, again.values)
    assert "random sample of 50 of 600 rows (seed 3)" in first.message
    assert list(E.cache_dir().glob("shap-*.npz"))
    with pytest.raises(FrozenInstanceError):
        first.base_value = 0.0  # type: ignore[misc]
    with pytest.raises(ValueError):
        first.values[0, 0] = 1.0
    # another sample is another cache entry, not a stale hit
    other = E.explain(kv_model, kv_runs, sample_size=50, seed=4, engine="xgboost")
    assert not other.cached and not np.array_equal(other.rows, first.rows)


def test_damaged_cache_file_is_recomputed(kv_model: E.TreeModel, kv_runs: pd.DataFrame) -> None:
    E.explain(kv_model, kv_runs, sample_size=20, engine="xgboost")
    for p in E.cache_dir().glob("shap-*.npz"):
        p.write_bytes(b"not an npz")
    ex = E.explain(kv_model, kv_runs, sample_size=20, engine="xgboost")
    assert not ex.cached and ex.additivity_ok


def test_dependence_and_waterfall(kv_model: E.TreeModel, kv_runs: pd.DataFrame) -> None:
    ex = E.explain(kv_model, kv_runs, engine="xgboost", cache=False)
    dep = ex.dependence("kv_cache_bytes", color="batch_size")
    assert len(dep) == len(kv_runs)
    # throughput falls with the KV cache: the attribution is anti-monotone in the value
    assert dep["value"].corr(dep["shap"], method="spearman") < -0.9
    np.testing.assert_array_equal(dep["color_value"], kv_runs["batch_size"].to_numpy())
    query = kv_runs.iloc[7][["hardware", "model", "framework", "device_count", "input_len_tok",
                             "output_len_tok", "batch_size"]].to_dict()
    wf = E.waterfall(kv_model, query, engine="xgboost")
    assert wf.table.iloc[0]["feature"] == "kv_cache_bytes"
    assert wf.base_value + wf.table["shap"].sum() == pytest.approx(wf.output, abs=1e-4)
    assert wf.prediction_tok_s == pytest.approx(np.exp(wf.output))
    assert wf.prediction_tok_s == pytest.approx(kv_runs["output_throughput_tok_s"].iloc[7], rel=0.1)
    top = wf.top(3)
    assert len(top) == 4 and top.iloc[-1]["feature"].startswith("other (")
    assert top["shap"].sum() == pytest.approx(wf.table["shap"].sum())
    with pytest.raises(PerfmodelError, match="exactly one"):
        E.waterfall(kv_model, kv_runs.iloc[:2])


def test_interactions_on_a_stated_sample(kv_model: E.TreeModel, kv_runs: pd.DataFrame) -> None:
    it = E.interactions(kv_model, kv_runs, sample_size=16, top=5)
    assert it.sample_size == 16 and "16 of 600 rows" in it.message
    assert len(it.table) == 5
    assert (np.diff(it.table["strength"].to_numpy()) <= 0).all()
    assert E.interactions(kv_model, kv_runs, sample_size=16, top=5).cached


def test_saved_xgboost_predictor_is_explained_in_tok_s(kv_runs: pd.DataFrame, tmp_path) -> None:
    from perfmodel.models import get_predictor

    model = get_predictor("xgboost", features="raw+physical", n_estimators=30).fit(kv_runs)
    model.save(tmp_path / "m")
    tm = E.tree_model(tmp_path / "m")
    assert not tm.log_output and tm.output.startswith("throughput")
    ex = E.explain(tm, kv_runs, sample_size=40, engine="xgboost", cache=False)
    assert ex.additivity_ok
    pred = model.predict(kv_runs.iloc[ex.rows])["pred_throughput_tok_s"].to_numpy()
    np.testing.assert_allclose(ex.values.sum(axis=1) + ex.base_value, pred, rtol=1e-4)


def test_user_errors_are_perfmodel_errors(kv_model: E.TreeModel, kv_runs: pd.DataFrame, tmp_path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from perfmodel.models import get_predictor

    with pytest.raises(UnknownNameError, match="engine"):
        E.explain(kv_model, kv_runs, engine="lime")
    with pytest.raises(PerfmodelError, match="sample_size"):
        E.explain(kv_model, kv_runs, sample_size=0)
    with pytest.raises(PerfmodelError, match="empty"):
        E.explain(kv_model, kv_runs.iloc[:0])
    with pytest.raises(PerfmodelError, match="not a fitted gradient-boosted"):
        E.tree_model(get_predictor("linear", features="raw").fit(kv_runs))
    with pytest.raises(PerfmodelError, match="not a saved model"):
        E.tree_model(tmp_path)
    with pytest.raises(PerfmodelError, match="max_depth"):
        E.fit_gbdt(kv_runs, "physical", max_depth=0)
    with pytest.raises(PerfmodelError, match="framework"):
        E.fit_gbdt(kv_runs.drop(columns=["fw_step_s"]), "framework")
    monkeypatch.setitem(sys.modules, "shap", None)
    with pytest.raises(PerfmodelError, match=r"pip install 'perfmodel\[explain\]'"):
        E.explain(kv_model, kv_runs, sample_size=5, engine="shap", cache=False)
    # the xgboost engine needs no extra
    assert E.explain(kv_model, kv_runs, sample_size=5, engine="xgboost", cache=False).additivity_ok


def test_roofline_gbm_is_explained_as_log_efficiency(kv_runs: pd.DataFrame) -> None:
    from perfmodel.models import get_predictor

    model = get_predictor("roofline-gbm", n_estimators=20, calibration_folds=0).fit(kv_runs)
    tm = E.tree_model(model)
    assert tm.log_output and tm.output.startswith("log efficiency")
    assert tm.feature_names[-1] == "prior_kind" and tm.kinds[-1] == "other"
    ex = E.explain(tm, kv_runs, sample_size=50, engine="xgboost", cache=False)
    assert ex.additivity_ok


# --------------------------------------------------------------------------- feature names for people (glossary)

def _sample_runs() -> pd.DataFrame:
    from pathlib import Path

    from perfmodel.importers import read_file

    files = sorted((Path(__file__).resolve().parents[1] / "sample_runs").glob("*.csv"))
    return pd.concat([read_file(f, format="canonical").runs for f in files], ignore_index=True)


def test_every_feature_of_the_all_set_has_a_glossary_entry() -> None:
    # Guards drift: a feature added to RAW, DERIVED or PHYSICAL without a FeatureDoc, or a dynamic kind
    # (fw_*, id_*_) the glossary cannot name, showed up as a raw name with no explanation.
    from perfmodel.features import DERIVED, FEATURE_DOCS, RAW, feature_doc, feature_names, glossary

    assert set(FEATURE_DOCS) == set(RAW + DERIVED + PHYSICAL)
    for runs in (make_runs(60), _sample_runs()):
        names = feature_names(runs, "all")
        assert any(n.startswith("fw_") for n in names) and any(n.startswith("id_platform_") for n in names)
        for n in names:
            doc = feature_doc(n)
            assert doc is not None and doc.label and doc.formula, n
            assert doc.title != n, n  # words, not the raw name
        table = glossary(names)
        covered = {f for line in table["features"] for f in line.split(", ")}
        assert covered == set(names)
        assert table["formula"].str.len().gt(0).all() and "not a perfmodel feature" not in set(table["formula"])
        # one line per physical quantity, dynamic ones grouped by their prefix
        assert set(PHYSICAL) <= set(table["feature"])
        assert {"fw_<name>", "id_platform_<value>"} <= set(table["feature"])
    assert feature_doc("not_a_feature") is None
    assert glossary(["not_a_feature"])["formula"].tolist() == ["not a perfmodel feature"]
    # Llama-3-70B on 2 x H100, batch 64: the waterfall's "roofline throughput bound = 2,105 tok/s" beside the
    # What-if page's 199.4 tok/s (capped where the KV cache fills the memory); the glossary says which is which.
    assert "KV-cache-full batch" in feature_doc("log_output_tok_s_max").formula


def test_feature_labels_carry_units_and_values_read_in_them() -> None:
    import math

    from perfmodel.features import feature_label, format_feature_value

    assert feature_label("kv_cache_bytes") == "KV-cache size (B)"
    assert feature_label("mem_bw_gbs") == "memory bandwidth (GB/s)"
    assert feature_label("id_platform_rocm") == "platform is rocm (1/0)"
    assert feature_label("fw_kv_cache_usage_pct") == "framework metric: kv cache usage (%)"
    assert feature_label("fw_num_threads").startswith("framework setting")  # chosen before the run
    assert feature_label("unknown_thing") == "unknown_thing"
    assert format_feature_value("kv_cache_bytes", 4.29e9) == "4.29 GB"
    assert format_feature_value("weight_bytes_over_bw_s", 0.0048) == "4.8 ms"
    assert format_feature_value("log_prefill_s_min", math.log(1.06)) == "1.06 s"  # the quantity, not its ln
    assert format_feature_value("log_output_tok_s_max", math.log(6618.0)) == "6,618 tok/s"
    # per GB: a waterfall row read "memory-bandwidth pressure = 2.73e-08 token·s/B" (e-notation)
    assert format_feature_value("mem_bw_pressure_s", 7.585e-8) == "75.85 token·s/GB"  # not 0.00000007585
    assert format_feature_value("mem_bw_pressure_s", 2.73e-8) == "27.3 token·s/GB"
    assert format_feature_value("mem_bw_pressure_s", 1.2e-4) == "120 token·s/MB"
    assert feature_label("fw_server_prompt_ms_mean") == "framework metric: server prompt (mean) (ms)"
    assert format_feature_value("id_platform_rocm", 0.0) == "no" and format_feature_value("id_hw_h200", 1.0) == "yes"
    assert format_feature_value("kv_cache_bytes", float("nan")) == "n/a"
