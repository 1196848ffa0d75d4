"""Append throughput of kt.storage.Log beside raw os.write of the same bytes.

  python benchmarks/storage_append.py [--mib 128] [--repeat 5]

For 1 KiB and 64 KiB v2 batches: Log.append_as_leader (validation with CRC-32C, offset
assignment by header patching, index maintenance, page-cache write) against os.write of
the same batches to a plain file. Prints MB/s for both and the ratio (target: >= 80 %
of raw for 64 KiB batches).

Fair by construction: both sides write the same bytes (checked: equal file sizes) in
the same batch sizes to a new file in the same directory, with the page cache in the
same state; neither fsyncs (the log's flush policy is left at its default, never, and
its leader epoch is set before timing, as on becoming leader). Both sides write from
one buffer, the one the log gets as the broker hands it a batch: a writable memoryview
of a request buffer of its own, which the log patches in place (offsets, leader epoch).
Before every write, on both sides, the loop puts the client's baseOffset 0 back, as the
next request would bring it: the same 60 ns on each side, so that this step of the
harness is not counted as the log's work. The two sides run in alternating blocks of
8 MiB, so that both see the same load on a shared machine; a run's ratio compares its
two sums. After one untimed warm-up, the figures are the medians of `--repeat` runs.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from kafka.record.default_records import DefaultRecordBatchBuilder  # noqa: E402

from kt.config import LogConfig  # noqa: E402
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


CLIENT_BASE_OFFSET = bytes(8)  # a client's batch starts at baseOffset 0
BLOCK_BYTES = 8 << 20  # bytes per timed block; the two sides alternate block by block


def run_pair(directory: str, data: bytes, n: int) -> tuple[float, float]:
    """(seconds raw, seconds log) to append `n` copies of `data`, timed in alternating
    blocks of BLOCK_BYTES so that both sides see the same machine load."""
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
    raw = logged = 0.0
    block_batches = max(1, BLOCK_BYTES // len(data))
    for block in range(n // block_batches):
        if block % 2:
            start = clock()
            for _ in range(block_batches):
                records[:8] = CLIENT_BASE_OFFSET
                append(records, 0)
            middle = clock()
            for _ in range(block_batches):
                records[:8] = CLIENT_BASE_OFFSET
                write(fd, records)
            logged, raw = logged + middle - start, raw + clock() - middle
        else:
            start = clock()
            for _ in range(block_batches):
                records[:8] = CLIENT_BASE_OFFSET
                write(fd, records)
            middle = clock()
            for _ in range(block_batches):
                records[:8] = CLIENT_BASE_OFFSET
                append(records, 0)
            raw, logged = raw + middle - start, logged + clock() - middle
    records_per_batch = int.from_bytes(data[57:61], "big")
    assert log.log_end_offset == n // block_batches * block_batches * records_per_batch
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
        block_batches = max(1, BLOCK_BYTES // len(data))
        n = args.mib * 1024 * 1024 // len(data) // block_batches * block_batches
        total_mb = n * len(data) / 1e6
        with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as d:
            raw_s, log_s, ratio = measure(data, n, args.repeat, d)
        raw, logged = total_mb / raw_s, total_mb / log_s
        print(f"{len(data):>8} {n:>8} {raw:>10.0f} {logged:>10.0f} {ratio:>6.1%}")


if __name__ == "__main__":
    main()
