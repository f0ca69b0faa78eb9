"""A minimal real inference engine: a random-weight Llama run in-process.

The engine builds ``LlamaForCausalLM(LlamaConfig(...))`` directly from a config
(no model hub is needed: generation speed does not depend on weight values),
runs true static batches with ``generate`` (``B`` identical-length random-token
prompts, greedy, ``min_new_tokens = max_new_tokens`` so no sequence stops
early) and returns each repeat as a row of the canonical runs table.

Timing comes from one ``generate`` call per repeat: a streamer object records a
``perf_counter`` stamp each time ``generate`` hands it tokens (once for the
prompt, then once per decoding step, right after that step's forward pass and
greedy pick). So ``ttft_s`` is the prefill (set-up, one forward over the whole
prompt batch, first pick), ``tpot_s`` is the decode time after the first token
divided by ``output_len - 1``, and the per-step gaps give the inter-token
latency percentiles. Measuring both phases inside the same call avoids a
second, separately-warmed prefill run and keeps prefill + decode = end to end.

torch and transformers are an optional extra (``pip install perfmodel[engine]``)
and are imported only when the engine loads its model.

It is meant to become one backend of the sweep launcher: settings are checked
up front, a point is a validated :class:`StaticBatchPoint`, and progress is
reported through an ``on_progress(done, total, row)`` callback.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as _PydanticValidationError

from ..errors import PerfmodelError, Problem, ValidationError
from ..schema import COLUMN_NAMES, validate_runs

__all__ = [
    "ENGINE_SOURCE_FORMAT",
    "ENGINE_FRAMEWORK",
    "ENGINE_INSTALL_HINT",
    "SAMPLE_HARDWARE",
    "SAMPLE_MODEL",
    "TINY_LLAMA_CONFIG",
    "DTYPES",
    "EngineUnavailableError",
    "StaticBatchPoint",
    "LocalEngine",
    "ProgressCallback",
    "count_parameters",
    "run_static_batches",
    "runs_frame",
]

ENGINE_SOURCE_FORMAT = "perfmodel-local-engine"
"""``source_format`` of every row the local engine produces."""
ENGINE_FRAMEWORK = "transformers"
"""``framework`` of every row: the engine is plain ``transformers`` ``generate``."""
ENGINE_INSTALL_HINT = "pip install perfmodel[engine]"

SAMPLE_HARDWARE = "cpu-x86-2vcpu"
"""Catalog key of the 2-vCPU x86 VM the bundled sample runs were measured on."""
SAMPLE_MODEL = "perfmodel-tiny-llama"
"""Catalog key of the bundled sample model (the config below, 12,587,904 parameters)."""

TINY_LLAMA_CONFIG: Mapping[str, int | bool] = {
    "hidden_size": 384,
    "num_hidden_layers": 6,
    "num_attention_heads": 6,
    "num_key_value_heads": 2,
    "head_dim": 64,
    "intermediate_size": 1024,
    "vocab_size": 4096,
    "tie_word_embeddings": False,
    "max_position_embeddings": 2048,
}
"""``LlamaConfig`` keyword arguments of :data:`SAMPLE_MODEL`; the catalog entry must match it."""

DTYPES: Mapping[str, str] = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}
"""Allowed torch dtypes and the ``weight_dtype`` name each is recorded under."""

# Prompt tokens are drawn above the special ids (Llama configs default to
# pad 0 / bos 1 / eos 2) so no prompt contains a control token.
_FIRST_PROMPT_TOKEN = 3

ProgressCallback = Callable[[int, int, Mapping[str, Any]], None]
"""``on_progress(done, total, row)``: called after each measured repeat."""


class EngineUnavailableError(PerfmodelError):
    """torch or transformers is not installed, so the local engine cannot run."""


def _require_engine() -> tuple[ModuleType, ModuleType]:
    """Import torch and transformers, or explain how to install them."""
    missing: list[str] = []
    mods: dict[str, ModuleType] = {}
    try:
        mods["torch"] = importlib.import_module("torch")
    except ImportError:
        missing.append("torch")
    if missing:
        # Importing transformers without torch would make it remember torch as
        # unavailable for the rest of the process; only look for it.
        try:
            found = importlib.util.find_spec("transformers") is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append("transformers")
    else:
        try:
            mods["transformers"] = importlib.import_module("transformers")
        except ImportError:
            missing.append("transformers")
    if missing:
        raise EngineUnavailableError(
            f"the local engine needs {' and '.join(missing)}, which {'is' if len(missing) == 1 else 'are'} "
            f"not installed; install the optional extra with `{ENGINE_INSTALL_HINT}` "
            "(for a CPU-only machine install a CPU build of torch first)."
        )
    return mods["torch"], mods["transformers"]


class StaticBatchPoint(BaseModel):
    """One static-batch configuration: ``batch_size`` prompts of ``input_len_tok`` tokens,
    each generating exactly ``output_len_tok`` tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    batch_size: int = Field(ge=1, le=65_536, description="sequences processed together")
    input_len_tok: int = Field(ge=1, le=1_048_576, description="prompt length of every sequence, tokens")
    output_len_tok: int = Field(ge=1, le=1_048_576, description="tokens generated by every sequence")


@dataclass(frozen=True)
class _Timing:
    """Clock readings of one ``generate`` call (seconds, ``perf_counter`` based)."""

    e2e_s: float
    ttft_s: float
    step_gaps_s: np.ndarray  # output_len - 1 gaps between successive decoding steps
    cpu_time_s: float


def count_parameters(model_config: Mapping[str, Any] | None = None) -> int:
    """Number of parameters of the Llama model built from ``model_config``.

    Parameters
    ----------
    model_config
        ``LlamaConfig`` keyword arguments; :data:`TINY_LLAMA_CONFIG` when omitted.

    Returns
    -------
    int
        Total parameter count (embeddings and LM head included).

    Raises
    ------
    EngineUnavailableError
        When torch or transformers is not installed.
    """
    torch, transformers = _require_engine()
    config = transformers.LlamaConfig(**dict(TINY_LLAMA_CONFIG if model_config is None else model_config))
    # On the meta device no weights are allocated or initialised: counting is instant.
    with torch.device("meta"):
        model = transformers.LlamaForCausalLM(config)
    return int(sum(p.numel() for p in model.parameters()))


class LocalEngine:
    """Run static batches of a random-weight Llama model in this process.

    ``__init__`` only stores settings; the model is built by :meth:`load` (or on
    the first :meth:`run`). Settings are checked when the engine loads.

    Parameters
    ----------
    model_config
        ``LlamaConfig`` keyword arguments; :data:`TINY_LLAMA_CONFIG` when omitted.
    model
        Canonical model id written to the ``model`` column.
    hardware
        Canonical hardware id written to the ``hardware`` column.
    num_threads
        torch intra-op threads while measuring. One by default: on a shared
        2-vCPU VM two threads under load were 10-20x slower than one.
    dtype
        One of :data:`DTYPES` (weights and KV cache).
    device
        torch device string (``"cpu"``; other devices are untested).
    seed
        Seeds the random weights and the random prompts.
    warmup_runs
        Unmeasured ``generate`` calls before the repeats of each point, with
        the point's batch and prompt shape.
    warmup_output_len_tok
        Output length of the warm-up calls (capped at the point's). ``None``
        (default): 8 tokens on a CPU, so warming up does not cost as much as a
        measurement; the point's full output length on an accelerator, where the
        first call that grows the KV cache to a new length pays the allocator
        (measured on an H200: a first repeat after an 8-token warm-up ran 2-4x
        slower than the next ones, at every batch size).

    Attributes
    ----------
    model_
        The loaded ``LlamaForCausalLM`` (``None`` before :meth:`load`).
    n_parameters_
        Its parameter count.
    """

    def __init__(self, *, model_config: Mapping[str, Any] | None = None, model: str = SAMPLE_MODEL,
                 hardware: str = SAMPLE_HARDWARE, num_threads: int = 1, dtype: str = "float32",
                 device: str = "cpu", seed: int = 0, warmup_runs: int = 1,
                 warmup_output_len_tok: int | None = None) -> None:
        self.model_config = dict(TINY_LLAMA_CONFIG if model_config is None else model_config)
        self.model = model
        self.hardware = hardware
        self.num_threads = num_threads
        self.dtype = dtype
        self.device = device
        self.seed = seed
        self.warmup_runs = warmup_runs
        self.warmup_output_len_tok = warmup_output_len_tok
        self.model_: Any = None
        self.n_parameters_: int | None = None
        self._torch: ModuleType | None = None
        self._transformers: ModuleType | None = None

    # ------------------------------------------------------------------ settings
    def _check_settings(self) -> None:
        problems: list[Problem] = []
        if not isinstance(self.num_threads, int) or self.num_threads < 1:
            problems.append(Problem(f"num_threads must be an integer >= 1, got {self.num_threads!r}",
                                    column="num_threads"))
        if self.dtype not in DTYPES:
            problems.append(Problem(f"dtype {self.dtype!r} is not one of " + ", ".join(DTYPES), column="dtype"))
        if not isinstance(self.warmup_runs, int) or self.warmup_runs < 0:
            problems.append(Problem(f"warmup_runs must be an integer >= 0, got {self.warmup_runs!r}",
                                    column="warmup_runs"))
        if self.warmup_output_len_tok is not None and (
                not isinstance(self.warmup_output_len_tok, int) or self.warmup_output_len_tok < 1):
            problems.append(Problem("warmup_output_len_tok must be an integer >= 1, got "
                                    f"{self.warmup_output_len_tok!r}", column="warmup_output_len_tok"))
        for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                    "vocab_size", "max_position_embeddings"):
            if key in self.model_config:
                v = self.model_config[key]
                if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                    problems.append(Problem(f"expected a positive integer, got {v!r}",
                                            column=f"model_config.{key}"))
        vocab = self.model_config.get("vocab_size", 32_000)
        if isinstance(vocab, int) and vocab <= _FIRST_PROMPT_TOKEN:
            problems.append(Problem(f"vocab_size must exceed {_FIRST_PROMPT_TOKEN} (ids 0-2 are special)",
                                    column="model_config.vocab_size"))
        if problems:
            raise ValidationError("the local engine settings are not valid:", problems)

    def _check_point(self, point: StaticBatchPoint) -> None:
        max_pos = int(self.model_config.get("max_position_embeddings", 2048))
        if point.input_len_tok + point.output_len_tok > max_pos:
            raise ValidationError("the static-batch point does not fit the model:", [Problem(
                f"input_len_tok + output_len_tok = {point.input_len_tok + point.output_len_tok} exceeds "
                f"the model's max_position_embeddings ({max_pos})", column="input_len_tok")])

    # ------------------------------------------------------------------ model
    def load(self) -> LocalEngine:
        """Build the random-weight model (idempotent).

        Returns
        -------
        LocalEngine
            ``self``, loaded.

        Raises
        ------
        EngineUnavailableError
            When torch or transformers is not installed.
        ValidationError
            When a setting is out of range (every problem listed).
        """
        if self.model_ is not None:
            return self
        self._check_settings()
        torch, transformers = _require_engine()
        self._torch, self._transformers = torch, transformers
        config = transformers.LlamaConfig(**self.model_config)
        torch.manual_seed(self.seed)
        if str(self.device).startswith("cpu"):
            model = transformers.LlamaForCausalLM(config)
        else:
            # Initialise the random weights on the accelerator itself: an 8 B model
            # built on the host first takes minutes and 32 GB of host memory.
            with torch.device(self.device):
                model = transformers.LlamaForCausalLM(config)
        model = model.to(device=self.device, dtype=getattr(torch, self.dtype)).eval()
        # No EOS: every sequence must generate exactly the requested length.
        model.generation_config.eos_token_id = None
        model.generation_config.pad_token_id = 0
        self.model_ = model
        self.n_parameters_ = int(sum(p.numel() for p in model.parameters()))
        return self

    def _warmup_len(self, point: StaticBatchPoint) -> int:
        """Output length of a warm-up call for ``point`` (see ``warmup_output_len_tok``)."""
        if self.warmup_output_len_tok is not None:
            return min(self.warmup_output_len_tok, point.output_len_tok)
        return min(8, point.output_len_tok) if str(self.device).startswith("cpu") else point.output_len_tok

    def _prompts(self, point: StaticBatchPoint) -> Any:
        torch = self._torch
        assert torch is not None
        gen = torch.Generator().manual_seed(self.seed * 1_000_003 + point.batch_size * 7919 + point.input_len_tok)
        vocab = int(self.model_.config.vocab_size)
        ids = torch.randint(_FIRST_PROMPT_TOKEN, vocab, (point.batch_size, point.input_len_tok), generator=gen)
        return ids.to(self.device)

    def _generate(self, input_ids: Any, output_len_tok: int) -> tuple[_Timing, int]:
        """One timed ``generate`` call; returns the timing and the tokens generated per sequence."""
        torch, transformers = self._torch, self._transformers
        assert torch is not None and transformers is not None

        class _StepClock(transformers.generation.streamers.BaseStreamer):  # type: ignore[misc, name-defined]
            # generate puts the prompt once, then each step's tokens right after
            # that step's forward pass and greedy pick.
            def __init__(self) -> None:
                self.stamps_s: list[float] = []

            def put(self, value: Any) -> None:
                self.stamps_s.append(time.perf_counter())

            def end(self) -> None:
                pass

        clock = _StepClock()
        attention_mask = torch.ones_like(input_ids)
        with torch.inference_mode():
            cpu0 = time.process_time()
            t0 = time.perf_counter()
            out = self.model_.generate(
                input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=output_len_tok,
                min_new_tokens=output_len_tok, do_sample=False, num_beams=1, pad_token_id=0,
                streamer=clock)
            t1 = time.perf_counter()
            cpu_s = time.process_time() - cpu0
        n_generated = int(out.shape[1] - input_ids.shape[1])
        stamps = np.asarray(clock.stamps_s, dtype=float)
        if len(stamps) != n_generated + 1:
            raise RuntimeError(f"expected {n_generated + 1} streamer calls, got {len(stamps)}: "
                               "the transformers generate loop changed")
        return _Timing(e2e_s=t1 - t0, ttft_s=float(stamps[1] - t0), step_gaps_s=np.diff(stamps[1:]),
                       cpu_time_s=cpu_s), n_generated

    # ------------------------------------------------------------------ measuring
    def measure(self, point: StaticBatchPoint | Mapping[str, int], *, repeats: int = 3,
                on_progress: ProgressCallback | None = None, progress_offset: int = 0,
                progress_total: int | None = None,
                on_warm: Callable[[], None] | None = None) -> list[dict[str, Any]]:
        """Warm up, then measure one static-batch point ``repeats`` times.

        Parameters
        ----------
        point
            The configuration (a :class:`StaticBatchPoint` or a mapping of its fields).
        repeats
            Measured ``generate`` calls (``repeat_idx`` 0 .. repeats-1).
        on_progress
            ``on_progress(done, total, row)`` after each repeat.
        progress_offset, progress_total
            Added to ``done`` and passed as ``total`` (default: ``repeats``), for
            a caller measuring several points with one progress bar.
        on_warm
            Called once after the warm-up calls, just before the first measured
            one (a backend starts its telemetry there, so warm-ups stay out of it).

        Returns
        -------
        list of dict
            One canonical-runs row per repeat (plus ``hw_``/``fw_`` extras).

        Raises
        ------
        ValidationError
            When the point or a setting is invalid.
        EngineUnavailableError
            When torch or transformers is not installed.
        """
        point = _as_point(point)
        if not isinstance(repeats, int) or repeats < 1:
            raise ValidationError("the local engine settings are not valid:",
                                  [Problem(f"repeats must be an integer >= 1, got {repeats!r}", column="repeats")])
        self.load()
        self._check_point(point)
        torch = self._torch
        assert torch is not None
        total = repeats if progress_total is None else progress_total
        previous_threads = torch.get_num_threads()
        torch.set_num_threads(self.num_threads)
        rows: list[dict[str, Any]] = []
        try:
            ids = self._prompts(point)
            for _ in range(self.warmup_runs):
                self._generate(ids, self._warmup_len(point))
            if on_warm is not None:
                on_warm()
            for r in range(repeats):
                tele = _Telemetry()
                started = pd.Timestamp.now(tz="UTC")
                timing, n_generated = self._generate(ids, point.output_len_tok)
                if n_generated != point.output_len_tok:
                    raise RuntimeError(f"generate produced {n_generated} tokens per sequence, "
                                       f"expected {point.output_len_tok}")
                row = self._row(point, timing, r, started, tele.finish(timing))
                rows.append(row)
                if on_progress is not None:
                    on_progress(progress_offset + r + 1, total, row)
        finally:
            torch.set_num_threads(previous_threads)
        return rows

    def run(self, points: Iterable[StaticBatchPoint | Mapping[str, int]], *, repeats: int = 3,
            on_progress: ProgressCallback | None = None) -> pd.DataFrame:
        """Measure every point and return a validated canonical runs table.

        Parameters
        ----------
        points
            Static-batch configurations, measured in the given order.
        repeats
            Measured repeats per point.
        on_progress
            ``on_progress(done, total, row)`` after each repeat; ``total`` counts
            every repeat of every point.

        Returns
        -------
        pandas.DataFrame
            Canonical columns in :data:`perfmodel.schema.COLUMN_NAMES` order, then
            the ``hw_``/``fw_`` extras; one row per repeat.

        Raises
        ------
        ValidationError
            When a point or setting is invalid (checked before anything runs).
        EngineUnavailableError
            When torch or transformers is not installed.
        """
        pts = [_as_point(p) for p in points]
        self.load()
        for p in pts:
            self._check_point(p)
        total = len(pts) * repeats
        rows: list[dict[str, Any]] = []
        for p in pts:
            rows += self.measure(p, repeats=repeats, on_progress=on_progress,
                                 progress_offset=len(rows), progress_total=total)
        return runs_frame(rows)

    def _row(self, point: StaticBatchPoint, t: _Timing, repeat_idx: int, started: pd.Timestamp,
             telemetry: Mapping[str, float]) -> dict[str, Any]:
        transformers = self._transformers
        assert transformers is not None
        b, n_in, n_out = point.batch_size, point.input_len_tok, point.output_len_tok
        decode_s = float(t.step_gaps_s.sum())
        gaps = t.step_gaps_s
        itl = {} if len(gaps) == 0 else {
            "itl_s": float(gaps.mean()),
            "itl_p50_s": float(np.percentile(gaps, 50)),
            "itl_p90_s": float(np.percentile(gaps, 90)),
            "itl_p99_s": float(np.percentile(gaps, 99)),
        }
        weight_dtype = DTYPES[self.dtype]
        return {
            "hardware": self.hardware,
            # The engine is told the catalog keys; writing them as the raw names keeps a
            # re-import (canonical CSV) resolving to the same entries.
            "hardware_raw": self.hardware,
            "device_count": 1,
            "tp_size": 1,
            "pp_size": 1,
            "framework": ENGINE_FRAMEWORK,
            "framework_version": str(transformers.__version__),
            "model": self.model,
            "model_raw": self.model,
            "weight_dtype": weight_dtype,
            "kv_cache_dtype": weight_dtype,
            "input_len_tok": float(n_in),
            "output_len_tok": float(n_out),
            "load_kind": "static_batch",
            "batch_size": float(b),
            "n_requests": b,
            "n_failed": 0,
            "output_throughput_tok_s": b * n_out / t.e2e_s,
            "total_throughput_tok_s": b * (n_in + n_out) / t.e2e_s,
            "request_throughput_rps": b / t.e2e_s,
            "throughput_basis": "output+total",
            # every sequence of a static batch starts and ends together
            "e2e_latency_s": t.e2e_s,
            "ttft_s": t.ttft_s,
            "tpot_s": decode_s / (n_out - 1) if n_out > 1 else math.nan,
            **itl,
            "repeat_idx": repeat_idx,
            "timestamp": started,
            "source_format": ENGINE_SOURCE_FORMAT,
            "fw_prefill_s": t.ttft_s,
            "fw_decode_s": decode_s,
            "fw_num_threads": float(self.num_threads),
            **telemetry,
        }


class _Telemetry:
    """Cheap host telemetry over one measurement (psutil when installed)."""

    def __init__(self) -> None:
        try:
            import psutil
        except ImportError:
            psutil = None
        self._psutil = psutil
        if psutil is not None:
            psutil.cpu_percent(interval=None)  # starts the system-wide CPU window

    def finish(self, t: _Timing) -> dict[str, float]:
        # Process CPU time over wall time shows whether this process got its
        # cores (about 100 x threads) or was crowded out by other work.
        out = {"hw_proc_cpu_pct": 100.0 * t.cpu_time_s / t.e2e_s if t.e2e_s > 0 else math.nan}
        if hasattr(os, "getloadavg"):
            out["hw_loadavg_1m"] = float(os.getloadavg()[0])
        ps = self._psutil
        if ps is not None:
            out["hw_cpu_util_pct"] = float(ps.cpu_percent(interval=None))
            out["hw_mem_used_pct"] = float(ps.virtual_memory().percent)
            out["hw_proc_rss_gb"] = float(ps.Process().memory_info().rss) / 1e9
        return out


def _as_point(point: StaticBatchPoint | Mapping[str, int]) -> StaticBatchPoint:
    if isinstance(point, StaticBatchPoint):
        return point
    try:
        return StaticBatchPoint(**point)
    except TypeError as exc:  # not a mapping
        raise ValidationError("a static-batch point is not valid:", [Problem(str(exc))]) from None
    except _PydanticValidationError as exc:
        raise ValidationError("a static-batch point is not valid:", [
            Problem(f"{e['msg']} (got {e.get('input')!r})", column=".".join(str(x) for x in e["loc"]))
            for e in exc.errors()]) from None


def runs_frame(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Validate engine rows into a canonical runs table.

    Parameters
    ----------
    rows
        Rows as returned by :meth:`LocalEngine.measure`.

    Returns
    -------
    pandas.DataFrame
        Every canonical column in :data:`perfmodel.schema.COLUMN_NAMES` order, then
        the ``fw_``/``hw_`` extras sorted by name.

    Raises
    ------
    ValidationError
        When a row breaks the schema (a bug in the engine, or hand-edited rows).
    """
    df = pd.DataFrame(list(rows))
    extras = sorted(c for c in df.columns if c not in COLUMN_NAMES)
    canonical = [c for c in COLUMN_NAMES if c in df.columns]
    return validate_runs(df[canonical + extras])


def run_static_batches(points: Iterable[StaticBatchPoint | Mapping[str, int]], *, repeats: int = 3,
                       on_progress: ProgressCallback | None = None, **engine_settings: Any) -> pd.DataFrame:
    """Measure static-batch points with a fresh :class:`LocalEngine`.

    Parameters
    ----------
    points
        Static-batch configurations (``batch_size``, ``input_len_tok``, ``output_len_tok``).
    repeats
        Measured repeats per point.
    on_progress
        ``on_progress(done, total, row)`` after each repeat.
    **engine_settings
        Keyword settings of :class:`LocalEngine` (``model_config``, ``num_threads``, ...).

    Returns
    -------
    pandas.DataFrame
        A validated canonical runs table, one row per repeat.

    Raises
    ------
    EngineUnavailableError
        When torch or transformers is not installed.
    ValidationError
        When a point or a setting is invalid.
    """
    return LocalEngine(**engine_settings).run(points, repeats=repeats, on_progress=on_progress)
