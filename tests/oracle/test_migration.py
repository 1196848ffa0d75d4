"""The rolling migration a Kafka operator would do, one broker at a time: a kt broker on
ZooKeeper is stopped and Apache Kafka 3.9 starts with the same `broker.id`, `log.dirs` and
`zookeeper.connect`, and serves every record (offsets, timestamps, keys, values, headers)
and every committed group offset; then kt takes the directory back from Kafka and serves
what both wrote.
"""

from __future__ import annotations

import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kt.reference_kafka import SIGTERM_EXIT

TOPIC = "migrated"
PARTITIONS = 3
Stored = dict[tuple[int, int], tuple[int, bytes | None, bytes | None, list]]


def record(i: int) -> tuple[bytes, bytes | None, list[tuple[str, bytes]]]:
    """The i-th record's key, value and headers."""
    value = None if i % 50 == 0 else b"value %d" % i
    return b"k%d" % i, value, [("n", b"%d" % i)] if i % 3 == 0 else []


def produce(bootstrap: str, first: int, count: int) -> Stored:
    """Send `count` records with acks=all; return them by (partition, offset)."""
    acked: Stored = {}

    def on_delivery(err, msg) -> None:
        assert err is None, err
        key, value, headers = record(int(msg.key()[1:]))  # a delivery report has no headers
        acked[(msg.partition(), msg.offset())] = (msg.timestamp()[1], key, value, headers)

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                         "enable.idempotence": True, "compression.type": "lz4"})  # fmt: skip
    for i in range(first, first + count):
        key, value, headers = record(i)
        producer.produce(TOPIC, key=key, value=value, headers=headers or None,
                         timestamp=1_700_000_000_000 + i, on_delivery=on_delivery)  # fmt: skip
    assert producer.flush(30) == 0
    assert len(acked) == count
    return acked


def wait_for_leaders(bootstrap: str, timeout_s: float = 60.0) -> None:
    """A broker that just started serves a partition once its controller said so."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + timeout_s
    while True:
        topic = admin.list_topics(TOPIC, timeout=10).topics[TOPIC]
        if (
            topic.error is None
            and len(topic.partitions) == PARTITIONS
            and all(p.leader >= 0 for p in topic.partitions.values())
        ):
            return
        assert time.monotonic() < deadline, f"no leaders for {TOPIC}: {topic.partitions}"
        time.sleep(0.1)


def read_all(bootstrap: str) -> Stored:
    wait_for_leaders(bootstrap)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader",
                         "enable.auto.commit": False})  # fmt: skip
    ends = {p: consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=30)[1]
            for p in range(PARTITIONS)}  # fmt: skip
    consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    out: Stored = {}
    deadline = time.monotonic() + 60
    while len(out) < sum(ends.values()):
        assert time.monotonic() < deadline, f"read {len(out)} of {sum(ends.values())}"
        for msg in consumer.consume(500, timeout=1.0):
            assert msg.error() is None, msg.error()
            out[(msg.partition(), msg.offset())] = (
                msg.timestamp()[1],
                msg.key(),
                msg.value(),
                msg.headers() or [],
            )
    consumer.close()
    return out


def commit(bootstrap: str, group: str, offsets: dict[int, int]) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    consumer.commit(offsets=[TopicPartition(TOPIC, p, o) for p, o in offsets.items()],
                    asynchronous=False)  # fmt: skip
    consumer.close()


def committed(bootstrap: str, group: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    found = consumer.committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)], 30)
    consumer.close()
    return {tp.partition: tp.offset for tp in found}


def test_kafka_takes_over_a_kt_broker_and_kt_takes_it_back(
    broker_factory, kafka_factory, zookeeper: str
) -> None:
    kt = broker_factory(**{"broker.id": "0", "zookeeper.connect": zookeeper})
    admin = AdminClient({"bootstrap.servers": kt.bootstrap})
    # Retention off: the records' timestamps are of 2023, and a broker's retention check
    # (30 s after start, then every 5 min) would delete them on a slow run.
    new = NewTopic(TOPIC, PARTITIONS, 1, config={"retention.ms": "-1"})
    admin.create_topics([new])[TOPIC].result(30)
    written = produce(kt.bootstrap, 0, 3000)
    commit(kt.bootstrap, "by-kt", {0: 17, 1: 500, 2: 1000})
    assert kt.stop() == 0

    kafka = kafka_factory(broker_id=0, zookeeper_connect=zookeeper, log_dir=kt.log_dir)
    assert read_all(kafka.bootstrap) == written
    assert committed(kafka.bootstrap, "by-kt") == {0: 17, 1: 500, 2: 1000}
    written |= produce(kafka.bootstrap, 3000, 2000)
    commit(kafka.bootstrap, "by-kafka", {0: 1, 1: 2, 2: 3})
    assert kafka.stop() == SIGTERM_EXIT

    kt.start()
    assert read_all(kt.bootstrap) == written
    assert committed(kt.bootstrap, "by-kt") == {0: 17, 1: 500, 2: 1000}
    assert committed(kt.bootstrap, "by-kafka") == {0: 1, 1: 2, 2: 3}
    written |= produce(kt.bootstrap, 5000, 500)
    assert read_all(kt.bootstrap) == written
