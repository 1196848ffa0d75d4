"""`kt consumer-perf-test`: Kafka's lines, counts of records and of key and value bytes as
Kafka's tool counts them, polls of at most max.poll.records, offsets committed at the
end, and the timeout's warning. (tests/oracle/test_perf_tools.py runs Kafka's own tool
beside it; tests/integration/test_cli_errors.py has its argument checks.)"""

from __future__ import annotations

import re

import pytest
from confluent_kafka import Producer

from tests.integration.conftest import kt_ok
from tests.integration.test_perf_tools import create

pytestmark = pytest.mark.slow

DATE = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}"
NUMBER = r"-?\d+\.\d{4}"
FINAL = re.compile(
    rf"({DATE}), ({DATE}), ({NUMBER}), ({NUMBER}), (\d+), ({NUMBER}), (\d+), (-?\d+), "
    rf"({NUMBER}|Infinity|NaN), ({NUMBER}|Infinity|NaN)"
)
DETAILED = re.compile(
    rf"{DATE}, 0, ({NUMBER}), {NUMBER}, (\d+), {NUMBER}, (\d+), (-?\d+), {NUMBER}, {NUMBER}"
)
HEADER = ("start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
          "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")  # fmt: skip


def consumer_perf(bootstrap: str, topic: str, messages: int, *extra: str) -> list[str]:
    return kt_ok("consumer-perf-test", "--bootstrap-server", bootstrap, "--topic", topic,
                 "--messages", str(messages), "--timeout", "20000", *extra)  # fmt: skip


def produce_mixed(bootstrap: str, topic: str) -> int:
    """2,000 records over 3 partitions: null and non-null keys and values, long values,
    headers, and half of them lz4-compressed. Returns their key and value bytes."""
    expected = 0
    for codec in ("none", "lz4"):
        producer = Producer({"bootstrap.servers": bootstrap, "compression.type": codec,
                             "linger.ms": 5})  # fmt: skip
        for i in range(1000):
            key = None if i % 7 == 0 else b"key-%d" % i
            value = (
                None if i % 11 == 0 else bytes([i % 256]) * (i % 300 + (9000 if i % 97 == 0 else 0))
            )
            headers = [("h", b"x" * (i % 5))] if i % 3 == 0 else None
            producer.produce(topic, value=value, key=key, partition=i % 3, headers=headers)
            expected += len(key or b"") + len(value or b"")
        assert producer.flush(30) == 0
    return expected


def test_counts_every_key_and_value_byte_and_commits(module_broker) -> None:
    bootstrap = module_broker.bootstrap
    create(bootstrap, "cperf-mixed", 3)
    expected = produce_mixed(bootstrap, "cperf-mixed")
    out = consumer_perf(bootstrap, "cperf-mixed", 2000, "--group", "cperf-g", "--print-metrics")
    assert out[0] == HEADER
    match = FINAL.fullmatch(out[1])
    assert match, out
    assert match.group(3) == f"{expected / 2**20:.4f}" and int(match.group(5)) == 2000
    assert out[2:] == ["records-consumed-total: 2000", f"bytes-consumed-total: {expected}"]
    lines = kt_ok("consumer-groups", "--bootstrap-server", bootstrap, "--describe",
                  "--group", "cperf-g")  # fmt: skip
    lags = [line.split()[5] for line in lines if line.startswith("cperf-g ")]
    assert lags == ["0", "0", "0"], lines  # everything consumed was committed at the end


def test_a_poll_hands_over_at_most_max_poll_records(module_broker, tmp_path) -> None:
    bootstrap = module_broker.bootstrap
    create(bootstrap, "cperf-polls", 1)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(3000):
        producer.produce("cperf-polls", value=b"%099d" % i)
    assert producer.flush(30) == 0
    # Each poll takes 500 records of the 3,000 fetched at once: 1,000 is reached exactly.
    (line,) = consumer_perf(bootstrap, "cperf-polls", 1000, "--hide-header")
    assert FINAL.fullmatch(line).group(5) == "1000"
    config = tmp_path / "consumer.properties"
    config.write_text("max.poll.records=700\n")
    (line,) = consumer_perf(bootstrap, "cperf-polls", 1000, "--hide-header",
                            "--consumer.config", str(config))  # fmt: skip
    assert FINAL.fullmatch(line).group(5) == "1400"  # two polls of 700


def test_a_group_resumes_inside_a_batch_where_it_stopped(module_broker) -> None:
    bootstrap = module_broker.bootstrap
    create(bootstrap, "cperf-resume", 1)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50})
    for i in range(3000):
        producer.produce("cperf-resume", value=b"%099d" % i)
    assert producer.flush(30) == 0
    batches = kt_ok("dump-log", "--files", next(module_broker.log_dir.glob("cperf-resume-0/*.log")))
    assert sum("baseOffset:" in line for line in batches) < 6  # offset 1,000 is inside one
    (first,) = consumer_perf(bootstrap, "cperf-resume", 1000, "--hide-header", "--group", "r")
    (rest,) = consumer_perf(bootstrap, "cperf-resume", 2000, "--hide-header", "--group", "r")
    for line, count in ((first, 1000), (rest, 2000)):
        match = FINAL.fullmatch(line)
        assert match.group(3, 5) == (f"{count * 99 / 2**20:.4f}", str(count)), line
    lines = kt_ok("consumer-groups", "--bootstrap-server", bootstrap, "--describe", "--group", "r")
    (row,) = [line.split() for line in lines if line.startswith("r ")]
    assert row[3:6] == ["3000", "3000", "0"], lines  # the second run began at 1,000


def test_detailed_stats_report_each_interval(module_broker) -> None:
    bootstrap = module_broker.bootstrap
    create(bootstrap, "cperf-detailed", 1)
    kt_ok("producer-perf-test", "--topic", "cperf-detailed", "--num-records", "300000",
          "--record-size", "100", "--throughput", "-1", "--producer-props",
          f"bootstrap.servers={bootstrap}")  # fmt: skip
    out = consumer_perf(bootstrap, "cperf-detailed", 300000, "--show-detailed-stats",
                        "--reporting-interval", "10")  # fmt: skip
    assert out[0] == HEADER.replace("start.time, end.time", "time, threadId")
    rows = [DETAILED.fullmatch(line) for line in out[1:]]
    assert len(rows) >= 2 and all(rows), out
    counts = [int(row.group(2)) for row in rows]
    assert counts == sorted(counts) and counts[-1] < 300000  # reports, no final line
    # A report falls due after the first record of a poll (Kafka checks after each one).
    assert int(rows[0].group(2)) % 500 == 1, out


def test_the_timeout_ends_a_run_that_gets_nothing(module_broker) -> None:
    create(module_broker.bootstrap, "cperf-empty", 1)
    out = kt_ok("consumer-perf-test", "--bootstrap-server", module_broker.bootstrap,
                "--topic", "cperf-empty", "--messages", "10", "--timeout", "300")  # fmt: skip
    assert out[:2] == [HEADER, "WARNING: Exiting before consuming the expected number of "
                       "messages: timeout (300 ms) exceeded. You can use the --timeout option "
                       "to increase the timeout."]  # fmt: skip
    match = FINAL.fullmatch(out[2])
    assert match and match.group(3, 4, 5, 6) == ("0.0000", "0.0000", "0", "0.0000"), out
