"""Saved analyses in the store: unguessable ids, exact round trip, list/rename/delete, survival across reopen."""

from __future__ import annotations

import pytest

from perfmodel.errors import NotFoundError, StoreError
from perfmodel.store import Store


def test_save_get_list_rename_delete(tmp_path) -> None:  # noqa: ANN001
    store = Store(tmp_path)
    state = {"dataset": "abc", "filters": {"hardware": ["h100-sxm"]}, "rate": 200.5, "name": "<script>x</script>"}
    a = store.save_analysis("my plan", "planner", state)
    b = store.save_analysis("other", "curves", {"x": 1})
    assert len(a.id) == 16 and a.id != b.id and set(a.id) <= set(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    # A new Store object on the same file (an app restart) reads the same state, exactly.
    again = Store(tmp_path).analysis(a.id)
    assert again.payload == state and again.kind == "planner" and again.name == "my plan"
    assert [x.id for x in store.analyses()] == [b.id, a.id]
    assert [x.id for x in store.analyses("planner")] == [a.id]
    assert store.rename_analysis(a.id, "renamed").name == "renamed"
    assert store.analysis(a.id).payload == state
    store.delete_analysis(a.id)
    with pytest.raises(NotFoundError, match="no saved analysis"):
        store.analysis(a.id)
    with pytest.raises(NotFoundError):
        store.analysis(b.id[:6])  # ids are never matched by prefix
    with pytest.raises(NotFoundError):
        store.delete_analysis(a.id)


def test_bad_inputs(tmp_path) -> None:  # noqa: ANN001
    store = Store(tmp_path)
    with pytest.raises(StoreError, match="non-empty name"):
        store.save_analysis("  ", "planner", {})
    with pytest.raises(StoreError, match="JSON"):
        store.save_analysis("x", "planner", {"v": float("nan")})
    a = store.save_analysis("x", "planner", {})
    with pytest.raises(StoreError, match="empty"):
        store.rename_analysis(a.id, "")


def test_ids_never_look_like_command_line_options(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    """`perfmodel report ID` broke in CI when a random id began with '-' (read as an option)."""
    import secrets

    draws = iter(["-HbadId0123456789", "_alsoBad012345678", "good0123456789ab"])
    monkeypatch.setattr(secrets, "token_urlsafe", lambda n: next(draws))
    info = Store(tmp_path).save_analysis("x", "planner", {"a": 1})
    assert info.id == "good0123456789ab"


def test_saving_the_same_state_twice_keeps_one_analysis(tmp_path) -> None:  # noqa: ANN001
    """Enter in the name field sent the save form, and then its button sent it again: two identical analyses."""
    store = Store(tmp_path)
    a = store.save_analysis("h200 plan", "planner", {"rate": 1})
    assert store.save_analysis("h200 plan", "planner", {"rate": 1}).id == a.id
    assert len(store.analyses()) == 1
    # Another name, page or state is another analysis.
    ids = {store.save_analysis("h200 plan", "planner", {"rate": 2}).id,
           store.save_analysis("other", "planner", {"rate": 1}).id,
           store.save_analysis("h200 plan", "curves", {"rate": 1}).id}
    assert a.id not in ids and len(ids) == 3 and len(store.analyses()) == 4
