"""A known-format CSV missing a column its importer needs is refused with a message naming the file and
the column, not a bare ``KeyError`` (real files, each needed column dropped in turn, format forced).

Regression: ``looks like a ... file but could not be read (KeyError: 'mean_latency')``.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from perfmodel.errors import ImportFormatError
from perfmodel.importers import ImportMeta, read_file

pytestmark = pytest.mark.usefixtures("stub_catalog")

META = ImportMeta(hardware="H100", model="m", framework="vllm")

# (format, file under ../shared/data/formats, the columns its importer cannot do without)
CASES = [
    ("neuralmagic-vllm-csv", "vllm-offline-batch-csv/neuralmagic-vllm-benchmarking__a100_model_benchmarking_results.csv",
     ("model_id", "seq_len", "batch_size", "weight_type", "tput")),
    ("neuralmagic-vllm-server-qps-csv",
     "vllm-server-qps-csv/neuralmagic-vllm-benchmarking__4xA4000_server_benchmarking_results.csv",
     ("model_name", "gpu_type", "input_tokens", "output_tokens", "qps", "mean_latency")),
    ("guidellm-csv", "guidellm-derived-csv/guidellm-pd-disaggregation__all-benchmarks.csv",
     ("profile", "rps_mean", "concurrency_mean", "prompt_tokens_mean", "output_tokens_mean")),
    ("trtllm-bench-csv", "trtllm-bench/trtllm-benchmarks-etched__throughput_summary.csv",
     ("ISL", "OSL", "Requests", "Token_Throughput", "Request_Throughput")),
]


@pytest.mark.parametrize(("fmt", "rel", "column"), [(f, r, c) for f, r, cols in CASES for c in cols])
def test_missing_needed_column_is_named(formats_dir: Path, tmp_path: Path, fmt: str, rel: str,
                                        column: str) -> None:
    df = pd.read_csv(formats_dir / rel, dtype=str, keep_default_na=False)
    f = tmp_path / f"no_{column}.csv"
    df.drop(columns=[column]).to_csv(f, index=False)
    with pytest.raises(ImportFormatError) as ei:
        read_file(f, format=fmt, meta=META)
    msg = str(ei.value)
    assert msg.startswith(f"{f.name}: missing column(s) ") and f"'{column.lower()}'" in msg.lower()
    assert "KeyError" not in msg and "could not be read" not in msg
    assert "columns found: " in msg


# (the offline batch CSV has only its five needed columns)
@pytest.mark.parametrize(("fmt", "rel"), [(f, r) for f, r, _ in CASES if f != "neuralmagic-vllm-csv"])
def test_optional_columns_may_be_missing(formats_dir: Path, tmp_path: Path, fmt: str, rel: str) -> None:
    """Only the needed columns are required: a column the importer reads when present may go."""
    df = pd.read_csv(formats_dir / rel, dtype=str, keep_default_na=False)
    needed = {c.lower() for f, _, cols in CASES if f == fmt for c in cols}
    optional = [c for c in df.columns if c.lower() not in needed]
    assert optional
    f = tmp_path / "needed_only.csv"
    df.drop(columns=optional).to_csv(f, index=False)
    assert len(read_file(f, format=fmt, meta=META).runs) > 0
