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

from kt.commands.common import INT, KafkaCommand, fail, parse_key_values

# In each log dir of a running `kt server-start`: its PID, for `kt server-stop --log-dirs`.
PID_FILE = "kt-server.pid"


@click.command("server-start", cls=KafkaCommand)
@click.argument("properties", nargs=-1, type=click.Path(dir_okay=False))
@click.option(
    "--override",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a property of server.properties (repeatable); applies to every broker.",
)
@click.option(
    "--daemon",
    is_flag=True,
    help="Run in the background: print the PID and the ready line, then log to "
    "$LOG_DIR/server.log (console output in $LOG_DIR/kafkaServer.out; without LOG_DIR: "
    "both to server.log beside the first log dir).",
)
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
    It prints one line when ready and stops cleanly on SIGTERM or SIGINT. With LOG_DIR set
    it also writes Kafka's log files there (server.log, controller.log, state-change.log,
    log-cleaner.log, kafka-request.log, kafka-authorizer.log, rolled hourly), at the levels
    of the log4j.properties that KAFKA_LOG4J_OPTS names (-Dlog4j.configuration=file:...).
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
    log_dir = os.environ.get("LOG_DIR")  # kafka-run-class.sh's, for Kafka's log files
    ready_pipe = _daemonize(*daemon_outputs(configs[0], log_dir)) if daemon else None
    if log_dir:
        from kt.log4j import start_log_files

        try:
            start_log_files(log_dir)
        except OSError as e:
            fail(f"cannot write the broker's log in {log_dir}: {e.strerror}")

    def on_ready(servers: list, elapsed: float) -> None:
        lines = []
        for server in servers:
            endpoints = ",".join(str(e) for e in server.advertised_endpoints)
            log_dirs = ",".join(str(d) for d in server.config.log_dirs)
            lines.append(
                f"[KafkaServer id={server.broker_id}] started: {endpoints} "
                f"log.dirs={log_dirs} ({elapsed:.2f} s)"
            )
        write_pid_files(servers)
        for line in lines:
            logging.getLogger(__name__).info(line)
        click.echo("\n".join(lines))
        sys.stdout.flush()
        if ready_pipe is not None:  # tell the waiting parent, then let it go
            os.write(ready_pipe, ("\n".join(lines) + "\n").encode())
            os.close(ready_pipe)

    from kt.metadata.store import MetadataStoreError
    from kt.storage.log_manager import LogDirLockedError, LogDirUnusableError

    try:
        asyncio.run(serve(configs, on_ready))
    except OSError as e:
        where = f": {e.filename}" if e.filename else ""
        fail(f"cannot start the broker: {e.strerror or e}{where}")
    except (InvalidConfigError, LogDirLockedError, LogDirUnusableError, MetadataStoreError) as e:
        fail(f"cannot start the broker: {e}")
    except BrokerHaltedError as e:
        fail(str(e))
    finally:
        remove_pid_files(configs)


def write_pid_files(servers: list) -> None:
    """Leave this process's PID in every log dir it serves (they are locked by now)."""
    for server in servers:
        for log_dir in server.config.log_dirs:
            try:
                (Path(log_dir) / PID_FILE).write_text(f"{os.getpid()}\n")
            except OSError as e:  # an offline dir: server-stop finds the PID in another
                logging.getLogger(__name__).warning("cannot write %s: %s", PID_FILE, e)


def remove_pid_files(configs: list) -> None:
    for config in configs:
        for log_dir in config.log_dirs:
            pid_file = Path(log_dir) / PID_FILE
            try:
                if pid_file.read_text().strip() == str(os.getpid()):
                    pid_file.unlink()
            except OSError:
                continue


def daemon_outputs(config: object, log_dir: str | None) -> tuple[Path, Path]:
    """(where --daemon's console output goes, the log it names): with LOG_DIR, as
    kafka-server-start.sh -daemon, $LOG_DIR/kafkaServer.out and $LOG_DIR/server.log (the
    log files kt.log4j writes); else server.log beside the first log dir for both
    (/tmp/kt-logs -> /tmp/server.log)."""
    if log_dir:
        return Path(log_dir) / "kafkaServer.out", Path(log_dir) / "server.log"
    first = Path(config.log_dirs[0]).absolute()  # type: ignore[attr-defined]
    return first.parent / "server.log", first.parent / "server.log"


def _daemonize(console_path: Path, log_path: Path) -> int:
    """Detach as kafka-server-start.sh -daemon does (fork, new session, console output to
    `console_path`), while the starting process waits: it prints the daemon's PID, the
    log it writes and its ready line and exits 0, or exits 1 with the console's last line
    if the daemon ends before it is ready. Returns, in the daemon, the pipe on which to
    send the ready line."""
    try:
        console_path.parent.mkdir(parents=True, exist_ok=True)
        out = os.open(console_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    except OSError as e:
        fail(f"cannot write the server log {console_path}: {e.strerror}")
    read_end, write_end = os.pipe()
    if os.fork() > 0:
        os.close(write_end)
        _wait_for_daemon(read_end, console_path, log_path)
    os.close(read_end)
    os.setsid()
    if os.fork() > 0:
        os._exit(0)
    os.write(write_end, f"{os.getpid()}\n".encode())
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(out, 1)
    os.dup2(out, 2)
    return write_end


def _wait_for_daemon(read_end: int, console_path: Path, log_path: Path) -> None:
    chunks = []
    while chunk := os.read(read_end, 4096):
        chunks.append(chunk)
    pid, _, ready = b"".join(chunks).decode().partition("\n")
    if not ready:
        tail = console_path.read_text(errors="replace").strip().splitlines()[-1:] if (
            console_path.exists()) else []  # fmt: skip
        fail(f"kt server failed to start (see {console_path}): {''.join(tail)}")
    click.echo(f"kt server started in the background, PID {pid}, logging to {log_path}")
    click.echo(ready, nl=False)
    sys.stdout.flush()
    os._exit(0)


def find_server_pids() -> list[int]:
    """The current user's running `kt server-start` processes, as kafka-server-stop.sh
    finds kafka.Kafka ones (it takes every user's it may signal)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            if entry.stat().st_uid != os.getuid():
                continue
        except OSError:
            continue
        if b"server-start" in argv and any(a.endswith((b"kt", b"kt.cli", b"-m")) for a in argv):
            pids.append(int(entry.name))
    return sorted(pids)


def server_node_ids(pid: int) -> set[int]:
    """The node ids a `kt server-start` process runs: read from the property files and
    overrides on its command line (relative paths from its working directory), as
    kafka-server-stop.sh --node-id reads node.id from the started process's config file."""
    from kt.config import SINGLE_BROKER_DEFAULTS, InvalidConfigError, KafkaConfig

    proc = Path(f"/proc/{pid}")
    try:
        argv = [a.decode() for a in (proc / "cmdline").read_bytes().split(b"\0") if a]
        cwd = os.readlink(proc / "cwd")
    except OSError:
        return set()
    if "server-start" not in argv:  # it exited meanwhile (a zombie's cmdline is empty)
        return set()
    args = argv[argv.index("server-start") + 1 :]
    files, overrides = [], {}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--override" and i + 1 < len(args):
            key, _, value = args[i + 1].partition("=")
            overrides[key] = value
            i += 2
            continue
        if arg.startswith("--override="):
            key, _, value = arg.removeprefix("--override=").partition("=")
            overrides[key] = value
        elif arg == "--log-level":
            i += 1
        elif not arg.startswith("-"):
            files.append(os.path.join(cwd, arg))
        i += 1
    try:
        if not files:
            return {KafkaConfig.from_files([], {**SINGLE_BROKER_DEFAULTS, **overrides}).broker_id}
        return {KafkaConfig.from_files([f], overrides).broker_id for f in files}
    except (InvalidConfigError, OSError):
        return set()


@click.command("server-stop", cls=KafkaCommand)
@click.argument("properties", nargs=-1, type=click.Path(dir_okay=False))
@click.option("--log-dirs", metavar="DIR1,DIR2,...",
              help="Stop only the server whose log dirs these are.")  # fmt: skip
@click.option("--node-id", type=INT, help="Stop only the server running this node id.")
@click.option("--timeout", default=30.0, show_default=True, help="Seconds to wait for exit.")
def server_stop(
    properties: tuple[str, ...], log_dirs: str | None, node_id: int | None, timeout: float
) -> None:
    """Stop a `kt server-start` with SIGTERM and wait until it exits.

    Given the properties file(s) it was started with, or its --log-dirs, exactly that
    server (it left its PID in each log dir). Without either, as kafka-server-stop.sh:
    every `kt server-start` of the current user (with --node-id, the one running that
    node). Prints the PIDs it signalled.
    """
    if properties or log_dirs:
        pids = [_pid_for_log_dirs(_stop_log_dirs(properties, log_dirs))]
    else:
        pids = find_server_pids()
        if not pids:
            fail("No kt server to stop")
        if node_id is not None:
            pids = [pid for pid in pids if node_id in server_node_ids(pid)]
            if not pids:
                fail(f"No kt server with node id {node_id} to stop")
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    click.echo(f"Stopping kt server PID {', '.join(map(str, pids))}")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = [p for p in pids if _running(p)]
        if not alive:
            return
        time.sleep(0.1)
    fail(f"kt server(s) {alive} did not stop within {timeout:g} s")


def _running(pid: int) -> bool:
    """The process exists and has not exited (a zombie waits only for its parent)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def _stop_log_dirs(properties: tuple[str, ...], log_dirs: str | None) -> list[Path]:
    from kt.config import InvalidConfigError, KafkaConfig

    if log_dirs:
        return [Path(d.strip()).expanduser() for d in log_dirs.split(",") if d.strip()]
    try:
        return [d for p in properties for d in KafkaConfig.from_files([p]).log_dirs]
    except InvalidConfigError as e:
        fail(str(e))


def _pid_for_log_dirs(log_dirs: list[Path]) -> int:
    """The running `kt server-start` whose PID file one of these log dirs holds."""
    for log_dir in log_dirs:
        try:
            pid = int((log_dir / PID_FILE).read_text().strip())
        except (OSError, ValueError):
            continue
        if pid in find_server_pids():
            return pid
    fail(f"No kt server running with log dirs {','.join(map(str, log_dirs))}")
