"""Data: import benchmark result files, browse datasets, look at their runs."""

import streamlit as st

from perfmodel import ui
from perfmodel.errors import PerfmodelError
from perfmodel.plots import COLOR_OPTIONS, THROUGHPUT_METRICS, X_AXES, axis_title
from perfmodel.ui import analyses, tables
from perfmodel.ui import pagestate as PS
from perfmodel.ui import state as K
from perfmodel.ui import whatif as whatif_ui

#: The chart's and table's view in the URL (the dataset and the filters are written by ui.write_link). An empty
#: x, colour or column list means the dataset's own default.
VIEW = {"x": (K.X_AXIS, ""), "y": (K.Y_AXIS, THROUGHPUT_METRICS[0]), "color": (K.COLOR, ""), "log_x": (K.LOG_X, True),
        "columns": (K.COLUMNS, [])}

ALL_COLUMNS = "(all)"
#: Inputs whose default comes from the dataset: forgotten when another dataset is chosen or imported.
PER_DATASET = (K.COLOR, K.X_AXIS, K.COLUMNS)


def _forget_per_dataset() -> None:
    for key in PER_DATASET:
        st.session_state.pop(key, None)


home = ui.home()
st.title("Data", anchor=False)
analyses.page_analysis("data")
ui.sample_notice()

# --- import -------------------------------------------------------------------------------------
# Open when there is nothing to look at yet, or to show what was just imported.
importer = st.expander("Import benchmark result files", icon=":material/upload_file:",
                       expanded=bool(st.session_state.get(K.LAST_IMPORT))
                       or ui.datasets_table(home, ui.store_stamp(home)).empty)
with importer:
    submitted, files, form = ui.upload_form(home)
    if submitted:
        before = ui.datasets_table(home, ui.store_stamp(home))
        known = dict(zip(before["id"], before["name"], strict=True))
        try:
            info, _ = ui.import_uploads(files, form, ui.open_store(home))
            # the same content again under a new name typed in the form takes that name (Store.add_dataset)
            renamed = known[info.id] if info.id in known and known[info.id] != info.name else None
        except PerfmodelError as exc:
            st.session_state.pop(K.LAST_IMPORT, None)  # the last import's green banner is not this one's
            ui.show_error(exc, what="Nothing was imported", words=ui.in_form_words)
        else:
            ui.clear_store_caches()
            ui.reset_upload_form()
            st.session_state[K.LAST_IMPORT] = info.id
            st.session_state[K.LAST_IMPORT_KNOWN] = info.id in known  # the same content was stored before
            st.session_state[K.LAST_IMPORT_RENAMED] = renamed
            ui.select_dataset(info.id)
            # the old filters and the auto-chosen colour mean nothing in the new dataset
            for key in (*K.FILTER.values(), *PER_DATASET):
                st.session_state.pop(key, None)
            st.rerun()  # so that the sidebar, drawn before this page, counts the new dataset

stamp = ui.store_stamp(home)
datasets = ui.datasets_table(home, stamp)
with importer:
    last = st.session_state.get(K.LAST_IMPORT)
    if last in set(datasets["id"]):
        row = datasets.set_index("id").loc[last]
        last_issues = ui.dataset_issues(home, last, stamp)
        skipped = tables.skipped_rows(last_issues)
        if st.session_state.get(K.LAST_IMPORT_KNOWN):
            former = st.session_state.get(K.LAST_IMPORT_RENAMED)
            st.info(f"Already stored: these files, with these settings, are dataset **{row['name']}** (`{last}`, "
                    f"{row['rows']:,} run(s)"
                    + (f", renamed from **{former}** as typed" if former else "")
                    + "); nothing was added.", icon=":material/info:")
        elif row["rows"] and not skipped:
            st.success(f"Imported **{row['rows']:,}** run(s) into dataset **{row['name']}** (`{last}`) with "
                       f"**{row['issues']:,}** issue(s).", icon=":material/check_circle:")
        elif row["rows"]:  # a green banner had stood over rows left out for errors
            st.warning(f"Imported **{row['rows']:,}** run(s) into dataset **{row['name']}** (`{last}`); "
                       f"**{skipped:,}** row(s) of the file(s) were left out for errors (see the issues below; a "
                       "row is counted from the first data row, the header not counted).",
                       icon=":material/warning:")
        else:  # a file whose every request failed: stored as a record of the failure, with nothing to plot
            st.warning(f"Dataset **{row['name']}** (`{last}`) holds **no run**: nothing in the file could be "
                       f"measured (see its **{row['issues']:,}** issue(s) below).", icon=":material/warning:")
        st.dataframe(tables.per_file_counts(ui.dataset_runs(home, last, stamp), last_issues),
                     hide_index=True, placeholder="—", width="content")
        ui.issues_table(last_issues, key=K.IMPORT_ISSUE_SEVERITY)

# --- browse -------------------------------------------------------------------------------------
st.header("Datasets", anchor=False)
ds = ui.available_datasets(home, empty_message="No dataset yet: import benchmark result files above.",
                           on_empty=lambda: ui.write_link(None, {}))
ui.restore_dataset_link(ds)
PS.restore("data", VIEW)
st.dataframe(datasets, hide_index=True, placeholder="—", column_order=("name", "rows", "issues", "formats", "created", "id"),
             column_config={"created": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm")})

selected = ui.dataset_selectbox(ds, K.DATASET_WIDGET, on_change=_forget_per_dataset)
runs = ui.dataset_runs(home, selected, stamp)

choices = ui.filter_choices(home, selected, stamp)
filters: dict[str, list[str]] = {}
for col, name in zip(st.columns(len(tables.FILTER_COLUMNS)), tables.FILTER_COLUMNS, strict=True):
    ui.keep_valid(K.FILTER[name], choices[name])
    filters[name] = col.multiselect(name.replace("lengths", "input/output lengths"), choices[name],
                                    key=K.FILTER[name], placeholder="all")
ui.write_link(selected, filters)
fkey = ui.filters_json(filters)
shown = ui.filtered_runs(home, selected, stamp, fkey)
issues = ui.dataset_issues(home, selected, stamp)
st.caption(f"{len(shown):,} of {len(runs):,} runs match the filters.")
KEEP = " by default (What-if page: 'Keep suspect points')."
for flagged, label, why, key, config in (
        (whatif_ui.suspect_runs(home, selected, stamp), "suspect run(s): faster than the physical bound",
         "Output throughput above batch x memory bandwidth / weight bytes (reading the weights once per step at "
         "peak bandwidth) points to a unit error, a mislabelled device or a miscounted batch. They are left out of "
         "training", "data.suspects", {}),
        (whatif_ui.fast_ttft_runs(home, selected, stamp), "run(s) with a TTFT shorter than physics allows",
         "A time to first token below the prompts' FLOPs at peak rate (or one read of the weights, whichever is "
         "longer) points to a client that timed the response headers, a prompt cache that skipped the prefill or "
         "a miscounted batch. The TTFT model leaves them out of its training", "data.fast_ttft",
         {"ttft_s": st.column_config.NumberColumn("TTFT (s)", format="%.4g"),
          "ttft_floor_s": st.column_config.NumberColumn("TTFT floor (s)", format="%.4g")})):
    if len(flagged):
        with st.expander(f"{len(flagged):,} {label}", icon=":material/report:"):
            st.caption(why + KEEP)
            st.dataframe(flagged, hide_index=True, placeholder="—", key=key, column_config=config)

faster = ui.superlinear_runs(home, selected, stamp)
if len(faster):
    with st.expander(f"{len(faster):,} batch(es) faster per sequence than a smaller batch", icon=":material/report:"):
        st.caption("Throughput that grew faster than the batch from the next smaller batch measured in the same "
                   "configuration: each sequence ran faster beside more sequences, which a serving engine does not "
                   "do, so one of the two measurements is suspect (a slow warm-up at the smaller batch, a miscounted "
                   "batch). They stay in training: which of the two is wrong is not known.")
        st.dataframe(faster, hide_index=True, key="data.superlinear", column_config={
            "growth_over_batch": st.column_config.NumberColumn("growth / batch ratio", format="%.2f"),
            "output_throughput_tok_s": st.column_config.NumberColumn("throughput (tok/s)", format="%.1f"),
            "smaller_throughput_tok_s": st.column_config.NumberColumn("at the smaller batch (tok/s)",
                                                                      format="%.1f")})

chart_tab, runs_tab, issues_tab = st.tabs(["Chart", "Runs", f"Issues ({len(issues):,})"])
with chart_tab:
    c1, c2, c3, c4 = st.columns([2, 2, 2, 1], vertical_alignment="bottom")
    PS.settle(K.X_AXIS, X_AXES, tables.default_x(shown))
    PS.settle(K.Y_AXIS, THROUGHPUT_METRICS, THROUGHPUT_METRICS[0])
    PS.settle(K.COLOR, COLOR_OPTIONS, tables.default_color(shown))
    PS.defaults({"log_x": VIEW["log_x"]})
    x = c1.selectbox("x", X_AXES, key=K.X_AXIS, format_func=axis_title)
    y = c2.selectbox("y", THROUGHPUT_METRICS, key=K.Y_AXIS, format_func=axis_title)
    color = c3.selectbox("Colour by", COLOR_OPTIONS, key=K.COLOR)
    log_x = c4.toggle("log x", key=K.LOG_X)
    if len(runs):
        st.plotly_chart(ui.runs_figure(home, selected, stamp, fkey, x, y, color, log_x), key="data.chart")
    else:  # empty axes from -1 to 6 had said "No runs to plot"
        st.info(ui.no_runs_text(ds.names[selected]), icon=":material/inbox:")
with runs_tab:
    all_cols = [c for c in shown.columns if c != "lengths"]
    ui.keep_valid(K.COLUMNS, all_cols)
    default_cols = tables.default_columns(shown)
    if K.COLUMNS not in st.session_state:
        st.session_state[K.COLUMNS] = default_cols
    cols = st.multiselect("Columns", all_cols, key=K.COLUMNS, format_func=tables.column_words)
    st.dataframe(tables.runs_display(shown[cols or all_cols]), hide_index=True, placeholder="—",
                 column_config={c: st.column_config.Column(tables.column_words(c), help=tables.column_help(c))
                                for c in cols or all_cols})
    st.download_button("Download filtered runs (CSV)", ui.filtered_csv(home, selected, stamp, fkey),
                       file_name=f"{ds.names[selected]}-runs.csv".replace(" ", "_"), mime="text/csv",
                       icon=":material/download:", on_click="ignore")
# The dataset's default columns stay out of the URL (a long list that says nothing a link needs); none chosen
# shows them all, which the link says with a value no column has (dropped again when it is read).
PS.write(VIEW, {"columns": None if list(cols) == list(default_cols) else (cols or [ALL_COLUMNS])})
with issues_tab:
    ui.issues_table(issues, key=K.ISSUE_SEVERITY)

with st.expander("Delete this dataset", icon=":material/delete:"):
    n_runs = len(runs)
    st.write(f"Deletes **{ds.names[selected]}** (`{selected}`) and its runs from `{home}`.")
    # One checkbox per dataset: after a delete the next dataset shown here is not armed.
    confirm_key = f"{K.DELETE_CONFIRM}.{selected}"
    armed = st.checkbox(f"I understand: **{ds.names[selected]}** and its {n_runs:,} run(s) will be deleted "
                        "for good.", key=confirm_key)
    if st.button("Delete", key="data.delete", type="primary", disabled=not armed, icon=":material/delete:"):
        try:
            ui.open_store(home).delete_dataset(selected)
        except PerfmodelError as exc:
            ui.show_error(exc, what="Not deleted")
        else:
            ui.clear_store_caches()
            ui.select_dataset(None)
            st.session_state.pop(K.LAST_IMPORT, None)
            st.session_state.pop(confirm_key, None)
            st.toast(f"Deleted **{ds.names[selected]}** ({n_runs:,} runs).", icon=":material/delete:")
            st.rerun()
