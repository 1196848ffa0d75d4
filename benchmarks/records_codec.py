"""Record batch encode/decode throughput: kt beside kafka-python, measured in one run.

python benchmarks/records_codec.py
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kt.storage import compression  # noqa: E402
from kt.storage.record_batch import Record, build_batch  # noqa: E402
from kt.storage.records import iter_batches  # noqa: E402

warnings.filterwarnings("ignore", category=DeprecationWarning)
from kafka.record.default_records import DefaultRecordBatchBuilder  # noqa: E402
from kafka.record.memory_records import MemoryRecords  # noqa: E402

T0 = 1_700_000_000_000
N_RECORDS = 1000
REPEAT = 20


def _best(fn, repeat: int = REPEAT) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    records = [Record(None, T0 + i, b"key-%06d" % i, b"v" * 100, [("h", b"1")])
               for i in range(N_RECORDS)]  # fmt: skip
    print(f"{N_RECORDS} records of ~110 bytes per batch; best of {REPEAT}; records/s; checked "
          "first: each decoder reads each encoder's batches as the same records")  # fmt: skip
    print(f"{'codec':8} {'kt encode':>12} {'kp encode':>12} {'ratio':>6} "
          f"{'kt decode':>12} {'kp decode':>12} {'ratio':>6}")  # fmt: skip
    for codec in range(5):

        def kt_encode(codec=codec) -> bytes:
            return build_batch(records, compression_type=codec)

        def kp_encode(codec=codec) -> bytes:
            b = DefaultRecordBatchBuilder(2, codec, 0, -1, -1, -1, 1 << 24)
            for i, r in enumerate(records):
                b.append(i, r.timestamp, r.key, r.value, list(r.headers))
            return bytes(b.build())

        data = kt_encode()

        def kt_decode(data=data) -> list[tuple]:
            return [
                (r.offset, r.timestamp, r.key, r.value, list(r.headers))
                for batch in iter_batches(data)
                for r in batch.records()
            ]

        def kp_decode(data=data) -> list[tuple]:
            mr, out = MemoryRecords(data), []
            while mr.has_next():
                out += [(r.offset, r.timestamp, r.key, r.value, list(r.headers))
                        for r in mr.next_batch()]  # fmt: skip
            return out

        # Before any ratio: both sides do the same work. Each decoder reads each encoder's
        # batch as the same records; uncompressed, the two encoders write the same bytes
        expected = [(i, r.timestamp, r.key, r.value, list(r.headers))
                    for i, r in enumerate(records)]  # fmt: skip
        theirs = kp_encode()
        for batch in (data, theirs):
            assert kt_decode(batch) == kp_decode(batch) == expected, codec
        if codec == 0:  # but the partitionLeaderEpoch (bytes 12-15, the broker's to set,
            # outside the CRC): kt writes -1 as the Java producer does, kafka-python 0
            assert data[:12] + data[16:] == theirs[:12] + theirs[16:]

        te, pe = _best(kt_encode), _best(kp_encode)
        td, pd = _best(kt_decode), _best(kp_decode)
        name = compression.CODEC_NAMES[codec]
        print(
            f"{name:8} {N_RECORDS / te:12,.0f} {N_RECORDS / pe:12,.0f} {pe / te:6.2f} "
            f"{N_RECORDS / td:12,.0f} {N_RECORDS / pd:12,.0f} {pd / td:6.2f}"
        )


if __name__ == "__main__":
    main()
