"""A small synchronous producer for kt's tools (console producer, spark-import, the
Spark sink).

Records are grouped per partition into v2 batches (kt.storage.record_batch.build_batch)
and sent to each partition's leader in one Produce request per broker. Retriable errors
refresh metadata and retry, up to `retries` times; anything else is reported to the
caller per record batch.

Idempotent by default, as Kafka's producer is since 3.0 (enable.idempotence=true with
acks=all): the producer takes an id from InitProducerId, and each batch is encoded once
with that id, its epoch and the partition's next sequence number, so a retry sends the
same bytes and a leader that already wrote them answers with the first write's offsets
instead of writing them twice (a leader fail-over, a lost answer). Invariant: at most one
batch per partition is unanswered, so sequences reach each leader in order. A batch that
fails for good leaves its partition's sequence unknown: the producer then takes a new id,
as the Java producer resets it, and numbers from 0 again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from kt.client.client import KafkaClient, TopicInfo
from kt.client.partitioner import StickyPartitioner
from kt.client.producer_config import CODECS
from kt.errors import KafkaError, authorization_refusal, error_for
from kt.protocol import ApiKey
from kt.protocol import messages as m
from kt.storage.record_batch import Record, build_batch

DUPLICATE_SEQUENCE_NUMBER = 46  # an older batch than the leader remembers: written before


@dataclass
class SendResult:
    topic: str
    partition: int
    base_offset: int
    error_code: int = 0
    error_message: str | None = None
    count: int = 0


@dataclass
class _Pending:
    records: list[Record] = field(default_factory=list)
    size: int = 0
    data: bytes | None = None  # encoded at its first send; a retry sends the same bytes


class Producer:
    """Buffers records per partition; `flush()` sends them and returns the results."""

    def __init__(
        self,
        client: KafkaClient,
        *,
        acks: int = -1,
        compression: str = "none",
        batch_size: int = 16384,
        request_timeout_ms: int = 30000,
        retries: int = 3,
        retry_backoff_ms: int = 100,
        max_block_ms: int = 60000,
        buffer_memory: int = 33554432,
        idempotent: bool = True,
    ) -> None:
        if compression not in CODECS:
            raise ValueError(f"unknown compression codec {compression}")
        self.client = client
        self.acks = acks
        self.codec = CODECS[compression]
        self.batch_size = batch_size
        self.request_timeout_ms = request_timeout_ms
        self.retries = retries
        self.retry_backoff_ms = retry_backoff_ms
        self.max_block_ms = max_block_ms
        self.buffer_memory = buffer_memory
        self._buffered = 0
        self.partitioner = StickyPartitioner()
        self._pending: dict[tuple[str, int], _Pending] = {}
        self._topics: dict[str, TopicInfo] = {}
        self.idempotent = idempotent
        self.producer_id, self.producer_epoch = -1, -1
        self._sequences: dict[tuple[str, int], int] = {}  # the next, per partition

    def forget_metadata(self) -> None:
        """Ask for the topics' leaders again at the next send (a leader moved)."""
        self._topics.clear()

    def topic_info(self, topic: str) -> TopicInfo:
        """The topic's partitions and leaders, cached; waits (max.block.ms) for a leader of
        each, creating the topic if the broker auto-creates."""
        info = self._topics.get(topic)
        if info is not None:  # known, every partition led (a retry clears the cache)
            return info
        deadline = time.monotonic() + self.max_block_ms / 1000
        while (
            info is None
            or not info.partitions
            or any(p.leader < 0 for p in info.partitions.values())
        ):
            try:
                info = self.client.metadata([topic], allow_auto_create=True).get(topic)
            except KafkaError as e:  # no broker answered: until max.block.ms, try again
                if not e.retriable or time.monotonic() > deadline:
                    raise
                info = None
            if (
                info is not None
                and info.partitions
                and all(p.leader >= 0 for p in info.partitions.values())
            ):
                break
            if info is not None and (refused := authorization_refusal(info.error_code, topic)):
                raise refused  # no point waiting max.block.ms: Kafka's producer fails at once
            if time.monotonic() > deadline:
                code = info.error_code if info is not None else 3
                raise KafkaError(code or "LEADER_NOT_AVAILABLE", f"Topic {topic} not available")
            time.sleep(self.retry_backoff_ms / 1000)
        self._topics[topic] = info
        return info

    def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        headers: list[tuple[str, bytes | None]] | None = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
    ) -> list[SendResult]:
        """Buffer one record; returns the results of any batch this filled and sent."""
        info = self.topic_info(topic)
        if partition is None:
            partition = self.partitioner.partition(topic, key, len(info.partitions))
        if partition not in info.partitions:
            raise KafkaError("UNKNOWN_TOPIC_OR_PARTITION", f"{topic}-{partition} does not exist")
        pending = self._pending.setdefault((topic, partition), _Pending())
        ts = timestamp_ms if timestamp_ms is not None else int(time.time() * 1000)
        pending.records.append(Record(None, ts, key, value, headers or ()))
        size = len(value or b"") + len(key or b"") + 20
        pending.size += size
        self._buffered += size
        if pending.size >= self.batch_size:
            self.partitioner.on_new_batch(topic, len(info.partitions))
            return self.flush()
        if self._buffered >= self.buffer_memory:  # buffer.memory spent: send before more
            return self.flush()
        return []

    def flush(self) -> list[SendResult]:
        """Send everything buffered; retriable failures are retried after a refresh."""
        pending, self._pending = self._pending, {}
        self._buffered = 0
        results: list[SendResult] = []
        attempt = 0
        while pending:
            self._encode(pending)
            failed: dict[tuple[str, int], _Pending] = {}
            for result, batch in self._send_once(pending):
                if result.error_code == DUPLICATE_SEQUENCE_NUMBER:  # written before: done
                    result.error_code, result.error_message = 0, None
                retriable = result.error_code and error_for(result.error_code).retriable
                if retriable and attempt < self.retries:
                    failed[(result.topic, result.partition)] = batch
                else:
                    results.append(result)
            if failed:
                attempt += 1
                time.sleep(self.retry_backoff_ms / 1000)
                self._topics.clear()
                for topic, _ in failed:
                    self.topic_info(topic)
            pending = failed
        if self.idempotent and any(r.error_code for r in results):
            self.reset_producer_id()
        return results

    def _encode(self, pending: dict[tuple[str, int], _Pending]) -> None:
        """Encode each batch not sent yet: with the producer id and the partition's next
        sequence when idempotent."""
        self.ensure_producer_id()
        for tp, batch in pending.items():
            if batch.data is not None:
                continue
            if not self.idempotent:
                batch.data = build_batch(batch.records, compression_type=self.codec)
                continue
            batch.data = build_batch(
                batch.records, compression_type=self.codec, producer_id=self.producer_id,
                producer_epoch=self.producer_epoch,
                base_sequence=self.next_sequence(tp, len(batch.records)),
            )  # fmt: skip

    def ensure_producer_id(self) -> None:
        """An idempotent producer's id, taken at its first batch and after a reset."""
        if self.idempotent and self.producer_id < 0:
            self._init_producer_id()

    def next_sequence(self, tp: tuple[str, int], records: int) -> int:
        """The partition's next sequence number for a batch of `records` records."""
        sequence = self._sequences.get(tp, 0)
        self._sequences[tp] = (sequence + records) % (2**31)
        return sequence

    def _init_producer_id(self) -> None:
        """InitProducerId without a transactional id: a new producer id, epoch 0."""
        deadline = time.monotonic() + self.max_block_ms / 1000
        while True:
            try:
                response = self.client.any_connection().send(
                    ApiKey.INIT_PRODUCER_ID,
                    m.InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=-1),
                )
            except KafkaError as e:
                if not e.retriable or time.monotonic() > deadline:
                    raise
                time.sleep(self.retry_backoff_ms / 1000)
                continue
            if not response.error_code:
                break
            if not error_for(response.error_code).retriable or time.monotonic() > deadline:
                raise KafkaError(response.error_code, "InitProducerId failed")
            time.sleep(self.retry_backoff_ms / 1000)
        self.producer_id, self.producer_epoch = response.producer_id, response.producer_epoch
        self._sequences.clear()

    def reset_producer_id(self) -> None:
        """A batch failed for good: whether it was written is unknown, so its partition's
        next sequence is too. The next send takes a new producer id (sequences from 0)."""
        self.producer_id, self.producer_epoch = -1, -1
        self._sequences.clear()

    def _send_once(
        self, pending: dict[tuple[str, int], _Pending]
    ) -> list[tuple[SendResult, _Pending]]:
        by_leader: dict[int, dict[tuple[str, int], _Pending]] = {}
        for (topic, partition), batch in pending.items():
            leader = self.topic_info(topic).partitions[partition].leader
            by_leader.setdefault(leader, {})[(topic, partition)] = batch
        out: list[tuple[SendResult, _Pending]] = []
        for leader, batches in by_leader.items():
            out += self._produce(leader, batches)
        return out

    def _produce(
        self, leader: int, batches: dict[tuple[str, int], _Pending]
    ) -> list[tuple[SendResult, _Pending]]:
        R = m.ProduceRequest
        topics: dict[str, list] = {}
        for (topic, partition), batch in batches.items():
            topics.setdefault(topic, []).append(
                R.PartitionProduceData(index=partition, records=batch.data)
            )
        request = R(
            acks=self.acks,
            timeout_ms=self.request_timeout_ms,
            topic_data=[R.TopicProduceData(name=t, partition_data=p) for t, p in topics.items()],
        )
        try:
            conn = self.client.connection(leader)
            if self.acks == 0:
                conn.send_no_response(ApiKey.PRODUCE, request)
                return [
                    (SendResult(t, p, -1, count=len(b.records)), b) for (t, p), b in batches.items()
                ]
            response = conn.send(ApiKey.PRODUCE, request)
        except KafkaError as e:
            return [(SendResult(t, p, -1, e.code, str(e)), b) for (t, p), b in batches.items()]
        out = []
        for topic in response.responses:
            for part in topic.partition_responses:
                batch = batches[(topic.name, part.index)]
                message = getattr(part, "error_message", None)
                out.append(
                    (
                        SendResult(
                            topic.name,
                            part.index,
                            part.base_offset,
                            part.error_code,
                            message,
                            len(batch.records),
                        ),  # fmt: skip
                        batch,
                    )
                )
        return out
