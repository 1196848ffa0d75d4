"""A broker whose only log dir fills up, driven by librdkafka as a producer would.

Kafka's behaviour (LogDirFailureChannel, ReplicaManager.handleLogDirFailure): the append
that meets the full disk answers KAFKA_STORAGE_ERROR, the dir goes offline, and with no
log dir left the broker stops with exit status 1. After the operator frees space and
restarts it, the log holds every record that was acknowledged, and nothing else.
"""

from __future__ import annotations

import pytest
from confluent_kafka import Producer

from tests.integration.conftest import BrokerProcess
from tests.integration.test_replication import read_partition

pytestmark = pytest.mark.slow

VALUE_SIZE = 1000


def produce_until_refused(bootstrap: str, count: int) -> tuple[set[bytes], dict[str, int]]:
    """Produce `count` numbered records with acks=all, no retries; returns the values
    that were acknowledged and the errors of the rest, by name."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 5,
            "retries": 0,
            "message.timeout.ms": 10_000,
        }
    )
    acked: set[bytes] = set()
    errors: dict[str, int] = {}

    def delivered(err, msg) -> None:  # type: ignore[no-untyped-def]
        if err is None:
            acked.add(msg.value())
        else:
            errors[err.name()] = errors.get(err.name(), 0) + 1

    for i in range(count):
        value = b"%08d" % i + b"x" * (VALUE_SIZE - 8)
        while True:
            try:
                producer.produce("filled", value, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    assert producer.flush(60) == 0
    return acked, errors


def test_a_full_disk_loses_no_acknowledged_record(small_fs) -> None:
    fs = small_fs(16 << 20)
    broker = BrokerProcess(fs.path / "kt-logs", {"num.partitions": "1"})
    broker.log_dir.mkdir()
    broker.start()
    try:
        # 16 MiB hold about 15,000 records of 1 KB: the last third cannot fit.
        acked, errors = produce_until_refused(broker.bootstrap, 24_000)
        assert errors.get("KAFKA_STORAGE_ERROR", 0) > 0, errors
        assert set(errors) <= {"KAFKA_STORAGE_ERROR", "_TRANSPORT", "_MSG_TIMED_OUT"}, errors
        assert 10_000 < len(acked) < 24_000
        assert broker.proc is not None
        assert broker.proc.wait(30) == 1
        log = broker.run_log()
        assert f"Shutdown broker because all log dirs in {broker.log_dir} have failed" in log
        assert "Traceback" not in log

        fs.grow(64 << 20)
        broker.start()
        values = read_partition(broker.bootstrap, "filled")
        assert len(values) == len(set(values))
        assert set(values) == acked
        assert "Traceback" not in broker.run_log()
    finally:
        if broker.alive:
            broker.stop()
