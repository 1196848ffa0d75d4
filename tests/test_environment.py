"""A missing prerequisite skips a test on a developer's machine and fails it under CI."""

import pytest

from tests import _environment


def test_skipped_here_failed_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_environment, "CI", False)
    with pytest.raises(pytest.skip.Exception, match="^no zookeeper$"):
        _environment.unavailable("no zookeeper")
    monkeypatch.setattr(_environment, "CI", True)
    with pytest.raises(pytest.fail.Exception, match="^no zookeeper: CI installs"):
        _environment.unavailable("no zookeeper")
