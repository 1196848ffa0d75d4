"""Validation of an append (Kafka's LogValidator and UnifiedLog.analyzeAndValidateRecords):
sizes, magic, CRC, and the rules a client's batch must follow, all read from batch
headers. Records are walked only by `validate_records`, for the per-record rules of the
topics that have them (timestamp bounds, keys on compacted topics).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from crc32c_rs import crc32c

from kt.config import LogConfig
from kt.errors import CorruptRecordError, KafkaError, RecordValidationError
from kt.storage.batch_header import (
    ATTRIBUTES_OFFSET,
    CONTROL_MASK,
    HEADER,
    HEADER_SIZE,
    LEGACY_MIN_SIZE,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
)
from kt.storage.file_records import NO_TIMESTAMP, batch_is_valid, frame_at
from kt.storage.record_batch import CREATE_TIME, LOG_APPEND_TIME, RecordBatch, build_batch
from kt.storage.record_walk import walk_records

# baseOffset, batchLength, partitionLeaderEpoch: the header up to magic, which the leader
# patches in place (the CRC covers neither offset nor epoch).
OFFSET_LENGTH_EPOCH = struct.Struct(">qii")
assert OFFSET_LENGTH_EPOCH.size == MAGIC_OFFSET
# Bound once: the leader's append runs them for every batch.
_unpack_header, _pack_header = HEADER.unpack_from, HEADER.pack
_patch_prefix = OFFSET_LENGTH_EPOCH.pack_into
_CODEC_MASK = 0x07  # a batch's attributes: its compression codec
# A client batch without a producer id may be neither transactional nor control.
_NO_PID_REFUSED = CONTROL_MASK | TRANSACTIONAL_MASK

# A validated batch: (position in the append, size, v2 header tuple or None for legacy).
ValidBatch = tuple[int, int, tuple | None]


@dataclass(slots=True)
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
    duplicate: bool = False

    def account(self, size: int, h: tuple | None, last_offset: int, timestamp: int) -> None:
        """Add one batch (in offset order) to the totals."""
        self.last_offset = last_offset
        self.valid_bytes += size
        if timestamp > self.max_timestamp:
            self.max_timestamp, self.offset_of_max_timestamp = timestamp, last_offset
        if h is not None:
            self.num_records += h[12]


def recompressed(view: memoryview, codec: int, level: int | None, name: str) -> memoryview:
    """A client's batches in the topic's codec (compression.type other than producer), as
    Kafka's LogValidator rebuilds them when the source and target codecs differ: each v2
    data batch in another codec is decoded and encoded again in `codec` at `level`,
    keeping its offsets, timestamps, producer id, epoch, sequence and flags. `view` itself
    when every batch is in `codec` already."""
    batches = validate_batches(view, name)  # framing and CRC first: CORRUPT_MESSAGE
    if all(h is None or h[5] & _CODEC_MASK == codec or h[5] & CONTROL_MASK
           for _, _, h in batches):  # fmt: skip
        return view
    out = bytearray()
    for position, size, h in batches:
        if h is None or h[5] & _CODEC_MASK == codec or h[5] & CONTROL_MASK:
            out += view[position : position + size]
            continue
        (base_offset, _, leader_epoch, _, _, attributes, delta, _, max_ts,
         pid, epoch, seq, _) = h  # fmt: skip
        out += build_batch(
            list(RecordBatch(view, position).records()),
            base_offset=base_offset,
            compression_type=codec,
            compression_level=level,
            timestamp_type=LOG_APPEND_TIME if attributes & TIMESTAMP_TYPE_MASK else CREATE_TIME,
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=seq,
            is_transactional=bool(attributes & TRANSACTIONAL_MASK),
            partition_leader_epoch=leader_epoch,
            last_offset=base_offset + delta,
            max_timestamp=max_ts,
        )
    return memoryview(out)


def validate_batches(buf: bytes | bytearray | memoryview, name: str) -> list[ValidBatch]:
    """Check every batch a follower fetched from its leader: framing, size and CRC (no
    size limit and no client rules: the follower copies what the leader took, legacy
    batches included); raise KafkaError with Kafka's code.

    A whole v2 batch that passes costs one header unpack and one CRC-32C call; anything
    else takes `_check_batch`, which raises the precise error.
    """
    view, out, position, end = memoryview(buf), [], 0, len(buf)
    unpack, append = HEADER.unpack_from, out.append
    while position < end:
        if end - position >= HEADER_SIZE and view[position + MAGIC_OFFSET] == 2:
            h = unpack(view, position)
            size = h[1] + LOG_OVERHEAD
            next_position = position + size
            if (
                size >= HEADER_SIZE
                and next_position <= end
                and crc32c(view[position + ATTRIBUTES_OFFSET : next_position]) == h[4]
            ):
                append((position, size, h))
                position = next_position
                continue
        size, h = _check_batch(view, position, end, name, None, False)
        append((position, size, h))
        position += size
    return out


def _check_batch(
    view: memoryview,
    position: int,
    end: int,
    name: str,
    max_message_bytes: int | None,
    leader: bool,
) -> tuple[int, tuple | None]:
    """The checks of one batch in Kafka's order: (size, v2 header or None) or a raise."""
    if end - position < LOG_OVERHEAD + 5:
        raise CorruptRecordError(f"Partial record batch at position {position} in {name}")
    size = int.from_bytes(view[position + 8 : position + 12], "big", signed=True) + 12
    magic = view[position + MAGIC_OFFSET]
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
    return size, HEADER.unpack_from(view, position) if magic == 2 else None


def validate_and_assign_offsets(
    view: memoryview,
    name: str,
    max_message_bytes: int,
    from_client: bool,
    first_offset: int,
    leader_epoch: int,
    log_append_time: int | None,
) -> tuple[list, list, LogAppendInfo]:
    """The leader's append: check each batch as `validate_batches` does, and also against
    `max_message_bytes` and (`from_client`) the rules for a client's batch; then give it
    its offsets, leader epoch and, on a LogAppendTime topic, the timestamp
    `log_append_time` (None for CreateTime); all in one pass (Kafka's
    validateMessagesAndAssignOffsets, on the batch level).

    Each batch header is patched in place in `view`, which must be writable (the
    broker's request buffer, which the request owns, as Kafka patches its request
    buffer): baseOffset and partitionLeaderEpoch sit outside the CRC. LogAppendTime
    changes attributes and maxTimestamp, so such a batch gets a new 61-byte header with
    a CRC recomputed over the new header tail and the body.
    Returns (entries (position, size, last offset, timestamp), producer batches (index
    in entries, header tuple as written), info); no entries for an empty append.
    """
    entries: list = []
    producer_batches: list = []
    offset = first_offset
    position = num_records = 0
    end = len(view)
    max_ts, max_ts_offset = NO_TIMESTAMP, -1
    while position < end:
        if end - position >= HEADER_SIZE:
            (base_offset, length, _, magic, crc, attributes, delta, base_ts, timestamp,
             pid, epoch, seq, count) = h = _unpack_header(view, position)  # fmt: skip
            size = length + LOG_OVERHEAD
        else:
            size = 0  # not even a header: _check_batch says what is wrong
        if not (
            HEADER_SIZE <= size <= max_message_bytes
            and magic == 2
            and position + size <= end
            and crc32c(view[position + ATTRIBUTES_OFFSET : position + size]) == crc
        ):  # anything but a whole, sound v2 batch: _check_batch raises the precise error
            _check_batch(view, position, end, name, max_message_bytes, True)
            raise AssertionError(f"batch at {position} refused, yet _check_batch passed it")
        if from_client and (
            base_offset
            or count != delta + 1
            or delta < 0
            or (
                (seq < 0 or attributes & CONTROL_MASK) if pid >= 0 else attributes & _NO_PID_REFUSED
            )
        ):
            validate_client_batch(h, name)  # the rules one by one, for the message
        last_offset = offset + delta
        if log_append_time is None:
            _patch_prefix(view, position, offset, length, leader_epoch)
        else:
            attributes, timestamp = attributes | TIMESTAMP_TYPE_MASK, log_append_time
            body = view[position + HEADER_SIZE : position + size]
            tail = (attributes, delta, base_ts, timestamp, pid, epoch, seq, count)
            unsigned = _pack_header(0, 0, 0, 2, 0, *tail)
            crc = crc32c(body, crc32c(memoryview(unsigned)[ATTRIBUTES_OFFSET:]))
            view[position : position + HEADER_SIZE] = _pack_header(
                offset, length, leader_epoch, 2, crc, *tail
            )
        if pid >= 0 or attributes & CONTROL_MASK:
            header = (
                offset, length, leader_epoch, 2, crc, attributes,
                delta, base_ts, timestamp, pid, epoch, seq, count,
            )  # fmt: skip
            producer_batches.append((len(entries), header))
        entries.append((position, size, last_offset, timestamp))
        num_records += count
        if timestamp > max_ts:
            max_ts, max_ts_offset = timestamp, last_offset
        offset = last_offset + 1
        position += size
    info = LogAppendInfo(
        first_offset,
        offset - 1,
        max_ts,
        max_ts_offset,
        NO_TIMESTAMP if log_append_time is None else log_append_time,
        0,
        end,
        num_records,
    )
    return entries, producer_batches, info


def assign_offsets_to_client_batch(
    view: memoryview, max_message_bytes: int, first_offset: int, leader_epoch: int
) -> LogAppendInfo | None:
    """`validate_and_assign_offsets` for the leader's common case, in one pass: `view` is
    one whole, sound v2 batch from a client, without a producer id or control flag and
    with a timestamp, for a CreateTime topic. It is checked as that function checks it,
    patched in place (offsets, leader epoch), and its LogAppendInfo returned.

    Anything else returns None with `view` untouched, and goes to
    `validate_and_assign_offsets`, which handles it or raises the precise error. The
    rules stand there; this repeats, for the one shape, the conjunction of those that a
    sound batch passes, and tests/storage/test_log_fast_append.py checks that the two ways
    give the same log.
    """
    end = len(view)
    if end < HEADER_SIZE:
        return None
    (base_offset, length, _, magic, crc, attributes, delta, _, timestamp,
     pid, _, _, count) = _unpack_header(view, 0)  # fmt: skip
    if not (
        length + LOG_OVERHEAD == end <= max_message_bytes
        and magic == 2
        and not base_offset
        and count == delta + 1
        and delta >= 0
        and pid < 0
        and not attributes & _NO_PID_REFUSED
        and timestamp >= 0
        and crc32c(view[ATTRIBUTES_OFFSET:end]) == crc
    ):
        return None
    last_offset = first_offset + delta
    _patch_prefix(view, 0, first_offset, length, leader_epoch)
    return LogAppendInfo(
        first_offset, last_offset, timestamp, last_offset, NO_TIMESTAMP, 0, end, count
    )


def validate_records(
    view: memoryview, entries: list, name: str, config: LogConfig, now: int
) -> None:
    """The per-record rules of Kafka's LogValidator, which the leader runs on a client's
    batches only where the topic has them (`config.validates_records`), since they walk
    every record (decompressing if they must):
    - a compacted topic takes no record without a key: INVALID_RECORD;
    - a CreateTime topic that bounds timestamps (message.timestamp.before.max.ms,
      message.timestamp.after.max.ms) takes no record stamped more than the one before
      `now` or the other after it: INVALID_TIMESTAMP. Records without a timestamp (-1)
      pass, as in Kafka.
    The first batch with a record that breaks a rule refuses the whole append, naming each
    of its bad records (RecordValidationError.record_errors, KIP-467), so that a client
    fails those records with the error and the batch's others as collateral."""
    compact, bounded = config.compact, config.bounds_timestamps
    low = now - config.timestamp_before_max_ms
    high = now + config.timestamp_after_max_ms
    for position, size, _, _ in entries:
        base_offset = _unpack_header(view, position)[0]
        errors: list[tuple[int, str]] = []
        timestamps_bad = False
        records = walk_records(view[position : position + size])
        for index, (offset, timestamp, key_length) in enumerate(records):
            if compact and key_length == -1:
                errors.append((index, "Compacted topic cannot accept message without key in "
                                      f"topic partition {name}."))  # fmt: skip
            elif bounded and timestamp != NO_TIMESTAMP and not low <= timestamp <= high:
                timestamps_bad = True
                errors.append((index, f"Timestamp {timestamp} of message with offset "
                                      f"{offset - base_offset} is out of range. The timestamp "
                                      f"should be within [{low}, {high}]"))  # fmt: skip
        if errors:
            raise _record_validation_error(errors, timestamps_bad)


def _record_validation_error(
    errors: list[tuple[int, str]], timestamps_bad: bool
) -> RecordValidationError:
    """LogValidator.processRecordErrors: INVALID_TIMESTAMP if any timestamp was bad, else
    INVALID_RECORD with the first three errors in the message."""
    if timestamps_bad:
        return RecordValidationError(
            "INVALID_TIMESTAMP", "One or more records have been rejected due to invalid "
            "timestamp", errors)  # fmt: skip
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{text}')" for i, text in errors[:3])
    return RecordValidationError(
        "INVALID_RECORD",
        f"One or more records have been rejected due to {len(errors)} record errors in total, "
        f"and only showing the first three errors at most: [{shown}]",
        errors,
    )


def analyze_follower_batches(
    view: memoryview, batches: list[ValidBatch], name: str
) -> tuple[list, list, list, LogAppendInfo]:
    """A follower's validated batches keep their offsets: check that they ascend and
    collect (entries, producer batches, (epoch, start offset) pairs begun, info) as
    `validate_and_assign_offsets` does for the leader."""
    entries: list = []
    producer_batches: list = []
    epochs: list = []
    info = LogAppendInfo(-1, -1)
    previous_last = -1
    for position, size, h in batches:
        frame = frame_at(view, position, position, size)
        if frame.last_offset <= previous_last:
            raise KafkaError("CORRUPT_MESSAGE", f"Out of order offsets in append to {name}")
        previous_last = frame.last_offset
        if h is not None and (h[9] >= 0 or h[5] & CONTROL_MASK):
            producer_batches.append((len(entries), h))
        if h is not None and h[2] >= 0 and (not epochs or epochs[-1][0] != h[2]):
            epochs.append((h[2], h[0]))
        entries.append((position, size, frame.last_offset, frame.max_timestamp))
        if info.first_offset < 0:
            info.first_offset = frame.base_offset
        info.account(size, h, frame.last_offset, frame.max_timestamp)
    return entries, producer_batches, epochs, info


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
