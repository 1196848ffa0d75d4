"""Share groups (KIP-932) on Kafka 4.4 and on kt, side by side."""

from __future__ import annotations

import queue
import subprocess
import threading
import time

from confluent_kafka import Producer

from kt.reference_kafka import KAFKA4_VERSION, run_tool, tool_command
from tests.share.test_share_consumers import (
    SHARE,
    classic_requests_on_a_share_group,
    produce,
    topic_with,
)

# Kafka 4.4 serves share groups by default; its members heartbeat quickly here, as kt's.
KAFKA4_SHARE = {
    "group.share.heartbeat.interval.ms": "500",
    "group.share.min.heartbeat.interval.ms": "500",
}


def test_classic_group_apis_answer_a_share_group_as_kafka4(kafka_factory, broker_factory) -> None:
    """DescribeGroups, OffsetCommit, OffsetDelete and DeleteGroups on a share group with a
    member: Kafka 4.4's answers are kt's."""
    kafka = kafka_factory(version=KAFKA4_VERSION, overrides=KAFKA4_SHARE)
    theirs = classic_requests_on_a_share_group(kafka.bootstrap)
    assert theirs["DeleteGroups"] == [68]  # NON_EMPTY_GROUP: the member was there
    assert classic_requests_on_a_share_group(broker_factory(**SHARE).bootstrap) == theirs


def test_kafka4s_console_share_consumer_reads_every_record_from_kt(broker_factory) -> None:
    """Kafka 4.4's ConsoleShareConsumer (the Java KafkaShareConsumer) joins a share group
    on kt and prints each record once; kafka-share-groups lists the group."""
    kt = broker_factory(**SHARE)
    topic = topic_with(kt.bootstrap, 0)
    console = subprocess.Popen(tool_command(
        "kafka-console-share-consumer", "--bootstrap-server", kt.bootstrap, "--topic", topic,
        "--group", "console", version=KAFKA4_VERSION,
    ), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)  # fmt: skip
    printed: queue.Queue[int] = queue.Queue()
    threading.Thread(target=lambda: [printed.put(int(line)) for line in console.stdout],
                     daemon=True).start()  # fmt: skip
    try:
        # A share partition starts at the log end when first fetched: warm-up records (-1)
        # until the member prints one.
        producer = Producer({"bootstrap.servers": kt.bootstrap})
        deadline = time.monotonic() + 90
        while printed.empty():
            assert time.monotonic() < deadline, "the Java share consumer printed nothing"
            producer.produce(topic, b"-1")
            producer.flush(10)
            time.sleep(0.5)
        produce(kt.bootstrap, topic, range(50))
        values = []
        while len(values) < 50:
            value = printed.get(timeout=60)
            if value >= 0:
                values.append(value)
    finally:
        console.terminate()
        console.wait(30)
    assert sorted(values) == list(range(50))
    listed = run_tool("kafka-share-groups", "--bootstrap-server", kt.bootstrap, "--list",
                      version=KAFKA4_VERSION)  # fmt: skip
    assert listed.stdout.split() == ["console"], listed.stderr
