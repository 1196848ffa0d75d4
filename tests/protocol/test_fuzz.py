"""Random and mutated frames: the decoders raise ProtocolError or UnsupportedVersion and
nothing else, and always return (bounded count; pytest-timeout bounds the time)."""

from __future__ import annotations

import random
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import NonInteractiveExampleWarning

from kt.errors import ProtocolError
from kt.protocol import (
    SUPPORTED_VERSIONS,
    ApiKey,
    RequestHeader,
    UnsupportedVersion,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from kt.protocol.messages import REQUESTS, RESPONSES

from .strategies import message_strategy

EXPECTED = (ProtocolError, UnsupportedVersion)


def _seed_frames() -> list[tuple[int, int, bytes, bool]]:
    """(api_key, version, frame without size prefix, is_request) for every supported
    API and version, from sample messages drawn from the schema strategies."""
    rng = random.Random(4)
    frames = []
    for key in ApiKey:
        lo, hi = SUPPORTED_VERSIONS[key]
        for version in range(lo, hi + 1):
            for cls, is_request in ((REQUESTS[key], True), (RESPONSES[key], False)):
                sample = cls()
                if rng.random() < 0.5:
                    with warnings.catch_warnings():  # .example() outside @given is fine here
                        warnings.simplefilter("ignore", NonInteractiveExampleWarning)
                        sample = message_strategy(cls, version).example()
                if is_request:
                    frame = encode_request(key, version, 1, "fuzz", sample)
                else:
                    frame = encode_response(RequestHeader(key, version, 1, "fuzz"), sample)
                frames.append((int(key), version, frame[4:], is_request))
    return frames


def _mutate(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(4)
        if op == 0 and b:  # flip a byte
            b[rng.randrange(len(b))] = rng.randrange(256)
        elif op == 1 and b:  # truncate
            del b[rng.randrange(len(b)) :]
        elif op == 2:  # insert junk
            at = rng.randrange(len(b) + 1)
            b[at:at] = rng.randbytes(rng.randint(1, 8))
        elif b:  # a length or count becomes huge or negative
            at = rng.randrange(len(b))
            b[at : at + 4] = rng.choice(
                [b"\x7f\xff\xff\xff", b"\xff\xff\xff\xfe", b"\xff\xff\xff\xff\x0f"]
            )
    return bytes(b)


def _check(key: int, version: int, frame: bytes, is_request: bool) -> None:
    try:
        if is_request:
            decode_request(frame)
        else:
            decode_response(key, version, frame)
    except EXPECTED:
        pass


@pytest.mark.timeout(120)
def test_mutated_frames_raise_only_protocol_errors():
    rng = random.Random(1234)
    seeds = _seed_frames()
    for _ in range(6000):
        key, version, frame, is_request = rng.choice(seeds)
        _check(key, version, _mutate(rng, frame), is_request)


@pytest.mark.timeout(60)
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=64), st.sampled_from(list(ApiKey)), st.integers(-1, 20))
def test_random_frames_raise_only_protocol_errors(junk, key, version):
    _check(key, version, junk, True)
    lo, hi = RESPONSES[key].SCHEMA.valid
    _check(key, min(max(version, lo), hi), junk, False)
    # a valid fixed header in front of junk reaches the body decoders
    header = int(key).to_bytes(2, "big") + version.to_bytes(2, "big", signed=True)
    _check(key, version, header + b"\x00\x00\x00\x01\x00\x00" + junk, True)
