"""`kt spark-import` and a `format("kt")` batch write beside Spark's own Kafka sink
(`format("kafka")`, spark-sql-kafka) on the same data, against the same kt broker (issue 43).

  interop/fetch-kafka.sh                        # once: Spark's Kafka connector
  python benchmarks/spark_import.py [--records 1000000] [--repeat 2] [--master local[*]]

The data: --files Parquet files of 100-byte binary values and string keys (1,000
distinct), written with pyarrow. Each run writes all of it into a fresh topic of
--partitions partitions, three ways, alternating, each in a process of its own as a user
runs it (a fresh JVM each time):
  kafka     a PySpark job: spark.read.parquet(...).write.format("kafka") (Spark's sink,
            Kafka's Java producer with its defaults, as spark-sql-kafka runs it)
  kt        the same job with format("kt") (kt's sink, kt's producer)
  import    `kt spark-import --input DIR --topic T` (kt's sink behind kt's CLI)
Both jobs build their session with the settings `kt spark-import` uses (and the
connector's jars on spark.jars for both; only the kt job registers the kt source), then
time their write alone (the session up, the JVM cold: a one-off job) and the same write
again into a second topic (warm: the JIT done, the Python workers started, as in a
long-lived session), so the table shows both beside the whole process's time. The
machine's CPU seconds while each process ran (from /proc/stat: the JVM, its Python
workers and the broker, which the runs share) are shown too. The records each way
wrote are counted on the broker (the topics' end offsets), so that a way losing records
cannot win. Target: kt and import >= 1.0x kafka.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

WAYS = ("kafka", "kt", "import")


def machine_cpu() -> float:
    """CPU seconds the whole machine has spent busy (the JVM is not a child this process
    waits for, so rusage would miss it)."""
    with open("/proc/stat") as f:
        ticks = [int(v) for v in f.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def write_input(directory: Path, records: int, files: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    directory.mkdir()
    per_file = records // files
    for f in range(files):
        base = f * per_file
        keys = pa.array([f"user-{(base + i) % 1000}" for i in range(per_file)])
        values = pa.array([b"%010d" % (base + i) + b"v" * 90 for i in range(per_file)],
                          pa.binary())  # fmt: skip
        pq.write_table(pa.table({"key": keys, "value": values}), directory / f"part-{f}.parquet")


def job(way: str, input_dir: str, topic: str, bootstrap: str, master: str) -> None:
    """One Spark job (run in a process of its own): prints its write's seconds as JSON."""
    from kt.reference_kafka import spark_kafka_jars
    from kt.tools.spark_export import spark_session
    from kt.tools.spark_import import IMPORT_SETTINGS

    jars = ",".join(str(j) for j in spark_kafka_jars())
    spark = spark_session(master, app_name=f"kt benchmark: {way}", register=way == "kt",
                          **{**IMPORT_SETTINGS, "spark.jars": jars})  # fmt: skip
    try:
        seconds = []
        for target in (topic, f"{topic}-warm"):
            started = time.monotonic()
            (spark.read.parquet(input_dir).select("key", "value")
             .write.format(way).option("kafka.bootstrap.servers", bootstrap)
             .option("topic", target).mode("append").save())  # fmt: skip
            seconds.append(time.monotonic() - started)
        print(json.dumps({"write_s": seconds[0], "warm_s": seconds[1]}))
    finally:
        spark.stop()


def end_offsets(bootstrap: str, topic: str, partitions: int) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-end-offsets"})
    try:
        return sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
                   for p in range(partitions))  # fmt: skip
    finally:
        consumer.close()


def run_way(way: str, input_dir: Path, topic: str, bootstrap: str, master: str) -> dict:
    if way == "import":
        command = [sys.executable, "-m", "kt", "spark-import", "--input", str(input_dir),
                   "--topic", topic, "--bootstrap-server", bootstrap,
                   "--master", master]  # fmt: skip
    else:
        command = [sys.executable, __file__, "--job", way, "--input", str(input_dir),
                   "--topic", topic, "--bootstrap", bootstrap, "--master", master]  # fmt: skip
    before, started = machine_cpu(), time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    elapsed, cpu = time.monotonic() - started, machine_cpu() - before
    if result.returncode:
        raise SystemExit(f"{way} failed: {result.stderr[-3000:]}")
    times = {"write_s": None, "warm_s": None}
    if way != "import":
        times = json.loads(result.stdout.strip().splitlines()[-1])
    return {"wall_s": elapsed, "cpu_s": cpu, **times}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--job", choices=("kafka", "kt"), help=argparse.SUPPRESS)
    parser.add_argument("--input", help=argparse.SUPPRESS)
    parser.add_argument("--topic", help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    o = parser.parse_args()
    if o.job:
        job(o.job, o.input, o.topic, o.bootstrap, o.master)
        return

    from broker import KtBroker
    from confluent_kafka.admin import AdminClient, NewTopic

    from kt.reference_kafka import spark_kafka_jars

    if not spark_kafka_jars():
        raise SystemExit("Spark's Kafka connector is needed: run interop/fetch-kafka.sh")
    got: dict[str, list[dict]] = {way: [] for way in WAYS}
    loads = []
    with tempfile.TemporaryDirectory(prefix="kt-spark-import-bench-") as work, \
            KtBroker(Path(work) / "logs") as broker:  # fmt: skip
        input_dir = Path(work) / "input"
        write_input(input_dir, o.records, o.files)
        records = o.records // o.files * o.files
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for n in range(o.repeat):
            for way in WAYS:
                topic = f"import-{way}-{n}"
                for new in (topic, f"{topic}-warm"):
                    admin.create_topics([NewTopic(new, o.partitions, 1)])[new].result(30)
                loads.append(os.getloadavg()[0])
                got[way].append(run_way(way, input_dir, topic, broker.bootstrap, o.master))
                for target in (topic, f"{topic}-warm") if way != "import" else (topic,):
                    written = end_offsets(broker.bootstrap, target, o.partitions)
                    if written != records:
                        raise SystemExit(f"{way} wrote {written} of {records} records")
                print(f"run {n} {way}: {got[way][-1]}", file=sys.stderr)

    def median(way: str, key: str) -> float:
        return statistics.median(r[key] for r in got[way])

    print(f"Spark writes of {records:,} records of 100 B ({o.files} Parquet files) into "
          f"{o.partitions} partitions of one kt broker, {o.master}, {os.cpu_count()} cores, "
          f"median of {o.repeat}; load average during the runs "
          f"{min(loads):.1f}-{max(loads):.1f}")  # fmt: skip
    print("| way | process s | records/s | write s, cold | records/s | write s, warm "
          "| records/s | machine CPU s |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    names = {"kafka": 'format("kafka")', "kt": 'format("kt")', "import": "kt spark-import"}
    for way in WAYS:
        wall, cpu = median(way, "wall_s"), median(way, "cpu_s")
        cells = ["- | -", "- | -"]
        if way != "import":
            cells = [f"{median(way, k):.1f} | {records / median(way, k):,.0f}"
                     for k in ("write_s", "warm_s")]  # fmt: skip
        print(f"| {names[way]} | {wall:.1f} | {records / wall:,.0f} | {cells[0]} | {cells[1]} "
              f"| {cpu:.1f} |")  # fmt: skip
    kafka = {k: median("kafka", k) for k in ("wall_s", "write_s", "warm_s")}
    kt = {k: median("kt", k) for k in ("wall_s", "write_s", "warm_s")}
    ratios = [kafka[k] / kt[k] for k in ("wall_s", "write_s", "warm_s")]
    print(f'| format("kt") / format("kafka") | {ratios[0]:.2f}x | | {ratios[1]:.2f}x | '
          f"| {ratios[2]:.2f}x | | |")  # fmt: skip
    imported = kafka["wall_s"] / median("import", "wall_s")
    print(f'| kt spark-import / format("kafka") | {imported:.2f}x | | | | | | |')


if __name__ == "__main__":
    main()
