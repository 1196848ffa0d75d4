"""Transactions in Kafka's files: the same transactional workload (two producers whose
transactions interleave, committed and aborted) against kt and Kafka 3.9 through the
same client; Kafka's DumpLogSegments and `kt dump-log` print the same lines for the
segments (control records included) and the `.txnindex` files of each broker, and the
aborted-transaction entries agree between the brokers (producer ids aside)."""

from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kt.reference_kafka import SIGTERM_EXIT
from tests.oracle.test_log_files import assert_same_lines, dump_both

TOPIC = "txn-files"
TOPIC_CONFIG = {"segment.bytes": "1024", "retention.ms": "-1"}


def transactional_workload(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1, config=TOPIC_CONFIG)])[TOPIC].result(30)
    one, two = (
        Producer({"bootstrap.servers": bootstrap, "transactional.id": name, "linger.ms": 0})
        for name in ("files-one", "files-two")
    )
    for producer in (one, two):
        producer.init_transactions(60)

    def send(producer: Producer, prefix: str, count: int) -> None:
        for i in range(count):
            producer.produce(TOPIC, f"{prefix}-{i}".encode() * 8, partition=0,
                             timestamp=1_700_000_000_000 + i)  # fmt: skip
            producer.flush(30)  # one batch per record, in this order on both brokers

    watcher = Consumer({"bootstrap.servers": bootstrap, "group.id": "watcher",
                        "isolation.level": "read_uncommitted"})  # fmt: skip

    def marker_written(end: int) -> None:
        """EndTxn answers before the markers are written: wait for this one, so that
        both brokers hold the same batches at the same offsets."""
        deadline = time.monotonic() + 30
        while watcher.get_watermark_offsets(TopicPartition(TOPIC, 0), 10)[1] < end:
            assert time.monotonic() < deadline, f"the log did not reach offset {end}"
            time.sleep(0.05)

    for round_ in range(3):
        one.begin_transaction()
        send(one, f"one-{round_}", 4)
        two.begin_transaction()
        send(two, f"two-{round_}", 3)
        one.abort_transaction(30)  # aborted while two's transaction is open
        marker_written(11 * round_ + 8)
        send(two, f"two-more-{round_}", 2)
        two.commit_transaction(30)
        marker_written(11 * round_ + 11)
    one.begin_transaction()
    send(one, "one-last", 2)
    one.commit_transaction(30)
    marker_written(36)
    watcher.close()


def files(partition_dir: Path, suffixes: tuple[str, ...]) -> list[str]:
    return sorted(str(p) for p in partition_dir.iterdir() if p.suffix in suffixes)


def aborted_entries(partition_dir: Path) -> list[str]:
    """The .txnindex lines with producer ids replaced by their order of appearance."""
    lines = dump_both(files(partition_dir, (".txnindex",)))[1]
    ids: dict[str, str] = {}
    out = []
    for line in lines:
        if line.startswith("version: "):
            pid = line.split("producerId: ")[1].split()[0]
            line = line.replace(
                f"producerId: {pid} ", f"producerId: P{ids.setdefault(pid, str(len(ids)))} "
            )
            out.append(line)
    return out


def test_transactional_files_read_the_same(broker, kafka) -> None:
    transactional_workload(broker.bootstrap)
    transactional_workload(kafka.bootstrap)
    assert broker.stop() == 0
    assert kafka.stop() == SIGTERM_EXIT
    ours, theirs = broker.log_dir / f"{TOPIC}-0", kafka.log_dir / f"{TOPIC}-0"
    for partition_dir in (ours, theirs):
        txn_files = files(partition_dir, (".txnindex",))
        assert txn_files, f"no .txnindex in {partition_dir}"
        kafka_lines, kt_lines = dump_both(files(partition_dir, (".log", ".txnindex")))
        assert any("endTxnMarker: ABORT" in line for line in kafka_lines)
        assert_same_lines(kafka_lines, kt_lines)
    assert aborted_entries(ours) == aborted_entries(theirs)
    assert len(aborted_entries(ours)) == 3
