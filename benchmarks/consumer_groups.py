"""Kafka 4's consumer groups (KIP-848) on kt beside Kafka 4.4, in one run.

  interop/fetch-kafka.sh                      # once: Kafka 4.4's jars
  python benchmarks/consumer_groups.py [join] [heartbeats] [--members 500] [--repeat 1]

join        A tenth member joins a nine-member group of confluent-kafka consumers
            (group.protocol=consumer) on a 90-partition topic while a producer writes
            2,000 records/s: seconds from its subscribe until every member holds its
            target assignment (ConsumerGroupDescribe: Stable, every member at the
            assignment epoch, and each client's own assignment the size of its target).
            Members commit after each batch and before they give a partition up; the run
            counts the records read twice, and the longest gap in consumption of the
            partitions that did not move during the change (their producer writes one
            record every 45 ms). Target (issue 40): time <= Kafka 4.4's, 0 read twice.
heartbeats  --members members in one group, each heartbeating from one process with
            kt's protocol codec (a thread per 50 members, as a client would: a full
            heartbeat at the join, then epoch and owned partitions at the interval the
            broker asks for): the broker process's CPU seconds per member per second over
            20 s of steady heartbeats after the group settled, also less the broker's own
            idle CPU (10 s measured before). Target: kt <= 0.5x Kafka.

Both brokers run side by side with the same group settings (heartbeat interval 1 s for
`join`, Kafka's 5 s default for `heartbeats`); Kafka's heap is 512 MB.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from broker import KtBroker, cpu_seconds  # noqa: E402
from confluent_kafka import Consumer, Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from kt.client.client import KafkaClient  # noqa: E402
from kt.client.connection import BrokerConnection  # noqa: E402
from kt.client.groups import GroupAdmin  # noqa: E402
from kt.protocol import ApiKey  # noqa: E402
from kt.protocol import messages as m  # noqa: E402
from kt.reference_kafka import KAFKA4_VERSION, ReferenceKafka, unavailable_reason  # noqa: E402

FAST_HEARTBEATS = {
    "group.consumer.heartbeat.interval.ms": "1000",
    "group.consumer.min.heartbeat.interval.ms": "1000",
}


def describe(bootstrap: str, group: str):  # type: ignore[no-untyped-def]
    host, port = bootstrap.split(":")
    conn = BrokerConnection(host, int(port))
    try:
        response = conn.send(ApiKey.CONSUMER_GROUP_DESCRIBE,
                             m.ConsumerGroupDescribeRequest(group_ids=[group]))  # fmt: skip
    finally:
        conn.close()
    return response.groups[0]


class Member:
    """A confluent-kafka member on a thread: commits after each batch and on revocation;
    keeps (partition, offset, time) of what it reads."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
            "auto.offset.reset": "earliest", "enable.auto.commit": False,
        })  # fmt: skip
        self.topic = topic
        self.read: list[tuple[int, int, float]] = []
        self.owned = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def revoked(self, consumer, partitions) -> None:  # type: ignore[no-untyped-def]
        try:
            consumer.commit(asynchronous=False)
        except Exception:  # nothing consumed yet: _NO_OFFSET
            pass

    def run(self) -> None:
        self.consumer.subscribe([self.topic], on_revoke=self.revoked)
        while not self.stop.is_set():
            batch = self.consumer.consume(500, timeout=0.05)
            now = time.monotonic()
            good = [x for x in batch if x.error() is None]
            self.read += [(x.partition(), x.offset(), now) for x in good]
            if good:
                try:
                    self.consumer.commit(asynchronous=False)
                except Exception:
                    pass
            self.owned = len(self.consumer.assignment())
        self.consumer.close()


def settled(bootstrap: str, group: str, members: list[Member], count: int) -> bool:
    g = describe(bootstrap, group)
    if g.group_state != "Stable" or len(g.members) != count:
        return False
    targets = sorted(sum(len(t.partitions) for t in x.target_assignment.topic_partitions)
                     for x in g.members)  # fmt: skip
    return sorted(x.owned for x in members) == targets and sum(targets) == 90


def bench_join(bootstrap: str, name: str) -> dict[str, float]:
    topic, group = f"join-{name}", f"join-group-{name}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 90, 1)])[topic].result(60)
    stop = threading.Event()

    def produce() -> None:
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        i = 0
        while not stop.is_set():
            for _ in range(20):
                producer.produce(topic, b"%d" % i, partition=i % 90)
                i += 1
            producer.poll(0)
            time.sleep(0.01)  # about 2,000 records/s, one every 45 ms per partition
        producer.flush(30)

    writer = threading.Thread(target=produce, daemon=True)
    writer.start()
    members = [Member(bootstrap, group, topic) for _ in range(9)]
    deadline = time.monotonic() + 120
    while not settled(bootstrap, group, members, 9):
        assert time.monotonic() < deadline, "nine members did not settle"
        time.sleep(0.05)
    time.sleep(2)
    start = time.monotonic()
    members.append(Member(bootstrap, group, topic))
    while not settled(bootstrap, group, members, 10):
        assert time.monotonic() < start + 120, "ten members did not settle"
        time.sleep(0.02)
    took = time.monotonic() - start
    time.sleep(2)
    stop.set()
    writer.join(30)
    for x in members:
        x.stop.set()
    for x in members:
        x.thread.join(60)
    counts = Counter((p, o) for x in members for p, o, _ in x.read)
    before: dict[int, int] = {}  # each partition's last reader before the tenth joined
    for i, x in enumerate(members):
        for p, _, t in x.read:
            if t < start and t >= before.get(-p - 1, 0.0):
                before[p], before[-p - 1] = i, t
    after = {(p, i) for i, x in enumerate(members) for p, _, t in x.read if t >= start}
    moved = {p for p, i in after if before.get(p) != i}
    gaps = []
    for x in members:
        by_partition: dict[int, list[float]] = {}
        for p, _, t in x.read:
            if p not in moved and start <= t <= start + took + 1:
                by_partition.setdefault(p, []).append(t)
        for times in by_partition.values():
            gaps += [b - a for a, b in zip(times, times[1:], strict=False)]
    return {"seconds": took, "read_twice": sum(1 for c in counts.values() if c > 1),
            "max_gap_unmoved_s": max(gaps, default=0.0), "moved": len(moved)}  # fmt: skip


def bench_heartbeats(bootstrap: str, pid: int, members: int, name: str) -> tuple[float, float]:
    """Broker CPU seconds per member per second of steady heartbeats: as measured, and
    less the broker's idle CPU (measured for 10 s before the group)."""
    topic, group = f"hb-{name}", f"hb-group-{name}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 50, 1)])[topic].result(60)
    host, port = bootstrap.split(":")
    stop = threading.Event()
    joined = Counter()

    def run(ids: list[str]) -> None:
        conn = BrokerConnection(host, int(port))
        R = m.ConsumerGroupHeartbeatRequest
        state = {i: (0, []) for i in ids}
        interval = 5.0
        next_at = time.monotonic()
        try:
            while not stop.is_set():
                for member_id in ids:
                    epoch, owned = state[member_id]
                    request = R(group_id=group, member_id=member_id, member_epoch=epoch,
                                topic_partitions=[R.TopicPartitions(topic_id=t, partitions=ps)
                                                  for t, ps in owned])  # fmt: skip
                    if epoch == 0:
                        request.rebalance_timeout_ms = 60000
                        request.subscribed_topic_names = [topic]
                        joined[member_id] += 1
                    response = conn.send(ApiKey.CONSUMER_GROUP_HEARTBEAT, request)
                    if response.error_code:
                        state[member_id] = (0, [])
                        continue
                    interval = response.heartbeat_interval_ms / 1000
                    if response.assignment is not None:
                        owned = [(t.topic_id, list(t.partitions))
                                 for t in response.assignment.topic_partitions]  # fmt: skip
                    state[member_id] = (response.member_epoch, owned)
                next_at += interval
                stop.wait(max(0.0, next_at - time.monotonic()))
        finally:
            conn.close()

    with KafkaClient(bootstrap) as client:  # __consumer_offsets exists, its leader known
        GroupAdmin(client, 60000).find_coordinator(group)
    time.sleep(5)
    idle0, i0 = cpu_seconds(pid), time.monotonic()
    time.sleep(10)
    idle = (cpu_seconds(pid) - idle0) / (time.monotonic() - i0)
    ids = [base64_id() for _ in range(members)]
    threads = [threading.Thread(target=run, args=(ids[i:i + 50],), daemon=True)
               for i in range(0, members, 50)]  # fmt: skip
    for t in threads:
        t.start()
    deadline = time.monotonic() + 180
    while True:
        g = describe(bootstrap, group)
        if g.group_state == "Stable" and len(g.members) == members:
            break
        assert time.monotonic() < deadline, f"{len(g.members)} members, {g.group_state}"
        time.sleep(0.5)
    time.sleep(5)
    cpu0, t0 = cpu_seconds(pid), time.monotonic()
    time.sleep(20)
    cpu1, t1 = cpu_seconds(pid), time.monotonic()
    stop.set()
    for t in threads:
        t.join(30)
    busy = (cpu1 - cpu0) / (t1 - t0)
    return busy / members, (busy - idle) / members


def base64_id() -> str:
    import base64

    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenarios", nargs="*", default=["join", "heartbeats"])
    parser.add_argument("--members", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    reason = unavailable_reason(KAFKA4_VERSION)
    if reason is not None:
        sys.exit(reason)
    work = Path(tempfile.mkdtemp(prefix="kt-bench-groups-"))
    for scenario in args.scenarios:
        overrides = FAST_HEARTBEATS if scenario == "join" else {}
        kafka = ReferenceKafka(work / f"kafka-{scenario}", broker_id=0, version=KAFKA4_VERSION,
                               overrides=overrides)  # fmt: skip
        with kafka.start(), KtBroker(work / f"kt-{scenario}", overrides=overrides) as kt:
            assert kafka.proc is not None and kt.proc is not None
            for run in range(args.repeat):
                for side, bootstrap, pid in (
                    ("kt", kt.bootstrap, kt.proc.pid),
                    ("kafka", kafka.bootstrap, kafka.proc.pid),
                ):
                    if scenario == "join":
                        result = bench_join(bootstrap, f"{side}{run}")
                        print(f"join {side}: {result}", flush=True)
                    else:
                        cpu, net = bench_heartbeats(bootstrap, pid, args.members, f"{side}{run}")
                        print(
                            f"heartbeats {side}: {cpu * 1e6:.1f} us CPU per member per s "
                            f"({net * 1e6:.1f} over the idle broker's)",
                            flush=True,
                        )


if __name__ == "__main__":
    main()
