"""A broker's metrics under Kafka's MBean names (`kafka.server:type=BrokerTopicMetrics,
name=MessagesInPerSec,topic=t`), one registry per broker (a test cluster runs several
brokers in one process).

A scrape renders on the broker's event loop, a few rows at a step
(exposition.render_in_steps); the controller's metrics, updated on its own thread, are
read with copies that CPython makes whole under the GIL (list() of a dict, an int).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field

from kt.metrics.meters import Histogram, Meter

Tags = tuple[tuple[str, str], ...]
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
class GaugeTable:
    """Gauges read together: a row per tag set (a partition), a column per gauge, each
    column a (Prometheus name, type, help); a cell None has no sample. 10,000 partitions
    are one pass over the broker's partitions and one label text each, not 100,000
    registered gauges."""

    columns: tuple[tuple[str, str, str], ...]
    label_names: tuple[str, ...]
    rows: Callable[[], Iterable[tuple[tuple[str, ...], Sequence[float | None]]]]
    # Each row's values and lines at the last scrape (exposition's, on the event loop).
    cache: dict[tuple[str, ...], tuple[tuple, tuple]] = field(default_factory=dict)


@dataclass
class MetricsRegistry:
    meters: dict[MetricName, Meter] = field(default_factory=dict)
    histograms: dict[MetricName, Histogram] = field(default_factory=dict)
    gauges: dict[MetricName, Callable[[], float]] = field(default_factory=dict)
    tables: list[GaugeTable] = field(default_factory=list)
    named_gauges: list[NamedGauges] = field(default_factory=list)
    # Run on the event loop before each scrape renders (kafka_exporter's ListOffsets).
    before_scrape: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

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

    def gauge_table(
        self,
        columns: Iterable[tuple[str, str, str]],
        label_names: tuple[str, ...],
        rows: Callable[[], Iterable[tuple[tuple[str, ...], Sequence[float | None]]]],
    ) -> None:
        self.tables.append(GaugeTable(tuple(columns), label_names, rows))

    def remove_tagged(self, tag: tuple[str, str]) -> None:
        """Forget the meters and histograms with this tag (a deleted topic's)."""
        for metrics in (self.meters, self.histograms):
            for key in [k for k in list(metrics) if tag in k.tags]:
                metrics.pop(key, None)
