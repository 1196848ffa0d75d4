"""Structured Streaming: follow a topic of a running broker into a Parquet table.

    python examples/spark_streaming.py localhost:9092 orders /tmp/orders-table /tmp/orders-ckpt
    python examples/spark_streaming.py /var/kt/data orders /tmp/orders-table /tmp/orders-ckpt

The first argument is a broker's host:port (read through its Fetch API) or a log dir
(segment files read directly).

Each run reads what was appended since the last one (the checkpoint holds Spark's Kafka
offset JSON, {"orders": {"0": 1234, ...}}) and stops (Trigger.AvailableNow), at most
10000 offsets per micro-batch. Run it from cron, or use processingTime="10 seconds"
to keep it running.
"""

from __future__ import annotations

import os
import sys

from kt.tools.spark_export import spark_session


def main(where: str, topic: str, table: str, checkpoint: str) -> None:
    spark = spark_session("local[2]", app_name="kt streaming")  # registers format("kt")
    source = "log.dirs" if os.path.isdir(where) else "kafka.bootstrap.servers"
    stream = (
        spark.readStream.format("kt")
        .option(source, where)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "10000")
        .load()
        .selectExpr(
            "CAST(key AS STRING) AS key",
            "CAST(value AS STRING) AS value",
            "partition",
            "offset",
            "timestamp",
        )  # fmt: skip
    )
    query = (
        stream.writeStream.format("parquet")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start(table)
    )
    query.awaitTermination()
    rows = sum(p["numInputRows"] for p in query.recentProgress)
    print(f"{rows} new rows written to {table}")
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:5])
