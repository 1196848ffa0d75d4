"""/metrics on `metrics.listeners` (kt/metrics): scraped over HTTP, parsed by
prometheus-client's parser, while real clients produce and consume; the counts agree
with what was produced, the partition gauges with the cluster's state, the consumer lag
with the logs and the commits, and every series Strimzi's Kafka dashboard and alert
rules query from the JMX exporter and kafka_exporter is there."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kt.testing import KtCluster
from tests.integration.conftest import kt_ok
from tests.metrics.scrape import Series, consume
from tests.metrics.scrape import scrape as scrape_url

pytestmark = pytest.mark.slow

QUERIES = Path(__file__).resolve().parents[1] / "metrics" / "strimzi_kafka_queries.txt"
METRICS = {"metrics.listeners": "http://127.0.0.1:0"}
# Series that come from elsewhere than a Kafka broker and its exporters: Kubernetes
# (cAdvisor, kubelet, Prometheus's own `up`) and the JVM (kt has none).
NOT_THE_BROKERS = re.compile(r"^(container_|kubelet_|up$|jvm_)")


def scrape(cluster: KtCluster, broker_id: int) -> Series:
    port = cluster.brokers[broker_id].metrics_servers[0].port
    return scrape_url(f"http://127.0.0.1:{port}/metrics")


def value(series: dict, name: str, **labels: str) -> float:
    return series[name][tuple(sorted(labels.items()))]


def total(cluster: KtCluster, name: str) -> float:
    """A series summed over every running broker (as a dashboard's sum() does)."""
    return sum(sum(scrape(cluster, b).get(name, {}).values()) for b in cluster.brokers)


def test_the_counts_agree_with_what_was_produced_and_read(tmp_path: Path) -> None:
    overrides = {**METRICS, "log.flush.interval.messages": "100"}
    with KtCluster(1, base_dir=tmp_path, overrides=overrides) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        admin.create_topics([NewTopic("metered", 1, 1)])["metered"].result(30)
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 5})
        for i in range(1000):
            producer.produce("metered", b"v" * 100, key=b"%d" % i)
        assert producer.flush(30) == 0
        series = scrape(cluster, 0)
        topic = {"topic": "metered"}
        log_size = value(series, "kafka_log_log_size", topic="metered", partition="0")
        assert value(series, "kafka_server_brokertopicmetrics_messagesin_total", **topic) == 1000
        assert value(series, "kafka_server_brokertopicmetrics_bytesin_total", **topic) == log_size
        assert value(series, "kafka_log_log_logendoffset", topic="metered", partition="0") == 1000
        produces = series["kafka_network_requestmetrics_requests_total"]
        sent = sum(v for labels, v in produces.items() if ("request", "Produce") in labels)
        assert value(series, "kafka_network_requestmetrics_totaltimems_count",
                     request="Produce") == sent  # fmt: skip
        assert value(series, "kafka_server_brokertopicmetrics_totalproducerequests_total",
                     **topic) == sent  # one partition per request  # fmt: skip

        consume(cluster.bootstrap_servers, "g", "metered", 1000)
        series = scrape(cluster, 0)
        groups = "kafka_coordinator_group_groupmetadatamanager_"
        assert (value(series, groups + "numgroups"), value(series, groups + "numgroupsempty"),
                value(series, groups + "numgroupsstable")) == (1, 1, 0)  # fmt: skip
        assert value(series, "kafka_log_logflushstats_logflushrateandtimems_count") >= 1
        series = scrape(cluster, 0)
        assert value(series, "kafka_server_brokertopicmetrics_bytesout_total", **topic) >= log_size
        fetches = series["kafka_network_requestmetrics_requests_total"]
        assert sum(v for labels, v in fetches.items() if ("request", "FetchConsumer") in labels)

        # A deleted topic's meters go with it; the totals stay.
        admin.delete_topics(["metered"])["metered"].result(30)
        cluster.wait_until(lambda: not any(
            ("topic", "metered") in labels for samples in scrape(cluster, 0).values()
            for labels in samples), what="the topic's series gone")  # fmt: skip
        totals = scrape(cluster, 0)["kafka_server_brokertopicmetrics_messagesin_total"]
        assert totals[()] >= 1000


def test_strimzis_dashboard_and_alerts_find_every_broker_series(
    tmp_path: Path, zookeeper: str
) -> None:
    queries = [q for q in QUERIES.read_text().splitlines() if q and not q.startswith("#")]
    wanted = {name for query in queries for name in re.findall(r"[a-z_:][a-z0-9_:]*(?=[{\[ )]|$)",
              query) if "_" in name and not NOT_THE_BROKERS.match(name)}  # fmt: skip
    wanted -= {"by", "strimzi_io_name", "kubernetes_pod_name", "count_over_time", "query_result"}
    assert len(wanted) == 29, sorted(wanted)  # the file's broker series, read whole
    with KtCluster(3, base_dir=tmp_path, zookeeper_connect=zookeeper, overrides=METRICS) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        admin.create_topics([NewTopic("watched", 3, 3)])["watched"].result(30)
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
        producer.produce("watched", b"x")
        assert producer.flush(30) == 0
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "w"})
        consumer.commit(offsets=[KafkaPartition("watched", 0, 1)], asynchronous=False)
        consumer.close()
        served = set().union(*(scrape(cluster, b) for b in cluster.brokers))
        assert sorted(wanted - served) == []


def test_a_killed_broker_shows_in_the_under_replicated_counts(tmp_path: Path) -> None:
    overrides = {**METRICS, "replica.lag.time.max.ms": "2000", "min.insync.replicas": "2"}
    with KtCluster(3, base_dir=tmp_path, overrides=overrides) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        admin.create_topics([NewTopic("fragile", 3, 3)])["fragile"].result(30)
        cluster.wait_until(lambda: total(cluster, "kafka_cluster_partition_insyncreplicascount")
                           == 9, what="every ISR full")  # fmt: skip
        assert total(cluster, "kafka_server_replicamanager_underreplicatedpartitions") == 0
        assert total(cluster, "kafka_controller_kafkacontroller_activecontrollercount") == 1
        assert total(cluster, "kafka_server_replicamanager_partitioncount") == 9
        assert total(cluster, "kafka_server_replicamanager_leadercount") == 3
        assert total(cluster, "kafka_controller_kafkacontroller_globalpartitioncount") == 3
        cluster.kill_broker(2)
        under = "kafka_server_replicamanager_underreplicatedpartitions"
        cluster.wait_until(lambda: total(cluster, under) == 3, what="all under-replicated")
        assert total(cluster, "kafka_cluster_partition_underreplicated") == 3
        assert total(cluster, "kafka_cluster_partition_atminisr") == 3
        assert total(cluster, "kafka_server_replicamanager_atminisrpartitioncount") == 3
        assert total(cluster, "kafka_controller_kafkacontroller_offlinepartitionscount") == 0
        assert total(cluster, "kafka_controller_kafkacontroller_activecontrollercount") == 1

        # kt top finds the brokers' metrics through the cluster (DescribeConfigs).
        frame = kt_ok("top", "--bootstrap-server", cluster.bootstrap_servers, "--once",
                      "--interval", "0.2")  # fmt: skip
        controller = cluster.controller_id()
        assert frame[0] == (f"controller: {controller}   offline partitions: 0   "
                            "under-replicated partitions: 3")  # fmt: skip
        rows = [line.split("│")[1:-1] for line in frame if line.startswith("│")]
        brokers = {cells[0].strip(): [c.strip() for c in cells[1:]] for cells in rows
                   if len(cells) == 10}  # fmt: skip
        assert sorted(brokers) == sorted(f"{b}{' *' if b == controller else ''}" for b in (0, 1))
        assert sum(int(cells[7]) for cells in brokers.values()) == 3  # the URP column
        at_risk = sorted((c[0].strip(), c[1].strip()) for c in rows if len(c) == 3)
        assert at_risk == [("fragile", "0"), ("fragile", "1"), ("fragile", "2")]


def series_of(cluster: KtCluster, name: str) -> dict[tuple, float]:
    """One series' samples over every running broker; a sample on two brokers fails."""
    found: dict[tuple, float] = {}
    for b in cluster.brokers:
        for labels, v in scrape(cluster, b).get(name, {}).items():
            assert labels not in found, f"{name}{labels} served twice"
            found[labels] = v
    return found


def test_consumer_lag_is_the_log_end_minus_the_commit_as_kafka_exporter_says(
    tmp_path: Path,
) -> None:
    with KtCluster(3, base_dir=tmp_path, overrides=METRICS) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        admin.create_topics([NewTopic("lagging", 3, 1)])["lagging"].result(30)
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
        ends = {0: 30, 1: 20, 2: 10}
        for partition, n in ends.items():
            for _ in range(n):
                producer.produce("lagging", b"r", partition=partition)
        assert producer.flush(30) == 0
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers,
                             "group.id": "laggards", "enable.auto.commit": False})  # fmt: skip
        commits = {0: 25, 1: 3}  # nothing committed on partition 2
        consumer.commit(offsets=[KafkaPartition("lagging", p, o) for p, o in commits.items()],
                        asynchronous=False)  # fmt: skip
        consumer.close()

        def labels(*values: str, names: tuple = ("consumergroup", "partition", "topic")) -> tuple:
            return tuple(sorted(zip(names, values, strict=True)))

        lag = series_of(cluster, "kafka_consumergroup_lag")
        assert lag == {labels("laggards", "0", "lagging"): 5,
                       labels("laggards", "1", "lagging"): 17,
                       labels("laggards", "2", "lagging"): -1}  # fmt: skip
        current = series_of(cluster, "kafka_consumergroup_current_offset")
        assert current == {labels("laggards", str(p), "lagging"): o
                           for p, o in {0: 25, 1: 3, 2: -1}.items()}  # fmt: skip
        lag_sum = series_of(cluster, "kafka_consumergroup_lag_sum")
        assert lag_sum == {labels("laggards", "lagging", names=("consumergroup", "topic")): 22}
        assert series_of(cluster, "kafka_consumergroup_members") == {
            (("consumergroup", "laggards"),): 0}  # fmt: skip
        ends_served = series_of(cluster, "kafka_topic_partition_current_offset")
        assert {k: v for k, v in ends_served.items() if ("topic", "lagging") in k} == {
            (("partition", str(p)), ("topic", "lagging")): n for p, n in ends.items()
        }
        assert series_of(cluster, "kafka_brokers") == {(): 3}
        assert series_of(cluster, "kafka_topic_partitions")[(("topic", "lagging"),)] == 3
