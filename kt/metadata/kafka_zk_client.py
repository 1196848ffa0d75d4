"""KafkaZkClient: Kafka's typed reads and writes of its znodes, on any store Session.

Kafka's KafkaZkClient/AdminZkClient (ZooKeeper mode), reduced to what kt's broker,
controller and tools use. Every method is one or a few store calls and a codec from
kt.metadata.znodes; watches are the store's one-shot callbacks, passed through.

Controller election follows KafkaZkClient.registerControllerAndIncrementControllerEpoch:
/controller (ephemeral) is created and /controller_epoch bumped in one multi,
conditional on the epoch znode's version, so two brokers can never both win an epoch.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from kt.metadata import znodes as z
from kt.metadata.store import (
    BadVersionError,
    CheckOp,
    ControllerMovedError,
    DeleteOp,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    Session,
    SetDataOp,
    WatchCallback,
)

INITIAL_CONTROLLER_EPOCH = 0  # KafkaController.InitialControllerEpoch


def _controller_moved(version: int) -> ControllerMovedError:
    return ControllerMovedError(
        f"/controller_epoch is no longer at version {version}: another controller was elected"
    )


class PartitionStateLike(Protocol):
    """What a partition state write needs (kt.broker's PartitionState has these)."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: list[int]
    controller_epoch: int


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class KafkaZkClient:
    """Typed access to Kafka's znodes through one store session (one per broker).

    Invariant: the session is this client's alone; closing the client closes it, and
    with it the broker's registration and, if it is controller, /controller.
    """

    def __init__(self, session: Session) -> None:
        self.session = session

    def close(self) -> None:
        self.session.close()

    # -- start-up ------------------------------------------------------------------------

    def create_top_level_paths(self) -> None:
        for path in z.PERSISTENT_PATHS:
            self.session.ensure_path(path)

    def get_or_create_cluster_id(self, proposed: str | None = None) -> str:
        try:
            return z.decode_cluster_id(self.session.get(z.CLUSTER_ID)[0])
        except NoNodeError:
            pass
        cluster_id = proposed or z.uuid_to_str(z.random_uuid())
        try:
            self.session.create(z.CLUSTER_ID, z.encode_cluster_id(cluster_id), make_parents=True)
            return cluster_id
        except NodeExistsError:  # another broker won the race
            return z.decode_cluster_id(self.session.get(z.CLUSTER_ID)[0])

    # -- brokers -------------------------------------------------------------------------

    def register_broker(
        self, broker_id: int, endpoints: Iterable[Any], rack: str | None = None,
        wait_s: float = 0.0,
    ) -> z.BrokerRegistration:  # fmt: skip
        """Create /brokers/ids/<id>; NodeExistsError if another live broker has the id.

        A registration left by this broker's previous session (it was killed, and
        ZooKeeper has not expired that session yet) is waited out for up to `wait_s`
        (the session timeout), as Kafka retries since KAFKA-7165.

        `endpoints` are BrokerEndPoints or any objects with listener_name, host, port
        (and optionally security_protocol, else the listener's own name if it is a
        protocol's, else PLAINTEXT).
        """
        registration = z.BrokerRegistration(
            broker_id, tuple(_endpoint(e) for e in endpoints), rack or None, _now_ms()
        )
        path = z.broker_path(broker_id)
        deadline = time.monotonic() + wait_s
        while True:
            try:
                self.session.create(path, registration.encode(), ephemeral=True)
            except NodeExistsError:
                stat = self.session.exists(path)
                if stat is not None and stat.ephemeral_owner == self.session.session_id:
                    self.session.set(path, registration.encode())
                elif stat is not None and time.monotonic() >= deadline:
                    raise
                else:
                    time.sleep(0.1)
                    continue
            stat = self.session.exists(path)  # the broker epoch is the znode's czxid
            return dataclasses.replace(registration, epoch=stat.czxid if stat else -1)

    def get_broker(self, broker_id: int) -> z.BrokerRegistration | None:
        try:
            data, stat = self.session.get(z.broker_path(broker_id))
        except NoNodeError:
            return None
        return dataclasses.replace(z.BrokerRegistration.decode(broker_id, data), epoch=stat.czxid)

    def get_broker_ids(self, watch: WatchCallback | None = None) -> list[int]:
        return sorted(int(b) for b in self.session.get_children(z.BROKER_IDS, watch))

    def get_all_brokers(self) -> list[z.BrokerRegistration]:
        brokers = (self.get_broker(b) for b in self.get_broker_ids())
        return [b for b in brokers if b is not None]

    # -- controller ----------------------------------------------------------------------

    def watch_controller(self, watch: WatchCallback) -> None:
        self.session.exists(z.CONTROLLER, watch)

    def get_controller_id(self, watch: WatchCallback | None = None) -> int:
        """The controller's broker id, -1 when there is none."""
        try:
            data, _ = self.session.get(z.CONTROLLER, watch)
        except NoNodeError:
            if watch is not None:
                self.session.exists(z.CONTROLLER, watch)
            return -1
        return z.ControllerRegistration.decode(data).broker_id

    def get_controller_epoch(self) -> tuple[int, int] | None:
        """(epoch, znode version) of /controller_epoch, None before the first election."""
        try:
            data, stat = self.session.get(z.CONTROLLER_EPOCH)
        except NoNodeError:
            return None
        return z.decode_controller_epoch(data), stat.version

    def register_controller_and_increment_epoch(self, broker_id: int) -> tuple[int, int] | None:
        """Try to become controller: (new epoch, its znode version), or None if another
        broker is controller."""
        current = self.get_controller_epoch() or self._create_controller_epoch()
        epoch, version = current
        registration = z.ControllerRegistration(broker_id, _now_ms())
        txn = self.session.transaction()
        txn.create(z.CONTROLLER, registration.encode(), ephemeral=True)
        txn.set_data(z.CONTROLLER_EPOCH, z.encode_controller_epoch(epoch + 1), version)
        try:
            stat = txn.commit()[1]
        except (NodeExistsError, BadVersionError):
            return None
        return epoch + 1, stat.version

    def _create_controller_epoch(self) -> tuple[int, int]:
        try:
            data = z.encode_controller_epoch(INITIAL_CONTROLLER_EPOCH)
            self.session.create(z.CONTROLLER_EPOCH, data)
        except NodeExistsError:
            pass
        current = self.get_controller_epoch()
        assert current is not None
        return current

    def register_controller(self, broker_id: int) -> bool:
        """Create /controller alone; True if this broker holds it now."""
        registration = z.ControllerRegistration(broker_id, _now_ms())
        try:
            self.session.create(z.CONTROLLER, registration.encode(), ephemeral=True)
            return True
        except NodeExistsError:
            stat = self.session.exists(z.CONTROLLER)
            return stat is not None and stat.ephemeral_owner == self.session.session_id

    def increment_controller_epoch(self) -> int:
        """Bump /controller_epoch (conditionally on its version); return the new epoch."""
        while True:
            epoch, version = self.get_controller_epoch() or self._create_controller_epoch()
            try:
                self.session.set(z.CONTROLLER_EPOCH, z.encode_controller_epoch(epoch + 1), version)
                return epoch + 1
            except BadVersionError:
                continue

    def resign_controller(self, broker_id: int) -> None:
        """Delete /controller if this broker, through this session, holds it."""
        try:
            data, stat = self.session.get(z.CONTROLLER)
            mine = stat.ephemeral_owner == self.session.session_id
            if mine and z.ControllerRegistration.decode(data).broker_id == broker_id:
                self.session.delete(z.CONTROLLER, version=stat.version)
        except (NoNodeError, BadVersionError):
            pass

    # -- topics --------------------------------------------------------------------------

    def get_all_topics(self, watch: WatchCallback | None = None) -> list[str]:
        return self.session.get_children(z.TOPICS, watch)

    def get_topic_assignment(
        self, topic: str, watch: WatchCallback | None = None
    ) -> z.TopicAssignment | None:
        """The topic's assignment; `watch` fires on its change or deletion (or creation,
        when it does not exist yet)."""
        path = z.topic_path(topic)
        if self.session.exists(path, watch) is None:
            return None
        try:
            data, _ = self.session.get(path)
        except NoNodeError:
            return None
        return z.TopicAssignment.decode(topic, data)

    def create_topic(
        self,
        topic: str,
        partitions: Mapping[int, Sequence[int]],
        config: Mapping[str, str] | None = None,
        topic_id: uuid.UUID | None = None,
    ) -> uuid.UUID:
        """AdminZkClient.createTopicWithAssignment: the config first, then the assignment
        (whose creation the controller watches). NodeExistsError if the topic exists."""
        topic_id = topic_id or z.random_uuid()
        assignment = z.TopicAssignment(topic, partitions, topic_id)
        config_path = z.config_entity_path("topics", topic)
        config_data = z.encode_entity_config(config or {})
        if self.session.exists(z.topic_path(topic)) is not None:
            raise NodeExistsError(path=z.topic_path(topic))
        try:
            self.session.create(config_path, config_data, make_parents=True)
        except NodeExistsError:
            self.session.set(config_path, config_data)
        self.session.create(z.topic_path(topic), assignment.encode(), make_parents=True)
        return topic_id

    def set_topic_assignment(
        self, assignment: z.TopicAssignment, expected_version: int = -1
    ) -> int:
        """Rewrite /brokers/topics/<t> (partition additions, reassignment); new version."""
        path = z.topic_path(assignment.topic)
        return self.session.set(path, assignment.encode(), expected_version).version

    # -- /admin/reassign_partitions ---------------------------------------------------------

    def get_partition_reassignment(
        self, watch: WatchCallback | None = None
    ) -> dict[tuple[str, int], list[int]] | None:
        """The legacy reassignment request, or None; `watch` fires on its creation, change
        or deletion."""
        if self.session.exists(z.REASSIGN_PARTITIONS, watch) is None:
            return None
        try:
            data, _ = self.session.get(z.REASSIGN_PARTITIONS)
        except NoNodeError:
            return None
        return z.decode_reassignment(data)

    def set_partition_reassignment(
        self, reassignment: Mapping[tuple[str, int], Sequence[int]]
    ) -> None:
        """Rewrite /admin/reassign_partitions, deleting it once nothing is left in it."""
        try:
            if reassignment:
                self.session.set(z.REASSIGN_PARTITIONS, z.encode_reassignment(reassignment))
            else:
                self.session.delete(z.REASSIGN_PARTITIONS)
        except NoNodeError:
            pass

    def create_partition_reassignment(
        self, reassignment: Mapping[tuple[str, int], Sequence[int]]
    ) -> None:
        """What the 2.x tool's --zookeeper mode wrote; NodeExistsError while one is running."""
        self.session.create(
            z.REASSIGN_PARTITIONS, z.encode_reassignment(reassignment), make_parents=True
        )

    # -- /admin/preferred_replica_election -----------------------------------------------

    def get_preferred_replica_election(
        self, watch: WatchCallback | None = None
    ) -> list[tuple[str, int]] | None:
        """The partitions the 2.x tool asked to elect, or None; `watch` fires on creation."""
        if self.session.exists(z.PREFERRED_REPLICA_ELECTION, watch) is None:
            return None
        try:
            data, _ = self.session.get(z.PREFERRED_REPLICA_ELECTION)
        except NoNodeError:
            return None
        return z.decode_partitions(data)

    def create_preferred_replica_election(self, partitions: Iterable[tuple[str, int]]) -> None:
        """NodeExistsError while an election is in progress."""
        self.session.create(
            z.PREFERRED_REPLICA_ELECTION, z.encode_partitions(partitions), make_parents=True
        )

    def delete_preferred_replica_election(self) -> None:
        try:
            self.session.delete(z.PREFERRED_REPLICA_ELECTION)
        except NoNodeError:
            pass

    def get_partition_state(self, topic: str, partition: int) -> z.LeaderAndIsr | None:
        try:
            data, stat = self.session.get(z.partition_state_path(topic, partition))
        except NoNodeError:
            return None
        return z.LeaderAndIsr.decode(data, stat.version)

    def create_partition_states(
        self, states: Iterable[PartitionStateLike], controller_epoch_version: int | None = None
    ) -> None:
        """Write the first state of new partitions, in one multi per topic (fenced by the
        controller's /controller_epoch version when given: ControllerMovedError)."""
        by_topic: dict[str, list[PartitionStateLike]] = {}
        for state in states:
            by_topic.setdefault(state.topic, []).append(state)
        for topic, topic_states in by_topic.items():
            self.session.ensure_path(z.topic_partitions_path(topic))
            txn = self.session.transaction()
            if controller_epoch_version is not None:
                txn.check(z.CONTROLLER_EPOCH, controller_epoch_version)
            for state in topic_states:
                if self.session.exists(z.partition_path(topic, state.partition)) is None:
                    txn.create(z.partition_path(topic, state.partition))
                txn.create(z.partition_state_path(topic, state.partition), _state(state))
            try:
                txn.commit()
            except BadVersionError as e:
                if controller_epoch_version is not None and (e.results or [None])[0] is e:
                    raise _controller_moved(controller_epoch_version) from None
                raise

    def update_partition_state(self, state: PartitionStateLike, expected_version: int = -1) -> int:
        """Rewrite a partition's state (conditionally, when `expected_version` is given);
        return the znode's new version."""
        path = z.partition_state_path(state.topic, state.partition)
        try:
            return self.session.set(path, _state(state), expected_version).version
        except NoNodeError:
            self.session.create(path, _state(state), make_parents=True)
            return 0

    def conditional_update_partition_state(
        self, state: PartitionStateLike, expected_version: int,
        controller_epoch_version: int | None = None,
    ) -> int | None:  # fmt: skip
        """Write a partition's state only if its znode is still at `expected_version`
        (nobody wrote it since); the new version, or None. Given the /controller_epoch
        version the controller was elected with, the write is also fenced by it, in one
        multi (Kafka's checkControllerEpoch): ControllerMovedError if a newer controller
        was elected since."""
        if controller_epoch_version is None:
            try:
                return self.update_partition_state(state, expected_version)
            except BadVersionError:
                return None
        ops = [CheckOp(z.CONTROLLER_EPOCH, controller_epoch_version),
               SetDataOp(z.partition_state_path(state.topic, state.partition), _state(state),
                         expected_version)]  # fmt: skip
        try:
            return self.session.multi(ops)[1].version
        except (BadVersionError, NoNodeError) as e:
            results = e.results or []
            if results and isinstance(results[0], BadVersionError | NoNodeError):
                raise _controller_moved(controller_epoch_version) from None
            if isinstance(e, NoNodeError):
                raise
            return None

    # -- ISR change notifications (the ZooKeeper-mode leader -> controller path) ---------

    def propagate_isr_changes(self, partitions: Iterable[tuple[str, int]]) -> None:
        """/isr_change_notification/isr_change_<seq>: tells the controller to re-read
        these partitions' states (ReplicaManager.maybePropagateIsrChanges)."""
        path = f"{z.ISR_CHANGE_NOTIFICATION}/{z.ISR_CHANGE_PREFIX}"
        self.session.create(path, z.encode_partitions(partitions), sequential=True)

    def get_isr_change_notifications(self, watch: WatchCallback | None = None) -> list[str]:
        return sorted(self.session.get_children(z.ISR_CHANGE_NOTIFICATION, watch))

    def read_isr_change_notification(self, name: str) -> list[tuple[str, int]]:
        try:
            data, _ = self.session.get(f"{z.ISR_CHANGE_NOTIFICATION}/{name}")
        except NoNodeError:
            return []
        return z.decode_partitions(data)

    def delete_isr_change_notifications(self, names: Iterable[str]) -> None:
        for name in names:
            try:
                self.session.delete(f"{z.ISR_CHANGE_NOTIFICATION}/{name}")
            except NoNodeError:
                pass

    # -- deletion ------------------------------------------------------------------------

    def mark_topic_for_deletion(self, topic: str) -> None:
        try:
            self.session.create(z.delete_topic_path(topic))
        except NodeExistsError:
            pass

    def watch_topic_deletions(self, watch: WatchCallback) -> None:
        self.session.get_children(z.DELETE_TOPICS, watch)

    def get_topic_deletions(self, watch: WatchCallback | None = None) -> list[str]:
        return self.session.get_children(z.DELETE_TOPICS, watch)

    def delete_topic(self, topic: str, partitions: Iterable[int] = ()) -> None:
        """Remove a deleted topic's znodes: assignment and states, config, deletion marker.
        With its partitions known, in one multi (one round trip, where a recursive delete
        lists and deletes node by node); should anything differ from the expected tree
        (a node missing, a child more), node by node."""
        known = sorted(partitions)
        if known:
            topic_path = z.topic_path(topic)
            ops: list[Any] = []
            for p in known:
                ops += [DeleteOp(z.partition_state_path(topic, p)),
                        DeleteOp(z.partition_path(topic, p))]  # fmt: skip
            ops += [DeleteOp(z.topic_partitions_path(topic)), DeleteOp(topic_path),
                    DeleteOp(z.config_entity_path("topics", topic)),
                    DeleteOp(z.delete_topic_path(topic))]  # fmt: skip
            try:
                self.session.multi(ops)
                return
            except (NoNodeError, NotEmptyError):
                pass  # not the tree expected: below, whatever it is
        self.session.delete(z.topic_path(topic), recursive=True)
        self.session.delete(z.config_entity_path("topics", topic), recursive=True)
        self.session.delete(z.delete_topic_path(topic), recursive=True)

    # -- configs -------------------------------------------------------------------------

    def get_entity_config(self, entity_type: str, entity_name: str) -> dict[str, str]:
        try:
            data, _ = self.session.get(z.config_entity_path(entity_type, entity_name))
        except NoNodeError:
            return {}
        return z.decode_entity_config(data)

    def entity_names(self, entity_type: str) -> list[str]:
        """The entities with a config node under /config/<entity_type> (as stored, that
        is sanitized), sorted."""
        try:
            return sorted(self.session.get_children(f"{z.CONFIG}/{entity_type}"))
        except NoNodeError:
            return []

    def child_entity_names(self, entity_type: str, child_type: str) -> list[str]:
        """AdminZkClient.fetchAllChildEntityConfigs' names: `<entity>/<child_type>/<child>`
        for every /config/<entity_type>/<entity>/<child_type>/<child> node."""
        names = []
        for parent in self.entity_names(entity_type):
            try:
                children = self.session.get_children(
                    z.config_entity_path(entity_type, f"{parent}/{child_type}")
                )
            except NoNodeError:
                continue
            names += [f"{parent}/{child_type}/{child}" for child in sorted(children)]
        return names

    def change_entity_config(
        self, entity_type: str, entity_name: str, config: Mapping[str, str]
    ) -> None:
        """AdminZkClient.changeEntityConfig: write the config, then a change notification
        (/config/changes/config_change_<seq>) that every broker watches."""
        path = z.config_entity_path(entity_type, entity_name)
        data = z.encode_entity_config(config)
        try:
            self.session.set(path, data)
        except NoNodeError:
            self.session.create(path, data, make_parents=True)
        notification = z.encode_config_change(f"{entity_type}/{entity_name}")
        self.session.create(z.config_change_create_path(), notification, sequential=True)

    # -- producer ids ----------------------------------------------------------------------

    def claim_producer_id_block(self, broker_id: int) -> z.ProducerIdBlock:
        """ZkProducerIdManager: take the next block of ids from /latest_producer_id_block,
        conditionally on its version so that two brokers never get the same block."""
        while True:
            data, stat = self.session.get(z.LATEST_PRODUCER_ID_BLOCK)
            if data:
                block = z.ProducerIdBlock.decode(data).next(broker_id)
            else:
                block = z.ProducerIdBlock(broker_id, 0, z.PRODUCER_ID_BLOCK_SIZE - 1)
            try:
                self.session.set(z.LATEST_PRODUCER_ID_BLOCK, block.encode(), stat.version)
                return block
            except BadVersionError:
                continue

    def unclean_leader_election_enabled(self, topic: str, default: bool = False) -> bool:
        value = self.get_entity_config("topics", topic).get("unclean.leader.election.enable")
        return default if value is None else value.strip().lower() == "true"


def _state(state: PartitionStateLike) -> bytes:
    recovery = getattr(state, "leader_recovery_state", z.RECOVERED)
    leader_and_isr = z.LeaderAndIsr(
        state.leader, state.leader_epoch, list(state.isr), state.controller_epoch, recovery
    )
    return leader_and_isr.encode()


_PROTOCOLS = {"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}


def _endpoint(endpoint: Any) -> z.BrokerEndPoint:
    if isinstance(endpoint, z.BrokerEndPoint):
        return endpoint
    name = endpoint.listener_name
    protocol = getattr(endpoint, "security_protocol", None)
    if protocol is None:
        protocol = name if name in _PROTOCOLS else "PLAINTEXT"
    return z.BrokerEndPoint(name, endpoint.host or None, int(endpoint.port), str(protocol))
