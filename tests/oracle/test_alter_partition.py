"""AlterPartition as Kafka speaks it: the requests kt's leaders sent and the answers kt's
controller gave in a three-broker scenario (a follower stops fetching: the ISRs shrink;
restarted: they grow) are encoded with kt's codec and read by Kafka 3.9's own
AlterPartitionRequestData and AlterPartitionResponseData (interop/MessageDecode.java
prints what they read, as Kafka's generated JSON converters write it), for each version
kt sends: v3 (topics by id, ISR members with broker epochs) and v1 (topics by name, when
an id is not known yet)."""

from __future__ import annotations

import base64
import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kt.broker.controller.kafka_controller import KafkaController
from kt.broker.replication.alter_partition_manager import AlterPartitionManager
from kt.protocol.codec import encode_body
from kt.protocol.schema import in_range
from kt.protocol.types import ZERO_UUID
from kt.reference_kafka import TOOL_HEAP, _tool_log4j, java_command

DECODE = Path(__file__).resolve().parents[2] / "interop" / "MessageDecode.java"


def kafka_reads(bodies: list[tuple[str, int, bytes]]) -> list[Any]:
    """What Kafka's message classes read from each (class name, version, body)."""
    lines = "".join(f"{name} {version} {body.hex()}\n" for name, version, body in bodies)
    result = subprocess.run([*java_command(str(DECODE), TOOL_HEAP, _tool_log4j())],
                            input=lines, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr
    read = []
    for line in result.stdout.splitlines():
        kind, _, text = line.partition("\t")
        assert kind == "RESULT", text
        read.append(json.loads(text))
    return read


def as_kafka_json(struct: Any, fields: tuple, structs: dict, version: int) -> dict[str, Any]:
    """A kt message as Kafka's JSON converter writes it: the version's fields, named in
    lowerCamelCase, uuids in Uuid.toString()'s URL-safe base64."""
    out: dict[str, Any] = {}
    for f in fields:
        if not in_range(version, f.versions) or f.tagged is not None:
            continue
        value = getattr(struct, f.name)
        element = f.type[2:] if f.is_array else f.type
        if element in structs:
            inner = structs[element]
            value = ([as_kafka_json(v, inner, structs, version) for v in value] if f.is_array
                     else as_kafka_json(value, inner, structs, version))  # fmt: skip
        elif f.type == "uuid":
            raw = (value or ZERO_UUID).bytes
            value = base64.urlsafe_b64encode(raw).decode().rstrip("=")
        elif f.is_array:
            value = list(value)
        out[f.kafka_name[0].lower() + f.kafka_name[1:]] = value
    return out


def body(message: Any, version: int) -> bytes:
    out: list = []
    encode_body(message, version, out)
    return b"".join(bytes(chunk) for chunk in out)


@pytest.fixture
def alter_partitions(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, int, Any]]:
    """Every AlterPartition kt's controllers answer: (request, version, response)."""
    seen: list[tuple[Any, int, Any]] = []
    answer = KafkaController.alter_partition

    async def recording(self: KafkaController, request: Any, version: int) -> Any:
        response = await answer(self, request, version)
        seen.append((request, version, response))
        return response

    monkeypatch.setattr(KafkaController, "alter_partition", recording)
    return seen


def test_kafka_reads_kts_alter_partition_in_every_version_kt_sends(
    kafka_available, kt_cluster, alter_partitions, monkeypatch
) -> None:
    cluster = kt_cluster(3, overrides={"replica.lag.time.max.ms": "1500"})
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    # Led by brokers 0 and 1; broker 2 follows both.
    topic = NewTopic("t", 2, replica_assignment=[[0, 1, 2], [1, 0, 2]])
    admin.create_topics([topic])["t"].result(30)

    def isrs_hold(member: bool) -> bool:
        return all((2 in cluster.partition_state("t", p).isr) == member for p in range(2))

    cluster.wait_until(lambda: isrs_hold(True), what="full ISRs")
    # Broker 2 stops fetching but stays alive: the leaders drop it from their ISRs (a dead
    # broker the controller would drop itself).
    cluster._run(cluster.brokers[2].replica_manager.fetcher_manager.shutdown())
    cluster.wait_until(lambda: isrs_hold(False), what="the ISRs to shrink")
    shrinks = len(alter_partitions)
    # A leader that does not know a topic's id yet sends v1, topics by name.
    monkeypatch.setattr(AlterPartitionManager, "version_for", lambda self, items: 1)
    cluster.kill_broker(2)
    cluster.start_broker(2)
    cluster.wait_until(lambda: isrs_hold(True), what="the ISRs to grow")
    time.sleep(0.2)  # the last answers are recorded after the state is written

    versions = sorted({version for _, version, _ in alter_partitions})
    assert versions == [1, 3] and shrinks >= 1
    bodies, expected = [], []
    for request, version, response in alter_partitions:
        for message, name in ((request, "AlterPartitionRequestData"),
                              (response, "AlterPartitionResponseData")):  # fmt: skip
            schema = type(message).SCHEMA
            bodies.append((name, version, body(message, version)))
            expected.append(as_kafka_json(message, schema.fields, schema.structs, version))
    assert kafka_reads(bodies) == expected
    # And they say what happened: the ISRs without broker 2, then with it again.
    isrs = [sorted(p.isr) for _, _, r in alter_partitions for t in r.topics for p in t.partitions]
    assert [0, 1] in isrs and [0, 1, 2] in isrs
