"""One topic partition as a share group reads it (KIP-932; Kafka's SharePartition).

The records between the share-partition start offset (SPSO) and its end offset (SPEO)
are in flight, each in one state:

  AVAILABLE     may be delivered (again)
  ACQUIRED      delivered to one member, locked for record.lock.duration.ms
  ACKNOWLEDGED  accepted by its member (terminal)
  ARCHIVED      rejected, a gap, or past the delivery count limit (terminal)

A fetch acquires available records for its member (each delivery counts); the member
acknowledges them: ACCEPT, RELEASE (available again, unless it has been delivered
delivery.count.limit times, then archived), REJECT; a lock that expires releases them
alike, as does the member leaving. Records delivered often go out in ever smaller
groups (throttling; `_throttled_share`). The SPSO moves past the terminal records at its
front; records below it are done for the group.

State is kept as runs of consecutive offsets in one state with one delivery count,
member and lock (what Kafka persists as state batches): every operation works per run,
never per record. Invariants: the runs are sorted and contiguous, the first begins at
the SPSO and is not terminal; `end_offset` is the last in-flight offset (SPSO - 1 when
none is in flight). Acknowledgements of one request are applied all or none.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from enum import IntEnum
from typing import Any


class RecordState(IntEnum):
    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVING = 3
    ARCHIVED = 4


TERMINAL = frozenset((RecordState.ACKNOWLEDGED, RecordState.ARCHIVED))


class AcknowledgeType(IntEnum):
    """ShareFetch's and ShareAcknowledge's AcknowledgeTypes; 0 marks a gap (no record)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4  # v2 of ShareFetch and ShareAcknowledge: the records stay acquired, lock anew


@dataclass(frozen=True)
class SharePartitionConfig:
    """The group's settings (group.share.* and the group configs share.*)."""

    max_in_flight_records: int = 2000  # group.share.partition.max.record.locks
    max_delivery_count: int = 5  # group.share.delivery.count.limit
    record_lock_duration_ms: int = 30000  # group.share.record.lock.duration.ms
    renew_acknowledge_enabled: bool = True  # the group config share.renew.acknowledge.enable


@dataclass(frozen=True)
class Run:
    """Offsets first..last, all in `state`, delivered `delivery_count` times; an acquired
    run names its member and the lock (a number) its acquisition took."""

    first: int
    last: int
    state: RecordState
    delivery_count: int
    member_id: str = ""
    lock: int = 0

    @property
    def size(self) -> int:
        return self.last - self.first + 1

    def same_kind(self, other: Run) -> bool:
        return (self.state, self.delivery_count, self.member_id, self.lock) == (
            other.state, other.delivery_count, other.member_id, other.lock)  # fmt: skip


@dataclass(frozen=True)
class AcquiredRecords:
    """ShareFetch's AcquiredRecords: offsets first..last, delivered delivery_count times."""

    first: int
    last: int
    delivery_count: int


class ShareAcknowledgeError(Exception):
    """An acknowledgement refused: a Kafka error name and its message."""

    def __init__(self, error: str, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


_NOT_IN_CACHE = "Batch record not found. The request batch offsets are not found in the cache."
_FIRST_PAST = "Batch record not found. The first offset in request is past acquired records."
_LAST_PAST = "Batch record not found. The last offset in request is past acquired records."
_NOT_ACQUIRED = "The batch cannot be acknowledged. The batch is not in the acquired state."
_NOT_OWNER = "Member is not the owner of batch record"
_RENEW_DISABLED = "Renewing acquisition locks is not enabled for the group."

Schedule = Callable[[int, Callable[[], None]], Any]  # (delay ms, callback) -> a handle


class SharePartition:
    """The in-flight records of one share partition (see the module's docstring).

    `schedule` starts the acquisition locks' timers (the event loop's call_later in the
    broker); a handle it returns may have `cancel()`."""

    def __init__(self, start_offset: int, config: SharePartitionConfig,
                 schedule: Schedule) -> None:  # fmt: skip
        self.start_offset = start_offset
        self.end_offset = start_offset - 1
        self.config = config
        self.schedule = schedule
        self.runs: list[Run] = []
        self._locks = itertools.count(1)
        self._timers: dict[int, Any] = {}
        # Called after a lock expired and released records (their state is to persist).
        self.on_released: Callable[[], None] | None = None

    @classmethod
    def from_state(
        cls,
        start_offset: int,
        batches: Iterable[tuple[int, int, int, int]],
        config: SharePartitionConfig,
        schedule: Schedule,
    ) -> SharePartition:
        """A share partition as its durable state left it: (first, last, state, delivery
        count) batches past `start_offset`; acquired ones (a leader that went away) are
        available again, and offsets between batches are available, never delivered."""
        sp = cls(start_offset, config, schedule)
        runs: list[Run] = []
        for first, last, state, count in sorted(batches):
            first = max(first, start_offset, runs[-1].last + 1 if runs else start_offset)
            if last < first:
                continue
            expected = runs[-1].last + 1 if runs else start_offset
            if first > expected:
                runs.append(Run(expected, first - 1, RecordState.AVAILABLE, 0))
            kind = RecordState(state) if state in RecordState._value2member_map_ else None
            if kind in (None, RecordState.ACQUIRED, RecordState.ARCHIVING):
                kind = RecordState.AVAILABLE
            runs.append(Run(first, last, kind, count))
        sp.runs = _merged(runs)
        if sp.runs:
            sp.end_offset = sp.runs[-1].last
        sp._advance_start()
        return sp

    def state_batches(self) -> list[tuple[int, int, int, int]]:
        """What to persist: (first, last, state, delivery count) of the in-flight runs
        not acquired (an acquisition is not persisted: after a crash its records are
        available again with the count they had before)."""
        return [(r.first, r.last, int(r.state), r.delivery_count) for r in self.runs
                if r.state != RecordState.ACQUIRED]  # fmt: skip

    def delivery_complete_count(self) -> int:
        """The in-flight records (all at or past the start offset) whose delivery is
        complete: acknowledged or archived (KIP-1226; a share partition's lag leaves them
        out)."""
        return sum(r.last - r.first + 1 for r in self.runs if r.state in TERMINAL)

    # -- reading ---------------------------------------------------------------------------

    def in_flight_records(self) -> int:
        return self.end_offset - self.start_offset + 1 if self.runs else 0

    def next_fetch_offset(self) -> int:
        """The first available in-flight offset, else the first offset past them."""
        for run in self.runs:
            if run.state == RecordState.AVAILABLE:
                return run.first
        return self.end_offset + 1

    def state_of(self, offset: int) -> Run | None:
        """The run holding `offset`, None outside the in-flight records."""
        for run in self.runs:
            if run.first <= offset <= run.last:
                return run
        return None

    # -- acquiring -------------------------------------------------------------------------

    def acquire(
        self,
        member_id: str,
        log_batches: Sequence[tuple[int, int]],
        max_records: int,
        record_limit: bool = False,
    ) -> list[AcquiredRecords]:
        """Acquire for `member_id` what the fetched log batches ((base offset, last
        offset), in order) hold that is available: in-flight records first, then new ones
        past the SPEO, at most `max_records` and no more in flight than the limit (whole
        log batches unless `record_limit`, ShareAcquireMode record_limit). Each acquired
        record's delivery count grows by one; its lock starts."""
        if max_records <= 0 or not log_batches or log_batches[-1][1] < self.start_offset:
            return []
        fetch_first = max(log_batches[0][0], self.start_offset)
        fetch_last = log_batches[-1][1]
        budget = min(max_records, self.config.max_in_flight_records - self.in_flight_records())
        may_add = budget > 0
        if not may_add:  # at the limit: only records already in flight may go out again
            budget = min(max_records, self.end_offset - fetch_first + 1)
        if budget <= 0:
            return []
        lock = next(self._locks)
        acquired: list[AcquiredRecords] = []
        out: list[Run] = []
        throttled = False
        for run in self.runs:
            if (run.state != RecordState.AVAILABLE or run.last < fetch_first
                    or run.first > fetch_last or budget <= 0 or throttled):  # fmt: skip
                out.append(run)
                continue
            first = max(run.first, fetch_first)
            last = min(run.last, fetch_last)
            if record_limit:
                last = min(last, first + budget - 1)
            if (share := self._throttled_share(run, log_batches, first)) is not None:
                throttled = True  # nothing more in this fetch, new records neither
                if acquired:
                    out.append(run)
                    continue
                last = min(last, first + share - 1)
            taken = Run(first, last, RecordState.ACQUIRED, run.delivery_count + 1, member_id, lock)
            out += _around(run, taken)
            acquired.append(AcquiredRecords(first, last, taken.delivery_count))
            budget -= taken.size
        if throttled:
            budget = 0
        new_first = max(self.end_offset + 1, fetch_first)
        if may_add and budget > 0 and new_first <= fetch_last:
            new_last = min(fetch_last, new_first + budget - 1)
            if not record_limit:  # to the end of the log batch holding it
                new_last = next((last for base, last in log_batches if base <= new_last <= last),
                                new_last)  # fmt: skip
                new_last = min(new_last, fetch_last)
            if not out:
                self.start_offset = new_first  # nothing in flight: the SPSO follows the log
            elif new_first > self.end_offset + 1:  # offsets the log no longer has
                out.append(Run(self.end_offset + 1, new_first - 1, RecordState.ARCHIVED, 0))
            out.append(Run(new_first, new_last, RecordState.ACQUIRED, 1, member_id, lock))
            acquired.append(AcquiredRecords(new_first, new_last, 1))
            self.end_offset = new_last
        if not acquired:
            return []
        self.runs = _merged(out)
        self._timers[lock] = self.schedule(self.config.record_lock_duration_ms,
                                           lambda: self._lock_expired(lock))  # fmt: skip
        return acquired

    def _throttled_share(self, run: Run, log_batches: Sequence[tuple[int, int]],
                         first: int) -> int | None:  # fmt: skip
        """How many of an available run's records, from `first`, one fetch may take once
        they have been delivered often (None: as many as fit). Kafka's SharePartition
        throttles records delivered at least max(2, ceil(limit / 2)) times: a fetch taking
        them takes nothing else, and of the log batch holding them half as many records
        for each delivery past that, down to one; a record on its last attempt goes alone.
        A poison record among many is so delivered in ever smaller groups, and the others
        get through."""
        limit = self.config.max_delivery_count
        throttle_from = max(2, math.ceil(limit / 2))
        count = run.delivery_count
        if count < throttle_from:
            return None
        if limit > 2 and count == limit - 1:
            return 1
        size = next((last - base + 1 for base, last in log_batches if base <= first <= last),
                    run.size)  # fmt: skip
        return max(1, size >> (count - throttle_from + 1))

    def archive_acquired(self, member_id: str, ranges: Sequence[tuple[int, int]],
                         acquired: list[AcquiredRecords]) -> list[AcquiredRecords]:  # fmt: skip
        """The records of `ranges` (the aborted transactions' log batches, read_committed)
        that `member_id` just acquired are archived, never delivered; the acquired records
        left (Kafka's filterAbortedTransactionalAcquiredRecords)."""
        runs = self.runs
        for first, last in ranges:
            out: list[Run] = []
            for run in runs:
                if (run.state != RecordState.ACQUIRED or run.member_id != member_id
                        or run.last < first or run.first > last):  # fmt: skip
                    out.append(run)
                    continue
                piece = replace(run, first=max(run.first, first), last=min(run.last, last),
                                state=RecordState.ARCHIVED, member_id="", lock=0)  # fmt: skip
                out += _around(run, piece)
            runs = out
        self.runs = _merged(runs)
        self._advance_start()
        self._drop_unused_timers()
        left: list[AcquiredRecords] = []
        for a in acquired:
            pieces = [(a.first, a.last)]
            for first, last in ranges:
                cut = [((lo, min(hi, first - 1)), (max(lo, last + 1), hi)) for lo, hi in pieces]
                pieces = [p for pair in cut for p in pair if p[0] <= p[1]]
            left += [AcquiredRecords(lo, hi, a.delivery_count) for lo, hi in pieces]
        return left

    def _lock_expired(self, lock: int) -> None:
        """The acquisition's records not yet acknowledged are released."""
        self._timers.pop(lock, None)
        self.runs = _merged(self._released(run) if run.lock == lock else run for run in self.runs)
        self._advance_start()
        if self.on_released is not None:
            self.on_released()

    def _released(self, run: Run) -> Run:
        """An acquired run given back: available, or archived once delivered the limit."""
        if run.state != RecordState.ACQUIRED:
            return run
        if run.delivery_count >= self.config.max_delivery_count:
            return replace(run, state=RecordState.ARCHIVED, member_id="", lock=0)
        return replace(run, state=RecordState.AVAILABLE, member_id="", lock=0)

    def release_acquired(self, member_id: str) -> None:
        """The member left (or its share session ended): what it holds is released."""
        self.runs = _merged(
            self._released(run) if run.member_id == member_id else run for run in self.runs
        )
        self._advance_start()
        self._drop_unused_timers()

    # -- acknowledging ---------------------------------------------------------------------

    def acknowledge(
        self, member_id: str, batches: Iterable[tuple[int, int, Sequence[int]]]
    ) -> None:
        """Apply (first offset, last offset, acknowledge types) batches, all or none:
        ShareAcknowledgeError (INVALID_REQUEST, INVALID_RECORD_STATE with Kafka's
        messages) leaves the state as it was. Types: one for the batch, or one per
        offset. RENEW keeps records acquired under a new lock, its timer started afresh."""
        runs = list(self.runs)
        renewal = next(self._locks)  # the lock of the records this call renews, if any
        for first, last, types in batches:
            if (
                not types
                or (len(types) != 1 and len(types) != last - first + 1)
                or any(t not in AcknowledgeType._value2member_map_ for t in types)
            ):
                shown = [int(t) for t in types]  # Java's List.toString
                raise ShareAcknowledgeError("INVALID_REQUEST", f"Invalid acknowledge type: {shown}")
            if last < self.start_offset:  # no longer in flight (fetchSubMapForAcknowledgementBatch)
                raise ShareAcknowledgeError("INVALID_RECORD_STATE", _NOT_IN_CACHE)
            if first < self.start_offset:
                types = types if len(types) == 1 else types[self.start_offset - first :]
                first = self.start_offset
            self._check_found(first, last)
            for start, stop, ack in _ranges(first, last, types):
                runs = self._acknowledged(runs, member_id, start, stop, AcknowledgeType(ack),
                                          renewal)  # fmt: skip
        self.runs = _merged(runs)
        if any(run.lock == renewal for run in self.runs):
            self._timers[renewal] = self.schedule(self.config.record_lock_duration_ms,
                                                  lambda: self._lock_expired(renewal))  # fmt: skip
        self._advance_start()
        self._drop_unused_timers()

    def _check_found(self, first: int, last: int) -> None:
        """fetchSubMapForAcknowledgementBatch's checks, with Kafka's messages."""
        if not self.runs or first < self.runs[0].first:
            raise ShareAcknowledgeError("INVALID_RECORD_STATE", _NOT_IN_CACHE)
        if first > self.end_offset:
            raise ShareAcknowledgeError("INVALID_REQUEST", _FIRST_PAST)
        if last > self.end_offset:
            raise ShareAcknowledgeError("INVALID_REQUEST", _LAST_PAST)

    def _acknowledged(self, runs: list[Run], member_id: str, first: int, last: int,
                      ack: AcknowledgeType, renewal: int) -> list[Run]:  # fmt: skip
        out: list[Run] = []
        for run in runs:
            if run.last < first or run.first > last:
                out.append(run)
                continue
            if run.state != RecordState.ACQUIRED:
                raise ShareAcknowledgeError("INVALID_RECORD_STATE", _NOT_ACQUIRED)
            if run.member_id != member_id:
                raise ShareAcknowledgeError("INVALID_RECORD_STATE", _NOT_OWNER)
            piece = replace(run, first=max(run.first, first), last=min(run.last, last))
            if ack == AcknowledgeType.ACCEPT:
                done = replace(piece, state=RecordState.ACKNOWLEDGED, member_id="", lock=0)
            elif ack == AcknowledgeType.RELEASE:
                done = self._released(piece)
            elif ack == AcknowledgeType.RENEW:
                if not self.config.renew_acknowledge_enabled:
                    raise ShareAcknowledgeError("INVALID_RECORD_STATE", _RENEW_DISABLED)
                done = replace(piece, lock=renewal)
            else:  # REJECT, GAP
                done = replace(piece, state=RecordState.ARCHIVED, member_id="", lock=0)
            out += _around(run, done)
        return out

    # -- the start offset ------------------------------------------------------------------

    def _advance_start(self) -> None:
        """The SPSO moves past the terminal records at the front."""
        while self.runs and self.runs[0].state in TERMINAL:
            self.start_offset = self.runs.pop(0).last + 1
        if not self.runs:
            self.end_offset = max(self.end_offset, self.start_offset - 1)
            self.start_offset = self.end_offset + 1

    def _drop_unused_timers(self) -> None:
        held = {run.lock for run in self.runs if run.state == RecordState.ACQUIRED}
        for lock in [k for k in self._timers if k not in held]:
            handle = self._timers.pop(lock)
            cancel = getattr(handle, "cancel", None)
            if cancel is not None:
                cancel()


def _around(run: Run, piece: Run) -> list[Run]:
    """`run` with the offsets of `piece` (inside it) replaced by `piece`."""
    out = []
    if piece.first > run.first:
        out.append(replace(run, last=piece.first - 1))
    out.append(piece)
    if piece.last < run.last:
        out.append(replace(run, first=piece.last + 1))
    return out


def _merged(runs: Iterable[Run]) -> list[Run]:
    """Neighbouring runs of one kind joined."""
    out: list[Run] = []
    for run in runs:
        if out and out[-1].same_kind(run) and out[-1].last + 1 == run.first:
            out[-1] = replace(out[-1], last=run.last)
        else:
            out.append(run)
    return out


def _ranges(first: int, last: int, types: Sequence[int]) -> list[tuple[int, int, int]]:
    """(first, last, type) ranges of equal acknowledge type."""
    if len(types) == 1:
        return [(first, last, types[0])]
    out: list[tuple[int, int, int]] = []
    for offset, ack in zip(range(first, last + 1), types, strict=True):
        if out and out[-1][2] == ack and out[-1][1] + 1 == offset:
            out[-1] = (out[-1][0], offset, ack)
        else:
            out.append((offset, offset, ack))
    return out
