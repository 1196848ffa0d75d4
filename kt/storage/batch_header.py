"""The RecordBatch v2 header: read, validate and patch a batch without decoding records.

RecordBatch =>                              byte offset
  baseOffset: int64                         0
  batchLength: int32    (bytes after this)  8
  partitionLeaderEpoch: int32               12
  magic: int8 (= 2)                         16
  crc: uint32 (CRC-32C, attributes to end)  17
  attributes: int16                         21
    bits 0-2 codec (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd)
    bit 3 timestamp type (1 = LogAppendTime), bit 4 transactional,
    bit 5 control, bit 6 delete horizon set (held in baseTimestamp)
  lastOffsetDelta: int32                    23
  baseTimestamp: int64                      27
  maxTimestamp: int64                       35
  producerId: int64                         43
  producerEpoch: int16                      51
  baseSequence: int32                       53
  recordsCount: int32                       57
  records: [Record]                         61

Legacy message sets (magic 0/1) share the first 17 bytes' shape: offset int64, size int32,
crc uint32 (CRC-32 IEEE), magic int8 at byte 16. So `batchLength` at 8 and `magic` at 16
frame any batch of any magic, which is how Kafka's FileRecords iterates a segment.

The broker validates a produced batch with `BatchHeader` and assigns offsets by patching
baseOffset and partitionLeaderEpoch in place: neither is covered by the CRC, so the batch
bytes clients sent go to disk unchanged otherwise (DefaultRecordBatch.java).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from crc32c_rs import crc32c

from kt.errors import CorruptRecordError

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
assert HEADER_SIZE == 61

BASE_OFFSET_OFFSET = 0
LENGTH_OFFSET = 8
LOG_OVERHEAD = 12  # baseOffset + batchLength: the bytes batchLength does not count
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
LAST_OFFSET_DELTA_OFFSET = 23
BASE_TIMESTAMP_OFFSET = 27
MAX_TIMESTAMP_OFFSET = 35
PRODUCER_ID_OFFSET = 43
PRODUCER_EPOCH_OFFSET = 51
BASE_SEQUENCE_OFFSET = 53
RECORDS_COUNT_OFFSET = 57
RECORDS_OFFSET = 61

# The smallest legacy message: offset, size, crc, magic, attributes, key len, value len.
LEGACY_MIN_SIZE = LOG_OVERHEAD + 14

CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U32 = struct.Struct(">I")
_I16 = struct.Struct(">h")


class BatchHeader:
    """The fixed 61-byte header of one v2 batch at `position` in `buf`.

    A view: it unpacks the header once and keeps a reference to the buffer for
    `is_valid()` and the patch helpers. `size` is the whole batch, LOG_OVERHEAD included.
    """

    __slots__ = (
        "buf", "position", "base_offset", "batch_length", "partition_leader_epoch", "magic",
        "crc", "attributes", "last_offset_delta", "base_timestamp", "max_timestamp",
        "producer_id", "producer_epoch", "base_sequence", "records_count",
    )  # fmt: skip

    def __init__(self, buf: bytes | bytearray | memoryview, position: int = 0) -> None:
        if len(buf) - position < HEADER_SIZE:
            raise CorruptRecordError(
                f"record batch header needs {HEADER_SIZE} bytes at position {position}, "
                f"{max(0, len(buf) - position)} available"
            )
        self.buf = buf
        self.position = position
        (
            self.base_offset, self.batch_length, self.partition_leader_epoch, self.magic,
            self.crc, self.attributes, self.last_offset_delta, self.base_timestamp,
            self.max_timestamp, self.producer_id, self.producer_epoch, self.base_sequence,
            self.records_count,
        ) = HEADER.unpack_from(buf, position)  # fmt: skip

    @property
    def size(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def compression(self) -> int:
        return self.attributes & CODEC_MASK

    @property
    def is_log_append_time(self) -> bool:
        return bool(self.attributes & TIMESTAMP_TYPE_MASK)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_MASK)

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF

    def compute_crc(self) -> int:
        start = self.position + ATTRIBUTES_OFFSET
        end = self.position + self.size
        return crc32c(memoryview(self.buf)[start:end])

    def is_valid(self) -> bool:
        """True when the whole batch is in the buffer and its CRC-32C matches."""
        if self.magic != 2 or self.batch_length < HEADER_SIZE - LOG_OVERHEAD:
            return False
        if self.position + self.size > len(self.buf):
            return False
        return self.compute_crc() == self.crc

    def ensure_valid(self) -> None:
        """Raise CorruptRecordError unless the batch is whole and its CRC matches."""
        if self.magic != 2:
            raise CorruptRecordError(f"expected magic 2 at {self.position}, got {self.magic}")
        if not self.is_valid():
            raise CorruptRecordError(
                f"record batch at position {self.position} is corrupt "
                f"(stored crc = {self.crc}, size = {self.size})"
            )


def batch_size_at(buf: bytes | bytearray | memoryview, position: int) -> int | None:
    """Size of the batch (any magic) starting at `position`, or None if its 12-byte prefix
    is not all there."""
    if len(buf) - position < LOG_OVERHEAD:
        return None
    return _I32.unpack_from(buf, position + LENGTH_OFFSET)[0] + LOG_OVERHEAD


def iter_headers(buf: bytes | bytearray | memoryview) -> Iterator[BatchHeader]:
    """Yield the header of each whole v2 batch in `buf`, stopping before a partial one."""
    position = 0
    end = len(buf)
    while end - position >= HEADER_SIZE:
        header = BatchHeader(buf, position)
        if header.batch_length < HEADER_SIZE - LOG_OVERHEAD or position + header.size > end:
            return
        yield header
        position += header.size


def set_base_offset(buf: bytearray | memoryview, position: int, base_offset: int) -> None:
    """Assign offsets: baseOffset is outside the CRC, so this needs no re-checksum."""
    _I64.pack_into(buf, position + BASE_OFFSET_OFFSET, base_offset)


def set_partition_leader_epoch(buf: bytearray | memoryview, position: int, epoch: int) -> None:
    """Stamp the leader epoch: outside the CRC too."""
    _I32.pack_into(buf, position + PARTITION_LEADER_EPOCH_OFFSET, epoch)


def set_log_append_time(buf: bytearray | memoryview, position: int, timestamp_ms: int) -> None:
    """Mark the batch LogAppendTime with maxTimestamp = `timestamp_ms` and re-checksum.

    As Kafka's DefaultRecordBatch.setMaxTimestamp: records keep their deltas; readers of a
    LogAppendTime batch take maxTimestamp as every record's timestamp.
    """
    attributes = _I16.unpack_from(buf, position + ATTRIBUTES_OFFSET)[0]
    _I16.pack_into(buf, position + ATTRIBUTES_OFFSET, attributes | TIMESTAMP_TYPE_MASK)
    _I64.pack_into(buf, position + MAX_TIMESTAMP_OFFSET, timestamp_ms)
    size = _I32.unpack_from(buf, position + LENGTH_OFFSET)[0] + LOG_OVERHEAD
    crc = crc32c(memoryview(buf)[position + ATTRIBUTES_OFFSET : position + size])
    _U32.pack_into(buf, position + CRC_OFFSET, crc)
