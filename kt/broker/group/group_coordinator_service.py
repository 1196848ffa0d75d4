"""One entry point over the groups of the `__consumer_offsets` partitions this broker
leads, for both group protocols (Kafka 4's GroupCoordinatorService, 3.9's
GroupCoordinator.onElection/onResignation): a partition's groups are loaded when the
broker becomes its leader and handed to the classic and the consumer group coordinators,
which start their members' timers; they are dropped when leadership goes elsewhere. The
periodic offsets-retention pass runs here too."""

from __future__ import annotations

from typing import Any, Protocol

from kt.broker.group.group_metadata import GroupMetadata
from kt.broker.group.group_metadata_manager import GROUP_METADATA_TOPIC, GroupMetadataManager
from kt.broker.task_set import TaskSet


class PartitionGroups(Protocol):
    """What a coordinator does with the groups of a partition loaded or dropped."""

    def on_loaded(self, groups: list[GroupMetadata]) -> None: ...

    def on_unloaded(self, groups: list[GroupMetadata]) -> None: ...

    def shutdown(self) -> None: ...


class GroupCoordinatorService:
    def __init__(self, manager: GroupMetadataManager, *coordinators: PartitionGroups) -> None:
        self.manager = manager
        self.coordinators = coordinators
        self._tasks = TaskSet()

    def on_leadership_change(self, leaders: list[Any], resigned: list[Any]) -> None:
        """ReplicaManager callback: load the groups of `__consumer_offsets` partitions this
        broker now leads, drop those of partitions it no longer leads."""
        for partition in leaders:
            if partition.tp.topic == GROUP_METADATA_TOPIC:
                self.on_election(partition.tp.partition, partition.leader_epoch)
        for tp in resigned:
            if tp.topic == GROUP_METADATA_TOPIC:
                self.on_resignation(tp.partition)

    def on_election(self, partition: int, epoch: int) -> None:
        if self.manager.begin_loading(partition, epoch):
            self._tasks.spawn(self._load(partition, epoch))

    async def _load(self, partition: int, epoch: int) -> None:
        groups = await self.manager.load(partition, epoch)
        for coordinator in self.coordinators:
            coordinator.on_loaded(groups)

    def on_resignation(self, partition: int) -> None:
        groups = self.manager.unload(partition)
        for coordinator in self.coordinators:
            coordinator.on_unloaded(groups)

    def start_offsets_cleanup(self, retention_ms: int) -> None:
        """The periodic offsets-retention pass (run from a broker background task)."""
        self._tasks.spawn(self.manager.cleanup_expired_offsets(retention_ms))

    def shutdown(self) -> None:
        for coordinator in reversed(self.coordinators):
            coordinator.shutdown()
        self._tasks.cancel_all()
