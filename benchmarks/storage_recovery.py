"""Recovery throughput of kt.storage (LogLoader) beside a raw read + CRC-32C of the same file.

  python benchmarks/storage_recovery.py [--mib 128]

Writes a log of 1 KiB and of 16 KiB batches, drops it as a crash would (no clean
shutdown, recovery point 0), then times opening it: every batch's size and CRC-32C is
checked and both indexes are rebuilt. The baseline reads the same .log file and runs
CRC-32C over it, in 1 MiB reads (whole file) and per batch. Target: >= 50 % of raw.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from crc32c import crc32c  # noqa: E402

from benchmarks.storage_append import make_batch  # noqa: E402
from kt.config import LogConfig  # noqa: E402
from kt.storage.log import Log  # noqa: E402


def raw_read_crc(path: str, batch_size: int) -> tuple[float, float]:
    """(seconds for 1 MiB reads + CRC over each, seconds for the same CRC'd per batch)."""
    start = time.perf_counter()
    with open(path, "rb", buffering=0) as f:
        while chunk := f.read(1 << 20):
            crc32c(chunk)
    whole = time.perf_counter() - start
    start = time.perf_counter()
    with open(path, "rb", buffering=0) as f:
        while chunk := f.read(1 << 20):
            view = memoryview(chunk)
            for pos in range(0, len(view), batch_size):
                crc32c(view[pos + 21 : pos + batch_size])
    per_batch = time.perf_counter() - start
    return whole, per_batch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=128, help="log size per case (MiB)")
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
            log = Log(os.path.join(d, "bench-0"), config)
            for _ in range(n):
                log.append_as_leader(data, leader_epoch=0)
            log.close_handlers()  # a crash: recovery from offset 0 on the next open
            path = log.segments[0].log.path
            size_mb = os.path.getsize(path) / 1e6
            raw_whole, raw_batch = min(raw_read_crc(path, len(data)) for _ in range(3))
            best = float("inf")
            for _ in range(3):
                start = time.perf_counter()
                reopened = Log(os.path.join(d, "bench-0"), config)
                best = min(best, time.perf_counter() - start)
                assert reopened.log_end_offset == log.log_end_offset
                reopened.close_handlers()
            raw, per_batch, recovered = size_mb / raw_whole, size_mb / raw_batch, size_mb / best
            print(
                f"{len(data):>7} {size_mb:>5.0f} {raw:>9.0f} {per_batch:>10.0f} {recovered:>13.0f} "
                f"{recovered / raw:>6.0%} {recovered / per_batch:>12.0%}"
            )


if __name__ == "__main__":
    main()
