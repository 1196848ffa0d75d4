"""Batch-level validation of an append (the per-batch part of Kafka's LogValidator and
UnifiedLog.analyzeAndValidateRecords): sizes, magic, CRC, and the rules a client's
batch must follow. Records are never decoded here.
"""

from __future__ import annotations

from dataclasses import dataclass

from kt.errors import CorruptRecordError, KafkaError
from kt.storage.batch_header import (
    CODEC_MASK,
    CONTROL_MASK,
    HEADER,
    HEADER_SIZE,
    LEGACY_MIN_SIZE,
    LOG_OVERHEAD,
    TRANSACTIONAL_MASK,
)
from kt.storage.file_records import NO_TIMESTAMP, batch_is_valid

# A validated batch: (position in the append, size, v2 header tuple or None for legacy).
ValidBatch = tuple[int, int, tuple | None]


@dataclass
class LogAppendInfo:
    """The outcome of one append (Kafka's LogAppendInfo). `duplicate` marks a retried
    idempotent batch that was not written again: the offsets are the original ones."""

    first_offset: int
    last_offset: int
    max_timestamp: int = NO_TIMESTAMP
    offset_of_max_timestamp: int = -1
    log_append_time: int = NO_TIMESTAMP
    log_start_offset: int = 0
    valid_bytes: int = 0
    num_records: int = 0
    last_leader_epoch: int | None = None
    source_compression: int = 0
    duplicate: bool = False

    def account(self, size: int, h: tuple | None, last_offset: int, timestamp: int) -> None:
        """Add one batch (in offset order) to the totals."""
        self.last_offset = last_offset
        self.valid_bytes += size
        if timestamp > self.max_timestamp:
            self.max_timestamp, self.offset_of_max_timestamp = timestamp, last_offset
        if h is not None:
            self.num_records += h[12]
            if h[5] & CODEC_MASK:
                self.source_compression = h[5] & CODEC_MASK


def validate_batches(
    buf: bytearray, name: str, max_message_bytes: int | None, leader: bool, from_client: bool
) -> list[ValidBatch]:
    """Check every batch of an append; raise KafkaError with the code a client expects.

    `max_message_bytes` None skips the size limit (followers copy what the leader took).
    """
    view, out, position, end = memoryview(buf), [], 0, len(buf)
    while position < end:
        if end - position < LOG_OVERHEAD + 5:
            raise CorruptRecordError(f"Partial record batch at position {position} in {name}")
        size = int.from_bytes(view[position + 8 : position + 12], "big", signed=True) + 12
        magic = view[position + 16]
        if size < LEGACY_MIN_SIZE or (magic == 2 and size < HEADER_SIZE):
            raise CorruptRecordError(
                f"Record batch size {size} is less than the minimum record overhead ({name})"
            )
        if position + size > end:
            raise CorruptRecordError(
                f"Record batch at position {position} is truncated: {size} "
                f"bytes announced, {end - position} present ({name})"
            )
        if leader and magic != 2:
            if magic in (0, 1):
                raise KafkaError(
                    "UNSUPPORTED_FOR_MESSAGE_FORMAT",
                    f"Record batches with magic {magic} are not accepted by {name}: "
                    "produce with message format v2",
                )
            raise CorruptRecordError(f"Invalid magic {magic} at position {position} ({name})")
        if max_message_bytes is not None and size > max_message_bytes:
            raise KafkaError(
                "MESSAGE_TOO_LARGE",
                f"The record batch size in the append to {name} is {size} bytes "
                f"which exceeds the maximum configured value of {max_message_bytes}.",
            )
        if not batch_is_valid(view, position, size):
            raise CorruptRecordError(
                f"Record is corrupt (batch at position {position} fails its "
                f"CRC) in topic partition {name}."
            )
        h = HEADER.unpack_from(view, position) if magic == 2 else None
        if h is not None and from_client:
            validate_client_batch(h, name)
        out.append((position, size, h))
        position += size
    return out


def validate_client_batch(h: tuple, name: str) -> None:
    """LogValidator.validateBatch for a client's v2 batch: INVALID_RECORD if it breaks a rule."""
    base_offset, attributes, last_delta, count = h[0], h[5], h[6], h[12]
    pid, base_seq = h[9], h[11]
    if base_offset != 0:
        problem = f"The baseOffset of the record batch should be 0, but it is {base_offset}"
    elif attributes & CONTROL_MASK:
        problem = "Clients are not allowed to write control records"
    elif count <= 0 or last_delta < 0:
        problem = f"Record batch has an invalid record count {count}"
    elif count != last_delta + 1:
        problem = f"Inconsistent batch offset range [0, {last_delta}] and record count {count}"
    elif pid >= 0 and base_seq < 0:
        problem = f"Invalid sequence number {base_seq} in record batch with producerId {pid}"
    elif attributes & TRANSACTIONAL_MASK and pid < 0:
        problem = "Transactional record batch without a producer id"
    else:
        return
    raise KafkaError("INVALID_RECORD", f"{problem} (append to {name})")
