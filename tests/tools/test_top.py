"""kt top's frame from two scrapes (kt/tools/top.py): counters become rates, gauges are
read from the second scrape, a broker that did not answer says so."""

from __future__ import annotations

from kt.tools.top import Scrape, frame, parse

FIRST = """# TYPE kafka_server_brokertopicmetrics_messagesin_total counter
kafka_server_brokertopicmetrics_messagesin_total 100
kafka_server_brokertopicmetrics_messagesin_total{topic="a"} 100
kafka_server_brokertopicmetrics_bytesin_total{topic="a"} 1000
kafka_server_brokertopicmetrics_bytesin_total 1000
"""
SECOND = """kafka_server_brokertopicmetrics_messagesin_total 300
kafka_server_brokertopicmetrics_messagesin_total{topic="a"} 300
kafka_server_brokertopicmetrics_bytesin_total{topic="a"} 5000
kafka_server_brokertopicmetrics_bytesin_total 5000
kafka_controller_kafkacontroller_activecontrollercount 1
kafka_controller_kafkacontroller_offlinepartitionscount 2
kafka_server_replicamanager_underreplicatedpartitions 1
kafka_server_replicamanager_partitioncount 7
kafka_network_requestmetrics_totaltimems{request="Produce",quantile="0.99"} 12.5
kafka_cluster_partition_underreplicated{topic="a",partition="1"} 1
kafka_cluster_partition_underreplicated{topic="a",partition="0"} 0
kafka_consumergroup_lag_sum{consumergroup="g \\"1\\"",topic="a"} 42
"""


def test_rates_gauges_and_a_silent_broker() -> None:
    before = {0: Scrape(10.0, parse(FIRST)), 1: Scrape(10.0, None, "refused")}
    after = {0: Scrape(12.0, parse(SECOND)), 1: Scrape(12.0, None, "refused")}
    got = frame(before, after)
    first, second = got.brokers
    assert (first.messages_in, first.bytes_in, first.controller) == (100.0, 2000.0, True)
    assert (first.produce_p99_ms, first.partitions, first.under_replicated) == (12.5, 7, 1)
    assert (second.reachable, second.error) == (False, "refused")
    assert (got.controller, got.offline_partitions) == (0, 2)
    assert [(t.topic, t.messages_in, t.bytes_in) for t in got.topics] == [("a", 100.0, 2000.0)]
    assert got.under_replicated == [("a", 1, 0)]
    assert got.lag == [('g "1"', "a", 42.0)]
