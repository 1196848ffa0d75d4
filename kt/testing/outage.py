"""Client load through a fault, measured by phase: what producers (acks=1, acks=all) and a
consumer got before, during and after it; and the ZooKeeper-outage scenario that puts
a cluster through two faults under that load (`run_outage`), run on kt by
tests/integration/test_zookeeper_outage.py, on Kafka 3.9 by
tests/oracle/test_zookeeper_outage.py, on both by benchmarks/zookeeper_outage.py.

The scenario: three brokers reach Debian's ZooKeeper through a TcpProxy; a topic "t" of
3 partitions, replication factor 3, takes load from two producers (acks=1, acks=all)
and a consumer. Phases: before; ZooKeeper SIGSTOPped for FAULT_S (a GC pause, a stalled
disk); after; its traffic dropped for FAULT_S (a network partition); after. Early in
each fault an admin client asks for what needs ZooKeeper (CreateTopics, which goes to
the controller, and DescribeConfigs): those wait for ZooKeeper, the data path must not.
Neither fault outlasts the session timeout (SESSION_MS, both brokers' default), so no
session expires: the brokers must simply go on serving.

    load = OutageLoad(bootstrap, "t")
    load.start()
    load.phase("before"); time.sleep(5)
    zookeeper.pause(); load.phase("during"); time.sleep(10); zookeeper.resume()
    load.phase("after"); time.sleep(10)
    report = load.stop()          # {phase: PhaseReport}

Each record's latency runs from produce() to its delivery report (librdkafka's, through
confluent-kafka), and counts in the phase it was sent in; the consumer's records count in
the phase they arrived in.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kt.testing.tcp_proxy import TcpProxy
    from kt.testing.zookeeper import ZooKeeperServer

RATE_PER_S = 200  # records per second per producer


def percentile(values: list[float], p: float) -> float:
    """The p-th percentile of `values` (nearest rank); NaN for none."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


@dataclass
class ProducerStats:
    latencies_ms: list[float] = field(default_factory=list)
    failed: int = 0
    # When (monotonic) each acknowledgement that came in this phase came, whenever its
    # record was sent: the seconds without one.
    arrivals: list[float] = field(default_factory=list)

    def percentile(self, p: float) -> float:
        return percentile(self.latencies_ms, p)


@dataclass
class PhaseReport:
    name: str
    started: float = 0.0  # monotonic
    seconds: float = 0.0
    producers: dict[str, ProducerStats] = field(default_factory=dict)
    consumed: int = 0
    longest_consumer_gap_s: float = 0.0

    def acked(self, producer: str) -> int:
        return len(self.producers[producer].latencies_ms)

    def seconds_with_acks(self, producer: str) -> float:
        """The share of the phase's whole seconds in which an acknowledgement came (of a
        record sent in this phase or before), the measure of issue 28: 32-42 % for kt
        under a ZooKeeper isolation, 67-78 % for Kafka 3.9."""
        whole = int(self.seconds)
        if whole <= 0:
            return float("nan")
        stats = self.producers.get(producer, ProducerStats())
        seconds = {int(t - self.started) for t in stats.arrivals}
        return len(seconds & set(range(whole))) / whole

    def row(self) -> str:
        parts = [f"{self.name:>8} {self.seconds:5.1f}s"]
        for name, stats in self.producers.items():
            parts.append(
                f"{name}: {len(stats.latencies_ms):5} acked {stats.failed:4} failed "
                f"p50 {stats.percentile(50):7.1f} ms p99 {stats.percentile(99):7.1f} ms "
                f"acks in {self.seconds_with_acks(name):4.0%} of seconds"
            )
        parts.append(f"consumed {self.consumed:5} (longest gap "
                     f"{self.longest_consumer_gap_s:.1f} s)")  # fmt: skip
        return " | ".join(parts)


class OutageLoad:
    """Two producers (acks=1 and acks=all, idempotent) and a consumer on `topic`."""

    def __init__(self, bootstrap: str, topic: str, rate_per_s: int = RATE_PER_S) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.rate_per_s = rate_per_s
        self._lock = threading.Lock()
        self._phases: list[PhaseReport] = []
        self._phase_started: list[float] = []
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._last_consumed: float | None = None

    def start(self) -> None:
        self.phase("warm-up")
        for name, acks in (("acks=1", "1"), ("acks=all", "all")):
            self._threads.append(threading.Thread(target=self._produce, args=(name, acks),
                                                  name=f"load-{name}", daemon=True))  # fmt: skip
        self._threads.append(threading.Thread(target=self._consume, name="load-consumer",
                                              daemon=True))  # fmt: skip
        for thread in self._threads:
            thread.start()

    def phase(self, name: str) -> None:
        """From now on, records count in phase `name`."""
        with self._lock:
            now = time.monotonic()
            self._phases.append(PhaseReport(name, started=now))
            self._phase_started.append(now)

    def stop(self) -> dict[str, PhaseReport]:
        end = time.monotonic()
        self._stop.set()
        for thread in self._threads:
            thread.join(60)
        with self._lock:
            ends = [*self._phase_started[1:], end]
            for report, started, ended in zip(self._phases, self._phase_started, ends,
                                              strict=True):  # fmt: skip
                report.seconds = ended - started
            return {p.name: p for p in self._phases}

    # -- the clients --------------------------------------------------------------------

    def current(self) -> PhaseReport:
        """The phase records count in now."""
        with self._lock:
            return self._phases[-1]

    def _produce(self, name: str, acks: str) -> None:
        from confluent_kafka import Producer

        producer = Producer({
            "bootstrap.servers": self.bootstrap, "acks": acks, "linger.ms": 5,
            "enable.idempotence": acks == "all", "message.timeout.ms": 60_000,
        })  # fmt: skip
        interval = 1.0 / self.rate_per_s
        next_at = time.monotonic()
        while not self._stop.is_set():
            phase = self.current()
            stats = phase.producers.setdefault(name, ProducerStats())
            sent = time.monotonic()
            producer.produce(self.topic, b"x" * 100,
                             on_delivery=self._delivered(name, stats, sent))  # fmt: skip
            producer.poll(0)
            next_at += interval
            delay = next_at - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            else:
                next_at = time.monotonic()
        producer.flush(60)

    def _delivered(self, name: str, stats: ProducerStats, sent: float) -> Any:
        def report(error: Any, _message: Any) -> None:
            with self._lock:
                if error is not None:
                    stats.failed += 1
                else:
                    now = time.monotonic()
                    stats.latencies_ms.append((now - sent) * 1000)
                    self._phases[-1].producers.setdefault(name, ProducerStats()).arrivals.append(
                        now
                    )

        return report

    def _consume(self) -> None:
        from confluent_kafka import Consumer

        consumer = Consumer({
            "bootstrap.servers": self.bootstrap, "group.id": f"outage-{id(self)}",
            "auto.offset.reset": "latest", "enable.auto.commit": False,
        })  # fmt: skip
        consumer.subscribe([self.topic])
        try:
            while not self._stop.is_set():
                for message in consumer.consume(500, 0.2):
                    if message.error() is None:
                        self._consumed()
        finally:
            consumer.close()

    def _consumed(self) -> None:
        now = time.monotonic()
        with self._lock:
            phase = self._phases[-1]
            phase.consumed += 1
            if self._last_consumed is not None:
                gap = now - self._last_consumed
                phase.longest_consumer_gap_s = max(phase.longest_consumer_gap_s, gap)
            self._last_consumed = now


# -- the ZooKeeper-outage scenario ----------------------------------------------------

FAULT_S = 10.0
# Kafka's zookeeper.session.timeout.ms default, kt's too: the test server must allow it.
SESSION_MS = 18_000
QUIET_S = 6.0
FAULT_PHASES = ("paused", "dropped")
AFTER_PHASES = ("after pause", "after drop")


def create_topic(bootstrap: str, name: str, timeout_s: float = 60.0) -> None:
    """CreateTopics (3 partitions, replication factor 3) through librdkafka's admin client,
    asked again on a retriable answer until `timeout_s`, as Kafka's admin client retries
    (NOT_CONTROLLER while a controller is being elected after a session expiry)."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + timeout_s
    retried = False
    while True:
        try:
            admin.create_topics([NewTopic(name, 3, 3)], operation_timeout=30)[name].result(60)
            return
        except KafkaException as e:
            error = e.args[0]
            if retried and error.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                return  # an earlier attempt created it after all
            again = error.retriable() or error.code() in (
                KafkaError.NOT_CONTROLLER,
                KafkaError.REQUEST_TIMED_OUT,
            )  # librdkafka does not mark a topic result's error retriable
            if not again or time.monotonic() > deadline:
                raise
        retried = True
        time.sleep(0.5)


def run_outage_scenario(
    bootstrap: str, zookeeper: ZooKeeperServer, proxy: TcpProxy
) -> tuple[dict[str, PhaseReport], list[float]]:
    """The scenario on the brokers at `bootstrap`: topic "t" created, then `run_outage`,
    each fault followed by the creation of a topic (the cluster whole again)."""
    create_topic(bootstrap, "t")
    rounds = iter(range(len(FAULT_PHASES)))
    return run_outage(bootstrap, zookeeper, proxy,
                      lambda: create_topic(bootstrap, f"after-{next(rounds)}"))  # fmt: skip


def run_outage(
    bootstrap: str,
    zookeeper: ZooKeeperServer,
    proxy: TcpProxy,
    whole_again: Callable[[], Any],
) -> tuple[dict[str, PhaseReport], list[float]]:
    """The phases' reports, and the seconds from the end of each fault until
    `whole_again()` (an admin round trip through ZooKeeper and the controller) returned."""
    load = OutageLoad(bootstrap, "t")
    load.start()
    deadline = time.monotonic() + 60
    while not _warm(load):
        if time.monotonic() > deadline:
            load.stop()
            raise TimeoutError("the load did not get going within 60 s")
        time.sleep(0.2)
    load.phase("before")
    time.sleep(QUIET_S)
    recovered = []
    for fault, after, start, end in (
        ("paused", "after pause", zookeeper.pause, zookeeper.resume),
        ("dropped", "after drop", proxy.drop, proxy.restore),
    ):
        start()
        load.phase(fault)
        waiting = _ask_zookeeper_things(bootstrap, fault)
        time.sleep(FAULT_S)
        end()
        load.phase(after)
        ended = time.monotonic()
        whole_again()
        recovered.append(time.monotonic() - ended)
        time.sleep(max(0.0, QUIET_S - recovered[-1]))
        waiting.join(60)
    return load.stop(), recovered


def _ask_zookeeper_things(bootstrap: str, fault: str) -> threading.Thread:
    """CreateTopics and DescribeConfigs from a thread of their own (they wait for
    ZooKeeper); their answers do not matter, only that the brokers serve meanwhile."""
    from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

    def ask() -> None:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        topic = f"during-{fault}"
        created = admin.create_topics([NewTopic(topic, 1, 3)], request_timeout=FAULT_S * 3)
        described = admin.describe_configs([ConfigResource("topic", "t")],
                                           request_timeout=FAULT_S * 3)  # fmt: skip
        for future in [*created.values(), *described.values()]:
            future.exception(FAULT_S * 4)  # an error is an answer too

    thread = threading.Thread(target=ask, name=f"admin-{fault}", daemon=True)
    thread.start()
    return thread


def _warm(load: OutageLoad) -> bool:
    report = load.current()
    return (
        all(report.producers.get(p) and report.producers[p].latencies_ms
            for p in ("acks=1", "acks=all"))
        and report.consumed > 0
    )  # fmt: skip


def table(reports: dict[str, PhaseReport], recovered: list[float]) -> str:
    lines = [r.row() for name, r in reports.items() if name != "warm-up"]
    lines.append("whole again after the faults: " + ", ".join(f"{s:.1f} s" for s in recovered))
    return "\n".join(lines)
