"""Planner: devices, cost and energy to serve a workload within SLOs, per candidate, with bands."""

import json

import streamlit as st

from perfmodel import ui
from perfmodel.errors import PerfmodelError
from perfmodel.pareto import FRONTS, front_figure
from perfmodel.ui import analyses
from perfmodel.ui import pagestate as PS
from perfmodel.ui import planner as P
from perfmodel.ui import whatif as WUI

KIND = "planner"
home = ui.home()
st.title("Planner", anchor=False)
st.caption("How many of which device, at what batch, to serve this traffic within these latency targets, and "
           "at what cost. Bands come from the measured throughput curves' bootstrap intervals, and for a candidate "
           "sized by prediction (source: predicted) from the predictor's calibrated band.")

ds = ui.available_datasets(home)
stamp, ids, names = ds.stamp, ds.ids, ds.names
msg = analyses.restore_analysis(KIND, lambda p: P.apply_inputs(str(p.get("dataset", "")), dict(p.get("plan") or {})))
if msg:
    st.warning(msg, icon=":material/link_off:")
# Every input also lives in the URL, so the address bar is a link to this plan.
first_visit = not st.session_state.get(P.URL_READ)
st.session_state[P.URL_READ] = True
PS.restore(KIND, P.URL_SPEC, P.URL_BOUNDS)
# A link the page wrote (not only the app-wide ?dataset=) gives the models, "all" (none in it) included.
if first_visit and any(k in st.query_params for k in P.URL_SPEC if k != "dataset") \
        and P.KEYS["dataset"] in st.session_state:
    st.session_state[P.MODELS_FOR] = st.session_state[P.KEYS["dataset"]]
if st.session_state.get(P.KEYS["dataset"]) not in names:
    st.session_state[P.KEYS["dataset"]] = ui.selected_dataset() if ui.selected_dataset() in names else ids[0]
for k, v in P.DEFAULTS.items():
    st.session_state.setdefault(P.KEYS[k], v)

dataset = st.selectbox("Dataset", ids, key=P.KEYS["dataset"], format_func=lambda i: f"{names[i]} ({i})")
runs = ui.dataset_runs(home, dataset, stamp)
ui.require_runs(runs, names[dataset])
predict = bool(st.session_state.get(P.KEYS["predict"]))
model_opts, hw_opts, fw_opts, dev_opts, held = P.settle_choices(runs, home, predict)
# One model by default, the dataset's most measured: a plan serves one model, and candidates of several
# (a 1B model on one CPU beside an 8B one on eight GPUs) are not alternatives unless the model may change.
if st.session_state.get(P.MODELS_FOR) != dataset:
    st.session_state[P.MODELS_FOR] = dataset
    if not st.session_state[P.KEYS["models"]]:
        st.session_state[P.KEYS["models"]] = P.default_models(runs)
    # lengths still at the page's defaults: the models' most measured ones, so that the first plan is sized
    # from measurements, not from runs at other lengths (the sample opened on an unmeasured 1024/1024)
    P.default_lengths(st.session_state, runs, st.session_state[P.KEYS["models"]])
if not predict:
    st.session_state[P.KEYS["framework"]] = ""
elif fw_opts and st.session_state.get(P.KEYS["framework"]) not in fw_opts:
    st.session_state[P.KEYS["framework"]] = fw_opts[0]
hw_names, model_names = ui.hardware_choices(home), ui.model_choices(home)

st.subheader("Workload and SLOs", anchor=False)
c1, c2, c3, c4 = st.columns(4)
c1.number_input("Requests per second", min_value=0.001, key=P.KEYS["rate"])
c2.number_input("Input tokens", min_value=1.0, step=1.0, format="%.0f", key=P.KEYS["input_len"])
c3.number_input("Output tokens", min_value=1.0, step=1.0, format="%.0f", key=P.KEYS["output_len"])
c4.number_input("Headroom", min_value=0.0, max_value=10.0, step=0.05, key=P.KEYS["headroom"],
                help="0.2 provisions 120% of the demand.")
s1, s2, s3, s4 = st.columns(4)
s1.number_input("End-to-end target (s, 0 = none)", min_value=0.0, key=P.KEYS["e2e"])
s2.number_input("TTFT target (s, 0 = none)", min_value=0.0, key=P.KEYS["ttft"])
s3.number_input("TPOT target (s, 0 = none)", min_value=0.0, key=P.KEYS["tpot"], format="%g", step=0.005)
s4.selectbox("Percentile", ["mean", "p50", "p90", "p99"], key=P.KEYS["percentile"])
if (hint := P.slo_unit_hint(st.session_state)) is not None:
    st.warning(hint, icon=":material/timer:")
m1, m2, m4, m3 = st.columns([2, 2, 2, 1])
m1.multiselect("Models (empty: all, as alternatives)", model_opts, key=P.KEYS["models"],
               format_func=lambda k: WUI.choice_label(k, model_names),
               help="The plan's candidates serve these models. Several (or none: all) are compared as "
                    "alternatives, which only makes sense where the model served may change."
                    + (" With prediction on, any catalog model can be chosen: one without runs is predicted on "
                       "the hardware chosen (or, none chosen, the dataset's)." if predict else ""))
m2.multiselect("Hardware (empty: all)", hw_opts, key=P.KEYS["hardware"],
               format_func=lambda k: WUI.choice_label(k, hw_names),
               help="With prediction on, any catalog accelerator can be chosen: one with no runs is predicted "
                    "(with the models chosen, or, none chosen, the dataset's)." if predict else
                    "Accelerators with runs in the dataset; turn on prediction to size others from the catalog.")
m4.multiselect("Frameworks (empty: all)", fw_opts, key=P.KEYS["frameworks"],
               help="The serving frameworks of the measured candidates, for a plan that keeps its stack; "
                    "empty compares every framework the runs used.")
m3.multiselect("Devices per replica (empty: all)", dev_opts, key=P.KEYS["devices"],
               help="Measured candidates: the device counts their runs used. A predicted candidate without runs "
                    "takes these, or (none chosen) the fewest of 1, 2, 4, 8 whose memory holds the model.")
t1, t2 = st.columns([1, 1], vertical_alignment="center")
t1.toggle("Predict what was not measured", key=P.KEYS["predict"], help=P.PREDICT_HELP)
if predict:
    t2.selectbox("Framework of candidates without runs", fw_opts, key=P.KEYS["framework"],
                 help="A model and hardware chosen above with no runs together are predicted running this "
                      "framework (one the predictor was trained on).")
elif held:
    t2.info(f"{', '.join(held)}: no runs in this dataset, kept aside until prediction is on again.",
            icon=":material/visibility_off:")
p1, p0, p2 = st.columns([1, 1, 3])
currency = p1.text_input("Currency", key=P.KEYS["currency"], max_chars=8)
p0.number_input(f"USD to {currency or 'USD'}", key=P.KEYS["usd_rate"], min_value=1e-6, format="%.4g",
                disabled=(currency or "USD").upper() == "USD",
                help="How many units of the currency one US dollar buys: the catalog's prices are in USD. "
                     "Overrides are taken as given, in the currency.")
p2.text_area(P.PRICES_LABEL, key=P.KEYS["prices"], height=68)

try:
    inputs = P.inputs_dict()
except PerfmodelError as exc:
    ui.show_error(exc, what="Cannot plan")
    st.stop()
PS.write(P.URL_SPEC)
model = ("", 0)
if inputs.get("predict"):
    model = P.plan_model(home, dataset, stamp, len(runs), names[dataset]) or model
try:
    res = P.plan_tables(home, dataset, stamp, json.dumps(inputs, sort_keys=True), *model)
except PerfmodelError as exc:
    st.error(str(exc))
    st.stop()

analyses.write_analysis_link(KIND)
st.subheader("Recommendation", anchor=False)
st.markdown(f"**{res['summary']}**")
if caveat := P.lengths_caveat(res["table"], res["lengths"], res["recommended"]):
    st.warning(caveat + ("" if predict else " Turn on **Predict what was not measured** to predict them at the "
                         "workload's lengths instead."), icon=":material/straighten:")
for n in res["notes"]:
    st.caption(n)
for n in P.page_notes(res["table"], inputs):
    st.info(n, icon=":material/info:")
st.dataframe(P.display_table(res["table"], res["currency"], res["lengths"]), hide_index=True, key="planner.table",
             column_config=P.display_column_config(res["currency"]), placeholder=P.MISSING)
if len(res["infeasible"]):
    st.markdown("**Infeasible candidates**")
    st.dataframe(P.infeasible_table(res["infeasible"]), hide_index=True, placeholder="—", key="planner.infeasible",
                 column_config={"reason": st.column_config.TextColumn(width="large")})
pts = res["points"]
feas = pts[pts["memory_ok"].astype(bool) & pts["slo_ok"].astype(bool)] if len(pts) else pts
if len(feas):
    tabs = st.tabs([n.replace("_", " ") for n in FRONTS])
    for tab, name in zip(tabs, FRONTS, strict=True):
        if (missing := P.front_missing(feas, name)) is not None:
            tab.info(missing, icon=":material/block:")
            continue
        tab.plotly_chart(front_figure(feas, name, currency=res["currency"]), key=f"planner.front.{name}")

st.divider()
analyses.save_widget(KIND, lambda: {"dataset": dataset, "plan": inputs})
analyses.manage_widget(KIND)
