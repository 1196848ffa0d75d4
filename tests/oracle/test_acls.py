"""The same ACL scenario on kt and on Kafka 3.9 (ZooKeeper mode, AclAuthorizer): the ACLs
are added with Kafka's kafka-acls.sh on both brokers (and listed by it and by `kt acls`
the same way), then the same principals, authenticated with SASL/PLAIN through
confluent-kafka, try the same operations (a producer, a consumer group, prefixed topics,
a deny rule, a super user, a principal with no ACL): both brokers allow and refuse the
same ones with the same error codes."""

from __future__ import annotations

import re
import subprocess
import sys
import time

from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kt.reference_kafka import ReferenceKafka, free_port, run_tool

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret" '
        'user_bob="bob-secret" user_eve="eve-secret";')  # fmt: skip
SECURITY = {
    "sasl.enabled.mechanisms": "PLAIN",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "super.users": "User:admin;User:ANONYMOUS",  # the PLAINTEXT listener: set-up, tools
}
TOPICS = ("orders", "logs-app", "logs-db", "secret", "open")
ACL_COMMANDS = [
    ["--add", "--allow-principal", "User:alice", "--producer", "--topic", "orders"],
    ["--add", "--allow-principal", "User:alice", "--consumer", "--topic", "logs-",
     "--resource-pattern-type", "PREFIXED", "--group", "g1"],
    ["--add", "--allow-principal", "User:bob", "--operation", "All", "--topic", "*"],
    ["--add", "--deny-principal", "User:bob", "--operation", "Read", "--topic", "secret"],
    ["--add", "--allow-principal", "User:bob", "--operation", "Read", "--group", "*"],
]  # fmt: skip


def as_user(bootstrap: str, user: str) -> dict:
    return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN", "sasl.username": user,
            "sasl.password": f"{user}-secret"}  # fmt: skip


def produce(bootstrap: str, user: str, topic: str) -> int | None:
    errors: list = []
    producer = Producer({**as_user(bootstrap, user), "message.timeout.ms": 10000})
    producer.produce(topic, b"x", on_delivery=lambda e, _: errors.append(e))
    producer.flush(15)
    return errors[0].code() if errors and errors[0] is not None else None


def consume(bootstrap: str, user: str, topic: str, group: str) -> int | None:
    """The first error a subscribed consumer meets, or None once it reads a record."""
    consumer = Consumer({**as_user(bootstrap, user), "group.id": group,
                         "auto.offset.reset": "earliest"})  # fmt: skip
    consumer.subscribe([topic])
    deadline = time.monotonic() + 20
    try:
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            error = message.error()
            return None if error is None else error.code()
        return KafkaError._TIMED_OUT
    finally:
        consumer.close()


def listed(bootstrap: str) -> set[str]:
    return set(AdminClient(as_user(bootstrap, "eve")).list_topics(timeout=30).topics)


def acl_blocks(text: str) -> dict[str, set[str]]:
    """kafka-acls --list output as resource -> its ACL lines (Kafka prints hash order)."""
    blocks: dict[str, set[str]] = {}
    current = None
    for line in text.splitlines():
        match = re.match(r"Current ACLs for resource `(.*)`: $", line)
        if match:
            current = blocks.setdefault(match.group(1), set())
        elif line.strip() and current is not None:
            current.add(line.strip())
    return blocks


def scenario(plain: str, sasl: str) -> dict[str, object]:
    admin = AdminClient({"bootstrap.servers": plain})
    for future in admin.create_topics([NewTopic(t, 1, 1) for t in TOPICS]).values():
        future.result(30)
    for args in ACL_COMMANDS:
        added = run_tool("kafka-acls", "--bootstrap-server", plain, *args)
        assert added.returncode == 0, added.stdout + added.stderr
    listing = run_tool("kafka-acls", "--bootstrap-server", plain, "--list")
    deadline = time.monotonic() + 20  # ACL changes reach the authorizer by notification
    while produce(sasl, "alice", "orders") is not None:
        assert time.monotonic() < deadline
    return {
        "acls": acl_blocks(listing.stdout),
        "alice writes orders": produce(sasl, "alice", "orders"),
        "alice writes open": produce(sasl, "alice", "open"),
        "eve writes orders": produce(sasl, "eve", "orders"),
        "bob writes secret": produce(sasl, "bob", "secret"),
        "admin writes logs-db": produce(sasl, "admin", "logs-db"),
        "alice reads logs-db in g1": consume(sasl, "alice", "logs-db", "g1"),
        "alice reads logs-app in g2": consume(sasl, "alice", "logs-app", "g2"),
        "bob reads secret": consume(sasl, "bob", "secret", "b1"),
        "bob reads orders": consume(sasl, "bob", "orders", "b1"),
        "eve reads orders": consume(sasl, "eve", "orders", "e1"),
        "eve lists": listed(sasl),
        "alice lists": set(AdminClient(as_user(sasl, "alice")).list_topics(timeout=30).topics),
    }


def test_the_same_acls_allow_and_refuse_the_same_on_kt_and_kafka(
    broker_factory, kafka_available, zookeeper, tmp_path
) -> None:
    broker = broker_factory(**{
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", **SECURITY,
    })  # fmt: skip
    ports = re.findall(r"//127\.0\.0\.1:(\d+)", broker.output[-1])
    kafka = ReferenceKafka(tmp_path / "kafka", zookeeper_connect=zookeeper, overrides=SECURITY)
    sasl_port = free_port()
    kafka.overrides["listeners"] = (f"PLAINTEXT://127.0.0.1:{kafka.port},"
                                    f"SASL_PLAINTEXT://127.0.0.1:{sasl_port}")  # fmt: skip
    kafka.overrides["advertised.listeners"] = kafka.overrides["listeners"]
    kafka.start()
    try:
        theirs = scenario(kafka.bootstrap, f"127.0.0.1:{sasl_port}")
    finally:
        kafka.stop()
    ours = scenario(broker.bootstrap, f"127.0.0.1:{ports[1]}")
    for key in theirs:
        assert ours[key] == theirs[key], key
    assert theirs["eve writes orders"] == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert theirs["bob reads secret"] == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert theirs["alice reads logs-app in g2"] == KafkaError.GROUP_AUTHORIZATION_FAILED
    kt_list = subprocess.run([sys.executable, "-m", "kt", "acls", "--bootstrap-server",
                              broker.bootstrap, "--list"], capture_output=True, text=True,
                             timeout=60)  # fmt: skip
    assert acl_blocks(kt_list.stdout) == theirs["acls"], kt_list.stderr
