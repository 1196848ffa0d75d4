"""`kt server-start` and `kt server-stop` (kafka-server-start.sh / kafka-server-stop.sh)."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import time
from pathlib import Path

import click

from kt.commands.common import fail, parse_key_values


@click.command("server-start")
@click.argument("properties", nargs=-1, type=click.Path(dir_okay=False))
@click.option(
    "--override",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a property of server.properties (repeatable); applies to every broker.",
)
@click.option("--daemon", is_flag=True, help="Run in the background, detached from the terminal.")
@click.option(
    "--log-level",
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
    default="WARNING",
    show_default=True,
    help="Level of the broker log written to stderr.",
)
def server_start(
    properties: tuple[str, ...], overrides: tuple[str, ...], daemon: bool, log_level: str
) -> None:
    """Start a broker (or, given several property files, an embedded cluster).

    With no file the broker listens on 127.0.0.1:9092 with its data under /tmp/kt-logs.
    It prints one line when ready and stops cleanly on SIGTERM or SIGINT.
    """
    from kt.broker.runner import BrokerHaltedError, serve
    from kt.config import SINGLE_BROKER_DEFAULTS, InvalidConfigError, KafkaConfig

    try:
        extra = parse_key_values(overrides, "--override")
        configs = [KafkaConfig.from_files([p], extra) for p in properties] or [
            KafkaConfig.from_files([], {**SINGLE_BROKER_DEFAULTS, **extra})
        ]
    except InvalidConfigError as e:
        fail(str(e))
    logging.basicConfig(
        level=log_level.upper(), format="[%(asctime)s] %(levelname)s %(message)s (%(name)s)"
    )
    for config in configs:
        for key in config.unknown_keys:
            logging.getLogger("kt.config").warning("unknown configuration key '%s'", key)
    if daemon:
        _daemonize()

    def on_ready(servers: list, elapsed: float) -> None:
        for server in servers:
            endpoints = ",".join(str(e) for e in server.advertised_endpoints)
            log_dirs = ",".join(str(d) for d in server.config.log_dirs)
            click.echo(
                f"[KafkaServer id={server.broker_id}] started: {endpoints} "
                f"log.dirs={log_dirs} ({elapsed:.2f} s)"
            )
        sys.stdout.flush()

    from kt.metadata.store import MetadataStoreError
    from kt.storage.log_manager import LogDirLockedError

    try:
        asyncio.run(serve(configs, on_ready))
    except OSError as e:
        fail(f"cannot start the broker: {e.strerror or e}")
    except (InvalidConfigError, LogDirLockedError, MetadataStoreError) as e:
        fail(f"cannot start the broker: {e}")
    except BrokerHaltedError as e:
        fail(str(e))


def _daemonize() -> None:
    """Detach as kafka-server-start.sh -daemon does: fork, new session, output to a log."""
    if os.fork() > 0:
        os._exit(0)
    os.setsid()
    if os.fork() > 0:
        os._exit(0)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    log_path = Path(os.environ.get("KT_LOG_FILE", "kt-server.out"))
    out = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(out, 1)
    os.dup2(out, 2)


def find_server_pids() -> list[int]:
    """Running `kt server-start` processes, as kafka-server-stop.sh finds kafka.Kafka ones."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"server-start" in argv and any(a.endswith((b"kt", b"kt.cli", b"-m")) for a in argv):
            pids.append(int(entry.name))
    return sorted(pids)


@click.command("server-stop")
@click.option("--timeout", default=30.0, show_default=True, help="Seconds to wait for exit.")
def server_stop(timeout: float) -> None:
    """Stop every running `kt server-start` with SIGTERM and wait until they exit."""
    pids = find_server_pids()
    if not pids:
        fail("No kt server to stop")
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = [p for p in pids if Path(f"/proc/{p}").exists()]
        if not alive:
            return
        time.sleep(0.1)
    fail(f"kt server(s) {alive} did not stop within {timeout:g} s")
