"""Spark export throughput: `kt` source on local[1] vs local[2], beside pyarrow.

Writes a 4-partition topic of 1M records with kt's storage engine (LogManager-style
directories under one log dir), then in one run:
  - exports it to Parquet through the kt source (log.dirs mode) on local[1], then local[2];
  - reads the Parquet written back with pyarrow (the ceiling: no decoding, no Spark).
Each session runs a small warm-up export first, so JVM start and Python worker start-up
are not timed, then the export RUNS times, keeping the best (the machine is shared).
Prints rows/s and the local[2] / local[1] ratio (target >= 1.6).

    python benchmarks/spark_export.py [--records 1000000]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kt.config import LogConfig  # noqa: E402
from kt.storage import compression  # noqa: E402
from kt.storage.log import Log  # noqa: E402
from kt.storage.record_batch import Record, build_batch  # noqa: E402
from kt.tools.spark_export import ExportRequest, export, spark_session  # noqa: E402

PARTITIONS = 4
BATCH = 500
RUNS = 3
TS = 1_700_000_000_000


def write_topic(log_dir: str, records: int) -> None:
    config = dataclasses.replace(LogConfig(), segment_bytes=64 * 1024 * 1024)
    per_partition = records // PARTITIONS
    for p in range(PARTITIONS):
        log = Log(os.path.join(log_dir, f"bench-{p}"), config)
        for lo in range(0, per_partition, BATCH):
            batch = [
                Record(None, TS + i, b"user-%d" % (i % 1000), b"event-%08d-" % i + b"x" * 80,
                       [("source", b"bench")] if i % 4 == 0 else ())
                for i in range(lo, min(lo + BATCH, per_partition))
            ]  # fmt: skip
            codec = compression.LZ4 if (lo // BATCH) % 2 else compression.NONE
            log.append_as_leader(build_batch(batch, compression_type=codec), leader_epoch=0)
        log.close()


def run_export(master: str, log_dir: str, work: str, records: int) -> float:
    """Best rows/s of RUNS exports of the whole topic on `master`, after a warm-up."""
    spark = spark_session(master, app_name=f"bench {master}", log_level="ERROR")
    try:
        first = json.dumps({"bench": {str(p): 1000 for p in range(PARTITIONS)}})
        warm = os.path.join(work, f"warm-{master}")
        export(ExportRequest(["bench"], warm, log_dirs=[log_dir], ending_offsets=first), spark)
        best = 0.0
        for run in range(RUNS):
            out = os.path.join(work, f"out-{master}-{run}")
            result = export(ExportRequest(["bench"], out, log_dirs=[log_dir]), spark=spark)
            assert result.rows == records, result
            best = max(best, result.rows_per_second)
        return best
    finally:
        spark.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    args = parser.parse_args()
    records = args.records // PARTITIONS * PARTITIONS
    work = tempfile.mkdtemp(prefix="kt-spark-bench-")
    try:
        log_dir = os.path.join(work, "logs")
        started = time.perf_counter()
        write_topic(log_dir, records)
        print(f"wrote {records:,} records in {PARTITIONS} partitions "
              f"({time.perf_counter() - started:.1f} s)")  # fmt: skip
        one = run_export("local[1]", log_dir, work, records)
        print(f"kt source, local[1]:        {one:12,.0f} rows/s")
        two = run_export("local[2]", log_dir, work, records)
        print(f"kt source, local[2]:        {two:12,.0f} rows/s")
        import pyarrow.parquet as pq

        started = time.perf_counter()
        table = pq.read_table(os.path.join(work, "out-local[2]-0"))
        arrow = table.num_rows / (time.perf_counter() - started)
        print(f"pyarrow reading the Parquet: {arrow:11,.0f} rows/s")
        print(f"ratio local[2] / local[1]:  {two / one:12.2f}  (target >= 1.6)")
        print(f"ratio pyarrow / local[2]:   {arrow / two:12.1f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
