"""Compare: two datasets (or two subsets of one) point by point, with a run-to-run noise verdict and an overlay."""

import streamlit as st

from perfmodel import ui
from perfmodel.errors import PerfmodelError
from perfmodel.pareto import COMPARE_KEYS, NOISE_ALPHA, configuration_labels
from perfmodel.plots import axis_title
from perfmodel.ui import analyses
from perfmodel.ui import compare as C
from perfmodel.ui import pagestate as PS
from perfmodel.ui.widgets import labelled_columns

K = C.KEYS
#: The chart's axis in the URL (everything else is written by C.write_link).
VIEW = {"log_x": (K["log_x"], True)}
home = ui.home()
st.title("Compare", anchor=False)
st.caption("Two frameworks, two versions or two sweeps side by side: points are matched on hardware, model, "
           f"devices, input/output length and load (batch size or concurrency, or the request rate of a rate sweep; "
           f"offline runs apart); a difference is beyond run-to-run noise when Welch's "
           f"t-test on both sides' repeats gives p < {NOISE_ALPHA:g} (points without repeats cannot be judged).")

ds = ui.available_datasets(home)
analyses.page_analysis("compare")
# the app-wide ?dataset= first (both sides open on it unless the link names a and b), then the page's own
ui.restore_dataset_link(ds, lambda: C.restore_from_link(ds.ids))
PS.restore("compare", VIEW)
PS.defaults(VIEW)
fresh = not any(K[k] in st.session_state for k in ("by_a", "in_a", "by_b", "in_b"))
for side in ("a", "b"):
    if st.session_state.get(K[side]) not in ds.names:
        st.session_state[K[side]] = ui.selected_dataset() if ui.selected_dataset() in ds.names else ds.ids[0]
if fresh and st.session_state[K["a"]] == st.session_state[K["b"]]:
    # Both sides on one dataset and nothing cut yet: a self-comparison says nothing. Start from two different
    # subsets of it instead (e.g. two frameworks or two models), which the user can change.
    split = C.default_split(home, st.session_state[K["a"]], ds.stamp)
    if split is not None:
        col, va, vb = split
        st.session_state.update({K["by_a"]: col, K["in_a"]: [va], K["by_b"]: col, K["in_b"]: [vb]})

sides = {}
for side, col in zip(("a", "b"), st.columns(2), strict=True):
    with col:
        st.subheader(f"Side {side.upper()}", anchor=False)
        dataset = st.selectbox("Dataset", ds.ids, key=K[side], format_func=ds.label)
        runs = ui.dataset_runs(home, dataset, ds.stamp)
        by_options = [C.NO_SUBSET, *[c for c in C.SUBSET_COLUMNS if c in runs.columns and runs[c].notna().any()]]
        if st.session_state.get(K[f"by_{side}"]) not in by_options:
            st.session_state[K[f"by_{side}"]] = C.NO_SUBSET
        by = st.selectbox("Only the rows where", by_options, key=K[f"by_{side}"], format_func=C.column_label)
        values = sorted(runs[by].dropna().astype(str).unique()) if by != C.NO_SUBSET else []
        ui.keep_valid(K[f"in_{side}"], values)
        chosen = st.multiselect(C.values_label(by), values, key=K[f"in_{side}"], disabled=by == C.NO_SUBSET,
                                placeholder="any value", format_func=C.value_label)
        label = ds.names[dataset] + (f" [{C.column_label(by)}={','.join(map(C.value_label, chosen))}]"
                                     if by != C.NO_SUBSET and chosen else "")
        sides[side] = {"dataset": dataset, "runs": runs, "by": by, "in": chosen, "label": label}

metrics = C.metric_choices(sides["a"]["runs"], sides["b"]["runs"])
if st.session_state.get(K["metric"]) not in metrics:
    st.session_state[K["metric"]] = metrics[0]
o1, o2, o3 = st.columns([2, 3, 1], vertical_alignment="bottom")
metric = o1.selectbox("Metric", metrics, key=K["metric"], format_func=axis_title)
ui.keep_valid(K["ignore"], C.key_choices())
ignore = o2.multiselect("Do not match on", C.key_choices(), key=K["ignore"],
                        help="E.g. model, when the two sides name the same model differently.")
log_x = o3.toggle("log x axis", key=K["log_x"], help="Batch size, or the request rate where the points are a rate sweep")
PS.write(VIEW)

label_a, label_b = sides["a"]["label"], sides["b"]["label"]
if label_a == label_b:
    label_a, label_b = f"A: {label_a}", f"B: {label_b}"
state = {"a": sides["a"]["dataset"], "b": sides["b"]["dataset"], "by_a": sides["a"]["by"], "in_a": sides["a"]["in"],
         "by_b": sides["b"]["by"], "in_b": sides["b"]["in"], "metric": metric, "ignore": ignore,
         "config": st.session_state.get(K["config"], [])}
if C.same_rows(sides["a"], sides["b"]):
    # The same rows on both sides (same dataset, same cut): every point would match itself at +0.0%.
    C.write_link(state)
    st.info("Side A and side B are the same rows, so there is nothing to compare. Choose a different dataset "
            "for B, or cut the sides to different values (e.g. *Only the rows where* framework, one framework "
            "on each side).", icon=":material/info:")
    st.stop()
if (whole := C.contained(sides["a"], sides["b"])) is not None:
    part = "b" if whole == "a" else "a"
    st.warning(f"Side {whole.upper()} holds every run of side {part.upper()} (and more): each matched point compares "
               f"{part.upper()}'s runs with an average that includes them, so differences shrink towards zero. Cut "
               f"side {whole.upper()} to the other values (e.g. the other framework) for a fair comparison.",
               icon=":material/join_inner:")
options = C.options_json(sides["a"]["by"], sides["a"]["in"], sides["b"]["by"], sides["b"]["in"], metric, ignore,
                         label_a, label_b)
try:
    comp = C.comparison(home, sides["a"]["dataset"], sides["b"]["dataset"], ds.stamp, options)
except PerfmodelError as exc:
    C.write_link(state)
    ui.show_error(exc, what="Cannot compare")
    st.stop()

table = C.table_with_verdicts(comp)
if comp.caveat:
    st.warning(comp.caveat[0].upper() + comp.caveat[1:] + ".", icon=":material/call_split:")
st.markdown(f"**{comp.message}.**")
m1, m2, m3, m4 = st.columns(4)
m1.metric("Matched points", f"{len(table):,}", help=f"{comp.n_only_a} only in A, {comp.n_only_b} only in B")
for m, verdict in zip((m2, m3, m4), ("beyond noise", "within noise", "no repeats"), strict=True):
    m.metric(verdict.capitalize(), f"{int((table['verdict'] == verdict).sum()):,}")
if table.empty:
    C.write_link(state)
    st.info("No point of A matches one of B: try leaving a column out of the matching.", icon=":material/info:")
    st.stop()

keys = [c for c in comp.table.columns if c in COMPARE_KEYS]
labels = configuration_labels(comp.table, keys)
configs = list(dict.fromkeys(labels))
ui.keep_valid(K["config"], configs)
if not st.session_state.get(K["config"]):
    st.session_state[K["config"]] = configs[:4]
shown = st.multiselect(f"Configurations to overlay ({len(configs):,})", configs, key=K["config"])
state["config"] = shown
C.write_link(state)
st.plotly_chart(C.figure(comp, shown, log_x=log_x), key=C.P + "chart")

st.subheader("Per point", anchor=False)
shown_table = C.per_point_view(table.drop(columns=["significant"]))
cc = st.column_config
unit = f" ({u})" if (u := axis_title(metric).rpartition("(")[2].rstrip(")")) != axis_title(metric) else ""
st.dataframe(shown_table, hide_index=True, placeholder="—", key=C.P + "table", column_config=labelled_columns(
    shown_table.columns, diff_pct=cc.NumberColumn("diff %", format="%+.1f"),
    # a throughput to one decimal (14,321.5, not 1,232.789); a latency as localized, whose digits matter
    **{c: cc.NumberColumn(label + unit, format="%,.1f" if metric.endswith(("_tok_s", "_rps")) else "localized",
                          help=f"{what}, {axis_title(metric)}")
       for c, label, what in (("mean_a", "A", "Side A's mean"), ("mean_b", "B", "Side B's mean"),
                              ("diff", "B − A", "Difference of the means"),
                              ("noise_se", "noise (std. error)", "Run-to-run noise of the difference"),
                              ("std_a", "std A", "Side A's run-to-run standard deviation"),
                              ("std_b", "std B", "Side B's run-to-run standard deviation"))},
    p_value=cc.NumberColumn("p", format="%.3g", help="Welch's t-test: the chance of a difference this large "
                            "between two setups that perform the same"),
    n_a=cc.NumberColumn("repeats A", help="Side A's runs at this point"),
    n_b=cc.NumberColumn("repeats B", help="Side B's runs at this point")))
st.download_button("Download the comparison (CSV)", table.to_csv(index=False), file_name="comparison.csv",
                   mime="text/csv", icon=":material/download:", on_click="ignore")
