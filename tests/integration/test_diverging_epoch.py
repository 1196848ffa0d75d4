"""A fetcher's log that left the leader's (KIP-595: Fetch v12+ carries the epoch of the
fetcher's last batch, LastFetchedEpoch): the leader answers where they part, DivergingEpoch
(the epoch and its end offset on the leader), and nothing else, as Kafka's
Partition.readRecords does. A Kafka follower relies on it: after its leader was killed with
records no other replica had, it truncates there instead of failing every append (Kafka's
UnexpectedAppendOffsetException, the partition never back in the ISR)."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kt.client.connection import BrokerConnection
from kt.protocol import ApiKey
from kt.protocol import messages as m

pytestmark = pytest.mark.slow

R = m.FetchRequest


def produce(bootstrap: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(count):
        producer.produce("d", value=b"%d" % i, partition=0)
        producer.flush(30)  # one batch each: offsets are batch boundaries
    assert producer.flush(30) == 0


def fetch(
    bootstrap: str, offset: int, last_fetched_epoch: int, version: int = 12,
    long_poll: bool = False,
) -> Any:  # fmt: skip
    """One partition's answer; `long_poll`: asks for more than there is and waits up to
    60 s for it, on a connection that gives up after 10 s (an answer that waits fails)."""
    host, port = bootstrap.split(",")[0].split(":")
    request = R(
        max_wait_ms=60_000 if long_poll else 0, min_bytes=1 << 20 if long_poll else 0,
        replica_id=-1,
        topics=[R.FetchTopic(topic="d", partitions=[R.FetchPartition(
            partition=0, fetch_offset=offset, partition_max_bytes=1 << 20,
            last_fetched_epoch=last_fetched_epoch)])],
    )  # fmt: skip
    with BrokerConnection(host, int(port), timeout_s=10.0) as connection:
        response = connection.send_version(ApiKey.FETCH, version, request)
    ((partition,),) = [t.partitions for t in response.responses]
    return partition


def test_a_fetcher_past_the_end_of_its_epoch_is_told_where_the_logs_part(kt_cluster) -> None:
    cluster = kt_cluster(2)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic("d", 1, replica_assignment=[[0, 1]])])["d"].result(30)
    cluster.wait_until(lambda: len(cluster.partition_state("d", 0).isr) == 2, what="ISR [0, 1]")
    produce(cluster.bootstrap_servers, 5)  # epoch 0, led by broker 0: offsets 0-4
    cluster.stop_broker(0)  # broker 1 leads on, in epoch 1
    cluster.wait_until(lambda: cluster.partition_state("d", 0).leader_epoch == 1, what="epoch 1")
    bootstrap = f"127.0.0.1:{cluster.ports[1]}"
    produce(bootstrap, 5)  # epoch 1: offsets 5-9

    # A follower that had offsets 5-7 of epoch 0, which this log never had.
    parted = fetch(bootstrap, 8, last_fetched_epoch=0, long_poll=True)  # answered at once
    assert (parted.error_code, parted.high_watermark) == (0, 10)
    assert (parted.diverging_epoch.epoch, parted.diverging_epoch.end_offset) == (0, 5)
    assert not parted.records

    # In step: epoch 0 ends where it fetches from, and epoch 1 goes on past it.
    for offset, epoch in ((5, 0), (8, 1)):
        along = fetch(bootstrap, offset, last_fetched_epoch=epoch)
        assert (along.diverging_epoch.epoch, along.diverging_epoch.end_offset) == (-1, -1)
        assert along.records
    # Before v12 there is no epoch to compare: the records are served.
    assert fetch(bootstrap, 8, last_fetched_epoch=-1, version=11).records
