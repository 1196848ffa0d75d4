"""The values a LogSegment takes and hands out, named as Kafka names them: where an
offset sits (LogOffsetMetadata), what a read returns (FetchDataInfo), what decides a
roll (RollParams), and a timestamp lookup's answer (TimestampAndOffset). kt.storage.log_segment
exports them too."""

from __future__ import annotations

from dataclasses import dataclass

from kt.storage.file_records import FileSlice


@dataclass(frozen=True, slots=True)
class LogOffsetMetadata:
    """An offset and, when known, where it sits: segment base offset and byte position."""

    message_offset: int
    segment_base_offset: int = -1
    relative_position_in_segment: int = -1


@dataclass(frozen=True, slots=True)
class FetchDataInfo:
    """What a read returns: where it started and the bytes (a FileSlice, or b"" if none)."""

    fetch_offset_metadata: LogOffsetMetadata
    records: FileSlice | bytes
    first_entry_incomplete: bool = False


@dataclass(frozen=True, slots=True)
class RollParams:
    max_segment_ms: int
    max_segment_bytes: int
    max_timestamp_in_messages: int
    max_offset_in_messages: int
    messages_size: int
    now: int


@dataclass(frozen=True, slots=True)
class TimestampAndOffset:
    timestamp: int
    offset: int
    leader_epoch: int | None = None
