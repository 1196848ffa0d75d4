"""Share groups (KIP-932) on Kafka 4.4 and on kt, side by side."""

from __future__ import annotations

import queue
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

from confluent_kafka import Producer

from kt.reference_kafka import KAFKA4_VERSION, _tool_log4j, java_command, run_tool, tool_command
from tests.oracle.conftest import dump_group_partition
from tests.share.test_share_consumers import (
    SHARE,
    classic_requests_on_a_share_group,
    consume,
    consumer,
    end_offset,
    produce,
    ready,
    set_group_configs,
    topic_with,
)

# Kafka 4.4 serves share groups by default; its members heartbeat quickly here, as kt's.
KAFKA4_SHARE = {
    "group.share.heartbeat.interval.ms": "500",
    "group.share.min.heartbeat.interval.ms": "500",
}


def test_classic_group_apis_answer_a_share_group_as_kafka4(kafka_factory, broker_factory) -> None:
    """DescribeGroups, OffsetCommit, OffsetDelete and DeleteGroups on a share group with a
    member: Kafka 4.4's answers are kt's."""
    kafka = kafka_factory(version=KAFKA4_VERSION, overrides=KAFKA4_SHARE)
    theirs = classic_requests_on_a_share_group(kafka.bootstrap)
    assert theirs["DeleteGroups"] == [68]  # NON_EMPTY_GROUP: the member was there
    assert classic_requests_on_a_share_group(broker_factory(**SHARE).bootstrap) == theirs


def test_kafka4s_console_share_consumer_reads_every_record_from_kt(broker_factory) -> None:
    """Kafka 4.4's ConsoleShareConsumer (the Java KafkaShareConsumer) joins a share group
    on kt and prints each record once; kafka-share-groups lists the group."""
    kt = broker_factory(**SHARE)
    topic = topic_with(kt.bootstrap, 0)
    console = subprocess.Popen(tool_command(
        "kafka-console-share-consumer", "--bootstrap-server", kt.bootstrap, "--topic", topic,
        "--group", "console", version=KAFKA4_VERSION,
    ), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)  # fmt: skip
    printed: queue.Queue[int] = queue.Queue()
    threading.Thread(target=lambda: [printed.put(int(line)) for line in console.stdout],
                     daemon=True).start()  # fmt: skip
    try:
        # A share partition starts at the log end when first fetched: warm-up records (-1)
        # until the member prints one.
        producer = Producer({"bootstrap.servers": kt.bootstrap})
        deadline = time.monotonic() + 90
        while printed.empty():
            assert time.monotonic() < deadline, "the Java share consumer printed nothing"
            producer.produce(topic, b"-1")
            producer.flush(10)
            time.sleep(0.5)
        produce(kt.bootstrap, topic, range(50))
        values = []
        while len(values) < 50:
            value = printed.get(timeout=60)
            if value >= 0:
                values.append(value)
    finally:
        console.terminate()
        console.wait(30)
    assert sorted(values) == list(range(50))
    listed = run_tool("kafka-share-groups", "--bootstrap-server", kt.bootstrap, "--list",
                      version=KAFKA4_VERSION)  # fmt: skip
    assert listed.stdout.split() == ["console"], listed.stderr


def share_groups(bootstrap: str, topic: str, *options: str) -> list[list[str]]:
    """kafka-share-groups' output: its rows, split, the topic's name as <topic> and the
    coordinator's address and id masked."""
    result = run_tool("kafka-share-groups", "--bootstrap-server", bootstrap, *options,
                      version=KAFKA4_VERSION)  # fmt: skip
    assert result.returncode == 0, result.stderr
    text = result.stdout.replace(topic, "<topic>").replace(bootstrap, "<coordinator>")
    text = re.sub(r"\(\d+\)", "(<id>)", text)  # the coordinator's broker id
    return [line.split() for line in text.splitlines() if line.strip()]


def described(bootstrap: str, topic: str, *options: str) -> list[list[str]]:
    """kafka-share-groups --describe of group "described"."""
    return share_groups(bootstrap, topic, "--describe", "--group", "described", *options)


def share_group_scenario(bootstrap: str) -> tuple[list[int], dict[str, list[list[str]]]]:
    """A member reads and accepts ten records, leaves; five more are produced. Then
    kafka-share-groups describes the group's offsets (start offset, lag), its state (the
    group and assignment epochs of the initialization) and, verbose, the leader epochs;
    then resets its offsets to the earliest and describes them, deletes them and describes
    none, deletes the group (with its share partitions' state) and lists the groups.
    Returns how far each table's start offset is behind the log end, and the tables
    without it: Kafka persists a share partition's start offset as it was before the
    acknowledgements it writes moved it (SharePartition writes the state, then advances),
    so its START-OFFSET may trail kt's; the lag, which counts what was delivered past it,
    is the same."""
    topic = topic_with(bootstrap, 0)
    member = consumer(bootstrap, "described", topic, explicit=True)
    try:
        ready(bootstrap, "described", topic, [member], explicit=True)
        produce(bootstrap, topic, range(10))
        assert len(consume(member, 10)) == 10
    finally:
        member.close()
    produce(bootstrap, topic, range(5))
    tables = {"offsets": described(bootstrap, topic),
              "verbose": described(bootstrap, topic, "--verbose"),
              "state": described(bootstrap, topic, "--state", "--verbose")}  # fmt: skip
    log_end = end_offset(bootstrap, topic)
    group = ("--group", "described")
    tables["reset"] = share_groups(bootstrap, topic, "--reset-offsets", *group, "--topic", topic,
                                   "--to-earliest", "--execute")  # fmt: skip
    tables["reset offsets"] = described(bootstrap, topic)
    assert tables["reset offsets"][1][-1] == str(log_end)  # every record to read again
    tables["reset offsets"][1][-1] = "<log end>"
    tables["delete offsets"] = share_groups(bootstrap, topic, "--delete-offsets", *group,
                                            "--topic", topic)  # fmt: skip
    tables["deleted offsets"] = described(bootstrap, topic)
    tables["delete"] = share_groups(bootstrap, topic, "--delete", *group)
    tables["list"] = share_groups(bootstrap, topic, "--list")
    behind = []
    for name, start_column in (("offsets", 3), ("verbose", 4)):
        header, row = tables[name]
        assert header[start_column] == "START-OFFSET"
        behind.append(log_end - int(row.pop(start_column)))
        del header[start_column]
    return behind, tables


def test_kafka_share_groups_describes_the_same_on_kafka4_and_kt(kafka_factory, broker_factory):
    kafka = kafka_factory(version=KAFKA4_VERSION, overrides=KAFKA4_SHARE)
    behind, theirs = share_group_scenario(kafka.bootstrap)
    assert all(b >= 5 for b in behind)
    assert theirs["offsets"][1] == ["described", "<topic>", "0", "5"]  # the lag
    assert theirs["state"][1][-4:] == ["Empty", "4", "4", "0"]  # joined, initialized, left
    assert theirs["reset offsets"][1] == ["described", "<topic>", "0", "0", "<log end>"]
    assert theirs["deleted offsets"] == [["Share", "group", "'described'", "has", "no", "offset",
                                          "information."]]  # fmt: skip
    assert theirs["list"] == []  # deleted
    kt = broker_factory(**SHARE)
    behind, ours = share_group_scenario(kt.bootstrap)
    assert behind == [5, 5]  # every accepted record is behind kt's start offset
    assert ours == theirs
    kafka_dump, kt_dump = dump_group_partition(kt.log_dir, "described")
    assert '"type":"15"' in kafka_dump and "Unknown record type" not in kafka_dump
    assert kt_dump == kafka_dump


def twin_tools(bootstrap: str, theirs_group: str, ours_group: str, *args: str) -> None:
    """Kafka 4.4's kafka-share-groups on `theirs_group` and `kt share-groups` on
    `ours_group` (in the same state) print the same, the group's name aside; kt exits 1
    where Kafka's tool prints an error and exits 0."""

    def command(tool: list[str], group: str) -> tuple[int, str, str]:
        argv = [a.replace("<group>", group) for a in args]
        run = subprocess.run([*tool, "--bootstrap-server", bootstrap, *argv],
                             capture_output=True, text=True, timeout=120)  # fmt: skip
        last = run.stderr.strip().splitlines()[-1:]
        if last and (last[0].startswith("[") or "\tat " in run.stderr):
            last = []  # Java's log lines and stack traces
        return run.returncode, run.stdout.replace(group, "<group>"), "".join(last)

    kafka = command(tool_command("kafka-share-groups", version=KAFKA4_VERSION), theirs_group)
    kt = command([sys.executable, "-m", "kt", "share-groups"], ours_group)
    failed = "Error:" in kafka[1] or kafka[0] != 0
    assert (kt[1], kt[2].replace(ours_group, "<group>")) == (
        kafka[1], kafka[2].replace(theirs_group, "<group>")), args  # fmt: skip
    assert kt[0] == (1 if failed else 0), (args, kt)


def alter(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    from tests.share.test_share_group_admin import alter_offsets

    assert alter_offsets(bootstrap, group, topic, offsets).error_code == 0


def test_kt_share_groups_prints_what_kafka4s_tool_prints(broker_factory) -> None:
    """`kt share-groups` beside Kafka 4.4's kafka-share-groups, on one kt broker: a group
    with a member (list, describe offsets, members and state, the refusals of an active
    group), then twin empty groups set to the same offsets, one per tool (resets of each
    kind, dry run and executed, CSV export, deleting offsets and groups)."""
    kt = broker_factory(**SHARE)
    bootstrap = kt.bootstrap
    topic = topic_with(bootstrap, 10, partitions=2)
    member = consumer(bootstrap, "live", topic, explicit=True)
    try:
        ready(bootstrap, "live", topic, [member], explicit=True)
        for args in (
            ["--list"], ["--list", "--state"], ["--list", "--state", "stable"],
            ["--describe", "--group", "<group>"], ["--describe", "--group", "<group>", "--verbose"],
            ["--describe", "--group", "<group>", "--members"],
            ["--describe", "--group", "<group>", "--members", "--verbose"],
            ["--describe", "--group", "<group>", "--state"],
            ["--describe", "--group", "<group>", "--state", "--verbose"],
            ["--reset-offsets", "--group", "<group>", "--topic", topic, "--to-earliest",
             "--execute"],
            ["--delete", "--group", "<group>"],
            ["--delete-offsets", "--group", "<group>", "--topic", topic],
        ):  # fmt: skip
            twin_tools(bootstrap, "live", "live", *args)
        twin_tools(bootstrap, "missing", "missing", "--describe", "--group", "<group>")
    finally:
        member.close()
    for group in ("twin-a", "twin-b"):  # names of one length: the same padding
        alter(bootstrap, group, topic, {0: 3, 1: 0})
    for args in (
        ["--describe", "--group", "<group>", "--verbose"],
        ["--describe", "--group", "<group>", "--state"],
        ["--reset-offsets", "--group", "<group>", "--topic", topic, "--to-earliest", "--dry-run"],
        ["--reset-offsets", "--group", "<group>", "--all-topics", "--to-latest", "--execute"],
        ["--describe", "--group", "<group>"],
        ["--reset-offsets", "--group", "<group>", "--topic", f"{topic}:1", "--to-offset", "2",
         "--execute"],
        ["--reset-offsets", "--group", "<group>", "--all-topics", "--to-current", "--dry-run",
         "--export"],
        ["--delete-offsets", "--group", "<group>", "--topic", topic, "--topic", "no-such-topic"],
        ["--describe", "--group", "<group>"],
        ["--delete", "--group", "<group>", "--group", "missing"],
        ["--describe", "--group", "<group>", "--members"],
    ):  # fmt: skip
        twin_tools(bootstrap, "twin-a", "twin-b", *args)


def test_kafka4_configs_sets_and_refuses_share_group_configs_as_on_kafka4(
    kafka_factory, broker_factory
) -> None:
    """A share group's configs (share.*) through kafka-configs: Kafka 4.4's tool sets,
    refuses (its messages, the broker's bounds) and describes the same against both."""
    from tests.oracle.test_kafka4_consumer_groups import configs

    runs = (
        ("--alter", "--add-config", "share.auto.offset.reset=earliest"),
        ("--alter", "--add-config", "share.auto.offset.reset=none"),
        ("--alter", "--add-config", "share.isolation.level=read_committed"),
        ("--alter", "--add-config", "share.isolation.level=serializable"),
        ("--alter", "--add-config", "share.record.lock.duration.ms=1000"),
        ("--alter", "--add-config", "share.delivery.count.limit=11"),
        ("--alter", "--add-config", "share.delivery.count.limit=3"),
        ("--alter", "--add-config", "share.heartbeat.interval.ms=50000"),
        ("--alter", "--add-config", "share.session.timeout.ms=50000"),
        ("--describe",),
        ("--alter", "--delete-config", "share.delivery.count.limit"),
        ("--describe",),
        ("--alter", "--add-config", "share.renew.acknowledge.enable=false"),
        ("--alter", "--add-config", "share.renew.acknowledge.enable=maybe"),
        ("--describe",),
    )
    kafka = kafka_factory(version=KAFKA4_VERSION, overrides=KAFKA4_SHARE)
    theirs = [configs(kafka.bootstrap, *args) for args in runs]
    # the same broker settings as Kafka's (its synonyms show them)
    kt = broker_factory(**KAFKA4_SHARE)
    ours = [configs(kt.bootstrap, *args) for args in runs]
    assert "share.delivery.count.limit=3" in theirs[9][1]
    assert "must be in the range 15000 to 60000 inclusive" in theirs[4][2]
    assert ours == theirs
    # `kt configs` on a group, beside kafka-configs, on a fresh group of each broker
    kt_runs = [runs[0], runs[6], runs[9], runs[10], runs[11]]
    for broker in (kafka, kt):
        for args in kt_runs:
            theirs_ = run_tool("kafka-configs", "--bootstrap-server", broker.bootstrap,
                               "--entity-type", "groups", "--entity-name", "kt-app", *args,
                               version=KAFKA4_VERSION)  # fmt: skip
            ours_ = subprocess.run([sys.executable, "-m", "kt", "configs", "--bootstrap-server",
                                    broker.bootstrap, "--entity-type", "groups",
                                    "--entity-name", "kt-app", *args],
                                   capture_output=True, text=True, timeout=60)  # fmt: skip
            assert (ours_.returncode, ours_.stdout) == (theirs_.returncode, theirs_.stdout), args


def test_kt_console_share_consumer_prints_what_kafka4s_prints(broker_factory) -> None:
    """`kt console-share-consumer` beside Kafka 4.4's kafka-console-share-consumer (the Java
    KafkaShareConsumer), each in its own share group reading the same topic from its start:
    the same records with their delivery counts; released ones come back counted twice;
    at the end every record is acknowledged in both groups."""
    from tests.share.test_share_group_admin import (
        describe_offsets,
        offsets_of,
        set_group_configs,
    )

    kt = broker_factory(**SHARE)
    topic = topic_with(kt.bootstrap, 20, partitions=2)
    for group in ("twin-a", "twin-b"):
        set_group_configs(kt.bootstrap, group, share_auto_offset_reset="earliest")
    args = ["--bootstrap-server", kt.bootstrap, "--topic", topic, "--max-messages", "20",
            "--formatter-property", "print.delivery=true", "--formatter-property",
            "print.partition=true", "--formatter-property", "print.offset=true"]  # fmt: skip

    def both(*extra: str) -> list[list[str]]:
        outputs = []
        for tool, group in ((tool_command("kafka-console-share-consumer",
                                          version=KAFKA4_VERSION), "twin-a"),
                            ([sys.executable, "-m", "kt", "console-share-consumer"],
                             "twin-b")):  # fmt: skip
            run = subprocess.run([*tool, *args, "--group", group, *extra], capture_output=True,
                                 text=True, timeout=120)  # fmt: skip
            assert run.returncode == 0, run.stderr
            assert "Processed a total of 20 messages" in run.stderr
            outputs.append(sorted(run.stdout.splitlines()))
        return outputs

    theirs, ours = both("--release")
    assert ours == theirs and all("Delivery:1" in line for line in theirs)
    theirs, ours = both()
    assert ours == theirs and all("Delivery:2" in line for line in theirs)
    assert len(theirs) == 20
    assert (
        offsets_of(describe_offsets(kt.bootstrap, "twin-b", None))
        == offsets_of(describe_offsets(kt.bootstrap, "twin-a", None))
        == {  # fmt: skip
            (topic, 0): (10, 0, 0, 0),
            (topic, 1): (10, 0, 0, 0),
        }
    )


def renewing_member(bootstrap: str, hold_ms: int) -> list[str]:
    """Kafka 4.4's KafkaShareConsumer (interop/ShareRenewMember.java) holding five records
    for `hold_ms` by renewing their locks, then accepting them: what it printed."""
    topic, group = topic_with(bootstrap, 5), "renewing"
    set_group_configs(bootstrap, group, share_auto_offset_reset="earliest")
    source = Path(__file__).resolve().parents[2] / "interop" / "ShareRenewMember.java"
    command = java_command(str(source), ["-Xmx256m"], _tool_log4j(KAFKA4_VERSION),
                           version=KAFKA4_VERSION)  # fmt: skip
    member = subprocess.run([*command, bootstrap, topic, group, "5", str(hold_ms)],
                            capture_output=True, text=True, timeout=240)  # fmt: skip
    assert member.returncode == 0, member.stderr[-3000:]
    return member.stdout.splitlines()


def test_kafka4s_share_consumer_renews_its_locks_on_kt_as_on_kafka4(
    kafka_factory, broker_factory
) -> None:
    """Kafka 4.4's KafkaShareConsumer renews the locks of five records (2 s each) for 6 s,
    then accepts them: against Kafka 4.4 and kt alike, every record is handed to it once
    (delivery count 1, never released), no commit fails, all five are accepted."""
    locks = {"group.share.record.lock.duration.ms": "2000",
             "group.share.min.record.lock.duration.ms": "1000"}  # fmt: skip
    kafka = kafka_factory(version=KAFKA4_VERSION, overrides={**KAFKA4_SHARE, **locks})
    kt = broker_factory(**{**SHARE, **locks})
    for printed in (renewing_member(kafka.bootstrap, 6000), renewing_member(kt.bootstrap, 6000)):
        got = {tuple(line.split()[1:]) for line in printed if line.startswith("got ")}
        assert got == {(str(offset), "1") for offset in range(5)}, printed
        assert not [line for line in printed if line.startswith("error ")], printed
        held, accepted = printed[-2].split()[1::2]
        assert int(held) >= 6000 and accepted == "5" and printed[-1] == "closed", printed
