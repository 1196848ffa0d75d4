"""Transactions through confluent-kafka (librdkafka), against `kt server-start`: the
transactional API (init, begin, send_offsets_to_transaction, commit, abort), what
read_committed and read_uncommitted consumers see, a zombie fenced by a new instance of
its transactional id, and the coordinator's timeouts."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.conftest import kt_command
from tests.integration.read_to_end import read_to_end

pytestmark = pytest.mark.slow

EOF_CODE = KafkaError._PARTITION_EOF


def create(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)


def transactional(bootstrap: str, transactional_id: str, **config: object) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                         **config})  # fmt: skip
    producer.init_transactions(30)
    return producer


def read(bootstrap: str, topic: str, partitions: int, isolation: str) -> list[bytes]:
    """Every value up to the end of each partition (the LSO for read_committed)."""
    return sorted(m.value() for m in read_to_end(bootstrap, topic, partitions, isolation))


def produce_in(producer: Producer, topic: str, prefix: str, count: int, partitions: int) -> None:
    for i in range(count):
        producer.produce(topic, f"{prefix}{i}".encode(), partition=i % partitions)


def test_committed_and_aborted_transactions(module_broker) -> None:
    bootstrap = module_broker.bootstrap
    create(bootstrap, "txn-out", 3)
    producer = transactional(bootstrap, "txn-basic")
    producer.begin_transaction()
    produce_in(producer, "txn-out", "c", 30, 3)
    producer.commit_transaction(30)
    producer.begin_transaction()
    produce_in(producer, "txn-out", "a", 20, 3)
    producer.flush(30)  # the aborted records are in the log
    producer.abort_transaction(30)
    producer.begin_transaction()
    produce_in(producer, "txn-out", "d", 6, 3)
    producer.commit_transaction(30)

    committed = sorted([f"c{i}".encode() for i in range(30)] + [f"d{i}".encode() for i in range(6)])
    aborted = [f"a{i}".encode() for i in range(20)]
    assert read(bootstrap, "txn-out", 3, "read_committed") == committed
    assert read(bootstrap, "txn-out", 3, "read_uncommitted") == sorted(committed + aborted)


def test_an_open_transaction_holds_read_committed_back(module_broker) -> None:
    bootstrap = module_broker.bootstrap
    create(bootstrap, "txn-open", 1)
    producer = transactional(bootstrap, "txn-open")
    producer.begin_transaction()
    producer.produce("txn-open", b"before")
    producer.commit_transaction(30)
    producer.begin_transaction()
    producer.produce("txn-open", b"pending")
    producer.flush(30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "lso",
                         "isolation.level": "read_committed"})  # fmt: skip
    low, high = consumer.get_watermark_offsets(TopicPartition("txn-open", 0), 10)
    assert (low, high) == (0, 2)  # the LSO: after "before" and its marker
    assert read(bootstrap, "txn-open", 1, "read_committed") == [b"before"]
    producer.commit_transaction(30)
    assert read(bootstrap, "txn-open", 1, "read_committed") == [b"before", b"pending"]
    consumer.close()


def test_offsets_sent_to_a_transaction_commit_with_it(module_broker) -> None:
    """A consume-transform-produce step: the group's offsets count only if the
    transaction commits; a read_committed consumer of the group then starts after them."""
    bootstrap = module_broker.bootstrap
    create(bootstrap, "txn-in", 1)
    create(bootstrap, "txn-copy", 1)
    plain = Producer({"bootstrap.servers": bootstrap})
    for i in range(10):
        plain.produce("txn-in", f"in{i}".encode())
    plain.flush(30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "copier",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed"})  # fmt: skip
    consumer.subscribe(["txn-in"])
    messages: list = []
    deadline = time.monotonic() + 30
    while len(messages) < 10 and time.monotonic() < deadline:
        messages += [m for m in consumer.consume(10, 1) if m.error() is None]
    assert len(messages) == 10
    producer = transactional(bootstrap, "txn-copier")

    def copy_and_commit(upto: int, commit: bool) -> None:
        producer.begin_transaction()
        for message in messages[:upto]:
            producer.produce("txn-copy", message.value().upper())
        producer.send_offsets_to_transaction(
            [TopicPartition("txn-in", 0, upto)], consumer.consumer_group_metadata(), 30
        )
        (producer.commit_transaction if commit else producer.abort_transaction)(30)

    copy_and_commit(10, commit=False)
    assert consumer.committed([TopicPartition("txn-in", 0)], 10)[0].offset == -1001
    copy_and_commit(4, commit=True)
    assert consumer.committed([TopicPartition("txn-in", 0)], 10)[0].offset == 4
    assert read(bootstrap, "txn-copy", 1, "read_committed") == [b"IN0", b"IN1", b"IN2", b"IN3"]
    consumer.close()


def test_a_zombie_is_fenced_and_writes_nothing(module_broker) -> None:
    bootstrap = module_broker.bootstrap
    create(bootstrap, "txn-zombie", 1)
    zombie = transactional(bootstrap, "txn-zombie")
    zombie.begin_transaction()
    zombie.produce("txn-zombie", b"zombie-1")
    zombie.flush(30)
    successor = transactional(bootstrap, "txn-zombie")  # aborts the zombie's transaction
    successor.begin_transaction()
    successor.produce("txn-zombie", b"successor")
    successor.commit_transaction(30)
    zombie.produce("txn-zombie", b"zombie-2")
    with pytest.raises(KafkaException) as info:
        zombie.commit_transaction(30)
    assert info.value.args[0].code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED)
    assert info.value.args[0].fatal()
    assert read(bootstrap, "txn-zombie", 1, "read_committed") == [b"successor"]


def test_a_timeout_above_the_maximum_is_refused(broker_factory) -> None:
    broker = broker_factory(**{"transaction.max.timeout.ms": "20000"})
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "too-long",
                         "transaction.timeout.ms": 30000})  # fmt: skip
    with pytest.raises(KafkaException) as info:
        producer.init_transactions(30)
    assert info.value.args[0].code() == KafkaError.INVALID_TRANSACTION_TIMEOUT
    within = transactional(broker.bootstrap, "within", **{"transaction.timeout.ms": 20000})
    within.begin_transaction()
    within.abort_transaction(30)


def test_a_transaction_past_its_timeout_is_aborted(broker_factory) -> None:
    broker = broker_factory(**{
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "200",
    })  # fmt: skip
    bootstrap = broker.bootstrap
    create(bootstrap, "txn-late", 1)
    producer = transactional(bootstrap, "txn-late", **{"transaction.timeout.ms": 1000})
    producer.begin_transaction()
    producer.produce("txn-late", b"late")
    producer.flush(30)
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "late",
                       "isolation.level": "read_committed"})  # fmt: skip
    deadline = time.monotonic() + 20
    while reader.get_watermark_offsets(TopicPartition("txn-late", 0), 10)[1] < 2:
        assert time.monotonic() < deadline, "the LSO did not move past the timed-out transaction"
        time.sleep(0.1)
    reader.close()
    with pytest.raises(KafkaException):
        producer.commit_transaction(10)
    assert read(bootstrap, "txn-late", 1, "read_committed") == []
    assert read(bootstrap, "txn-late", 1, "read_uncommitted") == [b"late"]


def test_kt_producer_perf_test_in_transactions(module_broker) -> None:
    """kt producer-perf-test --transaction-duration-ms: every record in a committed
    transaction (kt's TransactionManager: InitProducerId, AddPartitionsToTxn, EndTxn)."""
    bootstrap = module_broker.bootstrap
    create(bootstrap, "txn-perf", 3)
    result = kt_command(
        "producer-perf-test", "--topic", "txn-perf", "--num-records", "20000",
        "--record-size", "100", "--throughput", "-1", "--producer-props",
        f"bootstrap.servers={bootstrap}", "--transactional-id", "perf-txn",
        "--transaction-duration-ms", "50",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("20000 records sent, ")
    assert len(read(bootstrap, "txn-perf", 3, "read_committed")) == 20000
    described = kt_command("transactions", "--bootstrap-server", bootstrap, "describe",
                           "--transactional-id", "perf-txn")  # fmt: skip
    assert described.stdout.splitlines()[1].split("\t")[4].strip() == "CompleteCommit"
    segments = [str(module_broker.log_dir / f"txn-perf-{p}" / "00000000000000000000.log")
                for p in range(3)]  # the sticky partitioner may leave one empty  # fmt: skip
    dumped = kt_command("dump-log", "--files", ",".join(segments), "--print-data-log").stdout
    assert "isTransactional: true isControl: false" in dumped
    assert "isTransactional: false" not in dumped
    assert "endTxnMarker: COMMIT" in dumped


def test_a_broker_verifies_partitions_with_add_partitions_v4_and_v5(module_broker) -> None:
    """AddPartitionsToTxn v4+ (KIP-890), what a partition leader asks the coordinator
    before a transaction's first batch: verify_only answers per partition whether it is
    in the transaction (TRANSACTION_ABORTABLE from v5, INVALID_TXN_STATE before), and
    batches several transactional ids in one request."""
    from kt.client.client import KafkaClient
    from kt.client.transaction_manager import TransactionManager
    from kt.errors import KafkaError as Error
    from kt.protocol import ApiKey
    from kt.protocol import messages as m

    bootstrap = module_broker.bootstrap
    create(bootstrap, "txn-verify", 2)
    with KafkaClient(bootstrap) as client:
        manager = TransactionManager(client, "verify-txn")
        pid, epoch = manager.init_transactions()
        manager.begin_transaction()
        manager.add_partitions([("txn-verify", 0)])
        R = m.AddPartitionsToTxnRequest

        def verify(version: int, epoch: int = epoch) -> dict:
            request = R(transactions=[R.AddPartitionsToTxnTransaction(
                transactional_id="verify-txn", producer_id=pid, producer_epoch=epoch,
                verify_only=True, topics=[R.AddPartitionsToTxnTopic(name="txn-verify",
                                                                    partitions=[0, 1])],
            )])  # fmt: skip
            response = manager._coordinator().send(ApiKey.ADD_PARTITIONS_TO_TXN, request, version)
            assert response.error_code == 0
            [result] = response.results_by_transaction
            return {
                p.partition_index: Error(p.partition_error_code).name
                if p.partition_error_code
                else "NONE"
                for t in result.topic_results
                for p in t.results_by_partition
            }

        assert verify(5) == {0: "NONE", 1: "TRANSACTION_ABORTABLE"}
        assert verify(4) == {0: "NONE", 1: "INVALID_TXN_STATE"}
        assert verify(5, epoch + 1) == {0: "PRODUCER_FENCED", 1: "PRODUCER_FENCED"}
        manager.end_transaction(commit=False)
        manager.close()
