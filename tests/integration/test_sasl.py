"""SASL listeners against the real clients: PLAIN users from the listener's JAAS
configuration, SCRAM-SHA-256/512 users created through AlterUserScramCredentials (their
credentials in /config/users, the password never sent), OAUTHBEARER with unsecured JWS
tokens; SASL_SSL with SCRAM-SHA-512; wrong passwords, unknown mechanisms, requests
before authentication and garbage each get Kafka's answer (or a closed connection) and
leave the broker serving the others; with connections.max.reauth.ms the clients
re-authenticate and keep producing."""

from __future__ import annotations

import re
import socket
import struct
import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import (
    AdminClient,
    NewTopic,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kafka import KafkaConsumer, KafkaProducer

from kt.protocol import ApiKey, decode_response, encode_request
from kt.protocol import messages as m
from kt.storage.record_batch import Record, build_batch
from kt.testing.certificates import PASSWORD, issue, make_ca, write_party
from tests.integration.conftest import kt_command, kt_ok
from tests.integration.read_to_end import read_to_end
from tests.integration.test_tls import replicate_through_a_kill
from tests.integration.test_zookeeper_cluster import ZkCluster

pytestmark = pytest.mark.slow

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'username="admin" password="admin-secret" user_admin="admin-secret" '
              'user_alice="alice-secret";')  # fmt: skip
MECHANISMS = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER"


def sasl_broker(broker_factory, protocol: str = "SASL_PLAINTEXT", **extra: str):  # type: ignore[no-untyped-def]
    """A broker with a PLAINTEXT listener (for the set-up) and a SASL one."""
    listener = protocol.lower()
    broker = broker_factory(**{
        "listeners": f"PLAINTEXT://127.0.0.1:0,{protocol}://127.0.0.1:0",
        "sasl.enabled.mechanisms": MECHANISMS,
        f"listener.name.{listener}.plain.sasl.jaas.config": PLAIN_JAAS, **extra,
    })  # fmt: skip
    ports = re.findall(r"//127\.0\.0\.1:(\d+)", broker.output[-1])
    return broker, f"127.0.0.1:{ports[1]}"


def add_scram_users(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.alter_user_scram_credentials([
        UserScramCredentialUpsertion("bob", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256,
                                                                4096), b"bob-secret"),
        UserScramCredentialUpsertion("carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512,
                                                                  8192), b"carol-secret"),
    ])  # fmt: skip
    for future in futures.values():
        assert future.result(30) is None
    admin.create_topics([NewTopic("sasl", 1, 1)])["sasl"].result(30)


def client(bootstrap: str, mechanism: str, user: str, password: str, **extra: str) -> dict:
    config = {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
              "sasl.mechanism": mechanism, **extra}  # fmt: skip
    if mechanism == "OAUTHBEARER":
        return config | {"enable.sasl.oauthbearer.unsecure.jwt": True,
                         "sasl.oauthbearer.config": f"principal={user}"}  # fmt: skip
    return config | {"sasl.username": user, "sasl.password": password}


def delivered(config: dict, count: int, timeout_s: float = 10.0) -> int:
    producer = Producer({**config, "acks": "all"})
    for i in range(count):
        producer.produce("sasl", f"{config['sasl.mechanism']}-{i}".encode())
    left = producer.flush(timeout_s)
    return count - left


def test_plain_scram_and_oauthbearer_clients_produce_and_consume(broker_factory) -> None:
    broker, sasl = sasl_broker(broker_factory)
    add_scram_users(broker.bootstrap)
    for mechanism, user, password in (("PLAIN", "alice", "alice-secret"),
                                      ("SCRAM-SHA-256", "bob", "bob-secret"),
                                      ("SCRAM-SHA-512", "carol", "carol-secret"),
                                      ("OAUTHBEARER", "dave", "")):  # fmt: skip
        assert delivered(client(sasl, mechanism, user, password), 50) == 50, mechanism
    consumer_config = client(sasl, "SCRAM-SHA-512", "carol", "carol-secret")
    assert len(read_to_end(sasl, "sasl", 1, "read_uncommitted", config=consumer_config)) == 200

    python = KafkaProducer(bootstrap_servers=sasl, security_protocol="SASL_PLAINTEXT",
                           sasl_mechanism="SCRAM-SHA-256", sasl_plain_username="bob",
                           sasl_plain_password="bob-secret", acks="all")  # fmt: skip
    python.send("sasl", b"from kafka-python").get(30)
    python.close()
    reader = KafkaConsumer("sasl", bootstrap_servers=sasl, security_protocol="SASL_PLAINTEXT",
                           sasl_mechanism="PLAIN", sasl_plain_username="alice",
                           sasl_plain_password="alice-secret", auto_offset_reset="earliest",
                           consumer_timeout_ms=10000)  # fmt: skip
    assert sum(1 for _ in reader) == 201
    reader.close()


def test_scram_credentials_are_described_altered_and_deleted(broker_factory) -> None:
    broker, sasl = sasl_broker(broker_factory)
    add_scram_users(broker.bootstrap)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    described = admin.describe_user_scram_credentials()
    infos = {user: [(i.mechanism, i.iterations) for i in d.scram_credential_infos]
             for user, d in described.result(30).items()}  # fmt: skip
    assert infos == {"bob": [(ScramMechanism.SCRAM_SHA_256, 4096)],
                     "carol": [(ScramMechanism.SCRAM_SHA_512, 8192)]}  # fmt: skip
    bad = admin.alter_user_scram_credentials([
        UserScramCredentialUpsertion("erin", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256,
                                                                 1000), b"x"),
        UserScramCredentialDeletion("frank", ScramMechanism.SCRAM_SHA_256),
    ])  # fmt: skip
    errors = {}
    for user, future in bad.items():
        with pytest.raises(Exception) as info:
            future.result(30)
        errors[user] = info.value.args[0].str()
    missing = "Attempt to delete a user credential that does not exist"
    assert errors == {"erin": "Too few iterations", "frank": missing}
    deleted = admin.alter_user_scram_credentials(
        [UserScramCredentialDeletion("bob", ScramMechanism.SCRAM_SHA_256)]
    )
    assert deleted["bob"].result(30) is None
    assert delivered(client(sasl, "SCRAM-SHA-256", "bob", "bob-secret"), 5, 5) == 0


def raw_request(port: int, api_key: ApiKey, version: int, body: object) -> object | None:
    """One request on a new connection; the decoded answer, or None if the broker closed
    the connection without one."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(encode_request(api_key, version, 1, "raw", body))
        size = sock.recv(4)
        if len(size) < 4:
            return None
        (length,) = struct.unpack(">i", size)
        data = b""
        while len(data) < length:
            chunk = sock.recv(length - len(data))
            assert chunk
            data += chunk
        answer = decode_response(api_key, version, data)[1]
        assert sock.recv(1) == b""  # and then it closes the connection
        return answer


def test_bad_credentials_and_bad_requests_are_refused_and_others_served(broker_factory) -> None:
    broker, sasl = sasl_broker(broker_factory)
    add_scram_users(broker.bootstrap)
    port = int(sasl.rsplit(":", 1)[1])
    assert delivered(client(sasl, "PLAIN", "alice", "wrong"), 5, 5) == 0
    assert delivered(client(sasl, "SCRAM-SHA-256", "bob", "wrong"), 5, 5) == 0
    assert delivered(client(sasl, "SCRAM-SHA-256", "nobody", "x"), 5, 5) == 0
    handshake = raw_request(
        port, ApiKey.SASL_HANDSHAKE, 1, m.SaslHandshakeRequest(mechanism="GSSAPI")
    )
    assert (handshake.error_code, list(handshake.mechanisms)) == (33, MECHANISMS.split(","))
    assert raw_request(port, ApiKey.METADATA, 4, m.MetadataRequest(topics=None)) is None
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(struct.pack(">i", 12) + b"\xff" * 12)  # not a Kafka request
        assert sock.recv(16) == b""
    assert delivered(client(sasl, "PLAIN", "alice", "alice-secret"), 5) == 5
    log = broker.run_log()
    failed = "Failed authentication with /127.0.0.1 "
    assert f"{failed}(Authentication failed: Invalid username or password)" in log
    assert (
        "Failed authentication with /127.0.0.1 (Authentication failed during authentication"
        " due to invalid credentials with SASL mechanism SCRAM-SHA-256)"
    ) in log


def _frame(sock: socket.socket, api_key: ApiKey, version: int, body: object) -> object:
    sock.sendall(encode_request(api_key, version, 1, "raw", body))
    (length,) = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))
    return decode_response(api_key, version, sock.recv(length, socket.MSG_WAITALL))[1]


def seconds_to_refuse_a_failed_authentication(port: int) -> float:
    """PLAIN with a wrong password on a new connection: the time from the request to the
    refusal's answer, after which the broker closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        handshake = _frame(
            sock, ApiKey.SASL_HANDSHAKE, 1, m.SaslHandshakeRequest(mechanism="PLAIN")
        )
        assert handshake.error_code == 0
        sent = time.monotonic()
        refused = _frame(sock, ApiKey.SASL_AUTHENTICATE, 1,
                         m.SaslAuthenticateRequest(auth_bytes=b"\0alice\0wrong"))  # fmt: skip
        answered = time.monotonic()
        assert refused.error_code == 58  # SASL_AUTHENTICATION_FAILED
        assert sock.recv(1) == b""
        return answered - sent


def test_a_failed_authentication_is_answered_after_the_delay(broker_factory) -> None:
    """connection.failed.authentication.delay.ms (Kafka's 100 ms by default): the broker
    answers a failed authentication that long after it, then closes the connection (Kafka's
    delayed close), so that a client retrying wrong credentials cannot make it spin
    (librdkafka tried 194 times in 10 s without the delay, 23 with Kafka's 100 ms)."""
    broker, sasl = sasl_broker(broker_factory,
                               **{"connection.failed.authentication.delay.ms": "1500"})  # fmt: skip
    port = int(sasl.rsplit(":", 1)[1])
    assert seconds_to_refuse_a_failed_authentication(port) >= 1.4
    assert delivered(client(sasl, "PLAIN", "alice", "alice-secret"), 5) == 5


@pytest.mark.parametrize(("limit", "answered"), [(None, False), ("600000", True)])
def test_a_frame_before_authentication_is_bounded(broker_factory, limit, answered) -> None:
    """sasl.server.max.receive.size (Kafka's 512 KiB by default): a SASL listener reads no
    larger frame before the connection is authenticated, and closes the connection."""
    extra = {"sasl.server.max.receive.size": limit} if limit else {}
    _, sasl = sasl_broker(broker_factory, **extra)
    port = int(sasl.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        handshake = _frame(
            sock, ApiKey.SASL_HANDSHAKE, 1, m.SaslHandshakeRequest(mechanism="PLAIN")
        )
        assert handshake.error_code == 0
        big = m.SaslAuthenticateRequest(auth_bytes=b"\0alice\0" + b"x" * 550_000)  # 550 KB
        try:
            sock.sendall(encode_request(ApiKey.SASL_AUTHENTICATE, 1, 2, "raw", big))
            size = sock.recv(4, socket.MSG_WAITALL)
        except (ConnectionResetError, BrokenPipeError):  # closed with the frame unread
            size = b""
    if answered:  # read whole, and refused as a wrong password
        (length,) = struct.unpack(">i", size)
        assert length > 0
    else:  # closed unread
        assert size == b""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:  # authenticated:
        _frame(sock, ApiKey.SASL_HANDSHAKE, 1, m.SaslHandshakeRequest(mechanism="PLAIN"))
        ok = _frame(sock, ApiKey.SASL_AUTHENTICATE, 1,
                    m.SaslAuthenticateRequest(auth_bytes=b"\0alice\0alice-secret"))  # fmt: skip
        assert ok.error_code == 0
        records = build_batch([Record(None, 1_700_000_000_000, None, b"x" * 600_000)])
        P = m.ProduceRequest
        produced = _frame(sock, ApiKey.PRODUCE, 7, P(acks=1, timeout_ms=5000, topic_data=[
            P.TopicProduceData(name="nowhere", partition_data=[
                P.PartitionProduceData(index=0, records=records)])]))  # fmt: skip
        assert produced.responses[0].partition_responses[0].error_code != 0  # read, answered


def test_scram_sha_512_over_sasl_ssl(broker_factory, tmp_path) -> None:
    ca = make_ca()
    files = write_party(tmp_path, "broker", ca, issue(ca, "broker"))
    broker, sasl = sasl_broker(broker_factory, "SASL_SSL", **{
        "ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(files.keystore_p12),
        "ssl.keystore.password": PASSWORD,
    })  # fmt: skip
    add_scram_users(broker.bootstrap)
    tls = {"security.protocol": "SASL_SSL", "ssl.ca.location": str(files.ca)}
    config = client(sasl, "SCRAM-SHA-512", "carol", "carol-secret", **tls)
    assert delivered(config, 100) == 100
    assert len(read_to_end(sasl, "sasl", 1, "read_uncommitted", config=config)) == 100


def test_clients_reauthenticate_before_their_session_ends(broker_factory) -> None:
    broker, sasl = sasl_broker(broker_factory, **{"connections.max.reauth.ms": "1500"})
    add_scram_users(broker.bootstrap)
    errors: list[KafkaError] = []
    producer = Producer({**client(sasl, "SCRAM-SHA-256", "bob", "bob-secret"), "acks": "all",
                         "error_cb": errors.append})  # fmt: skip
    sent = 0
    deadline = time.monotonic() + 6  # four sessions' worth
    while time.monotonic() < deadline:
        producer.produce("sasl", b"r", on_delivery=lambda e, _: errors.append(e) if e else None)
        sent += 1
        producer.poll(0.01)
    assert producer.flush(30) == 0 and errors == []
    assert "its SASL session expired" not in broker.run_log()
    consumer = Consumer({**client(sasl, "PLAIN", "alice", "alice-secret"), "group.id": "r"})
    consumer.close()
    assert sent > 100


def test_brokers_replicate_over_sasl_ssl_and_lose_nothing_to_a_kill(tmp_path, zookeeper) -> None:
    """Three brokers whose only listener is SASL_SSL: they authenticate to each other with
    PLAIN (sasl.mechanism.inter.broker.protocol), the clients with SCRAM-SHA-512 created
    through the admin API by a PLAIN admin."""
    ca = make_ca()
    files = write_party(tmp_path / "pki", "broker", ca, issue(ca, "broker"))
    cluster = ZkCluster(tmp_path, zookeeper, overrides={
        "listeners": "SASL_SSL://127.0.0.1:0", "security.inter.broker.protocol": "SASL_SSL",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
        "ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(files.keystore_p12),
        "ssl.keystore.password": PASSWORD, "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(files.ca),
        "min.insync.replicas": "2", "replica.lag.time.max.ms": "4000",
    })  # fmt: skip
    try:
        tls = {"security.protocol": "SASL_SSL", "ssl.ca.location": str(files.ca)}
        admin = AdminClient(client(cluster.bootstrap, "PLAIN", "admin", "admin-secret", **tls))
        futures = admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
            "carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"carol-secret"
        )])  # fmt: skip
        assert futures["carol"].result(30) is None
        config = client(cluster.bootstrap, "SCRAM-SHA-512", "carol", "carol-secret", **tls)
        replicate_through_a_kill(cluster, config)
    finally:
        cluster.close()


def test_kt_tools_authenticate(broker_factory, tmp_path) -> None:
    broker, sasl = sasl_broker(broker_factory)
    add_scram_users(broker.bootstrap)
    props = tmp_path / "client.properties"
    props.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="carol" password="carol-secret";\n'
    )
    assert kt_ok("topics", "--bootstrap-server", sasl, "--list", "--command-config",
                 str(props)) == ["sasl"]  # fmt: skip
    kt_ok("producer-perf-test", "--topic", "sasl", "--num-records", "300", "--record-size",
          "10", "--throughput", "-1", "--producer.config", str(props), "--producer-props",
          f"bootstrap.servers={sasl}")  # fmt: skip
    consumed = kt_ok("console-consumer", "--bootstrap-server", sasl, "--topic", "sasl",
                     "--from-beginning", "--max-messages", "300", "--consumer.config",
                     str(props))  # fmt: skip
    assert len(consumed) == 300
    props.write_text(props.read_text().replace("carol-secret", "wrong"))
    error = kt_command("topics", "--bootstrap-server", sasl, "--list", "--command-config",
                       str(props))  # fmt: skip
    assert error.returncode == 1
    refused = "due to invalid credentials with SASL mechanism SCRAM-SHA-512"
    assert error.stderr.strip().endswith(f"Authentication failed during authentication {refused}")
