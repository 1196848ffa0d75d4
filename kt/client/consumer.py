"""A small assign-based consumer for kt's tools (console consumer, perf test, Spark).

Positions are kept per partition; `poll()` sends one Fetch per leader and decodes what
comes back batch by batch (kt.storage.records.iter_batches): control batches are
skipped, records before the position (inside a compressed batch) are dropped, and a
partial batch at the end of a response is simply fetched again next time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from kt.client.client import KafkaClient
from kt.errors import KafkaError, error_for
from kt.protocol import ApiKey
from kt.protocol import messages as m
from kt.storage.records import iter_batches

EARLIEST = -2
LATEST = -1


@dataclass(slots=True)
class ConsumerRecord:
    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: bytes | None
    value: bytes | None
    headers: Any


class Consumer:
    """Reads assigned partitions from given offsets (no group: the tools assign)."""

    def __init__(
        self,
        client: KafkaClient,
        *,
        isolation_level: int = 0,
        max_wait_ms: int = 500,
        min_bytes: int = 1,
        fetch_max_bytes: int = 52428800,
        partition_max_bytes: int = 1048576,
    ) -> None:
        self.client = client
        self.isolation_level = isolation_level
        self.max_wait_ms = max_wait_ms
        self.min_bytes = min_bytes
        self.fetch_max_bytes = fetch_max_bytes
        self.partition_max_bytes = partition_max_bytes
        self.positions: dict[tuple[str, int], int] = {}
        self.high_watermarks: dict[tuple[str, int], int] = {}
        self._leaders: dict[tuple[str, int], int] = {}

    def partitions_for(self, topic: str) -> list[int]:
        info = self.client.metadata([topic]).get(topic)
        if info is None or info.error_code:
            code = info.error_code if info is not None else 3
            raise KafkaError(code or "UNKNOWN_TOPIC_OR_PARTITION", f"Topic {topic} not found")
        return sorted(info.partitions)

    def assign(self, offsets: dict[tuple[str, int], int]) -> None:
        """Start each partition at an offset, or EARLIEST (-2) / LATEST (-1)."""
        self._refresh_leaders({t for t, _ in offsets})
        specs = {tp: o for tp, o in offsets.items() if o < 0}
        self.positions.update({tp: o for tp, o in offsets.items() if o >= 0})
        if specs:
            from kt.client.admin import AdminClient

            found = AdminClient(self.client).list_offsets(specs, self._leaders)
            for tp, (code, offset, _) in found.items():
                if code:
                    raise KafkaError(code, f"Cannot find the offset of {tp[0]}-{tp[1]}")
                self.positions[tp] = offset

    def unassign(self) -> None:
        self.positions.clear()
        self.high_watermarks.clear()

    def _refresh_leaders(self, topics: set[str]) -> None:
        for name, info in self.client.metadata(sorted(topics)).items():
            for p, part in info.partitions.items():
                self._leaders[(name, p)] = part.leader

    def poll(self, timeout_ms: int | None = None) -> list[ConsumerRecord]:
        """One round of fetches; returns records in offset order per partition."""
        by_leader: dict[int, list[tuple[str, int]]] = {}
        for tp in self.positions:
            by_leader.setdefault(self._leaders.get(tp, -1), []).append(tp)
        if -1 in by_leader:
            self._refresh_leaders({t for t, _ in by_leader.pop(-1)})
            time.sleep(0.1)
            return []
        records: list[ConsumerRecord] = []
        for leader, tps in by_leader.items():
            records += self._fetch(leader, tps, timeout_ms)
        return records

    def _fetch(
        self, leader: int, tps: list[tuple[str, int]], timeout_ms: int | None
    ) -> list[ConsumerRecord]:
        R = m.FetchRequest
        topics: dict[str, list] = {}
        for topic, partition in tps:
            topics.setdefault(topic, []).append(
                R.FetchPartition(
                    partition=partition,
                    fetch_offset=self.positions[(topic, partition)],
                    partition_max_bytes=self.partition_max_bytes,
                )
            )
        request = R(
            replica_id=-1,
            max_wait_ms=self.max_wait_ms if timeout_ms is None else timeout_ms,
            min_bytes=self.min_bytes,
            max_bytes=self.fetch_max_bytes,
            isolation_level=self.isolation_level,
            session_id=0,
            session_epoch=-1,
            topics=[R.FetchTopic(topic=t, partitions=p) for t, p in topics.items()],
        )
        response = self.client.connection(leader).send(ApiKey.FETCH, request)
        out: list[ConsumerRecord] = []
        for topic in response.responses:
            for part in topic.partitions:
                tp = (topic.topic, part.partition_index)
                if part.error_code:
                    if error_for(part.error_code).invalid_metadata:
                        self._leaders.pop(tp, None)
                        continue
                    raise KafkaError(part.error_code, f"Fetch of {tp[0]}-{tp[1]} failed")
                self.high_watermarks[tp] = part.high_watermark
                out += self._decode(tp, part.records)
        return out

    def _decode(self, tp: tuple[str, int], data: Any) -> list[ConsumerRecord]:
        if not data:
            return []
        position = self.positions[tp]
        out = []
        for batch in iter_batches(data):
            if batch.last_offset < position:
                continue
            if not getattr(batch, "is_control", False):
                ts_type = batch.timestamp_type
                for r in batch.records():
                    if r.offset >= position:
                        out.append(
                            ConsumerRecord(
                                tp[0],
                                tp[1],
                                r.offset,
                                r.timestamp,
                                ts_type,
                                r.key,
                                r.value,
                                r.headers,
                            )  # fmt: skip
                        )
            position = batch.last_offset + 1
        self.positions[tp] = position
        return out
