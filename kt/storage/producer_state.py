"""Idempotent and transactional producer state of one partition (Kafka's ProducerStateManager).

Snapshot file `<offset, 20 digits>.snapshot` (ProducerSnapshot.json, version 1), the
producer table as of `offset` (the log end offset when it was taken), big-endian:

  version: int16 (= 1)
  crc: uint32           CRC-32C of every byte after this field
  producerEntries: int32 count, then per producer:
    producerId: int64
    epoch: int16
    lastSequence: int32
    lastOffset: int64
    offsetDelta: int32      lastOffset - first offset of the producer's last batch
    timestamp: int64        max timestamp of that batch
    coordinatorEpoch: int32
    currentTxnFirstOffset: int64   (-1: no transaction open)

A snapshot holds only each producer's last batch; the in-memory entry keeps the last
five (ProducerStateEntry.NUM_BATCHES_TO_RETAIN) to recognise retried batches.
Snapshots are written when a segment rolls and when the log closes, and the log is
replayed from the latest snapshot on open.
"""

from __future__ import annotations

import logging
import os
import struct
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from crc32c_rs import crc32c

from kt.errors import CorruptRecordError, KafkaError
from kt.storage import names
from kt.storage.control_records import ABORT, COMMIT
from kt.storage.transaction_index import AbortedTxn

log = logging.getLogger(__name__)

SNAPSHOT_VERSION = 1
SNAPSHOT_HEADER = struct.Struct(">hIi")  # version, crc, entry count
SNAPSHOT_ENTRY = struct.Struct(">qhiqiqiq")
SNAPSHOT_CRC_OFFSET = 2
SNAPSHOT_ENTRIES_OFFSET = 6  # the CRC covers the bytes from here to the end
NUM_BATCHES_TO_RETAIN = 5
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1
PRODUCER_ID_EXPIRATION_MS = 86_400_000  # producer.id.expiration.ms

ORIGIN_CLIENT = "client"
ORIGIN_COORDINATOR = "coordinator"
ORIGIN_REPLICATION = "replication"

# Header tuple indexes (batch_header.HEADER): the fields producer state reads.
_BASE_OFFSET, _ATTRIBUTES, _LAST_DELTA, _MAX_TS, _PID, _EPOCH, _BASE_SEQ = 0, 5, 6, 8, 9, 10, 11
_TRANSACTIONAL, _CONTROL = 0x10, 0x20
_CONTROL_KEY = struct.Struct(">hh")
_CONTROL_VALUE = struct.Struct(">hi")


class CorruptSnapshotError(Exception):
    """A snapshot whose version, layout or CRC is wrong; the loader deletes it."""


def decrement_sequence(sequence: int, decrement: int) -> int:
    """Sequence arithmetic modulo 2^31 (DefaultRecordBatch.decrementSequence)."""
    return (
        sequence - decrement if sequence >= decrement else 0x7FFFFFFF - (decrement - sequence) + 1
    )


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == 0x7FFFFFFF)


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


@dataclass
class ProducerStateEntry:
    """One producer: its epoch, its last batches (oldest first), its open transaction."""

    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    coordinator_epoch: int = -1
    last_timestamp: int = NO_TIMESTAMP
    current_txn_first_offset: int | None = None
    batch_metadata: deque[BatchMetadata] = field(
        default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN)
    )

    @property
    def is_empty(self) -> bool:
        return not self.batch_metadata

    @property
    def first_seq(self) -> int:
        return self.batch_metadata[0].first_seq if self.batch_metadata else NO_SEQUENCE

    @property
    def last_seq(self) -> int:
        return self.batch_metadata[-1].last_seq if self.batch_metadata else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batch_metadata[-1].last_offset if self.batch_metadata else -1

    @property
    def last_offset_delta(self) -> int:
        return self.batch_metadata[-1].offset_delta if self.batch_metadata else 0

    def copy_without_batches(self) -> ProducerStateEntry:
        return ProducerStateEntry(
            self.producer_id,
            self.producer_epoch,
            self.coordinator_epoch,
            self.last_timestamp,
            self.current_txn_first_offset,
        )

    def maybe_update_producer_epoch(self, epoch: int) -> None:
        if self.producer_epoch != epoch:
            self.batch_metadata.clear()
            self.producer_epoch = epoch

    def add_batch(self, epoch: int, last_seq: int, last_offset: int, delta: int, ts: int) -> None:
        self.maybe_update_producer_epoch(epoch)
        self.batch_metadata.append(BatchMetadata(last_seq, last_offset, delta, ts))
        self.last_timestamp = ts

    def update(self, other: ProducerStateEntry) -> None:
        """Merge the state an append produced into this entry."""
        self.maybe_update_producer_epoch(other.producer_epoch)
        self.batch_metadata.extend(other.batch_metadata)
        self.coordinator_epoch = other.coordinator_epoch
        self.current_txn_first_offset = other.current_txn_first_offset
        self.last_timestamp = other.last_timestamp

    def find_duplicate_batch(
        self, epoch: int, first_seq: int, last_seq: int
    ) -> BatchMetadata | None:  # noqa: E501
        if epoch != self.producer_epoch:
            return None
        for batch in self.batch_metadata:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction that a COMMIT or ABORT marker at `last_offset` ended (CompletedTxn)."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


class ProducerAppendInfo:
    """Validates one producer's batches of an append against its state (ProducerAppendInfo).

    Works on a copy (`updated`); the manager merges it only once the append is written,
    so a rejected append leaves the producer table untouched.
    """

    def __init__(self, producer_id: int, current: ProducerStateEntry, origin: str) -> None:
        self.producer_id = producer_id
        self.current = current
        self.origin = origin
        self.updated = current.copy_without_batches()
        self.started_txn_first_offsets: list[int] = []
        self.completed_txns: list[CompletedTxn] = []

    def _check_epoch(self, epoch: int, offset: int) -> None:
        if epoch < self.updated.producer_epoch:
            message = (
                f"Epoch of producer {self.producer_id} at offset {offset} is {epoch}, which "
                f"is smaller than the last seen epoch {self.updated.producer_epoch}"
            )
            if self.origin == ORIGIN_REPLICATION:
                log.warning(message)
            else:
                raise KafkaError("INVALID_PRODUCER_EPOCH", message)

    def _check_sequence(self, epoch: int, first_seq: int, offset: int) -> None:
        updated, current = self.updated, self.current
        if epoch != updated.producer_epoch:
            if first_seq != 0 and updated.producer_epoch != NO_PRODUCER_EPOCH:
                raise KafkaError(
                    "OUT_OF_ORDER_SEQUENCE_NUMBER",
                    f"Invalid sequence number for new epoch of producer {self.producer_id} at "
                    f"offset {offset}: {epoch} (request epoch), {first_seq} (seq. number), "
                    f"{updated.producer_epoch} (current producer epoch)",
                )
            return
        if not updated.is_empty:
            last_seq = updated.last_seq
        elif epoch == current.producer_epoch:
            last_seq = current.last_seq
        else:
            last_seq = NO_SEQUENCE
        if current.producer_epoch != NO_PRODUCER_EPOCH and not in_sequence(last_seq, first_seq):
            raise KafkaError(
                "OUT_OF_ORDER_SEQUENCE_NUMBER",
                f"Out of order sequence number for producer {self.producer_id} at offset "
                f"{offset}: {first_seq} (incoming seq. number), {last_seq} (current end "
                "sequence number)",
            )

    def append(self, h: tuple, control: bytes | memoryview | None = None) -> None:
        """Apply one batch, given its header tuple (and its bytes if it is a control batch)."""
        epoch, base_offset = h[_EPOCH], h[_BASE_OFFSET]
        last_offset = base_offset + h[_LAST_DELTA]
        if h[_ATTRIBUTES] & _CONTROL:
            marker = parse_end_txn_marker(control) if control is not None else None
            if marker is None or marker[0] not in (ABORT, COMMIT):
                return  # an empty control batch (its transaction was cleaned away)
            self._check_epoch(epoch, base_offset)
            control_type, coordinator_epoch = marker
            if (
                self.updated.coordinator_epoch > coordinator_epoch
                and self.origin != ORIGIN_REPLICATION
            ):  # noqa: E501
                raise KafkaError(
                    "INVALID_PRODUCER_EPOCH",
                    f"Invalid coordinator epoch {coordinator_epoch} for producer "
                    f"{self.producer_id}",
                )
            first_offset = self.updated.current_txn_first_offset
            if first_offset is not None:
                self.completed_txns.append(
                    CompletedTxn(self.producer_id, first_offset, base_offset, control_type == ABORT)
                )
            self.updated.maybe_update_producer_epoch(epoch)
            self.updated.coordinator_epoch = coordinator_epoch
            self.updated.current_txn_first_offset = None
            self.updated.last_timestamp = h[_MAX_TS]
            return
        self._check_epoch(epoch, base_offset)
        if self.origin == ORIGIN_CLIENT:
            self._check_sequence(epoch, h[_BASE_SEQ], base_offset)
        base_seq = h[_BASE_SEQ]
        last_seq = NO_SEQUENCE if base_seq < 0 else (base_seq + h[_LAST_DELTA]) & 0x7FFFFFFF
        self.updated.add_batch(epoch, last_seq, last_offset, h[_LAST_DELTA], h[_MAX_TS])
        transactional = bool(h[_ATTRIBUTES] & _TRANSACTIONAL)
        if self.updated.current_txn_first_offset is not None and not transactional:
            raise KafkaError(
                "INVALID_TXN_STATE",
                f"Expected transactional write from producer {self.producer_id} "
                f"at offset {base_offset}",
            )
        if self.updated.current_txn_first_offset is None and transactional:
            self.updated.current_txn_first_offset = base_offset
            self.started_txn_first_offsets.append(base_offset)


def parse_end_txn_marker(batch: bytes | memoryview) -> tuple[int, int] | None:
    """(control type, coordinator epoch) of a control batch's first record, or None."""
    from kt.storage.record_batch import read_zigzag_varint

    if len(batch) <= 61 or struct.unpack_from(">i", batch, 57)[0] == 0:
        return None
    body = memoryview(batch)[61:]
    try:
        _, pos = read_zigzag_varint(body, 0)  # record length
        _, pos = read_zigzag_varint(body, pos + 1)  # timestamp delta (after attributes)
        _, pos = read_zigzag_varint(body, pos)  # offset delta
        key_length, pos = read_zigzag_varint(body, pos)
        _, control_type = _CONTROL_KEY.unpack_from(body, pos)
        pos += key_length
        _, pos = read_zigzag_varint(body, pos)  # value length
    except IndexError:
        raise CorruptRecordError("varint runs past the end of the records") from None
    _, coordinator_epoch = _CONTROL_VALUE.unpack_from(body, pos)
    return control_type, coordinator_epoch


# -- snapshot files ------------------------------------------------------------------


def encode_snapshot(entries: Iterable[ProducerStateEntry]) -> bytes:
    entries = list(entries)
    body = bytearray(SNAPSHOT_HEADER.size + SNAPSHOT_ENTRY.size * len(entries))
    for i, e in enumerate(entries):
        txn = e.current_txn_first_offset if e.current_txn_first_offset is not None else -1
        SNAPSHOT_ENTRY.pack_into(
            body,
            SNAPSHOT_HEADER.size + i * SNAPSHOT_ENTRY.size,
            e.producer_id,
            e.producer_epoch,
            e.last_seq,
            e.last_data_offset,
            e.last_offset_delta,
            e.last_timestamp,
            e.coordinator_epoch,
            txn,
        )
    struct.pack_into(">i", body, SNAPSHOT_ENTRIES_OFFSET, len(entries))
    crc = crc32c(memoryview(body)[SNAPSHOT_ENTRIES_OFFSET:])
    struct.pack_into(">hI", body, 0, SNAPSHOT_VERSION, crc)
    return bytes(body)


def decode_snapshot(data: bytes) -> list[ProducerStateEntry]:
    if len(data) < SNAPSHOT_HEADER.size:
        raise CorruptSnapshotError(f"Snapshot failed schema validation: {len(data)} bytes")
    version, crc, count = SNAPSHOT_HEADER.unpack_from(data, 0)
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"Snapshot contained an unknown file version {version}")
    if count < 0 or len(data) != SNAPSHOT_HEADER.size + count * SNAPSHOT_ENTRY.size:
        raise CorruptSnapshotError(
            f"Snapshot failed schema validation: {count} entries in {len(data)} bytes"
        )
    computed = crc32c(memoryview(data)[SNAPSHOT_ENTRIES_OFFSET:])
    if crc != computed:
        raise CorruptSnapshotError(
            f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. "
            f"Computed crc: {computed}"
        )
    entries = []
    for values in SNAPSHOT_ENTRY.iter_unpack(memoryview(data)[SNAPSHOT_HEADER.size :]):
        pid, epoch, last_seq, last_offset, delta, ts, coordinator_epoch, txn = values
        entry = ProducerStateEntry(pid, epoch, coordinator_epoch, ts, txn if txn >= 0 else None)
        if last_offset >= 0:
            entry.batch_metadata.append(BatchMetadata(last_seq, last_offset, delta, ts))
        entries.append(entry)
    return entries


def read_snapshot(path: str) -> list[ProducerStateEntry]:
    """The producer entries of a `.snapshot` file (for `kt dump-log` and loading)."""
    with open(path, "rb") as f:
        return decode_snapshot(f.read())


def write_snapshot(path: str, entries: Iterable[ProducerStateEntry], sync: bool = True) -> None:
    data = encode_snapshot(entries)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


class ProducerStateManager:
    """The producer table of one partition, its open transactions, and its snapshots.

    Invariants: the table reflects every batch before `map_end_offset`; snapshot
    offsets are the log offsets their table reflects; `ongoing_txns` maps each open
    transaction's first offset to its producer; `unreplicated_txns` maps the first
    offset of each transaction whose marker is not yet below the high watermark to the
    marker's offset. The first unstable offset is the smallest key of either.
    """

    def __init__(self, log_dir: str) -> None:
        self.log_dir = log_dir
        self.producers: dict[int, ProducerStateEntry] = {}
        self.ongoing_txns: dict[int, int] = {}
        self.unreplicated_txns: dict[int, int] = {}
        self.map_end_offset = 0
        self.last_snap_offset = 0
        self.snapshots: list[int] = sorted(self._list_snapshot_offsets())

    def _list_snapshot_offsets(self) -> Iterable[int]:
        for name in os.listdir(self.log_dir):
            if name.endswith(names.PRODUCER_SNAPSHOT_FILE_SUFFIX):
                try:
                    yield names.offset_from_file_name(name)
                except ValueError:
                    continue

    def snapshot_path(self, offset: int) -> str:
        return os.path.join(self.log_dir, names.producer_snapshot_file_name(offset))

    @property
    def is_empty(self) -> bool:
        return not self.producers and not self.unreplicated_txns

    def latest_snapshot_offset(self) -> int | None:
        return self.snapshots[-1] if self.snapshots else None

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.producers.get(producer_id)

    def first_unstable_offset(self) -> int | None:
        """The first offset of a transaction undecided, or decided by a marker that is not
        yet replicated (at or above the high watermark)."""
        if not self.unreplicated_txns:
            return min(self.ongoing_txns) if self.ongoing_txns else None
        first = min(self.unreplicated_txns)
        return min(first, min(self.ongoing_txns)) if self.ongoing_txns else first

    def first_undecided_offset(self) -> int | None:
        return min(self.ongoing_txns) if self.ongoing_txns else None

    def on_high_watermark_updated(self, high_watermark: int) -> None:
        """Transactions whose marker is below the high watermark are stable."""
        if self.unreplicated_txns:
            self._remove_unreplicated_txns(high_watermark)

    def _remove_unreplicated_txns(self, offset: int) -> None:
        done = [first for first, last in self.unreplicated_txns.items() if last < offset]
        for first in done:
            del self.unreplicated_txns[first]

    def last_stable_offset(self, completed: CompletedTxn) -> int:
        """The LSO once `completed` ends: the first transaction still open of another
        producer, or the offset after its marker (entered in the transaction index)."""
        others = [f for f, pid in self.ongoing_txns.items() if pid != completed.producer_id]
        return min(others) if others else completed.last_offset + 1

    def complete_txns(self, completed: list[CompletedTxn]) -> list[AbortedTxn]:
        """Mark transactions ended by markers as decided; they stay unstable until the
        high watermark passes their marker. The aborted ones, with the LSO at their end,
        are returned for the segment's transaction index."""
        aborted = []
        for txn in completed:
            if txn.is_aborted:
                lso = self.last_stable_offset(txn)
                aborted.append(AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset, lso))
            if self.ongoing_txns.pop(txn.first_offset, None) is None:
                raise ValueError(f"Attempted to complete transaction {txn} which was not started")
            self.unreplicated_txns[txn.first_offset] = txn.last_offset
        return aborted

    # -- appends ------------------------------------------------------------------

    def prepare_update(self, producer_id: int, origin: str) -> ProducerAppendInfo:
        current = self.producers.get(producer_id) or ProducerStateEntry(producer_id)
        return ProducerAppendInfo(producer_id, current, origin)

    def update(self, info: ProducerAppendInfo) -> None:
        """Merge a validated append into the table (after its records were written)."""
        current = self.producers.get(info.producer_id)
        if current is None:
            self.producers[info.producer_id] = info.updated
        else:
            current.update(info.updated)
        for first_offset in info.started_txn_first_offsets:
            self.ongoing_txns[first_offset] = info.producer_id

    def replay_batch(self, h: tuple, control: bytes | memoryview | None = None) -> list[AbortedTxn]:
        """Apply a batch read back from the log (recovery, rebuild): no sequence checks.
        Returns the transactions it aborted (for a rebuilt transaction index)."""
        aborted: list[AbortedTxn] = []
        if h[_PID] >= 0:
            info = self.prepare_update(h[_PID], ORIGIN_REPLICATION)
            info.append(h, control)
            self.update(info)
            if info.completed_txns:
                aborted = self.complete_txns(info.completed_txns)
        self.map_end_offset = h[_BASE_OFFSET] + h[_LAST_DELTA] + 1
        return aborted

    def update_map_end_offset(self, offset: int) -> None:
        self.map_end_offset = offset

    # -- snapshots ------------------------------------------------------------------

    def take_snapshot(self, sync: bool = True) -> str | None:
        """Write the table as of `map_end_offset`, unless a snapshot there exists."""
        if self.map_end_offset <= self.last_snap_offset and self.map_end_offset in self.snapshots:
            return None
        path = self.snapshot_path(self.map_end_offset)
        write_snapshot(path, self.producers.values(), sync)
        if self.map_end_offset not in self.snapshots:
            self.snapshots.append(self.map_end_offset)
            self.snapshots.sort()
        self.last_snap_offset = self.map_end_offset
        return path

    def delete_snapshot(self, offset: int) -> None:
        if offset in self.snapshots:
            self.snapshots.remove(offset)
        try:
            os.unlink(self.snapshot_path(offset))
        except FileNotFoundError:
            pass

    def remove_stray_snapshots(self, segment_base_offsets: Iterable[int]) -> None:
        """Delete snapshots that match no segment, except the latest (Kafka does the same).

        The directory is listed again first, as Kafka does: segment recovery writes
        snapshots through its own manager, and the latest of them spares the log's
        rebuild from replaying the recovered segments a second time."""
        self.snapshots = sorted(self._list_snapshot_offsets())
        keep = set(segment_base_offsets)
        latest = self.latest_snapshot_offset()
        for offset in list(self.snapshots):
            if offset not in keep and offset != latest:
                self.delete_snapshot(offset)

    def _load_from_snapshot(self, log_start_offset: int, now_ms: int) -> None:
        while self.snapshots:
            offset = self.snapshots[-1]
            try:
                entries = read_snapshot(self.snapshot_path(offset))
            except (CorruptSnapshotError, OSError) as e:
                log.warning(
                    "Failed to load producer snapshot %s: %s; deleting it",
                    self.snapshot_path(offset),
                    e,
                )
                self.delete_snapshot(offset)
                continue
            for entry in entries:
                if not self._is_expired(entry, now_ms):
                    self._load_entry(entry)
            self.last_snap_offset = self.map_end_offset = offset
            return
        self.last_snap_offset = self.map_end_offset = log_start_offset

    def _load_entry(self, entry: ProducerStateEntry) -> None:
        self.producers[entry.producer_id] = entry
        if entry.current_txn_first_offset is not None:
            self.ongoing_txns[entry.current_txn_first_offset] = entry.producer_id

    @staticmethod
    def _is_expired(entry: ProducerStateEntry, now_ms: int) -> bool:
        return (
            entry.current_txn_first_offset is None
            and now_ms - entry.last_timestamp >= PRODUCER_ID_EXPIRATION_MS
        )

    def truncate_and_reload(self, log_start_offset: int, log_end_offset: int, now_ms: int) -> None:
        """Drop snapshots outside (log start, log end] and reload from the latest left.
        An empty log keeps its snapshot at its one offset: deleting it (as Kafka does)
        would only have the loader write it again, for every idle partition at start."""
        for offset in list(self.snapshots):
            if offset == log_start_offset == log_end_offset:
                continue
            if offset > log_end_offset or offset <= log_start_offset:
                self.delete_snapshot(offset)
        if log_end_offset != self.map_end_offset:
            self.producers.clear()
            self.ongoing_txns.clear()
            self.unreplicated_txns.clear()
            self._load_from_snapshot(log_start_offset, now_ms)
        else:
            self.on_log_start_offset_incremented(log_start_offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self.producers.clear()
        self.ongoing_txns.clear()
        self.unreplicated_txns.clear()
        for snapshot in list(self.snapshots):
            self.delete_snapshot(snapshot)
        self.last_snap_offset = self.map_end_offset = offset

    def on_log_start_offset_incremented(self, log_start_offset: int) -> None:
        self._remove_unreplicated_txns(log_start_offset)
        if self.map_end_offset < log_start_offset:
            self.map_end_offset = log_start_offset
        self.last_snap_offset = self.latest_snapshot_offset() or log_start_offset

    def remove_expired_producers(self, now_ms: int) -> None:
        expired = [pid for pid, e in self.producers.items() if self._is_expired(e, now_ms)]
        for pid in expired:
            del self.producers[pid]
