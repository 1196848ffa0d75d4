"""meta.properties ties a log dir to one broker and one cluster."""

from pathlib import Path

import pytest

from kt.broker.meta_properties import check_meta_properties, read_meta_properties
from kt.config import InvalidConfigError


def test_written_on_first_start_and_reused(tmp_path: Path) -> None:
    dirs = [tmp_path / "a", tmp_path / "b"]
    assert check_meta_properties(dirs, -1, "cluster-1") == 0
    assert read_meta_properties(dirs[0]) == {
        "cluster.id": "cluster-1", "version": "0", "broker.id": "0",
    }  # fmt: skip
    assert check_meta_properties(dirs, -1, "cluster-1") == 0


def test_configured_id_must_match_stored(tmp_path: Path) -> None:
    check_meta_properties([tmp_path], 3, "c")
    with pytest.raises(InvalidConfigError, match="doesn't match stored broker.id 3"):
        check_meta_properties([tmp_path], 4, "c")


def test_wrong_cluster_is_refused(tmp_path: Path) -> None:
    check_meta_properties([tmp_path], 1, "c1")
    with pytest.raises(InvalidConfigError, match="trying to join the wrong cluster"):
        check_meta_properties([tmp_path], 1, "c2")
