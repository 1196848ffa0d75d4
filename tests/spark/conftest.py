"""One local[2] SparkSession for every Spark test: starting a JVM costs seconds.

The Spark tests are part of the suite (the README's test command installs the `spark`
extra; Java 17+ is required): a missing pyspark or Java fails them, it never skips.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator:
    from kt.tools.spark_export import check_spark_available, spark_session

    check_spark_available()  # SparkExportError says what to install
    session = spark_session(
        "local[2]",
        app_name="kt tests",
        **{"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"},
    )
    yield session
    session.stop()
