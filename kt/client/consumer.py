"""A small assign-based consumer for kt's tools (console consumer, perf test, Spark).

Positions are kept per partition; `poll()` sends one Fetch per leader and decodes what
comes back batch by batch (kt.storage.records.iter_batches): control batches are
skipped, records before the position (inside a compressed batch) are dropped, and a
partial batch at the end of a response is simply fetched again next time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, NamedTuple

from kt.client.client import KafkaClient
from kt.client.connection import BrokerConnection, PendingResponse
from kt.errors import KafkaError, authorization_refusal, error_for
from kt.protocol import ApiKey
from kt.protocol import messages as m
from kt.storage.control_records import ABORT, parse_control_type
from kt.storage.records import Batch, iter_batches

EARLIEST = -2
LATEST = -1
RESET_ATTEMPTS = 20  # rounds of ListOffsets for an offset reset, RESET_BACKOFF_S apart and up
RESET_BACKOFF_S = 0.1


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


def _is_abort_marker(batch: Batch) -> bool:
    """A control batch holding an ABORT marker (EndTransactionMarker)."""
    record = next(iter(batch.records()), None)
    return record is not None and parse_control_type(record.key) == ABORT


class FetchedBatch(NamedTuple):
    tp: tuple[str, int]
    batch: Batch
    position: int  # records before it are not to be returned


class InFlightFetch(NamedTuple):
    connection: BrokerConnection
    pending: PendingResponse
    offsets: dict[tuple[str, int], int]  # what it asked for, by partition


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
        prefetch: bool = False,
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
        # prefetch: a connection of its own per leader, with the next Fetch sent as soon
        # as an answer is taken, so the broker works while the caller reads.
        self.prefetch = prefetch
        self._fetch_connections: dict[int, BrokerConnection] = {}
        self._in_flight: dict[int, InFlightFetch] = {}

    def partitions_for(self, topic: str) -> list[int]:
        info = self.client.metadata([topic]).get(topic)
        if info is None or info.error_code:
            code = info.error_code if info is not None else 3
            raise authorization_refusal(code, topic) or KafkaError(
                code or "UNKNOWN_TOPIC_OR_PARTITION", f"Topic {topic} not found"
            )
        return sorted(info.partitions)

    def assign(self, offsets: dict[tuple[str, int], int]) -> None:
        """Start each partition at an offset, or EARLIEST (-2) / LATEST (-1)."""
        self._refresh_leaders({t for t, _ in offsets})
        specs = {tp: o for tp, o in offsets.items() if o < 0}
        self.positions.update({tp: o for tp, o in offsets.items() if o >= 0})
        if specs:
            self._reset_positions(specs)

    def _reset_positions(self, specs: dict[tuple[str, int], int]) -> None:
        """ListOffsets for each spec; a retriable answer (a leader that moved, a new
        leader's high watermark still behind: OFFSET_NOT_AVAILABLE) is asked again, as
        the Java consumer's offset reset does, for up to RESET_ATTEMPTS rounds."""
        from kt.client.admin import AdminClient

        left = dict(specs)
        for attempt in range(RESET_ATTEMPTS):
            if attempt:
                time.sleep(min(RESET_BACKOFF_S * attempt, 1.0))
                self._refresh_leaders({t for t, _ in left})
            found = AdminClient(self.client).list_offsets(left, self._leaders)
            for tp, (code, offset, _) in found.items():
                if code and not error_for(code).retriable:
                    raise authorization_refusal(code, tp[0]) or KafkaError(
                        code, f"Cannot find the offset of {tp[0]}-{tp[1]}"
                    )
                if not code:
                    self.positions[tp] = offset
                    del left[tp]
            if not left:
                return
        tp = min(left)
        code = found[tp][0] if tp in found else KafkaError("LEADER_NOT_AVAILABLE").code
        raise KafkaError(code, f"Cannot find the offset of {tp[0]}-{tp[1]}")

    def unassign(self) -> None:
        self.positions.clear()
        self.high_watermarks.clear()

    def _refresh_leaders(self, topics: set[str]) -> None:
        for name, info in self.client.metadata(sorted(topics)).items():
            for p, part in info.partitions.items():
                self._leaders[(name, p)] = part.leader

    def poll(self, timeout_ms: int | None = None) -> list[ConsumerRecord]:
        """One round of fetches; returns records in offset order per partition."""
        out: list[ConsumerRecord] = []
        for (topic, partition), batch, position in self.poll_batches(timeout_ms):
            ts_type = batch.timestamp_type
            for r in batch.records():
                if r.offset >= position:
                    out.append(
                        ConsumerRecord(
                            topic,
                            partition,
                            r.offset,
                            r.timestamp,
                            ts_type,
                            r.key,
                            r.value,
                            r.headers,
                        )  # fmt: skip
                    )
        return out

    def poll_batches(self, timeout_ms: int | None = None) -> list[FetchedBatch]:
        """One round of fetches, as whole data batches: each with the position it was
        fetched from, since records before it (a compressed batch, or one fetched from its
        middle) are not the caller's. Positions move past every batch returned."""
        if not self.positions:  # nothing assigned (a group with more members than
            # partitions): wait as a Fetch would, rather than spin
            time.sleep((self.max_wait_ms if timeout_ms is None else timeout_ms) / 1000)
            return []
        by_leader: dict[int, list[tuple[str, int]]] = {}
        for tp in self.positions:
            by_leader.setdefault(self._leaders.get(tp, -1), []).append(tp)
        if -1 in by_leader:
            self._refresh_leaders({t for t, _ in by_leader.pop(-1)})
            time.sleep(0.1)
            return []
        batches: list[FetchedBatch] = []
        for leader, tps in by_leader.items():
            batches += self._fetch(leader, tps, timeout_ms)
        return batches

    def _fetch(
        self, leader: int, tps: list[tuple[str, int]], timeout_ms: int | None
    ) -> list[FetchedBatch]:
        fetch = self._in_flight.pop(leader, None) or self._send_fetch(leader, tps, timeout_ms)
        try:
            response = fetch.connection.receive(fetch.pending)
        except KafkaError:
            self._fetch_connections.pop(leader, None)
            raise
        out: list[FetchedBatch] = []
        for topic in response.responses:
            for part in topic.partitions:
                tp = (topic.topic, part.partition_index)
                if self.positions.get(tp) != fetch.offsets.get(tp):
                    continue  # a prefetch from before a seek, or of a partition now gone
                if part.error_code:
                    if error_for(part.error_code).invalid_metadata:
                        self._leaders.pop(tp, None)
                        continue
                    raise authorization_refusal(part.error_code, tp[0]) or KafkaError(
                        part.error_code, f"Fetch of {tp[0]}-{tp[1]} failed"
                    )
                self.high_watermarks[tp] = part.high_watermark
                if part.records:
                    aborted = part.aborted_transactions if self.isolation_level else None
                    out += self._batches(tp, part.records, aborted)
        if self.prefetch:
            self._in_flight[leader] = self._send_fetch(leader, tps, timeout_ms)
        return out

    def _send_fetch(
        self, leader: int, tps: list[tuple[str, int]], timeout_ms: int | None
    ) -> InFlightFetch:
        R = m.FetchRequest
        offsets = {tp: self.positions[tp] for tp in tps}
        topics: dict[str, list] = {}
        for (topic, partition), offset in offsets.items():
            topics.setdefault(topic, []).append(
                R.FetchPartition(
                    partition=partition,
                    fetch_offset=offset,
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
        connection = self._fetch_connection(leader)
        try:
            pending = connection.send_request(ApiKey.FETCH, request)
        except KafkaError:
            self._fetch_connections.pop(leader, None)
            raise
        return InFlightFetch(connection, pending, offsets)

    def _fetch_connection(self, leader: int) -> BrokerConnection:
        if not self.prefetch:
            return self.client.connection(leader)
        connection = self._fetch_connections.get(leader)
        if connection is None:
            host, port = self.client.brokers[leader][:2]
            connection = self.client.open_connection(host, port)
            self._fetch_connections[leader] = connection
        return connection

    def close(self) -> None:
        """Close the prefetch connections (the client's own stay open)."""
        self._in_flight.clear()
        for connection in self._fetch_connections.values():
            connection.close()
        self._fetch_connections.clear()

    def _batches(self, tp: tuple[str, int], data: Any, aborted: Any = None) -> list[FetchedBatch]:
        """The data batches of one partition's answer. At read_committed (`aborted`, the
        answer's aborted transactions), a transactional batch of a producer whose aborted
        transaction began at or before it is left out, up to that producer's ABORT
        marker: the Java consumer's CompletedFetch does the same."""
        position = self.positions[tp]
        out = []
        pending = sorted(aborted or (), key=lambda txn: txn.first_offset)
        aborting: set[int] = set()
        for batch in iter_batches(data):
            if batch.last_offset < position:
                continue
            skip = getattr(batch, "is_control", False)
            if pending or aborting:
                while pending and pending[0].first_offset <= batch.last_offset:
                    aborting.add(pending.pop(0).producer_id)
                if skip and batch.producer_id in aborting and _is_abort_marker(batch):
                    aborting.discard(batch.producer_id)
                elif getattr(batch, "is_transactional", False) and batch.producer_id in aborting:
                    skip = True
            if not skip:
                out.append(FetchedBatch(tp, batch, position))
            position = batch.last_offset + 1
        self.positions[tp] = position
        return out
