"""`kt transactions` against Kafka's kafka-transactions.sh (TransactionsCommand, Kafka
3.9's admin client) on the same kt broker: list, describe, describe-producers and
find-hanging print the same tables (the transaction's running duration aside); a
hanging transaction (a transactional batch no coordinator knows) is found by both and
aborted by `kt transactions abort --start-offset`, after which read_committed passes it."""

from __future__ import annotations

import subprocess
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kt.client.client import KafkaClient
from kt.protocol import ApiKey
from kt.protocol import messages as m
from kt.reference_kafka import run_tool
from kt.storage.record_batch import Record, build_batch

HANGING_PID = 4242
FIND_HANGING = ("find-hanging", "--topic", "tools", "--max-transaction-timeout", "0")


def both(bootstrap: str, *args: str) -> tuple[list[str], list[str]]:
    """(Kafka's lines, kt's lines) of one subcommand."""
    kafka = run_tool("kafka-transactions", "--bootstrap-server", bootstrap, *args)
    assert kafka.returncode == 0, kafka.stderr
    command = [sys.executable, "-m", "kt", "transactions", "--bootstrap-server", bootstrap]
    kt = subprocess.run([*command, *args], capture_output=True, text=True, timeout=120)
    assert kt.returncode == 0, kt.stderr
    return kafka.stdout.splitlines(), kt.stdout.splitlines()


def without_column(lines: list[str], header: str) -> list[str]:
    index = lines[0].split("\t").index(header.ljust(len(lines[0].split("\t")[0])).strip())
    return ["\t".join(c for i, c in enumerate(line.split("\t")) if i != index) for line in lines]


def lso(bootstrap: str, topic: str, partition: int) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "lso",
                         "isolation.level": "read_committed"})  # fmt: skip
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, partition), 10)[1]
    finally:
        consumer.close()


def committed_values(bootstrap: str, topic: str, partition: int, end: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "values",
                         "isolation.level": "read_committed"})  # fmt: skip
    consumer.assign([TopicPartition(topic, partition, 0)])
    values = []
    deadline = time.monotonic() + 30
    while consumer.position([TopicPartition(topic, partition)])[0].offset < end:
        assert time.monotonic() < deadline
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value())
    consumer.close()
    return values


def test_the_tools_agree_and_a_hanging_transaction_is_aborted(broker) -> None:
    bootstrap = broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("tools", 2, 1)])["tools"].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "tool-txn"})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce("tools", b"committed", partition=0)
    producer.commit_transaction(30)
    producer.begin_transaction()
    producer.produce("tools", b"open", partition=1)
    assert producer.flush(30) == 0  # left open: Ongoing, with tools-1

    kafka, kt = both(bootstrap, "list")
    assert kafka == kt and len(kt) == 2 and kt[1].split("\t")[3].strip() == "Ongoing"
    kafka, kt = both(bootstrap, "describe", "--transactional-id", "tool-txn")
    assert without_column(kafka, "TransactionDurationMs") == without_column(
        kt, "TransactionDurationMs"
    )
    assert kt[1].split("\t")[8].strip() == "tools-1"
    for partition in ("0", "1"):
        kafka, kt = both(bootstrap, "describe-producers", "--topic", "tools",
                         "--partition", partition)  # fmt: skip
        assert kafka == kt and len(kt) == 2

    # A transactional batch that no coordinator knows of: hanging.
    batch = build_batch([Record(0, int(time.time() * 1000), None, b"hanging")],
                        producer_id=HANGING_PID, producer_epoch=0, base_sequence=0,
                        is_transactional=True)  # fmt: skip
    R = m.ProduceRequest
    with KafkaClient(bootstrap) as client:
        response = client.any_connection().send(ApiKey.PRODUCE, R(
            transactional_id=None, acks=-1, timeout_ms=10000,
            topic_data=[R.TopicProduceData(name="tools", partition_data=[
                R.PartitionProduceData(index=0, records=batch)])],
        ))  # fmt: skip
    answer = response.responses[0].partition_responses[0]
    assert answer.error_code == 0
    start = answer.base_offset
    assert lso(bootstrap, "tools", 0) == start

    kafka, kt = both(
        bootstrap, "find-hanging", "--topic", "tools", "--max-transaction-timeout", "0"
    )
    assert kafka == kt
    assert [line.split("\t")[:6] for line in kt[1:]] == [
        [
            "tools".ljust(5),
            "0".ljust(9),
            str(HANGING_PID).ljust(10),
            "0".ljust(13),
            "-1".ljust(16),
            str(start).ljust(11),
        ]
    ]  # the open transaction of tool-txn (tools-1) is not hanging: its coordinator has it

    aborted = subprocess.run([sys.executable, "-m", "kt", "transactions", "--bootstrap-server",
                              bootstrap, "abort", "--topic", "tools", "--partition", "0",
                              "--start-offset", str(start)],
                             capture_output=True, text=True, timeout=120)  # fmt: skip
    assert (aborted.returncode, aborted.stdout, aborted.stderr) == (0, "", "")
    assert lso(bootstrap, "tools", 0) == start + 2  # past the batch and its ABORT marker
    assert committed_values(bootstrap, "tools", 0, start + 2) == [b"committed"]
    kafka, kt = both(
        bootstrap, "find-hanging", "--topic", "tools", "--max-transaction-timeout", "0"
    )
    assert kafka == kt and len(kt) == 1
    producer.abort_transaction(30)
