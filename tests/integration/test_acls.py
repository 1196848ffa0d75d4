"""Kafka's AclAuthorizer on kt (authorizer.class.name, super.users,
allow.everyone.if.no.acl.found): ACLs created, described and deleted through the admin
API by a super user authenticated with SASL/PLAIN, then enforced on the real clients:
literal and prefixed topic patterns, a wildcard allow with a deny on one topic, group
ACLs, Metadata that hides what a principal may not describe, and a principal with no
ACL that may do nothing."""

from __future__ import annotations

import re
import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from kt.client.connection import BrokerConnection
from kt.protocol import ApiKey
from kt.protocol import messages as m
from kt.security.sasl_client import ClientSasl
from kt.testing.certificates import PASSWORD, issue, make_ca, write_party
from tests.integration.conftest import kt_command
from tests.integration.read_to_end import read_to_end

pytestmark = pytest.mark.slow

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret" '
        'user_bob="bob-secret" user_eve="eve-secret";')  # fmt: skip
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
LITERAL, PREFIXED = ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED
TOPIC, GROUP = ResourceType.TOPIC, ResourceType.GROUP


def as_user(bootstrap: str, user: str, **extra: object) -> dict:
    return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN", "sasl.username": user,
            "sasl.password": f"{user}-secret", **extra}  # fmt: skip


def acl(
    kind: ResourceType, name: str, user: str, operation: AclOperation,
    permission: AclPermissionType = ALLOW, pattern: ResourcePatternType = LITERAL,
) -> AclBinding:  # fmt: skip
    return AclBinding(kind, name, pattern, f"User:{user}", "*", operation, permission)


def produce_error(config: dict, topic: str) -> int | None:
    """The error code of one record produced (None when it was written)."""
    errors: list = []
    producer = Producer({**config, "message.timeout.ms": 10000})
    producer.produce(topic, b"x", on_delivery=lambda e, _: errors.append(e))
    producer.flush(15)
    return errors[0].code() if errors and errors[0] is not None else None


@pytest.fixture
def secured(broker_factory):  # type: ignore[no-untyped-def]
    broker = broker_factory(**{
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:admin",
    })  # fmt: skip
    ports = re.findall(r"//127\.0\.0\.1:(\d+)", broker.output[-1])
    sasl = f"127.0.0.1:{ports[1]}"
    admin = AdminClient(as_user(sasl, "admin"))
    topics = [NewTopic(t, 1, 1) for t in ("orders", "logs-app", "secret", "open")]
    for future in admin.create_topics(topics).values():
        future.result(30)
    bindings = [
        acl(TOPIC, "orders", "alice", AclOperation.WRITE),
        acl(TOPIC, "orders", "alice", AclOperation.DESCRIBE),
        acl(TOPIC, "logs-", "alice", AclOperation.READ, pattern=PREFIXED),
        acl(GROUP, "g1", "alice", AclOperation.READ),
        acl(TOPIC, "*", "bob", AclOperation.ALL),
        acl(TOPIC, "secret", "bob", AclOperation.READ, DENY),
        # read_to_end's consumers' group (librdkafka finds its coordinator even to assign)
        acl(GROUP, "read-to-end-", "alice", AclOperation.READ, pattern=PREFIXED),
        acl(GROUP, "read-to-end-", "bob", AclOperation.READ, pattern=PREFIXED),
    ]
    for future in admin.create_acls(bindings).values():
        assert future.result(30) is None
    return broker, sasl, admin, bindings


def test_acls_are_enforced_on_the_clients(secured) -> None:
    broker, sasl, admin, _ = secured
    assert produce_error(as_user(sasl, "alice"), "orders") is None
    assert produce_error(as_user(sasl, "eve"), "orders") == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert produce_error(as_user(sasl, "alice"), "open") == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert produce_error(as_user(sasl, "bob"), "secret") is None  # ALL on *, READ denied only
    assert produce_error(as_user(sasl, "admin"), "logs-app") is None  # a super user

    listed = AdminClient(as_user(sasl, "alice")).list_topics(timeout=30).topics
    assert sorted(listed) == ["logs-app", "orders"]  # describe implied by read and write
    assert sorted(AdminClient(as_user(sasl, "eve")).list_topics(timeout=30).topics) == []

    assert len(read_to_end(sasl, "logs-app", 1, "read_uncommitted",
                           config=as_user(sasl, "alice"))) == 1  # fmt: skip
    with pytest.raises(AssertionError, match="TOPIC_AUTHORIZATION_FAILED"):
        read_to_end(sasl, "secret", 1, "read_uncommitted", config=as_user(sasl, "bob"),
                    timeout_s=10)  # fmt: skip

    consumer = Consumer(as_user(sasl, "alice", **{"group.id": "g1",
                                                  "auto.offset.reset": "earliest"}))  # fmt: skip
    consumer.subscribe(["logs-app"])
    deadline = time.monotonic() + 30
    message = None
    while message is None or message.error() is not None:
        assert time.monotonic() < deadline
        message = consumer.poll(0.5)
    consumer.commit(asynchronous=False)
    consumer.close()
    intruder = Consumer(as_user(sasl, "eve", **{"group.id": "g1"}))
    intruder.subscribe(["logs-app"])
    deadline = time.monotonic() + 30
    while True:
        assert time.monotonic() < deadline
        event = intruder.poll(0.5)
        if event is not None and event.error() is not None:
            assert event.error().code() in (KafkaError.GROUP_AUTHORIZATION_FAILED,
                                            KafkaError.TOPIC_AUTHORIZATION_FAILED)  # fmt: skip
            break
    intruder.close()


def test_acls_are_described_and_deleted_by_a_super_user_only(secured) -> None:
    broker, sasl, admin, bindings = secured
    described = admin.describe_acls(AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
        AclPermissionType.ANY)).result(30)  # fmt: skip
    assert sorted(map(str, described)) == sorted(map(str, bindings))
    match = admin.describe_acls(AclBindingFilter(
        TOPIC, "logs-app", ResourcePatternType.MATCH, None, None, AclOperation.ANY,
        AclPermissionType.ANY)).result(30)  # fmt: skip
    assert sorted(b.name for b in match) == ["*", "logs-"]
    # librdkafka drops DescribeAcls' top-level error (an empty list comes back, from Kafka
    # too): the answer itself, through kt's client.
    host, port = sasl.split(":")
    alice = BrokerConnection(host, int(port), sasl=ClientSasl("PLAIN", "alice", "alice-secret"))
    answer = alice.send_version(ApiKey.DESCRIBE_ACLS, 1, m.DescribeAclsRequest(
        resource_type_filter=1, pattern_type_filter=1, operation=1, permission_type=1))  # fmt: skip
    alice.close()
    assert (answer.error_code, answer.error_message, answer.resources) == (
        KafkaError.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.", [])  # fmt: skip
    deleted = admin.delete_acls([AclBindingFilter(
        TOPIC, "orders", LITERAL, "User:alice", None, AclOperation.WRITE,
        AclPermissionType.ANY)])  # fmt: skip
    assert [str(b) for b in next(iter(deleted.values())).result(30)] == [str(bindings[0])]
    deadline = time.monotonic() + 10
    while produce_error(as_user(sasl, "alice"), "orders") != KafkaError.TOPIC_AUTHORIZATION_FAILED:
        assert time.monotonic() < deadline


def test_a_client_certificates_subject_is_its_principal(broker_factory, tmp_path) -> None:
    """On an SSL listener with client authentication, the principal is `User:` and the
    certificate's subject (RFC 2253), as Kafka's DefaultKafkaPrincipalBuilder names it."""
    ca = make_ca()
    parties = {name: write_party(tmp_path, name, ca, issue(ca, name))
               for name in ("broker", "admin", "writer", "other")}  # fmt: skip
    broker = broker_factory(**{
        "listeners": "SSL://127.0.0.1:0", "security.inter.broker.protocol": "SSL",
        "ssl.client.auth": "required", "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(parties["broker"].keystore_p12),
        "ssl.keystore.password": PASSWORD, "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(parties["broker"].ca),
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        # the broker's own certificate too: its controller talks to it over SSL
        "super.users": "User:CN=admin,O=kt tests;User:CN=broker,O=kt tests",
    })  # fmt: skip

    def config(name: str) -> dict:
        return {"bootstrap.servers": broker.bootstrap, "security.protocol": "SSL",
                "ssl.ca.location": str(parties[name].ca),
                "ssl.certificate.location": str(parties[name].cert),
                "ssl.key.location": str(parties[name].key)}  # fmt: skip

    admin = AdminClient(config("admin"))
    admin.create_topics([NewTopic("certified", 1, 1)])["certified"].result(30)
    writer = acl(TOPIC, "certified", "CN=writer,O=kt tests", AclOperation.WRITE)
    assert admin.create_acls([writer])[writer].result(30) is None
    deadline = time.monotonic() + 10
    while produce_error(config("writer"), "certified") is not None:
        assert time.monotonic() < deadline
    assert produce_error(config("other"), "certified") == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_the_console_tools_stop_at_once_on_an_authorization_refusal(secured, tmp_path) -> None:
    """A topic or group the principal may not use: the console consumer and producer say
    Kafka's exception in one line and exit 1 at once (each is given 20 s: the producer
    waited 60 s for the topic, and the consumer in a group spun for good)."""
    _, sasl, _, _ = secured
    config = tmp_path / "alice.properties"
    config.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                      "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
                      'required username="alice" password="alice-secret";\n')  # fmt: skip
    topic_refused = "TopicAuthorizationException: Not authorized to access topics: [secret]"
    consumer = kt_command("console-consumer", "--bootstrap-server", sasl, "--topic", "secret",
                          "--consumer.config", str(config), timeout_s=20)  # fmt: skip
    assert consumer.returncode == 1
    assert topic_refused in consumer.stderr.splitlines()[0]
    in_a_group = kt_command("console-consumer", "--bootstrap-server", sasl, "--topic", "secret",
                            "--group", "g1", "--consumer.config", str(config),
                            timeout_s=20)  # fmt: skip
    assert in_a_group.returncode == 1  # a group alice may use, a topic she may not
    assert topic_refused in in_a_group.stderr.splitlines()[0]
    readable = kt_command("console-consumer", "--bootstrap-server", sasl, "--topic", "orders",
                          "--consumer.config", str(config), timeout_s=20)  # fmt: skip
    assert readable.returncode == 1  # alice may describe orders, not read it
    assert ("TopicAuthorizationException: Not authorized to access topics: [orders]"
            in readable.stderr.splitlines()[0])  # fmt: skip
    producer = kt_command("console-producer", "--bootstrap-server", sasl, "--topic", "secret",
                          "--producer.config", str(config), input="x\n", timeout_s=20)  # fmt: skip
    assert producer.returncode == 1
    assert topic_refused in producer.stderr.splitlines()[0]
    group = kt_command("console-consumer", "--bootstrap-server", sasl, "--topic", "logs-app",
                       "--group", "other", "--consumer.config", str(config),
                       timeout_s=20)  # fmt: skip
    assert group.returncode == 1
    assert ("GroupAuthorizationException: Not authorized to access group: other"
            in group.stderr.splitlines()[0])  # fmt: skip


@pytest.mark.parametrize("zookeeper", [False, True], ids=["embedded", "zookeeper"])
def test_a_broker_hears_acl_changes_after_its_session_expired(kt_cluster, zookeeper) -> None:
    """A store session's watches go with it: a broker whose session expired watches the ACL
    change notifications again in the new one (as Kafka's ZkNodeChangeNotificationListener
    re-reads them when a session begins), so an ACL created afterwards through another
    broker reaches its authorizer too."""
    cluster = kt_cluster(2, zookeeper=zookeeper, overrides={
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:ANONYMOUS",
    })  # fmt: skip
    session = cluster.brokers[1].zk.session
    old_session = session.session_id
    cluster.expire_session(1)
    cluster.wait_until(lambda: session.session_id not in (0, old_session), what="a new session")
    cluster.wait_until(lambda: cluster.registered_brokers() == [0, 1], what="registered again")
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{cluster.ports[0]}"})
    binding = acl(ResourceType.TOPIC, "heard", "alice", AclOperation.READ)
    admin.create_acls([binding])[binding].result(30)
    authorizers = [cluster.brokers[b].authorizer for b in (0, 1)]
    cluster.wait_until(
        lambda: all(any(p.name == "heard" for p in list(a.acls)) for a in authorizers),
        what="the ACL on both brokers",
    )


def test_describe_topic_partitions_shows_what_the_principal_may_describe(secured) -> None:
    """DescribeTopicPartitions as Kafka authorizes it: a listing of every topic leaves out
    those the principal may not describe; one named is answered TOPIC_AUTHORIZATION_FAILED
    (READ implies DESCRIBE, so alice's prefixed READ shows logs-app)."""
    from kafka.admin import KafkaAdminClient

    _, sasl, _, _ = secured
    admin = KafkaAdminClient(
        bootstrap_servers=sasl, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
        sasl_plain_username="alice", sasl_plain_password="alice-secret",
    )  # fmt: skip
    try:
        listed = admin.describe_topic_partitions([])["topics"]
        named = admin.describe_topic_partitions(["orders", "secret"])["topics"]
    finally:
        admin.close()
    assert [(t["name"], t["error_code"]) for t in listed] == [("logs-app", 0), ("orders", 0)]
    assert sorted((t["name"], t["error_code"]) for t in named) == [
        ("orders", 0), ("secret", KafkaError.TOPIC_AUTHORIZATION_FAILED)]  # fmt: skip
