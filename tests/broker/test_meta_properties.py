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


def test_a_stored_topic_config_kt_cannot_read_names_its_topic(tmp_path: Path) -> None:
    """A topic whose stored config holds a key kt does not know (a newer Kafka's, say)
    stops the broker's start with an error that names the topic and the key."""
    from confluent_kafka.admin import AdminClient, NewTopic

    from kt.errors import InvalidConfigError
    from kt.testing import KtCluster

    with KtCluster(2, base_dir=tmp_path) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        admin.create_topics([NewTopic("orders", 1, 1)])["orders"].result(30)
        cluster.stop_broker(0)
        cluster._zk().change_entity_config("topics", "orders", {"future.topic.config": "1"})
        with pytest.raises(InvalidConfigError) as refused:
            cluster.start_broker(0)
    assert str(refused.value) == (
        "Topic orders's config in the metadata store: Unknown topic config name: "
        "future.topic.config"
    )
