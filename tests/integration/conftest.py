"""Fixtures that run a real `kt server-start` process and talk to it with real clients.

`BrokerProcess` is one broker child process on 127.0.0.1. The first start binds an
ephemeral port (listener port 0, advertised as the port it got); every later start
reuses that port and the same log dir, so clients and tests see "the same broker come
back". The broker's stderr log is appended to `<tmp>/broker.log`; `run_log()` returns
the part written since the latest start, which is how tests tell a clean load from a
recovery.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

READY = re.compile(r"\[KafkaServer id=(\d+)\] started: [A-Z_]+://([\d.]+):(\d+)")


@dataclass
class BrokerProcess:
    """A `kt server-start` child process on 127.0.0.1.

    Invariants: `port` is 0 until the first start, then fixed; `log_dir` is kept across
    restarts; `run_log()` covers exactly the current (or latest) run.
    """

    log_dir: Path
    overrides: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen | None = None
    port: int = 0
    output: list[str] = field(default_factory=list)
    _log_mark: int = 0

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.log_dir.parent / f"{self.log_dir.name}.broker.log"

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout_s: float = 30.0) -> None:
        # Reuse the port of a previous run so that clients can reconnect after a restart
        # (the listener's name from the overrides, when they name one).
        # Several listeners in the overrides are bound as they say (port 0: new ports).
        configured = self.overrides.get("listeners", "PLAINTEXT://127.0.0.1:0")
        name = configured.split("://")[0]
        listener = configured if "," in configured else f"{name}://127.0.0.1:{self.port}"
        args = [sys.executable, "-m", "kt", "server-start", "--log-level", "INFO"]
        props = {"log.dirs": str(self.log_dir), **self.overrides, "listeners": listener}
        for key, value in props.items():
            args += ["--override", f"{key}={value}"]
        self._log_mark = self.log_path.stat().st_size if self.log_path.exists() else 0
        with open(self.log_path, "a") as stderr:
            self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=stderr, text=True)
        deadline = time.monotonic() + timeout_s
        assert self.proc.stdout is not None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"broker exited with {self.proc.wait()}: {self.run_log()}")
            self.output.append(line)
            match = READY.search(line)
            if match:
                self.port = int(match.group(3))
                return
        raise TimeoutError(f"broker not ready after {timeout_s} s")

    def stop(self, sig: int = signal.SIGTERM, timeout_s: float = 30.0) -> int:
        """Send `sig` and wait for the exit; returns the exit status."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return code

    def kill(self) -> int:
        """kill -9: no shutdown hook runs, nothing is flushed by the broker."""
        return self.stop(signal.SIGKILL)

    def restart(self) -> None:
        self.stop()
        self.start()

    def run_log(self) -> str:
        """The broker log written since the latest start."""
        if not self.log_path.exists():
            return ""
        with open(self.log_path) as f:
            f.seek(self._log_mark)
            return f.read()

    def logs(self) -> str:
        return self.run_log()[-4000:]


def new_broker(base: Path, name: str, overrides: dict[str, str]) -> BrokerProcess:
    """Start a broker with its log dir at base/name and these server.properties overrides."""
    broker = BrokerProcess(base / name, dict(overrides))
    broker.log_dir.mkdir()
    broker.start()
    return broker


@pytest.fixture
def broker_factory(tmp_path: Path) -> Iterator:
    """Start brokers for one test; each gets its own log dir under tmp_path."""
    started: list[BrokerProcess] = []

    def make(**overrides: str) -> BrokerProcess:
        broker = new_broker(tmp_path, f"kt-logs-{len(started)}", overrides)
        started.append(broker)
        return broker

    yield make
    for broker in started:
        if broker.alive:
            broker.stop()


@pytest.fixture
def broker(broker_factory) -> BrokerProcess:
    return broker_factory()


@pytest.fixture(scope="module")
def module_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One broker shared by the tests of a module (tests must use distinct topics)."""
    broker = new_broker(tmp_path_factory.mktemp("kt"), "kt-logs", {})
    yield broker
    if broker.alive:
        broker.stop()


def kt_command(*args: str, timeout_s: float = 60.0, input: str | None = None):
    """Run the `kt` executable (as `python -m kt`) and return the CompletedProcess."""
    return subprocess.run(
        [sys.executable, "-m", "kt", *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        input=input,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def kt_ok(*args: str, input: str | None = None) -> list[str]:
    """Run `kt`, demand exit 0, return its stdout lines."""
    result = kt_command(*args, input=input)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def kt_error(*args: str, input: str | None = None) -> str:
    """Run `kt`, demand exit 1 and exactly one line on stderr (no traceback); return it."""
    result = kt_command(*args, input=input)
    assert result.returncode == 1, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]
