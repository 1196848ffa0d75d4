"""A Spark standalone cluster for the tests: a master and two workers, each its own JVM,
started with the `spark-class` that the pyspark wheel ships, on 127.0.0.1 with free ports.

Applications run on it through `spark://127.0.0.1:PORT`: their tasks run in executors
that the workers start, and their readers and writers are pickled to Python workers in
those executors' JVMs, as on a real cluster.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from kt.testing.zookeeper import free_port

MASTER = "org.apache.spark.deploy.master.Master"
WORKER = "org.apache.spark.deploy.worker.Worker"


def spark_class() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-class"


class SparkStandalone:
    """`workers` workers of one core and `worker_memory` each, under `base`."""

    def __init__(self, base: Path, workers: int = 2, worker_memory: str = "1g") -> None:
        self.base = base
        self.port = free_port()
        self.ui_port = free_port()
        self.master_url = f"spark://127.0.0.1:{self.port}"
        self.workers = workers
        self.worker_memory = worker_memory
        self.procs: list[subprocess.Popen] = []

    def _spawn(self, name: str, *args: str) -> None:
        env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
               "SPARK_LOG_DIR": str(self.base)}  # fmt: skip
        with open(self.base / f"{name}.log", "w") as log:
            self.procs.append(subprocess.Popen(
                [str(spark_class()), *args], stdout=log, stderr=subprocess.STDOUT, env=env,
                start_new_session=True,
            ))  # fmt: skip

    def start(self, timeout_s: float = 120.0) -> SparkStandalone:
        self.base.mkdir(parents=True, exist_ok=True)
        self._spawn("master", MASTER, "--host", "127.0.0.1", "--port", str(self.port),
                    "--webui-port", str(self.ui_port))  # fmt: skip
        for i in range(self.workers):
            work = self.base / f"worker-{i}"
            work.mkdir(exist_ok=True)
            self._spawn(f"worker-{i}", WORKER, "--host", "127.0.0.1", "--cores", "1",
                        "--memory", self.worker_memory, "--work-dir", str(work),
                        "--webui-port", str(free_port()), self.master_url)  # fmt: skip
        deadline = time.monotonic() + timeout_s
        while self.alive_workers() < self.workers:
            for proc in self.procs:
                if proc.poll() is not None:
                    raise RuntimeError(f"a Spark daemon exited: {self.logs()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.workers} workers not registered: {self.logs()}")
            time.sleep(0.5)
        return self

    def alive_workers(self) -> int:
        """ALIVE workers, as the master's web UI reports them (its /json page)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json", timeout=5) as r:
                state = json.load(r)
        except (OSError, ValueError):  # not up yet, or a page cut short while it starts
            return 0
        return int(state.get("aliveworkers", 0))

    def logs(self) -> str:
        return "\n".join(p.read_text()[-2000:] for p in sorted(self.base.glob("*.log")))

    def stop(self) -> None:
        for proc in reversed(self.procs):  # workers first; each takes its executors along
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
