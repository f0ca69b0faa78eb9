"""A real OpenAI-compatible inference server on CPU, offline, for the HTTP sweep tests.

No model hub is reachable, so the model is made here: a SentencePiece BPE
tokenizer trained on local text (Python's own ``email`` and ``json`` package
sources) and a random-weight ``LlamaForCausalLM`` (hidden 128, 2 layers, about
0.6 M parameters: generation speed does not depend on the weights' values).
``transformers serve DIR --device cpu --continuous-batching`` then serves it on
127.0.0.1 with ``OMP_NUM_THREADS=1`` (two threads under load were 10-20x slower
on the 2-vCPU machines) and ``HF_HUB_OFFLINE=1``.

The tokenizer has no byte fallback: with byte pieces, ``transformers serve``'s
streaming detokenizer fails on some random outputs ("Invalid prefix encountered
while decoding stream", sent as invalid JSON), which is a server quirk the
fault tests cover on their own server, not something the throughput tests
should trip over.

Plain helpers (:func:`build_tiny_model`, :func:`start_transformers_server`) are
also used by ``benchmarks/bench_http_client.py``; the session-scoped fixtures
(:func:`tiny_model_dir`, :func:`transformers_server`) are imported by test
modules. They skip with the reason when the server cannot start (transformers'
``serving`` extra missing: ``pip install 'transformers[serving]'``, part of
``perfmodel[engine]``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

__all__ = [
    "TINY_SERVER_MODEL_CONFIG",
    "ServerProcess",
    "ServerUnavailable",
    "free_port",
    "build_tiny_model",
    "start_transformers_server",
    "tiny_model_dir",
    "transformers_server",
    "run_http_sweep",
    "assert_sweep_stored",
]

TINY_SERVER_MODEL_CONFIG = {
    "hidden_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 256,
    "vocab_size": 2000,
    "max_position_embeddings": 2048,
    "bos_token_id": 1,
    "eos_token_id": 2,
}
"""``LlamaConfig`` of the served model (the tokenizer's vocabulary has the same size)."""

_START_TIMEOUT_S = 180.0
# A small paged KV cache (512 blocks x 32 tokens = 16k tokens, far more than the tests
# keep in flight): with the default, sized from a memory fraction, the first request
# on a CPU spent ~80 s allocating and initialising the cache.
_CB_CACHE_ARGS = ("--cb-num-blocks", "512", "--cb-block-size", "32", "--cb-max-batch-tokens", "512")


class ServerUnavailable(RuntimeError):
    """The server could not be built or started here (the reason is the message)."""


@dataclass
class ServerProcess:
    """A running server: its base URL, model directory, process and log file."""

    url: str
    model_dir: Path
    proc: subprocess.Popen[bytes]
    log_path: Path

    def log_tail(self, n_chars: int = 2000) -> str:
        """The end of the server's log."""
        try:
            return self.log_path.read_text(errors="replace")[-n_chars:]
        except OSError:
            return ""

    def stop(self) -> None:
        """Terminate the server (its whole process group), then kill it if it lingers."""
        if self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=15)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _training_text() -> str:
    import email
    import json as json_pkg

    parts: list[str] = []
    for pkg in (email, json_pkg):
        for f in sorted(Path(pkg.__file__).parent.glob("*.py")):
            parts.append(f.read_text(encoding="utf-8", errors="ignore"))
    return "\n".join(parts)


def build_tiny_model(out_dir: Path, *, seed: int = 0, config: Mapping[str, Any] | None = None) -> Path:
    """Train a tokenizer on local text and save a random-weight Llama beside it.

    Parameters
    ----------
    out_dir
        Directory to write (created); reused as is when it already holds a model.
    seed
        Seeds the random weights.
    config
        ``LlamaConfig`` keyword arguments (default :data:`TINY_SERVER_MODEL_CONFIG`);
        the tokenizer is trained to its ``vocab_size``.

    Returns
    -------
    Path
        ``out_dir``, loadable with ``from_pretrained`` and by ``transformers serve``.

    Raises
    ------
    ServerUnavailable
        When torch, transformers or sentencepiece is missing.
    """
    out_dir = Path(out_dir)
    if (out_dir / "config.json").exists() and (out_dir / "tokenizer_config.json").exists():
        return out_dir
    try:
        import sentencepiece as spm
        import torch
        from transformers import LlamaConfig, LlamaForCausalLM, LlamaTokenizer
    except ImportError as exc:
        raise ServerUnavailable(f"building the tiny model needs torch, transformers and sentencepiece ({exc}); "
                                "pip install 'perfmodel[engine]'") from None
    cfg = dict(TINY_SERVER_MODEL_CONFIG if config is None else config)
    out_dir.mkdir(parents=True, exist_ok=True)
    text_path = out_dir / "train.txt"
    text_path.write_text(_training_text(), encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(text_path), model_prefix=str(out_dir / "tokenizer"),
        vocab_size=int(cfg["vocab_size"]), model_type="bpe", byte_fallback=False,
        character_coverage=1.0, num_threads=1, minloglevel=2, unk_id=0, bos_id=1, eos_id=2, pad_id=-1)
    text_path.unlink()
    (out_dir / "tokenizer.vocab").unlink(missing_ok=True)
    # LlamaTokenizer(vocab_file=...) gives an empty tokenizer in transformers 5;
    # from_pretrained on the directory holding tokenizer.model loads it properly.
    tok = LlamaTokenizer.from_pretrained(str(out_dir))
    tok.save_pretrained(str(out_dir))
    torch.manual_seed(seed)
    model = LlamaForCausalLM(LlamaConfig(**cfg))
    model.save_pretrained(str(out_dir))
    return out_dir


def _get_json(url: str, timeout_s: float = 5.0) -> dict:
    with urllib.request.urlopen(url, timeout=timeout_s) as resp:  # noqa: S310 - a local test server
        return json.loads(resp.read())


def _post_json(url: str, body: dict, timeout_s: float) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout_s) as resp:  # noqa: S310 - a local test server
        return json.loads(resp.read())


def _serve_command() -> list[str]:
    exe = Path(sys.executable).with_name("transformers")
    if exe.exists():
        return [str(exe), "serve"]
    found = shutil.which("transformers")
    if found:
        return [found, "serve"]
    raise ServerUnavailable("the `transformers` command is not installed; pip install 'perfmodel[engine]'")


def start_transformers_server(model_dir: Path, *, port: int | None = None, log_dir: Path | None = None,
                              warmup: bool = True, cpus: set[int] | None = None) -> ServerProcess:
    """Start ``transformers serve`` on CPU with continuous batching and wait until it answers.

    Parameters
    ----------
    model_dir
        A directory written by :func:`build_tiny_model`.
    port
        TCP port (default: a free one).
    log_dir
        Where the server's log goes (default: ``model_dir``'s parent).
    warmup
        Send two short completions first: the first requests after start are
        slower, which would otherwise land in the first measured point.
    cpus
        Pin the server (all its threads) to these CPU cores (Linux), e.g. to keep
        a benchmark's clients off the server's core.

    Returns
    -------
    ServerProcess

    Raises
    ------
    ServerUnavailable
        With the reason and the log tail, when the serving extra is missing or the
        server does not become healthy within three minutes.
    """
    missing = [m for m in ("fastapi", "uvicorn", "openai") if importlib.util.find_spec(m) is None]
    if missing:
        raise ServerUnavailable(f"`transformers serve` needs {', '.join(missing)}; "
                                "pip install 'transformers[serving]' (part of perfmodel[engine])")
    port = port or free_port()
    log_dir = Path(log_dir) if log_dir is not None else Path(model_dir).parent
    log_path = log_dir / f"transformers-serve-{port}.log"
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", OMP_NUM_THREADS="1",
               MKL_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
    cmd = [*_serve_command(), str(model_dir), "--host", "127.0.0.1", "--port", str(port), "--device", "cpu",
           "--continuous-batching", "--log-level", "warning", *_CB_CACHE_ARGS]
    with open(log_path, "wb") as log:
        pin = None if cpus is None else (lambda: os.sched_setaffinity(0, cpus))
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
                                preexec_fn=pin)
    server = ServerProcess(url=f"http://127.0.0.1:{port}", model_dir=Path(model_dir), proc=proc, log_path=log_path)
    deadline = time.monotonic() + _START_TIMEOUT_S
    while True:
        if proc.poll() is not None:
            raise ServerUnavailable(f"`transformers serve` exited with code {proc.returncode}:\n{server.log_tail()}")
        try:
            if _get_json(server.url + "/health", 2.0).get("status") == "ok":
                break
        except (OSError, ValueError):
            pass
        if time.monotonic() > deadline:
            server.stop()
            raise ServerUnavailable(f"`transformers serve` not healthy after {_START_TIMEOUT_S:.0f} s:\n"
                                    f"{server.log_tail()}")
        time.sleep(0.5)
    if warmup:
        try:
            model = _get_json(server.url + "/v1/models")["data"][0]["id"]
            for n in (2, 8):
                _post_json(server.url + "/v1/completions", {
                    "model": model, "prompt": "the of and to in is", "max_tokens": n,
                    "generation_config": json.dumps({"min_new_tokens": n})}, timeout_s=_START_TIMEOUT_S)
        except (OSError, ValueError, KeyError, IndexError, urllib.error.HTTPError) as exc:
            server.stop()
            raise ServerUnavailable(f"warming up `transformers serve` failed ({exc}):\n{server.log_tail()}") from None
    return server


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random-weight Llama with a locally trained tokenizer (built once per session)."""
    try:
        return build_tiny_model(tmp_path_factory.mktemp("tiny-served-model") / "model")
    except ServerUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def transformers_server(tiny_model_dir: Path) -> Iterator[ServerProcess]:
    """``transformers serve`` on 127.0.0.1 (CPU, continuous batching, one thread), warmed up."""
    try:
        server = start_transformers_server(tiny_model_dir)
    except ServerUnavailable as exc:
        pytest.skip(f"no real inference server: {exc}")
    try:
        yield server
    finally:
        server.stop()


def run_http_sweep(url: str, home: Path, *, name: str, server_type: str, concurrency: tuple[int, ...],
                   input_len: int, output_lens: tuple[int, ...],
                   backend_options: dict[str, Any]) -> tuple[Any, pd.DataFrame, pd.DataFrame]:
    """Run a one-repeat HTTP sweep against ``url`` through the real runner into a store at ``home``.

    Returns
    -------
    (result, runs, points)
        The runner's result, the dataset's runs and the sweep's points.
    """
    from perfmodel.store import Store
    from perfmodel.sweep.plan import plan_from_dict
    from perfmodel.sweep.runner import create_sweep, run_sweep

    store = Store(home)
    plan = plan_from_dict({
        "name": name, "backend": "http", "target": url, "server_type": server_type, "hardware": "cpu-x86-2vcpu",
        "batch_sizes": list(concurrency), "input_lens": [input_len], "output_lens": list(output_lens),
        "repeats": 1, "warmup": 2, "retries": 1, "timeout_s": 120, "backend_options": backend_options,
    }).check()
    info = create_sweep(plan, store=store)
    result = run_sweep(info.id, store=store)
    return result, store.runs(result.dataset_id), store.sweep_points(result.sweep_id)


def assert_sweep_stored(result: Any, runs: pd.DataFrame, points: pd.DataFrame, concurrency: tuple[int, ...],
                        output_lens: tuple[int, ...]) -> None:
    """Every (concurrency, output length) point finished without a failed request and is in the store."""
    n = len(concurrency) * len(output_lens)
    assert result.status == "done", result.error
    assert result.n_done == n and result.n_failed == 0
    assert len(runs) == n
    assert set(points["status"]) == {"done"}
    assert sorted(zip(runs["batch_size"], runs["output_len_tok"], strict=True)) == sorted(
        (float(c), float(o)) for c in concurrency for o in output_lens)
    assert (runs["n_failed"] == 0).all()


def assert_throughput_latency_consistent(runs: pd.DataFrame) -> None:
    """Per point: throughputs are the usage token counts over the measured window, requests/s and
    in-flight requests follow Little's law for a closed loop, and e2e = TTFT + (out - 1) x TPOT."""
    for _, r in runs.iterrows():
        assert r["output_throughput_tok_s"] == pytest.approx(
            r["n_requests"] * r["output_len_tok"] / r["fw_duration_s"], rel=1e-9)
        assert r["total_throughput_tok_s"] == pytest.approx(
            r["n_requests"] * (r["output_len_tok"] + r["input_len_tok"]) / r["fw_duration_s"], rel=1e-9)
        # the last requests drain with fewer in flight, hence the tolerance
        assert r["request_throughput_rps"] == pytest.approx(r["batch_size"] / r["e2e_latency_s"], rel=0.35)
        assert r["measured_concurrency"] == pytest.approx(r["batch_size"], rel=0.35)
        assert r["e2e_latency_s"] == pytest.approx(r["ttft_s"] + (r["output_len_tok"] - 1) * r["tpot_s"],
                                                   rel=1e-6)
