"""A consume-transform-produce loop with exactly-once semantics (KIP-447), the way a
confluent-kafka application writes one: read `--input` in group `--group`, write each
value prefixed with "out-" to `--output`, and commit the consumed offsets in the same
transaction. Run by tests/integration/test_exactly_once.py, which kills it (and
brokers) at random moments and starts it again.

On an error inside a transaction it aborts and rewinds to the group's committed offsets;
on a fatal error (fenced by a newer instance, as producer or as static group member, in a
transaction or in the consumer's poll, through error_cb or a consumed message's error) it
exits 1. A watchdog ends it (exit 2) when one
pass of its loop has taken longer than STUCK_S: librdkafka 2.16 was seen to hang in
abort_transaction after a TxnOffsetCommit failed with _DESTROY_BROKER (its handle of the
killed coordinator's broker, gone from the metadata, destroyed under it), and an
application supervisor restarts such an instance; the test does. It runs until it is stopped.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

STUCK_S = 70.0  # longer than the calls of one pass of the loop can take (two 30 s timeouts)


def watchdog(last_pass: list[float]) -> None:
    while True:
        time.sleep(1.0)
        if time.monotonic() - last_pass[0] > STUCK_S:
            print(f"stuck for {STUCK_S:.0f} s: exiting", file=sys.stderr, flush=True)
            os._exit(2)


def main() -> int:
    args = argparse.ArgumentParser()
    args.add_argument("--bootstrap-server", required=True)
    args.add_argument("--input", required=True)
    args.add_argument("--output", required=True)
    args.add_argument("--group", required=True)
    args.add_argument("--transactional-id", required=True)
    args.add_argument("--batch", type=int, default=50)
    args.add_argument("--pause-ms", type=int, default=0, help="a pause in each transaction")
    o = args.parse_args()
    dead: list[KafkaError] = []

    def on_error(error: KafkaError) -> None:
        if error.fatal() or error.code() == KafkaError.FENCED_INSTANCE_ID:
            dead.append(error)

    consumer = Consumer({
        "bootstrap.servers": o.bootstrap_server, "group.id": o.group,
        "enable.auto.commit": False, "auto.offset.reset": "earliest",
        "isolation.level": "read_committed", "session.timeout.ms": 6000,
        # Static membership (KIP-345): a restarted instance takes its place at once.
        "group.instance.id": o.transactional_id, "error_cb": on_error,
    })  # fmt: skip
    producer = Producer({
        "bootstrap.servers": o.bootstrap_server, "transactional.id": o.transactional_id,
        "transaction.timeout.ms": 20000, "message.timeout.ms": 20000,
    })  # fmt: skip
    producer.init_transactions(60)
    consumer.subscribe([o.input])
    last_pass = [time.monotonic()]
    threading.Thread(target=watchdog, args=(last_pass,), daemon=True).start()
    while True:
        last_pass[0] = time.monotonic()
        batch = consumer.consume(o.batch, 1.0)
        # a fatal error (fenced as a static member) comes through error_cb, or as a
        # message's error out of consume() (seen in a full run: the loop then spun on an
        # empty consumer for minutes, its group stuck waiting for it)
        dead += [m.error() for m in batch if m.error() is not None and (
            m.error().fatal() or m.error().code() == KafkaError.FENCED_INSTANCE_ID)]  # fmt: skip
        if dead:  # the consumer was fenced: it only ever fails again, so stop, as an
            # application must
            print(f"consumer failed: {dead[0]}", file=sys.stderr, flush=True)
            return 1
        messages = [m for m in batch if m.error() is None]
        if not messages:
            continue
        try:
            producer.begin_transaction()
            time.sleep(o.pause_ms / 1000)  # the work the application does
            for message in messages:
                producer.produce(o.output, b"out-" + message.value(), key=message.key(),
                                 partition=message.partition())  # fmt: skip
            positions = consumer.position(consumer.assignment())
            producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
            producer.commit_transaction(30)
        except KafkaException as e:
            error = e.args[0]
            print(f"transaction failed: {error}", file=sys.stderr, flush=True)
            if error.fatal() or error.code() == KafkaError.FENCED_INSTANCE_ID:
                return 1  # another instance took over: this one must stop
            try:
                producer.abort_transaction(30)
            except KafkaException as abort_error:
                print(f"abort failed: {abort_error}", file=sys.stderr, flush=True)
                return 1
            rewind(consumer)


def rewind(consumer: Consumer) -> None:
    """Back to the group's committed offsets: the aborted transaction's input again."""
    assignment = consumer.assignment()
    committed = consumer.committed(assignment, 30)
    for tp in committed:
        consumer.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else 0))


if __name__ == "__main__":
    sys.exit(main())
