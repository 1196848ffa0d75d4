"""`kt dump-log`: Kafka's DumpLogSegments (kafka-dump-log.sh) as plain functions.

Each file named by --files prints `Dumping <path>` and then, by suffix:
  .log        `Log starting offset: N`, one line per batch (v2 or legacy), with deep
              iteration one `| offset: ...` line per record, and a torn tail as
              `Found N invalid bytes at the end of <name>`
  .index      `offset: O position: P` per entry (8 bytes: relative offset, position)
  .timeindex  `timestamp: T offset: O` per entry (12 bytes: timestamp, relative offset)
  .snapshot   one line per producer (producer-state snapshot)
  .txnindex   one line per aborted transaction
  leader-epoch-checkpoint   `<epoch> <start offset>` per entry (a kt convenience)
Index checks (offsets that do not match the log, timestamps out of order,
non-consecutive offsets) are collected and printed on stderr after every file, as
DumpLogSegments does (its lists of offset mismatches come out newest first).
A file that cannot be read raises DumpLogError carrying one line for the user.
"""

from __future__ import annotations

import bisect
import mmap
import os
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TextIO

from kt.errors import CorruptRecordError
from kt.storage.compression import CODEC_NAMES
from kt.storage.control_records import ABORT, COMMIT, control_type_name, parse_control_type
from kt.storage.legacy_records import LegacyRecord
from kt.storage.record_batch import NO_TIMESTAMP, TIMESTAMP_TYPE_NAMES, Record
from kt.storage.records import Batch, iter_batches
from kt.tools.dump_log_parsers import Parsed, decoder_parser

INT32_MAX = 2**31 - 1
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"

_INDEX_ENTRY = struct.Struct(">ii")  # relative offset, position
_TIME_INDEX_ENTRY = struct.Struct(">qi")  # timestamp, relative offset
_TXN_INDEX_ENTRY = struct.Struct(">hqqqq")  # version, producerId, first, last, LSO
_FRAME = struct.Struct(">qi4xb")  # offset, size, -, magic
_I32 = struct.Struct(">i")


class DumpLogError(Exception):
    """A file that cannot be dumped; str() is the one line shown to the user."""


@dataclass
class DumpLogOptions:
    """The command-line switches, already resolved (decoders imply --print-data-log...)."""

    print_data_log: bool = False
    deep_iteration: bool = False
    verify_index_only: bool = False
    index_sanity_check: bool = False
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    max_bytes: int = INT32_MAX
    parser: Callable[[Record], Parsed] = field(default_factory=decoder_parser)


@dataclass
class DumpErrors:
    """Problems found while dumping, keyed by absolute file path, printed at the end."""

    index_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_out_of_order: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_not_found: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    non_consecutive: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    unreadable: list[str] = field(default_factory=list)  # files reported as they came

    def print_to(self, err: TextIO) -> None:
        for name, pairs in self.index_mismatches.items():
            err.write(f"Mismatches in :{name}\n")
            for index_offset, log_offset in reversed(pairs):
                err.write(f"  Index offset: {index_offset}, log offset: {log_offset}\n")
        for name, pairs in self.time_mismatches.items():
            err.write(f"Found timestamp mismatch in :{name}\n")
            for index_ts, log_ts in pairs:
                err.write(f"  Index timestamp: {index_ts}, log timestamp: {log_ts}\n")
        for name, pairs in self.time_out_of_order.items():
            err.write(f"Found out of order timestamp in :{name}\n")
            for index_ts, prev_ts in pairs:
                err.write(
                    f"  Index timestamp: {index_ts}, Previously indexed timestamp: {prev_ts}\n"
                )
        for pairs in self.time_not_found.values():
            err.write("The following indexed offsets are not found in the log.\n")
            for indexed, found in pairs:
                err.write(f"Indexed offset: {indexed}, found log offset: {found}\n")
        for name, pairs in self.non_consecutive.items():
            err.write(f"Non-consecutive offsets in {name}\n")
            for first, second in reversed(pairs):
                err.write(f"  {first} is followed by {second}\n")


def dump_files(paths: Iterable[str], options: DumpLogOptions, out: TextIO, err: TextIO) -> bool:
    """Dump every file in turn, then the problems found, as DumpLogSegments.main does;
    False when a file could not be read (its error already on `err`)."""
    errors = DumpErrors()
    for path in paths:
        out.write(f"Dumping {path}\n")
        if os.path.isdir(path):
            raise DumpLogError(
                f"{path} is a directory: --files takes log, index, snapshot and checkpoint files"
            )
        name = os.path.basename(path)
        suffix = name[name.rfind(".") :] if "." in name else ""
        if name == LEADER_EPOCH_CHECKPOINT or suffix in _KNOWN_SUFFIXES:
            _ensure_readable(path)
        if name == LEADER_EPOCH_CHECKPOINT:
            dump_leader_epoch_checkpoint(path, out)
        elif suffix == ".log":
            dump_log(path, options, out, err, errors)
        elif suffix == ".index":
            dump_index(path, options, out, errors)
        elif suffix == ".timeindex":
            dump_time_index(path, options, out, errors)
        elif suffix == ".snapshot":
            if not dump_producer_snapshot(path, out, err):
                errors.unreadable.append(path)
        elif suffix == ".txnindex":
            dump_txn_index(path, out)
        else:
            err.write(f"Ignoring unknown file {path}\n")
    errors.print_to(err)
    return not errors.unreadable


# --- files ---------------------------------------------------------------------------


def _describe(path: str, e: OSError) -> str:
    return f"Cannot read {path}: {e.strerror or e}"


_KNOWN_SUFFIXES = (".log", ".index", ".timeindex", ".snapshot", ".txnindex")


def _ensure_readable(path: str) -> None:
    try:
        with open(path, "rb"):
            pass
    except OSError as e:
        raise DumpLogError(_describe(path, e)) from e


def read_file(path: str) -> bytes:
    """The whole file, or DumpLogError with one line saying why not."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise DumpLogError(_describe(path, e)) from e


class _MappedFile:
    """A read-only map of a segment file (empty files map to b"")."""

    def __init__(self, path: str) -> None:
        try:
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                self.data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        except OSError as e:
            raise DumpLogError(_describe(path, e)) from e

    def __enter__(self) -> bytes | mmap.mmap:
        return self.data

    def __exit__(self, *exc: object) -> None:
        if isinstance(self.data, mmap.mmap):
            try:
                self.data.close()
            except BufferError:
                pass  # a view is still alive (an exception unwinding); the GC closes it


def _base_offset(path: str) -> int:
    stem = os.path.basename(path).split(".")[0]
    try:
        return int(stem)
    except ValueError:
        raise DumpLogError(f"{path}: the file name does not start with a base offset") from None


def _sibling(path: str, suffix: str) -> str:
    stem = os.path.basename(path).split(".")[0]
    return os.path.join(os.path.dirname(os.path.abspath(path)), stem + suffix)


# --- .log ----------------------------------------------------------------------------


def _optional_long(value: int | None) -> str:
    return "OptionalLong.empty" if value is None else f"OptionalLong[{value}]"


def _bool(value: bool) -> str:
    return "true" if value else "false"


def format_batch(batch: Batch, position: int) -> str:
    """The batch line of DumpLogSegments.printBatchLevel."""
    if batch.magic >= 2:
        head = (
            f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} "
            f"count: {batch.count} baseSequence: {batch.base_sequence} "
            f"lastSequence: {batch.last_sequence} producerId: {batch.producer_id} "
            f"producerEpoch: {batch.producer_epoch} "
            f"partitionLeaderEpoch: {batch.partition_leader_epoch} "
            f"isTransactional: {_bool(batch.is_transactional)} "
            f"isControl: {_bool(batch.is_control)} "
            f"deleteHorizonMs: {_optional_long(batch.delete_horizon_ms)}"
        )
    else:
        head = f"offset: {batch.last_offset}"
    codec = batch.compression_type
    return (
        f"{head} position: {position} {TIMESTAMP_TYPE_NAMES[batch.timestamp_type]}: "
        f"{batch.max_timestamp} size: {batch.size} magic: {batch.magic} "
        f"compresscodec: {CODEC_NAMES.get(codec, f'unknown({codec})')} crc: {batch.crc} "
        f"isvalid: {_bool(batch.is_valid())}"
    )


def format_record(batch: Batch, record: Record, options: DumpLogOptions) -> str:
    """One `| offset: ...` line of deep iteration."""
    parts = [
        f"| offset: {record.offset} {TIMESTAMP_TYPE_NAMES[batch.timestamp_type]}: "
        f"{record.timestamp} keySize: {record.key_size} valueSize: {record.value_size}"
    ]
    if batch.magic >= 2:
        keys = ",".join(key for key, _ in record.headers)
        parts.append(f" sequence: {record.sequence} headerKeys: [{keys}]")
    if isinstance(record, LegacyRecord):
        parts.append(f" isValid: {_bool(record.is_valid)} crc: {record.crc}}}")
    if batch.is_control:
        parts.append(_format_control(record))
    elif options.print_data_log:
        key, payload = options.parser(record)
        if key is not None:
            parts.append(f" key: {key}")
        if payload is not None:
            parts.append(f" payload: {payload}")
    return "".join(parts)


def _format_control(record: Record) -> str:
    try:
        type_id = parse_control_type(record.key)
    except CorruptRecordError:
        return " controlType: UNKNOWN(-1)"
    if type_id in (ABORT, COMMIT) and record.value is not None and len(record.value) >= 6:
        epoch = _I32.unpack_from(record.value, 2)[0]
        return f" endTxnMarker: {control_type_name(type_id)} coordinatorEpoch: {epoch}"
    return f" controlType: {control_type_name(type_id)}({type_id})"


def dump_log(
    path: str, options: DumpLogOptions, out: TextIO, err: TextIO, errors: DumpErrors
) -> None:
    """Batches of a .log file, then a torn tail if there is one."""
    out.write(f"Log starting offset: {_base_offset(path)}\n")
    abs_path = os.path.abspath(path)
    with _MappedFile(path) as data:
        end = min(len(data), options.max_bytes)
        view = data if end == len(data) else data[:end]
        valid_bytes = 0
        last_offset = -1
        try:
            for batch in iter_batches(view):
                out.write(format_batch(batch, valid_bytes) + "\n")
                if options.deep_iteration:
                    last_offset = _dump_records(batch, options, out, err, abs_path,
                                                last_offset, errors)  # fmt: skip
                valid_bytes += batch.size
        except CorruptRecordError:
            pass  # bytes that cannot be framed as a batch: reported as the invalid tail
        del view
    trailing = end - valid_bytes
    if trailing > 0 and options.max_bytes == INT32_MAX:
        out.write(f"Found {trailing} invalid bytes at the end of {os.path.basename(path)}\n")


def _dump_records(
    batch: Batch, options: DumpLogOptions, out: TextIO, err: TextIO, abs_path: str,
    last_offset: int, errors: DumpErrors,
) -> int:  # fmt: skip
    try:
        records = batch.records()
    except CorruptRecordError as e:
        err.write(f"Cannot read the records of the batch at position {batch.position}: {e}\n")
        return last_offset
    for record in records:
        if last_offset != -1 and record.offset != last_offset + 1:
            errors.non_consecutive.setdefault(abs_path, []).append((last_offset, record.offset))
        last_offset = record.offset
        out.write(format_record(batch, record, options) + "\n")
    return last_offset


# --- .index and .timeindex -----------------------------------------------------------


def _index_entries(path: str, entry: struct.Struct) -> list[tuple[int, int]]:
    data = read_file(path)
    usable = len(data) - len(data) % entry.size
    return list(entry.iter_unpack(data[:usable]))


def _require_log(path: str) -> str:
    log_path = _sibling(path, ".log")
    if not os.path.exists(log_path):
        raise DumpLogError(f"Cannot read {log_path}: No such file or directory")
    return log_path


def _check_slice(
    log: bytes | mmap.mmap, position: int, log_path: str, index_path: str, entry: int
) -> None:
    """FileRecords.slice's checks on an index entry's position, with its messages, and
    then what Kafka's tool leaves the reader to guess: which index is corrupt."""
    if 0 <= position <= len(log):
        return
    records = (
        f"FileRecords(size={len(log)}, file={os.path.abspath(log_path)}, start=0, end={INT32_MAX})"
    )
    if position < 0:
        kafka = f"Invalid position: {position} in read from {records}"
    else:
        kafka = f"Slice from position {position} exceeds end position of {records}"
    raise DumpLogError(
        f"{kafka} (the index {os.path.abspath(index_path)} is corrupt: its entry {entry} "
        f"points to position {position} of a {len(log)}-byte log)"
    )


def _sanity_check(path: str, index_class: type, base_offset: int, out: TextIO) -> None:
    from kt.storage.abstract_index import CorruptIndexError

    try:
        index = index_class(path, base_offset)
    except OSError as e:
        raise DumpLogError(_describe(path, e)) from e
    try:
        index.sanity_check(strict=False)  # DumpLogSegments runs Kafka's checks alone
    except CorruptIndexError as e:
        raise DumpLogError(str(e)) from e
    finally:
        index.close_handler()
    out.write(f"{path} passed sanity check.\n")


def _last_offset_at(log: bytes | mmap.mmap, position: int, max_size: int) -> int:
    """The last offset of the batch at `position` read from its header, or -1."""
    if position < 0 or len(log) - position < 27:
        return -1
    offset, size, magic = _FRAME.unpack_from(log, position)
    if size + 12 > max_size or position + 12 + size > len(log):
        return -1
    if magic == 2:
        return offset + _I32.unpack_from(log, position + 23)[0]
    return offset


def dump_index(path: str, options: DumpLogOptions, out: TextIO, errors: DumpErrors) -> None:
    """Entries of an offset index, each checked against the batch at its position."""
    base = _base_offset(path)
    log_path = _require_log(path)
    entries = _index_entries(path, _INDEX_ENTRY)
    if not entries:
        out.write(f"{path} is empty.\n")
        return
    if options.index_sanity_check:
        from kt.storage.offset_index import OffsetIndex

        _sanity_check(path, OffsetIndex, base, out)
        return
    abs_path = os.path.abspath(path)
    with _MappedFile(log_path) as log:
        for i, (relative, position) in enumerate(entries):
            offset = base + relative
            if offset == base and i > 0:
                break  # a zero entry: the unwritten, preallocated part of the file
            _check_slice(log, position, log_path, path, i)
            found = _last_offset_at(log, position, options.max_message_size)
            if found != offset:
                errors.index_mismatches.setdefault(abs_path, []).append((offset, found))
            if not options.verify_index_only:
                out.write(f"offset: {offset} position: {position}\n")


def dump_time_index(path: str, options: DumpLogOptions, out: TextIO, errors: DumpErrors) -> None:
    """Entries of a time index, each checked against the max timestamp of its batch."""
    base = _base_offset(path)
    log_path = _require_log(path)
    if options.index_sanity_check:
        from kt.storage.time_index import TimeIndex

        _sanity_check(path, TimeIndex, base, out)
        return
    entries = _index_entries(path, _TIME_INDEX_ENTRY)
    index_path = _sibling(path, ".index")
    offset_entries = _index_entries(index_path, _INDEX_ENTRY) if os.path.exists(index_path) else []
    index_offsets = [base + rel for rel, _ in offset_entries]
    abs_path = os.path.abspath(path)
    prev_timestamp = NO_TIMESTAMP
    with _MappedFile(log_path) as log:
        for i, (timestamp, relative) in enumerate(entries):
            offset = base + relative
            if offset == base and i > 0:
                break
            slot = bisect.bisect_right(index_offsets, offset) - 1
            position = offset_entries[slot][1] if slot >= 0 else 0
            _check_slice(log, position, log_path, index_path if slot >= 0 else path, max(slot, 0))
            batch = _first_batch_reaching(log, position, offset)
            if batch is None or batch.last_offset != offset:
                found = -1 if batch is None else batch.last_offset
                errors.time_not_found.setdefault(abs_path, []).append((offset, found))
            else:
                log_ts = max((r.timestamp for r in batch.records()), default=NO_TIMESTAMP)
                if log_ts != timestamp:
                    errors.time_mismatches.setdefault(abs_path, []).append((timestamp, log_ts))
                if prev_timestamp >= timestamp:
                    errors.time_out_of_order.setdefault(abs_path, []).append(
                        (timestamp, prev_timestamp)
                    )
            if not options.verify_index_only:
                out.write(f"timestamp: {timestamp} offset: {offset}\n")
            prev_timestamp = timestamp


def _first_batch_reaching(log: bytes | mmap.mmap, position: int, offset: int) -> Batch | None:
    try:
        for batch in iter_batches(log, position):
            if batch.last_offset >= offset:
                batch.records()
                return batch
    except CorruptRecordError:
        pass
    return None


# --- producer snapshots, transaction indexes, leader epochs ---------------------------


def dump_producer_snapshot(path: str, out: TextIO, err: TextIO) -> bool:
    """One line per producer in a producer-state snapshot. A corrupt one is reported on
    stderr, as Kafka does, and False returned: the tool goes on, then exits 1 (Kafka 0)."""
    from kt.storage.producer_state import CorruptSnapshotError, read_snapshot

    read_file(path)  # a missing or unreadable file is one line, not a traceback
    try:
        entries = read_snapshot(path)
    except CorruptSnapshotError as e:
        err.write(f"{e}\n")  # as Kafka: the message, and on to the next file
        return False
    except (OSError, ValueError, struct.error) as e:
        raise DumpLogError(f"{path}: {e}") from e
    for e in entries:
        line = (
            f"producerId: {e.producer_id} producerEpoch: {e.producer_epoch} "
            f"coordinatorEpoch: {e.coordinator_epoch} "
            f"currentTxnFirstOffset: {_optional_long(e.current_txn_first_offset)} "
            f"lastTimestamp: {e.last_timestamp} "
        )
        if e.batch_metadata:
            m = e.batch_metadata[0]
            line += (
                f"firstSequence: {m.first_seq} lastSequence: {m.last_seq} "
                f"lastOffset: {m.last_offset} offsetDelta: {m.offset_delta} "
                f"timestamp: {m.timestamp}"
            )
        out.write(line + "\n")
    return True


def dump_txn_index(path: str, out: TextIO) -> None:
    """Aborted transactions: 34-byte entries (version, producerId, first, last, LSO)."""
    data = read_file(path)
    usable = len(data) - len(data) % _TXN_INDEX_ENTRY.size
    for version, producer_id, first, last, lso in _TXN_INDEX_ENTRY.iter_unpack(data[:usable]):
        if version != 0:
            raise DumpLogError(
                f"Unexpected aborted transaction version {version} in transaction index "
                f"{os.path.abspath(path)}, current version is 0"
            )
        out.write(
            f"version: {version} producerId: {producer_id} firstOffset: {first} "
            f"lastOffset: {last} lastStableOffset: {lso}\n"
        )


def dump_leader_epoch_checkpoint(path: str, out: TextIO) -> None:
    """`<epoch> <start offset>` per entry (Kafka's tool ignores this file)."""
    from kt.storage.checkpoints import CheckpointError, LeaderEpochCheckpointFile

    read_file(path)
    try:
        entries = LeaderEpochCheckpointFile(path).read()
    except (CheckpointError, OSError) as e:
        raise DumpLogError(str(e)) from e
    for epoch, start_offset in entries:
        out.write(f"{epoch} {start_offset}\n")
