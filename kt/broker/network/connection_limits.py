"""The broker's limits on its connections (Kafka's ConnectionQuotas, KIP-402 and KIP-612):

- max.connections.per.ip, and per host or address max.connections.per.ip.overrides
  ("host:count,..."): a connection from an address that already holds its maximum is
  closed at once, unserved ("Rejected connection from /ip, address already has the
  configured maximum of N connections.");
- max.connections: the broker's open connections, across its listeners but the
  inter-broker one; at the limit the listeners stop accepting (new connections wait in
  the kernel's backlog, as Kafka's acceptor waits for a slot) until one closes;
- max.connection.creation.rate: new connections per second, the inter-broker listener
  exempt; over the rate a listener stops accepting for as long as the rate needs to fall
  back (Kafka's acceptor throttling);
- listener.name.<listener>.max.connections and .max.connection.creation.rate: the same
  for one listener's own connections, beside the broker's.

Invariant: `open_by_ip` counts exactly the connections admitted and not yet released.
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Callable
from typing import Any

from kt.broker.quota_manager import Rate
from kt.errors import InvalidConfigError

log = logging.getLogger(__name__)
UNLIMITED = 2**31 - 1


def parse_overrides(text: str) -> dict[str, int]:
    """max.connections.per.ip.overrides: "host:count,..." by address (each host resolved
    as Kafka's InetAddress.getByName does, once at start-up)."""
    overrides: dict[str, int] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        host, sep, count = item.rpartition(":")
        try:
            if not sep or not host:
                raise ValueError(item)
            address = socket.gethostbyname(host)
            overrides[address] = int(count)
        except (ValueError, OSError):
            raise InvalidConfigError(
                f"Invalid value {text} for configuration max.connections.per.ip.overrides: "
                f"{item} is not host:count with a host that resolves"
            ) from None
    return overrides


class ConnectionLimits:
    """Counts the open connections of one broker, by address, and says whether a new one
    may be served."""

    @classmethod
    def from_config(cls, cfg: Any) -> ConnectionLimits:
        """The limits server.properties sets: broker-wide, per IP (with overrides), per
        listener; the inter-broker listener protected only beside others
        (ConnectionQuotas.protectedListener)."""
        listeners = cfg.listeners
        return cls(
            cfg["max.connections"], cfg["max.connections.per.ip"],
            parse_overrides(cfg["max.connections.per.ip.overrides"]),
            cfg["max.connection.creation.rate"],
            cfg.listener_config.inter_broker if len(listeners) > 1 else "",
            cfg["quota.window.size.seconds"] * 1000, cfg["quota.window.num"],
            *({listener.listener_name: value for listener in listeners
               if (value := cfg.listener_value(listener.listener_name, key)) is not None}
              for key in ("max.connections", "max.connection.creation.rate")),
        )  # fmt: skip

    def __init__(
        self,
        max_connections: int = UNLIMITED,
        max_per_ip: int = UNLIMITED,
        overrides: dict[str, int] | None = None,
        creation_rate: int = UNLIMITED,
        inter_broker_listener: str = "",
        window_ms: int = 1000,
        samples: int = 11,
        listener_max: dict[str, int] | None = None,
        listener_rates: dict[str, int] | None = None,
    ) -> None:
        self.max_connections = max_connections
        self.max_per_ip = max_per_ip
        self.overrides = overrides or {}
        self.creation_rate = creation_rate
        self.inter_broker_listener = inter_broker_listener
        self.open_by_ip: dict[str, int] = {}
        self.total = 0  # connections counted against max.connections
        self._rate = Rate(window_ms, samples)
        self.listener_max = listener_max or {}
        self.listener_open: dict[str, int] = {}
        self._listener_rates = {listener: (rate, Rate(window_ms, samples))
                                for listener, rate in (listener_rates or {}).items()}  # fmt: skip
        # Called when a slot frees: the listeners that stopped at max.connections resume.
        self.on_slot_freed: list[Callable[[], None]] = []

    def limit_for(self, ip: str) -> int:
        return self.overrides.get(ip, self.max_per_ip)

    def exempt(self, listener: str) -> bool:
        return listener == self.inter_broker_listener

    def at_max_connections(self, listener: str) -> bool:
        if self.listener_open.get(listener, 0) >= self.listener_max.get(listener, UNLIMITED):
            return True
        return not self.exempt(listener) and self.total >= self.max_connections

    def creation_delay_s(self, listener: str) -> float:
        """Record one new connection on `listener`; how long its acceptor should pause so
        that the broker's creation rate, and the listener's own, stay within their
        max.connection.creation.rate."""
        now = time.monotonic() * 1000
        delay = 0.0
        if not self.exempt(listener) and self.creation_rate < UNLIMITED:
            delay = _throttle_s(self._rate, self.creation_rate, now)
        if listener in self._listener_rates:
            limit, rate = self._listener_rates[listener]
            delay = max(delay, _throttle_s(rate, limit, now))
        return delay

    def admit(self, ip: str, listener: str) -> bool:
        """Count a new connection from `ip`, or refuse it (False) when its address holds
        its maximum already."""
        held = self.open_by_ip.get(ip, 0)
        limit = self.limit_for(ip)
        if held >= limit:
            log.info("Rejected connection from /%s, address already has the configured "
                     "maximum of %d connections.", ip, limit)  # fmt: skip
            return False
        self.open_by_ip[ip] = held + 1
        self.listener_open[listener] = self.listener_open.get(listener, 0) + 1
        if not self.exempt(listener):
            self.total += 1
        return True

    def release(self, ip: str, listener: str) -> None:
        held = self.open_by_ip.get(ip, 0)
        if held <= 1:
            self.open_by_ip.pop(ip, None)
        else:
            self.open_by_ip[ip] = held - 1
        self.listener_open[listener] = self.listener_open.get(listener, 1) - 1
        if not self.exempt(listener):
            self.total -= 1
        for resume in list(self.on_slot_freed):  # each paused listener looks again
            resume()


def _throttle_s(rate: Rate, limit: int, now_ms: float) -> float:
    """Record one connection in `rate`; how long to pause to keep it within `limit`/s."""
    rate.record(1, now_ms)
    observed = rate.rate(now_ms)
    if observed <= limit:
        return 0.0
    if limit <= 0:
        return rate.window(now_ms) / 1000
    return (observed - limit) / limit * rate.window(now_ms) / 1000
