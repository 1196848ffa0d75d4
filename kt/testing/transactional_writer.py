"""A transactional producer kept at work through broker faults or swaps, and what a
read_committed reader must then find (the rolling-migration test runs one beside
kt.testing.migration's load).

Each transaction writes TXN_RECORDS records with unique values to one topic and commits.
Whatever the brokers do meanwhile, the writer goes on as an application would with
confluent-kafka's transactional API: a transaction that must abort is aborted, a
retriable commit is asked again, and a fatal error (the producer fenced or its state
lost) starts a new producer on the same transactional id, which fences the old one. Each
transaction's values end up in `committed`, `aborted` or, when the outcome could not be
known (the commit's answer lost with a fatal error), `unknown`.

    writer = TransactionalWriter(bootstrap, "ledger"); writer.start()
    ...
    writer.stop()
    assert writer.check() == []      # every commit read once, no abort read
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

TXN_RECORDS = 10


class TransactionalWriter:
    def __init__(self, bootstrap: str, topic: str, partitions: int = 3) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.partitions = partitions
        self.transactional_id = f"writer-{uuid.uuid4().hex[:8]}"
        self.committed: set[bytes] = set()
        self.aborted: set[bytes] = set()
        self.unknown: set[bytes] = set()
        self.errors: list[str] = []
        self._running = threading.Event()
        self._thread: threading.Thread | None = None
        self._next = 0

    def start(self) -> None:
        self._running.set()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def committed_count(self) -> int:
        return len(self.committed)

    def stop(self, timeout_s: float = 180.0) -> None:
        self._running.clear()
        assert self._thread is not None
        self._thread.join(timeout_s)
        assert not self._thread.is_alive(), "the transactional writer did not stop"

    def _producer(self) -> Any:
        from confluent_kafka import Producer

        producer = Producer({
            "bootstrap.servers": self.bootstrap, "transactional.id": self.transactional_id,
            "transaction.timeout.ms": 60_000, "linger.ms": 5,
        })  # fmt: skip
        producer.init_transactions(120)
        return producer

    def _run(self) -> None:
        from confluent_kafka import KafkaException

        producer = self._producer()
        while self._running.is_set():
            values = [b"t%d" % (self._next + i) for i in range(TXN_RECORDS)]
            self._next += TXN_RECORDS
            try:
                producer.begin_transaction()
                for value in values:
                    producer.produce(self.topic, value=value)
                self._commit(producer)
                self.committed.update(values)
            except KafkaException as e:
                error = e.args[0]
                if error.txn_requires_abort():
                    try:
                        producer.abort_transaction(120)
                        self.aborted.update(values)
                        continue
                    except KafkaException as again:
                        error = again.args[0]
                self.errors.append(str(error))
                self.unknown.update(values)
                producer = self._producer()  # fences the old one; its transaction aborts
            time.sleep(0.05)
        producer.flush(60)

    @staticmethod
    def _commit(producer: Any) -> None:
        """commit_transaction, asked again while its error is retriable (librdkafka's
        documented loop)."""
        from confluent_kafka import KafkaException

        while True:
            try:
                producer.commit_transaction(120)
                return
            except KafkaException as e:
                if not e.args[0].retriable():
                    raise

    def read_committed(self, timeout_s: float = 120.0) -> list[bytes]:
        """Every value a read_committed consumer reads from the topic, in order read."""
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer({
            "bootstrap.servers": self.bootstrap, "group.id": f"check-{uuid.uuid4()}",
            "isolation.level": "read_committed", "enable.auto.commit": False,
        })  # fmt: skip
        assigned = [TopicPartition(self.topic, p, 0) for p in range(self.partitions)]
        ends = {p: consumer.get_watermark_offsets(TopicPartition(self.topic, p), timeout=30)[1]
                for p in range(self.partitions)}  # fmt: skip
        consumer.assign(assigned)
        values: list[bytes] = []
        deadline = time.monotonic() + timeout_s
        try:
            while time.monotonic() < deadline:
                for message in consumer.consume(1000, timeout=0.5):
                    if message.error() is None:
                        values.append(message.value())
                positions = consumer.position(assigned)
                if all(tp.offset >= ends[tp.partition] for tp in positions):
                    return values
            raise TimeoutError(f"read_committed did not reach {ends} in {timeout_s} s")
        finally:
            consumer.close()

    def check(self) -> list[str]:
        """What a read_committed reader finds wrong: a committed value missing or read
        twice, an aborted value read; [] when all is well."""
        read = self.read_committed()
        problems = []
        seen = set(read)
        if len(seen) != len(read):
            problems.append(f"{len(read) - len(seen)} values read twice")
        if missing := self.committed - seen:
            problems.append(f"{len(missing)} committed values missing, e.g. {sorted(missing)[:3]}")
        if shown := self.aborted & seen:
            problems.append(f"{len(shown)} aborted values read, e.g. {sorted(shown)[:3]}")
        return problems
