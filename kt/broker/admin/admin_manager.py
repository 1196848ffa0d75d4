"""Topic and config administration (Kafka's ZkAdminManager + AdminZkClient).

CreateTopics, DeleteTopics, CreatePartitions and the config APIs land here, on the
controller broker. They validate, write Kafka's znodes (the topic config first, then the
assignment the controller watches) and then wait, up to the request's timeout, until the
controller has elected leaders and this broker's metadata cache shows them
(DelayedCreatePartitions). Errors are KafkaError values carrying the code clients expect.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kt.broker.admin.assign_replicas import assign_replicas_to_brokers
from kt.broker.descriptors import check_descriptors_for
from kt.config import InvalidConfigError, LogConfig
from kt.errors import KafkaError, store_error
from kt.metadata.store import MetadataStoreError, NodeExistsError
from kt.metadata.znodes import TopicAssignment
from kt.storage.names import validate_topic_name

if TYPE_CHECKING:
    from kt.broker.metadata_cache import MetadataCache
    from kt.config import KafkaConfig
    from kt.metadata.kafka_zk_client import KafkaZkClient

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
MAX_REPLICATION_FACTOR = 32767


@dataclass
class NewTopic:
    name: str
    num_partitions: int = -1  # -1: num.partitions
    replication_factor: int = -1  # -1: default.replication.factor
    assignments: dict[int, list[int]] = field(default_factory=dict)
    configs: dict[str, str] = field(default_factory=dict)


@dataclass
class TopicResult:
    name: str
    error_code: int = 0
    error_message: str | None = None
    topic_id: Any = None
    num_partitions: int = -1
    replication_factor: int = -1
    config: LogConfig | None = None

    @classmethod
    def failed(cls, name: str, error: KafkaError) -> TopicResult:
        return cls(name, error.code, str(error) or None)


class AdminManager:
    """Validates and applies admin requests against the metadata store."""

    def __init__(
        self, broker_id: int, config: KafkaConfig, zk: KafkaZkClient,
        metadata_cache: MetadataCache, topic_defaults: LogConfig,
    ) -> None:  # fmt: skip
        self.broker_id = broker_id
        self.config = config
        self.zk = zk
        self.metadata_cache = metadata_cache
        self.topic_defaults = topic_defaults

    def live_brokers(self) -> list[int]:
        return sorted(self.zk.get_broker_ids())

    def log_config(self, topic: str) -> LogConfig:
        """A topic's effective config: broker defaults overlaid with its overrides."""
        defaults = self.topic_defaults
        return defaults.with_overrides(self.zk.get_entity_config("topics", topic))

    # -- create ---------------------------------------------------------------------

    def create_topic(self, topic: NewTopic, validate_only: bool) -> TopicResult:
        """Validate and write one new topic; the error of each step as its result (a
        store error too, as ZkAdminManager answers every exception of one topic)."""
        try:
            return self._create_topic(topic, validate_only)
        except MetadataStoreError as e:
            return TopicResult.failed(topic.name, store_error(e))

    def _create_topic(self, topic: NewTopic, validate_only: bool) -> TopicResult:
        try:
            validate_topic_name(topic.name)
            if topic.name in self.zk.get_all_topics():
                raise KafkaError("TOPIC_ALREADY_EXISTS", f"Topic '{topic.name}' already exists.")
            assignment = self._assignment_for(topic)
            config = self.topic_defaults.with_overrides(topic.configs)
        except InvalidConfigError as e:
            return TopicResult.failed(topic.name, e)
        except KafkaError as e:
            return TopicResult.failed(topic.name, e)
        result = TopicResult(
            topic.name,
            num_partitions=len(assignment),
            replication_factor=len(next(iter(assignment.values()))),
            config=config,
        )
        local = sum(self.broker_id in replicas for replicas in assignment.values())
        try:
            check_descriptors_for(local)
        except OSError as e:
            return TopicResult.failed(topic.name, KafkaError("KAFKA_STORAGE_ERROR", e.strerror))
        if not validate_only:
            try:
                result.topic_id = self.zk.create_topic(topic.name, assignment, topic.configs)
            except NodeExistsError:
                return TopicResult.failed(
                    topic.name,
                    KafkaError("TOPIC_ALREADY_EXISTS", f"Topic '{topic.name}' already exists."),
                )
        return result

    def _assignment_for(self, topic: NewTopic) -> dict[int, list[int]]:
        live = self.live_brokers()
        if topic.assignments:
            if topic.num_partitions != -1 or topic.replication_factor != -1:
                raise KafkaError(
                    "INVALID_REQUEST",
                    "Both numPartitions or replicationFactor and replicasAssignments were set. "
                    "Both cannot be used at the same time.",
                )
            return self._validated_manual_assignment(topic.assignments, live, 0)
        partitions = topic.num_partitions
        if partitions == -1:
            partitions = self.config["num.partitions"]
        rf = topic.replication_factor
        if rf == -1:
            rf = self.config["default.replication.factor"]
        if partitions <= 0:
            raise KafkaError("INVALID_PARTITIONS", "Number of partitions must be larger than 0.")
        if not 1 <= rf <= MAX_REPLICATION_FACTOR:
            raise KafkaError(
                "INVALID_REPLICATION_FACTOR",
                "Replication factor must be larger than 0 and not larger than 32767.",
            )
        racks = {b: r.rack for b in live if (r := self.zk.get_broker(b)) is not None}
        return assign_replicas_to_brokers(partitions, rf, live, racks=racks)

    def _validated_manual_assignment(
        self, assignments: Mapping[int, list[int]], live: list[int], first_partition: int
    ) -> dict[int, list[int]]:
        expected = list(range(first_partition, first_partition + len(assignments)))
        if sorted(assignments) != expected:
            raise KafkaError(
                "INVALID_REPLICA_ASSIGNMENT",
                f"Partitions should be a consecutive 0-based integer sequence, got "
                f"{sorted(assignments)}",
            )
        sizes = {len(r) for r in assignments.values()}
        if len(sizes) != 1 or 0 in sizes:
            raise KafkaError(
                "INVALID_REPLICA_ASSIGNMENT",
                "All partitions should have the same number of replicas",
            )
        for partition, replicas in assignments.items():
            if len(set(replicas)) != len(replicas):
                raise KafkaError(
                    "INVALID_REPLICA_ASSIGNMENT",
                    f"Duplicate brokers not allowed in replica assignment: {replicas} "
                    f"for partition id {partition}.",
                )
            unknown = [b for b in replicas if b not in live]
            if unknown:
                raise KafkaError(
                    "INVALID_REPLICA_ASSIGNMENT",
                    f"Unknown broker(s) {unknown} in replica assignment for partition {partition}.",
                )
        return {p: list(r) for p, r in assignments.items()}

    # -- partitions -------------------------------------------------------------------

    def create_partitions(
        self, topic: str, count: int, assignments: list[list[int]] | None, validate_only: bool
    ) -> TopicResult:
        try:
            return self._create_partitions(topic, count, assignments, validate_only)
        except MetadataStoreError as e:
            return TopicResult.failed(topic, store_error(e))

    def _create_partitions(
        self, topic: str, count: int, assignments: list[list[int]] | None, validate_only: bool
    ) -> TopicResult:
        try:
            current = self.zk.get_topic_assignment(topic)
            if current is None or topic in self.zk.get_topic_deletions():
                raise KafkaError(
                    "UNKNOWN_TOPIC_OR_PARTITION", f"The topic '{topic}' does not exist."
                )
            existing = len(current.partitions)
            if count <= existing:
                raise KafkaError(
                    "INVALID_PARTITIONS",
                    f"Topic currently has {existing} partitions, which is higher than the "
                    f"requested {count}." if count < existing else
                    f"Topic already has {existing} partitions.",
                )  # fmt: skip
            live = self.live_brokers()
            added = count - existing
            if assignments:
                if len(assignments) != added:
                    raise KafkaError(
                        "INVALID_REPLICA_ASSIGNMENT",
                        f"Increasing the number of partitions by {added} but "
                        f"{len(assignments)} assignments provided.",
                    )
                new = self._validated_manual_assignment(
                    {existing + i: list(r) for i, r in enumerate(assignments)}, live, existing
                )
            else:
                rf = len(current.partitions[0])
                new = assign_replicas_to_brokers(
                    added, rf, live, start_partition_id=existing,
                    fixed_start_index=current.partitions[0][0] if current.partitions[0] else -1,
                )  # fmt: skip
        except KafkaError as e:
            return TopicResult.failed(topic, e)
        if not validate_only:
            partitions = {**{p: list(r) for p, r in current.partitions.items()}, **new}
            self.zk.set_topic_assignment(
                TopicAssignment(
                    topic,
                    partitions,
                    current.topic_id,
                    current.adding_replicas,
                    current.removing_replicas,
                )  # fmt: skip
            )
        return TopicResult(topic, num_partitions=count)

    # -- delete ------------------------------------------------------------------------

    def delete_topic(self, topic: str) -> TopicResult:
        try:
            return self._delete_topic(topic)
        except MetadataStoreError as e:
            return TopicResult.failed(topic, store_error(e))

    def _delete_topic(self, topic: str) -> TopicResult:
        if not self.config["delete.topic.enable"]:
            return TopicResult.failed(
                topic, KafkaError("TOPIC_DELETION_DISABLED", "Topic deletion is disabled.")
            )
        if self.zk.get_topic_assignment(topic) is None:
            return TopicResult.failed(
                topic,
                KafkaError("UNKNOWN_TOPIC_OR_PARTITION", "This server does not host this topic"),
            )
        self.zk.mark_topic_for_deletion(topic)
        return TopicResult(topic)

    # -- waiting for the controller ----------------------------------------------------

    async def wait_for_metadata(self, condition: Any, timeout_ms: int) -> bool:
        """Wait until `condition()` holds for this broker's metadata cache, or timeout."""
        deadline = time.monotonic() + max(timeout_ms, 0) / 1000
        while not condition():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            await self.metadata_cache.wait_changed(remaining)
        return True

    def topics_have_leaders(self, topics: list[str]) -> bool:
        cache = self.metadata_cache
        for topic in topics:
            parts = cache.topic_partitions(topic)
            if not parts or any(p.leader < 0 for p in parts.values()):
                return False
        return True

    def topics_gone(self, topics: list[str]) -> bool:
        cache = self.metadata_cache
        return not any(cache.contains(t) for t in topics)
