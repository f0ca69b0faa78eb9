"""The canonical runs table: coercion and validation collect every problem."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfmodel.errors import ValidationError
from perfmodel.schema import (
    COLUMN_NAMES,
    REQUIRED,
    check_runs,
    coerce_runs,
    empty_runs,
    validate_runs,
)


def good_rows(n: int = 3) -> pd.DataFrame:
    return pd.DataFrame({
        "hardware": ["h100-sxm-80gb"] * n,
        "device_count": [1] * n,
        "framework": ["vllm"] * n,
        "model": ["llama-3-8b"] * n,
        "input_len_tok": [128.0] * n,
        "output_len_tok": [128.0] * n,
        "load_kind": ["static_batch"] * n,
        "batch_size": [2.0 ** i for i in range(n)],
        "output_throughput_tok_s": [100.0 * (i + 1) for i in range(n)],
        "throughput_basis": ["output"] * n,
        "e2e_latency_s": [1.0] * n,
        "ttft_s": [0.1] * n,
        "repeat_idx": [0] * n,
        "source_format": ["test"] * n,
        "source_row": list(range(1, n + 1)),
    })


def test_empty_runs_has_every_column_in_order() -> None:
    assert tuple(empty_runs().columns) == COLUMN_NAMES


def test_valid_table_passes_and_is_canonical() -> None:
    out = validate_runs(good_rows())
    assert tuple(out.columns) == COLUMN_NAMES
    assert str(out["device_count"].dtype) == "Int64"
    assert out["output_throughput_tok_s"].tolist() == [100.0, 200.0, 300.0]


def test_extras_kept_as_float_and_unknown_columns_rejected() -> None:
    df = good_rows()
    df["fw_num_requests_running"] = [1, 2, 3]
    df["hw_power_w"] = ["10.5", "11", "12"]
    out = validate_runs(df)
    assert out["hw_power_w"].tolist() == [10.5, 11.0, 12.0]
    df["Throughput"] = 1.0
    with pytest.raises(ValidationError, match="'Throughput'.*not a canonical column"):
        validate_runs(df)


def test_every_problem_is_reported_at_once_with_row_and_column() -> None:
    df = good_rows(4)
    df.loc[0, "output_throughput_tok_s"] = -5.0          # negative
    df.loc[1, "output_throughput_tok_s"] = np.nan        # NaN and no other throughput
    df.loc[2, "ttft_s"] = 3.0                             # TTFT above e2e
    df["batch_size"] = df["batch_size"].astype(object)
    df.loc[3, "batch_size"] = "lots"                      # wrong type
    df = df.drop(columns=["model"])                       # missing column
    with pytest.raises(ValidationError) as ei:
        validate_runs(df, file="bad.csv")
    msg = str(ei.value)
    assert "column 'model'" in msg and "required column is missing" in msg
    assert "row 1, column 'output_throughput_tok_s'" in msg
    assert "row 2" in msg and "no throughput" in msg
    assert "row 3, column 'ttft_s'" in msg
    assert "row 4, column 'batch_size'" in msg and "'lots'" in msg
    assert len(ei.value.problems) >= 5


def test_source_row_names_rows() -> None:
    df = good_rows(2)
    df["source_row"] = [17, 42]
    df.loc[1, "power_w"] = -1.0
    problems = check_runs(coerce_runs(df)[0])
    assert [(p.row, p.column) for p in problems] == [(42, "power_w")]


@pytest.mark.parametrize("col,val,fragment", [
    ("load_kind", "burst", "not one of"),
    ("throughput_basis", "tokens", "not one of"),
    ("output_len_tok", 0.0, "length > 0"),
    ("device_count", 0, "not > 0"),
    ("e2e_latency_s", 1e7, "longer than a day"),
    ("output_throughput_tok_s", np.inf, "not a positive finite"),
])
def test_impossible_values(col: str, val: object, fragment: str) -> None:
    df = good_rows(1)
    df[col] = [val]
    problems = check_runs(coerce_runs(df)[0])
    assert any(fragment in p.message and p.column == col for p in problems), problems


def test_basis_none_allows_rows_without_throughput() -> None:
    df = good_rows(1)
    df["output_throughput_tok_s"] = [np.nan]
    df["throughput_basis"] = ["none"]
    validate_runs(df)


def test_required_columns_are_a_subset_of_columns() -> None:
    assert set(REQUIRED) <= set(COLUMN_NAMES)
    assert "throughput_basis" in REQUIRED and "load_kind" in REQUIRED


def test_arrival_is_a_documented_column_checked_against_its_options() -> None:
    from perfmodel.schema import ARRIVALS, column

    assert ARRIVALS == ("constant", "poisson", "gamma", "trace")
    assert column("arrival").kind == "str" and "poisson" in column("arrival").description
    assert column("burstiness").kind == "float" and not column("burstiness").required
    ok = good_rows(5).assign(load_kind="request_rate", batch_size=np.nan, request_rate_rps=5.0,
                             arrival=["constant", "poisson", "gamma", "trace", None],
                             burstiness=[np.nan, 1.0, 0.5, np.nan, np.nan])
    table = validate_runs(ok)
    assert table["arrival"].dtype == "string" and table["arrival"].isna().sum() == 1
    bad = good_rows(5).assign(load_kind="request_rate", batch_size=np.nan, request_rate_rps=5.0,
                              arrival=["Poisson-ish", "poisson", "constant", "gamma", "gamma"],
                              burstiness=[np.nan, 0.5, 2.0, 0.0, np.inf])
    problems = {(p.row, p.column): p.message for p in check_runs(coerce_runs(bad)[0])}
    assert "not one of constant, poisson, gamma, trace" in problems[(1, "arrival")]
    assert "a Poisson process is burstiness 1" in problems[(2, "burstiness")]
    assert "constant or trace" in problems[(3, "burstiness")]
    assert "> 0" in problems[(4, "burstiness")] and "> 0" in problems[(5, "burstiness")]
