"""kt/cached_file.py: processes writing the same cached file at once never show a reader
a partial one, and a file already right is left alone."""

from __future__ import annotations

import threading
from pathlib import Path

from kt.cached_file import cached_file


def test_a_reader_sees_one_whole_text_or_the_other(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "log4j.properties"
    texts = ["a" * 1_000_000, "b" * 1_000_000]
    cached_file(path, texts[0])
    stop = threading.Event()

    def write(text: str) -> None:
        while not stop.is_set():
            cached_file(path, text)

    writers = [threading.Thread(target=write, args=(text,)) for text in texts]
    for writer in writers:
        writer.start()
    try:
        seen = {len(path.read_text()) for _ in range(300)}
    finally:
        stop.set()
        for writer in writers:
            writer.join(10)
    assert seen == {1_000_000}
    assert sorted(p.name for p in path.parent.iterdir()) == ["log4j.properties"]


def test_a_file_already_right_is_not_written(tmp_path: Path) -> None:
    path = cached_file(tmp_path / "x.properties", "a=1\n")
    before = path.stat().st_mtime_ns, path.stat().st_ino
    assert cached_file(path, "a=1\n") == path
    assert (path.stat().st_mtime_ns, path.stat().st_ino) == before
    cached_file(path, "a=2\n")
    assert path.read_text() == "a=2\n"
