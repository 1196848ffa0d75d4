"""Watches are one-shot, per kind, and fire exactly as ZooKeeper's (embedded backend).

Every check waits for the session's callback thread to run what was queued
(`wait_callbacks`), so "fired once and only once" does not depend on timing.
"""

from __future__ import annotations

import threading

import pytest

from kt.metadata.embedded import EmbeddedSession, EmbeddedStore
from kt.metadata.store import EventType, NoNodeError, SessionState, WatchedEvent
from tests.metadata.conftest import Recorder


def settle(*sessions: EmbeddedSession) -> None:
    for s in sessions:
        assert s.wait_callbacks()


def test_get_watch_fires_changed_once(session: EmbeddedSession, recorder: Recorder) -> None:
    session.create("/a", b"0")
    session.get("/a", watch=recorder)
    session.set("/a", b"1")
    session.set("/a", b"2")
    settle(session)
    assert recorder.events == [("CHANGED", "/a")]


def test_get_watch_fires_deleted(session: EmbeddedSession, recorder: Recorder) -> None:
    session.create("/a")
    session.get("/a", watch=recorder)
    session.delete("/a")
    settle(session)
    assert recorder.events == [("DELETED", "/a")]


def test_exists_watch_on_a_missing_node_fires_created(
    session: EmbeddedSession, other: EmbeddedSession, recorder: Recorder
) -> None:
    assert other.exists("/controller", watch=recorder) is None
    session.create("/controller", b"1", ephemeral=True)
    session.delete("/controller")
    settle(other)
    assert recorder.events == [("CREATED", "/controller")]


def test_exists_watch_on_a_present_node_fires_on_set_or_delete(
    session: EmbeddedSession, recorder: Recorder
) -> None:
    session.create("/a")
    session.exists("/a", watch=recorder)
    session.delete("/a")
    session.create("/a")
    settle(session)
    assert recorder.events == [("DELETED", "/a")]


def test_child_watch_fires_child_on_create_and_delete_once(
    session: EmbeddedSession, recorder: Recorder
) -> None:
    session.ensure_path("/brokers/ids")
    session.get_children("/brokers/ids", watch=recorder)
    session.create("/brokers/ids/1", ephemeral=True)
    session.create("/brokers/ids/2", ephemeral=True)
    settle(session)
    assert recorder.events == [("CHILD", "/brokers/ids")]
    session.get_children("/brokers/ids", watch=recorder)
    session.delete("/brokers/ids/2")
    settle(session)
    assert recorder.events == [("CHILD", "/brokers/ids")] * 2


def test_child_watch_ignores_data_changes_of_parent_and_children(
    session: EmbeddedSession, recorder: Recorder
) -> None:
    session.ensure_path("/p/c")
    session.get_children("/p", watch=recorder)
    session.set("/p", b"x")
    session.set("/p/c", b"y")
    session.ensure_path("/p/c/grandchild")
    settle(session)
    assert recorder.events == []


def test_child_watch_fires_deleted_when_the_node_itself_goes(
    session: EmbeddedSession, recorder: Recorder
) -> None:
    session.create("/p")
    session.get_children("/p", watch=recorder)
    session.delete("/p")
    settle(session)
    assert recorder.events == [("DELETED", "/p")]


def test_data_watch_ignores_children(session: EmbeddedSession, recorder: Recorder) -> None:
    session.create("/p")
    session.get("/p", watch=recorder)
    session.create("/p/c")
    settle(session)
    assert recorder.events == []


def test_get_on_a_missing_node_leaves_no_watch(
    session: EmbeddedSession, recorder: Recorder
) -> None:
    for call in (session.get, session.get_children):
        with pytest.raises(NoNodeError):
            call("/a", watch=recorder)
    session.create("/a")
    session.create("/a/b")
    settle(session)
    assert recorder.events == []


def test_the_same_callback_fires_once_per_kind(
    session: EmbeddedSession, recorder: Recorder
) -> None:
    session.create("/a")
    session.get("/a", watch=recorder)
    session.exists("/a", watch=recorder)
    session.get_children("/a", watch=recorder)
    session.delete("/a")
    settle(session)
    # kazoo pops the data watchers and the child watchers of "/a": one call each.
    assert recorder.events == [("DELETED", "/a"), ("DELETED", "/a")]


def test_distinct_callbacks_and_sessions_each_fire(
    session: EmbeddedSession, other: EmbeddedSession
) -> None:
    first, second, third = Recorder(), Recorder(), Recorder()
    session.create("/a")
    session.get("/a", watch=first)
    session.get("/a", watch=second)
    other.exists("/a", watch=third)
    other.set("/a", b"1")
    settle(session, other)
    assert first.events == second.events == third.events == [("CHANGED", "/a")]


def test_events_carry_kazoo_fields(session: EmbeddedSession) -> None:
    seen: list[WatchedEvent] = []
    session.exists("/a", watch=seen.append)
    session.create("/a")
    settle(session)
    assert seen == [WatchedEvent(EventType.CREATED, "CONNECTED", "/a")]
    assert seen[0].type == "CREATED"


def test_callbacks_run_in_change_order_off_the_callers_thread(session: EmbeddedSession) -> None:
    calls: list[tuple[str, str, bool]] = []
    caller = threading.current_thread()

    def watch(event: WatchedEvent) -> None:
        calls.append((str(event.type), event.path, threading.current_thread() is caller))

    session.ensure_path("/p")
    for i in range(5):
        session.exists(f"/p/{i}", watch=watch)
    session.get_children("/p", watch=watch)
    for i in range(5):
        session.create(f"/p/{i}")
    settle(session)
    assert calls == [("CREATED", "/p/0", False), ("CHILD", "/p", False)] + [
        ("CREATED", f"/p/{i}", False) for i in range(1, 5)
    ]


def test_a_callback_may_call_the_store_and_rearm_its_watch(session: EmbeddedSession) -> None:
    seen: list[list[str]] = []

    def on_children(_event: WatchedEvent) -> None:
        seen.append(session.get_children("/brokers/ids", watch=on_children))

    session.ensure_path("/brokers/ids")
    session.get_children("/brokers/ids", watch=on_children)
    session.create("/brokers/ids/0")
    settle(session)
    session.create("/brokers/ids/1")
    settle(session)
    assert seen == [["0"], ["0", "1"]]


def test_a_failing_callback_does_not_stop_the_others(session: EmbeddedSession) -> None:
    recorder = Recorder()

    def boom(_event: WatchedEvent) -> None:
        raise RuntimeError("callback bug")

    session.create("/a")
    session.get("/a", watch=boom)
    session.get("/a", watch=recorder)
    session.set("/a", b"1")
    settle(session)
    assert recorder.events == [("CHANGED", "/a")]


def test_closing_a_session_fires_others_watches_on_its_ephemerals(
    session: EmbeddedSession, other: EmbeddedSession
) -> None:
    controller, ids, own = Recorder(), Recorder(), Recorder()
    session.ensure_path("/brokers/ids")
    session.create("/brokers/ids/0", ephemeral=True)
    session.create("/controller", b"0", ephemeral=True)
    session.exists("/controller", watch=own)  # the closing session's own watches go silently
    other.exists("/controller", watch=controller)
    other.get_children("/brokers/ids", watch=ids)
    session.close()
    settle(other)
    assert controller.events == [("DELETED", "/controller")]
    assert ids.events == [("CHILD", "/brokers/ids")]
    assert own.events == []
    assert other.get_children("/brokers/ids") == []


def test_listeners_hear_lost_on_close(store: EmbeddedStore) -> None:
    s = store.session()
    states: list[SessionState] = []
    done = threading.Event()
    s.add_listener(states.append)
    s.add_listener(lambda _state: done.set())
    s.close()
    assert done.wait(5)
    assert states == [SessionState.LOST]


def test_expiry_deletes_ephemerals_drops_watches_and_reconnects(
    session: EmbeddedSession, other: EmbeddedSession
) -> None:
    states: list[SessionState] = []
    session.add_listener(states.append)
    own, theirs = Recorder(), Recorder()
    old_id = session.session_id
    session.create("/controller", b"0", ephemeral=True)
    session.exists("/gone", watch=own)
    other.exists("/controller", watch=theirs)
    session.expire()
    settle(session, other)
    assert states == [SessionState.LOST, SessionState.CONNECTED]
    assert theirs.events == [("DELETED", "/controller")]
    assert session.session_id != old_id and session.state is SessionState.CONNECTED
    session.create("/gone")
    settle(session)
    assert own.events == []
    assert session.create("/controller", ephemeral=True) == "/controller"
    assert other.exists("/controller").ephemeral_owner == session.session_id
