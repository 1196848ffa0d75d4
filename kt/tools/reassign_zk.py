"""`kt reassign --zookeeper`: the 2.x tool's deprecated mode, which works on ZooKeeper
itself (KafkaZkClient) instead of the admin API: the plan goes to
/admin/reassign_partitions, which the controller watches; verify compares the topic
znodes with it; throttles are written as dynamic configs with change notifications.

`ZkReassignAdmin` offers the calls of kt.client.admin.AdminClient that kt.tools.reassign
makes, so the same logic serves both modes, as in Kafka 2.8's tool.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from kt.client.admin import BROKER_RESOURCE, SET
from kt.client.client import PartitionInfo, TopicInfo
from kt.metadata.kafka_zk_client import KafkaZkClient
from kt.metadata.store import NodeExistsError
from kt.metadata.zookeeper import ZooKeeperStore

ZOOKEEPER_WARNING = "Warning: --zookeeper is deprecated, and will be removed in a future " \
    "version of Kafka."  # fmt: skip
IGNORED_WARNING = (
    "Warning: ignoring deprecated --zookeeper option because --bootstrap-server was specified."
    "  The --zookeeper option will be removed in a future version of Kafka."
)
VERIFY_WARNING = (
    "Warning: because you are using the deprecated --zookeeper option, the results may be "
    "incomplete.  Use --bootstrap-server instead for more accurate results."
)


class _Brokers:
    """What kt.tools.reassign reads of a KafkaClient: the live brokers and their racks."""

    def __init__(self, zk: KafkaZkClient) -> None:
        self.zk = zk
        self.brokers: dict[int, tuple[str, int, str | None]] = {}

    def metadata(self, topics: list[str] | None = None) -> None:
        self.brokers = {b.broker_id: ("", -1, b.rack) for b in self.zk.get_all_brokers()}


class ZkReassignAdmin:
    def __init__(self, zk: KafkaZkClient) -> None:
        self.zk = zk
        self.client = _Brokers(zk)
        self.client.metadata()

    def describe_topics(self, topics: list[str]) -> dict[str, TopicInfo]:
        found = {}
        for topic in topics:
            assignment = self.zk.get_topic_assignment(topic)
            if assignment is None:
                continue
            found[topic] = TopicInfo(topic, assignment.topic_id, False, {
                p: PartitionInfo(topic, p, -1, -1, list(r), [], [])
                for p, r in assignment.partitions.items()
            })  # fmt: skip
        return found

    def list_partition_reassignments(
        self, partitions: list[tuple[str, int]] | None = None
    ) -> dict[tuple[str, int], tuple[list[int], list[int], list[int]]]:
        """The partitions named in /admin/reassign_partitions (all the legacy API sees)."""
        wanted = self.zk.get_partition_reassignment() or {}
        return {tp: (list(r), [], []) for tp, r in wanted.items()
                if partitions is None or tp in partitions}  # fmt: skip

    def alter_partition_reassignments(
        self, targets: dict[tuple[str, int], list[int] | None]
    ) -> dict[tuple[str, int], tuple[int, str | None]]:
        try:
            self.zk.create_partition_reassignment(
                {tp: r for tp, r in targets.items() if r is not None}
            )
        except NodeExistsError:
            return dict.fromkeys(targets, (60, "There is an existing assignment running."))
        return dict.fromkeys(targets, (0, None))

    def incremental_alter_configs(
        self, resource: int, name: str, ops: list[tuple[int, str, str | None]]
    ) -> tuple[int, str | None]:
        entity = "brokers" if resource == BROKER_RESOURCE else "topics"
        config = self.zk.get_entity_config(entity, name)
        for op, key, value in ops:
            if op == SET:
                config[key] = value or ""
            else:
                config.pop(key, None)
        self.zk.change_entity_config(entity, name, config)
        return 0, None


@contextmanager
def zk_admin(connect: str) -> Iterator[ZkReassignAdmin]:
    """A ZooKeeper session for the tool (30 s timeouts, as the 2.x tool's KafkaZkClient)."""
    store = ZooKeeperStore(connect, session_timeout_ms=30_000, connection_timeout_ms=30_000)
    zk = KafkaZkClient(store.session("reassign-partitions-tool"))
    try:
        yield ZkReassignAdmin(zk)
    finally:
        zk.close()
        store.close()
