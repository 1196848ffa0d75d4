"""Instructions per 64 KiB append, counted by valgrind's cachegrind: a measure of the
Python cost of Log.append_as_leader that the machine's load does not move.

  python benchmarks/storage_append_instructions.py [--batch-kib 64]

storage_append.py times appends against raw os.write, and on a shared VM its ratio moves
by a point or two from one run to the next; a change worth half a point cannot be told
from the noise there. Counting instructions can: with a fixed hash seed the count of a
run repeats to within a few dozen per append. The segment's descriptor is pointed at
/dev/null, so the kernel's page-cache copy (which cachegrind does not count anyway) is
left out on both sides, and the count is the user-space work per append:

  log        Log.append_as_leader (validation with CRC-32C, offsets, roll check,
             indexes, the write call), as the broker calls it;
  crc+write  CRC-32C of the same batch and one os.write of it: the floor for any log.

Before each append both sides make the buffer the producer's next batch (storage_append's
`restamp`: rising timestamps, so that the log adds its time index entries as in
production); that step is the same on both sides. Each side runs twice (200 and 2200
appends) and the difference is divided by 2000, so start-up and imports cancel out.
Needs valgrind (Debian package `valgrind`). Under valgrind, crc32c-rs takes a slower CRC
path than on the host (valgrind does not offer AVX-512), so compare logs with logs, not
with the time-based benchmark.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

SMALL, LARGE = 200, 2200


def child(side: str, batch_kib: int, n: int) -> None:
    """Run `n` appends of one side (called inside valgrind)."""
    from crc32c_rs import crc32c
    from storage_append import make_batch, restamp

    from kt.config import LogConfig
    from kt.storage.log import Log

    data = make_batch(batch_kib * 1024, 512)
    directory = tempfile.mkdtemp()
    try:
        log = Log(os.path.join(directory, "bench-0"), LogConfig())
        log.assign_epoch_start_offset(0, 0)
        records = log.active_segment.log
        os.close(records.fd)
        records.fd = os.open(os.devnull, os.O_WRONLY)  # no page cache on either side
        view, append, fd = memoryview(bytearray(data)), log.append_as_leader, records.fd
        timestamp = 1_700_000_000_000
        if side == "log":
            for _ in range(n):
                timestamp = restamp(view, timestamp)
                append(view, 0)
        else:
            for _ in range(n):
                timestamp = restamp(view, timestamp)
                crc32c(view[21:])
                os.write(fd, view)
    finally:
        shutil.rmtree(directory)


def instructions(side: str, batch_kib: int, n: int) -> int:
    """Instructions cachegrind counts for a whole child run."""
    completed = subprocess.run(
        [
            "valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
            sys.executable, __file__, "--child", side, "--batch-kib", str(batch_kib), "-n", str(n),
        ],
        env={**os.environ, "PYTHONHASHSEED": "0"},
        capture_output=True,
        text=True,
        check=True,
    )  # fmt: skip
    found = re.search(r"I\s+refs:\s+([\d,]+)", completed.stderr)
    if found is None:
        raise SystemExit(f"no instruction count in valgrind's output:\n{completed.stderr}")
    return int(found.group(1).replace(",", ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-kib", type=int, default=64)
    parser.add_argument("--child", choices=("log", "crc+write"), help=argparse.SUPPRESS)
    parser.add_argument("-n", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.batch_kib, args.n)
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian package `valgrind`)")
    counts = {}
    for side in ("log", "crc+write"):
        large = instructions(side, args.batch_kib, LARGE)
        counts[side] = (large - instructions(side, args.batch_kib, SMALL)) / (LARGE - SMALL)
    counts["log - crc+write"] = counts["log"] - counts["crc+write"]  # the log's own work
    print(f"{'side':>16} {'instructions/append':>20}")
    for side, count in counts.items():
        print(f"{side:>16} {count:>20,.0f}")


if __name__ == "__main__":
    main()
