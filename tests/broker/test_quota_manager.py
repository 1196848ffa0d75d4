"""ClientQuotaManager (kt/broker/quota_manager.py): Kafka's order of quota entities, the
rate over quota.window.num windows of quota.window.size.seconds, and the throttle time
(rate - quota) / quota * window."""

from __future__ import annotations

from kt.broker.quota_manager import (
    DEFAULT,
    PRODUCE,
    REQUEST,
    ClientQuotaManager,
    ConnectionQuotas,
    Rate,
)


def test_the_most_specific_quota_applies() -> None:
    manager = ClientQuotaManager(PRODUCE)
    manager.update({(None, DEFAULT): 1.0, (None, "c"): 2.0, (DEFAULT, None): 3.0,
                    ("u", None): 4.0, ("u", "c"): 5.0})  # fmt: skip
    assert manager.quota_entity("u", "c") == ("u", "c")
    assert manager.quota_entity("u", "d") == ("u", None)
    assert manager.quota_entity("v", "c") == (DEFAULT, None)
    manager.update({(None, DEFAULT): 1.0, (None, "c"): 2.0})
    assert manager.quota_entity("v", "c") == (None, "c")
    assert manager.quota_entity("v", "d") == (None, DEFAULT)
    assert ClientQuotaManager(PRODUCE).record("u", "c", 10**9) == 0  # no quota at all


def test_the_rate_window() -> None:
    """quota.window.num=11 windows of quota.window.size.seconds=1: a burst at the start is
    measured over at least ten seconds."""
    rate = Rate(1000, 11)
    rate.record(10_000, 0)
    assert rate.window(0) == 10_000 and rate.rate(0) == 1_000
    rate.record(10_000, 15_000)  # the first sample has left the window
    assert rate.rate(15_000) == 1_000


def test_the_throttle_time_is_the_excess_over_the_window() -> None:
    manager = ClientQuotaManager(PRODUCE, window_ms=1000, samples=11)
    manager.update({(None, "c"): 1000.0})
    assert manager.record("u", "c", 10_000, now_ms=0) == 0  # 1000 B/s over 10 s: at quota
    throttle = manager.record("u", "c", 10_000, now_ms=500)  # 2000 B/s: 100 % over
    assert throttle == 10_000
    other = ClientQuotaManager(PRODUCE, window_ms=1000, samples=2)
    other.update({(None, "c"): 1000.0})
    assert other.record("u", "c", 100_000, now_ms=0) == 2000  # capped at the full window


def test_connections_over_an_ips_creation_rate_are_held_then_closed() -> None:
    quotas = ConnectionQuotas(window_ms=1000, samples=11)
    quotas.update({"10.0.0.1": 1.0})
    held = [quotas.record("10.0.0.1", now_ms=i) for i in range(12)]
    assert held[:10] == [0] * 10 and all(h > 0 for h in held[10:])  # ten in the window
    assert quotas.record("10.0.0.2", now_ms=0) == 0  # no quota for that IP
    quotas.update({DEFAULT: 0.0})
    assert quotas.record("10.0.0.2", now_ms=0) == 1000  # none allowed at all


def test_a_request_quotas_throttle_is_at_most_one_window() -> None:
    """request_percentage: 10 % of a thread; 2 s of request time in the first 10 s window
    is 20 %, 100 % over, which a byte rate would throttle 10 s; Kafka's
    ClientRequestQuotaManager bounds it to quota.window.size.seconds."""
    manager = ClientQuotaManager(REQUEST, window_ms=1000, samples=11, max_throttle_ms=1000)
    manager.update({(None, "c"): 10.0})
    assert manager.record("u", "c", 1.0 * 100, now_ms=0) == 0  # 1 s of 10: 10 %
    assert manager.record("u", "c", 1.0 * 100, now_ms=500) == 1000
