"""Attribution: which quantities drive throughput (SHAP), the what-if waterfall, feature-set transfer."""

import json
import math

import streamlit as st

from perfmodel import ui
from perfmodel.errors import PerfmodelError
from perfmodel.explain import COMPARE_PROTOCOLS
from perfmodel.ui import analyses
from perfmodel.ui import explain as X
from perfmodel.ui import pagestate as PS
from perfmodel.ui import whatif as WUI
from perfmodel.ui.whatif import DEFAULT_PREDICTOR, rate

P = "attribution."
#: The page's inputs besides the what-if point, in the URL (written with the point by X.attribution_link).
VIEW = {"features": (P + "features", X.FEATURE_SET_CHOICES[0]), "view": (P + "view", "bar"),
        "dep": (P + "dep_x", ""), "dep_color": (P + "dep_color", ""), "protocol": (P + "protocol", "random")}
home = ui.home()
st.title("Attribution", anchor=False)
st.caption("Which quantities drive the predicted throughput, as exact TreeSHAP values of a gradient-boosted model "
           "of log throughput (a value v multiplies throughput by exp(v)); whether it learned hardware physics or "
           "one framework's quirks shows in the feature-set comparison and the transfer test.")
st.markdown("Feature kinds: " + X.legend_markdown(), help=X.KIND_HELP)

ds = ui.available_datasets(home)
analyses.page_analysis("attribution")
stamp = ds.stamp
ui.restore_dataset_link(ds)
# A what-if link (from the What-if page) carries the point; read whenever it names another point than the
# last one read (once per session, a second link from What-if was ignored for the point the page kept). The
# page writes its own point into the URL, so re-reading that one sets what the widgets already hold.
def _link_key(point: dict) -> str:
    return json.dumps({k: str(v) for k, v in point.items()}, sort_keys=True)


point, problems = X.whatif_from_link(st.query_params)
if st.session_state.get(P + "link_read") != (link_key := _link_key(point)):
    st.session_state[P + "link_read"] = link_key
    st.session_state[P + "link_problems"] = problems
    st.session_state[P + "link_point"] = point
    for col, value in point.items():
        if col in X.QP_SETTINGS:  # judged against the configuration's values by X.settle_settings
            st.session_state.setdefault(P + "link_settings", {})[col] = value
        else:
            st.session_state[P + "q." + col] = value

PS.restore("attribution", VIEW)
PS.defaults({k: v for k, v in VIEW.items() if k in ("view", "protocol")})
PS.settle(P + "features", X.FEATURE_SET_CHOICES, X.FEATURE_SET_CHOICES[0])
c1, c2 = st.columns([2, 1])
selected = ui.dataset_selectbox(ds, P + "dataset", container=c1)
features = c2.selectbox("Feature set of the explained model", X.FEATURE_SET_CHOICES, key=P + "features",
                        help="physical: catalog quantities (bytes, bandwidth, FLOPs); framework: the server "
                             "metrics (fw_*) the data carries; identity: one-hot hardware/model/framework names.")
ui.require_runs(ui.dataset_runs(home, selected, stamp), ds.names[selected])
engine = X.engine()
try:
    model = X.gbdt_model(home, selected, stamp, features)
    ex = X.explanation(home, selected, stamp, features, engine)
except PerfmodelError as exc:
    ui.show_error(exc, what="Cannot explain this dataset")
    st.stop()
st.caption(f"{model.description}. {ex.message}.")
with st.expander("Glossary: what each feature means", icon=":material/menu_book:"):
    # from the feature definitions (perfmodel.features.FEATURE_DOCS), for the dataset's whole 'all' set
    st.caption("ii = input length, oo = output length, bb = batch size (tokens, tokens, sequences); figures of "
               "the hardware and model come from the catalogs. Charts name features in words; hovering a bar or "
               "a point gives the raw name.")
    st.dataframe(X.feature_glossary(home, selected, stamp), hide_index=True, placeholder="—", key=P + "glossary",
                 column_config={"feature": "feature (raw name)", "name": "name (unit)",
                                "features": "features it covers here"})
if not ex.additivity_ok:
    st.error(f"The SHAP values do not add up to the model output (error {ex.max_additivity_error:.1e}).")
imp = ex.importance()

st.subheader("Global importance", anchor=False)
view = st.segmented_control("View", ["bar", "beeswarm"], key=P + "view", required=True)
if view == "beeswarm":
    st.plotly_chart(X.beeswarm_figure(ex), key=P + "beeswarm")
else:
    st.plotly_chart(X.importance_figure(imp, title="mean |SHAP| per feature"), key=P + "importance")
shares = imp.groupby("kind", sort=False)["share"].sum()
st.caption("Share of the attribution by kind: " + ", ".join(f"{X.kind_label(k)} {v:.0%}" for k, v in shares.items()))
for note in X.read_together_notes(ex, imp):
    st.caption(note)

st.subheader("Dependence", anchor=False)
ranked = imp["feature"].tolist()
d1, d2 = st.columns(2)
PS.settle(P + "dep_x", ranked, ranked[0] if ranked else None, what="dependence feature")
feat = d1.selectbox("Feature", ranked, key=P + "dep_x",
                    format_func=lambda f: X.kind_label(ex.kinds[ex.feature_names.index(f)]).split()[0] + " "
                    + X.feature_labels([f])[0] + f" · {f}")
others = ["(none)"] + [f for f in ranked if f != feat]
PS.settle(P + "dep_color", others, others[1] if len(others) > 1 else "(none)", what="dependence colour")
colour = d2.selectbox("Coloured by", others, key=P + "dep_color",
                      format_func=lambda f: f if f == "(none)" else X.feature_labels([f])[0] + f" · {f}")
st.plotly_chart(X.dependence_figure(ex, feat, None if colour == "(none)" else colour), key=P + "dependence")

st.subheader("Waterfall of a what-if point", anchor=False)
for problem in st.session_state.get(P + "link_problems", []):
    st.warning(f"The link's {problem}.", icon=":material/link_off:")
runs = ui.dataset_runs(home, selected, stamp)
# Defaults: the dataset's most measured configuration (as on the What-if page), filled in where the link
# gave nothing, and again for every input when the dataset changes.
defaults = X.default_point(home, selected, stamp)
refill = st.session_state.get(P + "defaults_for") not in (None, selected)
st.session_state[P + "defaults_for"] = selected
for col, value in defaults.items():
    if value is not None and (refill or P + "q." + col not in st.session_state):
        st.session_state[P + "q." + col] = value
if refill:  # a setting (threads, n_batch) goes back to the new dataset's default for the configuration
    for col in X.QP_SETTINGS:
        st.session_state.pop(P + "q." + col, None)
w = st.columns(7)
point: dict[str, object] = {}
for i, col in enumerate(("hardware", "model", "framework")):
    values = sorted(str(v) for v in runs[col].dropna().unique()) if col in runs.columns else []
    key = P + "q." + col
    current = st.session_state.get(key)
    if current is not None and current not in values:
        values = [str(current), *values]  # a linked value the data does not have: keep it, the model extrapolates
    if not values:
        continue
    point[col] = w[i].selectbox(col, values, key=key)
for i, (col, label) in enumerate((("input_len_tok", "input len"), ("output_len_tok", "output len"),
                                  ("batch_size", "batch"), ("device_count", "devices")), start=3):
    point[col] = w[i].number_input(label, min_value=1.0, step=1.0, format="%g", key=P + "q." + col)
# A setting the dataset varies (threads, llama.cpp n_batch) is part of the point, as on the What-if page: the
# waterfall, the What-if prediction, the measured runs and the links are all at the value chosen.
settings, moved = X.settle_settings(home, selected, stamp, point, P + "q.",
                                    st.session_state.pop(P + "link_settings", {}))
for msg in moved:
    st.warning(f"The link's {msg}.", icon=":material/link_off:")
for col, choice in zip(st.columns(7), settings.values(), strict=False):
    value = col.selectbox(WUI.setting_label(choice.name), WUI.setting_options(choice), key=P + "q." + choice.name,
                          format_func=WUI.setting_text, help=WUI.setting_help(choice))
    point[choice.name] = None if value == WUI.UNSET else float(value)
view_params = {qp: str(st.session_state.get(key) or "") for qp, (key, _) in VIEW.items()}
analyses.write_page_link(X.attribution_link(point, selected, view=view_params))  # the view's state, for saving
st.session_state[P + "link_read"] = _link_key(X.whatif_from_link(st.query_params)[0])  # our own link: read
try:
    wf = X.point_waterfall(home, selected, stamp, features, engine, json.dumps(point, sort_keys=True))
except PerfmodelError as exc:
    ui.show_error(exc, what="Cannot explain this point")
else:
    title = (f"{point.get('hardware')} / {point.get('model')} / {point.get('framework')}, "
             f"{point['input_len_tok']:g} in / {point['output_len_tok']:g} out, batch {point['batch_size']:g}, "
             f"{point['device_count']:g} device(s)" + (f", {words}" if (words := WUI.settings_words(point)) else ""))
    st.plotly_chart(X.waterfall_figure(wf, title=title), key=P + "waterfall")
    st.caption(f"f(x) = {rate(wf.prediction_tok_s)} tok/s is E[f] = {rate(math.exp(wf.base_value))} tok/s "
               "(the model's mean output over the data, a geometric mean) times every bar's factor: the bars add "
               f"in ln(tok/s) (base {wf.base_value:.3f} + contributions {wf.output - wf.base_value:+.3f}), so a "
               "SHAP value of +0.2 multiplies the throughput by ×1.22 and -0.2 by ×0.82. Each bar's label is its "
               "factor, its colour the feature's kind; a hatched bar lowers the throughput, a solid one raises "
               f"it. Link to this view: `{ui.absolute_link(X.attribution_link(point, selected, view=view_params))}`")
    # The What-if page's number for the same point, beside this model's (and a measurement where one exists).
    n_rows = int(dict(zip(ds.ids, ds.table["rows"], strict=True))[selected])
    m1, m2, m3 = st.columns(3)
    m1.metric(f"Explained model (GBDT, '{features}' features)", f"{rate(wf.prediction_tok_s)} tok/s",
              help="The model this page explains: its waterfall ends here (f(x)).")
    try:
        other = X.whatif_prediction(home, selected, stamp, n_rows, point)
    except PerfmodelError as exc:
        m2.metric(f"What-if predictor ({DEFAULT_PREDICTOR})", "n/a", help=f"Cannot predict this point: {exc}")
    else:
        if other is not None and other[1] is not None:  # the weights exceed the devices' memory
            m2.metric(f"What-if predictor ({DEFAULT_PREDICTOR})", "cannot run", help=other[1])
        elif other is not None:
            m2.metric(f"What-if predictor ({DEFAULT_PREDICTOR})", f"{rate(other[0])} tok/s",
                      help="What the What-if page predicts at this point with its default predictor "
                           "(suspect points left out), from the model it saved.")
        else:
            m2.metric(f"What-if predictor ({DEFAULT_PREDICTOR})", "not trained",
                      help="Not trained on this dataset yet (here or on the What-if page). Training takes "
                           "about 10 s for 300 runs and 20 s for 5,000 on two cores, so the page does not "
                           "block on it: press the button.")
            if m2.button(f"Train {DEFAULT_PREDICTOR}", key=P + "train_whatif", icon=":material/model_training:",
                         help="Trains and saves the What-if page's model: neither page trains it again."):
                with st.spinner(f"Training {DEFAULT_PREDICTOR} on {ds.names.get(selected, selected)}..."):
                    try:
                        X.train_whatif(home, selected, stamp, n_rows)
                    except PerfmodelError as exc:
                        ui.show_error(exc, what="Training failed")
                    else:
                        st.rerun()
    measured, n_measured = X.measured_at(runs, point)
    m3.metric("Measured", f"{rate(measured)} tok/s" if n_measured else "none",
              help=(f"Median of the {n_measured} run(s) of the dataset at exactly this configuration."
                    if n_measured else "No run of the dataset at exactly this configuration."))
    st.caption(X.WHY_TWO_NUMBERS)
    linked = st.session_state.get(P + "link_point") or {}
    from_whatif = bool(linked) and all(point.get(c) == v for c, v in linked.items())
    note = X.model_note(features, ds.names.get(selected, selected), wf.prediction_tok_s, from_whatif=from_whatif)
    if from_whatif:
        st.info(note, icon=":material/info:")
    else:
        st.caption(note)

st.subheader("Feature-set comparison and transfer", anchor=False)
st.caption("The same learners (GBDT on log throughput; degree-2 polynomial ridge) trained on each feature set. "
           "Transfer: leave one framework (or accelerator) out, train on the rest, test on it; the drop is "
           "random-split R² minus transfer R² (log throughput). A model that learned physics should lose little.")
protocol = st.segmented_control("Protocol", COMPARE_PROTOCOLS, key=P + "protocol", required=True)
done = st.session_state.setdefault(P + "compared", [])
if st.button("Run the comparison", key=P + "compare", icon=":material/play_arrow:") and protocol not in done:
    done.append(protocol)
if protocol in done:
    try:
        table = X.comparison(home, selected, stamp, protocol)
    except PerfmodelError as exc:
        ui.show_error(exc, what="Cannot compare feature sets")
    else:
        shown = table.assign(set=[X.kind_label(s) if s in ("physical", "framework", "identity") else s
                                  for s in table["set"]])
        if "top_features" in shown.columns:
            shown["top_features"] = shown["top_features"].map(X.top_features_in_words)
        scored, unscored, failing = X.split_comparison(shown)
        st.dataframe(scored.drop(columns=["note"]), hide_index=True, placeholder="—", key=P + "table",
                     column_config=X.COMPARISON_COLUMNS,
                     column_order=X.comparison_order([c for c in scored.columns if c != "note"]))
        if len(unscored):
            st.caption("Not scored: " + "; ".join(f"{r['set']} / {r['learner']} ({r['note'] or 'no test rows'})"
                                                  for _, r in unscored.iterrows()) + ".")
        if failing:
            st.caption(f"R² below {X.threshold_text(X.FAILING_R2)} (far worse than predicting the mean: the learner does not "
                       f"carry over to the held-out rows on this set): {', '.join(failing)}.")
        if (shown["set"].astype(str).str.contains("framework|all")).any():
            st.caption(X.FRAMEWORK_SCORE_CAVEAT)
        for note in sorted({n for n in scored["note"] if n}):
            st.info(note, icon=":material/info:")
else:
    st.caption("Training every learner on every set takes from seconds to a few minutes: press the button.")
