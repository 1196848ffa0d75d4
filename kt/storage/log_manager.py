"""All partition logs of a broker across its `log.dirs` (Kafka's LogManager).

Each log dir holds, besides the `<topic>-<partition>` directories:

  .lock                               held (fcntl) while a LogManager owns the dir
  .kafka_cleanshutdown                written on clean shutdown, removed at start-up;
                                      JSON {"version":0,"brokerEpoch":<epoch>}
  recovery-point-offset-checkpoint    per log: offset up to which it is flushed
  log-start-offset-checkpoint         per log: its start offset, when above its first segment
  replication-offset-checkpoint       per log: its high watermark

The broker calls `cleanup_logs`, `flush_dirty_logs` and `checkpoint_all` periodically;
storage starts no threads of its own. An I/O error in a log dir takes the dir offline
(log_dir_failure_channel.py): its logs are closed and left out of everything after, and
nothing more is written there, not even at shutdown.
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import shutil
from collections.abc import Callable, Iterable, Mapping

from kt.config import LogConfig
from kt.errors import KafkaStorageError
from kt.storage import names
from kt.storage.checkpoints import CheckpointError, OffsetCheckpointFile, write_atomically
from kt.storage.log import Log, wall_clock_ms
from kt.storage.log_dir_failure_channel import LogDirFailureChannel

log = logging.getLogger(__name__)

TopicPartitionKey = tuple[str, int]


# Directories in a log dir that hold no partition: the embedded metadata store keeps its
# files in the first log dir (as KRaft keeps __cluster_metadata-0 there).
NOT_LOG_DIRS = frozenset({"__kt_metadata"})


class LogDirUnusableError(Exception):
    """A log dir that cannot be created or written (LogManager.createAndValidateLogDirs)."""


class LogDirLockedError(Exception):
    """Another LogManager (this process or another) holds the log dir's `.lock`."""


class LogManager:
    """The logs of one broker, keyed by (topic, partition).

    Invariants: each log dir is locked for the manager's lifetime; each partition has
    at most one log, in exactly one dir; directory names come only from validated topic
    names and non-negative partitions, so they never leave their log dir; `logs` holds
    only logs of live dirs, and `live_log_dirs` only dirs that have not failed.
    """

    def __init__(
        self,
        log_dirs: Iterable[str] | str,
        default_config: LogConfig,
        topic_configs: Mapping[str, LogConfig] | None = None,
        clock: Callable[[], int] = wall_clock_ms,
        failure_channel: LogDirFailureChannel | None = None,
    ) -> None:
        dirs = [log_dirs] if isinstance(log_dirs, str) else list(log_dirs)
        self.log_dirs = [os.path.abspath(d) for d in dirs]
        self.failure_channel = failure_channel or LogDirFailureChannel()
        self.failure_channel.listeners.append(self.handle_log_dir_failure)
        self.default_config = default_config
        self.topic_configs = dict(topic_configs or {})
        self.clock = clock
        self.logs: dict[TopicPartitionKey, Log] = {}
        self._dir_of: dict[TopicPartitionKey, str] = {}
        # Where a replica that does not exist yet is to be created (AlterReplicaLogDirs).
        self.preferred_dirs: dict[TopicPartitionKey, str] = {}
        self._locks: list[int] = []
        try:
            for directory in self.log_dirs:
                self._lock(directory)
            for directory in self.log_dirs:
                self._load_logs(directory)
        except BaseException:
            self._release_locks()
            raise

    # -- start-up ---------------------------------------------------------------------

    def _lock(self, directory: str) -> None:
        try:
            os.makedirs(directory, exist_ok=True)
            if not os.access(directory, os.W_OK | os.X_OK):
                raise PermissionError(errno.EACCES, "Permission denied")
        except OSError as e:
            raise LogDirUnusableError(
                f"Failed to create or validate data directory {directory}: {e.strerror or e}"
            ) from None
        fd = os.open(os.path.join(directory, names.LOCK_FILE_NAME), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise LogDirLockedError(
                f"Failed to acquire lock on file .lock in {directory}. A Kafka instance in "
                "another process or thread is using this directory."
            ) from None
        self._locks.append(fd)

    def _release_locks(self) -> None:
        for fd in self._locks:
            os.close(fd)  # closing drops the flock
        self._locks = []

    def _checkpoint(self, directory: str, file_name: str) -> OffsetCheckpointFile:
        return OffsetCheckpointFile(os.path.join(directory, file_name))

    def _read_checkpoint(self, directory: str, file_name: str) -> dict[TopicPartitionKey, int]:
        try:
            return self._checkpoint(directory, file_name).read()
        except (CheckpointError, OSError) as e:
            log.warning("Error reading %s in %s, ignoring it: %s", file_name, directory, e)
            return {}

    def _load_logs(self, directory: str) -> None:
        marker = os.path.join(directory, names.CLEAN_SHUTDOWN_FILE_NAME)
        had_clean_shutdown = os.path.exists(marker)
        if had_clean_shutdown:
            # Removed first: a crash during loading must count as unclean (KAFKA-10471).
            os.unlink(marker)
        recovery_points = self._read_checkpoint(directory, names.RECOVERY_POINT_CHECKPOINT_FILE)
        start_offsets = self._read_checkpoint(directory, names.LOG_START_OFFSET_CHECKPOINT_FILE)
        high_watermarks = self._read_checkpoint(directory, names.REPLICATION_OFFSET_CHECKPOINT_FILE)
        log.info("%s logs in %s", "Loading" if had_clean_shutdown else "Recovering", directory)
        for entry in sorted(os.listdir(directory)):
            path = os.path.join(directory, entry)
            if not os.path.isdir(path) or entry in NOT_LOG_DIRS:
                continue
            try:
                topic, partition = names.parse_topic_partition_name(entry)
            except ValueError as e:
                log.warning("Skipping %s: %s", path, e)
                continue
            if entry.endswith(names.DELETE_DIR_SUFFIX):
                log.info("Deleting %s, left by an interrupted topic deletion", path)
                shutil.rmtree(path, ignore_errors=True)
                continue
            if entry.endswith(names.FUTURE_DIR_SUFFIX):
                log.info("Deleting %s, a move between log dirs that did not finish", path)
                shutil.rmtree(path, ignore_errors=True)
                continue
            if entry.endswith(names.STRAY_DIR_SUFFIX):
                log.warning("Skipping %s: stray replicas are not supported", path)
                continue
            key = (topic, partition)
            if key in self.logs:
                raise RuntimeError(
                    f"Duplicate log directories for {topic}-{partition} are found "
                    f"in both {self._dir_of[key]} and {directory}"
                )
            self.logs[key] = Log(
                path,
                self.config_for(topic),
                log_start_offset=start_offsets.get(key, 0),
                recovery_point=recovery_points.get(key, 0),
                high_watermark=high_watermarks.get(key, 0),
                had_clean_shutdown=had_clean_shutdown,
                clock=self.clock,
                failure_channel=self.failure_channel,
            )
            self._dir_of[key] = directory

    # -- logs -------------------------------------------------------------------------

    def config_for(self, topic: str) -> LogConfig:
        return self.topic_configs.get(topic, self.default_config)

    def update_topic_config(self, topic: str, config: LogConfig) -> None:
        """A topic's config changed: its logs use `config` from now on."""
        self.topic_configs[topic] = config
        for (t, _), log_ in self.logs.items():
            if t == topic:
                log_.config = config

    def dir_of(self, topic: str, partition: int) -> str | None:
        """The log dir that holds the partition's log."""
        return self._dir_of.get((topic, partition))

    def replace_log(self, topic: str, partition: int, new: Log, directory: str) -> None:
        """A replica moved between log dirs: `new`, in `directory`, is its log now."""
        self.logs[(topic, partition)] = new
        self._dir_of[(topic, partition)] = directory

    def get_log(self, topic: str, partition: int) -> Log | None:
        return self.logs.get((topic, partition))

    def all_logs(self) -> list[Log]:
        return list(self.logs.values())

    def get_or_create_log(self, topic: str, partition: int, config: LogConfig | None = None) -> Log:
        """The partition's log, created empty in the least-used log dir if it is new."""
        key = (topic, partition)
        existing = self.logs.get(key)
        if existing is not None:
            if config is not None:
                existing.config = config
            return existing
        dir_name = names.log_dir_name(topic, partition)  # validates topic and partition
        if config is not None:
            self.topic_configs.setdefault(topic, config)
        live = self.live_log_dirs
        if not live:
            raise KafkaStorageError(
                f"Can not create log for {topic}-{partition} because all log dirs are offline"
            )
        preferred = self.preferred_dirs.pop(key, None)
        directory = (
            preferred
            if preferred in live
            else min(live, key=lambda d: sum(1 for v in self._dir_of.values() if v == d))
        )
        try:
            created = Log(
                os.path.join(directory, dir_name),
                config or self.config_for(topic),
                clock=self.clock,
                failure_channel=self.failure_channel,
            )
        except OSError as e:
            message = f"Error while creating log for {topic}-{partition} in dir {directory}"
            if e.errno in (errno.EMFILE, errno.ENFILE):  # the process's limit, not the disk
                raise KafkaStorageError(f"{message}: {e.strerror}") from e
            self.failure_channel.maybe_add_offline_log_dir(directory, message, e)
            raise KafkaStorageError(message) from e
        self.logs[key] = created
        self._dir_of[key] = directory
        log.info("Created log for partition %s-%d in %s", topic, partition, created.dir)
        return created

    def delete_log(self, topic: str, partition: int) -> None:
        """Rename to `<topic>-<partition>.<uuid>-delete`, then remove it (Kafka's asyncDelete)."""
        key = (topic, partition)
        removed = self.logs.pop(key, None)
        if removed is None:
            return
        directory = self._dir_of.pop(key)
        removed.close_handlers()
        doomed = os.path.join(directory, names.log_delete_dir_name(topic, partition))
        removed.rename_dir(doomed)
        self._checkpoint_dir(directory)
        shutil.rmtree(doomed, ignore_errors=True)
        log.info("Deleted log for partition %s-%d in %s", topic, partition, directory)

    # -- failed log dirs ---------------------------------------------------------------

    @property
    def live_log_dirs(self) -> list[str]:
        return [d for d in self.log_dirs if not self.failure_channel.has_offline_log_dir(d)]

    def handle_log_dir_failure(self, directory: str) -> None:
        """Close the logs of a dir that failed and forget them (LogManager.handleLogDirFailure);
        the dir's lock is kept, so that no other broker takes it up before a restart."""
        offline = [k for k, d in self._dir_of.items() if d == directory]
        for key in offline:
            self._dir_of.pop(key)
            self.logs.pop(key).close_handlers()
        names_ = ", ".join(f"{t}-{p}" for t, p in offline) or "none"
        log.error(
            "Logs for partitions %s are offline due to failure on log dir %s", names_, directory
        )

    # -- periodic work ----------------------------------------------------------------

    def cleanup_logs(self, now_ms: int | None = None) -> int:
        """Retention for every log that is not compacted; returns segments deleted."""
        now = self.clock() if now_ms is None else now_ms
        total = 0
        for log_ in list(self.logs.values()):
            # A compacted log only loses segments below its log start offset here.
            try:
                total += log_.delete_old_segments(now)
            except KafkaStorageError:
                continue  # logged, and the log's dir is offline with its logs
            log_.producer_state.remove_expired_producers(now)
        return total

    def flush_dirty_logs(self, now_ms: int | None = None) -> None:
        """The periodic flush of every log; a log that fails takes its dir offline."""
        now = self.clock() if now_ms is None else now_ms
        for log_ in list(self.logs.values()):
            try:
                log_.flush_dirty(now)
            except KafkaStorageError:
                continue  # logged, and the log's dir is offline with its logs

    def checkpoint_all(self) -> None:
        """Write the three offset checkpoints of every live log dir."""
        for directory in self.live_log_dirs:
            self._checkpoint_dir(directory)

    def _checkpoint_dir(self, directory: str) -> None:
        try:
            self._write_checkpoints(directory)
        except OSError as e:
            self.failure_channel.maybe_add_offline_log_dir(
                directory, f"Disk error while writing checkpoints to {directory}", e
            )

    def _write_checkpoints(self, directory: str) -> None:
        logs = {k: v for k, v in self.logs.items() if self._dir_of.get(k) == directory}
        self._checkpoint(directory, names.RECOVERY_POINT_CHECKPOINT_FILE).write(
            {k: v.recovery_point for k, v in logs.items()}
        )
        self._checkpoint(directory, names.LOG_START_OFFSET_CHECKPOINT_FILE).write(
            {
                k: v.log_start_offset
                for k, v in logs.items()
                if v.log_start_offset > v.segments[0].base_offset
            }
        )
        self._checkpoint(directory, names.REPLICATION_OFFSET_CHECKPOINT_FILE).write(
            {k: v.high_watermark for k, v in logs.items()}
        )

    def abandon(self) -> None:
        """Let go of every log as a process that dies would: files closed, locks dropped,
        nothing flushed or written (a restart recovers, as after kill -9)."""
        for log_ in self.logs.values():
            log_.close_handlers()
        self._release_locks()

    def shutdown(self, broker_epoch: int = -1) -> None:
        """Flush and close every log, checkpoint, mark each dir cleanly shut down, unlock."""
        log.info("Shutting down.")
        try:
            for key in list(self.logs):
                log_ = self.logs.get(key)
                if log_ is None:
                    continue  # its dir failed while an earlier log closed
                try:
                    log_.flush()
                    log_.close()
                except KafkaStorageError:
                    continue  # logged, and the log's dir is offline with its logs
                except OSError as e:  # close() writes the producer snapshot
                    log_.storage_error(e, f"closing {log_.name}")
            for directory in self.live_log_dirs:
                self._checkpoint_dir(directory)
                if self.failure_channel.has_offline_log_dir(directory):
                    continue  # recovered at the next start, like any unclean shutdown
                marker = json.dumps(
                    {"version": 0, "brokerEpoch": broker_epoch}, separators=(",", ":")
                )
                try:
                    write_atomically(
                        os.path.join(directory, names.CLEAN_SHUTDOWN_FILE_NAME), marker.encode()
                    )
                except OSError as e:
                    self.failure_channel.maybe_add_offline_log_dir(
                        directory, f"Disk error while marking {directory} cleanly shut down", e
                    )
        finally:
            self._release_locks()
        log.info("Shutdown complete.")
