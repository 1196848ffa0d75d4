"""kt's producer with per-record callbacks and pipelined requests (Kafka's RecordAccumulator
and Sender, on the caller's thread): what `kt producer-perf-test` measures, as Kafka's
ProducerPerformance measures the Java producer.

    producer = PipelinedProducer(Producer(client, acks=-1), linger_ms=5, max_in_flight=5)
    producer.send("t", b"value", on_delivery=lambda error, offset: ...)
    producer.poll(0.1)     # sends what is due, reads answers, runs callbacks
    producer.flush()       # everything sent and answered

Records go into their partition's open batch, encoded there as they come (a
MemoryRecordsBuilder, no object per record; the sticky partitioner picks a partition for a
record without a key and moves on when a batch closes). A batch closes when it holds
`batch.size` bytes, or has waited `linger.ms` and its leader's connection has room
for another request (so that with linger.ms 0 records gather while requests are in
flight, as with Kafka's sender thread), is encoded once (with the producer id
and the partition's next sequence when idempotent, kt.client.producer's rules) and is
queued for its leader, whose connection carries up to `max.in.flight` unanswered Produce
requests (the broker answers a connection's requests in order). Every record's callback
runs once, with the batch's answer: (None, offset) or (KafkaError, -1).

A batch that fails with a retriable error (its leader moved, not enough replicas, the
connection broke, a timeout) is sent again, up to `retries` times within
`delivery.timeout.ms` of its first record (Kafka's defaults: no count, 120 s), after
`retry.backoff.ms`, to its partition's leader as the metadata now says: the same bytes,
so an idempotent producer's batch keeps its sequence, and the broker answers a batch it
has already written with its first offsets (no duplicate). Retried batches go back in
sequence order (RecordAccumulator.insertInSequenceOrder) and a partition's batches leave
in that order, never one before an earlier one waiting out its backoff; a batch refused
as out of order because an earlier one of its partition failed is retried with it (the
TransactionManager's canRetry). Order per partition holds. A batch that fails for good
reports its error; an idempotent producer then takes a new id, as kt's synchronous
producer does.
"""

from __future__ import annotations

import select
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import count, repeat
from typing import Protocol

from kt.client.connection import BrokerConnection, PendingResponse
from kt.client.producer import Producer
from kt.client.transaction_manager import TransactionManager
from kt.errors import KafkaError
from kt.protocol import ApiKey
from kt.protocol import messages as m
from kt.storage.record_batch import MemoryRecordsBuilder

Callback = Callable[[KafkaError | None, int], None]
DUPLICATE_SEQUENCE_NUMBER = 46
DRAIN_SKIPS = 8  # queued batches a request's drain passes over before it stops looking


class EncodedRecords(Protocol):
    """Records encoded for a batch when they go into it (their offset and timestamp deltas
    are the batch's): kt.spark.record_encoder.ArrowRecords."""

    count: int

    def encode(self, start: int, first_index: int, base_timestamp: int | None, room: int,
               now_ms: int) -> tuple[bytes, int, int, int]: ...  # fmt: skip


@dataclass
class _Batch:
    tp: tuple[str, int]
    created: float
    records: MemoryRecordsBuilder = field(
        default_factory=MemoryRecordsBuilder
    )  # encoded as they come
    callbacks: list[Callback | None] = field(default_factory=list)  # one per record
    any_callback: bool = False  # whether one of `callbacks` is not None
    runs: list[tuple[int, Callback]] = field(default_factory=list)  # (first record, callback)
    data: bytes = b""
    sequence: int = -1  # its base sequence, when idempotent or transactional
    attempts: int = 0  # sends that failed and were retried
    not_before: float = 0.0  # a retry waits out retry.backoff.ms


@dataclass
class _InFlight:
    pending: PendingResponse | None
    batches: list[_Batch]  # one Produce request: at most one batch per partition


class PipelinedProducer:
    """See the module docstring. `base` gives the settings (acks, compression, batch.size,
    request timeout, idempotence), the metadata and the producer id."""

    def __init__(
        self,
        base: Producer,
        *,
        linger_ms: float = 5.0,
        max_in_flight: int = 5,
        buffer_memory: int = 33554432,
        transactions: TransactionManager | None = None,
        retries: int = 2**31 - 1,
        delivery_timeout_ms: int = 120000,
        max_request_size: int = 1048576,
    ) -> None:
        self.base = base
        self.max_request_size = max_request_size
        self.retries = retries  # Kafka's defaults: retried until delivery.timeout.ms
        self.delivery_timeout_s = delivery_timeout_ms / 1000
        self.buffer_memory = buffer_memory
        self._buffered = 0  # bytes of the batches closed and not answered yet
        self.transactions = transactions
        self._txn_failures: list[KafkaError] = []
        self.linger_s = linger_ms / 1000
        self.max_in_flight = max_in_flight
        self._open: dict[tuple[str, int], _Batch] = {}
        self._queued: dict[int, deque[_Batch]] = {}  # closed batches by leader
        self._in_flight: dict[int, deque[_InFlight]] = {}
        self._leaders: dict[tuple[str, int], int] = {}

    def send(
        self, topic: str, value: bytes | None, key: bytes | None = None,
        on_delivery: Callback | None = None, partition: int | None = None,
        timestamp_ms: int | None = None, headers: Sequence[tuple[str, bytes | None]] = (),
    ) -> None:  # fmt: skip
        """Append one record (its timestamp now unless given); sends the batches that are
        due on the way. While `buffer_memory` bytes of closed batches wait for their
        answers, it sends and reads answers first (RecordAccumulator's bounded buffer:
        send() blocks, up to max.block.ms, rather than queue without end)."""
        base = self.base
        if self._buffered >= self.buffer_memory:
            self._drain_buffer()
        info = base.topic_info(topic)
        num_partitions = len(info.partitions)
        if partition is None:
            partition = base.partitioner.partition(topic, key, num_partitions)
        elif partition not in info.partitions:
            raise KafkaError("UNKNOWN_TOPIC_OR_PARTITION", f"{topic}-{partition} does not exist")
        tp = (topic, partition)
        batch = self._open.get(tp)
        if batch is None:
            batch = self._open[tp] = _Batch(tp, time.monotonic())
            self._leaders[tp] = info.partitions[partition].leader
        if timestamp_ms is None:
            timestamp_ms = int(time.time() * 1000)
        size = batch.records.append(timestamp_ms, key, value, headers)
        batch.callbacks.append(on_delivery)
        if on_delivery is not None:
            batch.any_callback = True
        if size >= base.batch_size:
            self._close(batch)
            base.partitioner.on_new_batch(topic, num_partitions)
            self._send_queued()

    def send_encoded(
        self, topic: str, records: EncodedRecords, partition: int | None = None,
        on_delivery: Callback | None = None,
    ) -> None:  # fmt: skip
        """Append records encoded a batch at a time (kt.spark.record_encoder.ArrowRecords)
        to `partition`, or with none to the sticky partitioner's (records without keys),
        which moves on as each batch closes. A batch closes when the next record does not
        fit in batch.size (RecordAccumulator.tryAppend), is sent as the connection allows,
        and answers are read meanwhile. `on_delivery` runs once for each part of the run
        that went into one batch: (None, the offset of the part's first record), or
        (KafkaError, -1)."""
        base = self.base
        info = base.topic_info(topic)
        num_partitions = len(info.partitions)
        if partition is not None and partition not in info.partitions:
            raise KafkaError("UNKNOWN_TOPIC_OR_PARTITION", f"{topic}-{partition} does not exist")
        start = 0
        while start < records.count:
            if self._buffered >= self.buffer_memory:
                self._drain_buffer()
            p = partition
            if p is None:
                p = base.partitioner.partition(topic, None, num_partitions)
            tp = (topic, p)
            batch = self._open.get(tp)
            if batch is None:
                batch = self._open[tp] = _Batch(tp, time.monotonic())
                self._leaders[tp] = info.partitions[p].leader
            builder = batch.records
            data, n, first, latest = records.encode(
                start, builder.count, builder.base_timestamp if builder.count else None,
                base.batch_size - len(builder.buf), int(time.time() * 1000),
            )  # fmt: skip
            if n:
                if on_delivery is not None:
                    batch.runs.append((builder.count, on_delivery))
                builder.extend(data, n, first, latest)
                batch.callbacks.extend(repeat(None, n))
                start += n
            if n == 0 or start < records.count or len(builder.buf) >= base.batch_size:
                self._close(batch)
                base.partitioner.on_new_batch(topic, num_partitions)
                self._send_queued()
                self._read_answers(0)

    def partition_count(self, topic: str) -> int:
        return len(self.base.topic_info(topic).partitions)

    @property
    def buffered_bytes(self) -> int:
        """Bytes of the batches closed and not answered yet (at most about buffer_memory)."""
        return self._buffered

    def _drain_buffer(self) -> None:
        max_block_ms = self.base.max_block_ms
        deadline = time.monotonic() + max_block_ms / 1000
        while self._buffered >= self.buffer_memory:
            if time.monotonic() > deadline:  # BufferPool.allocate's TimeoutException
                raise KafkaError("REQUEST_TIMED_OUT", "Failed to allocate memory within the "
                                 f"configured max blocking time {max_block_ms} ms.")  # fmt: skip
            self._send_queued()
            self._read_answers(0.05)

    def poll(self, timeout_s: float = 0.0) -> None:
        """Close lingered batches, send what the in-flight limits allow, and read the
        answers that come within `timeout_s`, running their records' callbacks."""
        now = time.monotonic()
        for batch in [b for b in self._open.values() if now - b.created >= self.linger_s]:
            if self._room(self._leaders[batch.tp]):  # else it fills while it waits
                self._close(batch)
        self._send_queued()
        self._read_answers(timeout_s)

    def flush(self, timeout_s: float = 60.0) -> None:
        """Send every record and wait for every answer (KafkaError on timeout)."""
        for batch in list(self._open.values()):
            self._close(batch)
        deadline = time.monotonic() + timeout_s
        while any(self._queued.values()) or any(self._in_flight.values()):
            if time.monotonic() > deadline:
                raise KafkaError("REQUEST_TIMED_OUT", "flush: answers did not come in time")
            self._send_queued()
            self._read_answers(min(0.1, deadline - time.monotonic()))

    # -- transactions ---------------------------------------------------------------

    def init_transactions(self) -> None:
        """The transactional id's producer id and epoch become the batches' (fencing an
        older instance of the id)."""
        assert self.transactions is not None, "no transactional id"
        self.base.producer_id, self.base.producer_epoch = self.transactions.init_transactions()
        self.base._sequences.clear()

    def begin_transaction(self) -> None:
        assert self.transactions is not None, "no transactional id"
        self.transactions.begin_transaction()
        self._txn_failures = []

    def commit_transaction(self, timeout_s: float = 60.0) -> None:
        """Send and wait for every record, then commit; a batch that failed makes the
        transaction abort instead, and KafkaError says why."""
        assert self.transactions is not None, "no transactional id"
        self.flush(timeout_s)
        if self._txn_failures:
            self.transactions.end_transaction(commit=False)
            raise self._txn_failures[0]
        self.transactions.end_transaction(commit=True)

    def abort_transaction(self, timeout_s: float = 60.0) -> None:
        assert self.transactions is not None, "no transactional id"
        self.flush(timeout_s)
        self.transactions.end_transaction(commit=False)

    # -- batches ----------------------------------------------------------------------

    def _close(self, batch: _Batch) -> None:
        """The batch is encoded once, with the producer id, epoch and the partition's next
        sequence when idempotent or transactional, and queued for its leader."""
        del self._open[batch.tp]
        base, records = self.base, batch.records
        transactional = self.transactions is not None
        if self.transactions is not None:
            self.transactions.add_partitions([batch.tp])
        else:
            base.ensure_producer_id()
        if transactional or base.idempotent:
            batch.sequence = base.next_sequence(batch.tp, records.count)
            batch.data = records.build(
                compression_type=base.codec, producer_id=base.producer_id,
                producer_epoch=base.producer_epoch, is_transactional=transactional,
                base_sequence=batch.sequence,
            )  # fmt: skip
        else:
            batch.data = records.build(compression_type=base.codec)
        self._buffered += len(batch.data)
        self._queued.setdefault(self._leaders[batch.tp], deque()).append(batch)

    def _room(self, leader: int) -> bool:
        """Whether a lingered batch for `leader` would go out now (Kafka's sender drains a
        node only while it has fewer than max.in.flight requests unanswered)."""
        waiting = len(self._queued.get(leader, ())) + len(self._in_flight.get(leader, ()))
        return waiting < self.max_in_flight

    def _send_queued(self) -> None:
        """Send each leader's queued batches while its connection has room, a request
        holding the first sendable batch of each partition up to max.request.size
        (Sender.drain), a partition's batches in order: one waiting out its backoff holds
        back those behind it."""
        now = time.monotonic()
        failures: list[tuple[_Batch, KafkaError]] = []
        for leader, queued in list(self._queued.items()):
            in_flight = self._in_flight.setdefault(leader, deque())
            while queued and len(in_flight) < self.max_in_flight:
                batches = self._drain(queued, now)
                if not batches:
                    break
                try:
                    in_flight.append(_InFlight(self._send(leader, batches), batches))
                except KafkaError as e:
                    failures += [(batch, e) for batch in batches]
                    break
                if self.base.acks == 0:  # nothing comes back: done when written
                    in_flight.pop()
                    for batch in batches:
                        self._done(batch, -1)
        for batch, error in failures:  # never sent: no attempt spent (a node not ready)
            self._failed(batch, error, sent=False)

    def _drain(self, queued: deque[_Batch], now: float) -> list[_Batch]:
        """The next request's batches, taken from the front of a leader's queue: the first
        of each partition unless it waits out a backoff (the partition is then held),
        within max.request.size (one batch at least). It stops after passing over
        DRAIN_SKIPS batches, so that a deep queue (one partition's batches waiting for
        room on the connection) costs no more per request; what it passes over goes back
        to the front in its order."""
        first = queued[0]
        if len(queued) == 1 and first.not_before <= now:  # the usual case: nothing to pick
            return [queued.popleft()]
        batches: list[_Batch] = []
        seen: set[tuple[str, int]] = set()  # taken or held: their later batches wait
        kept: list[_Batch] = []
        size = 0
        while queued and len(kept) < DRAIN_SKIPS:
            batch = queued.popleft()
            if (batch.tp in seen or batch.not_before > now
                    or (batches and size + len(batch.data) > self.max_request_size)):  # fmt: skip
                seen.add(batch.tp)
                kept.append(batch)
                continue
            seen.add(batch.tp)
            batches.append(batch)
            size += len(batch.data)
        queued.extendleft(reversed(kept))
        return batches

    def _send(self, leader: int, batches: list[_Batch]) -> PendingResponse | None:
        R = m.ProduceRequest
        by_topic: dict[str, list] = {}
        for batch in batches:
            topic, partition = batch.tp
            by_topic.setdefault(topic, []).append(
                R.PartitionProduceData(index=partition, records=batch.data)
            )
        request = R(
            acks=self.base.acks, timeout_ms=self.base.request_timeout_ms,
            topic_data=[R.TopicProduceData(name=topic, partition_data=parts)
                        for topic, parts in by_topic.items()],
        )  # fmt: skip
        connection = self.base.client.connection(leader)
        if self.base.acks == 0:
            connection.send_no_response(ApiKey.PRODUCE, request)
            return None
        return connection.send_request(ApiKey.PRODUCE, request)

    # -- answers ----------------------------------------------------------------------

    def _read_answers(self, timeout_s: float) -> None:
        waiting = {leader: q for leader, q in self._in_flight.items() if q}
        if not waiting:
            if timeout_s > 0:
                time.sleep(timeout_s)
            return
        connections = {}
        for leader in waiting:
            try:
                connections[self.base.client.connection(leader)] = leader
            except KafkaError as e:  # gone, and it cannot be reached again: all lost
                lost = list(self._in_flight[leader])
                self._in_flight[leader].clear()
                for item in lost:  # a disconnection (NetworkException: retriable)
                    for batch in item.batches:
                        self._failed(batch, KafkaError("NETWORK_EXCEPTION", str(e)))
        if not connections:
            return
        readable, _, _ = select.select(list(connections), [], [], max(timeout_s, 0.0))
        for connection in readable:
            self._read_one(connections[connection], connection)

    def _read_one(self, leader: int, connection: BrokerConnection) -> None:
        entry = self._in_flight[leader].popleft()
        assert entry.pending is not None
        try:
            response = connection.receive(entry.pending)
        except KafkaError as e:  # the connection broke: every request on it is lost
            lost = [entry, *self._in_flight[leader]]
            self._in_flight[leader].clear()
            for item in lost:
                for batch in item.batches:
                    self._failed(batch, e)
            return
        if len(entry.batches) == 1:  # one partition asked, one answered
            answers = {entry.batches[0].tp: response.responses[0].partition_responses[0]}
        else:
            answers = {
                (topic.name, part.index): part
                for topic in response.responses
                for part in topic.partition_responses
            }
        for batch in entry.batches:
            part = answers.get(batch.tp)
            if part is None:  # the broker must answer every partition it was sent
                self._failed(
                    batch,
                    KafkaError(
                        "UNKNOWN_SERVER_ERROR", f"no answer for {batch.tp[0]}-{batch.tp[1]}"
                    ),
                )
            elif part.error_code == DUPLICATE_SEQUENCE_NUMBER:  # written before: done
                self._done(batch, part.base_offset)
            elif part.error_code:
                self._failed(batch, KafkaError(part.error_code, part.error_message))
            else:
                self._done(batch, part.base_offset)

    def _can_retry(self, batch: _Batch, error: KafkaError, sent: bool = True) -> bool:
        """Sender.canRetry: a retriable error within `retries` and delivery.timeout.ms of
        the batch's first record; with sequences, also an out-of-order refusal while an
        earlier batch of the partition is not answered. A batch never sent because its
        leader left the metadata (a broker killed) waits for the next leader, as batches
        stay in Kafka's accumulator until their node is ready."""
        expired = time.monotonic() > batch.created + self.delivery_timeout_s
        if (sent and batch.attempts >= self.retries) or expired or self.base.acks == 0:
            return False
        if error.retriable:
            return True
        if not sent and error.name == "BROKER_NOT_AVAILABLE":  # gone from the metadata:
            return True  # it waits for the leader the metadata names next
        return (
            error.name == "OUT_OF_ORDER_SEQUENCE_NUMBER"
            and batch.sequence >= 0
            and any(
                b.tp == batch.tp and 0 <= b.sequence < batch.sequence for b in self._unanswered()
            )
        )

    def _unanswered(self) -> list[_Batch]:
        return [*(b for q in self._queued.values() for b in q),
                *(b for q in self._in_flight.values() for e in q for b in e.batches)]  # fmt: skip

    def _retry(self, batch: _Batch, sent: bool = True) -> None:
        """Queue the batch again for its partition's leader as the metadata now says,
        among its partition's other queued batches in sequence order; they all move to
        that leader. A batch that could not be sent (its leader unreachable) spends no
        attempt, as Kafka's sender drains only nodes that are ready."""
        batch.attempts += sent
        batch.not_before = time.monotonic() + self.base.retry_backoff_ms / 1000
        self.base.forget_metadata()
        topic, partition = batch.tp
        try:
            leader = self.base.topic_info(topic).partitions[partition].leader
        except KafkaError:
            leader = self._leaders.get(batch.tp, -1)
        if batch.tp in self._open:
            self._leaders[batch.tp] = leader
        ours = [batch]
        for queued in self._queued.values():
            mine = [b for b in queued if b.tp == batch.tp]
            for b in mine:
                queued.remove(b)
            ours += mine
        ours.sort(key=lambda b: (b.sequence, b.created) if b.sequence >= 0 else (-1, 0.0))
        if batch.sequence < 0:  # no sequences: the retried batch goes first (addFirst)
            ours.remove(batch)
            ours.insert(0, batch)
        self._queued.setdefault(leader, deque()).extendleft(reversed(ours))

    def _done(self, batch: _Batch, base_offset: int) -> None:
        self._buffered -= len(batch.data)
        if batch.any_callback:
            offsets = count(base_offset) if base_offset >= 0 else repeat(-1)
            for callback, offset in zip(batch.callbacks, offsets, strict=False):  # offsets: endless
                if callback is not None:
                    callback(None, offset)
        for i, callback in batch.runs:
            callback(None, base_offset + i if base_offset >= 0 else -1)

    def _failed(self, batch: _Batch, error: KafkaError, sent: bool = True) -> None:
        if self._can_retry(batch, error, sent):
            self._retry(batch, sent)
            return
        self._buffered -= len(batch.data)
        if error.retriable:  # a leader moved: ask for the metadata again next time
            self.base.forget_metadata()
            self._leaders = {tp: b for tp, b in self._leaders.items() if tp in self._open}
        if self.transactions is not None:
            self._txn_failures.append(error)  # the transaction must abort
        elif self.base.idempotent:
            self.base.reset_producer_id()
        for callback in (*batch.callbacks, *(callback for _, callback in batch.runs)):
            if callback is not None:
                callback(error, -1)
