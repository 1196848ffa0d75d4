"""kt's Python daemon for Spark (kt.spark.daemon): kt's sessions fork their Python workers
from it, with pyspark.sql and kt's sink imported once; it must import no module that
starts a thread (a fork keeps only the forking thread: pyarrow's or numpy's pools would be
lost in every worker), which pyspark.daemon avoids by importing the worker module after
the fork."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROBE = """
import os, sys
import kt.spark.daemon
print(len(os.listdir("/proc/self/task")))
print(",".join(sorted(m for m in ("pyarrow", "numpy", "pandas") if m in sys.modules)))
print(",".join(m for m in ("pyspark.sql", "pyspark.worker", "kt.spark.sink") if m in sys.modules))
"""


def test_the_daemon_loads_the_workers_modules_and_starts_no_thread() -> None:
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                            timeout=120, check=True)  # fmt: skip
    threads, threaded_modules, loaded = result.stdout.splitlines()
    assert threads == "1"
    assert threaded_modules == ""
    assert loaded == "pyspark.sql,pyspark.worker,kt.spark.sink"


@pytest.mark.slow
def test_kt_sessions_run_their_workers_from_it(spark) -> None:
    assert spark.conf.get("spark.python.daemon.module") == "kt.spark.daemon"

    def worker_main_module(_: object) -> str:
        return sys.modules["__main__"].__spec__.name if sys.modules["__main__"].__spec__ else ""

    got = spark.sparkContext.parallelize([0], 1).map(worker_main_module).collect()
    assert got == ["kt.spark.daemon"]
