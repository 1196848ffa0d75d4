"""Moving a replica between the log dirs of one broker (AlterReplicaLogDirs), as Kafka's
ReplicaAlterLogDirsManager does it.

A move creates the *future* log, `<dest>/<topic>-<partition>.<uuid>-future`, starting at
the current log's start offset, and copies batches into it from the current log, as a
follower copies from its leader (offsets, epochs and producer state kept), at most
`replica.alter.log.dirs.io.max.bytes.per.second`. Once it has caught up, in one step of
the event loop (no append can come between): the future log is flushed and closed, its
directory renamed to `<dest>/<topic>-<partition>`, opened again, and put in the place of
the current log, which is then deleted. Until then the current log serves everything;
DescribeLogDirs shows the future replica with `isFuture` and its lag.

A broker that stops during a move deletes the future log when it starts again (the
current log is whole), and the move must be asked for again.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kt.broker.replication.partition import TopicPartition
from kt.broker.replication.replication_quota import ReplicationQuotaManager
from kt.errors import KafkaError, KafkaStorageError
from kt.storage import names
from kt.storage.log import Log

if TYPE_CHECKING:
    from kt.broker.replication.replica_manager import ReplicaManager

log = logging.getLogger(__name__)

CHUNK_BYTES = 1 << 20  # what one step copies at most


@dataclass
class FutureReplica:
    log: Log
    destination: str  # the log dir it moves to


class ReplicaAlterLogDirsManager:
    """The moves of one broker, copied by one task."""

    def __init__(self, replica_manager: ReplicaManager, log_manager: Any) -> None:
        self.replica_manager = replica_manager
        self.log_manager = log_manager
        self.quota = ReplicationQuotaManager()  # replica.alter.log.dirs.io.max.bytes.per.second
        self.futures: dict[TopicPartition, FutureReplica] = {}
        self._task: asyncio.Task | None = None
        self._wakeup = asyncio.Event()

    # -- requests ------------------------------------------------------------------------

    def alter_log_dir(self, tp: TopicPartition, destination: str) -> KafkaError | None:
        """Start moving `tp`'s replica to `destination` (an absolute log dir); None when
        started or already there, else Kafka's error."""
        destination = os.path.abspath(destination)
        if destination not in self.log_manager.log_dirs:
            return KafkaError(
                "LOG_DIR_NOT_FOUND", f"Log dir {destination} is not found in the config."
            )
        if destination not in self.log_manager.live_log_dirs:
            return KafkaError("KAFKA_STORAGE_ERROR", f"Log directory {destination} is offline")
        partition = self.replica_manager.partitions.get(tp)
        if partition is None:
            # Its log is created there when the replica comes (maybeUpdatePreferredLogDir).
            self.log_manager.preferred_dirs[(tp.topic, tp.partition)] = destination
            return KafkaError("REPLICA_NOT_AVAILABLE", f"Replica of {tp} is not on this broker")
        current = self.log_manager.dir_of(tp.topic, tp.partition)
        moving = self.futures.get(tp)
        if moving is not None and moving.destination != destination:
            self.abort(tp)
            moving = None
        if current == destination:
            if moving is not None:
                self.abort(tp)
            return None
        if moving is None:
            source = partition.log
            future_dir = os.path.join(
                destination,
                f"{tp.topic}-{tp.partition}.{uuid.uuid4().hex}{names.FUTURE_DIR_SUFFIX}",
            )
            future = Log(future_dir, source.config, clock=source.clock,
                         failure_channel=source.failure_channel)  # fmt: skip
            future.truncate_fully_and_start_at(source.log_start_offset)
            self.futures[tp] = FutureReplica(future, destination)
            log.info("Started moving %s from %s to %s", tp, current, destination)
            self._ensure_running()
        return None

    def abort(self, tp: TopicPartition) -> None:
        """Drop a move (its partition stopped here, or it goes elsewhere now)."""
        moving = self.futures.pop(tp, None)
        if moving is not None:
            moving.log.delete()

    def future_lag(self, tp: TopicPartition) -> tuple[FutureReplica, int] | None:
        """The future replica of `tp` and how far it is behind, if it is moving."""
        moving = self.futures.get(tp)
        partition = self.replica_manager.partitions.get(tp)
        if moving is None or partition is None:
            return None
        return moving, max(0, partition.log.log_end_offset - moving.log.log_end_offset)

    # -- copying -------------------------------------------------------------------------

    def _ensure_running(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name="ReplicaAlterLogDirsThread"
            )
        self._wakeup.set()

    async def _run(self) -> None:
        while self.futures:
            progressed = False
            for tp in list(self.futures):
                try:
                    progressed |= self._step(tp)
                except (KafkaError, OSError) as e:
                    log.error("Moving %s failed: %s; the move is dropped", tp, e)
                    self.abort(tp)
            if self.quota.is_quota_exceeded() or not progressed:
                # Over the rate, or caught up with a log that has nothing new: wait a little
                # (appends to the current log are copied on the next step).
                await asyncio.sleep(self.quota.window_s / 10 if progressed else 0.05)
            else:
                await asyncio.sleep(0)

    def _step(self, tp: TopicPartition) -> bool:
        """Copy what the quota allows; swap when caught up. True if bytes moved."""
        partition = self.replica_manager.partitions.get(tp)
        moving = self.futures[tp]
        if partition is None:
            self.abort(tp)
            return False
        source, future = partition.log, moving.log
        if future.log_end_offset < source.log_start_offset:  # retention passed the copy
            future.truncate_fully_and_start_at(source.log_start_offset)
        if future.log_end_offset >= source.log_end_offset:
            self._swap(tp, partition, moving)
            return True
        if self.quota.is_quota_exceeded():
            return False
        limit = min(CHUNK_BYTES, self.quota.allowance()) if self.quota.bounded else CHUNK_BYTES
        records = source.read(future.log_end_offset, max(1, limit), min_one_message=True).records
        data = records.read_bytes() if hasattr(records, "read_bytes") else bytes(records)
        if not data:
            return False
        future.append_as_follower(data)
        self.quota.record(len(data))
        return True

    def _swap(self, tp: TopicPartition, partition: Any, moving: FutureReplica) -> None:
        """The future log takes the current one's place (in this one step of the loop)."""
        source, future = partition.log, moving.log
        future.flush()
        future.close()
        final_dir = os.path.join(moving.destination, names.log_dir_name(tp.topic, tp.partition))
        os.replace(future.dir, final_dir)
        replacement = Log(
            final_dir, source.config,
            log_start_offset=source.log_start_offset,
            recovery_point=future.log_end_offset,
            high_watermark=source.high_watermark,
            had_clean_shutdown=True,
            clock=source.clock,
            failure_channel=source.failure_channel,
        )  # fmt: skip
        self.futures.pop(tp)
        self.log_manager.replace_log(tp.topic, tp.partition, replacement, moving.destination)
        partition.log = replacement
        try:
            source.delete()
        except KafkaStorageError:
            pass  # logged; the old dir is offline, and the replica lives on in the new one
        self.replica_manager.wake(tp)
        log.info("Moved %s to %s", tp, moving.destination)

    async def shutdown(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        for tp in list(self.futures):
            moving = self.futures.pop(tp)
            moving.log.close_handlers()  # left on disk: deleted at the next start
