"""A broker's metrics under Kafka's MBean names (`kafka.server:type=BrokerTopicMetrics,
name=MessagesInPerSec,topic=t`), one registry per broker (a test cluster runs several
brokers in one process).

Metrics are read by the scrape's thread while the event loop updates them: every read
takes a copy that CPython makes whole under the GIL (list() of a dict, an int), so a
scrape sees each value as it was at some instant and never stops the loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from kt.metrics.meters import Histogram, Meter

Tags = tuple[tuple[str, str], ...]
# A family's rows: the values of its label names, and the value.
Rows = Callable[[], Iterable[tuple[tuple[str, ...], float]]]
# Gauges named as they are served (kafka_exporter's): (name, label names, rows) each.
NamedGauges = Callable[
    [], Iterable[tuple[str, tuple[str, ...], list[tuple[tuple[str, ...], float]]]]
]


@dataclass(frozen=True)
class MetricName:
    """An MBean name: `domain:type=T,name=N` and its tags, in Kafka's order."""

    domain: str
    type: str
    name: str
    tags: Tags = ()

    def __str__(self) -> str:
        tags = "".join(f",{k}={v}" for k, v in self.tags)
        return f"{self.domain}:type={self.type},name={self.name}{tags}"


@dataclass(frozen=True)
class GaugeFamily:
    """Gauges of one name with a row per tag set, read together (per partition and per
    log: 10,000 partitions are one pass over the broker's partitions, not 10,000
    registered gauges)."""

    name: MetricName  # without tags
    label_names: tuple[str, ...]
    rows: Rows


@dataclass(frozen=True)
class KafkaMetricFamily:
    """Metrics of Kafka's own metrics library (`kafka.server:type=socket-server-metrics,
    listener=L,networkProcessor=N` attribute `connection-count`): an MBean per tag set,
    an attribute per metric."""

    domain: str
    type: str
    attribute: str
    label_names: tuple[str, ...]
    rows: Rows


@dataclass
class MetricsRegistry:
    meters: dict[MetricName, Meter] = field(default_factory=dict)
    histograms: dict[MetricName, Histogram] = field(default_factory=dict)
    gauges: dict[MetricName, Callable[[], float]] = field(default_factory=dict)
    families: list[GaugeFamily | KafkaMetricFamily] = field(default_factory=list)
    named_gauges: list[NamedGauges] = field(default_factory=list)

    def meter(self, domain: str, type_: str, name: str, tags: Tags = ()) -> Meter:
        key = MetricName(domain, type_, name, tags)
        meter = self.meters.get(key)
        if meter is None:
            meter = self.meters[key] = Meter()
        return meter

    def histogram(self, domain: str, type_: str, name: str, tags: Tags = ()) -> Histogram:
        key = MetricName(domain, type_, name, tags)
        histogram = self.histograms.get(key)
        if histogram is None:
            histogram = self.histograms[key] = Histogram()
        return histogram

    def gauge(
        self, domain: str, type_: str, name: str, value: Callable[[], float], tags: Tags = ()
    ) -> None:
        self.gauges[MetricName(domain, type_, name, tags)] = value

    def gauge_family(
        self, domain: str, type_: str, name: str, label_names: tuple[str, ...], rows: Rows
    ) -> None:
        self.families.append(GaugeFamily(MetricName(domain, type_, name), label_names, rows))

    def kafka_metric(
        self, type_: str, attribute: str, label_names: tuple[str, ...], rows: Rows
    ) -> None:
        self.families.append(KafkaMetricFamily("kafka.server", type_, attribute, label_names,
                                               rows))  # fmt: skip

    def remove_tagged(self, tag: tuple[str, str]) -> None:
        """Forget the meters and histograms with this tag (a deleted topic's)."""
        for metrics in (self.meters, self.histograms):
            for key in [k for k in list(metrics) if tag in k.tags]:
                metrics.pop(key, None)
