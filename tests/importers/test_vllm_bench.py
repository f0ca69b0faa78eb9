"""vLLM benchmark clients: golden values pinned from the real files in ../shared/data/formats.

Files: vllm-bench-serve/ (new CLI, incl. the all-requests-failed fixture), vllm-bench-sweep/ (run=0 and
summary), vllm-benchmark-serving/ (legacy: the vllm-ascend fork with no throughput keys, LambdaLabs with
per-request arrays in seconds), vllm-benchmark-throughput/, vllm-benchmark-latency/ and
vllm-bench-serve-stdout/ (console logs). Hand-made inputs in tests/data/vllm_bench/.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from _helpers import finish, parse

from perfmodel.errors import ImportFormatError
from perfmodel.importers.base import ImportMeta, Parsed, Sample
from perfmodel.importers.vllm_bench import (
    VllmBenchmarkLatency,
    VllmBenchmarkThroughput,
    VllmBenchServe,
    VllmBenchServeLog,
    namespace_args,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "vllm_bench"
SERVE, THROUGHPUT, LATENCY, LOG = VllmBenchServe(), VllmBenchmarkThroughput(), VllmBenchmarkLatency(), VllmBenchServeLog()

SOME_GPU = ImportMeta(hardware="some-gpu")
# these tests pin the importer alone, whatever names the catalog knows
pytestmark = pytest.mark.usefixtures("stub_catalog")


def row(parsed: Parsed, i: int = 0) -> dict:
    return parsed.runs.iloc[i].to_dict()


# --- vllm bench serve (new CLI)

def test_bench_serve_golden(formats_dir: Path) -> None:
    path = formats_dir / "vllm-bench-serve" / "er0080-vllm-benchmarking__bench_serve_v0.25.1.json"
    assert SERVE.sniff(Sample(path)) > 0.9
    res = finish(SERVE, path, SOME_GPU)
    assert len(res.runs) == 1 and not [i for i in res.issues if i.severity == "error"]
    r = res.runs.iloc[0]
    assert r["model_raw"] == "facebook/opt-125m" and r["framework"] == "vllm"
    assert r["load_kind"] == "concurrency" and r["batch_size"] == 2 and math.isinf(r["request_rate_rps"])
    assert r["input_len_tok"] == 32 and r["output_len_tok"] == 16  # 256/8, 128/8
    assert r["output_throughput_tok_s"] == pytest.approx(82.89297074037474)
    assert r["total_throughput_tok_s"] == pytest.approx(248.6789122211242)
    assert r["throughput_basis"] == "output+total"
    assert r["ttft_s"] == pytest.approx(0.21553594200008774)
    assert r["ttft_p50_s"] == pytest.approx(0.05568139649994919)
    assert r["itl_p99_s"] == pytest.approx(0.029815922519960626)
    assert r["n_requests"] == 8 and r["n_failed"] == 0


def test_all_requests_failed_is_zero_points_not_zero_throughput(formats_dir: Path) -> None:
    path = formats_dir / "vllm-bench-serve" / "er0080-vllm-benchmarking__bench_serve_all_requests_failed_v0.25.1.json"
    p = parse(SERVE, path)
    assert p.allow_empty and len(p.runs) == 0
    res = finish(SERVE, path, SOME_GPU)
    assert len(res.runs) == 0
    (w,) = [i for i in res.issues if i.severity == "warning" and i.column == "completed"]
    assert "8 failed" in w.message and "not a zero-throughput point" in w.message


# --- vllm bench sweep

def test_sweep_run_and_summary(formats_dir: Path) -> None:
    stem = "er0080-vllm-benchmarking__SERVE--max_num_seqs=4-BENCH--max_concurrency=2-num_prompts=8__"
    run0 = finish(SERVE, formats_dir / "vllm-bench-sweep" / f"{stem}run=0.json", SOME_GPU)
    summ = finish(SERVE, formats_dir / "vllm-bench-sweep" / f"{stem}summary.json", SOME_GPU)
    assert len(run0.runs) == 1 and len(summ.runs) == 2
    assert list(summ.runs["repeat_idx"]) == [0, 1]
    assert list(summ.runs["fw_max_num_seqs"]) == [4.0, 4.0]  # swept server setting rides along
    assert summ.runs["output_throughput_tok_s"].tolist() == pytest.approx([93.74767963046673, 199.36907134182283])
    assert summ.runs["e2e_latency_s"].iloc[1] == pytest.approx(0.15949398987686436)
    # Little's law: mean e2e × completed / duration
    assert run0.runs["measured_concurrency"].iloc[0] == pytest.approx(0.3403411977451469 * 8 / 1.3653671270003542)
    assert summ.provenance["client"] == "vllm bench sweep serve"


# --- legacy benchmark_serving.py

def test_ascend_fork_without_throughput_keeps_latencies(formats_dir: Path) -> None:
    path = formats_dir / "vllm-benchmark-serving" / "vllm-ascend-nightly-nv-action__serving_llama8B_tp1_sharegpt_qps_4.json"
    p = parse(SERVE, path)
    r = row(p)
    assert r["throughput_basis"] == "none" and r["load_kind"] == "request_rate"
    assert r["request_rate_rps"] == 4.0 and "batch_size" not in r
    assert r["ttft_s"] == pytest.approx(0.18912410335615277)
    assert r["tpot_p99_s"] == pytest.approx(0.1396767019666731)
    cols = {i.column for i in p.issues if i.severity == "warning"}
    assert {"output_throughput", "total_input_tokens"} <= cols


def test_ascend_fork_missing_lengths_fail_clearly(formats_dir: Path) -> None:
    # The fork records no token counts at all; until ImportMeta can carry lengths the row is rejected
    # by finalize naming the missing length, not with a traceback.
    path = formats_dir / "vllm-benchmark-serving" / "vllm-ascend-nightly-nv-action__serving_llama8B_tp1_sharegpt_qps_inf.json"
    assert math.isinf(row(parse(SERVE, path))["request_rate_rps"])
    with pytest.raises(ImportFormatError, match="input_len_tok"):
        finish(SERVE, path, SOME_GPU)


def test_throughput_basis_none_accepted_by_finalize(formats_dir: Path) -> None:
    # Once lengths are known (here: through a stand-in meta attribute), a latency-only row is valid.
    path = formats_dir / "vllm-benchmark-serving" / "vllm-ascend-nightly-nv-action__serving_llama8B_tp1_sharegpt_qps_1.json"

    class Meta(ImportMeta):
        input_len_tok: float | None = None
        output_len_tok: float | None = None

    meta = Meta(hardware="x", input_len_tok=200.0, output_len_tok=180.0)
    res = finish(SERVE, path, meta)
    assert len(res.runs) == 1 and res.runs["throughput_basis"].iloc[0] == "none"
    assert math.isnan(res.runs["output_throughput_tok_s"].iloc[0])


def test_lambdalabs_per_request_arrays_in_seconds(formats_dir: Path) -> None:
    path = formats_dir / "vllm-benchmark-serving" / \
        "lambdalabs-vllm-benchmark__prompt_10_1xH100-80GB-SXM_Meta-Llama-3.1-8B-FP8_tp1_len2048.json"
    res = finish(SERVE, path, SOME_GPU)
    r = res.runs.iloc[0]
    assert r["load_kind"] == "request_rate" and math.isinf(r["request_rate_rps"]) and math.isnan(r["batch_size"])
    assert r["input_len_tok"] == pytest.approx(136.9) and r["output_len_tok"] == pytest.approx(44.2)
    assert r["output_throughput_tok_s"] == pytest.approx(413.89429359863317)
    # total = input + output throughput, both over the same duration
    assert r["total_throughput_tok_s"] == pytest.approx(1281.9486152410154 + 413.89429359863317)
    assert r["e2e_latency_s"] == pytest.approx(0.29035341650014743)
    # the 3 zero-output requests (ttft written as 0.0) are left out of the TTFT statistics
    doc = json.loads(path.read_text())
    with_output = [t for t, n in zip(doc["ttfts"], doc["output_lens"], strict=True) if n > 0]
    assert len(with_output) == 7
    assert r["ttft_s"] == pytest.approx(sum(with_output) / 7) == pytest.approx(0.06308822542944524)
    assert r["itl_p90_s"] == pytest.approx(0.051245, abs=1e-6)  # from the itls arrays (seconds)
    assert r["measured_concurrency"] == pytest.approx(0.29035341650014743 * 10 / 1.0679055179934949)
    (w,) = [i for i in res.issues if i.column == "output_lens"]
    assert "3 of 10" in w.message and "44.16 ms" in w.message


# --- append-mode JSONL, broken inputs

def test_append_result_jsonl_and_wrong_type() -> None:
    path = DATA / "append_result.jsonl"
    assert SERVE.sniff(Sample(path)) > 0.9
    res = finish(SERVE, path, SOME_GPU)
    assert res.runs["source_row"].tolist() == [1, 2]
    assert res.runs["batch_size"].tolist() == [4.0, 8.0]
    assert res.runs["ttft_s"].tolist() == pytest.approx([0.020, 0.040])
    (err,) = [i for i in res.issues if i.severity == "error"]
    assert err.row == 3 and err.column == "mean_ttft_ms" and "'fast'" in err.message


def test_truncated_json_names_line_and_column() -> None:
    path = DATA / "truncated.json"
    assert SERVE.sniff(Sample(path)) > 0  # recognised from its keys even though it does not parse
    with pytest.raises(ImportFormatError, match=r"truncated\.json: invalid JSON at line \d+ column \d+"):
        parse(SERVE, path)


# --- benchmark_throughput.py / benchmark_latency.py

def test_throughput_file(formats_dir: Path) -> None:
    path = formats_dir / "vllm-benchmark-throughput" / "vllm-ascend-nightly-nv-action__throughput_llama8B_tp1.json"
    assert THROUGHPUT.sniff(Sample(path)) > 0.9 and SERVE.sniff(Sample(path)) == 0
    p = parse(THROUGHPUT, path)
    r = row(p)
    assert r["load_kind"] == "offline" and r["throughput_basis"] == "total" and r["n_requests"] == 200
    assert r["total_throughput_tok_s"] == pytest.approx(1198.996134490826)
    assert r["request_throughput_rps"] == pytest.approx(2.781764499305893)
    assert "input_len_tok" not in r
    (w,) = p.issues
    assert "431.0 input+output tokens per request" in w.message
    assert r["framework"] == "vllm"  # the script runs vLLM in-process (it had been stored as "unknown")
    # lengths given that disagree with the file's tokens per request are named (220 + 190 against 431)
    off = parse(THROUGHPUT, path, ImportMeta(input_len_tok=220, output_len_tok=190))
    assert [i.message for i in off.issues] == [
        "the file records 431.0 input+output tokens per request, but the lengths given add up to 410 (220 + 190): "
        "check --input-len/--output-len against the run's command line"]
    assert not parse(THROUGHPUT, path, ImportMeta(input_len_tok=216, output_len_tok=215)).issues


def test_latency_file_uses_script_defaults_with_warning(formats_dir: Path) -> None:
    path = formats_dir / "vllm-benchmark-latency" / "vllm-ascend-nightly-nv-action__latency_llama8B_tp1.json"
    assert LATENCY.sniff(Sample(path)) > 0.9
    res = finish(LATENCY, path, ImportMeta(hardware="x", model="llama"))
    r = res.runs.iloc[0]
    assert r["load_kind"] == "static_batch" and r["batch_size"] == 8 and r["framework"] == "vllm"
    assert (r["input_len_tok"], r["output_len_tok"]) == (32, 128)
    assert r["e2e_latency_s"] == pytest.approx(7.1091228867570555)
    assert r["e2e_latency_p90_s"] == pytest.approx(7.397279229387641)
    assert r["output_throughput_tok_s"] == pytest.approx(8 * 128 / 7.1091228867570555)
    assert any("script defaults" in i.message and i.severity == "warning" for i in res.issues)


# --- console log

LOG_NAME = "vllm-benchmark-test-wentao274__nvidia_h100_MiniMax-M2.5_bench-test_01-{c}-320-i10240-o256.trimmed.log"


@pytest.mark.parametrize(("conc", "out_tp", "ttft_ms"), [(1, None, None), (16, 643.80, 967.22), (128, 937.61, 16764.52)])
def test_console_logs(formats_dir: Path, conc: int, out_tp: float | None, ttft_ms: float | None) -> None:
    path = formats_dir / "vllm-bench-serve-stdout" / LOG_NAME.format(c=conc)
    assert LOG.sniff(Sample(path)) > 0.8 and SERVE.sniff(Sample(path)) == 0
    p = parse(LOG, path)
    assert len(p.runs) == 1 and not p.issues
    r = row(p)
    assert r["model_raw"] == "/userdata/llms/MiniMax/MiniMax-M2.5"
    assert r["load_kind"] == "concurrency" and r["batch_size"] == conc and math.isinf(r["request_rate_rps"])
    assert r["n_requests"] == 320 and r["output_len_tok"] == 256
    assert p.provenance["args"]["random_input_len"] == "10240"
    if out_tp is not None:
        assert r["output_throughput_tok_s"] == pytest.approx(out_tp)
        assert r["ttft_s"] == pytest.approx(ttft_ms / 1000)
        assert r["input_len_tok"] == pytest.approx(3289280 / 320 if conc == 16 else r["input_len_tok"])


def test_namespace_is_parsed_not_evaluated() -> None:
    ns = namespace_args("Namespace(model='/m/x', max_concurrency=16, request_rate=inf, "
                        "cmd=<function f at 0x1>, cfg={(1, 2): 0.5}, label=None, evil=__import__('os'))")
    assert ns["model"] == "/m/x" and ns["max_concurrency"] == "16" and ns["request_rate"] == "inf"
    assert ns["label"] == "None"
