"""llama.cpp's ``llama-server`` on CPU, offline, for the HTTP sweep tests.

The binary is built once by ``tools/build_llama_server.sh`` (from the llama.cpp
tree vendored in the llama-cpp-python source distribution) into a cache
directory: ``$PERFMODEL_LLAMA_CPP_DIR`` or ``~/.cache/perfmodel/llama.cpp/<version>``
(the version is read from the script, so there is one place to change it). The
same cache holds the vendored ``convert_hf_to_gguf.py`` (with its ``gguf-py``),
which turns the random-weight ``perfmodel-tiny-llama`` built by
:func:`sweep_server.build_tiny_model` into a GGUF file in a few seconds.

The server runs with ``--metrics`` (Prometheus ``/metrics``), ``-np N`` parallel
slots (continuous batching over the slots) and ``-t 1`` (one thread: on the
2-vCPU machines two threads under load were 10-20x slower), on 127.0.0.1 with a
free port; ``/health`` answers 200 once the model is loaded.

When the binary is absent the fixtures skip with the command that builds it,
unless ``PERFMODEL_REQUIRE_LLAMA_SERVER`` is set (CI sets it after building):
then they fail, so the test cannot silently skip.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from sweep_server import ServerProcess, ServerUnavailable, build_tiny_model, free_port

from perfmodel.sweep.local_engine import SAMPLE_MODEL, TINY_LLAMA_CONFIG

__all__ = [
    "BUILD_SCRIPT",
    "LLAMA_SERVER_ALIAS",
    "LLAMA_SERVER_SLOTS",
    "llama_cpp_version",
    "llama_cpp_dir",
    "llama_server_binary",
    "convert_to_gguf",
    "start_llama_server",
    "tiny_gguf",
    "llama_server",
]

REPO = Path(__file__).resolve().parent.parent
BUILD_SCRIPT = REPO / "tools" / "build_llama_server.sh"
LLAMA_SERVER_ALIAS = SAMPLE_MODEL
"""Name the server gives the model (``/v1/models``): the catalog entry of :data:`TINY_LLAMA_CONFIG`."""
LLAMA_SERVER_SLOTS = 4
"""``-np``: parallel slots of the test server (the tests' highest concurrency)."""
REQUIRE_ENV = "PERFMODEL_REQUIRE_LLAMA_SERVER"
_START_TIMEOUT_S = 60.0


def llama_cpp_version() -> str:
    """The llama-cpp-python version pinned in ``tools/build_llama_server.sh``."""
    m = re.search(r"^LLAMA_CPP_PYTHON_VERSION=(\S+)$", BUILD_SCRIPT.read_text(), re.MULTILINE)
    if m is None:
        raise RuntimeError(f"no LLAMA_CPP_PYTHON_VERSION=... line in {BUILD_SCRIPT}")
    return m.group(1)


def llama_cpp_dir() -> Path:
    """The build script's cache directory (``$PERFMODEL_LLAMA_CPP_DIR`` overrides the default)."""
    env = os.environ.get("PERFMODEL_LLAMA_CPP_DIR")
    if env:
        return Path(env)
    return Path.home() / ".cache" / "perfmodel" / "llama.cpp" / llama_cpp_version()


def llama_server_binary() -> Path | None:
    """The cached ``llama-server`` when it has been built, else None."""
    exe = llama_cpp_dir() / "bin" / "llama-server"
    return exe if exe.is_file() and os.access(exe, os.X_OK) else None


def _unavailable(reason: str) -> None:
    """Skip, or fail when the environment says the server is required (CI)."""
    if os.environ.get(REQUIRE_ENV):
        pytest.fail(f"{reason} ({REQUIRE_ENV} is set, so this is an error, not a skip)")
    pytest.skip(reason)


def convert_to_gguf(model_dir: Path, out_path: Path) -> Path:
    """Convert a Hugging Face Llama directory to GGUF (f32) with llama.cpp's own converter.

    Parameters
    ----------
    model_dir
        Written by :func:`sweep_server.build_tiny_model`.
    out_path
        The ``.gguf`` file to write; reused when it exists.

    Returns
    -------
    Path
        ``out_path``.

    Raises
    ------
    ServerUnavailable
        When the converter is not in the cache or fails (its output is the message).
    """
    out_path = Path(out_path)
    if out_path.exists():
        return out_path
    script = llama_cpp_dir() / "llama.cpp" / "convert_hf_to_gguf.py"
    if not script.exists():
        raise ServerUnavailable(f"{script} is missing: run {BUILD_SCRIPT}")
    # the converter puts its own gguf-py first on sys.path (unless NO_LOCAL_GGUF is set)
    env = {k: v for k, v in os.environ.items() if k != "NO_LOCAL_GGUF"}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    proc = subprocess.run([sys.executable, str(script), str(model_dir), "--outfile", str(out_path),
                           "--outtype", "f32"], capture_output=True, text=True, env=env, timeout=300)
    if proc.returncode != 0 or not out_path.exists():
        raise ServerUnavailable(f"convert_hf_to_gguf.py failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return out_path


def _health(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/health", timeout=2.0) as resp:  # noqa: S310 - a local test server
            return resp.status == 200 and json.loads(resp.read()).get("status") == "ok"
    except (OSError, ValueError, urllib.error.HTTPError):
        return False


def start_llama_server(gguf: Path, *, slots: int = LLAMA_SERVER_SLOTS, ctx_per_slot: int = 512,
                       alias: str = LLAMA_SERVER_ALIAS, port: int | None = None, threads: int = 1,
                       log_dir: Path | None = None, binary: Path | None = None,
                       cpus: set[int] | None = None) -> ServerProcess:
    """Start ``llama-server --metrics -np SLOTS -t THREADS`` on 127.0.0.1 and wait for ``/health``.

    Parameters
    ----------
    gguf
        The model file.
    slots
        Parallel slots (``-np``): at most this many requests are decoded together.
    ctx_per_slot
        Context tokens per slot (``-c`` is ``slots * ctx_per_slot``).
    alias
        Model name served in ``/v1/models`` and expected in requests.
    port
        TCP port (default: a free one).
    threads
        ``-t`` and ``-tb``.
    log_dir
        Where the log goes (default: beside the model file).
    binary
        The executable (default: the cached one).
    cpus
        Pin the server (all its threads) to these CPU cores (Linux), e.g. to keep a
        benchmark's clients off the server's core.

    Returns
    -------
    ServerProcess

    Raises
    ------
    ServerUnavailable
        No binary, or the server exited or was not healthy within a minute (with the log tail).
    """
    exe = binary or llama_server_binary()
    if exe is None:
        raise ServerUnavailable(f"llama-server is not built: run {BUILD_SCRIPT}")
    port = port or free_port()
    log_path = (Path(log_dir) if log_dir is not None else Path(gguf).parent) / f"llama-server-{port}.log"
    cmd = [str(exe), "-m", str(gguf), "--host", "127.0.0.1", "--port", str(port), "--metrics",
           "-np", str(slots), "-c", str(slots * ctx_per_slot), "-t", str(threads), "-tb", str(threads),
           "--alias", alias, "--no-webui"]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    with open(log_path, "wb") as log:
        pin = None if cpus is None else (lambda: os.sched_setaffinity(0, cpus))
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
                                preexec_fn=pin)
    server = ServerProcess(url=f"http://127.0.0.1:{port}", model_dir=Path(gguf), proc=proc, log_path=log_path)
    deadline = time.monotonic() + _START_TIMEOUT_S
    while not _health(server.url):
        if proc.poll() is not None:
            raise ServerUnavailable(f"llama-server exited with code {proc.returncode}:\n{server.log_tail()}")
        if time.monotonic() > deadline:
            server.stop()
            raise ServerUnavailable(f"llama-server not healthy after {_START_TIMEOUT_S:.0f} s:\n{server.log_tail()}")
        time.sleep(0.1)
    return server


@pytest.fixture(scope="session")
def tiny_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``perfmodel-tiny-llama`` (12.6 M parameters, random weights) as a GGUF file (built once per session).

    Not the 0.8 M-parameter model of ``transformers_server``: llama-server decodes that one at ~2,000 tok/s
    with one request, so HTTP handling rather than the model set the pace and batching showed little.
    """
    if llama_server_binary() is None:
        _unavailable(f"llama-server is not built in {llama_cpp_dir()}: run {BUILD_SCRIPT} "
                     f"(10-30 min on 2 cores, cached afterwards)")
    base = tmp_path_factory.mktemp("llama-server-model")
    try:
        return convert_to_gguf(build_tiny_model(base / "model", config=TINY_LLAMA_CONFIG), base / "tiny.gguf")
    except ServerUnavailable as exc:
        _unavailable(str(exc))
        raise  # unreachable: _unavailable skips or fails


@pytest.fixture(scope="session")
def llama_server(tiny_gguf: Path) -> Iterator[ServerProcess]:
    """``llama-server`` on 127.0.0.1 (CPU, one thread, :data:`LLAMA_SERVER_SLOTS` slots, ``--metrics``)."""
    try:
        server = start_llama_server(tiny_gguf)
    except ServerUnavailable as exc:
        _unavailable(f"llama-server did not start: {exc}")
        raise
    try:
        yield server
    finally:
        with contextlib.suppress(Exception):
            server.stop()
