"""`kt console-producer` -> `kt console-consumer`, both through the `kt` executable.

Lines go in as kafka-console-producer.sh reads them (LineMessageReader:
`[h1:v1,h2:v2<TAB>][key<TAB>]value`) and come out as kafka-console-consumer.sh prints
them (DefaultMessageFormatter: timestamp, partition, offset, headers, key, value joined
by key.separator, ended by line.separator). Single-partition topics keep offsets known.
"""

from __future__ import annotations

import re
import time

import pytest

from tests.integration.conftest import kt_command, kt_error, kt_ok

pytestmark = pytest.mark.slow

PRINT_ALL = [
    "--property", "print.timestamp=true", "--property", "print.partition=true",
    "--property", "print.offset=true", "--property", "print.headers=true",
    "--property", "print.key=true",
]  # fmt: skip


def create(broker, topic: str) -> None:
    kt_ok("topics", "--bootstrap-server", broker.bootstrap, "--create", "--topic", topic,
          "--partitions", "1")  # fmt: skip


def produce(broker, topic: str, lines: list[str], *args: str) -> None:
    text = "".join(line + "\n" for line in lines)
    assert kt_ok("console-producer", "--bootstrap-server", broker.bootstrap, "--topic", topic,
                 *args, input=text) == []  # fmt: skip


def consume(broker, topic: str, *args: str) -> tuple[str, str]:
    """Run the consumer to --max-messages or --timeout-ms; return (stdout, stderr)."""
    result = kt_command(
        "console-consumer", "--bootstrap-server", broker.bootstrap, "--topic", topic, *args
    )
    assert result.returncode == 0, result.stderr
    return result.stdout, result.stderr


def test_round_trip_with_keys_and_headers(module_broker) -> None:
    create(module_broker, "console")
    before_ms = int(time.time() * 1000)
    produce(
        module_broker,
        "console",
        ["h1:v1,h2:v2|k1\tvalue one", "h3:|k2\tvalue two", "trace:abc|k3\tvalue\tthree"],
        "--property", "parse.key=true", "--property", "parse.headers=true",
        "--property", "headers.delimiter=|",
    )  # fmt: skip
    after_ms = int(time.time() * 1000)

    out, err = consume(
        module_broker, "console", "--from-beginning", "--max-messages", "3", *PRINT_ALL
    )
    assert err.splitlines()[-1] == "Processed a total of 3 messages"
    lines = out.splitlines()
    stamps = [int(m.group(1)) for m in (re.match(r"CreateTime:(\d+)\t", x) for x in lines) if m]
    assert len(stamps) == 3 and all(before_ms <= t <= after_ms for t in stamps), lines
    assert [line.split("\t", 1)[1] for line in lines] == [
        "Partition:0\tOffset:0\th1:v1,h2:v2\tk1\tvalue one",
        "Partition:0\tOffset:1\th3:\tk2\tvalue two",
        # Only the first key.separator splits: the value keeps its tab.
        "Partition:0\tOffset:2\ttrace:abc\tk3\tvalue\tthree",
    ]


def test_default_separators_parse_key_and_headers(module_broker) -> None:
    """Kafka's defaults are TAB for both headers.delimiter and key.separator: headers are
    split off first, then the key (LineMessageReader; its test
    testMinimalValidInputWithHeaderKeyAndValue feeds "headerKey0:headerValue0\\tkey0\\tvalue0")."""
    create(module_broker, "console-defaults")
    produce(
        module_broker, "console-defaults", ["h1:v1,h2:v2\tk1\tvalue one"],
        "--property", "parse.key=true", "--property", "parse.headers=true",
    )  # fmt: skip
    out, _ = consume(
        module_broker, "console-defaults", "--from-beginning", "--max-messages", "1",
        "--property", "print.headers=true", "--property", "print.key=true",
    )  # fmt: skip
    assert out == "h1:v1,h2:v2\tk1\tvalue one\n"


def test_print_properties_and_offsets(module_broker) -> None:
    create(module_broker, "console-print")
    produce(module_broker, "console-print", [f"k{i}:v{i}" for i in range(5)],
            "--property", "parse.key=true", "--property", "key.separator=:")  # fmt: skip

    out, _ = consume(
        module_broker, "console-print", "--partition", "0", "--offset", "2", "--max-messages",
        "3", "--property", "print.key=true", "--property", "print.value=false",
        "--property", "line.separator=;",
    )  # fmt: skip
    assert out == "k2;k3;k4;"

    # Values only (the default), ended by --timeout-ms once the partition is drained.
    out, err = consume(module_broker, "console-print", "--from-beginning", "--timeout-ms", "1500")
    assert out == "v0\nv1\nv2\nv3\nv4\n"
    assert err.splitlines()[-1] == "Processed a total of 5 messages"

    # Property values are taken as given, spaces included (CommandLineUtils.parseKeyValueArgs).
    out, _ = consume(
        module_broker, "console-print", "--from-beginning", "--max-messages", "2",
        "--property", "print.key=true", "--property", "print.offset=true",
        "--property", "print.headers=true", "--property", "key.separator= | ",
    )  # fmt: skip
    assert out == "Offset:0 | NO_HEADERS | k0 | v0\nOffset:1 | NO_HEADERS | k1 | v1\n"


def test_producer_line_errors(module_broker) -> None:
    create(module_broker, "console-errors")
    error = kt_error(
        "console-producer", "--bootstrap-server", module_broker.bootstrap,
        "--topic", "console-errors", "--property", "parse.key=true",
        input="k0\tv0\nno separator here\n",
    )  # fmt: skip
    # Kafka prints the KafkaException with its stack trace; kt one line with the message.
    assert error.endswith("No key separator found on line number 2: 'no separator here'")
    error = kt_error(
        "console-producer", "--bootstrap-server", module_broker.bootstrap,
        "--topic", "console-errors", "--property", "parse.headers=true",
        "--property", "headers.delimiter=|", input="novalue|v\n",
    )  # fmt: skip
    assert error.endswith("No header key separator found in pair 'novalue' on line number 1")


def test_a_refused_record_is_printed_and_the_tool_fails(module_broker) -> None:
    """Each record the broker refuses (here, after its retries: NOT_ENOUGH_REPLICAS, one
    replica where two must be in sync) prints its error on standard error, as the Java
    tool's ErrorLoggingCallback does; the tool exits 1."""
    kt_ok("topics", "--bootstrap-server", module_broker.bootstrap, "--create", "--topic",
          "console-refused", "--partitions", "1", "--config", "min.insync.replicas=2")  # fmt: skip
    result = kt_command(
        "console-producer", "--bootstrap-server", module_broker.bootstrap,
        "--topic", "console-refused", "--producer-property", "delivery.timeout.ms=1000",
        input="one\ntwo\n",
    )  # fmt: skip
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 2 and all(
        line.startswith("Error when sending message to topic console-refused: "
                        "NOT_ENOUGH_REPLICAS: ") for line in lines), lines  # fmt: skip


def test_read_committed_leaves_out_aborted_records(module_broker) -> None:
    """--isolation-level read_committed prints the committed transactions' records only,
    as Kafka's ConsoleConsumer does; read_uncommitted prints the aborted ones too."""
    from confluent_kafka import Producer

    create(module_broker, "transactional")
    producer = Producer({"bootstrap.servers": module_broker.bootstrap,
                         "transactional.id": "console-read-committed"})  # fmt: skip
    producer.init_transactions(30)
    for values, commit in ((["c1", "c2"], True), (["a1", "a2", "a3"], False), (["c3"], True),
                           (["a4"], False), (["c4"], True)):  # fmt: skip
        producer.begin_transaction()
        for value in values:
            producer.produce("transactional", value.encode())
        producer.flush(30)  # librdkafka drops what it has not sent when a transaction aborts
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    committed, _ = consume(module_broker, "transactional", "--from-beginning", "--isolation-level",
                           "read_committed", "--timeout-ms", "3000")  # fmt: skip
    assert committed.splitlines() == ["c1", "c2", "c3", "c4"]
    everything, _ = consume(module_broker, "transactional", "--from-beginning",
                            "--timeout-ms", "3000")  # fmt: skip
    assert everything.splitlines() == ["c1", "c2", "a1", "a2", "a3", "c3", "a4", "c4"]
