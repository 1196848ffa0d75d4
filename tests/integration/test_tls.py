"""SSL listeners with certificates made by the test (kt.testing.certificates): the real
clients (confluent-kafka, kafka-python) and kt's own tools produce and consume over TLS;
with ssl.client.auth=required only a client whose certificate the broker's trust store
signs is served, while a client without one, one from another CA and a handshake of
random bytes each get their connection closed and leave the broker serving the others;
three brokers on ZooKeeper replicate over TLS (security.inter.broker.protocol=SSL) and
lose nothing when one is killed under acks=all load."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer

from kt.testing.certificates import PASSWORD, TlsFiles, issue, make_ca, write_party
from tests.integration.conftest import kt_ok
from tests.integration.read_to_end import read_to_end
from tests.integration.test_zookeeper_cluster import ZkCluster

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, TlsFiles]:
    directory = tmp_path_factory.mktemp("pki")
    ca, other_ca = make_ca(), make_ca("another CA")
    return {
        "broker": write_party(directory, "broker", ca, issue(ca, "broker")),
        "client": write_party(directory, "client", ca, issue(ca, "client")),
        "stranger": write_party(directory, "stranger", other_ca, issue(other_ca, "stranger")),
    }


def pem_broker(pki: dict[str, TlsFiles]) -> dict[str, str]:
    """An SSL listener with Kafka's PEM key store: an encrypted key and its chain."""
    return {
        "listeners": "SSL://127.0.0.1:0", "security.inter.broker.protocol": "SSL",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki["broker"].keystore_pem),
        "ssl.key.password": PASSWORD, "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki["broker"].ca),
    }  # fmt: skip


def librdkafka(bootstrap: str, pki: dict[str, TlsFiles], party: str | None = None) -> dict:
    config = {"bootstrap.servers": bootstrap, "security.protocol": "SSL",
              "ssl.ca.location": str(pki["broker"].ca)}  # fmt: skip
    if party is not None:
        config |= {"ssl.certificate.location": str(pki[party].cert),
                   "ssl.key.location": str(pki[party].key)}  # fmt: skip
    return config


def create(config: dict, topic: str, partitions: int, replicas: int) -> None:
    admin = AdminClient(config)  # kept referenced until the result is in
    admin.create_topics([NewTopic(topic, partitions, replicas)])[topic].result(30)


def produce(config: dict, topic: str, count: int, prefix: str = "r") -> None:
    producer = Producer({**config, "acks": "all"})
    for i in range(count):
        producer.produce(topic, f"{prefix}{i}".encode() * 10)
    assert producer.flush(30) == 0


def test_clients_and_tools_produce_and_consume_over_tls(broker_factory, pki, tmp_path) -> None:
    broker = broker_factory(**pem_broker(pki))
    config = librdkafka(broker.bootstrap, pki)
    create(config, "tls", 3, 1)
    produce(config, "tls", 3000)
    consumer = Consumer({**config, "group.id": "tls", "auto.offset.reset": "earliest"})
    consumer.subscribe(["tls"])
    seen = 0
    deadline = time.monotonic() + 60
    while seen < 3000:
        assert time.monotonic() < deadline, seen
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            seen += 1
    consumer.close()

    ca = str(pki["broker"].ca)
    python = KafkaProducer(bootstrap_servers=broker.bootstrap, security_protocol="SSL",
                           ssl_cafile=ca, acks="all")  # fmt: skip
    python.send("tls", b"from kafka-python").get(30)
    python.close()
    reader = KafkaConsumer("tls", bootstrap_servers=broker.bootstrap, security_protocol="SSL",
                           ssl_cafile=ca, auto_offset_reset="earliest",
                           consumer_timeout_ms=10000)  # fmt: skip
    assert sum(1 for _ in reader) == 3001
    reader.close()

    # kt's own tools, with Kafka's client keys in --command-config and the like.
    props = tmp_path / "client.properties"
    props.write_text(
        f"security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location={ca}\n"
    )
    b = broker.bootstrap
    listed = kt_ok("topics", "--bootstrap-server", b, "--list", "--command-config", str(props))
    assert listed == ["__consumer_offsets", "tls"]
    kt_ok("producer-perf-test", "--topic", "tls", "--num-records", "500", "--record-size", "100",
          "--throughput", "-1", "--producer.config", str(props), "--producer-props",
          f"bootstrap.servers={b}")  # fmt: skip
    consumed = kt_ok("console-consumer", "--bootstrap-server", b, "--topic", "tls",
                     "--from-beginning", "--max-messages", "3501", "--consumer.config",
                     str(props), "--group", "kt-tls")  # fmt: skip
    assert len(consumed) == 3501
    groups = kt_ok("consumer-groups", "--bootstrap-server", b, "--list", "--command-config",
                   str(props))  # fmt: skip
    assert sorted(groups) == ["kt-tls", "tls"]


def handshake_refused(config: dict) -> int:
    """The error code of a client whose TLS handshake the broker refuses."""
    admin = AdminClient(config)
    with pytest.raises(KafkaException) as info:
        admin.list_topics(timeout=5)
    return info.value.args[0].code()


def test_mutual_tls_serves_only_trusted_clients(broker_factory, pki) -> None:
    broker = broker_factory(**{
        "listeners": "SSL://127.0.0.1:0", "security.inter.broker.protocol": "SSL",
        "ssl.client.auth": "required",
        "ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(pki["broker"].keystore_p12),
        "ssl.keystore.password": PASSWORD, "ssl.truststore.type": "PKCS12",
        "ssl.truststore.location": str(pki["client"].keystore_p12),
        "ssl.truststore.password": PASSWORD,
        # The broker's own connections to itself (the controller) present its certificate,
        # which the trust store must sign: the same CA signed both.
    })  # fmt: skip
    trusted = librdkafka(broker.bootstrap, pki, "client")
    create(trusted, "mtls", 1, 1)

    for party in (None, "stranger"):  # no certificate; one from another CA
        assert handshake_refused(librdkafka(broker.bootstrap, pki, party)) == KafkaError._TRANSPORT
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as raw:
        raw.sendall(os.urandom(2048))  # no ClientHello: the broker closes the connection
        deadline = time.monotonic() + 10
        with pytest.raises((ConnectionResetError, EOFError)):
            while time.monotonic() < deadline:
                if not raw.recv(4096):
                    raise EOFError
    produce(trusted, "mtls", 100)
    assert len(read_to_end(trusted["bootstrap.servers"], "mtls", 1, "read_uncommitted",
                           config=trusted)) == 100  # fmt: skip
    deadline = time.monotonic() + 10
    while "Failed authentication with /127.0.0.1 (SSL handshake failed)" not in broker.run_log():
        assert time.monotonic() < deadline, broker.logs()
        time.sleep(0.1)


def test_brokers_replicate_over_tls_and_lose_nothing_to_a_kill(
    tmp_path: Path, pki, zookeeper
) -> None:
    cluster = ZkCluster(tmp_path, zookeeper, overrides={
        **pem_broker(pki), "min.insync.replicas": "2", "replica.lag.time.max.ms": "4000",
    })  # fmt: skip
    try:
        replicate_through_a_kill(cluster, librdkafka(cluster.bootstrap, pki))
    finally:
        cluster.close()


def replicate_through_a_kill(cluster: ZkCluster, config: dict) -> None:
    """acks=all records into a topic of three replicas while the first partition's leader
    is killed and started again: every acknowledged record is read back, once."""
    create(config, "replicated", 2, 3)
    producer = Producer({**config, "acks": "all", "enable.idempotence": True})
    acked = []

    def delivered(error, message) -> None:  # type: ignore[no-untyped-def]
        if error is None:
            acked.append(message.value())

    victim = cluster.state("replicated", 0)["leader"]
    for i in range(6000):
        producer.produce("replicated", f"v{i}".encode(), on_delivery=delivered)
        producer.poll(0)
        if i == 2000:
            cluster.brokers[victim].kill()
        if i == 4000:
            cluster.brokers[victim].start()
        if i % 500 == 0:
            time.sleep(0.2)  # spread the load over the fault
    assert producer.flush(60) == 0
    assert len(acked) == 6000
    cluster.wait_until(
        lambda: all(len(cluster.state("replicated", p)["isr"]) == 3 for p in (0, 1)),
        "the restarted broker back in every ISR", timeout_s=60,
    )  # fmt: skip
    read = read_to_end(cluster.bootstrap, "replicated", 2, "read_uncommitted", config=config)
    assert sorted(m.value() for m in read) == sorted(acked)
