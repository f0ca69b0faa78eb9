"""A supplied weight or KV-cache dtype must be one the catalog knows (in any spelling it maps).

Regression: ``ImportMeta(weight_dtype="fp9")`` (``perfmodel import --weight-dtype fp9``) was accepted and
stored; every bound and feature then read the weights as unknown-size.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pydantic
import pytest
from click.testing import CliRunner

from perfmodel.catalog import canonical_dtype
from perfmodel.catalog._specs import DTYPE_ALIASES
from perfmodel.importers import ImportMeta
from perfmodel.physics import DTYPE_BYTES, dtype_bytes

FIELDS = {"weight_dtype": "--weight-dtype", "kv_cache_dtype": "--kv-cache-dtype"}
#: Every spelling canonical_dtype maps onto a dtype with a byte size, in the ways users write them.
SPELLINGS = sorted({*DTYPE_BYTES, *(a for a, k in DTYPE_ALIASES.items() if k in DTYPE_BYTES)})


@pytest.mark.parametrize("field", list(FIELDS))
@pytest.mark.parametrize("bad", ["fp9", "int3", "f16x", "bfloat15"])
def test_unknown_dtype_is_refused_naming_the_option_and_the_valid_values(field: str, bad: str) -> None:
    assert canonical_dtype(bad) not in DTYPE_BYTES
    with pytest.raises(pydantic.ValidationError) as err:
        ImportMeta(**{field: bad})
    msg = str(err.value)
    assert f"{FIELDS[field]} {bad!r} is not a dtype" in msg
    valid = msg.split("valid: ", 1)[1].split(" (", 1)[0].split(", ")
    assert valid == list(DTYPE_BYTES)


@pytest.mark.parametrize("field", list(FIELDS))
@pytest.mark.parametrize("spelling", SPELLINGS)
def test_every_spelling_the_catalog_maps_is_accepted(field: str, spelling: str) -> None:
    for written in (spelling, spelling.upper(), f" torch.{spelling} "):
        meta = ImportMeta(**{field: written})
        assert getattr(meta, field) == written.strip()  # kept as written
        # ... and it is a size the physics reads.
        read = dtype_bytes(pd.DataFrame({"weight_dtype": [getattr(meta, field)]})).iloc[0]
        assert read == DTYPE_BYTES[canonical_dtype(written)]


def test_quantization_scheme_is_pointed_to_its_own_option() -> None:
    with pytest.raises(pydantic.ValidationError, match=r"'awq' is a quantization scheme: give it with --quantization"):
        ImportMeta(weight_dtype="awq")
    assert ImportMeta(quantization="awq", weight_dtype="int4").quantization == "awq"
    with pytest.raises(pydantic.ValidationError, match=r"leave --kv-cache-dtype out .*'auto'"):
        ImportMeta(kv_cache_dtype="auto")


def test_blank_is_not_given() -> None:
    assert ImportMeta(weight_dtype="  ", kv_cache_dtype="").weight_dtype is None


def test_data_page_choices_are_accepted() -> None:
    from perfmodel.ui.widgets import DTYPE_CHOICES

    for d in DTYPE_CHOICES:
        ImportMeta(weight_dtype=d, kv_cache_dtype=d)


def test_upload_form_reports_the_field_in_its_words() -> None:
    from perfmodel.errors import ValidationError
    from perfmodel.ui.forms import UploadForm, in_form_words, to_meta

    with pytest.raises(ValidationError) as err:
        to_meta(UploadForm(weight_dtype="fp9"))
    text = in_form_words(str(err.value))
    assert "the form's Weight dtype 'fp9' is not a dtype" in text and "bf16" in text


def test_cli_refuses_it_before_reading_any_file(tmp_path: Path) -> None:
    from perfmodel.cli import main

    f = tmp_path / "x.csv"
    f.write_text("not read\n")
    res = CliRunner().invoke(main, ["import", "--weight-dtype", "fp9", str(f)])
    assert res.exit_code == 2 and "--weight-dtype 'fp9' is not a dtype" in res.output
    assert "bf16" in res.output
