"""Share sessions (kt/broker/share/share_session.py, Kafka's ShareSessionCache): the
epochs a member's ShareFetch and ShareAcknowledge carry, the limit on sessions, and the
connection that started a session ending it when it closes."""

from __future__ import annotations

import pytest

from kt.broker.replication.partition import TopicPartition
from kt.broker.share.share_session import ShareSessionCache, ShareSessionError

TP = TopicPartition("orders", 0)


def error_of(call, *args, **kwargs) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(ShareSessionError) as raised:
        call(*args, **kwargs)
    return raised.value.error


def test_a_session_moves_epoch_by_epoch_and_ends_at_minus_one() -> None:
    cache = ShareSessionCache()
    session, full = cache.context("g", "m", 0, [(TP, "id")], connection="c1")
    assert full and session is not None and session.partitions == {TP: "id"}
    assert error_of(cache.context, "g", "m", 2, []) == "INVALID_SHARE_SESSION_EPOCH"
    session, full = cache.context("g", "m", 1, [], forgotten=[TP])
    assert not full and session is not None and session.partitions == {}
    cache.check("g", "m", 2)  # ShareAcknowledge at the next epoch
    assert error_of(cache.check, "g", "m", 2) == "INVALID_SHARE_SESSION_EPOCH"
    assert cache.context("g", "m", -1, []) == (None, False)
    assert cache.close("g", "m")  # the group's last session here
    assert error_of(cache.context, "g", "m", 4, []) == "SHARE_SESSION_NOT_FOUND"
    assert error_of(cache.context, "g", "m", -1, []) == "SHARE_SESSION_NOT_FOUND"


def test_the_first_request_acknowledges_nothing_and_sessions_are_limited() -> None:
    cache = ShareSessionCache(max_sessions=1)
    assert error_of(cache.context, "g", "m", 0, [], acknowledging=True) == "INVALID_REQUEST"
    cache.context("g", "m", 0, [])
    cache.context("g", "m", 0, [])  # the member's new session replaces its old one
    assert error_of(cache.context, "g", "n", 0, []) == "SHARE_SESSION_LIMIT_REACHED"
    assert cache.close("g", "m") and cache.sessions == {}


def test_a_closed_connection_names_the_live_session_it_started() -> None:
    cache = ShareSessionCache()
    cache.context("g", "m", 0, [], connection="PLAINTEXT-1")
    cache.context("g", "n", 0, [], connection="PLAINTEXT-2")
    cache.context("g", "n", 0, [], connection="PLAINTEXT-3")  # n started again elsewhere
    cache.context("g", "o", 0, [], connection="PLAINTEXT-4")
    cache.close("g", "o")  # o left (the final epoch)
    assert cache.disconnected("PLAINTEXT-1") == ("g", "m")
    assert cache.disconnected("PLAINTEXT-1") is None  # reported once
    assert cache.disconnected("PLAINTEXT-2") is None  # its session was replaced
    assert cache.disconnected("PLAINTEXT-3") == ("g", "n")
    assert cache.disconnected("PLAINTEXT-4") is None  # its session had ended
    assert cache.disconnected("PLAINTEXT-5") is None  # it started none
