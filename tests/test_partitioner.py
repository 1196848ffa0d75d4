"""kt's partitioner puts keyed records where Kafka's clients put them."""

from hypothesis import given
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from kt.client.partitioner import murmur2, partition_for_key


def test_murmur2_matches_kafka_python_for_every_tail_length() -> None:
    for key in [b"", b"a", b"ab", b"abc", b"abcd", b"key-12345", bytes(range(200))]:
        # kafka-python returns the same 32 bits unsigned.
        assert murmur2(key) & 0xFFFFFFFF == kafka_python_murmur2(key), key


@given(st.binary(max_size=300))
def test_murmur2_matches_kafka_python_on_any_bytes(key: bytes) -> None:
    assert murmur2(key) & 0xFFFFFFFF == kafka_python_murmur2(key)
    assert murmur2(bytearray(key)) == murmur2(key)


def test_known_values_from_kafka_utils_test() -> None:
    # UtilsTest.testMurmur2 in Apache Kafka.
    assert murmur2(b"21") == -973932308
    assert murmur2(b"foobar") == -790332482
    assert murmur2(b"a-little-bit-long-string") == -985981536
    assert murmur2(b"a-little-bit-longer-string") == -1486304829
    assert murmur2(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8") == -58897971
    assert murmur2(b"abc") == 479470107


def test_partition_is_positive_modulo() -> None:
    assert all(0 <= partition_for_key(bytes([i]), 7) < 7 for i in range(256))


def test_one_partition_takes_every_key() -> None:
    assert {partition_for_key(bytes([i, i]), 1) for i in range(256)} == {0}


@given(st.lists(st.binary(max_size=80), max_size=50), st.integers(2, 64))
def test_remembered_hashes_give_the_same_partitions(keys: list[bytes], partitions: int) -> None:
    """Keys seen before (remembered) and after the memory is emptied (a small limit here)
    land where murmur2 puts them."""
    from kt.client import partitioner

    limit = partitioner._HASHES_MAX
    partitioner._HASHES_MAX = 7
    partitioner._HASHES.clear()
    try:
        for key in keys + keys[::-1] + [bytearray(k) for k in keys]:
            assert partition_for_key(key, partitions) == (
                (murmur2(bytes(key)) & 0x7FFFFFFF) % partitions
            )
        assert len(partitioner._HASHES) <= 7
    finally:
        partitioner._HASHES_MAX = limit
