"""The interface every sweep backend implements.

The sweep runner (:mod:`perfmodel.sweep.runner`) is backend-agnostic: it hands a
backend one :class:`SweepPoint` at a time and gets a :class:`PointResult` back,
either a canonical runs-table row or the reason the point failed. Backends:
the in-process local engine (:mod:`perfmodel.sweep.local_backend`) and the OpenAI-compatible HTTP client (:mod:`perfmodel.sweep.http_backend`).

A backend never raises for a failed *measurement* (timeout, HTTP 500, dropped
connection, malformed stream, out of memory): it returns a :class:`PointResult`
with ``error`` set, so the runner can record it, retry as the plan says and
carry on. It raises :class:`~perfmodel.errors.PerfmodelError` only from
:meth:`Backend.check` (misconfigured or unreachable before the sweep starts).
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = ["LOAD_KINDS", "SweepPoint", "PointResult", "Backend"]

LOAD_KINDS = ("static_batch", "concurrency")
"""``load_kind`` of a :class:`SweepPoint`: the local engine's static batches, or HTTP closed-loop concurrency."""


@dataclass(frozen=True)
class SweepPoint:
    """One planned measurement.

    Attributes
    ----------
    load_kind
        ``"static_batch"`` (local engine) or ``"concurrency"`` (HTTP closed loop).
    batch_size
        Static batch size or concurrency level.
    input_len_tok, output_len_tok
        Prompt and generated lengths of every request, tokens.
    repeat_idx
        0-based repeat of this configuration.
    n_requests
        HTTP: requests measured at this point (``None``: the backend's default,
        e.g. ``max(4 * concurrency, 8)``); ignored by the local engine.
    warmup
        Warm-up requests / calls before measuring.
    timeout_s
        Budget of the whole point, seconds.
    key
        Stable id of the point within the sweep (used for resume).
    """

    load_kind: str
    batch_size: int
    input_len_tok: int
    output_len_tok: int
    repeat_idx: int
    n_requests: int | None
    warmup: int
    timeout_s: float
    key: str


@dataclass(frozen=True)
class PointResult:
    """What a backend measured at one point.

    Attributes
    ----------
    point
        The point measured.
    row
        Canonical runs-table columns (plus ``fw_``/``hw_`` extras) when it
        succeeded, else ``None``.
    error
        Why it failed (timeout, HTTP 500, connection dropped, malformed stream,
        OOM, ...), else ``None``.
    n_ok, n_failed
        Requests that succeeded / failed within the point.
    """

    point: SweepPoint
    row: dict[str, Any] | None
    error: str | None
    n_ok: int = 0
    n_failed: int = 0

    @property
    def ok(self) -> bool:
        """True when the point produced a row and no error."""
        return self.row is not None and self.error is None


class Backend(ABC):
    """A way to measure sweep points (local engine, HTTP server, a test fake).

    Subclasses set :attr:`name` and implement :meth:`run_point`; the other
    methods have harmless defaults.
    """

    name: ClassVar[str]

    def describe(self) -> dict[str, Any]:
        """Provenance of the measurements: target, model, server version, engine config...

        Returns
        -------
        dict
            JSON-serialisable description, stored with the sweep.
        """
        return {"backend": self.name}

    def check(self) -> None:
        """Check the backend can run before the sweep starts.

        Raises
        ------
        PerfmodelError
            When the target is unreachable or the backend misconfigured.
        """
        return None

    @abstractmethod
    def run_point(self, point: SweepPoint, *, cancel: threading.Event) -> PointResult:
        """Measure one point.

        Parameters
        ----------
        point
            What to measure.
        cancel
            Set when the sweep is being stopped; a backend should return soon
            (with ``error="cancelled"``) when it can.

        Returns
        -------
        PointResult
            The row, or the reason it failed (never raises for a failed measurement).
        """

    def close(self) -> None:
        """Release connections, models, threads (idempotent)."""
        return None
