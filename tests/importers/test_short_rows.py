"""Short and truncated CSV rows across the CSV family: the last row of a file cut off mid-row (no line break
after it) is a row error naming file, row and the missing columns, and only that row is left out; a row
written short (ended by a line break) is kept, its missing cells empty, with a warning.

Regression: pandas fills a short row's missing cells with NaN, so such rows were stored as if those
cells were empty, and a file cut off mid-row ("...\\nNousResea") failed as a whole with
"unknown model 'NousResea'" (the cut name sent to the catalog).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from perfmodel.errors import ValidationError
from perfmodel.importers import ImportMeta, read_file

DATA = Path(__file__).resolve().parents[1] / "data" / "csv_family"

# (folder under the shared data, file, what the user supplies): real files, read with the real catalog.
CASES = [
    ("formats/vllm-offline-batch-csv", "neuralmagic-vllm-benchmarking__a100_model_benchmarking_results.csv",
     ImportMeta(hardware="A100-80GB")),
    ("formats/vllm-server-qps-csv", "neuralmagic-vllm-benchmarking__4xA4000_server_benchmarking_results.csv",
     ImportMeta()),
    ("formats/guidellm-derived-csv", "guidellm-pd-disaggregation__all-benchmarks.csv",
     ImportMeta(hardware="T4", model="Qwen/Qwen3-0.6B", framework="vllm", device_count=2)),
    ("formats/trtllm-bench", "trtllm-benchmarks-etched__throughput_summary.csv",
     ImportMeta(hardware="H100", model="meta-llama/Llama-3.1-70B-Instruct", device_count=8)),
    ("llm-inference-bench", "All_results.csv", ImportMeta()),
]


def _cut(text: str, line_no: int, keep_chars: int = 9) -> tuple[str, int]:
    """``text`` cut off ``keep_chars`` characters into its line ``line_no`` (1-based, header = 1), and the
    number of fields left on that line."""
    lines = text.splitlines(keepends=True)
    cut_line = lines[line_no - 1][:keep_chars]
    return "".join(lines[:line_no - 1]) + cut_line, cut_line.count(",") + 1


@pytest.mark.parametrize(("folder", "name", "meta"), CASES, ids=[c[0].split("/")[-1] for c in CASES])
def test_file_cut_off_mid_row(shared_data: Path, tmp_path: Path, folder: str, name: str,
                              meta: ImportMeta) -> None:
    src = shared_data / folder / name
    text = src.read_text()
    line_no = 5  # the cut row: data row 4
    cut, n_fields = _cut(text, line_no)
    header = text.splitlines()[0].split(",")
    assert n_fields < len(header)
    f = tmp_path / f"cut_{name}"
    f.write_text(cut)
    res = read_file(f, meta=meta)
    assert list(res.runs["source_row"]) == [1, 2, 3], "the rows before the cut import, the cut one does not"
    errors = [i for i in res.issues if i.severity == "error"]
    assert len(errors) == 1 and res.n_dropped == 1
    (err,) = errors
    assert (err.file, err.row, err.column) == (f.name, line_no - 1, header[n_fields].strip())
    assert f"expected {len(header)} fields, found {n_fields}" in err.message
    assert ", ".join(repr(h.strip()) for h in header[n_fields:]) in err.message
    # The rows kept are those of the whole file, unchanged.
    whole = read_file(src, meta=meta).runs
    assert res.runs["model"].tolist() == whole["model"].iloc[:3].tolist()


def test_short_row_mid_file_and_strict_import(shared_data: Path, tmp_path: Path) -> None:
    """A short row in the middle of a file (one field dropped, the line ended) is written short, not cut: it
    is kept with a warning, its missing cell empty; cut off at the end of the file it is an error, and strict
    import stores nothing."""
    from perfmodel.api import import_files
    from perfmodel.store import Store

    src = shared_data / "formats/vllm-server-qps-csv" / CASES[1][1]
    lines = src.read_text().splitlines(keepends=True)
    lines[3] = lines[3].rsplit(",", 1)[0] + "\n"  # data row 3 loses its last field (p100_latency)
    f = tmp_path / "short.csv"
    f.write_text("".join(lines))
    res = read_file(f)
    assert len(res.runs) == len(lines) - 1 and 3 in set(res.runs["source_row"])
    assert not [i for i in res.issues if i.severity == "error"]
    (warn,) = [i for i in res.issues if "short or truncated row" in i.message]
    assert (warn.severity, warn.row, warn.column) == ("warning", 3, "p100_latency")
    assert warn.message.endswith("'p100_latency'; read as empty")
    # the same row last, with no line break after it: the file was cut off there
    lines = [*lines[:3], *lines[4:], lines[3].rstrip("\n")]
    f.write_text("".join(lines))
    res = read_file(f)
    assert len(res.runs) == len(lines) - 2
    (err,) = [i for i in res.issues if i.severity == "error"]
    assert (err.row, err.column) == (len(lines) - 1, "p100_latency") and "the file ends mid-row" in err.message
    store = Store(tmp_path / "store")
    with pytest.raises(ValidationError, match="strict import: nothing was stored") as ei:
        import_files([f], store=store, strict=True)
    assert f"short.csv, row {len(lines) - 1}, column 'p100_latency'" in str(ei.value)
    assert store.datasets() == []


def test_generic_csv_short_row(tmp_path: Path, stub_catalog: None) -> None:
    """The generic CSV importer: a short row is not read as a row with empty trailing cells."""
    text = (DATA / "generic.csv").read_text()
    header = text.splitlines()[0].split(",")
    f = tmp_path / "g.csv"
    cut, n_fields = _cut(text, 3, keep_chars=len(text.splitlines()[2].rsplit(",", 1)[0]))
    f.write_text(cut)
    cmap = {"hardware": "gpu", "model": "llm", "input_len_tok": "prompt", "output_len_tok": "gen",
            "batch_size": "conc", "output_throughput_tok_s": "tput", "e2e_latency_s": "lat_ms"}
    res = read_file(f, format="csv", meta=ImportMeta(column_map=cmap, latency_unit="ms", framework="vllm"))
    assert list(res.runs["source_row"]) == [1]
    (err,) = [i for i in res.issues if i.severity == "error"]
    assert err.row == 2 and err.column == header[n_fields].strip()
    assert f"expected {len(header)} fields, found {n_fields}" in err.message


def test_trailing_empty_cell_is_not_a_short_row(tmp_path: Path, stub_catalog: None) -> None:
    """``a,b,`` writes every field (the last one empty): still read, as before."""
    f = tmp_path / "t.csv"
    f.write_text("x,tput,lat\n1,10,\n2,20,0.5\n")
    res = read_file(f, format="csv", meta=ImportMeta(
        column_map={"output_throughput_tok_s": "tput", "e2e_latency_s": "lat"}, latency_unit="s",
        hardware="A100", model="m", framework="vllm", input_len_tok=100, output_len_tok=10))
    assert list(res.runs["source_row"]) == [1, 2] and not [i for i in res.issues if i.severity == "error"]
