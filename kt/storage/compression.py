"""Record compression exactly as the Kafka clients write it (clients/.../common/compress/).

Codec ids, the low 3 bits of a batch's attributes: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.
Only the bytes after recordsCount (v2) or a legacy wrapper's value are compressed.

gzip    RFC 1952 members (Java's GZIPOutputStream). Readers accept any gzip stream.
snappy  The Java client, kafka-python and aiokafka write xerial framing:
          magic 0x82 "SNAPPY" 0x00 | version int32 (1) | compatible int32 (1)
          then blocks of: compressed length int32 | raw snappy block (32 KiB input each)
        librdkafka writes one raw snappy block and reads both: readers detect the magic.
lz4     The LZ4 frame format with independent blocks, no content size, no content
        checksum (KafkaLZ4BlockOutputStream, 64 KiB blocks). Magic-0 batches carry
        Kafka 0.8/0.9's broken header checksum: the HC byte hashes magic + FLG + BD
        instead of FLG + BD only; readers of magic 0 repair it, writers reproduce it.
zstd    One zstd frame (magic 2 only); frames may omit the content size, so decoding
        streams across frames.
"""

from __future__ import annotations

import gzip
import struct
import zlib

import lz4.frame
import snappy
import zstandard

from kt.errors import CorruptRecordError

NONE = 0
GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4

CODEC_NAMES: dict[int, str] = {
    NONE: "none",
    GZIP: "gzip",
    SNAPPY: "snappy",
    LZ4: "lz4",
    ZSTD: "zstd",
}
CODECS_BY_NAME: dict[str, int] = {name: codec for codec, name in CODEC_NAMES.items()}

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = struct.Struct(">8sii")  # magic, version, compatible version
XERIAL_BLOCK_SIZE = 32 * 1024  # xerial's default, which the Java client keeps
_XERIAL_VERSION = 1
_XERIAL_COMPATIBLE = 1
_I32 = struct.Struct(">i")

LZ4_FRAME_MAGIC = b"\x04\x22\x4d\x18"
_LZ4_CONTENT_SIZE_FLAG = 0x08

_ZSTD_COMPRESSOR = zstandard.ZstdCompressor(level=3)
_ZSTD_DECOMPRESSOR = zstandard.ZstdDecompressor()

# Everything a codec library raises on bad input; decompress() turns them into
# CorruptRecordError so that callers handle exactly one exception.
_DECODE_ERRORS: tuple[type[BaseException], ...] = (
    zlib.error,
    EOFError,
    OSError,  # gzip.BadGzipFile
    ValueError,
    RuntimeError,  # lz4.frame
    struct.error,
    IndexError,
    snappy.UncompressError,
    zstandard.ZstdError,
)


def codec_name(codec: int) -> str:
    """Kafka's lower-case CompressionType name, as DumpLogSegments prints it."""
    name = CODEC_NAMES.get(codec)
    if name is None:
        raise CorruptRecordError(f"unknown compression codec id {codec}")
    return name


def compress(
    codec: int, data: bytes | bytearray | memoryview, magic: int = 2, level: int | None = None
) -> bytes:
    """Compress `data` the way Kafka's Java producer does for `codec` and `magic`, at the
    codec's `level` (KIP-390: compression.gzip.level, .lz4.level, .zstd.level) or its
    default."""
    if codec == NONE:
        return bytes(data)
    if codec == GZIP:  # -1: Deflater.DEFAULT_COMPRESSION, zlib's 6
        gzip_level = 6 if level is None or level == -1 else level
        return gzip.compress(bytes(data), compresslevel=gzip_level, mtime=0)
    if codec == SNAPPY:
        return xerial_snappy_encode(data)
    if codec == LZ4:
        framed = lz4.frame.compress(
            bytes(data),
            # Kafka's levels run 1-17 (LZ4HC above 2, 17 its maximum); lz4's top is 16.
            compression_level=0 if level is None else min(level, lz4.frame.COMPRESSIONLEVEL_MAX),
            block_size=lz4.frame.BLOCKSIZE_MAX64KB,
            block_linked=False,
            content_checksum=False,
            store_size=False,
        )
        return _break_lz4_header_checksum(framed) if magic == 0 else framed
    if codec == ZSTD:
        if magic < 2:
            raise ValueError("zstd needs magic 2")
        if level is None or level == 3:
            return _ZSTD_COMPRESSOR.compress(bytes(data))
        return zstandard.ZstdCompressor(level=level).compress(bytes(data))
    raise ValueError(f"unknown compression codec id {codec}")


def decompress(codec: int, data: bytes | bytearray | memoryview, magic: int = 2) -> bytes:
    """Inflate one batch's records; any malformed input raises CorruptRecordError."""
    if codec != NONE and len(data) == 0:
        raise CorruptRecordError(f"empty {CODEC_NAMES.get(codec, codec)} records")
    try:
        if codec == GZIP:
            return gzip.decompress(data)
        if codec == SNAPPY:
            return snappy_decode(data)
        if codec == LZ4:
            if magic == 0:
                data = _repair_lz4_header_checksum(data)
            return lz4.frame.decompress(data)
        if codec == ZSTD:
            return _zstd_decode(bytes(data))
        if codec == NONE:
            return bytes(data)
    except CorruptRecordError:
        raise
    except _DECODE_ERRORS as e:
        raise CorruptRecordError(f"cannot decompress {CODEC_NAMES[codec]} records: {e}") from e
    raise CorruptRecordError(f"unknown compression codec id {codec}")


def _zstd_decode(data: bytes) -> bytes:
    """Every frame in `data`; a frame cut short is corrupt (stream readers hide that)."""
    out = []
    while data:
        frame = _ZSTD_DECOMPRESSOR.decompressobj()
        out.append(frame.decompress(data))
        if not frame.eof:
            raise CorruptRecordError("zstd records end inside a frame")
        data = frame.unused_data
    return b"".join(out)


def xerial_snappy_encode(data: bytes | bytearray | memoryview) -> bytes:
    """Snappy in xerial framing, 32 KiB of input per block (what Java clients send)."""
    view = memoryview(data)
    out = [XERIAL_HEADER.pack(XERIAL_MAGIC, _XERIAL_VERSION, _XERIAL_COMPATIBLE)]
    for start in range(0, len(view), XERIAL_BLOCK_SIZE):
        block = snappy.compress(bytes(view[start : start + XERIAL_BLOCK_SIZE]))
        out.append(_I32.pack(len(block)))
        out.append(block)
    return b"".join(out)


def snappy_decode(data: bytes | bytearray | memoryview) -> bytes:
    """Raw snappy (librdkafka) or xerial-framed snappy (Java, kafka-python, aiokafka)."""
    view = memoryview(data)
    if len(view) < XERIAL_HEADER.size or bytes(view[:8]) != XERIAL_MAGIC:
        return snappy.decompress(bytes(view))
    out = []
    position = XERIAL_HEADER.size
    end = len(view)
    while position < end:
        if end - position < 4:
            raise CorruptRecordError("truncated xerial snappy block length")
        (length,) = _I32.unpack_from(view, position)
        position += 4
        if length < 0 or position + length > end:
            raise CorruptRecordError(f"xerial snappy block of {length} bytes overruns the data")
        out.append(snappy.decompress(bytes(view[position : position + length])))
        position += length
    return b"".join(out)


def _lz4_header_size(frame: bytes | bytearray | memoryview) -> int:
    if len(frame) < 7 or bytes(frame[:4]) != LZ4_FRAME_MAGIC:
        raise CorruptRecordError("lz4 data does not start with the frame magic")
    return 15 if frame[4] & _LZ4_CONTENT_SIZE_FLAG else 7


def _break_lz4_header_checksum(frame: bytes) -> bytes:
    """Kafka 0.8/0.9 computed HC over magic + descriptor; magic-0 readers expect that."""
    hc_at = _lz4_header_size(frame) - 1
    hc = (xxh32(frame[:hc_at]) >> 8) & 0xFF
    return frame[:hc_at] + bytes((hc,)) + frame[hc_at + 1 :]


def _repair_lz4_header_checksum(frame: bytes | bytearray | memoryview) -> bytes:
    """Rewrite HC as the frame spec defines it (descriptor only) so lz4 accepts it."""
    frame = bytes(frame)
    hc_at = _lz4_header_size(frame) - 1
    hc = (xxh32(frame[4:hc_at]) >> 8) & 0xFF
    return frame[:hc_at] + bytes((hc,)) + frame[hc_at + 1 :]


_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF
_U32_LE = struct.Struct("<I")
_U32X4_LE = struct.Struct("<4I")


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 (the LZ4 frame's header checksum). Only ever hashes a few header bytes."""
    n = len(data)
    i = 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed & _M32, (seed - _P1) & _M32]
        while i + 16 <= n:
            lanes = _U32X4_LE.unpack_from(data, i)
            v = [(_rotl((v[k] + lanes[k] * _P2) & _M32, 13) * _P1) & _M32 for k in range(4)]
            i += 16
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while i + 4 <= n:
        h = (_rotl((h + _U32_LE.unpack_from(data, i)[0] * _P3) & _M32, 17) * _P4) & _M32
        i += 4
    while i < n:
        h = (_rotl((h + data[i] * _P5) & _M32, 11) * _P1) & _M32
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h
