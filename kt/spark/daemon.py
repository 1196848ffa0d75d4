"""Spark's Python daemon (pyspark.daemon) with the modules every worker imports loaded
once, before it forks them: kt's sessions run it (`spark.python.daemon.module`).

Spark starts a Python process for each step of a Python data source's write that runs
in Python: the writer's creation, each task, the commit (and the source's lookup at
registration), each forked from the daemon, and each importing pyspark.sql and the
`kt` sink first: about a third of a second apiece on an idle machine and more while the
JVM compiles, on the path of every write (benchmarks/spark_import.py). Imported here,
they are in every fork already.

Only pure-Python modules that start no thread are loaded: pyspark.daemon imports the
worker module after the fork because pyarrow (and pandas) start threads when imported,
and a fork keeps only the thread that forks. pyarrow and numpy stay out (kt.spark's
column code imports them in the worker).
"""

from __future__ import annotations

import pyspark.sql  # noqa: F401
import pyspark.sql.datasource  # noqa: F401
import pyspark.sql.worker.commit_data_source_write  # noqa: F401
import pyspark.sql.worker.create_data_source  # noqa: F401
import pyspark.sql.worker.lookup_data_sources  # noqa: F401
import pyspark.sql.worker.write_into_data_source  # noqa: F401
import pyspark.worker  # noqa: F401
from pyspark import daemon

import kt.client.client  # noqa: F401
import kt.client.sender  # noqa: F401
import kt.spark.sink  # noqa: F401
import kt.spark.source  # noqa: F401

if __name__ == "__main__":
    daemon.manager()
