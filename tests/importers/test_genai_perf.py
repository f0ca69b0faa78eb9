"""genai-perf exports. No real genai-perf export was available (see SOURCES.md, "Not
collected"), so every input here is hand-made from genai-perf 0.0.16's exporters
(``export_data/json_exporter.py``: stats per metric ``{unit, avg, p25...p99, min, max, std}``
plus ``input_config``; ``csv_exporter.py``: a ``Metric,avg,min,max,p99,...`` table, a blank
line, a ``Metric,Value`` table, values formatted ``{:,.2f}``):

* ``profile_export_genai_perf.json``: newer schema, ``input_config.perf_analyzer.stimulus``;
* ``profile_export_genai_perf_flat.json``: older flat ``input_config`` (``request_rate``);
* ``profile_export_genai_perf.csv``: the CSV of the first one (CRLF, thousands separators).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pandas as pd
import pytest
from _helpers import MetaWithConcurrency, parse_detected

from perfmodel.errors import ImportFormatError
from perfmodel.importers import ImportMeta, read_file

DATA = Path(__file__).resolve().parents[1] / "data" / "genai-perf"
META = ImportMeta(hardware="H100-80GB-SXM", model="meta-llama/Llama-3.1-8B-Instruct")
_parse = partial(parse_detected, "genai-perf")


def test_json_export() -> None:
    p = _parse(DATA / "profile_export_genai_perf.json")
    r = p.runs.iloc[0]
    assert r["model_raw"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert r["load_kind"] == "concurrency" and r["batch_size"] == 4
    assert r["ttft_p50_s"] == pytest.approx(0.04402) and r["e2e_latency_p99_s"] == pytest.approx(1.48805)
    assert r["tpot_s"] == pytest.approx(0.0097)  # genai-perf ITL = (latency - TTFT) / (OSL - 1)
    assert r["output_throughput_tok_s"] == 400.0 and r["throughput_basis"] == "output"
    assert r["n_requests"] == 100
    assert p.provenance["endpoint"]["service_kind"] == "openai"


def test_flat_input_config_request_rate() -> None:
    r = _parse(DATA / "profile_export_genai_perf_flat.json").runs.iloc[0]
    assert r["load_kind"] == "request_rate" and r["request_rate_rps"] == 10.0
    assert r["model_raw"] == "gpt2" and r["framework"] == "tensorrtllm"
    assert "batch_size" not in r.index


def test_csv_matches_json() -> None:
    c = _parse(DATA / "profile_export_genai_perf.csv", MetaWithConcurrency(concurrency=4)).runs.iloc[0]
    j = _parse(DATA / "profile_export_genai_perf.json").runs.iloc[0]
    assert c["e2e_latency_s"] == pytest.approx(1.27942)  # "1,279.42" with a thousands separator
    for col in ("ttft_s", "ttft_p90_s", "tpot_p99_s", "e2e_latency_p50_s", "input_len_tok", "output_len_tok",
                "output_throughput_tok_s", "batch_size"):
        assert c[col] == pytest.approx(j[col]), col
    assert c["request_throughput_rps"] == 3.12  # the CSV rounds to 2 decimals


def test_csv_needs_the_load_setting() -> None:
    with pytest.raises(ImportFormatError, match="does not record the load setting"):
        read_file(DATA / "profile_export_genai_perf.csv", meta=META)


def test_full_import_derives_total() -> None:
    res = read_file(DATA / "profile_export_genai_perf.json", meta=META)
    assert len(res.runs) == 1
    # genai-perf reports output only; the total follows from the mean lengths
    assert res.runs["total_throughput_tok_s"].iloc[0] == pytest.approx(400.0 * (512 + 128) / 128)
    assert isinstance(res.runs["ttft_s"], pd.Series)


def test_bad_inputs(tmp_path: Path) -> None:
    f = tmp_path / "profile_export_genai_perf.json"
    f.write_text((DATA / "profile_export_genai_perf.json").read_text()[:600])
    with pytest.raises(ImportFormatError, match="not readable as JSON"):
        read_file(f, format="genai-perf", meta=META)
    g = tmp_path / "x_genai_perf.json"
    g.write_text((DATA / "profile_export_genai_perf.json").read_text().replace('"p50": 44.02', '"p50": "44ms"'))
    with pytest.raises(ImportFormatError, match="ttft_p50_s.*expected a number, got '44ms'"):
        read_file(g, meta=META)
    h = tmp_path / "y_genai_perf.csv"
    h.write_text("Metric,avg,min,max,p99\nRequest Latency (ms),1,2,3,4,5,6\n")
    with pytest.raises(ImportFormatError, match="has 7 cells but its table header has 5"):
        read_file(h, meta=MetaWithConcurrency(concurrency=1))
