"""FrameReader: size-prefixed frames out of an arbitrary byte stream."""

from __future__ import annotations

import pytest

from kt.errors import ProtocolError
from kt.protocol import FrameReader


def test_frames_split_across_feeds_and_several_per_feed():
    reader = FrameReader(100)
    stream = b"\x00\x00\x00\x03abc" + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x02xy"
    assert reader.feed(stream[:2]) == []
    assert reader.feed(stream[2:6]) == []
    assert reader.buffered == 6
    frames = reader.feed(stream[6:])
    assert [bytes(f) for f in frames] == [b"abc", b"", b"xy"]
    assert reader.buffered == 0


def test_oversized_frame_is_refused_from_its_prefix_alone():
    reader = FrameReader(1024)
    with pytest.raises(ProtocolError, match="socket.request.max.bytes"):
        reader.feed(b"\x00\x00\x04\x01")  # 1025: no body byte has arrived
    assert reader.buffered == 0


def test_negative_frame_size_is_refused():
    with pytest.raises(ProtocolError):
        FrameReader(1024).feed(b"\xff\xff\xff\xff")


def test_frame_at_the_limit_is_accepted():
    assert [bytes(f) for f in FrameReader(3).feed(b"\x00\x00\x00\x03abc")] == [b"abc"]


def test_whole_frames_before_a_bad_prefix_come_first_then_the_error():
    reader = FrameReader(max_bytes=100)
    frames = reader.feed(b"\x00\x00\x00\x02ok" + b"\xff\xff\xff\xff")
    assert [bytes(f) for f in frames] == [b"ok"]
    with pytest.raises(ProtocolError, match="frame size -1"):
        reader.raise_pending()
    with pytest.raises(ProtocolError):
        reader.feed(b"\x00\x00\x00\x01x")
