"""How the suite runs side by side: pytest-xdist workers (`-n auto --dist loadscope` in
pyproject.toml's addopts; `-n 0` runs it in one process), each given whole groups of tests.

The tests mostly wait on other processes (brokers, ZooKeeper, Apache Kafka's JVMs, Spark),
so twice as many workers as cores keep the cores busy. pytest-xdist's loadscope hands out
whole modules; here (GroupScheduling) the groups are:

- the Spark tests (tests/spark/), which share the in-process SparkSession of
  tests/spark/conftest.py: one worker starts one Spark JVM for all of them and runs them
  one after another, not one JVM per worker competing for the cores;
- every other module, whose module-scoped fixtures (a broker, a Kafka broker, the Spark
  standalone cluster of tests/spark/test_spark_cluster.py) then start once.

Groups are handed out in collection order (`--no-loadscope-reorder`), with the longest
ones moved first: a group of minutes that starts last would keep one worker busy long
after the others have finished (longest processing time first).

Every test's ports are the operating system's free ones and its files are under its own
tmp_path, so no two tests can collide. A test that cannot run beside others (one whose
client has a race that only a busy machine shows) is marked `alone`: it waits for the
tests running on the other workers to finish, and they start no other test until it has
finished (two file locks shared by the workers: the tests' lock, shared by all but an
`alone` test, which takes it alone, and a turnstile, which every test passes through and an
`alone` test holds while it waits, so that the others' turns never starve it).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

SPARK = "tests/spark/"
SPARK_CLUSTER = "tests/spark/test_spark_cluster.py"  # its own cluster, no in-process session

# The groups that take a minute or more of one worker (measured with `--durations`), the
# longest first.
LONGEST_FIRST = (
    SPARK,
    "tests/oracle/test_mixed_cluster.py",
    SPARK_CLUSTER,
    "tests/integration/test_librdkafka_suite.py",
    "tests/integration/test_zookeeper_cluster.py",
    "tests/oracle/test_spark_connector.py",
    "tests/oracle/test_kafka_streams_eos.py",
    "tests/oracle/test_tools.py",
    "tests/oracle/test_acls.py",
    "tests/integration/test_zookeeper_outage.py",
    "tests/oracle/test_metrics_names.py",
    "tests/oracle/test_zookeeper_outage.py",
    "tests/integration/test_sasl.py",
    "tests/integration/test_reassign_tool.py",
    "tests/oracle/test_transactional_scenario.py",
)
# Last: the module of a test marked `alone`, which runs once the others are near their end
# (while it waits for the tests running beside it to finish, the other workers wait too).
LAST = ("tests/integration/test_librdkafka_ssl.py",)
WORKERS_PER_CORE = 2
MAX_WORKERS = 8


def group_of(nodeid: str) -> str:
    """The group of the test of this id: one worker runs a group's tests in order."""
    module = nodeid.split("::", 1)[0]
    if module.startswith(SPARK) and module != SPARK_CLUSTER:
        return SPARK
    return module


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest groups first, the `alone` test's last; within a group, the collection's
    order."""
    rank = {group: i for i, group in enumerate(LONGEST_FIRST)}
    rank.update((group, len(LONGEST_FIRST) + 1) for group in LAST)
    items.sort(key=lambda item: rank.get(group_of(item.nodeid), len(LONGEST_FIRST)))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):  # type: ignore[no-untyped-def]
    """`--dist loadscope`, with our groups as its scopes."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

    return GroupScheduling(config, log)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: two workers per core, at most MAX_WORKERS (PYTEST_XDIST_AUTO_NUM_WORKERS
    overrides it, as it does pytest-xdist's own count)."""
    if "PYTEST_XDIST_AUTO_NUM_WORKERS" in os.environ:
        return int(os.environ["PYTEST_XDIST_AUTO_NUM_WORKERS"])
    return min(MAX_WORKERS, WORKERS_PER_CORE * (os.cpu_count() or 1))


@pytest.fixture(autouse=True)
def side_by_side(request: pytest.FixtureRequest, tmp_path_factory) -> Iterator[None]:
    """Under pytest-xdist, run the test beside the others' unless it is marked `alone`."""
    if not hasattr(request.config, "workerinput"):  # one process: every test runs alone
        yield
        return
    # the workers' base directories (popen-gwN) are in the run's own
    shared = tmp_path_factory.getbasetemp().parent
    alone = request.node.get_closest_marker("alone") is not None
    with _turn(shared, exclusive=alone):
        yield


@contextmanager
def _turn(shared: Path, exclusive: bool) -> Iterator[None]:
    with (
        open(shared / "turnstile.lock", "a") as turnstile,
        open(shared / "tests.lock", "a") as running,
    ):
        fcntl.flock(turnstile, fcntl.LOCK_EX)  # while an `alone` test waits, nothing starts
        fcntl.flock(running, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        fcntl.flock(turnstile, fcntl.LOCK_UN)
        yield
