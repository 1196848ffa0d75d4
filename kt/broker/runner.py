"""Run one or more brokers in this process until SIGTERM/SIGINT (kafka.Kafka's main).

Several property files start several brokers in one process: they share one metadata
store and one event loop. Without `zookeeper.connect` the store is the embedded one (in
the first broker's first log dir), which is the embedded cluster; with it, every broker
has a session on that ZooKeeper, and brokers in other processes on the same ZooKeeper
form one cluster with them.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections.abc import Callable
from pathlib import Path

from kt.broker.descriptors import raise_open_files_limit, report_log_descriptors
from kt.broker.server import KafkaServer
from kt.config import InvalidConfigError, KafkaConfig
from kt.metadata.embedded import EmbeddedStore
from kt.metadata.store import MetadataStore

log = logging.getLogger(__name__)


class BrokerHaltedError(Exception):
    """The brokers stopped by themselves, not on a signal: `kt server-start` exits 1."""


def open_store(configs: list[KafkaConfig]) -> MetadataStore:
    """The metadata store the brokers of this process share: ZooKeeper when
    `zookeeper.connect` is set (the same ensemble for every broker of the process), else
    the embedded store in the first broker's first log dir."""
    connects = {c["zookeeper.connect"] for c in configs}
    if len(connects) > 1:
        raise InvalidConfigError(
            "the brokers of one process must share one metadata store: "
            "set the same zookeeper.connect in every properties file, or none"
        )
    connect = connects.pop()
    if connect:
        from kt.metadata.zookeeper import ZooKeeperStore  # kazoo only when it is used

        cfg = configs[0]
        session_timeout = cfg["zookeeper.session.timeout.ms"]
        return ZooKeeperStore(
            connect,
            session_timeout_ms=session_timeout,
            connection_timeout_ms=cfg["zookeeper.connection.timeout.ms"] or session_timeout,
            set_acl=cfg["zookeeper.set.acl"],
        )
    if any(c["zookeeper.set.acl"] for c in configs):
        raise InvalidConfigError(
            "zookeeper.set.acl=true sets ACLs on ZooKeeper's znodes: it needs zookeeper.connect "
            "(the embedded store has no ACLs)"
        )
    first_dir = Path(configs[0].log_dirs[0])
    first_dir.mkdir(parents=True, exist_ok=True)
    return EmbeddedStore.in_log_dir(first_dir)


async def start_brokers(configs: list[KafkaConfig], store: MetadataStore) -> list[KafkaServer]:
    servers = []
    try:
        for config in configs:
            server = KafkaServer(config, store)
            servers.append(server)
            await server.startup()
    except BaseException:
        for server in reversed(servers):
            await server.shutdown()
        raise
    return servers


async def serve(
    configs: list[KafkaConfig], on_ready: Callable[[list[KafkaServer], float], None]
) -> None:
    """Start the brokers, call `on_ready`, and run until a stop signal."""
    started = time.monotonic()
    limit = raise_open_files_limit()
    store = open_store(configs)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if isinstance(store, EmbeddedStore):
        # The embedded store failed (its journal met an I/O error): every broker stops.
        store.on_failure = lambda reason: loop.call_soon_threadsafe(stop.set)
    try:
        servers = await start_brokers(configs, store)
        report_log_descriptors(
            (len(log_.segments) for s in servers for log_ in s.log_manager.all_logs()), limit
        )
        on_ready(servers, time.monotonic() - started)
        signalled = asyncio.create_task(stop.wait())
        all_stopped = asyncio.create_task(_all_stopped(servers))
        await asyncio.wait((signalled, all_stopped), return_when=asyncio.FIRST_COMPLETED)
        signalled.cancel()
        all_stopped.cancel()
        if stop.is_set():
            log.info("stop signal received: shutting down")
        for server in reversed(servers):
            await server.shutdown()
    finally:
        store.close()
    halted = [s.halt_reason for s in servers if s.halt_reason is not None]
    if isinstance(store, EmbeddedStore) and store.failure is not None:
        halted.insert(0, f"Shutdown broker because the metadata store failed: {store.failure}")
    if halted:
        raise BrokerHaltedError(halted[0])


async def _all_stopped(servers: list[KafkaServer]) -> None:
    """Returns when every broker has stopped by itself (each of its log dirs failed)."""
    await asyncio.gather(*(s.wait_stopped() for s in servers))
