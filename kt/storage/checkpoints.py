"""Kafka's checkpoint files (server-common CheckpointFile): small text files, one per dir.

  <version>\n          always 0
  <entry count>\n
  <entry>\n ...        fields separated by one space (read: any whitespace)

Offset checkpoints (recovery-point-offset-checkpoint, replication-offset-checkpoint,
log-start-offset-checkpoint, one per log dir) hold `<topic> <partition> <offset>`; the
leader-epoch-checkpoint in each partition directory holds `<epoch> <start offset>`.
A write goes to `<file>.tmp`, is fsynced, renamed over the file, and the directory is
fsynced, so a crash leaves either the old file or the new one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import Generic, TypeVar

T = TypeVar("T")

CURRENT_VERSION = 0


class CheckpointError(Exception):
    """A checkpoint file that does not parse; the message names the file and the line."""


class CheckpointFile(Generic[T]):
    """One checkpoint file with an entry formatter and parser.

    Invariants: the file on disk is always a complete checkpoint (atomic replace); a
    missing or empty file reads as no entries, as Kafka's does.
    """

    def __init__(
        self,
        path: str,
        format_entry: Callable[[T], str],
        parse_entry: Callable[[list[str]], T],
        fields: int,
        version: int = CURRENT_VERSION,
    ) -> None:
        self.path = path
        self.version = version
        self._format = format_entry
        self._parse = parse_entry
        self._fields = fields

    def write(self, entries: Iterable[T]) -> None:
        lines = [self._format(entry) for entry in entries]
        text = f"{self.version}\n{len(lines)}\n" + "".join(line + "\n" for line in lines)
        write_atomically(self.path, text.encode("utf-8"))

    def read(self) -> list[T]:
        try:
            with open(self.path, "rb") as f:
                lines = f.read().decode("utf-8").splitlines()
        except FileNotFoundError:
            return []
        except UnicodeDecodeError as e:
            raise CheckpointError(
                f"Checkpoint file [{self.path}] is not text: {e.reason} at byte {e.start}"
            ) from None
        if not lines:
            return []
        version = self._int(lines[0])
        if version != self.version:
            raise CheckpointError(
                f"Unrecognised version:{version}, expected version: {self.version} "
                f"in checkpoint file at: {self.path}"
            )
        if len(lines) < 2:
            return []
        expected = self._int(lines[1])
        entries = []
        for line in lines[2:]:
            parts = line.split()
            if len(parts) != self._fields:
                raise self._malformed(line)
            try:
                entries.append(self._parse(parts))
            except ValueError:
                raise self._malformed(line) from None
        if len(entries) != expected:
            raise CheckpointError(
                f"Expected [{expected}] entries in checkpoint file [{self.path}], but found "
                f"only [{len(entries)}]"
            )
        return entries

    def _int(self, line: str) -> int:
        try:
            return int(line)
        except ValueError:
            raise self._malformed(line) from None

    def _malformed(self, line: str) -> CheckpointError:
        return CheckpointError(f"Malformed line in checkpoint file [{self.path}]: {line}")


def write_atomically(path: str, data: bytes) -> None:
    """tmp file + fsync + rename + directory fsync (Utils.atomicMoveWithFallback)."""
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(os.path.dirname(os.path.abspath(path)))


def fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class OffsetCheckpointFile:
    """`<topic> <partition> <offset>` entries, read as {(topic, partition): offset}."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._file: CheckpointFile[tuple[str, int, int]] = CheckpointFile(
            path,
            lambda e: f"{e[0]} {e[1]} {e[2]}",
            lambda p: (p[0], int(p[1]), int(p[2])),
            fields=3,
        )

    def write(self, offsets: Mapping[tuple[str, int], int]) -> None:
        self._file.write((t, p, o) for (t, p), o in offsets.items())

    def read(self) -> dict[tuple[str, int], int]:
        return {(t, p): o for t, p, o in self._file.read()}


class LeaderEpochCheckpointFile:
    """`<epoch> <start offset>` entries in a partition directory's leader-epoch-checkpoint."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._file: CheckpointFile[tuple[int, int]] = CheckpointFile(
            path, lambda e: f"{e[0]} {e[1]}", lambda p: (int(p[0]), int(p[1])), fields=2
        )

    def write(self, entries: Iterable[tuple[int, int]]) -> None:
        self._file.write(entries)

    def read(self) -> list[tuple[int, int]]:
        return self._file.read()
