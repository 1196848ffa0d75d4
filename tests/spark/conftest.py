"""One local[2] SparkSession for every Spark test: starting a JVM costs seconds."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator:
    pytest.importorskip("pyspark")
    pytest.importorskip("pyarrow")
    from kt.tools.spark_export import SparkExportError, check_spark_available, spark_session

    try:
        check_spark_available()
    except SparkExportError as e:
        pytest.skip(str(e))
    session = spark_session(
        "local[2]",
        app_name="kt tests",
        **{"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"},
    )
    yield session
    session.stop()
