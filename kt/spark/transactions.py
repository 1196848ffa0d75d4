"""read_committed: which transactional batches to drop, as a Kafka consumer decides.

A transactional batch (attributes bit 4) belongs to its producer's open transaction,
which ends with a control batch (bit 5) holding one marker record: key = version
int16 + type int16 (0 ABORT, 1 COMMIT). A read_committed reader keeps the batch if the
first marker of its producer after it is a COMMIT, and never returns control batches.

Two ways to learn the outcome:
- AbortedTransactions: the broker's list from a Fetch response, [(producer_id,
  first_offset)] of the aborted transactions overlapping the fetched range (from its
  transaction index), applied as Kafka's consumer applies it: a producer is aborted
  from its first offset until its ABORT marker.
- TransactionOutcomes: looking ahead in the log for the markers themselves, over any
  walk of batches in offset order (segment files, or Fetch without the list).
"""

from __future__ import annotations

import heapq
from collections import defaultdict, deque
from collections.abc import Callable, Iterator

from kt.storage.control_records import ABORT, COMMIT, parse_control_type
from kt.storage.records import Batch


def marker_type(batch: Batch) -> int:
    """ABORT or COMMIT for a control batch's marker (-1 if it holds no record)."""
    records = batch.records()
    return parse_control_type(records[0].key) if records else -1


class AbortedTransactions:
    """The aborted transactions of one Fetch response, consumed in offset order.

    Invariants: `pending` is a heap of (first_offset, producer_id) not yet reached;
    `producers` are those whose aborted transaction has started and whose ABORT
    marker has not been passed.
    """

    def __init__(self, aborted: list[tuple[int, int]]) -> None:
        self.pending = [(first, pid) for pid, first in aborted]
        heapq.heapify(self.pending)
        self.producers: set[int] = set()

    def skip(self, batch: Batch) -> bool:
        """True for a control batch or a batch of an aborted transaction (v2 batches)."""
        if batch.producer_id >= 0:
            while self.pending and self.pending[0][0] <= batch.last_offset:
                self.producers.add(heapq.heappop(self.pending)[1])
            if batch.is_control:
                if marker_type(batch) == ABORT:
                    self.producers.discard(batch.producer_id)
                return True
            if batch.is_transactional and batch.producer_id in self.producers:
                return True
        return batch.is_control


class TransactionOutcomes:
    """Whether a transactional batch was aborted, from the markers ahead of it.

    `walk(offset)` yields the batches whose last offset is >= offset, in offset order.
    Invariants: the lookahead walk only moves forward; `markers[pid]` holds the
    (offset, aborted) of the markers of `pid` it has passed and not yet consumed, in
    order. Asked about batches in offset order, a read walks the log twice at most,
    once of them headers only.
    """

    def __init__(self, walk: Callable[[int], Iterator[Batch]]) -> None:
        self.walk = walk
        self.ahead: Iterator[Batch] | None = None
        self.markers: dict[int, deque[tuple[int, bool]]] = defaultdict(deque)

    def aborted(self, batch: Batch) -> bool:
        """True if the transaction of `batch` ended in ABORT or has no marker yet."""
        if self.ahead is None:
            self.ahead = self.walk(batch.last_offset)
        pending = self.markers[batch.producer_id]
        while pending and pending[0][0] < batch.last_offset:
            pending.popleft()
        while not pending:
            nxt = next(self.ahead, None)
            if nxt is None:
                return True  # still open: not readable by a read_committed consumer
            if nxt.magic == 2 and nxt.is_control and nxt.last_offset > batch.last_offset:
                kind = marker_type(nxt)
                if kind in (ABORT, COMMIT):
                    self.markers[nxt.producer_id].append((nxt.base_offset, kind == ABORT))
        return pending[0][1]
