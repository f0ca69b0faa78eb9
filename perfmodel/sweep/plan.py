"""Sweep plans: what to measure, validated before anything runs.

A plan is a pydantic model (``extra="forbid"``: a misspelt option is an error,
not silently ignored) loaded from YAML/JSON, CLI flags or the app's form. It
expands into an ordered list of :class:`~perfmodel.sweep.backend.SweepPoint`,
estimates how long the sweep will take, and refuses nonsense (zero or negative
sizes, lengths beyond the engine's context, more than :data:`MAX_POINTS`
points without ``confirm_large``). Every problem is reported at once, naming
the option and its valid values.

Grids (``batch_sizes``, ``input_lens``, ``output_lens``) are lists of integers,
or a compact text form: ``"1,2,4"``, a geometric range ``"1:64:x2"`` (1, 2,
4, ..., 64) or an arithmetic range ``"128:512:+128"`` (128, 256, 384, 512).

Point order
-----------
For each (input length, output length) pair, in ascending order, the points
run in ascending batch size. With ``order="interleaved"`` (the default) the
repeats are the outer loop: repeat 0 of every batch size, then repeat 1, ...
Slow drift of the machine (thermal throttling, a neighbour's job on a shared
VM) then spreads over every batch size instead of biasing the last ones, and
a sweep stopped half-way already holds a complete curve. ``order="grouped"``
runs the repeats of one batch size back to back (cheaper warm-up on servers
that cache per shape; drift then shows as a slope between batch sizes).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic import ValidationError as _PydanticValidationError

from ..errors import PerfmodelError, Problem, ValidationError, problems_from_pydantic
from .backend import SweepPoint

__all__ = [
    "BACKENDS",
    "SERVER_TYPES",
    "LENGTH_CONTROLS",
    "DEFAULT_LENGTH_CONTROL",
    "ORDERS",
    "ENGINE_SIZES",
    "EngineSize",
    "MAX_POINTS",
    "SweepPlan",
    "PlanEstimate",
    "parse_grid",
    "load_plan",
    "plan_from_dict",
    "plan_from_text",
    "default_n_requests",
    "format_duration",
    "about_duration",
    "plan_overrides",
]

BACKENDS = ("local", "http")
"""``backend`` of a plan: the in-process local engine, or an OpenAI-compatible HTTP server."""
SERVER_TYPES = ("vllm", "sglang", "llama.cpp", "transformers", "tgi", "trtllm", "generic")
"""Servers whose way of forcing the output length is known (``server_type`` of an http plan and of
:class:`perfmodel.sweep.http_backend.HttpSettings`)."""

LENGTH_CONTROLS = ("ignore_eos", "min_tokens", "generation_config", "none")
"""How a request forces exactly ``max_tokens`` generated tokens.

``ignore_eos``: ``"ignore_eos": true``; ``min_tokens``: ``"min_tokens": N``;
``generation_config``: ``"generation_config": "{\\"min_new_tokens\\": N}"`` (a JSON
string: ``transformers serve``); ``none``: only ``max_tokens`` (the server may stop
early at EOS; ``fw_output_short_frac`` shows how often it did).
"""

DEFAULT_LENGTH_CONTROL: Mapping[str, str] = {
    "vllm": "ignore_eos",
    "sglang": "ignore_eos",
    "llama.cpp": "ignore_eos",
    "trtllm": "ignore_eos",
    "transformers": "generation_config",
    # TGI's OpenAI route has neither ignore_eos nor min_tokens.
    "tgi": "none",
    # An unknown server may reject unknown fields (HTTP 422): send none unless told.
    "generic": "none",
}
"""Length control used for each server type unless ``length_control`` is set."""

ORDERS = ("interleaved", "grouped")
"""``order`` of a plan (see the module docstring)."""
MAX_POINTS = 10_000
"""Plans with more points than this need ``confirm_large: true``."""
MAX_GRID_VALUES = 4096
"""Longest single grid: a geometric or arithmetic range beyond this is a typo."""
MAX_LEN_TOK = 1_048_576
MAX_BATCH = 65_536


@dataclass(frozen=True)
class EngineSize:
    """A named local-engine model: ``LlamaConfig`` keyword arguments and the model id its rows carry."""

    model: str
    config: Mapping[str, int | bool]
    description: str


def _llama(hidden: int, layers: int, heads: int, kv_heads: int, inter: int, vocab: int,
           max_pos: int) -> dict[str, int | bool]:
    return {"hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": heads,
            "num_key_value_heads": kv_heads, "head_dim": hidden // heads, "intermediate_size": inter,
            "vocab_size": vocab, "tie_word_embeddings": False, "max_position_embeddings": max_pos}


# "tiny" must equal local_engine.TINY_LLAMA_CONFIG (the catalog's perfmodel-tiny-llama); the
# larger ones follow published Llama shapes so results are comparable with real models.
ENGINE_SIZES: Mapping[str, EngineSize] = {
    "micro": EngineSize("perfmodel-micro-llama", _llama(64, 2, 4, 2, 128, 256, 512),
                        "about 0.1 M parameters: tests and smoke runs (seconds on one CPU core)"),
    "tiny": EngineSize("perfmodel-tiny-llama", _llama(384, 6, 6, 2, 1024, 4096, 2048),
                       "12.6 M parameters: the bundled CPU sample runs"),
    "small": EngineSize("perfmodel-small-llama", _llama(768, 12, 12, 4, 2048, 32000, 4096),
                        "about 0.16 B parameters: a CPU saturating in minutes"),
    "medium": EngineSize("perfmodel-medium-llama", _llama(2048, 16, 32, 8, 8192, 128256, 8192),
                         "about 1.2 B parameters, Llama-3.2-1B shape: a GPU or a patient CPU"),
    "large": EngineSize("perfmodel-large-llama", _llama(4096, 32, 32, 8, 14336, 128256, 8192),
                        "about 8 B parameters, Llama-3-8B shape: a GPU with 24 GB or more"),
}

# Rough cost model for the estimate before a sweep starts (replaced by the measured
# pace as soon as points finish): per generated step a fixed framework overhead
# plus the matmul work at a modest sustained rate.
_LOCAL_STEP_OVERHEAD_S = 1e-2
_LOCAL_CALL_OVERHEAD_S = 0.1
_LOCAL_FLOP_S = 2e10
# On an accelerator (measured with transformers' eager generate on an H200, 2026-11-29:
# about 21 ms per decoding step for 32 layers, 11 ms for 16) the per-step Python and
# launch overhead grows with depth; matmuls run at about half the catalog peak.
_ACCEL_STEP_OVERHEAD_S_PER_LAYER = 7e-4
_ACCEL_PEAK_FRACTION = 0.5
_ACCEL_FALLBACK_FLOP_S = 1e14
_HTTP_TOKEN_S = 0.02
# Starting the local engine before the first point: the sweep process imports torch and
# transformers and builds the random-weight model (measured on the 2-vCPU VM, 2026-12-02:
# about 10 s before the first model, whatever its size, then 3.4 s for the 125 M "small"
# and 47 s for the 1.5 B "medium" model on a CPU, about 3e-8 s per parameter). On an
# accelerator the weights are initialised on the device itself, in about a second.
_LOCAL_START_S = 10.0
_LOCAL_INIT_S_PER_PARAM = 3e-8
_ACCEL_INIT_S = 1.0
_HTTP_PREFILL_TOK_S = 5000.0

_GEOMETRIC = re.compile(r"^\s*(\d+)\s*:\s*(\d+)\s*:\s*[x*]\s*(\d+(?:\.\d+)?)\s*$")
_ARITHMETIC = re.compile(r"^\s*(\d+)\s*:\s*(\d+)\s*:\s*\+?\s*(\d+)\s*$")


def parse_grid(value: Any, *, option: str = "grid") -> list[int]:
    """Expand a grid given as integers or text into sorted distinct integers.

    Parameters
    ----------
    value
        A list of integers, one integer, ``"1,2,4"``, ``"1:64:x2"`` (geometric,
        factor > 1) or ``"128:512:+128"`` (arithmetic); list items may be such
        strings too.
    option
        The option's name, for messages.

    Returns
    -------
    list of int
        Sorted, without duplicates (may contain zero or negatives: the plan checks bounds).

    Raises
    ------
    ValidationError
        Text that is none of these forms, a factor <= 1, a step <= 0, or too many values.
    """
    items: list[Any] = list(value) if isinstance(value, list | tuple) else [value]
    out: list[int] = []
    for item in items:
        if isinstance(item, bool):
            raise ValidationError(f"{option}: expected integers", [Problem(f"got {item!r}", column=option)])
        if isinstance(item, int):
            out.append(item)
            continue
        if isinstance(item, float) and item.is_integer():
            out.append(int(item))
            continue
        if not isinstance(item, str):
            raise ValidationError(f"{option}: expected integers", [Problem(
                f"got {item!r}; write a list of integers, '1,2,4', '1:64:x2' or '128:512:+128'", column=option)])
        for part in (p for p in item.split(",") if p.strip()):
            out += _parse_range(part, option)
    if len(out) > MAX_GRID_VALUES:
        raise ValidationError(f"{option}: too many values", [Problem(
            f"{len(out)} values; at most {MAX_GRID_VALUES} per grid", column=option)])
    return sorted(set(out))


def _parse_range(part: str, option: str) -> list[int]:
    text = part.strip()
    if re.fullmatch(r"-?\d+", text):
        return [int(text)]
    if m := _GEOMETRIC.match(text):
        start, stop, factor = int(m[1]), int(m[2]), float(m[3])
        if factor <= 1 or start < 1 or stop < start:
            raise ValidationError(f"{option}: bad geometric range", [Problem(
                f"{text!r}: needs 1 <= start <= stop and factor > 1 (e.g. '1:64:x2')", column=option)])
        vals: list[int] = []
        v = float(start)
        while v <= stop * (1 + 1e-9) and len(vals) <= MAX_GRID_VALUES:
            vals.append(int(round(v)))
            v *= factor
        return vals
    if m := _ARITHMETIC.match(text):
        start, stop, step = int(m[1]), int(m[2]), int(m[3])
        if step <= 0 or stop < start:
            raise ValidationError(f"{option}: bad range", [Problem(
                f"{text!r}: needs start <= stop and a step > 0 (e.g. '128:512:+128')", column=option)])
        if (stop - start) // step + 1 > MAX_GRID_VALUES:
            raise ValidationError(f"{option}: too many values", [Problem(
                f"{text!r} expands to more than {MAX_GRID_VALUES} values", column=option)])
        return list(range(start, stop + 1, step))
    raise ValidationError(f"{option}: cannot read the grid", [Problem(
        f"{text!r} is not an integer, 'START:STOP:xFACTOR' or 'START:STOP:+STEP'", column=option)])


def default_n_requests(concurrency: int) -> int:
    """Requests measured at one HTTP point when the plan does not say: enough to fill the loop 4 times.

    Parameters
    ----------
    concurrency
        The point's concurrency level.

    Returns
    -------
    int
    """
    return max(4 * concurrency, 8)


class SweepPlan(BaseModel):
    """A validated sweep plan (see the module docstring for grids and order)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str | None = Field(None, description="dataset name (default: derived from backend, model and date)")
    backend: Literal["local", "http"] = Field("local", description="local engine or OpenAI-compatible server")
    target: str | None = Field(None, description="HTTP: base URL of the server, e.g. http://127.0.0.1:8000")
    model: str | None = Field(None, description="model: catalog name (local: from engine_size) or served name")
    hardware: str = Field("cpu-x86-2vcpu", description="hardware label, resolved through the catalog")
    framework: str | None = Field(None, description="serving framework of the server (vllm, sglang, ...)")
    server_type: str | None = Field(None, description="HTTP: how to force the output length (see the backend)")
    backend_options: dict[str, Any] = Field(default_factory=dict,
                                            description="extra keyword settings passed to the backend")
    engine_size: str = Field("tiny", description="local: one of ENGINE_SIZES")
    engine_threads: int = Field(1, ge=1, le=1024, description="local: torch threads")
    engine_dtype: Literal["float32", "bfloat16", "float16"] = Field("float32", description="local: dtype")
    engine_device: str = Field("cpu", description="local: torch device")
    batch_sizes: list[int] = Field(description="static batch sizes (local) or concurrency levels (http)")
    input_lens: list[int] = Field(description="prompt lengths, tokens")
    output_lens: list[int] = Field(description="generated lengths, tokens")
    repeats: int = Field(5, ge=1, le=1000, description="measurements per configuration")
    warmup: int = Field(1, ge=0, le=1000, description="warm-up calls/requests before each point")
    cold_start: bool = Field(False, description="no warm-up at all: measure start-up effects")
    timeout_s: float = Field(600.0, gt=0, le=86_400, description="budget of one point, seconds")
    n_requests: int | None = Field(None, ge=1, le=1_000_000,
                                   description="HTTP: requests per point (default max(4 x concurrency, 8))")
    retries: int = Field(1, ge=0, le=10, description="extra attempts of a failed point")
    order: Literal["interleaved", "grouped"] = Field("interleaved", description="see ORDERS")
    seed: int = Field(0, ge=0, description="seed of weights and prompts")
    confirm_large: bool = Field(False, description=f"allow more than {MAX_POINTS} points")

    @field_validator("batch_sizes", "input_lens", "output_lens", mode="before")
    @classmethod
    def _grid(cls, value: Any, info: Any) -> list[int]:
        try:
            return parse_grid(value, option=info.field_name)
        except ValidationError as exc:
            # pydantic collects a ValueError with the other field errors.
            raise ValueError("; ".join(p.message for p in exc.problems)) from None

    # ------------------------------------------------------------------ derived
    @property
    def load_kind(self) -> str:
        """``static_batch`` for the local engine, ``concurrency`` for HTTP."""
        return "static_batch" if self.backend == "local" else "concurrency"

    @property
    def n_points(self) -> int:
        """Planned points (configurations x repeats)."""
        return len(self.batch_sizes) * len(self.input_lens) * len(self.output_lens) * self.repeats

    @property
    def effective_warmup(self) -> int:
        """Warm-up calls per point (0 for a cold start)."""
        return 0 if self.cold_start else self.warmup

    def model_name(self) -> str:
        """The model the rows will name: the plan's, else the engine size's (local), else ``"unknown"``."""
        if self.model:
            return self.model
        if self.backend == "local" and self.engine_size in ENGINE_SIZES:
            return ENGINE_SIZES[self.engine_size].model
        return "unknown"

    def dataset_name(self) -> str:
        """The dataset name (``name``, else ``sweep <backend> <model>``; the store makes it unique)."""
        if self.name and self.name.strip():
            return self.name.strip()
        return f"sweep {self.backend} {self.model_name()}"

    def points(self) -> list[SweepPoint]:
        """Every planned point, in run order (see the module docstring).

        Returns
        -------
        list of SweepPoint
        """
        out: list[SweepPoint] = []
        kind = self.load_kind
        for n_in in self.input_lens:
            for n_out in self.output_lens:
                pairs = ([(r, b) for r in range(self.repeats) for b in self.batch_sizes]
                         if self.order == "interleaved"
                         else [(r, b) for b in self.batch_sizes for r in range(self.repeats)])
                for r, b in pairs:
                    n_req = None
                    if kind == "concurrency":
                        n_req = self.n_requests if self.n_requests is not None else default_n_requests(b)
                    out.append(SweepPoint(
                        load_kind=kind, batch_size=b, input_len_tok=n_in, output_len_tok=n_out, repeat_idx=r,
                        n_requests=n_req, warmup=self.effective_warmup, timeout_s=self.timeout_s,
                        key=f"b{b}-i{n_in}-o{n_out}-r{r}"))
        return out

    def estimate(self) -> PlanEstimate:
        """A rough duration estimate before the sweep starts.

        Returns
        -------
        PlanEstimate
        """
        return _estimate(self)

    def to_json(self) -> str:
        """The plan as canonical JSON (stored with the sweep; :func:`plan_from_text` reads it back).

        Returns
        -------
        str
        """
        return json.dumps(self.model_dump(mode="json"), sort_keys=True)

    def check(self) -> SweepPlan:
        """Cross-option checks pydantic cannot express; every problem listed.

        Returns
        -------
        SweepPlan
            ``self``.

        Raises
        ------
        ValidationError
            Zero/negative sizes, unknown engine size, a missing target, lengths
            beyond the engine's context, too many points without ``confirm_large``.
        """
        problems: list[Problem] = []
        for option, values, low, high in (("batch_sizes", self.batch_sizes, 1, MAX_BATCH),
                                          ("input_lens", self.input_lens, 1, MAX_LEN_TOK),
                                          ("output_lens", self.output_lens, 1, MAX_LEN_TOK)):
            if not values:
                problems.append(Problem("needs at least one value", column=option))
            bad = [v for v in values if v < low or v > high]
            if bad:
                problems.append(Problem(f"{', '.join(map(str, bad))} out of range: every value must be an integer "
                                        f"from {low} to {high:,}", column=option))
        if self.backend == "local":
            if self.engine_size not in ENGINE_SIZES:
                problems.append(Problem(f"{self.engine_size!r} is not an engine size; valid sizes: "
                                        + ", ".join(ENGINE_SIZES), column="engine_size"))
            else:
                max_pos = int(ENGINE_SIZES[self.engine_size].config["max_position_embeddings"])
                if self.input_lens and self.output_lens and max(self.input_lens) + max(self.output_lens) > max_pos:
                    problems.append(Problem(
                        f"input + output length up to {max(self.input_lens) + max(self.output_lens)} tokens "
                        f"exceeds the {self.engine_size!r} engine's context of {max_pos} tokens",
                        column="input_lens"))
        else:
            if not self.target:
                problems.append(Problem("the http backend needs the server's http(s):// URL (e.g. "
                                        "http://127.0.0.1:8000); none was given", column="target"))
            elif not re.match(r"^https?://\S+$", self.target):
                problems.append(Problem(f"the http backend needs the server's http(s):// URL, got {self.target!r}",
                                        column="target"))
        if self.n_points > MAX_POINTS and not self.confirm_large:
            problems.append(Problem(
                f"{self.n_points:,} points ({len(self.batch_sizes)} batch sizes x {len(self.input_lens)} input x "
                f"{len(self.output_lens)} output lengths x {self.repeats} repeats) exceeds {MAX_POINTS:,}; "
                "set confirm_large: true (CLI --yes) if you mean it", column="confirm_large"))
        if problems:
            raise ValidationError("the sweep plan is not valid:", problems)
        return self


@dataclass(frozen=True)
class PlanEstimate:
    """How long a plan should take, roughly.

    Attributes
    ----------
    n_points
        Planned points.
    total_s
        Estimated seconds for the whole sweep (warm-up and start-up included).
    per_point_s
        Mean estimated seconds per point (start-up excluded).
    basis
        How the figure was obtained, in words.
    """

    n_points: int
    total_s: float
    per_point_s: float
    basis: str
    startup_s: float = 0.0

    def text(self) -> str:
        """``"24 points, about 3 min"``."""
        return f"{self.n_points:,} points, {about_duration(self.total_s)}"


def about_duration(seconds: float) -> str:
    """An estimate in words: ``"about 3 min"``, but ``"under a second"`` (the log had read "(about under a
    second)")."""
    d = format_duration(seconds)
    return d if d in ("under a second", "?") else f"about {d}"


def format_duration(seconds: float) -> str:
    """``"45 s"``, ``"3 min"``, ``"2.5 h"``, ``"under a second"``; ``"?"`` when not finite.

    Parameters
    ----------
    seconds
        A duration.

    Returns
    -------
    str
    """
    if not math.isfinite(seconds):
        return "?"
    if seconds < 0.5:  # "about 0 s" read as "instant" or as a broken estimate
        return "under a second"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _accelerator_flop_s(hardware: str, dtype: str) -> float:
    """Sustained matmul rate assumed for ``hardware`` (catalog peak for the dtype x a fraction)."""
    from ..catalog import resolve_hardware  # the catalog loads YAML: only when estimating

    try:
        peak = resolve_hardware(hardware).peak_tflops
    except PerfmodelError:
        return _ACCEL_FALLBACK_FLOP_S
    short = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}.get(dtype, dtype)
    tflops = (peak or {}).get(short)
    return float(tflops) * 1e12 * _ACCEL_PEAK_FRACTION if tflops else _ACCEL_FALLBACK_FLOP_S


def _params(config: Mapping[str, int | bool]) -> float:
    h, n_layers = int(config["hidden_size"]), int(config["num_hidden_layers"])
    heads, kv = int(config["num_attention_heads"]), int(config["num_key_value_heads"])
    hd, inter, vocab = int(config["head_dim"]), int(config["intermediate_size"]), int(config["vocab_size"])
    per_layer = 2 * h * heads * hd + 2 * h * kv * hd + 3 * h * inter
    return float(n_layers * per_layer + 2 * vocab * h)


def _estimate(plan: SweepPlan) -> PlanEstimate:
    total_s = startup_s = 0.0
    warm = plan.effective_warmup
    if plan.backend == "local" and plan.engine_size in ENGINE_SIZES:
        config = ENGINE_SIZES[plan.engine_size].config
        n_params = _params(config)
        if plan.engine_device.startswith("cpu"):
            step_s, flop_s = _LOCAL_STEP_OVERHEAD_S, _LOCAL_FLOP_S * max(1, plan.engine_threads)
            warm_len = 8  # LocalEngine warms up with 8 tokens on a CPU
            startup_s = _LOCAL_START_S + _LOCAL_INIT_S_PER_PARAM * n_params
            basis = (f"local engine cost model: {format_duration(startup_s)} to start the engine + "
                     f"{_LOCAL_CALL_OVERHEAD_S * 1e3:.0f} ms per call + "
                     f"{_LOCAL_STEP_OVERHEAD_S * 1e3:.0f} ms per step + "
                     f"{_LOCAL_FLOP_S / 1e9:.0f} GFLOP/s per thread")
        else:
            step_s = _ACCEL_STEP_OVERHEAD_S_PER_LAYER * int(config["num_hidden_layers"])
            flop_s = _accelerator_flop_s(plan.hardware, plan.engine_dtype)
            warm_len = None  # full output length on an accelerator (LocalEngine)
            startup_s = _LOCAL_START_S + _ACCEL_INIT_S
            basis = (f"accelerator cost model: {format_duration(startup_s)} to start the engine + "
                     f"{step_s * 1e3:.0f} ms per step + matmuls at "
                     f"{flop_s / 1e12:.0f} TFLOP/s ({plan.hardware})")
        for p in plan.points():
            def gen_s(n_out: int, p: SweepPoint = p) -> float:
                flops = 2.0 * n_params * p.batch_size * (p.input_len_tok + n_out)
                return _LOCAL_CALL_OVERHEAD_S + n_out * step_s + flops / flop_s
            n_warm = p.output_len_tok if warm_len is None else min(warm_len, p.output_len_tok)
            total_s += gen_s(p.output_len_tok) + warm * gen_s(n_warm)
    else:
        for p in plan.points():
            n_req = p.n_requests or default_n_requests(p.batch_size)
            waves = math.ceil((n_req + warm) / p.batch_size)
            total_s += waves * (p.output_len_tok * _HTTP_TOKEN_S + p.input_len_tok / _HTTP_PREFILL_TOK_S)
        basis = f"HTTP guess: {_HTTP_TOKEN_S * 1e3:.0f} ms per generated token per request wave"
    n = plan.n_points
    return PlanEstimate(n_points=n, total_s=startup_s + total_s, per_point_s=total_s / n if n else 0.0,
                        basis=basis, startup_s=startup_s)


def _required(loc: str) -> str:
    return "required: " + (SweepPlan.model_fields[loc].description or "") if loc in SweepPlan.model_fields \
        else "required"


def _problems_from_pydantic(exc: _PydanticValidationError, source: str | None) -> list[Problem]:
    return problems_from_pydantic(exc, source, missing=_required,
                                  extra="not a plan option; valid options: " + ", ".join(SweepPlan.model_fields))


def plan_from_dict(data: Mapping[str, Any], *, source: str | None = None) -> SweepPlan:
    """Validate a plan given as a mapping (YAML/JSON content, CLI flags, form values).

    Parameters
    ----------
    data
        Plan options (see :class:`SweepPlan`).
    source
        File name for messages.

    Returns
    -------
    SweepPlan
        Validated, cross-checked (:meth:`SweepPlan.check`).

    Raises
    ------
    ValidationError
        Every problem, each naming its option (and the valid values where there is a choice).
    """
    if not isinstance(data, Mapping):
        raise ValidationError("the sweep plan is not valid:", [Problem(
            f"expected a mapping of plan options, got {type(data).__name__}", file=source)])
    try:
        plan = SweepPlan.model_validate(dict(data))
    except _PydanticValidationError as exc:
        problems = _problems_from_pydantic(exc, source)
        problems += _cross_problems_of_valid_part(data, {str(e["loc"][0]) for e in exc.errors() if e["loc"]},
                                                  {p.column for p in problems}, source)
        raise ValidationError("the sweep plan is not valid:", problems) from None
    try:
        return plan.check()
    except ValidationError as exc:
        if source is None:
            raise
        raise ValidationError(exc.headline, [Problem(p.message, file=source, column=p.column)
                                             for p in exc.problems]) from None


def _cross_problems_of_valid_part(data: Mapping[str, Any], failed: set[str], reported: set[str | None],
                                  source: str | None) -> list[Problem]:
    # So that one message lists every problem: check the options that did parse
    # (placeholders stand in for the grids that did not).
    part = {k: v for k, v in data.items() if k in SweepPlan.model_fields and k not in failed}
    for grid in ("batch_sizes", "input_lens", "output_lens"):
        part.setdefault(grid, [1])
    try:
        SweepPlan.model_validate(part).check()
    except _PydanticValidationError:
        return []
    except ValidationError as exc:
        return [Problem(p.message, file=source, column=p.column) for p in exc.problems
                if p.column not in reported]
    return []


def plan_from_text(text: str, *, source: str | None = None) -> SweepPlan:
    """Read a plan from YAML or JSON text (JSON is YAML).

    Parameters
    ----------
    text
        The document.
    source
        File name for messages.

    Returns
    -------
    SweepPlan

    Raises
    ------
    ValidationError
        Unreadable YAML or an invalid plan.
    """
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValidationError("the sweep plan is not valid:", [Problem(
            f"not valid YAML/JSON: {exc}".replace("\n", " "), file=source)]) from None
    return plan_from_dict(data if data is not None else {}, source=source)


def load_plan(path: str | Path) -> SweepPlan:
    """Read a plan file (``.yaml``, ``.yml`` or ``.json``).

    Parameters
    ----------
    path
        The file.

    Returns
    -------
    SweepPlan

    Raises
    ------
    PerfmodelError
        The file cannot be read.
    ValidationError
        The plan is invalid.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PerfmodelError(f"{p}: cannot read the sweep plan ({exc})") from None
    return plan_from_text(text, source=p.name)


def plan_overrides(plan: SweepPlan | None, overrides: Mapping[str, Any]) -> SweepPlan:
    """A plan with some options replaced (CLI flags over a plan file).

    Parameters
    ----------
    plan
        The base plan, or ``None`` to build one from ``overrides`` alone.
    overrides
        Options to set; ``None`` values are ignored.

    Returns
    -------
    SweepPlan

    Raises
    ------
    ValidationError
        The result is invalid.
    """
    base: dict[str, Any] = plan.model_dump() if plan is not None else {}
    base.update({k: v for k, v in overrides.items() if v is not None})
    return plan_from_dict(base)
