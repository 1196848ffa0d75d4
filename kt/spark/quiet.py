"""A Spark session's start-up, without the noise around a successful run.

Spark's JVM says a dozen things at start that are not the user's business (log4j's
default profile, "Setting default log level", a NativeCodeLoader warning, the JVM's
"Using incubator modules"), and when a session stops, the JVM closes the sockets of
its Python workers under them: a worker that was writing prints a BrokenPipeError
traceback (pyspark.daemon), after a run that succeeded. kt's sessions log Spark's
errors only: a log4j2 file of ours at ERROR for the driver
(`spark.driver.extraJavaOptions`), and the JVM's stderr, which its Python workers
share, passed through a filter that drops the JVM's start-up warning and the
tracebacks of workers whose JVM end was gone. `--verbose` on the Spark commands keeps
everything as Spark prints it.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from kt.cached_file import cached_file

LOG4J2_ERRORS = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
"""
# (The repl logger at the root's level: Spark's Logging, which counts pyspark as a
# shell, then has no "Setting default log level" to announce.)

# What the JVM prints before any logger exists (JavaModuleOptions' --add-modules).
JVM_NOISE = re.compile(r"WARNING: Using incubator modules: ")
# A Python worker's traceback (pyspark.daemon prints them; two workers' may interleave),
# and the exceptions that only say the JVM closed the worker's socket.
TRACEBACK_START = re.compile(r"Traceback \(most recent call last\):|PySpark daemon failed to flush")
SOCKET_GONE = re.compile(r"(BrokenPipeError|ConnectionResetError)\b")


def quiet_java_options() -> str:
    """The driver JVM's option that points log4j2 at our ERROR-level configuration."""
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kt"
    path = cached_file(cache / "spark-log4j2-errors.properties", LOG4J2_ERRORS)
    return f"-Dlog4j2.configurationFile=file:{path}"


@contextmanager
def filtered_jvm_stderr() -> Iterator[None]:
    """While the JVM starts (it inherits our stderr), stderr goes through a pipe whose
    lines, but the JVM's start-up noise, a thread passes on to the real stderr. The JVM
    keeps the pipe as its stderr for its whole life, and the thread keeps passing its
    lines on (errors included) after ours is restored."""
    real = os.dup(2)
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)
    threading.Thread(target=_forward, args=(read_end, real), daemon=True,
                     name="spark-stderr").start()  # fmt: skip
    try:
        yield
    finally:
        os.dup2(real, 2)


def _forward(read_end: int, real: int) -> None:
    with os.fdopen(read_end, "rb") as lines:
        for line in WorkerTracebacks().filter(lines):
            os.write(real, line)


class WorkerTracebacks:
    """Drops the JVM's start-up warning and the Python tracebacks that end in a closed
    socket, passing every other line on in order. Tracebacks are held whole: a block
    opens at "Traceback ..." (or pyspark.daemon's flush message) and holds indented
    lines and further tracebacks (workers write at the same time) until each has its
    exception line; it is dropped when every exception in it is a closed socket."""

    def __init__(self) -> None:
        self.block: list[bytes] = []
        self.open = 0  # tracebacks in the block still waiting for their exception line
        self.harmless = True

    def filter(self, lines: Iterable[bytes]) -> Iterator[bytes]:
        for line in lines:
            text = line.decode("utf-8", "replace")
            if TRACEBACK_START.match(text):
                self.open += text.startswith("Traceback")
                self.block.append(line)
            elif not self.block:
                if not JVM_NOISE.match(text):
                    yield line
            else:
                self.block.append(line)
                if self.open and not text[:1].isspace():  # an exception line ends one
                    self.open -= 1
                    self.harmless = self.harmless and bool(SOCKET_GONE.match(text))
                if not self.open:
                    if not self.harmless:
                        yield from self.block
                    self.block, self.harmless = [], True
        yield from self.block
