"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka speaks them (KIP-84):
the credential Kafka keeps per user and mechanism, its text form in `/config/users/<user>`
(ScramCredentialUtils), and the server side of the exchange (ScramSaslServer).

A credential is derived from the salted password (Hi(password, salt, iterations)):
stored_key = H(HMAC(salted, "Client Key")), server_key = HMAC(salted, "Server Key"); the
broker never holds the password. The exchange: client-first `n,,n=<user>,r=<nonce>`,
server-first `r=<nonce+ours>,s=<salt>,i=<iterations>`, client-final
`c=<gs2 header>,r=<nonce>,p=<proof>`, server-final `v=<signature>`; the proof is checked
against stored_key.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from kt.security.sasl_errors import SaslAuthenticationError, SaslError


@dataclass(frozen=True)
class ScramMechanism:
    name: str
    hash_name: str
    kafka_id: int  # ScramMechanism's type in AlterUserScramCredentials
    min_iterations: int = 4096

    def digest(self, data: bytes) -> bytes:
        return hashlib.new(self.hash_name, data).digest()

    def hmac(self, key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, self.hash_name).digest()

    def salted_password(self, password: str, salt: bytes, iterations: int) -> bytes:
        return hashlib.pbkdf2_hmac(self.hash_name, password.encode(), salt, iterations)


SCRAM_SHA_256 = ScramMechanism("SCRAM-SHA-256", "sha256", 1)
SCRAM_SHA_512 = ScramMechanism("SCRAM-SHA-512", "sha512", 2)
MECHANISMS = {m.name: m for m in (SCRAM_SHA_256, SCRAM_SHA_512)}
BY_ID = {m.kafka_id: m for m in MECHANISMS.values()}
MAX_ITERATIONS = 16384  # ScramMechanism.maxIterations: AlterUserScramCredentials refuses more


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    @classmethod
    def from_salted_password(
        cls, mechanism: ScramMechanism, salt: bytes, salted: bytes, iterations: int
    ) -> ScramCredential:
        client_key = mechanism.hmac(salted, b"Client Key")
        return cls(salt, mechanism.digest(client_key), mechanism.hmac(salted, b"Server Key"),
                   iterations)  # fmt: skip

    @classmethod
    def from_password(
        cls, mechanism: ScramMechanism, password: str, iterations: int = 4096
    ) -> ScramCredential:
        salt = secrets.token_bytes(32)
        salted = mechanism.salted_password(password, salt, iterations)
        return cls.from_salted_password(mechanism, salt, salted, iterations)

    def to_text(self) -> str:
        """ScramCredentialUtils.credentialToString."""
        b64 = base64.b64encode
        return (
            f"salt={b64(self.salt).decode()},stored_key={b64(self.stored_key).decode()},"
            f"server_key={b64(self.server_key).decode()},iterations={self.iterations}"
        )

    @classmethod
    def from_text(cls, text: str) -> ScramCredential:
        fields = dict(part.split("=", 1) for part in text.split(",") if "=" in part)
        try:
            return cls(
                base64.b64decode(fields["salt"]), base64.b64decode(fields["stored_key"]),
                base64.b64decode(fields["server_key"]), int(fields["iterations"]),
            )  # fmt: skip
        except (KeyError, ValueError) as e:
            raise ValueError(f"invalid SCRAM credential: {e}") from None


def _attributes(message: str) -> dict[str, str]:
    out = {}
    for part in message.split(","):
        key, eq, value = part.partition("=")
        if not eq or len(key) != 1:
            raise SaslError(f"Invalid SCRAM message attribute: {part!r}")
        out[key] = value
    return out


def _username(saslname: str) -> str:
    """RFC 5802's saslname: "=2C" is a comma, "=3D" an equals sign."""
    return saslname.replace("=2C", ",").replace("=3D", "=")


class ScramServer:
    """One exchange. `lookup(user)` returns the user's credential for this mechanism or
    None; `evaluate` takes each client message and returns the answer; `complete` once
    the client's proof checked."""

    def __init__(
        self, mechanism: ScramMechanism, lookup: Callable[[str], ScramCredential | None],
        nonce: str | None = None,
    ) -> None:  # fmt: skip
        self.mechanism = mechanism
        self._our_nonce = nonce or secrets.token_urlsafe(24)  # given only by tests
        self.lookup = lookup
        self.state = "first"
        self.complete = False
        self.username: str | None = None
        self._credential: ScramCredential | None = None
        self._nonce = ""
        self._client_first_bare = ""
        self._server_first = ""

    def evaluate(self, token: bytes) -> bytes:
        try:
            message = token.decode()
        except UnicodeDecodeError:
            raise SaslError("Invalid SCRAM message: not UTF-8") from None
        if self.state == "first":
            return self._client_first(message)
        if self.state == "final":
            return self._client_final(message)
        raise SaslError(f"Unexpected challenge in Sasl server state {self.state}")

    def _client_first(self, message: str) -> bytes:
        gs2, sep, bare = message.partition(",")
        authzid, sep2, bare = bare.partition(",")
        if (
            not sep
            or not sep2
            or gs2 not in ("n", "y")
            or (authzid and not authzid.startswith("a="))
        ):
            raise SaslError("Invalid SCRAM client first message")
        attributes = _attributes(bare)
        if "n" not in attributes or "r" not in attributes:
            raise SaslError("Invalid SCRAM client first message")
        self.username = _username(attributes["n"])
        if authzid and _username(authzid[2:]) != self.username:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an "
                "authorization id that is different from username"
            )
        if attributes.get("tokenauth") == "true":
            raise SaslError("Delegation tokens are not supported")
        credential = self.lookup(self.username)
        if credential is None:
            raise SaslError("Authentication failed: Invalid user credentials")
        if credential.iterations < self.mechanism.min_iterations:
            raise SaslError(
                f"Iterations {credential.iterations} is less than the minimum "
                f"{self.mechanism.min_iterations} for {self.mechanism.name}"
            )
        self._credential = credential
        self._nonce = attributes["r"] + self._our_nonce
        self._client_first_bare = bare
        self._server_first = (f"r={self._nonce},s={base64.b64encode(credential.salt).decode()},"
                              f"i={credential.iterations}")  # fmt: skip
        self.state = "final"
        return self._server_first.encode()

    def _client_final(self, message: str) -> bytes:
        without_proof, _, proof_part = message.rpartition(",p=")
        attributes = _attributes(without_proof)
        if attributes.get("r") != self._nonce:
            raise SaslError("Invalid client nonce in the final client message.")
        credential = self._credential
        assert credential is not None
        try:
            proof = base64.b64decode(proof_part, validate=True)
        except ValueError:
            raise SaslError("Authentication failed: Invalid client final message") from None
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        signature = self.mechanism.hmac(credential.stored_key, auth_message)
        if len(proof) != len(signature):
            raise SaslError("Invalid client credentials")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(self.mechanism.digest(client_key), credential.stored_key):
            raise SaslError("Invalid client credentials")
        server_signature = self.mechanism.hmac(credential.server_key, auth_message)
        self.state = "complete"
        self.complete = True
        return b"v=" + base64.b64encode(server_signature)


class ScramClient:
    """The client side, for kt's tools and brokers (ScramSaslClient)."""

    def __init__(
        self, mechanism: ScramMechanism, username: str, password: str, nonce: str | None = None
    ) -> None:
        self.mechanism = mechanism
        self.username = username
        self.password = password
        self._nonce = nonce or secrets.token_urlsafe(24)  # given only by tests
        self._client_first_bare = ""
        self._server_signature = b""

    def first_message(self) -> bytes:
        name = self.username.replace("=", "=3D").replace(",", "=2C")
        self._client_first_bare = f"n={name},r={self._nonce}"
        return f"n,,{self._client_first_bare}".encode()

    def final_message(self, server_first: bytes) -> bytes:
        text = server_first.decode()
        attributes = _attributes(text)
        nonce, salt, iterations = attributes["r"], attributes["s"], int(attributes["i"])
        if not nonce.startswith(self._nonce):
            raise SaslError("Invalid server nonce: does not start with client nonce")
        if iterations < self.mechanism.min_iterations:
            raise SaslError(
                f"Requested iterations {iterations} is less than the minimum "
                f"{self.mechanism.min_iterations} for {self.mechanism.name}"
            )
        salted = self.mechanism.salted_password(self.password, base64.b64decode(salt), iterations)
        without_proof = f"c={base64.b64encode(b'n,,').decode()},r={nonce}"
        auth_message = f"{self._client_first_bare},{text},{without_proof}".encode()
        client_key = self.mechanism.hmac(salted, b"Client Key")
        signature = self.mechanism.hmac(self.mechanism.digest(client_key), auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        server_key = self.mechanism.hmac(salted, b"Server Key")
        self._server_signature = self.mechanism.hmac(server_key, auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        attributes = _attributes(server_final.decode())
        if "e" in attributes:
            raise SaslAuthenticationError(f"Sasl authentication using {self.mechanism.name} "
                                          f"failed with error: {attributes['e']}")  # fmt: skip
        if base64.b64decode(attributes.get("v", "")) != self._server_signature:
            raise SaslError("Invalid server signature in server final message")
