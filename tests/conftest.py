"""Shared fixtures.

The real public measurements live beside the repository in ``../shared/data``;
tests that need them skip with a clear reason when it is absent (they are never
copied into the repository).
"""

from __future__ import annotations

import types
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
FORMATS = SHARED_DATA / "formats"
LLM_BENCH = SHARED_DATA / "llm-inference-bench"
ALL_RESULTS = LLM_BENCH / "All_results.csv"


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"needs the shared data set at {path} (../shared/data beside the repository)")
    return path


@pytest.fixture
def shared_data() -> Path:
    """``../shared/data``; skips the test when absent."""
    return _need(SHARED_DATA)


@pytest.fixture
def formats_dir() -> Path:
    """``../shared/data/formats``; skips the test when absent."""
    return _need(FORMATS)


@pytest.fixture
def llm_bench_dir() -> Path:
    """``../shared/data/llm-inference-bench``; skips the test when absent."""
    return _need(LLM_BENCH)


@pytest.fixture
def all_results_csv() -> Path:
    """``All_results.csv`` (4,772 rows); skips the test when absent."""
    return _need(ALL_RESULTS)


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own empty PERFMODEL_HOME so nothing touches ~/.perfmodel."""
    home = tmp_path_factory.mktemp("perfmodel-home")
    monkeypatch.setenv("PERFMODEL_HOME", str(home))
    monkeypatch.delenv("PERFMODEL_CATALOG", raising=False)
    return home


@pytest.fixture
def stub_catalog(monkeypatch: pytest.MonkeyPatch) -> None:
    """Resolve every name to itself: tests using it pin an importer, not the catalog's content."""
    from perfmodel import catalog

    key = types.SimpleNamespace
    monkeypatch.setattr(catalog, "resolve_hardware", lambda v: key(key=str(v).lower()), raising=False)
    monkeypatch.setattr(catalog, "resolve_model", lambda v: key(key=str(v).lower()), raising=False)
    monkeypatch.setattr(catalog, "canonical_framework", lambda v: str(v).lower(), raising=False)


@pytest.fixture
def suspect_dataset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store holding one Llama-3-8B bf16 / one H100 curve with one suspect run, and no sample data.

    The GPU reads the model's 16 GB of weights at most ~209 times a second (3.35 TB/s), so 3,000 tok/s
    at batch 8 beats the bound 8 x 209 = ~1,670 tok/s; the runs at batch 1, 4 and 16 do not.
    """
    import pandas as pd

    from perfmodel.api import import_files
    from perfmodel.store import Store
    from perfmodel.ui import samples

    monkeypatch.setattr(samples, "SAMPLE_DIR", tmp_path / "none")
    src = tmp_path / "suspect.csv"
    pd.DataFrame({
        "hardware": "h100-sxm", "device_count": 1, "framework": "vllm", "model": "llama-3-8b",
        "input_len_tok": 512.0, "output_len_tok": 128.0, "load_kind": "static_batch",
        "batch_size": [1.0, 4.0, 8.0, 16.0], "output_throughput_tok_s": [90.0, 300.0, 3000.0, 900.0],
        # 16 prompts of 512 tokens take at least 2 x 8.03e9 x 8,192 / 989.5e12 = 0.133 s: 1 ms is impossible
        "ttft_s": [0.05, 0.2, 0.4, 0.001],
        "repeat_idx": 0, "source_format": "synthetic", "source_file": "s.csv", "source_row": range(1, 5)},
    ).to_csv(src, index=False)
    import_files([src], format="canonical", store=Store())
