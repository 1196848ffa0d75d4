"""The kinds of Kafka's Yammer metrics that its dashboards read: a Meter's Count, a
Histogram's (or a Timer's) Count and percentiles, and a Gauge's Value.

Counted per batch or per request, never per record: a mark is one integer addition, an
update one store into a ring. Rates are left to Prometheus (rate() over the counts),
as Strimzi's rules export only a Meter's Count.
"""

from __future__ import annotations

# A Histogram keeps the last RESERVOIR_SIZE updates (Yammer's reservoirs hold 1028):
# its percentiles describe the recent requests, computed when a scrape asks.
RESERVOIR_SIZE = 1028
# Yammer's Snapshot attributes the JMX exporter reads: 50thPercentile ... 999thPercentile.
PERCENTILES = (("50", 0.50), ("75", 0.75), ("95", 0.95), ("98", 0.98), ("99", 0.99),
               ("999", 0.999))  # fmt: skip


class Meter:
    """Kafka's Meter: how many events (records, bytes, requests) so far."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    def mark(self, n: int = 1) -> None:
        self.count += n


class Histogram:
    """Kafka's Histogram (and the Timer of a ...TimeMs or ...RateAndTimeMs metric): the
    number of updates and the recent values' percentiles."""

    __slots__ = ("count", "_values")

    def __init__(self) -> None:
        self.count = 0
        self._values: list[float] = []

    def update(self, value: float) -> None:
        if self.count < RESERVOIR_SIZE:
            self._values.append(value)
        else:
            self._values[self.count % RESERVOIR_SIZE] = value
        self.count += 1

    def percentiles(self) -> list[tuple[str, float]]:
        """(attribute digits, value) for each of Yammer's percentiles, as its Snapshot
        interpolates them: position q * (n + 1) in the sorted values."""
        values = sorted(self._values)
        n = len(values)
        result = []
        for digits, q in PERCENTILES:
            if n == 0:
                result.append((digits, 0.0))
                continue
            pos = q * (n + 1)
            if pos < 1:
                value = values[0]
            elif pos >= n:
                value = values[-1]
            else:
                lower = values[int(pos) - 1]
                value = lower + (pos - int(pos)) * (values[int(pos)] - lower)
            result.append((digits, float(value)))
        return result
