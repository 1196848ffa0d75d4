"""Fixtures shared by every test package: a small file system to fill (tests/_tmpfs.py),
a real ZooKeeper (tests/_zookeeper.py), and kt.testing's kt_cluster, as a user of
kt.testing would have it."""

from kt.testing import kt_cluster
from tests._tmpfs import small_fs
from tests._zookeeper import kt_zookeeper, zookeeper

__all__ = ["kt_cluster", "kt_zookeeper", "small_fs", "zookeeper"]
