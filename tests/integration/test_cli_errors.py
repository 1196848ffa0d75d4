"""Every `kt` subcommand over a table of bad inputs: exit 1, Kafka's words, no traceback.

Two kinds of failure, as Kafka's tools have them (CommandLineUtils):
- a usage error prints joptsimple's or the tool's message, then the command's help, all on
  stderr;
- any other failure prints its message and nothing else (Kafka adds a stack trace, kt
  does not). Where the Kafka tool prints a fixed line of its own besides the message
  (console-consumer's "Processed a total of N messages", kafka-configs' "Error while
  executing config command with args ..."), the table names that line too.

The messages are the Kafka 3.9 tools' own, checked against them (tests/oracle); where kt
goes further than Kafka (it exits 1 where the Java tool exits 0 or hangs), the case says so.
"""

from __future__ import annotations

import random
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from confluent_kafka import Consumer

from tests.integration.conftest import kt_command, kt_ok

pytestmark = pytest.mark.slow

B = "{bootstrap}"  # replaced by the module broker's address
DIR = "{dir}"  # replaced by a directory of bad files
NO_CA = "ssl.truststore.location=/nonexistent/ca.pem: No such file or directory"
NO_JAAS = "security.protocol=SASL_SSL: sasl.jaas.config must name the client's identity"


@dataclass
class Case:
    name: str
    args: list[str]
    stderr: list[str] = field(default_factory=list)  # the exact lines, or a usage error's first
    stdout: list[str] | None = None  # the exact lines, when the tool prints its error there
    usage: bool = False  # a usage error: the message, then the command's help
    stdin: str | None = None

    def __str__(self) -> str:
        return self.name


PROCESSED_0 = "Processed a total of 0 messages"
PERF_HEADER = (
    "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, "
    "nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
)
CASES = [
    # -- topics ------------------------------------------------------------------------
    Case("topics-describe-regex", ["topics", "--bootstrap-server", B, "--describe",
         "--topic", "a(b"], stdout=["Error while executing topic command : a(b is an invalid "
         "regex."]),
    Case("topics-list-regex", ["topics", "--bootstrap-server", B, "--list", "--topic", "a[b"],
         stdout=["Error while executing topic command : a[b is an invalid regex."]),
    Case("topics-delete-regex", ["topics", "--bootstrap-server", B, "--delete", "--topic",
         "*"], stdout=["Error while executing topic command : * is an invalid regex."]),
    Case("topics-alter-replication-factor", ["topics", "--bootstrap-server", B, "--alter",
         "--topic", "cli-errors", "--partitions", "2", "--replication-factor", "2"],
         ['Option "[replication-factor]" can\'t be used with option "[alter]"'], usage=True),
    Case("topics-alter-without-partitions", ["topics", "--bootstrap-server", B, "--alter",
         "--topic", "cli-errors"], ['Missing required argument "[partitions]"'], usage=True),
    Case("topics-unknown-option", ["topics", "--bootstrap-server", B, "--list", "--bogus"],
         ["bogus is not a recognized option"], usage=True),
    Case("topics-bad-number", ["topics", "--bootstrap-server", B, "--create", "--topic", "x",
         "--partitions", "abc"], ["Cannot parse argument 'abc' of option partitions"],
         usage=True),
    Case("topics-no-bootstrap", ["topics", "--list"],
         ['Missing required argument "[bootstrap-server]"'], usage=True),
    Case("topics-missing-value", ["topics", "--bootstrap-server", B, "--describe", "--topic"],
         ["Option topic requires an argument"], usage=True),
    Case("topics-no-action", ["topics", "--bootstrap-server", B], ["Command must include "
         "exactly one action: --list, --describe, --create, --alter or --delete"], usage=True),
    Case("topics-unknown-topic-id", ["topics", "--bootstrap-server", B, "--describe",
         "--topic-id", "AAAAAAAAAAAAAAAAAAAAAQ"], stdout=["Error while executing topic "
         "command : TopicId 'AAAAAAAAAAAAAAAAAAAAAQ' does not exist as expected"]),
    # -- what kt's clients cannot do yet, refused rather than connected without ----------
    Case("topics-ssl-command-config", ["topics", "--bootstrap-server", B, "--list",
         "--command-config", f"{DIR}/ssl.properties"],
         [NO_CA]),
    Case("configs-sasl-command-config", ["configs", "--bootstrap-server", B, "--describe",
         "--entity-type", "topics", "--command-config", f"{DIR}/sasl.properties"],
         [NO_JAAS]),
    Case("producer-ssl-property", ["console-producer", "--bootstrap-server", B, "--topic",
         "cli-errors", "--producer-property", "security.protocol=SSL", "--producer-property",
         "ssl.truststore.type=PEM", "--producer-property",
         "ssl.truststore.location=/nonexistent/ca.pem"], [NO_CA], stdin="v\n"),
    Case("producer-transactional-id", ["console-producer", "--bootstrap-server", B, "--topic",
         "cli-errors", "--producer-property", "transactional.id=tx"],
         ["transactional.id=tx: kt does not support transactions in this tool yet"], stdin="v\n"),
    Case("consumer-sasl-config", ["console-consumer", "--bootstrap-server", B, "--topic",
         "cli-errors", "--consumer.config", f"{DIR}/sasl.properties"],
         [NO_JAAS]),
    Case("groups-ssl-command-config", ["consumer-groups", "--bootstrap-server", B, "--list",
         "--command-config", f"{DIR}/ssl.properties"],
         [NO_CA]),
    Case("producer-perf-ssl", ["producer-perf-test", "--topic", "cli-errors", "--num-records",
         "1", "--record-size", "1", "--throughput", "-1", "--producer-props",
         f"bootstrap.servers={B}", "security.protocol=SSL", "ssl.truststore.type=PEM",
         "ssl.truststore.location=/nonexistent/ca.pem"], [NO_CA]),
    Case("consumer-perf-sasl", ["consumer-perf-test", "--bootstrap-server", B, "--topic",
         "cli-errors", "--messages", "1", "--consumer.config", f"{DIR}/sasl.properties"],
         [NO_JAAS]),
    Case("leader-election-ssl", ["leader-election", "--bootstrap-server", B,
         "--election-type", "preferred", "--all-topic-partitions", "--admin.config",
         f"{DIR}/ssl.properties"], [NO_CA]),
    # -- console-producer --------------------------------------------------------------
    Case("producer-empty-key-separator", ["console-producer", "--bootstrap-server", B,
         "--topic", "cli-errors", "--property", "parse.key=true", "--property",
         "key.separator="], ["key.separator may not be empty"], stdin="k\tv\n"),
    Case("producer-bad-acks", ["console-producer", "--bootstrap-server", B, "--topic",
         "cli-errors", "--producer.config", f"{DIR}/acks.properties"],
         ["Invalid value 7 for configuration acks: String must be one of: all, -1, 0, 1"],
         stdin="v\n"),
    Case("producer-idempotence-without-acks-all", ["console-producer", "--bootstrap-server",
         B, "--topic", "cli-errors", "--request-required-acks", "1", "--producer-property",
         "enable.idempotence=true"], ["Must set acks to all in order to use the idempotent "
         "producer. Otherwise we cannot guarantee idempotence."], stdin="v\n"),
    Case("producer-bad-codec", ["console-producer", "--bootstrap-server", B, "--topic",
         "cli-errors", "--compression-codec", "bogus"], ["Invalid value bogus for "
         "configuration compression.type: String must be one of: none, gzip, snappy, lz4, "
         "zstd"], stdin="v\n"),
    Case("producer-no-topic", ["console-producer", "--bootstrap-server", B],
         ['Missing required argument "[topic]"'], usage=True),
    Case("producer-unparsable-line", ["console-producer", "--bootstrap-server", B, "--topic",
         "cli-errors", "--property", "parse.key=true"],
         ["ERROR No key separator found on line number 1: 'no-key'"], stdin="no-key\n"),
    # -- console-consumer --------------------------------------------------------------
    Case("consumer-missing-partition", ["console-consumer", "--bootstrap-server", B,
         "--topic", "cli-errors", "--partition", "5", "--timeout-ms", "1000"],
         ["ERROR Partition cli-errors-5 does not exist: topic cli-errors has 1 partition(s)",
          PROCESSED_0]),
    Case("consumer-negative-partition", ["console-consumer", "--bootstrap-server", B,
         "--topic", "cli-errors", "--partition", "-1", "--timeout-ms", "1000"],
         ["ERROR Partition cli-errors--1 does not exist: topic cli-errors has 1 partition(s)",
          PROCESSED_0]),
    Case("consumer-beginning-and-offset", ["console-consumer", "--bootstrap-server", B,
         "--topic", "cli-errors", "--partition", "0", "--offset", "1", "--from-beginning"],
         ["Options from-beginning and offset cannot be specified together."], usage=True),
    Case("consumer-topic-and-include", ["console-consumer", "--bootstrap-server", B,
         "--topic", "cli-errors", "--include", "cli.*"],
         ["Exactly one of --include/--topic is required. "], usage=True),
    Case("consumer-include-regex", ["console-consumer", "--bootstrap-server", B,
         "--include", "a(b"], ["a(b is an invalid regex."], usage=True),
    Case("consumer-offset-without-partition", ["console-consumer", "--bootstrap-server", B,
         "--topic", "cli-errors", "--offset", "3"],
         ["The partition is required when offset is specified."], usage=True),
    Case("consumer-bad-offset", ["console-consumer", "--bootstrap-server", B, "--topic",
         "cli-errors", "--partition", "0", "--offset", "-4"], ["The provided offset value "
         "'-4' is incorrect. Valid values are 'earliest', 'latest', or a non-negative long."],
         usage=True),
    Case("consumer-unknown-formatter", ["console-consumer", "--bootstrap-server", B,
         "--topic", "cli-errors", "--formatter", "com.example.Fancy"],
         ["Unknown message formatter com.example.Fancy: kt has "
          "org.apache.kafka.tools.consumer.DefaultMessageFormatter, "
          "org.apache.kafka.tools.consumer.LoggingMessageFormatter, "
          "org.apache.kafka.tools.consumer.NoOpMessageFormatter"], usage=True),
    Case("consumer-undecodable-value", ["console-consumer", "--bootstrap-server", B,
         "--topic", "cli-errors", "--from-beginning", "--max-messages", "1",
         "--value-deserializer", "org.apache.kafka.common.serialization.LongDeserializer"],
         ["ERROR Unknown error when running consumer: Size of data received by "
          "LongDeserializer is not 8", "Processed a total of 1 messages"]),
    # -- get-offsets, delete-records ---------------------------------------------------
    Case("get-offsets-regex", ["get-offsets", "--bootstrap-server", B, "--topic", "a(b"],
         ["Error occurred: a(b is an invalid regex."]),
    Case("get-offsets-missing-topic", ["get-offsets", "--bootstrap-server", B, "--topic",
         "no-such-topic"],
         ["Error occurred: Could not match any topic-partitions with the specified filters"]),
    Case("get-offsets-missing-partition", ["get-offsets", "--bootstrap-server", B, "--topic",
         "cli-errors", "--partitions", "7"],
         ["Error occurred: Could not match any topic-partitions with the specified filters"]),
    Case("delete-records-beyond-end", ["delete-records", "--bootstrap-server", B,
         "--offset-json-file", f"{DIR}/delete.json"], [],
         stdout=["Executing records delete operation", "Records delete operation completed:",
                 "partition: cli-errors-0\terror: The requested offset is not within the "
                 "range of offsets maintained by the server."]),  # Kafka's tool exits 0
    # -- consumer-groups ---------------------------------------------------------------
    Case("groups-describe-missing", ["consumer-groups", "--bootstrap-server", B,
         "--describe", "--group", "no-such-group"],
         stdout=["", "Error: Consumer group 'no-such-group' does not exist."]),  # Kafka: 0
    Case("groups-reset-stable", ["consumer-groups", "--bootstrap-server", B, "--reset-offsets",
         "--group", "cli-errors-active", "--topic", "cli-errors", "--to-earliest",
         "--execute"], stdout=["", "Error: Assignments can only be reset if the group "
         "'cli-errors-active' is inactive, but the current state is Stable.", "",
         f"{'GROUP':<30} {'TOPIC':<30} {'PARTITION':<10} {'NEW-OFFSET':<15}"]),  # Kafka: 0
    Case("groups-no-action", ["consumer-groups", "--bootstrap-server", B], ["Command must "
         "include exactly one action: --list, --describe, --delete, --reset-offsets, "
         "--delete-offsets"], usage=True),
    # -- share-groups and console-share-consumer (Kafka 4.4's tools' words) --------------
    Case("share-groups-no-action", ["share-groups", "--bootstrap-server", B], ["Command must "
         "include exactly one action: --list, --describe, --delete, --reset-offsets, "
         "--delete-offsets."], usage=True),
    Case("share-groups-reset-no-mode", ["share-groups", "--bootstrap-server", B,
         "--reset-offsets", "--group", "g", "--topic", "t", "--to-earliest"],
         ["Option [reset-offsets] takes the option: [execute] or [dry-run]"],
         usage=True),
    Case("streams-groups-no-action", ["streams-groups", "--bootstrap-server", B], ["Command "
         "must include exactly one action: --list, --describe, --delete, --reset-offsets, or "
         "--delete-offsets."], usage=True),
    Case("streams-groups-reset-no-scope", ["streams-groups", "--bootstrap-server", B,
         "--reset-offsets", "--group", "g", "--to-earliest", "--dry-run"],
         ["One of the reset scopes should be defined: --all-input-topics, --input-topic."],
         usage=True),
    Case("streams-groups-bad-state", ["streams-groups", "--bootstrap-server", B, "--list",
         "--state", "busy"], ["Invalid state list 'busy'. Valid states are: Empty, NotReady, "
         "Stable, Assigning, Reconciling, Dead"], usage=True),
    Case("share-consumer-reject-and-release", ["console-share-consumer", "--bootstrap-server",
         B, "--topic", "t", "--reject", "--release"],
         ["At most one of --reject and --release may be specified."], usage=True),
    # -- configs -----------------------------------------------------------------------
    Case("configs-no-entity", ["configs", "--bootstrap-server", B, "--describe"],
         ["Must specify --entity-type (or --topic, --broker, --broker-defaults)"]),
    Case("configs-unknown-key", ["configs", "--bootstrap-server", B, "--alter", "--topic",
         "cli-errors", "--add-config", "bogus.key=1"], ["Error while executing config command "
         "with args '--bootstrap-server {bootstrap} --alter --topic cli-errors --add-config "
         "bogus.key=1'", "Unknown topic config name: bogus.key"]),
    # -- dump-log ----------------------------------------------------------------------
    Case("dump-log-directory", ["dump-log", "--files", DIR], [f"{DIR} is a directory: --files "
         "takes log, index, snapshot and checkpoint files"], stdout=[f"Dumping {DIR}"]),
    Case("dump-log-timeindex-beyond-log", ["dump-log", "--files",
         f"{DIR}/00000000000000000100.timeindex"], ["Slice from position 5000 exceeds end "
         f"position of FileRecords(size=1000, file={DIR}/00000000000000000100.log, start=0, "
         f"end=2147483647) (the index {DIR}/00000000000000000100.index is corrupt: its entry 0 "
         "points to position 5000 of a 1000-byte log)"],
         stdout=[f"Dumping {DIR}/00000000000000000100.timeindex"]),
    Case("dump-log-index-before-log", ["dump-log", "--files",
         f"{DIR}/00000000000000000000.index"], ["Invalid position: -1395978286 in read from "
         f"FileRecords(size=1000, file={DIR}/00000000000000000000.log, start=0, "
         f"end=2147483647) (the index {DIR}/00000000000000000000.index is corrupt: its entry 0 "
         "points to position -1395978286 of a 1000-byte log)"],
         stdout=[f"Dumping {DIR}/00000000000000000000.index"]),
    Case("dump-log-random-snapshot", ["dump-log", "--files",
         f"{DIR}/00000000000000000000.snapshot"],
         ["Snapshot contained an unknown file version 18765"],
         stdout=[f"Dumping {DIR}/00000000000000000000.snapshot"]),  # Kafka's tool exits 0
    Case("dump-log-random-txnindex", ["dump-log", "--files",
         f"{DIR}/00000000000000000000.txnindex"], [f"Unexpected aborted transaction version "
         f"18765 in transaction index {DIR}/00000000000000000000.txnindex, current version is "
         "0"], stdout=[f"Dumping {DIR}/00000000000000000000.txnindex"]),
    Case("dump-log-no-files", ["dump-log"], ['Missing required argument "[files]"'],
         usage=True),
    # -- reassign-partitions (alias reassign) -------------------------------------------
    Case("reassign-no-action", ["reassign-partitions", "--bootstrap-server", B],
         ["Command must include exactly one action: --generate, --execute, --verify, "
          "--cancel, --list"], usage=True),
    Case("reassign-option-of-another-action", ["reassign", "--bootstrap-server", B, "--list",
         "--throttle", "5"], ['Option "[throttle]" can\'t be used with action "[list]"'],
         usage=True),
    Case("reassign-bad-json", ["reassign", "--bootstrap-server", B, "--execute",
         "--reassignment-json-file", f"{DIR}/acks.properties"], [],
         stdout=["Error: The input string is not a valid JSON"]),
    Case("reassign-unknown-broker", ["reassign", "--bootstrap-server", B, "--execute",
         "--reassignment-json-file", f"{DIR}/move.json"], [],
         stdout=["Error: Unknown broker id 7"]),
    # -- leader-election, preferred-replica-election -----------------------------------
    Case("election-no-type", ["leader-election", "--bootstrap-server", B,
         "--all-topic-partitions"], ["Missing required option(s): election-type"]),
    Case("election-two-scopes", ["leader-election", "--bootstrap-server", B,
         "--election-type", "preferred", "--all-topic-partitions", "--topic", "t"],
         ["One and only one of the following options is required: topic, "
          "all-topic-partitions, path-to-json-file"]),
    Case("election-bad-json", ["preferred-replica-election", "--bootstrap-server", B,
         "--path-to-json-file", f"{DIR}/election.json"],
         ["No such field exists: `partition`"], stdout=[
             "This tool is deprecated. Please use kafka-leader-election tool. Tracking issue: "
             "KAFKA-8405"]),
    # -- acls (kafka-acls.sh's messages) -----------------------------------------------
    Case("acls-no-authorizer", ["acls", "--bootstrap-server", B, "--list"],
         stdout=["Error while executing ACL command: No Authorizer is configured on the "
                 "broker"]),
    Case("acls-two-actions", ["acls", "--bootstrap-server", B, "--list", "--add"],
         ["Command must include exactly one action: --list, --add, --remove. "], usage=True),
    Case("acls-add-without-principal", ["acls", "--bootstrap-server", B, "--add", "--topic",
         "t"], ["You must specify one of: --allow-principal, --deny-principal when trying to "
         "add ACLs."], usage=True),
    # -- features ------------------------------------------------------------------------
    Case("features-unreachable", ["features", "--bootstrap-server", "127.0.0.1:1", "describe"],
         ["Error connecting to 127.0.0.1:1: cannot connect to 127.0.0.1:1: Connection "
          "refused"]),
    # -- transactions (kafka-transactions.sh's messages) -------------------------------
    Case("transactions-describe-unknown", ["transactions", "--bootstrap-server", B, "describe",
         "--transactional-id", "nobody"], ["Failed to describe transaction state of "
         "transactional-id `nobody`: DescribeTransactions request for transactionalId `nobody` "
         "failed because the ID could not be found. Enable debug logging for additional "
         "detail."]),
    Case("transactions-abort-unidentified", ["transactions", "--bootstrap-server", B, "abort",
         "--topic", "cli-errors", "--partition", "0"], ["The transaction to abort must be "
         "identified either with --start-offset (for brokers on 3.0 or above) or with "
         "--producer-id, --producer-epoch, and --coordinator-epoch (for older brokers)"]),
    Case("transactions-abort-nothing-open", ["transactions", "--bootstrap-server", B, "abort",
         "--topic", "cli-errors", "--partition", "0", "--start-offset", "5"],
         ["Could not find any open transactions starting at offset 5 on partition "
          "cli-errors-0"]),
    Case("transactions-find-hanging-unscoped", ["transactions", "--bootstrap-server", B,
         "find-hanging"], ["The `find-hanging` command requires either --topic or --broker-id "
         "to limit the scope of the search"]),
    # -- producer-perf-test ------------------------------------------------------------
    Case("perf-no-records", ["producer-perf-test", "--topic", "t", "--num-records", "0",
         "--record-size", "10", "--throughput", "-1", "--producer-props",
         "bootstrap.servers=" + B], ["--num-records should be greater than zero"], usage=True),
    Case("perf-size-and-file", ["producer-perf-test", "--topic", "t", "--num-records", "5",
         "--record-size", "10", "--payload-file", f"{DIR}/delete.json", "--throughput", "-1",
         "--producer-props", "bootstrap.servers=" + B], ["either --record-size or "
         "--payload-file must be specified but not both."], usage=True),
    Case("perf-bad-acks", ["producer-perf-test", "--topic", "t", "--num-records", "5",
         "--record-size", "10", "--throughput", "-1", "--producer-props",
         "bootstrap.servers=" + B, "acks=2"], ["Invalid value 2 for configuration acks: "
         "String must be one of: all, -1, 0, 1"]),
    Case("perf-bad-codec", ["producer-perf-test", "--topic", "t", "--num-records", "5",
         "--record-size", "10", "--throughput", "-1", "--producer-props",
         "bootstrap.servers=" + B, "compression.type=brotli"], ["Invalid value brotli for "
         "configuration compression.type: String must be one of: none, gzip, snappy, lz4, "
         "zstd"]),
    # -- consumer-perf-test: the numbers are read after the header, as Kafka's tool does --
    Case("consumer-perf-no-bootstrap", ["consumer-perf-test", "--topic", "t", "--messages", "5"],
         ["Missing required option(s) [bootstrap-server]"], usage=True),
    Case("consumer-perf-no-topic", ["consumer-perf-test", "--bootstrap-server", B],
         ['Missing required argument "[topic]"'], usage=True),
    Case("consumer-perf-no-messages", ["consumer-perf-test", "--bootstrap-server", B,
         "--topic", "t"], ['Missing required argument "[messages]"'], usage=True),
    Case("consumer-perf-bad-messages", ["consumer-perf-test", "--bootstrap-server", B,
         "--topic", "t", "--messages", "abc"], ["Cannot parse argument 'abc' of option "
         "messages"], stdout=[PERF_HEADER]),
    Case("consumer-perf-bad-interval", ["consumer-perf-test", "--bootstrap-server", B,
         "--topic", "t", "--messages", "5", "--reporting-interval", "0"], ["Reporting interval "
         "must be greater than 0."], stdout=[PERF_HEADER]),
    Case("consumer-perf-bad-date-format", ["consumer-perf-test", "--bootstrap-server", B,
         "--topic", "t", "--messages", "5", "--date-format", "xq"], ["Illegal pattern "
         "character 'x'"], stdout=[PERF_HEADER]),
    # -- log-dirs ------------------------------------------------------------------------
    Case("log-dirs-no-describe", ["log-dirs", "--bootstrap-server", B],
         ['Missing required argument "[describe]"'], usage=True),
    Case("log-dirs-unknown-broker", ["log-dirs", "--bootstrap-server", B, "--describe",
         "--broker-list", "9"], ["ERROR: The given brokers do not exist from --broker-list: 9. "
         "Current existent brokers: 0"]),
    # -- top ---------------------------------------------------------------------------
    Case("top-no-server", ["top", "--once"],
         ["Missing required argument: --bootstrap-server or --metrics-url"], usage=True),
    Case("top-no-metrics", ["top", "--bootstrap-server", B, "--once"],
         [f"No broker of {B} serves metrics: set metrics.listeners (http://host:port) on the "
          "brokers"]),
    # -- server-start, server-stop, spark-export ---------------------------------------
    Case("server-port-out-of-range", ["server-start", "--override",
         "listeners=PLAINTEXT://127.0.0.1:70000", "--override", f"log.dirs={DIR}/unused"],
         ["Invalid listener 'PLAINTEXT://127.0.0.1:70000': port out of range:70000"]),
    Case("server-uncreatable-log-dir", ["server-start", "--override",
         "listeners=PLAINTEXT://127.0.0.1:0", "--override",
         f"log.dirs={DIR}/acks.properties/logs"], [f"cannot start the broker: Not a directory: "
         f"{DIR}/acks.properties/logs"]),
    Case("server-ssl-listener", ["server-start", "--override",
         "listeners=SSL://127.0.0.1:0", "--override", "security.inter.broker.protocol=SSL",
         "--override", f"log.dirs={DIR}/ssl"], ["ssl.keystore.location: a key store is "
         "required for an SSL listener (or ssl.keystore.certificate.chain and "
         "ssl.keystore.key)"]),
    Case("server-authorizer", ["server-start", "--override", "authorizer.class.name="
         "com.example.Authorizer", "--override", f"log.dirs={DIR}/acl"],
         ["authorizer.class.name=com.example.Authorizer: kt does not support other authorizers "
          "than kafka.security.authorizer.AclAuthorizer yet"]),
    Case("server-negative-partitions", ["server-start", "--override", "num.partitions=-1",
         "--override", f"log.dirs={DIR}/partitions"], ["Invalid value -1 for configuration "
         "num.partitions: Value must be at least 1"]),
    Case("server-port-in-use", ["server-start", "--override", f"listeners=PLAINTEXT://{B}",
         "--override", f"log.dirs={DIR}/in-use"], [f"cannot start the broker: Socket server "
         f"failed to bind to {B}: Address already in use."]),
    Case("server-stop-unknown-node", ["server-stop", "--node-id", "987654"],
         [re.compile(r"No kt server (with node id 987654 )?to stop")]),
    Case("spark-export-bad-offsets", ["spark-export", "--bootstrap-server", B, "--topic",
         "cli-errors", "--output", f"{DIR}/export", "--starting-offsets", "{bad json"],
         [re.compile(r"startingOffsets: invalid JSON \(.*\): \{bad json")]),
    Case("spark-import-missing-input", ["spark-import", "--bootstrap-server", B, "--topic",
         "cli-errors", "--input", f"{DIR}/no-such-export"], [f"--input {DIR}/no-such-export: "
         "no such file or directory"]),
    Case("spark-import-bad-topic", ["spark-import", "--bootstrap-server", B, "--topic",
         "bad/name", "--input", DIR], ["--topic: Topic name is invalid: 'bad/name' contains "
         "one or more characters other than ASCII alphanumerics, '.', '_' and '-'"]),
]  # fmt: skip


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Seeded random bytes under every name dump-log knows (each file's first field reads
    18765), and indexes whose entries point before or beyond their 1000-byte log."""
    directory = tmp_path_factory.mktemp("bad-files")
    noise = bytes([0x49, 0x4D]) + random.Random(7).randbytes(998)
    for base in (0, 100):
        for suffix in ("log", "snapshot", "txnindex"):
            (directory / f"{base:020d}.{suffix}").write_bytes(noise)
    (directory / f"{0:020d}.index").write_bytes(struct.pack(">ii", 7, -1_395_978_286) + noise)
    (directory / f"{100:020d}.index").write_bytes(struct.pack(">ii", 0, 5000))
    (directory / f"{100:020d}.timeindex").write_bytes(struct.pack(">qi", 1, 10))
    (directory / "acks.properties").write_text("acks=7\n")
    (directory / "ssl.properties").write_text(
        "security.protocol=SSL\nssl.truststore.type=PEM\n"
        "ssl.truststore.location=/nonexistent/ca.pem\n"
    )
    (directory / "sasl.properties").write_text("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n")
    (directory / "election.json").write_text('{"partitions":[{"topic":"cli-errors"}]}')
    (directory / "move.json").write_text(
        '{"version":1,"partitions":[{"topic":"cli-errors","partition":0,"replicas":[7]}]}'
    )
    (directory / "delete.json").write_text(
        '{"partitions":[{"topic":"cli-errors","partition":0,"offset":50}],"version":1}'
    )
    return directory


@pytest.fixture(scope="module")
def active_group(module_broker) -> object:
    """A topic with one record, and a group with a live member (Stable)."""
    kt_ok("topics", "--bootstrap-server", module_broker.bootstrap, "--create", "--topic",
          "cli-errors", "--partitions", "1")  # fmt: skip
    kt_ok("console-producer", "--bootstrap-server", module_broker.bootstrap, "--topic",
          "cli-errors", input="v\n")  # fmt: skip
    consumer = Consumer({
        "bootstrap.servers": module_broker.bootstrap, "group.id": "cli-errors-active",
        "auto.offset.reset": "earliest",
    })  # fmt: skip
    consumer.subscribe(["cli-errors"])
    for _ in range(60):
        if consumer.poll(0.5) is not None or consumer.assignment():
            break
    assert consumer.assignment(), "the group never became Stable"
    yield consumer
    consumer.close()


def _fill(text: str, bootstrap: str, directory: Path) -> str:
    return text.replace(B, bootstrap).replace(DIR, str(directory))


def _matches(expected: str | re.Pattern[str], line: str) -> bool:
    return bool(expected.fullmatch(line)) if isinstance(expected, re.Pattern) else expected == line


@pytest.mark.parametrize("case", CASES, ids=str)
def test_bad_input(case: Case, module_broker, bad_files: Path, active_group: object) -> None:
    def fill(text: str | re.Pattern[str]) -> str | re.Pattern[str]:
        return text if isinstance(text, re.Pattern) else _fill(text, module_broker.bootstrap,
                                                                bad_files)  # fmt: skip

    args = [str(fill(a)) for a in case.args]
    result = kt_command(*args, input=case.stdin, timeout_s=90)
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    err = result.stderr.splitlines()
    expected = [fill(e) for e in case.stderr]
    if case.usage:
        (message,) = expected
        assert err and _matches(message, err[0]), err[:3]
        assert err[1] == f"Usage: kt {args[0]} [OPTIONS]", err[:3]  # then the help
    else:
        assert len(err) == len(expected), err
        assert all(_matches(e, line) for e, line in zip(expected, err, strict=True)), err
    if case.stdout is not None:
        assert result.stdout.splitlines() == [fill(s) for s in case.stdout]


def test_every_subcommand_has_a_case() -> None:
    from kt.commands import COMMANDS

    covered = {case.args[0] for case in CASES}
    assert covered == set(COMMANDS), set(COMMANDS) - covered


def test_an_unknown_command_names_the_nearest() -> None:
    result = kt_command("topic")
    assert result.returncode == 1
    assert result.stderr.splitlines()[:2] == [
        "No such command 'topic'. Did you mean topics or top?",
        "Usage: kt [OPTIONS] COMMAND [ARGS]...",
    ]  # fmt: skip
    assert kt_command("xyzzy").stderr.splitlines()[0] == "No such command 'xyzzy'."


def test_consumer_perf_says_when_nothing_listens() -> None:
    """Kafka's tool waits out --timeout and exits 0 (its NetworkClient logs a warning);
    kt says the connection was refused at once, and exits 1 after the timeout."""
    result = kt_command("consumer-perf-test", "--bootstrap-server", "127.0.0.1:1", "--topic",
                        "t", "--messages", "1", "--timeout", "500")  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "WARN Connection to 127.0.0.1:1 could not be established. Broker may not be available: "
        "cannot connect to 127.0.0.1:1: Connection refused",
        "ERROR: no broker of 127.0.0.1:1 could be reached: cannot connect to 127.0.0.1:1: "
        "Connection refused",
    ]
    assert result.stdout.splitlines()[:2] == [PERF_HEADER, "WARNING: Exiting before consuming "
        "the expected number of messages: timeout (500 ms) exceeded. You can use the --timeout "
        "option to increase the timeout."]  # fmt: skip
