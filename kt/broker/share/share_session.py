"""Share sessions (KIP-932; Kafka's ShareSessionCache, SharePartitionManager.newContext):
what a share group member fetches from this broker, kept between its ShareFetch
requests so each names only what changed.

ShareSessionEpoch 0 starts a session (replacing the member's previous one) with the
request's partitions; then each request carries the session's next epoch, adds
partitions and forgets others; -1 ends it (acknowledgements only, then the member's
records held here go back to the group). A wrong epoch answers
INVALID_SHARE_SESSION_EPOCH, an unknown session SHARE_SESSION_NOT_FOUND.

A session belongs to the connection that started it: when that connection closes (a
client killed, a network cut), the session ends as if the member had left, and its
records go back at once rather than when their locks expire (Kafka 4.4's
ShareSessionCache.ClientConnectionDisconnectListener, ShareGroupListener.onMemberLeave).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kt.broker.replication.partition import TopicPartition

INITIAL_EPOCH, FINAL_EPOCH = 0, -1
MAX_EPOCH = 2**31 - 1


class ShareSessionError(Exception):
    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.error = error


@dataclass
class ShareSession:
    group_id: str
    member_id: str
    epoch: int = 1  # the epoch its next request must carry
    partitions: dict[TopicPartition, object] = field(default_factory=dict)  # tp -> topic id
    connection: str = ""  # the connection that started it


def next_epoch(epoch: int) -> int:
    return 1 if epoch >= MAX_EPOCH else epoch + 1


class ShareSessionCache:
    """The share sessions of this broker, by (group, member); at most `max_sessions`."""

    def __init__(self, max_sessions: int = 2000) -> None:
        self.max_sessions = max_sessions
        self.sessions: dict[tuple[str, str], ShareSession] = {}
        # The session each connection started last (it may have ended since).
        self.by_connection: dict[str, tuple[str, str]] = {}

    def context(
        self,
        group_id: str,
        member_id: str,
        epoch: int,
        partitions: Iterable[tuple[TopicPartition, object]],
        forgotten: Iterable[TopicPartition] = (),
        acknowledging: bool = False,
        connection: str = "",
    ) -> tuple[ShareSession | None, bool]:
        """(the session, whether the answer is full): a new session for epoch 0, the
        member's updated one, or None with epoch -1 (the session ends: the caller
        answers the acknowledgements and closes it)."""
        key = (group_id, member_id)
        if epoch == FINAL_EPOCH:
            if key not in self.sessions:
                raise ShareSessionError("SHARE_SESSION_NOT_FOUND")
            return None, False
        if epoch == INITIAL_EPOCH:
            if acknowledging:
                raise ShareSessionError("INVALID_REQUEST")
            self.sessions.pop(key, None)
            if len(self.sessions) >= self.max_sessions:
                raise ShareSessionError("SHARE_SESSION_LIMIT_REACHED")
            session = self.sessions[key] = ShareSession(group_id, member_id,
                                                        partitions=dict(partitions),
                                                        connection=connection)  # fmt: skip
            self.by_connection[connection] = key
            return session, True
        session = self.sessions.get(key)
        if session is None:
            raise ShareSessionError("SHARE_SESSION_NOT_FOUND")
        if session.epoch != epoch:
            raise ShareSessionError("INVALID_SHARE_SESSION_EPOCH")
        session.partitions.update(partitions)
        for tp in forgotten:
            session.partitions.pop(tp, None)
        session.epoch = next_epoch(session.epoch)
        return session, False

    def check(self, group_id: str, member_id: str, epoch: int) -> None:
        """ShareAcknowledge's check: the session exists and the epoch is its next."""
        if epoch == INITIAL_EPOCH:
            raise ShareSessionError("INVALID_SHARE_SESSION_EPOCH")
        session = self.sessions.get((group_id, member_id))
        if session is None:
            raise ShareSessionError("SHARE_SESSION_NOT_FOUND")
        if epoch != FINAL_EPOCH:
            if session.epoch != epoch:
                raise ShareSessionError("INVALID_SHARE_SESSION_EPOCH")
            session.epoch = next_epoch(session.epoch)

    def close(self, group_id: str, member_id: str) -> bool:
        """End the member's session; whether it was the group's last one here (Kafka's
        ShareGroupListener.onGroupEmpty)."""
        self.sessions.pop((group_id, member_id), None)
        return not any(group == group_id for group, _ in self.sessions)

    def disconnected(self, connection: str) -> tuple[str, str] | None:
        """The connection closed: the (group, member) of the session it started, while
        that session lives (the caller ends it); None when it started none, or when the
        member ended it or started another since."""
        key = self.by_connection.pop(connection, None)
        session = self.sessions.get(key) if key is not None else None
        if session is None or session.connection != connection:
            return None
        return key
