"""Hardware and model catalogs: resolution of every real name, sources, physics, user files."""

from __future__ import annotations

import csv
import dataclasses
import os
from pathlib import Path

import pytest

from perfmodel import catalog
from perfmodel.catalog._load import _conflicts
from perfmodel.catalog._schema import source_keys_allowed
from perfmodel.errors import PerfmodelError, UnknownNameError, ValidationError

# Each test has its own PERFMODEL_HOME (conftest); the catalog cache is keyed on the user files
# found there (path, mtime, size), so no explicit reload is needed between tests.


# --------------------------------------------------------------------------- real names

LLM_BENCH_HARDWARE = {
    "Nvidia A100 GPU": "a100-40gb",
    "Nvidia H100 GPU": "h100-sxm",
    "Nvidia GH200 GPU": "gh200",
    "AMD MI250 GPU": "mi250",
    "AMD MI300X GPU": "mi300x",
    "Habana Gaudi2": "gaudi2",
    "Intel Max 1550": "intel-max-1550",
    "Intel PVC GPU": "intel-pvc",
    "SambaNova SN40L": "sn40l",
}

LLM_BENCH_MODELS = {
    "meta-llama/Llama-2-7b-hf": "llama-2-7b",
    "meta-llama/Llama-2-70b-hf": "llama-2-70b",
    "meta-llama/Meta-Llama-3-8B": "llama-3-8b",
    "meta-llama/Meta-Llama-3-70B": "llama-3-70b",
    "mistralai/Mistral-7B-v0.1": "mistral-7b-v0.1",
    "mistralai/Mixtral-8x7B-v0.1": "mixtral-8x7b",
    "Qwen/Qwen2-7B": "qwen2-7b",
    "Qwen/Qwen2-72B": "qwen2-72b",
    "Qwen/Qwen1.5-7B": "qwen1.5-7b",
    "Deci/DeciLM-7B": "decilm-7b",
    "BAAI/Aquila-7B": "aquila-7b",
    "EleutherAI/gpt-j-6b": "gpt-j-6b",
    "bigscience/bloom-7b1": "bloom-7b1",
    "facebook/opt-6.7b": "opt-6.7b",
    "huggyllama/llama-7b": "llama-7b",
}

FORMATS_HARDWARE = {
    "H100-80GB-SXM": "h100-sxm",
    "NVIDIA H100 80GB HBM3": "h100-sxm",
    "nvidia-h100-80gb": "h100-sxm",
    "NVIDIA H100 PCIe": "h100-pcie",
    "NVIDIA A100-SXM4-80GB": "a100-80gb",
    "NVIDIA RTX A4000": "rtx-a4000",
    "A4000": "rtx-a4000",
    "NVIDIA GeForce RTX 3090": "rtx-3090",
    "Tesla T4": "t4",
    "NVIDIA H200": "h200",
    "H200": "h200",
    "RTX 5090": "rtx-5090",
    "Ascend 910B": "ascend-910b",
    "Atlas 800I A2": "ascend-910b",
    "GH200": "gh200",
    "MI300X": "mi300x",
    "A100-80GB-SXM": "a100-80gb",
    "Groq LPU": "groq-lpu",
    "h100": "h100-sxm",
    "4xA4000": "rtx-a4000",
    "1xH100-80GB-SXM": "h100-sxm",
    "8x A100-80GB-SXM": "a100-80gb",
}

FORMATS_MODELS = {
    "facebook/opt-125m": "opt-125m",
    "Qwen/Qwen3-0.6B": "qwen3-0.6b",
    "Qwen/Qwen2.5-3B-Instruct": "qwen2.5-3b",
    "openai/gpt-oss-20b": "gpt-oss-20b",
    "MiniMax-M2.5": "minimax-m2.5",
    "meta-llama/Llama-2-70b-chat-hf": "llama-2-70b",
    "llama2-70b-4096": "llama-2-70b",
    "meta-llama/Meta-Llama-3-8B-Instruct": "llama-3-8b",
    "/root/.cache/modelscope/hub/LLM-Research/Meta-Llama-3-8B-Instruct": "llama-3-8b",
    "Meta-Llama-3.1-8B": "llama-3.1-8b",
    "Meta-Llama-3.1-8B-Instruct": "llama-3.1-8b",
    "meta-llama/Llama-3.1-8B-Instruct": "llama-3.1-8b",
    "Meta-Llama-3.1-8B-FP8": "llama-3.1-8b",
    "Meta-Llama-3.1-8B-Instruct-FP8": "llama-3.1-8b",
    "neuralmagic/Meta-Llama-3.1-8B-FP8": "llama-3.1-8b",
    "hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4": "llama-3.1-8b",
    "meta-llama/Llama-3.1-70B-Instruct": "llama-3.1-70b",
    "NousResearch/Nous-Hermes-Llama2-13b": "llama-2-13b",
    "TheBloke/Llama-2-13B-chat-GPTQ": "llama-2-13b",
    "robertgshaw2/llama-2-13b-chat-marlin": "llama-2-13b",
    "nvidia/Qwen3.6-35B-A3B-NVFP4": "qwen3.6-35b-a3b",
    "llama-3-8b": "llama-3-8b",
    "Meta-Llama-3-8B": "llama-3-8b",
    "mistralai/Mistral-7B-Instruct-v0.3": "mistral-7b-v0.3",
    "deepseek-ai/DeepSeek-R1": "deepseek-r1",
    "deepseek-ai/DeepSeek-V3-Base": "deepseek-v3",
    "deepseek-ai/DeepSeek-R1-Distill-Llama-8B": "deepseek-r1-distill-llama-8b",
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B": "deepseek-r1-distill-qwen-7b",
    "perfmodel-tiny-llama": "perfmodel-tiny-llama",
}


def _csv_values(path: Path, column: str) -> set[str]:
    with path.open(newline="") as f:
        return {row[column] for row in csv.DictReader(f) if row.get(column)}


def test_llm_inference_bench_all_results_names(all_results_csv: Path) -> None:
    hw = _csv_values(all_results_csv, "Hardware")
    models = _csv_values(all_results_csv, "Model")
    # Golden: the file has exactly these names (guards the pinned maps above going stale).
    assert hw == set(LLM_BENCH_HARDWARE)
    assert models == set(LLM_BENCH_MODELS)
    for name in hw:
        assert catalog.resolve_hardware(name).key == LLM_BENCH_HARDWARE[name], name
    for name in models:
        assert catalog.resolve_model(name).key == LLM_BENCH_MODELS[name], name


def test_llm_inference_bench_other_csvs_resolve(llm_bench_dir: Path) -> None:
    files = sorted(llm_bench_dir.glob("*.csv"))
    assert len(files) == 6
    seen_hw: set[str] = set()
    seen_models: set[str] = set()
    for f in files:
        seen_hw |= _csv_values(f, "Hardware")
        seen_models |= _csv_values(f, "Model")
    assert seen_hw <= set(LLM_BENCH_HARDWARE)
    assert seen_models <= set(LLM_BENCH_MODELS)
    for name in seen_models:
        assert catalog.resolve_model(name).key == LLM_BENCH_MODELS[name]


@pytest.mark.parametrize(("name", "key"), sorted(FORMATS_HARDWARE.items()))
def test_formats_hardware_names(name: str, key: str) -> None:
    assert catalog.resolve_hardware(name).key == key


@pytest.mark.parametrize(("name", "key"), sorted(FORMATS_MODELS.items()))
def test_formats_model_names(name: str, key: str) -> None:
    assert catalog.resolve_model(name).key == key


def test_names_found_in_format_files_resolve(formats_dir: Path) -> None:
    # Names as they literally appear inside the real files.
    text = "\n".join(p.read_text(errors="replace") for p in formats_dir.rglob("*.json"))
    for hw in ("NVIDIA H100 PCIe", "NVIDIA H200", "NVIDIA A100-SXM4-80GB"):
        assert hw in text
        catalog.resolve_hardware(hw)
    for model in ("openai/gpt-oss-20b", "facebook/opt-125m", "neuralmagic/Meta-Llama-3.1-8B-FP8",
                  "hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4", "meta-llama/Llama-2-70b-chat-hf",
                  "llama2-70b-4096"):
        assert model in text
        catalog.resolve_model(model)
    a4000 = formats_dir / "vllm-server-qps-csv" / "neuralmagic-vllm-benchmarking__4xA4000_server_benchmarking_results.csv"
    for gpu in _csv_values(a4000, "gpu_type"):
        assert catalog.resolve_hardware(gpu).key == "rtx-a4000"
    for model in _csv_values(formats_dir / "vllm-offline-batch-csv" /
                             "neuralmagic-vllm-benchmarking__a100_model_benchmarking_results.csv", "model_id"):
        assert catalog.resolve_model(model).key == "llama-2-13b"


def test_split_device_count() -> None:
    assert catalog.split_device_count("4xA4000") == (4, "A4000")
    assert catalog.split_device_count("8 x H100") == (8, "H100")
    assert catalog.split_device_count("H100") == (None, "H100")
    assert catalog.split_device_count("3090") == (None, "3090")


def test_resolution_is_case_and_punctuation_insensitive() -> None:
    for name in ("h100_sxm", "H100 SXM", "h100-SXM", "NVIDIA H100 GPU", "nvidia h100"):
        assert catalog.resolve_hardware(name).key == "h100-sxm"
    for name in ("LLAMA_2_7B", "llama2 7b", "Llama-2-7B", "meta-llama/llama-2-7b-chat-hf"):
        assert catalog.resolve_model(name).key == "llama-2-7b"
    # Versions stay distinct: decimals are kept, not squashed into neighbours.
    assert catalog.resolve_model("Llama-3.1-8B").key == "llama-3.1-8b"
    assert catalog.resolve_model("Llama-3-8B").key == "llama-3-8b"
    assert catalog.resolve_model("Qwen2.5-7B").key == "qwen2.5-7b"
    assert catalog.resolve_model("Qwen2-7B").key == "qwen2-7b"
    assert catalog.resolve_hardware("A100 80GB").key == "a100-80gb"
    assert catalog.resolve_hardware("H100 PCIe").key == "h100-pcie"


# --------------------------------------------------------------------------- unknown names


def test_unknown_hardware_suggests_close_names() -> None:
    with pytest.raises(UnknownNameError) as ei:
        catalog.resolve_hardware("Nvidia H300 GPU")
    err = ei.value
    assert isinstance(err, PerfmodelError) and isinstance(err, KeyError)
    assert len(err.suggestions) == 5
    assert {"h100-sxm", "h200"} & set(err.suggestions)
    assert "H300" in str(err) and "closest known" in str(err)


def test_unknown_model_suggests_close_names() -> None:
    with pytest.raises(UnknownNameError) as ei:
        catalog.resolve_model("meta-llama/Llama-4-8B")
    assert len(ei.value.suggestions) == 5
    assert any(s.startswith("llama") for s in ei.value.suggestions)
    with pytest.raises(UnknownNameError):
        catalog.resolve_model("example_model")
    # A base version that is not catalogued must not silently map to a neighbour.
    with pytest.raises(UnknownNameError):
        catalog.resolve_model("Mistral-7B-Instruct-v0.4")


# --------------------------------------------------------------------------- coverage and sources

REQUIRED_HARDWARE = {"a100-40gb", "a100-80gb", "h100-sxm", "h100-pcie", "h200", "gh200", "b200", "l4", "l40s",
                     "a10g", "t4", "rtx-a4000", "rtx-3090", "rtx-5090", "mi250", "mi300x", "gaudi2",
                     "intel-max-1550", "intel-pvc", "sn40l", "ascend-910b", "groq-lpu", "cpu-x86-2vcpu"}
REQUIRED_MODELS = {
    "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "llama-3.2-1b", "llama-3.2-3b", "llama-3.3-70b",
    "qwen2.5-0.5b", "qwen2.5-1.5b", "qwen2.5-3b", "qwen2.5-7b", "qwen2.5-14b", "qwen2.5-32b", "qwen2.5-72b",
    "qwen3-0.6b", "qwen3-1.7b", "qwen3-4b", "qwen3-8b", "qwen3-14b", "qwen3-32b", "qwen3-30b-a3b",
    "qwen3-235b-a22b", "mistral-7b-v0.1", "mistral-7b-v0.3", "mixtral-8x7b", "mixtral-8x22b", "deepseek-v3",
    "deepseek-r1", "deepseek-r1-distill-llama-8b", "deepseek-r1-distill-qwen-7b", "gpt-oss-20b",
    "gpt-oss-120b", "opt-125m", "perfmodel-tiny-llama", "llama-2-13b", "minimax-m2.5", "qwen3.6-35b-a3b",
    *LLM_BENCH_MODELS.values(),
}


def test_required_entries_present() -> None:
    assert REQUIRED_HARDWARE <= set(catalog.hardware_catalog())
    assert REQUIRED_MODELS <= set(catalog.model_catalog())
    assert catalog.hardware_catalog()["cpu-x86-2vcpu"].kind == "cpu"


def test_no_name_is_claimed_by_two_builtin_entries() -> None:
    assert _conflicts() == []


def _has_source(sources, field: str) -> bool:
    return "all" in sources or field in sources


@pytest.mark.parametrize("kind", ["hardware", "models"])
def test_every_figure_has_a_source(kind: str) -> None:
    entries = catalog.hardware_catalog() if kind == "hardware" else catalog.model_catalog()
    missing = []
    for key, spec in entries.items():
        assert spec.sources, f"{key} has no sources"
        for fld, value in spec.figures().items():
            if value is not None and not _has_source(spec.sources, fld):
                missing.append(f"{key}.{fld}")
        if kind == "hardware":
            for dt in spec.peak_tflops:
                if not (_has_source(spec.sources, "peak_tflops") or f"peak_tflops.{dt}" in spec.sources):
                    missing.append(f"{key}.peak_tflops.{dt}")
        for k, url in spec.sources.items():
            assert k in source_keys_allowed(kind) or k.startswith("peak_tflops."), (key, k)
            assert url.startswith("https://") or url.startswith("perfmodel ") or url.startswith("computed from"), \
                (key, k, url)
    assert not missing, f"figures without a source: {missing}"


def test_prices_carry_a_date_in_notes() -> None:
    for key, hw in catalog.hardware_catalog().items():
        if hw.price_per_hour_usd is not None:
            assert "price_per_hour_usd" in hw.sources, key
            assert any(y in hw.notes for y in ("2024", "2025", "2026")), key


# --------------------------------------------------------------------------- physical sanity


def test_hardware_physical_sanity() -> None:
    hw = catalog.hardware_catalog()
    assert hw["h100-sxm"].memory_bw_gbs > hw["a100-80gb"].memory_bw_gbs > hw["a100-40gb"].memory_bw_gbs
    assert hw["h200"].memory_bw_gbs > hw["h100-sxm"].memory_bw_gbs
    assert hw["b200"].memory_bw_gbs > hw["h200"].memory_bw_gbs
    assert hw["h100-sxm"].peak_flops("bf16") > 3 * hw["a100-40gb"].peak_flops("bf16")
    assert hw["a100-40gb"].memory_gb == 40 and hw["a100-80gb"].memory_gb == 80
    assert hw["mi300x"].memory_gb > hw["h200"].memory_gb > hw["h100-sxm"].memory_gb
    assert hw["gh200"].memory_gb == 96
    assert hw["h100-sxm"].peak_flops("fp8") == pytest.approx(1979e12)
    assert hw["a100-40gb"].peak_flops("bfloat16") == pytest.approx(312e12)
    for key, spec in hw.items():
        tf = spec.peak_tflops
        # Lower precision is never slower than higher precision on the same tensor units.
        if "fp8" in tf and "bf16" in tf:
            assert tf["fp8"] >= tf["bf16"], key
        if "bf16" in tf and "fp32" in tf:
            assert tf["bf16"] > tf["fp32"], key
        if spec.memory_gb is not None and spec.kind == "gpu":
            assert 8 <= spec.memory_gb <= 300, key
        if spec.pcie_gen and spec.pcie_lanes and spec.pcie_bw_gbs:
            # Bidirectional x16 figures: Gen3 32, Gen4 64, Gen5 128 GB/s.
            assert spec.pcie_bw_gbs == pytest.approx(2 ** (spec.pcie_gen - 3) * 32 * spec.pcie_lanes / 16), key


def test_peak_flops_unknown_dtype_lists_available() -> None:
    t4 = catalog.resolve_hardware("T4")
    with pytest.raises(UnknownNameError) as ei:
        t4.peak_flops("bf16")
    assert set(ei.value.suggestions) == {"fp32", "fp16", "int8", "int4"}
    with pytest.raises(UnknownNameError):
        catalog.resolve_hardware("ascend 910b").peak_flops("fp16")


def test_kv_cache_bytes_per_token() -> None:
    assert catalog.resolve_model("Meta-Llama-3-8B").kv_bytes_per_token() == 2 * 32 * 8 * 128 * 2 == 131072
    assert catalog.resolve_model("Llama-2-7b-hf").kv_bytes_per_token() == 524288
    assert catalog.resolve_model("Llama-2-7b-hf").kv_bytes_per_token(dtype_bytes=1) == 262144
    assert catalog.resolve_model("Llama-2-70b-hf").kv_bytes_per_token() == 2 * 80 * 8 * 128 * 2
    # MLA caches one 512-dim latent + 64-dim RoPE key per layer, not 128 heads of K and V.
    ds = catalog.resolve_model("DeepSeek-V3")
    assert ds.uses_mla and ds.kv_bytes_per_token() == 61 * (512 + 64) * 2 == 70272
    assert ds.kv_bytes_per_token() < 2 * 61 * 128 * 128 * 2 / 50
    with pytest.raises(PerfmodelError, match="n_kv_heads"):
        catalog.resolve_model("DeciLM-7B").kv_bytes_per_token()


def test_moe_and_weights() -> None:
    mix = catalog.resolve_model("Mixtral-8x7B-v0.1")
    assert mix.is_moe and mix.active_params_b < mix.params_b
    assert (mix.n_experts, mix.n_active_experts) == (8, 2)
    for key, m in catalog.model_catalog().items():
        if m.params_b is not None and m.active_params_b is not None:
            assert m.active_params_b <= m.params_b, key
        if m.n_experts == 0:
            assert m.active_params_b == m.params_b, key
    assert catalog.resolve_model("qwen3.6-35b-a3b").is_moe
    assert catalog.resolve_model("llama-3-8b").weight_bytes() == pytest.approx(8.03e9 * 2)
    assert catalog.resolve_model("llama-3-8b").weight_bytes(0.5) == pytest.approx(8.03e9 / 2)


def _llama_like_params(m: catalog.ModelSpec) -> int:
    h, d = m.hidden_size, m.head_dim
    attn = h * m.n_heads * d * 2 + h * m.n_kv_heads * d * 2
    width = m.moe_intermediate_size * m.n_experts if m.n_experts else m.intermediate_size
    per_layer = attn + 3 * h * width + 2 * h
    emb = m.vocab_size * h * (1 if m.tie_word_embeddings else 2)
    return emb + m.n_layers * per_layer + h


def test_tiny_llama_parameter_count_is_exact() -> None:
    tiny = catalog.resolve_model("perfmodel-tiny-llama")
    assert (tiny.hidden_size, tiny.n_layers, tiny.n_heads, tiny.n_kv_heads, tiny.head_dim) == (384, 6, 6, 2, 64)
    assert _llama_like_params(tiny) == 12_587_904
    assert tiny.params_b * 1e9 == pytest.approx(12_587_904, abs=0.5)
    assert tiny.kv_bytes_per_token() == 2 * 6 * 2 * 64 * 2


def test_parameter_counts_match_the_architecture() -> None:
    # Guards typos in layer/width figures: gated-MLP decoder shapes must add up to the published count.
    checked = 0
    for key, m in catalog.model_catalog().items():
        if m.family not in ("llama", "mistral", "mixtral", "qwen") or m.n_kv_heads is None or m.n_layers is None:
            continue
        assert _llama_like_params(m) / 1e9 == pytest.approx(m.params_b, rel=0.012), key
        checked += 1
    assert checked >= 35


# --------------------------------------------------------------------------- user files


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


USER_YAML = """
hardware:
  x100:
    name: Acme X100
    vendor: Acme
    kind: accelerator
    memory_gb: 64
    memory_bw_gbs: 2000
    peak_tflops: {bf16: 500}
    aliases: [Acme X100 NPU]
  h100-sxm:
    name: My H100 (discounted)
    vendor: NVIDIA
    kind: gpu
    memory_gb: 80
    memory_bw_gbs: 3350
    price_per_hour_usd: 1.0
models:
  my-model-1b:
    name: My-Model-1B
    family: llama
    params_b: 1.0
    n_layers: 16
    n_kv_heads: 4
    head_dim: 64
frameworks:
  myengine: [My Engine]
"""


def test_user_yaml_adds_and_overrides(_isolated_home: Path) -> None:
    before = catalog.resolve_hardware("H100").price_per_hour_usd
    _write(_isolated_home / "catalog" / "mine.yaml", USER_YAML)
    x = catalog.resolve_hardware("acme x100 npu")
    assert x.key == "x100" and x.memory_bw_gbs == 2000 and x.peak_flops("bf16") == 500e12
    h = catalog.resolve_hardware("Nvidia H100 GPU")  # built-in alias still resolves
    assert h.price_per_hour_usd == 1.0 != before
    assert h.name == "My H100 (discounted)"
    assert catalog.resolve_model("myorg/My-Model-1B-Instruct").kv_bytes_per_token() == 2 * 16 * 4 * 64 * 2
    assert catalog.canonical_framework("my_engine") == "myengine"
    assert catalog.user_files() == (str(_isolated_home / "catalog" / "mine.yaml"),)
    assert "a100-40gb" in catalog.hardware_catalog()  # built-ins kept


def test_user_yaml_from_env_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = _write(tmp_path / "extra" / "gpus.yml", "hardware:\n  z1:\n    name: Z1\n    vendor: Z\n    kind: gpu\n")
    monkeypatch.setenv("PERFMODEL_CATALOG", str(f.parent))
    assert catalog.resolve_hardware("Z1").key == "z1"
    monkeypatch.setenv("PERFMODEL_CATALOG", str(tmp_path / "missing.yaml"))
    with pytest.raises(PerfmodelError, match="missing.yaml"):
        catalog.hardware_catalog()


def test_user_file_change_is_picked_up(_isolated_home: Path) -> None:
    f = _write(_isolated_home / "catalog" / "a.yaml", "hardware:\n  q1:\n    name: Q1\n    vendor: Q\n    kind: gpu\n")
    assert catalog.resolve_hardware("q1").memory_gb is None
    _write(f, "hardware:\n  q1:\n    name: Q1\n    vendor: Q\n    kind: gpu\n    memory_gb: 12.5\n")
    os.utime(f, ns=(f.stat().st_mtime_ns + 10**9,) * 2)
    assert catalog.resolve_hardware("q1").memory_gb == 12.5


BROKEN = """
hardware:
  x100:
    name: Acme X100
    vendor: Acme
    kind: gpu
    memory_bw_gbs: -5
    peak_tflops: {bf17: 3}
    clock_mhz: 1500
models:
  m1:
    name: M1
    family: x
    n_experts: 8
    n_active_experts: 9
"""


def test_broken_user_yaml_names_file_entry_and_field(_isolated_home: Path) -> None:
    _write(_isolated_home / "catalog" / "my_gpus.yaml", BROKEN)
    with pytest.raises(ValidationError) as ei:
        catalog.resolve_hardware("H100")
    msg = str(ei.value)
    assert "my_gpus.yaml" in msg
    assert "hardware 'x100', field memory_bw_gbs: must be > 0 (got -5)" in msg
    assert "field clock_mhz: unknown field" in msg
    assert "bf17" in msg
    assert "model 'm1'" in msg and "n_active_experts" in msg
    assert len(ei.value.problems) == 4
    # Frameworks never raise, even with a broken user file.
    assert catalog.canonical_framework("vLLM") == "vllm"


@pytest.mark.parametrize(("text", "needle"), [
    ("hardware:\n  x: [1, 2\n", "line"),
    ("- just\n- a list\n", "mapping"),
    ("gpus:\n  x: {}\n", "unknown section 'gpus'"),
    ("hardware:\n  X 100:\n    name: a\n    vendor: b\n    kind: gpu\n", "key must be lower-case"),
    ("hardware:\n  x:\n    name: a\n    vendor: b\n    kind: tpu\n", "field kind"),
    ("models:\n  m:\n    name: a\n    family: b\n    kv_lora_rank: 512\n", "qk_rope_head_dim"),
])
def test_bad_files_are_validation_errors(tmp_path: Path, text: str, needle: str) -> None:
    f = _write(tmp_path / "bad.yaml", text)
    with pytest.raises(ValidationError) as ei:
        catalog.load_file(f)
    assert "bad.yaml" in str(ei.value) and needle in str(ei.value)


# --------------------------------------------------------------------------- frameworks, caching, objects


@pytest.mark.parametrize(("raw", "canon"), [
    ("vLLM", "vllm"), ("TensorRT-LLM", "tensorrt-llm"), ("trtllm", "tensorrt-llm"),
    ("Deepspeed-MII", "deepspeed-mii"), ("Deepspeed", "deepspeed"), ("sambaflow", "sambaflow"),
    ("llama.cpp", "llama.cpp"), ("SGLang", "sglang"), ("text-generation-inference", "tgi"),
    ("transformers", "transformers"), ("PyTorch", "pytorch"), ("  Some New Engine ", "some new engine"),
])
def test_canonical_framework(raw: str, canon: str) -> None:
    assert catalog.canonical_framework(raw) == canon


def test_llm_bench_frameworks(all_results_csv: Path) -> None:
    got = {catalog.canonical_framework(f) for f in _csv_values(all_results_csv, "Framework")}
    assert got == {"tensorrt-llm", "deepspeed-mii", "llama.cpp", "vllm", "deepspeed", "sambaflow"}


def test_specs_are_frozen_and_cached() -> None:
    a = catalog.resolve_hardware("H100")
    assert a is catalog.resolve_hardware("h100-sxm")
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.memory_gb = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        a.peak_tflops["bf16"] = 1.0  # type: ignore[index]
    with pytest.raises(TypeError):
        catalog.hardware_catalog()["x"] = a  # type: ignore[index]
    assert len({a, catalog.resolve_hardware("H100 SXM5")}) == 1
    catalog.reload()
    assert catalog.resolve_hardware("H100") == a


def test_module_docstring_examples() -> None:
    import doctest

    result = doctest.testmod(catalog, verbose=False)
    assert result.attempted >= 2 and result.failed == 0


def test_builtin_catalog_files_validate() -> None:
    # The shipped YAML passes the same strict schema as user files, file by file.
    data = Path(catalog.__file__).parent / "data"
    for name in ("hardware.yaml", "models.yaml", "frameworks.yaml"):
        catalog.load_file(data / name)


def test_accelerator_prices_and_gh200_power_are_sourced_or_explained() -> None:
    hw = catalog.hardware_catalog()
    assert hw["gh200"].tdp_w == 1000 and "tdp_w" in hw["gh200"].sources
    assert "upper bound" in hw["gh200"].notes  # module power includes the Grace CPU and LPDDR5X
    for key, price in (("mi300x", 1.85), ("gaudi2", 1.30)):
        assert hw[key].price_per_hour_usd == pytest.approx(price)
        assert hw[key].sources["price_per_hour_usd"].startswith("https://")
        assert "approximate on-demand list price" in " ".join(hw[key].notes.split())
    for key in ("mi250", "intel-max-1550", "intel-pvc", "sn40l"):
        assert hw[key].price_per_hour_usd is None
        assert "no public" in hw[key].notes.lower(), key  # the gap is stated, not silent


NOT_UTF8 = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe"


def test_file_that_is_not_utf8_is_a_validation_error(tmp_path: Path) -> None:
    """A binary or non-UTF-8 file was a UnicodeDecodeError; it is broken YAML, naming the file."""
    f = tmp_path / "pic.png"
    f.write_bytes(NOT_UTF8)
    with pytest.raises(ValidationError, match=r"pic\.png: not valid YAML \(not UTF-8 text: byte 0x89 at offset 0"):
        catalog.load_file(f)
    latin1 = tmp_path / "gpus.yaml"
    latin1.write_bytes("hardware:\n  x1:\n    name: Gér\xe2t\n".encode("latin-1"))
    with pytest.raises(ValidationError, match=r"gpus\.yaml: not valid YAML \(not UTF-8 text: byte 0xe9 at offset 27"):
        catalog.load_file(latin1)


def test_user_file_that_is_not_utf8_fails_every_command_cleanly(_isolated_home: Path, tmp_path: Path) -> None:
    """A non-UTF-8 *.yaml in the home catalog folder breaks the catalog like a YAML syntax error does:
    exit 2 with the file named, no traceback, from every command that reads the catalog."""
    from click.testing import CliRunner

    from perfmodel.cli import main

    bad = _isolated_home / "catalog" / "pic.yaml"
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_bytes(NOT_UTF8)
    pic = tmp_path / "pic.png"
    pic.write_bytes(NOT_UTF8)
    for args in (["catalog", "hardware"], ["catalog", "show", "h100"], ["catalog", "check", str(pic)]):
        res = CliRunner().invoke(main, args)
        assert res.exit_code == 2, (args, res.output)
        assert "not valid YAML (not UTF-8 text" in res.output and "pic." in res.output
        assert isinstance(res.exception, SystemExit), (args, res.exception)
    with pytest.raises(ValidationError, match=str(bad)):
        catalog.resolve_hardware("H100")
