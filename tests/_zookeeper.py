"""A real ZooKeeper server for the tests: kt.testing's, from Debian's `zookeeper` package.

One server per test session (started on first use, on a free port, with its data in a
temporary directory, stopped at the end); each test gets a chroot of its own in the
connect string, so clusters of different tests never see each other's znodes. Tests
that need it are skipped, with the reason, only where the package is not installed, and
fail instead under CI: `.ci/run` installs it. `kt_zookeeper` replaces kt.testing's fixture
of that name, so that `kt_cluster(3, zookeeper=True)` is held to the same rule.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from kt.testing.zookeeper import ZooKeeperServer, running_zookeeper, zookeeper_installed
from tests._environment import unavailable


@pytest.fixture(scope="session")
def kt_zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    if not zookeeper_installed():
        unavailable("Debian's zookeeper package is not installed (apt-get install zookeeper)")
    with running_zookeeper(tmp_path_factory.mktemp("zookeeper")) as server:
        yield server


@pytest.fixture
def zookeeper(kt_zookeeper: ZooKeeperServer) -> str:
    """A zookeeper.connect string with a chroot of this test's own."""
    return f"{kt_zookeeper.connect}/kt-test-{uuid.uuid4().hex[:12]}"
