"""What every predictor accepts, as the CLI does: catalog aliases, a framework's spelling and a missing device
count give the predictions of the canonical query (they had given other answers, out of domain, in Python); a
target that is not a throughput is refused."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _predict_data import synthetic_runs

from perfmodel.errors import UnknownNameError, ValidationError
from perfmodel.models import get_predictor

PREDICTORS = ("linear", "random-forest", "xgboost", "ala", "roofline-gbm")
ALIASES = {"hardware": {"h100-sxm": "NVIDIA H100 SXM", "a100-40gb": "A100-40GB"},
           "model": {"llama-3-8b": "meta-llama/Meta-Llama-3-8B", "mistral-7b-v0.1": "mistralai/Mistral-7B-v0.1"},
           "framework": {"vllm": "vLLM"}}


def _as_written(runs: pd.DataFrame) -> pd.DataFrame:
    out = runs.astype({c: object for c in ALIASES})
    for col, names in ALIASES.items():
        out[col] = out[col].map(lambda v, names=names: names.get(v, v))
    return out


@pytest.fixture(scope="module")
def runs():
    return synthetic_runs(noise=0.02)


@pytest.mark.parametrize("name", PREDICTORS)
def test_aliases_and_a_missing_device_count_predict_as_the_canonical_query(name, runs):
    model = get_predictor(name).fit(runs)
    queries = runs.iloc[::5]
    want = model.predict(queries)
    written = _as_written(queries).drop(columns=["device_count"])
    assert set(written["hardware"]) == {"NVIDIA H100 SXM", "A100-40GB"}  # the test asks what it says
    got = model.predict(written)
    pd.testing.assert_frame_equal(got, want)


@pytest.mark.parametrize("name", ("xgboost", "roofline-gbm"))
def test_training_rows_written_with_aliases_train_the_same_model(name, runs):
    queries = runs.iloc[::7]
    want = get_predictor(name).fit(runs).predict(queries)
    got = get_predictor(name).fit(_as_written(runs)).predict(queries)
    np.testing.assert_allclose(got["pred_throughput_tok_s"], want["pred_throughput_tok_s"], rtol=1e-9)
    assert got["in_domain"].equals(want["in_domain"])


def test_an_unknown_name_is_named_with_its_row_and_column(runs):
    model = get_predictor("roofline-gbm").fit(runs)
    bad = runs.iloc[:4].copy().astype({"hardware": object})
    bad.iloc[2, bad.columns.get_loc("hardware")] = "H900"
    with pytest.raises(UnknownNameError, match=r"'H900'.*In row 3, column 'hardware'"):
        model.predict(bad)


@pytest.mark.parametrize("name", PREDICTORS)
def test_a_target_that_is_not_a_throughput_is_refused(name, runs):
    data = runs.assign(e2e_latency_s=lambda d: d["output_len_tok"] / d["output_throughput_tok_s"])
    with pytest.raises(ValidationError, match=r"cannot learn 'e2e_latency_s'.*'output_throughput_tok_s'"):
        get_predictor(name).fit(data, y="e2e_latency_s")


def test_roofline_gbm_learns_output_throughput_and_derives_the_total(runs):
    # its prior bounds output tokens a second: trained on the total, it had been held under the output roofline
    data = runs.assign(total_throughput_tok_s=lambda d: d["output_throughput_tok_s"] * 2)
    with pytest.raises(ValidationError, match="derived from it as pred_total_throughput_tok_s"):
        get_predictor("roofline-gbm").fit(data, y="total_throughput_tok_s")
    assert get_predictor("xgboost").fit(data, y="total_throughput_tok_s").y_ == "total_throughput_tok_s"


@pytest.mark.parametrize("name", PREDICTORS)
def test_a_training_table_without_a_column_is_named_as_the_training_rows(name, runs):
    """``fit`` on rows without ``batch_size`` had said "the query table is not usable" (or "the queries are not
    valid"), blaming queries the user had not given."""
    with pytest.raises(ValidationError) as exc:
        get_predictor(name).fit(runs.drop(columns=["batch_size"]))
    assert "training" in str(exc.value) and "quer" not in str(exc.value).split("\n")[0]
    assert any(p.column == "batch_size" for p in exc.value.problems)


@pytest.mark.parametrize("name", PREDICTORS)
def test_every_predictor_says_why_a_row_is_out_of_domain(name, runs):
    """PRED.csv's ``domain_reason`` had been written for roofline-gbm only: the baselines' and the hybrid's rows
    read ``in_domain`` False with nothing to say why."""
    from perfmodel.models.base import prediction_table

    model = get_predictor(name).fit(runs)
    q = runs.iloc[:3].copy()
    q.loc[q.index[1], "hardware"] = "mi300x"
    table = prediction_table(model, q)
    assert not table["in_domain"].iloc[1]
    assert "hardware 'mi300x' is not in the training data" in table["domain_reason"].iloc[1]
    inside = table["in_domain"].to_numpy(dtype=bool)
    assert (table["domain_reason"][inside] == "").all()


@pytest.mark.parametrize("name", ["linear", "random-forest", "xgboost"])
def test_a_baseline_names_the_feature_outside_its_trained_range(name, runs):
    from perfmodel.models.base import prediction_table

    q = runs.iloc[:1].assign(batch_size=4096)
    table = prediction_table(get_predictor(name).fit(runs), q)
    assert not table["in_domain"].iloc[0]
    assert f"batch_size = 4096 is outside the trained range 1 to {runs['batch_size'].max():g}" \
        in table["domain_reason"].iloc[0]
    assert "id_" not in table["domain_reason"].iloc[0]


def test_an_unknown_name_beside_an_empty_cell_is_a_problem_not_a_crash(runs):
    """A hardware column holding an unknown name and an empty cell raised ``TypeError: boolean value of NA is
    ambiguous`` from the row lookup of the unknown name's error."""
    model = get_predictor("linear").fit(runs)
    q = runs.iloc[:2].astype({"hardware": object}).reset_index(drop=True)
    q.loc[0, "hardware"], q.loc[1, "hardware"] = "H900", None
    with pytest.raises(UnknownNameError, match=r"H900.*row 1, column 'hardware'"):
        model.predict(q)
