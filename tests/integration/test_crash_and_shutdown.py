"""What survives a `kill -9`, and what a graceful shutdown leaves on disk.

kill -9: with the default flush policy (no fsync per append, as Kafka) a record is
acknowledged once it is in the page cache, which survives the death of the process (not
of the machine). After a restart every acknowledged record is at its acknowledged
offset, and each log is a valid prefix of what was sent: whole batches with good CRCs,
offsets from 0 without gaps, nothing that was not produced. A torn batch at a segment's
tail (what a machine crash can leave) is cut off by recovery.

SIGTERM, and SIGINT (Ctrl-C) alike: the broker answers what it can and closes the rest,
flushes, writes its checkpoints, snapshots producer state, trims the
active indexes and leaves `.kafka_cleanshutdown`; the next start loads without recovery.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.roundtrip import segment_batches

pytestmark = pytest.mark.slow

PARTITIONS = 3


def create_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(timeout=30)


def read_all(bootstrap: str, topic: str) -> dict[int, list[tuple[int, bytes]]]:
    """Every record of every partition, up to each high watermark."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "kt-crash",
                         "enable.auto.commit": False})  # fmt: skip
    ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
            for p in range(PARTITIONS)}  # fmt: skip
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    out: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(PARTITIONS)}
    deadline = time.monotonic() + 60
    while any(len(out[p]) < ends[p] for p in out) and time.monotonic() < deadline:
        for msg in consumer.consume(1000, timeout=1.0):
            assert msg.error() is None, msg.error()
            out[msg.partition()].append((msg.offset(), msg.value()))
    consumer.close()
    assert {p: len(v) for p, v in out.items()} == ends
    return out


def produce_until_stopped(
    broker, topic: str, stop: Callable[[], None]
) -> tuple[dict[tuple[int, int], bytes], set[bytes]]:
    """Produce with acks=all until 5000 records are acknowledged, `stop` the broker with
    more in flight, and return ({(partition, offset): value} acknowledged, values sent)."""
    acked: dict[tuple[int, int], bytes] = {}

    def on_delivery(err, msg) -> None:
        if err is None:
            acked[(msg.partition(), msg.offset())] = msg.value()

    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all",
                         "enable.idempotence": True, "linger.ms": 2})  # fmt: skip
    sent: set[bytes] = set()
    i = 0
    deadline = time.monotonic() + 60
    while len(acked) < 5000:
        assert time.monotonic() < deadline, "production too slow"
        if len(producer) > 20_000:  # stay ahead of the acknowledgements, within the queue
            producer.poll(0.05)
            continue
        value = f"record-{i:06d}".encode() + b"." * (i % 50)
        producer.produce(topic, key=str(i % 101).encode(), value=value, on_delivery=on_delivery)
        sent.add(value)
        i += 1
        if i % 100 == 0:
            producer.poll(0)
    # A last burst, unpolled, so that records are in flight when the broker dies: the
    # loop's last poll may have served every delivery report there was.
    for _ in range(1000):
        value = f"record-{i:06d}".encode()
        producer.produce(topic, key=str(i % 101).encode(), value=value, on_delivery=on_delivery)
        sent.add(value)
        i += 1
    assert len(producer) > 0, "nothing in flight when the broker died"
    stop()
    # Serve the callbacks of answers that arrived before the kill, then drop the rest.
    producer.poll(1.0)
    producer.purge(in_queue=True, in_flight=True)
    producer.flush(10)
    return dict(acked), sent


def test_kill_9_during_acks_all_production_keeps_every_acknowledged_record(broker) -> None:
    create_topic(broker.bootstrap, "crash")
    acked, sent = produce_until_stopped(broker, "crash", broker.kill)
    assert len(acked) >= 5000
    assert not (broker.log_dir / ".kafka_cleanshutdown").exists()
    # A torn write at the tail as well (what a power cut mid-append leaves): the first
    # 40 bytes of a copy of the partition's first batch.
    segment = broker.log_dir / "crash-0" / "00000000000000000000.log"
    with open(segment, "r+b") as f:
        head = f.read(40)
        f.seek(0, 2)
        f.write(head)

    broker.start()
    assert "Recovering logs in" in broker.run_log()
    assert "Recovering unflushed segment 0" in broker.run_log()
    stored = read_all(broker.bootstrap, "crash")
    for partition, records in stored.items():
        assert [offset for offset, _ in records] == list(range(len(records)))
        values = [value for _, value in records]
        assert set(values) <= sent
        assert len(set(values)) == len(values), f"duplicates in partition {partition}"
    by_position = {(p, o): v for p, records in stored.items() for o, v in records}
    missing = [key for key, value in acked.items() if by_position.get(key) != value]
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {missing[:5]}"
    # Whole batches with good CRCs, up to the end of each segment file.
    for segment in broker.log_dir.glob("crash-*/*.log"):
        segment_batches(segment)


def read_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    """An offset checkpoint: version 0, the entry count, then `topic partition offset`."""
    version, count, *entries = path.read_text().splitlines()
    assert (version, int(count)) == ("0", len(entries))
    return {(t, int(p)): int(o) for t, p, o in (line.split(" ") for line in entries)}


def test_sigterm_leaves_a_clean_shutdown_and_a_restart_needs_no_recovery(broker) -> None:
    create_topic(broker.bootstrap, "graceful")
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all",
                         "enable.idempotence": True})  # fmt: skip
    for i in range(3000):
        producer.produce("graceful", key=str(i).encode(), value=b"v" * 100)
    assert producer.flush(30) == 0
    ends = {p: len(records) for p, records in read_all(broker.bootstrap, "graceful").items()}
    assert sum(ends.values()) == 3000

    assert broker.stop(signal.SIGTERM) == 0
    marker = json.loads((broker.log_dir / ".kafka_cleanshutdown").read_text())
    assert marker["version"] == 0
    expected = {("graceful", p): end for p, end in ends.items()}
    for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
        checkpoint = read_checkpoint(broker.log_dir / name)
        assert {k: v for k, v in checkpoint.items() if k[0] == "graceful"} == expected, name
    for p, end in ends.items():
        partition_dir = broker.log_dir / f"graceful-{p}"
        # Producer state at the log end, and indexes trimmed to their entries.
        assert (partition_dir / f"{end:020d}.snapshot").exists()
        assert (partition_dir / "00000000000000000000.index").stat().st_size % 8 == 0
        assert (partition_dir / "00000000000000000000.index").stat().st_size < 10 * 1024 * 1024
        assert (partition_dir / "00000000000000000000.timeindex").stat().st_size % 12 == 0

    broker.start()
    run_log = broker.run_log()
    assert "Loading logs in" in run_log
    assert "Recovering" not in run_log
    assert not (broker.log_dir / ".kafka_cleanshutdown").exists()  # removed while running
    after = read_all(broker.bootstrap, "graceful")
    assert {p: len(records) for p, records in after.items()} == ends


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_during_acks_all_production_loses_nothing_and_shuts_down_clean(
    broker, sig: signal.Signals
) -> None:
    create_topic(broker.bootstrap, "stopped")

    def stop() -> None:
        assert broker.stop(sig) == 0

    acked, sent = produce_until_stopped(broker, "stopped", stop)
    assert (broker.log_dir / ".kafka_cleanshutdown").exists()

    broker.start()
    run_log = broker.run_log()
    assert "Loading logs in" in run_log
    assert "Recovering" not in run_log
    stored = read_all(broker.bootstrap, "stopped")
    by_position = {(p, o): v for p, records in stored.items() for o, v in records}
    assert {v for v in by_position.values()} <= sent
    missing = [(k, v) for k, v in acked.items() if by_position.get(k) != v]
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {missing[:5]}"
