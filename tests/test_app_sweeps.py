"""The Sweeps page, headless (AppTest): form validation, a real short sweep started in the background, resume."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from perfmodel.store import Store
from perfmodel.sweep.plan import plan_from_dict
from perfmodel.sweep.runner import create_sweep
from perfmodel.ui import sweeps as S

REPO = Path(__file__).resolve().parents[1]
APP = str(REPO / "app.py")
PAGE = "pages/sweeps.py"
TIMEOUT_S = 60
# The micro engine: a few seconds for the whole sweep, torch import included.
WAIT_S = 120


def _page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT_S)
    at.run()
    return at.switch_page(PAGE).run()


def _no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def _need_engine() -> None:
    for name in ("torch", "transformers"):
        pytest.importorskip(name, reason=f"the local engine needs {name}")


def _wait_until(pred, what: str) -> None:  # noqa: ANN001
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def test_page_renders_with_no_sweep() -> None:
    at = _page()
    _no_exception(at)
    assert [t.value for t in at.title] == ["Sweeps"]
    assert any("No sweep yet" in i.value for i in at.info)


def test_form_errors_name_options_and_valid_values() -> None:
    at = _page()
    f = S.FIELD
    at.text_input(key=f["batch_sizes"]).set_value("0,4")
    at.text_input(key=f["output_lens"]).set_value("banana")
    at.button(key="sweeps.form.check").click().run()
    _no_exception(at)
    assert at.error, "no error shown"
    msg = at.error[0].value
    # In the form's words: its labels, not the plan file's options, and the headline said once.
    assert "Batch sizes: " in msg and "0 out of range" in msg
    assert "Output lengths (tokens): " in msg and "'banana'" in msg
    assert "batch_sizes" not in msg and msg.lower().count("not valid") == 1
    assert Store().sweeps() == []  # nothing was started

    at.radio(key=f["backend"]).set_value("http").run()
    at.text_input(key=f["model"]).set_value("m")
    at.button(key="sweeps.form.check").click().run()
    msg = at.error[0].value
    assert "Server URL: " in msg and "none was given" in msg and "None" not in msg and "Concurrency levels" in msg
    # a server that does not answer: not "Plan valid" alone (Start then failed at once)
    at.text_input(key=f["target"]).set_value("http://127.0.0.1:9/v1")
    at.text_input(key=f["batch_sizes"]).set_value("1,2")
    at.text_input(key=f["output_lens"]).set_value("8")
    at.button(key="sweeps.form.check").click().run()
    _no_exception(at)
    assert not at.error and not at.success, [e.value for e in at.error]
    assert any("server check failed" in w.value and "cannot reach the server" in w.value for w in at.warning)
    at.radio(key=f["backend"]).set_value("local").run()

    at.text_input(key=f["batch_sizes"]).set_value("1:64:x2")
    at.text_input(key=f["output_lens"]).set_value("32")
    at.button(key="sweeps.form.check").click().run()
    assert not at.error
    assert at.success and "21 points" in at.success[0].value  # 7 batch sizes x 3 repeats
    assert Store().sweeps() == []


def test_start_runs_in_background_and_progress_shows_curve() -> None:
    _need_engine()
    at = _page()
    f = S.FIELD
    at.selectbox(key=f["engine_size"]).set_value("micro")
    at.text_input(key=f["batch_sizes"]).set_value("1,2,4")
    at.text_input(key=f["input_lens"]).set_value("8")
    at.text_input(key=f["output_lens"]).set_value("4")
    at.number_input(key=f["repeats"]).set_value(1)
    at.text_input(key=f["name"]).set_value("page sweep")
    at.button(key="sweeps.form.start").click().run()
    _no_exception(at)
    assert not at.error, [e.value for e in at.error]
    (info,) = Store().sweeps()
    assert info.name == "page sweep" and info.n_points == 3
    # The sweep runs in its own process: the page only polls the store.
    _wait_until(lambda: Store().sweep(info.id).state == "done", "the background sweep to finish")
    at.run()
    _no_exception(at)
    bar = at.get("progress")[0]
    assert "done" in bar.proto.text and "3 done, 0 failed" in bar.proto.text
    assert at.get("plotly_chart"), "no curve drawn"
    assert Store().dataset(info.dataset_id).n_runs == 3
    table = at.dataframe[-1].value
    assert table.loc[0, "status"] == "done" and table.loc[0, "done"] == 3


def test_resume_button_finishes_an_interrupted_sweep() -> None:
    _need_engine()
    plan = plan_from_dict({"engine_size": "micro", "batch_sizes": [1, 2], "input_lens": [8], "output_lens": [4],
                           "repeats": 1, "name": "half done"})
    info = create_sweep(plan)
    # As if a process that died had claimed it: running, with a pid that no longer exists.
    store = Store()
    store.claim_sweep(info.id, 2**22 + 12345)
    at = _page()
    _no_exception(at)
    assert "interrupted" in at.get("progress")[0].proto.text
    at.button(key="sweeps.resume").click().run()
    _no_exception(at)
    # The page polls the resumed sweep though it was drawn "interrupted" (it had stayed on "stopped" until
    # reloaded): waiting for its process, or already following it.
    waiting = any("waiting for the sweep's process" in c.value for c in at.caption)
    assert waiting == (S.RESUMED in at.session_state), [c.value for c in at.caption]
    assert waiting or Store().sweep(info.id).state in ("pending", "running", "done")
    assert not [b for b in at.button if b.key == "sweeps.resume"] or waiting
    _wait_until(lambda: Store().sweep(info.id).state == "done", "the resumed sweep to finish")
    assert Store().sweep(info.id).n_done == 2
    at.run()
    assert "2 done" in at.get("progress")[0].proto.text


def test_http_form_carries_the_server_type() -> None:
    # Without it the page could only send max_tokens: a server may then stop at EOS before the asked length.
    http = S.plan_from_form({**S.FORM_DEFAULTS, "backend": "http", "target": "http://127.0.0.1:8000",
                             "server_type": "transformers"})
    assert http.server_type == "transformers" and http.backend == "http"
    local = S.plan_from_form({**S.FORM_DEFAULTS, "server_type": "vllm"})
    assert local.server_type is None and local.backend == "local"
    assert S.server_type_label("vllm") == "vllm (ignore_eos)"


def test_http_form_offers_the_server_types() -> None:
    at = _page()
    at.radio(key=S.FIELD["backend"]).set_value("http").run()
    _no_exception(at)
    box = at.selectbox(key=S.FIELD["server_type"])
    assert box.value == "generic"
    assert box.options == [S.server_type_label(t) for t in S.SERVER_TYPES]


def test_sweep_whose_dataset_was_deleted_says_so_and_shows_the_rest() -> None:
    # Deleting a sweep's dataset on the Data page made this page raise NotFoundError from the curve and
    # hid the "All sweeps" table below it.
    plan = plan_from_dict({"engine_size": "micro", "batch_sizes": [1, 2], "input_lens": [8], "output_lens": [4],
                           "repeats": 1, "name": "deleted data"})
    info = create_sweep(plan)
    store = Store()
    for p in plan.points():
        store.record_point(info.id, p.key, status="done", attempts=1)
    store.set_sweep_status(info.id, "done")
    store.delete_dataset(info.dataset_id)
    at = _page()
    _no_exception(at)
    assert "2 done" in at.get("progress")[0].proto.text
    assert any("was deleted" in i.value and info.dataset_id in i.value for i in at.info)
    assert not at.get("plotly_chart")
    assert [s.value for s in at.subheader] == ["All sweeps"]
    assert at.dataframe[-1].value.loc[0, "id"] == info.id
    assert at.dataframe[-1].value.loc[0, "error"] == ""  # no error: an empty cell, not the word None


def test_a_stopped_sweep_whose_dataset_was_deleted_offers_run_again_not_resume() -> None:
    # Guards: Resume was offered and "Resumed." toasted, then every point failed in the background.
    _need_engine()
    plan = plan_from_dict({"engine_size": "micro", "batch_sizes": [1, 2], "input_lens": [8], "output_lens": [4],
                           "repeats": 1, "name": "gone"})
    info = create_sweep(plan)
    store = Store()
    store.record_point(info.id, plan.points()[0].key, status="done", attempts=1)
    store.set_sweep_status(info.id, "stopped")
    store.delete_dataset(info.dataset_id)
    at = _page()
    _no_exception(at)
    assert not [b for b in at.button if b.key == "sweeps.resume"]
    assert any("cannot resume" in i.value for i in at.info)
    at.button(key="sweeps.again").click().run()
    _no_exception(at)
    fresh = [s for s in Store().sweeps() if s.id != info.id]
    assert len(fresh) == 1 and fresh[0].plan == info.plan and fresh[0].dataset_exists
    _wait_until(lambda: Store().sweep(fresh[0].id).state == "done", "the new sweep to finish")
    assert Store().sweep(fresh[0].id).n_done == 2 and len(Store().runs(fresh[0].dataset_id)) == 2


def test_a_label_sent_back_after_it_changed_still_names_its_sweep() -> None:
    # The selector's labels carry the sweep's status and progress; the browser sent back the label it had shown
    # ("... · pending · 0/2 (ID)") after the sweep moved on, Streamlit passed that string through as the value,
    # and the page said "no sweep 'browser sweep · pending · 0/2 (...)'" (seen in the browser test).
    ids = ["1a7e7dfcfaaac0d6", "00ff00ff00ff00ff"]
    assert S.sweep_id_of("1a7e7dfcfaaac0d6", ids) == "1a7e7dfcfaaac0d6"
    assert S.sweep_id_of("browser sweep · pending · 0/2 (1a7e7dfcfaaac0d6)", ids) == "1a7e7dfcfaaac0d6"
    assert S.sweep_id_of("a (b) · done · 2/2 (00ff00ff00ff00ff)", ids) == "00ff00ff00ff00ff"
    assert S.sweep_id_of("gone · done · 1/1 (deadbeefdeadbeef)", ids) is None
    assert S.sweep_id_of(None, ids) is None and S.sweep_id_of("", ids) is None


def test_a_resumed_sweep_is_polled_until_its_process_takes_it_up(monkeypatch: pytest.MonkeyPatch) -> None:
    state: dict = {}
    monkeypatch.setattr(S.st, "session_state", state)
    assert not S.resumed_wait("a", "stopped", now=100.0)  # not resumed: no polling
    state[S.RESUMED] = ("a", 100.0)
    assert S.resumed_wait("a", "stopped", now=101.0) and S.resumed_wait("a", "interrupted", now=159.0)
    assert not S.resumed_wait("a", "stopped", now=100.0 + S.RESUME_WAIT_S)  # its process never came
    assert not S.resumed_wait("b", "stopped", now=101.0)  # another sweep selected
    assert not S.resumed_wait("a", "running", now=101.0)  # polled as any running sweep is
