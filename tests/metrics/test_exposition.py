"""The Prometheus names kt's metrics get: those the JMX exporter gives Kafka's MBeans
under Strimzi's rules (kt/metrics/exposition.py), checked on literal text."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from kt.metrics.exposition import gauge_name, kafka_metric_name, render
from kt.metrics.meters import Histogram
from kt.metrics.registry import MetricName, MetricsRegistry


def test_meters_gauges_and_histograms_take_strimzis_names() -> None:
    registry = MetricsRegistry()
    registry.meter("kafka.server", "BrokerTopicMetrics", "MessagesInPerSec",
                   (("topic", 'a"b'),)).mark(3)  # fmt: skip
    registry.meter("kafka.server", "BrokerTopicMetrics", "BytesInPerSec").mark(100)
    registry.gauge("kafka.server", "ReplicaManager", "UnderReplicatedPartitions", lambda: 2)
    registry.gauge("kafka.network", "SocketServer", "NetworkProcessorAvgIdlePercent", lambda: 0.5)
    registry.gauge("kafka.server", "KafkaServer", "linux-disk-read-bytes", lambda: 7)
    registry.histogram("kafka.network", "RequestMetrics", "TotalTimeMs",
                       (("request", "Produce"),)).update(4)  # fmt: skip
    size = MetricName("kafka.log", "Log", "Size")
    columns = [
        (gauge_name(size), "gauge", str(size)),
        (kafka_metric_name("socket-server-metrics", "connection-count"), "gauge", ""),
    ]
    registry.gauge_table(columns, ("topic", "partition"),
                         lambda: [(("t", "0"), [10, None]), (("t", "1"), [20, 5])])  # fmt: skip
    lines = [line for line in render(registry).splitlines() if not line.startswith("#")]
    assert lines == [
        'kafka_server_brokertopicmetrics_messagesin_total{topic="a\\"b"} 3',
        "kafka_server_brokertopicmetrics_bytesin_total 100",
        "kafka_server_replicamanager_underreplicatedpartitions 2",
        "kafka_network_socketserver_networkprocessoravgidle_percent 0.5",
        "kafka_server_kafkaserver_linux_disk_read_bytes 7",
        'kafka_network_requestmetrics_totaltimems_count{request="Produce"} 1',
        'kafka_network_requestmetrics_totaltimems{request="Produce",quantile="0.50"} 4.0',
        'kafka_network_requestmetrics_totaltimems{request="Produce",quantile="0.75"} 4.0',
        'kafka_network_requestmetrics_totaltimems{request="Produce",quantile="0.95"} 4.0',
        'kafka_network_requestmetrics_totaltimems{request="Produce",quantile="0.98"} 4.0',
        'kafka_network_requestmetrics_totaltimems{request="Produce",quantile="0.99"} 4.0',
        'kafka_network_requestmetrics_totaltimems{request="Produce",quantile="0.999"} 4.0',
        'kafka_log_log_size{topic="t",partition="0"} 10',
        'kafka_log_log_size{topic="t",partition="1"} 20',
        'kafka_server_socket_server_metrics_connection_count{topic="t",partition="1"} 5',
    ]


def test_the_text_is_what_prometheus_parses() -> None:
    registry = MetricsRegistry()
    registry.meter("kafka.server", "BrokerTopicMetrics", "BytesOutPerSec", (("topic", "x\\y\n"),))
    registry.histogram("kafka.controller", "ControllerStats", "LeaderElectionRateAndTimeMs")
    families = {f.name: f for f in text_string_to_metric_families(render(registry))}
    (sample,) = families["kafka_server_brokertopicmetrics_bytesout"].samples
    assert (sample.name, sample.labels, sample.value) == (
        "kafka_server_brokertopicmetrics_bytesout_total", {"topic": "x\\y\n"}, 0.0)  # fmt: skip
    quantiles = families["kafka_controller_controllerstats_leaderelectionrateandtimems"]
    assert [s.labels["quantile"] for s in quantiles.samples] == [
        "0.50", "0.75", "0.95", "0.98", "0.99", "0.999"]  # fmt: skip


def test_percentiles_interpolate_as_yammers_snapshot() -> None:
    histogram = Histogram()
    for value in range(1, 101):
        histogram.update(value)
    got = dict(histogram.percentiles())
    # position q * (n + 1) in the sorted values: 50.5 -> between 50 and 51
    assert got["50"] == 50.5
    assert got["99"] == 99.99
    assert got["999"] == 100


def test_a_histogram_keeps_the_newest_values() -> None:
    histogram = Histogram()
    for _ in range(5000):
        histogram.update(1000)
    for _ in range(1028):
        histogram.update(1)
    assert histogram.count == 6028
    assert dict(histogram.percentiles())["999"] == 1
