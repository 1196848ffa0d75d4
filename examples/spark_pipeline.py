"""A streaming pipeline from topic to topic: Spark reads JSON events from kt, totals them
per user in 5-second windows, and writes the totals back into kt.

    python examples/spark_pipeline.py --bootstrap-server 127.0.0.1:9092 \\
        --input events --output totals --checkpoint /tmp/totals-ckpt [--master spark://...]

An event is a JSON value such as {"user": "ada", "amount": 12, "time": 1700000000000}
(milliseconds since the epoch). Events with an amount of 0 or less are dropped; late
events are accepted up to 10 seconds after the newest one seen (the watermark). A window's
total is written once the watermark has passed its end, as a record keyed by the user,
with the JSON value {"user", "window_start", "window_end", "events", "amount"}.

Stop it any way you like (Ctrl-C, SIGTERM, even kill -9 of the driver) and start it again
with the same --checkpoint: the query resumes from the offsets and the window state its
checkpoint holds, so no input event is lost. Writes are at least once: the micro-batch
that was running when it stopped is run again, and a window total it had written may be
written a second time, identical.
"""

from __future__ import annotations

import argparse
import signal
import sys

from kt.tools.spark_export import spark_session

EVENT_SCHEMA = "user STRING, amount LONG, time LONG"


def build(spark, bootstrap: str, source: str, target: str, checkpoint: str, trigger_s: float):  # type: ignore[no-untyped-def]
    """The query: read, parse, filter, aggregate per user and window, write back."""
    from pyspark.sql import functions as F

    events = (
        spark.readStream.format("kt")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "5000")
        .load()
        .select(F.from_json(F.col("value").cast("string"), EVENT_SCHEMA).alias("event"))
        .select("event.*")
        .where(F.col("amount") > 0)
        .withColumn("event_time", F.timestamp_millis("time"))
    )
    totals = (
        events.withWatermark("event_time", "10 seconds")
        .groupBy(F.window("event_time", "5 seconds"), "user")
        .agg(F.count(F.lit(1)).alias("events"), F.sum("amount").alias("amount"))
    )
    records = totals.select(
        F.col("user").alias("key"),
        F.to_json(
            F.struct(
                "user",
                F.unix_millis(F.col("window.start")).alias("window_start"),
                F.unix_millis(F.col("window.end")).alias("window_end"),
                "events",
                "amount",
            )
        ).alias("value"),
    )
    return (
        records.writeStream.format("kt")
        .outputMode("append")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", target)
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime=f"{trigger_s} seconds")
        .start()
    )


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-server", required=True)
    parser.add_argument("--input", required=True, help="the topic of JSON events")
    parser.add_argument("--output", required=True, help="the topic of window totals")
    parser.add_argument("--checkpoint", required=True, help="a directory the query keeps")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--trigger-seconds", type=float, default=1.0)
    args = parser.parse_args(argv)
    spark = spark_session(args.master, app_name="kt pipeline",
                          **{"spark.sql.shuffle.partitions": "2"})  # fmt: skip
    query = build(spark, args.bootstrap_server, args.input, args.output, args.checkpoint,
                  args.trigger_seconds)  # fmt: skip
    signal.signal(signal.SIGTERM, lambda *_: query.stop())
    print(f"pipeline running: {args.input} -> {args.output}", flush=True)
    try:
        query.awaitTermination()
    except KeyboardInterrupt:
        query.stop()
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
