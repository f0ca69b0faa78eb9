"""``perfmodel sweep`` and ``perfmodel sweeps``: run measurement sweeps from a plan file or flags.

Registered on the main group by :mod:`perfmodel.cli`. Progress is printed as
one plain line per point (readable in a log file and in a terminal alike);
Ctrl-C or SIGTERM finishes the point in flight and leaves the sweep
``stopped``, to be resumed with ``--resume ID``.
"""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path
from typing import Any

import click

__all__ = ["sweep_cmd", "sweeps_cmd"]


def _grid(value: str | None) -> str | None:
    return value.strip() if value else None


def _progress_line(event: Any) -> str | None:
    from .sweep.plan import about_duration, format_duration

    width = len(str(event.total))
    if event.kind == "start":
        left = event.total - event.finished
        return (f"sweep {event.sweep_id}: {event.total} points, {event.finished} already finished, {left} to run "
                f"({about_duration(event.eta_s)})")
    p = event.point
    where = "" if p is None else f"{p.key:<22}"
    if event.kind == "retry":
        return f"[{event.finished:>{width}}/{event.total}] {where} attempt {event.attempt} failed: {event.error}; retrying"
    if event.kind == "point":
        if event.error:
            what = f"FAILED after {event.attempt} attempt(s): {event.error}"
        else:
            tok_s = event.throughput_tok_s
            what = f"{tok_s:,.1f} tok/s" if tok_s is not None and math.isfinite(tok_s) else "done"
        return f"[{event.finished:>{width}}/{event.total}] {where} {what}  ETA {format_duration(event.eta_s)}"
    return None


@click.command("sweep")
@click.argument("plan_file", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--resume", "resume_id", metavar="SWEEP_ID", help="Resume (or start) a recorded sweep.")
@click.option("--retry-failed", is_flag=True, help="With --resume: run failed points again.")
@click.option("--again", "again_id", metavar="SWEEP_ID",
              help="Start the plan of a recorded sweep as a new sweep with a new dataset (flags override it).")
@click.option("--backend", type=click.Choice(["local", "http"]), default=None, help="Backend (default local).")
@click.option("--target", help="HTTP: server base URL, e.g. http://127.0.0.1:8000.")
@click.option("--model", help="Model name (catalog name or the server's model).")
@click.option("--hardware", help="Hardware label from the catalog (default cpu-x86-2vcpu).")
@click.option("--framework", help="Serving framework of the server (vllm, sglang, ...).")
@click.option("--server-type", help="HTTP: how the server forces the output length.")
@click.option("--engine-size", help="Local: micro, tiny, small, medium or large.")
@click.option("--threads", "engine_threads", type=int, help="Local: torch threads.")
@click.option("--batch", "batch", help="Local: static batch sizes, e.g. 1,2,4 or 1:32:x2.")
@click.option("--concurrency", "concurrency", help="HTTP: concurrency levels, e.g. 1,2,4 or 1:64:x2.")
@click.option("--input-len", "input_lens", help="Prompt lengths (tokens), e.g. 128,256 or 128:1024:x2.")
@click.option("--output-len", "output_lens", help="Output lengths (tokens).")
@click.option("--repeats", type=int, help="Measurements per configuration (default 5).")
@click.option("--warmup", type=int, help="Warm-up calls/requests per point (default 1).")
@click.option("--cold-start", is_flag=True, default=None, help="No warm-up at all.")
@click.option("--timeout", "timeout_s", type=float, help="Budget of one point, seconds (default 600).")
@click.option("--requests", "n_requests", type=int, help="HTTP: requests per point.")
@click.option("--retries", type=int, help="Extra attempts of a failed point (default 1).")
@click.option("--order", type=click.Choice(["interleaved", "grouped"]), default=None, help="Point order.")
@click.option("--dataset", "dataset_name", help="Dataset name.")
@click.option("-y", "--yes", "confirm_large", is_flag=True, default=None, help="Allow more than 10,000 points.")
@click.option("--dry-run", is_flag=True, help="Validate, print the points and the estimate, run nothing.")
@click.option("--quiet", is_flag=True, help="No progress lines.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def sweep_cmd(plan_file: Path | None, resume_id: str | None, again_id: str | None, retry_failed: bool,
              dry_run: bool, quiet: bool, as_json: bool, batch: str | None, concurrency: str | None, **flags: Any) -> None:
    """Run a measurement sweep from PLAN_FILE (YAML/JSON) and/or flags, or resume one with --resume ID.

    Each finished point is stored at once in the dataset the sweep fills, so
    `perfmodel show/export/fit` see it like any imported dataset.
    """
    from .cli import _want_json
    from .store import Store
    from .sweep.plan import load_plan, plan_from_dict, plan_overrides
    from .sweep.runner import create_sweep, run_sweep, stop_on_signals

    as_json = _want_json(click.get_current_context(), as_json)
    store = Store()
    overrides = {k: (_grid(v) if k in ("input_lens", "output_lens") else v) for k, v in flags.items()}
    overrides["name"] = overrides.pop("dataset_name")
    if batch and concurrency:
        raise click.UsageError("give --batch (local engine) or --concurrency (http), not both")
    overrides["batch_sizes"] = _grid(batch or concurrency)
    if concurrency and not overrides.get("backend") and plan_file is None:
        overrides["backend"] = "http"
    if resume_id is not None and again_id is not None:
        raise click.UsageError("give --resume (the same sweep) or --again (a new sweep), not both")
    if again_id is not None and plan_file is not None:
        raise click.UsageError("--again takes the plan stored with the sweep: give no PLAN_FILE")
    if resume_id is not None:
        if plan_file is not None or any(v is not None for v in overrides.values()):
            raise click.UsageError("--resume takes the plan stored with the sweep: give no PLAN_FILE or plan flags")
        sweep_id = store.sweep(resume_id).id
    else:
        if plan_file is None and again_id is None and overrides["batch_sizes"] is None:
            raise click.UsageError("give a PLAN_FILE, plan flags (--batch/--concurrency, --input-len, "
                                   "--output-len, ...), --resume SWEEP_ID or --again SWEEP_ID")
        base = (plan_from_dict(store.sweep(again_id).plan) if again_id is not None
                else load_plan(plan_file) if plan_file is not None else None)
        plan = plan_overrides(base, overrides)
        est = plan.estimate()
        if dry_run:
            if as_json:
                click.echo(json.dumps({"plan": plan.model_dump(mode="json"), "n_points": est.n_points,
                                       "estimate_s": est.total_s, "points": [p.key for p in plan.points()]},
                                      indent=2))
            else:
                click.echo(f"plan valid: {est.text()} ({est.basis})")
                for p in plan.points():
                    click.echo(f"  {p.key}")
            return
        sweep_id = create_sweep(plan, store=store).id
        if not quiet and not as_json:
            click.echo(f"created sweep {sweep_id}: {est.text()}; resume with `perfmodel sweep --resume {sweep_id}`")

    def on_progress(event: Any) -> None:
        line = _progress_line(event)
        if line and not quiet and not as_json:
            click.echo(line)

    stop = threading.Event()
    with stop_on_signals(stop):
        result = run_sweep(sweep_id, store=store, on_progress=on_progress, stop=stop, retry_failed=retry_failed)
    out = {"sweep_id": result.sweep_id, "dataset_id": result.dataset_id, "status": result.status,
           "n_points": result.n_points, "n_done": result.n_done, "n_failed": result.n_failed,
           "n_measured": result.n_measured, "error": result.error}
    if as_json:
        click.echo(json.dumps(out, indent=2))
    else:
        click.echo(f"sweep {result.sweep_id} {result.status}: {result.n_done} done, {result.n_failed} failed of "
                   f"{result.n_points} points; dataset {result.dataset_id} (perfmodel show {result.dataset_id[:8]})")
        if result.status == "stopped":
            click.echo(f"resume with: perfmodel sweep --resume {result.sweep_id}")
    if result.status == "failed":
        raise SystemExit(2)


@click.command("sweeps")
@click.option("--json", "as_json", is_flag=True, help="JSON output.")
def sweeps_cmd(as_json: bool) -> None:
    """List the recorded sweeps with their status (interrupted = its process is gone)."""
    from .cli import _want_json
    from .store import Store

    infos = Store().sweeps()
    if _want_json(click.get_current_context(), as_json):
        click.echo(json.dumps([{"id": i.id, "name": i.name, "status": i.state, "dataset_id": i.dataset_id,
                                "backend": i.backend, "n_points": i.n_points, "n_done": i.n_done,
                                "n_failed": i.n_failed, "created_at": i.created_at, "updated_at": i.updated_at,
                                "pid": i.pid, "error": i.error, "dataset_exists": i.dataset_exists} for i in infos],
                               indent=2))
        return
    if not infos:
        click.echo("no sweeps yet: start one with `perfmodel sweep PLAN.yaml` or "
                   "`perfmodel sweep --backend local --engine-size tiny --batch 1:32:x2 --input-len 64 --output-len 32`")
        return
    rows = [(i.id, i.name, i.state, i.backend or "", f"{i.n_done}/{i.n_points}", str(i.n_failed),
             i.created_at[:19], i.dataset_id if i.dataset_exists else f"{i.dataset_id} (deleted)") for i in infos]
    header = ("id", "name", "status", "backend", "done", "failed", "created (UTC)", "dataset")
    widths = [max([len(h)] + [len(r[k]) for r in rows]) for k, h in enumerate(header)]
    click.echo("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip())
    for r in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
