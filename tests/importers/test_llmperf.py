"""llmperf: golden values pinned from ../shared/data/formats/llmperf (leaderboard summary and
individual-responses files)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _helpers import finish, parse

from perfmodel.errors import ImportFormatError
from perfmodel.importers.base import ImportMeta, Sample
from perfmodel.importers.llmperf import LlmperfIndividual, LlmperfSummary

SUMMARY, INDIVIDUAL = LlmperfSummary(), LlmperfIndividual()

# these tests pin the importer alone, whatever names the catalog knows
pytestmark = pytest.mark.usefixtures("stub_catalog")


def _p(formats_dir: Path, name: str) -> Path:
    return formats_dir / "llmperf" / f"llmperf-leaderboard__{name}.json"


@pytest.mark.parametrize(("name", "model", "out_tp", "ttft_s", "out_len"), [
    ("anyscale_70b_summary", "meta-llama/Llama-2-70b-chat-hf", 207.52121071152493, 0.24890269464666667,
     146.94666666666666),
    ("groq_70b_summary", "llama2-70b-4096", 441.84737788500206, 0.22786034579078357, 150.0),
])
def test_summary(formats_dir: Path, name: str, model: str, out_tp: float,
                 ttft_s: float, out_len: float) -> None:
    path = _p(formats_dir, name)
    assert SUMMARY.sniff(Sample(path)) > 0.9 and INDIVIDUAL.sniff(Sample(path)) == 0
    res = finish(SUMMARY, path, ImportMeta(hardware="A100-80GB"))
    assert len(res.runs) == 1 and not [i for i in res.issues if i.severity == "error"]
    r = res.runs.iloc[0]
    assert r["model_raw"] == model and r["load_kind"] == "concurrency" and r["batch_size"] == 5
    assert r["n_requests"] == 150 and r["n_failed"] == 0
    assert r["input_len_tok"] == 550 and r["output_len_tok"] == pytest.approx(out_len)
    assert r["output_throughput_tok_s"] == pytest.approx(out_tp) and r["throughput_basis"] == "output"
    assert r["ttft_s"] == pytest.approx(ttft_s)
    assert "framework" not in SUMMARY.parse(Sample(path), ImportMeta()).runs.columns  # provider, not engine


@pytest.mark.parametrize("name", ["anyscale_70b_summary", "groq_70b_summary"])
def test_summary_itl_is_not_stored_tpot_excludes_ttft(formats_dir: Path, name: str) -> None:
    """llmperf's results_inter_token_latency_s_mean is e2e / output tokens (TTFT included).
    Regression: it was stored as itl_s (0.0158 s for anyscale where the decode takes 0.0144 s a token)."""
    path = _p(formats_dir, name)
    summ = json.loads(path.read_text())
    e2e, ttft = summ["results_end_to_end_latency_s_mean"], summ["results_ttft_s_mean"]
    n_out = summ["results_number_output_tokens_mean"]
    # What the file's ITL is: closer to e2e / out than to the decode-only figure.
    itl = summ["results_inter_token_latency_s_mean"]
    assert abs(itl - e2e / n_out) < abs(itl - (e2e - ttft) / (n_out - 1))
    res = finish(SUMMARY, path, ImportMeta(hardware="A100-80GB"))
    r = res.runs.iloc[0]
    assert r["tpot_s"] == pytest.approx((e2e - ttft) / (n_out - 1), rel=1e-12)
    assert all(pd.isna(r.get(c)) for c in ("itl_s", "itl_p50_s", "itl_p90_s", "itl_p99_s"))
    (note,) = [i for i in res.issues if i.column == "results_inter_token_latency_s_mean"]
    assert note.severity == "info" and note.row == 1 and "TTFT included" in note.message
    assert "tpot_s = (mean end-to-end latency - mean TTFT) / (mean output tokens - 1)" in note.message


def test_summary_tpot_left_empty_without_the_means(tmp_path: Path, formats_dir: Path) -> None:
    """Without a mean TTFT the TTFT-inclusive ITL is not stored in its place: tpot and itl stay empty."""
    summ = json.loads(_p(formats_dir, "groq_70b_summary").read_text())
    del summ["results_ttft_s_mean"]
    f = tmp_path / "no_ttft_summary.json"
    f.write_text(json.dumps(summ))
    p = parse(SUMMARY, f)
    r = p.runs.iloc[0]
    assert pd.isna(r.get("tpot_s")) and pd.isna(r.get("itl_s"))
    (note,) = [i for i in p.issues if i.column == "results_inter_token_latency_s_mean"]
    assert note.severity == "info" and "tpot_s left empty" in note.message


def test_summary_without_hardware_asks_for_it(formats_dir: Path) -> None:
    with pytest.raises(ImportFormatError, match="hardware"):
        finish(SUMMARY, _p(formats_dir, "groq_70b_summary"))


def test_individual_aggregates_to_one_point_matching_summary(formats_dir: Path) -> None:
    path = _p(formats_dir, "anyscale_70b_individual_responses")
    assert INDIVIDUAL.sniff(Sample(path)) > 0.9 and SUMMARY.sniff(Sample(path)) == 0
    p = parse(INDIVIDUAL, path)
    assert len(p.runs) == 1
    r = p.runs.iloc[0].to_dict()
    summ = json.loads(_p(formats_dir, "anyscale_70b_summary").read_text())
    assert r["n_requests"] == 150 and r["n_failed"] == 0 and r["throughput_basis"] == "none"
    assert r["ttft_s"] == pytest.approx(0.24890269464666667)
    assert r["e2e_latency_p90_s"] == pytest.approx(summ["results_end_to_end_latency_s_quantiles_p90"])
    assert r["output_len_tok"] == pytest.approx(146.94666666666666)
    assert "output_throughput_tok_s" not in r
    # inter_token_latency_s includes the TTFT: not stored; TPOT per request instead.
    recs = [d for d in json.loads(path.read_text()) if not d["error_code"] and d["number_output_tokens"] > 1]
    tpot = np.array([(d["end_to_end_latency_s"] - d["ttft_s"]) / (d["number_output_tokens"] - 1) for d in recs])
    assert len(tpot) > 100 and not any(k.startswith("itl") for k in r)
    assert r["tpot_s"] == pytest.approx(tpot.mean()) and r["tpot_p90_s"] == pytest.approx(np.percentile(tpot, 90))
    assert r["tpot_s"] < np.mean([d["inter_token_latency_s"] for d in recs])
    assert any(i.column == "inter_token_latency_s" and i.severity == "info" and "TTFT included" in i.message
               for i in p.issues)
    w = [i for i in p.issues if i.column == "output_throughput_tok_s"]
    assert w and "no timestamps" in w[0].message and w[0].severity == "warning"


def test_individual_errors_counted_and_wrong_type(tmp_path: Path, formats_dir: Path) -> None:
    recs = json.loads(_p(formats_dir, "anyscale_70b_individual_responses").read_text())[:4]
    recs[1] = dict(recs[1], error_code=429, error_msg="rate limited")
    recs[2] = dict(recs[2], ttft_s="slow")
    f = tmp_path / "ind.json"
    f.write_text(json.dumps(recs))
    p = parse(INDIVIDUAL, f)
    r = p.runs.iloc[0]
    assert r["n_requests"] == 2 and r["n_failed"] == 1
    (err,) = [i for i in p.issues if i.severity == "error"]
    assert err.row == 3 and err.column == "ttft_s"


def test_truncated(tmp_path: Path, formats_dir: Path) -> None:
    text = _p(formats_dir, "groq_70b_summary").read_text()
    f = tmp_path / "cut.json"
    f.write_text(text[:1000])
    assert SUMMARY.sniff(Sample(f)) > 0
    with pytest.raises(ImportFormatError, match=r"cut\.json: invalid JSON at line \d+ column \d+"):
        parse(SUMMARY, f)
    assert math.isfinite(SUMMARY.sniff(Sample(f)))
