"""TLS contexts from Kafka's ssl.* keys (kt/security/ssl_factory.py), with certificates
made here: PEM key stores with an encrypted PKCS#8 key, inline PEM, PKCS12, JKS refused
with how to convert it; a real handshake between the broker's and the client's contexts
decides whether they agree."""

from __future__ import annotations

import socket
import ssl
import subprocess
import threading
from pathlib import Path

import pytest

from kt.errors import InvalidConfigError
from kt.security.ssl_factory import client_context, client_tls_for, listener_lookup, server_context
from kt.testing.certificates import PASSWORD, cert_pem, issue, key_pem, make_ca, write_party


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict:
    directory = tmp_path_factory.mktemp("pki")
    ca, other_ca = make_ca(), make_ca("another CA")
    broker = issue(ca, "broker")
    return {
        "ca": ca,
        "broker_issued": broker,
        "broker": write_party(directory, "broker", ca, broker),
        "client": write_party(directory, "client", ca, issue(ca, "client")),
        "stranger": write_party(directory, "stranger", other_ca, issue(other_ca, "stranger")),
        "dir": directory,
    }


def handshake(server: ssl.SSLContext, client: ssl.SSLContext, name: str = "127.0.0.1") -> str:
    """Both sides of a TLS handshake over a socket pair; the server's peer subject CN
    ("" without a client certificate), or the first side's SSLError."""
    left, right = socket.socketpair()
    outcome: dict[str, object] = {}

    def serve() -> None:
        try:
            with server.wrap_socket(left, server_side=True) as tls:
                peer = tls.getpeercert()
                subject = dict(x[0] for x in peer["subject"]) if peer else {}
                outcome["peer"] = subject.get("commonName", "")
                tls.recv(1)
        except (ssl.SSLError, OSError) as e:
            outcome["server"] = e

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        with client.wrap_socket(right, server_hostname=name) as tls:
            tls.sendall(b"x")
    except (ssl.SSLError, OSError) as e:
        outcome["client"] = e
    thread.join(10)
    error = outcome.get("client") or outcome.get("server")
    if isinstance(error, ssl.SSLError):
        raise error
    return str(outcome.get("peer", ""))


def pem_server(pki: dict, **extra: str) -> ssl.SSLContext:
    return server_context({"ssl.keystore.type": "PEM", "ssl.key.password": PASSWORD,
                           "ssl.keystore.location": str(pki["broker"].keystore_pem),
                           **extra}.get)  # fmt: skip


def pem_client(pki: dict, **extra: str) -> ssl.SSLContext:
    return client_context(
        {
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(pki["broker"].ca),
            **extra,
        }.get
    ).context


def test_a_pem_key_store_with_an_encrypted_key(pki) -> None:
    assert handshake(pem_server(pki), pem_client(pki)) == ""
    with pytest.raises(InvalidConfigError, match="^ssl.keystore.location=.*broker.keystore.pem: "):
        server_context({"ssl.keystore.type": "PEM", "ssl.key.password": "wrong",
                        "ssl.keystore.location": str(pki["broker"].keystore_pem)}.get)  # fmt: skip
    with pytest.raises(InvalidConfigError, match="SSL key store password cannot be specified with "
                       "PEM format, only key password may be specified"):  # fmt: skip
        pem_server(pki, **{"ssl.keystore.password": PASSWORD})


def test_inline_pem_stores(pki) -> None:
    broker = pki["broker_issued"]
    server = server_context({
        "ssl.keystore.type": "PEM", "ssl.key.password": PASSWORD,
        "ssl.keystore.key": key_pem(broker, PASSWORD),
        "ssl.keystore.certificate.chain": cert_pem(broker.cert, pki["ca"].cert),
    }.get)  # fmt: skip
    client = client_context(
        {"ssl.truststore.type": "PEM", "ssl.truststore.certificates": cert_pem(pki["ca"].cert)}.get
    )
    assert handshake(server, client.context) == ""
    with pytest.raises(InvalidConfigError, match="SSL key store certificate chain and key must "
                       "both be set or neither"):  # fmt: skip
        server_context({"ssl.keystore.type": "PEM", "ssl.keystore.key": key_pem(broker)}.get)


def test_pkcs12_stores_load(pki) -> None:
    stores = {"ssl.keystore.type": "PKCS12", "ssl.keystore.password": PASSWORD,
              "ssl.truststore.type": "PKCS12", "ssl.truststore.password": PASSWORD}  # fmt: skip
    server = server_context({**stores, "ssl.keystore.location": str(pki["broker"].keystore_p12),
                             "ssl.truststore.location": str(pki["client"].keystore_p12),
                             "ssl.client.auth": "required"}.get)  # fmt: skip
    client = client_context(
        {
            **stores,
            "ssl.keystore.location": str(pki["client"].keystore_p12),
            "ssl.truststore.location": str(pki["broker"].keystore_p12),
        }.get
    )
    assert handshake(server, client.context) == "client"
    with pytest.raises(InvalidConfigError, match="cannot read it as PKCS12"):
        server_context({**stores, "ssl.keystore.password": "wrong",
                        "ssl.keystore.location": str(pki["broker"].keystore_p12)}.get)  # fmt: skip


def test_a_jks_file_is_refused_with_how_to_convert_it(pki) -> None:
    jks = pki["dir"] / "broker.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed\x00\x00\x00\x02")
    with pytest.raises(InvalidConfigError, match="a JKS key store, which kt cannot read; convert "
                       "it with keytool -importkeystore"):  # fmt: skip
        server_context({"ssl.keystore.location": str(jks), "ssl.keystore.password": "x"}.get)


def test_client_auth_required_refuses_a_client_without_a_trusted_certificate(pki) -> None:
    server = pem_server(pki, **{"ssl.client.auth": "required", "ssl.truststore.type": "PEM",
                                "ssl.truststore.location": str(pki["client"].ca)})  # fmt: skip
    with pytest.raises(ssl.SSLError):
        handshake(server, pem_client(pki))
    stranger = pem_client(
        pki,
        **{
            "ssl.keystore.type": "PEM",
            "ssl.key.password": PASSWORD,
            "ssl.keystore.location": str(pki["stranger"].keystore_pem),
        },
    )
    with pytest.raises(ssl.SSLError):
        handshake(server, stranger)
    trusted = pem_client(
        pki,
        **{
            "ssl.keystore.type": "PEM",
            "ssl.key.password": PASSWORD,
            "ssl.keystore.location": str(pki["client"].keystore_pem),
        },
    )
    assert handshake(server, trusted) == "client"
    requested = pem_server(pki, **{"ssl.client.auth": "requested", "ssl.truststore.type": "PEM",
                                   "ssl.truststore.location": str(pki["client"].ca)})  # fmt: skip
    assert handshake(requested, pem_client(pki)) == ""
    with pytest.raises(
        InvalidConfigError, match="String must be one of: required, requested, none"
    ):
        pem_server(pki, **{"ssl.client.auth": "always"})


def test_clients_check_the_brokers_name_unless_told_not_to(pki) -> None:
    with pytest.raises(ssl.SSLCertVerificationError, match="mismatch"):
        handshake(pem_server(pki), pem_client(pki), name="broker.example.com")
    unchecked = pem_client(pki, **{"ssl.endpoint.identification.algorithm": ""})
    assert handshake(pem_server(pki), unchecked, name="broker.example.com") == ""
    stranger_trust = client_context(
        {"ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki["stranger"].ca)}.get
    )
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(pem_server(pki), stranger_trust.context)


def test_enabled_protocols_bound_the_versions(pki) -> None:
    tls13 = pem_server(pki, **{"ssl.enabled.protocols": "TLSv1.3"})
    assert (tls13.minimum_version, tls13.maximum_version) == (ssl.TLSVersion.TLSv1_3,) * 2
    tls12_client = pem_client(pki, **{"ssl.enabled.protocols": "TLSv1.2"})
    with pytest.raises(ssl.SSLError):
        handshake(tls13, tls12_client)
    with pytest.raises(InvalidConfigError, match="^ssl.enabled.protocols=SSLv3: expected some of"):
        pem_server(pki, **{"ssl.enabled.protocols": "SSLv3"})


def test_what_kt_cannot_do_is_refused(pki) -> None:
    for key, value, words in (
        ("ssl.cipher.suites", "TLS_AES_128_GCM_SHA256", "choosing cipher suites"),
        ("ssl.engine.factory.class", "com.example.Factory", "SSL engine factories"),
        ("ssl.principal.mapping.rules", "RULE:^CN=(.*?),.*$/$1/", "principal mapping rules"),
    ):
        with pytest.raises(InvalidConfigError, match=f"^{key}=.*kt does not support {words}"):
            pem_server(pki, **{key: value})


def test_listener_keys_win_over_the_plain_ones() -> None:
    get = listener_lookup(
        {"ssl.client.auth": "none", "listener.name.internal.ssl.client.auth": "required"},
        "INTERNAL",
    )
    assert (get("ssl.client.auth"), listener_lookup({"ssl.client.auth": "none"}, "X")(
        "ssl.client.auth")) == ("required", "none")  # fmt: skip


def test_plaintext_clients_get_no_tls(tmp_path: Path) -> None:
    assert client_tls_for({}) is None
    assert client_tls_for({"security.protocol": "PLAINTEXT"}) is None


def test_only_a_listener_prefixed_client_auth_asks_sasl_ssl_clients_for_certificates(
    pki, caplog
) -> None:
    """Kafka's ChannelBuilders (KIP-684): the broker-wide ssl.client.auth applies to SSL
    listeners; a SASL_SSL listener asks for client certificates only when its own
    listener.name.<l>.ssl.client.auth says so (librdkafka's 0097 relies on it)."""
    from kt.config import KafkaConfig

    base = {
        "listeners": "SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "ssl.keystore.type": "PEM", "ssl.key.password": PASSWORD,
        "ssl.keystore.location": str(pki["broker"].keystore_pem),
        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki["broker"].ca),
        "ssl.client.auth": "required", "security.inter.broker.protocol": "SSL",
    }  # fmt: skip
    config = KafkaConfig(base)
    modes = config.server_tls("SSL").verify_mode, config.server_tls("SASL_SSL").verify_mode
    assert modes == (ssl.CERT_REQUIRED, ssl.CERT_NONE)
    assert "is applied only to SSL listeners" in caplog.text
    prefixed = KafkaConfig({**base, "listener.name.sasl_ssl.ssl.client.auth": "requested"})
    assert prefixed.server_tls("SASL_SSL").verify_mode == ssl.CERT_OPTIONAL


@pytest.mark.parametrize("version", ["-tls1_2", "-tls1_3"])
def test_certificate_requests_name_the_trusted_cas(pki, version: str) -> None:
    """As Java's SSLEngine, a broker asking for client certificates names the CAs it
    trusts (librdkafka sends no certificate that none of them issued)."""
    server = pem_server(pki, **{"ssl.client.auth": "requested", "ssl.truststore.type": "PEM",
                                "ssl.truststore.location": str(pki["broker"].ca)})  # fmt: skip
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        connection, _ = listener.accept()
        with server.wrap_socket(connection, server_side=True) as tls:
            tls.recv(1)

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        shown = subprocess.run(
            ["openssl", "s_client", "-connect", f"127.0.0.1:{port}", version],
            input="", capture_output=True, text=True, timeout=30,
        ).stdout  # fmt: skip
    finally:
        thread.join(10)
        listener.close()
    names = shown.split("Acceptable client certificate CA names\n", 1)[1].splitlines()[0]
    assert names == "O = kt tests, CN = kt test CA"
