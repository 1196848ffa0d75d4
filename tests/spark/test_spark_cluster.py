"""kt's Spark commands and pipeline on a Spark standalone cluster of two workers
(tests/spark/_cluster.py): the readers and writers are pickled to executors in other
JVMs and their Python workers, and the data comes back whole."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.spark._broker import Broker
from tests.spark._cluster import SparkStandalone
from tests.spark.test_spark_pipeline import kill_and_restart
from tests.spark.test_spark_sink import by_key, create, kt, produce_source, records

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkStandalone]:
    cluster = SparkStandalone(tmp_path_factory.mktemp("spark-cluster"))
    try:
        yield cluster.start()
    finally:
        cluster.stop()


def executor_dirs(cluster: SparkStandalone) -> dict[str, list[str]]:
    """The applications each worker ran executors for (its work dir: app-*/N)."""
    return {
        worker.name: sorted(p.parent.name for p in worker.glob("app-*/*"))
        for worker in sorted(cluster.base.glob("worker-*"))
        if worker.is_dir()
    }


def test_export_and_import_run_on_the_cluster(cluster, tmp_path: Path) -> None:
    log_dir = tmp_path / "kt-logs"
    log_dir.mkdir()
    broker = Broker(log_dir).start()
    try:
        create(broker, "source", "copy")
        produce_source(broker, "source", 5000)
        out = tmp_path / "exported"
        before = executor_dirs(cluster)
        kt("spark-export", "--bootstrap-server", broker.bootstrap, "--topic", "source",
           "--output", str(out), "--master", cluster.master_url,
           "--conf", "spark.executor.memory=512m")  # fmt: skip
        line = kt("spark-import", "--bootstrap-server", broker.bootstrap, "--topic", "copy",
                  "--input", str(out), "--master", cluster.master_url,
                  "--conf", "spark.executor.memory=512m")  # fmt: skip
        assert line.startswith("5000 records written to copy"), line
        assert by_key(records(broker, "copy")) == by_key(records(broker, "source"))
        after = executor_dirs(cluster)
        for worker, apps in after.items():  # both applications ran on both workers
            assert len(set(apps) - set(before.get(worker, []))) == 2, (before, after)
    finally:
        broker.stop()


def test_the_pipeline_on_the_cluster_loses_no_event(cluster, tmp_path: Path) -> None:
    kill_and_restart(tmp_path, cluster.master_url)
