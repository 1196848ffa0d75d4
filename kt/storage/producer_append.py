"""The producers' batches of one append checked against their state before it is written
(Kafka's UnifiedLog.analyzeAndValidateProducerState): epoch, sequence and transaction of
each, and a client's batch already written answered as the duplicate it is."""

from __future__ import annotations

from kt.storage.batch_header import CONTROL_MASK
from kt.storage.log_validator import LogAppendInfo
from kt.storage.producer_state import ORIGIN_CLIENT, ProducerAppendInfo, ProducerStateManager


def analyze_and_validate_producer_state(
    producer_state: ProducerStateManager, view: memoryview, entries: list,
    producer_batches: list, origin: str, log_start_offset: int,
) -> dict[int, ProducerAppendInfo] | LogAppendInfo:  # fmt: skip
    """Each producer's batches checked against its state (epoch, sequence, transaction):
    the updates to merge once written, or the LogAppendInfo of a duplicate batch."""
    producers: dict[int, ProducerAppendInfo] = {}
    for i, h in producer_batches:
        position, size, last_offset, _ = entries[i]
        pid = h[9]
        if pid >= 0 and origin == ORIGIN_CLIENT:
            duplicate = _find_duplicate(producer_state, h)
            if duplicate is not None:
                return LogAppendInfo(
                    duplicate.first_offset,
                    duplicate.last_offset,
                    log_append_time=duplicate.timestamp,
                    log_start_offset=log_start_offset,
                    duplicate=True,
                )
        append_info = producers.get(pid) or producer_state.prepare_update(pid, origin)
        producers[pid] = append_info
        control = view[position : position + size] if h[5] & CONTROL_MASK else None
        append_info.append(h, control)
    return producers


def _find_duplicate(producer_state: ProducerStateManager, h: tuple):  # type: ignore[no-untyped-def]
    entry = producer_state.last_entry(h[9])
    if entry is None or h[11] < 0:
        return None
    last_seq = (h[11] + h[6]) & 0x7FFFFFFF
    return entry.find_duplicate_batch(h[10], h[11], last_seq)
