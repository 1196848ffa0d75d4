"""A real ZooKeeper server for tests: Debian's `zookeeper` package, on 127.0.0.1.

    server = ZooKeeperServer(tmp_dir)
    server.start()                       # on a free port, its data under tmp_dir
    connect = server.connect + "/chroot"
    ...
    server.pause(); server.resume()      # SIGSTOP / SIGCONT, for fault tests
    server.stop()

or `with running_zookeeper(tmp_dir) as server: ...`.

`zkServer.sh start-foreground` runs with a config of its own: a short tick (sessions may
time out from 1 s to 10 s), no admin server, no fsync.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ZK_SERVER = Path("/usr/share/zookeeper/bin/zkServer.sh")
TICK_MS = 500  # sessions may time out from 2 ticks (1 s) to 20 ticks (10 s)


def zookeeper_installed() -> bool:
    return ZK_SERVER.exists()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ZooKeeperServer:
    """`zkServer.sh start-foreground` with a config of its own; `connect` is host:port."""

    def __init__(
        self, base: Path, max_session_timeout_ms: int | None = None,
        sasl_users: dict[str, str] | None = None,
    ) -> None:  # fmt: skip
        """`max_session_timeout_ms`: ZooKeeper's maxSessionTimeout (20 ticks, 10 s, if
        None): a broker's zookeeper.session.timeout.ms above it is cut to it.
        `sasl_users`: SASL (DIGEST-MD5) users and passwords the server accepts, with its
        SASLAuthenticationProvider, as a secured ensemble runs it (clients may still
        connect unauthenticated, as `world`)."""
        self.base = base
        self.max_session_timeout_ms = max_session_timeout_ms
        self.sasl_users = sasl_users
        self.port = free_port()
        self.connect = f"127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout_s: float = 60.0) -> None:
        data = self.base / "data"
        data.mkdir(parents=True, exist_ok=True)  # a restart keeps the data
        config = self.base / "zoo.cfg"
        config.write_text(
            f"tickTime={TICK_MS}\ndataDir={data}\nclientPort={self.port}\n"
            "clientPortAddress=127.0.0.1\nadmin.enableServer=false\n"
            "maxClientCnxns=0\nforceSync=no\n"
            + (f"maxSessionTimeout={self.max_session_timeout_ms}\n"
               if self.max_session_timeout_ms else "")
            + ("authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n"
               if self.sasl_users else "")
        )  # fmt: skip
        jvm_flags = "-Xmx256m"
        if self.sasl_users:
            jaas = self.base / "zookeeper_jaas.conf"
            users = "".join(f'\n  user_{u}="{p}"' for u, p in self.sasl_users.items())
            jaas.write_text(
                "Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required"
                f"{users};\n}};\n"
            )
            jvm_flags += f" -Djava.security.auth.login.config={jaas}"
        env = {**os.environ, "ZOO_LOG_DIR": str(self.base), "JVMFLAGS": jvm_flags}
        with open(self.base / "zookeeper.out", "w") as out:
            self.proc = subprocess.Popen(
                [str(ZK_SERVER), "start-foreground", str(config)],
                stdout=out, stderr=subprocess.STDOUT, env=env,
            )  # fmt: skip
        deadline = time.monotonic() + timeout_s
        while not self._answers():
            if self.proc.poll() is not None:
                raise RuntimeError(f"ZooKeeper exited: {(self.base / 'zookeeper.out').read_text()}")
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"ZooKeeper did not answer on {self.connect}")
            time.sleep(0.1)

    def _answers(self) -> bool:
        from kazoo.client import KazooClient
        from kazoo.handlers.threading import KazooTimeoutError

        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                pass
        except OSError:
            return False
        client = KazooClient(hosts=self.connect, timeout=5)
        try:
            client.start(timeout=5)
        except KazooTimeoutError:
            return False
        finally:
            client.stop()
            client.close()
        return True

    def pause(self) -> None:
        """SIGSTOP the server (its JVM: the script execs it), as a long GC pause or a
        stalled disk stops ZooKeeper: connections stay open, nothing is answered."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)  # a paused server cannot exit
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@contextmanager
def running_zookeeper(base: Path, **options: Any) -> Iterator[ZooKeeperServer]:
    """A started ZooKeeperServer in `base` (ZooKeeperServer's options), stopped on exit."""
    server = ZooKeeperServer(base, **options)
    try:
        server.start()
        yield server
    finally:
        server.stop()
