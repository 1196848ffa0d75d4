"""kt topics as a PySpark data source, `format("kt")` (pyspark and pyarrow: the spark extra).

    import kt.spark
    kt.spark.register(spark)
    df = (spark.read.format("kt")
          .option("log.dirs", "/var/kt/data")
          .option("subscribe", "orders")
          .load())

The options and the rows are those of Spark's Kafka source (kt.spark.options,
kt.spark.schema). Importing this package costs nothing: pyspark is imported when
KtDataSource or register() is first used, so the planning modules stay light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from kt.spark.source import KtDataSource

__all__ = ["KtDataSource", "register"]


def register(spark: SparkSession) -> None:
    """Register the `kt` format with `spark`'s data source registry."""
    from kt.spark.source import KtDataSource

    spark.dataSource.register(KtDataSource)


def __getattr__(name: str) -> Any:
    if name == "KtDataSource":
        from kt.spark.source import KtDataSource

        return KtDataSource
    raise AttributeError(f"module 'kt.spark' has no attribute {name!r}")
