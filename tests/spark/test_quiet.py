"""The filter on the Spark JVM's stderr (kt.spark.quiet): Python workers' tracebacks
that only say the JVM closed their socket are dropped, whole, even when two workers
write theirs at once; any other traceback, and every other line, passes in order."""

from __future__ import annotations

from kt.spark.quiet import WorkerTracebacks


def passed(*lines: str) -> list[str]:
    return [b.decode() for b in WorkerTracebacks().filter(s.encode() + b"\n" for s in lines)]


def test_closed_socket_tracebacks_are_dropped_even_interleaved() -> None:
    assert passed(
        "before",
        "Traceback (most recent call last):",
        "Traceback (most recent call last):",
        '  File "pyspark/daemon.py", line 264, in manager',
        '  File "pyspark/daemon.py", line 95, in worker',
        "BrokenPipeError: [Errno 32] Broken pipe",
        '  File "pyspark/daemon.py", line 95, in worker',
        "ConnectionResetError: [Errno 104] Connection reset by peer",
        "after",
    ) == ["before\n", "after\n"]


def test_other_tracebacks_and_lines_pass_whole() -> None:
    lines = ["Traceback (most recent call last):", '  File "job.py", line 3, in <module>',
             "ValueError: a real failure", "24/01/01 ERROR Executor: task failed"]  # fmt: skip
    assert passed(*lines) == [line + "\n" for line in lines]


def test_a_block_with_one_real_failure_passes_whole() -> None:
    lines = ["Traceback (most recent call last):", "Traceback (most recent call last):",
             "  File a", "BrokenPipeError: [Errno 32] Broken pipe", "  File b",
             "KeyError: 'x'"]  # fmt: skip
    assert passed(*lines) == [line + "\n" for line in lines]


def test_the_jvm_start_up_warning_is_dropped() -> None:
    assert passed("WARNING: Using incubator modules: jdk.incubator.vector", "kept") == ["kept\n"]


def test_an_unfinished_traceback_is_not_lost() -> None:
    assert passed("Traceback (most recent call last):", "  File a") == [
        "Traceback (most recent call last):\n", "  File a\n"]  # fmt: skip
