"""The key order in which Kafka's JSON znodes come out of the JVM's hash maps.

Kafka builds most znode JSON from Scala or Java maps and hands them to Jackson, which
writes entries in the map's iteration order. That order is a pure function of the keys'
String.hashCode and the table size, so kt reproduces it and writes byte-identical JSON:

- scala.collection.mutable.HashMap (2.13): bucket = h ^ (h >>> 16) masked by the table
  size; buckets iterate in index order, each bucket's nodes sorted by that hash. The
  table starts at 16 (or sized for the initial elements) and doubles when an insert
  would reach 75 % full. (ZkData: /brokers/ids/<id>, /brokers/topics/<t>, /feature.)
- scala.collection.immutable.HashMap (CHAMP) with 5+ entries: the 32 root slots, by the
  low 5 bits of Scala's improved hash, iterate in slot order, single entries before
  sub-tries. Maps of 1-4 entries (Map1..Map4) keep insertion order. (partition state.)
- java.util.Properties (a ConcurrentHashMap since Java 9): bins by h ^ (h >>> 16),
  16 to start, doubling at 75 %, each bin in insertion order, split on resize the way
  ConcurrentHashMap.transfer does. (/config/<type>/<name> "config" maps.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

_MASK32 = 0xFFFFFFFF


def java_string_hash(s: str) -> int:
    """String.hashCode as an unsigned 32-bit value (over UTF-16 code units)."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & _MASK32
    return h


def _signed(x: int) -> int:
    x &= _MASK32
    return x - (1 << 32) if x & 0x80000000 else x


def _spread(key: str) -> int:
    h = java_string_hash(key)
    return h ^ (h >> 16)


def _scala_table_size(capacity: int) -> int:
    """mutable.HashMap.tableSizeFor."""
    return min(1 << ((max(capacity - 1, 4)).bit_length()), 1 << 30)


def scala_mutable_hashmap_order(keys: Sequence[str], initial_elements: int = 0) -> list[str]:
    """Iteration order of a mutable.HashMap holding `keys` (inserted in the given order).

    `initial_elements`: how many entries `mutable.Map(k -> v, ...)` was built with
    (0 for `mutable.Map()`), which sizes the first table.
    """
    size = 16  # mutable.Map() starts at defaultInitialCapacity
    if initial_elements > 0:  # HashMap.from sizes the table for the elements given
        size = _scala_table_size(int((initial_elements + 1) / 0.75))
    for count in range(len(keys)):
        if count + 1 >= int(size * 0.75):
            size *= 2
    rank = {k: i for i, k in enumerate(keys)}
    return sorted(keys, key=lambda k: (_spread(k) & (size - 1), _signed(_spread(k)), rank[k]))


def _scala_improve(h: int) -> int:
    """scala.util.hashing.Hashing.improve."""
    h = (h + (~(h << 9) & _MASK32)) & _MASK32
    h ^= h >> 14
    h = (h + (h << 4)) & _MASK32
    return h ^ (h >> 10)


def scala_immutable_map_order(keys: Sequence[str]) -> list[str]:
    """Iteration order of an immutable.Map built from `keys` in the given order."""
    if len(keys) <= 4:
        return list(keys)
    return _champ_order(list(keys), 0)


def _champ_order(keys: list[str], shift: int) -> list[str]:
    slots: dict[int, list[str]] = {}
    for k in keys:
        slots.setdefault((_scala_improve(java_string_hash(k)) >> shift) & 31, []).append(k)
    singles = [slots[i][0] for i in sorted(slots) if len(slots[i]) == 1]
    nested = [_champ_order(slots[i], shift + 5) for i in sorted(slots) if len(slots[i]) > 1]
    return singles + [k for sub in nested for k in sub]


def java_properties_order(keys: Iterable[str]) -> list[str]:
    """Iteration order of a java.util.Properties after setProperty for each key in turn."""
    size, threshold = 16, 12
    bins: list[list[str]] = [[] for _ in range(size)]
    count = 0
    for key in keys:
        h = _spread(key) & 0x7FFFFFFF
        bin_ = bins[h & (size - 1)]
        if key in bin_:
            continue
        bin_.append(key)
        count += 1
        if count >= threshold:
            bins = _transfer(bins, size)
            size, threshold = size * 2, size * 2 - size // 2
    return [k for bin_ in bins for k in bin_]


def _transfer(bins: list[list[str]], n: int) -> list[list[str]]:
    """ConcurrentHashMap.transfer: split bin i into i and i + n, as the JDK orders them."""
    out: list[list[str]] = [[] for _ in range(2 * n)]
    for i, nodes in enumerate(bins):
        if not nodes:
            continue
        bits = [(_spread(k) & 0x7FFFFFFF) & n for k in nodes]
        last_run = len(nodes) - 1
        while last_run > 0 and bits[last_run - 1] == bits[-1]:
            last_run -= 1
        low: list[str] = nodes[last_run:] if bits[-1] == 0 else []
        high: list[str] = nodes[last_run:] if bits[-1] != 0 else []
        for k, bit in zip(nodes[:last_run], bits[:last_run], strict=True):
            (high if bit else low).insert(0, k)
        out[i], out[i + n] = low, high
    return out


def java_hash_set_order(items: Sequence[Any], hash_code: Callable[[Any], int]) -> list[Any]:
    """A java.util.HashSet's (or HashMap's keys') iteration order of `items` added in this
    order: by bucket of the spread hash in a table grown as HashMap grows it (load factor
    0.75 from 16); a bucket keeps the order its items came in."""
    capacity = 16
    while len(items) > capacity * 3 // 4:
        capacity *= 2

    def bucket(item: Any) -> int:
        h = hash_code(item) & _MASK32
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(items, key=bucket)


def java_hash_order(keys: Iterable[str]) -> list[str]:
    """Strings in a java.util.HashSet's order (Kafka's broker answers quotas in this
    order, and its tools print sets of names so)."""
    return java_hash_set_order(sorted(keys), java_string_hash)


def topic_partition_hash(tp: tuple[str, int]) -> int:
    """org.apache.kafka.common.TopicPartition.hashCode."""
    return _signed(31 * (31 + tp[1]) + _signed(java_string_hash(tp[0])))
