"""CLI: ``perfmodel plan``, ``perfmodel report`` and ``perfmodel analyses`` (registered by :mod:`perfmodel.cli`)."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import click

from .errors import PerfmodelError

__all__ = ["plan_cmd", "report_cmd", "analyses_cmd", "register", "ANALYSIS_KIND_PLANNER"]

ANALYSIS_KIND_PLANNER = "planner"
"""Kind of the analyses the Planner page saves: payload ``{"dataset": id, "plan": PlanInputs as JSON}``."""

_PLAN_COLUMNS = ["hardware", "model", "framework", "device_count", "lengths", "source", "status", "batch_size",
                 "throughput_per_device_tok_s", "devices", "devices_lo", "devices_hi", "cost_per_hour",
                 "cost_per_m_output_tok", "energy_j_per_output_tok", "energy_basis", "e2e_s", "load_batch",
                 "e2e_at_load_s"]
_LENGTHS_HEADER = "sized_at"
"""Header of the ``lengths`` column in the printed table (shown only when some differ from the workload's)."""
_SOURCE_HEADER = "sized_from"
"""Header of the ``source`` column in the printed table (shown only when some candidate was predicted)."""
_MISSING = "—"
"""Printed for an unknown value (no price, no power figure)."""

_PLAN_FLAGS = {"workload.request_rate_rps": "--rate", "workload.output_tok_s": "--tok-s",
               "workload.input_len_tok": "--input-len", "workload.output_len_tok": "--output-len",
               "slo.ttft_s": "--ttft", "slo.tpot_s": "--tpot", "slo.e2e_s": "--e2e", "slo.percentile": "--percentile",
               "models": "--model", "hardware": "--hardware", "frameworks": "--framework",
               "device_counts": "--devices", "prices": "--price", "currency": "--currency",
               "usd_to_currency": "--usd-to-currency",
               "headroom": "--headroom", "level": "--level", "predict": "--predict",
               "predicted_framework": "--predicted-framework"}
"""Planner option (as in :class:`perfmodel.planner.PlanInputs`) -> the ``plan`` flag that sets it."""
_FLAG_KEYS = {"workload.request_rate_rps": "request_rate_rps", "workload.output_tok_s": "output_tok_s",
              "workload.input_len_tok": "input_len_tok", "workload.output_len_tok": "output_len_tok",
              "slo.ttft_s": "ttft_s", "slo.tpot_s": "tpot_s", "slo.e2e_s": "e2e_s", "slo.percentile": "percentile"}
"""Nested planner option -> its key in the flags (top-level options have the same name in both)."""


def _prices(values: tuple[str, ...]) -> dict[str, float]:
    out: dict[str, float] = {}
    for v in values:
        hw, sep, price = v.partition("=")
        try:
            out[hw.strip()] = float(price)
        except ValueError:
            sep = ""
        if not sep or not hw.strip() or not math.isfinite(out.get(hw.strip(), math.nan)):
            raise click.BadParameter(f"{v!r} is not HARDWARE=PRICE_PER_DEVICE_HOUR (e.g. h100-sxm=2.5)",
                                     param_hint="--price")
    return out


def _unreadable_plan(plan_file: Path, exc: OSError | UnicodeDecodeError) -> PerfmodelError:
    """The error for a --plan file that cannot be read as text (worded as for a sweep plan)."""
    reason = (exc.strerror or exc) if isinstance(exc, OSError) else exc
    return PerfmodelError(f"{plan_file}: cannot read the plan file ({reason})")


def _overlay(data: dict[str, Any], section: str, values: dict[str, Any]) -> None:
    """Lay flag ``values`` over ``data[section]``; a section that is not a mapping is left for validation to report."""
    base = data.get(section) or {}
    if isinstance(base, dict) and (base or values):
        data[section] = {**base, **values}


def _plan_dict(plan_file: Path | None, flags: dict[str, Any]) -> dict[str, Any]:
    import yaml

    data: dict[str, Any] = {}
    if plan_file is not None:
        try:
            loaded = yaml.safe_load(plan_file.read_text(encoding="utf-8")) or {}
        except (OSError, UnicodeDecodeError) as exc:
            raise _unreadable_plan(plan_file, exc) from None
        except yaml.YAMLError as exc:
            raise click.BadParameter(f"{plan_file}: not valid YAML ({exc})", param_hint="--plan") from None
        if not isinstance(loaded, dict):
            raise click.BadParameter(f"{plan_file}: expected a mapping of planner options", param_hint="--plan")
        data = loaded
    _overlay(data, "workload", {k: flags[k] for k in ("request_rate_rps", "output_tok_s", "input_len_tok",
                                                      "output_len_tok") if flags.get(k) is not None})
    _overlay(data, "slo", {k: flags[k] for k in ("ttft_s", "tpot_s", "e2e_s", "percentile")
                           if flags.get(k) is not None})
    for key in ("models", "hardware", "frameworks", "device_counts"):
        if flags.get(key):
            data[key] = list(flags[key])
    _overlay(data, "prices", dict(flags.get("prices") or {}))
    for key in ("currency", "usd_to_currency", "headroom", "level", "predict", "predicted_framework"):
        if flags.get(key) is not None:
            data[key] = flags[key]
    return data


def _plan_options(f: Any) -> Any:
    opts = [
        click.option("--plan", "plan_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                     help="Planner inputs (YAML); flags override its values."),
        click.option("--rate", "request_rate_rps", type=float, help="Requests per second to serve."),
        click.option("--tok-s", "output_tok_s", type=float, help="Output tokens per second to serve (instead of --rate)."),
        click.option("--input-len", "input_len_tok", type=float, help="Input tokens per request."),
        click.option("--output-len", "output_len_tok", type=float, help="Output tokens per request."),
        click.option("--ttft", "ttft_s", type=float, help="TTFT target, seconds."),
        click.option("--tpot", "tpot_s", type=float, help="TPOT target, seconds."),
        click.option("--e2e", "e2e_s", type=float, help="End-to-end latency target, seconds."),
        click.option("--percentile", type=click.Choice(["mean", "p50", "p90", "p99"]), help="Statistic the targets bound."),
        click.option("--model", "models", multiple=True, help="Model to consider (repeatable; default all)."),
        click.option("--hardware", multiple=True, help="Hardware to consider (repeatable; default all)."),
        click.option("--framework", "frameworks", multiple=True, help="Framework to consider (repeatable)."),
        click.option("--devices", "device_counts", multiple=True, type=click.IntRange(min=1),
                     help="Devices per replica (repeatable; with --predict a candidate without runs takes the "
                          "fewest of 1, 2, 4, 8 that hold the model unless given)."),
        click.option("--price", "price_values", multiple=True, metavar="HW=PRICE",
                     help="Price per device-hour overriding the catalog (repeatable)."),
        click.option("--currency", help="Currency of the prices (default USD)."),
        click.option("--usd-to-currency", "usd_to_currency", type=float,
                     help="Exchange rate: one USD in --currency (multiplies the catalog's USD prices; default 1)."),
        click.option("--headroom", type=float, help="Spare capacity (0.2 = provision 120% of demand)."),
        click.option("--level", type=float, help="Band level (default 0.9)."),
        click.option("--predict/--no-predict", default=None,
                     help="Predict what was not measured with roofline-gbm (trained on the dataset unless "
                          "--model-dir gives one): candidates measured only at other lengths at the workload's "
                          "lengths, and --model x --hardware combinations without runs (any catalog name)."),
        click.option("--predicted-framework", help="Framework of predicted candidates without runs (default vllm)."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def _flags(kw: dict[str, Any]) -> dict[str, Any]:
    kw = dict(kw)
    kw["prices"] = _prices(kw.pop("price_values", ()) or ())
    return kw


def _given(flags: dict[str, Any], option: str) -> bool:
    """Whether the flag setting planner ``option`` was given on the command line."""
    v = flags.get(_FLAG_KEYS.get(option, option))
    return v is not None and v != () and v != {}


def _plan_inputs(plan_file: Path | None, flags: dict[str, Any]) -> Any:
    """Validate the planner inputs; a problem with a value given by a flag names the flag, not the field."""
    from .errors import Problem, ValidationError
    from .planner import plan_inputs_from_dict

    try:
        return plan_inputs_from_dict(_plan_dict(plan_file, flags), source=plan_file.name if plan_file else None)
    except ValidationError as exc:
        problems = []
        for p in exc.problems:
            col = p.column or ""
            option = next((o for o in _PLAN_FLAGS if col == o or col.startswith(o + ".")), None)
            if option == "prices":  # flags are merged into the file's prices: name the flag for its own keys
                given = col.partition(".")[2] in flags.get("prices", {}) or plan_file is None
            else:
                given = option is not None and _given(flags, option)
            if option is not None and given:
                problems.append(Problem(f"{_PLAN_FLAGS[option]}: {p.message}"))
            elif plan_file is None:  # a whole-section problem: every value came from a flag
                msg = p.message
                for o in _FLAG_KEYS:
                    msg = msg.replace(_FLAG_KEYS[o], _PLAN_FLAGS[o])
                problems.append(Problem(msg if col in ("", "plan", "workload", "slo") else f"{col}: {msg}"))
            else:
                problems.append(p)
        raise ValidationError(exc.headline, problems) from None


def _check_names(inputs: Any, runs: Any, dataset: str, plan_file: Path | None, flags: dict[str, Any]) -> None:
    """Every model, hardware, framework and device count named, and the hardware of every --price, must be
    in the dataset."""
    from .errors import Problem, ValidationError
    from .planner import unmatched_candidates

    what = {"models": "model", "hardware": "hardware", "frameworks": "framework", "device_counts": "device count",
            "prices": "hardware"}
    problems = []
    for field_, (bad, have) in unmatched_candidates(inputs, runs).items():
        if inputs.predict and field_ in ("models", "hardware", "prices", "device_counts"):
            continue  # predicted: any catalog name (plan() resolves them), its price, any device count
        if field_ == "prices":  # a price list in a plan file may cover more hardware than one dataset has
            bad = [b for b in bad if b in flags.get("prices", {})]
            if not bad:
                continue
        where = _PLAN_FLAGS[field_] if _given(flags, field_) or plan_file is None \
            else f"{plan_file.name}, {field_}"
        names = ", ".join(repr(b) for b in bad)
        valid = ", ".join(have) if have else "none"
        problems.append(Problem(f"{where}: {what[field_]} {names} not in dataset {dataset!r}; "
                                f"valid values: {valid}"))
    if problems:
        raise ValidationError("plan: options that match nothing in the data:", problems)


def _status_text(table: Any) -> list[str]:
    """Each row's status as printed: the planner's, with ", not robust" where the SLOs fail at the pessimistic end
    and ", overloaded" at a request rate the server did not deliver (the table had shown "ok" for both, the
    ``robust`` and ``overloaded`` columns only in --json and -o)."""
    out = []
    for _, r in table.iterrows():
        st = str(r["status"])
        if str(r.get("overloaded")) == "True":  # a Python or numpy True; missing (NaN) is not
            st += ", overloaded"
        elif st == "ok" and not bool(r["robust"]):
            st += ", not robust"
        out.append(st)
    return out


def _who(r: Any) -> str:
    """A candidate as the lists below the table name it: "h100-sxm vllm x1 llama-3-8b"."""
    d = r["device_count"]
    devices = "" if d is None or (isinstance(d, float) and math.isnan(d)) else f"x{float(d):g}"
    return " ".join(str(p) for p in (r["hardware"], r["framework"], devices, r["model"]) if p)


def _plan_text(res: Any) -> str:
    """The candidates table as printed: the model, the measured lengths where they differ, "—" for unknowns,
    whether a row is robust or overloaded in its status."""
    i, o = res.inputs.workload.mean_lengths
    cols = [c for c in _PLAN_COLUMNS
            if (c != "lengths" or (res.table["lengths"].astype(str) != f"{i:g}/{o:g}").any())
            and (c != "source" or res.table["source"].astype(str).str.startswith("predicted").any())]
    status = _status_text(res.table)
    table = res.table[cols].assign(status=status)
    # no load is read off an overloaded rate's line from nothing to its saturated peak (as the summary says)
    over = [s.endswith(", overloaded") for s in status]
    table.loc[over, [c for c in ("load_batch", "e2e_at_load_s") if c in cols]] = float("nan")
    return table.rename(columns={"lengths": _LENGTHS_HEADER, "source": _SOURCE_HEADER}).to_string(
        index=False, na_rep=_MISSING, float_format=lambda v: f"{v:,.4g}")


@click.command("plan")
@click.argument("dataset")
@_plan_options
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write the full table as CSV.")
@click.option("--save", "save_name", help="Save the plan as a named analysis (prints its id).")
@click.option("--model-dir", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="A model saved by `perfmodel train` to predict with (implies --predict).")
@click.option("--json", "as_json", is_flag=True, help="JSON output.")
@click.pass_context
def plan_cmd(ctx: click.Context, dataset: str, plan_file: Path | None, output: Path | None, save_name: str | None,
             model_dir: Path | None, as_json: bool, **kw: Any) -> None:
    """Size every candidate in DATASET for a workload and SLOs: devices, cost, energy, with bands.

    By default a candidate is sized from its runs at the workload's lengths, or the nearest measured ones.
    With --predict, what the runs do not cover is predicted (see --predict).

    Each candidate is planned at a robust batch where one exists: one whose SLOs hold at the pessimistic end
    (the slowest run where a batch was measured more than once, else the throughput band's low end). A faster
    batch that would need materially fewer devices but is not robust is named in the summary, with why. A
    request rate the server did not deliver is no operating point: a row planned at one reads "overloaded".
    """
    from .cli import _echo_json, _want_json
    from .planner import plan
    from .store import Store

    flags = _flags(kw)
    if model_dir is not None and flags.get("predict") is None:
        flags["predict"] = True
    inputs = _plan_inputs(plan_file, flags)
    store = Store()
    info = store.dataset(dataset)
    runs = store.runs(info.id)
    _check_names(inputs, runs, info.name, plan_file, flags)
    predictor = None
    if model_dir is not None:
        from .models import load_predictor

        predictor = load_predictor(model_dir)
    elif inputs.predict and not _want_json(ctx, as_json):
        click.echo("training roofline-gbm on the dataset to predict what was not measured...", err=True)
    res = plan(inputs, runs, predictor=predictor)
    saved = None
    if save_name:
        saved = store.save_analysis(save_name, ANALYSIS_KIND_PLANNER,
                                    {"dataset": info.id, "plan": inputs.model_dump(mode="json")})
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        res.table.to_csv(output, index=False)
    if _want_json(ctx, as_json):
        _echo_json({"summary": res.summary(), "notes": list(res.notes),
                    "candidates": json.loads(res.table.to_json(orient="records")),
                    "infeasible": json.loads(res.infeasible.to_json(orient="records")),
                    "analysis_id": saved.id if saved else None})
        return
    click.echo(res.summary())
    if caveat := res.lengths_caveat(_LENGTHS_HEADER):
        hint = "" if inputs.predict else " (--predict predicts them at the workload's lengths instead)"
        click.echo(f"caveat: {caveat}{hint}")
    for n in res.notes:
        click.echo(f"note: {n}")
    if len(res.table):
        click.echo(_plan_text(res))
        # what each row's status rests on (why not robust, an overloaded rate, a cheaper batch that is not robust):
        # the notes had been only in --json and -o
        noted = res.table[res.table["note"].astype(str).str.strip() != ""]
        if len(noted):
            click.echo("\ncandidate notes:")
            for _, r in noted.iterrows():
                click.echo(f"  {_who(r)}: {r['note']}")
    if len(res.infeasible):
        click.echo("\ninfeasible:")
        for _, r in res.infeasible.iterrows():
            click.echo(f"  {_who(r)}: {r['reason']}")
    if output is not None:
        click.echo(f"wrote {output}")
    if saved is not None:
        click.echo(f"saved analysis {saved.name!r}: id {saved.id} (open the app with ?analysis={saved.id})")


@click.command("report")
@click.argument("source", metavar="DATASET|ANALYSIS")
@click.option("--plan", "plan_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Planner inputs (YAML) for the summary, candidates and costs.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="report.html (self-contained) or report.pdf (needs Chromium).")
@click.option("--no-accuracy", is_flag=True, help="Skip the hold-out accuracy section (saves a few seconds).")
def report_cmd(source: str, plan_file: Path | None, output: Path, no_accuracy: bool) -> None:
    """Write a capacity report for a stored dataset or a saved planner analysis."""
    from .errors import NotFoundError
    from .planner import load_plan_inputs, plan_inputs_from_dict
    from .report import REPORT_SUFFIXES, build_report, write_report
    from .store import Store

    if output.suffix.lower() not in REPORT_SUFFIXES:
        raise click.BadParameter(f"{output}: the report is written as .html or .pdf", param_hint="-o")
    store = Store()
    inputs = None
    try:
        a = store.analysis(source)
        ds_ref = str(a.payload.get("dataset", ""))
        if a.payload.get("plan"):
            inputs = plan_inputs_from_dict(a.payload["plan"], source=f"analysis {a.id}")
    except NotFoundError:
        ds_ref = source
    if plan_file is not None:
        try:
            inputs = load_plan_inputs(plan_file)
        except UnicodeDecodeError as exc:  # load_plan_inputs reports only an OSError as unreadable
            raise _unreadable_plan(plan_file, exc) from None
    try:
        info = store.dataset(ds_ref)
    except NotFoundError as exc:
        if ds_ref != source:
            raise
        # SOURCE may name either: the message had spoken of datasets only
        saved = ", ".join(f"{a.id} ({a.name})" for a in store.analyses()[:10]) or "none"
        raise NotFoundError(f"{exc}; nor is {source!r} a saved analysis (saved: {saved}; see `perfmodel "
                            "analyses`)") from None
    t0 = time.perf_counter()
    rep = build_report(store.runs(info.id), dataset_name=info.name, info=info, plan_inputs=inputs,
                       accuracy=not no_accuracy, on_progress=lambda s: click.echo(f"  {s}...", err=True))
    path = write_report(rep, output)
    click.echo(f"wrote {path} in {time.perf_counter() - t0:.1f} s")


@click.command("analyses")
@click.option("--rename", nargs=2, metavar="ID NAME", help="Rename a saved analysis.")
@click.option("--delete", "delete_id", metavar="ID", help="Delete a saved analysis.")
@click.option("--json", "as_json", is_flag=True, help="JSON output.")
@click.pass_context
def analyses_cmd(ctx: click.Context, rename: tuple[str, str] | None, delete_id: str | None, as_json: bool) -> None:
    """List (or rename/delete) saved analyses."""
    from .cli import _echo_json, _want_json
    from .store import Store

    store = Store()
    if rename:
        a = store.rename_analysis(rename[0], rename[1])
        click.echo(f"renamed {a.id} to {a.name!r}")
        return
    if delete_id:
        store.delete_analysis(delete_id)
        click.echo(f"deleted {delete_id}")
        return
    items = store.analyses()
    if _want_json(ctx, as_json):
        _echo_json([{"id": a.id, "name": a.name, "kind": a.kind, "created_at": a.created_at} for a in items])
        return
    if not items:
        click.echo("no saved analyses")
    for a in items:
        click.echo(f"{a.id}  {a.kind:<8}  {a.created_at}  {a.name}")


def register(group: click.Group) -> None:
    """Add ``plan``, ``report`` and ``analyses`` to the CLI group.

    Parameters
    ----------
    group
        The root ``perfmodel`` group.
    """
    for cmd in (plan_cmd, report_cmd, analyses_cmd):
        group.add_command(cmd)
