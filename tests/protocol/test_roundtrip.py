"""decode(encode(m)) == m for generated messages of every API, every version, request
and response, through the public framing/header API where kt speaks the version."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from kt.protocol import (
    SUPPORTED_VERSIONS,
    ApiKey,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from kt.protocol.codec import decode_body, encode_body
from kt.protocol.messages import MESSAGES, REQUESTS, RESPONSES

from .strategies import message_strategy

CASES = [
    (name, version)
    for name, cls in sorted(MESSAGES.items())
    for version in range(cls.SCHEMA.valid[0], cls.SCHEMA.valid[1] + 1)
]
ROUND_TRIP = settings(
    max_examples=6, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


def test_every_api_and_version_is_covered():
    assert len(CASES) > 400
    for key in ApiKey:
        lo, hi = SUPPORTED_VERSIONS[key]
        for cls in (REQUESTS[key], RESPONSES[key]):
            assert cls.SCHEMA.valid[0] <= lo and hi <= cls.SCHEMA.valid[1], (cls, lo, hi)


@pytest.mark.parametrize(("name", "version"), CASES, ids=[f"{n}-v{v}" for n, v in CASES])
def test_body_round_trip(name, version):
    cls = MESSAGES[name]

    @ROUND_TRIP
    @given(message_strategy(cls, version))
    def check(message):
        out: list = []
        encode_body(message, version, out)
        data = b"".join(out)
        decoded, end = decode_body(cls, version, memoryview(data), 0)
        assert end == len(data)
        assert decoded == message

    check()


@pytest.mark.parametrize("key", list(ApiKey), ids=[k.name for k in ApiKey])
def test_framed_round_trip_at_supported_versions(key):
    lo, hi = SUPPORTED_VERSIONS[key]
    request_cls = REQUESTS[key]
    response_cls = RESPONSES[key]
    for version in range(lo, hi + 1):
        request = request_cls()
        frame = encode_request(key, version, 42, "kt-test", request)
        header, decoded = decode_request(frame[4:])
        assert (header.api_key, header.api_version, header.correlation_id) == (key, version, 42)
        assert header.client_id == (None if (key, version) == (7, 0) else "kt-test")
        assert decoded == request
        response = response_cls()
        frame = encode_response(header, response)
        assert int.from_bytes(frame[:4], "big") == len(frame) - 4
        assert decode_response(key, version, frame[4:]) == (42, response)
