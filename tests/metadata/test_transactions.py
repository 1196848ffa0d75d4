"""Multi-op transactions apply all of their operations or none."""

from __future__ import annotations

import pytest

from kt.metadata.embedded import EmbeddedSession
from kt.metadata.store import (
    BadVersionError,
    NodeExistsError,
    NoNodeError,
    RolledBackError,
    RuntimeInconsistency,
    Stat,
)
from tests.metadata.conftest import Recorder


def test_a_transaction_returns_one_result_per_operation(session: EmbeddedSession) -> None:
    session.create("/controller_epoch", b"1")
    session.create("/old")
    txn = session.transaction()
    txn.check("/controller_epoch", 0)
    txn.create("/t", b"{}")
    txn.create("/t/seq-", sequential=True)
    txn.set_data("/t", b"{1}")
    txn.delete("/old")
    results = txn.commit()
    assert results[0] is True
    assert results[1:3] == ["/t", "/t/seq-0000000000"]
    assert isinstance(results[3], Stat) and results[3].version == 1
    assert results[4] is True
    assert session.get("/t")[0] == b"{1}" and session.exists("/old") is None


def test_a_failed_check_applies_nothing(session: EmbeddedSession) -> None:
    """Kafka's controller writes state only while its epoch znode is unchanged."""
    session.create("/controller_epoch", b"1")
    session.set("/controller_epoch", b"2")
    session.create("/state", b"old")
    txn = session.transaction()
    txn.create("/new", b"x")
    txn.set_data("/state", b"new")
    txn.check("/controller_epoch", 0)
    txn.delete("/state")
    with pytest.raises(BadVersionError) as failure:
        txn.commit()
    assert [type(r) for r in failure.value.results] == [
        RolledBackError,
        RolledBackError,
        BadVersionError,
        RuntimeInconsistency,
    ]
    assert session.exists("/new") is None
    data, stat = session.get("/state")
    assert (data, stat.version) == (b"old", 0)


def test_rollback_restores_counters_stats_and_ownership(session: EmbeddedSession) -> None:
    session.create("/p")
    before = session.exists("/p")
    txn = session.transaction()
    txn.create("/p/", sequential=True, ephemeral=True)
    txn.create("/p/a")
    txn.create("/p/a")  # NodeExists
    with pytest.raises(NodeExistsError):
        txn.commit()
    assert session.exists("/p") == before
    assert session.create("/p/", sequential=True) == "/p/0000000000"
    session.close()  # the rolled back ephemeral must not be "owned" any more


def test_later_operations_see_earlier_ones(session: EmbeddedSession) -> None:
    with session.transaction() as txn:
        txn.create("/a")
        txn.create("/a/b", b"1")
        txn.set_data("/a/b", b"2", version=0)
        txn.check("/a/b", 1)
    assert session.get("/a/b")[0] == b"2"


def test_check_of_a_missing_node_fails(session: EmbeddedSession) -> None:
    txn = session.transaction()
    txn.create("/x")
    txn.check("/missing", -1)
    with pytest.raises(NoNodeError):
        txn.commit()
    assert session.exists("/x") is None


def test_watches_fire_only_for_a_committed_transaction(
    session: EmbeddedSession, other: EmbeddedSession, recorder: Recorder
) -> None:
    other.exists("/a", watch=recorder)
    txn = session.transaction()
    txn.create("/a")
    txn.check("/a", 5)
    with pytest.raises(BadVersionError):
        txn.commit()
    assert other.wait_callbacks()
    assert recorder.events == []
    session.transaction().commit()  # an empty multi is fine
    with session.transaction() as txn:
        txn.create("/a")
    assert other.wait_callbacks()
    assert recorder.events == [("CREATED", "/a")]


def test_a_transaction_commits_once(session: EmbeddedSession) -> None:
    txn = session.transaction()
    txn.create("/a")
    txn.commit()
    with pytest.raises(ValueError):
        txn.commit()


def test_context_manager_does_not_commit_on_error(session: EmbeddedSession) -> None:
    with pytest.raises(KeyError), session.transaction() as txn:
        txn.create("/a")
        raise KeyError("abandon")
    assert session.exists("/a") is None
