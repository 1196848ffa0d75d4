"""Recovery throughput of kt.storage (LogLoader) beside a raw read + CRC-32C of the same file.

  python benchmarks/storage_recovery.py [--mib 128] [--repeat 5]

Writes a log of 1 KiB and of 16 KiB batches with rising timestamps, as a producer sends
them, drops it as a crash would (no clean shutdown, recovery point 0), then times
opening it: every batch's size and CRC-32C is checked and both indexes are rebuilt.
Target: >= 50 % of raw.

Two baselines read the same .log file from the page cache in 1 MiB reads into one
reused buffer, neither fsyncing: "raw" runs CRC-32C over each whole read (the speed of
the disk cache and the checksum, no framing at all), "raw/batch" runs it over each
batch's checksummed bytes, walking the batch lengths as any reader of the format must.
The file is warm in the page cache for every run (it was just written, and one untimed
pass of each side runs first); the runs interleave, and the figures are medians.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from crc32c_rs import crc32c  # noqa: E402  (the implementation kt.storage uses)

from benchmarks.storage_append import make_batch, restamp  # noqa: E402
from kt.config import LogConfig  # noqa: E402
from kt.storage.log import Log  # noqa: E402

CHUNK = 1 << 20


def raw_whole(path: str) -> float:
    """Seconds to read the file in 1 MiB reads and CRC each read."""
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    start = time.perf_counter()
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(buf):
            crc32c(view[:n])
    return time.perf_counter() - start


def raw_per_batch(path: str) -> float:
    """Seconds to read the file in 1 MiB reads and CRC each batch (attributes to end)."""
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    start = time.perf_counter()
    with open(path, "rb", buffering=0) as f:
        kept = 0
        while n := f.readinto(view[kept:]):
            avail, pos = kept + n, 0
            while avail - pos >= 12:
                end = pos + int.from_bytes(view[pos + 8 : pos + 12], "big") + 12
                if end > avail:
                    break
                crc32c(view[pos + 21 : end])
                pos = end
            kept = avail - pos
            view[:kept] = bytes(view[pos:avail])
    return time.perf_counter() - start


def recover(directory: str, config: LogConfig, expected_end: int) -> float:
    """Seconds to open the log with nothing flushed: recovery of the whole segment."""
    start = time.perf_counter()
    log = Log(directory, config)
    elapsed = time.perf_counter() - start
    assert log.log_end_offset == expected_end
    log.close_handlers()  # a crash again: the next open recovers everything too
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=128, help="log size per case (MiB)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per side (median)")
    args = parser.parse_args()
    print(
        f"{'batch':>7} {'MB':>5} {'raw MB/s':>9} {'raw/batch':>10} {'recover MB/s':>13} "
        f"{'ratio':>6} {'ratio/batch':>12}"
    )
    for batch_bytes, record_bytes in ((1024, 100), (16 * 1024, 512)):
        data = make_batch(batch_bytes, record_bytes)
        n = args.mib * 1024 * 1024 // len(data)
        with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as d:
            config = LogConfig(segment_bytes=1 << 30)
            directory = os.path.join(d, "bench-0")
            log = Log(directory, config)
            records, timestamp = memoryview(bytearray(data)), 1_700_000_000_000
            for _ in range(n):  # a producer's batches: rising timestamps, so both indexes grow
                timestamp = restamp(records, timestamp)
                log.append_as_leader(records, leader_epoch=0)
            end = log.log_end_offset
            log.close_handlers()  # a crash: recovery from offset 0 on the next open
            path = log.segments[0].log.path
            size_mb = os.path.getsize(path) / 1e6
            runs: dict[str, list[float]] = {"whole": [], "batch": [], "recover": []}
            raw_whole(path), raw_per_batch(path), recover(directory, config, end)  # warm-up
            for _ in range(args.repeat):
                runs["whole"].append(raw_whole(path))
                runs["batch"].append(raw_per_batch(path))
                runs["recover"].append(recover(directory, config, end))
            whole, per_batch, recovered = (size_mb / statistics.median(runs[k]) for k in runs)
            print(
                f"{len(data):>7} {size_mb:>5.0f} {whole:>9.0f} {per_batch:>10.0f} "
                f"{recovered:>13.0f} {recovered / whole:>6.0%} {recovered / per_batch:>12.0%}"
            )


if __name__ == "__main__":
    main()
