"""The metadata store behaves as ZooKeeper does, call by call (embedded backend)."""

from __future__ import annotations

import pytest

from kt.metadata.embedded import EmbeddedSession, EmbeddedStore
from kt.metadata.store import (
    BadArgumentsError,
    BadVersionError,
    ConnectionClosedError,
    NoChildrenForEphemeralsError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
)


def test_create_returns_the_path_and_get_returns_data_and_stat(session: EmbeddedSession) -> None:
    assert session.create("/a", b"hello") == "/a"
    data, stat = session.get("/a")
    assert data == b"hello"
    assert (stat.version, stat.cversion, stat.num_children, stat.data_length) == (0, 0, 0, 5)
    assert stat.ephemeral_owner == 0
    assert stat.czxid == stat.mzxid > 0
    assert stat.ctime == stat.mtime > 0


def test_exists_returns_a_stat_or_none(session: EmbeddedSession) -> None:
    assert session.exists("/a") is None
    session.create("/a")
    stat = session.exists("/a")
    assert stat is not None and stat.data_length == 0
    assert session.exists("/") is not None


def test_set_bumps_the_version_and_mzxid(session: EmbeddedSession) -> None:
    session.create("/a", b"0")
    before = session.exists("/a")
    stat = session.set("/a", b"1")
    assert stat.version == 1
    assert stat.mzxid > before.mzxid and stat.czxid == before.czxid
    assert session.set("/a", b"2", version=1).version == 2
    assert session.get("/a") == (b"2", session.exists("/a"))


def test_set_with_a_stale_version_raises_bad_version(session: EmbeddedSession) -> None:
    session.create("/a", b"0")
    session.set("/a", b"1")
    with pytest.raises(BadVersionError):
        session.set("/a", b"x", version=0)
    assert session.get("/a")[0] == b"1"


def test_create_existing_raises_node_exists(session: EmbeddedSession) -> None:
    session.create("/a")
    with pytest.raises(NodeExistsError):
        session.create("/a")
    with pytest.raises(NodeExistsError):
        session.create("/")


def test_missing_nodes_raise_no_node(session: EmbeddedSession) -> None:
    with pytest.raises(NoNodeError):
        session.get("/nope")
    with pytest.raises(NoNodeError):
        session.set("/nope", b"")
    with pytest.raises(NoNodeError):
        session.delete("/nope")
    with pytest.raises(NoNodeError):
        session.get_children("/nope")
    with pytest.raises(NoNodeError):
        session.create("/no/parent")


def test_make_parents_and_ensure_path(session: EmbeddedSession) -> None:
    assert session.create("/x/y/z", b"leaf", make_parents=True) == "/x/y/z"
    assert session.get("/x/y")[0] == b""
    session.ensure_path("/x/y/z/deeper")
    session.ensure_path("/x/y/z/deeper")  # fine if it exists
    assert session.get_children("/x/y/z") == ["deeper"]
    assert session.get("/x/y/z")[0] == b"leaf"


def test_get_children_is_sorted_and_cversion_counts_changes(session: EmbeddedSession) -> None:
    session.create("/p")
    for name in ["c", "a", "b"]:
        session.create(f"/p/{name}")
    session.delete("/p/b")
    assert session.get_children("/p") == ["a", "c"]
    stat = session.exists("/p")
    assert (stat.cversion, stat.num_children, stat.version) == (4, 2, 0)


def test_delete_with_version_and_not_empty(session: EmbeddedSession) -> None:
    session.create("/a/b", make_parents=True)
    with pytest.raises(NotEmptyError):
        session.delete("/a")
    session.set("/a/b", b"v")
    with pytest.raises(BadVersionError):
        session.delete("/a/b", version=0)
    session.delete("/a/b", version=1)
    session.delete("/a")
    assert session.exists("/a") is None


def test_recursive_delete_takes_the_subtree_and_ignores_missing(session: EmbeddedSession) -> None:
    for path in ["/t/x/1", "/t/x/2", "/t/y", "/keep"]:
        session.ensure_path(path)
    session.delete("/t", recursive=True)
    assert session.exists("/t") is None
    assert session.get_children("/") == ["keep"]
    session.delete("/t", recursive=True)  # missing: nothing to do, as kazoo does
    with pytest.raises(ValueError):
        session.delete("/keep", version=0, recursive=True)


def test_root_cannot_be_deleted(session: EmbeddedSession) -> None:
    session.create("/a")
    with pytest.raises(BadArgumentsError):
        session.delete("/")
    with pytest.raises(BadArgumentsError):
        session.delete("/", recursive=True)
    assert session.exists("/a") is not None


def test_sequential_names_use_the_parents_cversion(session: EmbeddedSession) -> None:
    session.create("/config/changes", make_parents=True)
    first = session.create("/config/changes/config_change_", b"{}", sequential=True)
    second = session.create("/config/changes/config_change_", sequential=True)
    assert first == "/config/changes/config_change_0000000000"
    assert second == "/config/changes/config_change_0000000001"
    session.create("/config/changes/other")
    session.delete("/config/changes/other")
    # Each child creation and deletion moved the counter: 0, 1, other (2), its delete (3).
    assert session.create("/config/changes/config_change_", sequential=True).endswith("0000000004")


def test_sequential_counter_is_per_parent_and_may_end_in_slash(session: EmbeddedSession) -> None:
    session.ensure_path("/q1")
    session.ensure_path("/q2")
    session.create("/q1/x")
    assert session.create("/q1/", sequential=True) == "/q1/0000000001"
    assert session.create("/q2/", sequential=True) == "/q2/0000000000"


@pytest.mark.parametrize(
    "path", ["", "a", "/a/", "//a", "/a//b", "/a/./b", "/a/../b", "/a\u0000b", "/."]
)
def test_invalid_paths_are_bad_arguments(session: EmbeddedSession, path: str) -> None:
    with pytest.raises(BadArgumentsError):
        session.create(path)
    with pytest.raises(BadArgumentsError):
        session.exists(path)


def test_data_must_be_bytes(session: EmbeddedSession) -> None:
    with pytest.raises(TypeError):
        session.create("/a", "text")  # type: ignore[arg-type]


def test_ephemeral_nodes_belong_to_their_session_and_have_no_children(
    session: EmbeddedSession, other: EmbeddedSession
) -> None:
    session.ensure_path("/brokers/ids")
    session.create("/brokers/ids/1", b"{}", ephemeral=True)
    stat = other.exists("/brokers/ids/1")
    assert stat is not None and stat.ephemeral_owner == session.session_id
    with pytest.raises(NoChildrenForEphemeralsError):
        other.create("/brokers/ids/1/child")
    with pytest.raises(NodeExistsError):  # a duplicate broker id registration fails
        other.create("/brokers/ids/1", ephemeral=True)


def test_ephemeral_nodes_vanish_with_their_session(
    store: EmbeddedStore, session: EmbeddedSession, other: EmbeddedSession
) -> None:
    session.create("/controller", b"0", ephemeral=True)
    session.create("/kept", b"p")
    session.close()
    assert other.exists("/controller") is None
    assert other.get("/kept")[0] == b"p"
    assert other.create("/controller", b"1", ephemeral=True) == "/controller"


def test_a_closed_session_refuses_calls(session: EmbeddedSession) -> None:
    session.close()
    session.close()  # idempotent
    with pytest.raises(ConnectionClosedError):
        session.exists("/")
    with pytest.raises(ConnectionClosedError):
        session.create("/a")


def test_session_ids_are_distinct_and_nonzero(store: EmbeddedStore) -> None:
    ids = {store.session().session_id for _ in range(5)}
    assert len(ids) == 5 and 0 not in ids


def test_closing_the_store_closes_its_sessions() -> None:
    store = EmbeddedStore()
    s = store.session()
    store.close()
    with pytest.raises(ConnectionClosedError):
        s.exists("/")
    with pytest.raises(ConnectionClosedError):
        store.session()
