"""The ``perfmodel`` command line: a thin client of :mod:`perfmodel.api`.

Exit codes: 0 success; 2 a problem with the user's input (any
:class:`~perfmodel.errors.PerfmodelError` or a usage error), printed to stderr
as one paragraph prefixed ``error:``; 1 a bug (the traceback is shown).
Later commands are added to :data:`main` with ``@main.command()``.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from .config import HOME_ENV
from .errors import PerfmodelError
from .schema import ARRIVALS, LOAD_KINDS

__all__ = ["main", "USER_ERROR", "find_app"]

USER_ERROR = 2
SIGPIPE_EXIT = 141
"""Exit status when stdout is closed early: 128 + SIGPIPE, what a shell reports for ``yes | head``."""
LATENCY_UNITS = ("s", "ms")
ISSUES_SHOWN = 5


class _Group(click.Group):
    """A click group that turns every :class:`PerfmodelError` into ``error: ...`` and exit 2, and a closed
    stdout (``perfmodel ... | head``) into a quiet exit 141 (128 + SIGPIPE), as a shell reports a Unix tool
    stopped by SIGPIPE."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            rv = super().invoke(ctx)
            sys.stdout.flush()  # a pipe closed after the last write shows here, not at interpreter exit
            return rv
        except PerfmodelError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(USER_ERROR)
        except BrokenPipeError:
            _silence_stdout()
            ctx.exit(SIGPIPE_EXIT)


def _silence_stdout() -> None:
    """Point stdout at devnull so the flush at interpreter exit does not fail again (Python docs, signal:
    "Note on SIGPIPE"); SIGPIPE itself stays ignored, so a broken socket elsewhere is still an exception."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout without a file descriptor (captured, as under CliRunner)
        pass


class _FormatType(click.ParamType):
    """A format id, checked against the importer registry (loaded only when used)."""

    name = "format"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from .importers import registry

        ids = sorted(registry())
        if value not in ids:
            self.fail(f"{value!r} is not a known format; valid formats: {', '.join(ids)}", param, ctx)
        return str(value)


def _parse_map(values: Sequence[str]) -> dict[str, str] | None:
    out: dict[str, str] = {}
    for v in values:
        canon, sep, source = v.partition("=")
        if not sep or not canon.strip() or not source.strip():
            raise click.BadParameter(f"{v!r} is not CANONICAL=SOURCE (e.g. batch_size=concurrency)",
                                     param_hint="--map")
        out[canon.strip()] = source.strip()
    return out or None


def _want_json(ctx: click.Context, local: bool) -> bool:
    return local or bool(ctx.find_root().params.get("json_output"))


def _finite(obj: Any) -> Any:
    # NaN/inf are not JSON; scripts reading our output should get null.
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    return obj


def _echo_json(obj: Any) -> None:
    click.echo(json.dumps(_finite(obj), indent=2, default=str, allow_nan=False))


def _info_dict(info: Any) -> dict[str, Any]:
    return {"id": info.id, "name": info.name, "created_at": info.created_at, "n_runs": info.n_runs,
            "n_issues": info.n_issues, "files": list(info.files), "formats": list(info.formats)}


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--home", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Data directory (sets PERFMODEL_HOME; default ~/.perfmodel).")
@click.option("--json", "json_output", is_flag=True, help="Machine-readable JSON output where supported.")
@click.version_option(package_name="perfmodel")
def main(home: Path | None, json_output: bool) -> None:
    """perfmodel: predict and explain LLM inference throughput."""
    if home is not None:
        os.environ[HOME_ENV] = str(home.expanduser())


@main.command("import")
@click.argument("files", nargs=-1, required=True,
                type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--format", "fmt", type=_FormatType(), default=None,
              help="Format id (see `perfmodel formats`); detected from the content when omitted.")
@click.option("--hardware", help="Hardware name or alias from the catalog.")
@click.option("--model", help="Model name or alias from the catalog.")
@click.option("--framework", help="Serving framework (vllm, sglang, trtllm, ...).")
@click.option("--framework-version", help="Framework version.")
@click.option("--device-count", type=click.IntRange(min=1), help="Accelerators used by the deployment.")
@click.option("--tp", "tp_size", type=click.IntRange(min=1), help="Tensor-parallel size.")
@click.option("--pp", "pp_size", type=click.IntRange(min=1), help="Pipeline-parallel size.")
@click.option("--weight-dtype", help="Weight dtype (bf16, fp8, int4, ...).")
@click.option("--kv-cache-dtype", help="KV-cache dtype.")
@click.option("--quantization", help="Quantization scheme (awq, gptq, fp8, ...).")
@click.option("--input-len", "input_len_tok", type=click.FloatRange(min=0),
              help="Input tokens per request, for files that do not record it.")
@click.option("--output-len", "output_len_tok", type=click.FloatRange(min=0, min_open=True),
              help="Output tokens per request, for files that do not record it.")
@click.option("--batch-size", type=click.FloatRange(min=0, min_open=True),
              help="Batch size or concurrency, for files that do not record it.")
@click.option("--load-kind", type=click.Choice(LOAD_KINDS), default=None,
              help="What --batch-size means (static_batch, concurrency, request_rate, offline).")
@click.option("--arrival", type=click.Choice(ARRIVALS), default=None,
              help="How a request-rate run's requests arrived, for files that do not say (request-rate rows only).")
@click.option("--burstiness", type=float, default=None, metavar="SHAPE",
              help="With --arrival gamma: the shape of its gaps, as vLLM's --burstiness (> 0; below 1 burstier "
                   "than Poisson, above 1 more even; 1 is --arrival poisson).")
@click.option("--repeat", "repeat_idx", type=click.IntRange(min=0), help="Repeat index of these files.")
@click.option("--map", "maps", multiple=True, metavar="CANONICAL=SOURCE",
              help="Column mapping for generic CSV files (repeatable).")
@click.option("--latency-unit", type=click.Choice(LATENCY_UNITS), default=None,
              help="Unit of latency columns in generic CSV files.")
@click.option("--dataset", "dataset_name",
              help="Dataset name (default: the first file's name, + N more files when several).")
@click.option("--strict", is_flag=True,
              help="Store nothing (exit 2) when any row has an error; by default such rows are left out.")
@click.option("--json", "as_json", is_flag=True, help="JSON output.")
@click.pass_context
def import_cmd(ctx: click.Context, files: tuple[Path, ...], fmt: str | None, hardware: str | None,
               model: str | None, framework: str | None, framework_version: str | None,
               device_count: int | None, tp_size: int | None, pp_size: int | None, weight_dtype: str | None,
               kv_cache_dtype: str | None, quantization: str | None, input_len_tok: float | None,
               output_len_tok: float | None, batch_size: float | None, load_kind: str | None,
               arrival: str | None, burstiness: float | None, repeat_idx: int | None, maps: tuple[str, ...],
               latency_unit: str | None, dataset_name: str | None, strict: bool, as_json: bool) -> None:
    """Import benchmark result FILE(s) into the store as one dataset."""
    from pydantic import ValidationError as PydanticError

    from .api import import_files
    from .importers import ImportMeta

    try:
        meta = ImportMeta(hardware=hardware, model=model, framework=framework,
                          framework_version=framework_version, device_count=device_count, tp_size=tp_size,
                          pp_size=pp_size, weight_dtype=weight_dtype, kv_cache_dtype=kv_cache_dtype,
                          quantization=quantization, input_len_tok=input_len_tok,
                          output_len_tok=output_len_tok, batch_size=batch_size, load_kind=load_kind,
                          arrival=arrival, burstiness=burstiness, repeat_idx=repeat_idx,
                          column_map=_parse_map(maps),
                          latency_unit=latency_unit)  # type: ignore[arg-type]
    except PydanticError as exc:
        raise click.UsageError(_meta_errors(exc)) from exc
    from .store import Store

    known = {i.id: i.name for i in Store().datasets()}  # the same content again is the dataset stored before
    info, results = import_files(list(files), format=fmt, meta=meta, name=dataset_name, strict=strict)
    issues = [i for r in results for i in r.issues]
    counts = {s: sum(1 for i in issues if i.severity == s) for s in ("error", "warning", "info")}
    if _want_json(ctx, as_json):
        _echo_json({
            "dataset": _info_dict(info),
            "already_stored": info.id in known,
            "files": [{"file": r.file, "format": r.format, "rows": len(r.runs),
                       "issues": {s: sum(1 for i in r.issues if i.severity == s) for s in counts}}
                      for r in results],
            "issue_counts": counts,
            "issues": [{"file": i.file, "row": i.row, "column": i.column, "message": i.message,
                        "severity": i.severity} for i in issues[:20]],
        })
        return
    click.echo(f"dataset {info.id}  {info.name!r}: {info.n_runs} rows from {len(results)} file(s)")
    if info.id in known:  # as the Data page says it ("Already stored"); the CLI had said nothing
        former = known[info.id]
        click.echo("note: already stored: these files, with these settings, are this dataset; nothing was added"
                   + (f" (renamed from {former!r} as given)" if former != info.name else ""), err=True)
    elif dataset_name and dataset_name.strip() and info.name != dataset_name.strip():
        click.echo(f"note: a dataset is already named {dataset_name.strip()!r}; this one is {info.name!r}",
                   err=True)
    for r in results:
        click.echo(f"  {r.file}: format {r.format}, {len(r.runs)} rows, {len(r.issues)} issue(s)")
    click.echo("issues: " + ", ".join(f"{n} {s}" for s, n in counts.items()))
    for i in issues[:ISSUES_SHOWN]:
        click.echo(f"  [{i.severity}] {i}")
    if len(issues) > ISSUES_SHOWN:
        click.echo(f"  ... {len(issues) - ISSUES_SHOWN} more (perfmodel show {info.id[:8]} --issues)")


def _meta_errors(exc: Any) -> str:
    """An invalid import option in the CLI's words: a check's own message names the option and its valid
    values ("--burstiness 0 is not a gamma shape; valid: ..."), where pydantic's had read "burstiness: Value error,
    --burstiness 0 ..."; any other error is prefixed with its option."""
    from .importers.base import META_OPTIONS

    out = []
    for e in exc.errors():
        msg = str(e["msg"]).removeprefix("Value error, ")
        field = ".".join(map(str, e["loc"]))
        opt = META_OPTIONS.get(field, f"--{field.replace('_', '-')}")
        out.append(msg if msg.startswith(opt) else f"{opt}: {msg}")
    return "; ".join(out)


@main.command("datasets")
@click.option("--json", "as_json", is_flag=True, help="JSON output.")
@click.pass_context
def datasets_cmd(ctx: click.Context, as_json: bool) -> None:
    """List the stored datasets."""
    from .store import Store

    infos = Store().datasets()
    if _want_json(ctx, as_json):
        _echo_json([_info_dict(i) for i in infos])
        return
    if not infos:
        click.echo("no datasets yet: add one with `perfmodel import FILE`")
        return
    rows = [(i.id, i.name, str(i.n_runs), str(i.n_issues), ",".join(sorted(set(i.formats))), i.created_at[:19])
            for i in infos]
    _table(("id", "name", "runs", "issues", "formats", "created (UTC)"), rows)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    widths = [max([len(h)] + [len(r[k]) for r in rows]) for k, h in enumerate(header)]
    click.echo("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip())
    for r in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())


@main.command("show")
@click.argument("dataset")
@click.option("--issues", "show_issues", is_flag=True, help="Show the import issues instead of the runs.")
@click.option("--head", "head_n", type=click.IntRange(min=0), default=10, show_default=True,
              help="Rows (or issues) to show, JSON included; `export` writes every run.")
@click.option("--json", "as_json", is_flag=True, help="JSON output.")
@click.pass_context
def show_cmd(ctx: click.Context, dataset: str, show_issues: bool, head_n: int, as_json: bool) -> None:
    """Show a DATASET (id, id prefix or name): summary and first runs or issues."""
    import pandas as pd

    from .store import Store

    store = Store()
    info = store.dataset(dataset)
    table = store.issues(info.id) if show_issues else store.runs(info.id)
    head = table.head(head_n)
    if _want_json(ctx, as_json):
        records = json.loads(head.to_json(orient="records", date_format="iso"))
        # how many there are, and how many are shown: 10 of 42 issues had come without a word
        _echo_json({"dataset": {**_info_dict(info), "provenance": info.provenance},
                    "issues" if show_issues else "runs": records, "shown": len(records), "total": len(table),
                    "truncated": len(table) > len(records)})
        return
    click.echo(f"dataset {info.id}  {info.name!r}  ({info.n_runs} runs, {info.n_issues} issues, "
               f"files: {', '.join(info.files)})")
    if table.empty:
        click.echo("(no issues)" if show_issues else "(no runs)")
        return
    if not show_issues:
        head = head.loc[:, head.notna().any()]
    if not head.empty:
        with pd.option_context("display.width", 200, "display.max_columns", 40, "display.max_colwidth", 80):
            click.echo(head.to_string(index=False))
    if len(table) > head_n:
        click.echo(f"... {len(table) - head_n} more row(s) (--head N)")


@main.command("export")
@click.argument("dataset")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="Output file ending in .csv or .parquet.")
def export_cmd(dataset: str, output: Path) -> None:
    """Write the runs of DATASET to a CSV or Parquet file (re-imports unchanged)."""
    from .api import export_runs

    out = export_runs(dataset, output)
    click.echo(f"wrote {out}")


@main.command("formats")
@click.option("--json", "as_json", is_flag=True, help="JSON output.")
@click.pass_context
def formats_cmd(ctx: click.Context, as_json: bool) -> None:
    """List the supported file formats."""
    from .importers import registry

    imps = sorted(registry().values(), key=lambda i: i.name)
    if _want_json(ctx, as_json):
        _echo_json([{"id": i.name, "label": i.label, "has_hardware": i.has_hardware, "has_model": i.has_model,
                     "model_in_file_note": i.model_in_file_note, "description": i.description} for i in imps])
        return
    yn = {True: "yes", False: "no"}
    _table(("id", "label", "hardware in file", "model in file"),
           [(i.name, i.label, yn[i.has_hardware],
             yn[i.has_model] + (f" ({i.model_in_file_note})" if i.model_in_file_note else "")) for i in imps])


@main.command("delete")
@click.argument("dataset")
def delete_cmd(dataset: str) -> None:
    """Delete DATASET (id, id prefix or name) with its runs and issues."""
    from .store import Store

    store = Store()
    info = store.dataset(dataset)
    store.delete_dataset(info.id)
    click.echo(f"deleted dataset {info.id} {info.name!r} ({info.n_runs} runs)")


def find_app() -> Path:
    """Locate ``app.py``: beside the package (source checkout), else in the working directory.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    PerfmodelError
        No ``app.py`` in either place.
    """
    candidates = [Path(__file__).resolve().parent.parent / "app.py", Path.cwd() / "app.py"]
    for c in candidates:
        if c.is_file():
            return c
    raise PerfmodelError("cannot find the Streamlit app: looked for " + " and ".join(str(c) for c in candidates)
                         + "; run `perfmodel app` from the perfmodel source checkout")


@main.command("app", context_settings={"ignore_unknown_options": True})
@click.argument("streamlit_args", nargs=-1, type=click.UNPROCESSED)
def app_cmd(streamlit_args: tuple[str, ...]) -> None:
    """Start the web app (`streamlit run app.py`); extra arguments go to streamlit."""
    app = find_app()
    # Headless: no first-run e-mail prompt and no browser launch; no usage statistics (often no
    # network). Either can be overridden by passing the option again. The router re-saves every input so
    # that pages keep them (perfmodel.ui.shell.keep_widget_values), which Streamlit would log as a widget
    # "created with a default value but also had its value set via the Session State API".
    defaults = ["--server.headless", "true", "--browser.gatherUsageStats", "false",
                "--global.disableWidgetStateDuplicationWarning", "true"]
    cmd = [sys.executable, "-m", "streamlit", "run", str(app), *defaults, *streamlit_args]
    raise SystemExit(subprocess.call(cmd))


_SHAPE_ALIASES = {"loglinear": "loglin"}
MESSAGE_WIDTH = 60


def _shape_choices() -> list[str]:
    from .curves import SHAPES

    return [*SHAPES, *_SHAPE_ALIASES]


def _interval_choices() -> list[str]:
    from .curves import INTERVAL_METHODS

    return list(INTERVAL_METHODS)


def _n_boot_default() -> int:
    from .curves import DEFAULT_N_BOOT  # the Curves page's and the report's too

    return DEFAULT_N_BOOT


def _cell(v: Any, fmt: str | None = None) -> str:
    """A table cell: floats compact and never in e-notation (``19,033``, ``405.9``, ``1.2 M``), or as ``fmt``."""
    if isinstance(v, float):
        if not math.isfinite(v):
            return "-"
        if fmt is not None:
            return fmt.format(v)
        from .curve_tables import compact_number

        return compact_number(v)
    return str(v) if v not in (None, "") else "-"


@main.command("fit")
@click.argument("dataset")
@click.option("--by", "by", multiple=True, metavar="COL",
              help="Grouping column (repeatable); default: hardware, device count, framework, model, "
                   "lengths, and the dtype/parallelism columns with values.")
@click.option("--shape", type=click.Choice(_shape_choices()), default="auto", show_default=True,
              help="Curve shape; auto chooses exp, nrh (a smooth min(k x, c): a rise that stops sharply) or "
                   "piecewise by AICc.")
@click.option("--intervals", type=click.Choice(_interval_choices()), default="bootstrap", show_default=True,
              help="How intervals are computed.")
@click.option("--n-boot", type=click.IntRange(min=0), default=_n_boot_default(), show_default=True,
              help="Bootstrap replicates.")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option("--x", "x_col", default="batch_size", show_default=True,
              help="The load column the curve runs along (batch_size, request_rate_rps, measured_concurrency, ...).")
@click.option("--y", "y_col", default="output_throughput_tok_s", show_default=True, help="Throughput column.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the full fits table to this CSV file.")
@click.option("--json", "as_json", is_flag=True, help="JSON output (the full fits table as records).")
@click.pass_context
def fit_cmd(ctx: click.Context, dataset: str, by: tuple[str, ...], shape: str, intervals: str, n_boot: int,
            seed: int, x_col: str, y_col: str, output: Path | None, as_json: bool) -> None:
    """Fit a saturation curve (throughput vs batch) per configuration of DATASET (a stored dataset or a result
    file); report plateaus and knees."""
    from .curve_tables import (
        curve_by_for_x,
        curve_x_options,
        default_curve_by,
        fit_import_warnings,
        fits_summary,
        has_positive,
        import_caveats,
        kv_full_batches,
        x_axis_note,
    )
    from .curves import fit_curves

    want_json = _want_json(ctx, as_json)
    if want_json and output is not None:
        raise click.UsageError("choose one of --json and -o/--output")
    if Path(dataset).is_file():  # a result file: its import warnings come with its runs
        from .importers import read_result_file

        read = read_result_file(Path(dataset), command="fit")
        runs, issues = read.runs, read.issues
    else:
        from .store import Store

        runs = _load_training_runs(dataset, "fit")
        issues = Store().issues(dataset)
    switched = ""
    if x_col == "batch_size" and not has_positive(runs) and curve_x_options(runs):
        # a rate sweep records no batch: it had read "0 configuration(s) ... 0 distinct batch size(s)"; as the
        # Curves page does, the curves run along the first load the runs hold, and a --x given is kept
        if ctx.get_parameter_source("x_col") is not click.core.ParameterSource.DEFAULT:
            raise click.UsageError(f"{dataset} records no batch size; its runs have "
                                   f"{' and '.join(curve_x_options(runs))}: fit along one with --x")
        x_col = curve_x_options(runs)[0]
        switched = f"the runs record no batch size: curves along {x_col} (choose with --x)"
    by_cols, added = (list(by), "") if by else curve_by_for_x(runs, default_curve_by(runs), x_col)
    table, _ = fit_curves(runs, by_cols, shape=_SHAPE_ALIASES.get(shape, shape), x=x_col, y=y_col,
                          intervals=intervals, n_boot=n_boot, seed=seed, return_fits=True)
    # the batch at which the KV cache fills, as the printed table has it (the file and JSON had lacked it); NaN on
    # a curve along another x, where a batch means nothing
    table = table.assign(kv_full_batch=kv_full_batches(table).to_numpy())
    # the import's warnings on the batch axis (requests in flight far below the concurrency) stand beside the fit
    warned = fit_import_warnings(runs, issues, table, by_cols, x=x_col, y=y_col)
    table["import_warnings"] = [" | ".join(w) for w in warned]
    if want_json:
        _echo_json(json.loads(table.to_json(orient="records")))
        return
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(output, index=False)
    summary = fits_summary(table, by_cols)
    shown_intervals = "none (--n-boot 0)" if intervals == "bootstrap" and n_boot == 0 else intervals
    n_ok = int(summary["success"].sum())
    click.echo(f"{len(summary)} configuration(s) by {', '.join(by_cols)}: {n_ok} fitted, "
               f"{len(summary) - n_ok} not ({y_col} vs {x_col}, intervals: {shown_intervals})")
    on_batch = x_col == "batch_size"
    if not on_batch:
        click.echo(x_axis_note(x_col) + "".join(f"; {w}" for w in (added, switched) if w))
    if n_ok == 0 and len(summary) and x_col != "batch_size" and not by:
        click.echo(f"note: no configuration has three {x_col} values once grouped by the columns above (in this "
                   f"data {x_col} may vary only together with one of them): choose the grouping with --by", err=True)
    rows = []
    for rec in summary.to_dict("records"):
        msg = str(rec["message"])
        rows.append((rec["configuration"], rec["shape"], _cell(rec["plateau_tok_s"]), rec["plateau_ci"] or "-",
                     rec["knees"] or "-", rec["b90"] or "-", rec["b95"] or "-",
                     *([_cell(rec["kv_full_batch"], "{:,.0f}")] if on_batch else []), _cell(rec["r2"], "{:.3f}"),
                     str(rec["n_points"]), "yes" if rec["success"] else "NO",
                     msg if len(msg) <= MESSAGE_WIDTH else msg[: MESSAGE_WIDTH - 3] + "..."))
    if rows:
        _table(("configuration", "shape", "c (plateau)", "c interval", "knees [interval]", "b90", "b95",
                *(["KV full"] if on_batch else []), "R2", "n", "ok", "message"), rows)
    for caveat in import_caveats(summary["configuration"].tolist(), warned):
        click.echo(f"caveat: {caveat}")
    if output is not None:
        click.echo(f"wrote {len(table)} fit(s) to {output}")


# ----------------------------------------------------------------------------- catalog


@main.group("catalog")
def catalog_group() -> None:
    """Hardware and model catalogs: list, show an entry with its sources, check a user file.

    User entries go in <home>/catalog/*.yaml or in files/folders listed in $PERFMODEL_CATALOG;
    the YAML format is documented in `python -c "import perfmodel.catalog as c; help(c)"`.
    """


def _spec_dict(spec: Any) -> dict[str, Any]:
    import dataclasses

    out = {}
    for f in dataclasses.fields(spec):
        v = getattr(spec, f.name)
        out[f.name] = dict(v) if isinstance(v, Mapping) else list(v) if isinstance(v, tuple) else v
    return _finite(out)


@catalog_group.command("hardware")
@click.option("--json", "as_json", is_flag=True, help="JSON output.")
@click.pass_context
def catalog_hardware_cmd(ctx: click.Context, as_json: bool) -> None:
    """List the hardware catalog (built-in and user entries)."""
    from . import catalog

    specs = list(catalog.hardware_catalog().values())
    if _want_json(ctx, as_json):
        _echo_json([_spec_dict(s) for s in specs])
        return
    _table(("key", "name", "platform", "memory GB", "bandwidth GB/s", "bf16 TFLOP/s", "$/hour"),
           [(s.key, s.name, s.platform or "", _cell(s.memory_gb), _cell(s.memory_bw_gbs),
             _cell(s.peak_tflops.get("bf16")), _cell(s.price_per_hour_usd)) for s in specs])


@catalog_group.command("models")
@click.option("--json", "as_json", is_flag=True, help="JSON output.")
@click.pass_context
def catalog_models_cmd(ctx: click.Context, as_json: bool) -> None:
    """List the model catalog (built-in and user entries)."""
    from . import catalog

    specs = list(catalog.model_catalog().values())
    if _want_json(ctx, as_json):
        _echo_json([_spec_dict(s) for s in specs])
        return
    _table(("key", "name", "params B", "active B", "layers", "hidden", "KV heads"),
           [(s.key, s.name, _cell(s.params_b), _cell(s.active_params_b), _cell(s.n_layers),
             _cell(s.hidden_size), _cell(s.n_kv_heads)) for s in specs])


@catalog_group.command("show")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="JSON output.")
@click.pass_context
def catalog_show_cmd(ctx: click.Context, name: str, as_json: bool) -> None:
    """Show one hardware or model entry (by key, name or alias) with the source of each figure."""
    from . import catalog
    from .errors import UnknownNameError

    found: list[tuple[str, Any]] = []
    suggestions: list[str] = []
    for kind, resolve in (("hardware", catalog.resolve_hardware), ("model", catalog.resolve_model)):
        try:
            found.append((kind, resolve(name)))
        except UnknownNameError as exc:
            suggestions += exc.suggestions
    if not found:
        raise UnknownNameError("hardware or model", name, suggestions[:8])
    out = [{"catalog": kind, **_spec_dict(spec)} for kind, spec in found]
    if _want_json(ctx, as_json):
        _echo_json(out)
        return
    for entry in out:
        for key, value in entry.items():
            if key == "sources":
                for field_name, src in value.items():
                    click.echo(f"  source[{field_name}]: {src}")
            elif value not in (None, "", [], {}):
                click.echo(f"{key}: {value}")
        click.echo("")


@catalog_group.command("check")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
def catalog_check_cmd(files: tuple[Path, ...]) -> None:
    """Validate user catalog FILE(s) without installing them; lists every problem."""
    from . import catalog

    for f in files:
        cf = catalog.load_file(f)
        click.echo(f"{f}: ok ({len(cf.hardware)} hardware, {len(cf.models)} model(s))")


@catalog_group.command("paths")
def catalog_paths_cmd() -> None:
    """Where user catalog files are read from, and which are in use."""
    from . import catalog
    from .config import CATALOG_ENV, home_dir

    click.echo(f"user folder: {home_dir(create=False) / 'catalog'} (*.yaml)")
    click.echo(f"${CATALOG_ENV}: {os.environ.get(CATALOG_ENV, '') or '(unset)'}")
    for f in catalog.user_files():
        click.echo(f"  in use: {f}")


# The sweep commands live in their own module; registered here so `perfmodel --help` lists them.
from .cli_sweep import sweep_cmd, sweeps_cmd  # noqa: E402

main.add_command(sweep_cmd)
main.add_command(sweeps_cmd)


# --------------------------------------------------------------------------- train / predict / evaluate

QUERY_COLUMNS = ("hardware", "framework", "model", "device_count", "input_len_tok", "output_len_tok", "batch_size")
"""Columns a query needs (``device_count`` defaults to 1 when absent)."""
_QUERY_NUMERIC = ("device_count", "input_len_tok", "output_len_tok", "batch_size", "tp_size", "pp_size")


def _load_training_runs(data: str, command: str = "train") -> Any:
    """A runs table from a result file (any importable format) or a stored dataset name/id; ``command`` names
    the command in the advice for a file that needs import options."""
    path = Path(data)
    if path.is_file():
        from .importers import read_result_file

        return read_result_file(path, command=command).runs
    from .errors import NotFoundError
    from .store import Store

    try:
        return Store().runs(data)
    except NotFoundError:
        # Written as a path (a folder or a file suffix): the file is what is missing, not a dataset.
        if os.sep in data or "/" in data or path.suffix.lower() in (".csv", ".json", ".jsonl", ".parquet", ".txt"):
            what = "is a folder, not a result file" if path.is_dir() else "does not exist"
            raise PerfmodelError(f"{data}: {what} (nor is it the name or id of a stored dataset)") from None
        raise


def _resolve_names(df: Any, file: str, problems: list[Any] | None = None) -> Any:
    """:func:`perfmodel.catalog.canonical_names` of a query table read from ``file``."""
    from . import catalog

    return catalog.canonical_names(df, file=file, problems=problems)


_QUERY_REQUIRED = ("hardware", "model", "framework", "input_len_tok", "output_len_tok", "batch_size")
"""Columns a query CSV must have (``device_count`` defaults to 1); every predictor reads the framework."""


def _read_queries(path: Path) -> tuple[Any, Any]:
    """(rows as written, query table) from a canonical query CSV or any importable result file."""
    import pandas as pd

    from . import physics
    from .errors import ImportFormatError, ValidationError

    raw = None
    if path.suffix.lower() == ".csv":
        try:
            raw = pd.read_csv(path)
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            raise ImportFormatError(f"{path.name}: cannot read the queries as CSV ({exc})") from None
        if set(_QUERY_REQUIRED) <= set(raw.columns):
            if raw.empty:  # a header alone had "written 0 prediction(s)" with exit code 0
                raise ValidationError(f"{path.name}: no query rows, only a header (a query needs "
                                      f"{', '.join(_QUERY_REQUIRED)}, one row per point)")
            q = raw.copy()
            if "device_count" not in q.columns:
                q["device_count"] = 1
            q["source_row"] = range(1, len(q) + 1)
            # Checked before the numbers are parsed, so a bad cell is reported as written ('abc'); unknown names
            # in the same pass (they had come up only on the next run, after the numbers were fixed).
            problems: list[Any] = []
            try:
                physics.check_query(q, columns=(*physics.QUERY_COLUMNS, "framework"), file=path.name, query=True)
            except ValidationError as exc:
                problems.extend(exc.problems)
            for c in _QUERY_NUMERIC:
                if c in q.columns:
                    q[c] = pd.to_numeric(q[c], errors="coerce")
            table = _resolve_names(q, path.name, problems)
            if problems:
                problems.sort(key=lambda p: (p.row is None, p.row or 0, str(p.column)))
                raise ValidationError(f"{path.name}: the query table is not usable ({len(problems)} problem(s)):",
                                      problems)
            return raw, table
    from .importers import read_file

    try:
        runs = read_file(path).runs
    except ImportFormatError as exc:
        cols = set() if raw is None else set(raw.columns)
        if not ({"hardware", "model"} <= cols or cols & {"input_len_tok", "output_len_tok", "batch_size"}):
            # predict has no --format or --map (the importer's advice): say what a query file is instead
            text = str(exc).replace(" For any other CSV pass --format csv with --map canonical=column options.", "")
            raise ImportFormatError(
                f"{text} Nor is it a query table: give a CSV with the columns {', '.join(_QUERY_REQUIRED)} "
                "(device_count optional), or import another CSV first (`perfmodel import FILE --format csv "
                "--map canonical=column`) and predict for the exported dataset (`perfmodel export`).") from None
        # Query columns, but not all of them: name the missing ones, not every benchmark format.
        missing = [repr(c) for c in _QUERY_REQUIRED if c not in cols]
        raise ValidationError(f"{path.name}: not a usable query table: missing required column"
                              f"{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                              f"(a query needs {', '.join(_QUERY_REQUIRED)}; device_count defaults to 1)") \
            from None
    return runs, runs


def _check_model_output(output: Path) -> None:
    """Refuse to write a model into a directory that holds something else (a model replaces a model)."""
    from .models.base import METADATA_FILE

    if output.is_dir() and any(output.iterdir()) and not (output / METADATA_FILE).is_file():
        raise click.BadParameter(f"{output} is not empty and holds no perfmodel model ({METADATA_FILE}): "
                                 "give a new or empty directory", param_hint="-o/--output")


@main.command("train")
@click.argument("data")
@click.option("--predictor", "predictor_name", default="roofline-gbm", show_default=True,
              help="Predictor: roofline-gbm (perfmodel's own), ala (the published hybrid), or a published "
                   "baseline: xgboost, random-forest, linear.")
@click.option("--features", "feature_set", default=None,
              help="Feature set (raw, derived, physical, framework, settings, identity, static, all; join with '+'). "
                   "Default: the predictor's own (roofline-gbm: static, every set but the framework "
                   "metrics measured during a run, which a query for a new configuration lacks).")
@click.option("--y", "y_col", type=click.Choice(("output_throughput_tok_s", "total_throughput_tok_s")),
              default="output_throughput_tok_s", show_default=True,
              help="Throughput to learn (roofline-gbm: output only; it derives the total).")
@click.option("--seed", type=int, default=None, help="Seed of the predictor's randomness.")
@click.option("-o", "--output", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Model directory to write (JSON files).")
def train_cmd(data: str, predictor_name: str, feature_set: str | None, y_col: str, seed: int | None,
              output: Path) -> None:
    """Train a predictor on DATA (a result file or a stored dataset) and save it to MODEL_DIR."""
    import time

    from . import api
    from .errors import UnknownNameError, ValidationError
    from .models import PREDICTORS, _load_all

    _load_all()
    if predictor_name not in PREDICTORS:  # before any data is read
        raise click.BadParameter(f"{predictor_name!r} is not a predictor; choose from {', '.join(PREDICTORS)}",
                                 param_hint="--predictor")
    _check_model_output(output)
    runs = _load_training_runs(data)
    t0 = time.perf_counter()
    try:
        model = api.train(runs, predictor=predictor_name, features=feature_set, y=y_col, seed=seed)
    except (UnknownNameError, ValidationError) as exc:
        option = ("--predictor" if isinstance(exc, UnknownNameError) and exc.kind == "predictor" else
                  "--features" if isinstance(exc, ValidationError)
                  and any(p.column == "features" for p in exc.problems) else None)
        if option is None:
            raise
        raise click.BadParameter(exc.headline if isinstance(exc, ValidationError) else str(exc),
                                 param_hint=option) from None
    took = time.perf_counter() - t0
    model.save(output)
    used = int(getattr(model, "n_train_", len(runs)))
    left = (f" ({len(runs) - used} left out: no positive throughput, or faster than the roofline allows; "
            "the Data page lists the suspect runs)") if used < len(runs) else ""
    click.echo(f"trained {predictor_name} on {used} of {len(runs)} rows{left} in {took:.2f} s; saved to {output}")


_POINT_OPTIONS = {"hardware": "--hardware", "model": "--model", "framework": "--framework",
                 "device_count": "--device-count", "input_len_tok": "--input-len", "output_len_tok": "--output-len",
                 "batch_size": "--batch", "fw_n_batch": "--n-batch", "fw_num_threads": "--num-threads"}
"""Query column -> the option that gives it in the one-point form (``predict``, ``monitor``)."""


@contextmanager
def _point_errors(options: Mapping[str, str] = _POINT_OPTIONS) -> Iterator[None]:
    """Re-word errors about a one-row query built from options to name the options, not row 1 and a column."""
    from .errors import Problem, UnknownNameError, ValidationError

    try:
        yield
    except UnknownNameError as exc:
        if exc.kind not in options:
            raise
        raise UnknownNameError(exc.kind, exc.name, exc.suggestions, hint=f"Given by option {options[exc.kind]}") \
            from None
    except ValidationError as exc:
        if not exc.problems or any(p.column not in options for p in exc.problems):
            raise
        problems = [Problem(f"option {options[str(p.column)]}: {p.message}") for p in exc.problems]
        if len(problems) == 1:
            raise ValidationError(str(problems[0])) from None
        raise ValidationError(f"the query options are not usable ({len(problems)} problem(s)):", problems) \
            from None


@contextmanager
def _in_file(name: str) -> Iterator[None]:
    """Name the query file in the predictor's problems, which know rows and columns but not the file."""
    from .errors import Problem, ValidationError

    try:
        yield
    except ValidationError as exc:
        if not exc.problems or all(p.file for p in exc.problems):
            raise
        problems = [p if p.file else Problem(p.message, file=name, row=p.row, column=p.column)
                    for p in exc.problems]
        raise ValidationError(f"{name}: {exc.headline}", problems) from None


def _echo_read_as(typed: Any, rec: Any) -> None:
    """Say on stderr which catalog entries a one-point query's names became, where they differ from what was
    typed: a bare "A100" is the 40 GB part, 17 % below the 80 GB one, and the answer had not said so."""
    from . import catalog

    said = []
    for col, resolve in (("hardware", catalog.resolve_hardware), ("model", catalog.resolve_model)):
        if str(typed[col]) != str(rec[col]):
            said.append(f"{col} {typed[col]!r} as {rec[col]} ({resolve(str(rec[col])).name})")
    if said:
        click.echo("read " + ", ".join(said), err=True)


def _only_framework(predictor: Any) -> str | None:
    """The framework of a one-point query left unsaid: the model's only one (None when it knows several)."""
    known = sorted(getattr(predictor, "seen_", {}).get("framework", ()))
    if len(known) != 1:
        return None
    click.echo(f"framework: {known[0]} (the only one the model was trained on)", err=True)
    return str(known[0])


@main.command("predict")
@click.argument("model_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("queries", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the predictions to this CSV (default: print them).")
@click.option("--level", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.9,
              show_default=True, help="Nominal coverage of the band.")
@click.option("--hardware", help="One-point form: hardware name.")
@click.option("--model", "model_name", help="One-point form: model name.")
@click.option("--framework", help="One-point form: framework (default: the model's only one).")
@click.option("--device-count", type=click.IntRange(min=1), default=None,
              help="One-point form: accelerators (default 1).")
@click.option("--input-len", type=float, help="One-point form: input tokens.")
@click.option("--output-len", type=float, help="One-point form: output tokens.")
@click.option("--batch", type=float, help="One-point form: batch size.")
@click.option("--n-batch", type=float, default=None,
              help="One-point form: llama.cpp's n_batch, where the model was trained at several (fw_n_batch).")
@click.option("--num-threads", type=float, default=None,
              help="One-point form: the engine's thread count, where the model was trained at several "
                   "(fw_num_threads).")
@click.option("--json", "as_json", is_flag=True, help="JSON output: the prediction rows as records.")
@click.pass_context
def predict_cmd(ctx: click.Context, model_dir: Path, queries: Path | None, output: Path | None, level: float,
                hardware: str | None, model_name: str | None, framework: str | None, device_count: int | None,
                input_len: float | None, output_len: float | None, batch: float | None, n_batch: float | None,
                num_threads: float | None, as_json: bool) -> None:
    """Predict throughput with MODEL_DIR for every row of QUERIES (or one point given by options)."""
    import pandas as pd

    from .models import load_predictor
    from .models.base import prediction_table

    point = {"--hardware": hardware, "--model": model_name, "--framework": framework, "--input-len": input_len,
             "--output-len": output_len, "--batch": batch}
    if output is not None and output.suffix.lower() != ".csv":  # a .json or .parquet name had got CSV inside
        raise click.BadParameter(f"{output.name}: the predictions are written as CSV; give a name ending in .csv "
                                 "(or --json for JSON on standard output)", param_hint="-o")
    predictor = load_predictor(model_dir)
    if queries is None:
        if framework is None:
            framework = _only_framework(predictor)
            point["--framework"] = framework
        missing = [k for k, v in point.items() if v is None]
        if missing:
            known = sorted(getattr(predictor, "seen_", {}).get("framework", ()))
            raise click.UsageError("give a QUERIES file, or one point with " + ", ".join(missing)
                                   + (f" (the model was trained on {', '.join(known)})"
                                      if "--framework" in missing and known else ""))
        raw = pd.DataFrame([{"hardware": hardware, "model": model_name, "framework": framework,
                             "device_count": device_count or 1, "input_len_tok": input_len,
                             "output_len_tok": output_len, "batch_size": batch,
                             **{c: v for c, v in (("fw_n_batch", n_batch), ("fw_num_threads", num_threads))
                                if v is not None}}])
        with _point_errors():
            table = _resolve_names(raw, "the command line")
    else:
        given = [k for k, v in {**point, "--device-count": device_count, "--n-batch": n_batch,
                                "--num-threads": num_threads}.items() if v is not None]
        if given:
            raise click.UsageError(f"give either a QUERIES file or the one-point options, not both ({given[0]})")
        raw, table = _read_queries(queries)
    with _point_errors() if queries is None else _in_file(queries.name):
        pred = prediction_table(predictor, table.reset_index(drop=True), level=level)
    # A file predict wrote (its columns are queries too): its old answers are replaced, not duplicated
    old = [c for c in pred.columns if c in raw.columns]
    if old:
        raw = raw.drop(columns=old)
        click.echo(f"note: the query file's own prediction columns ({', '.join(old)}) were replaced", err=True)
    out = pd.concat([raw.reset_index(drop=True), pred.reset_index(drop=True)], axis=1)
    if queries is None:
        out["hardware"], out["model"] = table["hardware"].to_numpy(), table["model"].to_numpy()
        out["framework"] = table["framework"].to_numpy()  # canonical as the others ('vLLM' had stayed)
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        out.to_csv(output, index=False)
    if _want_json(ctx, as_json):
        _echo_json({"level": level, "predictions": json.loads(out.to_json(orient="records")),
                    **({"output": str(output)} if output is not None else {})})
    elif output is not None:
        click.echo(f"wrote {len(out)} prediction(s) to {output}")
    elif queries is None:
        rec = out.iloc[0]
        _echo_read_as(raw.iloc[0], rec)
        if not math.isfinite(rec.pred_throughput_tok_s) and (
                why := predictor.cannot_run(table.reset_index(drop=True))[0]) is not None:
            click.echo(f"no prediction ({why})  confidence {rec.confidence:.3f}  in_domain {bool(rec.in_domain)}")
            return
        band = (f"[{rec.pred_lower:,.1f}, {rec.pred_upper:,.1f}] at {level:g}"
                if math.isfinite(rec.pred_lower) and math.isfinite(rec.pred_upper) else "none (this predictor gives none)")
        conf = f"{rec.confidence:.3f}" if math.isfinite(rec.confidence) else "n/a"
        # which throughput: a model trained on the total answers the total (it had read as output, 2x off)
        what = "total" if str(getattr(predictor, "y_", "")) == "total_throughput_tok_s" else "output"
        click.echo(f"{rec.pred_throughput_tok_s:,.1f} tok/s {what}  band {band}  confidence {conf}  "
                   f"in_domain {bool(rec.in_domain)}")
        if rec.get("domain_reason"):
            click.echo(f"out of domain: {rec.domain_reason}")
        if rec.note:
            click.echo(f"note: {rec.note}")
        lat = [f"total {rec.pred_total_throughput_tok_s:,.1f} tok/s", f"e2e latency {rec.pred_e2e_latency_s:,.3g} s"]
        if math.isfinite(rec.pred_ttft_s):
            t_band = (f" [{rec.pred_ttft_lower_s:,.3g}, {rec.pred_ttft_upper_s:,.3g}]"
                      if math.isfinite(rec.pred_ttft_lower_s) and math.isfinite(rec.pred_ttft_upper_s) else "")
            lat.append(f"TTFT {rec.pred_ttft_s:,.3g} s{t_band}")
        if math.isfinite(rec.pred_tpot_s):
            lat.append(f"TPOT {rec.pred_tpot_s * 1e3:,.3g} ms")
        click.echo("  ".join(lat))
    else:
        click.echo(out.to_csv(index=False), nl=False)
    noted = [i for i, n in enumerate(out["note"]) if n]
    if queries is not None and noted and not _want_json(ctx, as_json):
        click.echo(f"warning: {len(noted)} row(s) have a note (see the note column), e.g. row {noted[0] + 1}: "
                   f"{out['note'].iloc[noted[0]]}", err=True)


@main.command("evaluate")
@click.argument("data")
@click.option("--predictors", default=None,
              help="Comma-separated predictors (default: all): roofline-gbm, ala, xgboost, random-forest, linear.")
@click.option("--protocols", default=None,
              help="Comma-separated protocols (default: all): random (80/20), config (whole configurations held "
                   "out), hardware (one accelerator held out), model, framework, batch128 (train on batch <= 128, "
                   "test on 256), batch64 (<= 64 -> 128, 256), length (all rows of one length held out).")
@click.option("--seeds", type=click.IntRange(min=1), default=3, show_default=True, help="Number of seeds.")
@click.option("--level", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.9,
              show_default=True, help="Band level scored as coverage.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the table to this CSV.")
@click.option("--json", "as_json", is_flag=True, help="JSON output: the table as records.")
@click.pass_context
def evaluate_cmd(ctx: click.Context, data: str, predictors: str | None, protocols: str | None, seeds: int,
                 level: float, output: Path | None, as_json: bool) -> None:
    """Evaluate predictors on DATA (a result file or a stored dataset) under hold-out protocols."""
    from .evaluate import evaluate, to_markdown

    runs = _load_training_runs(data, "evaluate")
    names = [p.strip() for p in predictors.split(",") if p.strip()] if predictors else None
    prots = [p.strip() for p in protocols.split(",") if p.strip()] if protocols else None
    ev = evaluate(runs, names, prots, seeds=range(seeds), level=level,
                  on_progress=lambda line: click.echo(line, err=True))
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        ev.table.to_csv(output, index=False)
    if _want_json(ctx, as_json):
        _echo_json(json.loads(ev.table.to_json(orient="records")))
        return
    click.echo(to_markdown(ev.table))
    if output is not None:
        click.echo(f"wrote {output}")


# The monitor commands live in their own module; registered here so `perfmodel --help` lists them.
from .cli_monitor import register as _register_monitor  # noqa: E402

_register_monitor(main)


# SHAP attributions and feature-set comparisons live in their own module.
from .cli_explain import register as _register_explain  # noqa: E402

_register_explain(main)

# Planning, reports and saved analyses live in their own module.
from .cli_report import register as _register_report  # noqa: E402

_register_report(main)

# Side-by-side comparison of two datasets lives in its own module.
from .cli_compare import register as _register_compare  # noqa: E402

_register_compare(main)
