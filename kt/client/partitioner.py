"""Kafka's default partitioner: murmur2 of the key, or sticky for records without one.

Utils.murmur2 (seed 0x9747b28c, m = 0x5bd1e995, r = 24) over the serialized key bytes,
then `toPositive(hash) % numPartitions`, exactly as the Java producer and librdkafka's
`murmur2_random` partitioner compute it, so that kt's tools put keyed records where the
real clients would.
"""

from __future__ import annotations

import random
import struct
import sys
from collections.abc import Sequence

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF
_LITTLE_ENDIAN = sys.byteorder == "little" and struct.calcsize("I") == 4


def murmur2(data: bytes) -> int:
    """Kafka's 32-bit murmur2, as a signed int32."""
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK
    n4 = length >> 2
    if n4:  # the 4-byte words, little-endian, read at once
        if _LITTLE_ENDIAN:
            words: Sequence[int] = memoryview(data)[: n4 << 2].cast("I")
        else:
            words = struct.unpack_from(f"<{n4}I", data)
        for k in words:
            k = (k * _M) & _MASK
            k = ((k ^ (k >> 24)) * _M) & _MASK
            h = ((h * _M) & _MASK) ^ k
    tail = length % 4
    base = n4 * 4
    if tail == 3:
        h ^= data[base + 2] << 16
    if tail >= 2:
        h ^= data[base + 1] << 8
    if tail >= 1:
        h ^= data[base]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


# Keys' positive murmur2 hashes, remembered: keyed records mostly repeat their keys, and a
# dictionary look-up costs a seventh of murmur2 in Python. Short keys only, emptied when full.
_HASHES: dict[bytes, int] = {}
_HASHES_MAX, _HASHED_KEY_MAX = 1 << 16, 64


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """Utils.toPositive(Utils.murmur2(key)) % numPartitions."""
    if num_partitions == 1:  # whatever the hash: x % 1 == 0
        return 0
    if type(key) is not bytes or len(key) > _HASHED_KEY_MAX:  # not remembered
        return (murmur2(key) & 0x7FFFFFFF) % num_partitions
    positive = _HASHES.get(key)
    if positive is None:
        if len(_HASHES) >= _HASHES_MAX:
            _HASHES.clear()
        positive = _HASHES[key] = murmur2(key) & 0x7FFFFFFF
    return positive % num_partitions


class StickyPartitioner:
    """Null-key records stick to one partition until a batch is sent (KIP-480)."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self.rng = rng or random.Random()
        self.current: dict[str, int] = {}

    def partition(self, topic: str, key: bytes | None, num_partitions: int) -> int:
        if key is not None:
            return partition_for_key(key, num_partitions)
        if topic not in self.current or self.current[topic] >= num_partitions:
            self.current[topic] = self.rng.randrange(num_partitions)
        return self.current[topic]

    def on_new_batch(self, topic: str, num_partitions: int) -> None:
        if num_partitions > 1:
            old = self.current.get(topic, -1)
            choices = [p for p in range(num_partitions) if p != old]
            self.current[topic] = self.rng.choice(choices)
