"""`kt top`: one cluster's state and rates from its brokers' /metrics.

The brokers' metrics endpoints come from the cluster itself: each broker's
`metrics.listeners` as DescribeConfigs answers it (a wildcard host is the broker's own),
or from --metrics-url. A frame compares two scrapes of every broker: counters become
rates over the time between them, gauges are read from the second.
"""

from __future__ import annotations

import re
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from kt.metrics.http_server import parse_metrics_listeners

BROKER_RESOURCE = 4
Series = dict[str, dict[tuple[tuple[str, str], ...], float]]
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
SCRAPE_TIMEOUT_S = 10.0


class TopError(Exception):
    """Nothing to show: no broker serves metrics."""


def parse(text: str) -> Series:
    """Prometheus text -> name -> {sorted labels: value} (the names as written)."""
    series: Series = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        sample, _, number = line.rpartition(" ")
        name, _, label_text = sample.partition("{")
        labels = tuple(sorted((k, v.replace('\\"', '"').replace("\\\\", "\\"))
                              for k, v in _LABEL.findall(label_text)))  # fmt: skip
        series.setdefault(name, {})[labels] = float(number)
    return series


def metrics_urls(admin: Any) -> dict[int, str]:
    """broker id -> its /metrics URL, from each broker's metrics.listeners."""
    admin.client.metadata([])
    urls = {}
    for broker_id, (host, _, _) in sorted(admin.client.brokers.items()):
        error, _, values = admin.describe_configs(BROKER_RESOURCE, str(broker_id),
                                                  ["metrics.listeners"])  # fmt: skip
        value = next((v.value for v in values if v.name == "metrics.listeners"), None)
        if error or not value:
            continue
        metrics_host, port = parse_metrics_listeners(value)[0]
        if metrics_host in ("0.0.0.0", "::", ""):
            metrics_host = host
        if ":" in metrics_host:
            metrics_host = f"[{metrics_host}]"
        urls[broker_id] = f"http://{metrics_host}:{port}/metrics"
    return urls


@dataclass
class Scrape:
    at: float
    series: Series | None  # None: the broker did not answer
    error: str = ""


def scrape(url: str) -> Scrape:
    at = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=SCRAPE_TIMEOUT_S) as answer:
            return Scrape(at, parse(answer.read().decode()))
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        return Scrape(at, None, str(reason))


@dataclass
class BrokerRow:
    broker_id: int
    controller: bool = False
    reachable: bool = True
    error: str = ""
    messages_in: float = 0.0  # a second
    bytes_in: float = 0.0
    bytes_out: float = 0.0
    produce_p99_ms: float = 0.0
    fetch_p99_ms: float = 0.0
    partitions: int = 0
    leaders: int = 0
    under_replicated: int = 0
    idle: float = 0.0


@dataclass
class TopicRow:
    topic: str
    messages_in: float = 0.0
    bytes_in: float = 0.0
    bytes_out: float = 0.0


@dataclass
class Frame:
    brokers: list[BrokerRow] = field(default_factory=list)
    topics: list[TopicRow] = field(default_factory=list)
    controller: int = -1
    offline_partitions: int = 0
    under_replicated: list[tuple[str, int, int]] = field(default_factory=list)  # (t, p, leader)
    lag: list[tuple[str, str, float]] = field(default_factory=list)  # (group, topic, lag)


def _one(series: Series, name: str, **labels: str) -> float:
    return series.get(name, {}).get(tuple(sorted(labels.items())), 0.0)


def _rate(before: Scrape, after: Scrape, name: str, **labels: str) -> float:
    assert before.series is not None and after.series is not None
    elapsed = after.at - before.at
    if elapsed <= 0:
        return 0.0
    return (
        max(0.0, _one(after.series, name, **labels) - _one(before.series, name, **labels)) / elapsed
    )


def frame(before: dict[int, Scrape], after: dict[int, Scrape]) -> Frame:
    """A frame from two scrapes of each broker."""
    out = Frame()
    topics: dict[str, TopicRow] = {}
    btm = "kafka_server_brokertopicmetrics_"
    for broker_id in sorted(after):
        first, second = before.get(broker_id), after[broker_id]
        if first is None or first.series is None or second.series is None:
            error = second.error or (first.error if first is not None else "")
            out.brokers.append(BrokerRow(broker_id, reachable=False, error=error))
            continue
        s = second.series
        row = BrokerRow(
            broker_id,
            controller=_one(s, "kafka_controller_kafkacontroller_activecontrollercount") == 1,
            messages_in=_rate(first, second, btm + "messagesin_total"),
            bytes_in=_rate(first, second, btm + "bytesin_total"),
            bytes_out=_rate(first, second, btm + "bytesout_total"),
            produce_p99_ms=_one(s, "kafka_network_requestmetrics_totaltimems",
                                request="Produce", quantile="0.99"),
            fetch_p99_ms=_one(s, "kafka_network_requestmetrics_totaltimems",
                              request="FetchConsumer", quantile="0.99"),
            partitions=int(_one(s, "kafka_server_replicamanager_partitioncount")),
            leaders=int(_one(s, "kafka_server_replicamanager_leadercount")),
            under_replicated=int(_one(s, "kafka_server_replicamanager_underreplicatedpartitions")),
            idle=_one(s, "kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent"),
        )  # fmt: skip
        out.brokers.append(row)
        if row.controller:
            out.controller = broker_id
            out.offline_partitions = int(
                _one(s, "kafka_controller_kafkacontroller_offlinepartitionscount")
            )
        for labels in s.get(btm + "messagesin_total", {}):
            if labels:
                topic = dict(labels)["topic"]
                t = topics.setdefault(topic, TopicRow(topic))
                t.messages_in += _rate(first, second, btm + "messagesin_total", topic=topic)
                t.bytes_in += _rate(first, second, btm + "bytesin_total", topic=topic)
                t.bytes_out += _rate(first, second, btm + "bytesout_total", topic=topic)
        for labels, value in s.get("kafka_cluster_partition_underreplicated", {}).items():
            if value:
                where = dict(labels)
                out.under_replicated.append((where["topic"], int(where["partition"]), broker_id))
        for labels, value in s.get("kafka_consumergroup_lag_sum", {}).items():
            where = dict(labels)
            out.lag.append((where["consumergroup"], where["topic"], value))
    out.topics = sorted(topics.values(), key=lambda t: (-t.bytes_in - t.bytes_out, t.topic))
    out.under_replicated.sort()
    out.lag.sort()
    return out


def sample(urls: dict[int, str]) -> dict[int, Scrape]:
    return {broker_id: scrape(url) for broker_id, url in urls.items()}
