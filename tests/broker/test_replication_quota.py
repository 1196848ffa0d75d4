"""ReplicationQuotaManager's rate and the throttled-replicas lists."""

from kt.broker.replication.replication_quota import ReplicationQuotaManager, is_throttled


def test_throttled_replicas_lists() -> None:
    assert is_throttled("0:1,1:2", 0, 1) and is_throttled("0:1,1:2", 1, 2)
    assert not is_throttled("0:1,1:2", 0, 2) and not is_throttled("", 0, 1)
    assert is_throttled("*", 7, 3)
    assert is_throttled(" 3:0 , 4:0 ", 4, 0)


def test_rate_over_the_time_its_samples_cover() -> None:
    quota = ReplicationQuotaManager(rate=1000)
    assert not quota.is_quota_exceeded(now=0.0)
    assert quota.allowance(now=0.0) == 1000  # one window's worth to begin with
    quota.record(1000, now=0.0)
    assert not quota.is_quota_exceeded(now=0.5)  # 1000 B over the first (whole) window
    quota.record(600, now=0.5)
    assert quota.is_quota_exceeded(now=0.5) and quota.allowance(now=0.5) == 0
    assert not quota.is_quota_exceeded(now=1.6)  # 1600 B over 1.6 s
    assert quota.allowance(now=2.0) == 400
    # Samples older than the eleven windows expire.
    assert quota.measured_rate(now=13.0) == 0.0


def test_unlimited_records_nothing() -> None:
    quota = ReplicationQuotaManager()
    quota.record(10**9, now=0.0)
    assert not quota.bounded and not quota.is_quota_exceeded(now=0.0)
