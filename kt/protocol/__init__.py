"""kt.protocol: the Kafka wire protocol as a sans-io codec (no sockets, no files).

Broker side:
    header, body = decode_request(frame)          # frame = bytes after the size prefix
    encode_response(header, body) -> bytes         # a whole frame, size prefix included
    encode_response_parts(header, body) -> list    # same frame; file-slice records kept apart
    unsupported_version_response(header) -> bytes  # Kafka's answer to a version kt lacks
Client side:
    encode_request(api_key, api_version, correlation_id, client_id, body) -> bytes
    decode_response(api_key, api_version, frame) -> (correlation_id, body)
Framing: FrameReader(max_bytes).feed(data) -> [frame, ...]

Bodies are instances of the classes in kt.protocol.messages (ProduceRequest,
FetchResponse, ... with nested structs as class attributes). Malformed input raises
kt.errors.ProtocolError; a well-formed header of a version outside SUPPORTED_VERSIONS
raises UnsupportedVersion carrying the parsed header.
"""

from __future__ import annotations

import struct
from typing import Any

from kt.errors import ProtocolError
from kt.protocol import headers as h
from kt.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey
from kt.protocol.codec import decode_body, encode_body
from kt.protocol.framing import FrameReader
from kt.protocol.headers import RequestHeader
from kt.protocol.messages import REQUESTS, RESPONSES

__all__ = [
    "SUPPORTED_VERSIONS",
    "ApiKey",
    "FrameReader",
    "ProtocolError",
    "RequestHeader",
    "UnsupportedVersion",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "encode_response_parts",
    "unsupported_version_response",
]

_SIZE = struct.Struct(">i")
_BYTES_LIKE = (bytes, bytearray, memoryview)
_UNSUPPORTED_VERSION = 35
_KEYS = {int(k): k for k in ApiKey}


class UnsupportedVersion(Exception):  # noqa: N818 - the name the broker codes against
    """A well-formed request header whose version kt does not speak; `.header` is it."""

    def __init__(self, header: RequestHeader) -> None:
        self.header = header
        lo, hi = SUPPORTED_VERSIONS[header.api_key]  # type: ignore[index]
        super().__init__(
            f"{ApiKey(header.api_key).name} v{header.api_version} is not supported "
            f"(kt speaks {lo}-{hi})"
        )


def decode_request(frame: bytes | bytearray | memoryview) -> tuple[RequestHeader, Any]:
    """Decode a request frame (the bytes after the size prefix) into (header, body)."""
    buf = frame if isinstance(frame, memoryview) else memoryview(frame)
    api_key, version, correlation_id = h.decode_request_header(buf)
    key = _KEYS.get(api_key)
    if key is None:
        raise ProtocolError(f"unknown API key {api_key} (correlation id {correlation_id})")
    client_id, pos = h.read_client_id(buf, h.request_header_version(key, version))
    header = RequestHeader(key, version, correlation_id, client_id)
    lo, hi = SUPPORTED_VERSIONS[key]
    if not lo <= version <= hi:
        raise UnsupportedVersion(header)
    body, _ = decode_body(REQUESTS[key], version, buf, pos)
    return header, body


def _response_parts(header: RequestHeader, body: Any) -> list:
    """[size placeholder, response header, body parts...]."""
    version = h.response_header_version(header.api_key, header.api_version)
    out: list = [b"", h.encode_response_header(header.correlation_id, version)]
    encode_body(body, header.api_version, out)
    return out


def encode_response(header: RequestHeader, body: Any) -> bytes:
    """The whole response frame, size prefix included."""
    out = _response_parts(header, body)
    data = b"".join(out)
    return _SIZE.pack(len(data)) + data


def encode_response_parts(header: RequestHeader, body: Any) -> list:
    """The response frame as parts: bytes, plus any `records` value that is not
    bytes-like (a file slice with __len__) as its own element, its length prefix just
    before it; the size prefix counts it. Adjacent bytes parts are joined."""
    out = _response_parts(header, body)
    if all(isinstance(p, _BYTES_LIKE) for p in out):
        data = b"".join(out)
        return [_SIZE.pack(len(data)) + data]
    size = sum(len(p) for p in out)
    out[0] = _SIZE.pack(size)
    parts: list = []
    run: list = []
    for p in out:
        if isinstance(p, _BYTES_LIKE):
            run.append(p)
        else:
            if run:
                parts.append(b"".join(run))
                run = []
            parts.append(p)
    if run:
        parts.append(b"".join(run))
    return parts


def unsupported_version_response(header: RequestHeader) -> bytes:
    """Kafka's answer to a request version it does not speak.

    ApiVersions: response header v0 and the v0 body whatever the version asked,
    error UNSUPPORTED_VERSION and one entry, ApiVersions' own range, so the client can
    retry at a version both speak (ApiVersionsRequest.getErrorResponse). Any other API:
    Kafka refuses the header and closes the connection, so this raises ProtocolError.
    """
    if header.api_key != h.API_VERSIONS_KEY:
        raise ProtocolError(
            f"API key {header.api_key} version {header.api_version} is not supported"
        )
    lo, hi = SUPPORTED_VERSIONS[ApiKey.API_VERSIONS]
    body = struct.pack(">ihihhh", header.correlation_id, _UNSUPPORTED_VERSION, 1, 18, lo, hi)
    return _SIZE.pack(len(body)) + body


def encode_request(
    api_key: int, api_version: int, correlation_id: int, client_id: str | None, body: Any
) -> bytes:
    """A whole request frame, size prefix included (kt's own client)."""
    header = RequestHeader(api_key, api_version, correlation_id, client_id)
    header_version = h.request_header_version(api_key, api_version)
    out: list = [b"", h.encode_request_header(header, header_version)]
    encode_body(body, api_version, out)
    data = b"".join(out)
    return _SIZE.pack(len(data)) + data


def decode_response(
    api_key: int, api_version: int, frame: bytes | bytearray | memoryview
) -> tuple[int, Any]:
    """(correlation_id, body) of a response frame (the bytes after the size prefix).

    An ApiVersions response carrying UNSUPPORTED_VERSION is read in the v0 layout,
    which is how brokers answer a version they do not know (as Kafka's client does)."""
    buf = frame if isinstance(frame, memoryview) else memoryview(frame)
    correlation_id, pos = h.decode_response_header(
        buf, h.response_header_version(api_key, api_version)
    )
    cls = RESPONSES.get(api_key)
    if cls is None:
        raise ProtocolError(f"unknown API key {api_key}")
    if api_key == h.API_VERSIONS_KEY and api_version > 0 and len(buf) >= pos + 2:
        (error_code,) = struct.unpack_from(">h", buf, pos)
        if error_code == _UNSUPPORTED_VERSION:
            api_version = 0
    body, _ = decode_body(cls, api_version, buf, pos)
    return correlation_id, body
