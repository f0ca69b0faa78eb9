"""Report: a self-contained HTML (or PDF) capacity report of a dataset, optionally with a saved plan."""

import json

import streamlit as st
import streamlit.components.v1 as components

from perfmodel import ui
from perfmodel.errors import PerfmodelError
from perfmodel.ui import analyses, cached
from perfmodel.ui import pagestate as PS
from perfmodel.ui import planner as P

#: The page's inputs in its URL (so that a saved analysis reopens them).
SPEC = {"dataset": ("report.dataset", ""), "plan": ("report.plan", ""), "accuracy": ("report.accuracy", True)}

home = ui.home()
st.title("Report", anchor=False)
st.caption("Executive summary, workload and SLOs, candidates, curves with knees, predictions with bands, "
           "attributions, provenance and hold-out accuracy, in one file that works offline.")
ds = ui.available_datasets(home)
stamp, ids, names = ds.stamp, ds.ids, ds.names
plans = {a.id: a for a in cached.open_store(home).analyses("planner")}
if (opened := st.query_params.get(analyses.QUERY_KEY)) in plans:
    # A saved plan opened here (/report?analysis=ID) is the report of that plan: it had switched to the Planner.
    del st.query_params[analyses.QUERY_KEY]
    st.query_params["plan"] = opened
    st.query_params["dataset"] = str(plans[opened].payload.get("dataset") or "")
analyses.page_analysis("report")
PS.restore("report", SPEC)
choices = ["", *plans]
if st.session_state.get("report.plan") not in choices:
    st.session_state["report.plan"] = ""
st.session_state.setdefault("report.accuracy", True)
c1, c2 = st.columns(2)
plan_id = c2.selectbox("Saved plan (Planner page)", choices, key="report.plan",
                       format_func=lambda i: "none (data only)" if not i else plans[i].name)
default_ds = str(plans[plan_id].payload.get("dataset")) if plan_id else (ui.selected_dataset() or ids[0])
if st.session_state.get("report.dataset") not in names or plan_id:
    st.session_state["report.dataset"] = default_ds if default_ds in names else ids[0]
dataset = c1.selectbox("Dataset", ids, key="report.dataset", format_func=lambda i: f"{names[i]} ({i})",
                       disabled=bool(plan_id))
if not plan_id:
    st.info((f"{len(plans)} saved plan(s): choose one under *Saved plan* to add the executive summary, workload "
             "and SLOs, candidates and predictions at the plan's operating points. " if plans else
             "No saved plan yet: size a workload on the Planner page and save it (*Save this state as*, at the foot of "
             "the page) "
             "to add the executive summary, workload and SLOs, candidates and predictions. ")
            + "Without one the report covers the data: curves, knees, attributions and provenance.",
            icon=":material/assignment:")
accuracy = st.checkbox("Include hold-out accuracy", key="report.accuracy",
                       help="Trains the predictor again on held-out splits of the data to measure its error: about "
                            "15 s more on the bundled sample, longer on a large dataset.")
PS.write(SPEC)
inputs_json = json.dumps(plans[plan_id].payload.get("plan"), sort_keys=True) if plan_id else ""

if st.button("Build report", type="primary", key="report.build"):
    st.session_state["report.built"] = [dataset, inputs_json, accuracy]
built = st.session_state.get("report.built")
if built and built == [dataset, inputs_json, accuracy]:
    try:
        html = P.report_html(home, dataset, stamp, inputs_json, accuracy)
    except PerfmodelError as exc:
        st.error(str(exc))
        st.stop()
    st.success(f"Report ready ({len(html) / 1e6:.1f} MB, self-contained).")
    st.download_button("Download HTML", html, file_name=f"report-{dataset}.html", mime="text/html",
                       key="report.download_html", icon=":material/download:")
    if st.toggle("Preview the report here", key="report.preview"):
        components.html(html.decode("utf-8"), height=900, scrolling=True)
    if st.button("Prepare PDF", key="report.pdf"):
        try:
            pdf = P.report_pdf(home, dataset, stamp, inputs_json, accuracy)
        except PerfmodelError as exc:
            st.error(str(exc))
        else:
            st.download_button("Download PDF", pdf, file_name=f"report-{dataset}.pdf", mime="application/pdf",
                               key="report.download_pdf", icon=":material/picture_as_pdf:")
