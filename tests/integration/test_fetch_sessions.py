"""Incremental fetch sessions (KIP-227), as a broker whose session cache is always full.

kt creates no fetch session: every full fetch is served and answered with session id 0,
which tells the client to go on with full fetches (what Kafka answers when its cache,
`max.incremental.fetch.session.cache.slots`, is full). What clients meet on the way:
- a full fetch asking for a new session (epoch 0): served, session id 0;
- a client closing a session (epoch -1, with or without a session id): served, id 0;
- an incremental fetch (epoch > 0) for a session the broker does not know, as after the
  broker restarted: FETCH_SESSION_ID_NOT_FOUND and nothing else, after which librdkafka
  and the Java client start over with a full fetch;
- INVALID_FETCH_SESSION_EPOCH needs a session that exists, so it never arises here.
"""

from __future__ import annotations

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kt.client.connection import BrokerConnection
from kt.errors import KafkaError
from kt.protocol import ApiKey
from kt.protocol import messages as m

pytestmark = pytest.mark.slow

R = m.FetchRequest
NOT_FOUND = KafkaError("FETCH_SESSION_ID_NOT_FOUND").code


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    from kt.testing import KtCluster

    cluster = KtCluster(1, base_dir=tmp_path_factory.mktemp("fetch-sessions")).start()
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic("s", 1, 1)])["s"].result(30)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for i in range(10):
        producer.produce("s", value=b"%d" % i)
    assert producer.flush(30) == 0
    host, port = cluster.bootstrap_servers.split(",")[0].split(":")
    with BrokerConnection(host, int(port)) as connection:
        yield connection
    cluster.close()


def fetch(connection: BrokerConnection, session_id: int, epoch: int) -> m.FetchResponse:
    request = R(
        max_wait_ms=0, min_bytes=0, session_id=session_id, session_epoch=epoch,
        topics=[R.FetchTopic(topic="s", partitions=[
            R.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])],
    )  # fmt: skip
    return connection.send_version(ApiKey.FETCH, 12, request)


def served_records(response: m.FetchResponse) -> int:
    (topic,) = response.responses
    (partition,) = topic.partitions
    assert partition.error_code == 0
    return partition.high_watermark


@pytest.mark.parametrize(
    ("session_id", "epoch"),
    [(0, 0), (0, -1), (123, 0), (123, -1)],
    ids=["new-session", "sessionless", "restart-session", "close-session"],
)
def test_a_full_fetch_is_served_without_a_session(served, session_id: int, epoch: int) -> None:
    response = fetch(served, session_id, epoch)
    assert (response.error_code, response.session_id) == (0, 0)
    assert served_records(response) == 10


@pytest.mark.parametrize(("session_id", "epoch"), [(123, 1), (123, 7), (0, 1)])
def test_an_incremental_fetch_of_an_unknown_session_is_refused(
    served, session_id: int, epoch: int
) -> None:
    response = fetch(served, session_id, epoch)
    assert (response.error_code, response.session_id, response.responses) == (NOT_FOUND, 0, [])
