"""Every real file in ../shared/data imports (with hardware/model supplied where the
file does not say them), or fails with one clear paragraph.

Per-format golden values live in tests/importers/; this test is the acceptance
sweep over the whole shared folder, through the same path as ``perfmodel import``.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest
from conftest import FORMATS, LLM_BENCH

from perfmodel.errors import PerfmodelError
from perfmodel.importers import ImportMeta, read_file

# What the user supplies for files that do not name their hardware or model
# (from each repository's documentation, see ../shared/data/formats/SOURCES.md).
SUPPLIED: dict[str, dict[str, object]] = {
    # AIPerf's CSV does not record the load setting: concurrency 8 per the repository's layout.
    "aiperf/*h100*": {"hardware": "H100-80GB-SXM", "model": "nvidia/Qwen3.6-35B-A3B-NVFP4",
                      "batch_size": 8, "load_kind": "concurrency"},
    "aiperf/*rtx5090*": {"hardware": "RTX 5090", "model": "nvidia/Qwen3.6-35B-A3B-NVFP4",
                         "batch_size": 8, "load_kind": "concurrency"},
    "custom-concurrency-json/*H100*": {"hardware": "H100 PCIe"},
    "custom-concurrency-json/*H200*": {"hardware": "H200"},
    "custom-concurrency-json/*MI300X*": {"hardware": "MI300X"},
    "guidellm/*": {"hardware": "H100-80GB-SXM", "model": "meta-llama/Llama-3.1-8B-Instruct"},
    "guidellm-derived-csv/*": {"hardware": "Tesla T4", "model": "Qwen/Qwen3-0.6B", "framework": "vllm",
                               "device_count": 2},
    "inference-perf/*": {"hardware": "NVIDIA H100 80GB HBM3", "model": "meta-llama/Meta-Llama-3-8B-Instruct",
                         "framework": "vllm"},
    # The per-request file does not record the concurrency (5, per its summary file).
    "llmperf/*anyscale_70b_individual*": {"hardware": "A100-80GB", "model": "meta-llama/Llama-2-70b-chat-hf",
                                          "batch_size": 5, "load_kind": "concurrency"},
    "llmperf/*anyscale*": {"hardware": "A100-80GB", "model": "meta-llama/Llama-2-70b-chat-hf"},
    "llmperf/*groq*": {"hardware": "Groq LPU", "model": "meta-llama/Llama-2-70b-chat-hf"},
    "optimum-benchmark/*": {"hardware": "NVIDIA A100-SXM4-80GB", "model": "meta-llama/Llama-3.1-8B-Instruct"},
    "sglang-bench-serving/*": {"hardware": "GH200"},
    "trtllm-bench/*": {"hardware": "H100-80GB-SXM", "model": "meta-llama/Llama-3.1-70B-Instruct",
                       "device_count": 8},
    "vllm-bench-serve-stdout/*": {"hardware": "H100-80GB-SXM"},
    "vllm-bench-serve/*": {"hardware": "NVIDIA GeForce RTX 3090"},
    "vllm-bench-sweep/*": {"hardware": "NVIDIA GeForce RTX 3090"},
    "vllm-benchmark-latency/*": {"hardware": "Ascend 910B", "model": "meta-llama/Meta-Llama-3-8B-Instruct"},
    "vllm-benchmark-throughput/*": {"hardware": "Ascend 910B", "model": "meta-llama/Meta-Llama-3-8B-Instruct"},
    "vllm-benchmark-serving/vllm-ascend*": {"hardware": "Ascend 910B"},
    "vllm-benchmark-serving/lambdalabs*": {"hardware": "H100-80GB-SXM"},
    "vllm-offline-batch-csv/*": {"hardware": "NVIDIA A100-SXM4-80GB"},
}

# A config file is not a result: importing it alone is a clear user error. The vllm-ascend
# serving files record no token counts and the throughput file only input + output per
# request: without --input-len/--output-len they are refused with a message naming the
# missing field (test_missing_lengths_can_be_supplied shows the supplied path).
_ASCEND = "vllm-benchmark-serving/vllm-ascend-nightly-nv-action__serving_llama8B_tp1_sharegpt_qps_"
EXPECTED_ERRORS = {
    **{f"{_ASCEND}{q}.json": "input_len_tok" for q in ("1", "4", "16", "inf")},
    "vllm-benchmark-throughput/vllm-ascend-nightly-nv-action__throughput_llama8B_tp1.json": "input_len_tok",
    "optimum-benchmark/hf-quant-bench-derekliu35__cuda_pytorch_llama__benchmark_config.json": "config",
    "optimum-benchmark/hf-quant-bench-derekliu35__llama_awq__benchmark_config.json": "config",
}


def _files() -> list[Path]:
    if not FORMATS.exists():
        return []
    files = sorted(p for p in FORMATS.rglob("*") if p.is_file() and p.name != "SOURCES.md")
    files += sorted(LLM_BENCH.glob("*.csv"))
    return files


def _rel(p: Path) -> str:
    return str(p.relative_to(FORMATS)) if FORMATS in p.parents else f"llm-inference-bench/{p.name}"


def meta_for(rel: str) -> ImportMeta:
    for pattern, values in SUPPLIED.items():
        if fnmatch.fnmatch(rel, pattern):
            return ImportMeta(**values)  # type: ignore[arg-type]
    return ImportMeta()


@pytest.mark.parametrize("path", _files(), ids=_rel)
def test_every_shared_file_imports(path: Path) -> None:
    rel = _rel(path)
    if rel in EXPECTED_ERRORS:
        with pytest.raises(PerfmodelError) as ei:
            read_file(path, meta=meta_for(rel))
        msg = str(ei.value)
        assert path.name in msg and EXPECTED_ERRORS[rel] in msg
        assert "\n" not in msg.strip() or len(msg) < 1200
        return
    res = read_file(path, meta=meta_for(rel))
    failed_all = any("failed" in i.message for i in res.issues if i.severity == "warning")
    assert len(res.runs) > 0 or failed_all, [str(i) for i in res.issues[:5]]
    assert res.runs["hardware"].notna().all() and res.runs["model"].notna().all()
    assert (res.runs["source_file"] == path.name).all()


def test_shared_folder_is_present_or_skipped(formats_dir: Path) -> None:
    assert len(_files()) >= 46


def test_missing_lengths_can_be_supplied(formats_dir: Path) -> None:
    path = formats_dir / (_ASCEND + "16.json")
    res = read_file(path, meta=ImportMeta(hardware="Ascend 910B", input_len_tok=200, output_len_tok=180))
    assert len(res.runs) == 1
    assert res.runs["input_len_tok"].iloc[0] == 200.0
