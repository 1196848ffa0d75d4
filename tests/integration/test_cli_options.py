"""Options of the Kafka tools that an operator reaches for, run as the `kt` executable:
the console producer's linger and its behaviour on a bad line, the console consumer's
--include and formatters, topics --topic-id, server-start --daemon and server-stop
--node-id."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kt.commands.server import server_node_ids
from tests.integration.conftest import kt_command, kt_ok

pytestmark = pytest.mark.slow


def create(broker, topic: str, partitions: int = 1) -> None:
    kt_ok("topics", "--bootstrap-server", broker.bootstrap, "--create", "--topic", topic,
          "--partitions", str(partitions))  # fmt: skip


def consume(broker, *args: str) -> subprocess.CompletedProcess:
    return kt_command("console-consumer", "--bootstrap-server", broker.bootstrap,
                      "--from-beginning", "--timeout-ms", "3000", *args)  # fmt: skip


def test_producer_sends_every_line_read_before_a_bad_one(module_broker) -> None:
    create(module_broker, "before-error")
    result = kt_command("console-producer", "--bootstrap-server", module_broker.bootstrap,
                        "--topic", "before-error", "--property", "parse.key=true",
                        input="k1\tv1\nk2\tv2\nno-key\nk3\tv3\n")  # fmt: skip
    assert result.returncode == 1
    assert result.stderr == "ERROR No key separator found on line number 3: 'no-key'\n"
    out = consume(module_broker, "--topic", "before-error", "--property", "print.key=true")
    assert out.stdout.splitlines() == ["k1\tv1", "k2\tv2"]


def lingering_producer(broker, topic: str, linger_ms: int) -> subprocess.Popen:
    """`kt console-producer` reading a pipe that stays open, with --timeout (linger.ms)."""
    create(broker, topic)
    return subprocess.Popen(
        [sys.executable, "-m", "kt", "console-producer", "--bootstrap-server",
         broker.bootstrap, "--topic", topic, "--timeout", str(linger_ms)],
        stdin=subprocess.PIPE, text=True,
    )  # fmt: skip


def test_producer_sends_after_linger_while_input_stays_open(module_broker) -> None:
    """A line typed at the terminal is sent after --timeout ms, not when input ends."""
    producer = lingering_producer(module_broker, "linger", 200)
    try:
        assert producer.stdin is not None
        producer.stdin.write("typed\n")
        producer.stdin.flush()
        deadline = time.monotonic() + 30
        seen: list[str] = []
        while not seen and time.monotonic() < deadline:
            out = consume(module_broker, "--topic", "linger")
            seen = out.stdout.splitlines()
        assert seen == ["typed"]
        assert producer.poll() is None  # still reading its input
    finally:
        producer.stdin.close()
        assert producer.wait(30) == 0


def test_linger_counts_from_the_first_unsent_line(module_broker) -> None:
    """linger.ms as the Java producer counts it: from a batch's first record. Lines that
    keep coming, a gap never as long as the linger, still go out every --timeout ms
    (kt once waited for a pause in the input as long as the linger)."""
    producer = lingering_producer(module_broker, "steady", 300)
    assert producer.stdin is not None
    stop = threading.Event()

    def type_steadily() -> None:  # a line every 50 ms until told to stop
        number = 0
        while not stop.is_set():
            producer.stdin.write(f"line-{number}\n")
            producer.stdin.flush()
            number += 1
            time.sleep(0.05)

    typist = threading.Thread(target=type_steadily)
    typist.start()
    try:
        seen: list[str] = []
        deadline = time.monotonic() + 20
        while not seen and time.monotonic() < deadline:
            seen = consume(module_broker, "--topic", "steady", "--max-messages", "1"
                           ).stdout.splitlines()  # fmt: skip
        assert seen == ["line-0"]
        assert typist.is_alive()  # sent while the lines were still coming
    finally:
        stop.set()
        typist.join()
        producer.stdin.close()
        assert producer.wait(30) == 0


def test_consumer_include_reads_every_matching_topic(module_broker) -> None:
    for topic in ("inc-a", "inc-b", "other"):
        create(module_broker, topic)
        kt_ok("console-producer", "--bootstrap-server", module_broker.bootstrap, "--topic",
              topic, input=f"{topic}-value\n")  # fmt: skip
    out = consume(module_broker, "--include", "inc-.*", "--max-messages", "2")
    assert sorted(out.stdout.splitlines()) == ["inc-a-value", "inc-b-value"]
    out = consume(module_broker, "--include", "inc-a, other", "--max-messages", "2")
    assert sorted(out.stdout.splitlines()) == ["inc-a-value", "other-value"]


def test_consumer_formatters(module_broker) -> None:
    create(module_broker, "formatted")
    kt_ok("console-producer", "--bootstrap-server", module_broker.bootstrap, "--topic",
          "formatted", "--property", "parse.key=true", input="k\tv\n")  # fmt: skip
    noop = consume(module_broker, "--topic", "formatted", "--max-messages", "1", "--formatter",
                   "org.apache.kafka.tools.consumer.NoOpMessageFormatter")  # fmt: skip
    assert (noop.returncode, noop.stdout) == (0, "")
    logged = consume(module_broker, "--topic", "formatted", "--max-messages", "1",
                     "--formatter", "org.apache.kafka.tools.consumer.LoggingMessageFormatter",
                     "--property", "print.key=true")  # fmt: skip
    assert logged.stdout == "k\tv\n"
    assert re.search(
        r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] INFO CreateTime:\d+, key:k, value:v "
        r"\(org\.apache\.kafka\.tools\.consumer\.LoggingMessageFormatter\)$",
        logged.stderr, re.M,
    ), logged.stderr  # fmt: skip
    deprecated = consume(module_broker, "--topic", "formatted", "--max-messages", "1",
                         "--formatter", "kafka.tools.DefaultMessageFormatter")  # fmt: skip
    assert deprecated.stdout == "v\n"
    assert deprecated.stderr.startswith(
        "WARNING: kafka.tools.DefaultMessageFormatter is deprecated and will be removed in the "
        "next major release. Please use org.apache.kafka.tools.consumer.DefaultMessageFormatter "
        "instead\n"
    )


def test_consumer_deserializers(module_broker) -> None:
    from confluent_kafka import Producer

    create(module_broker, "typed")
    producer = Producer({"bootstrap.servers": module_broker.bootstrap})
    producer.produce(
        "typed", key=(7).to_bytes(8, "big"), value=(-2).to_bytes(4, "big", signed=True)
    )
    producer.produce("typed", key=b"k", value=b"no")
    assert producer.flush(30) == 0
    out = consume(module_broker, "--topic", "typed", "--max-messages", "2",
                  "--key-deserializer", "org.apache.kafka.common.serialization.LongDeserializer",
                  "--value-deserializer", "IntegerDeserializer", "--property", "print.key=true",
                  "--skip-message-on-error")  # fmt: skip
    assert out.returncode == 0
    assert out.stdout.splitlines() == ["7\t-2"]
    assert "Error processing message, skipping this message: Size of data received by " \
        "LongDeserializer is not 8" in out.stderr  # fmt: skip


def test_topics_describe_by_topic_id(module_broker) -> None:
    create(module_broker, "by-id", 2)
    summary = kt_ok("topics", "--bootstrap-server", module_broker.bootstrap, "--describe",
                    "--topic", "by-id")[0]  # fmt: skip
    topic_id = re.search(r"TopicId: (\S+)", summary).group(1)
    lines = kt_ok("topics", "--bootstrap-server", module_broker.bootstrap, "--describe",
                  "--topic-id", topic_id)  # fmt: skip
    assert lines[0] == summary and len(lines) == 3


def _start_daemon(tmp_path: Path, node_id: int) -> tuple[int, str]:
    env = {**os.environ, "LOG_DIR": str(tmp_path / f"logs-{node_id}")}
    result = subprocess.run(
        [sys.executable, "-m", "kt", "server-start", "--daemon", "--override",
         f"node.id={node_id}", "--override", f"log.dirs={tmp_path / f'data-{node_id}'}",
         "--override", "listeners=PLAINTEXT://127.0.0.1:0"],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    first, ready = result.stdout.splitlines()
    match = re.fullmatch(r"kt server started in the background, PID (\d+), logging to (.*)", first)
    assert match and match.group(2) == f"{tmp_path}/logs-{node_id}/server.log"
    assert ready.startswith(f"[KafkaServer id={node_id}] started: PLAINTEXT://127.0.0.1:")
    assert ready in Path(match.group(2)).read_text()
    return int(match.group(1)), ready


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text()


def test_daemon_and_stop_by_node_id(tmp_path: Path) -> None:
    pids = {}
    try:
        for node_id in (41, 42):
            pids[node_id], _ = _start_daemon(tmp_path, node_id)
        assert all(_alive(pid) for pid in pids.values())
        stopped = kt_command("server-stop", "--node-id", "41")
        assert stopped.returncode == 0, stopped.stderr
        assert stopped.stdout == f"Stopping kt server PID {pids[41]}\n"
        assert not _alive(pids[41]) and _alive(pids[42])
        again = kt_command("server-stop", "--node-id", "41")
        assert (again.returncode, again.stderr) == (1, "No kt server with node id 41 to stop\n")
    finally:
        for pid in pids.values():
            if _alive(pid):
                os.kill(pid, signal.SIGTERM)


def test_stop_exactly_the_server_of_a_log_dir_or_properties_file(tmp_path: Path) -> None:
    """server-stop --log-dirs, or given the server's properties file, signals only the
    server whose PID file that log dir holds; a PID file naming another process (or no
    process) stops nothing."""
    pids = {}
    try:
        for node_id in (51, 52, 53):
            pids[node_id], _ = _start_daemon(tmp_path, node_id)
        by_dir = kt_command("server-stop", "--log-dirs", str(tmp_path / "data-51"))
        assert (by_dir.returncode, by_dir.stdout) == (0, f"Stopping kt server PID {pids[51]}\n")
        assert not _alive(pids[51]) and _alive(pids[52]) and _alive(pids[53])
        props = tmp_path / "server-52.properties"
        props.write_text(f"node.id=52\nlog.dirs={tmp_path / 'data-52'}\n")
        by_file = kt_command("server-stop", str(props))
        assert (by_file.returncode, by_file.stdout) == (0, f"Stopping kt server PID {pids[52]}\n")
        assert not _alive(pids[52]) and _alive(pids[53])
        again = kt_command("server-stop", "--log-dirs", str(tmp_path / "data-51"))
        assert (again.returncode, again.stderr) == (
            1, f"No kt server running with log dirs {tmp_path / 'data-51'}\n")  # fmt: skip
        (tmp_path / "data-51" / "kt-server.pid").write_text(f"{os.getpid()}\n")  # not kt's
        foreign = kt_command("server-stop", "--log-dirs", str(tmp_path / "data-51"))
        assert foreign.returncode == 1 and _alive(pids[53])
    finally:
        for pid in pids.values():
            if _alive(pid):
                os.kill(pid, signal.SIGTERM)


def test_configs_add_config_file(module_broker, tmp_path: Path) -> None:
    create(module_broker, "from-file")
    props = tmp_path / "topic.properties"
    props.write_text("retention.ms=3600000\ncleanup.policy=compact\n")
    assert kt_ok("configs", "--bootstrap-server", module_broker.bootstrap, "--alter",
                 "--topic", "from-file", "--add-config-file", str(props)) == [
        "Completed updating config for topic from-file."]  # fmt: skip
    lines = kt_ok("configs", "--bootstrap-server", module_broker.bootstrap, "--describe",
                  "--topic", "from-file")  # fmt: skip
    assert [line.split()[0] for line in lines[1:]] == [
        "cleanup.policy=compact", "retention.ms=3600000"]  # fmt: skip
    both = kt_command("configs", "--bootstrap-server", module_broker.bootstrap, "--alter",
                      "--topic", "from-file", "--add-config", "retention.ms=1",
                      "--add-config-file", str(props))  # fmt: skip
    assert both.returncode == 1
    assert both.stderr.splitlines()[0] == (
        "Only one of --add-config or --add-config-file must be specified"
    )


def test_configs_client_quotas(module_broker) -> None:
    """kafka-configs' quota entities through DescribeClientQuotas/AlterClientQuotas; the
    same steps are checked against Kafka 3.9 in tests/oracle/test_tools.py."""
    from kt.client.admin import AdminClient
    from kt.client.client import KafkaClient

    b = ["--bootstrap-server", module_broker.bootstrap]
    kt_ok("configs", *b, "--alter", "--client", "q1", "--add-config",
          "producer_byte_rate=1024,request_percentage=50")  # fmt: skip
    kt_ok("configs", *b, "--alter", "--user", "bob", "--client", "q1", "--add-config",
          "consumer_byte_rate=2048")  # fmt: skip
    kt_ok("configs", *b, "--alter", "--user-defaults", "--add-config",
          "producer_byte_rate=10000000")  # fmt: skip
    assert kt_ok("configs", *b, "--describe", "--client", "q1") == [
        "Quota configs for client-id 'q1' are request_percentage=50.0, producer_byte_rate=1024.0"
    ]
    assert kt_ok("configs", *b, "--describe", "--user", "bob", "--client", "q1") == [
        "Quota configs for user-principal 'bob', client-id 'q1' are consumer_byte_rate=2048.0"
    ]
    assert kt_ok("configs", *b, "--describe", "--user-defaults") == [
        "Quota configs for the default user-principal are producer_byte_rate=1.0E7"
    ]
    client = KafkaClient(module_broker.bootstrap)
    try:
        admin = AdminClient(client)
        # Not strict: every entity with a client id, alone or with a user.
        loose = admin.describe_client_quotas([("client-id", None)], strict=False)
        assert set(loose) == {(("client-id", "q1"),), (("user", "bob"), ("client-id", "q1"))}
        assert admin.describe_client_quotas([("client-id", None)], strict=True) == {
            (("client-id", "q1"),): {"request_percentage": 50.0, "producer_byte_rate": 1024.0}
        }
    finally:
        client.close()
    kt_ok("configs", *b, "--alter", "--client", "q1", "--delete-config", "producer_byte_rate")
    assert kt_ok("configs", *b, "--describe", "--client", "q1") == [
        "Quota configs for client-id 'q1' are request_percentage=50.0"
    ]
    refused = kt_command("configs", *b, "--alter", "--client", "q1", "--add-config",
                         "producer_byte_rate=1.5")  # fmt: skip
    assert refused.returncode == 1
    assert refused.stderr.splitlines()[-1] == (
        "Configuration producer_byte_rate must be a LONG value"
    )


def test_client_config_files_are_read_as_iso_8859_1(module_broker, tmp_path: Path) -> None:
    """Java's Properties.load reads a file as ISO-8859-1: a byte that is not UTF-8 is a
    character, not an error (kt's tools once failed with UnicodeDecodeError)."""
    create(module_broker, "latin-1")
    config = tmp_path / "client.properties"
    config.write_bytes(b"# caf\xe9\nclient.id=caf\xe9\n")
    listed = kt_ok("topics", "--bootstrap-server", module_broker.bootstrap, "--list",
                   "--command-config", str(config))  # fmt: skip
    assert "latin-1" in listed


def test_console_consumer_creates_a_missing_topic(module_broker) -> None:
    """The Java consumer asks for its topics with allow.auto.create.topics (on by default):
    the broker creates a missing one, and the consumer waits for records as on any other;
    with the setting off it is an error."""
    out = consume(module_broker, "--topic", "made-by-consumer", "--timeout-ms", "500")
    assert (out.returncode, out.stderr) == (0, "Processed a total of 0 messages\n")
    listed = kt_ok("topics", "--bootstrap-server", module_broker.bootstrap, "--list")
    assert "made-by-consumer" in listed
    off = consume(module_broker, "--topic", "never-made", "--consumer-property",
                  "allow.auto.create.topics=false")  # fmt: skip
    assert (off.returncode, off.stderr.splitlines()[0]) == (1, "ERROR Topic never-made not found")


def test_a_process_no_longer_a_server_when_server_stop_looks_is_passed_over() -> None:
    """server-stop lists the `kt server-start` processes, then reads each one's node id;
    one that exited meanwhile and whose PID another program took (or a forked child that
    went on to run something else) is no server: it made server-stop fail with
    "ValueError: 'server-start' is not in list" (seen in a full run). This test's own
    process stands for it."""
    assert server_node_ids(os.getpid()) == set()
