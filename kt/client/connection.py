"""One blocking connection to one broker, speaking kt.protocol.

The tools are short-lived command-line programs: a blocking socket with a deadline per
request is the simplest thing that is correct. On connect the connection asks
ApiVersions (v3, then v0 if the broker refuses) and afterwards picks, per API, the
highest version both sides support.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kt import __version__
from kt.errors import KafkaError, ProtocolError
from kt.protocol import ApiKey, decode_response, encode_request
from kt.protocol.api_keys import SENT_VERSIONS
from kt.protocol.messages import ApiVersionsRequest

if TYPE_CHECKING:
    from kt.security.sasl_client import ClientSasl
    from kt.security.ssl_factory import ClientTls

_SIZE = struct.Struct(">i")


@dataclass(frozen=True)
class PendingResponse:
    """A request sent and not yet answered."""

    api_key: ApiKey
    version: int
    correlation_id: int


class BrokerConnection:
    """A connection to one broker; `send` returns the decoded response body."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        client_id: str = "kt",
        timeout_s: float = 30.0,
        tls: ClientTls | None = None,
        sasl: ClientSasl | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self.timeout_s = timeout_s
        self._correlation_id = 0
        try:
            sock = socket.create_connection((host, port), timeout=timeout_s)
        except OSError as e:
            raise KafkaError(
                "NETWORK_EXCEPTION", f"cannot connect to {host}:{port}: {e.strerror or e}"
            ) from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if tls is not None:
            try:
                sock = tls.context.wrap_socket(sock, server_hostname=host)
            except OSError as e:  # ssl.SSLError too (Kafka's SslAuthenticationException)
                sock.close()
                reason = getattr(e, "reason", None) or e.strerror or e
                raise KafkaError(
                    "NETWORK_EXCEPTION", f"SSL handshake with {host}:{port} failed: {reason}"
                ) from None
        self._sock = sock
        self.api_versions: dict[int, tuple[int, int]] = {}
        self._negotiate()
        if sasl is not None:
            try:
                self._authenticate(sasl)
            except BaseException:
                self.close()
                raise

    def _authenticate(self, sasl: ClientSasl) -> None:
        """SaslHandshake v1 then SaslAuthenticate with each token of the exchange."""
        from kt.protocol.messages import SaslAuthenticateRequest, SaslHandshakeRequest
        from kt.security.sasl_client import check_handshake, next_token

        answer = self.send_version(ApiKey.SASL_HANDSHAKE, 1,
                                   SaslHandshakeRequest(mechanism=sasl.mechanism))  # fmt: skip
        check_handshake(answer, sasl.mechanism)
        exchange = sasl.exchange()
        token: bytes | None = next(exchange)
        while token is not None:
            answer = self.send_version(ApiKey.SASL_AUTHENTICATE, 1,
                                       SaslAuthenticateRequest(auth_bytes=token))  # fmt: skip
            token = next_token(exchange, answer)

    def _negotiate(self) -> None:
        for version in (3, 0):
            body = ApiVersionsRequest(
                client_software_name="kt", client_software_version=__version__
            )
            response = self.send_version(ApiKey.API_VERSIONS, version, body)
            if response.error_code == 0:
                self.api_versions = {
                    k.api_key: (k.min_version, k.max_version) for k in response.api_keys
                }
                return
        raise KafkaError(response.error_code, "ApiVersions failed")

    def version_for(self, api_key: ApiKey) -> int:
        """The highest version of `api_key` that both kt and the broker speak."""
        ours = SENT_VERSIONS[api_key]
        theirs = self.api_versions.get(int(api_key))
        if theirs is None or theirs[0] > ours[1] or ours[0] > theirs[1]:
            raise KafkaError(
                "UNSUPPORTED_VERSION",
                f"broker {self.host}:{self.port} does not support {api_key.name}",
            )
        return min(ours[1], theirs[1])

    def send(self, api_key: ApiKey, body: Any, version: int | None = None) -> Any:
        if version is None:
            version = self.version_for(api_key)
        return self.send_version(api_key, version, body)

    def send_version(self, api_key: ApiKey, version: int, body: Any) -> Any:
        return self.receive(self.send_request(api_key, body, version))

    def send_request(
        self, api_key: ApiKey, body: Any, version: int | None = None
    ) -> PendingResponse:
        """Send a request without waiting for its answer (pipelining: the broker answers a
        connection's requests in order, so `receive` them in the order they were sent)."""
        if version is None:
            version = self.version_for(api_key)
        self._correlation_id += 1
        frame = encode_request(api_key, version, self._correlation_id, self.client_id, body)
        try:
            self._sock.sendall(frame)
        except OSError as e:
            raise self._broken(e) from None
        return PendingResponse(api_key, version, self._correlation_id)

    def receive(self, pending: PendingResponse) -> Any:
        """The decoded answer to `pending`, the oldest request still unanswered."""
        try:
            payload = self._read_frame()
        except OSError as e:
            raise self._broken(e) from None
        got, response = decode_response(pending.api_key, pending.version, payload)
        if got != pending.correlation_id:
            raise ProtocolError(
                f"correlation id {got} does not match request {pending.correlation_id}"
            )
        return response

    def _broken(self, error: OSError) -> KafkaError:
        self.close()
        return KafkaError(
            "NETWORK_EXCEPTION", f"{self.host}:{self.port}: {error.strerror or error}"
        )

    def send_no_response(self, api_key: ApiKey, body: Any, version: int | None = None) -> None:
        """For Produce with acks=0: the broker answers nothing."""
        if version is None:
            version = self.version_for(api_key)
        self._correlation_id += 1
        frame = encode_request(api_key, version, self._correlation_id, self.client_id, body)
        self._sock.sendall(frame)

    def _read_exactly(self, n: int) -> bytes:
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            read = self._sock.recv_into(view[got:])
            if read == 0:
                raise ConnectionError("connection closed by the broker")
            got += read
        return bytes(buf)

    def _read_frame(self) -> bytes:
        (size,) = _SIZE.unpack(self._read_exactly(4))
        if size < 0:
            raise ProtocolError(f"negative response size {size}")
        return self._read_exactly(size)

    def close(self) -> None:
        try:
            self._sock.close()
        except OSError:
            pass

    def fileno(self) -> int:
        """The socket's descriptor, for select()."""
        return self._sock.fileno()

    @property
    def closed(self) -> bool:
        """Closed by us, or after an I/O error (the broker went away): connect anew."""
        return self._sock.fileno() < 0

    def __enter__(self) -> BrokerConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
