"""Framing: a Kafka connection carries size-prefixed frames.

    Frame => Size int32, then Size bytes (request or response header + body)

`FrameReader` is sans-io: feed it whatever the socket produced, get back the complete
frames. A size that is negative or above `socket.request.max.bytes` is refused as
soon as its 4 bytes arrive, before any of the body is buffered (Kafka's
NetworkReceive does the same with InvalidReceiveException).
"""

from __future__ import annotations

import struct

from kt.errors import ProtocolError

_SIZE = struct.Struct(">i")


class FrameReader:
    """Splits a byte stream into frames. Invariant: `_buffer` holds less than one whole
    frame after `feed` returns (a partial size prefix, or a prefix and a partial body).

    Frames that arrived whole before a bad size prefix are returned first, so that
    their requests are answered (as Kafka answers them before closing); the error is
    raised by `raise_pending()` (and by any later `feed`).
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._buffer = bytearray()
        self._error: ProtocolError | None = None

    def feed(self, data: bytes | bytearray | memoryview) -> list[memoryview]:
        """Add bytes; return every frame completed by them (the bytes after the prefix)."""
        if self._error is not None:
            raise self._error
        buf = self._buffer
        buf += data
        frames: list[memoryview] = []
        pos = 0
        end = len(buf)
        with memoryview(buf) as view:
            while end - pos >= 4:
                (size,) = _SIZE.unpack_from(view, pos)
                if size < 0 or size > self.max_bytes:
                    error = ProtocolError(
                        f"frame size {size} is outside 0..{self.max_bytes} "
                        "(socket.request.max.bytes)"
                    )
                    if not frames:
                        self._buffer = bytearray()
                        raise error
                    self._error = error
                    break
                if end - pos - 4 < size:
                    break
                # Each frame is a copy of its own, writable: the request owns it, and the
                # log patches a Produce request's batch headers in place, as Kafka does.
                frames.append(memoryview(bytearray(view[pos + 4 : pos + 4 + size])))
                pos += 4 + size
        if self._error is not None:
            self._buffer = bytearray()
        elif pos:
            del buf[:pos]
        return frames

    def raise_pending(self) -> None:
        """Raise the error that followed the frames the last `feed` returned, if any:
        call it once those frames are answered."""
        if self._error is not None:
            raise self._error

    @property
    def buffered(self) -> int:
        """Bytes held for the next, incomplete frame."""
        return len(self._buffer)
