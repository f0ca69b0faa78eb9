"""Curves: throughput vs batch (or a sweep's request rate or requests in flight) per configuration, fitted
saturation curves, knees and a fit table."""

import json

import streamlit as st

from perfmodel import curves as curves_core
from perfmodel import ui
from perfmodel.curve_tables import (
    BATCH_ESTIMATE_HELP,
    NO_PLATEAU_HELP,
    curve_by_for_x,
    curve_x_options,
    fit_caveats,
    fit_counts_words,
    import_caveats,
    off_axis_runs,
    overlaid_first,
    short_reason,
    x_axis_note,
)
from perfmodel.curves import INTERVAL_METHODS, MIN_BATCHES, R2_POOR, SHAPES, default_interval_method, x_words
from perfmodel.errors import PerfmodelError
from perfmodel.plots import (
    THROUGHPUT_METRICS,
    WIDE_SPAN,
    axis_title,
    curve_group_columns,
    default_curve_by,
    default_overlay,
    poor_fits,
)
from perfmodel.ui import analyses, cached, links, tables
from perfmodel.ui import curves as curves_ui
from perfmodel.ui import pagestate as PS
from perfmodel.ui import state as K
from perfmodel.ui import whatif as whatif_ui
from perfmodel.ui.widgets import labelled_columns

N_DEFAULT_CONFIGS = 3
N_BOOT_DEFAULT = curves_core.DEFAULT_N_BOOT  # as `perfmodel fit` and the report
#: The dataset and grouping (JSON) the overlay was last chosen for. (A comment: a bare string in a page script is
#: drawn on the page.)
CONFIGS_FOR = "curves._configs_for"
#: The load the curves run along (curve_tables.LOAD_AXES the dataset holds), as `perfmodel fit --x`.
CURVES_X = "curves.x"
#: The chart's options in the URL (grouping, selection, shape and intervals are written by links.write_curves_link).
VIEW = {"x": (CURVES_X, "batch_size"), "y": (K.CURVES_Y, THROUGHPUT_METRICS[0]), "log_x": (K.CURVES_LOG_X, True),
        "n_boot": (K.CURVES_N_BOOT, N_BOOT_DEFAULT), "r2_min": (K.CURVES_R2_MIN, R2_POOR)}
BOUNDS = {"n_boot": (10, 2000), "r2_min": (0.0, 1.0)}


def _intervals_chosen() -> None:
    """The user picked an interval method: it wins over the size-dependent default from now on."""
    st.session_state[K.CURVES_INTERVALS_CHOSEN] = st.session_state[K.CURVES_INTERVALS]


home = ui.home()
st.title("Curves", anchor=False)
st.caption("Throughput against batch size (or a sweep's request rate or requests in flight) for every "
           "configuration: the fitted saturation curve with its confidence band, the knees (where the curve bends "
           "most over the measured batches: the gain per added sequence drops there, it does not stop) and the "
           "batches reaching 90%/95% of the plateau, which say how close to saturation a batch is.")

ds = ui.available_datasets(home)
analyses.page_analysis("curves")
stamp = ds.stamp
ui.restore_dataset_link(ds, links.restore_curves_from_link)
PS.restore("curves", VIEW, BOUNDS)
# the x axis's default depends on the data (a rate sweep has no batch): given below, once the runs are known
PS.defaults({k: v for k, v in VIEW.items() if k != "x"})

c1, cx, c2 = st.columns([1, 1, 2])
selected = ui.dataset_selectbox(ds, K.CURVES_DATASET_WIDGET, container=c1)
runs = ui.dataset_runs(home, selected, stamp)
ui.require_runs(runs, ds.names[selected])
x_options = curve_x_options(runs)
PS.settle(CURVES_X, x_options or ["batch_size"], (x_options or ["batch_size"])[0], what="x axis")
x = cx.selectbox("Curves along", x_options or ["batch_size"], key=CURVES_X, format_func=axis_title,
                 disabled=len(x_options) < 2,
                 help="The load each curve runs along, among those these runs record: the batch size (or "
                      "configured concurrency), a rate sweep's request rate (GuideLLM, inference-perf, vllm bench "
                      "serve --request-rate) or the requests measured in flight; as `perfmodel fit --x`.")
xw, xws, xu = x_words(x)
group_options = list(dict.fromkeys(curve_group_columns(runs) + default_curve_by(runs)))
ui.keep_valid(K.CURVES_BY, group_options)
if not st.session_state.get(K.CURVES_BY):
    st.session_state[K.CURVES_BY] = default_curve_by(runs)
by = c2.multiselect("Group runs into configurations by", group_options, key=K.CURVES_BY,
                    format_func=tables.column_words, help="Runs agreeing on all these columns form one curve.")

# Bootstrap intervals refit every configuration n_boot times: the default for a large dataset is asymptotic
# (seconds instead of tens of seconds on first load); a method the user or the link chose always wins.
# a curve's own x is never a grouping column (the CLI's rule: curve_tables.curve_by_for_x)
by_x, _ = curve_by_for_x(runs, by, x)
n_configs = runs.groupby(by_x, dropna=False).ngroups if by_x and len(runs) else 0
chosen_intervals = st.session_state.get(K.CURVES_INTERVALS_CHOSEN)
if chosen_intervals not in INTERVAL_METHODS:
    chosen_intervals = None
    st.session_state.pop(K.CURVES_INTERVALS_CHOSEN, None)
default_intervals = default_interval_method(n_configs)
with st.expander("Fit options", icon=":material/tune:"):
    o1, o2, o3, o4, o5 = st.columns(5)
    if st.session_state.get(K.CURVES_SHAPE) not in SHAPES:
        st.session_state[K.CURVES_SHAPE] = "auto"
    st.session_state[K.CURVES_INTERVALS] = chosen_intervals or default_intervals
    shape = o1.selectbox("Shape", SHAPES, key=K.CURVES_SHAPE,
                         help="auto: exponential unless nrh (a smooth min(k·batch, c): a linear rise that "
                              "stops sharply) or piecewise has a clearly lower AICc. loglin "
                              "(alpha + beta·log2 batch) never levels off: no plateau, knee, b90 or b95.")
    intervals = o2.selectbox(
        "Intervals", INTERVAL_METHODS, key=K.CURVES_INTERVALS, on_change=_intervals_chosen,
        help="bootstrap: intervals of the knees, b90 and b95 and a confidence band (refits every configuration "
             "once per replicate). asymptotic: intervals of the curve's parameters only, several times faster. "
             f"Default: bootstrap up to {curves_core.BOOTSTRAP_MAX_CONFIGS:,} configurations, asymptotic above.")
    n_boot = o3.number_input("Bootstrap replicates", *BOUNDS["n_boot"], step=50, key=K.CURVES_N_BOOT,
                             disabled=intervals != "bootstrap")
    PS.settle(K.CURVES_Y, THROUGHPUT_METRICS, THROUGHPUT_METRICS[0])
    y = o4.selectbox("Throughput", THROUGHPUT_METRICS, key=K.CURVES_Y, format_func=axis_title)
    r2_min = o5.number_input("Flag fits with R² below", *BOUNDS["r2_min"], step=0.05, key=K.CURVES_R2_MIN)
    log_x = st.toggle(f"log {xw} axis", key=K.CURVES_LOG_X)
PS.write(VIEW)
if chosen_intervals is None and intervals != "bootstrap":
    st.caption(f"Intervals: **{intervals}** by default for {n_configs:,} configurations (more than "
               f"{curves_core.BOOTSTRAP_MAX_CONFIGS:,}), as bootstrap refits every configuration once per replicate "
               "and loads several times slower. Choose **bootstrap** under *Fit options › Intervals* for intervals "
               "on the knees, b90 and b95 and a confidence band around each curve.")

if not by_x:
    links.write_curves_link(selected, [], [], shape, chosen_intervals)
    st.info("Choose at least one column to group the runs by.", icon=":material/info:")
    st.stop()
options = cached.curve_options_json(by_x, shape=shape, intervals=intervals, n_boot=int(n_boot), x=x, y=y)
try:
    view = cached.curve_fits(home, selected, stamp, options)
except PerfmodelError as exc:
    ui.show_error(exc, what="Cannot fit curves")
    st.stop()

labels = view.summary["configuration"].tolist()
# the import's warnings about these fits (a batch axis that read higher than what ran) stand beside them
warned = curves_ui.curve_import_warnings(home, selected, stamp, options)
fitted = view.summary.loc[view.summary["n_batches"] >= MIN_BATCHES, "configuration"].tolist()
ui.keep_valid(K.CURVES_CONFIGS, labels)
# The default overlay for a new dataset or grouping (whose labels the old choice lacks); a selection the user
# emptied stays empty (it came straight back as the default, so the chart could never be cleared).
overlay_for = json.dumps([selected, list(by_x), x])
emptied_by_link = st.session_state.pop(links.CURVES_EMPTY_FROM_LINK, False)  # a link of none, not of unknown ones
if st.session_state.get(CONFIGS_FOR) not in (None, overlay_for) and st.session_state.get(K.CURVES_CONFIGS):
    # another x (or grouping): the chosen curves with no point along it would draw nothing; none left, the default
    drawn = set(view.summary.loc[view.summary["n_points"] > 0, "configuration"])
    st.session_state[K.CURVES_CONFIGS] = [c for c in st.session_state[K.CURVES_CONFIGS] if c in drawn]
if K.CURVES_CONFIGS not in st.session_state or (not st.session_state[K.CURVES_CONFIGS] and not emptied_by_link
                                                and st.session_state.get(CONFIGS_FOR) != overlay_for):
    st.session_state[K.CURVES_CONFIGS] = default_overlay(
        view.summary, N_DEFAULT_CONFIGS,
        spread=view.table["hardware"].tolist() if "hardware" in view.table.columns else None)
st.session_state[CONFIGS_FOR] = overlay_for
configs = st.multiselect(f"Configurations to overlay ({len(labels):,})", labels, key=K.CURVES_CONFIGS,
                         placeholder="choose configurations")
links.write_curves_link(selected, by, configs, shape, chosen_intervals)

if not fitted and not x_options:
    st.warning("These runs record no batch size or concurrency and no finite request rate (offline runs), so "
               "there is no saturation curve to fit: a curve is throughput against the load. The Data page draws "
               "them against their lengths.", icon=":material/scatter_plot:")
    st.stop()  # no chart, fit table or review list of curves that cannot exist
st.caption(f"{fit_counts_words(view.summary, x=x)}; {axis_title(y)} vs {axis_title(x)}; intervals: {intervals}."
           + (f" {x_axis_note(x)[0].upper()}{x_axis_note(x)[1:]}." if x != "batch_size" else ""))
off_axis = off_axis_runs(runs, x)
if off_axis:
    def _bare(c: str) -> str:  # "request rate", not "request rate (req/s)"
        return axis_title(c).split(" (")[0]

    st.caption("Not on these curves: " + ", ".join(f"{n:,} run(s) with a {_bare(c)} and no {_bare(x)}"
                                                   for c, n in off_axis.items())
               + "; choose them under *Curves along* to fit them.")
if not fitted:
    st.warning(f"Not enough points for a curve: every configuration has fewer than {MIN_BATCHES} distinct "
               f"{xws}, so nothing was fitted. Measure more {xws}, or group by fewer columns.",
               icon=":material/scatter_plot:")
if not configs:
    st.info("No configuration chosen: pick some under *Configurations to overlay* to draw their curves.",
            icon=":material/show_chart:")
else:
    chart = cached.curve_chart(home, selected, stamp, options, json.dumps(configs), log_x)
    chart, n_suspect = whatif_ui.curves_with_suspects(chart, view.table, home, selected, stamp, list(by_x),
                                                      configs, y, x)
    st.plotly_chart(chart, key="curves.chart")
    if chart.layout.yaxis.type == "log":
        st.caption("Throughput axis: logarithmic, as the chosen curves' largest values lie more than "
                   f"{WIDE_SPAN:g} times apart (on a linear axis the smaller ones would lie flat along zero).")
    failed = [c for c in configs if c in view.fits and not view.fits[c].success]
    # A configuration with too few batch sizes gets no line at all (plots.curve_figure), only its points.
    dashed = [c for c in failed if view.fits[c].shape != "none"]
    bare = [c for c in failed if view.fits[c].shape == "none"]
    if dashed:
        st.caption(f"Dashed: {len(dashed)} fit(s) failed ({', '.join(dashed)}); their line is not a usable "
                   "curve and has no band or knee. See *Curves to review* for why.")
    if bare:
        st.caption(f"Points only: {len(bare)} configuration(s) with fewer than {MIN_BATCHES} {xws} "
                   f"({', '.join(bare)}), too few for a curve.")
    if n_suspect:
        st.caption(f"x: {n_suspect} run(s) faster than the roofline bound (suspect data; the curve fits still "
                   "include them).")
    on_chart = [c for c in configs if c in warned]
    for caveat in import_caveats(on_chart, [warned[c] for c in on_chart]):
        st.warning(caveat, icon=":material/warning:")

st.subheader("Fits", anchor=False)
fits, n_on_chart = overlaid_first(view.summary, configs)  # every configuration: 2,363 on LLM-Inference-Bench
if n_on_chart and len(fits) > n_on_chart:
    st.caption(f"Every configuration, the {n_on_chart} on the chart first.")
for caveat in fit_caveats(view.table):
    st.caption(caveat)
off_chart = [c for c in warned if c not in configs]
for caveat in import_caveats(off_chart, [warned[c] for c in off_chart]):
    st.warning(caveat, icon=":material/warning:")
if (fits["shape"] == "loglin").any():
    st.caption("— in knees, b90 and b95: a log-linear curve has no plateau, so it has no knee and never reaches "
               "90%/95% of one.")
cc = st.column_config
if x != "batch_size":  # a KV-full batch counts sequences at once, not this x (x_axis_note)
    fits = fits.drop(columns="kv_full_batch")
st.dataframe(fits, hide_index=True, placeholder="—", column_config=labelled_columns(
    fits.columns,
    plateau_tok_s=cc.NumberColumn(format="%,.1f", help="Exponential plateau c; empty for shapes without one, and "
                                  "where the plateau is not reached and lies far above the largest measured "
                                  "throughput (an extrapolation: see the plateau interval)."),
    plateau_ci=cc.TextColumn(help="Interval of the plateau c. 'plateau not reached: measured up to batch B': c lies "
                             "far above the largest measured throughput (an extrapolation). 'interval not "
                             "estimable': the interval has no width at the digits shown (few batch sizes)."),
    knees=cc.TextColumn(help="Kneedle knee: the batch where the fitted curve lies furthest above the straight "
                             "line joining its ends over the measured batches, i.e. where the gain per added "
                             "sequence falls fastest, with its interval. It depends on the measured range and can "
                             "lie past b90 on a curve that saturates early; b90/b95 say how close to the plateau "
                             "a batch is. " + BATCH_ESTIMATE_HELP
                        + " " + NO_PLATEAU_HELP),
    b90=cc.TextColumn(help="b90: the batch reaching 90% of the plateau, with its interval. " + BATCH_ESTIMATE_HELP
                      + " " + NO_PLATEAU_HELP),
    b95=cc.TextColumn(help="b95: the batch reaching 95% of the plateau, with its interval. " + BATCH_ESTIMATE_HELP
                      + " " + NO_PLATEAU_HELP),
    kv_full_batch=cc.NumberColumn(format="%,.0f", help=whatif_ui.KV_FULL_HELP),
    r2=cc.NumberColumn(format="%.3f"),
    n_points=cc.NumberColumn(help="Runs in the fit (repeats included)."),
    n_batches=cc.NumberColumn(help=f"Distinct {xws} measured."),
    message=cc.TextColumn(width="large")))
st.download_button("Download fits (CSV)", cached.curve_fits_csv(home, selected, stamp, options),
                   file_name=f"{ds.names[selected]}-fits.csv".replace(" ", "_"), mime="text/csv",
                   icon=":material/download:", on_click="ignore")

st.subheader("Curves to review", anchor=False)
review = poor_fits(view.summary, float(r2_min), x=x)
if review.empty:
    st.success(f"Every curve fitted with R² ≥ {r2_min:g}.", icon=":material/check_circle:")
else:
    too_few = short_reason(x)
    n_short = int((review["reason"] == too_few).sum())
    st.caption(f"{len(review) - n_short:,} curve(s) failed or fit with R² below {r2_min:g}"
               + (f"; {n_short:,} configuration(s) had {too_few} to fit (listed last)." if n_short else "."))
    st.dataframe(review, hide_index=True, placeholder="—", column_config=labelled_columns(
        review.columns, r2=cc.NumberColumn(format="%.3f"), message=cc.TextColumn(width="large")))
