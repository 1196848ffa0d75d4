"""A new leader whose high watermark lags the start of its epoch answers ListOffsets for the
latest offset with OFFSET_NOT_AVAILABLE (retriable, KIP-207), as Kafka's
Partition.fetchOffsetForTimestamp does, instead of an offset from before the election
(a consumer reset to it would re-read what it had read, get-offsets would count too few).

Broker 0 leads, broker 1 copies everything, broker 2 stops fetching while it stays in the
ISR: the leader's high watermark cannot pass what broker 2 has, so broker 1 learns no
newer one. Broker 0 dies; broker 1 leads with a log end beyond its high watermark until
broker 2 leaves the ISR (replica.lag.time.max.ms)."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer

from kt.client.connection import BrokerConnection
from kt.errors import KafkaError
from kt.protocol import ApiKey
from kt.protocol import messages as m
from tests.integration.test_reassignment import create

pytestmark = pytest.mark.slow

EARLIEST, LATEST = -2, -1


def list_offset(port: int, timestamp: int, replica_id: int = -1) -> tuple[int, int]:
    """(error code, offset) of ListOffsets v7 for t-0 at `timestamp`."""
    R = m.ListOffsetsRequest
    request = R(replica_id=replica_id, isolation_level=0, topics=[R.ListOffsetsTopic(
        name="t", partitions=[R.ListOffsetsPartition(partition_index=0, timestamp=timestamp)],
    )])  # fmt: skip
    with BrokerConnection("127.0.0.1", port) as connection:
        response = connection.send(ApiKey.LIST_OFFSETS, request, version=7)
    answer = response.topics[0].partitions[0]
    return answer.error_code, answer.offset


def test_a_new_leader_behind_its_high_watermark_says_offset_not_available(kt_cluster) -> None:
    cluster = kt_cluster(3, overrides={"replica.lag.time.max.ms": "4000",
                                       "auto.leader.rebalance.enable": "false"})  # fmt: skip
    create(cluster, "t", {0: [0, 1, 2]})
    cluster.wait_until(lambda: cluster.partition_state("t", 0).isr == [0, 1, 2], what="full ISR")
    cluster._run(cluster.brokers[2].replica_manager.fetcher_manager.shutdown())
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": 1})
    for i in range(10):
        producer.produce("t", f"v{i}".encode(), partition=0)
    assert producer.flush(30) == 0
    copied = cluster.brokers[1].replica_manager.partitions
    cluster.wait_until(lambda: copied[("t", 0)].log.log_end_offset == 10, what="copied")

    cluster.kill_broker(0)
    cluster.wait_until(lambda: cluster.leader_of("t", 0) == 1, what="broker 1 leads")
    port = cluster.ports[1]
    cluster.wait_until(lambda: copied[("t", 0)].is_leader, what="broker 1 heard it leads")
    not_available = KafkaError("OFFSET_NOT_AVAILABLE").code
    assert list_offset(port, LATEST) == (not_available, -1)
    assert list_offset(port, EARLIEST) == (0, 0)  # the log start is known
    assert list_offset(port, 0)[0] == not_available  # not found below the high watermark
    assert list_offset(port, LATEST, replica_id=2) == (0, 10)  # a follower reads the log end
    # Broker 2 leaves the ISR: the high watermark is the log end, and the offset is there.
    cluster.wait_until(lambda: list_offset(port, LATEST) == (0, 10), what="the offset")
    assert cluster.partition_state("t", 0).isr == [1]
