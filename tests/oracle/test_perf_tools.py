"""The perf tools beside Kafka's: kafka-producer-perf-test against kt prints the lines that
`kt producer-perf-test` prints, and kt's tool produces into Kafka 3.9 as into kt; the
consumer tools, each against kt and Kafka, count the same."""

from __future__ import annotations

from kt.reference_kafka import run_tool
from tests.integration.conftest import kt_ok
from tests.integration.test_consumer_perf import FINAL as CONSUMER_FINAL
from tests.integration.test_consumer_perf import HEADER, consumer_perf, produce_mixed
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


def test_consumer_perf_counts_as_kafkas(broker, kafka) -> None:
    """The same mixed records (null keys and values, headers, lz4) in kt and in Kafka:
    Kafka's tool and kt's, each against both, print the same header and count the same
    records and megabytes."""
    runs = []
    for target in (broker.bootstrap, kafka.bootstrap):
        create(target, "cperf-oracle", 3)
        produce_mixed(target, "cperf-oracle")
        theirs = run_tool(
            "kafka-consumer-perf-test", "--bootstrap-server", target, "--topic",
            "cperf-oracle", "--messages", "2000", "--timeout", "30000",
        )  # fmt: skip
        assert theirs.returncode == 0, theirs.stderr
        runs.append(theirs.stdout.splitlines())
        runs.append(consumer_perf(target, "cperf-oracle", 2000))
    for lines in runs:
        assert lines[0] == HEADER, runs
        match = CONSUMER_FINAL.fullmatch(lines[1])
        assert match, runs
        first = CONSUMER_FINAL.fullmatch(runs[0][1])
        assert match.group(3, 5) == first.group(3, 5), runs
