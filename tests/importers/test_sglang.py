"""SGLang clients: bench_serving JSONL golden values pinned from ../shared/data/formats/sglang-bench-serving,
and bench_one_batch from tests/data/sglang/bench_one_batch_handmade.jsonl.

No real bench_one_batch result file was found, so that sample is HAND-MADE from the record schema of
sglang/bench_one_batch.py (run_name, batch_size, input_len, output_len, prefill_latency, prefill_throughput,
median_decode_latency, median_decode_throughput, total_latency, overall_throughput; values invented but
self-consistent: overall_throughput = (input_len + output_len) x batch_size / total_latency).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from _helpers import finish, parse

from perfmodel.errors import ImportFormatError
from perfmodel.importers.base import ImportMeta, Sample
from perfmodel.importers.sglang import SglangBenchOneBatch, SglangBenchServing
from perfmodel.importers.vllm_bench import VllmBenchServe

DATA = Path(__file__).resolve().parents[1] / "data" / "sglang"
SERVING, ONE_BATCH = SglangBenchServing(), SglangBenchOneBatch()

# these tests pin the importer alone, whatever names the catalog knows
pytestmark = pytest.mark.usefixtures("stub_catalog")


def _path(formats_dir: Path, tag: str) -> Path:
    return formats_dir / "sglang-bench-serving" / f"tonyli15-sglang-benchmark__{tag}.jsonl"


@pytest.mark.parametrize(("tag", "conc", "out_tp", "ttft_ms", "measured"), [
    ("agg_n100_in512_out128_c8", 8, 1418.5390725642164, 28.438684605062008, 7.762507194459916),
    ("agg_n100_in512_out128_c32", 32, 3151.4394910675514, 42.448918260633945, 28.450295820896617),
])
def test_aggregated_runs(formats_dir: Path, tag: str, conc: int,
                         out_tp: float, ttft_ms: float, measured: float) -> None:
    path = _path(formats_dir, tag)
    assert SERVING.sniff(Sample(path)) > 0.9 and VllmBenchServe().sniff(Sample(path)) == 0
    res = finish(SERVING, path, ImportMeta(hardware="GH200"))
    assert len(res.runs) == 1
    r = res.runs.iloc[0]
    assert r["framework"] == "sglang" and r["framework_version"] == "0.5.5.post3"
    assert r["tp_size"] == 1 and r["device_count"] == 1 and r["model_raw"] == "Qwen/Qwen2.5-3B-Instruct"
    assert r["load_kind"] == "concurrency" and r["batch_size"] == conc and math.isinf(r["request_rate_rps"])
    assert r["measured_concurrency"] == pytest.approx(measured)  # measured, not the limit
    # random_range_ratio 0.0: the measured mean (26497/100), not the nominal 512
    assert r["input_len_tok"] == pytest.approx(264.97) and r["output_len_tok"] == pytest.approx(61.8)
    assert r["output_throughput_tok_s"] == pytest.approx(out_tp) and r["throughput_basis"] == "output+total"
    assert r["ttft_s"] == pytest.approx(ttft_ms / 1000)
    assert any(i.column == "input_len_tok" and "265.0" in i.message for i in res.issues)


def test_pd_disaggregated_run_recorded_honestly(formats_dir: Path) -> None:
    path = _path(formats_dir, "pd_1p2d_n100_in2048_out512_c128")
    p = parse(SERVING, path)
    r = p.runs.iloc[0].to_dict()
    assert "tp_size" not in r and "framework_version" not in r
    assert r["batch_size"] == 128 and r["input_len_tok"] == pytest.approx(1089.29)
    assert r["output_throughput_tok_s"] == pytest.approx(665.4595335245467)
    assert r["e2e_latency_p99_s"] == pytest.approx(38.82572670622729)
    server = p.provenance["records"][0]["server"]
    assert server["disaggregated"] and server["prefill"][0]["version"] == "0.5.5.post3"
    assert server["decode"][0]["version"] == "0.5.6"
    assert (server["prefill_servers"], server["decode_servers"]) == (1, 2)
    (v,) = [i for i in p.issues if i.column == "framework_version"]
    assert v.severity == "warning" and "0.5.5.post3, 0.5.6" in v.message


def test_pd_1p2d_run_spans_three_devices(formats_dir: Path) -> None:
    """Bug guarded: the 1P2D run was stored as one device. Its tag "pd_1p2d_..." says one prefill and two
    decode servers, server_info says each is tp1 x pp1 x dp1: 1 + 2 = 3 devices (SOURCES.md: prefill on one
    GH200, two decode servers on A100s)."""
    path = _path(formats_dir, "pd_1p2d_n100_in2048_out512_c128")
    res = finish(SERVING, path, ImportMeta(hardware="GH200"))
    assert res.runs["device_count"].iloc[0] == 3
    (d,) = [i for i in res.issues if i.column == "device_count"]
    assert d.severity == "info" and "1 prefill server(s)" in d.message and "2 decode server(s)" in d.message
    # the file's own count wins over a contrary --device-count (which is for files that do not say)
    res = finish(SERVING, path, ImportMeta(hardware="GH200", device_count=3))
    assert res.runs["device_count"].iloc[0] == 3


def _pd_variant(formats_dir: Path, tmp_path: Path, name: str, tag: str | None,
                edit: dict[str, dict[str, object]] | None = None) -> Path:
    """The real 1P2D record under another file name and tag, with server_info fields edited per role."""
    rec = json.loads(_path(formats_dir, "pd_1p2d_n100_in2048_out512_c128").read_text())
    if tag is None:
        del rec["tag"]
    else:
        rec["tag"] = tag
    for role, fields in (edit or {}).items():
        rec["server_info"][role][0].update(fields)
    out = tmp_path / name
    out.write_text(json.dumps(rec) + "\n")
    return out


def test_pd_run_without_server_counts_leaves_device_count_empty(formats_dir: Path, tmp_path: Path) -> None:
    path = _pd_variant(formats_dir, tmp_path, "pd_run.jsonl", None)
    p = parse(SERVING, path)
    assert "device_count" not in p.runs.columns
    (w,) = [i for i in p.issues if i.column == "device_count"]
    assert w.severity == "warning" and w.row == 1 and "disaggregated" in w.message
    assert "--device-count" in w.message and "left empty" in w.message
    res = finish(SERVING, path, ImportMeta(hardware="GH200", device_count=6))
    assert res.runs["device_count"].iloc[0] == 6


def test_pd_run_with_conflicting_counts_is_not_derived(formats_dir: Path, tmp_path: Path) -> None:
    path = _pd_variant(formats_dir, tmp_path, "bench_1p2d.jsonl", "pd_2p4d_c128")
    p = parse(SERVING, path)
    assert "device_count" not in p.runs.columns
    (w,) = [i for i in p.issues if i.column == "device_count"]
    assert w.severity == "warning" and "tag says 2p4d" in w.message and "file name says 1p2d" in w.message


def test_pd_device_count_multiplies_server_sizes(formats_dir: Path, tmp_path: Path) -> None:
    """2 prefill servers at tp2 x pp1 x dp1 (2 devices each) + 4 decode servers at tp2 with dp2 DP attention
    (the dp ranks share the tp devices: 2 each) = 4 + 8 = 12; without DP attention a decode server is 4."""
    edit: dict[str, dict[str, object]] = {"prefill": {"tp_size": 2},
                                          "decode": {"tp_size": 2, "dp_size": 2, "enable_dp_attention": True}}
    path = _pd_variant(formats_dir, tmp_path, "pd_2P4D.jsonl", None, edit)
    assert parse(SERVING, path).runs["device_count"].iloc[0] == 12
    edit["decode"]["enable_dp_attention"] = False
    path = _pd_variant(formats_dir, tmp_path, "run.jsonl", "pd-2p4d", edit)
    assert parse(SERVING, path).runs["device_count"].iloc[0] == 2 * 2 + 4 * 4


def test_bare_infinity_and_wrong_type(tmp_path: Path, formats_dir: Path) -> None:
    line = _path(formats_dir, "agg_n100_in512_out128_c8").read_text().splitlines()[0]
    assert '"request_rate": Infinity' in line
    rec = json.loads(line)
    rec["output_throughput"] = "1418.5"
    bad = tmp_path / "two_runs.jsonl"
    bad.write_text(line + "\n" + json.dumps(rec) + "\n")
    res = finish(SERVING, bad, ImportMeta(hardware="GH200"))
    assert len(res.runs) == 1
    (err,) = [i for i in res.issues if i.severity == "error"]
    assert err.row == 2 and err.column == "output_throughput" and "'1418.5'" in err.message


def test_truncated_jsonl_names_line(tmp_path: Path, formats_dir: Path) -> None:
    line = _path(formats_dir, "agg_n100_in512_out128_c8").read_text().splitlines()[0]
    cut = tmp_path / "cut.jsonl"
    cut.write_text(line + "\n" + line[:5000])
    with pytest.raises(ImportFormatError, match=r"cut\.jsonl: invalid JSON at line 2 column"):
        parse(SERVING, cut)


def test_bench_one_batch_handmade() -> None:
    path = DATA / "bench_one_batch_handmade.jsonl"
    assert ONE_BATCH.sniff(Sample(path)) > 0.9 and SERVING.sniff(Sample(path)) == 0
    res = finish(ONE_BATCH, path, ImportMeta(hardware="H100", model="llama"))
    assert len(res.runs) == 3 and not res.issues or all(i.severity != "error" for i in res.issues)
    r = res.runs.set_index("source_row")
    assert r.loc[2, "load_kind"] == "static_batch" and r.loc[2, "batch_size"] == 8
    assert r.loc[2, "ttft_s"] == 0.4 and r.loc[2, "tpot_p50_s"] == 0.01 and r.loc[2, "e2e_latency_s"] == 2.96
    assert r.loc[2, "total_throughput_tok_s"] == pytest.approx((1024 + 256) * 8 / 2.96)
    # finalize derives the output share exactly from the lengths
    assert r.loc[2, "output_throughput_tok_s"] == pytest.approx(256 * 8 / 2.96)
    assert math.isnan(r.loc[1, "tpot_p50_s"])  # output_len 1: no decode step


def test_bench_one_batch_needs_hardware_and_model() -> None:
    with pytest.raises(ImportFormatError, match="hardware"):
        finish(ONE_BATCH, DATA / "bench_one_batch_handmade.jsonl")


def test_pd_run_says_its_one_hardware_name_is_the_one_given(formats_dir: Path) -> None:
    """Bug guarded: the 1P2D run (prefill on a GH200, decode on two A100s, SOURCES.md) imported with
    --hardware GH200 was stored as three GH200s without a word. The file names no GPU for either role and a run
    records one hardware: the import now says so on the row, naming the hardware column and the two SGLang
    versions that show the roles on different hosts; an aggregated run says nothing of the kind."""
    res = finish(SERVING, _path(formats_dir, "pd_1p2d_n100_in2048_out512_c128"), ImportMeta(hardware="GH200"))
    assert res.runs["hardware"].iloc[0] and res.runs["device_count"].iloc[0] == 3
    (w,) = [i for i in res.issues if i.column == "hardware"]
    assert w.severity == "warning" and w.row == 1 and "disaggregated" in w.message
    assert "--hardware" in w.message and "0.5.5.post3, 0.5.6" in w.message
    agg = finish(SERVING, _path(formats_dir, "agg_n100_in512_out128_c8"), ImportMeta(hardware="GH200"))
    assert not [i for i in agg.issues if i.column == "hardware"]
