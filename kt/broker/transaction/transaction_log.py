"""`__transaction_state` records (Kafka's TransactionLog, TransactionLogKey and
TransactionLogValue), big-endian:

  key   => version int16 (0), transactionalId string
  value => version int16 (0; 1 is the flexible form), producerId int64,
           producerEpoch int16, transactionTimeoutMs int32, transactionStatus int8,
           transactionPartitions [topic string, partitionIds [int32]] (null when Empty),
           transactionLastUpdateTimestampMs int64, transactionStartTimestampMs int64

A null value is a tombstone: the transactional id expired. Kafka 3.9 writes value
version 0 (version 1 only once transaction.version 1 is enabled); both are read.
"""

from __future__ import annotations

import struct
from enum import IntEnum

from kt.protocol.schema_reader import SchemaReader

TRANSACTION_STATE_TOPIC = "__transaction_state"

KEY_VERSION = 0
VALUE_VERSION = 0

_I16 = struct.Struct(">h")
_VALUE_HEAD = struct.Struct(">hqhib")  # version, producerId, epoch, timeout, status
_I32 = struct.Struct(">i")
_TIMESTAMPS = struct.Struct(">qq")


class TransactionState(IntEnum):
    """TransactionState, with the ids Kafka writes to the log."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def state_name(self) -> str:
        """Kafka's name (TransactionState.name), as tools print it."""
        return _NAMES[self]


_NAMES = {
    TransactionState.EMPTY: "Empty",
    TransactionState.ONGOING: "Ongoing",
    TransactionState.PREPARE_COMMIT: "PrepareCommit",
    TransactionState.PREPARE_ABORT: "PrepareAbort",
    TransactionState.COMPLETE_COMMIT: "CompleteCommit",
    TransactionState.COMPLETE_ABORT: "CompleteAbort",
    TransactionState.DEAD: "Dead",
    TransactionState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}
STATE_BY_NAME = {name: state for state, name in _NAMES.items()}


def _string(s: str) -> bytes:
    data = s.encode()
    return _I16.pack(len(data)) + data


def key_bytes(transactional_id: str) -> bytes:
    return _I16.pack(KEY_VERSION) + _string(transactional_id)


def value_bytes(
    producer_id: int,
    producer_epoch: int,
    timeout_ms: int,
    state: TransactionState,
    partitions: list[tuple[str, int]],
    last_update_ms: int,
    start_ms: int,
) -> bytes:
    """Version 0. An Empty transaction has no partition list (null), as Kafka writes it."""
    if state == TransactionState.EMPTY and partitions:
        raise ValueError(f"Transaction is not expected to have any partitions in state {state}")
    parts = [_VALUE_HEAD.pack(VALUE_VERSION, producer_id, producer_epoch, timeout_ms, state)]
    if state == TransactionState.EMPTY:
        parts.append(_I32.pack(-1))
    else:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        parts.append(_I32.pack(len(by_topic)))
        for topic, ids in by_topic.items():
            parts.append(_string(topic))
            parts.append(_I32.pack(len(ids)))
            parts.append(struct.pack(f">{len(ids)}i", *ids))
    parts.append(_TIMESTAMPS.pack(last_update_ms, start_ms))
    return b"".join(parts)


def read_key(data: bytes) -> str | None:
    """The transactional id of a key; None for a key version this broker does not know."""
    r = SchemaReader(data)
    if r.int16() != KEY_VERSION:
        return None
    return r.string()


class TransactionLogValue:
    """A decoded value record."""

    __slots__ = (
        "producer_id",
        "producer_epoch",
        "timeout_ms",
        "state",
        "partitions",
        "last_update_ms",
        "start_ms",
    )

    def __init__(self, data: bytes) -> None:
        r = SchemaReader(data)
        version = r.int16()
        if version not in (0, 1):
            raise ValueError(f"Unknown version {version} from the transaction log message value")
        r.flexible = version == 1
        self.producer_id, self.producer_epoch = r.int64(), r.int16()
        self.timeout_ms, self.state = r.int32(), TransactionState(r.int8())

        def topic_partitions() -> list[tuple[str, int]]:
            topic = r.string()
            ids = r.array(r.int32) or []
            r.tagged_fields()
            return [(topic, p) for p in ids]  # type: ignore[misc]

        groups = r.array(topic_partitions) or []
        self.partitions: list[tuple[str, int]] = [tp for group in groups for tp in group]  # type: ignore[union-attr]
        self.last_update_ms, self.start_ms = r.int64(), r.int64()
        if self.state == TransactionState.EMPTY:
            self.partitions = []
