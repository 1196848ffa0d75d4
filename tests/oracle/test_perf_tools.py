"""The perf tools beside Kafka's: kafka-producer-perf-test against kt prints the lines that
`kt producer-perf-test` prints, and kt's tool produces into Kafka 3.9 as into kt."""

from __future__ import annotations

from kt.reference_kafka import run_tool
from tests.integration.conftest import kt_ok
from tests.integration.test_perf_tools import FINAL, create, end_offsets


def test_producer_perf_lines_as_kafkas(broker, kafka) -> None:
    for target in (broker.bootstrap, kafka.bootstrap):
        create(target, "perf-oracle", 2)
    theirs = run_tool(
        "kafka-producer-perf-test", "--topic", "perf-oracle", "--num-records", "20000",
        "--record-size", "100", "--throughput", "-1", "--producer-props",
        f"bootstrap.servers={broker.bootstrap}", "acks=1",
    )  # fmt: skip
    assert theirs.returncode == 0, theirs.stderr
    assert FINAL.fullmatch(theirs.stdout.splitlines()[-1]), theirs.stdout
    ours = kt_ok("producer-perf-test", "--topic", "perf-oracle", "--num-records", "20000",
                 "--record-size", "100", "--throughput", "-1", "--producer-props",
                 f"bootstrap.servers={kafka.bootstrap}", "acks=1")  # fmt: skip
    assert FINAL.fullmatch(ours[-1]), ours
    # Both landed whole: Kafka's tool into kt, kt's tool into Kafka.
    assert end_offsets(broker.bootstrap, "perf-oracle") == 20000
    assert end_offsets(kafka.bootstrap, "perf-oracle") == 20000
