"""Client quotas, enforced (Kafka's ClientQuotaManager, KIP-13, KIP-55, KIP-124, KIP-219).

Quotas are the `producer_byte_rate`, `consumer_byte_rate` and `request_percentage` (the
share of one thread's time a client's requests may take, kt.broker.api.request_time) of the
entity configs that
AlterClientQuotas (or kafka-configs.sh) writes: `/config/users/<user>/clients/<client>`,
`/config/users/<user>`, `/config/clients/<client>` and their `<default>`s. A request's
quota is the most specific one that applies, in Kafka's order:

    user+client, user+default client, user, default user+client,
    default user+default client, default user, client, default client

and every client sharing that entity shares its rate. The rate is Kafka's Rate over
`quota.window.num` samples of `quota.window.size.seconds` (an elapsed window of at least
num-1 samples, so a short burst at the start is measured over the full window). When a
request takes the rate over the quota, the answer carries
throttle_time_ms = (rate - quota) / quota * window, and the connection reads no further
request for that long (Kafka mutes the channel); other connections are not slowed.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

DEFAULT = "<default>"
PRODUCE = "producer_byte_rate"
FETCH = "consumer_byte_rate"
REQUEST = "request_percentage"


@dataclass
class Rate:
    """Bytes over the last `samples` windows of `window_ms` (Kafka's Rate/SampledStat)."""

    window_ms: int
    samples: int
    buckets: deque[list[float]] = field(default_factory=deque)  # [start ms, total]

    def record(self, value: float, now_ms: float) -> None:
        if not self.buckets or now_ms - self.buckets[-1][0] >= self.window_ms:
            self.buckets.append([now_ms, 0.0])
            while len(self.buckets) > self.samples:
                self.buckets.popleft()
        self.buckets[-1][1] += value

    def window(self, now_ms: float) -> float:
        """The elapsed window the rate is measured over (at least samples-1 windows)."""
        while self.buckets and now_ms - self.buckets[0][0] >= self.window_ms * self.samples:
            self.buckets.popleft()
        elapsed = now_ms - self.buckets[0][0] if self.buckets else 0.0
        return max(elapsed, float(self.window_ms * (self.samples - 1)))

    def rate(self, now_ms: float) -> float:
        window = self.window(now_ms)
        return sum(total for _, total in self.buckets) / (window / 1000.0)


class ClientQuotaManager:
    """The quotas of one kind (produce, fetch or request) and each quota entity's rate.
    A throttle is at most the whole window (`max_throttle_ms`: one window for request
    quotas, as Kafka's ClientRequestQuotaManager bounds it)."""

    def __init__(
        self, kind: str, window_ms: int = 1000, samples: int = 11,
        max_throttle_ms: int | None = None,
    ) -> None:  # fmt: skip
        self.kind = kind
        self.window_ms = window_ms
        self.samples = samples
        self.max_throttle_ms = window_ms * samples if max_throttle_ms is None else max_throttle_ms
        # (user or DEFAULT or None, client or DEFAULT or None) -> bytes/s
        self.quotas: dict[tuple[str | None, str | None], float] = {}
        self.rates: dict[tuple[str | None, str | None], Rate] = {}

    def update(self, quotas: dict[tuple[str | None, str | None], float]) -> None:
        self.quotas = quotas
        self.rates = {k: v for k, v in self.rates.items() if k in quotas}

    def quota_entity(self, user: str, client: str) -> tuple[str | None, str | None] | None:
        """The most specific entity with a quota that applies to (user, client)."""
        for candidate in ((user, client), (user, DEFAULT), (user, None), (DEFAULT, client),
                          (DEFAULT, DEFAULT), (DEFAULT, None), (None, client),
                          (None, DEFAULT)):  # fmt: skip
            if candidate in self.quotas:
                return candidate
        return None

    def record(self, user: str, client: str, value: float, now_ms: float | None = None) -> int:
        """Count `value` (bytes; for request quotas, seconds of request time times 100,
        so that the rate is a percentage of one thread); the throttle time (ms) the
        answer carries, 0 if none."""
        if not self.quotas:
            return 0
        entity = self.quota_entity(user, client)
        if entity is None:
            return 0
        now = time.monotonic() * 1000 if now_ms is None else now_ms
        rate = self.rates.get(entity)
        if rate is None:
            rate = self.rates[entity] = Rate(self.window_ms, self.samples)
        rate.record(value, now)
        quota = self.quotas[entity]
        observed = rate.rate(now)
        if quota <= 0 or observed <= quota:
            return 0
        throttle = (observed - quota) / quota * rate.window(now)
        return int(min(throttle, self.max_throttle_ms))


def quotas_from_store(zk: object, kind: str) -> dict[tuple[str | None, str | None], float]:
    """Every entity's `kind` quota in the store (read on a store thread)."""
    from kt.metadata.znodes import desanitize

    found: dict[tuple[str | None, str | None], float] = {}

    def name(raw: str) -> str:
        return DEFAULT if raw == DEFAULT else str(desanitize(raw))

    def add(key: tuple[str | None, str | None], config: dict[str, str]) -> None:
        if kind in config:
            try:
                found[key] = float(config[kind])
            except ValueError:
                pass

    for user in zk.entity_names("users"):  # type: ignore[attr-defined]
        add((name(user), None), zk.get_entity_config("users", user))  # type: ignore[attr-defined]
    for path in zk.child_entity_names("users", "clients"):  # type: ignore[attr-defined]
        user, _, client = path.split("/")
        add((name(user), name(client)), zk.get_entity_config("users", path))  # type: ignore[attr-defined]
    for client in zk.entity_names("clients"):  # type: ignore[attr-defined]
        add((None, name(client)), zk.get_entity_config("clients", client))  # type: ignore[attr-defined]
    return found


CONNECTION_RATE = "connection_creation_rate"


class ConnectionQuotas:
    """The connection-creation rate quota per client IP (KIP-612's ConnectionQuotas):
    `/config/ips/<ip>` or `/config/ips/<default>`. A connection over the rate is held for
    the throttle time and then closed, unserved, as Kafka's acceptor does."""

    def __init__(self, window_ms: int = 1000, samples: int = 11) -> None:
        self.window_ms = window_ms
        self.samples = samples
        self.quotas: dict[str, float] = {}
        self.rates: dict[str, Rate] = {}

    def update(self, quotas: dict[str, float]) -> None:
        self.quotas = quotas
        self.rates = {ip: r for ip, r in self.rates.items() if ip in quotas or DEFAULT in quotas}

    def record(self, ip: str, now_ms: float | None = None) -> int:
        """Count a new connection from `ip`; how long to hold it before closing it (ms),
        or 0 to serve it."""
        quota = self.quotas.get(ip, self.quotas.get(DEFAULT))
        if quota is None:
            return 0
        now = time.monotonic() * 1000 if now_ms is None else now_ms
        rate = self.rates.get(ip)
        if rate is None:
            rate = self.rates[ip] = Rate(self.window_ms, self.samples)
        rate.record(1, now)
        observed = rate.rate(now)
        if observed <= quota:
            return 0
        if quota <= 0:
            return self.window_ms
        return int(
            min((observed - quota) / quota * rate.window(now), self.window_ms * self.samples)
        )


def ip_quotas_from_store(zk: object) -> dict[str, float]:
    """Every IP's connection_creation_rate in the store (read on a store thread)."""
    from kt.metadata.znodes import desanitize

    found = {}
    for ip in zk.entity_names("ips"):  # type: ignore[attr-defined]
        config = zk.get_entity_config("ips", ip)  # type: ignore[attr-defined]
        if CONNECTION_RATE in config:
            try:
                found[DEFAULT if ip == DEFAULT else str(desanitize(ip))] = float(
                    config[CONNECTION_RATE])  # fmt: skip
            except ValueError:
                pass
    return found
