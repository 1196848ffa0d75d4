"""The reference-Kafka helper's own parts that need no Java."""

from __future__ import annotations

import uuid

import pytest

from kt import reference_kafka
from kt.metadata import znodes


def test_cluster_id_never_starts_with_a_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    # kafka-storage's argument parser takes "-t -Xyz..." for two options; one draw in 64
    # prints a leading '-', which once failed CI's Kafka start.
    dashed = uuid.UUID(bytes=b"\xf8" + bytes(15))
    plain = uuid.UUID(bytes=b"\x10" + bytes(15))
    assert znodes.uuid_to_str(dashed).startswith("-")
    draws = iter([dashed, plain])
    monkeypatch.setattr(znodes.uuid, "uuid4", lambda: next(draws))
    assert reference_kafka._kafka_uuid() == znodes.uuid_to_str(plain)
