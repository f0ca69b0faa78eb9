"""Capacity planning: how many of which device, at what batch, to serve a workload within SLOs, at what cost.

Inputs are one validated :class:`PlanInputs` (a pydantic model, ``extra="forbid"``):
the workload (a request rate or an output token rate; input and output lengths
fixed or as a histogram), the SLOs (TTFT, TPOT and/or end-to-end latency at a
percentile), the candidates (hardware, models, device counts and frameworks to
consider; empty lists mean "every one present in the data"), prices (catalog
defaults per device-hour, overridable, with a currency) and the headroom.

Method, per candidate configuration (hardware, model, framework, devices per replica):

1. **Throughput curve.** The measured points at the workload's lengths (the
   nearest measured lengths when none match exactly, said in ``note``) are
   fitted with :func:`perfmodel.curves.fit_curve`; the central throughput at a
   batch is the fitted curve, its low/high values the bootstrap band at
   ``level``. A failed fit falls back to the measured means with the range of
   the repeats as the band. With a predictor (the ``predictor`` given to
   :func:`plan`, or with ``predict`` set one trained on ``runs``), a candidate
   measured only at other lengths is instead predicted at the workload's
   lengths, at the batches measured at the nearest lengths and every power of two 1..256: roofline-gbm
   anchors such a query on the candidate's own measurements at the other
   lengths, so the answer keeps the configuration's measured efficiency and
   takes the length dependence from the roofline and the learned correction.
   A candidate without measurements is predicted by the predictor (its band
   and confidence), else it is infeasible ("no data"). Predicted candidates
   take the predictor's TTFT where it has a TTFT model (basis ``predicted``).
   A predicted candidate the predictor says cannot run
   (:func:`perfmodel.models.base.cannot_run_reasons`: its weights, read at the
   dtype the predictor assumes, exceed the devices' memory) is infeasible with
   that reason; batches it gives no positive finite throughput are left out.
2. **Operating points.** Every measured batch size (powers of two 1..256 for
   predicted candidates) is an operating point. Memory must fit: weights plus the
   KV cache of ``batch`` sequences of ``input + output`` tokens must not exceed
   ``memory_fraction`` x memory x devices.
3. **Latency** comes from the measured columns at that batch where present
   (``e2e_latency_<pct>_s``, ``ttft_<pct>_s``, ``tpot_<pct>_s``; the mean when
   the percentile is not recorded, said in ``latency_basis``). Otherwise it is
   derived from throughput and batch: ``e2e = batch * output_len / throughput``,
   ``tpot = batch / throughput`` (one token per sequence per step, prefill
   amortised in), labelled ``derived``. TTFT cannot be derived from throughput;
   a TTFT SLO on a candidate without measured TTFT is reported as not checked.
   At a batch where several runs measured a latency, its pessimistic and
   optimistic values are the slowest and the fastest of those repeats (the
   throughput band describes the fit's throughput, not a latency's run-to-run
   spread). Elsewhere (derived, predicted, or measured by one run) they scale
   with the throughput band (``latency * central / low`` and
   ``latency * central / high``). ``latency_band`` says which.
   With a predictor, a candidate measured at the workload's lengths is also
   predicted at the powers of two beyond its largest measured batch (up to 256),
   as unmeasured candidates are, so that every candidate is sized over the same
   batches.
4. **Best operating point**: the batch with the highest throughput per device
   among those that fit in memory and meet every SLO at the central estimate,
   and across the band where any batch does (a robust batch first). A
   candidate whose SLOs hold only at the optimistic end of the band gets status
   ``optimistic_only`` and says so; one that meets them centrally but not at the
   pessimistic end has ``robust = False``. Where a robust batch is planned and a
   faster one that is not robust needs materially fewer devices
   (:data:`CHEAPER_FRACTION`), the row's ``cheaper_*`` columns, its note and the
   summary name that batch, its devices and why it is not robust.
5. **Sizing**: ``replicas = ceil(demand_output_tok_s * (1 + headroom) /
   throughput)``, ``devices = replicas * device_count``; ``cost_per_hour = devices
   * price``; cost per million tokens is that hourly cost over the tokens served
   per hour at the demanded rate (output tokens, and input + output tokens).
   Energy per output token is measured power (``power_w``, taken as the
   replica's total) over throughput, else ``TDP x devices`` over throughput,
   labelled ``tdp`` (an upper bound: devices seldom draw TDP while decoding).
   Every sized figure has ``_lo`` / ``_hi`` values from the throughput band.

Candidates that cannot serve the workload (no data, memory does not fit even at
batch 1, no batch meets the SLOs even optimistically) are listed in
:attr:`PlanResult.infeasible` with the reason.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic import ValidationError as _PydanticValidationError

from .curve_tables import compact_number, compact_seconds, in_seconds, significant
from .errors import PerfmodelError, Problem, UnknownNameError, ValidationError, problems_from_pydantic

__all__ = [
    "LengthBin",
    "at_offered_load",
    "Workload",
    "SLO",
    "PlanInputs",
    "PlanResult",
    "SETTING_COLUMNS",
    "latency_basis_notes",
    "offline_notes",
    "rate_runs_in_flight",
    "undelivered_rates",
    "RATE_DELIVERED_SHARE",
    "lengths_caveat",
    "PERCENTILES",
    "CANDIDATE_KEYS",
    "PREDICTED_BATCHES",
    "LATENCY_BANDS",
    "MIN_LATENCY_REPEATS",
    "CHEAPER_FRACTION",
    "plan",
    "plan_inputs_from_dict",
    "load_plan_inputs",
    "memory_need_gb",
    "unmatched_candidates",
]

PERCENTILES = ("mean", "p50", "p90", "p99")
"""Which statistic of a latency the SLOs constrain."""
CANDIDATE_KEYS = ("hardware", "model", "framework", "device_count")
"""Columns identifying one candidate deployment (one replica)."""
PREDICTED_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
"""Operating points tried for a candidate that has no measurements (predictor only)."""
STATUSES = ("ok", "optimistic_only")

_CFG = ConfigDict(extra="forbid", frozen=True)


class LengthBin(BaseModel):
    """One bin of a length histogram."""

    model_config = _CFG
    input_len_tok: float = Field(gt=0, description="input (prompt) tokens per request")
    output_len_tok: float = Field(gt=0, description="output tokens per request")
    weight: float = Field(gt=0, description="share of requests (normalised over the bins)")


class Workload(BaseModel):
    """The traffic to serve: a rate and the request lengths."""

    model_config = _CFG
    request_rate_rps: float | None = Field(None, gt=0, description="requests per second to serve")
    output_tok_s: float | None = Field(None, gt=0, description="output tokens per second to serve "
                                                                "(instead of request_rate_rps)")
    input_len_tok: float | None = Field(None, gt=0, description="fixed input length (tokens)")
    output_len_tok: float | None = Field(None, gt=0, description="fixed output length (tokens)")
    lengths: list[LengthBin] | None = Field(None, description="length histogram (instead of fixed lengths)")

    @model_validator(mode="after")
    def _one_of_each(self) -> Workload:
        if (self.request_rate_rps is None) == (self.output_tok_s is None):
            raise ValueError("give exactly one of request_rate_rps and output_tok_s")
        fixed = self.input_len_tok is not None or self.output_len_tok is not None
        if fixed and self.lengths:
            raise ValueError("give either input_len_tok/output_len_tok or a lengths histogram, not both")
        if not self.lengths and (self.input_len_tok is None or self.output_len_tok is None):
            raise ValueError("give both input_len_tok and output_len_tok (or a lengths histogram)")
        return self

    @property
    def mean_lengths(self) -> tuple[float, float]:
        """Request-weighted mean (input, output) tokens; a histogram is sized on its means."""
        if not self.lengths:
            assert self.input_len_tok is not None and self.output_len_tok is not None
            return float(self.input_len_tok), float(self.output_len_tok)
        w = np.array([b.weight for b in self.lengths], dtype=float)
        w = w / w.sum()
        return (float(np.dot(w, [b.input_len_tok for b in self.lengths])),
                float(np.dot(w, [b.output_len_tok for b in self.lengths])))

    @property
    def max_context_tok(self) -> float:
        """Longest input + output of any request: what the KV cache must hold per sequence."""
        if not self.lengths:
            i, o = self.mean_lengths
            return i + o
        return max(b.input_len_tok + b.output_len_tok for b in self.lengths)

    @property
    def demand_output_tok_s(self) -> float:
        """Output tokens per second to serve."""
        if self.output_tok_s is not None:
            return float(self.output_tok_s)
        assert self.request_rate_rps is not None
        return float(self.request_rate_rps) * self.mean_lengths[1]

    @property
    def demand_total_tok_s(self) -> float:
        """Input + output tokens per second to serve."""
        i, o = self.mean_lengths
        return self.demand_output_tok_s * (i + o) / o

    @property
    def demand_rps(self) -> float:
        """Requests per second to serve."""
        return self.demand_output_tok_s / self.mean_lengths[1]


class SLO(BaseModel):
    """Latency targets; every one given must hold. None = no target."""

    model_config = _CFG
    ttft_s: float | None = Field(None, gt=0, description="time to first token, seconds")
    tpot_s: float | None = Field(None, gt=0, description="time per output token, seconds")
    e2e_s: float | None = Field(None, gt=0, description="end-to-end request latency, seconds")
    percentile: Literal["mean", "p50", "p90", "p99"] = Field("p90", description="statistic the targets bound")


class PlanInputs(BaseModel):
    """Everything a plan needs besides the data (see the module docstring)."""

    model_config = _CFG
    workload: Workload
    slo: SLO = Field(default_factory=SLO)
    models: list[str] = Field(default_factory=list, description="catalog model names (empty: all in the data)")
    hardware: list[str] = Field(default_factory=list, description="catalog hardware (empty: all in the data)")
    device_counts: list[Annotated[int, Field(gt=0)]] = Field(default_factory=list,
                                                             description="devices per replica (empty: all)")
    frameworks: list[str] = Field(default_factory=list, description="frameworks (empty: all in the data)")
    prices: dict[str, Annotated[float, Field(ge=0)]] = Field(
        default_factory=dict, description="price per device-hour by hardware, in `currency`")
    currency: str = Field("USD", min_length=1, max_length=8, description="currency of every cost")
    usd_to_currency: float = Field(1.0, gt=0, description="multiplies the catalog's USD prices")
    headroom: float = Field(0.2, ge=0, le=10, description="spare capacity: provision (1 + headroom) x demand")
    level: float = Field(0.9, gt=0, lt=1, description="level of the throughput bands")
    memory_fraction: float = Field(0.9, gt=0, le=1, description="share of device memory usable "
                                                                "for weights + KV cache")
    kv_dtype_bytes: float = Field(2.0, gt=0, description="bytes per cached KV element")
    predicted_framework: str = Field("vllm", description="framework of predicted candidates on hardware that ran it or ran nothing (else the frameworks the hardware ran)")
    predict: bool = Field(False, description="answer what was not measured with a predictor (roofline-gbm "
                                             "trained on the data unless one is given): candidates without "
                                             "measurements, and measured ones at the workload's lengths where "
                                             "only other lengths were measured")

    @model_validator(mode="after")
    def _prices_and_rate(self) -> PlanInputs:
        # A rate with the currency left at USD had multiplied USD prices by it and still called them USD; two
        # prices for one device (--price H100=2 --price h100-sxm=3) had let the last win without a word.
        if self.usd_to_currency != 1.0 and self.currency.strip().upper() == "USD":
            raise ValueError(f"usd_to_currency {self.usd_to_currency:g} converts the catalog's USD prices into "
                             "another currency: give that currency too (currency, --currency)")
        from . import catalog
        from .errors import UnknownNameError

        keys: dict[str, list[str]] = {}
        for name in self.prices:
            try:
                keys.setdefault(catalog.resolve_hardware(name).key, []).append(name)
            except UnknownNameError:
                continue  # reported by unmatched_candidates with the hardware the data has
        twice = {k: v for k, v in keys.items() if len(v) > 1}
        if twice:
            raise ValueError("two prices for one device: " + "; ".join(
                f"{', '.join(repr(n) for n in v)} are all {k}" for k, v in twice.items()) + " (give one)")
        return self


def _problems_from_pydantic(exc: _PydanticValidationError, source: str | None) -> list[Problem]:
    return problems_from_pydantic(exc, source, extra="not a planner option", empty_loc="plan")


def plan_inputs_from_dict(data: Mapping[str, Any], *, source: str | None = None) -> PlanInputs:
    """Validate planner inputs given as a mapping (YAML content, form values).

    Parameters
    ----------
    data
        Options as in :class:`PlanInputs`.
    source
        File name for messages.

    Returns
    -------
    PlanInputs

    Raises
    ------
    ValidationError
        Every problem, each naming its option.
    """
    if not isinstance(data, Mapping):
        raise ValidationError("the plan is not valid:", [Problem(
            f"expected a mapping of planner options, got {type(data).__name__}", file=source)])
    try:
        return PlanInputs.model_validate(dict(data))
    except _PydanticValidationError as exc:
        raise ValidationError("the plan is not valid:", _problems_from_pydantic(exc, source)) from None


def load_plan_inputs(path: str | Path) -> PlanInputs:
    """Read planner inputs from a YAML (or JSON) file.

    Parameters
    ----------
    path
        The file.

    Returns
    -------
    PlanInputs

    Raises
    ------
    PerfmodelError
        The file cannot be read or parsed.
    ValidationError
        The content is not valid (every problem listed).
    """
    import yaml

    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PerfmodelError(f"{p}: cannot read the plan file ({exc.strerror or exc})") from None
    except yaml.YAMLError as exc:
        raise PerfmodelError(f"{p}: not valid YAML ({exc})") from None
    return plan_inputs_from_dict(data or {}, source=p.name)


# ---------------------------------------------------------------------------- result


@dataclass(frozen=True)
class PlanResult:
    """A plan: the feasible candidates ranked, the infeasible ones with reasons, every operating point.

    Attributes
    ----------
    inputs
        The validated inputs.
    table
        One row per feasible candidate at its best operating point, cheapest first
        (cost per million output tokens; candidates without a price after those
        with one, by devices needed). Columns: :data:`CANDIDATE_KEYS`, ``status``,
        ``robust``, ``batch_size``, ``throughput_tok_s`` (one replica, output
        tokens) with ``_lo``/``_hi``, ``throughput_per_device_tok_s`` (+ bounds),
        ``replicas``, ``devices`` (+ bounds), ``price_per_device_hour``,
        ``price_source``, ``cost_per_hour`` (+ bounds), ``cost_per_m_output_tok``
        (+ bounds), ``cost_per_m_total_tok`` (+ bounds),
        ``energy_j_per_output_tok`` (+ bounds: the fleet's power, measured or TDP, over the demand, as
        the cost is the fleet's), ``energy_basis``, ``e2e_s``,
        ``ttft_s``, ``tpot_s``, ``latency_basis``, ``latency_band`` (what the
        pessimistic and optimistic latencies come from, :data:`LATENCY_BANDS`), ``overloaded`` (planned at a
        request rate its runs did not deliver, :func:`undelivered_rates`: never robust), ``cheaper_batch``,
        ``cheaper_devices`` and ``cheaper_reason`` (on a robust row, the batch of the same candidate that meets
        the targets only centrally and needs the fewest devices, where it saves at least :data:`CHEAPER_FRACTION`
        of them, and why it is not robust; NaN and ``""`` elsewhere), ``memory_need_gb`` and
        ``memory_gb`` (both in 1e9 B: the latter is the devices' memory, whose
        catalog figure is binary, 85.9 for one "80 GB" H100), ``lengths``,
        ``source``, ``confidence``, ``note``, and the measurement setting the row is sized at where the
        candidate's runs vary it (``fw_num_threads``, ``fw_n_batch``; empty elsewhere).
    infeasible
        One row per rejected candidate: :data:`CANDIDATE_KEYS` and ``reason``.
    points
        Every operating point evaluated: keys, ``batch_size``, throughput with
        bounds, latencies, ``memory_ok``, ``slo_ok``, ``slo_ok_lo``,
        ``slo_ok_hi``, ``devices``, ``cost_per_m_output_tok``,
        ``energy_j_per_output_tok``.
    notes
        Plan-wide remarks (approximations, unchecked SLOs).
    currency
        Currency of every cost.
    """

    inputs: PlanInputs
    table: pd.DataFrame = field(repr=False)
    infeasible: pd.DataFrame = field(repr=False)
    points: pd.DataFrame = field(repr=False)
    notes: tuple[str, ...] = ()
    currency: str = "USD"

    @property
    def recommendation(self) -> dict[str, Any] | None:
        """The first (cheapest robust, else cheapest) feasible candidate as a dict, or None."""
        if self.table.empty:
            return None
        robust = self.table[self.table["robust"] & (self.table["status"] == "ok")]
        row = (robust if not robust.empty else self.table).iloc[0]
        return {k: (v.item() if isinstance(v, np.generic) else v) for k, v in row.items()}

    def summary(self) -> str:
        """One paragraph: the recommendation and its cost, or why nothing is feasible.

        Returns
        -------
        str
        """
        w = self.inputs.workload
        i, o = w.mean_lengths
        head = (f"Serving {compact_number(w.demand_rps)} req/s ({w.demand_output_tok_s:,.0f} output tok/s) of "
                f"{i:,.0f}/{o:,.0f} input/output tokens")
        rec = self.recommendation
        if rec is None:
            if self.infeasible.empty and any(" offline run(s) of " in n for n in self.notes):
                return (f"{head}: no candidate to size: the matching runs are offline (every request submitted "
                        "at once), which measure a peak throughput and no latency at a load; see the notes for "
                        "the fewest devices that peak allows.")
            if self.infeasible.empty:
                return (f"{head}: no candidate to size: no run with a batch size (or, at a request rate, the "
                        "requests it held in flight) and a positive throughput matches the chosen models, "
                        "hardware, frameworks and device counts together.")
            return f"{head}: no candidate is feasible ({len(self.infeasible)} rejected; see the reasons)."
        cost = rec["cost_per_hour"]
        lo_c, hi_c = f"{rec['cost_per_hour_lo']:,.2f}", f"{rec['cost_per_hour_hi']:,.2f}"
        # a range only where the band moves it ("3.50 USD/h (3.50-3.50)" said nothing)
        cost_range = f" ({lo_c}-{hi_c})" if (lo_c, hi_c) != (f"{cost:,.2f}",) * 2 else ""
        cost_txt = (f" for {cost:,.2f} {self.currency}/h{cost_range}, {rec['cost_per_m_output_tok']:,.3f} "
                    f"{self.currency} per million output tokens") if np.isfinite(cost) else " (no price known)"
        if rec["devices_hi"] < 0:
            spread = f" ({rec['devices_lo']} or more across the band, whose low end is 0 tok/s)"
        elif rec["devices_lo"] == rec["devices_hi"] == rec["devices"]:
            spread = " (the same across the band)"
        else:
            spread = f" ({rec['devices_lo']}-{rec['devices_hi']} across the band)"
        # the provisioning margin is in the count (7 H100s for a demand 5.6 fill had read as a rounding)
        margin = f", {_headroom_words(self.inputs.headroom)}," if self.inputs.headroom > 0 else ""
        dev = f"{rec['devices']} x {rec['hardware']}{spread}{margin}"
        band = str(rec.get("latency_band") or "")
        extra = "" if rec["status"] == "ok" else (
            " Only works at the optimistic end: only the fastest of the runs measured at this batch meets the "
            "latency targets." if band == "repeats" else
            " Only works at the optimistic end: the fastest measured repeat (the throughput band's optimistic end "
            "for a latency derived or measured once) meets the latency targets." if band.startswith("repeats") else
            " Only works at the optimistic end of the throughput band.")
        if rec.get("overloaded") is True:
            # not robust for this reason first: the band's words had been given for a rate the server fell behind on
            extra = (" Overloaded: the server did not deliver the planned request rate (its runs completed fewer "
                     "requests a second than asked, and their latency grew with the run), so this is a saturated "
                     "peak, not an operating point; measure lower rates before relying on it."
                     + ("" if rec["status"] == "ok" else extra))
        elif rec["status"] == "ok" and not rec["robust"]:
            # the latencies' ends at a batch measured several times are its repeats, not the throughput band
            extra = (" Not robust: the slowest of the runs measured at this batch misses the latency targets."
                     if band == "repeats" else
                     " Not robust: the slowest measured repeat (the low end of the throughput band for a latency "
                     "derived or measured once) misses the latency targets." if band.startswith("repeats") else
                     " Not robust: at the low end of the throughput band the latency targets are missed (the "
                     "device range above is the band's effect on capacity, not on latency)."
                     if np.isfinite(rec["throughput_tok_s_lo"]) and np.isfinite(rec["throughput_tok_s_hi"])
                     else " Its predictor gives no throughput band: the SLOs were checked at the central "
                          "estimate only.")
        load = rec.get("load_batch", math.nan)
        # the batch caps a replica; the traffic fills it only so far (at_offered_load); not at an overloaded rate,
        # where a line from nothing to a saturated peak had read "about 250 sequences at 4.41 s"
        at_load = (f" At this demand each replica holds about {significant(load, 2)} sequence(s), with an "
                   f"end-to-end latency of about {in_seconds(rec['e2e_at_load_s'])} (as measured or derived at "
                   "the batches around it)."
                   if np.isfinite(load) and load < 0.95 * rec["batch_size"] and rec.get("overloaded") is not True
                   and np.isfinite(rec.get("e2e_at_load_s", math.nan)) else "")
        return (f"{head}: {dev} running {rec['model']} on {rec['framework']} with {rec['device_count']} "
                f"device(s) per replica in batches of up to {_batch_text(rec['batch_size'])}{cost_txt}."
                f"{at_load}{extra}{self._cheaper_text(rec)}")

    def _cheaper_text(self, rec: Mapping[str, Any]) -> str:
        """The sentence naming a batch of the recommended candidate that needs materially fewer devices but is
        not robust (``cheaper_batch``), else ``""``: robust first had planned 17 H200s for the H200 sample
        where batch 64 needs 5, without a word."""
        alt_b = float(rec.get("cheaper_batch", math.nan) if rec.get("cheaper_batch") is not None else math.nan)
        if not np.isfinite(alt_b):
            return ""
        n = int(rec["cheaper_devices"])
        price = float(rec.get("price_per_device_hour", math.nan) or math.nan)
        cost = (f": {n * price:,.2f} {self.currency}/h against {rec['cost_per_hour']:,.2f}"
                if np.isfinite(price) else "")
        return (f" Cheaper but not robust: batch {_batch_text(alt_b)} would need {n} x {rec['hardware']} "
                f"({int(rec['devices']) - n} fewer{cost}), but {rec['cheaper_reason']}.")


    def lengths_caveat(self, column: str = "measured at") -> str:
        """A sentence when candidates were sized from the nearest measured lengths, else ``""``.

        Parameters
        ----------
        column
            What the reader's table calls the ``lengths`` column.

        Returns
        -------
        str
        """
        i, o = self.inputs.workload.mean_lengths
        return lengths_caveat(self.table, f"{i:g}/{o:g}", self.recommendation, column=column)


def _headroom_words(headroom: float) -> str:
    """The headroom as the summary says it: "20 % headroom included"."""
    return f"{headroom * 100:g} % headroom included"


def _batch_text(batch: float) -> str:
    """A batch as the summary says it: whole as written, a request-rate run's mean in flight to 3 figures
    ("93.3007" had read as a configured batch)."""
    return f"{batch:g}" if float(batch).is_integer() else f"{significant(batch, 3)} (requests in flight)"


def lengths_caveat(table: pd.DataFrame, want: str, recommended: Mapping[str, Any] | None = None, *,
                   column: str = "measured at") -> str:
    """A sentence when candidates in ``table`` (:attr:`PlanResult.table`) were sized from lengths other than
    the workload's ``want`` (``"1024/1024"``), else ``""``; ``recommended`` is the recommended row, if any,
    and ``column`` what the reader's table calls the ``lengths`` column."""
    if table.empty or "lengths" not in table.columns:
        return ""
    off = table["lengths"].astype(str) != want
    if not off.any():
        return ""
    what = "every candidate was" if off.all() else f"{int(off.sum())} of {len(table)} candidates were"
    rec_txt = ""
    if recommended is not None and str(recommended.get("lengths")) != want:
        rec_txt = f" The recommendation was sized from runs at {recommended['lengths']} tokens."
    return (f"Not measured at {want} input/output tokens: {what} sized from the nearest measured lengths "
            f"(column {column!r}).{rec_txt}")


# ---------------------------------------------------------------------------- helpers


def unmatched_candidates(inputs: PlanInputs, runs: pd.DataFrame) -> dict[str, tuple[list[str], list[str]]]:
    """The names in the candidate lists and ``prices`` of ``inputs`` that match nothing in ``runs``.

    A model or hardware name is matched through the catalog (aliases count), a framework through
    its canonical name, a price by hardware as :func:`plan` looks prices up.

    Parameters
    ----------
    inputs
        Planner inputs.
    runs
        The runs table the plan will use.

    Returns
    -------
    dict
        Field (``models``, ``hardware``, ``frameworks``, ``device_counts``, ``prices``) -> (the names as
        given that match nothing, the values present in ``runs``, sorted); only fields with such names.
    """
    from . import catalog

    def present(col: str) -> list[str]:
        if col not in runs.columns:
            return []
        vals = runs[col].dropna()
        if col == "device_count":
            return [str(int(v)) for v in sorted(set(vals.astype(float)))]
        return sorted(set(vals.astype(str)))

    def key(resolve: Any, name: str) -> str | None:
        try:
            return str(resolve(name).key)
        except UnknownNameError:
            return None

    out: dict[str, tuple[list[str], list[str]]] = {}
    for field_, col, resolve in (("models", "model", catalog.resolve_model),
                                 ("hardware", "hardware", catalog.resolve_hardware)):
        have = present(col)
        keys = set(have) | {k for k in (key(resolve, h) for h in have) if k}
        bad = [n for n in getattr(inputs, field_) if n not in keys and key(resolve, n) not in keys]
        if bad:
            out[field_] = (bad, have)
    have = present("framework")
    bad = [f for f in inputs.frameworks if catalog.canonical_framework(f) not in
           {catalog.canonical_framework(h) for h in have}]
    if bad:
        out["frameworks"] = (bad, have)
    have = present("device_count")
    bad = [str(d) for d in inputs.device_counts if str(d) not in have]
    if bad:
        out["device_counts"] = (bad, have)
    have = present("hardware")
    hw_keys = {h: key(catalog.resolve_hardware, h) for h in have}
    bad = [p for p in inputs.prices
           if not any(p in (h, h.lower()) or (k is not None and key(catalog.resolve_hardware, p) == k)
                      for h, k in hw_keys.items())]
    if bad:
        out["prices"] = (bad, have)
    return out


def memory_need_gb(model: str, batch: float, context_tok: float, *, weight_dtype_bytes: float = 2.0,
                   kv_dtype_bytes: float = 2.0) -> float:
    """Weights plus the KV cache of ``batch`` sequences of ``context_tok`` tokens, in GB (1e9 bytes).

    Parameters
    ----------
    model
        Catalog model name.
    batch
        Concurrent sequences.
    context_tok
        Tokens cached per sequence (input + output).
    weight_dtype_bytes, kv_dtype_bytes
        Bytes per weight and per KV element.

    Returns
    -------
    float

    Raises
    ------
    UnknownNameError
        The model is not in the catalog.
    PerfmodelError
        A figure the sizes need is unknown for the model.
    """
    from . import catalog

    spec = catalog.resolve_model(model)
    return (spec.weight_bytes(weight_dtype_bytes)
            + batch * context_tok * spec.kv_bytes_per_token(kv_dtype_bytes)) / 1e9


def _lat_col(stem: str, pct: str, runs: pd.DataFrame) -> tuple[str | None, str]:
    """The column holding ``stem`` at ``pct``, falling back to the mean; and a basis label."""
    col = f"{stem}_s" if pct == "mean" else f"{stem}_{pct}_s"
    if col in runs.columns and runs[col].notna().any():
        return col, "measured"
    mean_col = f"{stem}_s"
    if pct != "mean" and mean_col in runs.columns and runs[mean_col].notna().any():
        return mean_col, "measured mean (percentile not recorded)"
    return None, "derived"


def nearest_lengths(runs: pd.DataFrame, i: float, o: float) -> tuple[float, float]:
    """The (input, output) length pair measured in ``runs`` nearest to ``(i, o)``: the smallest sum of the
    absolute log ratios (the first such pair on a tie)."""
    pairs = runs[["input_len_tok", "output_len_tok"]].dropna().drop_duplicates().to_numpy(dtype=float)
    pairs = pairs[(pairs > 0).all(axis=1)]
    d = np.abs(np.log(pairs[:, 0] / i)) + np.abs(np.log(pairs[:, 1] / o))
    best = pairs[int(np.argmin(d))]
    return float(best[0]), float(best[1])


def _price(hw: str, inputs: PlanInputs) -> tuple[float, str]:
    from . import catalog

    for key in (hw, hw.lower()):
        if key in inputs.prices:
            return float(inputs.prices[key]), "user"
    try:
        spec = catalog.resolve_hardware(hw)
    except UnknownNameError:
        return math.nan, "none"
    if spec.key in inputs.prices:
        return float(inputs.prices[spec.key]), "user"
    # a price given under another of the hardware's names ("H100" for h100-sxm), as unmatched_candidates
    # matches it: it had been listed as applied while the catalog's price was used
    for name, price in inputs.prices.items():
        try:
            if catalog.resolve_hardware(name).key == spec.key:
                return float(price), "user"
        except UnknownNameError:
            continue
    if spec.price_per_hour_usd is None:
        return math.nan, "none"
    src = spec.sources.get("price_per_hour_usd") or spec.sources.get("all") or "catalog"
    return float(spec.price_per_hour_usd) * inputs.usd_to_currency, f"catalog ({src})"


def _ceil(x: float) -> int:
    # A hair of float noise (0.9999999 -> 1) must not buy one more replica.
    return int(math.ceil(x - 1e-9)) if np.isfinite(x) else -1


@dataclass
class _Curve:
    batches: np.ndarray
    mid: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    source: str
    confidence: float
    r2: float
    note: str = ""
    confidence_at: np.ndarray | None = None
    """Per batch, where the source gives one (a predictor): the row's confidence is the chosen batch's."""
    in_domain_at: np.ndarray | None = None
    """Per batch, where a predictor answered: False outside its training domain (an operating point there is
    an extrapolation, never robust)."""


def _measured_curve(sub: pd.DataFrame, level: float, seed: int) -> _Curve:
    from .curves import fit_curve

    x = sub["batch_size"].to_numpy(dtype=float, na_value=np.nan)
    y = sub["output_throughput_tok_s"].to_numpy(dtype=float, na_value=np.nan)
    ok = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    x, y = x[ok], y[ok]
    grid = np.unique(x)
    means = np.array([y[x == b].mean() for b in grid])
    mins = np.array([y[x == b].min() for b in grid])
    maxs = np.array([y[x == b].max() for b in grid])
    rate = "load_kind" in sub.columns and bool((sub["load_kind"].astype("string") == "request_rate").fillna(False).all())
    if rate:
        # A rate run's operating point is what was measured there: its requests in flight are an outcome, not a
        # setting between which a curve interpolates. A fitted curve had sized inference-perf's 1 req/s stage at
        # 39 tok/s (64 measured) and its band had scaled measured latencies down to meet targets no stage met.
        return _Curve(grid, means, mins, maxs, "measured points", math.nan, math.nan,
                      "request-rate runs: each rate's measured throughput and latencies, the range of repeats as band")
    fit = fit_curve(x, y, intervals="bootstrap", n_boot=200, level=level, seed=seed) if len(grid) >= 3 else None
    if fit is not None and fit.success:
        mid = fit.predict(grid)
        lo, hi = fit.band(grid, level)
        # A fitted curve can dip to or below zero at the smallest batch: the measurement is the better figure.
        bad_mid = ~(np.isfinite(mid) & (mid > 0))
        mid = np.where(bad_mid, means, mid)
        lo = np.where(np.isfinite(lo) & (lo > 0) & ~bad_mid, np.minimum(lo, mid), np.minimum(mins, mid))
        hi = np.where(np.isfinite(hi) & ~bad_mid, np.maximum(hi, mid), np.maximum(maxs, mid))
        note = "" if not bad_mid.any() else "measured means used where the fitted curve is not positive"
        return _Curve(grid, mid, lo, hi, f"measured curve ({fit.shape})", float(max(0.0, fit.r2)), fit.r2, note)
    why = fit.message if fit is not None else "fewer than 3 batch sizes"
    return _Curve(grid, means, mins, maxs, "measured points", math.nan, math.nan,
                  f"no curve fit ({why}); measured means with the range of repeats as band")


def _varying(at: pd.DataFrame) -> list[str]:
    """The measurement settings (:data:`perfmodel.curves.VARYING_BY`) that take several values in ``at``."""
    from .curves import VARYING_BY

    return [c for c in VARYING_BY if c in at.columns and at[c].nunique(dropna=False) > 1]


def _by_setting(at: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """A candidate's runs split by the measurement settings they vary (:data:`perfmodel.curves.VARYING_BY`:
    llama.cpp's ``n_batch``, the engine's threads), each with its label (``n_batch 64``); one part, labelled
    ``""``, where no setting varies."""
    cols = _varying(at)
    if not cols:
        return [("", at)]
    out = []
    for vals, part in at.groupby(cols, dropna=False, sort=True):
        vals = vals if isinstance(vals, tuple) else (vals,)
        out.append((", ".join(f"{c.removeprefix('fw_')} "
                              + ("unset" if pd.isna(v) else f"{float(v):g}") for c, v in zip(cols, vals, strict=True)),
                    part))
    return out


def _rank(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """A candidate row's place in the table: ok before optimistic-only, robust before fragile, priced before
    not, then cheaper, fewer devices, more capacity, shorter latency (:func:`plan`'s order)."""
    def number(key: str, missing: float) -> float:
        v = row.get(key)
        v = float(v) if v is not None else math.nan
        return v if math.isfinite(v) else missing

    cost = number("cost_per_m_output_tok", math.inf)
    cap = number("throughput_tok_s", -math.inf) * number("replicas", 1.0)
    return (row["status"] != "ok", not bool(row["robust"]), not math.isfinite(cost), cost, row["devices"],
            -cap if math.isfinite(cap) else math.inf, number("e2e_s", math.inf))


def _measured_candidate(cand: dict[str, Any], at: pd.DataFrame, measured: tuple[float, float], inputs: PlanInputs,
                        predictor: Any, seed: int, rows: list[dict[str, Any]], bad: list[dict[str, Any]],
                        pts: list[pd.DataFrame]) -> None:
    """A measured candidate's curve (at the workload's lengths, predicted from ``measured`` where they differ
    and a predictor is given) and its evaluation, appended to ``rows``/``bad``/``pts``."""
    mean_in, mean_out = inputs.workload.mean_lengths
    i_len, o_len = measured
    note = "" if (i_len, o_len) == (mean_in, mean_out) else \
        f"measured at {i_len:g}/{o_len:g} tokens, the nearest to {mean_in:g}/{mean_out:g}"
    if predictor is not None and (i_len, o_len) != (mean_in, mean_out):
        got = _predicted_curve(predictor, _length_query(at, mean_in, mean_out), inputs.level)
        if not isinstance(got, str):
            curve, ttft = got
            curve.source = f"predicted at the workload's lengths ({_name(predictor)})"
            note = (f"predicted at {mean_in:g}/{mean_out:g} tokens from the runs at {i_len:g}/{o_len:g}"
                    + ("" if not curve.note else f"; {curve.note}"))
            _evaluate_candidate(cand, curve, _without_measured(at), inputs, (mean_in, mean_out), note, rows, bad,
                                pts, ttft=ttft)
            return
        note = f"{note}; not predicted at the workload's lengths: {got}"
    curve = _measured_curve(at, inputs.level, seed)
    if predictor is not None and (i_len, o_len) == (mean_in, mean_out):
        curve = _extended(curve, predictor, at, (mean_in, mean_out), inputs.level)
    if curve.note:
        note = "; ".join(filter(None, [note, curve.note]))
    # Latencies measured at other lengths are other requests' (a 2048/128 run's 5 s for a 1024/1024
    # workload): derived from the throughput at the workload's lengths instead.
    same = (i_len, o_len) == (mean_in, mean_out)
    _evaluate_candidate(cand, curve, at if same else _without_measured(at, power=True), inputs, (i_len, o_len), note,
                        rows, bad, pts)


def _extended(curve: _Curve, predictor: Any, at: pd.DataFrame, lengths: tuple[float, float], level: float) -> _Curve:
    """A measured curve with the predictor's answers at the :data:`PREDICTED_BATCHES` beyond its largest measured
    batch, so that measured and predicted candidates are sized over the same batches: a B200 nobody measured had
    been sized at batch 256 while an H100 measured up to batch 64 was held there, though the same predictor put
    it in domain at batch 128 with room under the latency target (and cheaper). Unchanged where the predictor
    gives nothing there."""
    top = float(np.max(curve.batches)) if len(curve.batches) else math.inf
    q = _length_query(at, *lengths)
    q = q[q["batch_size"] > top].reset_index(drop=True)
    if q.empty:
        return curve
    got = _predicted_curve(predictor, q, level)
    if isinstance(got, str) or not len(got[0].batches):
        return curve
    more = got[0]
    n = len(curve.batches)
    conf = np.concatenate([np.full(n, curve.confidence), np.asarray(more.confidence_at, dtype=float)])
    inside = np.concatenate([np.ones(n, dtype=bool), np.asarray(more.in_domain_at, dtype=bool)])
    return _Curve(np.concatenate([curve.batches, more.batches]), np.concatenate([curve.mid, more.mid]),
                  np.concatenate([curve.lo, more.lo]), np.concatenate([curve.hi, more.hi]),
                  f"{curve.source}; predicted above batch {top:g} ({_name(predictor)})", curve.confidence, curve.r2,
                  "; ".join(filter(None, [curve.note, f"batches above {top:g} predicted"
                                          + (f" ({more.note})" if more.note else "")])), confidence_at=conf,
                  in_domain_at=inside)


def _stat_at(sub: pd.DataFrame, col: str | None, batches: np.ndarray) -> np.ndarray:
    if col is None:
        return np.full(len(batches), np.nan)
    g = sub.groupby("batch_size")[col].mean()
    return np.array([float(g.get(b, np.nan)) for b in batches])


MIN_LATENCY_REPEATS = 2
"""Runs at one batch that measured a latency for their spread to bound it: the worst repeat is its pessimistic end
and the best its optimistic end. A batch measured fewer times keeps the throughput band's scaling (one run shows no
spread, which is not evidence of none)."""


def _repeats_at(sub: pd.DataFrame, col: str | None,
                batches: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per batch, how many runs measured ``col``, and the smallest and largest of their values (NaN without)."""
    nan = np.full(len(batches), np.nan)
    if col is None or col not in sub.columns or sub.empty:
        return np.zeros(len(batches), dtype=int), nan, nan.copy()
    g = pd.to_numeric(sub[col], errors="coerce").groupby(sub["batch_size"]).agg(["count", "min", "max"])
    n = np.array([int(g["count"].get(b, 0)) for b in batches], dtype=int)
    return (n, np.array([float(g["min"].get(b, np.nan)) for b in batches]),
            np.array([float(g["max"].get(b, np.nan)) for b in batches]))


def _ttft_floor(cand: Mapping[str, Any], probe: pd.DataFrame, lengths: tuple[float, float],
                batches: np.ndarray) -> np.ndarray:
    """Per batch, the roofline's floor of the time to first token (:func:`perfmodel.physics.roofline`'s
    ``ttft_s_min``) for the candidate at the workload's mean lengths, at the dtypes of its runs (``probe``);
    NaN where the catalogs cannot say.

    A static batch (the runs' ``load_kind``, or none recorded) prefills its prompts together, as the throughput
    it was sized from did: the floor is the whole batch's prefill. Under a server's own scheduling
    (``concurrency``, ``request_rate``) a request may be prefilled alone: one prompt's prefill.
    """
    from .physics import prefills_together, roofline

    kind = probe["load_kind"].iloc[0] if "load_kind" in probe.columns and len(probe) else None
    together = prefills_together(kind)
    bb = np.asarray(batches, dtype=float) if together else np.ones(len(batches))
    q = pd.DataFrame({"hardware": str(cand["hardware"]), "model": str(cand["model"]),
                      "framework": str(cand["framework"]), "device_count": float(cand["device_count"]),
                      "input_len_tok": float(lengths[0]), "output_len_tok": float(lengths[1]),
                      "batch_size": bb})
    for c in ("weight_dtype", "kv_cache_dtype", "quantization"):
        if c in probe.columns and len(probe) and pd.notna(probe[c].iloc[0]):
            q[c] = probe[c].iloc[0]
    try:
        return roofline(q)["ttft_s_min"].to_numpy(dtype=float)
    except PerfmodelError:
        return np.full(len(q), np.nan)


def _slo_ok(slo: SLO, e2e: np.ndarray, ttft: np.ndarray, tpot: np.ndarray) -> np.ndarray:
    ok = np.ones(len(e2e), dtype=bool)
    for target, val in ((slo.e2e_s, e2e), (slo.ttft_s, ttft), (slo.tpot_s, tpot)):
        if target is not None:
            # An unknown latency (TTFT not measured) is not held against the candidate; it is reported.
            ok &= ~(np.isfinite(val) & (val > target * (1 + 1e-12)))
    return ok


MIN_RATE_POINTS = 3
"""Poisson runs size a plan over other arrivals of the same sweep only at this many rates or more."""


def rate_runs_in_flight(runs: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """``runs`` with each request-rate run's ``batch_size`` set to the requests it held in flight, and a note
    saying so (``""`` where no row was read this way).

    A run at a fixed arrival rate (GuideLLM's and inference-perf's rate sweeps, ``vllm bench serve
    --request-rate``) records no batch: its operating point is the mean number of requests in flight, by
    Little's law the completed requests a second times the mean end-to-end latency (the
    ``measured_concurrency`` where the file recorded one). Its throughput and latencies were measured at
    that load, so the planner sizes it as a concurrency run of that many; the planner had left such runs out
    and said that nothing matched the filters.

    Parameters
    ----------
    runs
        A canonical runs table.

    Returns
    -------
    (runs, note)
        A copy where a row changed (``load_kind`` stays ``request_rate``), else ``runs`` itself.
    """
    if "batch_size" not in runs.columns or "load_kind" not in runs.columns or runs.empty:
        return runs, ""

    def num(col: str) -> np.ndarray:
        return (pd.to_numeric(runs[col], errors="coerce").to_numpy(dtype=float) if col in runs.columns
                else np.full(len(runs), np.nan))

    rate = (runs["load_kind"].astype("string") == "request_rate").fillna(False).to_numpy(dtype=bool) \
        & ~np.isfinite(num("batch_size"))
    if not rate.any():
        return runs, ""
    rps = num("request_throughput_rps")
    rps = np.where(np.isfinite(rps), rps, num("output_throughput_tok_s") / num("output_len_tok"))
    with np.errstate(invalid="ignore"):
        held = np.where(np.isfinite(num("measured_concurrency")), num("measured_concurrency"),
                        rps * num("e2e_latency_s"))
    use = rate & np.isfinite(held) & (held > 0)
    if not use.any():
        return runs, (f"{int(rate.sum())} request-rate run(s) record neither the requests in flight nor a "
                      "throughput and an end-to-end latency to count them (Little's law): left out")
    out = runs.copy()
    out["batch_size"] = pd.to_numeric(out["batch_size"], errors="coerce").astype("float64")
    out.loc[use, "batch_size"] = held[use]
    left = int((rate & ~use).sum())
    # Constant and Poisson arrivals at one rate are not repeats: where both were run, the Poisson runs (traffic
    # arrives at random) size the plan and the others are left out, said
    arrivals = out["arrival"].astype("string") if "arrival" in out.columns else None
    other = ""
    if arrivals is not None:
        poisson = (arrivals == "poisson").fillna(False).to_numpy(dtype=bool)
        if (use & poisson).any() and (use & ~poisson).any():
            rates = pd.to_numeric(out["request_rate_rps"], errors="coerce") if "request_rate_rps" in out.columns \
                else pd.Series(np.nan, index=out.index)
            enough = rates[use & poisson].nunique() >= MIN_RATE_POINTS
            drop = use & (~poisson if enough else poisson)
            kinds = ", ".join(sorted(set(arrivals[drop if enough else use & ~drop].dropna())))
            other = (f"; {int(drop.sum())} run(s) of other arrivals ({kinds}) are left out: where both were run, the "
                     "Poisson runs size the plan (real traffic arrives at random, and the two are not repeats of one "
                     "point)" if enough else
                     f"; {int(drop.sum())} Poisson run(s) at fewer than {MIN_RATE_POINTS} rates are left out: too few "
                     f"loads to show a capacity, so the {kinds} sweep sizes the plan (Poisson traffic queues more at "
                     "the same rate)")
            out = out.loc[~drop].reset_index(drop=True)
            use = use & ~drop
    return out, (f"{int(use.sum())} request-rate run(s) are sized by the requests they held in flight (Little's "
                 "law: completed requests a second x mean end-to-end latency, or the file's measured "
                 "concurrency): their batch is that mean, not a configured batch"
                 + (f"; {left} more record no latency to count them and are left out" if left else "") + other)


RATE_DELIVERED_SHARE = 0.95
"""A request-rate run delivered its rate when the requests it completed a second, per request a second asked, reach
this share of its sweep's baseline (:func:`undelivered_rates`)."""
RATE_WINDOW_SHORTFALL = 0.10
"""The most a sweep's least loaded rate may fall short of its rate and still set the baseline: a client counting
completions over a fixed window misses those still running at its end (GuideLLM's 60 s constant runs completed
93 % of 2.6 req/s, unloaded); a lowest rate further short is itself overloaded, and the baseline stays at
1 - this."""
_SWEEP_KEYS = (*CANDIDATE_KEYS, "input_len_tok", "output_len_tok", "arrival", "burstiness", "fw_num_threads",
               "fw_n_batch")


def undelivered_rates(runs: pd.DataFrame) -> pd.Series:
    """Which request-rate runs did not deliver the rate asked of them: the server completed too few requests a
    second, fell behind and queued the rest, so the latencies measured grew with the run's length and describe
    no steady operating point (inference-perf warns "the requested rate was not delivered"; its vLLM sweep on one
    H100 completed 101-103 req/s at 122.6, 153 and 183.4 req/s asked).

    Per sweep (a candidate at one length pair, arrival and measurement setting), a run's delivered share is its
    completed requests a second (``request_throughput_rps``, else output throughput over output length) over its
    ``request_rate_rps``. The baseline is the share at the sweep's lowest rate, taken between
    1 - :data:`RATE_WINDOW_SHORTFALL` and 1 (a window-counting client's shortfall, not an overload); a run below
    :data:`RATE_DELIVERED_SHARE` x the baseline did not deliver its rate. GuideLLM's constant sweep on two T4s
    (93 % at 2.6 req/s) did not deliver 18 req/s (87 %, the server's peak in its throughput mode was 18.0); 15.8
    req/s (90 %) it did.

    Parameters
    ----------
    runs
        A canonical runs table.

    Returns
    -------
    pandas.Series
        Boolean, aligned with ``runs``: True for a request-rate run whose rate was not delivered; False for every
        other row, and for a rate run without a finite rate or throughput (nothing to judge).
    """
    out = pd.Series(False, index=runs.index)
    if runs.empty or not {"load_kind", "request_rate_rps"} <= set(runs.columns):
        return out

    def num(col: str) -> pd.Series:
        return (pd.to_numeric(runs[col], errors="coerce").astype("float64") if col in runs.columns
                else pd.Series(np.nan, index=runs.index))

    asked = num("request_rate_rps")
    done = num("request_throughput_rps")
    done = done.where(np.isfinite(done), num("output_throughput_tok_s") / num("output_len_tok"))
    rate = (runs["load_kind"].astype("string") == "request_rate").fillna(False) & np.isfinite(asked) \
        & (asked > 0) & np.isfinite(done)
    if not rate.any():
        return out
    share = (done / asked)[rate]
    keys = [c for c in _SWEEP_KEYS if c in runs.columns]
    frame = runs.loc[rate, keys].astype("string").fillna("") if keys else pd.DataFrame(index=share.index)
    frame = frame.assign(_asked=asked[rate], _share=share)
    for _, sweep in (frame.groupby(keys, dropna=False, sort=False) if keys else [((), frame)]):
        lowest = sweep.loc[sweep["_asked"] == sweep["_asked"].min(), "_share"].median()
        base = float(np.clip(lowest, 1 - RATE_WINDOW_SHORTFALL, 1.0))
        out.loc[sweep.index] = (sweep["_share"] < base * RATE_DELIVERED_SHARE).to_numpy()
    return out


def _undelivered_note(sel: pd.DataFrame) -> str:
    """The plan's note on the candidates' request-rate runs that did not deliver their rate (``""`` where none)."""
    if "_undelivered" not in sel.columns or not sel["_undelivered"].any():
        return ""
    bad = sel[sel["_undelivered"]]
    done = pd.to_numeric(bad["request_throughput_rps"], errors="coerce") if "request_throughput_rps" in bad.columns \
        else pd.Series(np.nan, index=bad.index)
    done = done.where(np.isfinite(done), pd.to_numeric(bad["output_throughput_tok_s"], errors="coerce")
                      / pd.to_numeric(bad["output_len_tok"], errors="coerce"))
    asked = pd.to_numeric(bad["request_rate_rps"], errors="coerce")
    order = np.argsort(asked.to_numpy(dtype=float), kind="stable")
    pairs = [f"{compact_number(float(asked.iloc[i]))} asked, {compact_number(float(done.iloc[i]))} completed"
             for i in order]
    listed = "; ".join(pairs[:4]) + ("; ..." if len(pairs) > 4 else "")
    return (f"{len(bad)} request-rate run(s) did not deliver the rate asked ({listed} req/s): the server fell "
            "behind and queued the rest, so their latencies grew with the run's length and their throughput is a "
            "saturated peak, not an operating point; a rate that was delivered is planned wherever one serves, "
            "and a row planned at an undelivered rate says so")


def offline_notes(sel: pd.DataFrame, inputs: PlanInputs) -> list[str]:
    """What the offline runs among the candidates' rows say, one note per candidate: every request submitted at
    once (``trtllm-bench throughput``, ``vllm bench throughput``), such a run measures the engine's peak throughput
    and no latency at any load, so it cannot size a fleet to a latency target; its peak bounds the devices from
    below. The planner had left them out and said no run matched the filters.

    Parameters
    ----------
    sel
        The candidates' rows (:func:`_candidates`).
    inputs
        The plan's inputs (demand, headroom).

    Returns
    -------
    list of str
    """
    if "load_kind" not in sel.columns or sel.empty:
        return []
    off = sel[(sel["load_kind"].astype("string") == "offline").fillna(False).to_numpy(dtype=bool)
              & ~np.isfinite(pd.to_numeric(sel["batch_size"], errors="coerce").to_numpy(dtype=float))
              & (pd.to_numeric(sel["output_throughput_tok_s"], errors="coerce") > 0).to_numpy(dtype=bool)]
    if off.empty:
        return []
    w = inputs.workload
    demand = w.demand_output_tok_s * (1 + inputs.headroom)
    out = []
    for key, sub in off.groupby(list(CANDIDATE_KEYS), dropna=False, sort=True):
        cand = dict(zip(CANDIDATE_KEYS, key, strict=True))
        i_len, o_len = nearest_lengths(sub, *w.mean_lengths)
        peak = float(sub.loc[(sub["input_len_tok"] == i_len) & (sub["output_len_tok"] == o_len),
                             "output_throughput_tok_s"].max())
        n_dev = int(cand["device_count"])
        at = "" if (i_len, o_len) == w.mean_lengths else f" (measured at {i_len:,.0f}/{o_len:,.0f} tokens)"
        out.append(f"{len(sub)} offline run(s) of {cand['hardware']} x {n_dev} running {cand['model']} on "
                   f"{cand['framework']} (every request submitted at once) measure its peak, {peak:,.0f} output "
                   f"tok/s per replica{at}, and no latency at a load: they cannot size a plan to latency targets and "
                   f"are left out; at that peak the demand needs at least {_ceil(demand / peak) * n_dev} "
                   "device(s)")
    return out


def _candidates(runs: pd.DataFrame, inputs: PlanInputs) -> pd.DataFrame:
    from . import catalog

    sel = runs
    for col, wanted, resolve in (("model", inputs.models, catalog.resolve_model),
                                 ("hardware", inputs.hardware, catalog.resolve_hardware)):
        if wanted:
            keys = {resolve(w).key for w in wanted}
            sel = sel[sel[col].isin(keys)]
    if inputs.frameworks:
        keys = {catalog.canonical_framework(f) for f in inputs.frameworks}
        sel = sel[sel["framework"].isin(keys)]
    if inputs.device_counts:
        sel = sel[sel["device_count"].isin(inputs.device_counts)]
    return sel


# ---------------------------------------------------------------------------- plan


def plan(inputs: PlanInputs | Mapping[str, Any], runs: pd.DataFrame | None = None, *,
         predictor: Any = None, seed: int = 0) -> PlanResult:
    """Size every candidate for the workload and SLOs (method in the module docstring).

    Parameters
    ----------
    inputs
        Planner inputs (a mapping is validated with :func:`plan_inputs_from_dict`).
    runs
        Canonical runs table with the measurements (may be None or empty when a
        predictor covers the candidates).
    predictor
        A fitted :class:`perfmodel.models.Predictor` used for the combinations of
        ``models`` x ``hardware`` x ``device_counts`` that have no measurements.
    seed
        Bootstrap seed of the curve fits.

    Returns
    -------
    PlanResult

    Raises
    ------
    ValidationError
        Invalid inputs, or a runs table without the columns a plan needs.
    UnknownNameError
        A model or hardware name not in the catalog.
    """
    if not isinstance(inputs, PlanInputs):
        inputs = plan_inputs_from_dict(inputs)
    w, slo = inputs.workload, inputs.slo
    mean_in, mean_out = w.mean_lengths
    notes: list[str] = []
    if w.lengths:
        notes.append(f"length histogram: throughput sized at the mean lengths {mean_in:,.0f}/{mean_out:,.0f}; "
                     f"memory at the longest request ({w.max_context_tok:,.0f} tokens)")
    if runs is None:
        from .schema import empty_runs

        runs = empty_runs()
    need = ["hardware", "model", "framework", "device_count", "batch_size", "input_len_tok", "output_len_tok",
            "output_throughput_tok_s"]
    missing = [c for c in need if c not in runs.columns]
    if missing:
        raise ValidationError("plan: the runs table lacks columns the planner needs",
                              [Problem("missing", column=c) for c in missing])
    runs, rate_note = rate_runs_in_flight(runs)
    if rate_note:
        notes.append(rate_note)
    if predictor is None and inputs.predict:
        predictor, why = _plan_predictor(runs)
        notes.append(f"predict: {why}")
    sel = _candidates(runs, inputs)
    notes += offline_notes(sel, inputs)
    # read by _evaluate_candidate (a rate the server did not keep up with is planned only where no other serves)
    sel = sel.assign(_undelivered=undelivered_rates(sel))
    if note := _undelivered_note(sel):
        notes.append(note)
    sel = sel[sel["batch_size"].notna() & (sel["output_throughput_tok_s"] > 0)]
    rows: list[dict[str, Any]] = []
    bad: list[dict[str, Any]] = []
    pts: list[pd.DataFrame] = []
    groups = sel.groupby(list(CANDIDATE_KEYS), dropna=False, sort=True) if len(sel) else []
    seen: set[tuple[str, str, int]] = set()
    for gi, (key, sub) in enumerate(groups):
        cand = dict(zip(CANDIDATE_KEYS, key, strict=True))
        cand["device_count"] = int(cand["device_count"])
        seen.add((str(cand["hardware"]), str(cand["model"]), cand["device_count"]))
        i_len, o_len = nearest_lengths(sub, mean_in, mean_out)
        at_all = sub[(sub["input_len_tok"] == i_len) & (sub["output_len_tok"] == o_len)]
        settings = _by_setting(at_all)
        if len(settings) == 1:
            _measured_candidate(cand, at_all, (i_len, o_len), inputs, predictor, seed + gi, rows, bad, pts)
            continue
        # Runs at several settings of the framework (llama.cpp's n_batch: 49.6 to 91.7 tok/s on one H100) are
        # not repeats: each setting is sized on its own and the best kept, as an operator would set it. Their
        # average had sized llama.cpp at 79.9 tok/s per device.
        trials = []
        for label, at in settings:
            r_s: list[dict[str, Any]] = []
            b_s: list[dict[str, Any]] = []
            p_s: list[pd.DataFrame] = []
            _measured_candidate(cand, at, (i_len, o_len), inputs, predictor, seed + gi, r_s, b_s, p_s)
            # the operating points say which setting they are of
            values = {c: at[c].iloc[0] for c in _varying(at_all)}
            trials.append((r_s, b_s, [p.assign(**values) for p in p_s], label))
        ran = [t for t in trials if t[0]]
        if not ran:
            # the reason of the setting that came closest (its shortest e2e where memory fits): the first
            # setting's (n_batch 1, llama.cpp's slowest) had been quoted as the "best e2e"
            def closest(trial: tuple[Any, ...]) -> float:
                e2e = [p.loc[p["memory_ok"].astype(bool), "e2e_s"].to_numpy(dtype=float) for p in trial[2]]
                fin = np.concatenate([e[np.isfinite(e)] for e in e2e]) if e2e else np.empty(0)
                return float(fin.min()) if len(fin) else math.inf

            best = min(trials, key=closest)
            bad.extend({**b, "reason": f"{b['reason']} (at every setting measured; at {best[3]}, the closest)"}
                       for b in best[1])
            continue
        r_s, _, p_s, label = min(ran, key=lambda t: _rank(t[0][0]))
        names = {s.rpartition(" ")[0] for s, _ in settings}
        measured = (f"{names.pop()} " + ", ".join(s.rpartition(" ")[2] for s, _ in settings) if len(names) == 1
                    and "," not in settings[0][0] else "; ".join(s for s, _ in settings))
        r_s[0]["note"] = "; ".join(filter(None, [f"at {label}, the best of the settings measured ({measured})",
                                                 r_s[0]["note"]]))
        # the setting as data too (the report predicts each candidate's point at it)
        r_s[0].update({c: float(v) for c, v in p_s[0][_varying(at_all)].iloc[0].items()} if p_s else {})
        rows.extend(r_s)
        pts.extend(p_s)
    if predictor is not None:
        _predicted(inputs, predictor, runs, seen, rows, bad, pts)
    elif inputs.models and inputs.hardware:
        from . import catalog

        pairs = {(h, m) for h, m, _ in seen}
        for m in inputs.models:
            for h in inputs.hardware:
                mk, hk = catalog.resolve_model(m).key, catalog.resolve_hardware(h).key
                # Device counts chosen: each one unmeasured. None chosen: the pair only where it ran at no device
                # count (A100 and H100 were listed "at 1 device" beside their measured 4-device candidates).
                for d in inputs.device_counts or ([math.nan] if (hk, mk) not in pairs else []):
                    if (hk, mk, d) not in seen:
                        bad.append({"hardware": hk, "model": mk, "framework": "", "device_count": d,
                                    "reason": "no measurements and no predictor given (turn prediction on to "
                                              "size it from the catalog)"})
    if slo.ttft_s is not None and rows and any("TTFT not measured" in r["note"] for r in rows):
        notes.append("where TTFT was not measured the TTFT target was checked only against its physical floor, "
                     "the prefill at the devices' peak FLOPS (a measured TTFT cannot be derived from throughput)")
    table = pd.DataFrame(rows, columns=_TABLE_COLUMNS)
    if inputs.currency.upper() != "USD" and inputs.usd_to_currency == 1.0 \
            and table["price_source"].astype(str).str.startswith("catalog").any():
        notes.append(f"the catalog's prices are in USD and were read as {inputs.currency} at 1 USD = 1 "
                     f"{inputs.currency}: give the exchange rate (usd_to_currency: --usd-to-currency, the Planner "
                     f"page's 'USD to {inputs.currency}') or a price for every hardware")
    if len(table):
        # The recommendation (the cheapest robust candidate, PlanResult.recommendation) is the first row.
        # Equal costs (the same devices at the same price) go to the most capacity (the fleet's: replicas x a
        # replica's throughput), then the shortest latency, before any name: an alphabetical tie-break had
        # recommended DeepSpeed-MII on an A100 over TensorRT-LLM on the same GPU at the same price, with 2,129
        # against 3,055 tok/s and 3.85 against 2.68 s.
        order = sorted(range(len(table)), key=lambda i: (*_rank(rows[i]), *(str(rows[i][k]) for k in CANDIDATE_KEYS)))
        table = table.iloc[order].reset_index(drop=True)
    notes += latency_basis_notes(table, inputs.slo.percentile,
                                 [k for k in ("e2e_s", "ttft_s", "tpot_s") if getattr(inputs.slo, k) is not None])
    infeasible = pd.DataFrame(bad, columns=[*CANDIDATE_KEYS, "reason"])
    points = pd.concat(pts, ignore_index=True) if pts else pd.DataFrame(columns=_POINT_COLUMNS)
    return PlanResult(inputs=inputs, table=table, infeasible=infeasible, points=points, notes=tuple(notes),
                      currency=inputs.currency)


SETTING_COLUMNS = ("fw_num_threads", "fw_n_batch")
"""The measurement settings a candidate's row is sized at, where its runs vary them (:data:`perfmodel.curves.VARYING_BY`;
empty elsewhere)."""
_BOUNDED = ("throughput_tok_s", "throughput_per_device_tok_s", "devices", "cost_per_hour", "cost_per_m_output_tok",
            "cost_per_m_total_tok", "energy_j_per_output_tok")
_TABLE_COLUMNS = [*CANDIDATE_KEYS, "status", "robust", "batch_size", "replicas",
                  *[c + s for c in _BOUNDED for s in ("", "_lo", "_hi")],
                  "price_per_device_hour", "price_source", "energy_basis", "e2e_s", "ttft_s", "tpot_s",
                  "load_batch", "e2e_at_load_s", "latency_basis", "latency_band", "overloaded", "cheaper_batch",
                  "cheaper_devices", "cheaper_reason", "memory_need_gb", "memory_gb", "lengths", "source", "confidence", "note",
                  *SETTING_COLUMNS]
_POINT_COLUMNS = [*CANDIDATE_KEYS, "batch_size", "throughput_tok_s", "throughput_tok_s_lo", "throughput_tok_s_hi",
                  "throughput_per_device_tok_s", "e2e_s", "ttft_s", "tpot_s", "memory_ok", "slo_ok", "slo_ok_lo",
                  "slo_ok_hi", "devices", "cost_per_m_output_tok", "energy_j_per_output_tok"]


def at_offered_load(batches: np.ndarray, throughput: np.ndarray, per_replica_tok_s: float,
                    e2e: np.ndarray | None = None) -> tuple[float, float]:
    """Where a replica settles under the offered load: the sequences in flight at which its throughput curve
    meets its share of the demand, and the end-to-end latency there, read from the plan's own latency curve
    (``e2e``: measured at the percentile asked where the runs recorded it, else derived), between the batches
    around it and never above the latency at the plan's batch. The plan's batch is the most a replica may run
    and still meet the SLOs (its throughput sizes the fleet); below that capacity a server never fills it.
    LLM-Inference-Bench's Llama-2-7B at 10 req/s of 128/128 on one A100 with DeepSpeed-MII: batch 64 (e2e 3.85 s,
    the measured mean) planned, about 29 sequences in flight at the offered load (2.93 s).

    The latency is not Little's law on the throughput curve (in flight / request rate): that is a mean on another
    basis than a measured p90 beside it, and read 0.551 s at 0.79 sequences in flight on 4 x H100, above both the
    0.480 s measured at the plan's batch and the 0.5 s target of a row marked ok.

    Parameters
    ----------
    batches, throughput
        The curve up to the plan's batch (output tok/s of one replica, increasing batches).
    per_replica_tok_s
        The demand (output tok/s) each replica serves, without headroom.
    e2e
        The latency at ``batches`` (None: no latency, NaN returned for it).

    Returns
    -------
    (float, float)
        Sequences in flight and e2e seconds; NaN where the curve is empty or never reaches the demand.
    """
    b = np.asarray(batches, dtype=float)
    t = np.asarray(throughput, dtype=float)
    ok = np.isfinite(b) & np.isfinite(t) & (t > 0)
    if not ok.any() or not per_replica_tok_s > 0:
        return math.nan, math.nan
    xs = np.concatenate([[0.0], b[ok]])
    ys = np.concatenate([[0.0], t[ok]])
    k = np.flatnonzero(ys >= per_replica_tok_s)
    if not len(k):
        return math.nan, math.nan
    k0 = int(k[0])  # the first batch whose throughput meets the demand; linear between it and the one before
    n = float(xs[k0 - 1] + (per_replica_tok_s - ys[k0 - 1]) * (xs[k0] - xs[k0 - 1]) / (ys[k0] - ys[k0 - 1]))
    if e2e is None:
        return n, math.nan
    lat = np.asarray(e2e, dtype=float)
    fin = np.isfinite(lat) & np.isfinite(b)
    if not fin.any():
        return n, math.nan
    # below the smallest batch, that batch's latency: an upper bound, as nothing was measured below it
    at = float(np.interp(n, b[fin], lat[fin]))
    return n, min(at, float(lat[fin][-1]))


def _evaluate_candidate(cand: dict[str, Any], curve: _Curve, at: pd.DataFrame | None, inputs: PlanInputs,
                        lengths: tuple[float, float], note: str, rows: list[dict[str, Any]],
                        bad: list[dict[str, Any]], pts: list[pd.DataFrame], *,
                        ttft: np.ndarray | None = None) -> None:
    from . import catalog
    from .physics import dtype_bytes

    w, slo = inputs.workload, inputs.slo
    b = curve.batches
    n_dev = int(cand["device_count"])
    try:
        limit = catalog.resolve_model(str(cand["model"])).max_context
    except UnknownNameError:
        limit = None
    if limit is not None and w.max_context_tok > limit:
        # Runs at least as long show the deployment serves such requests (RoPE scaling, a longer-context
        # variant): they win over the catalog. LLM-Inference-Bench ran 2,048-token models at 2048/2048.
        ran = at is not None and len(at) > 0 and bool(
            (pd.to_numeric(at["input_len_tok"], errors="coerce") + pd.to_numeric(at["output_len_tok"], errors="coerce")
             >= w.max_context_tok).any())
        if not ran:
            bad.append({**{k: cand[k] for k in CANDIDATE_KEYS}, "reason": (
                f"context too long: requests of up to {w.max_context_tok:,.0f} tokens exceed {cand['model']}'s "
                f"{limit:,}-token context window (max_context in the model catalog)")})
            return
        note = "; ".join(filter(None, [note, f"beyond the catalog's {limit:,}-token context window, as the runs were"]))
    try:
        hw = catalog.resolve_hardware(str(cand["hardware"]))
        # In 1e9 B, as memory_need_gb counts: the catalog's figure is binary (HardwareSpec.memory_bytes).
        mem_gb = hw.memory_bytes * n_dev / 1e9 if hw.memory_bytes is not None else math.nan
    except UnknownNameError:
        hw, mem_gb = None, math.nan
    # Bytes per weight as the measurement ran it (weight_dtype/quantization), else the model's default.
    probe = at.head(1) if at is not None and len(at) else pd.DataFrame({"model": [cand["model"]]})
    try:
        wbytes = float(dtype_bytes(probe).iloc[0])
        need = np.array([memory_need_gb(str(cand["model"]), x, w.max_context_tok, weight_dtype_bytes=wbytes,
                                        kv_dtype_bytes=inputs.kv_dtype_bytes) for x in b])
    except PerfmodelError as exc:
        need = np.full(len(b), np.nan)
        note = "; ".join(filter(None, [note, f"memory not checked ({exc})"]))
    usable = mem_gb * inputs.memory_fraction
    mem_ok = ~(np.isfinite(need) & np.isfinite(usable) & (need > usable))
    pct = slo.percentile
    sub = at if at is not None else pd.DataFrame({"batch_size": []})
    lat: dict[str, np.ndarray] = {}
    basis: dict[str, str] = {}
    reps: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    cols: dict[str, str | None] = {}
    for stem, name in (("e2e_latency", "e2e"), ("ttft", "ttft"), ("tpot", "tpot")):
        col, bs = _lat_col(stem, pct, sub) if at is not None else (None, "derived")
        lat[name] = _stat_at(sub, col, b)
        basis[name] = bs if col is not None else "derived"
        reps[name] = _repeats_at(sub, col, b)
        cols[name] = col
    if ttft is not None and np.isfinite(ttft).any():  # the predictor's TTFT model (a mean)
        lat["ttft"], basis["ttft"] = np.asarray(ttft, dtype=float), "predicted"
        reps["ttft"] = _repeats_at(sub, None, b)
        cols["ttft"] = None
    out_len = w.mean_lengths[1]  # the workload's requests, whatever lengths the throughput was measured at
    derived_e2e = b * out_len / curve.mid
    derived_tpot = b / curve.mid
    # per batch, whether the latency is the basis's (measured or predicted) or derived: a curve extended past its
    # measured batches derives them there (a derived e2e had been labelled "measured mean")
    known = {k: np.isfinite(v) for k, v in lat.items()}
    lat["e2e"] = np.where(np.isfinite(lat["e2e"]), lat["e2e"], derived_e2e)
    lat["tpot"] = np.where(np.isfinite(lat["tpot"]), lat["tpot"], derived_tpot)
    with np.errstate(divide="ignore"):  # a predictor's band may reach 0 far from its data
        scale_lo = curve.mid / curve.lo  # pessimistic: lower throughput, longer latency
    scale_hi = curve.mid / curve.hi
    # Where no TTFT is known the target is still held to physics: no batch's first token comes sooner than its
    # prefill at the devices' peak (a 2 s target passed 70 B on H100s whose floor there was 4.6 s).
    ttft_known = np.isfinite(lat["ttft"])
    floor = (_ttft_floor(cand, probe, w.mean_lengths, b) if slo.ttft_s is not None and not ttft_known.all()
             else np.full(len(b), np.nan))
    # A latency measured at a batch by several runs has its own spread: the slowest repeat is its pessimistic end,
    # the fastest its optimistic one. The throughput band is the fit's uncertainty of the throughput, not the
    # run-to-run spread of a measured latency: it had put the H200 sample's 512/512 batch-1 e2e (repeats 11.4 to
    # 13.3 s) at 51.8 s pessimistically, and the worst repeat above the pessimistic end at 41 of 116 measured
    # batches. Derived, predicted or once-measured latencies keep the band's scaling.
    spread = {k: known[k] & (reps[k][0] >= MIN_LATENCY_REPEATS) for k in lat}

    def ends(k: str, scale: np.ndarray | float, which: int) -> np.ndarray:
        """Latency ``k`` at one end: the repeats' (``which``: 1 fastest, 2 slowest) where they bound it, else
        scaled by the throughput band; a TTFT nobody measured is its floor at either end."""
        val = np.where(spread[k], reps[k][which], lat[k] * scale)
        return np.where(ttft_known, val, floor) if k == "ttft" else val

    def ttft_at(scale: np.ndarray | float) -> np.ndarray:
        return np.where(ttft_known, lat["ttft"] * scale, floor)

    ok_mid = _slo_ok(slo, lat["e2e"], ttft_at(1.0), lat["tpot"])
    ok_lo = _slo_ok(slo, ends("e2e", scale_lo, 2), ends("ttft", scale_lo, 2), ends("tpot", scale_lo, 2))
    ok_hi = _slo_ok(slo, ends("e2e", scale_hi, 1), ends("ttft", scale_hi, 1), ends("tpot", scale_hi, 1))
    # Per batch, whether the targets' ends came from the repeats (all of them) and from the band (any of them).
    targets = [k for k in ("e2e", "ttft", "tpot") if getattr(slo, f"{k}_s") is not None]
    by_band = np.zeros(len(b), dtype=bool)
    for k in targets:
        by_band |= ~spread[k] & (ttft_known if k == "ttft" else True)
    by_repeats = np.zeros(len(b), dtype=bool)
    for k in targets:
        by_repeats |= spread[k]
    # No band (a predictor trained without calibration gives none): the ends are unknown, not met. Read as
    # met, an unknown latency made such a candidate "robust", and one that misses centrally "optimistic only".
    # Where every target's ends are the repeats', they are known without one.
    no_band = ~(np.isfinite(curve.lo) & np.isfinite(curve.hi)) & (by_band | ~by_repeats)
    ok_lo, ok_hi = ok_lo & ~no_band, np.where(no_band, ok_mid, ok_hi)
    demand = w.demand_output_tok_s * (1 + inputs.headroom)
    devices = np.array([_ceil(demand / t) * n_dev if t > 0 else -1 for t in curve.mid])
    price, price_src = _price(str(cand["hardware"]), inputs)
    cost_m = devices * price / (w.demand_output_tok_s * 3600) * 1e6
    power = _stat_at(sub, "power_w", b) if at is not None and "power_w" in sub.columns else np.full(len(b), np.nan)
    tdp_w = hw.tdp_w * n_dev if hw is not None and hw.tdp_w is not None else math.nan
    power_used = np.where(np.isfinite(power), power, tdp_w)
    # The fleet's energy per token at the demand, as the cost is the fleet's: every replica draws its power
    # whatever its load (TDP: an upper bound). Per replica at full load (power / its throughput) it had been
    # 0.188 J/tok beside a cost of the whole fleet over the demand.
    with np.errstate(divide="ignore", invalid="ignore"):
        energy = np.where(devices > 0, power_used * (devices / n_dev) / w.demand_output_tok_s, np.nan)
    pts.append(pd.DataFrame({**{k: [cand[k]] * len(b) for k in CANDIDATE_KEYS}, "batch_size": b,
                             "throughput_tok_s": curve.mid, "throughput_tok_s_lo": curve.lo,
                             "throughput_tok_s_hi": curve.hi, "throughput_per_device_tok_s": curve.mid / n_dev,
                             "e2e_s": lat["e2e"], "ttft_s": lat["ttft"], "tpot_s": lat["tpot"], "memory_ok": mem_ok,
                             "slo_ok": ok_mid, "slo_ok_lo": ok_lo, "slo_ok_hi": ok_hi, "devices": devices,
                             "cost_per_m_output_tok": cost_m, "energy_j_per_output_tok": energy}))
    key = {k: cand[k] for k in CANDIDATE_KEYS}
    if len(b) == 0:
        bad.append({**key, "reason": "no usable measurements at the workload's lengths"})
        return
    if not mem_ok.any():
        # a device of a quarter GB (a Groq LPU's SRAM) had read "0.9 x 0 GB"
        mem_txt = f"{mem_gb:,.0f}" if mem_gb >= 10 else significant(mem_gb, 2)
        # Runs of the candidate say it did run: the record, not the deployment, is short of devices (llmperf's
        # Llama-2-70B on Anyscale's A100s and vLLM's MiniMax-M2.5 on H100s were read as one device, the files
        # not saying; the reason had left the user to guess why a measured deployment "does not fit").
        ran = "" if at is None or not len(at) else (
            f"; yet {len(at)} run(s) were measured with {n_dev} device(s) as recorded: where the file did not say "
            "how many devices served it (or the weights' dtype), import it with --device-count (or --weight-dtype, "
            "--quantization)")
        bad.append({**key, "reason": (f"memory does not fit: weights + KV cache for batch {b.min():g} need "
                                      f"{need[0]:,.1f} GB > {inputs.memory_fraction:g} x {mem_txt} GB "
                                      f"({n_dev} x {hw.memory_gb if hw else math.nan:g} GB as the vendor "
                                      f"states it, which counts 2^30 bytes per GB){ran}")})
        return
    # A rate the server fell behind on (undelivered_rates) is no steady operating point: a delivered one is planned
    # wherever one meets the targets, at least optimistically. With no target inference-perf's vLLM sweep had been
    # planned at 183 req/s asked, 103 completed, 427 requests in flight and a p99 TTFT of 3.3 s.
    delivered = np.ones(len(b), dtype=bool)
    if at is not None and "_undelivered" in sub.columns and sub["_undelivered"].any():
        late = sub.groupby("batch_size")["_undelivered"].any()
        delivered = np.array([not bool(late.get(x, False)) for x in b], dtype=bool)
    fits = mem_ok & delivered if (mem_ok & delivered & (ok_mid | ok_hi)).any() else mem_ok
    status = "ok"
    choice = fits & ok_mid
    if (choice & ok_lo).any():
        # A batch that meets the targets across its band is preferred to a faster one that meets them only
        # centrally: the table ranks robust candidates first, and a curve extended by a predictor beyond its
        # measured batches had traded a robust measured batch for a fragile predicted one.
        choice &= ok_lo
        # ... and a batch inside the predictor's training domain to one outside it: llama.cpp at n_batch 64 had
        # been sized at batch 128 (out of domain, so not robust) and lost to n_batch 1 at batch 2, 5x the devices,
        # though n_batch 64 at batch 2 was in domain and met the targets across its band.
        if curve.in_domain_at is not None and (choice & curve.in_domain_at).any():
            choice &= curve.in_domain_at
    if not choice.any():
        choice = fits & ok_hi
        status = "optimistic_only"
    if not choice.any():
        # The best each target reaches on its own, at the optimistic end of the band (as ok_hi judges). Only
        # the targets missed are named with ">": a reason once read "best p90 e2e 880 ms > 60 s" for a
        # target that was met, next to the TPOT target that was not.
        checks: list[tuple[str, float, float, bool]] = []
        for name, target, label in (("e2e", slo.e2e_s, "e2e"), ("tpot", slo.tpot_s, "TPOT"),
                                    ("ttft", slo.ttft_s, "TTFT")):
            if target is None:
                continue
            at_best = ends(name, np.where(no_band, 1.0, scale_hi), 1)
            vals = np.where(mem_ok, at_best, np.inf)
            best = float(np.nanmin(vals)) if np.isfinite(vals).any() else math.nan
            checks.append((label, best, target, bool(np.isfinite(best) and best > target * (1 + 1e-12))))
        floor_only = not ttft_known[mem_ok].any()
        def judged(label: str, best: float, op: str, target: float) -> str:
            # what the figure is: a derived latency is a mean whatever percentile the target names
            b_ = basis[{"e2e": "e2e", "TPOT": "tpot", "TTFT": "ttft"}[label]]
            # in seconds, as the targets are typed ("10.6 min > 10 min" had answered a target of 600 s)
            head = f"best {label if b_ != 'measured' else f'{pct} {label}'} {in_seconds(best)} {op} " \
                   f"{in_seconds(target)}"
            return head + (" (a mean, derived from throughput)" if b_ == "derived" and pct != "mean" else
                           f" (the mean: the {pct} was not recorded)" if b_.startswith("measured mean") else "")

        missed = [judged(label, best, ">", target)
                  if not (label == "TTFT" and floor_only) else
                  f"TTFT at least {in_seconds(best)} (prefill at the devices' peak FLOPS) > "
                  f"{in_seconds(target)}"
                  for label, best, target, miss in checks if miss]
        # The cause first: a table cell shows the reason's first 60 characters or so.
        if missed:
            why = "; ".join(missed)
        else:
            why = ("each target is met at some batch, but no batch meets all of them at once (" + "; ".join(
                judged(label, best, "<=", target) if np.isfinite(best)
                else f"{pct} {label} not known" for label, best, target, _ in checks) + ")")
        end = ("at the central estimate (the predictor gives no band)" if no_band[mem_ok].all()
               else "even for the fastest of the repeats measured" if not by_band[mem_ok].any()
               else "even at the optimistic end of the band" if not by_repeats[mem_ok].any()
               else "even at the optimistic end (the fastest repeat where a batch was measured more than once, "
                    "else the throughput band)")
        bad.append({**key, "reason": f"SLO unreachable: {why}, at every batch that fits, {end}"})
        return
    per_dev = np.where(choice, curve.mid / n_dev, -np.inf)
    j = int(np.argmax(per_dev))
    t, t_lo, t_hi = float(curve.mid[j]), float(curve.lo[j]), float(curve.hi[j])
    rep = _ceil(demand / t)
    dev = rep * n_dev
    dev_lo = _ceil(demand / t_hi) * n_dev  # optimistic throughput -> fewest devices
    dev_hi = _ceil(demand / t_lo) * n_dev if t_lo > 0 else -1
    per_h = 3600 * w.demand_output_tok_s

    def costs(d: int) -> tuple[float, float, float]:
        ch = d * price if d > 0 else math.nan
        return ch, ch / per_h * 1e6, ch / (per_h * w.demand_total_tok_s / w.demand_output_tok_s) * 1e6

    c, c_lo, c_hi = costs(dev), costs(dev_lo), costs(dev_hi)
    load_b, load_e2e = at_offered_load(b[: j + 1], curve.mid[: j + 1], w.demand_output_tok_s / rep,
                                       lat["e2e"][: j + 1])
    ttft_checked = slo.ttft_s is None or bool(ttft_known[j])
    lat_basis = ", ".join(f"{k}: {basis[k] if known[k][j] else 'derived'}" for k in ("e2e", "ttft", "tpot")
                          if not (k == "ttft" and not np.isfinite(lat["ttft"][j])))
    extra = []
    # An operating point the predictor answered outside its training domain is an extrapolation: llama.cpp,
    # measured one sequence at a time, had been sized "ok" and robust at batch 128 on a GH200, 29x its measurement.
    outside = curve.in_domain_at is not None and not bool(curve.in_domain_at[j])
    if outside:
        extra.append(f"batch {float(b[j]):g} is outside the predictor's training domain: an extrapolation, "
                     "not robust (measure it before relying on it)")
    band = _latency_band(bool(by_repeats[j]), bool(by_band[j]))
    overloaded = not bool(delivered[j])
    if overloaded:
        runs_j = sub[sub["batch_size"] == b[j]]
        asked = pd.to_numeric(runs_j["request_rate_rps"], errors="coerce").mean()
        done = (pd.to_numeric(runs_j["request_throughput_rps"], errors="coerce").mean()
                if "request_throughput_rps" in runs_j.columns else math.nan)
        if not np.isfinite(done):
            done = float(curve.mid[j]) / float(lengths[1])
        extra.append(f"an overloaded rate: its run(s) completed {compact_number(done)} of the "
                     f"{compact_number(asked)} req/s asked (the server fell behind, and the latency measured grew "
                     "with the run's length); " + ("no rate of the sweep was delivered" if not delivered.any() else
                                                   "no delivered rate fits in memory" if not (mem_ok & delivered).any()
                                                   else "no delivered rate meets the targets")
                     + ": measure lower rates before relying on it")
    if status == "optimistic_only":
        extra.append(f"only works at the optimistic end{_END_WORDS[band][0]}")
    elif bool(no_band[j]):
        extra.append("no throughput band: the SLOs were checked at the central estimate only")
    elif not bool(ok_lo[j]):
        extra.append(f"SLO missed at the pessimistic end{_END_WORDS[band][1]}")
    if not ttft_checked:
        extra.append(f"TTFT not measured: checked only against its physical floor, "
                     f"{compact_seconds(float(floor[j]))} at this batch" if np.isfinite(floor[j])
                     else "TTFT not measured: TTFT target not checked")
    if not (known["e2e"][j] and known["tpot"][j]):
        extra.append("latency derived from throughput and batch where not measured")
    robust = bool(ok_lo[j]) and status == "ok" and not outside and not overloaded
    # Robust first, but not silently: a faster batch that meets the targets only centrally may need far fewer
    # devices (the H200 sample's 512/512 against a mean e2e of 17 s: batch 64 needs 5 H200s but one of its 3 runs
    # took 19.5 s; the robust batch 16 needs 17). The row names it and why it is not robust, for a buyer to weigh.
    cheaper_b, cheaper_dev, cheaper_why = math.nan, math.nan, ""
    others = fits & delivered & ok_mid & ~choice & (devices > 0)
    if robust and others.any():
        k = int(np.argmax(np.where(others, curve.mid, -np.inf)))
        if devices[k] < dev and devices[k] <= dev * (1 - CHEAPER_FRACTION):
            cheaper_b, cheaper_dev = float(b[k]), float(devices[k])
            cheaper_why = _fragile_reason(
                k, slo=slo, pct=pct, basis=basis, known=known, spread=spread,
                worst={n: ends(n, scale_lo, 2) for n in lat}, sub=sub, cols=cols, batches=b,
                outside=curve.in_domain_at is not None and not bool(curve.in_domain_at[k]),
                no_band=bool(no_band[k]))
            extra.append(f"batch {_batch_text(cheaper_b)} would need {cheaper_dev:g} devices, not {dev}, but is "
                         f"not robust: {cheaper_why}")
    e_basis = "measured" if np.isfinite(power[j]) else ("tdp" if np.isfinite(tdp_w) else "none")
    rows.append({**key, "status": status, "robust": robust,
                 "batch_size": float(b[j]), "replicas": rep,
                 "throughput_tok_s": t, "throughput_tok_s_lo": t_lo, "throughput_tok_s_hi": t_hi,
                 "throughput_per_device_tok_s": t / n_dev, "throughput_per_device_tok_s_lo": t_lo / n_dev,
                 "throughput_per_device_tok_s_hi": t_hi / n_dev,
                 "devices": dev, "devices_lo": dev_lo, "devices_hi": dev_hi,
                 "cost_per_hour": c[0], "cost_per_hour_lo": c_lo[0], "cost_per_hour_hi": c_hi[0],
                 "cost_per_m_output_tok": c[1], "cost_per_m_output_tok_lo": c_lo[1],
                 "cost_per_m_output_tok_hi": c_hi[1],
                 "cost_per_m_total_tok": c[2], "cost_per_m_total_tok_lo": c_lo[2], "cost_per_m_total_tok_hi": c_hi[2],
                 "energy_j_per_output_tok": power_used[j] * rep / w.demand_output_tok_s,
                 "energy_j_per_output_tok_lo": (power_used[j] * (dev_lo / n_dev) / w.demand_output_tok_s
                                                if dev_lo > 0 else math.nan),  # no band: -1 devices
                 "energy_j_per_output_tok_hi": (power_used[j] * (dev_hi / n_dev) / w.demand_output_tok_s
                                                if dev_hi > 0 else math.nan),
                 "price_per_device_hour": price, "price_source": price_src, "energy_basis": e_basis,
                 "e2e_s": float(lat["e2e"][j]), "ttft_s": float(lat["ttft"][j]), "tpot_s": float(lat["tpot"][j]),
                 "load_batch": load_b, "e2e_at_load_s": load_e2e, "latency_basis": lat_basis,
                 "latency_band": band, "overloaded": overloaded, "cheaper_batch": cheaper_b,
                 "cheaper_devices": cheaper_dev, "cheaper_reason": cheaper_why,
                 "memory_need_gb": float(need[j]), "memory_gb": mem_gb,
                 "lengths": f"{lengths[0]:g}/{lengths[1]:g}", "source": curve.source,
                 "confidence": (curve.confidence if curve.confidence_at is None else float(curve.confidence_at[j])),
                 "note": "; ".join(filter(None, [note, *extra]))})


CHEAPER_FRACTION = 0.1
"""How much fewer devices a batch that is not robust must need than the robust one planned for the plan to name it
(``cheaper_batch``): at least one device and this fraction of the count, so that a rounding (17 against 16) is not
offered as a saving worth the risk."""


def _fragile_reason(k: int, *, slo: SLO, pct: str, basis: Mapping[str, str], known: Mapping[str, np.ndarray],
                    spread: Mapping[str, np.ndarray], worst: Mapping[str, np.ndarray], sub: pd.DataFrame,
                    cols: Mapping[str, str | None], batches: np.ndarray, outside: bool, no_band: bool) -> str:
    """Why the batch at index ``k``, which meets the targets centrally, is not robust, in words: the runs that
    missed a target ("1 of its 3 runs measured a mean e2e of 19.5 s against the 17 s target"), or the throughput
    band's low end, or no band, or an extrapolation."""
    if outside:
        return "it is outside the predictor's training domain (an extrapolation)"
    if no_band:
        return "its predictor gives no throughput band (the targets were checked at the central estimate only)"
    why = []
    for name, label in (("e2e", "e2e"), ("ttft", "TTFT"), ("tpot", "TPOT")):
        target = getattr(slo, f"{name}_s")
        end = float(worst[name][k])
        if target is None or not (np.isfinite(end) and end > target * (1 + 1e-12)):
            continue
        stat = pct if basis[name] == "measured" and bool(known[name][k]) else "mean"
        col = cols.get(name)
        if bool(spread[name][k]) and col is not None:
            vals = pd.to_numeric(sub.loc[sub["batch_size"] == batches[k], col], errors="coerce").dropna()
            over = vals[vals > target * (1 + 1e-12)]
            of = "of " if len(over) == 1 else "of up to "
            v_txt, t_txt = _apart(float(over.max()), target)
            why.append(f"{len(over)} of its {len(vals)} runs measured a {stat} {label} {of}{v_txt} against the "
                       f"{t_txt} target")
        else:
            how = "measured once" if bool(known[name][k]) and basis[name] != "predicted" else \
                "predicted" if basis[name] == "predicted" and bool(known[name][k]) else "derived from throughput"
            v_txt, t_txt = _apart(end, target)
            why.append(f"its {stat} {label} ({how}) would be {v_txt} at the low end of its throughput band, "
                       f"against the {t_txt} target")
    return "; ".join(why) or "its targets are missed at the pessimistic end"


def _apart(value: float, target: float) -> tuple[str, str]:
    """``value`` and ``target`` in seconds with the fewest digits (3 to 6) that tell them apart: a latency just
    over its target had read "8 s ... against the 8 s target"; closer still, the value is "just over" it."""
    for digits in (3, 4, 5, 6):
        v, t = in_seconds(value, digits), in_seconds(target, digits)
        if v != t:
            return v, t
    return f"just over {in_seconds(target)}", in_seconds(target)


LATENCY_BANDS = ("repeats", "throughput band", "repeats and throughput band", "")
"""What a candidate row's pessimistic and optimistic latencies (which ``robust`` and ``optimistic_only`` judge)
come from at its batch: the spread of the runs measured there, the throughput band's scaling (derived, predicted
or once-measured latencies), both (one target each way), or nothing (no latency target)."""

_END_WORDS = {
    "repeats": (": the fastest of the repeats measured at this batch",
                ": the slowest of the repeats measured at this batch"),
    "throughput band": (" of the throughput band", " of the throughput band"),
    "repeats and throughput band": (
        ": the fastest measured repeat, or the throughput band's where a latency is derived or was measured once",
        ": the slowest measured repeat, or the throughput band's where a latency is derived or was measured once"),
    "": (" of the throughput band", " of the throughput band"),
}
"""Per :data:`LATENCY_BANDS` value, what follows "the optimistic end" and "the pessimistic end" in a note."""


def _latency_band(by_repeats: bool, by_band: bool) -> str:
    """The :data:`LATENCY_BANDS` value of one operating point."""
    return ("repeats and throughput band" if by_repeats and by_band else "repeats" if by_repeats
            else "throughput band" if by_band else "")


def _name(predictor: Any) -> str:
    return str(getattr(predictor, "name", "the predictor"))


def _plan_predictor(runs: pd.DataFrame) -> tuple[Any, str]:
    """roofline-gbm trained on ``runs`` (suspect points left out, as the What-if page trains it), and a note;
    ``(None, why)`` where it cannot be trained."""
    from .whatif import fit_whatif_model

    try:
        model, used = fit_whatif_model(runs, "roofline-gbm")
    except PerfmodelError as exc:
        return None, f"no predictor could be trained on these runs ({exc}); only measured lengths are sized"
    return model, f"what was not measured is predicted by roofline-gbm trained on the {len(used):,} runs given"


def _without_measured(at: pd.DataFrame, *, power: bool = False) -> pd.DataFrame:
    """``at`` without its latency columns, and without its power and energy too unless ``power``: what the runs
    at other lengths say of a candidate sized at the workload's lengths. Sized from those runs' throughput
    (nearest lengths) their power is kept, as it depends on the batch far more than on the lengths; predicted,
    the answer is the predictor's alone and energy is the TDP's."""
    from .schema import LATENCY_COLUMNS

    drop = (*LATENCY_COLUMNS, *(() if power else ("power_w", "energy_j")))
    return at.drop(columns=[c for c in drop if c in at.columns])


def _length_query(at: pd.DataFrame, input_len: float, output_len: float) -> pd.DataFrame:
    """The queries that predict ``at`` (one configuration at one length pair) at the given lengths: one per
    measured batch and :data:`PREDICTED_BATCHES` batch, and setting (:data:`perfmodel.curves.VARYING_BY`, e.g. llama.cpp's ``n_batch``), with the
    configuration's columns as measured and the results left out; ``_weight`` counts the runs each stands
    for, so that a curve over runs at several settings mixes them as the measured one does (:func:`plan` sizes
    each setting on its own, so there it holds one)."""
    from .curves import VARYING_BY
    from .schema import COLUMN_NAMES

    last = COLUMN_NAMES.index("batch_size")
    keep = [c for c in at.columns if c in VARYING_BY or (c in COLUMN_NAMES and COLUMN_NAMES.index(c) <= last)]
    q = at[keep].assign(input_len_tok=float(input_len), output_len_tok=float(output_len))
    by = [c for c in keep if c not in ("hardware_raw", "model_raw", "framework_version")]
    q = q.groupby(by, dropna=False, sort=False).size().rename("_weight").reset_index()
    # Every batch of PREDICTED_BATCHES too, as a candidate without runs gets: LLM-Inference-Bench measured
    # 1, 16, 32 and 64, and a workload whose target batch 1 met with room to spare sized a 70 B model on
    # A100s at batch 1 (1,664 devices) where batch 4 met it with about 470. Each takes the settings of the
    # nearest measured batch.
    measured = np.unique(q["batch_size"].to_numpy(dtype=float))
    extra = [b for b in PREDICTED_BATCHES if b not in measured]
    if extra and len(measured):
        near = {b: measured[np.argmin(np.abs(np.log2(measured) - math.log2(b)))] for b in extra}
        q = pd.concat([q, *(q[q["batch_size"] == m].assign(batch_size=float(b)) for b, m in near.items())],
                      ignore_index=True)
    return q.sort_values("batch_size", kind="stable").reset_index(drop=True)


def _predicted_curve(predictor: Any, q: pd.DataFrame, level: float) -> tuple[_Curve, np.ndarray | None] | str:
    """The predictor's curve over the queries ``q`` and its TTFT per kept batch (None without a TTFT model), or
    why there is none. Batches without a positive finite throughput are left out; several queries at one batch
    (settings, ``_weight`` runs each) are averaged with those weights."""
    from .models.base import cannot_run_reasons, predict_with_latency

    w = q.pop("_weight").to_numpy(dtype=float) if "_weight" in q.columns else np.ones(len(q))
    try:
        # The predictor's own reading of the query (roofline-gbm fills in the dtype it was trained at) can
        # find weights too large for devices the memory check admits at the model's default dtype; its
        # prediction is then NaN, which nothing downstream may rank.
        why = next((r for r in cannot_run_reasons(predictor, q) if r is not None), None)
        if why is not None:
            return str(why)
        pred = (predict_with_latency(predictor, q, level=level) if hasattr(predictor, "predict_with_ttft_band")
                else predictor.predict(q, level=level))
    except PerfmodelError as exc:
        return f"prediction failed: {exc}"
    mid = pred["pred_throughput_tok_s"].to_numpy(dtype=float)
    keep = np.isfinite(mid) & (mid > 0)  # a batch with no throughput is no operating point
    if not keep.any():
        return f"prediction failed: {_name(predictor)} gave no positive finite throughput at any batch"
    cols = {"mid": mid, "lo": pred["pred_lower"].to_numpy(dtype=float),
            "hi": pred["pred_upper"].to_numpy(dtype=float), "conf": pred["confidence"].to_numpy(dtype=float),
            "ttft": (pred["pred_ttft_s"].to_numpy(dtype=float) if "pred_ttft_s" in pred.columns
                     else np.full(len(pred), np.nan))}
    f = pd.DataFrame({"b": q["batch_size"].to_numpy(dtype=float), "w": w, **cols,
                      "dom": pred["in_domain"].to_numpy(dtype=bool)})[keep]
    g = f.groupby("b", sort=True)
    avg = {k: g.apply(lambda d, k=k: float(np.average(d[k], weights=d["w"])), include_groups=False).to_numpy()
           for k in cols}
    b, mid = g.size().index.to_numpy(dtype=float), avg["mid"]
    lo, hi = np.minimum(avg["lo"], mid), np.maximum(avg["hi"], mid)
    dom = g["dom"].all().to_numpy(dtype=bool)
    ttft = avg["ttft"] if "pred_ttft_s" in pred.columns else None
    curve = _Curve(b, mid, lo, hi, f"predicted ({_name(predictor)})", float(np.nanmean(avg["conf"])), math.nan,
                   _outside_note(b, dom), confidence_at=avg["conf"],
                   in_domain_at=dom)
    return curve, ttft


def latency_basis_notes(table: pd.DataFrame, pct: str, targets: Sequence[str]) -> list[str]:
    """The plan's notes on latency targets judged against means: a percentile the runs did not record (the
    measured mean stood in), and a latency derived from throughput and batch (a mean). Only the targets set
    (``targets``: ``e2e_s``, ``ttft_s``, ``tpot_s``) count; the CLI and the report had not said it, only the
    Planner page.

    Parameters
    ----------
    table
        :attr:`PlanResult.table` (its ``latency_basis``).
    pct
        The SLO percentile.
    targets
        The targets set.

    Returns
    -------
    list of str
    """
    out: list[str] = []
    if pct != "mean" and targets and len(table) and "latency_basis" in table.columns:
        basis = table["latency_basis"].astype(str)
        # the targets' own latencies only (a TPOT with no target read "measured mean" and was counted)
        on_mean = pd.concat([basis.str.contains(rf"\b{k[:-2]}: measured mean") for k in targets], axis=1).any(axis=1)
        if on_mean.any():
            out.append(f"The {pct} latency targets are judged against the measured mean where the runs did not "
                       f"record the {pct} ({int(on_mean.sum())} of {len(table)} candidates): "
                       "a percentile above the median sits above the mean for the usual right-skewed latencies, "
                       "so those candidates may miss the target.")
        # Only the targets set, and only where their own latency was derived ("e2e: measured p90, tpot: derived"
        # had said every e2e target was judged against a mean when only TPOT, with no target, was derived).
        words = {"e2e_s": "end-to-end", "tpot_s": "TPOT"}
        hit = {k: table["latency_basis"].astype(str).str.contains(rf"\b{k[:-2]}: derived") for k in words
               if k in targets}
        derived = pd.concat(list(hit.values()), axis=1).any(axis=1) if hit else pd.Series(dtype=bool)
        if derived.any():
            which = " and ".join(words[k] for k, m in hit.items() if m.any())
            out.append(f"Where no {which} latency was measured for a candidate ({int(derived.sum())} of "
                       f"{len(table)} candidates: sized from runs at other lengths, predicted, or runs that did not "
                       "record it) it is derived from throughput and batch, which gives a mean: the "
                       f"{pct} {which} {'targets are' if ' and ' in which else 'target is'} judged against that "
                       "mean there.")
    return out


def _outside_note(batches: np.ndarray, inside: np.ndarray) -> str:
    """Which predicted batches lie outside the predictor's training domain, in words (``""`` where none): the note
    had said "outside the training domain" of a curve whose chosen batch lay inside it."""
    if inside.all():
        return ""
    if not inside.any():
        return "outside the training domain at every batch"
    out = [f"{x:g}" for x in batches[~inside]]
    return "outside the training domain at batch " + ", ".join(out[:6]) + (" ..." if len(out) > 6 else "")


def _fewest_devices(model: str, hardware: str, inputs: PlanInputs) -> tuple[int, str]:
    """The fewest devices per replica, of 1, 2, 4 and 8, whose memory holds the model's weights and the KV cache
    of one longest request (8 where none does: the candidate is then infeasible with the memory reason), and a
    note saying so where it is more than one."""
    from . import catalog

    try:
        hw = catalog.resolve_hardware(hardware)
        need = memory_need_gb(model, 1, inputs.workload.max_context_tok, kv_dtype_bytes=inputs.kv_dtype_bytes)
    except PerfmodelError:
        return 1, ""
    if hw.memory_bytes is None or not np.isfinite(need):
        return 1, ""
    for n in (1, 2, 4, 8):
        if need <= hw.memory_bytes * n / 1e9 * inputs.memory_fraction:
            return n, "" if n == 1 else f"{n} devices per replica: the fewest of 1, 2, 4, 8 that hold the weights"
    return 8, ""


def _predicted(inputs: PlanInputs, predictor: Any, runs: pd.DataFrame, seen: set[tuple[str, str, int]],
               rows: list[dict[str, Any]], bad: list[dict[str, Any]], pts: list[pd.DataFrame]) -> None:
    """Predicted candidates: the models x hardware chosen (one side left empty takes those in the runs) that
    have no runs, at the device counts chosen, else at the fewest devices that hold the model."""
    from . import catalog
    from .models.base import MEMORY_REASON_PREFIX, heads_unsplit

    if not (inputs.models or inputs.hardware):
        return
    models = inputs.models or sorted(set(runs["model"].dropna().astype(str)))
    hardware = inputs.hardware or sorted(set(runs["hardware"].dropna().astype(str)))
    pairs = {(h, m) for h, m, _ in seen}
    ran = runs.dropna(subset=["hardware", "framework"]).groupby("hardware")["framework"].agg(
        lambda f: sorted(set(f.astype(str))))
    i_len, o_len = inputs.workload.mean_lengths
    for m in models:
        mk = catalog.resolve_model(m).key
        for h in hardware:
            hk = catalog.resolve_hardware(h).key
            if inputs.device_counts:
                counts = [(d, "") for d in inputs.device_counts if (hk, mk, d) not in seen]
            else:  # measured at some device count: those runs answer; else the fewest devices that hold it
                counts = [] if (hk, mk) in pairs else [_fewest_devices(mk, hk, inputs)]
            # The chosen framework where the hardware ran it or ran nothing; else the frameworks it ran (vLLM
            # predicted on SambaNova's SN40L, which runs SambaFlow only, came out as a candidate).
            own = ran.get(hk, [])
            fws = [inputs.predicted_framework] if not own or inputs.predicted_framework in own else own
            why_fw = "" if fws == [inputs.predicted_framework] else \
                f"{', '.join(fws)}: what {hk} ran ({inputs.predicted_framework} never ran there)"
            for (d, why_d), fw in itertools.product(counts, fws):
                # tensor parallelism splits the attention heads: 32 do not split over 3 devices (a TP-3
                # Llama-3-8B had been sized as 6 H100s)
                unsplit = heads_unsplit(pd.DataFrame({"model": [mk], "framework": [fw], "device_count": [d]}))[0]
                if unsplit is not None:
                    bad.append({"hardware": hk, "model": mk, "framework": fw, "device_count": d,
                                "reason": unsplit.removeprefix(MEMORY_REASON_PREFIX)})
                    continue
                q = pd.DataFrame({"hardware": hk, "model": mk, "framework": fw,
                                  "device_count": d, "tp_size": d, "input_len_tok": i_len, "output_len_tok": o_len,
                                  "batch_size": np.array(PREDICTED_BATCHES, dtype=float),
                                  "load_kind": "static_batch"})
                cand = {"hardware": hk, "model": mk, "framework": fw, "device_count": d}
                got = _predicted_curve(predictor, q, inputs.level)
                if isinstance(got, str):
                    bad.append({**cand, "reason": got})
                    continue
                curve, ttft = got
                note = "; ".join(filter(None, ["predicted (no measurements)", why_d, why_fw, curve.note]))
                _evaluate_candidate(cand, curve, None, inputs, (i_len, o_len), note, rows, bad, pts, ttft=ttft)
