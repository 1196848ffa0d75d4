"""What the log cleaner knows of transactions as it walks a log in offset order (Kafka's
CleanedTransactionMetadata): which batches belong to aborted transactions, and so can
go, and which COMMIT/ABORT markers no longer guard any batch, and so can go once their
delete horizon has passed. An ABORT marker whose transaction still had batches in this
pass stays, and its entry is written to the cleaned segment's transaction index; once a
pass finds none of its batches, the entry is not carried over."""

from __future__ import annotations

import heapq
import struct
from typing import Any

from kt.errors import CorruptRecordError
from kt.storage.control_records import ABORT, COMMIT, parse_control_type
from kt.storage.transaction_index import AbortedTxn, TransactionIndex


class CleanedTransactionMetadata:
    """Invariant: `aborted` holds the aborted transactions not yet reached, ordered by
    first offset; `ongoing_aborted` those reached whose ABORT marker is not, with the
    last offset of a batch of theirs seen in this pass (or None)."""

    def __init__(self) -> None:
        self.ongoing_committed: set[int] = set()
        self.ongoing_aborted: dict[int, tuple[AbortedTxn, int | None]] = {}
        self.aborted: list[tuple[int, int, AbortedTxn]] = []
        self._order = 0
        self.cleaned_index: TransactionIndex | None = None

    def add_aborted_transactions(self, txns: list[AbortedTxn]) -> None:
        for txn in txns:
            self._order += 1
            heapq.heappush(self.aborted, (txn.first_offset, self._order, txn))

    def _consume_aborted_up_to(self, offset: int) -> None:
        while self.aborted and self.aborted[0][0] <= offset:
            txn = heapq.heappop(self.aborted)[2]
            self.ongoing_aborted.setdefault(txn.producer_id, (txn, None))

    def on_batch_read(self, batch: Any) -> bool:
        """A data batch: True if it belongs to an aborted transaction (it can go)."""
        self._consume_aborted_up_to(batch.last_offset)
        if not getattr(batch, "is_transactional", False):
            return False
        ongoing = self.ongoing_aborted.get(batch.producer_id)
        if ongoing is not None:
            self.ongoing_aborted[batch.producer_id] = (ongoing[0], batch.last_offset)
            return True
        self.ongoing_committed.add(batch.producer_id)
        return False

    def on_control_batch_read(self, batch: Any) -> bool:
        """A control batch: True if no batch of its transaction was seen in this pass
        (the marker can go once its delete horizon passes)."""
        self._consume_aborted_up_to(batch.last_offset)
        records = batch.records()
        if not records:
            return True  # emptied by an earlier pass
        try:
            control_type = parse_control_type(records[0].key)
        except (CorruptRecordError, struct.error):
            return False
        if control_type == ABORT:
            txn, last_seen = self.ongoing_aborted.pop(batch.producer_id, (None, None))
            if txn is not None and last_seen is not None:
                if self.cleaned_index is not None:
                    self.cleaned_index.append(txn)
                return False
            return True
        if control_type == COMMIT:
            if batch.producer_id in self.ongoing_committed:
                self.ongoing_committed.discard(batch.producer_id)
                return False
            return True
        return False
