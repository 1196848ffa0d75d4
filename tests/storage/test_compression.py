"""Codecs as the Kafka clients frame them: xerial snappy, lz4 frames, magic-0 lz4, zstd."""

from __future__ import annotations

import gzip
import struct

import lz4.frame
import pytest
import snappy
import zstandard

from kt.errors import CorruptRecordError
from kt.storage import compression
from kt.storage.compression import compress, decompress, xxh32

DATA = b"".join(b"record %06d with some repetitive payload; " % i for i in range(3000))


@pytest.mark.parametrize("codec", range(5))
def test_round_trip_every_codec(codec: int) -> None:
    assert decompress(codec, compress(codec, DATA)) == DATA
    assert decompress(codec, compress(codec, b"")) == b""


def test_codec_names_are_kafkas() -> None:
    assert [compression.codec_name(c) for c in range(5)] == [
        "none", "gzip", "snappy", "lz4", "zstd"
    ]  # fmt: skip
    with pytest.raises(CorruptRecordError):
        compression.codec_name(5)


def test_snappy_is_written_with_xerial_framing_in_32k_blocks() -> None:
    out = compress(compression.SNAPPY, DATA)
    assert out[:16] == b"\x82SNAPPY\x00" + b"\x00\x00\x00\x01" + b"\x00\x00\x00\x01"
    position, blocks = 16, []
    while position < len(out):
        (length,) = struct.unpack_from(">i", out, position)
        blocks.append(snappy.decompress(out[position + 4 : position + 4 + length]))
        position += 4 + length
    assert [len(b) for b in blocks[:-1]] == [32768] * (len(DATA) // 32768)
    assert b"".join(blocks) == DATA


def test_snappy_reads_raw_blocks_as_librdkafka_sends_them() -> None:
    assert decompress(compression.SNAPPY, snappy.compress(DATA)) == DATA


def test_lz4_frame_has_independent_blocks_and_no_content_size() -> None:
    out = compress(compression.LZ4, DATA)
    assert out[:4] == b"\x04\x22\x4d\x18"  # frame magic
    flg, bd = out[4], out[5]
    assert flg >> 6 == 0b01  # version 01
    assert flg & 0x20  # block independence
    assert not flg & 0x08  # no content size
    assert not flg & 0x04  # no content checksum
    assert bd == 0x40  # 64 KiB max block size
    assert out[6] == (xxh32(out[4:6]) >> 8) & 0xFF  # the spec's header checksum
    assert lz4.frame.decompress(out) == DATA


def test_magic_0_lz4_reproduces_and_repairs_kafka_08_header_checksum() -> None:
    old = compress(compression.LZ4, DATA, magic=0)
    assert old[6] == (xxh32(old[0:6]) >> 8) & 0xFF  # checksum over magic + FLG + BD
    assert old[6] != (xxh32(old[4:6]) >> 8) & 0xFF
    with pytest.raises(RuntimeError):
        lz4.frame.decompress(old)  # a spec-following reader refuses it
    assert decompress(compression.LZ4, old, magic=0) == DATA


def test_xxh32_reference_vectors() -> None:
    assert xxh32(b"") == 0x02CC5D05
    assert xxh32(b"a") == 0x550D7456
    assert xxh32(b"abc") == 0x32D153FF
    assert xxh32(b"Nobody inspects the spammish repetition") == 0xE2293B2F


def test_zstd_frames_without_content_size_decode() -> None:
    streamed = zstandard.ZstdCompressor().compressobj()
    frame = streamed.compress(DATA) + streamed.flush()
    assert decompress(compression.ZSTD, frame) == DATA


def test_gzip_from_any_writer() -> None:
    assert decompress(compression.GZIP, gzip.compress(DATA, compresslevel=1)) == DATA


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_garbage_raises_corrupt_record_error(codec: int) -> None:
    good = compress(codec, DATA)
    for bad in (
        b"",
        b"\x00" * 5,
        good[: len(good) // 2],
        b"\x82SNAPPY\x00" + b"\x00" * 8 + b"\x7f",
    ):
        with pytest.raises(CorruptRecordError):
            decompress(codec, bad)
    with pytest.raises(CorruptRecordError):
        decompress(7, good)
