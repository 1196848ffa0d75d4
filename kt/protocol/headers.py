"""Request and response headers (RequestHeader.json, ResponseHeader.json).

    RequestHeader v0 => api_key int16, api_version int16, correlation_id int32
    RequestHeader v1 => v0 + client_id NULLABLE_STRING (int16 length, even when flexible)
    RequestHeader v2 => v1 + TAGGED_FIELDS
    ResponseHeader v0 => correlation_id int32
    ResponseHeader v1 => v0 + TAGGED_FIELDS

A flexible API version uses request header v2 and response header v1, else v1 and v0;
two exceptions (ApiMessageTypeGenerator.java): ControlledShutdown v0 sends request
header v0, and ApiVersions responses always use header v0, so that a client can read
the answer whatever version it asked for.
"""

from __future__ import annotations

import struct

from kt.errors import ProtocolError
from kt.protocol.messages import REQUESTS
from kt.protocol.schema import in_range
from kt.protocol.types import read_string, skip_tagged_fields, write_string

API_VERSIONS_KEY = 18
CONTROLLED_SHUTDOWN_KEY = 7
_FIXED = struct.Struct(">hhi")  # api_key, api_version, correlation_id
_CORRELATION = struct.Struct(">i")


class RequestHeader:
    """A decoded request header. Invariant: api_key/api_version are what the client sent;
    client_id is None for header v0 or a null string."""

    __slots__ = ("api_key", "api_version", "correlation_id", "client_id")

    def __init__(
        self, api_key: int, api_version: int, correlation_id: int, client_id: str | None = None
    ) -> None:
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.client_id = client_id

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RequestHeader):
            return NotImplemented
        return (self.api_key, self.api_version, self.correlation_id, self.client_id) == (
            other.api_key,
            other.api_version,
            other.correlation_id,
            other.client_id,
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        key = getattr(self.api_key, "name", self.api_key)
        return (
            f"RequestHeader(api_key={key}, api_version={self.api_version}, "
            f"correlation_id={self.correlation_id}, client_id={self.client_id!r})"
        )


def is_flexible(api_key: int, version: int) -> bool:
    """Whether `version` of the API is flexible; versions above the schema's range count
    as flexible when the API's flexible range is open-ended (so their header parses)."""
    schema = REQUESTS[api_key].SCHEMA
    return in_range(version, schema.flexible)


def request_header_version(api_key: int, version: int) -> int:
    if api_key == CONTROLLED_SHUTDOWN_KEY and version == 0:
        return 0
    return 2 if is_flexible(api_key, version) else 1


def response_header_version(api_key: int, version: int) -> int:
    if api_key == API_VERSIONS_KEY:
        return 0
    return 1 if is_flexible(api_key, version) else 0


def decode_request_header(buf: memoryview) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id): the fixed part of every request header;
    raises ProtocolError on a frame too short for it."""
    if len(buf) < 8:
        raise ProtocolError(f"request frame of {len(buf)} bytes is shorter than a header")
    return _FIXED.unpack_from(buf, 0)  # type: ignore[return-value]


def read_client_id(buf: memoryview, header_version: int) -> tuple[str | None, int]:
    """client_id and the offset of the body, for header v1/v2 (v0 has no client_id)."""
    if header_version == 0:
        return None, 8
    client_id, pos = read_string(buf, 8, True)
    if header_version == 2:
        pos = skip_tagged_fields(buf, pos)
    return client_id, pos


def encode_request_header(header: RequestHeader, header_version: int) -> bytes:
    fixed = _FIXED.pack(header.api_key, header.api_version, header.correlation_id)
    if header_version == 0:
        return fixed
    out = fixed + write_string(header.client_id)
    return out + b"\x00" if header_version == 2 else out


def encode_response_header(correlation_id: int, header_version: int) -> bytes:
    out = _CORRELATION.pack(correlation_id)
    return out + b"\x00" if header_version == 1 else out


def decode_response_header(buf: memoryview, header_version: int) -> tuple[int, int]:
    """(correlation_id, offset of the body)."""
    if len(buf) < 4:
        raise ProtocolError(f"response frame of {len(buf)} bytes is shorter than a header")
    (correlation_id,) = _CORRELATION.unpack_from(buf, 0)
    pos = skip_tagged_fields(buf, 4) if header_version == 1 else 4
    return correlation_id, pos
