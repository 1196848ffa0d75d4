"""The streams group records of `__consumer_offsets` (types 17, 19-23), as Kafka 4.4 wrote
them for a Kafka Streams 4.4 word count on the streams protocol (interop/
StreamsGroupWordCount.java, group "wc-app", one member; its topology, group epochs,
target and current assignments, and the member leaving): kt reads each, writes it back
byte for byte, and `kt dump-log --offsets-decoder` prints it as Kafka's DumpLogSegments
printed it (data/kafka44_streams_group_records.json: key, value, and Kafka's two JSON
texts, in log order)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kt.broker.group import streams_group_records as sr
from kt.storage.record_batch import Record
from kt.tools.dump_log_parsers import offsets_parser

RECORDS = json.loads((Path(__file__).parent / "data" / "kafka44_streams_group_records.json")
                     .read_text())  # fmt: skip


@pytest.mark.parametrize(("key", "value", "key_json", "value_json"), RECORDS)
def test_kt_reads_and_writes_kafkas_streams_group_records(key, value, key_json,
                                                          value_json) -> None:  # fmt: skip
    raw_key, raw_value = bytes.fromhex(key), None if value is None else bytes.fromhex(value)
    kind = int.from_bytes(raw_key[:2], "big")
    record = sr.read_record(kind, raw_key[2:], raw_value)
    assert record.key() == raw_key
    assert record.value_bytes() == raw_value
    assert offsets_parser(Record(0, 0, raw_key, raw_value)) == (key_json, value_json)


def test_the_topology_record_holds_what_the_application_sent() -> None:
    """The word count's topology: subtopology 0 reads `lines` and writes the repartition
    topic, which subtopology 1 reads, counting into a store with a changelog topic."""
    key, value = next((k, v) for k, v, _, _ in RECORDS if k.startswith("0017"))
    topology = sr.read_record(sr.TOPOLOGY, bytes.fromhex(key)[2:], bytes.fromhex(value)).value
    first, second = topology.subtopologies
    repartition = "wc-app-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition"
    assert (first.subtopology_id, first.source_topics, first.repartition_sink_topics) == (
        "0",
        ["lines"],
        [repartition],
    )
    assert [t.name for t in second.repartition_source_topics] == [repartition]
    [changelog] = second.state_changelog_topics
    assert (changelog.partitions, changelog.replication_factor) == (0, -1)
    assert {c.key: c.value for c in changelog.topic_configs}["cleanup.policy"] == "compact"


def replayed(groups: dict) -> Iterator[sr.StreamsRecord]:
    """Kafka's records in log order, each replayed into `groups` before it is yielded."""
    from kt.broker.group import streams_group as sg

    for key, value, _, _ in RECORDS:
        raw_key = bytes.fromhex(key)
        record = sr.read_record(int.from_bytes(raw_key[:2], "big"), raw_key[2:],
                                None if value is None else bytes.fromhex(value))  # fmt: skip
        sg.replay(groups, record)
        yield record


def test_replaying_kafkas_records_walks_the_group_through_its_states() -> None:
    """Kafka 4.4's records of the word count, replayed in log order: the member joins a
    group that is not ready until its topology is validated, the epoch moves past the
    target (Assigning), the target lands (Reconciling), the member reaches it (Stable,
    its active tasks with their epochs, its process holding them); it leaves (Empty)."""
    from kt.broker.group import streams_group as sg

    groups: dict[str, sg.StreamsGroup] = {}
    states = []
    for record in replayed(groups):
        group = groups["wc-app"]
        states.append((group.state, group.group_epoch, group.assignment_epoch))
        if record.type == sr.CURRENT_MEMBER_ASSIGNMENT and record.value is not None:
            member = group.members[record.member]
            if member.member_epoch == 3:
                assert member.assigned.active == {"0": {0: 3, 1: 3}, "1": {0: 3, 1: 3}}
                assert group.active_owner("1", 1) == member.process_id
    assert states == [
        ("NotReady", 1, 1), ("NotReady", 1, 1), ("NotReady", 2, 1), ("NotReady", 2, 1),
        ("Assigning", 3, 1), ("Assigning", 3, 1), ("Reconciling", 3, 3), ("Stable", 3, 3),
        ("Reconciling", 3, 3), ("Reconciling", 3, 3), ("Empty", 3, 3), ("Empty", 4, 3),
        ("Empty", 4, 4),
    ]  # fmt: skip
    assert groups["wc-app"].active_owner("1", 1) is None


def test_records_built_from_the_group_are_kafkas() -> None:
    """The records kt writes for a member, a target, epochs and a current assignment,
    built from the group as Kafka's replay left it, are Kafka's bytes."""
    from kt.broker.group import streams_group as sg

    groups: dict[str, sg.StreamsGroup] = {}
    built = []
    for record in replayed(groups):
        group, v = groups["wc-app"], record.value
        if v is None:
            again = sg.tombstone(record.type, record.group_id, record.member)
        elif record.type == sr.MEMBER_METADATA:
            again = sg.member_record("wc-app", group.members[record.member])
        elif record.type == sr.CURRENT_MEMBER_ASSIGNMENT:
            again = sg.current_assignment_record("wc-app", group.members[record.member])
        elif record.type == sr.TARGET_ASSIGNMENT_MEMBER:
            again = sg.target_record(
                "wc-app", record.member, group.target_assignment[record.member]
            )
        elif record.type == sr.TARGET_ASSIGNMENT_METADATA:
            again = sg.target_epoch_record("wc-app", group.assignment_epoch,
                                           group.assignment_timestamp)  # fmt: skip
        elif record.type == sr.GROUP_METADATA:
            again = sg.group_epoch_record("wc-app", group.group_epoch, group.metadata_hash,
                                          group.validated_topology_epoch,
                                          group.last_assignment_configs)  # fmt: skip
        else:
            continue  # the topology: written as the member sent it
        built.append((again.key().hex(), None if v is None else again.value_bytes().hex()))
    assert built == [(k, v) for k, v, _, _ in RECORDS if not k.startswith("0017")]
