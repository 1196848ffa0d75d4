"""The iteration orders of the Java collections Kafka's assignors walk, so that kt decides
ties as Kafka does and hands out the same assignment for the same group.

- `java_hash_map_order`: the order a java.util.HashMap (or HashSet) of String keys
  iterates them: by bucket of the final table, then by insertion within a bucket.
- `JavaPriorityQueue`: java.util.PriorityQueue's binary heap (offer sifts up, poll moves
  the last element to the root and sifts it down, the smaller child winning only when
  strictly smaller), which breaks ties differently from Python's heapq.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

T = TypeVar("T")
_LOAD_FACTOR = 0.75


def java_string_hash(s: str) -> int:
    """Java's String.hashCode: h = 31*h + c over UTF-16 code units, in int32."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _table_size_for(capacity: int) -> int:
    """HashMap.tableSizeFor: the smallest power of two at least `capacity` (1 at least)."""
    size = 1
    while size < capacity:
        size *= 2
    return size


def java_hash_map_order(
    keys: Iterable[str], initial_capacity: int | None = None, head_insertion: bool = False
) -> list[str]:
    """The order java.util.HashMap iterates String keys given in this order, the map made
    with `new HashMap<>()` (None) or `new HashMap<>(initial_capacity)`.

    The keys go in with put() (a new key appended to its bucket's chain, the table
    doubling once the size passes three quarters of it) or, `head_insertion`, with one
    computeIfAbsent() call each, repeats included (a new key linked in at the chain's
    head, the table doubling at the start of a call that finds the size past the
    threshold). A resize splits every chain in order. A key's bucket is
    (h ^ h >>> 16) & (table - 1), h its String.hashCode. (Chains of eight keys or more,
    which Java turns into trees, are not modelled.)"""
    if initial_capacity is None:
        capacity, threshold = 16, 12
    else:
        capacity = _table_size_for(initial_capacity)
        threshold = int(capacity * _LOAD_FACTOR)
    buckets: list[list[tuple[int, str]]] = [[] for _ in range(capacity)]
    seen: set[str] = set()

    def resize() -> None:
        nonlocal capacity, threshold, buckets
        old = capacity
        capacity *= 2
        threshold = threshold * 2 if old >= 16 else int(capacity * _LOAD_FACTOR)
        grown: list[list[tuple[int, str]]] = [[] for _ in range(capacity)]
        for index, chain in enumerate(buckets):
            for entry in chain:  # lo stays, hi moves up by the old size; order kept
                grown[index + (old if entry[0] & old else 0)].append(entry)
        buckets = grown

    for name in keys:
        if head_insertion and len(seen) > threshold:
            resize()
        if name in seen:
            continue
        seen.add(name)
        h = java_string_hash(name) & 0xFFFFFFFF
        spread = h ^ (h >> 16)
        chain = buckets[spread & (capacity - 1)]
        if head_insertion:
            chain.insert(0, (spread, name))
        else:
            chain.append((spread, name))
            if len(seen) > threshold:
                resize()
    return [name for chain in buckets for _, name in chain]


class JavaPriorityQueue(Generic[T]):
    """java.util.PriorityQueue with a comparator given as a key (smaller first)."""

    def __init__(self, key: Callable[[T], object]) -> None:
        self.key = key
        self.heap: list[T] = []

    def __len__(self) -> int:
        return len(self.heap)

    def add(self, item: T) -> None:
        """offer: append, then sift up while strictly smaller than the parent."""
        heap, key = self.heap, self.key
        k = len(heap)
        heap.append(item)
        while k > 0:
            parent = (k - 1) >> 1
            if not key(item) < key(heap[parent]):  # type: ignore[operator]
                break
            heap[k] = heap[parent]
            k = parent
        heap[k] = item

    def add_all(self, items: Iterable[T]) -> None:
        for item in items:
            self.add(item)

    def poll(self) -> T | None:
        """The head; the last element moves to the root and sifts down."""
        heap, key = self.heap, self.key
        if not heap:
            return None
        head = heap[0]
        last = heap.pop()
        n = len(heap)
        if n:
            k = 0
            half = n >> 1
            while k < half:
                child = 2 * k + 1
                right = child + 1
                if right < n and key(heap[child]) > key(heap[right]):  # type: ignore[operator]
                    child = right
                if not key(last) > key(heap[child]):  # type: ignore[operator]
                    break
                heap[k] = heap[child]
                k = child
            heap[k] = last
        return head
