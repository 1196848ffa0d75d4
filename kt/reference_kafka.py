"""Apache Kafka beside kt: its broker and bin tools, run from the jars in the cache.

`interop/fetch-kafka.sh` puts Kafka's jars in `kafka_home()/libs` (by default
~/.cache/kt/kafka-3.9.1/libs, or $KT_KAFKA_HOME). From there:

    from kt.reference_kafka import ReferenceKafka, run_tool

    with ReferenceKafka(base_dir) as kafka:           # KRaft, formatted storage
        run_tool("kafka-topics", "--bootstrap-server", kafka.bootstrap, "--list")

    ReferenceKafka(base_dir, zookeeper_connect="127.0.0.1:2181/chroot", broker_id=0)
    ReferenceKafka(base_dir, version=KAFKA4_VERSION)  # Kafka 4.4, KRaft (log4j2)

Each broker runs as Kafka's `bin/kafka-server-start.sh` would run it (`java -cp libs/*
kafka.Kafka server.properties`, with the scripts' JVM options but a smaller heap, so that
two fit beside kt on a 2-core machine), on 127.0.0.1 with free ports, and logs through
log4j to `server.log` in its base directory. The tools run with the main classes that
Kafka's `bin/*.sh` scripts name.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from kt.cached_file import cached_file
from kt.metadata.znodes import random_uuid, uuid_to_str

KAFKA_VERSION = "3.9.1"  # interop/pom.xml's kafka.version
# Kafka 4 (KRaft only), for the APIs and tools Kafka 4 added: interop/kafka4/pom.xml.
KAFKA4_VERSION = "4.4.0"

# bin/<script>.sh -> the class it runs (Kafka 3.9).
TOOL_CLASSES = {
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-acls": "kafka.admin.AclCommand",
    "kafka-configs": "kafka.admin.ConfigCommand",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-console-producer": "kafka.tools.ConsoleProducer",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "kafka-leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "kafka-reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "kafka-producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "kafka-consumer-perf-test": "org.apache.kafka.tools.ConsumerPerformance",
    "kafka-e2e-latency": "org.apache.kafka.tools.EndToEndLatency",
    "kafka-dump-log": "kafka.tools.DumpLogSegments",
    "kafka-storage": "kafka.tools.StorageTool",
    "kafka-transactions": "org.apache.kafka.tools.TransactionsCommand",
}
# Where Kafka 4 moved a tool's class (Scala to the tools module).
TOOL_CLASSES_4 = {
    **TOOL_CLASSES,
    "kafka-dump-log": "org.apache.kafka.tools.DumpLogSegments",
    "kafka-acls": "org.apache.kafka.tools.AclCommand",
    "kafka-configs": "org.apache.kafka.tools.ConfigCommand",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-features": "org.apache.kafka.tools.FeatureCommand",
    "kafka-console-share-consumer": "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
    "kafka-share-groups": "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
    "kafka-streams-groups": "org.apache.kafka.tools.streams.StreamsGroupCommand",
    "kafka-share-consumer-perf-test": "org.apache.kafka.tools.ShareConsumerPerformance",
}

# kafka-run-class.sh's default KAFKA_JVM_PERFORMANCE_OPTS (jvm_options() takes that
# variable from the environment as the script does); heaps as small as the tests allow.
JVM_OPTIONS = [
    "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
]  # fmt: skip
BROKER_HEAP = ["-Xmx512m", "-Xms512m"]
TOOL_HEAP = ["-Xmx256m"]  # kafka-run-class.sh's default for the tools
SIGTERM_EXIT = 128 + signal.SIGTERM  # the JVM's status after its shutdown hooks ran

# Kafka 4 logs through log4j2: the same, in its properties format.
_TOOL_LOG4J2 = (
    "status = error\nrootLogger.level = WARN\nrootLogger.appenderRef.stderr.ref = stderr\n"
    "appender.stderr.type = Console\nappender.stderr.name = stderr\n"
    "appender.stderr.target = SYSTEM_ERR\nappender.stderr.layout.type = PatternLayout\n"
    "appender.stderr.layout.pattern = [%d] %p %m (%c)%n\n"
)
_TOOL_LOG4J = "log4j.rootLogger=WARN, stderr\n" + "".join(
    f"log4j.appender.stderr{line}\n"
    for line in (
        "=org.apache.log4j.ConsoleAppender",
        ".Target=System.err",
        ".layout=org.apache.log4j.PatternLayout",
        ".layout.ConversionPattern=[%d] %p %m (%c)%n",
    )
)


class KafkaUnavailableError(RuntimeError):
    """Java or Kafka's jars are not here; the message says how to get them."""


def kafka_home(version: str = KAFKA_VERSION) -> Path:
    """Where interop/fetch-kafka.sh put that version's jars ($KT_KAFKA_HOME for 3.9's)."""
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kt"
    if version != KAFKA_VERSION:
        return default / f"kafka-{version}"
    return Path(os.environ.get("KT_KAFKA_HOME", default / f"kafka-{KAFKA_VERSION}"))


def unavailable_reason(version: str = KAFKA_VERSION) -> str | None:
    """Why that Kafka cannot run here, or None when it can."""
    if shutil.which("java") is None:
        return "java is not installed (Kafka needs Java 17)"
    home = kafka_home(version)
    if not (home / "libs" / f"kafka_2.13-{version}.jar").exists():
        return f"Kafka {version}'s jars are not in {home}/libs: run interop/fetch-kafka.sh"
    return None


def _log4j2(version: str) -> bool:
    """Kafka 4 logs through log4j2, Kafka 3 through log4j 1 (reload4j)."""
    return int(version.split(".")[0]) >= 4


def spark_kafka_jars() -> list[Path]:
    """Spark's Kafka connector and the jars pyspark lacks for it (interop/spark-kafka),
    for spark.jars; empty when interop/fetch-kafka.sh has not run."""
    return sorted((kafka_home() / "spark-kafka").glob("*.jar"))


def jvm_options() -> list[str]:
    """$KAFKA_JVM_PERFORMANCE_OPTS when set, else kafka-run-class.sh's default."""
    value = os.environ.get("KAFKA_JVM_PERFORMANCE_OPTS", "")
    return value.split() if value.strip() else JVM_OPTIONS


def java_command(
    main_class: str, heap: list[str], log4j: Path, extra: Sequence[str] = (),
    version: str = KAFKA_VERSION,
) -> list[str]:  # fmt: skip
    reason = unavailable_reason(version)
    if reason is not None:
        raise KafkaUnavailableError(reason)
    logging = (f"-Dlog4j2.configurationFile={log4j}" if _log4j2(version)
               else f"-Dlog4j.configuration=file:{log4j}")  # fmt: skip
    return [
        "java", *heap, *jvm_options(), *extra, logging,
        "-cp", str(kafka_home(version) / "libs" / "*"), main_class,
    ]  # fmt: skip


def jmx_exporter_agent() -> Path | None:
    """The Prometheus JMX exporter's Java agent (interop/jmx-exporter), None if absent."""
    jars = sorted((kafka_home() / "jmx-exporter").glob("jmx_prometheus_javaagent-*.jar"))
    return jars[-1] if jars else None


def _tool_log4j(version: str = KAFKA_VERSION) -> Path:
    if _log4j2(version):
        return cached_file(kafka_home(version) / "tools-log4j2.properties", _TOOL_LOG4J2)
    return cached_file(kafka_home(version) / "tools-log4j.properties", _TOOL_LOG4J)


def tool_command(tool: str, *args: str, version: str = KAFKA_VERSION) -> list[str]:
    """The command line of one of Kafka's bin tools (named as the script, without `.sh`)."""
    return [
        *java_command(
            (TOOL_CLASSES_4 if _log4j2(version) else TOOL_CLASSES)[tool],
            TOOL_HEAP,
            _tool_log4j(version),
            version=version,
        ),
        *args,
    ]


def run_tool(
    tool: str, *args: str, input: str | None = None, timeout_s: float = 120.0,
    version: str = KAFKA_VERSION,
) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """Run one of Kafka's bin tools (of that Kafka version) to its end."""
    return subprocess.run(
        tool_command(tool, *args, version=version), input=input, capture_output=True,
        text=True, timeout=timeout_s,
    )  # fmt: skip


class ToolSession:
    """Kafka's bin tools run one after another in one JVM (interop/ToolRunner.java): the
    same classes and arguments as `run_tool`, without a JVM start per run. Tools that
    leave the JVM in a state the next run would see (none of the scenario's do) are
    better run with `run_tool`."""

    RUNNER = Path(__file__).resolve().parent.parent / "interop" / "ToolRunner.java"

    def __init__(self) -> None:
        self._process = subprocess.Popen(
            java_command(str(self.RUNNER), TOOL_HEAP, _tool_log4j()),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, encoding="utf-8",
        )  # fmt: skip

    def run(
        self, tool: str, *args: str, input: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """One run of a tool, as run_tool returns it (its log lines are not in stderr)."""
        assert self._process.stdin is not None and self._process.stdout is not None
        request = {"main": TOOL_CLASSES[tool], "args": list(args), "input": input or ""}
        self._process.stdin.write(json.dumps(request) + "\n")
        self._process.stdin.flush()
        line = self._process.stdout.readline()
        if not line:
            raise KafkaUnavailableError(f"the tool runner exited ({self._process.wait()})")
        answer = json.loads(line)
        return subprocess.CompletedProcess(
            [tool, *args], answer["exit"], answer["stdout"], answer["stderr"]
        )

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

    def __enter__(self) -> ToolSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ReferenceKafka:
    """One Apache Kafka broker on 127.0.0.1: KRaft (broker and controller in one process,
    storage formatted on first start) or, given `zookeeper_connect`, ZooKeeper mode.

    Invariants: the ports and `log_dir` are fixed at construction, so a restart serves
    the same bootstrap address and the same data; `proc` is the running JVM or None.
    """

    def __init__(
        self,
        base_dir: str | Path,
        *,
        broker_id: int = 1,
        zookeeper_connect: str | None = None,
        log_dir: str | Path | None = None,
        overrides: Mapping[str, str] | None = None,
        jvm_options: Sequence[str] = (),
        version: str = KAFKA_VERSION,
    ) -> None:
        self.version = version  # KAFKA4_VERSION runs Kafka 4 (KRaft only)
        self.base_dir = Path(base_dir)
        self.jvm_options = list(jvm_options)  # a -javaagent, say
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.broker_id = broker_id
        self.zookeeper_connect = zookeeper_connect
        self.log_dir = Path(log_dir) if log_dir is not None else self.base_dir / "kafka-logs"
        self.port = free_port()
        self.controller_port = free_port() if zookeeper_connect is None else None
        self.overrides = dict(overrides or {})
        self.proc: subprocess.Popen[bytes] | None = None
        self.server_log = self.base_dir / "server.log"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def properties(self) -> dict[str, str]:
        props = {
            "log.dirs": str(self.log_dir),
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            # What Kafka's config/server.properties sets for one broker.
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
        }
        if self.version != KAFKA_VERSION:  # Kafka 4's config/server.properties, too
            props |= {"share.coordinator.state.topic.replication.factor": "1",
                      "share.coordinator.state.topic.min.isr": "1"}  # fmt: skip
        if self.zookeeper_connect is None:
            props |= {
                "process.roles": "broker,controller",
                "node.id": str(self.broker_id),
                "controller.quorum.voters": f"{self.broker_id}@127.0.0.1:{self.controller_port}",
                "listeners": props["listeners"] + f",CONTROLLER://127.0.0.1:{self.controller_port}",
                "controller.listener.names": "CONTROLLER",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            }
        else:
            props |= {"broker.id": str(self.broker_id), "zookeeper.connect": self.zookeeper_connect}
        return props | self.overrides

    def _write_config(self) -> tuple[Path, Path]:
        config = self.base_dir / "server.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in self.properties().items()))
        if _log4j2(self.version):
            log4j = self.base_dir / "log4j2.properties"
            log4j.write_text(
                "status = error\nrootLogger.level = INFO\nrootLogger.appenderRef.file.ref = file\n"
                "appender.file.type = File\nappender.file.name = file\n"
                f"appender.file.fileName = {self.server_log}\n"
                "appender.file.layout.type = PatternLayout\n"
                "appender.file.layout.pattern = [%d] %p %m (%c)%n\n"
            )
            return config, log4j
        log4j = self.base_dir / "log4j.properties"
        log4j.write_text(
            "log4j.rootLogger=INFO, file\n"
            "log4j.appender.file=org.apache.log4j.FileAppender\n"
            f"log4j.appender.file.File={self.server_log}\n"
            "log4j.appender.file.layout=org.apache.log4j.PatternLayout\n"
            "log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
        )
        return config, log4j

    def format_storage(self) -> None:
        """`kafka-storage.sh format` for a KRaft broker whose log dir is not formatted."""
        if self.zookeeper_connect is not None or (self.log_dir / "meta.properties").exists():
            return
        config, _ = self._write_config()
        cluster_id = _kafka_uuid()
        result = run_tool(
            "kafka-storage", "format", "-t", cluster_id, "-c", str(config), version=self.version
        )
        if result.returncode != 0:
            raise RuntimeError(f"kafka-storage format failed: {result.stdout}{result.stderr}")

    def spawn(self) -> int:
        """Start the JVM (formatting storage first if needed) and return at once; the mark
        to pass to `wait_started`."""
        self.format_storage()
        config, log4j = self._write_config()
        mark = self.server_log.stat().st_size if self.server_log.exists() else 0
        with open(self.base_dir / "kafka.out", "ab") as out:
            self.proc = subprocess.Popen(
                [*java_command("kafka.Kafka", BROKER_HEAP, log4j, self.jvm_options,
                               version=self.version), str(config)],  # fmt: skip
                stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip
        return mark

    def start(self, timeout_s: float = 90.0) -> ReferenceKafka:
        """Start the JVM and return once the broker says it started and takes connections."""
        self.wait_started(self.spawn(), timeout_s)
        return self

    def wait_started(self, mark: int, timeout_s: float = 90.0) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + timeout_s
        while not (self._logged_since(mark, "Server started") or self._logged_since(
            mark, f"[KafkaServer id={self.broker_id}] started"
        )) or not self._accepts():  # fmt: skip
            if self.proc.poll() is not None:
                raise RuntimeError(f"Kafka exited with {self.proc.returncode}: {self.log_tail()}")
            if time.monotonic() > deadline:
                self.kill()
                raise TimeoutError(f"Kafka did not start in {timeout_s} s: {self.log_tail()}")
            time.sleep(0.05)
        while not self._knows_itself():
            if time.monotonic() > deadline:
                self.kill()
                raise TimeoutError(
                    f"Kafka did not list itself in Metadata in {timeout_s} s: {self.log_tail()}"
                )
            time.sleep(0.05)

    def _knows_itself(self) -> bool:
        """Whether Metadata names this broker and a controller. A ZooKeeper-mode broker
        logs "started" before its controller's first UpdateMetadata reaches it; until then
        it answers Metadata with no brokers and controller -1, and librdkafka's admin
        client then waits for its next periodic metadata refresh (5 minutes) before it
        sends a CreateTopics. A listener other than PLAINTEXT is not checked."""
        if not self.properties()["listeners"].startswith("PLAINTEXT://"):
            return True
        from kt.client.client import KafkaClient
        from kt.errors import KafkaError

        try:
            client = KafkaClient(self.bootstrap, client_id="kt-reference-probe", timeout_s=5)
        except KafkaError:
            return False
        try:
            client.metadata([])
            return client.controller_id >= 0 and self.broker_id in client.brokers
        except KafkaError:
            return False
        finally:
            client.close()

    def _logged_since(self, mark: int, text: str) -> bool:
        if not self.server_log.exists():
            return False
        with open(self.server_log, "rb") as f:
            f.seek(mark)
            return text.encode() in f.read()

    def _accepts(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        except OSError:
            return False

    def log_tail(self, chars: int = 4000) -> str:
        texts = [p.read_text(errors="replace") for p in (self.server_log,) if p.exists()]
        out = self.base_dir / "kafka.out"
        if out.exists():
            texts.append(out.read_text(errors="replace"))
        return "\n".join(texts)[-chars:]

    def stop(self, sig: int = signal.SIGTERM, timeout_s: float = 60.0) -> int | None:
        """kafka-server-stop.sh's SIGTERM (a controlled shutdown): the exit status, which is
        SIGTERM_EXIT after a clean shutdown; None if not running."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self.proc = None
        return code

    def kill(self) -> int | None:
        return self.stop(signal.SIGKILL)

    def __enter__(self) -> ReferenceKafka:
        return self.start() if self.proc is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _kafka_uuid() -> str:
    """A cluster id as `kafka-storage.sh random-uuid` prints it: base64url, no padding, and
    never with a leading '-' (which kafka-storage's argument parser takes for an option)."""
    return uuid_to_str(random_uuid())
