"""What a read_committed read needs from the transaction indexes (the aborted-transaction
half of Kafka's UnifiedLog/LocalLog read path): what `Log` inherits."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kt.storage.log_segment import FetchDataInfo, LogSegment
from kt.storage.transaction_index import AbortedTxn


class LogTransactionReads:
    """The aborted-transaction lookups of `Log`, which it inherits."""

    if TYPE_CHECKING:
        segments: list[LogSegment]
        log_end_offset: int

        def _floor_index(self, offset: int) -> int: ...

    def collect_aborted_transactions(self, start_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """The aborted transactions overlapping [start_offset, upper_bound), from the
        transaction indexes of the segment holding `start_offset` on, until an entry's LSO
        reaches the bound (UnifiedLog.collectAbortedTransactions)."""
        found: list[AbortedTxn] = []
        for segment in self.segments[max(0, self._floor_index(start_offset)) :]:
            txns, complete = segment.txn_index.collect_aborted_txns(start_offset, upper_bound)
            found.extend(txns)
            if complete:
                break
        return found

    def aborted_transactions_for(self, info: FetchDataInfo) -> list[AbortedTxn]:
        """What a read_committed read must list: the aborted transactions overlapping the
        offsets it returned, up to the first offset after its bytes
        (LocalLog.addAbortedTransactions)."""
        records = info.records
        if not len(records):
            return []
        base = info.fetch_offset_metadata.segment_base_offset
        i = self._floor_index(base)
        if not any(s.txn_index.entries for s in self.segments[i:]):
            return []  # no aborted transaction from here on: the common case
        segment = self.segments[i]
        end = records.position + records.size
        if end + 8 <= segment.size:
            upper = int.from_bytes(segment.log.read(end, 8), "big")  # the next batch's offset
        elif i + 1 < len(self.segments):
            upper = self.segments[i + 1].base_offset
        else:
            upper = self.log_end_offset
        return self.collect_aborted_transactions(info.fetch_offset_metadata.message_offset, upper)
