"""The servers' own generated-token rate is a throughput: judged by default and the column an expected
throughput applies to.

vLLM's ``vllm:generation_tokens_total`` counter becomes ``fw_vllm_generation_tokens_per_s`` in a dump; with no
"throughput" in its name it had been left out of the default metrics (a 50 % token-rate drop alerted only through
TTFT, or not at all) and ``--expect-from`` had asked for ``--expect-metric``.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from _predict_data import curve_params, synthetic_runs
from click.testing import CliRunner

from perfmodel.cli import main
from perfmodel.monitor import monitor_stream, read_stream, read_stream_bytes
from perfmodel.monitor.hints import improves
from perfmodel.store import Store

DATA = Path(__file__).parent / "data" / "monitor"


def _dump(server: str, rates: list[float], *, ttft_s: float = 0.05) -> str:
    """A Prometheus dump, one scrape a second: generated and prompt tokens counted at the given rates, TTFT
    steady, and a running-requests gauge."""
    lines: list[str] = []
    gen = prompt = 0.0
    for i, r in enumerate(rates):
        gen += r if i else 0.0
        prompt += 2000.0 if i else 0.0
        lines += [f"# TIMESTAMP {1_700_000_000 + i}",
                  f"# TYPE {server}:num_requests_running gauge", f'{server}:num_requests_running{{model_name="m"}} 8',
                  f"# TYPE {server}:generation_tokens_total counter",
                  f'{server}:generation_tokens_total{{model_name="m"}} {gen}',
                  f"# TYPE {server}:prompt_tokens_total counter",
                  f'{server}:prompt_tokens_total{{model_name="m"}} {prompt}',
                  f"# TYPE {server}:time_to_first_token_seconds histogram",
                  f'{server}:time_to_first_token_seconds_sum{{model_name="m"}} {ttft_s * 10 * i}',
                  f'{server}:time_to_first_token_seconds_count{{model_name="m"}} {10 * i}']
    return "\n".join(lines) + "\n"


def test_the_generated_token_rate_is_a_primary_metric() -> None:
    s = read_stream(DATA / "metrics_dump.prom")
    assert s.primary_metrics() == ["fw_vllm_generation_tokens_per_s", "fw_vllm_time_to_first_token_seconds_mean"]
    sg = read_stream_bytes("sglang.prom", _dump("sglang", [1000.0] * 5).encode())
    assert "fw_sglang_generation_tokens_per_s" in sg.primary_metrics()
    # the prompt-token rate follows the arrivals, not the serving speed: not judged by default
    assert "fw_sglang_prompt_tokens_per_s" in sg.metrics and "fw_sglang_prompt_tokens_per_s" not in sg.primary_metrics()
    assert improves("fw_vllm_generation_tokens_per_s", "high") and not improves("fw_vllm_generation_tokens_per_s", "low")


def test_a_token_rate_drop_alerts_on_the_token_rate_by_default() -> None:
    rates = [1000.0] * 80 + [500.0] * 40  # decoding halves; TTFT and the traffic stay as they were
    s = read_stream_bytes("vllm.prom", _dump("vllm", rates).encode())
    rep = monitor_stream(s, detector="window", window=60, w=5)
    assert set(rep.alerts["metric"]) == {"fw_vllm_generation_tokens_per_s"}
    assert int(rep.alerts["start_index"].min()) >= 80


def test_the_expectation_applies_to_the_output_token_rate() -> None:
    from perfmodel.monitor.streams import throughput_metrics

    assert throughput_metrics(["fw_vllm_prompt_tokens_per_s", "fw_vllm_generation_tokens_per_s"]) == [
        "fw_vllm_generation_tokens_per_s"]
    assert throughput_metrics(["request_throughput_rps", "total_throughput_tok_s", "output_throughput_tok_s"]) == [
        "output_throughput_tok_s", "total_throughput_tok_s"]
    assert throughput_metrics(["fw_sglang_gen_throughput", "ttft_s"]) == ["fw_sglang_gen_throughput"]
    assert throughput_metrics(["ttft_s", "fw_vllm_prompt_tokens_per_s"]) == []


def test_cli_expect_from_finds_vllm_s_token_rate(tmp_path: Path) -> None:
    # "say which metric the expectation is for with --expect-metric" although the token rate was right there
    store = Store()
    info = store.create_dataset("synthetic", {"source": "test"})
    store.append_runs(info.id, synthetic_runs())
    a, b, c = curve_params("h100-sxm", "llama-3-8b", 128.0)
    want = c - a * math.exp(-b * 16.0)
    dump = tmp_path / "vllm.prom"
    dump.write_text(_dump("vllm", [want] * 40 + [want * 0.5] * 20))
    res = CliRunner().invoke(main, ["monitor", str(dump), "--detector", "threshold", "--expect-from", "synthetic",
                                    "--hardware", "h100-sxm", "--model", "llama-3-8b", "--framework", "vllm",
                                    "--input-len", "128", "--output-len", "128", "--batch", "16"])
    assert res.exit_code == 0, res.output
    shown = float(res.output.split("expected fw_vllm_generation_tokens_per_s: ")[1].split()[0].replace(",", ""))
    assert shown == pytest.approx(want, rel=0.01)
    assert "fw_vllm_generation_tokens_per_s threshold t=1700000040" in res.output
    # a stream with no output-throughput column still asks, and says what it looked for
    only_ttft = tmp_path / "ttft.csv"
    only_ttft.write_text("timestamp,ttft_s\n1,0.1\n2,0.1\n")
    res = CliRunner().invoke(main, ["monitor", str(only_ttft), "--expect-from", "synthetic", "--batch", "16"])
    assert res.exit_code == 2 and "--expect-metric" in res.output and "generated-token rate" in res.output
