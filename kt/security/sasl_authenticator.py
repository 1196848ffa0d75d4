"""The requests of a SASL connection until it is authenticated (Kafka's
SaslServerAuthenticator), and its re-authentication (KIP-368).

A client may send ApiVersions (answered as any other), then SaslHandshake naming a
mechanism the listener enables (else UNSUPPORTED_SASL_MECHANISM, and the connection
closes). After a v1 handshake each token comes in a SaslAuthenticate request and its
answer in the response (SASL_AUTHENTICATION_FAILED with the message, then the
connection closes, on failure); after a v0 handshake tokens are raw size-prefixed frames.
Any other request before the exchange completes closes the connection, as Kafka's
IllegalSaslStateException does. Once complete the connection's principal is
`User:<name>`; with connections.max.reauth.ms the session ends that long after, and a
client that has not authenticated again by then has its connection closed at its next
request. A SaslHandshake on an authenticated connection starts a re-authentication,
which must name the same principal and mechanism.
"""

from __future__ import annotations

import logging
import struct
import time
from collections.abc import Awaitable, Callable
from typing import Any

from kt.errors import ProtocolError
from kt.protocol import ApiKey, decode_request, encode_response_parts
from kt.protocol import messages as m
from kt.security.sasl import (
    OAUTHBEARER,
    PLAIN,
    SaslListenerConfig,
    oauthbearer_authenticate,
    plain_authenticate,
)
from kt.security.sasl_errors import SaslAuthenticationError, SaslError
from kt.security.scram import MECHANISMS as SCRAM_MECHANISMS
from kt.security.scram import ScramCredential, ScramServer

log = logging.getLogger(__name__)

SASL_AUTHENTICATION_FAILED = 58
UNSUPPORTED_SASL_MECHANISM = 33
_HEADER = struct.Struct(">hh")
_SIZE = struct.Struct(">i")

ApiHandler = Callable[[memoryview, Any], Awaitable["list[Any] | None"]]
CredentialLookup = Callable[[str, str], Awaitable["ScramCredential | None"]]


class AuthenticationFailed(Exception):
    """The exchange failed: send `parts` (possibly none), log `reason`, close."""

    def __init__(self, parts: list[Any] | None, reason: str) -> None:
        super().__init__(reason)
        self.parts = parts


class SaslServerAuthenticator:
    """Invariant: `principal` is set once an exchange completed; during a
    re-authentication it keeps the previous one until the new exchange completes."""

    def __init__(
        self, config: SaslListenerConfig, api_versions: ApiHandler, scram: CredentialLookup
    ) -> None:
        self.config = config
        self.api_versions = api_versions
        self.scram = scram
        self.state = "versions_or_handshake"
        self.mechanism: str | None = None
        self.raw_tokens = False  # after a v0 handshake
        self.principal: str | None = None
        self.session_expires: float | None = None  # monotonic seconds
        self.reauthenticating = False
        self._scram: ScramServer | None = None

    @property
    def complete(self) -> bool:
        return self.state == "complete"

    def starts_reauthentication(self, frame: memoryview) -> bool:
        """A SaslHandshake on an authenticated connection (KIP-368)."""
        return len(frame) >= 4 and _HEADER.unpack_from(frame)[0] == ApiKey.SASL_HANDSHAKE

    def session_expired(self) -> bool:
        return self.session_expires is not None and time.monotonic() >= self.session_expires

    async def handle(self, frame: memoryview, ctx: Any) -> list[Any] | None:
        if self.complete:  # a re-authentication begins
            self.state = "handshake"
            self.reauthenticating = True
        if self.state == "authenticate" and self.raw_tokens:
            token = bytes(frame)
            try:
                answer = await self._evaluate(token)
            except SaslError as e:
                raise AuthenticationFailed(None, self._client_message(e)) from None
            self._maybe_complete(0)
            return [_SIZE.pack(len(answer)), answer]  # an empty answer too, as Kafka sends it
        try:
            header, request = decode_request(frame)
        except Exception as e:  # any malformed first packet: Kafka takes it for GSSAPI's
            raise AuthenticationFailed(None, f"Unexpected SASL packet: {e}") from None
        api_key = header.api_key
        if self.state == "authenticate":
            if api_key != ApiKey.SASL_AUTHENTICATE:
                raise AuthenticationFailed(
                    None, f"Unexpected Kafka request of type {api_key.name} during SASL "
                    "authentication."
                )  # fmt: skip
            return await self._authenticate(header, request)
        if api_key == ApiKey.API_VERSIONS and self.state == "versions_or_handshake":
            self.state = "handshake"
            return await self.api_versions(frame, ctx)
        if api_key != ApiKey.SASL_HANDSHAKE:
            raise AuthenticationFailed(
                None, f"Unexpected Kafka request of type {api_key.name} during SASL handshake."
            )
        return self._handshake(header, request)

    def _handshake(self, header: Any, request: Any) -> list[Any]:
        mechanism = request.mechanism
        enabled = list(self.config.mechanisms)
        if mechanism not in enabled or (self.reauthenticating and mechanism != self.mechanism):
            response = m.SaslHandshakeResponse(error_code=UNSUPPORTED_SASL_MECHANISM,
                                               mechanisms=enabled)  # fmt: skip
            raise AuthenticationFailed(encode_response_parts(header, response),
                                       f"Unsupported SASL mechanism {mechanism}")  # fmt: skip
        self.mechanism = mechanism
        self.raw_tokens = header.api_version == 0
        self.state = "authenticate"
        self._scram = None
        return encode_response_parts(
            header, m.SaslHandshakeResponse(error_code=0, mechanisms=enabled)
        )

    async def _authenticate(self, header: Any, request: Any) -> list[Any]:
        R = m.SaslAuthenticateResponse
        try:
            answer = await self._evaluate(bytes(request.auth_bytes))
        except SaslError as e:
            message = self._client_message(e)
            response = R(error_code=SASL_AUTHENTICATION_FAILED, error_message=message)
            raise AuthenticationFailed(encode_response_parts(header, response), message) from None
        lifetime_ms = self._maybe_complete(header.api_version)
        return encode_response_parts(header, R(error_code=0, error_message=None,
                                               auth_bytes=answer,
                                               session_lifetime_ms=lifetime_ms))  # fmt: skip

    def _client_message(self, error: SaslError) -> str:
        """What the client is told: the message of a SaslAuthenticationError, Kafka's
        generic words for any other failure (whose details only the log gets)."""
        if isinstance(error, SaslAuthenticationError):
            return str(error)
        log.debug("SASL %s failed: %s", self.mechanism, error)
        which = "re-authentication" if self.reauthenticating else "authentication"
        return (f"Authentication failed during {which} due to invalid credentials with SASL "
                f"mechanism {self.mechanism}")  # fmt: skip

    async def _evaluate(self, token: bytes) -> bytes:
        """One client token; the answer. Sets `_user` once the exchange completes."""
        mechanism = self.mechanism
        self._user: str | None = None
        if mechanism == PLAIN:
            self._user = plain_authenticate(token, self.config.plain_users())
            return b""
        if mechanism == OAUTHBEARER:
            jaas = self.config.jaas.get(OAUTHBEARER)
            self._user = oauthbearer_authenticate(token, jaas.options if jaas else {})
            return b""
        scram_mechanism = SCRAM_MECHANISMS[str(mechanism)]
        if self._scram is None:
            username = _scram_username(token)
            credential = await self.scram(username, scram_mechanism.name)
            self._scram = ScramServer(scram_mechanism, lambda _: credential)
        answer = self._scram.evaluate(token)
        if self._scram.complete:
            self._user = self._scram.username
        return answer

    def _maybe_complete(self, authenticate_version: int) -> int:
        """Mark the exchange complete when the mechanism is; the session lifetime (ms)."""
        user = getattr(self, "_user", None)
        if user is None:
            return 0
        principal = f"User:{user}"
        if self.reauthenticating and principal != self.principal:
            raise AuthenticationFailed(
                None, f"Cannot change principals during re-authentication from "
                f"{self.principal}: {principal}"
            )  # fmt: skip
        self.principal = principal
        self.state = "complete"
        self.reauthenticating = False
        reauth_ms = self.config.reauth_ms
        if reauth_ms <= 0:
            self.session_expires = None
            return 0
        self.session_expires = time.monotonic() + reauth_ms / 1000
        return reauth_ms if authenticate_version >= 1 else 0


def _scram_username(token: bytes) -> str:
    """The user a SCRAM client-first message names (to fetch the credential first)."""
    try:
        bare = token.decode().split(",", 2)[2]
    except (UnicodeDecodeError, IndexError):
        raise SaslError("Invalid SCRAM client first message") from None
    for part in bare.split(","):
        if part.startswith("n="):
            return part[2:].replace("=2C", ",").replace("=3D", "=")
    raise SaslError("Invalid SCRAM client first message")


__all__ = ["AuthenticationFailed", "ProtocolError", "SaslServerAuthenticator"]
