"""Write topics for the Spark tests with kt's own storage engine, the way a broker would.

Every record is a pure function of (partition, index), so a test can say exactly what
each exported row must hold without keeping the records around.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

from kt.config import LogConfig
from kt.storage import compression
from kt.storage.control_records import (
    ABORT,
    COMMIT,
    EndTransactionMarker,
    build_end_txn_marker_batch,
)
from kt.storage.log import Log
from kt.storage.producer_state import ORIGIN_COORDINATOR
from kt.storage.record_batch import Record, build_batch

TS = 1_700_000_000_000
CODECS = (compression.NONE, compression.GZIP, compression.SNAPPY, compression.LZ4, compression.ZSTD)

# Small segments and a dense index: a thousand records make several segments.
SMALL_SEGMENTS = dataclasses.replace(LogConfig(), segment_bytes=8 * 1024, index_interval_bytes=512)


def key(partition: int, i: int) -> bytes | None:
    return None if i % 10 == 9 else f"key-{partition}-{i}".encode()


def value(partition: int, i: int) -> bytes | None:
    return None if i % 50 == 49 else f"value-{partition}-{i}-".encode() + b"x" * (i % 7)


def headers(partition: int, i: int) -> list[tuple[str, bytes | None]]:
    if i % 3 == 0:
        return []
    return [("seq", str(i).encode()), ("p", str(partition).encode()), ("n", None)][: i % 3 + 1]


def timestamp(partition: int, i: int) -> int:
    return TS + partition * 1_000_000 + i


def record(partition: int, i: int) -> Record:
    return Record(None, timestamp(partition, i), key(partition, i), value(partition, i),
                  headers(partition, i))  # fmt: skip


def open_log(log_dir: str, topic: str, partition: int, config: LogConfig = SMALL_SEGMENTS) -> Log:
    return Log(os.path.join(log_dir, f"{topic}-{partition}"), config)


def append(log: Log, partition: int, first: int, count: int, batch_size: int = 100) -> None:
    """Records first..first+count-1 of `partition`, batch after batch, cycling codecs."""
    for lo in range(first, first + count, batch_size):
        hi = min(lo + batch_size, first + count)
        codec = CODECS[(lo // batch_size) % len(CODECS)]
        log.append_as_leader(
            build_batch([record(partition, i) for i in range(lo, hi)], compression_type=codec),
            leader_epoch=0,
        )


def write_topic(log_dir: str, topic: str, counts: Sequence[int], batch_size: int = 100) -> None:
    """A topic with len(counts) partitions; partition p holds counts[p] records."""
    for partition, count in enumerate(counts):
        log = open_log(log_dir, topic, partition)
        append(log, partition, 0, count, batch_size)
        log.close()


def append_transaction(log: Log, pid: int, epoch: int, records: list[Record], commit: bool) -> None:
    """One transactional batch of `records` and its COMMIT or ABORT marker."""
    log.append_as_leader(
        build_batch(records, producer_id=pid, producer_epoch=epoch, base_sequence=0,
                    is_transactional=True),
        leader_epoch=0,
    )  # fmt: skip
    log.append_as_leader(marker_batch(pid, commit, epoch), 0, origin=ORIGIN_COORDINATOR)


def marker_batch(pid: int, commit: bool, epoch: int = 0) -> bytes:
    """The control batch ending producer `pid`'s transaction."""
    return build_end_txn_marker_batch(
        EndTransactionMarker(COMMIT if commit else ABORT, 0),
        producer_id=pid, producer_epoch=epoch, timestamp=TS,
    )  # fmt: skip
