"""What the real-client round-trip tests send, and how they compare it with what comes back.

Every record is distinct and carries what a codec or the broker could lose: a key
(every 1000th is null), a value of varying size (every 500th is empty), headers with a
repeated key and an empty value (every 7th record has none), and an explicit CreateTime.
The producer's delivery reports say where each record landed; `check_partitions`
then demands that each partition holds exactly the records sent to it, at offsets
0..n-1 assigned in send order, and that the consumer returned them in that order.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from kt.storage.batch_header import BatchHeader, iter_headers

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
CODEC_IDS = {name: i for i, name in enumerate(CODECS)}  # attribute bits 0-2 of a batch
RECORDS_PER_RUN = 10_000
PARTITIONS = 3
BASE_TIMESTAMP_MS = 1_700_000_000_000


@dataclass(frozen=True)
class Rec:
    """One record as an application sees it; headers keep their order and duplicates."""

    key: bytes | None
    value: bytes
    headers: tuple[tuple[str, bytes], ...]
    timestamp_ms: int


def make_records(tag: str, count: int = RECORDS_PER_RUN) -> list[Rec]:
    records = []
    for i in range(count):
        key = None if i % 1000 == 999 else f"key-{i % 997}".encode()
        value = b"" if i % 500 == 250 else f"{tag}:{i}:".encode() + b"x" * (i % 61)
        if i % 7 == 0:
            headers: tuple[tuple[str, bytes], ...] = ()
        else:
            headers = (("idx", str(i).encode()), ("tag", tag.encode()), ("idx", b""))
        records.append(Rec(key, value, headers, BASE_TIMESTAMP_MS + i))
    return records


# partition -> [(offset, record)], in offset order
Placed = dict[int, list[tuple[int, Rec]]]


@dataclass
class Delivered:
    """Where the producer was told a record landed."""

    partition: int
    offset: int
    rec: Rec


def by_partition(delivered: list[Delivered]) -> Placed:
    """Delivery reports, in send order, grouped by partition."""
    out: dict[int, list[tuple[int, Rec]]] = defaultdict(list)
    for d in delivered:
        out[d.partition].append((d.offset, d.rec))
    return dict(out)


def check_delivered(sent: list[Rec], delivered: list[Delivered]) -> Placed:
    """Every record acknowledged once; per partition, offsets 0..n-1 in send order."""
    assert len(delivered) == len(sent)
    assert sorted(sent, key=_order) == sorted((d.rec for d in delivered), key=_order)
    index = {rec: i for i, rec in enumerate(sent)}
    expected = by_partition(sorted(delivered, key=lambda d: index[d.rec]))
    for partition, entries in expected.items():
        offsets = [offset for offset, _ in entries]
        assert offsets == list(range(len(entries))), f"partition {partition}: {offsets[:20]}"
    return expected


def check_partitions(expected: Placed, consumed: Placed) -> None:
    """The consumer read back exactly what was acknowledged, partition by partition."""
    assert sorted(consumed) == sorted(expected)
    for partition, entries in expected.items():
        got = consumed[partition]
        assert len(got) == len(entries), f"partition {partition}"
        for (offset, rec), (got_offset, got_rec) in zip(entries, got, strict=True):
            assert (got_offset, got_rec) == (offset, rec), f"partition {partition}"


def counts(expected: Placed) -> dict[int, int]:
    """The end offset each partition must reach (the topics are fresh)."""
    return {partition: len(entries) for partition, entries in expected.items()}


def stored_batches(log_dir: Path, topic: str) -> list[BatchHeader]:
    """The headers of every batch in the topic's segment files, each checked by CRC."""
    return [h for path in sorted(log_dir.glob(f"{topic}-*/*.log")) for h in segment_batches(path)]


def segment_batches(path: Path) -> list[BatchHeader]:
    """The batches of one segment file: whole, CRC-valid, and filling it to its end."""
    data = path.read_bytes()
    headers = list(iter_headers(data))
    for header in headers:
        assert header.is_valid(), f"{path} position {header.position}"
    assert sum(h.size for h in headers) == len(data), f"{path} has a partial batch at its end"
    return headers


def check_stored(log_dir: Path, topic: str, codec: str, count: int, idempotent: bool) -> None:
    """The segments hold `count` records in batches of the producer's codec, with a
    producer id and sequences exactly when the producer was idempotent."""
    batches = stored_batches(log_dir, topic)
    assert sum(b.records_count for b in batches) == count
    # The clients send a batch uncompressed when the codec would not shrink it (a batch
    # of one short record); the bulk of the data must go through the codec.
    assert {b.compression for b in batches} <= {0, CODEC_IDS[codec]}
    compressed = sum(b.records_count for b in batches if b.compression == CODEC_IDS[codec])
    assert compressed >= 0.9 * count, f"only {compressed} of {count} records used {codec}"
    assert {b.magic for b in batches} == {2}
    if idempotent:
        assert all(b.producer_id >= 0 and b.base_sequence >= 0 for b in batches)
    else:
        # aiokafka writes baseSequence 0 without a producer id; only the id counts then.
        assert {b.producer_id for b in batches} == {-1}


def _order(rec: Rec) -> int:
    return rec.timestamp_ms
