"""Kafka's znode JSON, byte for byte, as Kafka 3.x writes it (kafka/zk/ZkData.scala)."""

from __future__ import annotations

import uuid

import pytest

from kt.metadata import znodes as z
from kt.metadata.jvm_order import (
    java_properties_order,
    java_string_hash,
    scala_immutable_map_order,
    scala_mutable_hashmap_order,
)

TOPIC_ID = z.uuid_from_str("mZ2wq1YRQp2mO1hQbT5n9A")


# -- paths -------------------------------------------------------------------------------


def test_paths() -> None:
    assert z.broker_path(1) == "/brokers/ids/1"
    assert z.topic_path("t") == "/brokers/topics/t"
    assert z.partition_state_path("t", 0) == "/brokers/topics/t/partitions/0/state"
    assert z.config_entity_path("brokers", z.DEFAULT_ENTITY) == "/config/brokers/<default>"
    assert z.config_change_create_path() == "/config/changes/config_change_"
    assert z.delete_topic_path("t") == "/admin/delete_topics/t"
    assert z.consumer_offset_path("g", "t", 3) == "/consumers/g/offsets/t/3"
    assert z.sequence_number("config_change_0000000042", z.CONFIG_CHANGE_PREFIX) == 42


def test_persistent_paths_created_at_broker_start() -> None:
    assert z.PERSISTENT_PATHS == (
        "/consumers", "/brokers/ids", "/brokers/topics", "/config/changes",
        "/admin/delete_topics", "/brokers/seqid", "/isr_change_notification",
        "/latest_producer_id_block", "/log_dir_event_notification",
        "/config/topics", "/config/clients", "/config/users", "/config/brokers", "/config/ips",
    )  # fmt: skip


# -- Kafka Uuid ----------------------------------------------------------------------------


def test_kafka_uuid_is_unpadded_urlsafe_base64() -> None:
    value = uuid.UUID("999db0ab-5611-429d-a63b-58506d3e67f4")
    assert z.uuid_to_str(value) == "mZ2wq1YRQp2mO1hQbT5n9A"
    assert z.uuid_from_str("mZ2wq1YRQp2mO1hQbT5n9A") == value
    assert z.uuid_to_str(uuid.UUID(int=0)) == "AAAAAAAAAAAAAAAAAAAAAA"
    with pytest.raises(ValueError):
        z.uuid_from_str("short")


def test_random_uuids_never_print_a_leading_dash() -> None:
    for _ in range(200):
        text = z.uuid_to_str(z.random_uuid())
        assert len(text) == 22 and not text.startswith("-")


# -- cluster, controller -------------------------------------------------------------------


def test_cluster_id() -> None:
    data = b'{"version":"1","id":"Q2xEjrnqRpO6BI3UfL0gEw"}'
    assert z.encode_cluster_id("Q2xEjrnqRpO6BI3UfL0gEw") == data
    assert z.decode_cluster_id(data) == "Q2xEjrnqRpO6BI3UfL0gEw"


def test_controller_v2() -> None:
    data = b'{"version":2,"brokerid":0,"timestamp":"1595381947195","kraftControllerEpoch":-1}'
    registration = z.ControllerRegistration(0, 1595381947195)
    assert registration.encode() == data
    assert z.ControllerRegistration.decode(data) == registration


def test_controller_v1_from_2x_brokers_decodes() -> None:
    data = b'{"version":1,"brokerid":101,"timestamp":"1614570663255"}'
    assert z.ControllerRegistration.decode(data) == z.ControllerRegistration(101, 1614570663255)


def test_controller_epoch_is_plain_text() -> None:
    assert z.encode_controller_epoch(3) == b"3"
    assert z.decode_controller_epoch(b"3") == 3


# -- brokers -----------------------------------------------------------------------------


def broker(port: int = 9092, host: str = "h", rack: str | None = None) -> z.BrokerRegistration:
    return z.BrokerRegistration(
        0, (z.BrokerEndPoint("PLAINTEXT", host, port),), rack, timestamp_ms=1595381946870
    )


def test_broker_v5_registration() -> None:
    data = (
        b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
        b'"endpoints":["PLAINTEXT://host1:9092"],"jmx_port":-1,"port":9092,"host":"host1",'
        b'"version":5,"timestamp":"1595381946870"}'
    )
    assert broker(host="host1").encode() == data
    decoded = z.BrokerRegistration.decode(0, data)
    assert decoded == broker(host="host1")
    assert (decoded.host, decoded.port) == ("host1", 9092)


def test_broker_rack_is_written_only_when_set() -> None:
    assert b"rack" not in broker().encode()
    data = broker(rack="r1").encode()
    assert b'"endpoints":["PLAINTEXT://h:9092"],"rack":"r1","jmx_port":-1' in data
    assert z.BrokerRegistration.decode(0, data).rack == "r1"


def test_broker_without_plaintext_listener_has_null_host() -> None:
    ssl = z.BrokerEndPoint("SSL", "h", 9093, "SSL")
    internal = z.BrokerEndPoint("INTERNAL", "::1", 9094, "SASL_PLAINTEXT")
    registration = z.BrokerRegistration(2, (ssl, internal), timestamp_ms=1)
    data = registration.encode()
    assert b'"endpoints":["SSL://h:9093","INTERNAL://[::1]:9094"]' in data
    assert b'"port":-1,"host":null' in data
    assert b'"listener_security_protocol_map":{"SSL":"SSL","INTERNAL":"SASL_PLAINTEXT"}' in data
    decoded = z.BrokerRegistration.decode(2, data)
    assert decoded.endpoints == registration.endpoints
    assert decoded.endpoint("INTERNAL") == registration.endpoints[1]


def test_broker_v4_and_v1_registrations_decode() -> None:
    v4 = (
        b'{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":'
        b'["PLAINTEXT://zjj101:9092"],"jmx_port":-1,"host":"zjj101",'
        b'"timestamp":"1614570663881","port":9092,"version":4}'
    )
    assert z.BrokerRegistration.decode(7, v4).endpoints == (
        z.BrokerEndPoint("PLAINTEXT", "zjj101", 9092),
    )
    v1 = b'{"version":1,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666"}'
    decoded = z.BrokerRegistration.decode(1, v1)
    assert (decoded.host, decoded.port, decoded.jmx_port) == ("localhost", 9092, 9999)


# -- topics and partition state --------------------------------------------------------------


def test_topic_assignment_v3() -> None:
    data = (
        b'{"partitions":{"0":[2,1],"1":[0,2]},"topic_id":"mZ2wq1YRQp2mO1hQbT5n9A",'
        b'"adding_replicas":{},"removing_replicas":{},"version":3}'
    )
    assignment = z.TopicAssignment("t", {0: [2, 1], 1: [0, 2]}, TOPIC_ID)
    assert assignment.encode() == data
    decoded = z.TopicAssignment.decode("t", data)
    assert decoded.partitions == {0: [2, 1], 1: [0, 2]}
    assert decoded.topic_id == TOPIC_ID
    assert decoded.adding_replicas == decoded.removing_replicas == {}


def test_topic_assignment_during_reassignment() -> None:
    assignment = z.TopicAssignment(
        "t", {0: [4, 5, 6, 1, 2, 3]}, None, {0: [4, 5, 6]}, {0: [1, 2, 3]}
    )
    assert assignment.encode() == (
        b'{"partitions":{"0":[4,5,6,1,2,3]},"adding_replicas":{"0":[4,5,6]},'
        b'"removing_replicas":{"0":[1,2,3]},"version":3}'
    )
    assert z.TopicAssignment.decode("t", assignment.encode()) == assignment


def test_many_partitions_come_in_scala_hash_map_order() -> None:
    """Kafka's mutable.HashMap grows from 16 to 32 buckets on the 12th entry; the bucket is
    String.hashCode & 31: "11" (1568) -> 0, "0".."9" (48..57) -> 16..25, "10" (1567) -> 31."""
    data = z.TopicAssignment("t", {p: [p % 3] for p in range(12)}).encode()
    assert data == (
        b'{"partitions":{"11":[2],"0":[0],"1":[1],"2":[2],"3":[0],"4":[1],"5":[2],"6":[0],'
        b'"7":[1],"8":[2],"9":[0],"10":[1]},"adding_replicas":{},"removing_replicas":{},'
        b'"version":3}'
    )
    assert z.TopicAssignment.decode("t", data).partitions == {p: [p % 3] for p in range(12)}


def test_partition_state() -> None:
    data = b'{"controller_epoch":3,"leader":2,"version":1,"leader_epoch":0,"isr":[2,1]}'
    state = z.LeaderAndIsr(leader=2, leader_epoch=0, isr=[2, 1], controller_epoch=3)
    assert state.encode() == data
    assert z.LeaderAndIsr.decode(data, zk_version=4) == z.LeaderAndIsr(2, 0, [2, 1], 3, 0, 4)


def test_partition_state_recovering() -> None:
    state = z.LeaderAndIsr(1, 5, [1], 3, leader_recovery_state=z.RECOVERING)
    data = (
        b'{"controller_epoch":3,"leader":1,"version":1,"leader_recovery_state":1,'
        b'"leader_epoch":5,"isr":[1]}'
    )
    assert state.encode() == data
    assert z.LeaderAndIsr.decode(data) == state


# -- configs and notifications --------------------------------------------------------------


def test_entity_config() -> None:
    data = b'{"version":1,"config":{"retention.ms":"86400000"}}'
    assert z.encode_entity_config({"retention.ms": "86400000"}) == data
    assert z.decode_entity_config(data) == {"retention.ms": "86400000"}
    assert z.encode_entity_config({}) == b'{"version":1,"config":{}}'
    assert z.decode_entity_config(b"") == {}


def test_broker_throttle_config() -> None:
    data = b'{"version":1,"config":{"leader.replication.throttled.rate":"50000000"}}'
    assert z.encode_entity_config({"leader.replication.throttled.rate": "50000000"}) == data


def test_config_change_notification() -> None:
    assert z.encode_config_change("topics/t") == b'{"version":2,"entity_path":"topics/t"}'
    assert z.decode_config_change(b'{"version":2,"entity_path":"brokers/<default>"}') == (
        "brokers/<default>"
    )
    legacy = b'{"version":1,"entity_type":"topics","entity_name":"t"}'
    assert z.decode_config_change(legacy) == "topics/t"


def test_reassign_partitions() -> None:
    data = b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}'
    assert z.encode_reassignment({("t", 0): [1, 2]}) == data
    assert z.decode_reassignment(data) == {("t", 0): [1, 2]}


def test_preferred_replica_election_and_isr_change() -> None:
    data = b'{"version":1,"partitions":[{"topic":"t","partition":0}]}'
    assert z.encode_partitions([("t", 0)]) == data
    assert z.decode_partitions(data) == [("t", 0)]


def test_log_dir_event() -> None:
    assert z.encode_log_dir_event(1) == b'{"version":1,"broker":1,"event":1}'
    assert z.decode_log_dir_event(b'{"version":1,"broker":1,"event":1}') == 1


def test_producer_id_block() -> None:
    data = b'{"version":1,"broker":0,"block_start":"0","block_end":"999"}'
    block = z.ProducerIdBlock(0, 0, 999)
    assert block.encode() == data
    assert z.ProducerIdBlock.decode(data) == block
    assert block.next(2) == z.ProducerIdBlock(2, 1000, 1999)


def test_feature_znode() -> None:
    data = b'{"features":{},"version":2,"status":1}'
    assert z.FeatureZNode().encode() == data
    assert z.FeatureZNode.decode(data) == z.FeatureZNode()
    v2 = z.FeatureZNode({"metadata.version": 7})
    assert (
        v2.encode() == b'{"features":{"metadata.version":{"max_version_level":7}},'
        b'"version":2,"status":1}'
    )
    v1 = z.FeatureZNode({"f": 2}, version=1)
    assert b'"f":{"max_version_level":2,"min_version_level":2}' in v1.encode()
    assert z.FeatureZNode.decode(v1.encode()) == v1


def test_legacy_consumer_offset() -> None:
    assert z.encode_offset(42) == b"42"
    assert z.decode_offset(b"42") == 42


def test_decoders_reject_garbage() -> None:
    with pytest.raises(ValueError):
        z.LeaderAndIsr.decode(b"not json")
    with pytest.raises(ValueError):
        z.decode_cluster_id(b"[1]")


# -- the JVM orders the encoders rely on ----------------------------------------------------


def test_java_string_hash() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("0") == 48
    assert java_string_hash("version") == 351608024
    assert java_string_hash("\u00e9t\u00e9") == (233 * 31 * 31 + 116 * 31 + 233)


def test_scala_map_orders_match_kafkas_output() -> None:
    assert scala_mutable_hashmap_order(["version", "status", "features"], 3) == [
        "features",
        "version",
        "status",
    ]
    assert scala_immutable_map_order(["a", "b", "c", "d"]) == ["a", "b", "c", "d"]
    assert scala_immutable_map_order(
        ["version", "leader", "leader_epoch", "controller_epoch", "isr"]
    ) == ["controller_epoch", "leader", "version", "leader_epoch", "isr"]


def test_java_properties_order_is_by_bucket_then_insertion() -> None:
    # "b" (98) and "r" (114) share bucket 2 of 16; both stay in insertion order.
    assert java_properties_order(["r", "b", "a"]) == ["a", "r", "b"]
    keys = [f"k{i}" for i in range(30)]  # forces two resizes
    assert sorted(java_properties_order(keys)) == sorted(keys)
