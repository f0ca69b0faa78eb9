"""What-if: the predicted saturation curve of a configuration nobody measured, with its band."""

import json
import math

import streamlit as st

from perfmodel import ui
from perfmodel.errors import PerfmodelError
from perfmodel.ui import analyses
from perfmodel.ui import whatif as W
from perfmodel.ui.explain import QP_WHATIF
from perfmodel.whatif import (
    LOW_CONFIDENCE,
    MAX_BATCH,
    MAX_DEVICES,
    MAX_LENGTH_TOK,
    POINT_COLUMNS,
    WHATIF_LEVELS,
    batch_grid,
)

K = W.KEYS
home = ui.home()
st.title("What-if", anchor=False)
st.caption("Pick a configuration, train a predictor on a dataset, and see the predicted throughput-vs-batch "
           "curve with its band, the physical (roofline) bound and the measured points nearby. Every input is "
           "in the URL: copy the link to share this what-if.")

ds = ui.available_datasets(home)
analyses.page_analysis("whatif")
stamp = ds.stamp
rows_of = dict(zip(ds.ids, ds.table["rows"], strict=True))
ui.restore_dataset_link(ds, W.restore_from_link)
selected = ui.dataset_selectbox(ds, K["dataset"], label="Dataset (training data and measured points)")
runs = ui.dataset_runs(home, selected, stamp)
ui.require_runs(runs, ds.names[selected])
defaults = W.apply_defaults(home, selected, stamp)

hardware = ui.hardware_choices(home)
models = ui.model_choices(home)
# The dataset's own names first (what was measured), then the rest of the catalog.
hw_options = list(dict.fromkeys([*sorted(runs.get("hardware", []).dropna().astype(str).unique()), *hardware]))
model_options = list(dict.fromkeys([*sorted(runs.get("model", []).dropna().astype(str).unique()), *models]))
fw_options = sorted(runs.get("framework", []).dropna().astype(str).unique().tolist()) or ["vllm"]
for msg in W.settle_link(defaults, {"hardware": hw_options, "model": model_options}):
    st.warning(msg, icon=":material/link_off:")
W.settle_framework(fw_options)
W.widen_range_to_link_batch()
settings, moved_settings = W.settle_settings(home, selected, stamp)
for msg in moved_settings:
    st.warning(msg, icon=":material/link_off:")
if st.session_state.get(K["framework"]) not in fw_options:
    fw_options.append(str(st.session_state.get(K["framework"]) or fw_options[0]))

c1, c2, c3 = st.columns(3)
# The label carries the catalog key too, as every other page names hardware and models: typing "h200" finds it.
c1.selectbox("Hardware", hw_options, key=K["hardware"], format_func=lambda v: W.choice_label(v, hardware))
c2.selectbox("Model", model_options, key=K["model"], format_func=lambda v: W.choice_label(v, models))
c3.selectbox("Framework", fw_options, key=K["framework"], accept_new_options=True)
if (combo := W.combination_note(runs, str(st.session_state.get(K["hardware"])), str(st.session_state.get(K["model"])),
                                str(st.session_state.get(K["framework"])))) is not None:
    st.caption(combo)
if settings:  # measurement settings this dataset varies (threads, llama.cpp n_batch): one curve per value
    for col, choice in zip(st.columns(max(3, len(settings))), settings.values(), strict=False):
        col.selectbox(W.setting_label(choice.name), W.setting_options(choice), key=K[choice.name],
                      format_func=W.setting_text, help=W.setting_help(choice))
c1, c2, c3, c4, c5 = st.columns(5)
c1.number_input("Input length (tokens)", min_value=0.0, max_value=float(MAX_LENGTH_TOK), step=64.0,
                key=K["input_len_tok"], format="%g")
c2.number_input("Output length (tokens)", min_value=1.0, max_value=float(MAX_LENGTH_TOK), step=64.0,
                key=K["output_len_tok"], format="%g")
c3.number_input("Devices", min_value=1.0, max_value=float(MAX_DEVICES), step=1.0, key=K["device_count"],
                format="%g", on_change=W.whole_devices, help="Accelerators per replica: a whole number (a typed "
                "1.5 is rounded).")
c4.number_input("Smallest batch", min_value=1.0, max_value=float(MAX_BATCH), key=K["batch_min"], format="%g")
c5.number_input("Largest batch", min_value=1.0, max_value=float(MAX_BATCH), key=K["batch_max"], format="%g")
c1, c2, c3, c4 = st.columns([2, 2, 2, 1], vertical_alignment="bottom")
c1.selectbox("Predictor", W.PREDICTOR_CHOICES, key=K["predictor"],
             help="roofline-gbm: perfmodel's own (roofline prior x learned efficiency, calibrated bands). "
                  "ala: the published hybrid (per-configuration exponential fits, XGBoost of their parameters, "
                  "simulated annealing over training subsets; trains for minutes). xgboost, random-forest, "
                  "linear: the published baselines, straight on the features.")
banded = st.session_state.get(K["predictor"]) in W.BANDED_PREDICTORS  # the baselines give no band to set
c2.segmented_control("Band level", WHATIF_LEVELS, key=K["level"], format_func=lambda v: f"{v:.0%}", required=True,
                     disabled=not banded, help=None if banded else "This predictor (a published method) gives no "
                     "band: choose roofline-gbm for one.")
c3.checkbox("Keep suspect points in training", key=K["keep_suspect"],
            help="Points faster than the physical bound (reading the weights once per output token at peak "
                 "memory bandwidth) are left out of training by default.")
log_x = c4.toggle("log batch", key=K["log_x"])

values = W.inputs()
if values["level"] not in WHATIF_LEVELS:  # a segmented control can be cleared
    values["level"] = 0.9
try:
    batches = batch_grid(float(values["batch_min"]), float(values["batch_max"]))
except PerfmodelError as exc:
    W.write_link(selected, values)
    ui.show_error(exc, what="Cannot draw the curve")
    st.stop()
batches, batch, moved = W.place_batch(batches, values.get("batch_size"))
if moved:
    st.warning(moved, icon=":material/link_off:")
if (too_long := W.context_warning(values)) is not None:
    st.warning(too_long, icon=":material/warning:")
st.session_state[K["batch_size"]] = values["batch_size"] = batch
W.write_link(selected, values)

options = W.options_json(values["predictor"], bool(values["keep_suspect"]))
path = W.model_dir(home, selected, int(rows_of[selected]), options)
meta = path / "metadata.json"
b1, b2 = st.columns([1, 3], vertical_alignment="center")
label = "Retrain" if meta.exists() else "Train"
if b1.button(f"{label} {values['predictor']}", key=W.P + "train", type="secondary" if meta.exists() else "primary",
             icon=":material/model_training:"):
    if W.train_with_status(home, selected, stamp, options, path,
                           f"Training {values['predictor']} on {ds.names[selected]}"):
        st.rerun()  # the button's label and colour, chosen before the model existed, now read "Retrain"
W.show_just_trained()
if not meta.exists():
    b2.info(f"No {values['predictor']} model for this dataset and options yet: press **Train**.",
            icon=":material/info:")
    st.stop()
b2.caption(f"{values['predictor']} trained {W.trained_when(meta)}{W.training_took(path)}, saved as JSON in the data "
           f"directory ({path.name}).")

point = {**{c: values[c] for c in POINT_COLUMNS}, **W.setting_point(values, settings)}
try:
    res = W.result(home, selected, stamp, str(path), meta.stat().st_mtime_ns, options,
                   json.dumps(point, sort_keys=True), json.dumps(batches), float(values["level"]))
except PerfmodelError as exc:
    ui.show_error(exc, what="Cannot predict")
    st.stop()
if res.cannot_run is not None:  # the weights exceed the devices' memory: no run exists to draw a curve of
    st.error(res.cannot_run, icon=":material/memory:")
    st.stop()

at_b = res.table[res.table["batch_size"] == values["batch_size"]].iloc[0]
m1, m2, m3, m4 = st.columns(4)
m1.metric(f"Predicted at batch {values['batch_size']:g}", f"{W.rate(at_b['pred_throughput_tok_s'])} tok/s")
band = (f"{W.rate(at_b['pred_lower'])} - {W.rate(at_b['pred_upper'])}" if not math.isnan(at_b["pred_lower"])
        else "n/a")
m2.metric(f"{res.level:.0%} band", band)
m3.metric("Confidence", "n/a" if math.isnan(at_b["confidence"]) else
          "< 0.01" if at_b["confidence"] < 0.005 else f"{at_b['confidence']:.2f}",
          help=W.confidence_help(values["predictor"], LOW_CONFIDENCE))
roof_value, roof_help = W.roofline_tile(at_b["roofline_tok_s"])
m4.metric("Roofline bound", roof_value, help=roof_help)
l1, l2, l3, l4 = st.columns(4)
l1.metric("Total throughput", f"{W.rate(at_b['pred_total_throughput_tok_s'])} tok/s",
          help="Input and output tokens per second: output throughput x (input + output) / output.")
l2.metric("End-to-end latency", W.e2e_seconds(at_b["pred_e2e_latency_s"]),
          help=f"Per request, by Little's law: batch x output tokens / output throughput. "
               f"{res.level:.0%} band: {W.e2e_seconds(at_b['pred_e2e_lower_s'])} - "
               f"{W.e2e_seconds(at_b['pred_e2e_upper_s'])}.")
no_ttft = W.no_ttft_text(res, at_b)
l3.metric("TTFT", W.seconds(at_b["pred_ttft_s"]), help=no_ttft or (
          "Time to first token, from a model of the training rows that measured it. "
          f"{res.level:.0%} band: {W.seconds(at_b['pred_ttft_lower_s'])} - "
          f"{W.seconds(at_b['pred_ttft_upper_s'])} (calibrated on held-out rows for a measured "
          "configuration, on held-out configurations for a new one). Physical floor: "
          f"{W.seconds(at_b['ttft_floor_s'])} (the prompts' FLOPs at peak, or one read of the weights, whichever "
          "is longer); the model learns how far above it this platform runs."))
l4.metric("TPOT", W.seconds(at_b["pred_tpot_s"]),
          help=no_ttft or "Time per output token after the first: (latency - TTFT) / (output tokens - 1).")
if no_ttft is not None:
    st.caption(no_ttft)
if res.bound_note is not None:
    st.warning(res.bound_note, icon=":material/speed:")
if res.overhead_note is not None:
    st.info(res.overhead_note, icon=":material/hourglass_bottom:")
if res.memory_note is not None:
    st.warning(res.memory_note, icon=":material/memory:")
if (conflict := W.latency_conflict(at_b, res.level)) is not None:
    st.warning(conflict, icon=":material/timer_off:")
if not res.in_domain:
    reasons = list(res.reasons) or ["the query is far from every training point in feature space"]
    st.warning(f"**Out of domain** at {W.out_of_domain_text(res)}: the prediction extrapolates, so its "
               "band is wide and it deserves less trust.\n\n" + "\n".join(f"- {r}" for r in reasons),
               icon=":material/explore_off:")
elif res.reasons and res.low_confidence:
    st.warning("**Low confidence**: the band is wide and the prediction deserves less trust.\n\n"
               + "\n".join(f"- {r}" for r in res.reasons), icon=":material/explore_off:")
elif res.reasons:
    st.info("Partly outside the training data:\n\n" + "\n".join(f"- {r}" for r in res.reasons),
            icon=":material/info:")
st.plotly_chart(W.figure(res, bool(log_x)), key=W.P + "chart")
if (kv_text := W.kv_caption(res)) is not None:
    st.caption(kv_text)
at_settings = f" at {words}" if (words := W.settings_words(res.point)) else ""
if res.measured.empty:
    st.caption(f"No measured runs of this hardware, model and lengths{at_settings} in the dataset.")
else:
    n_sus = int(res.measured["suspect"].sum())
    st.caption(W.measured_caption(res.measured, at_settings)
               + (f"; {n_sus} faster than the roofline bound (x)." if n_sus else "."))

st.subheader("Predictions", anchor=False)
st.dataframe(W.display_table(res.table), hide_index=True, column_config=W.table_config(res.level),
             column_order=[W.shown_name(c) for c in W.TABLE_ORDER if c in res.table.columns], placeholder="—")
st.download_button("Download predictions (CSV)", W.result_csv(res),
                   file_name=f"whatif-{values['hardware']}-{values['model']}.csv", mime="text/csv",
                   icon=":material/download:", on_click="ignore")

st.selectbox("Batch to explain", batches, key=K["batch_size"], format_func=lambda b: f"{b:g}")
explain = {QP_WHATIF[c]: f"{float(values[c]):g}" if isinstance(values[c], float) else str(values[c])
           for c in QP_WHATIF}
# The setting the curve is at (threads, n_batch), so that the Attribution page explains and predicts that row.
explain.update({W.QP[c]: W.UNSET if v is None else f"{v:g}" for c, v in W.setting_point(values, settings).items()})
st.page_link("pages/attribution.py", label="Explain this point on the Attribution page",
             icon=":material/insights:", query_params={"dataset": selected, **explain})
