"""The replicated cluster: failover time, and what replication costs a producer.

  python benchmarks/replication.py [failover] [throughput] [--store embedded|zookeeper]
                                   [--records 300000] [--repeat 3]

failover    time from killing a partition's leader to the first acks=all produce that
            succeeds on the new leader (librdkafka, min.insync.replicas=2, RF 3):
            - embedded: three brokers in this process (kt.testing.KtCluster), the leader
              killed as SIGKILL would (its metadata session ends at once);
            - zookeeper: three `kt server-start` processes on Debian's ZooKeeper, the
              leader's process killed with SIGKILL; the controller notices when the
              session times out (zookeeper.session.timeout.ms, printed), which dominates.
            Median of --repeat kills.
throughput  librdkafka acks=all, 100-byte values, one partition: a topic with 3 replicas
            beside a topic with 1, on the same three brokers in the same run, the two
            taking turns --repeat times. The ratio is RF 3 over RF 1.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from kt.testing import KtCluster  # noqa: E402

VALUE = b"v" * 100
SESSION_TIMEOUT_MS = 2000


def create(bootstrap: str, topic: str, replicas: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    config = {"min.insync.replicas": str(min(2, replicas))}
    admin.create_topics([NewTopic(topic, 1, replicas, config=config)])[topic].result(30)


def produce_until_acked(producer: Producer, topic: str, deadline_s: float = 120.0) -> float:
    """Produce one record at a time until one is acknowledged; the time that took."""
    start = time.perf_counter()
    acked: list[bool] = []
    while time.perf_counter() - start < deadline_s:
        acked.clear()
        producer.produce(topic, VALUE, on_delivery=lambda err, _m: acked.append(err is None))
        producer.flush(5)
        if acked and acked[0]:
            return time.perf_counter() - start
    raise TimeoutError("no produce succeeded after the kill")


def producer_for(bootstrap: str, **extra: object) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                     "retry.backoff.ms": 10, "retry.backoff.max.ms": 100,
                     "topic.metadata.refresh.fast.interval.ms": 10, **extra})  # fmt: skip


# -- the clusters ------------------------------------------------------------------------


class ProcessCluster:
    """Three `kt server-start` processes on one ZooKeeper (kt.testing.zookeeper's server)."""

    def __init__(self, base: Path) -> None:
        from kt.testing.zookeeper import ZooKeeperServer

        self.zk = ZooKeeperServer(base / "zookeeper")
        self.zk.start()
        self.base = base
        self.ports: dict[int, int] = {}
        self.procs: dict[int, subprocess.Popen] = {}
        self._zk_client = None
        for broker_id in range(3):
            self.start(broker_id)

    def start(self, broker_id: int) -> None:
        props = {
            "broker.id": broker_id,
            "listeners": f"PLAINTEXT://127.0.0.1:{self.ports.get(broker_id, 0)}",
            "log.dirs": self.base / f"broker-{broker_id}",
            "zookeeper.connect": f"{self.zk.connect}/bench",
            "zookeeper.session.timeout.ms": SESSION_TIMEOUT_MS,
            "offsets.topic.replication.factor": 3,
            "replica.fetch.backoff.ms": 100,
        }
        args = [sys.executable, "-m", "kt", "server-start"]
        for key, value in props.items():
            args += ["--override", f"{key}={value}"]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        self.ports[broker_id] = int(line.rsplit(":", 1)[1].split()[0])
        self.procs[broker_id] = proc

    def kill(self, broker_id: int) -> None:
        self.procs[broker_id].send_signal(signal.SIGKILL)
        self.procs[broker_id].wait()

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.ports.values())

    def leader(self, topic: str) -> int:
        if self._zk_client is None:
            from kazoo.client import KazooClient

            self._zk_client = KazooClient(hosts=f"{self.zk.connect}/bench")
            self._zk_client.start()
        path = f"/brokers/topics/{topic}/partitions/0/state"
        return int(json.loads(self._zk_client.get(path)[0])["leader"])

    def close(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
                proc.wait(30)
        if self._zk_client is not None:
            self._zk_client.stop()
            self._zk_client.close()
        self.zk.stop()


def failover(store: str, repeat: int) -> None:
    times: list[float] = []
    elected: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        if store == "embedded":
            cluster = KtCluster(3, base_dir=tmp, overrides={"replica.fetch.backoff.ms": "100"})
            cluster.start()
            bootstrap = cluster.bootstrap_servers
            leader_of, kill, restart = (
                lambda t: cluster.leader_of(t, 0),
                cluster.kill_broker,
                cluster.start_broker,
            )
        else:
            cluster = ProcessCluster(Path(tmp))
            bootstrap = cluster.bootstrap
            leader_of, kill, restart = cluster.leader, cluster.kill, cluster.start
        try:
            create(bootstrap, "failover", 3)
            producer = producer_for(bootstrap)
            produce_until_acked(producer, "failover")
            for _ in range(repeat):
                leader = leader_of("failover")
                start = time.perf_counter()
                kill(leader)
                while leader_of("failover") in (leader, -1):
                    time.sleep(0.001)
                elected.append(time.perf_counter() - start)
                produce_until_acked(producer, "failover")
                times.append(time.perf_counter() - start)
                restart(leader)
                time.sleep(1.0)  # the restarted broker catches up and rejoins the ISR
        finally:
            cluster.close()
    note = f" (zookeeper.session.timeout.ms={SESSION_TIMEOUT_MS})" if store != "embedded" else ""
    print(f"failover {store}{note}, {len(times)} kills, median (min-max):")
    print(f"  kill -> new leader in the state znode: {_ms(elected)}")
    print(f"  kill -> first acks=all produce acknowledged by it (librdkafka): {_ms(times)}")


def _ms(times: list[float]) -> str:
    return (
        f"{statistics.median(times) * 1000:.0f} ms "
        f"({min(times) * 1000:.0f}-{max(times) * 1000:.0f})"
    )


def produce_run(bootstrap: str, topic: str, records: int) -> float:
    producer = producer_for(bootstrap, **{"linger.ms": 5, "batch.size": 1_000_000})
    producer.list_topics(topic, timeout=30)
    start = time.perf_counter()
    for _ in range(records):
        try:
            producer.produce(topic, VALUE)
        except BufferError:
            producer.poll(0.01)
            producer.produce(topic, VALUE)
    if producer.flush(120) != 0:
        raise RuntimeError("records left unsent")
    return records / (time.perf_counter() - start)


def throughput(store: str, records: int, repeat: int) -> tuple[float, float]:
    """Median records/s of RF 1 and of RF 3, printed and returned."""
    with tempfile.TemporaryDirectory() as tmp:
        if store == "embedded":
            files = []
            for broker_id in range(3):
                path = Path(tmp) / f"b{broker_id}.properties"
                path.write_text(f"broker.id={broker_id}\nlisteners=PLAINTEXT://127.0.0.1:0\n"
                                f"log.dirs={tmp}/logs-{broker_id}\n")  # fmt: skip
                files.append(str(path))
            proc = subprocess.Popen([sys.executable, "-m", "kt", "server-start", *files],
                                    stdout=subprocess.PIPE, text=True)  # fmt: skip
            assert proc.stdout is not None
            ports = [proc.stdout.readline().rsplit(":", 1)[1].split()[0] for _ in range(3)]
            bootstrap = ",".join(f"127.0.0.1:{p}" for p in ports)

            def close() -> None:
                proc.terminate()
                proc.wait(60)

        else:
            cluster = ProcessCluster(Path(tmp))
            bootstrap, close = cluster.bootstrap, cluster.close
        try:
            create(bootstrap, "rf1", 1)
            create(bootstrap, "rf3", 3)
            produce_run(bootstrap, "rf1", 20_000)  # warm-up of both
            produce_run(bootstrap, "rf3", 20_000)
            rates: dict[str, list[float]] = {"rf1": [], "rf3": []}
            for _ in range(repeat):
                for topic in ("rf1", "rf3"):
                    rates[topic].append(produce_run(bootstrap, topic, records))
        finally:
            close()
    rf1, rf3 = statistics.median(rates["rf1"]), statistics.median(rates["rf3"])
    print(f"throughput {store}, acks=all, 100-byte values, {records} records x {repeat}:")
    print(f"  RF 1: {rf1 / 1e6:.2f} M records/s")
    print(f"  RF 3: {rf3 / 1e6:.2f} M records/s = {100 * rf3 / rf1:.0f} % of RF 1")
    return rf1, rf3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*", default=["failover", "throughput"])
    parser.add_argument("--store", choices=["embedded", "zookeeper"], default="embedded")
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    for scenario in args.scenarios:
        if scenario == "failover":
            failover(args.store, args.repeat)
        elif scenario == "throughput":
            throughput(args.store, args.records, args.repeat)
        else:
            parser.error(f"unknown scenario {scenario}")


if __name__ == "__main__":
    main()
