"""Assemble a capacity report's content from a dataset (and optionally planner inputs).

Computing is kept apart from formatting: :func:`build_report` returns a frozen
:class:`Report` of tables, figures and sentences; :mod:`perfmodel.report.html`
turns it into HTML, :mod:`perfmodel.report.pdf` into a PDF.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..curve_tables import (
    compact_number,
    compact_seconds,
    fit_counts_words,
    fit_import_warnings,
    fits_summary,
    import_caveats,
    in_seconds,
)
from ..errors import PerfmodelError
from ..models.base import DEFAULT_TARGET, cannot_run_reasons
from ..pareto import candidate_labels
from ..planner import SETTING_COLUMNS, PlanInputs, PlanResult, nearest_lengths, plan, unmatched_candidates
from ..plots import log_y_axis, wide_span
from ..whatif import suspect_mask

__all__ = ["Report", "Section", "build_report", "SECTION_TITLES", "MAX_CURVES", "ACCURACY_PREDICTOR"]

SECTION_TITLES = (
    "Executive summary",
    "Workload and SLOs",
    "Candidates",
    "Saturation curves and knees",
    "Predictions with bands and confidence",
    "Top feature attributions",
    "Data provenance",
    "Measured accuracy on held-out data",
)
"""Every report has these sections, in this order (a section without content says why)."""

MAX_CURVES = 8
"""Curves drawn in the report (the plan's best candidates, else the configurations with most points)."""
ACCURACY_PREDICTOR = "roofline-gbm"
"""Predictor scored (``config`` hold-out protocol, one seed) and used for predictions and attributions."""
_FALLBACK_PREDICTOR = "linear"


@dataclass(frozen=True)
class Section:
    """One report section: sentences, tables and figures, in that order.

    Attributes
    ----------
    title
        One of :data:`SECTION_TITLES`.
    paragraphs
        Plain text (escaped on rendering).
    tables
        ``(caption, frame)`` pairs.
    figures
        Plotly figures.
    """

    title: str
    paragraphs: tuple[str, ...] = ()
    tables: tuple[tuple[str, pd.DataFrame], ...] = ()
    figures: tuple[go.Figure, ...] = ()


@dataclass(frozen=True)
class Report:
    """The content of a capacity report.

    Attributes
    ----------
    title
        Report title (contains the dataset name; escaped on rendering).
    generated_at
        ISO-8601 UTC time.
    sections
        One :class:`Section` per :data:`SECTION_TITLES` entry.
    plan
        The plan result, when planner inputs were given.
    timings_s
        Seconds spent per step (for the benchmark).
    """

    title: str
    generated_at: str
    sections: tuple[Section, ...]
    plan: PlanResult | None = field(default=None, repr=False)
    timings_s: Mapping[str, float] = field(default_factory=dict)

    def section(self, title: str) -> Section:
        """The section titled ``title``.

        Parameters
        ----------
        title
            One of :data:`SECTION_TITLES`.

        Returns
        -------
        Section

        Raises
        ------
        KeyError
            No such section (a programming error).
        """
        for s in self.sections:
            if s.title == title:
                return s
        raise KeyError(title)


def _fmt_table(df: pd.DataFrame, cols: Sequence[str], rename: Mapping[str, str] | None = None) -> pd.DataFrame:
    out = df[[c for c in cols if c in df.columns]].copy()
    return out.rename(columns=dict(rename or {}))


def _span(values: pd.Series) -> str:
    """How far apart positive values lie, in words: "about 120×"."""
    v = values[np.isfinite(values) & (values > 0)]
    return f"about {compact_number(float(v.max() / v.min()))}×"


def _band(v: float, lo: float, hi: float, fmt: Callable[[float], str] = compact_number) -> str:
    if not np.isfinite(v):
        return "n/a"
    if not (np.isfinite(lo) and np.isfinite(hi)) or fmt(lo) == fmt(hi) == fmt(v):
        return fmt(v)  # no band, or one that rounds to the value ("0.152 [0.152, 0.152]")
    return f"{fmt(v)} [{fmt(lo)}, {fmt(hi)}]"


#: The planner's statuses in words.
STATUS_WORDS = {"ok": "ok", "optimistic_only": "optimistic only"}


_J_PER_KWH_PER_M = 3.6
"""Joules per token in one kWh per million tokens (3.6e6 J / 1e6 tokens)."""
_money = "{:,.2f}".format
_money_per_m = "{:,.3f}".format


def _devices(n: int) -> str:
    """A device count of the band; the planner's -1 (the band's low throughput is 0) is "unbounded"."""
    return str(n) if n >= 0 else "unbounded"


#: What a row's pessimistic and optimistic latencies come from (the planner's ``latency_band``), as the candidates
#: table's latency basis says it; none without a latency target.
LATENCY_END_WORDS = {"repeats": "repeats (slowest and fastest run at this batch)",
                     "throughput band": "throughput band",
                     "repeats and throughput band": "repeats where measured several times, else the throughput band"}


def _flag(v: Any) -> bool:
    """A boolean column's value; a missing one (NaN, which is truthy, or None) is False."""
    return isinstance(v, bool | np.bool_) and bool(v)


def _status_text(r: Mapping[str, Any]) -> str:
    """A candidate's status cell: an overloaded rate in its own words (it had read "(not robust)", the band's
    word, for a rate the server did not deliver), else "(not robust)" where the SLOs fail at the pessimistic end."""
    word = STATUS_WORDS.get(r["status"], r["status"])
    if _flag(r.get("overloaded")):
        return f"{word} (overloaded: rate not delivered)"
    return word + ("" if r["robust"] or r["status"] != "ok" else " (not robust)")


def _candidate_table(res: PlanResult) -> pd.DataFrame:
    t = res.table
    cur = res.currency
    rows = []
    for _, r in t.iterrows():
        rows.append({
            "hardware": r["hardware"], "framework": r["framework"], "model": r["model"],
            "devices/replica": int(r["device_count"]), "batch": f"{r['batch_size']:g}",
            "status": _status_text(r),
            "sized from": f"{r['source']} at {r['lengths']}",
            "tok/s per device [band]": _band(r["throughput_per_device_tok_s"], r["throughput_per_device_tok_s_lo"],
                                             r["throughput_per_device_tok_s_hi"]),
            "devices [band]": str(r["devices"]) if r["devices_lo"] == r["devices_hi"] == r["devices"]
            else f"{r['devices']} [{r['devices_lo']}, {_devices(r['devices_hi'])}]",
            f"{cur}/h [band]": _band(r["cost_per_hour"], r["cost_per_hour_lo"], r["cost_per_hour_hi"], _money),
            f"{cur}/M output tok": _band(r["cost_per_m_output_tok"], r["cost_per_m_output_tok_lo"],
                                         r["cost_per_m_output_tok_hi"], _money_per_m),
            f"{cur}/M total tok": _band(r["cost_per_m_total_tok"], r["cost_per_m_total_tok_lo"],
                                        r["cost_per_m_total_tok_hi"], _money_per_m),
            "J/output tok": _band(r["energy_j_per_output_tok"], r["energy_j_per_output_tok_lo"],
                                  r["energy_j_per_output_tok_hi"]) + f" ({r['energy_basis']})",
            # the figure an energy bill is in: 1 J per token is 1e6 J = 0.278 kWh per million tokens
            "kWh/M output tok": _band(*(r[f"energy_j_per_output_tok{s}"] / _J_PER_KWH_PER_M
                                        for s in ("", "_lo", "_hi"))),
            "e2e latency": in_seconds(r["e2e_s"]),
            # where a replica settles at the demand (planner.at_offered_load), below the planned batch; not at an
            # overloaded rate, where it is read off a line from nothing to a saturated peak (as the summary says)
            "at offered load": ("n/a (overloaded)" if _flag(r.get("overloaded")) else
                                f"{r['load_batch']:,.1f} in flight, {in_seconds(r['e2e_at_load_s'])}"
                                if np.isfinite(r.get("load_batch", math.nan)) else "n/a"),
            # with what its ends come from, in the note the basis already has (a column of its own ran the printed
            # table past the page's edge)
            "latency basis": r["latency_basis"] + (f"; ends from the {ends}" if (ends := LATENCY_END_WORDS.get(
                str(r.get("latency_band") or ""))) else ""),
            "price source": r["price_source"], "note": r["note"],
        })
    return pd.DataFrame(rows)


_FOOTNOTED = ("sized from", "latency basis", "price source", "note")
"""Columns of the candidates table whose long, repeated texts become numbered notes below it (printed, the table
took 5 of 14 pages at four rows a page, and on screen it ran wider than the page)."""


def _footnoted(table: pd.DataFrame, columns: Sequence[str] = _FOOTNOTED) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``table`` with each text of ``columns`` replaced by its note number ("[2]"), and the notes, each once.

    Parameters
    ----------
    table
        A table of the report.
    columns
        The columns to move into notes (absent ones are skipped).

    Returns
    -------
    (DataFrame, DataFrame)
        The table, and the notes (``note``, ``text``), numbered in order of first appearance.
    """
    out = table.copy()
    texts: dict[str, int] = {}
    for col in [c for c in columns if c in out.columns]:
        refs = []
        for v in out[col].astype(str):
            if not v.strip() or v == "nan":
                refs.append("")
                continue
            refs.append(f"[{texts.setdefault(v, len(texts) + 1)}]")
        out[col] = refs
    notes = pd.DataFrame({"note": [f"[{n}]" for n in texts.values()], "text": list(texts)})
    return out, notes


def _plan_sections(res: PlanResult) -> tuple[Section, Section, Section]:
    from ..pareto import FRONTS, front_figure

    inp = res.inputs
    w, slo = inp.workload, inp.slo
    i, o = w.mean_lengths
    workload_rows = [("request rate", f"{compact_number(w.demand_rps)} req/s"),
                     ("output tokens to serve", f"{w.demand_output_tok_s:,.0f} tok/s"),
                     ("input + output tokens to serve", f"{w.demand_total_tok_s:,.0f} tok/s"),
                     ("lengths (input/output)", f"{i:,.0f}/{o:,.0f} tokens"
                      + (" (histogram means)" if w.lengths else "")),
                     ("SLO percentile", slo.percentile)]
    for name, v in (("TTFT target", slo.ttft_s), ("TPOT target", slo.tpot_s), ("end-to-end target", slo.e2e_s)):
        workload_rows.append((name, compact_seconds(v) if v is not None else "none"))
    workload_rows += [("headroom", f"{inp.headroom:.0%}"), ("band level", f"{inp.level:.0%}"),
                      ("memory usable", f"{inp.memory_fraction:.0%} of device memory"),
                      ("models", ", ".join(inp.models) or "all in the data"),
                      ("hardware", ", ".join(inp.hardware) or "all in the data"),
                      ("currency", inp.currency if inp.currency.upper() == "USD" else
                       f"{inp.currency} at 1 USD = {inp.usd_to_currency:g} {inp.currency} (catalog prices converted)"),
                      ("price overrides", ", ".join(f"{k}={v:g}" for k, v in inp.prices.items()) or "none")]
    if w.lengths:
        workload_rows.append(("length histogram", "; ".join(f"{b.input_len_tok:g}/{b.output_len_tok:g} x{b.weight:g}"
                                                           for b in w.lengths)))
    wl = Section("Workload and SLOs", paragraphs=tuple(res.notes),
                 tables=(("Workload, SLOs and assumptions", pd.DataFrame(workload_rows, columns=["item", "value"])),))
    table, notes = _footnoted(_candidate_table(res))
    tables: list[tuple[str, pd.DataFrame]] = [
        ("Feasible candidates at their best operating point, cheapest first ([low, high] from the throughput band; "
         "[n]: a note below)", table)]
    if len(res.infeasible):
        tables.append(("Infeasible candidates", res.infeasible.copy()))
    if len(notes):
        tables.append(("Notes to the candidates: what each was sized from, its latency basis (and what its "
                       "latency's ends come from), price source and notes", notes))
    feas = res.points[res.points["memory_ok"].astype(bool) & res.points["slo_ok"].astype(bool)] \
        if len(res.points) else res.points
    figs = tuple(front_figure(feas, name, currency=res.currency) for name in FRONTS) if len(feas) else ()
    cand = Section("Candidates", paragraphs=(
        "Status ok: the SLOs hold at the central estimate; optimistic only: they hold only at the optimistic end; "
        "not robust: they are missed at the pessimistic end. A latency's ends (said in its latency basis note) are "
        "the fastest and slowest of the runs at the planned batch where several runs measured it (repeats), else "
        "the throughput band's (a latency derived from throughput, predicted or measured once). Overloaded: planned at "
        "a request rate the server did not deliver (its runs completed fewer requests a second than asked, and "
        "their latency grew with the run), a saturated peak rather than an operating point, never robust; the "
        "notes list the rates not delivered. Energy is the whole fleet's power over "
        "the demand, as the cost is the fleet's over the demand: basis tdp means TDP x devices (an upper bound, "
        "every device at its rated power); measured means the power recorded at the planned batch.",), tables=tuple(tables), figures=figs)
    return wl, cand, _summary_section(res)


def _tie_words(top: Mapping[str, Any], alt: Mapping[str, Any]) -> str:
    """Why ``alt``, at the recommendation's cost, comes after it, in the order :func:`perfmodel.planner.plan`
    sorts: robustness, then the fleet's capacity, then latency. A fixed "with less throughput headroom" had been
    said of 2 replicas of 1 H100 (11,955 tok/s) behind 1 replica of 2 (8,208 tok/s)."""
    if _flag(alt.get("overloaded")) and not _flag(top.get("overloaded")):
        return "but at a request rate the server did not deliver (overloaded)"
    band = str(alt.get("latency_band") or "")
    if top["status"] != alt["status"]:
        return ("but only for the fastest of its repeats" if band == "repeats" else
                "but only at the optimistic end of its throughput band")
    if bool(top["robust"]) != bool(alt["robust"]):
        return ("but not robust (the slowest of its repeats misses the SLOs)" if band == "repeats" else
                "but not robust (the SLOs are missed at the pessimistic end of its band)")
    cap_top = float(top["throughput_tok_s"]) * float(top["replicas"])
    cap_alt = float(alt["throughput_tok_s"]) * float(alt["replicas"])
    if cap_alt < cap_top:
        return f"with less capacity ({cap_alt:,.0f} against {cap_top:,.0f} output tok/s)"
    if float(alt["e2e_s"]) > float(top["e2e_s"]):
        return f"with a longer latency ({in_seconds(alt['e2e_s'])} against {in_seconds(top['e2e_s'])})"
    return "as good on every count"


def _summary_section(res: PlanResult) -> Section:
    paras = [res.summary()]
    t = res.table
    if len(t) > 1:
        priced = t[np.isfinite(t["cost_per_m_output_tok"].astype(float))]
        if len(priced) > 1:
            # The next cheapest way to serve the recommended model; another model is not an alternative to it
            # but a different choice, and says so.
            top = priced.iloc[0]
            same = priced.iloc[1:][priced.iloc[1:]["model"] == top["model"]]
            alt = same.iloc[0] if len(same) else priced.iloc[1]
            lead = f"Next cheapest for {top['model']}" if len(same) else "Cheapest with another model"
            tie = len(same) and math.isclose(float(alt["cost_per_hour"]), float(top["cost_per_hour"]), rel_tol=1e-9)
            if tie:  # the same price: say why the recommendation came first (PlanResult's order)
                lead = f"Also at this cost for {top['model']}, {_tie_words(top, alt)}"
            paras.append(f"{lead}: {alt['devices']} x {alt['hardware']} ({alt['model']} on {alt['framework']}, "
                         f"{alt['device_count']} per replica) at {alt['cost_per_hour']:,.2f} {res.currency}/h.")
        unpriced = t[~np.isfinite(t["cost_per_m_output_tok"].astype(float))]
        if len(unpriced):
            paras.append(f"{len(unpriced)} feasible candidate(s) have no price in the catalog "
                         f"({', '.join(sorted(set(unpriced['hardware'])))}); give one with --price HW=VALUE on the "
                         "command line, or under Price overrides on the Planner page.")
    paras.append(f"{len(t)} candidate(s) feasible, {len(res.infeasible)} infeasible.")
    return Section("Executive summary", paragraphs=tuple(paras))


def _curves_section(runs: pd.DataFrame, res: PlanResult | None, issues: Any = None) -> Section:
    from ..curves import DEFAULT_INTERVALS, DEFAULT_N_BOOT, fit_curves
    from ..plots import config_label, curve_figure, default_curve_by, repeat_summary

    usable = runs[runs["batch_size"].notna() & (runs["output_throughput_tok_s"] > 0)]
    if usable.empty:
        return Section("Saturation curves and knees", paragraphs=("No runs with a batch size and a throughput: "
                                                                   "no curve to fit.",))
    # Grouped as `perfmodel fit` and the Curves page group by default (dtypes, parallelism and a setting the data
    # varies, such as the engine's threads, make configurations of their own), so all three count the same
    # configurations; and each curve is fitted as they fit it (fit_curves on the dataset's runs, its seed from the
    # configuration, the same bootstrap), so its intervals are theirs (the report had used 100 replicates and
    # another seed, and shown b90 without its interval).
    by = default_curve_by(runs)
    overall = fit_curves(usable, by=by, intervals="none")
    n_ok = int(overall["success"].sum())
    paras = [f"{fit_counts_words(overall)}; the median R\u00b2 of the fitted ones is "
             f"{overall.loc[overall['success'], 'r2'].median():.3f}."
             if n_ok else f"{fit_counts_words(overall)}; none could be fitted."]
    if res is not None and len(res.table):
        keys = res.table[["hardware", "model", "framework", "device_count", "lengths"]].head(MAX_CURVES)
        chosen: list[dict[str, Any]] = []
        for _, k in keys.iterrows():
            i_len, o_len = (float(x) for x in str(k["lengths"]).split("/"))
            cand = {c: k[c] for c in ("hardware", "model", "framework", "device_count")}
            own = usable[np.logical_and.reduce([(usable[c] == v).to_numpy(dtype=bool, na_value=False)
                                                for c, v in cand.items()])]
            if own.empty:  # predicted without runs: no measured curve to draw
                continue
            if not ((own["input_len_tok"] == i_len) & (own["output_len_tok"] == o_len)).any():
                i_len, o_len = nearest_lengths(own, i_len, o_len)  # predicted at unmeasured lengths
            chosen.append({**cand, "input_len_tok": i_len, "output_len_tok": o_len})
        paras.append("Measured curves of the plan's best candidates, at the lengths the plan used (a candidate "
                     "predicted at lengths nobody measured at its nearest measured ones; one without runs has none).")
    else:
        ok = overall[overall["success"]].sort_values("n_points", ascending=False, kind="stable").head(MAX_CURVES)
        chosen = [{c: r[c] for c in by} for _, r in ok.iterrows()]
        paras.append("Curves of the configurations with the most points.")
    parts, seen = [], set()
    for key in chosen:
        m = np.ones(len(runs), dtype=bool)
        for c, v in key.items():
            m &= (runs[c].isna() if pd.isna(v) else (runs[c] == v)).to_numpy(dtype=bool, na_value=False)
        mine = runs[m]
        if mine.empty:
            continue
        table, fitted = fit_curves(mine, by=by, intervals=DEFAULT_INTERVALS, n_boot=DEFAULT_N_BOOT, return_fits=True)
        for (gkey, fit), rec in zip(fitted.items(), table.to_dict("records"), strict=True):
            if fit.n_points == 0 or repr(gkey) in seen:
                continue
            seen.add(repr(gkey))
            parts.append((rec, fit, mine))
    fits, labels, pts, recs = [], [], [], []
    for rec, fit, mine in parts[:MAX_CURVES]:
        label = config_label({c: rec[c] for c in by})
        sub = mine[np.logical_and.reduce([(mine[c].isna() if pd.isna(rec[c]) else (mine[c] == rec[c]))
                                          .to_numpy(dtype=bool, na_value=False) for c in by])]
        fits.append(fit)
        labels.append(label)
        recs.append(rec)
        summ = repeat_summary(sub, [])
        summ["configuration"] = label
        pts.append(summ)
    rows = []
    caveats: list[str] = []
    if recs:
        table = pd.DataFrame(recs)
        # the fits table's words, as `perfmodel fit` and the Curves page write them (curve_tables.fits_summary)
        summary = fits_summary(table, by)
        for label, s_rec, fit in zip(labels, summary.to_dict("records"), fits, strict=True):
            rows.append({"configuration": label, "shape": fit.shape, "plateau tok/s": _plateau_words(s_rec),
                         "knee batch [CI]": s_rec["knees"] or "none", "b90": s_rec["b90"] or "n/a",
                         "b95": s_rec["b95"] or "n/a", "R\u00b2": f"{fit.r2:.3f}", "points": fit.n_points,
                         "message": fit.message})
        caveats = import_caveats(labels, fit_import_warnings(runs, issues, table, by))
    figs: tuple[go.Figure, ...] = ()
    if fits:
        points = pd.concat(pts, ignore_index=True)
        fig = curve_figure(fits, points, labels, title="Throughput vs batch", log_y=None)
        if fig.layout.yaxis.type == "log":
            paras.append("The throughput axis is logarithmic: the curves' largest values lie "
                         f"{_span(points.groupby('configuration')['y_mean'].max())} apart, and a linear axis would "
                         "flatten the smaller ones along zero.")
        figs = (fig,)
    paras.extend(caveats)
    return Section("Saturation curves and knees", paragraphs=tuple(paras),
                   tables=(("Fitted curves and knees", pd.DataFrame(rows)),), figures=figs)


def _plateau_words(rec: Mapping[str, Any]) -> str:
    """A fits_summary row's plateau with its interval (or why it has none), in one cell."""
    c, ci = rec["plateau_tok_s"], str(rec["plateau_ci"] or "")
    if not np.isfinite(c):
        return ci or "n/a"
    return f"{compact_number(c)} {ci}".strip()


def _train_predictor(runs: pd.DataFrame) -> tuple[Any, str]:
    from ..models import PREDICTORS, get_predictor
    from ..models import _load_all as load_predictors

    load_predictors()
    name = ACCURACY_PREDICTOR if ACCURACY_PREDICTOR in PREDICTORS else _FALLBACK_PREDICTOR
    usable = runs[runs["output_throughput_tok_s"] > 0]
    return get_predictor(name).fit(usable), name


_GIVE_A_PLAN = ("To give one: --plan on the command line, or the Saved plan selector on the Report page "
                "(a plan saved on the Planner page).")
"""How to give a plan, for both clients (the CLI and the app's Report page)."""


def _predictions_section(res: PlanResult | None, predictor: Any, name: str, error: str) -> Section:
    title = "Predictions with bands and confidence"
    if res is None:
        return Section(title, paragraphs=("No plan was given, so there are no operating points to predict. "
                                          + _GIVE_A_PLAN,))
    if res.table.empty:
        return Section(title, paragraphs=("The plan left no candidate that meets its targets (see the capacity "
                                          "plan above), so there are no operating points to predict.",))
    t = res.table
    predicted = t["source"].astype(str).str.startswith("predicted").to_numpy()
    paras = [f"Planner: the throughput each candidate was sized with, at its operating point, with its "
             f"{res.inputs.level:.0%} band. For a measured candidate that is the fitted curve with its bootstrap "
             "band, and its confidence the curve's R\u00b2 (1 = the curve explains every point); for a predicted "
             "one (source 'predicted') the predictor's answer, band and confidence (0-1)."]
    names = candidate_labels(t)
    rows = [{"candidate": names[i], "batch": f"{r['batch_size']:g}",
             "planner tok/s [band]": _band(r["throughput_tok_s"], r["throughput_tok_s_lo"], r["throughput_tok_s_hi"]),
             "planner confidence": f"{r['confidence']:.3f}" if np.isfinite(r["confidence"]) else "n/a",
             "source": r["source"]} for i, r in t.iterrows()]
    table = pd.DataFrame(rows)
    if predictor is not None and predicted.all():
        paras.append("Every candidate was sized by the predictor, so the planner's columns are its answers.")
    elif predictor is not None:
        q = pd.DataFrame({"hardware": t["hardware"], "model": t["model"], "framework": t["framework"],
                          "device_count": t["device_count"].astype(int),
                          "tp_size": t["device_count"].astype(int),
                          "input_len_tok": [float(s.split("/")[0]) for s in t["lengths"]],
                          "output_len_tok": [float(s.split("/")[1]) for s in t["lengths"]],
                          "batch_size": t["batch_size"], "load_kind": "static_batch"})
        # the setting each candidate was sized at (llama.cpp's n_batch): without it, a configuration measured
        # at several is answered over all of them, out of domain
        for c in SETTING_COLUMNS:
            if c in t.columns and t[c].notna().any():
                q[c] = t[c].to_numpy(dtype=float)
        try:
            p = predictor.predict(q, level=res.inputs.level)
            # A point with no prediction because its weights, as the predictor reads the query, exceed the
            # devices' memory says so, rather than a bare n/a.
            blank = ~np.isfinite(p["pred_throughput_tok_s"].to_numpy(dtype=float))
            why = ([r if b else None for r, b in zip(cannot_run_reasons(predictor, q), blank, strict=True)]
                   if blank.any() else [None] * len(q))
            same = "the planner's (predicted)"
            table[f"{name} tok/s [band]"] = [same if pr else "cannot run" if r is not None else _band(a, b, c)
                                             for a, b, c, r, pr in zip(p["pred_throughput_tok_s"], p["pred_lower"],
                                                                       p["pred_upper"], why, predicted, strict=True)]
            table[f"{name} confidence"] = ["" if pr else f"{c:.2f}" for c, pr in zip(p["confidence"], predicted,
                                                                                      strict=True)]
            table["in domain"] = ["" if pr else "yes" if d else "no"
                                  for d, pr in zip(p["in_domain"].astype(bool), predicted, strict=True)]
            paras.append(f"The {name} predictor (trained on every run of the dataset) predicts each measured "
                         "candidate's point with its own band and confidence (0-1, higher is more trustworthy); a "
                         "large gap to the measured curve is a reason to measure before buying. A predicted "
                         "candidate's planner columns already are its answer.")
            for r in dict.fromkeys(r for r in why if r is not None):
                paras.append(f"The {name} predictor gives no prediction where the configuration {r}.")
        except PerfmodelError as exc:
            paras.append(f"The {name} predictor could not predict these points: {exc}")
    elif error:
        paras.append(f"No learned predictor: {error}")
    fig = go.Figure(go.Bar(x=table["candidate"] + " b" + table["batch"], y=t["throughput_tok_s"],
                           error_y={"type": "data", "symmetric": False,
                                    "array": (t["throughput_tok_s_hi"] - t["throughput_tok_s"]).tolist(),
                                    "arrayminus": (t["throughput_tok_s"] - t["throughput_tok_s_lo"]).tolist()},
                           marker_color="#1f77b4", name="measured curve"))
    fig.update_layout(title="Throughput per replica at the operating point, with band", template="plotly_white",
                      yaxis_title="output throughput (tok/s)", height=420,
                      margin={"l": 60, "r": 20, "t": 50, "b": 120})
    if wide_span(t["throughput_tok_s"]):
        log_y_axis(fig, "output throughput (tok/s)")
        paras.append(f"The chart's axis is logarithmic: the candidates lie {_span(t['throughput_tok_s'])} apart.")
    return Section(title, paragraphs=tuple(paras), tables=(("Operating-point throughput", table),), figures=(fig,))


def _attribution_rows(runs: pd.DataFrame, res: PlanResult | None) -> tuple[pd.DataFrame, str]:
    """The runs whose attributions the report shows, and a sentence saying which: a plan's candidates' own
    (their hardware, model and framework), where they have at least :data:`_FEW_ATTRIBUTED` runs, not the whole
    dataset's (the sample's CPU runs ranked torch threads first in a report about an H200)."""
    ok = runs[pd.to_numeric(runs["output_throughput_tok_s"], errors="coerce") > 0]
    if res is None or res.table.empty:
        return ok, "Over every run of the dataset."
    keys = [k for k in ("hardware", "model", "framework") if k in ok.columns and k in res.table.columns]
    cand = res.table[keys].astype(str).drop_duplicates()
    mine = ok[pd.MultiIndex.from_frame(ok[keys].astype(str)).isin(pd.MultiIndex.from_frame(cand))]
    if len(mine) < _FEW_ATTRIBUTED:
        return ok, (f"Over every run of the dataset: the plan's candidates have {len(mine)} run(s), too few to "
                    "rank features on.")
    if len(mine) == len(ok):
        return ok, "Over every run of the dataset (all of them are the plan's candidates')."
    return mine, (f"Over the {len(mine):,} runs of the plan's candidates ({', '.join(_candidate_words(cand))}), "
                  f"not the dataset's other {len(ok) - len(mine):,}: what drives the throughput of what is planned.")


def _candidate_words(cand: pd.DataFrame) -> list[str]:
    """``hardware model framework`` of each candidate, for a sentence."""
    return [" ".join(r) for r in cand.astype(str).itertuples(index=False)]


_FEW_ATTRIBUTED = 10
"""Fewer runs of the plan's candidates than this and the report attributes over the whole dataset."""


def _attribution_section(runs: pd.DataFrame, predictor: Any, res: PlanResult | None = None) -> Section:
    title = "Top feature attributions"
    try:
        from .. import explain as ex
    except ImportError:
        return Section(title, paragraphs=("Omitted: perfmodel.explain is not available in this installation.",))
    if predictor is None:
        return Section(title, paragraphs=("Omitted: no predictor could be trained to attribute.",))
    rows, which = _attribution_rows(runs, res)
    try:
        e = ex.explain(predictor, rows, sample_size=300, engine="xgboost", cache=False)
        imp = e.importance().head(10)
    except (PerfmodelError, ImportError, AttributeError, TypeError, ValueError) as exc:
        return Section(title, paragraphs=(f"Omitted: attributions could not be computed ({exc}).",))
    return Section(title, paragraphs=(which, e.message), tables=_attribution_tables(imp))


def _attribution_tables(imp: pd.DataFrame) -> tuple[tuple[str, pd.DataFrame], ...]:
    """The importance table with each feature's name in words beside its raw name, and what the features mean."""
    from ..features import feature_doc, feature_label

    imp = imp.copy()
    imp.insert(int(imp.columns.get_loc("feature")) + 1, "label", [feature_label(str(f)) for f in imp["feature"]])
    if "share" in imp.columns:  # a fraction of the total: 31.3 (%), not 0.3131
        imp["share"] = 100 * pd.to_numeric(imp["share"], errors="coerce")
    imp = imp.rename(columns=_IMPORTANCE_HEADERS)
    docs = {str(f): feature_doc(str(f)) for f in imp["feature"]}
    terms = pd.DataFrame([{"feature": f, "label": feature_label(f),
                           "formula": "not a perfmodel feature" if d is None else d.formula}
                          for f, d in docs.items()], columns=["feature", "label", "formula"])
    return (("Global importance (mean |SHAP|)", imp),
            ("What these features mean (ii = input length, oo = output length, bb = batch size)", terms))


def _when(stamp: Any) -> str:
    """A stored time to the second, in UTC ("2026-12-02 08:05:32 UTC"), not the store's ISO text with its
    microseconds; a text that is not a time stays as it is."""
    t = pd.to_datetime(str(stamp), utc=True, errors="coerce")
    return str(stamp) if pd.isna(t) else t.strftime("%Y-%m-%d %H:%M:%S UTC")


def _provenance_section(name: str, info: Any, runs: pd.DataFrame) -> Section:
    from .. import __version__

    rows: list[tuple[str, str]] = [("dataset", name)]
    if info is not None:
        rows += [("dataset id", str(info.id)), ("imported", _when(info.created_at)),
                 ("files", ", ".join(info.files)), ("formats", ", ".join(sorted(set(info.formats)))),
                 ("rows", f"{info.n_runs:,}"), ("import issues", f"{info.n_issues:,}")]
        prov = dict(info.provenance)
        if prov.get("perfmodel_version"):
            rows.append(("imported with perfmodel", str(prov["perfmodel_version"])))
        if prov.get("kind"):
            rows.append(("kind", str(prov["kind"])))
        if prov.get("sweep_id"):
            rows.append(("sweep", str(prov["sweep_id"])))
    else:
        rows.append(("rows", f"{len(runs):,}"))
    for col, label in (("framework_version", "framework versions"), ("source_format", "source formats")):
        if col in runs.columns:
            vals = sorted({str(v) for v in runs[col].dropna().unique()})
            rows.append((label, ", ".join(vals[:12]) + (" ..." if len(vals) > 12 else "") if vals else "not recorded"))
    if "timestamp" in runs.columns and runs["timestamp"].notna().any():
        rows.append(("measured", f"{_when(runs['timestamp'].min())} to {_when(runs['timestamp'].max())}"))
    rows.append(("report generated by perfmodel", __version__))
    counts = runs.groupby(["hardware", "framework"], dropna=False).size().reset_index(name="runs") \
        if len(runs) else pd.DataFrame()
    return Section("Data provenance", tables=(("Dataset", pd.DataFrame(rows, columns=["item", "value"])),
                                              ("Runs per hardware and framework", counts)))


def _unmeasured(res: PlanResult | None, runs: pd.DataFrame) -> dict[str, list[str]]:
    """The hardware and models a predicting plan names that the dataset never ran (matched through the
    catalog's aliases, :func:`perfmodel.planner.unmatched_candidates`): "hardware" / "model" -> names."""
    if res is None or not res.inputs.predict:
        return {}
    bad = unmatched_candidates(res.inputs, runs)
    return {col: sorted(bad[field_][0]) for field_, col in (("hardware", "hardware"), ("models", "model"))
            if field_ in bad}


_UNMEASURED_PROTOCOL = {"hardware": "each hardware in turn", "model": "each model in turn"}
"""The protocol that scores a prediction for a hardware (model) the data never ran, in words."""


def _accuracy_section(runs: pd.DataFrame, name: str, res: PlanResult | None = None) -> Section:
    from ..evaluate import config_key, evaluate, folds

    title = "Measured accuracy on held-out data"
    # A plan that predicts hardware (a model) the dataset never ran is scored the way that prediction is made:
    # the configuration holdout keeps every hardware in training and says nothing about a new one.
    unmeasured = {k: v for k, v in _unmeasured(res, runs).items() if runs[k].nunique() >= 2}
    try:
        ev = evaluate(runs, [name], ["config", *unmeasured], seeds=[0], measure_latency=False)
        # The rows evaluate scores (a positive throughput), so the counts describe the split it made.
        yv = pd.to_numeric(runs[DEFAULT_TARGET], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        scored = runs.loc[np.isfinite(yv) & (yv > 0)].reset_index(drop=True)
        key = config_key(scored)
        n_all = scored.groupby(key, dropna=False).ngroups
        n_held = scored.iloc[folds(scored, "config", 0)[0].test].groupby(key, dropna=False).ngroups
    except PerfmodelError as exc:
        return Section(title, paragraphs=(f"Not measured: {exc}",))
    cols = ["predictor", "protocol", "n_test", "median_ape_pct", "p90_ape_pct", "r2_log", "coverage",
            "median_rel_width"]
    t = ev.table[[c for c in cols if c in ev.table.columns]].copy()
    for c in ("coverage", "median_rel_width"):  # fractions: 100 (%) inside the band, not 1
        if c in t.columns:
            t[c] = 100 * pd.to_numeric(t[c], errors="coerce")
    if "n_test" in t.columns:
        t["n_test"] = pd.to_numeric(t["n_test"], errors="coerce").round().astype("Int64")
    verdicts = [_accuracy_words(r) for r in t.to_dict("records")]
    for c in ("median_ape_pct", "p90_ape_pct", "r2_log", "coverage", "median_rel_width"):  # 29.7, not 29.73
        if c in t.columns:
            t[c] = [float(f"{v:.3g}") if np.isfinite(v) else v for v in pd.to_numeric(t[c], errors="coerce")]
    t = t.rename(columns=_ACCURACY_HEADERS)
    paragraphs = [
        f"{name} trained on {n_all - n_held} of the {n_all} configurations and scored on the other {n_held} (no "
        "configuration on both sides, one seed): median and 90th-percentile absolute percentage error, R\u00b2 of "
        "log throughput, and the share of held-out points inside the 90% band (coverage).", *verdicts]
    for col, names in unmeasured.items():
        paragraphs.append(
            f"The plan predicts {', '.join(names)}, which this dataset has no runs of, so the table also holds "
            f"out {_UNMEASURED_PROTOCOL[col]} ({runs[col].nunique()} of them) and scores it from the others: "
            f"that row is the accuracy to expect for those candidates, not the configuration holdout's.")
    if n_held < _FEW_HELD_OUT:
        paragraphs.append(
            f"With {n_held} configurations held out these figures are rough: the points of one configuration "
            "are missed together, so the coverage can land far from 90% by chance. Several seeds give a steadier "
            "figure (on the command line: perfmodel evaluate DATASET --protocols config --seeds 3).")
    return Section(title, paragraphs=tuple(paragraphs), tables=(("Hold-out accuracy", t),))


def _accuracy_words(row: Mapping[str, Any]) -> str:
    """One hold-out row in plain words, with what it means for sizing from predictions."""
    m, q = float(row.get("median_ape_pct", np.nan)), float(row.get("p90_ape_pct", np.nan))
    c, w = float(row.get("coverage", np.nan)), float(row.get("median_rel_width", np.nan))
    how = _PROTOCOL_WORDS.get(str(row.get("protocol")), f"held out by {row.get('protocol')}")
    if not (np.isfinite(m) and np.isfinite(q)):
        return f"{how.capitalize()}: not scored."
    text = (f"{how.capitalize()}: half the held-out points were predicted within {m:.3g}% of their measurement "
            f"and nine in ten within {q:.3g}%. ")
    if q <= _CLOSE_PCT:
        text += "That is close enough to size capacity from."
    elif m <= _CLOSE_PCT:
        text += (f"Typical points are close, but one in ten is off by more than {q:.3g}%: size from a prediction "
                 "with its band, not its central value alone.")
    else:
        text += ("That is too far off to size capacity from: rely on the measured candidates, or measure the "
                 "predicted ones before buying.")
    if np.isfinite(c):
        if c < 80:
            text += f" The 90% band held only {c:.0f}% of the points: it is narrower than it should be."
        elif c > 97 and np.isfinite(w):
            text += (f" The 90% band held {c:.0f}% of the points, more than 90%: it is wider than needed "
                     f"(typically {w:.0f}% of the prediction), so it over-states the uncertainty.")
        else:
            text += f" The 90% band held {c:.0f}% of the points, about as it should."
    return text


_CLOSE_PCT = 25.0
"""A 90th-percentile error under which the report calls predictions close enough to size capacity from."""
_PROTOCOL_WORDS = {"config": "configurations held out", "hardware": "hardware held out",
                   "model": "models held out"}
"""The protocols the report scores, in words."""

_ACCURACY_HEADERS = {"protocol": "held out by", "n_test": "held-out points", "median_ape_pct": "median error (%)",
                     "p90_ape_pct": "90th-percentile error (%)", "r2_log": "R\u00b2 of log throughput",
                     "coverage": "inside the 90% band (%)", "median_rel_width": "median band width (% of prediction)"}
"""The hold-out table's headers in words (the raw names are evaluate's column names)."""
_IMPORTANCE_HEADERS = {"mean_abs_shap": "mean |SHAP|", "share": "share (%)"}
"""The importance table's headers in words."""

_FEW_HELD_OUT = 10
"""Below this many held-out configurations the report calls its accuracy figures rough."""


def _issues_of(issues: Any, info: Any) -> Any:
    """The dataset's import issues: as given, else the store's for ``info`` (none when it cannot be read)."""
    if issues is not None or info is None or not getattr(info, "id", None):
        return issues
    from ..store import Store

    try:
        return Store().issues(str(info.id))
    except (PerfmodelError, OSError):
        return None


def build_report(runs: pd.DataFrame, *, dataset_name: str, info: Any = None,
                 plan_inputs: PlanInputs | Mapping[str, Any] | None = None, accuracy: bool = True,
                 predictions: bool = True, predictor: Any = None,
                 on_progress: Callable[[str], None] | None = None, issues: Any = None) -> Report:
    """Compute everything a capacity report shows.

    Parameters
    ----------
    runs
        Canonical runs table of the dataset.
    dataset_name
        Name shown in the title (user text; escaped when rendered).
    info
        The :class:`perfmodel.store.DatasetInfo` for provenance (optional).
    plan_inputs
        Planner inputs; without them the summary describes the data and the plan sections say so.
    accuracy
        Score the predictor on held-out configurations (a few seconds).
    predictions
        Train the predictor on the dataset for predictions and attributions (a few seconds).
    predictor
        A predictor already fitted on this dataset's runs (the app's saved What-if model), used for the
        predictions and attributions instead of training one; ignored when ``predictions`` is false. The
        hold-out accuracy section trains its own on each split either way.
    on_progress
        Called with the name of each step as it starts.
    issues
        The dataset's import issues (:meth:`perfmodel.store.Store.issues`, or the importer's list); None: read from
        the store for ``info``. Warnings that concern a curve drawn (a batch axis in doubt) are said beside it.

    Returns
    -------
    Report

    Raises
    ------
    PerfmodelError
        Invalid planner inputs or unknown names in them.
    """
    timings: dict[str, float] = {}

    def step(name: str) -> float:
        if on_progress is not None:
            on_progress(name)
        return time.perf_counter()

    given, predictor, pname, perr = predictor, None, ACCURACY_PREDICTOR, ""
    if predictions and given is not None:
        predictor, pname = given, str(getattr(given, "name", ACCURACY_PREDICTOR))
    elif predictions:
        t0 = step("predictor")
        try:
            predictor, pname = _train_predictor(runs)
        except PerfmodelError as exc:
            perr = str(exc)
        timings["predictor"] = time.perf_counter() - t0
    t0 = step("plan")
    # A plan that predicts what was not measured uses the report's predictor (trained once, above).
    wants = plan_inputs is not None and bool(plan_inputs.predict if isinstance(plan_inputs, PlanInputs)
                                             else plan_inputs.get("predict"))
    res = plan(plan_inputs, runs, predictor=predictor if wants else None) if plan_inputs is not None else None
    timings["plan"] = time.perf_counter() - t0
    if res is not None:
        wl, cand, summary = _plan_sections(res)
    else:
        best = runs[runs["output_throughput_tok_s"] > 0]
        txt = (f"No plan was given, so there is no recommendation or cost. {_GIVE_A_PLAN} The dataset holds "
               f"{len(runs):,} runs of {runs['model'].nunique()} model(s) on {runs['hardware'].nunique()} hardware "
               f"type(s) with {runs['framework'].nunique()} framework(s).")
        paras = [txt]
        # Runs faster than the physical bound are left out: the headline had quoted LLM-Inference-Bench's
        # 65,692 tok/s on 4 x H100 (bound 14,068), one of the runs the Data page flags as suspect.
        suspect = suspect_mask(best).to_numpy(dtype=bool)
        if (~suspect).any():
            kept = best[~suspect]  # positional: a repeated index label would give a frame, not a row
            top = kept.iloc[int(np.argmax(kept["output_throughput_tok_s"].to_numpy(dtype=float)))]
            paras.append(f"Highest measured output throughput: {top['output_throughput_tok_s']:,.0f} tok/s "
                         f"({top['model']} on {top['device_count']} x {top['hardware']}, {top['framework']}, "
                         f"batch {top['batch_size']:g})"
                         + (f", leaving out the {int(suspect.sum()):,} run(s) faster than the physical bound "
                            "(suspect data)." if suspect.any() else "."))
        summary = Section("Executive summary", paragraphs=tuple(paras))
        wl = Section("Workload and SLOs", paragraphs=("No plan was given: no workload or SLOs.",))
        cand = Section("Candidates", paragraphs=("No plan was given: no candidates were sized.",))
    t0 = step("curves")
    curves = _curves_section(runs, res, _issues_of(issues, info))
    timings["curves"] = time.perf_counter() - t0
    t0 = step("predictions")
    preds = _predictions_section(res, predictor, pname, perr)
    attrs = _attribution_section(runs, predictor, res)
    timings["predictions+attributions"] = time.perf_counter() - t0
    if accuracy:
        t0 = step("accuracy")
        acc = _accuracy_section(runs, pname, res)
        timings["accuracy"] = time.perf_counter() - t0
    else:
        acc = Section("Measured accuracy on held-out data", paragraphs=("Not measured in this report.",))
    prov = _provenance_section(dataset_name, info, runs)
    sections = (summary, wl, cand, curves, preds, attrs, prov, acc)
    assert tuple(s.title for s in sections) == SECTION_TITLES
    now = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    return Report(title=f"Capacity report: {dataset_name}", generated_at=now, sections=sections, plan=res,
                  timings_s=timings)
