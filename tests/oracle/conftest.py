"""Apache Kafka beside kt (kt.reference_kafka): its broker, its tools and its Java client
judge kt. These tests are marked `oracle` (and `slow`); they are skipped, with the reason,
only where Java or Kafka's jars are missing (`interop/fetch-kafka.sh` fetches them, and
`.ci/run` does)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kt.broker.group.group_metadata_manager import partition_for
from kt.reference_kafka import KAFKA4_VERSION, ReferenceKafka, run_tool, unavailable_reason
from tests._environment import unavailable
from tests.integration.conftest import broker, broker_factory


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.oracle)
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def kafka_available() -> None:
    reason = unavailable_reason()
    if reason is not None:
        unavailable(reason)


# Kafka 4's consumer groups' timings, for a quick test: each broker of a comparison gets them.
KAFKA4_HEARTBEATS = {
    "group.consumer.heartbeat.interval.ms": "300",
    "group.consumer.min.heartbeat.interval.ms": "100",
}


def dump_group_partition(log_dir: Path, group: str) -> tuple[str, str]:
    """Kafka 4.4's kafka-dump-log and `kt dump-log`, --offsets-decoder, on the first
    segment of `group`'s `__consumer_offsets` partition (of 50): (theirs, ours)."""
    segment = next((log_dir / f"__consumer_offsets-{partition_for(group, 50)}").glob("*.log"))
    args = ("--files", str(segment), "--offsets-decoder", "--print-data-log")
    theirs = run_tool("kafka-dump-log", *args, version=KAFKA4_VERSION)
    assert theirs.returncode == 0, theirs.stderr
    ours = subprocess.run([sys.executable, "-m", "kt", "dump-log", *args],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert ours.returncode == 0, ours.stderr
    return theirs.stdout, ours.stdout


@pytest.fixture
def kafka4(tmp_path: Path) -> Iterator[ReferenceKafka]:
    """One Kafka 4.4 broker (KRaft) with KAFKA4_HEARTBEATS."""
    reason = unavailable_reason(KAFKA4_VERSION)
    if reason is not None:
        unavailable(reason)
    kafka = ReferenceKafka(tmp_path / "kafka4", broker_id=0, version=KAFKA4_VERSION,
                           overrides=KAFKA4_HEARTBEATS)  # fmt: skip
    with kafka.start():
        yield kafka


@pytest.fixture
def kafka_factory(kafka_available: None, tmp_path: Path) -> Iterator:
    """Start Apache Kafka brokers for one test (KRaft unless given zookeeper_connect)."""
    started: list[ReferenceKafka] = []

    def make(**options) -> ReferenceKafka:
        kafka = ReferenceKafka(tmp_path / f"kafka-{len(started)}", **options)
        started.append(kafka)
        return kafka.start()

    yield make
    for kafka in started:
        kafka.stop()


@pytest.fixture
def kafka(kafka_factory) -> ReferenceKafka:
    return kafka_factory()


__all__ = ["broker", "broker_factory"]
