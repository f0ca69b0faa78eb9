"""The sweep runner: measure a plan's points one by one into the store, resumably.

:func:`create_sweep` records a plan, its empty dataset and its planned points
(status ``pending``); :func:`run_sweep` runs every point not yet finished, in
plan order (see :mod:`perfmodel.sweep.plan`), with any
:class:`~perfmodel.sweep.backend.Backend`:

- each finished point is written at once in its own transaction (row, point
  status and the dataset's run count together, :meth:`perfmodel.store.Store.record_point`),
  so a crash loses at most the point in flight and a resumed sweep neither
  loses nor repeats a finished point;
- a failed point (timeout, HTTP error, dropped connection, malformed stream,
  out of memory) is retried ``plan.retries`` times, then recorded as failed
  with its reason, and the sweep carries on;
- ``on_progress(ProgressEvent)`` is called after every attempt (points done,
  total, ETA, current throughput, the last row or failure);
- setting ``stop`` (the CLI sets it on Ctrl-C / SIGTERM, the app's Stop sends
  SIGTERM) finishes the point in flight, leaves the rest pending and marks the
  sweep ``stopped``; :func:`run_sweep` on it again resumes.

:func:`launch_detached` runs ``python -m perfmodel sweep --resume ID`` in its
own session, so a sweep started from the app outlives the browser tab.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import PerfmodelError, UnknownNameError, ValidationError
from ..store import Store, SweepInfo, check_resumable
from .backend import Backend, PointResult, SweepPoint
from .plan import SweepPlan, plan_from_dict

__all__ = [
    "ProgressEvent",
    "ProgressCallback",
    "SweepResult",
    "create_sweep",
    "run_sweep",
    "make_backend",
    "resolve_identity",
    "launch_detached",
    "stop_sweep",
    "stop_on_signals",
    "sweep_log_path",
    "SWEEP_SOURCE_FORMAT",
]

SWEEP_SOURCE_FORMAT = "perfmodel-sweep"
"""``source_format`` of rows whose backend did not name itself."""
CANCELLED = "cancelled"


@dataclass(frozen=True)
class ProgressEvent:
    """What happened in a sweep, passed to ``on_progress``.

    Attributes
    ----------
    sweep_id
        The sweep.
    kind
        ``"start"``, ``"point"`` (a point finished: done or failed), ``"retry"``
        (an attempt failed and will be retried) or ``"finish"``.
    done, failed, total
        Points finished successfully, failed for good, and planned (all runs of
        the sweep, resumed ones included).
    elapsed_s
        Seconds since this run started.
    eta_s
        Estimated seconds left (measured pace of this run; the plan's estimate before the first point).
    throughput_tok_s
        Output throughput of the last successful point, else ``None``.
    point
        The point concerned (``None`` for start/finish).
    row
        Its row when it succeeded.
    error
        Its failure reason when it failed.
    attempt
        Attempt number of the point (1-based).
    status
        The sweep's status (``finish`` only).
    """

    sweep_id: str
    kind: str
    done: int
    failed: int
    total: int
    elapsed_s: float
    eta_s: float
    throughput_tok_s: float | None = None
    point: SweepPoint | None = None
    row: Mapping[str, Any] | None = None
    error: str | None = None
    attempt: int = 0
    status: str | None = None

    @property
    def finished(self) -> int:
        """Points no longer pending (done + failed)."""
        return self.done + self.failed


ProgressCallback = Callable[[ProgressEvent], None]


@dataclass(frozen=True)
class SweepResult:
    """The outcome of one :func:`run_sweep` call.

    Attributes
    ----------
    sweep_id, dataset_id
        The sweep and the dataset holding its rows.
    status
        ``done``, ``failed`` or ``stopped``.
    n_points, n_done, n_failed
        Planned, successful and failed points (whole sweep).
    n_measured
        Points finished by this call (done or failed).
    error
        Why the sweep failed or stopped, else ``None``.
    """

    sweep_id: str
    dataset_id: str
    status: str
    n_points: int
    n_done: int
    n_failed: int
    n_measured: int
    error: str | None


def resolve_identity(plan: SweepPlan) -> dict[str, str]:
    """The hardware and model keys the rows will carry, resolved through the catalog.

    Parameters
    ----------
    plan
        The plan.

    Returns
    -------
    dict
        ``hardware``, ``hardware_raw``, ``model``, ``model_raw`` and (when the
        plan names one) ``framework``. A model missing from the catalog keeps
        its name (a served model's name is often not a catalog entry).

    Raises
    ------
    UnknownNameError
        The hardware label is not in the catalog (the message lists close matches).
    """
    from .. import catalog

    out = {"hardware_raw": plan.hardware, "model_raw": plan.model_name()}
    out["hardware"] = str(catalog.resolve_hardware(plan.hardware).key)
    try:
        out["model"] = str(catalog.resolve_model(plan.model_name()).key)
    except UnknownNameError:
        out["model"] = plan.model_name()
    if plan.framework:
        out["framework"] = str(catalog.canonical_framework(plan.framework))
    return out


def make_backend(plan: SweepPlan) -> Backend:
    """The backend a plan asks for (nothing is loaded or connected yet).

    Parameters
    ----------
    plan
        The plan.

    Returns
    -------
    Backend

    Raises
    ------
    PerfmodelError
        The backend cannot be built from the plan's settings.
    """
    if plan.backend == "local":
        from .local_backend import LocalEngineBackend

        opts = {"engine_size": plan.engine_size, "num_threads": plan.engine_threads, "dtype": plan.engine_dtype,
                "device": plan.engine_device, "seed": plan.seed, "hardware": plan.hardware,
                "model": plan.model, **plan.backend_options}
        try:
            return LocalEngineBackend(**opts)
        except TypeError as exc:
            raise PerfmodelError(f"backend_options do not fit the local engine: {exc}") from None
    try:
        from . import http_backend
    except ImportError as exc:
        raise PerfmodelError(f"the http backend is not available in this installation ({exc})") from None
    classes = [c for c in vars(http_backend).values()
               if isinstance(c, type) and issubclass(c, Backend) and getattr(c, "name", None) == "http"]
    if not classes:
        raise PerfmodelError("the http backend is not available in this installation (no Backend named 'http')")
    opts = {"target": plan.target, "model": plan.model, "server_type": plan.server_type, **plan.backend_options}
    try:
        return classes[0](**{k: v for k, v in opts.items() if v is not None})
    except TypeError as exc:
        raise PerfmodelError(f"the plan's settings do not fit the http backend: {exc}") from None


def create_sweep(plan: SweepPlan, *, store: Store | None = None) -> SweepInfo:
    """Record a sweep to run later (status ``pending``): its plan, empty dataset and planned points.

    Parameters
    ----------
    plan
        A validated plan.
    store
        Default: the store in :func:`perfmodel.config.home_dir`.

    Returns
    -------
    SweepInfo

    Raises
    ------
    UnknownNameError
        The plan's hardware is not in the catalog.
    StoreError
        The store could not be written.
    """
    store = store if store is not None else Store()
    identity = resolve_identity(plan)
    provenance = {"identity": identity, "estimate_s": plan.estimate().total_s, "host": _host()}
    return store.create_sweep(plan.dataset_name(), plan.model_dump(mode="json"), [p.key for p in plan.points()],
                              backend=plan.backend, provenance=provenance)


def _host() -> dict[str, Any]:
    import platform

    return {"hostname": platform.node(), "platform": platform.platform(), "python": platform.python_version(),
            "cpu_count": os.cpu_count()}


def _complete_row(row: Mapping[str, Any], point: SweepPoint, identity: Mapping[str, str],
                  backend: Backend) -> dict[str, Any]:
    """Fill what the plan knows into a backend row: identity from the plan, the point's load."""
    import pandas as pd

    out = dict(row)
    out["hardware"] = identity["hardware"]
    out["hardware_raw"] = identity["hardware_raw"]
    out["model"] = identity["model"]
    if identity["model"] == "unknown" and row.get("model") not in (None, "", "unknown"):
        # The plan names no model: the backend's own name (an HTTP backend's model_label
        # or the served name) beats "unknown", resolved through the catalog where it can be.
        from .. import catalog

        try:
            out["model"] = str(catalog.resolve_model(str(row["model"])).key)
        except UnknownNameError:
            out["model"] = str(row["model"])
    out.setdefault("model_raw", identity["model_raw"])
    if "framework" in identity:
        out["framework"] = identity["framework"]
    out.setdefault("framework", backend.name)
    out.setdefault("device_count", 1)
    out.setdefault("input_len_tok", float(point.input_len_tok))
    out.setdefault("output_len_tok", float(point.output_len_tok))
    out["load_kind"] = point.load_kind
    out.setdefault("batch_size", float(point.batch_size))
    out["repeat_idx"] = point.repeat_idx
    out.setdefault("source_format", SWEEP_SOURCE_FORMAT)
    out.setdefault("throughput_basis", "output+total")
    out.setdefault("timestamp", pd.Timestamp.now(tz="UTC"))
    return out


def _validated(row: dict[str, Any]) -> Any:
    from .local_engine import runs_frame

    return runs_frame([row])


def run_sweep(sweep_id: str, *, store: Store | None = None, backend: Backend | None = None,
              on_progress: ProgressCallback | None = None, stop: threading.Event | None = None,
              retry_failed: bool = False) -> SweepResult:
    """Run (or resume) a sweep: every pending point, in plan order.

    Parameters
    ----------
    sweep_id
        Id (or unique prefix) of a sweep made by :func:`create_sweep`.
    store
        Default: the store in :func:`perfmodel.config.home_dir`.
    backend
        Default: :func:`make_backend` of the stored plan (closed at the end).
        A backend given here is not closed.
    on_progress
        Called with a :class:`ProgressEvent` at the start, after every attempt and at the end.
    stop
        Set it (from another thread or a signal handler) to stop after the point in flight.
    retry_failed
        Run the points that failed in earlier runs again.

    Returns
    -------
    SweepResult

    Raises
    ------
    StoreError
        Another live process runs this sweep, or the store failed.
    PerfmodelError
        The plan is invalid or the backend cannot run (``check``); the sweep is then marked ``failed``.
    """
    store = store if store is not None else Store()
    stop = stop if stop is not None else threading.Event()
    info = store.claim_sweep(sweep_id, os.getpid())
    sid = info.id
    own_backend = backend is None
    try:
        try:
            plan = plan_from_dict(info.plan)
            identity = resolve_identity(plan)
            if backend is None:
                backend = make_backend(plan)
            backend.check()
        except PerfmodelError as exc:
            store.set_sweep_status(sid, "failed", error=str(exc))
            raise
        return _run(store, sid, plan, identity, backend, on_progress, stop, retry_failed)
    except KeyboardInterrupt:
        store.set_sweep_status(sid, "stopped", error="interrupted (Ctrl-C)")
        raise
    finally:
        if own_backend and backend is not None:
            backend.close()


def _run(store: Store, sid: str, plan: SweepPlan, identity: Mapping[str, str], backend: Backend,
         on_progress: ProgressCallback | None, stop: threading.Event, retry_failed: bool) -> SweepResult:
    if retry_failed:
        store.reset_failed_points(sid)
    states = store.sweep_points(sid)
    status_of = dict(zip(states["key"].tolist(), states["status"].tolist(), strict=True))
    points = plan.points()
    todo = [p for p in points if status_of.get(p.key, "pending") == "pending"]
    done = sum(1 for s in status_of.values() if s == "done")
    failed = sum(1 for s in status_of.values() if s == "failed")
    total = len(points)
    est_per_point_s = plan.estimate().per_point_s
    t0 = time.perf_counter()
    durations: list[float] = []
    last_tok_s: float | None = None
    last_error: str | None = None
    measured = 0

    def eta(remaining: int) -> float:
        pace = sum(durations) / len(durations) if durations else est_per_point_s
        return pace * remaining

    def emit(kind: str, **kw: Any) -> None:
        if on_progress is not None:
            on_progress(ProgressEvent(sweep_id=sid, kind=kind, done=done, failed=failed, total=total,
                                      elapsed_s=time.perf_counter() - t0, eta_s=kw.pop("eta_s", eta(len(todo))),
                                      throughput_tok_s=last_tok_s, **kw))

    emit("start")
    for i, point in enumerate(todo):
        if stop.is_set():
            break
        started = time.perf_counter()
        result: PointResult | None = None
        frame: Any = None
        attempts = 0
        for attempts in range(1, plan.retries + 2):  # noqa: B007 - the last attempt number is recorded
            result, frame = _attempt(backend, point, stop, identity)
            if result.ok or stop.is_set():
                break
            if attempts <= plan.retries:
                emit("retry", point=point, error=result.error, attempt=attempts,
                     eta_s=eta(len(todo) - i))
        assert result is not None
        if not result.ok and stop.is_set():
            break  # the point in flight was cut short: it stays pending for a resume
        if result.ok:
            assert result.row is not None
            store.record_point(sid, point.key, status="done", attempts=attempts, runs=frame)
            done += 1
            tok_s = result.row.get("output_throughput_tok_s")
            last_tok_s = float(tok_s) if tok_s is not None and math.isfinite(float(tok_s)) else None
        else:
            store.record_point(sid, point.key, status="failed", attempts=attempts, error=result.error)
            failed += 1
            last_error = result.error
        measured += 1
        durations.append(time.perf_counter() - started)
        emit("point", point=point, row=result.row, error=result.error, attempt=attempts,
             eta_s=eta(len(todo) - i - 1))

    if stop.is_set() and done + failed < total:
        status, error = "stopped", "stopped on request"
    elif done == 0 and failed > 0:
        status, error = "failed", f"every point failed; last reason: {last_error}"
    else:
        status, error = "done", None
    store.set_sweep_status(sid, status, error=error)
    info = store.sweep(sid)
    emit("finish", status=status, error=error, eta_s=0.0 if status == "done" else eta(total - done - failed))
    return SweepResult(sweep_id=sid, dataset_id=info.dataset_id, status=status, n_points=info.n_points,
                       n_done=info.n_done, n_failed=info.n_failed, n_measured=measured, error=error)


def _attempt(backend: Backend, point: SweepPoint, stop: threading.Event,
             identity: Mapping[str, str]) -> tuple[PointResult, Any]:
    """One attempt at a point, and its validated one-row frame; any backend exception becomes a failure reason."""
    try:
        result = backend.run_point(point, cancel=stop)
    except PerfmodelError as exc:
        return PointResult(point, None, str(exc)), None
    except Exception as exc:  # noqa: BLE001 - a backend bug must not end the sweep; the reason is recorded
        return PointResult(point, None, f"{type(exc).__name__}: {exc}"), None
    if result.row is None or result.error is not None:
        return PointResult(point, None, result.error or "the backend returned no row", result.n_ok,
                           result.n_failed), None
    try:
        frame = _validated(_complete_row(result.row, point, identity, backend))
    except ValidationError as exc:
        return PointResult(point, None, f"the backend's row is not valid: {exc}", result.n_ok,
                           result.n_failed), None
    return PointResult(point, frame.iloc[0].to_dict(), None, result.n_ok, result.n_failed), frame


@contextlib.contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[threading.Event]:
    """Set ``stop`` on SIGINT/SIGTERM while inside the block (main thread only), so a sweep finishes cleanly.

    A second Ctrl-C raises :class:`KeyboardInterrupt` as usual.

    Parameters
    ----------
    stop
        The event the runner watches.

    Yields
    ------
    threading.Event
        ``stop``.
    """
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def handler(signum: int, frame: Any) -> None:
        if stop.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        stop.set()

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def sweep_log_path(home: str | Path, sweep_id: str) -> Path:
    """Where a detached sweep writes its output: ``<home>/sweeps/<id>.log``.

    Parameters
    ----------
    home
        The data directory.
    sweep_id
        The sweep.

    Returns
    -------
    pathlib.Path
    """
    return Path(home) / "sweeps" / f"{sweep_id}.log"


def launch_detached(sweep_id: str, *, home: str | Path, retry_failed: bool = False) -> int:
    """Run ``python -m perfmodel sweep --resume ID`` in its own session (it survives the caller).

    Parameters
    ----------
    sweep_id
        A sweep made by :func:`create_sweep`.
    home
        The data directory the child uses.
    retry_failed
        Also re-run failed points.

    Returns
    -------
    int
        The child's process id.

    Raises
    ------
    NotFoundError
        No such sweep, or its dataset was deleted (nothing is started).
    PerfmodelError
        The process could not be started.
    """
    check_resumable(Store(home).sweep(sweep_id))
    log = sweep_log_path(home, sweep_id)
    cmd = [sys.executable, "-m", "perfmodel", "--home", str(home), "sweep", "--resume", sweep_id]
    if retry_failed:
        cmd.append("--retry-failed")
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as out:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True, close_fds=True)
    except OSError as exc:
        raise PerfmodelError(f"cannot start the sweep process ({exc}); command: {' '.join(cmd)}") from None
    return int(proc.pid)


def stop_sweep(sweep_id: str, *, store: Store | None = None) -> bool:
    """Ask a running sweep to stop (SIGTERM: it finishes the point in flight, then marks itself ``stopped``).

    Parameters
    ----------
    sweep_id
        The sweep.
    store
        Default: the store in :func:`perfmodel.config.home_dir`.

    Returns
    -------
    bool
        True when a live process was signalled; False when none runs it (a
        ``pending``/``running`` sweep is then marked ``stopped`` directly).

    Raises
    ------
    NotFoundError
        No such sweep.
    """
    store = store if store is not None else Store()
    info = store.sweep(sweep_id)
    if info.alive and info.pid and info.status == "running":
        try:
            os.kill(info.pid, signal.SIGTERM)
            return True
        except ProcessLookupError:
            pass
    if info.status in ("pending", "running"):
        store.set_sweep_status(info.id, "stopped", error="stopped on request")
    return False
