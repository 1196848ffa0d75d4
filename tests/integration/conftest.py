"""Fixtures that run a real `kt server-start` process and talk to it with real clients."""

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

READY = re.compile(r"\[KafkaServer id=(\d+)\] started: PLAINTEXT://([\d.]+):(\d+)")


@dataclass
class BrokerProcess:
    """A `kt server-start` child process on 127.0.0.1 with an ephemeral port."""

    log_dir: Path
    overrides: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen | None = None
    port: int = 0
    output: list[str] = field(default_factory=list)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 30.0) -> None:
        # Reuse the port of a previous run so that clients can reconnect after a restart.
        listener = f"PLAINTEXT://127.0.0.1:{self.port}"
        args = [sys.executable, "-m", "kt", "server-start", "--log-level", "INFO"]
        props = {"listeners": listener, "log.dirs": str(self.log_dir), **self.overrides}
        for key, value in props.items():
            args += ["--override", f"{key}={value}"]
        self.proc = subprocess.Popen(
            args,
            stdout=subprocess.PIPE,
            stderr=open(self.log_dir.parent / "broker.log", "a"),  # noqa: SIM115
            text=True,
        )
        deadline = time.monotonic() + timeout_s
        assert self.proc.stdout is not None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"broker exited with {self.proc.wait()}: {self.logs()}")
            self.output.append(line)
            match = READY.search(line)
            if match:
                self.port = int(match.group(3))
                return
        raise TimeoutError(f"broker not ready after {timeout_s} s")

    def stop(self, sig: int = signal.SIGTERM, timeout_s: float = 30.0) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def restart(self) -> None:
        self.stop()
        self.start()

    def logs(self) -> str:
        path = self.log_dir.parent / "broker.log"
        return path.read_text()[-4000:] if path.exists() else ""


@pytest.fixture
def broker_factory(tmp_path: Path) -> Iterator:
    started: list[BrokerProcess] = []

    def make(**overrides: str) -> BrokerProcess:
        broker = BrokerProcess(tmp_path / f"kt-logs-{len(started)}", dict(overrides))
        broker.log_dir.mkdir()
        broker.start()
        started.append(broker)
        return broker

    yield make
    for broker in started:
        if broker.proc is not None and broker.proc.poll() is None:
            broker.stop()


@pytest.fixture
def broker(broker_factory) -> BrokerProcess:
    return broker_factory()


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
