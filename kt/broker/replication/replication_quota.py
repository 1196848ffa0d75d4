"""Replication throttling, as Kafka's ReplicationQuotaManager does it.

Two managers per broker: the leader's (`leader.replication.throttled.rate`) limits what it
sends to followers, the follower's (`follower.replication.throttled.rate`) what it asks
its leaders for. Only throttled replicas count and are held back: a partition is
throttled on this broker when the topic's `leader.replication.throttled.replicas` (or
`follower...`) lists `partition:this broker id`, or is `*`; and only while the follower
is out of the ISR (a replica catching up, as in a reassignment), never one in sync.

The rate is Kafka's windowed Rate: `replication.quota.window.num` (11) samples of
`replication.quota.window.size.seconds` (1 s); the quota is exceeded while the bytes of
the samples, over the time they cover (at least one window), exceed the bound. A
throttled read takes no more than what is left of the bound, so the copy runs at the
rate rather than in bursts of replica.fetch.max.bytes.
"""

from __future__ import annotations

import functools
import time
from collections import deque

UNLIMITED = 2**63 - 1  # Long.MAX_VALUE: the rates' default


@functools.lru_cache(maxsize=1024)
def throttled_partitions(value: str, broker_id: int) -> frozenset[int] | None:
    """The partitions a `*.replication.throttled.replicas` value throttles on `broker_id`:
    None for all (`*`), else the partitions listed with this broker."""
    value = value.strip()
    if value == "*":
        return None
    partitions = set()
    for entry in value.split(","):
        partition, sep, broker = entry.strip().partition(":")
        if sep and broker.strip() == str(broker_id):
            partitions.add(int(partition))
    return frozenset(partitions)


def is_throttled(value: str, partition: int, broker_id: int) -> bool:
    if not value:
        return False
    listed = throttled_partitions(value, broker_id)
    return listed is None or partition in listed


class ReplicationQuotaManager:
    """One side's byte rate against its bound."""

    def __init__(
        self, rate: float = UNLIMITED, num_windows: int = 11, window_s: float = 1.0
    ) -> None:
        self.rate = rate
        self.num_windows = num_windows
        self.window_s = window_s
        self._samples: deque[list[float]] = deque()  # [window start, bytes]

    @property
    def bounded(self) -> bool:
        return self.rate < UNLIMITED

    def update_quota(self, rate: float) -> None:
        self.rate = rate

    def record(self, size: int, now: float | None = None) -> None:
        if size <= 0 or not self.bounded:
            return
        now = time.monotonic() if now is None else now
        self._expire(now)
        if self._samples and now - self._samples[-1][0] < self.window_s:
            self._samples[-1][1] += size
        else:
            self._samples.append([now, float(size)])

    def _elapsed(self, now: float) -> float:
        """The time the samples cover, at least one window. (Kafka's Rate counts at least
        all windows but one, which lets a throttled replica take ten windows' worth at
        once, then nothing until that sample expires: a burst every eleven seconds. kt's
        rate is the same on average, and smooth.)"""
        first = self._samples[0][0] if self._samples else now
        return max(now - first, self.window_s)

    def measured_rate(self, now: float | None = None) -> float:
        now = time.monotonic() if now is None else now
        self._expire(now)
        return sum(size for _, size in self._samples) / self._elapsed(now)

    def allowance(self, now: float | None = None) -> int:
        """Bytes that may go before the quota is exceeded. kt reads no more than this for
        a throttled replica (Kafka reads up to replica.fetch.max.bytes, overshooting the
        rate by up to a fetch per window span)."""
        now = time.monotonic() if now is None else now
        self._expire(now)
        spent = sum(size for _, size in self._samples)
        return max(0, int(self.rate * self._elapsed(now) - spent))

    def is_quota_exceeded(self, now: float | None = None) -> bool:
        return self.bounded and self.measured_rate(now) > self.rate

    def _expire(self, now: float) -> None:
        horizon = now - self.num_windows * self.window_s
        while self._samples and self._samples[0][0] + self.window_s <= horizon:
            self._samples.popleft()
