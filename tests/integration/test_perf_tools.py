"""`kt producer-perf-test`: Kafka's lines, records that really land, a throttle that holds,
and the tool's argument checks. (tests/oracle/test_perf_tools.py runs Kafka's own tool
beside it.)"""

from __future__ import annotations

import re

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.conftest import kt_command, kt_ok

pytestmark = pytest.mark.slow

FINAL = re.compile(
    r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
    r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99\.9th\."
)
WINDOW = re.compile(
    r"\d+ records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg latency, "
    r"[\d.]+ ms max latency\."
)


def create(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)


def end_offsets(bootstrap: str, topic: str) -> int:
    lines = kt_ok("get-offsets", "--bootstrap-server", bootstrap, "--topic", topic)
    return sum(int(line.rsplit(":", 1)[1]) for line in lines)


def perf_test(bootstrap: str, topic: str, records: int, size: int, throughput: int,
              acks: str, *options: str) -> tuple[list[str], re.Match[str]]:  # fmt: skip
    """Run the tool; its lines and the match of the final one."""
    out = kt_ok("producer-perf-test", "--topic", topic, "--num-records", str(records),
                "--record-size", str(size), "--throughput", str(throughput),
                "--producer-props", f"bootstrap.servers={bootstrap}", f"acks={acks}",
                *options)  # fmt: skip
    match = FINAL.fullmatch(out[-1])
    assert match, out
    return out, match


@pytest.mark.parametrize("options", [(), ("--pre-encoded-batches",)], ids=["producer", "raw"])
def test_unthrottled_run_prints_kafkas_final_line(module_broker, options) -> None:
    """Through kt's producer (the default) or as copies of one encoded batch: Kafka 3.9's
    lines, records/sec with Java's %f, and every record in the log."""
    topic = f"perf-fast-{len(options)}"
    create(module_broker.bootstrap, topic, 3)
    out, match = perf_test(module_broker.bootstrap, topic, 200000, 100, -1, "1", *options)
    assert int(match.group(1)) == 200000
    records_per_s, mb_per_s = float(match.group(2)), float(match.group(3))
    assert mb_per_s == pytest.approx(records_per_s * 100 / 2**20, rel=0.01)
    p50, p95, p99, p999 = (int(match.group(i)) for i in range(6, 10))
    assert p50 <= p95 <= p99 <= p999 <= float(match.group(5))
    assert re.fullmatch(r"\d+\.\d{6}", match.group(2))  # %f
    assert end_offsets(module_broker.bootstrap, topic) == 200000
    assert all(WINDOW.fullmatch(line) for line in out[:-1]), out


def test_throughput_is_held(module_broker) -> None:
    create(module_broker.bootstrap, "perf-slow", 1)
    _, match = perf_test(module_broker.bootstrap, "perf-slow", 6000, 10, 2000, "all")
    assert 1700 <= float(match.group(2)) <= 2100  # 6,000 records in about 3 s
    assert end_offsets(module_broker.bootstrap, "perf-slow") == 6000


def batch_producers(log_dir, topic: str) -> set[tuple[str, str]]:
    """(producerId, baseSequence) of each batch of a partition, as dump-log prints them."""
    out = kt_ok("dump-log", "--files", str(log_dir / f"{topic}-0" / f"{0:020d}.log"))
    return set(re.findall(r"baseSequence: (-?\d+) .* producerId: (-?\d+)", "\n".join(out)))


def test_idempotent_by_default_as_kafkas_tool(module_broker) -> None:
    """Kafka's perf tool runs the Java producer, idempotent by default since 3.0 (and
    quietly not with acks=1): its batches carry a producer id and consecutive sequences."""
    create(module_broker.bootstrap, "perf-idempotent", 1)
    perf_test(module_broker.bootstrap, "perf-idempotent", 5000, 100, -1, "all")
    batches = sorted(batch_producers(module_broker.log_dir, "perf-idempotent"), key=lambda b:
                     int(b[0]))  # fmt: skip
    assert len({pid for _, pid in batches}) == 1 and int(batches[0][1]) >= 0
    assert batches[0][0] == "0" and len(batches) > 1
    create(module_broker.bootstrap, "perf-acks-1", 1)
    perf_test(module_broker.bootstrap, "perf-acks-1", 5000, 100, -1, "1")
    assert batch_producers(module_broker.log_dir, "perf-acks-1") == {("-1", "-1")}


def test_payload_file_and_checks(module_broker, tmp_path) -> None:
    create(module_broker.bootstrap, "perf-file", 1)
    payloads = tmp_path / "payloads.txt"
    payloads.write_text("alpha\nbeta\ngamma")
    out = kt_ok("producer-perf-test", "--topic", "perf-file", "--num-records", "30",
                "--payload-file", str(payloads), "--throughput", "-1", "--producer-props",
                f"bootstrap.servers={module_broker.bootstrap}")  # fmt: skip
    assert out[:2] == [f"Reading payloads from: {payloads}", "Number of messages read: 3"]
    assert FINAL.fullmatch(out[-1])
    values = kt_ok("console-consumer", "--bootstrap-server", module_broker.bootstrap, "--topic",
                   "perf-file", "--from-beginning", "--max-messages", "30")  # fmt: skip
    assert set(values) <= {"alpha", "beta", "gamma"} and len(values) == 30
    missing = kt_command("producer-perf-test", "--topic", "t", "--num-records", "1",
                         "--record-size", "1", "--throughput", "-1")  # fmt: skip
    assert missing.returncode == 1
    assert missing.stderr.splitlines()[0] == (
        "Either --producer-props or --producer.config must be specified."
    )
