"""`kt producer-perf-test` (Kafka's ProducerPerformance): send records as fast as asked,
and print the rate and the send-to-acknowledgement latency as Kafka's tool prints them.

By default (`run_producer`) every record goes through kt's producer as Kafka's tool sends
through the Java producer: `send()` with a callback per record (kt.client.sender: batched
by the client per batch.size and linger.ms, pipelined up to
max.in.flight.requests.per.connection per leader), throttled as ThroughputThrottler
does, each record's latency from its send() to its callback, so that the figures compare
with Kafka's tool against the same broker.

`run` (`--pre-encoded-batches`) measures the broker more than a client: a batch of
`batch.size` worth of records is encoded once, as a template (random payloads as Kafka's
tool draws them), each batch sent is a copy with its timestamps and CRC set, and Produce
requests (v7) are framed by hand and pipelined over plain sockets. It skips the
per-record append, the callbacks and the client's batching decisions. Its latency is
from the moment a record was taken for sending to its batch's answer. Either way
latencies are sampled as Kafka's Stats samples them.
"""

from __future__ import annotations

import random
import socket
import struct
import time
from collections import deque
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TextIO

from crc32c_rs import crc32c

from kt.client.client import KafkaClient
from kt.errors import KafkaError, error_for
from kt.protocol import ApiKey, decode_response
from kt.storage.record_batch import Record, build_batch

PRODUCE_VERSION = 7
REPORTING_INTERVAL_MS = 5000
_FRAME = struct.Struct(">i")
_TIMESTAMPS = struct.Struct(">qq")  # first and max timestamp, at byte 27 of a batch
_TIMESTAMPS_AT = 27
_CRC_AT, _ATTRIBUTES_AT = 17, 21
_SEQUENCE = struct.Struct(">i")  # baseSequence, at byte 53 of a batch
_SEQUENCE_AT = 53


class PerfError(Exception):
    """A failure to report as one line."""


@dataclass
class Stats:
    """ProducerPerformance.Stats: totals, a 5 s window, and sampled latencies."""

    num_records: int
    out: TextIO
    reporting_interval_ms: int = REPORTING_INTERVAL_MS
    start: float = field(default_factory=time.time)
    count: int = 0
    bytes: int = 0
    total_latency: int = 0
    max_latency: int = 0
    iteration: int = 0
    window_start: float = 0.0
    window_count: int = 0
    window_bytes: int = 0
    window_total_latency: int = 0
    window_max_latency: int = 0
    latencies: list[int] = field(default_factory=list)
    errors: list[KafkaError] = field(default_factory=list)
    # Acknowledged records' latencies and bytes not yet counted: each callback appends
    # its record's, and they are counted a window (or a batch) at a time by fold().
    pending: list[int] = field(default_factory=list)
    pending_bytes: int = 0

    def __post_init__(self) -> None:
        self.window_start = self.start
        self.window_due_ms = self.start * 1000 + self.reporting_interval_ms
        self.sampling = self.num_records // min(self.num_records, 500_000)

    def record_batch(self, send_times_ms: list[int], size: int, now_ms: int) -> None:
        """Every record of an acknowledged batch (records sent at `send_times_ms`)."""
        self.pending.extend([now_ms - sent for sent in send_times_ms])
        self.pending_bytes += size * len(send_times_ms)
        self.fold()
        if now_ms >= self.window_due_ms:
            self.print_window()

    def delivered(self, sent_ms: int, size: int, error: KafkaError | None, _offset: int) -> None:
        """PerfCallback.onCompletion, bound to one record's send time and size (every
        record's callback: lean, its record counted with others by fold())."""
        if error is not None:
            self.errors.append(error)  # Kafka's PerfCallback prints the exception
            return
        now_ms = time.time_ns() // 1_000_000
        self.pending.append(now_ms - sent_ms)
        self.pending_bytes += size
        if now_ms >= self.window_due_ms:
            self.print_window()

    def fold(self) -> None:
        """Count the pending records as Java's Stats.record counts each: totals, maxima,
        and every `sampling`th record's latency."""
        pending = self.pending
        if not pending:
            return
        n, latency_sum, worst = len(pending), sum(pending), max(pending)
        self.count += n
        self.bytes += self.pending_bytes
        self.total_latency += latency_sum
        self.window_count += n
        self.window_bytes += self.pending_bytes
        self.window_total_latency += latency_sum
        self.max_latency = max(self.max_latency, worst)
        self.window_max_latency = max(self.window_max_latency, worst)
        first = -self.iteration % self.sampling  # the records whose iteration is sampled
        self.latencies.extend(pending[first :: self.sampling])
        self.iteration += n
        pending.clear()
        self.pending_bytes = 0

    def print_window(self) -> None:
        """The window's line; a new window starts."""
        self.fold()
        elapsed = max(time.time() * 1000 - self.window_start * 1000, 1e-3)
        self.out.write(
            f"{self.window_count} records sent, {1000 * self.window_count / elapsed:.1f} "
            f"records/sec ({1000 * self.window_bytes / elapsed / (1024 * 1024):.2f} MB/sec), "
            f"{self.window_total_latency / max(self.window_count, 1):.1f} ms avg latency, "
            f"{float(self.window_max_latency):.1f} ms max latency.\n"
        )
        self.out.flush()
        self.window_start = time.time()
        self.window_due_ms = self.window_start * 1000 + self.reporting_interval_ms
        self.window_count = self.window_bytes = 0
        self.window_total_latency = self.window_max_latency = 0

    def print_total(self) -> None:
        """Kafka 3.9's last line: records/sec with Java's %f (six decimals)."""
        self.fold()
        elapsed = max(time.time() * 1000 - self.start * 1000, 1e-3)
        samples = sorted(self.latencies)
        percentiles = [samples[int(p * len(samples))] if samples else 0
                       for p in (0.5, 0.95, 0.99, 0.999)]  # fmt: skip
        self.out.write(
            f"{self.count} records sent, {1000 * self.count / elapsed:f} records/sec "
            f"({1000 * self.bytes / elapsed / (1024 * 1024):.2f} MB/sec), "
            f"{self.total_latency / max(self.count, 1):.2f} ms avg latency, "
            f"{float(self.max_latency):.2f} ms max latency, {percentiles[0]} ms 50th, "
            f"{percentiles[1]} ms 95th, {percentiles[2]} ms 99th, {percentiles[3]} ms 99.9th.\n"
        )
        self.out.flush()


def random_payloads(record_size: int, count: int, seed: int = 0) -> list[bytes]:
    """Payloads of uppercase letters, as Kafka's generateRandomPayload draws them."""
    rng = random.Random(seed)
    return [bytes(rng.choices(range(65, 91), k=record_size)) for _ in range(count)]


class BatchTemplates:
    """Encoded batches of n records each (n from 1 to a full batch), built once; each copy
    gets its timestamps and, from an idempotent producer, its sequence number."""

    def __init__(
        self, payloads: list[bytes], batch_size: int, compression: int,
        producer_id: int = -1, producer_epoch: int = -1,
    ) -> None:  # fmt: skip
        self.payloads = payloads
        self.compression = compression
        self.producer_id, self.producer_epoch = producer_id, producer_epoch
        size = max(len(p) for p in payloads) + 16
        self.full = max(1, batch_size // size)
        self._cache: dict[int, bytes] = {}

    def batch(self, n: int, timestamp_ms: int, sequence: int = -1) -> bytes:
        template = self._cache.get(n)
        if template is None:
            records = [Record(None, 0, None, self.payloads[i % len(self.payloads)], ())
                       for i in range(n)]  # fmt: skip
            template = self._cache[n] = build_batch(
                records, compression_type=self.compression, producer_id=self.producer_id,
                producer_epoch=self.producer_epoch, base_sequence=0 if sequence >= 0 else -1,
            )  # fmt: skip
        out = bytearray(template)
        _TIMESTAMPS.pack_into(out, _TIMESTAMPS_AT, timestamp_ms, timestamp_ms)
        if sequence >= 0:
            _SEQUENCE.pack_into(out, _SEQUENCE_AT, sequence)
        out[_CRC_AT:_ATTRIBUTES_AT] = crc32c(memoryview(out)[_ATTRIBUTES_AT:]).to_bytes(4, "big")
        return bytes(out)


def produce_frame(
    correlation_id: int, client_id: bytes, acks: int, timeout_ms: int, topic: bytes,
    partition: int, batch: bytes,
) -> bytes:  # fmt: skip
    """A Produce v7 request (header v1), framed."""
    body = b"".join((
        struct.pack(">hhih", ApiKey.PRODUCE, PRODUCE_VERSION, correlation_id, len(client_id)),
        client_id,
        struct.pack(">hhii", -1, acks, timeout_ms, 1),  # no transactional id; one topic
        struct.pack(">h", len(topic)), topic,
        struct.pack(">iii", 1, partition, len(batch)), batch,
    ))  # fmt: skip
    return _FRAME.pack(len(body)) + body


@dataclass
class InFlight:
    correlation_id: int
    partition: int
    send_times: list[int]


class Connection:
    """One leader: requests written at once, answers read as they come, in order."""

    def __init__(self, host: str, port: int) -> None:
        self.sock = socket.create_connection((host, port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.in_flight: deque[InFlight] = deque()
        self._buffer = bytearray()

    def send(self, frame: bytes, entry: InFlight) -> None:
        self.sock.sendall(frame)
        self.in_flight.append(entry)

    def read_answers(self, block: bool) -> list[tuple[InFlight, bytes]]:
        self.sock.setblocking(block)
        try:
            chunk = self.sock.recv(1 << 16)
        except BlockingIOError:
            return []
        finally:
            self.sock.setblocking(True)
        if not chunk:
            raise PerfError("the broker closed the connection")
        self._buffer += chunk
        answers = []
        while len(self._buffer) >= 4:
            (size,) = _FRAME.unpack_from(self._buffer)
            if len(self._buffer) < 4 + size:
                break
            payload = bytes(self._buffer[4 : 4 + size])
            del self._buffer[: 4 + size]
            answers.append((self.in_flight.popleft(), payload))
        return answers

    def close(self) -> None:
        self.sock.close()


@dataclass
class PerfConfig:
    topic: str
    num_records: int
    payloads: list[bytes]
    throughput: float
    acks: int = 1
    batch_size: int = 16384
    compression: int = 0
    max_in_flight: int = 5
    request_timeout_ms: int = 30000
    client_id: str = "perf-producer-client"
    idempotent: bool = False  # batches with a producer id and sequences, as Kafka's default
    linger_ms: float = 0.0  # the Java producer's default in Kafka 3.9
    buffer_memory: int = 33554432  # bytes of records waiting to be sent, at most
    transactional_id: str | None = None  # with it, transactions of transaction_duration_ms
    transaction_duration_ms: int = 0
    transaction_timeout_ms: int = 60000
    security: dict[str, Any] = field(default_factory=dict)  # KafkaClient's tls and sasl


# Records between two polls of the producer (answers read, lingered batches closed): the
# sender's turn, as Kafka's Sender thread takes one while send() appends. At linger.ms=0 a
# batch is sent at the poll after it opened, so this is about how many 100 B records a
# batch gets (16 KiB of batch.size holds about 140): 64 gave batches of 65 records and
# cost about 20% of the throughput in per-batch work (encoding, request, answer).
POLL_EVERY = 128


def run_producer(bootstrap: str, config: PerfConfig, out: TextIO) -> Stats:
    """ProducerPerformance's loop through kt's producer: each record sent with a callback
    that records its latency (ms from send() to the callback); returns the stats, after
    printing the final line."""
    from kt.client.producer import Producer
    from kt.client.sender import PipelinedProducer

    codecs = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
    client = KafkaClient(bootstrap, client_id=config.client_id, **config.security)
    base = Producer(
        client, acks=config.acks, compression=codecs[config.compression],
        batch_size=config.batch_size, request_timeout_ms=config.request_timeout_ms,
        idempotent=config.idempotent,
    )  # fmt: skip
    transactions = None
    if config.transactional_id is not None:
        from kt.client.transaction_manager import TransactionManager

        transactions = TransactionManager(
            client, config.transactional_id, transaction_timeout_ms=config.transaction_timeout_ms
        )
    producer = PipelinedProducer(base, linger_ms=config.linger_ms,
                                 max_in_flight=config.max_in_flight,
                                 buffer_memory=config.buffer_memory,
                                 transactions=transactions)  # fmt: skip
    stats = Stats(config.num_records, out)
    payloads = config.payloads
    delivered, send, topic, clock = stats.delivered, producer.send, config.topic, time.time
    clock_ns = time.time_ns  # milliseconds as Stats.delivered reads them
    n_payloads, throughput = len(payloads), config.throughput
    transactional = transactions is not None

    try:
        try:
            base.topic_info(topic)
        except KafkaError as e:
            raise PerfError(f"Topic {topic} not present in metadata after 30000 ms: "
                            f"{e.name}") from None  # fmt: skip
        if transactions is not None:
            producer.init_transactions()
        txn_started_ms = None  # the open transaction's start (ProducerPerformance's loop)
        start_ms = int(clock() * 1000)
        for i in range(config.num_records):
            payload = payloads[i % n_payloads]
            sent_ms = clock_ns() // 1_000_000
            if transactional and txn_started_ms is None:
                producer.begin_transaction()
                txn_started_ms = sent_ms
            # Kafka's tool makes a PerfCallback per record: here a partial of Stats.delivered
            send(topic, payload, None, partial(delivered, sent_ms, len(payload)), None, sent_ms)
            if txn_started_ms is not None and (
                config.transaction_duration_ms <= sent_ms - txn_started_ms
            ):
                producer.commit_transaction(config.request_timeout_ms / 1000 + 60)
                txn_started_ms = None
            if throughput > 0:  # ThroughputThrottler: wait until the next is due
                due_ms = start_ms + 1000 * (i + 1) / throughput
                if due_ms > clock() * 1000:
                    while (wait := (due_ms - clock() * 1000) / 1000) > 0:
                        producer.poll(wait)  # answers may end the wait early
                    continue
            if i % POLL_EVERY == 0:
                producer.poll(0)
        if txn_started_ms is not None:
            producer.commit_transaction(config.request_timeout_ms / 1000 + 60)
        producer.flush(config.request_timeout_ms / 1000 + 60)
    finally:
        if transactions is not None:
            transactions.close()
        client.close()
    for error in stats.errors[:1]:
        out.write(f"{error.name}: {error}\n")
    stats.print_total()
    return stats


def run(bootstrap: str, config: PerfConfig, out: TextIO) -> Stats:
    """Send `num_records` records to the topic's partitions in turn (a batch each, as the
    sticky partitioner fills one partition's batch before the next); returns the stats,
    after printing the final line."""
    client = KafkaClient(bootstrap, client_id=config.client_id)
    try:
        info = client.metadata([config.topic], allow_auto_create=True).get(config.topic)
        deadline = time.monotonic() + 30
        while (
            info is None
            or info.error_code
            or not info.partitions
            or any(p.leader < 0 for p in info.partitions.values())
        ):
            if time.monotonic() > deadline:
                code = info.error_code if info is not None else 3
                raise PerfError(f"Topic {config.topic} not present in metadata after 30000 ms: "
                                f"{error_for(code or 5).name}")  # fmt: skip
            time.sleep(0.1)
            info = client.metadata([config.topic], allow_auto_create=True).get(config.topic)
        partitions = sorted(info.partitions)
        leaders = {p: info.partitions[p].leader for p in partitions}
        endpoints = {b: client.brokers[b][:2] for b in set(leaders.values())}
        producer_id, epoch = _init_producer_id(client) if config.idempotent else (-1, -1)
    finally:
        client.close()
    connections = {b: Connection(*endpoints[b]) for b in endpoints}
    stats = Stats(config.num_records, out)
    templates = BatchTemplates(
        config.payloads, config.batch_size, config.compression, producer_id, epoch
    )
    record_size = len(config.payloads[0])
    try:
        _send_all(config, connections, leaders, partitions, templates, stats, record_size)
    finally:
        for connection in connections.values():
            connection.close()
    stats.print_total()
    return stats


def _init_producer_id(client: KafkaClient) -> tuple[int, int]:
    from kt.protocol import messages as m

    response = client.any_connection().send(
        ApiKey.INIT_PRODUCER_ID,
        m.InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=-1),
    )
    if response.error_code:
        error = error_for(response.error_code)
        raise PerfError(f"InitProducerId: {error.name}: {error.message}")
    return response.producer_id, response.producer_epoch


def _send_all(
    config: PerfConfig, connections: dict[int, Connection], leaders: dict[int, int],
    partitions: list[int], templates: BatchTemplates, stats: Stats, record_size: int,
) -> None:  # fmt: skip
    """The sender: a batch goes out when full (or, throttled, at once: linger.ms 0) while
    its leader has fewer than max.in.flight requests unanswered."""
    topic, client_id = config.topic.encode(), config.client_id.encode()
    throttled = config.throughput > 0
    start_ms = int(time.time() * 1000)
    correlation_id = 0
    sent = 0
    turn = 0
    sequences = dict.fromkeys(partitions, 0) if config.idempotent else {}
    pending: list[int] = []  # send times of the records waiting for their batch

    def handle(entry: InFlight, payload: bytes) -> None:
        if config.acks == 0:
            return
        _, response = decode_response(ApiKey.PRODUCE, PRODUCE_VERSION, payload)
        for part in response.responses[0].partition_responses:
            if part.error_code:
                error = error_for(part.error_code)
                raise PerfError(f"{error.name}: {part.error_message or error.message}")
        stats.record_batch(entry.send_times, record_size, int(time.time() * 1000))

    def drain(block: bool) -> None:
        for connection in connections.values():
            if connection.in_flight:
                for entry, payload in connection.read_answers(block):
                    handle(entry, payload)

    while True:
        now_ms = int(time.time() * 1000)
        if sent < config.num_records:  # take the records that are due
            room = templates.full - len(pending)
            if throttled:
                due = min(
                    config.num_records, int((now_ms - start_ms) * config.throughput / 1000) + 1
                )
                take = min(room, due - sent)
            else:
                take = min(room, config.num_records - sent)
            if take > 0:
                pending.extend([now_ms] * take)
                sent += take
        partition = partitions[turn % len(partitions)]
        connection = connections[leaders[partition]]
        ready = len(pending) >= templates.full or sent >= config.num_records or throttled
        if pending and ready and len(connection.in_flight) < config.max_in_flight:
            correlation_id += 1
            sequence = sequences.get(partition, -1)
            if sequence >= 0:
                sequences[partition] = (sequence + len(pending)) % (2**31)
            frame = produce_frame(correlation_id, client_id, config.acks,
                                  config.request_timeout_ms, topic, partition,
                                  templates.batch(len(pending), now_ms, sequence))  # fmt: skip
            if config.acks == 0:  # no answer comes: counted as sent
                connection.sock.sendall(frame)
                stats.record_batch(pending, record_size, int(time.time() * 1000))
            else:
                connection.send(frame, InFlight(correlation_id, partition, pending))
            pending = []
            turn += 1
            drain(False)
        elif pending and ready:
            drain(True)  # every slot taken: wait for an answer
        elif sent < config.num_records:  # throttled: wait for the next record's time
            drain(False)
            next_due = start_ms + 1000 * sent / config.throughput
            time.sleep(max(0.0, min((next_due - time.time() * 1000) / 1000, 0.005)))
        elif any(c.in_flight for c in connections.values()):
            drain(True)
        else:
            return
