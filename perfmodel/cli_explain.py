"""``perfmodel explain`` and ``perfmodel compare-features``: SHAP attributions and feature-set comparisons.

Registered on the main group by :mod:`perfmodel.cli` (:func:`register`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

__all__ = ["explain_cmd", "compare_features_cmd", "register"]

_TOP_SHOWN = 15


def _runs(data: str) -> Any:
    from .cli import _load_training_runs

    return _load_training_runs(data, "explain")


def _fmt(df: Any) -> Any:
    """R^2 columns with 3 decimals (Markdown would give them one, like a percentage)."""
    out = df.copy()
    for c in out.columns:
        if str(c).startswith("r2"):
            out[c] = [("n/a" if v != v else f"{v:.3f}") for v in out[c].astype(float)]
    return out


def _split(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def _labelled(df: Any, pairs: tuple[tuple[str, str], ...] = (("feature", "label"),)) -> Any:
    """A copy of ``df`` with each feature column's human name (:func:`perfmodel.features.feature_label`)
    inserted right after it; the raw names stay, since scripts parse them."""
    from .features import feature_label

    out = df.copy()
    for col, label in pairs:
        if col in out.columns and label not in out.columns:
            out.insert(out.columns.get_loc(col) + 1, label, [feature_label(str(f)) for f in out[col]])
    return out


_PAIR_LABELS = (("feature_a", "label_a"), ("feature_b", "label_b"))


def _records(df: Any) -> list[dict[str, Any]]:
    import json

    return json.loads(df.to_json(orient="records"))


def _json(ctx: click.Context, local: bool, obj: dict[str, Any]) -> bool:
    """Print ``obj`` as JSON when ``--json`` (here or on the group) asks for it; tell whether it did."""
    from .cli import _echo_json, _want_json

    if not _want_json(ctx, local):
        return False
    _echo_json(obj)
    return True


def _write(df: Any, output: Path | None, quiet: bool = False) -> None:
    if output is None:
        return
    from .errors import PerfmodelError

    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        df.to_csv(output, index=False)
    except OSError as exc:
        raise PerfmodelError(f"cannot write {output}: {exc.strerror or exc}") from None
    if not quiet:
        click.echo(f"wrote {output}")


@click.command("explain")
@click.argument("source")
@click.option("--data", "data", default=None,
              help="With a MODEL_DIR: the rows to explain (a result file or a stored dataset).")
@click.option("--features", "feature_set", default=None,
              help="With a DATASET: the feature set the explained GBDT learns from (raw, derived, physical, "
                   "framework, settings, identity, static, all; join with '+'; default all). A MODEL_DIR "
                   "explains its own features.")
@click.option("--sample-size", type=click.IntRange(min=1), default=5000, show_default=True,
              help="Explain at most this many rows (a random sample, stated in the output).")
@click.option("--engine", type=click.Choice(["shap", "xgboost"]), default="xgboost", show_default=True,
              help="xgboost: XGBoost's own exact TreeSHAP (fast); shap: shap.TreeExplainer, the same values "
                   "(pip install 'perfmodel[explain]').")
@click.option("--interactions", "n_pairs", type=click.IntRange(min=0), default=0, show_default=True,
              help="Also print the N strongest feature pairs (on a 64-row sample).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the importance table (feature, kind, mean |SHAP|, share, rank, label: the feature in "
                   "words) as CSV; with --glossary, the glossary.")
@click.option("--json", "as_json", is_flag=True,
              help="JSON output: the message, the whole importance table, shares by kind and any interactions.")
@click.option("--glossary", "show_glossary", is_flag=True,
              help="Print what each feature of DATASET (its --features set) or of MODEL_DIR means: name in "
                   "words, unit and formula; fits and explains nothing.")
@click.pass_context
def explain_cmd(ctx: click.Context, source: str, data: str | None, feature_set: str | None, sample_size: int,
                engine: str, n_pairs: int, seed: int, output: Path | None, as_json: bool,
                show_glossary: bool) -> None:
    """Explain a saved model (MODEL_DIR, with --data) or a GBDT fitted on DATASET: mean |SHAP| per feature.

    Physical, framework (fw_*), identity and workload features are labelled in the `kind` column and named in
    words in the `label` column (`feature` keeps the raw name); --glossary says how each one is computed.
    """
    from . import explain as E
    from .errors import PerfmodelError
    from .evaluate import to_markdown
    from .models.base import METADATA_FILE

    src = Path(source)
    if show_glossary:
        _glossary(ctx, src, data, feature_set, output, as_json)
        return
    if src.is_dir() and (src / METADATA_FILE).is_file():
        if data is None:
            raise PerfmodelError(f"{source} is a saved model: give the rows to explain with --data DATASET "
                                 f"(a result file or a stored dataset)")
        if feature_set is not None:  # it was silently ignored
            raise click.BadParameter("a saved model explains the features it was trained on; --features goes "
                                     "with a DATASET", param_hint="--features")
        model: Any = E.tree_model(src)
        runs = _runs(data)
    else:
        if data is not None:
            raise click.BadParameter("--data goes with a MODEL_DIR; SOURCE is a dataset here", param_hint="--data")
        runs = _runs(source)
        model = E.fit_gbdt(runs, feature_set or "all", seed=seed, cache=True)
    ex = E.explain(model, runs, sample_size=sample_size, seed=seed, engine=engine)
    imp = _labelled(ex.importance())
    by_kind = imp.groupby("kind", sort=False)["share"].sum()
    it = E.interactions(model, runs, top=n_pairs, seed=seed) if n_pairs else None
    pairs = _labelled(it.table, _PAIR_LABELS) if it is not None else None
    # the CSV's first five columns keep their places for scripts that read them by position
    _write(imp[[c for c in imp.columns if c != "label"] + ["label"]], output, quiet=True)
    if _json(ctx, as_json, {"model": model.description, "message": ex.message, "importance": _records(imp),
                            "share_by_kind": {str(k): float(v) for k, v in by_kind.items()},
                            **({"interactions": _records(pairs), "interactions_message": it.message}
                               if it is not None else {}),
                            **({"output": str(output)} if output is not None else {})}):
        return
    if not src.is_dir() or not (src / METADATA_FILE).is_file():
        click.echo(f"fitted {model.description}")
    click.echo(ex.message)
    # mean |SHAP| with 3 significant digits and the share in percent (both had read 0.2 / 0.0 at one decimal)
    shown = imp.head(_TOP_SHOWN).assign(mean_abs_shap=lambda d: [f"{v:.3g}" for v in d["mean_abs_shap"]],
                                        share=lambda d: [f"{v:.1%}" for v in d["share"]])
    click.echo(to_markdown(shown, ["rank", "feature", "label", "kind", "mean_abs_shap", "share"]))
    if len(imp) > _TOP_SHOWN:
        click.echo(f"... {len(imp) - _TOP_SHOWN} more features (all in -o)")
    click.echo("share by kind: " + ", ".join(f"{k} {v:.1%}" for k, v in by_kind.items()))
    if it is not None:
        click.echo(it.message)
        click.echo(to_markdown(pairs))
    click.echo("what each feature means: perfmodel explain SOURCE --glossary")
    if output is not None:
        click.echo(f"wrote {output}")


def _glossary(ctx: click.Context, src: Path, data: str | None, feature_set: str | None, output: Path | None,
              as_json: bool) -> None:
    """``explain --glossary``: the features of a dataset's set, or of a saved model, in words."""
    from .errors import PerfmodelError
    from .evaluate import to_markdown
    from .features import feature_names, glossary
    from .models.base import METADATA_FILE

    if src.is_dir() and (src / METADATA_FILE).is_file():
        if feature_set is not None:
            raise click.BadParameter("a saved model explains the features it was trained on; --features goes "
                                     "with a DATASET", param_hint="--features")
        from .models import load_predictor

        predictor = load_predictor(src)
        names = [str(n) for n in getattr(predictor, "feature_names_", ()) or ()]
        if not names:
            raise PerfmodelError(f"model directory {src}: the predictor records no feature names to explain")
        if getattr(predictor, "name", "") == "roofline-gbm":
            names.append("prior_kind")  # its booster's extra column (perfmodel.explain.tree_model)
        what = f"features of the model in {src}"
    else:
        if data is not None:
            raise click.BadParameter("--data goes with a MODEL_DIR; SOURCE is a dataset here", param_hint="--data")
        names = feature_names(_runs(str(src)), feature_set or "all")
        what = f"features of the '{feature_set or 'all'}' set of {src}"
    table = glossary(names)
    _write(table, output, quiet=True)
    if _json(ctx, as_json, {"glossary": _records(table), **({"output": str(output)} if output is not None else {})}):
        return
    click.echo(f"{len(names)} {what}; ii = input length, oo = output length, bb = batch size")
    click.echo(to_markdown(table, ["feature", "name", "formula", "features"]))
    if output is not None:
        click.echo(f"wrote {output}")


@click.command("compare-features")
@click.argument("dataset")
@click.option("--transfer", type=click.Choice(["framework", "hardware"]), default=None,
              help="Transfer test: train without one framework (or accelerator), test on it, and show the drop "
                   "from a random split. Without it: random 80/20 split only.")
@click.option("--train-on", default=None, help="With --transfer: train on this one value...")
@click.option("--test-on", default=None, help="...and test on this one (default: leave each out in turn).")
@click.option("--sets", default="physical,framework,identity,all", show_default=True,
              help="Comma-separated feature sets.")
@click.option("--learners", default="gbdt,poly", show_default=True, help="Comma-separated: gbdt, poly.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the table as CSV.")
@click.option("--json", "as_json", is_flag=True, help="JSON output: the table as records and its notes.")
@click.pass_context
def compare_features_cmd(ctx: click.Context, dataset: str, transfer: str | None, train_on: str | None, test_on: str | None, sets: str,
                         learners: str, seed: int, output: Path | None, as_json: bool) -> None:
    """Compare feature sets (physical, framework, identity, all) with GBDT and polynomial learners on DATASET."""
    from . import explain as E
    from .evaluate import to_markdown

    runs = _runs(dataset)
    set_list = _split(sets) or list(E.DEFAULT_SETS)
    learner_list = _split(learners) or list(E.LEARNERS)

    def progress(line: str) -> None:
        click.echo(line, err=True)

    if transfer is None:
        if train_on or test_on:
            raise click.BadParameter("--train-on/--test-on need --transfer", param_hint="--train-on")
        df = E.compare_feature_sets(runs, set_list, learner_list, "random", seed=seed, on_progress=progress)
        cols = ["set", "learner", "n_features", "n_test", "r2", "r2_log", "mape_pct", "median_ape_pct",
                "top_features", "physics_agrees"]
    else:
        df = E.transfer_test(runs, transfer, set_list, learner_list, train_on=train_on, test_on=test_on, seed=seed,
                             on_progress=progress)
        cols = ["set", "learner", "split", "n_test", "r2_log_random", "r2_log_transfer", "r2_log_drop",
                "median_ape_random", "median_ape_transfer", "mape_random", "mape_transfer", "top_features",
                "physics_agrees"]
    notes = sorted({n for n in df["note"] if n})
    _write(df, output, quiet=True)
    if _json(ctx, as_json, {"table": _records(df), "notes": notes,
                            **({"output": str(output)} if output is not None else {})}):
        return
    click.echo(to_markdown(_fmt(df), cols))
    for note in notes:
        click.echo(f"note: {note}")
    if output is not None:
        click.echo(f"wrote {output}")


def register(group: click.Group) -> None:
    """Add ``explain`` and ``compare-features`` to the CLI group.

    Parameters
    ----------
    group
        The ``perfmodel`` click group.
    """
    group.add_command(explain_cmd)
    group.add_command(compare_features_cmd)
