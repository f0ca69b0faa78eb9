"""The sweep runner: a fast fake backend for the bookkeeping, the real local engine for the acceptance curve."""

from __future__ import annotations

import threading
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pytest

from perfmodel.curves import fit_curve
from perfmodel.errors import PerfmodelError, StoreError
from perfmodel.store import Store
from perfmodel.sweep.backend import Backend, PointResult, SweepPoint
from perfmodel.sweep.plan import plan_from_dict
from perfmodel.sweep.runner import ProgressEvent, create_sweep, run_sweep

PLAN = {"batch_sizes": [1, 2, 4, 8], "input_lens": [16], "output_lens": [8], "repeats": 2, "retries": 1,
        "engine_size": "micro", "name": "fake sweep"}


class FakeBackend(Backend):
    """Throughput 100 x b / (1 + b / 4) tok/s; points listed in ``fail`` fail (``flaky`` only on the first try)."""

    name: ClassVar[str] = "fake"

    def __init__(self, fail: set[str] = frozenset(), flaky: set[str] = frozenset(),
                 stop_after: int | None = None, stop: threading.Event | None = None) -> None:
        self.fail, self.flaky, self.calls = set(fail), set(flaky), []
        self.stop_after, self.stop = stop_after, stop

    def run_point(self, point: SweepPoint, *, cancel: threading.Event) -> PointResult:
        self.calls.append(point.key)
        if self.stop is not None and self.stop_after is not None and len(self.calls) >= self.stop_after:
            self.stop.set()  # as if Stop were pressed while this point runs
        if point.key in self.fail:
            raise ConnectionError("connection dropped")
        if point.key in self.flaky:
            self.flaky.discard(point.key)
            return PointResult(point, None, "HTTP 500: internal error")
        b, n_out = point.batch_size, point.output_len_tok
        tok_s = 100.0 * b / (1 + b / 4)
        e2e_s = b * n_out / tok_s
        row: dict[str, Any] = {"framework": "fakeserve", "output_throughput_tok_s": tok_s, "e2e_latency_s": e2e_s,
                               "ttft_s": e2e_s / 10, "n_requests": b, "n_failed": 0, "source_format": "fake",
                               "fw_queue_depth": float(b)}
        return PointResult(point, row, None, n_ok=b)


def _sweep(**over: Any) -> tuple[str, Store]:
    store = Store()
    return create_sweep(plan_from_dict({**PLAN, **over}), store=store).id, store


def test_points_stored_in_order_with_plan_identity_and_progress() -> None:
    sid, store = _sweep()
    events: list[ProgressEvent] = []
    result = run_sweep(sid, store=store, backend=FakeBackend(), on_progress=events.append)
    assert (result.status, result.n_done, result.n_failed, result.n_measured) == ("done", 8, 0, 8)
    runs = store.runs(result.dataset_id)
    assert store.dataset(result.dataset_id).n_runs == len(runs) == 8
    # the format its rows came in, once (the Data page's "formats" cell of a sweep had been empty)
    assert store.dataset(result.dataset_id).formats == tuple(pd.unique(runs["source_format"])) != ()
    assert runs["batch_size"].tolist() == [1, 2, 4, 8, 1, 2, 4, 8]  # interleaved repeats
    assert runs["repeat_idx"].tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert set(runs["hardware"]) == {"cpu-x86-2vcpu"} and set(runs["model"]) == {"perfmodel-micro-llama"}
    assert set(runs["framework"]) == {"fakeserve"} and set(runs["load_kind"]) == {"static_batch"}
    assert runs["fw_queue_depth"].tolist() == [1, 2, 4, 8] * 2
    assert runs["output_throughput_tok_s"].iloc[3] == pytest.approx(800 / 3)
    kinds = [e.kind for e in events]
    assert kinds[0] == "start" and kinds[-1] == "finish" and kinds.count("point") == 8
    pts = [e for e in events if e.kind == "point"]
    assert [e.done for e in pts] == list(range(1, 9)) and {e.total for e in pts} == {8}
    assert pts[-1].eta_s == 0 and pts[0].eta_s > 0 and pts[2].throughput_tok_s == pytest.approx(200.0)
    assert pts[0].row is not None and pts[0].row["batch_size"] == 1
    assert events[-1].status == "done"


class NamedBackend(FakeBackend):
    """Rows name their model, as the HTTP backend does (model_label, else the served name)."""

    def __init__(self, model: str) -> None:
        super().__init__()
        self.model = model

    def run_point(self, point: SweepPoint, *, cancel: threading.Event) -> PointResult:
        res = super().run_point(point, cancel=cancel)
        assert res.row is not None
        return PointResult(point, {**res.row, "model": self.model, "model_raw": "/srv/models/x"}, None, n_ok=res.n_ok)


@pytest.mark.parametrize(("backend_model", "expected"), [
    ("Meta-Llama-3-8B", "llama-3-8b"),  # a catalog alias resolves to the key
    ("my-served-model", "my-served-model"),  # not in the catalog: kept, not "unknown"
])
def test_http_plan_without_model_keeps_the_backends_model_name(backend_model: str, expected: str) -> None:
    store = Store()
    plan = plan_from_dict({"backend": "http", "target": "http://127.0.0.1:9", "batch_sizes": [1, 2],
                           "input_lens": [16], "output_lens": [8], "repeats": 1, "name": "named"})
    result = run_sweep(create_sweep(plan, store=store).id, store=store, backend=NamedBackend(backend_model))
    runs = store.runs(result.dataset_id)
    assert set(runs["model"]) == {expected} and set(runs["model_raw"]) == {"/srv/models/x"}
    # a plan that names its model still wins over the backend's name
    plan = plan_from_dict({**plan.model_dump(), "model": "perfmodel-tiny-llama", "name": "named 2"})
    result = run_sweep(create_sweep(plan, store=store).id, store=store, backend=NamedBackend(backend_model))
    assert set(store.runs(result.dataset_id)["model"]) == {"perfmodel-tiny-llama"}


def test_failures_retried_recorded_and_the_sweep_carries_on() -> None:
    sid, store = _sweep()
    backend = FakeBackend(fail={"b4-i16-o8-r0"}, flaky={"b2-i16-o8-r1"})
    events: list[ProgressEvent] = []
    result = run_sweep(sid, store=store, backend=backend, on_progress=events.append)
    assert (result.status, result.n_done, result.n_failed) == ("done", 7, 1)
    assert backend.calls.count("b4-i16-o8-r0") == 2 and backend.calls.count("b2-i16-o8-r1") == 2
    pts = store.sweep_points(sid).set_index("key")
    assert pts.loc["b4-i16-o8-r0", "status"] == "failed" and pts.loc["b4-i16-o8-r0", "attempts"] == 2
    assert pts.loc["b4-i16-o8-r0", "error"] == "ConnectionError: connection dropped"
    assert pts.loc["b2-i16-o8-r1", "status"] == "done" and pts.loc["b2-i16-o8-r1", "attempts"] == 2
    assert [e.error for e in events if e.kind == "retry"] == ["ConnectionError: connection dropped",
                                                             "HTTP 500: internal error"]
    assert len(store.runs(result.dataset_id)) == 7
    # Failed points are finished: resuming runs nothing unless asked to retry them.
    again = run_sweep(sid, store=store, backend=FakeBackend())
    assert again.n_measured == 0 and again.n_failed == 1
    retried = run_sweep(sid, store=store, backend=FakeBackend(), retry_failed=True)
    assert (retried.n_measured, retried.n_done, retried.n_failed) == (1, 8, 0)
    assert len(store.runs(result.dataset_id)) == 8


def test_every_point_failing_marks_the_sweep_failed() -> None:
    sid, store = _sweep(retries=0, repeats=1)
    keys = {f"b{b}-i16-o8-r0" for b in (1, 2, 4, 8)}
    result = run_sweep(sid, store=store, backend=FakeBackend(fail=keys))
    assert result.status == "failed" and "every point failed" in (result.error or "")
    assert store.sweep(sid).state == "failed"


def test_stop_finishes_the_point_in_flight_then_resume_completes_without_repeats() -> None:
    sid, store = _sweep()
    stop = threading.Event()
    first = run_sweep(sid, store=store, backend=FakeBackend(stop_after=3, stop=stop), stop=stop)
    assert (first.status, first.n_done) == ("stopped", 3)
    assert store.sweep(sid).state == "stopped"
    backend = FakeBackend()
    second = run_sweep(sid, store=store, backend=backend)
    assert second.status == "done" and backend.calls[0] == "b8-i16-o8-r0" and len(backend.calls) == 5
    runs = store.runs(second.dataset_id)
    assert len(runs) == 8 and not runs.duplicated(["batch_size", "repeat_idx"]).any()


def test_invalid_rows_are_failures_and_points_cannot_be_stored_twice() -> None:
    class Bad(FakeBackend):
        def run_point(self, point: SweepPoint, *, cancel: threading.Event) -> PointResult:
            return PointResult(point, {"output_throughput_tok_s": -5.0}, None)

    sid, store = _sweep(retries=0, repeats=1, batch_sizes=[1])
    result = run_sweep(sid, store=store, backend=Bad())
    assert result.status == "failed"
    assert "not valid" in store.sweep_points(sid)["error"].iloc[0]
    sid, store = _sweep(repeats=1, batch_sizes=[1])
    run_sweep(sid, store=store, backend=FakeBackend())
    with pytest.raises(StoreError, match="already done"):
        store.record_point(sid, "b1-i16-o8-r0", status="done", attempts=1)


def test_unknown_hardware_and_a_live_owner_are_refused() -> None:
    with pytest.raises(PerfmodelError, match="unknown hardware"):
        _sweep(hardware="quantum-toaster-9000")
    sid, store = _sweep()
    import os

    store.claim_sweep(sid, os.getppid())  # a live process that is not us
    with pytest.raises(StoreError, match="already running"):
        run_sweep(sid, store=store, backend=FakeBackend())


def test_a_sweep_whose_dataset_was_deleted_is_not_resumed(tmp_path) -> None:  # noqa: ANN001
    # Guards: resuming such a sweep claimed it and every point then failed in the background (its rows had
    # nowhere to go) while the page had said "Resumed".
    from perfmodel.errors import NotFoundError
    from perfmodel.sweep.runner import launch_detached, sweep_log_path

    sid, store = _sweep()
    stop = threading.Event()
    run_sweep(sid, store=store, backend=FakeBackend(stop_after=1, stop=stop), stop=stop)
    before = store.sweep(sid)
    assert before.state == "stopped" and before.n_done == 1 and before.dataset_exists
    store.delete_dataset(before.dataset_id)
    after = store.sweep(sid)
    assert not after.dataset_exists
    with pytest.raises(NotFoundError, match=r"cannot resume: its dataset .* was deleted with the 1 point"):
        run_sweep(sid, store=store, backend=FakeBackend())
    home = store.path.parent
    with pytest.raises(NotFoundError, match="Run again"):
        launch_detached(sid, home=home)
    assert not sweep_log_path(home, sid).exists()  # no process was started
    now = store.sweep(sid)  # nothing changed
    assert (now.status, now.pid, now.error, now.n_done) == (before.status, before.pid, before.error, 1)


def test_imported_datasets_stay_immutable(tmp_path) -> None:  # noqa: ANN001
    from perfmodel.api import import_files

    src = tmp_path / "one.csv"
    src.write_text("hardware,device_count,framework,model,input_len_tok,output_len_tok,load_kind,batch_size,"
                   "output_throughput_tok_s,repeat_idx,source_format\n"
                   "cpu-x86-2vcpu,1,vllm,perfmodel-tiny-llama,64,32,static_batch,1,100,0,x\n")
    info, _ = import_files([src], format="canonical")
    store = Store()
    with pytest.raises(StoreError, match="immutable"):
        store.append_runs(info.id, store.runs(info.id))
    empty = store.create_dataset("grows", {"note": "test"})
    grown = store.append_runs(empty.id, store.runs(info.id))
    grown = store.append_runs(empty.id, store.runs(info.id))
    assert grown.n_runs == 2 and len(store.runs(empty.id)) == 2


def test_real_local_engine_over_batch_1_to_32_rises_then_flattens() -> None:
    """The issue's acceptance: the tiny engine on this CPU saturates, and the curve fit succeeds on it."""
    for name in ("torch", "transformers"):
        pytest.importorskip(name, reason=f"the local engine needs {name}")
    plan = plan_from_dict({"engine_size": "tiny", "batch_sizes": "1:32:x2", "input_lens": [64],
                           "output_lens": [8], "repeats": 2, "name": "acceptance"})
    store = Store()
    result = run_sweep(create_sweep(plan, store=store).id, store=store)
    assert (result.status, result.n_done) == ("done", 12)
    runs = store.runs(result.dataset_id)
    assert set(runs["source_format"]) == {"perfmodel-local-engine"} and set(runs["model"]) == {"perfmodel-tiny-llama"}
    mean = runs.groupby("batch_size")["output_throughput_tok_s"].median()
    # Rising: batching pays at first. Flattening: doubling 16 -> 32 gains far less than 2x.
    # (Loose bounds: the 2-core test machine is shared, so single points are noisy.)
    assert mean[8] > 1.8 * mean[1], mean
    assert mean[32] / mean[16] < 1.5, mean
    fit = fit_curve(runs["batch_size"], runs["output_throughput_tok_s"], intervals="none")
    assert fit.success, fit.message
    lo, hi = fit.predict([1.0, 32.0])
    assert np.isfinite(hi) and hi > 1.8 * lo, fit
