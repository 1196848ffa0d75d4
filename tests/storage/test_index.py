"""Offset and time index files: literal bytes, lookups, truncation, trimming."""

from __future__ import annotations

import gc
import os

import pytest

from kt.storage.abstract_index import CorruptIndexError
from kt.storage.offset_index import OffsetIndex
from kt.storage.time_index import TimeIndex


def read(path) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def test_offset_index_is_preallocated_and_trimmed_to_entries_on_close(tmp_path):
    path = tmp_path / "00000000000000000100.index"
    index = OffsetIndex(str(path), base_offset=100, max_index_size=100)
    assert os.path.getsize(path) == 96  # rounded down to whole 8-byte entries
    index.append(105, 0)
    index.append(130, 4200)
    index.close()
    assert read(path) == (
        b"\x00\x00\x00\x05"
        b"\x00\x00\x00\x00"  # relative offset 5, position 0
        b"\x00\x00\x00\x1e"
        b"\x00\x00\x10\x68"  # relative offset 30, position 4200
    )


def test_offset_index_lookup_finds_largest_entry_at_or_below(tmp_path):
    index = OffsetIndex(str(tmp_path / "x.index"), base_offset=1000, max_index_size=8000)
    for i in range(1, 500):
        index.append(1000 + 10 * i, 100 * i)
    assert index.lookup(999) == (1000, 0)  # below every entry: (base, 0)
    assert index.lookup(1010) == (1010, 100)
    assert index.lookup(1019) == (1010, 100)
    assert index.lookup(5999) == (5990, 49900)
    assert index.lookup(10**9) == (5990, 49900)
    with pytest.raises(ValueError):
        index.append(5990, 60000)  # offsets must increase


def test_offset_index_truncate_removes_entries_at_and_after(tmp_path):
    index = OffsetIndex(str(tmp_path / "x.index"), base_offset=0, max_index_size=800)
    for offset in (10, 20, 30):
        index.append(offset, offset * 10)
    index.truncate_to(20)
    assert index.entries == 1 and index.last_offset == 10
    index.truncate_to(15)
    assert index.entries == 1
    index.truncate_to(0)
    assert index.entries == 0 and index.last_offset == 0


def test_reopened_index_holds_its_entries_and_resizes(tmp_path):
    path = str(tmp_path / "x.index")
    index = OffsetIndex(path, base_offset=0, max_index_size=800)
    index.append(3, 99)
    index.close()
    reopened = OffsetIndex(path, base_offset=0, max_index_size=800)
    assert reopened.entries == 1 and reopened.is_full()  # trimmed: no free slot
    reopened.resize(800)
    assert reopened.max_entries == 100 and reopened.lookup(5) == (3, 99)
    reopened.sanity_check()


def test_zeroed_offset_index_fails_the_sanity_check(tmp_path):
    path = tmp_path / "x.index"
    path.write_bytes(bytes(80))
    with pytest.raises(CorruptIndexError):
        OffsetIndex(str(path), base_offset=0).sanity_check()
    path.write_bytes(bytes(12))  # not whole entries
    with pytest.raises(CorruptIndexError):
        OffsetIndex(str(path), base_offset=0).sanity_check()


def test_time_index_literal_bytes_and_monotonic_entries(tmp_path):
    path = tmp_path / "00000000000000000000.timeindex"
    index = TimeIndex(str(path), base_offset=0, max_index_size=120)
    index.maybe_append(1_700_000_000_000, 4)
    index.maybe_append(1_700_000_000_000, 9)  # same timestamp: not appended
    index.maybe_append(1_700_000_000_500, 12)
    with pytest.raises(ValueError):
        index.maybe_append(1_600_000_000_000, 20)  # timestamps never go back
    index.close()
    assert read(path) == (
        b"\x00\x00\x01\x8b\xcf\xe5\x68\x00"
        b"\x00\x00\x00\x04"
        b"\x00\x00\x01\x8b\xcf\xe5\x69\xf4"
        b"\x00\x00\x00\x0c"
    )


def test_time_index_lookup_and_reserved_last_slot(tmp_path):
    index = TimeIndex(str(tmp_path / "x.timeindex"), base_offset=50, max_index_size=36)
    assert index.max_entries == 3
    index.maybe_append(100, 51)
    index.maybe_append(200, 60)
    assert index.is_full()  # the third slot is kept for the roll/close entry
    index.maybe_append(300, 70, skip_full_check=True)
    assert index.lookup(99) == (-1, 50)
    assert index.lookup(250) == (200, 60)
    assert index.lookup(10**15) == (300, 70)
    index.truncate_to(60)
    assert index.entries == 1 and index.last_entry == (100, 51)


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_an_index_costs_one_descriptor_through_resizes(tmp_path):
    """The file is open only while it is sized or mapped (Kafka's AbstractIndex opens it
    for each resize): what stays is the map's own descriptor, one per index. With a
    descriptor of the index's own beside it, a segment took five, and 500 topics of 4
    partitions ran a broker out of its 1024."""
    gc.collect()  # files an earlier test left to the collector must not close mid-count
    before = open_descriptors()
    indexes = [OffsetIndex(str(tmp_path / f"{i:020d}.index"), i, 4096) for i in range(10)]
    assert open_descriptors() - before == 10
    for index in indexes:
        index.append(index.base_offset + 1, 0)
        index.trim_to_valid_size()
        index.resize(4096)
    assert open_descriptors() - before == 10
    for index in indexes:
        index.close()
    assert open_descriptors() == before
