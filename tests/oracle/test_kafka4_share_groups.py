"""Share groups (KIP-932) on Kafka 4.4 and on kt, side by side."""

from __future__ import annotations

from kt.reference_kafka import KAFKA4_VERSION
from tests.share.test_share_consumers import SHARE, classic_requests_on_a_share_group

# Kafka 4.4 serves share groups by default; its members heartbeat quickly here, as kt's.
KAFKA4_SHARE = {
    "group.share.heartbeat.interval.ms": "500",
    "group.share.min.heartbeat.interval.ms": "500",
}


def test_classic_group_apis_answer_a_share_group_as_kafka4(kafka_factory, broker_factory) -> None:
    """DescribeGroups, OffsetCommit, OffsetDelete and DeleteGroups on a share group with a
    member: Kafka 4.4's answers are kt's."""
    kafka = kafka_factory(version=KAFKA4_VERSION, overrides=KAFKA4_SHARE)
    theirs = classic_requests_on_a_share_group(kafka.bootstrap)
    assert theirs["DeleteGroups"] == [68]  # NON_EMPTY_GROUP: the member was there
    assert classic_requests_on_a_share_group(broker_factory(**SHARE).bootstrap) == theirs
