"""A name given on import (--hardware/--model) that is an alias says which catalog entry it became."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfmodel.importers import ImportMeta, read_file


@pytest.fixture
def serving_file(shared_data: Path) -> Path:
    return sorted((shared_data / "formats" / "vllm-benchmark-serving").glob("*.json"))[0]


def test_an_alias_given_on_import_names_the_entry_it_became(serving_file: Path) -> None:
    # Guards: --hardware h100 became h100-sxm (not the PCIe part, whose bandwidth is 2.0 TB/s, not 3.35) silently.
    res = read_file(serving_file, meta=ImportMeta(hardware="h100", model="meta-llama/Meta-Llama-3-8B"))
    info = [i.message for i in res.issues if i.severity == "info" and i.row is None]
    assert "--hardware 'h100' read as the catalog's h100-sxm (NVIDIA H100 SXM5 80GB)" in info
    assert any(m.startswith("--model 'meta-llama/Meta-Llama-3-8B' read as the catalog's llama-3-8b") for m in info)
    assert set(res.runs["hardware"]) == {"h100-sxm"}
    keys = read_file(serving_file, meta=ImportMeta(hardware="h100-sxm", model="llama-3-8b"))
    assert not [i for i in keys.issues if "read as the catalog's" in i.message]  # a key is said as given
