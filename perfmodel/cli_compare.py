"""``perfmodel compare``: two datasets (or two subsets of one) side by side, against run-to-run noise.

Registered on the main group by :mod:`perfmodel.cli` (:func:`register`). The
comparison itself is :func:`perfmodel.pareto.compare`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

__all__ = ["compare_cmd", "register", "SHOWN_COLUMNS"]

SHOWN_COLUMNS = ("mean_a", "mean_b", "diff", "diff_pct", "noise_se", "p_value", "verdict")
"""Columns printed after the key columns (the CSV and JSON carry every column)."""


def _where(values: tuple[str, ...], option: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for v in values:
        col, sep, val = v.partition("=")
        if not sep or not col.strip() or not val.strip():
            raise click.BadParameter(f"{v!r} is not COLUMN=VALUE (e.g. framework=vllm)", param_hint=option)
        out.setdefault(col.strip(), []).append(val.strip())
    return out


def _side(ref: str, loaded: dict[str, tuple[Any, str]]) -> tuple[Any, str]:
    """(runs, label) of a result file or a stored dataset name/id; each reference is read once."""
    if ref not in loaded:
        path = Path(ref)
        if path.is_file():
            from .importers import read_result_file

            loaded[ref] = (read_result_file(path, command="compare").runs, path.name)
        else:
            from .store import Store

            store = Store()
            info = store.dataset(ref)
            loaded[ref] = (store.runs(info.id), info.name)
    return loaded[ref]


def _label(name: str, where: dict[str, list[str]]) -> str:
    conds = "; ".join(k + "=" + ",".join(v) for k, v in where.items())
    return f"{name} [{conds}]" if conds else name


@click.command("compare")
@click.argument("dataset_a")
@click.argument("dataset_b")
@click.option("--where", "where_both", multiple=True, metavar="COL=VALUE",
              help="Keep only these rows on both sides (repeatable; values of one column are OR-ed).")
@click.option("--where-a", multiple=True, metavar="COL=VALUE", help="Keep only these rows of DATASET_A (repeatable).")
@click.option("--where-b", multiple=True, metavar="COL=VALUE", help="Keep only these rows of DATASET_B (repeatable).")
@click.option("--metric", default="output_throughput_tok_s", show_default=True, help="Numeric column to compare.")
@click.option("--ignore", multiple=True, metavar="COLUMN",
              help="A key column not to match points on (repeatable), e.g. model when the two sides name it "
                   "differently.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Write every matched point (keys, means, repeats, difference, noise, verdict) as CSV.")
@click.option("--json", "as_json", is_flag=True, help="JSON output.")
@click.pass_context
def compare_cmd(ctx: click.Context, dataset_a: str, dataset_b: str, where_both: tuple[str, ...],
                where_a: tuple[str, ...], where_b: tuple[str, ...], metric: str, ignore: tuple[str, ...],
                output: Path | None, as_json: bool) -> None:
    """Compare DATASET_A with DATASET_B point by point, and say which differences exceed run-to-run noise.

    Each side is a result file or a stored dataset (name or id); the same one
    twice with --where-a/--where-b compares two subsets (e.g. two frameworks).
    Points match on the configuration as `perfmodel fit` defines it (hardware,
    model, devices, input/output length, framework, dtypes, tp/pp, thread
    count) and the load: the load kind (a static batch and a concurrency are
    one axis), the batch size, and the request rate of request-rate runs;
    runs at different loads are never repeats. A column with one value on each side, a different
    one (--where-a framework=vllm --where-b framework=sglang), is what is
    compared and is not matched on. A difference is beyond noise when
    Welch's t-test on the repeats of both sides gives p < 0.05 (points
    without repeats cannot be judged).
    """
    from .cli import _echo_json, _want_json
    from .pareto import compare, noise_verdicts, select_runs

    both = _where(where_both, "--where")
    wa = {**both, **_where(where_a, "--where-a")}
    wb = {**both, **_where(where_b, "--where-b")}
    loaded: dict[str, tuple[Any, str]] = {}
    runs_a, name_a = _side(dataset_a, loaded)
    runs_b, name_b = _side(dataset_b, loaded)
    label_a, label_b = _label(name_a, wa), _label(name_b, wb)
    if label_a == label_b:
        label_a, label_b = f"A: {label_a}", f"B: {label_b}"
    comp = compare(select_runs(runs_a, wa, label=label_a), select_runs(runs_b, wb, label=label_b), metric=metric,
                   label_a=label_a, label_b=label_b, ignore=ignore)
    table = comp.table.assign(verdict=noise_verdicts(comp.table))
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(output, index=False)
    n_sig = int((table["verdict"] == "beyond noise").sum())
    if _want_json(ctx, as_json):
        _echo_json({"label_a": label_a, "label_b": label_b, "metric": metric, "message": comp.message,
                    "caveat": comp.caveat,
                    "n_matched": len(table), "n_beyond_noise": n_sig,
                    "n_within_noise": int((table["verdict"] == "within noise").sum()),
                    "n_no_repeats": int((table["verdict"] == "no repeats").sum()),
                    "n_only_a": comp.n_only_a, "n_only_b": comp.n_only_b,
                    "points": json.loads(table.to_json(orient="records")),
                    "output": str(output) if output is not None else None})
        return
    click.echo(f"A = {label_a}\nB = {label_b}\n{metric}: {comp.message}.")
    if comp.caveat:
        click.echo(f"warning: {comp.caveat}.", err=True)
    click.echo(f"{comp.n_only_a} point(s) only in A, {comp.n_only_b} only in B (not compared).")
    if len(table):
        keys = [c for c in comp.table.columns if c not in {*SHOWN_COLUMNS, "n_a", "n_b", "significant", "std_a",
                                                           "std_b"}]
        click.echo(table[[*keys, "n_a", "n_b", *SHOWN_COLUMNS]].to_string(
            index=False, float_format=lambda v: f"{v:,.4g}"))
    if output is not None:
        click.echo(f"wrote {output}")


def register(group: click.Group) -> None:
    """Add ``compare`` to the CLI group.

    Parameters
    ----------
    group
        The root ``perfmodel`` group.
    """
    group.add_command(compare_cmd)
