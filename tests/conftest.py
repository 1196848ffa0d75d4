"""Fixtures shared by every test package."""

from tests._tmpfs import small_fs

__all__ = ["small_fs"]
