"""kt's producer with per-record callbacks (kt.client.sender), what `kt producer-perf-test`
sends through: every record's callback with its offset, each partition's records in
send order and once, batches gathered by the client while requests are in flight, and
each record told of a batch the broker refused."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kt.client.client import KafkaClient
from kt.client.producer import Producer
from kt.client.sender import PipelinedProducer
from kt.errors import KafkaError

pytestmark = pytest.mark.slow


def create(bootstrap: str, topic: str, partitions: int, **config: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1, config=config)])[topic].result(30)


def read_all(bootstrap: str, topic: str, partitions: int, count: int) -> list:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "check",
                         "enable.auto.commit": False})  # fmt: skip
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: list = []
    while len(got) < count:
        messages = consumer.consume(1000, 10)
        assert messages, f"only {len(got)} of {count} records came"
        got += [m for m in messages if m.error() is None]
    consumer.close()
    return got


def test_each_record_is_answered_in_order_and_written_once(module_broker) -> None:
    bootstrap = module_broker.bootstrap
    create(bootstrap, "piped", 3)
    client = KafkaClient(bootstrap)
    producer = PipelinedProducer(Producer(client, acks=-1), linger_ms=0, max_in_flight=2)
    answers: dict[bytes, int] = {}

    def answered(key: bytes):
        def on_delivery(error: KafkaError | None, offset: int) -> None:
            assert error is None
            answers[key] = offset

        return on_delivery

    for i in range(3000):
        key = f"k{i}".encode()
        producer.send("piped", f"v{i}".encode(), key=key, on_delivery=answered(key))
        if i % 100 == 0:
            producer.poll(0)
    producer.flush()
    client.close()
    assert len(answers) == 3000
    records = read_all(bootstrap, "piped", 3, 3000)
    assert len(records) == 3000  # nothing twice
    assert {m.key(): m.offset() for m in records} == answers
    for m in records:  # the value sent with the key
        assert m.value() == b"v" + m.key()[1:]
    by_partition: dict[int, list[int]] = {}
    for m in records:
        by_partition.setdefault(m.partition(), []).append(int(m.key()[1:]))
    for sent in by_partition.values():  # each partition's records in the order sent
        assert sent == sorted(sent)


def test_records_gather_into_batches_while_requests_are_in_flight(module_broker) -> None:
    bootstrap = module_broker.bootstrap
    create(bootstrap, "gathered", 1)
    client = KafkaClient(bootstrap)
    producer = PipelinedProducer(Producer(client, acks=-1), linger_ms=0, max_in_flight=1)
    done: list[int] = []
    for _ in range(2000):
        producer.send("gathered", b"x" * 10, on_delivery=lambda e, o: done.append(o))
        producer.poll(0)
    producer.flush()
    client.close()
    assert sorted(done) == list(range(2000))
    # linger.ms 0 and one request at a time: records wait for the one in flight, and go
    # together (a batch per record would be 2000 batches).
    assert len(_batches(bootstrap, "gathered")) < 1000


def _batches(bootstrap: str, topic: str) -> list[int]:
    """The base offsets of the topic's batches, read with kt's consumer."""
    from kt.client.consumer import Consumer as KtConsumer

    client = KafkaClient(bootstrap)
    consumer = KtConsumer(client)
    consumer.assign({(topic, 0): 0})
    bases: list[int] = []
    while consumer.positions[(topic, 0)] < 2000:
        batches = consumer.poll_batches(2000)
        assert batches, "no batch came"
        bases += [batch.base_offset for _, batch, _ in batches]
    client.close()
    return bases


def test_a_refused_batch_tells_each_of_its_records(module_broker) -> None:
    bootstrap = module_broker.bootstrap
    create(bootstrap, "refused", 1, **{"min.insync.replicas": "2"})  # one replica: never
    client = KafkaClient(bootstrap)
    # retried (NOT_ENOUGH_REPLICAS is retriable) until delivery.timeout.ms, then reported
    producer = PipelinedProducer(Producer(client, acks=-1), linger_ms=0,
                                 delivery_timeout_ms=1500)  # fmt: skip
    errors: list[str] = []
    for _ in range(10):
        producer.send("refused", b"x", on_delivery=lambda e, o: errors.append(e.name))
    producer.flush()
    client.close()
    assert errors == ["NOT_ENOUGH_REPLICAS"] * 10


def test_buffer_memory_bounds_what_waits_for_answers(module_broker) -> None:
    """buffer.memory (RecordAccumulator's bounded buffer): a producer faster than its
    broker waits in send() rather than queue without end; no more than the bound (and
    the batch closing over it) waits unanswered, and every record is answered once."""
    bootstrap = module_broker.bootstrap
    create(bootstrap, "bounded", 1)
    client = KafkaClient(bootstrap)
    producer = PipelinedProducer(Producer(client, acks=-1, batch_size=8192), linger_ms=0,
                                 max_in_flight=1, buffer_memory=32768)  # fmt: skip
    answered: list[int] = []
    most = 0
    for i in range(4000):  # 4 MB: never polled, only send()
        producer.send("bounded", b"%04d" % i + b"v" * 1020,
                      on_delivery=lambda error, offset: answered.append(offset))  # fmt: skip
        most = max(most, producer.buffered_bytes)
    producer.flush()
    client.close()
    assert most <= 32768 + 8192 + 1024 + 100, most  # the bound, plus the batch over it
    assert sorted(answered) == list(range(4000))


@pytest.mark.parametrize("partitions", [1, 3])
def test_retries_keep_order_and_write_once_through_a_leader_killed(tmp_path, partitions) -> None:
    """The leader killed -9 while an idempotent producer has five requests in flight to
    it: the failed batches are sent again to the new leader in sequence order, every
    record's callback runs once with its offset, and each partition holds its records
    once, in send order (what was written before the kill answered as the duplicate it
    is). With three partitions led by one broker, each request carries a batch of each
    (Sender.drain), and a request's batches fail and are retried partition by partition."""
    from kt.testing import KtCluster

    records = 20000
    overrides = {"min.insync.replicas": "2", "replica.lag.time.max.ms": "5000"}
    with KtCluster(3, base_dir=tmp_path, overrides=overrides) as cluster:
        bootstrap = cluster.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        topic = NewTopic("moved", partitions, replica_assignment=[[0, 1, 2]] * partitions)
        admin.create_topics([topic])["moved"].result(30)
        client = KafkaClient(bootstrap)
        producer = PipelinedProducer(Producer(client, acks=-1, batch_size=1024), linger_ms=0,
                                     max_in_flight=5)  # fmt: skip
        answers: list[list[tuple[str | None, int]]] = [[] for _ in range(records)]
        requests = _count_produce_requests(producer)

        def answered(i: int):  # type: ignore[no-untyped-def]
            def on_delivery(error: KafkaError | None, offset: int) -> None:
                answers[i].append((None if error is None else error.name, offset))

            return on_delivery

        killed = None
        for i in range(records):
            producer.send("moved", b"%06d" % i, on_delivery=answered(i), partition=i % partitions)
            if i % 50 == 0:
                producer.poll(0)
            if i == records // 3:
                killed = cluster.leader_of("moved", 0)
                assert {cluster.leader_of("moved", p) for p in range(partitions)} == {killed}
                cluster.kill_broker(killed)
        producer.flush(120)
        client.close()
        assert [len(a) for a in answers] == [1] * records  # every callback once
        failed = [(i, a) for i, a in enumerate(answers) if a[0][0] is not None]
        assert not failed, failed[:5]
        for p in range(partitions):  # in send order, nothing written twice
            offsets = [offset for ((_, offset),) in answers[p::partitions]]
            assert offsets == list(range(len(offsets))), p
        assert cluster.leader_of("moved", 0) != killed
        # a request holds at most one batch of a partition; with three partitions,
        # requests carry several
        assert all(len(set(tps)) == len(tps) for tps in requests)
        assert any(len(tps) > 1 for tps in requests) == (partitions > 1)
        got = read_all(bootstrap, "moved", partitions, records)
        for p in range(partitions):
            values = [m.value() for m in got if m.partition() == p]
            assert values == [b"%06d" % i for i in range(p, records, partitions)], p


def _count_produce_requests(producer: PipelinedProducer) -> list[list[tuple[str, int]]]:
    """The partitions of every Produce request the producer sends, as it sends them."""
    sent: list[list[tuple[str, int]]] = []
    send = producer._send

    def counted(leader, batches):  # type: ignore[no-untyped-def]
        sent.append([b.tp for b in batches])
        return send(leader, batches)

    producer._send = counted  # type: ignore[method-assign]
    return sent
