"""Apache Kafka 3.9 with the Prometheus JMX exporter's Java agent and Strimzi's rules
(interop/kafka-metrics.yaml) beside kt's /metrics, each on ZooKeeper under the same
produce, consume and commit: every broker series Strimzi's Kafka dashboard and alert
rules query is served by both, with the same label names, and the values the scenario
fixes (messages in, log end offsets, partition and leader counts, replicas,
under-replicated and offline counts, the active controller) are the same; and with two
brokers of each, one killed, the survivor's under-replicated, at-min-ISR, partition,
leader and controller series are the same on both."""

from __future__ import annotations

import re
import time
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kt.reference_kafka import free_port, jmx_exporter_agent
from kt.testing import KtCluster
from tests._environment import unavailable
from tests.metrics.scrape import consume, scrape

RULES = Path(__file__).resolve().parents[2] / "interop" / "kafka-metrics.yaml"
QUERIES = Path(__file__).resolve().parents[1] / "metrics" / "strimzi_kafka_queries.txt"
# Not a Kafka broker's JMX exporter's: Kubernetes', the JVM's (kt has none), kafka_exporter's.
ELSEWHERE = re.compile(r"^(container_|kubelet_|up$|jvm_|kafka_topic_|kafka_consumergroup_)")
SETTINGS = {"offsets.topic.num.partitions": "3", "offsets.topic.replication.factor": "1",
            "group.initial.rebalance.delay.ms": "0"}  # fmt: skip
SAME_VALUES = [
    "kafka_server_replicamanager_partitioncount", "kafka_server_replicamanager_leadercount",
    "kafka_server_replicamanager_underreplicatedpartitions",
    "kafka_server_replicamanager_underminisrpartitioncount",
    "kafka_controller_kafkacontroller_activecontrollercount",
    "kafka_controller_kafkacontroller_offlinepartitionscount",
    "kafka_controller_kafkacontroller_globaltopiccount",
    "kafka_controller_kafkacontroller_globalpartitioncount",
    "kafka_log_logmanager_offlinelogdirectorycount",
]  # fmt: skip


def dashboard_series() -> set[str]:
    queries = [q for q in QUERIES.read_text().splitlines() if q and not q.startswith("#")]
    names = {n for q in queries for n in re.findall(r"[a-z_:][a-z0-9_:]*(?=[{\[ )]|$)", q)}
    return {n for n in names if n.startswith(("kafka_", "process_")) and not ELSEWHERE.match(n)}


def scenario(bootstrap: str) -> None:
    """The same work on both: a topic, 100 records to each of its partitions, a group
    that reads them all and commits."""
    # A Kafka broker on ZooKeeper answers Metadata without a controller until its own
    # controller's UpdateMetadata reaches it, and librdkafka's admin client, given such an
    # answer, did not send CreateTopics for a minute: ask once the controller is known.
    deadline = time.monotonic() + 60
    while AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).controller_id < 0:
        assert time.monotonic() < deadline, "no controller in Metadata"
        time.sleep(0.1)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("scenario", 3, 1)])["scenario"].result(60)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for partition in range(3):
        for i in range(100):
            producer.produce("scenario", b"v" * 50, key=b"%d" % i, partition=partition)
    assert producer.flush(60) == 0
    consume(bootstrap, "scenario-group", "scenario", 300, commit=True)


def label_names(series: dict[tuple, float]) -> set[frozenset[str]]:
    return {frozenset(k for k, _ in labels) for labels in series}


def test_kt_serves_the_series_kafka_serves_under_strimzis_rules(
    kafka_factory, zookeeper: str, tmp_path: Path
) -> None:
    agent = jmx_exporter_agent()
    if agent is None:
        unavailable("the JMX exporter's agent is not in Kafka's cache: run interop/fetch-kafka.sh")
    port = free_port()
    kafka = kafka_factory(
        zookeeper_connect=f"{zookeeper}/kafka",
        overrides=SETTINGS,
        jvm_options=[f"-javaagent:{agent}=127.0.0.1:{port}:{RULES}"],
    )
    scenario(kafka.bootstrap)
    theirs = scrape(f"http://127.0.0.1:{port}/metrics")
    with KtCluster(
        1,
        base_dir=tmp_path / "kt",
        zookeeper_connect=f"{zookeeper}/kt",
        overrides={**SETTINGS, "metrics.listeners": "http://127.0.0.1:0"},
    ) as kt:
        scenario(kt.bootstrap_servers)
        ours = scrape(f"http://127.0.0.1:{kt.brokers[0].metrics_servers[0].port}/metrics")

    wanted = dashboard_series()
    assert len(wanted) == 26
    assert sorted(wanted - set(theirs)) == []  # the oracle serves them all
    assert sorted(wanted - set(ours)) == []
    assert {n: label_names(ours[n]) for n in wanted} == {n: label_names(theirs[n]) for n in wanted}

    for name in SAME_VALUES:
        assert ours[name] == theirs[name], name
    topic = (("topic", "scenario"),)
    messages_in = "kafka_server_brokertopicmetrics_messagesin_total"
    assert ours[messages_in][topic] == theirs[messages_in][topic] == 300
    for partition in range(3):
        labels = (("partition", str(partition)), ("topic", "scenario"))
        for name in ("kafka_log_log_logendoffset", "kafka_cluster_partition_replicascount",
                     "kafka_cluster_partition_insyncreplicascount"):  # fmt: skip
            assert ours[name][labels] == theirs[name][labels], (name, labels)


AT_RISK = [
    "kafka_server_replicamanager_underreplicatedpartitions",
    "kafka_server_replicamanager_atminisrpartitioncount",
    "kafka_server_replicamanager_partitioncount", "kafka_server_replicamanager_leadercount",
    "kafka_controller_kafkacontroller_activecontrollercount",
    "kafka_controller_kafkacontroller_offlinepartitionscount",
    "kafka_cluster_partition_underreplicated", "kafka_cluster_partition_atminisr",
    "kafka_cluster_partition_insyncreplicascount", "kafka_cluster_partition_replicascount",
]  # fmt: skip
PAIR = {"zookeeper.session.timeout.ms": "4000", "offsets.topic.replication.factor": "2"}


def after_a_kill(urls: list[str], bootstrap: str, kill, survivor: str) -> dict:
    """Two brokers, a topic of 3 partitions on both, all in sync; then one killed: what
    the survivor serves once its 3 partitions are under-replicated."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("fragile", 3, 2)])["fragile"].result(60)

    def total(name: str) -> float:
        return sum(sum(scrape(url).get(name, {}).values()) for url in urls)

    wait_for(lambda: total("kafka_cluster_partition_insyncreplicascount") == 6, "full ISRs")
    kill()
    under = "kafka_server_replicamanager_underreplicatedpartitions"
    wait_for(lambda: total_of(scrape(survivor), under) == 3, "3 under-replicated partitions")
    served = scrape(survivor)
    return {name: served[name] for name in AT_RISK}


def total_of(series: dict, name: str) -> float:
    return sum(series.get(name, {}).values())


def wait_for(condition, what: str, timeout_s: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"no {what} in {timeout_s} s"
        time.sleep(0.2)


def test_a_killed_broker_shows_the_same_on_kafka_and_kt(
    kafka_factory, zookeeper: str, tmp_path: Path
) -> None:
    agent = jmx_exporter_agent()
    if agent is None:
        unavailable("the JMX exporter's agent is not in Kafka's cache: run interop/fetch-kafka.sh")
    ports = [free_port(), free_port()]
    brokers = [
        kafka_factory(broker_id=broker_id, zookeeper_connect=f"{zookeeper}/kafka", overrides=PAIR,
                      jvm_options=[f"-javaagent:{agent}=127.0.0.1:{port}:{RULES}"])
        for broker_id, port in zip((1, 2), ports, strict=True)
    ]  # fmt: skip
    urls = [f"http://127.0.0.1:{port}/metrics" for port in ports]
    wait_for(lambda: AdminClient({"bootstrap.servers": brokers[0].bootstrap}).list_topics(
        timeout=10).controller_id >= 0, "controller")  # fmt: skip
    theirs = after_a_kill(urls, brokers[0].bootstrap, brokers[1].kill, urls[0])
    with KtCluster(
        2,
        base_dir=tmp_path / "kt",
        zookeeper_connect=f"{zookeeper}/kt",
        overrides={**PAIR, "metrics.listeners": "http://127.0.0.1:0"},
    ) as kt:
        ours_urls = [f"http://127.0.0.1:{kt.brokers[b].metrics_servers[0].port}/metrics"
                     for b in (0, 1)]  # fmt: skip
        ours = after_a_kill(ours_urls, kt.bootstrap_servers, lambda: kt.kill_broker(1),
                            ours_urls[0])  # fmt: skip
    assert ours == theirs
