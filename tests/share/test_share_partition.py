"""A share partition's in-flight records (KIP-932) without a broker: acquisition by
several members, acknowledgement (accept, release, reject, gaps), lock expiry, the
delivery count limit, the in-flight limit, and the start offset's movement; and, over
random sequences of those, the invariants no member may notice broken."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kt.broker.share.share_partition import (
    AcknowledgeType,
    AcquiredRecords,
    RecordState,
    ShareAcknowledgeError,
    SharePartition,
    SharePartitionConfig,
)

ACCEPT, RELEASE, REJECT, GAP, RENEW = (
    AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT,
    AcknowledgeType.GAP, AcknowledgeType.RENEW)  # fmt: skip


class Timers:
    """A scheduler the test fires by hand: (delay, callback) in scheduling order."""

    def __init__(self) -> None:
        self.pending: list[list] = []

    def schedule(self, delay_ms: int, callback):  # type: ignore[no-untyped-def]
        entry = [delay_ms, callback, False]
        self.pending.append(entry)

        class Handle:
            def cancel(self) -> None:
                entry[2] = True

        return Handle()

    def fire_all(self) -> None:
        due, self.pending = self.pending, []
        for _, callback, cancelled in due:
            if not cancelled:
                callback()


def partition(start: int = 0, **config: int) -> tuple[SharePartition, Timers]:
    timers = Timers()
    return SharePartition(start, SharePartitionConfig(**config), timers.schedule), timers


BATCHES = [(0, 9), (10, 19), (20, 29)]  # three log batches of ten records


def test_members_acquire_different_records_and_the_start_moves_past_accepted_ones() -> None:
    sp, _ = partition()
    assert sp.acquire("a", BATCHES, 10) == [AcquiredRecords(0, 9, 1)]
    assert sp.next_fetch_offset() == 10
    assert sp.acquire("b", BATCHES[1:], 10) == [AcquiredRecords(10, 19, 1)]
    assert sp.acquire("c", BATCHES[:2], 10) == []  # all held
    sp.acknowledge("b", [(10, 19, [ACCEPT])])
    assert sp.start_offset == 0  # 0-9 still acquired
    sp.acknowledge("a", [(0, 9, [ACCEPT])])
    assert (sp.start_offset, sp.runs) == (20, [])


def test_whole_log_batches_unless_record_limit() -> None:
    sp, _ = partition()
    assert sp.acquire("a", BATCHES, 5) == [AcquiredRecords(0, 9, 1)]  # the batch of 4
    other, _ = partition()
    assert other.acquire("a", BATCHES, 5, record_limit=True) == [AcquiredRecords(0, 4, 1)]
    assert other.acquire("b", BATCHES, 3, record_limit=True) == [AcquiredRecords(5, 7, 1)]


def test_a_released_record_comes_back_with_its_delivery_count() -> None:
    sp, _ = partition()
    sp.acquire("a", BATCHES[:1], 10)
    sp.acknowledge("a", [(0, 9, [ACCEPT] * 3 + [RELEASE] + [ACCEPT] * 6)])
    assert sp.start_offset == 3 and sp.next_fetch_offset() == 3
    assert sp.acquire("b", BATCHES[:1], 10) == [AcquiredRecords(3, 3, 2)]
    sp.acknowledge("b", [(3, 3, [ACCEPT])])
    assert (sp.start_offset, sp.end_offset) == (10, 9)


def test_the_delivery_count_limit_archives_a_poison_record() -> None:
    sp, timers = partition(max_delivery_count=2)
    sp.acquire("a", BATCHES[:1], 10)
    sp.acknowledge("a", [(0, 9, [RELEASE] + [ACCEPT] * 9)])
    assert sp.acquire("b", BATCHES[:1], 10) == [AcquiredRecords(0, 0, 2)]
    timers.fire_all()  # b's lock expires: delivered twice, the record is archived
    assert sp.start_offset == 10 and sp.acquire("c", BATCHES[:1], 10) == []


def test_records_delivered_often_go_out_in_ever_smaller_groups() -> None:
    """Kafka's throttling (limit 5: from the third delivery on): a hundred records whose
    locks keep expiring (one log batch) are delivered whole three times, then half the
    batch at a time, each record on its last attempt alone; a fetch taking throttled
    records takes nothing else, not even new records."""
    sp, timers = partition(max_delivery_count=5)
    log = [(0, 99), (100, 109)]
    for count in (1, 2, 3):
        assert sp.acquire("a", log[:1], 500) == [AcquiredRecords(0, 99, count)]
        timers.fire_all()
    assert sp.acquire("a", log, 500) == [AcquiredRecords(0, 49, 4)]
    assert sp.acquire("b", log, 500) == [AcquiredRecords(50, 99, 4)]
    timers.fire_all()
    assert sp.acquire("a", log, 500) == [AcquiredRecords(0, 0, 5)]  # the last attempt
    assert sp.acquire("b", log, 500) == [AcquiredRecords(1, 1, 5)]
    sp.acknowledge("a", [(0, 0, [ACCEPT])])
    sp.acknowledge("b", [(1, 1, [ACCEPT])])
    assert sp.acquire("c", log, 500) == [AcquiredRecords(2, 2, 5)]
    assert sp.end_offset == 99  # no new records went out with the throttled ones


def test_renewed_records_stay_acquired_under_a_new_lock() -> None:
    """RENEW keeps records acquired by their member, their first lock's timer cancelled
    and a new one started; per-offset types renew some and settle others; only the owner
    renews, and not when the group turned renewals off."""
    sp, timers = partition()
    sp.acquire("a", BATCHES[:1], 10)
    sp.acknowledge("a", [(0, 9, [RENEW] * 5 + [ACCEPT] * 5)])
    assert timers.pending[0][2]  # the acquisition's timer: cancelled
    assert [(r.first, r.last, r.state) for r in sp.runs] == [
        (0, 4, RecordState.ACQUIRED), (5, 9, RecordState.ACKNOWLEDGED)]  # fmt: skip
    with pytest.raises(ShareAcknowledgeError) as stranger:
        sp.acknowledge("b", [(0, 4, [RENEW])])
    assert stranger.value.message == "Member is not the owner of batch record"
    timers.fire_all()  # the renewed lock expires in its turn
    assert sp.acquire("b", BATCHES[:1], 10) == [AcquiredRecords(0, 4, 2)]
    sp.config = replace(sp.config, renew_acknowledge_enabled=False)
    with pytest.raises(ShareAcknowledgeError) as off:
        sp.acknowledge("b", [(0, 4, [RENEW])])
    assert (off.value.error, off.value.message) == (
        "INVALID_RECORD_STATE",
        "Renewing acquisition locks is not enabled for the group.",
    )


def test_an_expired_lock_hands_the_records_to_the_next_member() -> None:
    sp, timers = partition()
    sp.acquire("a", BATCHES[:1], 10)
    sp.acknowledge("a", [(0, 4, [ACCEPT])])
    timers.fire_all()
    with pytest.raises(ShareAcknowledgeError) as late:
        sp.acknowledge("a", [(5, 9, [ACCEPT])])
    assert (late.value.error, late.value.message) == (
        "INVALID_RECORD_STATE",
        "The batch cannot be acknowledged. The batch is not in the acquired state.",
    )
    assert sp.acquire("b", BATCHES[:1], 10) == [AcquiredRecords(5, 9, 2)]


@pytest.mark.parametrize(("batches", "error", "message"), [
    ([(0, 9, [ACCEPT])], "INVALID_RECORD_STATE", "Member is not the owner of batch record"),
    ([(12, 14, [ACCEPT])], "INVALID_REQUEST",
     "Batch record not found. The first offset in request is past acquired records."),
    ([(5, 14, [ACCEPT])], "INVALID_REQUEST",
     "Batch record not found. The last offset in request is past acquired records."),
    ([(0, 1, [9])], "INVALID_REQUEST", "Invalid acknowledge type: [9]"),
    ([(0, 3, [ACCEPT, ACCEPT])], "INVALID_REQUEST", "Invalid acknowledge type: [1, 1]"),
])  # fmt: skip
def test_a_refused_acknowledgement_changes_nothing(batches, error, message) -> None:
    sp, _ = partition()
    sp.acquire("a", BATCHES[:1], 10)
    before = list(sp.runs)
    with pytest.raises(ShareAcknowledgeError) as refused:
        sp.acknowledge("b" if "owner" in message else "a", [(0, 2, [ACCEPT]), *batches])
    assert (refused.value.error, refused.value.message) == (error, message)
    assert (sp.runs, sp.start_offset) == (before, 0)


def test_rejected_and_gap_offsets_are_archived_and_passed() -> None:
    sp, _ = partition()
    sp.acquire("a", BATCHES[:1], 10)
    sp.acknowledge("a", [(0, 9, [REJECT, GAP] + [ACCEPT] * 8)])
    assert (sp.start_offset, sp.runs) == (10, [])


def test_at_the_in_flight_limit_only_released_records_go_out_again() -> None:
    sp, _ = partition(max_in_flight_records=10)
    sp.acquire("a", BATCHES, 10)
    assert sp.acquire("b", BATCHES, 10) == []
    sp.release_acquired("a")  # a left
    assert sp.acquire("b", BATCHES, 10) == [AcquiredRecords(0, 9, 2)]


def test_the_start_follows_the_log_when_nothing_is_in_flight() -> None:
    sp, _ = partition(start=0)
    assert sp.acquire("a", [(100, 109)], 10) == [AcquiredRecords(100, 109, 1)]
    assert sp.start_offset == 100


# -- random sequences --------------------------------------------------------------------

MEMBERS = ("a", "b", "c")
operations = st.lists(st.one_of(
    st.tuples(st.just("acquire"), st.sampled_from(MEMBERS), st.integers(1, 12), st.booleans()),
    st.tuples(st.just("ack"), st.sampled_from(MEMBERS), st.sampled_from([ACCEPT, RELEASE, REJECT])),
    st.tuples(st.just("expire")),
    st.tuples(st.just("leave"), st.sampled_from(MEMBERS)),
), max_size=40)  # fmt: skip


def test_acknowledging_records_no_longer_in_flight_is_refused() -> None:
    """Offsets below the start offset (accepted already, so the SPSO moved past them) are
    not in flight: acknowledging them again is INVALID_RECORD_STATE, as Kafka's
    fetchSubMapForAcknowledgementBatch answers, not a silent success (a member
    acknowledging both its expired and its new acquisition of the same records)."""
    sp, timers = partition()
    sp.acquire("c", [(0, 4)], 10)
    timers.fire_all()  # the lock expires: available again
    sp.acquire("c", [(0, 4)], 10)
    sp.acknowledge("c", [(0, 4, [ACCEPT])])
    assert sp.start_offset == 5
    with pytest.raises(ShareAcknowledgeError) as again:
        sp.acknowledge("c", [(0, 4, [ACCEPT])])
    assert (again.value.error, str(again.value)) == (
        "INVALID_RECORD_STATE",
        "Batch record not found. The request batch offsets are not found in the cache.",
    )


@settings(max_examples=200, deadline=None)
@given(operations)
def test_random_operations_keep_every_invariant(ops) -> None:  # type: ignore[no-untyped-def]
    """Whatever happens, the runs stay contiguous from the SPSO; no offset is held by two
    members or acknowledged twice; an offset is delivered at most the limit times; and
    every offset below the SPSO was accepted or archived."""
    sp, timers = partition(max_delivery_count=3, max_in_flight_records=25)
    log = [(i * 5, i * 5 + 4) for i in range(12)]  # sixty records in batches of five
    held: dict[str, list[AcquiredRecords]] = {m: [] for m in MEMBERS}
    accepted: set[int] = set()
    deliveries: dict[int, int] = {}
    for op in ops:
        if op[0] == "acquire":
            _, member, count, exact = op
            start = sp.next_fetch_offset()
            got = sp.acquire(member, [b for b in log if b[1] >= start], count, record_limit=exact)
            for a in got:
                for offset in range(a.first, a.last + 1):
                    deliveries[offset] = deliveries.get(offset, 0) + 1
                    assert a.delivery_count == deliveries[offset]
                    assert deliveries[offset] <= 3
                    assert offset not in accepted
            held[member] += got
        elif op[0] == "ack" and held[op[1]]:
            a = held[op[1]].pop(0)
            try:
                sp.acknowledge(op[1], [(a.first, a.last, [op[2]])])
            except ShareAcknowledgeError as e:
                assert e.error == "INVALID_RECORD_STATE"  # its lock expired meanwhile
            else:
                if op[2] == ACCEPT:
                    span = set(range(a.first, a.last + 1))
                    assert not span & accepted
                    accepted |= span
        elif op[0] == "expire":
            timers.fire_all()
        elif op[0] == "leave":
            sp.release_acquired(op[1])
            held[op[1]].clear()
        check_invariants(sp)


def check_invariants(sp: SharePartition) -> None:
    if sp.runs:
        assert sp.runs[0].first == sp.start_offset
        assert sp.runs[0].state not in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
        assert sp.runs[-1].last == sp.end_offset
        for before, after in zip(sp.runs, sp.runs[1:], strict=False):
            assert before.last + 1 == after.first
    else:
        assert sp.end_offset == sp.start_offset - 1
    for run in sp.runs:
        assert (run.state == RecordState.ACQUIRED) == bool(run.member_id)


def test_a_partition_comes_back_from_its_durable_state() -> None:
    sp, _ = partition()
    sp.acquire("a", BATCHES[:2], 20)
    sp.acknowledge("a", [(0, 4, [ACCEPT]), (5, 9, [RELEASE]), (12, 12, [REJECT])])
    stored = sp.state_batches()  # 10-11 and 13-19 still acquired: not stored
    assert stored == [(5, 9, RecordState.AVAILABLE, 1), (12, 12, RecordState.ARCHIVED, 1)]
    timers = Timers()
    again = SharePartition.from_state(sp.start_offset, stored, SharePartitionConfig(),
                                      timers.schedule)  # fmt: skip
    assert (again.start_offset, again.end_offset) == (5, 12)
    assert again.acquire("b", BATCHES[:2], 20) == [
        AcquiredRecords(5, 9, 2),
        AcquiredRecords(10, 11, 1),
        AcquiredRecords(13, 19, 1),
    ]
