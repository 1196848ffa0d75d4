"""Batch: read a topic with the `kt` source and write Parquet.

    python examples/spark_export_batch.py localhost:9092 orders /tmp/orders.parquet
    python examples/spark_export_batch.py /var/kt/data orders /tmp/orders.parquet

The first argument is a running broker (read through its Fetch API, each partition from
its leader: the `kafka.bootstrap.servers` option) or a stopped broker's log dir (its
segment files read directly: the `log.dirs` option). The same as `kt spark-export
--bootstrap-server ...` or `--log-dirs ...`, written out to show the source's options
(those of Spark's Kafka source).
"""

from __future__ import annotations

import os
import sys

from pyspark.sql import functions as F

from kt.tools.spark_export import spark_session


def location(where: str) -> tuple[str, str]:
    """The source option for a log dir or a host:port."""
    return ("log.dirs", where) if os.path.isdir(where) else ("kafka.bootstrap.servers", where)


def main(where: str, topic: str, output: str) -> None:
    spark = spark_session("local[*]", app_name="kt batch export")  # registers format("kt")
    df = (
        spark.read.format("kt")
        .option(*location(where))
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .option("includeHeaders", "true")
        .option("maxRecordsPerPartition", "500000")
        .load()
    )
    df = df.withColumn("value", F.col("value").cast("string"))
    df.write.mode("overwrite").partitionBy("partition").parquet(output)
    print(f"{spark.read.parquet(output).count()} rows in {output}")
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:4])
