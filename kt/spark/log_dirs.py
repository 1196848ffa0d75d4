"""The `log.dirs` catalog: topic-partitions, offsets and reads straight from segment files.

One of the catalogs behind kt.spark.planning (the Fetch-API one, `kafka.bootstrap.servers`,
answers the same questions through a running broker). It looks in every log dir for
`<topic>-<partition>` directories (skipping the `-delete`, `-future` and `-stray` ones
and the embedded metadata store), takes each log's start offset from the dir's
`log-start-offset-checkpoint` when it is above the first segment, and reads through
kt.spark.segment_reader, which never writes.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from kt.spark.offsets import SourceOptionError, TopicPartition
from kt.spark.planning import DataLossError, OffsetRange
from kt.spark.segment_reader import PartitionLog
from kt.storage import names
from kt.storage.checkpoints import CheckpointError, OffsetCheckpointFile

if TYPE_CHECKING:
    import pyarrow as pa

METADATA_DIRS = frozenset({"__kt_metadata"})


class LogDirsCatalog:
    """The partitions found under `log_dirs` when it was built, and their offsets.

    Invariants: each topic-partition maps to exactly one directory; the catalog holds
    only paths and numbers, so it pickles cheaply to Spark's executors.
    """

    def __init__(self, log_dirs: Iterable[str], read_committed: bool = False) -> None:
        self.log_dirs = tuple(os.path.abspath(d) for d in log_dirs)
        self.read_committed = read_committed
        self.dirs: dict[TopicPartition, str] = {}
        self.start_checkpoints: dict[TopicPartition, int] = {}
        for log_dir in self.log_dirs:
            self._scan(log_dir)

    def _scan(self, log_dir: str) -> None:
        if not os.path.isdir(log_dir):
            raise SourceOptionError(f"log.dirs: {log_dir} is not a directory")
        checkpoint = os.path.join(log_dir, names.LOG_START_OFFSET_CHECKPOINT_FILE)
        try:
            starts = OffsetCheckpointFile(checkpoint).read() if os.path.exists(checkpoint) else {}
        except (CheckpointError, OSError):
            starts = {}  # the first segment's base offset is the fallback, as at recovery
        for entry in os.listdir(log_dir):
            path = os.path.join(log_dir, entry)
            if entry in METADATA_DIRS or entry.endswith(names.DELETE_DIR_SUFFIX):
                continue
            if entry.endswith((names.FUTURE_DIR_SUFFIX, names.STRAY_DIR_SUFFIX)):
                continue
            if not os.path.isdir(path):
                continue
            try:
                tp = names.parse_topic_partition_name(entry)
            except ValueError:
                continue
            if tp in self.dirs:
                raise SourceOptionError(
                    f"log.dirs: {entry} is in both {os.path.dirname(self.dirs[tp])} and {log_dir}"
                )
            self.dirs[tp] = path
            if tp in starts:
                self.start_checkpoints[tp] = starts[tp]

    def rescan(self) -> None:
        """Look again: topics and partitions may have been created since."""
        self.dirs.clear()
        self.start_checkpoints.clear()
        for log_dir in self.log_dirs:
            self._scan(log_dir)

    def _open(self, tp: TopicPartition) -> PartitionLog:
        return PartitionLog(self.dirs[tp], self.start_checkpoints.get(tp))

    # -- the catalog interface --------------------------------------------------------

    def topic_partitions(self) -> list[TopicPartition]:
        self.rescan()
        return sorted(self.dirs)

    def earliest(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        out = {}
        for tp in tps:
            with self._open(tp) as log:
                out[tp] = log.earliest_offset()
        return out

    def latest(
        self, tps: Iterable[TopicPartition], from_offsets: dict[TopicPartition, int] | None = None
    ) -> dict[TopicPartition, int]:
        """Each partition's end for the query's isolation: its log end offset, or its last
        stable offset at read_committed."""
        out = {}
        for tp in tps:
            with self._open(tp) as log:
                if self.read_committed:
                    out[tp] = log.end_offsets((from_offsets or {}).get(tp))[1]
                else:
                    out[tp] = log.log_end_offset()
        return out

    def offsets_for_timestamp(
        self, tps: Iterable[TopicPartition], timestamp: int
    ) -> dict[TopicPartition, int | None]:
        out = {}
        for tp in tps:
            with self._open(tp) as log:
                out[tp] = log.offset_for_timestamp(timestamp)
        return out

    def read(
        self, offsets: OffsetRange, schema: pa.Schema, fail_on_data_loss: bool
    ) -> Iterator[pa.RecordBatch]:
        """The rows of `offsets` as Arrow record batches (on an executor)."""
        tp = (offsets.topic, offsets.partition)
        if tp not in self.dirs:
            self.rescan()
        if tp not in self.dirs:
            if fail_on_data_loss:
                raise DataLossError(f"{offsets.topic}-{offsets.partition} no longer exists")
            return
        with self._open(tp) as log:
            start = offsets.start
            earliest = log.earliest_offset()
            if start < earliest:
                if fail_on_data_loss:
                    raise DataLossError(
                        f"offsets {start} to {earliest} of {offsets.topic}-{offsets.partition} "
                        "were deleted before they were read"
                    )
                start = earliest
            from kt.spark.columns import ColumnBuilder  # numpy: on executors only

            builder = ColumnBuilder(offsets.topic, offsets.partition, start, offsets.end, schema)
            for batch in log.batches(start, offsets.end, self.read_committed):
                builder.add(batch)
                if builder.full:
                    yield from builder.flush()
            yield from builder.flush()
