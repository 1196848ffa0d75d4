"""kt console-producer reads standard input as Kafka's ConsoleProducer does (its
LineMessageReader reads with BufferedReader.readLine): lines ended by "\n", "\r" or
"\r\n", decoded as UTF-8 with replacement, also where a read ends inside a line, inside a
character or between a "\r" and its "\n"."""

from __future__ import annotations

import io
import random
import sys
from pathlib import Path

import pytest

from kt.tools.console import stdin_lines


def read_lines(data: bytes) -> list[str]:
    """BufferedReader(InputStreamReader(UTF-8)).readLine until null, byte by byte."""
    lines, line, i = [], bytearray(), 0
    while i < len(data):
        byte = data[i : i + 1]
        if byte in (b"\r", b"\n"):
            lines.append(line.decode("utf-8", "replace"))
            line = bytearray()
            i += 2 if data[i : i + 2] == b"\r\n" else 1
            continue
        line += byte
        i += 1
    return lines + ([line.decode("utf-8", "replace")] if line else [])


def kt_lines(data: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """kt's stdin_lines over a file holding `data` (read 64 KiB at a time)."""
    path = tmp_path / "input"
    path.write_bytes(data)
    with path.open("rb") as f:
        monkeypatch.setattr(sys, "stdin", f)
        return list(stdin_lines(1.0))


@pytest.mark.parametrize(
    "data",
    [
        b"a\rb\nc\r\r\nd\r",  # seen with Kafka 3.9's kafka-console-producer: 5 records
        b"x" * 65535 + b"\r\ny\n",  # the first read ends between "\r" and "\n"
        b"x" * 65535 + "\u00e9".encode() + b"\n\r",  # ... inside a character
    ],
)
def test_line_ends_as_kafkas_reader(
    data: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert kt_lines(data, tmp_path, monkeypatch) == read_lines(data)
    assert read_lines(b"a\rb\nc\r\r\nd\r") == ["a", "b", "c", "", "d"]


@pytest.mark.parametrize("seed", range(3))
def test_lines_read_in_chunks_are_the_lines_one_by_one(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    pieces = [b"plain", "é€𝄞".encode(), b"\r", b"\r\n", b"\n", b"\xff", b"\xe2\x82", b"\t"]
    data = b"".join(rng.choice(pieces) for _ in range(60_000)) + b"tail\r"  # 64 KiB reads
    assert kt_lines(data, tmp_path, monkeypatch) == read_lines(data)


def test_a_stream_without_a_descriptor_reads_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    data = "a\rb\nc\r\r\nd\r"
    monkeypatch.setattr(sys, "stdin", io.StringIO(data))
    assert list(stdin_lines(1.0)) == read_lines(data.encode()) == ["a", "b", "c", "", "d"]
