"""Spark export throughput: `kt` source on local[1] vs local[2], beside pyarrow.

Writes a 4-partition topic of 1M records with kt's storage engine (LogManager-style
directories under one log dir), then in one run:
  - exports it to Parquet through the kt source (log.dirs mode) on local[1], then local[2];
  - reads the Parquet written back with pyarrow (the ceiling: no decoding, no Spark).
Each session runs a small warm-up export first, so JVM start and Python worker start-up
are not timed, then the export RUNS times, keeping the best (the machine is shared).
Prints rows/s and the local[2] / local[1] ratio (target >= 1.6), and, to show where
the time goes, the CPU seconds of the JVM (Arrow intake, row conversion, Parquet
writer) and of the Python workers (fetching and decoding batches), read from /proc:
local[1] already overlaps one Python worker with the JVM's task thread, so local[2]
can gain at most (cores of the machine) / (cores local[1] keeps busy).

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
TICKS = os.sysconf("SC_CLK_TCK")
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


def cpu_seconds(jvm: int) -> tuple[float, float]:
    """(CPU s of the JVM process, CPU s of its descendants: the Python workers), Linux."""
    parents: dict[int, list[int]] = {}
    times: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents.setdefault(int(fields[1]), []).append(int(entry))
        times[int(entry)] = (int(fields[11]) + int(fields[12])) / TICKS
    workers, stack = 0.0, list(parents.get(jvm, []))
    while stack:
        pid = stack.pop()
        workers += times.get(pid, 0.0)
        stack += parents.get(pid, [])
    return times.get(jvm, 0.0), workers


def run_export(master: str, log_dir: str, work: str, records: int) -> tuple[float, float, float]:
    """(best rows/s, JVM CPU s, workers' CPU s of that run) of RUNS exports on `master`."""
    spark = spark_session(master, app_name=f"bench {master}", log_level="ERROR")
    jvm = spark.sparkContext._gateway.proc.pid  # spark-submit execs the JVM
    try:
        first = json.dumps({"bench": {str(p): 1000 for p in range(PARTITIONS)}})
        warm = os.path.join(work, f"warm-{master}")
        export(ExportRequest(["bench"], warm, log_dirs=[log_dir], ending_offsets=first), spark)
        best = (0.0, 0.0, 0.0)
        for run in range(RUNS):
            out = os.path.join(work, f"out-{master}-{run}")
            before = cpu_seconds(jvm)
            result = export(ExportRequest(["bench"], out, log_dirs=[log_dir]), spark=spark)
            after = cpu_seconds(jvm)
            assert result.rows == records, result
            if result.rows_per_second > best[0]:
                best = (result.rows_per_second, after[0] - before[0], after[1] - before[1])
        return best
    finally:
        spark.stop()


def show(master: str, rows_per_s: float, jvm_s: float, workers_s: float, records: int) -> None:
    wall = records / rows_per_s
    busy = (jvm_s + workers_s) / wall
    print(f"kt source, {master}:        {rows_per_s:12,.0f} rows/s   CPU s: JVM {jvm_s:5.2f}, "
          f"Python workers {workers_s:5.2f}, cores busy {busy:4.2f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    args = parser.parse_args()
    records = args.records // PARTITIONS * PARTITIONS
    print(f"load average before the run: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    work = tempfile.mkdtemp(prefix="kt-spark-bench-")
    try:
        log_dir = os.path.join(work, "logs")
        started = time.perf_counter()
        write_topic(log_dir, records)
        print(f"wrote {records:,} records in {PARTITIONS} partitions "
              f"({time.perf_counter() - started:.1f} s)")  # fmt: skip
        one, *cpu = run_export("local[1]", log_dir, work, records)
        show("local[1]", one, *cpu, records)
        two, *cpu = run_export("local[2]", log_dir, work, records)
        show("local[2]", two, *cpu, records)
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
