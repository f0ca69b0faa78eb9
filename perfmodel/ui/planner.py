"""Planner and Report pages: state keys, cached wrappers keyed on primitives, and the inputs form state."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from .. import planner
from ..errors import Problem, ValidationError
from . import cached

__all__ = ["KEYS", "DEFAULTS", "URL_SPEC", "URL_BOUNDS", "URL_READ", "MODELS_FOR", "inputs_dict", "apply_inputs", "default_models", "default_lengths", "page_notes",
           "front_missing", "choices", "settle_choices", "CATALOG_STASH", "PREDICT_HELP", "SOURCE_HEADER", "plan_model", "plan_tables", "report_html", "report_pdf", "display_table", "display_column_config",
           "infeasible_table", "lengths_caveat", "MISSING"]

#: Widget keys of the Planner page (prefixed so no other page collides), in form order.
KEYS = {
    "dataset": "planner.dataset", "rate": "planner.rate_rps", "input_len": "planner.input_len_tok",
    "output_len": "planner.output_len_tok", "e2e": "planner.e2e_s", "ttft": "planner.ttft_s",
    "tpot": "planner.tpot_s", "percentile": "planner.percentile", "models": "planner.models",
    "hardware": "planner.hardware", "headroom": "planner.headroom", "currency": "planner.currency",
    "prices": "planner.prices", "predict": "planner.predict", "framework": "planner.predicted_framework",
    "devices": "planner.device_counts", "usd_rate": "planner.usd_to_currency", "frameworks": "planner.frameworks",
}
DEFAULTS: dict[str, Any] = {"rate": 10.0, "input_len": 1024.0, "output_len": 1024.0, "e2e": 60.0, "ttft": 0.0,
                            "tpot": 0.0, "percentile": "p90", "models": [], "hardware": [], "headroom": 0.2,
                            "currency": "USD", "prices": "", "predict": False, "framework": "", "devices": [],
                            "usd_rate": 1.0, "frameworks": []}


URL_SPEC = {"dataset": (KEYS["dataset"], ""), **{k: (KEYS[k], v) for k, v in DEFAULTS.items()}}
"""The Planner page's inputs in its URL (:mod:`perfmodel.ui.pagestate`): parameter -> (widget key, default)."""

URL_BOUNDS = {"rate": (0.001, float("inf")), "input_len": (1.0, float("inf")), "output_len": (1.0, float("inf")),
              "headroom": (0.0, 10.0), "e2e": (0.0, float("inf")), "ttft": (0.0, float("inf")),
              "tpot": (0.0, float("inf")), "usd_rate": (1e-6, float("inf"))}
"""What the page's number boxes accept (a link value outside is named and not used)."""

URL_READ = "planner._url_read"
"""Set once the session's first run of the page has read its URL."""

MODELS_FOR = "planner._models_for"
"""The dataset whose default model the Models widget was given (a restored plan counts as given)."""


def default_models(runs: pd.DataFrame) -> list[str]:
    """The Planner's default models: the dataset's most measured one (ties to the first by name); none
    where no run names a model.

    Parameters
    ----------
    runs
        Runs table.

    Returns
    -------
    list of str
    """
    if "model" not in runs.columns:
        return []
    counts = runs["model"].dropna().astype(str).value_counts()
    if counts.empty:
        return []
    top = counts[counts == counts.max()].index
    return [sorted(top)[0]]


AUTO_LENGTHS = "planner._auto_lengths"
"""The input/output lengths :func:`default_lengths` chose last (replaced again when the dataset changes)."""


def default_lengths(state: Any, runs: pd.DataFrame, models: list[str]) -> None:
    """Set the workload's input and output lengths to the most measured pair of the given models' runs (all
    runs where none is given), where both are still the page's defaults or the pair chosen here for another
    dataset; a pair the user or a link chose stays.

    Parameters
    ----------
    state
        The session state (a mapping).
    runs
        Runs table.
    models
        The plan's models.
    """
    keys = (KEYS["input_len"], KEYS["output_len"])
    now = tuple(state.get(k) for k in keys)
    # the page's defaults, or the pair this function chose for another dataset (switching datasets kept it, and
    # the new one read "Not measured at 128/128")
    if now != (DEFAULTS["input_len"], DEFAULTS["output_len"]) and now != state.get(AUTO_LENGTHS):
        return
    cols = ["input_len_tok", "output_len_tok"]
    if not set(cols) <= set(runs.columns):
        return
    sub = runs[runs["model"].astype(str).isin(models)] if models and "model" in runs.columns else runs
    pairs = sub[cols].apply(pd.to_numeric, errors="coerce").dropna()
    pairs = pairs[(pairs > 0).all(axis=1)]
    if pairs.empty:
        return
    counts = pairs.value_counts(sort=False)
    top = counts[counts == counts.max()].index.min()  # ties to the shortest prompt
    state[keys[0]], state[keys[1]] = float(top[0]), float(top[1])
    state[AUTO_LENGTHS] = (float(top[0]), float(top[1]))


PREDICT_HELP = ("Size what the runs do not cover with roofline-gbm (the What-if page's model, trained on this "
                "dataset the first time, 10-20 s): candidates measured only at other lengths are predicted at the "
                "workload's lengths, anchored on their own runs, instead of sized from the nearest measured "
                "lengths; chosen hardware and models without runs are predicted too. Predictions carry the "
                "model's 90% band, which the device counts and SLO checks use.")
"""The Planner's prediction toggle, explained."""


def choices(runs: pd.DataFrame, home: str, predict: bool) -> tuple[list[str], list[str], list[str]]:
    """The Planner's model, hardware and framework options: those in the runs, and with ``predict`` the
    catalog's models and hardware after them (a candidate without runs is predicted). Frameworks are
    the runs' own, most measured first (a predicted candidate runs one the predictor was trained on).

    Parameters
    ----------
    runs
        The dataset's runs.
    home
        Data directory (user catalogs).
    predict
        Prediction is on.

    Returns
    -------
    (models, hardware, frameworks)
    """
    def present(col: str) -> list[str]:
        return sorted(set(runs[col].dropna().astype(str))) if col in runs.columns else []

    models, hardware = present("model"), present("hardware")
    if predict:
        models += [m for m in cached.model_choices(home) if m not in models]
        hardware += [h for h in cached.hardware_choices(home) if h not in hardware]
    fws = (runs["framework"].dropna().astype(str).value_counts().index.tolist()
           if "framework" in runs.columns else [])
    return models, hardware, fws


CATALOG_STASH = "planner._catalog_choices"
"""Models and hardware chosen from the catalog (no runs), held aside while prediction is off."""
PREDICTED_DEVICE_COUNTS = (1, 2, 4, 8)
"""Devices per replica offered with prediction on (besides the measured ones)."""


def settle_choices(runs: pd.DataFrame, home: str, predict: bool) -> tuple[list[str], list[str], list[str], list[str],
                                                                          list[str]]:
    """:func:`choices` plus the devices-per-replica options, with the widgets' values made valid for them
    (before the widgets are drawn): with prediction off, chosen catalog entries without runs are held aside
    (:data:`CATALOG_STASH`) rather than dropped, and come back when it is on again.

    Parameters
    ----------
    runs, home, predict
        As :func:`choices`.

    Returns
    -------
    (models, hardware, frameworks, device counts as text, held aside)
    """
    models, hardware, fws = choices(runs, home, predict)
    counts = {int(d) for d in pd.to_numeric(runs.get("device_count", pd.Series(dtype=float)), errors="coerce")
              .dropna()}
    devices = [str(d) for d in sorted(counts | (set(PREDICTED_DEVICE_COUNTS) if predict else set()))]
    s = st.session_state
    stash = s.setdefault(CATALOG_STASH, {"models": [], "hardware": [], "devices": []})
    s[KEYS["frameworks"]] = [f for f in s.get(KEYS["frameworks"], []) if f in fws]
    for k, opts in (("models", models), ("hardware", hardware), ("devices", devices)):
        cur = [str(v) for v in s.get(KEYS[k], [])]
        if predict:
            cur += [v for v in stash[k] if v in opts and v not in cur]
            stash[k] = []
        else:
            stash[k] += [v for v in cur if v not in opts and v not in stash[k]]
        s[KEYS[k]] = [v for v in cur if v in opts]
    held = [*stash["models"], *stash["hardware"], *(f"{d} devices per replica" for d in stash["devices"])]
    return models, hardware, fws, devices, held


def page_notes(table: pd.DataFrame, inputs: dict[str, Any]) -> list[str]:
    """What the Planner page should say above its table that the table alone does not: candidates of
    several models, and candidates predicted without runs. (A latency target judged against means is one of the
    plan's own notes, :func:`perfmodel.planner.latency_basis_notes`, which the CLI and the report show too.)

    Parameters
    ----------
    table
        :attr:`perfmodel.planner.PlanResult.table`.
    inputs
        :func:`inputs_dict`.

    Returns
    -------
    list of str
    """
    out: list[str] = []
    if len(table) and "model" in table.columns and table["model"].nunique() > 1:
        out.append(f"These candidates serve {table['model'].nunique()} different models, compared as alternatives: "
                   "pick one model under *Models* to size a deployment of that model.")
    if len(table) and "source" in table.columns:
        bare = table[table["source"].astype(str).str.match(r"predicted \(")]
        if len(bare):
            conf = pd.to_numeric(bare["confidence"], errors="coerce").dropna()
            low = f"; the least sure has confidence {conf.min():.2f}, i.e. a 90% band from {conf.min():.2f}x to " \
                  f"{1 / conf.min():.1f}x its prediction" if len(conf) and conf.min() > 0 else ""
            out.append(f"{len(bare)} of {len(table)} candidates have no runs of their hardware and model: they are the "
                       f"predictor's extrapolation from other hardware and models{low}. Their device counts are "
                       "as sure as the band under *devices (low)* / *devices (high)* says.")
    return out


def front_missing(points: pd.DataFrame, name: str) -> str | None:
    """Why the Planner's front ``name`` has nothing to draw (no candidate has the quantity on one of its axes),
    in words with what to do; None where it has.

    Parameters
    ----------
    points
        Feasible operating points.
    name
        A key of :data:`perfmodel.pareto.FRONTS`.

    Returns
    -------
    str or None
    """
    from ..pareto import FRONTS

    x, _, y, _ = FRONTS[name]
    for col in (x, y):
        vals = pd.to_numeric(points[col], errors="coerce") if col in points.columns else pd.Series(dtype=float)
        if vals.notna().any():
            continue
        if col.startswith("cost"):
            hw = ", ".join(sorted(set(points["hardware"].dropna().astype(str)))) if "hardware" in points.columns else ""
            first = hw.split(", ")[0] if hw else "HARDWARE"
            return (f"No price is known for {hw or 'these devices'}: the catalog has no public per-device-hour price "
                    f"for them. Add one per line under *Price overrides* (e.g. `{first}=3.50`) to see cost.")
        if col.startswith("energy"):
            return ("No energy figure for these candidates: the runs recorded no power and the catalog has no TDP "
                    "for their devices.")
        return f"No candidate has a value for {col}, so there is no front to draw."
    return None


PRICES_LABEL = "Price overrides per device-hour (hardware=price, one per line)"
"""The price box's label, which its errors name."""


def prices_from_text(text: str) -> dict[str, float]:
    """The price box's ``hardware=price`` entries (one per line or comma-separated; blank ones skipped).

    Raises
    ------
    ValidationError
        An entry without ``=``, without a hardware name, or whose price is not a non-negative number, each
        named with its position (``h100-sxm=abc`` fell back to the catalog's $2.99 without a word).
    """
    out: dict[str, float] = {}
    problems: list[Problem] = []
    for i, part in enumerate((p.strip() for p in text.replace(",", "\n").splitlines()), start=1):
        if not part:
            continue
        hw, sep, v = part.partition("=")
        try:
            price = float(v) if sep and hw.strip() else math.nan
        except ValueError:
            price = math.nan
        if not (math.isfinite(price) and price >= 0):
            problems.append(Problem(f"entry {i} {part!r} is not hardware=price with a price of 0 or more "
                                    "(e.g. h100-sxm=2.5)", column=PRICES_LABEL))
        else:
            out[hw.strip()] = price
    if problems:
        raise ValidationError("the price overrides are not valid:", problems)
    return out


def slo_unit_hint(state: Any) -> str | None:
    """A warning for a TPOT target that reads like milliseconds typed into the seconds box (50 for 50 ms:
    a target of 50 s per output token is met by any server), else None."""
    tpot = float(state.get(KEYS["tpot"]) or 0.0)
    if tpot < 1.0:
        return None
    return (f"The TPOT target is {tpot:g} s per output token (a pace of {1 / tpot:.2g} tokens/s), which any "
            f"server meets. The targets are in seconds: {tpot:g} ms is {tpot / 1000:g}.")


def inputs_dict() -> dict[str, Any]:
    """The planner inputs (as :class:`perfmodel.planner.PlanInputs` data) from the page's widgets.

    Returns
    -------
    dict
    """
    s = st.session_state
    g = lambda k: s.get(KEYS[k], DEFAULTS[k])  # noqa: E731
    slo: dict[str, Any] = {"percentile": g("percentile")}
    for k, name in (("e2e", "e2e_s"), ("ttft", "ttft_s"), ("tpot", "tpot_s")):
        if g(k) and float(g(k)) > 0:
            slo[name] = float(g(k))
    out = {"workload": {"request_rate_rps": float(g("rate")), "input_len_tok": float(g("input_len")),
                        "output_len_tok": float(g("output_len"))},
           "slo": slo, "models": list(g("models")), "hardware": list(g("hardware")),
           "headroom": float(g("headroom")), "currency": str(g("currency")) or "USD",
           "prices": prices_from_text(str(g("prices")))}
    if out["currency"].upper() != "USD" and float(g("usd_rate")) != 1.0:
        out["usd_to_currency"] = float(g("usd_rate"))
    if g("devices"):
        out["device_counts"] = sorted({int(d) for d in g("devices")})
    if g("frameworks"):
        out["frameworks"] = list(g("frameworks"))
    if g("predict"):
        out["predict"] = True
        if g("framework"):
            out["predicted_framework"] = str(g("framework"))
    return out


def apply_inputs(dataset_id: str, plan: dict[str, Any]) -> None:
    """Put a saved plan back into the widgets (before they are drawn).

    Parameters
    ----------
    dataset_id
        Dataset the plan was made on.
    plan
        Planner inputs as saved.
    """
    s = st.session_state
    w, slo = plan.get("workload") or {}, plan.get("slo") or {}
    s[KEYS["dataset"]] = dataset_id
    s[MODELS_FOR] = dataset_id  # the plan's models, "all" included, are given: no default replaces them
    s[KEYS["rate"]] = float(w.get("request_rate_rps") or DEFAULTS["rate"])
    s[KEYS["input_len"]] = float(w.get("input_len_tok") or DEFAULTS["input_len"])
    s[KEYS["output_len"]] = float(w.get("output_len_tok") or DEFAULTS["output_len"])
    s[KEYS["e2e"]] = float(slo.get("e2e_s") or 0.0)
    s[KEYS["ttft"]] = float(slo.get("ttft_s") or 0.0)
    s[KEYS["tpot"]] = float(slo.get("tpot_s") or 0.0)
    s[KEYS["percentile"]] = slo.get("percentile", "p90")
    s[KEYS["models"]] = list(plan.get("models") or [])
    s[KEYS["hardware"]] = list(plan.get("hardware") or [])
    s[KEYS["headroom"]] = float(plan.get("headroom", DEFAULTS["headroom"]))
    s[KEYS["currency"]] = plan.get("currency", "USD")
    s[KEYS["usd_rate"]] = float(plan.get("usd_to_currency", 1.0))
    s[KEYS["prices"]] = "\n".join(f"{k}={v:g}" for k, v in (plan.get("prices") or {}).items())
    s[KEYS["devices"]] = [str(d) for d in plan.get("device_counts") or []]
    s[KEYS["frameworks"]] = list(plan.get("frameworks") or [])
    s[KEYS["predict"]] = bool(plan.get("predict", False))
    s[KEYS["framework"]] = str(plan.get("predicted_framework") or "") if plan.get("predict") else ""


def plan_model(home: str, dataset_id: str, stamp: int, n_rows: int, label: str) -> tuple[str, int] | None:
    """The predictor a plan with ``predict`` uses: the What-if page's default model of the dataset
    (roofline-gbm, suspect points left out), trained here, inside a status box, where it is not yet.

    Parameters
    ----------
    home, dataset_id, stamp
        The dataset.
    n_rows
        Runs in the dataset (part of the model's directory name).
    label
        The dataset's name, for the status box.

    Returns
    -------
    tuple or None
        The model's directory and the modification time of its ``metadata.json`` (for :func:`plan_tables`);
        None where training failed (the error is shown in the box).
    """
    from . import whatif as WUI

    path = WUI.default_model_path(home, dataset_id, n_rows)
    meta = path / "metadata.json"
    if not meta.exists() and not WUI.train_with_status(
            home, dataset_id, stamp, WUI.DEFAULT_OPTIONS, path,
            f"Training {WUI.DEFAULT_PREDICTOR} on {label} to predict what was not measured"):
        return None
    return str(path), meta.stat().st_mtime_ns


@st.cache_data(show_spinner="Sizing candidates...", max_entries=16)
def plan_tables(home: str, dataset_id: str, stamp: int, inputs_json: str, model_path: str = "",
                model_mtime_ns: int = 0) -> dict[str, Any]:
    """Run the planner on a stored dataset; tables and text only (results live in the cache).

    Parameters
    ----------
    home, dataset_id, stamp
        Store, dataset and store version (cache key).
    inputs_json
        Planner inputs as sorted JSON.
    model_path, model_mtime_ns
        The predictor for what was not measured (:func:`plan_model`), or ``""`` for none: then a plan
        with ``predict`` is sized from the measurements alone (the planner does not train one here).

    Returns
    -------
    dict
        ``summary``, ``notes``, ``table``, ``infeasible``, ``points`` (frames), ``currency``, ``lengths``
        (the workload's mean input/output lengths as ``"1024/1024"``, as in the table's ``lengths``) and
        ``recommended`` (the table row of the recommendation, or ``None``).
    """
    from ..planner import plan
    from .whatif import load_model

    runs = cached.dataset_runs(home, dataset_id, stamp)
    inputs = json.loads(inputs_json)
    predictor = None
    if inputs.get("predict"):
        if model_path:
            predictor = load_model(model_path, model_mtime_ns)
        else:
            inputs = {**inputs, "predict": False}
    res = plan(inputs, runs, predictor=predictor)
    i, o = res.inputs.workload.mean_lengths
    return {"summary": res.summary(), "notes": list(res.notes), "table": res.table, "infeasible": res.infeasible,
            "points": res.points, "currency": res.currency, "lengths": f"{i:g}/{o:g}",
            "recommended": res.recommendation}


def _report(home: str, dataset_id: str, stamp: int, inputs_json: str, accuracy: bool) -> Any:
    from ..report import build_report
    from . import whatif as WUI

    store = cached.open_store(home)
    info = store.dataset(dataset_id)
    inputs = json.loads(inputs_json) if inputs_json else None
    runs = cached.dataset_runs(home, dataset_id, stamp)
    # The model the What-if and Planner pages saved for this dataset, where one was trained: the report's
    # predictions are then theirs, and it is not trained again (on the bundled sample the report took 4.5 s instead of 9.7 s, 2026-12-02).
    meta = WUI.default_model_path(home, dataset_id, int(info.n_runs)) / "metadata.json"
    predictor = WUI.load_model(str(meta.parent), meta.stat().st_mtime_ns) if meta.exists() else None
    return build_report(runs, dataset_name=info.name, info=info, plan_inputs=inputs, accuracy=accuracy,
                        predictor=predictor)


@st.cache_data(show_spinner="Building the report: curves, the predictor, attributions and, if asked, hold-out "
                            "accuracy (half a minute on the bundled sample)...", max_entries=4)
def report_html(home: str, dataset_id: str, stamp: int, inputs_json: str, accuracy: bool) -> bytes:
    """The self-contained HTML report.

    Parameters
    ----------
    home, dataset_id, stamp
        Store, dataset and store version.
    inputs_json
        Planner inputs as JSON, or "" for none.
    accuracy
        Include the hold-out accuracy section.

    Returns
    -------
    bytes
    """
    from ..report import render_html

    return render_html(_report(home, dataset_id, stamp, inputs_json, accuracy)).encode("utf-8")


@st.cache_data(show_spinner="Printing the PDF...", max_entries=4)
def report_pdf(home: str, dataset_id: str, stamp: int, inputs_json: str, accuracy: bool) -> bytes:
    """The PDF report (needs Chromium and Playwright; raises PerfmodelError with the install hint otherwise).

    Parameters
    ----------
    home, dataset_id, stamp, inputs_json, accuracy
        As :func:`report_html`.

    Returns
    -------
    bytes
    """
    import tempfile
    from pathlib import Path

    from ..report import html_to_pdf, render_html

    rep = _report(home, dataset_id, stamp, inputs_json, accuracy)
    with tempfile.TemporaryDirectory() as tmp:
        path = html_to_pdf(render_html(rep, static=True), Path(tmp) / "report.pdf")
        return path.read_bytes()


#: Shown in the planner's tables for an unknown value (no price, no power figure).
MISSING = "—"
LENGTHS_HEADER = "sized at (in/out tok)"
"""The planner table's header of the lengths a candidate's throughput is for."""
LOAD_BATCH_HEADER = "in flight at load"
"""The planner table's header of the sequences a replica holds at the offered load
(:func:`perfmodel.planner.at_offered_load`): the batch column is the most it may hold."""
LOAD_E2E_HEADER = "e2e s at load"
"""The planner table's header of the mean end-to-end latency at the offered load."""
SOURCE_HEADER = "sized from"
"""The planner table's header of what a candidate's throughput comes from (measured curve or predictor)."""


def display_table(table: pd.DataFrame, currency: str, lengths: str | None = None) -> pd.DataFrame:
    """The candidate columns a reader needs, in reading order.

    With the workload's ``lengths`` (``"1024/1024"``), a candidate sized from runs at other lengths says so
    in its status (``ok, sized at 512/512``): its throughput and latency are those of other requests, which a
    bare "ok" beside them had hidden.

    What a buyer decides on (devices and cost) comes right after what the row is, before the operating point
    and the bands: in the old order (status, lengths, batch, throughput and three device columns first) the
    cost columns started past the right edge of a 1,500-pixel-wide window.

    Parameters
    ----------
    table
        :attr:`perfmodel.planner.PlanResult.table`.
    currency
        For column names.
    lengths
        The workload's mean lengths as :func:`plan_tables` gives them.

    Returns
    -------
    pandas.DataFrame
    """
    cols = {"hardware": "hardware", "model": "model", "framework": "framework", "device_count": "devices/replica",
            "lengths": LENGTHS_HEADER, "devices": "devices", "cost_per_hour": f"{currency}/h",
            "cost_per_m_output_tok": f"{currency}/M output tok", "status": "status", "source": SOURCE_HEADER,
            "throughput_per_device_tok_s": "tok/s per device", "batch_size": "batch", "e2e_s": "e2e s",
            "ttft_s": "TTFT s", "tpot_s": "TPOT s", "load_batch": LOAD_BATCH_HEADER,
            "e2e_at_load_s": LOAD_E2E_HEADER,
            "devices_lo": "devices (low)", "devices_hi": "devices (high)",
            "price_per_device_hour": f"{currency}/device-hour", "price_source": "price source",
            "energy_j_per_output_tok": "J/output tok", "energy_basis": "energy basis", "note": "note"}
    # TTFT and TPOT beside e2e, so that the margin to each target shows; not where no candidate has one
    shown = [c for c in cols if c in table.columns
             and not (c in ("ttft_s", "tpot_s") and not np.isfinite(pd.to_numeric(table[c], errors="coerce")).any())]
    out = table[shown].rename(columns=cols)
    if "devices (high)" in out.columns:  # the planner's -1: the band's low end is 0 tok/s, so no upper bound
        out["devices (high)"] = out["devices (high)"].where(out["devices (high)"] >= 0)
    if "robust" in table.columns and "status" in out.columns:
        fragile = (table["status"].astype(str) == "ok") & ~table["robust"].astype(bool)
        out["status"] = out["status"].astype(str).where(~fragile, "ok, not robust")
    if "overloaded" in table.columns and "status" in out.columns:
        # a rate the server did not deliver: its own word, not the band's "not robust"
        over = table["overloaded"].fillna(False).astype(bool)
        out["status"] = [f"{st_.removesuffix(', not robust')}, overloaded (rate not delivered)" if o else st_
                         for st_, o in zip(out["status"].astype(str), over, strict=True)]
        # no load is read off its line from nothing to a saturated peak, as the summary and the report say none
        for c in (LOAD_BATCH_HEADER, LOAD_E2E_HEADER):
            if c in out.columns:
                out[c] = pd.to_numeric(out[c], errors="coerce").where(~over.to_numpy())
    if lengths and {"status", "lengths"} <= set(table.columns):
        other = table["lengths"].astype(str) != str(lengths)
        out["status"] = [f"{st_}, sized at {ln}" if o else st_ for st_, ln, o in
                         zip(out["status"].astype(str), table["lengths"].astype(str), other, strict=True)]
    if {"source", "confidence"} <= set(table.columns):  # a measured curve's "confidence" is its R^2: not shown
        predicted = table["source"].astype(str).str.startswith("predicted")
        if predicted.any():
            out.insert(list(out.columns).index(SOURCE_HEADER) + 1, "confidence",
                       pd.to_numeric(table["confidence"], errors="coerce").where(predicted))
    return out


_NO_PRICE = f"{MISSING}: no price known for this hardware (give one under Price overrides)"


def infeasible_table(infeasible: pd.DataFrame) -> pd.DataFrame:
    """The rejected candidates with the candidate table's headers (``devices/replica``, not ``device_count``).

    Parameters
    ----------
    infeasible
        :attr:`perfmodel.planner.PlanResult.infeasible`.

    Returns
    -------
    pandas.DataFrame
    """
    return infeasible.rename(columns={"device_count": "devices/replica"})


def display_column_config(currency: str) -> dict[str, Any]:
    """``st.dataframe`` column formats for :func:`display_table` (give ``placeholder=MISSING`` too).

    Parameters
    ----------
    currency
        As given to :func:`display_table`.

    Returns
    -------
    dict
        Column name -> ``st.column_config`` column.
    """
    num = st.column_config.NumberColumn
    return {
        # pinned: what a row is stays in view while the table scrolls sideways to the bands and the notes
        "hardware": st.column_config.TextColumn(pinned=True), "model": st.column_config.TextColumn(pinned=True),
        "devices/replica": num(format="%d"),
        "devices": num(format="%,.0f", help="Devices to serve the demand plus headroom at the central throughput; "
                                            "the band is in devices (low) and devices (high)"),
        LENGTHS_HEADER: st.column_config.TextColumn(
            help="Input/output lengths the candidate's throughput is for: the workload's, or the nearest measured "
                 "lengths where the workload's were not measured and nothing predicts them"),
        SOURCE_HEADER: st.column_config.TextColumn(
            help="measured curve: fitted to this candidate's runs; predicted at the workload's lengths: the "
                 "predictor anchored on the candidate's runs at other lengths; predicted: no runs of this "
                 "candidate (turn on Predict what was not measured for both)"),
        "batch": num(format="%,.0f", help="The most sequences a replica may run and still meet the SLOs: its "
                                          "throughput there sizes the fleet"),
        LOAD_BATCH_HEADER: num(format="%,.1f", help="Sequences a replica holds at the offered load: where its "
                               "throughput curve meets its share of the demand, below the batch when the fleet has "
                               "headroom (a server never fills a batch the traffic does not)"),
        LOAD_E2E_HEADER: num(format="%,.2f", help="About the end-to-end latency at the offered load: e2e s's "
                             "curve (measured or derived, the same basis) read at the sequences in flight, never "
                             "above e2e s; it leaves out queueing under random arrivals"),
        "tok/s per device": num(format="%,.0f", help="Output tokens per second per device"),
        "confidence": num(format="%.2f", help="The predictor's confidence for a predicted row: c means a 90% band "
                                              "from c x to 1/c x the prediction"),
        "devices (low)": num(format="%,.0f"),
        "devices (high)": num(format="%,.0f", help="Devices at the band's low throughput; a dash where that is 0 "
                                                   "tok/s (no upper bound)"),
        f"{currency}/h": num(format="%,.2f", help=_NO_PRICE),
        f"{currency}/M output tok": num(format="%,.3f", help=_NO_PRICE),
        f"{currency}/device-hour": num(format="%,.2f", help="The price per device-hour the cost uses: yours "
                                        "(price source: user) or the hardware catalog's, with its public source."),
        "J/output tok": num(format="%,.3f", help="The fleet's power over the demand, as the cost is the fleet's "
                                                "cost over it: TDP x devices (an upper bound) or the power "
                                                "recorded at the planned batch (energy basis)"),
        "e2e s": num(format="%,.2f"),
    }


def lengths_caveat(table: pd.DataFrame, lengths: str, recommended: dict[str, Any] | None = None) -> str:
    """A sentence when candidates were sized from the nearest measured lengths, else ``""``.

    Parameters
    ----------
    table
        :attr:`perfmodel.planner.PlanResult.table`.
    lengths
        The workload's mean lengths as :func:`plan_tables` gives them (``"1024/1024"``).
    recommended
        The recommended row, if any.

    Returns
    -------
    str
    """
    return planner.lengths_caveat(table, lengths, recommended, column=LENGTHS_HEADER)
