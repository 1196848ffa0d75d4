"""read_committed filters: the broker's aborted-transactions list, and markers found ahead."""

from __future__ import annotations

from kt.spark.transactions import AbortedTransactions, TransactionOutcomes, marker_type
from kt.storage.control_records import ABORT, COMMIT, EndTransactionMarker
from kt.storage.control_records import build_end_txn_marker_batch as marker
from kt.storage.record_batch import Record, build_batch
from kt.storage.records import iter_batches

TS = 1_700_000_000_000


def data(base: int, count: int, pid: int = -1) -> bytes:
    records = [Record(None, TS + base + i, None, b"v%d" % (base + i)) for i in range(count)]
    if pid < 0:
        return build_batch(records, base_offset=base)
    return build_batch(records, base_offset=base, producer_id=pid, producer_epoch=0,
                       base_sequence=0, is_transactional=True)  # fmt: skip


def end(base: int, pid: int, kind: int) -> bytes:
    return marker(EndTransactionMarker(kind, 0), producer_id=pid, producer_epoch=0,
                  timestamp=TS, base_offset=base)  # fmt: skip


# offsets: 0-1 pid 7 (aborted), 2-3 pid 8 (committed), 4 no transaction, 5 ABORT of 7,
# 6 COMMIT of 8, 7-8 pid 7 again (committed at 9)
LOG = b"".join([data(0, 2, pid=7), data(2, 2, pid=8), data(4, 1), end(5, 7, ABORT),
                end(6, 8, COMMIT), data(7, 2, pid=7), end(9, 7, COMMIT)])  # fmt: skip


def kept(keep) -> list[int]:
    return [b.base_offset for b in iter_batches(LOG) if keep(b)]


def test_marker_batches_say_abort_or_commit():
    batches = list(iter_batches(LOG))
    assert [marker_type(b) for b in batches if b.is_control] == [ABORT, COMMIT, COMMIT]


def test_aborted_list_drops_the_aborted_transaction_and_every_marker():
    """As Kafka's consumer: pid 7 is aborted from offset 0 to its ABORT marker only."""
    aborted = AbortedTransactions([(7, 0)])
    assert kept(lambda b: not aborted.skip(b)) == [2, 4, 7]


def test_an_empty_aborted_list_keeps_every_data_batch():
    aborted = AbortedTransactions([])
    assert kept(lambda b: not aborted.skip(b)) == [0, 2, 4, 7]


def test_markers_found_ahead_decide_the_same():
    def walk(offset: int):
        return (b for b in iter_batches(LOG) if b.last_offset >= offset)

    outcomes = TransactionOutcomes(walk)

    def keep(b) -> bool:
        return not b.is_control and not (b.is_transactional and outcomes.aborted(b))

    assert kept(keep) == [2, 4, 7]


def test_a_transaction_without_its_marker_is_not_read():
    log = data(0, 1, pid=3) + data(1, 1)
    outcomes = TransactionOutcomes(lambda offset: iter_batches(log))
    assert outcomes.aborted(next(iter_batches(log))) is True
