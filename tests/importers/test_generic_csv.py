"""Generic CSV with a user mapping: mapped columns, units, and errors naming every gap."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from perfmodel.errors import ImportFormatError
from perfmodel.importers import ImportMeta, Sample, read_file

DATA = Path(__file__).resolve().parents[1] / "data" / "csv_family" / "generic.csv"

# these tests pin the importer, not the catalog
pytestmark = pytest.mark.usefixtures("stub_catalog")

MAP = {"hardware": "gpu", "model": "llm", "input_len_tok": "prompt", "output_len_tok": "gen",
       "batch_size": "conc", "output_throughput_tok_s": "tput", "e2e_latency_s": "lat_ms",
       "load_kind": "conc"}


def test_mapped_columns_and_ms() -> None:
    cmap = {k: v for k, v in MAP.items() if k != "load_kind"}
    res = read_file(DATA, format="csv", meta=ImportMeta(column_map=cmap, latency_unit="ms", framework="vllm"))
    assert len(res.runs) == 2
    r = res.runs.iloc[0]
    assert r["hardware_raw"] == "A100" and r["output_throughput_tok_s"] == 1000.5
    assert r["e2e_latency_s"] == pytest.approx(2.5) and r["batch_size"] == 8
    assert r["total_throughput_tok_s"] == pytest.approx(1000.5 * 640 / 128)
    assert r["load_kind"] == "concurrency"


def test_never_sniffed() -> None:
    from perfmodel.importers.generic_csv import GenericCsvImporter

    assert GenericCsvImporter().sniff(Sample(DATA)) == 0.0


def test_missing_mappings_listed_with_available_columns() -> None:
    with pytest.raises(ImportFormatError) as ei:
        read_file(DATA, format="csv", meta=ImportMeta(column_map={"output_throughput_tok_s": "tput"}))
    msg = str(ei.value)
    for need in ("hardware", "model", "framework", "input_len_tok", "output_len_tok"):
        assert need in msg
    assert "'lat_ms'" in msg and "generic.csv" in msg
    # the lengths can be given for the whole file, as the hardware can (the message had named only the mapping)
    assert "input_len_tok (or --input-len (CLI) or the Input tokens field" in msg and "(or --output-len (CLI)" in msg


def test_mapped_column_absent() -> None:
    cmap = {k: v for k, v in MAP.items() if k != "load_kind"} | {"ttft_s": "first_token"}
    with pytest.raises(ImportFormatError) as ei:
        read_file(DATA, format="csv", meta=ImportMeta(column_map=cmap, framework="x"))
    assert "ttft_s='first_token'" in str(ei.value) and "'gpu'" in str(ei.value)


def test_no_map_is_an_error() -> None:
    with pytest.raises(ImportFormatError, match="needs a column mapping"):
        read_file(DATA, format="csv")


def test_meta_supplies_lengths(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_text("x,tput\n1,10\n\n2,oops\n")
    res = read_file(p, format="csv", meta=ImportMeta(
        column_map={"output_throughput_tok_s": "tput"}, hardware="A100", model="m", framework="vllm",
        input_len_tok=100, output_len_tok=10))
    assert len(res.runs) == 1 and res.runs["input_len_tok"].iloc[0] == 100
    assert any(i.row == 3 and "expected a number" in i.message for i in res.issues)
    assert not math.isnan(res.runs["total_throughput_tok_s"].iloc[0])
