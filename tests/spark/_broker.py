"""A real `kt server-start` process for the Spark tests that read through the Fetch API."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

READY = re.compile(r"\[KafkaServer id=(\d+)\] started: PLAINTEXT://([\d.]+):(\d+)")


@dataclass
class Broker:
    """A broker on 127.0.0.1 (an ephemeral port, kept across restarts) over `log_dir`."""

    log_dir: Path
    proc: subprocess.Popen | None = None
    port: int = 0
    output: list[str] = field(default_factory=list)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 30.0) -> Broker:
        args = [sys.executable, "-m", "kt", "server-start",
                "--override", f"listeners=PLAINTEXT://127.0.0.1:{self.port}",
                "--override", f"log.dirs={self.log_dir}"]  # fmt: skip
        log = open(self.log_dir.parent / "broker.log", "a")  # noqa: SIM115
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, text=True)
        log.close()
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"broker exited with {self.proc.wait()}: {self.logs()}")
            self.output.append(line)
            match = READY.search(line)
            if match:
                self.port = int(match.group(3))
                return self
        raise TimeoutError(f"broker not ready after {timeout_s} s")

    def stop(self, timeout_s: float = 30.0) -> int:
        """SIGTERM, as an operator stops a broker: it closes its logs cleanly."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()
        finally:
            if self.proc.stdout is not None:
                self.proc.stdout.close()

    def logs(self) -> str:
        path = self.log_dir.parent / "broker.log"
        return path.read_text()[-4000:] if path.exists() else ""
