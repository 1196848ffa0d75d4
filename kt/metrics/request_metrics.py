"""Kafka's RequestMetrics (`kafka.network:type=RequestMetrics,name=N,request=R`): for
each API (Fetch split into FetchConsumer and FetchFollower besides Fetch, as Kafka
does), RequestsPerSec by version and the histograms of a
request's times in milliseconds and its size in bytes.

kt's times, in Kafka's words: RequestQueueTimeMs from the request's last byte read to
its handler's start (requests a connection sent ahead wait behind the one in progress);
RemoteTimeMs the time it waited in a purgatory (acks=all, a fetch's max.wait.ms);
LocalTimeMs the rest of its handling; ThrottleTimeMs a quota's throttle;
ResponseQueueTimeMs none (the connection's own task writes the answer at once, there
is no response queue); ResponseSendTimeMs until the socket took the last byte;
TotalTimeMs all of these.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable

from kt.metrics.meters import Meter
from kt.metrics.registry import MetricsRegistry
from kt.protocol import ApiKey

TIMES = ("RequestQueueTimeMs", "LocalTimeMs", "RemoteTimeMs", "ThrottleTimeMs",
         "ResponseQueueTimeMs", "ResponseSendTimeMs", "TotalTimeMs")  # fmt: skip


class RemoteWait:
    """The seconds the current request has waited in purgatories: one per connection
    task, reset for each request, added to by `DelayedOperationPurgatory.wait_any`."""

    __slots__ = ("seconds",)

    def __init__(self) -> None:
        self.seconds = 0.0


REMOTE_WAIT: contextvars.ContextVar[RemoteWait | None] = contextvars.ContextVar(
    "remote_wait", default=None
)


def request_name(api_key: int) -> str:
    """Kafka's name of an API (ApiKeys.name): LIST_OFFSETS is ListOffsets."""
    return "".join(word.title() for word in ApiKey(api_key).name.split("_"))


class _ApiMetrics:
    def __init__(self, registry: MetricsRegistry, name: str) -> None:
        self.registry, self.name = registry, name
        tags = (("request", name),)
        self.times = [registry.histogram("kafka.network", "RequestMetrics", t, tags) for t in TIMES]
        self.request_bytes = registry.histogram("kafka.network", "RequestMetrics",
                                                "RequestBytes", tags)  # fmt: skip
        self.by_version: dict[int, Meter] = {}

    def requests(self, version: int) -> None:
        meter = self.by_version.get(version)
        if meter is None:
            meter = self.by_version[version] = self.registry.meter(
                "kafka.network", "RequestMetrics", "RequestsPerSec",
                (("request", self.name), ("version", str(version))),
            )  # fmt: skip
        meter.count += 1


class RequestMetrics:
    """Every API's metrics, created on its first request."""

    def __init__(self, registry: MetricsRegistry) -> None:
        self.registry = registry
        self._apis: dict[str, _ApiMetrics] = {}

    def api(self, name: str) -> _ApiMetrics:
        metrics = self._apis.get(name)
        if metrics is None:
            metrics = self._apis[name] = _ApiMetrics(self.registry, name)
        return metrics

    def record(
        self, names: Iterable[str], version: int, size: int, times_s: tuple[float, ...]
    ) -> None:
        """One request's answer: `times_s` in TIMES' order, in seconds."""
        for name in names:
            metrics = self.api(name)
            metrics.requests(version)
            for histogram, seconds in zip(metrics.times, times_s, strict=True):
                histogram.update(round(seconds * 1000, 3))
            metrics.request_bytes.update(size)
