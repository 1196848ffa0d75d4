"""A tool's membership of a consumer group: join, heartbeat, commit what it consumed,
leave (the console consumer and the consumer perf test)."""

from __future__ import annotations

import time
from typing import Any

from kt.client.client import KafkaClient
from kt.client.consumer import Consumer
from kt.client.group_member import GroupMember


class GroupSession:
    """A consuming tool's group membership: join, heartbeat, auto-commit, leave.

    What is committed is what the tool consumed (`consumed`, the next offset per
    partition: printed by the console consumer, counted by the perf test), not how far
    the fetches got: records fetched but never consumed are read again by the next
    member. `rebalance_ms` adds up the time spent joining (JoinGroup to SyncGroup's
    answer), which the perf test reports as rebalance.time.ms.
    """

    def __init__(
        self, client: KafkaClient, consumer: Consumer, group: str, topics: list[str], reset: int,
        props: dict[str, str],
    ) -> None:  # fmt: skip
        self.consumer = consumer
        self.reset = reset
        self.member = GroupMember(
            client,
            group,
            topics,
            session_timeout_ms=int(props.get("session.timeout.ms", 45000)),
            heartbeat_interval_ms=int(props.get("heartbeat.interval.ms", 3000)),
        )
        self.auto_commit = props.get("enable.auto.commit", "true").lower() == "true"
        self.commit_interval_s = int(props.get("auto.commit.interval.ms", 5000)) / 1000
        self._last_commit = time.monotonic()
        self.consumed: dict[tuple[str, int], int] = {}
        self.rebalance_ms = 0

    def record_consumed(self, record: Any) -> None:
        self.consumed[(record.topic, record.partition)] = record.offset + 1

    def join(self) -> None:
        started = time.monotonic()
        assigned = self.member.join()
        self.rebalance_ms += int((time.monotonic() - started) * 1000)
        committed = self.member.committed()
        self.consumer.unassign()
        self.consumed = {}
        self.consumer.assign({tp: committed.get(tp, self.reset) for tp in assigned})

    def maintain(self) -> None:
        """Heartbeat; on a rebalance commit what was read and rejoin."""
        if not self.member.heartbeat_if_due():
            self.commit()
            self.join()
        elif self.auto_commit and time.monotonic() - self._last_commit >= self.commit_interval_s:
            self.commit()

    def commit(self) -> None:
        if self.auto_commit:
            self.member.commit(dict(self.consumed))
        self._last_commit = time.monotonic()

    def close(self) -> None:
        self.commit()
        self.member.leave()
