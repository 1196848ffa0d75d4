"""What a test may skip for. A test whose prerequisite is missing (root, Debian's
zookeeper package, Java and Kafka's jars) is skipped with the reason on a developer's
machine; under `.ci/run` (CI=true), which installs all of them and runs as root, the same
situation is a failure: the test must run there."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

CI = os.environ.get("CI") == "true"


def unavailable(reason: str) -> NoReturn:
    if CI:
        pytest.fail(f"{reason}: CI installs what this test needs, so it must run here")
    pytest.skip(reason)
