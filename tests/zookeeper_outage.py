"""What the ZooKeeper-outage scenario (kt.testing.outage.run_outage) must show, on kt
(tests/integration/test_zookeeper_outage.py) and on Apache Kafka 3.9
(tests/oracle/test_zookeeper_outage.py)."""

from __future__ import annotations

from kt.testing.outage import AFTER_PHASES, FAULT_PHASES, FAULT_S, PhaseReport


def assert_never_stopped(reports: dict[str, PhaseReport]) -> None:
    """Through the faults and after them, acknowledgements came nearly every second
    (a broker whose event loop waited on ZooKeeper gave none for the whole fault) and
    the consumer never waited half a fault for a record (it waited all of it)."""
    for name in (*FAULT_PHASES, *AFTER_PHASES):
        report = reports[name]
        for producer in ("acks=1", "acks=all"):
            assert report.seconds_with_acks(producer) >= 0.8, (name, producer, report.row())
        assert report.longest_consumer_gap_s < FAULT_S / 2, (name, report.row())


def assert_served_through(reports: dict[str, PhaseReport]) -> None:
    """Every phase, faults included: both producers acknowledged records and lost none,
    and the consumer read."""
    for name in ("before", *FAULT_PHASES, *AFTER_PHASES):
        report = reports[name]
        for producer in ("acks=1", "acks=all"):
            assert report.acked(producer) > 0, (name, producer)
            assert report.producers[producer].failed == 0, (name, producer)
        assert report.consumed > 0, name
