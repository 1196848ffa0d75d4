"""Append throughput of kt.storage.Log beside raw os.write of the same bytes.

  python benchmarks/storage_append.py [--mib 128] [--repeat 5]

For 1 KiB and 64 KiB v2 batches: Log.append_as_leader (validation with CRC-32C, offset
assignment by header patching, index maintenance, page-cache write) against os.write of
the same batches to a plain file. Prints MB/s for both and the ratio (target: >= 80 %
of raw for 64 KiB batches).

Fair by construction: both sides write the same bytes (checked: equal file sizes) in
the same batch sizes to a new file in the same directory, with the page cache in the
same state; neither fsyncs (the log's flush policy is left at its default, never, and
its leader epoch is set before timing, as on becoming leader). Both sides write from one
buffer, given as the broker gives the log a batch: a writable memoryview of a request
buffer of its own, which the log patches in place (offsets, leader epoch).

Each batch is a producer's next one: before every write, on both sides and untimed,
`restamp` makes the buffer the next request (baseOffset 0, timestamps after the last
batch's, a new CRC), which also leaves it in the cache as a request just received
would be. Rising timestamps matter: they give each append its time index entry, as in
production, where one batch sent over and over would add none after the first. Each
write is timed on its own (the clock's ~0.1 us per write is on both sides); the two
sides take turns in blocks of 1 MiB, so that both see the same load on a shared
machine, and a run's ratio compares the two sums. After one untimed warm-up, the
figures are the medians of `--repeat` runs.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import struct
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from crc32c_rs import crc32c  # noqa: E402
from kafka.record.default_records import DefaultRecordBatchBuilder  # noqa: E402

from kt.config import LogConfig  # noqa: E402
from kt.storage.batch_header import (  # noqa: E402
    ATTRIBUTES_OFFSET,
    BASE_TIMESTAMP_OFFSET,
    CRC_OFFSET,
    BatchHeader,
    set_base_offset,
)
from kt.storage.log import Log  # noqa: E402


def make_batch(batch_bytes: int, record_bytes: int = 512) -> bytes:
    """A v2 batch of about `batch_bytes`, made of `record_bytes`-sized values."""
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, batch_size=1 << 24)
    count = max(1, batch_bytes // (record_bytes + 10))
    for i in range(count):
        builder.append(
            i, timestamp=1_700_000_000_000 + i, key=None, value=os.urandom(record_bytes), headers=[]
        )
    return bytes(builder.build())


BLOCK_BYTES = 1 << 20  # bytes per block; the two sides take turns block by block
TIMESTAMPS = struct.Struct(">qq")  # baseTimestamp, maxTimestamp: adjacent in the header
CRC = struct.Struct(">I")


def batches_per_block(data: bytes) -> int:
    return max(1, BLOCK_BYTES // len(data))


def restamp(records: memoryview, timestamp: int) -> int:
    """Make `records` the next batch a producer sends: baseOffset 0, timestamps from
    `timestamp` on (the batch's own spread kept), and the CRC over them. Returns the
    timestamp after the batch's last."""
    base, last = TIMESTAMPS.unpack_from(records, BASE_TIMESTAMP_OFFSET)
    set_base_offset(records, 0, 0)  # a client's batch starts at baseOffset 0
    TIMESTAMPS.pack_into(records, BASE_TIMESTAMP_OFFSET, timestamp, timestamp + last - base)
    CRC.pack_into(records, CRC_OFFSET, crc32c(records[ATTRIBUTES_OFFSET:]))
    return timestamp + last - base + 1


def run_pair(directory: str, data: bytes, n: int) -> tuple[float, float]:
    """(seconds raw, seconds log) to append `n` batches like `data` (rounded down to
    whole blocks), the two sides taking turns block by block, in either order by turns."""
    raw_path = os.path.join(directory, "raw.bin")
    fd = os.open(raw_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    log = Log(os.path.join(directory, "bench-0"), LogConfig())
    log.assign_epoch_start_offset(0, 0)  # as on becoming leader: not an append's cost
    records, write, append, clock = (
        memoryview(bytearray(data)),  # as kt.protocol's FrameReader hands out requests
        os.write,
        log.append_as_leader,
        time.perf_counter,
    )
    timestamp, raw, logged = 1_700_000_000_000, 0.0, 0.0
    per_block = batches_per_block(data)
    blocks = n // per_block
    for block in range(blocks):
        for log_turn in (block % 2 == 0, block % 2 == 1):
            for _ in range(per_block):
                timestamp = restamp(records, timestamp)  # untimed: the client's work
                if log_turn:
                    start = clock()
                    append(records, 0)
                    logged += clock() - start
                else:
                    start = clock()
                    write(fd, records)
                    raw += clock() - start
    assert log.log_end_offset == blocks * per_block * BatchHeader(data, 0).records_count
    assert os.path.getsize(raw_path) == log.size  # the same bytes on both sides
    os.close(fd)
    os.unlink(raw_path)
    log.delete()
    return raw, logged


def measure(data: bytes, n: int, repeat: int, directory: str) -> tuple[float, float, float]:
    """Medians over `repeat` runs after an untimed warm-up: (raw s, log s, raw/log ratio)."""
    run_pair(directory, data, n // 4)
    runs = [run_pair(directory, data, n) for _ in range(repeat)]
    return (
        statistics.median(r for r, _ in runs),
        statistics.median(lg for _, lg in runs),
        statistics.median(r / lg for r, lg in runs),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=128, help="bytes appended per run (MiB)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per side (median)")
    args = parser.parse_args()
    # The Python part of an append is a fifth of its time: the interpreter's build matters
    # (Debian's python3.11 runs it ~10 % faster than a plain source build).
    print(f"python {platform.python_version()} ({sys.executable})")
    print(f"{'batch':>8} {'batches':>8} {'raw MB/s':>10} {'log MB/s':>10} {'ratio':>7}")
    for batch_bytes, record_bytes in ((1024, 100), (64 * 1024, 512)):
        data = make_batch(batch_bytes, record_bytes)
        per_block = batches_per_block(data)
        n = args.mib * 1024 * 1024 // len(data) // per_block * per_block
        total_mb = n * len(data) / 1e6
        with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as d:
            raw_s, log_s, ratio = measure(data, n, args.repeat, d)
        raw, logged = total_mb / raw_s, total_mb / log_s
        print(f"{len(data):>8} {n:>8} {raw:>10.0f} {logged:>10.0f} {ratio:>6.1%}")


if __name__ == "__main__":
    main()
