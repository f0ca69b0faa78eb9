"""The Sweeps page's state keys, cached store reads and form-to-plan mapping.

Reads are keyed on ``(home, stamp)`` like :mod:`perfmodel.ui.cached`: a point
stored by the detached sweep process changes the stamp, so the next poll of
the page's fragment sees it. Starting, stopping and resuming go straight to
:mod:`perfmodel.sweep.runner` (they are actions, not reads).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from ..errors import Problem, ValidationError
from ..plots import throughput_figure
from ..sweep.plan import DEFAULT_LENGTH_CONTROL, SERVER_TYPES, SweepPlan, plan_from_dict, plan_from_text
from . import cached

__all__ = [
    "PREFIX",
    "SELECTED",
    "sweep_id_of",
    "SELECT_WIDGET",
    "FORM",
    "FIELD",
    "UPLOAD",
    "ACTIVE_STATES",
    "POLL_S",
    "RESUMED",
    "RESUME_WAIT_S",
    "resumed_wait",
    "server_problem",
    "sweeps_table",
    "sweep_points_table",
    "sweep_figure",
    "sweep_log_tail",
    "eta_s",
    "plan_from_form",
    "plan_from_upload",
    "server_type_label",
    "SERVER_TYPES",
    "FORM_DEFAULTS",
    "URL_SPEC",
]

PREFIX = "sweeps."
#: The sweep shown in the progress panel (a selection, kept across reruns).
SELECTED = "sweeps.selected"
SELECT_WIDGET = "sweeps.select"
FORM = "sweeps.form"
#: Whether the "New sweep" panel is open (keyed, so that a rerun (Check plan, Enter in a field) keeps it as the
#: user left it; unkeyed, each rerun closed it again once a sweep existed).
NEW_OPEN = "sweeps.new_open"
FIELD = {name: f"sweeps.form.{name}" for name in (
    "backend", "engine_size", "engine_threads", "target", "server_type", "model", "hardware", "framework",
    "batch_sizes", "input_lens", "output_lens", "repeats", "warmup", "timeout_s", "n_requests", "retries", "name",
    "confirm_large")}
FORM_DEFAULTS: dict[str, Any] = {
    "backend": "local", "engine_size": "tiny", "engine_threads": 1, "target": "", "server_type": "generic",
    "model": "", "framework": "", "hardware": "cpu-x86-2vcpu", "batch_sizes": "1:32:x2", "input_lens": "64",
    "output_lens": "32", "repeats": 3, "warmup": 1, "timeout_s": 600.0, "retries": 1, "n_requests": 0, "name": "", "confirm_large": False}
"""The form's initial values (given through the session state, so that a link can replace them)."""
URL_SPEC: dict[str, tuple[str, Any]] = {"sweep": (SELECTED, ""),
                                        **{name: (FIELD[name], d) for name, d in FORM_DEFAULTS.items()}}
"""The page's URL state: the selected sweep and the form's values as last submitted (Check plan / Start)."""
UPLOAD = "sweeps.upload"
ACTIVE_STATES = ("pending", "running")
"""States in which the page keeps polling."""
POLL_S = 2.0
"""Seconds between polls of a running sweep."""
LOG_TAIL_LINES = 15
RESUMED = "sweeps.resumed"
"""Session key: ``(sweep id, time.time())`` of the last Resume, until the sweep's process has taken it up."""
RESUME_WAIT_S = 60.0
"""How long the page polls a resumed sweep whose process has not yet marked it pending or running."""


def resumed_wait(sweep_id: str, state: str, now: float | None = None) -> bool:
    """Whether the page should poll ``sweep_id`` though it was not running when the page was drawn: it was
    just resumed (:data:`RESUMED`), less than :data:`RESUME_WAIT_S` ago, and its process has not yet changed
    its ``state``. Without this the page read "stopped" after a Resume until it was reloaded, though the
    sweep had run to the end (the polling is chosen when the page is drawn, before the process starts).

    Parameters
    ----------
    sweep_id
        The selected sweep.
    state
        Its state when the page was drawn.
    now
        The time (default :func:`time.time`).
    """
    import time

    mark = st.session_state.get(RESUMED)
    if not mark or mark[0] != sweep_id or state in ACTIVE_STATES:
        return False
    return (time.time() if now is None else now) - float(mark[1]) < RESUME_WAIT_S


def sweep_id_of(value: Any, ids: list[str]) -> str | None:
    """The sweep a selector value names: an id of ``ids`` as is, or the id at the end of a label
    (``"name · running · 1/2 (ID)"``) that the browser sent back after the label changed; None for neither.

    Parameters
    ----------
    value
        The selector's value (or a link's).
    ids
        The sweeps' ids.

    Returns
    -------
    str or None
    """
    if value in ids:
        return str(value)
    m = re.search(r"\(([^()\s]+)\)\s*$", str(value or ""))
    return m.group(1) if m and m.group(1) in ids else None


@st.cache_data(show_spinner=False, max_entries=32)
def sweeps_table(home: str, stamp: int) -> pd.DataFrame:
    """Every sweep, newest first: id, name, status, progress, dataset.

    Parameters
    ----------
    home
        The data directory.
    stamp
        :func:`perfmodel.ui.cached.store_stamp` of ``home`` (part of the key only).

    Returns
    -------
    pandas.DataFrame
    """
    rows = [{"id": i.id, "name": i.name, "status": i.state, "backend": i.backend, "done": i.n_done,
             "failed": i.n_failed, "points": i.n_points, "created": pd.Timestamp(i.created_at),
             "updated": pd.Timestamp(i.updated_at), "dataset_id": i.dataset_id, "error": i.error or ""}
            for i in cached.open_store(home).sweeps()]
    cols = ["id", "name", "status", "backend", "done", "failed", "points", "created", "updated", "dataset_id",
            "error"]
    return pd.DataFrame(rows, columns=cols)


@st.cache_data(show_spinner=False, max_entries=32)
def sweep_points_table(home: str, sweep_id: str, stamp: int) -> pd.DataFrame:
    """The planned points of a sweep and their status.

    Parameters
    ----------
    home, sweep_id
        Where and which.
    stamp
        Part of the key only.

    Returns
    -------
    pandas.DataFrame
    """
    return cached.open_store(home).sweep_points(sweep_id)


@st.cache_data(show_spinner=False, max_entries=32)
def sweep_figure(home: str, dataset_id: str, stamp: int, *, finished: bool = False) -> go.Figure:
    """Throughput against batch size (or concurrency) of the points stored so far, one colour per length pair.

    Parameters
    ----------
    home, dataset_id
        Where and which dataset.
    stamp
        Part of the key only.
    finished
        The sweep has ended: the title no longer says "so far".

    Returns
    -------
    plotly.graph_objects.Figure
    """
    runs = cached.open_store(home).runs(dataset_id)
    return throughput_figure(runs, x="batch_size", y="output_throughput_tok_s", color="lengths", log_x=True,
                             title="Output throughput" if finished else "Output throughput so far")


def sweep_log_tail(home: str, sweep_id: str) -> str:
    """The last lines the detached sweep process wrote (empty when there is no log).

    Parameters
    ----------
    home, sweep_id
        Where and which.

    Returns
    -------
    str
    """
    from ..sweep.runner import sweep_log_path

    path = sweep_log_path(home, sweep_id)
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-LOG_TAIL_LINES:])


def eta_s(points: pd.DataFrame) -> float | None:
    """Seconds left at the pace of the points finished so far (``None`` before two have finished).

    Parameters
    ----------
    points
        :meth:`perfmodel.store.Store.sweep_points` of the sweep.

    Returns
    -------
    float or None
    """
    finished = points[points["status"] != "pending"]
    if len(finished) < 2:
        return None
    stamps = pd.to_datetime(finished["updated_at"].astype(object), utc=True, format="ISO8601")
    span_s = (stamps.max() - stamps.min()).total_seconds()
    return span_s / (len(finished) - 1) * int((points["status"] == "pending").sum())


def plan_from_form(values: Mapping[str, Any]) -> SweepPlan:
    """Validate the form's values as a plan (blank fields take the plan's defaults).

    Parameters
    ----------
    values
        Field name (keys of :data:`FIELD`) -> widget value.

    Returns
    -------
    SweepPlan

    Raises
    ------
    ValidationError
        Every problem, naming the plan option.
    """
    data: dict[str, Any] = {}
    for k, v in values.items():
        if isinstance(v, str):
            v = v.strip()
            if not v:
                continue
        if v is None:
            continue
        data[k] = v
    if data.get("n_requests") == 0:
        data.pop("n_requests")
    if data.get("backend") == "local":
        for k in ("target", "n_requests", "server_type"):
            data.pop(k, None)
    else:
        for k in ("engine_size", "engine_threads"):
            data.pop(k, None)
    try:
        return plan_from_dict(data)
    except ValidationError as exc:
        # The form's words, not the plan file's: "Server URL", not "column 'target'".
        labels = {**FORM_LABELS, "batch_sizes": FORM_LABELS["batch_sizes" if data.get("backend") == "local"
                                                             else "concurrency"]}
        fixed = [Problem(f"{labels[p.column]}: {p.message}") if p.column in labels else p for p in exc.problems]
        raise ValidationError(f"{len(fixed)} thing(s) to fix in the form:", fixed) from None


FORM_LABELS = {
    "backend": "Backend", "engine_size": "Engine size", "engine_threads": "Engine threads", "target": "Server URL",
    "server_type": "Server type", "model": "Model (as served)", "hardware": "Hardware", "framework": "Framework",
    "batch_sizes": "Batch sizes", "concurrency": "Concurrency levels", "input_lens": "Input lengths (tokens)",
    "output_lens": "Output lengths (tokens)", "repeats": "Repeats", "warmup": "Warm-up",
    "timeout_s": "Timeout per point (s)", "retries": "Retries", "n_requests": "Requests per point",
    "name": "Dataset name", "confirm_large": "Allow more than 10,000 points"}
"""Plan option -> the Sweeps form's label for it, for the form's error messages."""


def server_type_label(server_type: str) -> str:
    """``"transformers (generation_config)"``: a server type and how it forces the output length.

    Parameters
    ----------
    server_type
        One of :data:`perfmodel.sweep.plan.SERVER_TYPES`.

    Returns
    -------
    str
    """
    return f"{server_type} ({DEFAULT_LENGTH_CONTROL.get(server_type, '?')})"


def plan_from_upload(name: str, content: bytes) -> SweepPlan:
    """Validate an uploaded plan file.

    Parameters
    ----------
    name
        File name (for messages).
    content
        Its bytes (YAML or JSON, UTF-8).

    Returns
    -------
    SweepPlan

    Raises
    ------
    ValidationError
        Unreadable or invalid.
    """
    return plan_from_text(content.decode("utf-8", errors="replace"), source=name)


def server_problem(plan: Any) -> str | None:
    """For an HTTP plan, why its server cannot be swept now (unreachable, no such model), as the sweep's own
    first step would find (:meth:`perfmodel.sweep.http_backend` ``check``); None when it answers, or for a
    local plan. "Check plan" had said "Plan valid" for a server that did not answer, and Start then failed.

    Parameters
    ----------
    plan
        A validated :class:`perfmodel.sweep.plan.SweepPlan`.
    """
    if plan.backend != "http":
        return None
    from ..errors import PerfmodelError
    from ..sweep.runner import make_backend

    backend = None
    try:
        backend = make_backend(plan)
        backend.check()
    except PerfmodelError as exc:
        return str(exc)
    finally:
        if backend is not None:
            backend.close()
    return None
