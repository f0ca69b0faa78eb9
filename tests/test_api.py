"""The import/load/export API and perfmodel's own canonical format: exact round trips."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pandas.testing import assert_frame_equal
from test_store import dump, write_canonical_csv

from perfmodel.api import export_runs, import_bytes, import_files, load_runs
from perfmodel.errors import ImportFormatError, PerfmodelError, UnknownNameError, ValidationError
from perfmodel.importers import ImportMeta, detect_format, read_file
from perfmodel.importers.base import Sample
from perfmodel.store import Store


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "home")


def test_canonical_csv_imports_and_resolves(tmp_path: Path, store: Store) -> None:
    from perfmodel import catalog

    src = write_canonical_csv(tmp_path / "mine.csv", 200, seed=1)
    assert detect_format(Sample(src)).name == "canonical"
    info, results = import_files([src], store=store)
    assert info.n_runs == 200 and info.name == "mine" and results[0].format == "canonical"
    runs = load_runs(info.id, store=store)
    raw = pd.read_csv(src, dtype=str)
    # Keys come from the catalog; raw names are kept as written.
    keys = {catalog.resolve_hardware(h).key for h in raw["hardware_raw"].unique()}
    assert set(runs["hardware"]) == keys
    assert runs["hardware_raw"].tolist() == raw["hardware_raw"].tolist()
    # Provenance columns of the rows survive a re-import of perfmodel's own table.
    assert set(runs["source_format"]) == {"synthetic"} and set(runs["source_file"]) == {"synth.csv"}
    assert runs["e2e_latency_s"].tolist() == [float(v) for v in raw["e2e_latency_s"]]


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_export_import_round_trip_is_exact(tmp_path: Path, store: Store, suffix: str) -> None:
    src = write_canonical_csv(tmp_path / "mine.csv", 300, seed=2)
    info, _ = import_files([src], store=store)
    before = load_runs(info.id, store=store)
    out = export_runs(info.id, tmp_path / f"out{suffix}", store=store)
    info2, results = import_files([out], store=store)
    assert info2.id != info.id and info2.name == "out"
    assert results[0].issues == ()
    assert_frame_equal(load_runs(info2.id, store=store), before, check_exact=True)
    # Exporting the re-import gives the same bytes for CSV.
    if suffix == ".csv":
        again = export_runs(info2.id, tmp_path / "again.csv", store=store)
        assert again.read_bytes() == out.read_bytes()


throughput = st.floats(min_value=1e-12, max_value=1e9, allow_nan=False, allow_infinity=False)
latency = st.floats(min_value=0, max_value=86_000, allow_nan=False, allow_infinity=False)


# No shrinking: a failure here prints its example, and shrinking through imports is slow.
@settings(max_examples=8, deadline=None, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.tuples(throughput, latency, st.floats(0, 1)), min_size=1, max_size=5))
def test_any_float_round_trips_bit_exactly(tmp_path_factory: pytest.TempPathFactory,
                                           values: list[tuple[float, float, float]]) -> None:
    d = tmp_path_factory.mktemp("rt")
    store = Store(d)
    n = len(values)
    df = pd.DataFrame({
        "hardware": "H100-80GB-SXM", "model": "meta-llama/Llama-3.1-8B-Instruct", "device_count": 1,
        "framework": "vllm", "input_len_tok": 128.0, "output_len_tok": 64.0, "load_kind": "concurrency",
        "batch_size": 4.0, "throughput_basis": "output",
        "output_throughput_tok_s": [v[0] for v in values],
        "e2e_latency_s": [v[1] for v in values],
        "ttft_s": [v[1] * v[2] for v in values],
        "fw_metric": [v[0] / 3 for v in values],
        "repeat_idx": 0, "source_format": "x", "source_row": range(1, n + 1),
    })
    df.to_csv(d / "in.csv", index=False)
    info, _ = import_files([d / "in.csv"], store=store)
    first = load_runs(info.id, store=store)
    assert first["output_throughput_tok_s"].tolist() == [v[0] for v in values]
    assert first["ttft_s"].tolist() == [v[1] * v[2] for v in values]
    for suffix in (".csv", ".parquet"):
        out = export_runs(info.id, d / f"out{suffix}", store=store)
        info2, _ = import_files([out], store=store)
        back = load_runs(info2.id, store=store)
        for c in ("output_throughput_tok_s", "total_throughput_tok_s", "e2e_latency_s", "ttft_s", "fw_metric"):
            a, b = back[c].to_numpy(), first[c].to_numpy()
            assert np.array_equal(a.view(np.int64), b.view(np.int64)), c


def test_import_bytes_is_the_same_content(tmp_path: Path, store: Store) -> None:
    src = write_canonical_csv(tmp_path / "up.csv", 30, seed=3)
    info, _ = import_files([src], store=store)
    info2, results = import_bytes([("some/dir/up.csv", src.read_bytes())], store=store)
    assert info2 == info and results[0].file == "up.csv"
    assert len(store.datasets()) == 1
    # The same bytes with different supplied metadata are a different dataset.
    info3, res3 = import_bytes([("up.csv", src.read_bytes())], meta=ImportMeta(framework="sglang"), store=store)
    assert info3.id != info.id and info3.name == "up (2)"
    # The file records its frameworks: a supplied one fills only empty cells, and says where it was not applied.
    assert list(load_runs(info3.id, store=store)["framework"]) == list(load_runs(info.id, store=store)["framework"])
    assert any("--framework" in str(i) and "not applied" in str(i) for i in res3[0].issues)


def test_multi_file_import_is_all_or_nothing(tmp_path: Path, store: Store) -> None:
    good = write_canonical_csv(tmp_path / "good.csv", 10, seed=4)
    bad = tmp_path / "bad.csv"
    bad.write_text("hardware,model,input_len_tok,output_len_tok,load_kind\n")
    import_files([good], store=store, name="first")
    before = dump(store)
    with pytest.raises(ImportFormatError, match="bad.csv"):
        import_files([good, bad], store=store)
    assert dump(store) == before
    info, _ = import_files([good, write_canonical_csv(tmp_path / "g2.csv", 5, seed=5)], store=store, name="two")
    assert info.files == ("good.csv", "g2.csv") and info.n_runs == 15


def test_errors_are_perfmodel_errors(tmp_path: Path, store: Store) -> None:
    src = write_canonical_csv(tmp_path / "x.csv", 3, seed=6)
    info, _ = import_files([src], store=store)
    with pytest.raises(PerfmodelError, match=r"\.csv or \.parquet"):
        export_runs(info.id, tmp_path / "out.xlsx", store=store)
    with pytest.raises(PerfmodelError, match="cannot write"):
        export_runs(info.id, tmp_path / "no" / "such" / "dir.csv", store=store)
    with pytest.raises(ImportFormatError, match="at least one"):
        import_files([], store=store)
    with pytest.raises(PerfmodelError, match="known datasets: 'x'"):
        load_runs("missing", store=store)


def test_canonical_with_unknown_column_is_a_clear_error(tmp_path: Path) -> None:
    src = write_canonical_csv(tmp_path / "x.csv", 3, seed=7)
    df = pd.read_csv(src, dtype=str)
    df["throughput"] = "1"
    df.to_csv(src, index=False)
    with pytest.raises(ImportFormatError, match="not a canonical column") as ei:
        read_file(src)
    assert "'throughput'" in str(ei.value) or "(throughput)" in str(ei.value)
    assert "x.csv" in str(ei.value) and "fw_" in str(ei.value)


def test_parquet_garbage_is_a_clear_error(tmp_path: Path) -> None:
    p = tmp_path / "x.parquet"
    p.write_bytes(b"PAR1" + b"\x00\xff" * 100)
    with pytest.raises(ImportFormatError, match="x.parquet"):
        read_file(p)
    with pytest.raises(ImportFormatError, match="x.parquet"):
        read_file(p, format="canonical")


def test_all_results_imports_resolves_and_round_trips(all_results_csv: Path, tmp_path: Path, store: Store) -> None:
    """LLM-Inference-Bench All_results.csv: 4,772 rows, all resolved to catalog keys, and
    store -> `perfmodel export` (CSV and Parquet) -> import gives the same frame."""
    from click.testing import CliRunner

    from perfmodel import catalog
    from perfmodel.cli import main

    info, results = import_files([all_results_csv], store=store)
    assert info.n_runs == 4772 and results[0].format == "llm-inference-bench"
    runs = load_runs(info.id, store=store)
    assert len(runs) == 4772
    assert set(runs["hardware"]) <= set(catalog.hardware_catalog())
    assert set(runs["model"]) <= set(catalog.model_catalog())
    for raw, key in runs[["hardware_raw", "hardware"]].drop_duplicates().itertuples(index=False):
        assert catalog.resolve_hardware(raw).key == key
    for raw, key in runs[["model_raw", "model"]].drop_duplicates().itertuples(index=False):
        assert catalog.resolve_model(raw).key == key
    assert runs["hardware_raw"].nunique() == 9 and runs["model_raw"].nunique() == 15
    # Golden values: first and last rows of the file.
    first, last = runs.iloc[0], runs.iloc[-1]
    assert first["hardware_raw"] == "Nvidia GH200 GPU" and first["model_raw"] == "mistralai/Mistral-7B-v0.1"
    assert first["e2e_latency_s"] == 0.688306736946106 and first["batch_size"] == 1
    assert first["total_throughput_tok_s"] == 371.92720375776975
    assert last["framework"] == "llama.cpp" and last["e2e_latency_s"] == 21.112430727
    assert last["throughput_basis"] == "total" and last["batch_size"] == 1 and last["fw_n_batch"] == 64

    runner = CliRunner()
    for suffix in (".csv", ".parquet"):
        out = tmp_path / f"all{suffix}"
        res = runner.invoke(main, ["--home", str(store.path.parent), "export", info.id, "-o", str(out)])
        assert res.exit_code == 0, res.output
        info2, _ = import_files([out], store=store)
        assert info2.n_runs == 4772
        assert_frame_equal(load_runs(info2.id, store=store), runs, check_exact=True)


def test_train_and_predict_in_python_give_the_cli_s_file(tmp_path):  # noqa: ANN001, ANN201
    # Guards: perfmodel.api had no train or predict; Python callers assembled PRED.csv's columns themselves
    # (and without the note, level and domain_reason the CLI writes).
    from _predict_data import synthetic_runs
    from click.testing import CliRunner

    from perfmodel import api
    from perfmodel.cli import main

    runs = synthetic_runs(noise=0.02)
    model = api.train(runs, predictor="roofline-gbm", output=tmp_path / "m")
    assert 0 < model.n_train_ <= len(runs) and (tmp_path / "m" / "metadata.json").is_file()
    queries = pd.DataFrame({"hardware": ["H100", "h200"], "model": ["llama-3-8b"] * 2, "framework": ["vllm"] * 2,
                            "input_len_tok": [128, 128], "output_len_tok": [128, 128], "batch_size": [16, 16]},
                           index=[7, 9])
    got = api.predict(tmp_path / "m", queries)
    assert list(got.index) == [7, 9] and list(got.columns[:6]) == list(queries.columns)
    assert got["in_domain"].tolist() == [True, False] and got["domain_reason"].iloc[0] == ""
    assert "hardware 'h200' is not in the training data" in got["domain_reason"].iloc[1]
    q = tmp_path / "q.csv"
    queries.to_csv(q, index=False)
    res = CliRunner().invoke(main, ["predict", str(tmp_path / "m"), str(q), "-o", str(tmp_path / "p.csv")])
    assert res.exit_code == 0, res.output
    cli = pd.read_csv(tmp_path / "p.csv", keep_default_na=False)
    assert list(cli.columns) == list(got.columns)
    np.testing.assert_allclose(cli["pred_throughput_tok_s"], got["pred_throughput_tok_s"], rtol=1e-12)
    with pytest.raises(ValidationError, match=r"row 2, column 'weight_dtype': unknown dtype 'nonsense'"):
        api.predict(model, queries.assign(weight_dtype=["bf16", "nonsense"]))  # as the CLI's file form refuses it
    with pytest.raises(UnknownNameError, match="unknown predictor 'nope'"):
        api.train(runs, predictor="nope")
    with pytest.raises(ValidationError, match="does not take a feature set"):
        api.train(runs, predictor="ala", features="raw")
