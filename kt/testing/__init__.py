"""Kafka clusters for your own tests: kt brokers in this process, on the embedded store
or on a ZooKeeper.

    from kt.testing import KtCluster

    with KtCluster(3, overrides={"min.insync.replicas": "2"}) as cluster:
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
        ...
        cluster.kill_broker(cluster.leader_of("orders", 0))   # as SIGKILL would
        cluster.start_broker(...)                              # recovers, rejoins the ISR

With pytest, the `kt_cluster` fixture makes clusters that stop after the test:

    pytest_plugins = ["kt.testing"]

    def test_orders(kt_cluster):
        cluster = kt_cluster(3)                    # the embedded store
        on_zk = kt_cluster(3, zookeeper=True)      # a ZooKeeper started for the session

`zookeeper=True` starts Debian's `zookeeper` package (kt.testing.zookeeper) once per test
session, and gives each cluster a chroot of its own; `KtCluster(3,
zookeeper_connect="host:port/chroot")` uses a ZooKeeper you run.

The brokers run on an event loop of their own in a background thread; every method here
is called from the test's thread and waits for the brokers to do it. Each broker listens
on 127.0.0.1 on a port it gets from the system at its first start and keeps across
restarts, so a client's bootstrap list stays valid.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import io
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Coroutine, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

from kt.broker.runner import open_store
from kt.broker.server import KafkaServer
from kt.config import KafkaConfig
from kt.metadata.store import MetadataStore

T = TypeVar("T")


class KtCluster:
    """`num_brokers` kt brokers (ids 0..n-1) sharing one metadata store: the embedded one,
    or ZooKeeper at `zookeeper_connect` (each broker a session of its own, as processes).

    Invariants: `brokers` holds the running brokers by id; a broker's port and log dir
    are fixed at its first start; the cluster's own files live under `base_dir`.
    """

    def __init__(
        self,
        num_brokers: int = 1,
        *,
        base_dir: str | Path | None = None,
        overrides: Mapping[str, str] | None = None,
        zookeeper_connect: str | None = None,
    ) -> None:
        self.num_brokers = num_brokers
        self._own_dir = base_dir is None
        self.base_dir = Path(base_dir or tempfile.mkdtemp(prefix="kt-cluster-"))
        replication = str(min(3, num_brokers))
        self.overrides = {
            "offsets.topic.replication.factor": replication,
            "group.initial.rebalance.delay.ms": "0",
            **(overrides or {}),
        }
        if zookeeper_connect is not None:
            self.overrides["zookeeper.connect"] = zookeeper_connect
        self.brokers: dict[int, KafkaServer] = {}
        self.ports: dict[int, int] = {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="kt-cluster")
        self._store: MetadataStore | None = None

    # -- life cycle ---------------------------------------------------------------

    def start(self) -> KtCluster:
        self._thread.start()
        self._store = open_store([self.config(0)])
        for broker_id in range(self.num_brokers):
            self.start_broker(broker_id)
        return self

    def close(self) -> None:
        """Stop every broker cleanly, then the store and the loop; remove a temporary dir."""
        for broker_id in sorted(self.brokers, reverse=True):
            self.stop_broker(broker_id)
        if self._store is not None:
            self._store.close()
            self._store = None
        if self._thread.is_alive():
            self._run(_cancel_other_tasks())
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(30)
        self._loop.close()
        if self._own_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self) -> KtCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- brokers ------------------------------------------------------------------

    def log_dir(self, broker_id: int) -> Path:
        return self.base_dir / f"broker-{broker_id}"

    def config(self, broker_id: int) -> KafkaConfig:
        port = self.ports.get(broker_id, 0)
        return KafkaConfig(
            {
                **self.overrides,
                "broker.id": str(broker_id),
                "listeners": f"PLAINTEXT://127.0.0.1:{port}",
                "log.dirs": str(self.log_dir(broker_id)),
            }
        )

    def start_broker(self, broker_id: int) -> KafkaServer:
        """Start (or restart) a broker; it recovers its logs and rejoins the cluster."""
        assert broker_id not in self.brokers, f"broker {broker_id} is running"
        assert self._store is not None, "start() the cluster first"
        server = KafkaServer(self.config(broker_id), self._store)
        try:
            self._run(server.startup())
        except BaseException:
            self._run(server.shutdown())
            raise
        self.brokers[broker_id] = server
        self.ports[broker_id] = server.port
        return server

    def stop_broker(self, broker_id: int) -> None:
        """A clean shutdown (SIGTERM)."""
        self._run(self.brokers.pop(broker_id).shutdown())

    def kill_broker(self, broker_id: int) -> None:
        """Stop a broker as SIGKILL would: no flush, no checkpoint, its session ends."""
        self._run(self.brokers.pop(broker_id).crash())

    def expire_session(self, broker_id: int) -> None:
        """Expire a broker's metadata session as ZooKeeper would (its ephemeral znodes go,
        a new session begins): the broker registers again, its controller re-elects."""
        self.brokers[broker_id].zk.session.expire()  # type: ignore[union-attr]  # off the loop

    @property
    def loop_thread(self) -> threading.Thread:
        """The thread of the brokers' event loop (the one that serves clients)."""
        return self._thread

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{self.ports[b]}" for b in sorted(self.ports))

    # -- what the cluster says -------------------------------------------------------

    def _any_broker(self) -> KafkaServer:
        assert self.brokers, "no broker is running"
        return next(iter(self.brokers.values()))

    # The store reads below run on the caller's thread (the store is thread-safe), never on
    # the brokers' loop, where they would hold up every client.

    def _zk(self) -> Any:
        zk = self._any_broker().zk
        assert zk is not None
        return zk

    def controller_id(self) -> int:
        return self._zk().get_controller_id()

    def registered_brokers(self) -> list[int]:
        """The ids under /brokers/ids: the brokers the controller sees alive."""
        return self._zk().get_broker_ids()

    def partition_state(self, topic: str, partition: int) -> Any:
        """The partition's state znode (leader, leader_epoch, isr)."""
        return self._zk().get_partition_state(topic, partition)

    def leader_of(self, topic: str, partition: int) -> int:
        state = self.partition_state(topic, partition)
        return -1 if state is None else state.leader

    def wait_until(
        self, condition: Callable[[], bool], timeout_s: float = 30.0, what: str = "condition"
    ) -> None:
        """Poll `condition` from the test's thread until it holds, at most `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while not condition():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what} did not hold within {timeout_s} s")
            time.sleep(0.05)

    # -- the loop -----------------------------------------------------------------

    def _run(self, coroutine: Coroutine[Any, Any, T], timeout_s: float = 60.0) -> T:
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result(timeout_s)
        except concurrent.futures.TimeoutError:
            raise TimeoutError(
                f"the brokers did not finish within {timeout_s} s; their tasks:\n"
                + self._task_stacks()
            ) from None

    def _task_stacks(self) -> str:
        """What every task of the brokers' loop is waiting on (for a test that hangs)."""

        async def dump() -> str:
            out = io.StringIO()
            for task in asyncio.all_tasks():
                out.write(f"--- {task.get_name()}\n")
                task.print_stack(limit=6, file=out)
            return out.getvalue()

        return asyncio.run_coroutine_threadsafe(dump(), self._loop).result(10)

    def _call(self, function: Callable[[], T]) -> T:
        async def call() -> T:
            return function()

        return self._run(call())


async def _cancel_other_tasks() -> None:
    """Whatever a broker left running (nothing should be) ends before the loop closes."""
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


try:
    import pytest
except ImportError:  # pragma: no cover - the fixture needs pytest, KtCluster does not
    pass
else:
    from kt.testing.zookeeper import ZooKeeperServer, running_zookeeper, zookeeper_installed

    @pytest.fixture(scope="session")
    def kt_zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
        """One ZooKeeper server for the test session, started when a test first needs it."""
        if not zookeeper_installed():
            pytest.skip("Debian's zookeeper package is not installed (apt-get install zookeeper)")
        with running_zookeeper(tmp_path_factory.mktemp("zookeeper")) as server:
            yield server

    @pytest.fixture
    def kt_cluster(
        tmp_path: Path, request: pytest.FixtureRequest
    ) -> Iterator[Callable[..., KtCluster]]:
        """Make started KtClusters: `kt_cluster(3, overrides={...})`, `zookeeper=True` for
        one on kt_zookeeper (a chroot of its own); closed after the test."""
        clusters: list[KtCluster] = []

        def make(num_brokers: int = 1, *, zookeeper: bool = False, **kwargs: Any) -> KtCluster:
            base = tmp_path / f"kt-cluster-{len(clusters)}"
            if zookeeper:
                server = request.getfixturevalue("kt_zookeeper")
                kwargs["zookeeper_connect"] = f"{server.connect}/{tmp_path.name}-{len(clusters)}"
            cluster = KtCluster(num_brokers, base_dir=base, **kwargs)
            clusters.append(cluster)
            return cluster.start()

        yield make
        for cluster in clusters:
            cluster.close()
