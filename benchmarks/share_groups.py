"""Share groups (KIP-932) on kt beside Kafka 4.4, in one run.

  interop/fetch-kafka.sh                      # once: Kafka 4.4's jars
  python benchmarks/share_groups.py [--records 2000] [--work-ms 1]

Consumers of one share group on ONE partition, each taking --work-ms per record (a
sleep: the application's work) and accepting it: the records per second one consumer
alone reaches, and four together, on kt and on Kafka 4.4. The point of share groups:
members share a partition, so four consumers go about four times as fast. Target
(issue 41): four >= 3.5x one, and kt's four >= Kafka 4.4's four. Also printed: the
broker's CPU seconds per acknowledged record (target: kt <= 0.5x Kafka's).

  python benchmarks/share_groups.py --kill [--records 3000]

Four consumers of one share group read every record of a partition while the broker is
killed -9 and started again mid-run (kt and Kafka 4.4 alike): the records whose
acceptance the broker confirmed and that were delivered again after (target 0), and the
records produced (acks=all) that no member ever got accepted (target 0).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from broker import KtBroker, cpu_seconds  # noqa: E402
from confluent_kafka import AcknowledgeType, KafkaException, Producer, ShareConsumer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from kt.reference_kafka import KAFKA4_VERSION, ReferenceKafka, unavailable_reason  # noqa: E402

SHARE = {
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.share.heartbeat.interval.ms": "1000",
    "group.share.min.heartbeat.interval.ms": "1000",
}


def run(bootstrap: str, pid: int, consumers: int, records: int, work_ms: float,
        name: str) -> tuple[float, float]:  # fmt: skip
    """(records per second, broker CPU seconds per record) of `consumers` members."""
    topic, group = f"share-{name}", f"share-group-{name}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(60)
    members = []
    for _ in range(consumers):
        c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                           "share.acknowledgement.mode": "explicit"})  # fmt: skip
        c.subscribe([topic])
        members.append(c)
    # Batches of 50 records, as a producer writing steadily makes them: a share partition
    # hands out whole batches (up to the member's max records), so one batch of everything
    # would go to one member.
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                         "batch.num.messages": 50})  # fmt: skip
    warm = [0]

    def warm_up() -> None:  # until a member reads: the share partition has started
        while not warm[0]:
            producer.produce(topic, b"-1")
            producer.flush(10)
            time.sleep(0.3)

    done = [0]
    lock = threading.Lock()
    stop = threading.Event()

    def work(c: ShareConsumer) -> None:
        while not stop.is_set():
            batch = [x for x in c.poll(0.2) if x.error() is None]
            for x in batch:
                if x.value() == b"-1":
                    warm[0] = 1
                else:
                    time.sleep(work_ms / 1000)
                    with lock:
                        done[0] += 1
                c.acknowledge(x, AcknowledgeType.ACCEPT)
            if batch:
                c.commit_sync(30)
        c.close()

    threads = [threading.Thread(target=work, args=(c,), daemon=True) for c in members]
    for t in threads:
        t.start()
    warm_up()
    time.sleep(1.0)
    cpu0 = cpu_seconds(pid)
    start = time.monotonic()
    for i in range(records):
        producer.produce(topic, b"%d" % i)
    producer.flush(60)
    deadline = start + 600
    while done[0] < records and time.monotonic() < deadline:
        time.sleep(0.01)
    elapsed = time.monotonic() - start
    cpu = cpu_seconds(pid) - cpu0
    stop.set()
    for t in threads:
        t.join(60)
    return done[0] / elapsed, cpu / max(done[0], 1)


def set_earliest(bootstrap: str, group: str) -> None:
    """share.auto.offset.reset=earliest and the shortest lock Kafka allows, as group
    configs (IncrementalAlterConfigs on the GROUP)."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    settings = (("share.auto.offset.reset", "earliest"), ("share.record.lock.duration.ms", "15000"))
    entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
               for k, v in settings]  # fmt: skip
    resource = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=entries)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(60)


def run_through_kill(bootstrap: str, restart: Callable[[], None], records: int,
                     name: str) -> tuple[int, int, float]:  # fmt: skip
    """(confirmed acceptances delivered again, produced records never accepted, seconds)
    of four members reading `records` while `restart` kills -9 and restarts the broker
    once a third are accepted."""
    topic, group = f"kill-{name}", f"kill-group-{name}"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept until the answers come
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(60)
    set_earliest(bootstrap, group)
    confirmed: set[bytes] = set()
    again = [0]
    lock = threading.Lock()
    stop = threading.Event()

    def work() -> None:
        c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                           "share.acknowledgement.mode": "explicit"})  # fmt: skip
        c.subscribe([topic])
        while not stop.is_set():
            try:
                batch = [x for x in c.poll(0.2) if x.error() is None]
            except KafkaException:
                continue  # the broker is away
            with lock:
                again[0] += sum(1 for x in batch if x.value() in confirmed)
            for x in batch:
                c.acknowledge(x, AcknowledgeType.ACCEPT)
            if batch:
                try:
                    results = c.commit_sync(30)
                except KafkaException:
                    continue  # not confirmed: they come back
                if all(error is None for error in results.values()):
                    with lock:
                        confirmed.update(x.value() for x in batch)
        c.close()

    threads = [threading.Thread(target=work, daemon=True) for _ in range(4)]
    for t in threads:
        t.start()
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                         "enable.idempotence": True, "linger.ms": 5})  # fmt: skip

    def produce() -> None:  # steadily, through the broker's absence (the producer retries)
        for i in range(records):
            producer.produce(topic, b"%d" % i)
            if i % 50 == 49:
                producer.poll(0)
                time.sleep(0.02)

    start = time.monotonic()
    feeder = threading.Thread(target=produce, daemon=True)
    feeder.start()
    while len(confirmed) < records // 3:
        time.sleep(0.01)
    at_kill = len(confirmed)
    restart()
    print(f"  killed -9 and restarted with {at_kill} of {records} accepted")
    feeder.join()
    assert producer.flush(120) == 0, "the producer lost records"
    wanted = {b"%d" % i for i in range(records)}
    deadline = time.monotonic() + 300
    while not wanted <= confirmed and time.monotonic() < deadline:
        time.sleep(0.1)
    elapsed = time.monotonic() - start
    stop.set()
    for t in threads:
        t.join(60)
    return again[0], len(wanted - confirmed), elapsed


def report(broker: str, figures: tuple[int, int, float]) -> None:
    again, never, seconds = figures
    print(f"{broker}: {again} confirmed acceptances delivered again, {never} records never "
          f"accepted ({seconds:.0f} s)")  # fmt: skip


def main_kill(records: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        with KtBroker(base / "kt", overrides=SHARE) as kt:

            def restart_kt() -> None:
                assert kt.proc is not None
                kt.proc.kill()
                kt.proc.wait()
                kt.__enter__()

            report("kt", run_through_kill(kt.bootstrap, restart_kt, records, "kt"))
        reason = unavailable_reason(KAFKA4_VERSION)
        if reason is not None:
            print(f"Kafka 4.4 not run: {reason}")
            return
        kafka = ReferenceKafka(base / "kafka4", broker_id=0, version=KAFKA4_VERSION)
        with kafka.start():

            def restart_kafka() -> None:
                kafka.kill()
                kafka.start()

            report("Kafka 4.4", run_through_kill(kafka.bootstrap, restart_kafka, records,
                                                 "kafka"))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--work-ms", type=float, default=1.0)
    parser.add_argument("--kill", action="store_true",
                        help="the broker killed -9 mid-run: no acknowledgement lost")  # fmt: skip
    args = parser.parse_args()
    if args.kill:
        main_kill(args.records)
        return
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        figures = {}
        with KtBroker(base / "kt", overrides=SHARE) as kt:
            pid = kt.proc.pid  # type: ignore[union-attr]
            for n in (1, 4):
                figures[("kt", n)] = run(kt.bootstrap, pid, n, args.records, args.work_ms,
                                         f"kt{n}")  # fmt: skip
        reason = unavailable_reason(KAFKA4_VERSION)
        if reason is None:
            overrides = {"group.share.heartbeat.interval.ms": "1000",
                         "group.share.min.heartbeat.interval.ms": "1000"}  # fmt: skip
            kafka = ReferenceKafka(base / "kafka4", broker_id=0, version=KAFKA4_VERSION,
                                   overrides=overrides)  # fmt: skip
            with kafka.start():
                pid = kafka.proc.pid  # type: ignore[union-attr]
                for n in (1, 4):
                    figures[("kafka", n)] = run(kafka.bootstrap, pid, n, args.records,
                                                args.work_ms, f"kafka{n}")  # fmt: skip
        else:
            print(f"Kafka 4.4 not run: {reason}")
        for (broker, n), (rate, cpu) in figures.items():
            print(f"{broker:5} {n} consumer(s): {rate:8.0f} records/s, "
                  f"broker CPU {cpu * 1e6:7.1f} us per record")  # fmt: skip
        for broker in ("kt", "kafka"):
            if (broker, 4) in figures:
                print(f"{broker}: four / one = "
                      f"{figures[(broker, 4)][0] / figures[(broker, 1)][0]:.2f}x")  # fmt: skip
        if ("kafka", 4) in figures:
            (kt_rate, kt_cpu), (kafka_rate, kafka_cpu) = figures[("kt", 4)], figures[("kafka", 4)]
            print(f"kt / Kafka 4.4, four consumers: {kt_rate / kafka_rate:.2f}x records/s, "
                  f"{kt_cpu / kafka_cpu:.2f}x CPU per record")  # fmt: skip


if __name__ == "__main__":
    main()
