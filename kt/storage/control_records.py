"""Control records: the transaction markers a coordinator writes into data partitions.

A control batch (attributes bit 5) carries the transaction's producer id and epoch and
one record per marker (ControlRecordType.java, EndTransactionMarker.java):

  key   => version int16 (0), type int16 (0 ABORT, 1 COMMIT, 2 LEADER_CHANGE,
           3 SNAPSHOT_HEADER, 4 SNAPSHOT_FOOTER, 5 KRAFT_VERSION, 6 KRAFT_VOTERS)
  value => version int16 (0), coordinatorEpoch int32     (ABORT and COMMIT)

Readers accept key versions above 0 as version 0 and refuse negative ones.
"""

from __future__ import annotations

import struct

from kt.errors import CorruptRecordError
from kt.storage.record_batch import CREATE_TIME, Record, build_batch

ABORT = 0
COMMIT = 1
UNKNOWN = -1
CONTROL_TYPE_NAMES = {
    ABORT: "ABORT",
    COMMIT: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}

_KEY = struct.Struct(">hh")
_END_TXN_VALUE = struct.Struct(">hi")


def control_type_name(type_id: int) -> str:
    """ControlRecordType's name for `type_id`; unknown ids are UNKNOWN, as in Kafka."""
    return CONTROL_TYPE_NAMES.get(type_id, "UNKNOWN")


def control_record_key(type_id: int) -> bytes:
    return _KEY.pack(0, type_id)


def parse_control_type(key: bytes | None) -> int:
    """The type id in a control record's key."""
    if key is None or len(key) < _KEY.size:
        raise CorruptRecordError(
            f"control record key needs {_KEY.size} bytes, found {0 if key is None else len(key)}"
        )
    version, type_id = _KEY.unpack_from(key)
    if version < 0:
        raise CorruptRecordError(f"invalid control record key version {version}")
    return type_id


class EndTransactionMarker:
    """A COMMIT or ABORT marker: the control type and the coordinator epoch that wrote it."""

    __slots__ = ("control_type", "coordinator_epoch")

    def __init__(self, control_type: int, coordinator_epoch: int) -> None:
        if control_type not in (ABORT, COMMIT):
            raise ValueError(f"not an end-transaction control type: {control_type}")
        self.control_type = control_type
        self.coordinator_epoch = coordinator_epoch

    @property
    def name(self) -> str:
        return CONTROL_TYPE_NAMES[self.control_type]

    def key(self) -> bytes:
        return control_record_key(self.control_type)

    def value(self) -> bytes:
        return _END_TXN_VALUE.pack(0, self.coordinator_epoch)

    @classmethod
    def from_record(cls, record: Record) -> EndTransactionMarker:
        control_type = parse_control_type(record.key)
        if control_type not in (ABORT, COMMIT):
            raise CorruptRecordError(f"control type {control_type} is not a transaction marker")
        value = record.value
        if value is None or len(value) < _END_TXN_VALUE.size:
            raise CorruptRecordError("end transaction marker value needs 6 bytes")
        version, epoch = _END_TXN_VALUE.unpack_from(value)
        if version < 0:
            raise CorruptRecordError(f"invalid end transaction marker version {version}")
        return cls(control_type, epoch)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EndTransactionMarker):
            return NotImplemented
        return (self.control_type, self.coordinator_epoch) == (
            other.control_type, other.coordinator_epoch,
        )  # fmt: skip

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"EndTransactionMarker({self.name}, coordinator_epoch={self.coordinator_epoch})"


def build_end_txn_marker_batch(
    marker: EndTransactionMarker,
    *,
    producer_id: int,
    producer_epoch: int,
    timestamp: int,
    base_offset: int = 0,
    partition_leader_epoch: int = -1,
) -> bytes:
    """The one-record control batch a partition leader appends for WriteTxnMarkers."""
    record = Record(base_offset, timestamp, marker.key(), marker.value())
    return build_batch(
        [record],
        base_offset=base_offset,
        timestamp_type=CREATE_TIME,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=True,
        is_control=True,
        partition_leader_epoch=partition_leader_epoch,
    )
