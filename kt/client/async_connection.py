"""One asyncio connection to one broker, for the broker's own links to other brokers.

Replica fetchers run on the broker's event loop, so they cannot block on a socket as the
tools' BrokerConnection does. The protocol is the same sans-io kt.protocol: a request
frame out, a response frame in, one request in flight at a time (Kafka's
ReplicaFetcherThread also waits for each Fetch response before sending the next).
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Mapping
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


class AsyncBrokerConnection:
    """A connection to one broker; `send` returns the decoded response body.

    Invariants: at most one request is in flight (the lock); after any network error the
    connection is closed and every later `send` fails with NETWORK_EXCEPTION.
    """

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client_id: str
    ) -> None:
        self._reader = reader
        self._writer = writer
        self.client_id = client_id
        self.api_versions: dict[int, tuple[int, int]] = {}
        self.version_caps: dict[ApiKey, int] = {}
        self._correlation_id = 0
        self._lock = asyncio.Lock()
        self.closed = False

    @classmethod
    async def connect(
        cls, host: str, port: int, *, client_id: str = "kt", timeout_s: float = 30.0,
        tls: ClientTls | None = None, sasl: ClientSasl | None = None,
        caps: Mapping[ApiKey, int] | None = None,
    ) -> AsyncBrokerConnection:  # fmt: skip
        """Connect, over TLS with `tls`, and ask ApiVersions. `caps`: the highest version
        to send of some APIs (a broker's inter.broker.protocol.version)."""
        try:
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for returns the result of
            # a connect that completes as the caller is cancelled, dropping the
            # cancellation (a replica fetcher then ran on after its shutdown).
            async with asyncio.timeout(timeout_s):
                if tls is None:
                    reader, writer = await asyncio.open_connection(host, port)
                else:
                    reader, writer = await asyncio.open_connection(
                        host, port, ssl=tls.context, server_hostname=host
                    )
        except (OSError, TimeoutError) as e:  # ssl.SSLError too
            raise KafkaError("NETWORK_EXCEPTION", f"cannot connect to {host}:{port}: {e}") from None
        connection = cls(reader, writer, client_id)
        connection.version_caps = dict(caps or {})
        try:
            response = await connection.send_version(
                ApiKey.API_VERSIONS,
                3,
                ApiVersionsRequest(client_software_name="kt", client_software_version=__version__),
            )
        except BaseException:
            connection.close()
            raise
        if response.error_code:
            connection.close()
            raise KafkaError(response.error_code, f"ApiVersions to {host}:{port} failed")
        connection.api_versions = {
            k.api_key: (k.min_version, k.max_version) for k in response.api_keys
        }
        if sasl is not None:
            try:
                await connection._authenticate(sasl)
            except BaseException:
                connection.close()
                raise
        return connection

    async def _authenticate(self, sasl: ClientSasl) -> None:
        """SaslHandshake v1 then SaslAuthenticate with each token of the exchange."""
        from kt.protocol.messages import SaslAuthenticateRequest, SaslHandshakeRequest
        from kt.security.sasl_client import check_handshake, next_token

        handshake = SaslHandshakeRequest(mechanism=sasl.mechanism)
        answer = await self.send_version(ApiKey.SASL_HANDSHAKE, 1, handshake)
        check_handshake(answer, sasl.mechanism)
        exchange = sasl.exchange()
        token: bytes | None = next(exchange)
        while token is not None:
            answer = await self.send_version(ApiKey.SASL_AUTHENTICATE, 1,
                                             SaslAuthenticateRequest(auth_bytes=token))  # fmt: skip
            token = next_token(exchange, answer)

    def version_for(self, api_key: ApiKey) -> int:
        """The highest version of `api_key` that both sides speak (and the cap allows)."""
        low, high = SENT_VERSIONS[api_key]
        high = min(high, self.version_caps.get(api_key, high))
        theirs = self.api_versions.get(int(api_key))
        if theirs is None or theirs[0] > high or low > theirs[1]:
            raise KafkaError("UNSUPPORTED_VERSION", f"the broker does not support {api_key.name}")
        return min(high, theirs[1])

    async def send(self, api_key: ApiKey, body: Any, version: int | None = None) -> Any:
        return await self.send_version(api_key, self.version_for(api_key) if version is None
                                       else version, body)  # fmt: skip

    async def send_version(self, api_key: ApiKey, version: int, body: Any) -> Any:
        if self.closed:
            raise KafkaError("NETWORK_EXCEPTION", "the connection is closed")
        async with self._lock:
            self._correlation_id += 1
            correlation_id = self._correlation_id
            frame = encode_request(api_key, version, correlation_id, self.client_id, body)
            try:
                self._writer.write(frame)
                await self._writer.drain()
                (size,) = _SIZE.unpack(await self._reader.readexactly(4))
                if size < 0:
                    raise ProtocolError(f"negative response size {size}")
                payload = await self._reader.readexactly(size)
            except (OSError, asyncio.IncompleteReadError) as e:
                self.close()
                raise KafkaError("NETWORK_EXCEPTION", f"connection lost: {e}") from None
            except BaseException:  # cancelled mid-request: the stream is out of step
                self.close()
                raise
        got, response = decode_response(api_key, version, payload)
        if got != correlation_id:
            self.close()
            raise ProtocolError(f"correlation id {got} does not match request {correlation_id}")
        return response

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._writer.close()
