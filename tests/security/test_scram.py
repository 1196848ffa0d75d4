"""SCRAM (kt/security/scram.py) against RFC 7677's SCRAM-SHA-256 example exchange, both
sides; Kafka's credential text; the PLAIN, OAUTHBEARER and JAAS readers of
kt/security/sasl.py."""

from __future__ import annotations

import base64
import json

import pytest

from kt.errors import InvalidConfigError
from kt.security.sasl import (
    JaasConfig,
    oauthbearer_authenticate,
    plain_authenticate,
    unsecured_token,
)
from kt.security.sasl_errors import SaslAuthenticationError, SaslError
from kt.security.scram import (
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    ScramClient,
    ScramCredential,
    ScramServer,
)

# RFC 7677, section 3.
CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
SERVER_FIRST = (
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
)
CLIENT_FINAL = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")  # fmt: skip
SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def rfc_credential() -> ScramCredential:
    salted = SCRAM_SHA_256.salted_password("pencil", SALT, 4096)
    return ScramCredential.from_salted_password(SCRAM_SHA_256, SALT, salted, 4096)


def test_the_server_side_of_rfc_7677s_exchange() -> None:
    server = ScramServer(SCRAM_SHA_256, {"user": rfc_credential()}.get, nonce=SERVER_NONCE)
    assert server.evaluate(CLIENT_FIRST) == SERVER_FIRST
    assert server.evaluate(CLIENT_FINAL) == SERVER_FINAL
    assert server.complete and server.username == "user"


def test_the_client_side_of_rfc_7677s_exchange() -> None:
    client = ScramClient(SCRAM_SHA_256, "user", "pencil", nonce=CLIENT_NONCE)
    assert client.first_message() == CLIENT_FIRST
    assert client.final_message(SERVER_FIRST) == CLIENT_FINAL
    client.verify(SERVER_FINAL)
    with pytest.raises(SaslError, match="Invalid server signature"):
        client.verify(b"v=" + base64.b64encode(b"x" * 32))


def test_a_wrong_proof_or_nonce_or_user_fails() -> None:
    server = ScramServer(SCRAM_SHA_256, {"user": rfc_credential()}.get, nonce=SERVER_NONCE)
    server.evaluate(CLIENT_FIRST)
    with pytest.raises(SaslError, match="Invalid client credentials"):
        server.evaluate(CLIENT_FINAL.replace(b"p=dHz", b"p=dHy"))
    server = ScramServer(SCRAM_SHA_256, {"user": rfc_credential()}.get, nonce=SERVER_NONCE)
    server.evaluate(CLIENT_FIRST)
    with pytest.raises(SaslError, match="Invalid client nonce"):
        server.evaluate(CLIENT_FINAL.replace(b"k0,p", b"k1,p"))
    with pytest.raises(SaslError, match="Invalid user credentials"):
        ScramServer(SCRAM_SHA_256, {}.get).evaluate(CLIENT_FIRST)


def test_credentials_in_kafkas_text_and_both_mechanisms_round_trip() -> None:
    credential = rfc_credential()
    text = credential.to_text()
    assert text.startswith("salt=W22ZaJ0SNY7soEsUEjb6gQ==,stored_key=") and text.endswith(
        ",iterations=4096"
    )
    assert ScramCredential.from_text(text) == credential
    for mechanism in (SCRAM_SHA_256, SCRAM_SHA_512):
        stored = ScramCredential.from_password(mechanism, "secret")
        server = ScramServer(mechanism, {"u,=": stored}.get)
        client = ScramClient(mechanism, "u,=", "secret")
        client.verify(
            server.evaluate(client.final_message(server.evaluate(client.first_message())))
        )
        assert server.username == "u,="


def test_plain() -> None:
    users = {"alice": "alice-secret"}
    assert plain_authenticate(b"\x00alice\x00alice-secret", users) == "alice"
    cases = [(b"\x00alice\x00wrong", "Invalid username or password"),
             (b"\x00\x00x", "username not specified"),
             (b"alice-secret", "expected 3 tokens, got 1"),
             (b"bob\x00alice\x00alice-secret", "authorization id that is different")]  # fmt: skip
    for token, message in cases:
        with pytest.raises(SaslAuthenticationError, match=message):
            plain_authenticate(token, users)


def test_unsecured_oauthbearer_tokens() -> None:
    def response(token: str) -> bytes:
        return f"n,,\x01auth=Bearer {token}\x01\x01".encode()

    assert oauthbearer_authenticate(response(unsecured_token("dave")), {}) == "dave"
    expired = unsecured_token("dave", lifetime_s=-10)
    with pytest.raises(SaslError, match="expired"):
        oauthbearer_authenticate(response(expired), {})
    scoped = unsecured_token("dave", scope=["read"])
    with pytest.raises(SaslError, match="insufficient_scope"):
        oauthbearer_authenticate(response(scoped), {"unsecuredValidatorRequiredScope": "write"})
    header, claims, _ = unsecured_token("dave").split(".")
    signed = base64.urlsafe_b64encode(json.dumps({"alg": "HS256"}).encode()).decode().rstrip("=")
    with pytest.raises(SaslError, match="only unsecured JWS"):
        oauthbearer_authenticate(response(f"{signed}.{claims}.c2ln"), {})


def test_jaas_lines_as_kafka_reads_them() -> None:
    jaas = JaasConfig.parse('org.apache.kafka.common.security.plain.PlainLoginModule required '
                            'username="admin" password="a\\"b" user_alice="x y";', "k")  # fmt: skip
    assert (jaas.login_module, jaas.flag) == (
        "org.apache.kafka.common.security.plain.PlainLoginModule", "required")  # fmt: skip
    assert jaas.options == {"username": "admin", "password": 'a"b', "user_alice": "x y"}
    with pytest.raises(InvalidConfigError, match="must end with ';'"):
        JaasConfig.parse("Module required", "k")
    with pytest.raises(InvalidConfigError, match="expected '<LoginModule>"):
        JaasConfig.parse("Module always;", "k")
