"""`kt consumer-groups`, `kt dump-log --offsets-decoder` on `__consumer_offsets`, and
compaction of a compacted topic, against a real broker and real clients."""

from __future__ import annotations

import glob
import json
import os
import time

import pytest

from kt.broker.group.group_metadata_manager import partition_for
from tests.groups._clients import GroupConsumer, create_topic, produce, wait_until
from tests.integration.conftest import kt_command

pytestmark = pytest.mark.slow


def groups_cmd(broker, *args: str):
    return kt_command("consumer-groups", "--bootstrap-server", broker.bootstrap, *args)


def table(stdout: str) -> list[list[str]]:
    return [line.split() for line in stdout.splitlines() if line.strip()]


def test_describe_reset_and_delete_a_group(group_broker):
    b = group_broker
    create_topic(b.bootstrap, "orders", 2)
    produce(b.bootstrap, "orders", 10, partitions=2)
    consumer = GroupConsumer("kafka-python", b.bootstrap, "billing", "orders")
    wait_until(lambda: len(consumer.records) == 20, what="20 records read")

    described = groups_cmd(b, "--describe", "--group", "billing")
    rows = table(described.stdout)
    assert rows[0] == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET",
                       "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"]  # fmt: skip
    assert [r[:6] for r in rows[1:]] == [["billing", "orders", "0", "10", "10", "0"],
                                         ["billing", "orders", "1", "10", "10", "0"]]  # fmt: skip
    assert rows[1][6].startswith("kafka-python") and rows[1][7] == "/127.0.0.1"

    members = table(groups_cmd(b, "--describe", "--group", "billing", "--members",
                               "--verbose").stdout)  # fmt: skip
    assert members[0] == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
                          "ASSIGNMENT"]  # fmt: skip
    assert members[1][0] == "billing" and members[1][-2:] == ["2", "(0,1)"]
    state = groups_cmd(b, "--describe", "--group", "billing", "--state").stdout
    assert table(state)[1] == ["billing", f"127.0.0.1:{b.port}", "(0)", "range", "Stable", "1"]

    busy = groups_cmd(b, "--reset-offsets", "--group", "billing", "--topic", "orders",
                      "--to-earliest", "--execute")  # fmt: skip
    assert ("Error: Assignments can only be reset if the group 'billing' is inactive, but "
            "the current state is Stable.") in busy.stdout  # fmt: skip
    refused = groups_cmd(b, "--delete", "--group", "billing")
    assert "* Group 'billing' could not be deleted due to: " in refused.stdout
    assert refused.returncode == 1
    consumer.close()

    produce(b.bootstrap, "orders", 5, partitions=2, start=10)
    idle = groups_cmd(b, "--describe", "--group", "billing")
    assert "Consumer group 'billing' has no active members." in idle.stderr
    assert [r[:9] for r in table(idle.stdout)[1:]] == [
        ["billing", "orders", "0", "10", "15", "5", "-", "-", "-"],
        ["billing", "orders", "1", "10", "15", "5", "-", "-", "-"],
    ]

    dry = groups_cmd(b, "--reset-offsets", "--group", "billing", "--topic", "orders",
                     "--to-earliest")  # fmt: skip
    assert table(dry.stdout) == [["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"],
                                 ["billing", "orders", "0", "0"],
                                 ["billing", "orders", "1", "0"]]  # fmt: skip
    assert "10" in table(groups_cmd(b, "--describe", "--group", "billing").stdout)[1]
    done = groups_cmd(b, "--reset-offsets", "--group", "billing", "--topic", "orders",
                      "--to-earliest", "--execute")  # fmt: skip
    assert done.returncode == 0 and table(done.stdout)[1] == ["billing", "orders", "0", "0"]

    again = GroupConsumer("kafka-python", b.bootstrap, "billing", "orders")
    try:
        wait_until(lambda: len(again.records) == 30, what="all 30 records again")
        assert again.first_offsets() == {0: 0, 1: 0}
    finally:
        again.close()

    assert "billing" in groups_cmd(b, "--list").stdout.split()
    deleted = groups_cmd(b, "--delete", "--group", "billing")
    assert deleted.stdout == "Deletion of requested consumer groups ('billing') was successful.\n"
    gone = groups_cmd(b, "--describe", "--group", "billing")
    assert "Error: Consumer group 'billing' does not exist." in gone.stdout


def test_shift_by_to_offset_and_delete_offsets(group_broker):
    b = group_broker
    create_topic(b.bootstrap, "shifts", 1)
    produce(b.bootstrap, "shifts", 10, partitions=1)
    consumer = GroupConsumer("aiokafka", b.bootstrap, "shifter", "shifts")
    wait_until(lambda: len(consumer.records) == 10, what="10 records")
    consumer.close()

    def reset(*scenario: str) -> list[list[str]]:
        result = groups_cmd(b, "--reset-offsets", "--group", "shifter", "--topic", "shifts:0",
                            *scenario, "--execute")  # fmt: skip
        assert result.returncode == 0, result.stdout + result.stderr
        return table(result.stdout)[1:]

    assert reset("--shift-by", "-3") == [["shifter", "shifts", "0", "7"]]
    assert reset("--to-offset", "100") == [["shifter", "shifts", "0", "10"]]  # clamped
    assert reset("--to-offset", "4") == [["shifter", "shifts", "0", "4"]]
    assert reset("--to-current") == [["shifter", "shifts", "0", "4"]]
    assert reset("--to-latest") == [["shifter", "shifts", "0", "10"]]
    assert reset("--by-duration", "PT1H") == [["shifter", "shifts", "0", "0"]]

    removed = groups_cmd(b, "--delete-offsets", "--group", "shifter", "--topic", "shifts")
    assert removed.stdout.startswith("Request succeed for deleting offsets with topic shifts "
                                     "group shifter\n")  # fmt: skip
    assert table(removed.stdout)[-1] == ["shifts", "0", "Successful"]


def test_dump_log_decodes_commits_and_group_metadata(group_broker):
    b = group_broker
    create_topic(b.bootstrap, "audit", 1)
    produce(b.bootstrap, "audit", 3, partitions=1)
    consumer = GroupConsumer("confluent-kafka", b.bootstrap, "auditors", "audit")
    wait_until(lambda: len(consumer.records) == 3, what="3 records")
    consumer.close()
    partition = partition_for("auditors", 5)
    segment = os.path.join(b.log_dir, f"__consumer_offsets-{partition}",
                           "00000000000000000000.log")  # fmt: skip
    dumped = kt_command("dump-log", "--files", segment, "--offsets-decoder")
    assert dumped.returncode == 0, dumped.stderr
    keys, values = [], []
    for line in dumped.stdout.splitlines():
        if "key: " in line:
            key_text = line.split("key: ", 1)[1].split(" payload: ")[0]
            keys.append(json.loads(key_text))
            values.append(line.split(" payload: ", 1)[1])
    assert {"type": "1", "data": {"group": "auditors", "topic": "audit", "partition": 0}} in keys
    commit = json.loads(
        values[
            keys.index(
                {"type": "1", "data": {"group": "auditors", "topic": "audit", "partition": 0}}
            )
        ]
    )
    assert commit["version"] == "3" and commit["data"]["offset"] == 3
    group = [
        json.loads(v)
        for k, v in zip(keys, values, strict=True)
        if k == {"type": "2", "data": {"group": "auditors"}}
    ]
    assert group[0]["version"] == "3"
    assert group[0]["data"]["protocolType"] == "consumer"
    assert group[0]["data"]["members"][0]["assignment"]["assignedPartitions"] == [
        {"topic": "audit", "partitions": [0]}
    ]
    assert group[-1]["data"]["members"] == []  # the member left: the group is Empty


def test_compaction_keeps_the_last_value_per_key(group_broker):
    b = group_broker
    create_topic(b.bootstrap, "profiles", 1, **{
        "cleanup.policy": "compact", "segment.ms": "100", "min.cleanable.dirty.ratio": "0.01",
        "segment.bytes": "2048"})  # fmt: skip
    from kafka import KafkaProducer

    # Batches stay below segment.bytes: a larger one is refused (RECORD_LIST_TOO_LARGE).
    producer = KafkaProducer(bootstrap_servers=b.bootstrap, batch_size=512)
    for update in range(20):
        for key in range(10):
            producer.send("profiles", key=b"user-%d" % key, value=b"v%d" % update, partition=0)
    producer.flush()
    time.sleep(0.2)  # let segment.ms pass, so that the next record rolls a new segment
    producer.send("profiles", key=b"sentinel", value=b"last", partition=0).get(10)
    producer.close()
    log_dir = os.path.join(b.log_dir, "profiles-0")

    def log_bytes() -> int:
        return sum(os.path.getsize(f) for f in glob.glob(os.path.join(log_dir, "*.log")))

    expected = [(b"user-%d" % k, b"v19") for k in range(10)] + [(b"sentinel", b"last")]
    wait_until(lambda: read_all(b.bootstrap, "profiles") == expected, what="a compacted log")
    assert log_bytes() < 2048


def read_all(bootstrap: str, topic: str) -> list[tuple[bytes, bytes]]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp])[tp]
        out = []
        while consumer.position(tp) < end:
            for records in consumer.poll(200).values():
                out += [(r.key, r.value) for r in records]
        return out
    finally:
        consumer.close()
