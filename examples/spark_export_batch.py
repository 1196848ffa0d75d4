"""Batch: read a topic from a stopped broker's log dirs with the `kt` source, write Parquet.

    python examples/spark_export_batch.py /var/kt/data orders /tmp/orders.parquet

The same as `kt spark-export --log-dirs /var/kt/data --topic orders --output ...`, written
out to show the source's options (those of Spark's Kafka source).
"""

from __future__ import annotations

import sys

from pyspark.sql import functions as F

from kt.tools.spark_export import spark_session


def main(log_dirs: str, topic: str, output: str) -> None:
    spark = spark_session("local[*]", app_name="kt batch export")  # registers format("kt")
    df = (
        spark.read.format("kt")
        .option("log.dirs", log_dirs)
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
