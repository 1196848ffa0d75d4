"""Fixtures shared by every test package: a small file system to fill (tests/_tmpfs.py),
a real ZooKeeper (tests/_zookeeper.py), and kt.testing's kt_cluster, as a user of
kt.testing would have it; and how the tests are spread over pytest-xdist's workers
(tests/_scheduling.py).

The JVMs the tests start (Apache Kafka's brokers, tools and Java clients through
kt.reference_kafka, which takes KAFKA_JVM_PERFORMANCE_OPTS as kafka-run-class.sh does;
Spark's driver through SPARK_SUBMIT_OPTS) run with the client compiler only and the serial
collector: about 40% less CPU for runs of seconds, which is what a JVM in a test spends
most on. The tests judge what Kafka and Spark do, not how fast; benchmarks/ leave both
variables alone, so Kafka and Spark run there as their scripts start them.
"""

import os

from kt.testing import kt_cluster
from tests._scheduling import (
    pytest_collection_modifyitems,
    pytest_xdist_auto_num_workers,
    pytest_xdist_make_scheduler,
    side_by_side,
)
from tests._tmpfs import small_fs
from tests._zookeeper import kt_zookeeper, zookeeper

TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Djava.awt.headless=true"
os.environ.setdefault("KAFKA_JVM_PERFORMANCE_OPTS", TEST_JVM_OPTIONS)
os.environ.setdefault("SPARK_SUBMIT_OPTS", TEST_JVM_OPTIONS)

__all__ = [
    "kt_cluster",
    "kt_zookeeper",
    "pytest_collection_modifyitems",
    "pytest_xdist_auto_num_workers",
    "pytest_xdist_make_scheduler",
    "side_by_side",
    "small_fs",
    "zookeeper",
]
