"""Run one or more brokers in this process until SIGTERM/SIGINT (kafka.Kafka's main).

Several property files start several brokers in one process: they share one embedded
metadata store (in the first broker's first log dir) and one event loop, which is the
embedded cluster. (The ZooKeeper backend, selected by `zookeeper.connect`, comes with the
multi-process cluster; until then that key is refused with one clear line.)
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections.abc import Callable
from pathlib import Path

from kt.broker.server import KafkaServer
from kt.config import InvalidConfigError, KafkaConfig
from kt.metadata.embedded import EmbeddedStore

log = logging.getLogger(__name__)


class BrokerHaltedError(Exception):
    """The brokers stopped by themselves, not on a signal: `kt server-start` exits 1."""


def open_store(configs: list[KafkaConfig]) -> EmbeddedStore:
    """The metadata store the brokers of this process share."""
    if any(c["zookeeper.connect"] for c in configs):
        raise InvalidConfigError(
            "zookeeper.connect is set, but this kt runs on its embedded metadata store only; "
            "remove zookeeper.connect to start an embedded broker"
        )
    first_dir = Path(configs[0].log_dirs[0])
    first_dir.mkdir(parents=True, exist_ok=True)
    return EmbeddedStore.in_log_dir(first_dir)


async def start_brokers(configs: list[KafkaConfig], store: EmbeddedStore) -> list[KafkaServer]:
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
    store = open_store(configs)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    # The embedded store failed (its journal met an I/O error): every broker stops.
    store.on_failure = lambda reason: loop.call_soon_threadsafe(stop.set)
    try:
        servers = await start_brokers(configs, store)
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
    if store.failure is not None:
        halted.insert(0, f"Shutdown broker because the metadata store failed: {store.failure}")
    if halted:
        raise BrokerHaltedError(halted[0])


async def _all_stopped(servers: list[KafkaServer]) -> None:
    """Returns when every broker has stopped by itself (each of its log dirs failed)."""
    await asyncio.gather(*(s.wait_stopped() for s in servers))
