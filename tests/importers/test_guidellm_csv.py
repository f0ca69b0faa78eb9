"""GuideLLM summary CSV: profiles to load kinds, ms units, "-" as missing, derived output throughput."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from perfmodel.importers import ImportMeta, Sample, detect_format, read_file

# these tests pin the importer, not the catalog
pytestmark = pytest.mark.usefixtures("stub_catalog")

META = ImportMeta(hardware="T4", model="Qwen/Qwen3-0.6B", framework="vllm", device_count=2)


def test_golden(formats_dir: Path) -> None:
    p = formats_dir / "guidellm-derived-csv" / "guidellm-pd-disaggregation__all-benchmarks.csv"
    assert detect_format(Sample(p)).name == "guidellm-csv"
    res = read_file(p, meta=META)
    runs = res.runs.set_index("source_row")
    assert len(runs) == 16 and res.n_dropped == 0 and len(res.issues) == 2
    c16 = runs.loc[1]
    assert (c16["load_kind"], c16["batch_size"], c16["measured_concurrency"]) == ("concurrency", 16, 16)
    assert c16["ttft_s"] == pytest.approx(0.0846) and c16["e2e_latency_s"] == 3.418
    assert c16["output_throughput_tok_s"] == pytest.approx(4.30 * 121)
    assert math.isnan(c16["ttft_p99_s"])
    const = runs.loc[3]
    assert (const["load_kind"], const["request_rate_rps"]) == ("request_rate", 5.0)
    tput = runs.loc[6]
    assert tput["load_kind"] == "offline" and math.isinf(tput["request_rate_rps"])
    assert tput["measured_concurrency"] == pytest.approx(509.44) and tput["n_failed"] == 1
    assert tput["n_requests"] == 1080
    sync = runs.loc[5]
    assert (sync["load_kind"], sync["batch_size"]) == ("concurrency", 1)
    assert (runs["throughput_basis"] == "output").all()


def test_unknown_profile_and_bad_number(tmp_path: Path) -> None:
    p = tmp_path / "g.csv"
    p.write_text("profile,rate,rps_mean,concurrency_mean,prompt_tokens_mean,output_tokens_mean,ttft_mean_ms\n"
                 "constant,2,1.9,3,100,50,20\nsweepy,-,1,1,100,50,20\nconstant,2,oops,3,100,50,20\n")
    res = read_file(p, meta=META)
    assert len(res.runs) == 1 and res.runs["ttft_s"].iloc[0] == pytest.approx(0.02)
    errs = {i.row: i.message for i in res.issues if i.severity == "error"}
    assert "unknown GuideLLM profile" in errs[2] and "got 'oops'" in errs[3]
