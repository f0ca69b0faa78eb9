"""Sweeps: plan a measurement sweep, start it in the background, watch the curve fill in, stop, resume."""

import time

import streamlit as st

from perfmodel import ui
from perfmodel.errors import NotFoundError, PerfmodelError
from perfmodel.sweep.plan import ENGINE_SIZES, SweepPlan, about_duration, plan_from_dict
from perfmodel.sweep.runner import create_sweep, launch_detached, stop_sweep
from perfmodel.ui import analyses, cached
from perfmodel.ui import pagestate as PS
from perfmodel.ui import sweeps as S

home = ui.home()
st.title("Sweeps", anchor=False)
st.caption("Measure your own throughput curves: a grid of batch sizes (local engine) or concurrency levels "
           "(OpenAI-compatible server) x input and output lengths. The sweep runs in a background process, "
           "stores every point as it finishes, and keeps running if this tab closes.")
analyses.page_analysis("sweeps")
PS.restore("sweeps", S.URL_SPEC)
PS.defaults({k: v for k, v in S.URL_SPEC.items() if k != "sweep"})


def _start(plan: SweepPlan) -> None:
    store = ui.open_store(home)
    info = create_sweep(plan, store=store)
    launch_detached(info.id, home=home)
    st.session_state[S.SELECTED] = info.id
    cached.clear_store_caches()


# --- new sweep ----------------------------------------------------------------------------------
table = S.sweeps_table(home, ui.store_stamp(home))
st.session_state.setdefault(S.NEW_OPEN, table.empty)  # open on a first visit while there is no sweep to show
with st.expander("New sweep", icon=":material/play_circle:", key=S.NEW_OPEN, on_change="rerun"):
    form_tab, upload_tab = st.tabs(["Form", "Upload a plan (YAML/JSON)"])
    with form_tab:
        f = S.FIELD
        backend = st.radio("Backend", ["local", "http"], horizontal=True, key=f["backend"],
                           format_func={"local": "Local engine (this machine)",
                                        "http": "OpenAI-compatible server"}.get)
        with st.form(S.FORM, border=True):
            c1, c2, c3 = st.columns(3)
            values: dict = {"backend": backend}
            if backend == "local":
                if st.session_state.get(f["engine_size"]) not in ENGINE_SIZES:
                    st.session_state[f["engine_size"]] = S.FORM_DEFAULTS["engine_size"]
                values["engine_size"] = c1.selectbox(
                    "Engine size", list(ENGINE_SIZES), key=f["engine_size"],
                    help="\n".join(f"- **{k}**: {v.description}" for k, v in ENGINE_SIZES.items()))
                values["engine_threads"] = c2.number_input("Threads", min_value=1, max_value=256,
                                                           key=f["engine_threads"])
                batch_label = "Batch sizes"
            else:
                values["target"] = c1.text_input("Server URL", placeholder="http://127.0.0.1:8000", key=f["target"])
                if st.session_state.get(f["server_type"]) not in S.SERVER_TYPES:
                    st.session_state[f["server_type"]] = S.FORM_DEFAULTS["server_type"]
                # Without it every request is sent with max_tokens only, and a server may stop at EOS early.
                values["server_type"] = c1.selectbox(
                    "Server type", S.SERVER_TYPES, key=f["server_type"], format_func=S.server_type_label,
                    help="Chooses how each request forces the output length (in brackets); "
                         "generic sends max_tokens only.")
                values["model"] = c2.text_input("Model (as served)", key=f["model"])
                values["framework"] = c3.text_input("Framework", placeholder="vllm", key=f["framework"])
                batch_label = "Concurrency levels"
            hardware = cached.hardware_choices(home)
            if st.session_state.get(f["hardware"]) not in hardware:
                st.session_state[f["hardware"]] = list(hardware)[0]
            values["hardware"] = c3.selectbox("Hardware", list(hardware), key=f["hardware"],
                                              format_func=lambda k: f"{hardware[k]} ({k})")
            g1, g2, g3 = st.columns(3)
            grid_help = "Comma-separated integers, 1:64:x2 (geometric) or 128:512:+128 (steps)."
            values["batch_sizes"] = g1.text_input(batch_label, key=f["batch_sizes"], help=grid_help)
            values["input_lens"] = g2.text_input("Input lengths (tokens)", key=f["input_lens"],
                                                 help=grid_help)
            values["output_lens"] = g3.text_input("Output lengths (tokens)", key=f["output_lens"],
                                                  help=grid_help)
            n1, n2, n3, n4, n5 = st.columns(5)
            values["repeats"] = n1.number_input("Repeats", min_value=1, max_value=1000, key=f["repeats"])
            values["warmup"] = n2.number_input("Warm-up", min_value=0, max_value=100, key=f["warmup"])
            values["timeout_s"] = n3.number_input("Timeout per point (s)", min_value=1.0, format="%g",
                                                  key=f["timeout_s"])
            values["retries"] = n4.number_input("Retries", min_value=0, max_value=10, key=f["retries"])
            if backend == "http":
                values["n_requests"] = n5.number_input("Requests per point (0 = 4 x concurrency)", min_value=0,
                                                       key=f["n_requests"])
            values["name"] = st.text_input("Dataset name", placeholder="default: sweep <backend> <model>",
                                           key=f["name"])
            values["confirm_large"] = st.checkbox("Allow more than 10,000 points", key=f["confirm_large"])
            b1, b2 = st.columns([1, 6])
            check = b1.form_submit_button("Check plan", key="sweeps.form.check")
            start = b2.form_submit_button("Start sweep", type="primary", icon=":material/play_arrow:",
                                          key="sweeps.form.start")
        if check or start:
            try:
                plan = S.plan_from_form(values)
                est = plan.estimate()
                if start:
                    _start(plan)
            except PerfmodelError as exc:
                ui.show_error(exc, what="Not started" if start else "The plan is not valid")
            else:
                problem = None if start else S.server_problem(plan)
                if problem is not None:
                    st.warning(f"Plan valid: {est.text()} ({est.basis}); but the server check failed, so a sweep "
                               f"would stop at once: {problem}", icon=":material/warning:")
                else:
                    st.success(f"Plan valid: {est.text()} ({est.basis})." + (" Started." if start else ""),
                               icon=":material/check_circle:")
    with upload_tab:
        uploaded = st.file_uploader("Plan file", type=["yaml", "yml", "json"], key=S.UPLOAD)
        if st.button("Start uploaded plan", disabled=uploaded is None, key="sweeps.upload.start",
                     icon=":material/play_arrow:"):
            try:
                plan = S.plan_from_upload(uploaded.name, uploaded.getvalue())
                _start(plan)
            except PerfmodelError as exc:
                ui.show_error(exc, what="Not started")
            else:
                st.success(f"Started: {plan.estimate().text()}.", icon=":material/check_circle:")

PS.write(S.URL_SPEC)  # the form as last submitted and the selected sweep, for links and saved analyses

# --- past and running sweeps --------------------------------------------------------------------
table = S.sweeps_table(home, ui.store_stamp(home))  # again: a sweep may have started above
st.header("Sweeps", anchor=False)
if table.empty:
    st.info("No sweep yet: fill the form above and press Start.", icon=":material/info:")
    st.stop()
ids = table["id"].tolist()
labels = {r.id: f"{r.name} · {r.status} · {r.done}/{r.points} ({r.id})" for r in table.itertuples()}
st.session_state[S.SELECTED] = S.sweep_id_of(st.session_state.get(S.SELECTED), ids) or ids[0]
st.session_state[S.SELECT_WIDGET] = st.session_state[S.SELECTED]
PS.write(S.URL_SPEC)
# The labels change as a sweep runs: the browser may send back the label it showed ("... · pending · 0/2 (ID)"),
# which no longer names an option, so the choice is read back through the id in it.
st.selectbox("Sweep", ids, key=S.SELECT_WIDGET, format_func=labels.get,
             on_change=lambda: st.session_state.__setitem__(
                 S.SELECTED, S.sweep_id_of(st.session_state[S.SELECT_WIDGET], ids) or st.session_state[S.SELECTED]))


selected_state = table.set_index("id").loc[st.session_state[S.SELECTED], "status"]
resuming = S.resumed_wait(st.session_state[S.SELECTED], selected_state)


@st.fragment(run_every=S.POLL_S if selected_state in S.ACTIVE_STATES or resuming else None)
def progress_panel() -> None:
    """Progress of the selected sweep, polled from the store while it runs."""
    sweep_id = st.session_state[S.SELECTED]
    stamp = ui.store_stamp(home)
    try:
        info = ui.open_store(home).sweep(sweep_id)
    except PerfmodelError as exc:
        ui.show_error(exc, what="Cannot show the sweep")
        return
    state = info.state
    if selected_state in S.ACTIVE_STATES and state not in S.ACTIVE_STATES:
        # It has just ended: only this fragment reruns while polling, so without a full rerun the sweep
        # selector and the table below would still say "pending"/"running" and the polling would go on.
        st.rerun()
    if resuming and (state != selected_state or not S.resumed_wait(sweep_id, selected_state)):
        # The resumed process took the sweep up (or never did): draw the page anew, polling as its state says.
        st.session_state.pop(S.RESUMED, None)
        st.rerun()
    if resuming:
        st.caption("Resumed: waiting for the sweep's process to take it up...")
    finished = info.n_done + info.n_failed
    st.progress(finished / info.n_points if info.n_points else 1.0,
                text=f"**{state}**: {info.n_done} done, {info.n_failed} failed, "
                     f"{info.n_remaining} to go of {info.n_points} points")
    points = S.sweep_points_table(home, info.id, stamp)
    if state in S.ACTIVE_STATES and (eta_s := S.eta_s(points)) is not None:
        left = about_duration(eta_s)
        st.caption(f"{left[:1].upper() + left[1:]} left at the pace so far.")
    if info.error and state != "done":
        st.warning(f"{state}: {info.error}", icon=":material/warning:")
    a1, a2, _ = st.columns([1, 1, 5])
    if state == "running" and a1.button("Stop", key="sweeps.stop", icon=":material/stop:"):
        stop_sweep(info.id, store=ui.open_store(home))
        st.toast("Stop requested: the point in flight finishes first.")
    if not info.dataset_exists:
        # Its rows would have nowhere to go: offer the same plan as a new sweep instead of a Resume that fails.
        if state not in S.ACTIVE_STATES and a2.button("Run again", key="sweeps.again", icon=":material/replay:",
                                                      help="Start this sweep's plan as a new sweep with a new "
                                                           "dataset."):
            try:
                _start(plan_from_dict(info.plan))
            except PerfmodelError as exc:
                ui.show_error(exc, what="Not started")
            else:
                st.rerun()
    elif state in ("stopped", "interrupted", "failed") or (state == "pending" and not info.alive and info.pid):
        if info.n_remaining and a2.button("Resume", key="sweeps.resume", icon=":material/replay:"):
            try:
                launch_detached(info.id, home=home)
            except PerfmodelError as exc:
                ui.show_error(exc, what="Not resumed")
            else:
                st.session_state[S.RESUMED] = (info.id, time.time())
                st.rerun()  # the polling is chosen as the page is drawn: it had stayed off, the page on "stopped"
    if not info.dataset_exists:
        st.info(f"This sweep's dataset (`{info.dataset_id}`) was deleted, so there is no curve to show and the "
                "sweep cannot resume; **Run again** starts its plan as a new sweep.", icon=":material/delete:")
    elif info.n_done:
        try:
            st.plotly_chart(S.sweep_figure(home, info.dataset_id, stamp, finished=state not in S.ACTIVE_STATES),
                            key="sweeps.chart")
        except NotFoundError:  # deleted since the sweep was read
            st.info(f"This sweep's dataset (`{info.dataset_id}`) was deleted, so there is no curve to show.",
                    icon=":material/delete:")
    failed = points[points["status"] == "failed"]
    if len(failed):
        st.subheader(f"Failed points ({len(failed)})", anchor=False)
        st.dataframe(failed[["key", "attempts", "error"]], hide_index=True, placeholder="—")
    log = S.sweep_log_tail(home, info.id)
    if log:
        with st.expander("Process output"):
            st.code(log, language=None)


progress_panel()

st.subheader("All sweeps", anchor=False)
st.dataframe(table, hide_index=True, placeholder="—", column_order=("name", "status", "done", "failed", "points", "backend", "created",
                                                   "updated", "id", "dataset_id", "error"),
             column_config={"created": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm:ss"),
                            "updated": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm:ss")})
