"""One transactional scenario against kt and against Kafka 3.9: Kafka's Java producer
(interop/TransactionalScenario.java: a committed transaction that commits a group's
offsets, an aborted one, another committed) and then confluent-kafka (committed, aborted,
and one left open). Both brokers must show the same records at read_uncommitted and at
read_committed, the same last stable offsets and high watermarks, the same committed
offsets, and the same kafka-transactions.sh output (list, describe, describe-producers,
find-hanging), producer ids and times aside."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kt.reference_kafka import _tool_log4j, java_command, run_tool
from tests.integration.read_to_end import read_to_end

SCENARIO = Path(__file__).resolve().parents[2] / "interop" / "TransactionalScenario.java"
TOPIC = "scenario"
PARTITIONS = 2
GROUP = "scenario-group"


def ends(bootstrap: str) -> list[tuple[int, int]]:
    """(last stable offset, high watermark) of each partition."""
    found = []
    for isolation in ("read_committed", "read_uncommitted"):
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "ends",
                             "isolation.level": isolation})  # fmt: skip
        try:
            found.append([
                consumer.get_watermark_offsets(TopicPartition(TOPIC, p), 10)[1]
                for p in range(PARTITIONS)
            ])  # fmt: skip
        finally:
            consumer.close()
    return list(zip(*found, strict=True))


def settled(bootstrap: str) -> None:
    """Wait until no transaction is open on the topic: every marker is written."""
    deadline = time.monotonic() + 60
    while any(lso != hw for lso, hw in ends(bootstrap)):
        assert time.monotonic() < deadline, f"transactions still open: {ends(bootstrap)}"
        time.sleep(0.1)


def scenario(bootstrap: str) -> Producer:
    """Run the scenario; return the producer whose last transaction is left open."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(30)
    java = subprocess.run(
        [*java_command(str(SCENARIO), ["-Xmx256m"], _tool_log4j()), bootstrap, TOPIC,
         "java-txn", GROUP],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert (java.returncode, java.stdout) == (0, "committed\naborted\ncommitted\n"), java.stderr
    settled(bootstrap)  # the Java producer's last markers precede confluent-kafka's records

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "python-txn"})
    producer.init_transactions(30)
    for outcome, count in (("committed", 5), ("aborted", 3), ("open", 3)):
        producer.begin_transaction()
        for i in range(count):
            producer.produce(TOPIC, f"python-{outcome}-{i}".encode(), f"k{i}".encode(),
                             partition=i % PARTITIONS)  # fmt: skip
            assert producer.flush(30) == 0  # one batch per record, in this order
        if outcome == "committed":
            producer.commit_transaction(30)
            settled(bootstrap)
        elif outcome == "aborted":
            producer.abort_transaction(30)
            settled(bootstrap)
    return producer


def records(bootstrap: str, isolation: str) -> list[tuple[int, int, bytes, bytes]]:
    return sorted(
        (m.partition(), m.offset(), m.key(), m.value())
        for m in read_to_end(bootstrap, TOPIC, PARTITIONS, isolation)
    )


def committed_offsets(bootstrap: str) -> list[tuple[int, int]]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    request = ConsumerGroupTopicPartitions(GROUP, [TopicPartition(TOPIC, p) for p in (0, 1)])
    result = admin.list_consumer_group_offsets([request], require_stable=True)[GROUP].result(30)
    return [(tp.partition, tp.offset) for tp in result.topic_partitions]


TIME_COLUMNS = ("CurrentTransactionStartTimeMs", "TransactionDurationMs", "LastTimestamp")


def transactions_tool(bootstrap: str) -> list[list[str]]:
    """kafka-transactions.sh's tables for the scenario, producer ids replaced by their
    order of appearance and times by <time>."""
    names: dict[str, str] = {}
    tables = []
    for args in (
        ["list"],
        ["describe", "--transactional-id", "python-txn"],
        *(["describe-producers", "--topic", TOPIC, "--partition", str(p)] for p in (0, 1)),
        ["find-hanging", "--topic", TOPIC, "--max-transaction-timeout", "0"],
    ):
        result = run_tool("kafka-transactions", "--bootstrap-server", bootstrap, *args)
        assert result.returncode == 0, result.stderr
        header, *rows = [line.split("\t") for line in result.stdout.splitlines()]
        columns = [cell.strip() for cell in header]
        table = [" ".join(args), "\t".join(header)]
        for row in rows:
            for i, column in enumerate(columns):
                if column == "ProducerId":
                    row[i] = names.setdefault(row[i].strip(), f"<producer {len(names)}>")
                elif column in TIME_COLUMNS:
                    row[i] = "<time>"
            table.append("\t".join(row))
        tables.append(table)
    return tables


def observe(bootstrap: str) -> dict[str, object]:
    return {
        "read_uncommitted": records(bootstrap, "read_uncommitted"),
        "read_committed": records(bootstrap, "read_committed"),
        "ends": ends(bootstrap),
        "offsets": committed_offsets(bootstrap),
        "tool": transactions_tool(bootstrap),
    }


def test_the_same_scenario_reads_the_same_on_kt_and_kafka(broker_factory, kafka) -> None:
    broker = broker_factory(**{"broker.id": str(kafka.broker_id)})
    seen = {}
    for name, bootstrap in (("kt", broker.bootstrap), ("kafka", kafka.bootstrap)):
        producer = scenario(bootstrap)
        seen[name] = observe(bootstrap)
        producer.abort_transaction(30)
    ours, theirs = seen["kt"], seen["kafka"]
    for key in theirs:
        assert ours[key] == theirs[key], key
    values = [value for *_, value in theirs["read_committed"]]
    assert b"java-aborted-0" not in values and b"python-open-0" not in values
    assert len(values) == 6 + 2 + 5
    assert len(theirs["read_uncommitted"]) == 6 + 4 + 2 + 5 + 3 + 3
    assert [len(table) for table in theirs["tool"]] == [4, 3, 4, 4, 2]  # command, header, rows
    assert theirs["offsets"] == [(0, 3), (1, -1001)]
