"""A small file system that a test can fill: a tmpfs mounted for the test, as root.

Where mounting is not allowed (not root, or a container without CAP_SYS_ADMIN) the tests
that need one are skipped with the reason. `grow` remounts it larger in place, as an
operator frees space, without touching its files.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._environment import unavailable


class SmallFs:
    """A tmpfs mounted at `path` with `size_bytes` of room."""

    def __init__(self, path: Path, size_bytes: int) -> None:
        self.path = path
        self.size_bytes = size_bytes

    def mount(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        if os.geteuid() != 0:
            unavailable("mounting a small tmpfs to fill needs root")
        result = _mount("-t", "tmpfs", "-o", f"size={self.size_bytes}", "tmpfs", str(self.path))
        if result.returncode != 0:
            unavailable(f"cannot mount a tmpfs here: {result.stderr.strip()}")

    def grow(self, size_bytes: int) -> None:
        """Free space the way an operator would: the same files, more room."""
        result = _mount("-o", f"remount,size={size_bytes}", str(self.path))
        assert result.returncode == 0, result.stderr
        self.size_bytes = size_bytes

    def free_bytes(self) -> int:
        stat = os.statvfs(self.path)
        return stat.f_bavail * stat.f_frsize

    def unmount(self) -> None:
        subprocess.run(["umount", "--lazy", str(self.path)], check=False, capture_output=True)


def _mount(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["mount", *args], capture_output=True, text=True, check=False)


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator:
    """Make a SmallFs of the given size under tmp_path; unmounted after the test."""
    mounted: list[SmallFs] = []

    def make(size_bytes: int, name: str = "fs") -> SmallFs:
        fs = SmallFs(tmp_path / name, size_bytes)
        fs.mount()
        mounted.append(fs)
        return fs

    yield make
    for fs in mounted:
        fs.unmount()
