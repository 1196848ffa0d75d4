"""The share coordinator's state of the share partitions one `__share_group_state`
partition holds (Kafka's ShareCoordinatorShard): the operations of the internal RPCs
InitializeShareGroupState, ReadShareGroupState, WriteShareGroupState,
DeleteShareGroupState and ReadShareGroupStateSummary, each checked as Kafka checks it and
answered with the records to append (share_state.py) and the result.

The state changes only by replaying records (`replay`), which the caller does once they
are written, and which loading the partition does alike. A write carries the share
partition leader's leader epoch and the group's state epoch: an older one is fenced
(FENCED_LEADER_EPOCH, FENCED_STATE_EPOCH), so a partition leader that lost its
leadership can no longer change what its successor reads.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from kt.broker.share.share_state import (
    SNAPSHOT,
    UPDATE,
    ShareGroupOffset,
    SharePartitionKey,
    StateBatch,
    StateRecord,
    combine,
    merged,
)

# share.coordinator.snapshot.update.records.per.snapshot
SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT = 500

NULL_TOPIC_ID = "The topic id cannot be null."
NEGATIVE_PARTITION_ID = "The partition id cannot be a negative number."
NEGATIVE_LEADER_EPOCH = "The leader epoch cannot be a negative number."
NEGATIVE_STATE_EPOCH = "The state epoch cannot be a negative number."
WRITE_UNINITIALIZED = "Write operation on uninitialized share partition not allowed."
READ_UNINITIALIZED = "Read operation on uninitialized share partition not allowed."


class ShareStateError(Exception):
    """A refused operation: a Kafka error name and its message."""

    def __init__(self, error: str, message: str | None = None) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


@dataclass(frozen=True)
class WriteRequest:
    key: SharePartitionKey
    state_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: Sequence[StateBatch]
    delivery_complete_count: int = -1


class ShareCoordinatorShard:
    """The share partitions' state of one `__share_group_state` partition.

    `partition_count(topic_id)` gives a topic's partition count (None: no such topic)."""

    def __init__(
        self,
        partition_count: Callable[[object], int | None],
        clock: Callable[[], int],
        updates_per_snapshot: int = SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT,
    ) -> None:
        self.partition_count = partition_count
        self.clock = clock
        self.updates_per_snapshot = updates_per_snapshot
        self.state: dict[SharePartitionKey, ShareGroupOffset] = {}
        self.leader_epochs: dict[SharePartitionKey, int] = {}
        self.state_epochs: dict[SharePartitionKey, int] = {}
        self.updates_since_snapshot: dict[SharePartitionKey, int] = {}

    # -- replay ---------------------------------------------------------------------------

    def replay(self, record: StateRecord) -> None:
        record_type, key, value = record
        if value is None:
            for known in (self.state, self.leader_epochs, self.state_epochs,
                          self.updates_since_snapshot):  # fmt: skip
                known.pop(key, None)
            return
        self.leader_epochs[key] = max(self.leader_epochs.get(key, value.leader_epoch),
                                      value.leader_epoch)  # fmt: skip
        if record_type == SNAPSHOT:
            self.state_epochs[key] = max(self.state_epochs.get(key, value.state_epoch),
                                         value.state_epoch)  # fmt: skip
            self.state[key] = value
            if self.updates_since_snapshot.get(key, 0) >= self.updates_per_snapshot:
                self.updates_since_snapshot[key] = 0
        else:
            old = self.state.get(key)
            self.state[key] = value if old is None else merged(old, value)
            self.updates_since_snapshot[key] = self.updates_since_snapshot.get(key, 0) + 1

    # -- operations -------------------------------------------------------------------------

    def initialize(self, key: SharePartitionKey, state_epoch: int,
                   start_offset: int) -> list[StateRecord]:  # fmt: skip
        """initializeState: a new snapshot with the group's state epoch and start offset
        (-1: where share.auto.offset.reset says)."""
        self._check_key(key)
        if state_epoch < 0:
            raise ShareStateError("INVALID_REQUEST", NEGATIVE_STATE_EPOCH)
        if self.state_epochs.get(key, state_epoch) > state_epoch:
            raise ShareStateError("FENCED_STATE_EPOCH")
        self._check_topic(key)
        old = self.state.get(key)
        now = self.clock()
        value = ShareGroupOffset(
            old.snapshot_epoch + 1 if old is not None else 0, state_epoch, 0, start_offset,
            -1 if start_offset == -1 else 0, now, now,
        )  # fmt: skip
        return [(SNAPSHOT, key, value)]

    def read(self, key: SharePartitionKey, leader_epoch: int
             ) -> tuple[ShareGroupOffset, list[StateRecord]]:  # fmt: skip
        """readStateAndMaybeUpdateLeaderEpoch: the state, and an update recording a newer
        leader epoch (the partition's new leader reads its state first)."""
        self._check_key(key)
        if leader_epoch < 0:
            raise ShareStateError("INVALID_REQUEST", NEGATIVE_LEADER_EPOCH)
        if key not in self.state:
            raise ShareStateError("INVALID_REQUEST", READ_UNINITIALIZED)
        if self.leader_epochs.get(key, leader_epoch) > leader_epoch:
            raise ShareStateError("FENCED_LEADER_EPOCH")
        self._check_topic(key)
        state = self.state[key]
        if self.leader_epochs.get(key) == leader_epoch:
            return state, []
        bump = WriteRequest(key, state.state_epoch, leader_epoch, state.start_offset, (),
                            state.delivery_complete_count)  # fmt: skip
        return state, [self._state_record(bump, update_leader_epoch=True)]

    def write(self, request: WriteRequest) -> list[StateRecord]:
        """writeState: an update with the written batches, or a snapshot every
        `updates_per_snapshot` writes."""
        key = request.key
        self._check_key(key)
        if request.leader_epoch < 0:
            raise ShareStateError("INVALID_REQUEST", NEGATIVE_LEADER_EPOCH)
        if request.state_epoch < 0:
            raise ShareStateError("INVALID_REQUEST", NEGATIVE_STATE_EPOCH)
        if key not in self.state:
            raise ShareStateError("INVALID_REQUEST", WRITE_UNINITIALIZED)
        if self.leader_epochs.get(key, request.leader_epoch) > request.leader_epoch:
            raise ShareStateError("FENCED_LEADER_EPOCH")
        if self.state_epochs.get(key, request.state_epoch) > request.state_epoch:
            raise ShareStateError("FENCED_STATE_EPOCH")
        self._check_topic(key)
        return [self._state_record(request, update_leader_epoch=False)]

    def delete(self, key: SharePartitionKey) -> list[StateRecord]:
        """deleteState: a tombstone, or nothing for a partition never initialized."""
        self._check_key(key)
        return [(SNAPSHOT, key, None)] if key in self.state else []

    def summary(self, key: SharePartitionKey) -> ShareGroupOffset | None:
        """readStateSummary: None when the partition was never initialized."""
        self._check_key(key)
        self._check_topic(key)
        return self.state.get(key)

    # -- helpers ----------------------------------------------------------------------------

    def _state_record(self, request: WriteRequest, update_leader_epoch: bool) -> StateRecord:
        """generateShareStateRecord."""
        key = request.key
        current = self.state[key]
        leader_epoch = request.leader_epoch if update_leader_epoch else current.leader_epoch
        start = max(request.start_offset, current.start_offset)
        complete = request.delivery_complete_count
        if request.start_offset == current.start_offset:
            complete = max(complete, current.delivery_complete_count)
        elif request.start_offset < current.start_offset:
            complete = current.delivery_complete_count
        if self.updates_since_snapshot.get(key, 0) >= self.updates_per_snapshot:
            now = self.clock()
            value = replace(current, snapshot_epoch=current.snapshot_epoch + 1, start_offset=start,
                            delivery_complete_count=complete, leader_epoch=leader_epoch,
                            state_batches=combine(current.state_batches, request.state_batches,
                                                  start), create_timestamp=now,
                            write_timestamp=now)  # fmt: skip
            return SNAPSHOT, key, value
        batches = combine((), request.state_batches, start)
        update = ShareGroupOffset(current.snapshot_epoch, 0, leader_epoch, start, complete,
                                  state_batches=batches)  # fmt: skip
        return UPDATE, key, update

    @staticmethod
    def _check_key(key: SharePartitionKey) -> None:
        if key.topic_id is None:
            raise ShareStateError("INVALID_REQUEST", NULL_TOPIC_ID)
        if key.partition < 0:
            raise ShareStateError("INVALID_REQUEST", NEGATIVE_PARTITION_ID)

    def _check_topic(self, key: SharePartitionKey) -> None:
        count = self.partition_count(key.topic_id)
        if count is None or count <= key.partition:
            raise ShareStateError("UNKNOWN_TOPIC_OR_PARTITION")
