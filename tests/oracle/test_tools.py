"""Kafka's own bin tools, unchanged, against kt and against Kafka 3.9 over one scenario;
and the same scenario through the `kt` subcommands against kt. Outputs must match once
ids, paths and log timestamps are masked (`normalize`).

Both brokers run in ZooKeeper mode (kt is a ZooKeeper-mode broker) with the same
server.properties overrides, among them a static `log.retention.ms`, so that a topic
config's synonyms come from three layers. The scenario runs in parts, a test each, on
brokers the module shares; Kafka's tools run in one JVM (kt.reference_kafka.ToolSession),
which a busy machine otherwise spent most of its time starting. Every step of a part runs
against both before any assertion, and a part fails listing every step that differs.
"""

from __future__ import annotations

import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kt.reference_kafka import ReferenceKafka, ToolSession
from tests.integration.conftest import BrokerProcess, new_broker

OVERRIDES = {
    "broker.id": "0",
    "log.retention.ms": "604800000",
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "5",
}


@dataclass
class Step:
    tool: str  # the bin script's name without .sh; the kt subcommand drops "kafka-"
    args: list[str]
    input: str | None = None
    kt_command: bool = True  # does `kt` have this subcommand yet?
    # Kafka 3.9.1's ConsumerGroupCommand prints the reset rows on one line (its Java port
    # lost the line separator; 4.0 has it back): kt's rows are compared without newlines.
    kafka_rows_on_one_line: bool = False
    # kt's exit status where it differs on purpose: Kafka's tool prints an error and exits
    # 0 (a missing group); kt exits 1 (issue 16, docs/oracle.md).
    kt_exit: int | None = None

    def __str__(self) -> str:
        return " ".join([self.tool, *self.args])


def scenario(delete_json: Path, move_json: Path) -> dict[str, list[Step]]:
    """The steps, in parts that run in this order (each part's test starts where the one
    before left the three brokers)."""
    t = ["--topic", "orders"]
    topic_entity = ["--entity-type", "topics", "--entity-name", "orders"]
    client = ["--entity-type", "clients", "--entity-name", "c1"]
    return {"topics": [
        Step(
            "kafka-topics",
            [
                "--create",
                *t,
                "--partitions",
                "3",
                "--replication-factor",
                "1",
                "--config",
                "retention.ms=1000000",
            ],
        ),  # fmt: skip
        Step("kafka-topics", ["--create", *t, "--partitions", "3"]),
        Step("kafka-topics", ["--create", "--topic", "bad/name"]),
        Step("kafka-topics", ["--list"]),
        Step("kafka-topics", ["--describe", *t]),
        Step("kafka-topics", ["--alter", *t, "--partitions", "4"]),
        Step("kafka-topics", ["--alter", *t, "--partitions", "2"]),
        Step("kafka-topics", ["--describe", *t]),
        # TopicCommand's DescribeOptions: the filters of partitions, one replica each.
        Step("kafka-topics", ["--describe", *t, "--at-min-isr-partitions"]),
        Step("kafka-topics", ["--describe", *t, "--under-min-isr-partitions"]),
        Step("kafka-topics", ["--describe", *t, "--under-replicated-partitions"]),
        Step("kafka-topics", ["--describe", *t, "--unavailable-partitions"]),
        Step("kafka-topics", ["--describe", "--topics-with-overrides"]),
        Step("kafka-topics", ["--describe", "--topic", "missing"]),
    ], "configs": [
        Step("kafka-configs", [*topic_entity, "--describe"]),
        Step(
            "kafka-configs",
            [
                *topic_entity,
                "--alter",
                "--add-config",
                "retention.ms=5000,max.message.bytes=2000000",
            ],
        ),  # fmt: skip
        Step("kafka-configs", [*topic_entity, "--describe"]),
        Step("kafka-configs", [*topic_entity, "--alter", "--add-config", "min.insync.replicas=2"]),
        Step("kafka-topics", ["--describe", *t, "--under-min-isr-partitions"]),
        Step("kafka-topics", ["--describe", *t, "--at-min-isr-partitions"]),
        Step("kafka-configs", [*topic_entity, "--alter", "--delete-config", "min.insync.replicas"]),
        Step("kafka-configs", [*topic_entity, "--alter", "--delete-config", "retention.ms"]),
        Step("kafka-configs", [*topic_entity, "--describe"]),
        Step("kafka-configs", [*topic_entity, "--alter", "--add-config", "no.such.key=1"]),
        Step("kafka-configs", ["--entity-type", "brokers", "--entity-name", "0", "--describe"]),
        # Client quotas (DescribeClientQuotas / AlterClientQuotas): one entity per describe,
        # as Kafka prints several in hash order.
        Step(
            "kafka-configs",
            [*client, "--alter", "--add-config", "producer_byte_rate=1024,request_percentage=50"],
        ),
        Step("kafka-configs", [*client, "--describe"]),
        Step(
            "kafka-configs",
            [
                "--entity-type",
                "users",
                "--entity-name",
                "alice",
                *client,
                "--alter",
                "--add-config",
                "consumer_byte_rate=2048",
            ],
        ),
        Step("kafka-configs", ["--entity-type", "users", "--entity-type", "clients", "--describe"]),
        Step(
            "kafka-configs",
            [
                "--entity-type",
                "clients",
                "--entity-default",
                "--alter",
                "--add-config",
                "producer_byte_rate=10000000",
            ],
        ),
        Step("kafka-configs", ["--entity-type", "clients", "--entity-default", "--describe"]),
        Step(
            "kafka-configs",
            [
                "--entity-type",
                "ips",
                "--entity-name",
                "127.0.0.1",
                "--alter",
                "--add-config",
                "connection_creation_rate=10",
            ],
        ),
        Step("kafka-configs", ["--entity-type", "ips", "--describe"]),
        Step("kafka-configs", [*client, "--alter", "--delete-config", "producer_byte_rate"]),
        Step("kafka-configs", [*client, "--describe"]),
        Step("kafka-configs", [*client, "--alter", "--add-config", "bogus_rate=1"]),
    ], "records and groups": [
        Step(
            "kafka-console-producer",
            [*t, "--property", "parse.key=true"],
            # Lines ended by "\n", "\r\n" and "\r": BufferedReader.readLine's line ends
            input="".join(f"k{i}\tvalue {i}" + ("\n", "\r\n", "\r")[i % 3] for i in range(12)),
        ),  # fmt: skip
        Step("kafka-get-offsets", t),
        Step("kafka-get-offsets", [*t, "--time", "-2"]),
        Step(
            "kafka-console-consumer",
            [
                *t,
                "--from-beginning",
                "--max-messages",
                "12",
                "--property",
                "print.key=true",
                "--group",
                "g1",
                "--partition",
                "0",
            ],
        ),  # fmt: skip
        Step("kafka-consumer-groups", ["--list"]),
        Step("kafka-consumer-groups", ["--describe", "--group", "g1"], kt_exit=1),
        Step(
            "kafka-consumer-groups",
            ["--reset-offsets", "--group", "g1", *t, "--to-earliest", "--execute"],
            kafka_rows_on_one_line=True,
        ),  # fmt: skip
        Step(
            "kafka-consumer-groups",
            ["--reset-offsets", "--group", "g1", *t, "--shift-by", "2", "--dry-run"],
            kafka_rows_on_one_line=True,
        ),  # fmt: skip
        Step("kafka-consumer-groups", ["--describe", "--group", "g1"]),
        Step("kafka-delete-records", ["--offset-json-file", str(delete_json)]),
        Step("kafka-get-offsets", [*t, "--time", "-2"]),
        Step("kafka-consumer-groups", ["--delete", "--group", "g1"]),
        Step("kafka-consumer-groups", ["--describe", "--group", "g1"], kt_exit=1),
    ], "replicas": [
        Step("kafka-log-dirs", ["--describe", "--topic-list", "orders"]),
        # One replica each: its leader is the preferred one already.
        Step("kafka-leader-election", ["--election-type", "preferred", *t, "--partition", "0"]),
        Step("kafka-leader-election", ["--election-type", "preferred", "--all-topic-partitions"]),
        Step("kafka-leader-election", ["--election-type", "unclean", *t, "--partition", "7"]),
        # One broker: a move onto the replica it has completes at once.
        Step("kafka-reassign-partitions", ["--list"]),
        Step(
            "kafka-reassign-partitions",
            ["--execute", "--reassignment-json-file", str(move_json), "--throttle", "1000000"],
        ),
        Step("kafka-reassign-partitions", ["--verify", "--reassignment-json-file", str(move_json)]),
        Step(
            "kafka-reassign-partitions", ["--execute", "--reassignment-json-file", str(delete_json)]
        ),
        Step("kafka-topics", ["--delete", *t]),
    ]}  # fmt: skip


# Where kt's own command prints otherwise than Kafka 3.9's tool, on purpose (docs/oracle.md):
# Kafka's text -> kt's.
KT_COMMAND_DIFFERENCES = {
    # TopicCommand formats a java.util.Optional into its message.
    "Topic 'Optional[missing]' does not exist as expected": "Topic 'missing' does not exist "
    "as expected",
}


def normalize(text: str, log_dirs: list[Path]) -> str:
    text = re.sub(r"TopicId: \S+", "TopicId: <id>", text)
    text = re.sub(r"127\.0\.0\.1:\d+", "<bootstrap>", text)
    # A replica's size in kafka-log-dirs: its records' timestamp deltas are varints, and how
    # many bytes they take depends on how fast the console producer sent them, in each run
    # its own (a busy machine once made Kafka's 3 bytes longer). Zero or not is compared;
    # tests/integration/test_log_dirs_tool.py holds kt's sizes to its files.
    text = re.sub(r'"size":[1-9]\d*', '"size":<not zero>', text)
    text = re.sub(r"^\[\d{4}-\d\d-\d\d [\d:,]+\] ", "", text, flags=re.M)
    # kafka-topics --describe: DescribeTopicPartitions' empty ELR lists (against kt) or no
    # ELR at all (Metadata, against Kafka 3.9 on ZooKeeper): docs/oracle.md.
    text = text.replace("\tElr: \tLastKnownElr: ", "\tElr: N/A\tLastKnownElr: N/A")
    for log_dir in sorted(log_dirs, key=lambda d: -len(str(d))):  # .../kt2 before .../kt
        text = text.replace(str(log_dir), "<log-dir>")
    # Log lines of the Java tools' own (WARN and below): not part of their output.
    return "\n".join(
        line for line in text.splitlines() if not re.match(r"(WARN|INFO|SLF4J)\b", line)
    )


def run_kt_command(step: Step, bootstrap: str) -> tuple[int, str, str]:
    command = step.tool.removeprefix("kafka-")
    r = subprocess.run(
        [sys.executable, "-m", "kt", command, "--bootstrap-server", bootstrap, *step.args],
        input=step.input, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return r.returncode, r.stdout, r.stderr


@dataclass
class Brokers:
    """Kafka 3.9, a kt broker for Kafka's tools, another for kt's commands (each sees the
    scenario once), and one JVM that runs Kafka's tools."""

    kafka: ReferenceKafka
    kt: BrokerProcess
    kt_for_commands: BrokerProcess
    tools: ToolSession
    delete_json: Path
    move_json: Path

    @property
    def log_dirs(self) -> list[Path]:
        return [self.kt.log_dir, self.kt_for_commands.log_dir, self.kafka.log_dir]


@pytest.fixture(scope="module")
def brokers(kafka_available, kt_zookeeper, tmp_path_factory) -> Iterator[Brokers]:
    base = tmp_path_factory.mktemp("tools")
    chroot = f"{kt_zookeeper.connect}/kt-tools-{uuid.uuid4().hex[:12]}"
    kt = new_broker(base, "kt", {**OVERRIDES, "zookeeper.connect": chroot + "-kt"})
    kt2 = new_broker(base, "kt2", {**OVERRIDES, "zookeeper.connect": chroot + "-kt2"})
    kafka = ReferenceKafka(base / "kafka", broker_id=0, zookeeper_connect=chroot + "-kafka",
                           overrides=OVERRIDES).start()  # fmt: skip
    delete_json = base / "delete.json"
    delete_json.write_text(
        '{"version":1,"partitions":[{"topic":"orders","partition":0,"offset":2}]}'
    )
    move_json = base / "move.json"
    move_json.write_text(
        '{"version":1,"partitions":[{"topic":"orders","partition":1,"replicas":[0]}]}'
    )
    tools = ToolSession()
    try:
        yield Brokers(kafka, kt, kt2, tools, delete_json, move_json)
    finally:
        tools.close()
        kafka.stop()
        kt.stop()
        kt2.stop()


PARTS = list(scenario(Path("delete.json"), Path("move.json")))


@pytest.mark.parametrize("part", PARTS)
def test_kafka_tools_print_the_same_against_kt_and_kafka(brokers: Brokers, part: str) -> None:
    """One part of the scenario: Kafka's tool against Kafka and against kt, and kt's
    command against kt, step by step; every difference of the part is listed at once."""
    dirs = brokers.log_dirs
    differences = []
    for step in scenario(brokers.delete_json, brokers.move_json)[part]:
        theirs, on_kt = (
            [normalize(str(x), dirs) for x in run_java_tool(brokers.tools, step, bootstrap)]
            for bootstrap in (brokers.kafka.bootstrap, brokers.kt.bootstrap)
        )
        if on_kt != theirs:
            differences.append(f"{step} (Kafka's tool against kt):\n  Kafka: {theirs}\n"
                               f"  kt:    {on_kt}")  # fmt: skip
        if step.kt_command:
            result = run_kt_command(step, brokers.kt_for_commands.bootstrap)
            ours = [normalize(str(part), dirs) for part in result]
            expected = [_as_kt_prints(part) for part in theirs]
            if step.kt_exit is not None:
                expected[0] = str(step.kt_exit)
            if step.kafka_rows_on_one_line:
                assert ours[1].count("\n") == len(ours[1].splitlines()) - 1 > 1, ours
                ours[1] = ours[1][0] + ours[1][1:].replace("\n", "")
            if ours[:2] != expected[:2] or _user_message(ours[2]) != _user_message(expected[2]):
                differences.append(f"kt {step} (kt's command against kt):\n"
                                   f"  Kafka: {expected}\n  kt:    {ours}")  # fmt: skip
    assert not differences, "\n".join(differences)


def run_java_tool(tools: ToolSession, step: Step, bootstrap: str) -> tuple[int, str, str]:
    r = tools.run(step.tool, "--bootstrap-server", bootstrap, *step.args, input=step.input)
    return r.returncode, r.stdout, r.stderr


JAVA_STACK_LINE = re.compile(
    r"^(\tat .*|\t\.\.\. \d+ more|Caused by: .*|[a-z]+(\.[A-Za-z_$]+)+(Exception|Error)(: .*)?)$"
)


def _as_kt_prints(text: str) -> str:
    """Kafka's output as kt prints it: the documented differences applied, and no Java
    stack trace (ReassignPartitionsCommand prints one on stdout after `Error: ...`)."""
    for theirs, ours in KT_COMMAND_DIFFERENCES.items():
        text = text.replace(theirs, ours)
    lines = text.split("\n")
    kept = [line for line in lines if not JAVA_STACK_LINE.match(line)]
    return "\n".join(kept).rstrip("\n") if len(kept) < len(lines) else text


def _user_message(stderr: str) -> str:
    """What a tool tells its user on stderr: the first line, unless that is a log line (the
    Java tools log an exception's class and stack trace, which kt does not imitate)."""
    first = stderr.splitlines()[0] if stderr else ""
    return "" if re.match(r"(ERROR|WARN)\b", first) else first
