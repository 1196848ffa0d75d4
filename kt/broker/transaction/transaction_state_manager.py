"""The transactional ids of the `__transaction_state` partitions this broker leads
(Kafka's TransactionStateManager).

A transactional id lives in partition abs(javaHashCode(id)) % partitions. On becoming
the partition's leader this broker replays it (the last record per id wins, a null value
deletes) while answering COORDINATOR_LOAD_IN_PROGRESS for its ids; the leader epoch is
the coordinator epoch, written into every marker so that partitions refuse those of a
coordinator that lost its place. On losing leadership the ids are dropped.

Every transition is written with acks=all before it is applied; a failed write leaves
the state as it was and answers the error the clients expect (appendTransactionToLog's
mapping).
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kt.broker.coordinator_errors import APPEND_ERRORS
from kt.broker.coordinator_loader import log_batches
from kt.broker.group.group_metadata_manager import partition_for
from kt.broker.replication.partition import TopicPartition
from kt.broker.transaction import transaction_log as txn_log
from kt.broker.transaction.transaction_log import TRANSACTION_STATE_TOPIC, TransactionState
from kt.broker.transaction.transaction_metadata import TransactionMetadata, TxnTransitMetadata
from kt.errors import error_for
from kt.storage.producer_state import ORIGIN_COORDINATOR
from kt.storage.record_batch import Record, build_batch

log = logging.getLogger(__name__)

S = TransactionState


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class TxnPartitionCache:
    """The ids of one `__transaction_state` partition, as of one coordinator epoch."""

    coordinator_epoch: int
    metadata: dict[str, TransactionMetadata] = field(default_factory=dict)


@dataclass(frozen=True)
class CoordinatorEpochAndTxnMetadata:
    coordinator_epoch: int
    metadata: TransactionMetadata


class TransactionStateManager:
    """Invariants: `caches` holds only partitions this broker leads, fully loaded;
    `loading` the partitions being replayed (leadership arrived, replay not done)."""

    def __init__(
        self,
        replica_manager: Any,
        partition_count: Callable[[], int],
        *,
        request_timeout_ms: int = 30_000,
        transaction_max_timeout_ms: int = 900_000,
        transactional_id_expiration_ms: int = 604_800_000,
        load_buffer_size: int = 5 * 1024 * 1024,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self.replica_manager = replica_manager
        self.partition_count = partition_count
        self.request_timeout_ms = request_timeout_ms
        self.transaction_max_timeout_ms = transaction_max_timeout_ms
        self.transactional_id_expiration_ms = transactional_id_expiration_ms
        self.load_buffer_size = load_buffer_size
        self.clock = clock
        self.caches: dict[int, TxnPartitionCache] = {}
        self.loading: dict[int, int] = {}  # partition -> the epoch being loaded
        self._waiters: dict[str, list[asyncio.Future[None]]] = {}

    # -- lookup -----------------------------------------------------------------------

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.partition_count())

    def validate_transaction_timeout_ms(self, timeout_ms: int) -> bool:
        return 0 < timeout_ms <= self.transaction_max_timeout_ms

    def get_transaction_state(
        self, transactional_id: str
    ) -> tuple[str, CoordinatorEpochAndTxnMetadata | None]:
        """(error, state): NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS for an id of a
        partition this broker does not serve (yet); NONE and None for an unknown id."""
        partition = self.partition_for(transactional_id)
        if partition in self.loading:
            return "COORDINATOR_LOAD_IN_PROGRESS", None
        cache = self.caches.get(partition)
        if cache is None:
            return "NOT_COORDINATOR", None
        metadata = cache.metadata.get(transactional_id)
        if metadata is None:
            return "NONE", None
        return "NONE", CoordinatorEpochAndTxnMetadata(cache.coordinator_epoch, metadata)

    def put_transaction_state_if_not_exists(
        self, metadata: TransactionMetadata
    ) -> tuple[str, CoordinatorEpochAndTxnMetadata | None]:
        partition = self.partition_for(metadata.transactional_id)
        if partition in self.loading:
            return "COORDINATOR_LOAD_IN_PROGRESS", None
        cache = self.caches.get(partition)
        if cache is None:
            return "NOT_COORDINATOR", None
        current = cache.metadata.setdefault(metadata.transactional_id, metadata)
        return "NONE", CoordinatorEpochAndTxnMetadata(cache.coordinator_epoch, current)

    def all_metadata(self) -> list[TransactionMetadata]:
        return [m for cache in self.caches.values() for m in cache.metadata.values()]

    async def wait_for_transition(self, transactional_id: str, timeout_s: float) -> None:
        """Until the id's next transition is written or dropped (or `timeout_s` passes)."""
        future = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(transactional_id, []).append(future)
        try:
            async with asyncio.timeout(timeout_s):
                await future
        except TimeoutError:
            pass
        finally:
            waiting = self._waiters.get(transactional_id, [])
            if future in waiting:
                waiting.remove(future)
            if not waiting:
                self._waiters.pop(transactional_id, None)

    def _transitioned(self, transactional_id: str) -> None:
        for future in self._waiters.pop(transactional_id, []):
            if not future.done():
                future.set_result(None)

    # -- writes -----------------------------------------------------------------------

    async def append_transaction_to_log(
        self, transactional_id: str, coordinator_epoch: int, transit: TxnTransitMetadata
    ) -> str:
        """Write `transit` and apply it to the id's metadata; the error name (NONE).

        The write waits for every in-sync replica; when it fails, or this broker stopped
        being the coordinator of that epoch meanwhile, the pending transition is dropped."""
        partition = self.partition_for(transactional_id)
        tp = TopicPartition(TRANSACTION_STATE_TOPIC, partition)
        if transit.txn_state == S.DEAD:
            value = None
        else:
            value = txn_log.value_bytes(
                transit.producer_id,
                transit.producer_epoch,
                transit.txn_timeout_ms,
                transit.txn_state,
                sorted(transit.topic_partitions),
                transit.txn_last_update_timestamp,
                transit.txn_start_timestamp,
            )
        record = Record(None, self.clock(), txn_log.key_bytes(transactional_id), value)
        results = await self.replica_manager.append_records(
            self.request_timeout_ms, -1, {tp: bytearray(build_batch([record]))}, ORIGIN_COORDINATOR
        )
        code = results[tp].error_code
        error = (
            "NONE" if not code else APPEND_ERRORS.get(error_for(code).name, error_for(code).name)
        )
        cache = self.caches.get(partition)
        metadata = cache.metadata.get(transactional_id) if cache is not None else None
        if cache is None or cache.coordinator_epoch != coordinator_epoch or metadata is None:
            if error == "NONE":
                log.info("The cached coordinator epoch for %s has changed to %s after appended "
                         "its new metadata %s to the transaction log (txn topic partition %d) "
                         "with coordinator epoch %d", transactional_id,
                         cache.coordinator_epoch if cache else None, transit, partition,
                         coordinator_epoch)  # fmt: skip
            return "NOT_COORDINATOR"
        if error != "NONE":
            log.info("Appending %s's new metadata %s failed due to %s", transactional_id,
                     transit, error)  # fmt: skip
            metadata.pending_state = None
            self._transitioned(transactional_id)
            return error
        metadata.complete_transition_to(transit)
        if transit.txn_state == S.DEAD:
            cache.metadata.pop(transactional_id, None)
        self._transitioned(transactional_id)
        return "NONE"

    # -- timeouts and expiry ------------------------------------------------------------

    def timed_out_transactions(self) -> list[tuple[str, int, int]]:
        """(transactional id, producer id, epoch) of ongoing transactions past their
        timeout, with no transition pending."""
        now = self.clock()
        return [
            (m.transactional_id, m.producer_id, m.producer_epoch)
            for m in self.all_metadata()
            if m.state == S.ONGOING
            and m.pending_state is None
            and m.txn_start_timestamp + m.txn_timeout_ms < now
        ]

    async def remove_expired_transactional_ids(self) -> int:
        """Transactional ids idle (no open transaction) for transactional.id.expiration.ms
        are written off with a tombstone. Returns how many."""
        now = self.clock()
        expired = 0
        for cache in list(self.caches.values()):
            for metadata in list(cache.metadata.values()):
                idle = now - metadata.txn_last_update_timestamp
                if (
                    metadata.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT)
                    and metadata.pending_state is None
                    and idle >= self.transactional_id_expiration_ms
                ):
                    transit = metadata.prepare_dead()
                    error = await self.append_transaction_to_log(
                        metadata.transactional_id, cache.coordinator_epoch, transit
                    )
                    if error == "NONE":
                        expired += 1
        if expired:
            log.info("Removed %d expired transactional ids", expired)
        return expired

    # -- loading ----------------------------------------------------------------------

    def begin_loading(self, partition: int, epoch: int) -> bool:
        """Leadership arrived; False when this epoch is loaded or loading already."""
        cache = self.caches.get(partition)
        if self.loading.get(partition) == epoch or (
            cache is not None and cache.coordinator_epoch == epoch
        ):
            return False
        self.caches.pop(partition, None)
        self.loading[partition] = epoch
        return True

    async def load(self, partition: int, epoch: int) -> list[TransactionMetadata] | None:
        """Replay the partition; the loaded metadata (None if leadership moved meanwhile)."""
        started = time.monotonic()
        try:
            loaded = await self._replay(partition, epoch)
        except (ValueError, IndexError, struct.error):
            log.exception("Error loading transactions from %s-%d", TRANSACTION_STATE_TOPIC,
                          partition)  # fmt: skip
            loaded = {}
        if self.loading.get(partition) != epoch:
            return None
        del self.loading[partition]
        self.caches[partition] = TxnPartitionCache(epoch, loaded)
        log.info("Finished loading %d transaction metadata from %s-%d in %d milliseconds, of "
                 "which 0 were in the cache", len(loaded), TRANSACTION_STATE_TOPIC, partition,
                 (time.monotonic() - started) * 1000)  # fmt: skip
        return list(loaded.values())

    async def _replay(self, partition: int, epoch: int) -> dict[str, TransactionMetadata]:
        found: dict[str, TransactionMetadata] = {}
        tp = TopicPartition(TRANSACTION_STATE_TOPIC, partition)
        async for batch in log_batches(self.replica_manager, tp, self.load_buffer_size,
                                       lambda: self.loading.get(partition) == epoch):  # fmt: skip
            if not getattr(batch, "is_control", False):
                for record in batch.records():
                    _apply(record, found)
        return found

    def unload(self, partition: int) -> list[TransactionMetadata]:
        """Leadership went elsewhere: forget the partition's ids."""
        self.loading.pop(partition, None)
        cache = self.caches.pop(partition, None)
        return list(cache.metadata.values()) if cache is not None else []


def _apply(record: Record, found: dict[str, TransactionMetadata]) -> None:
    if record.key is None:
        return
    try:
        transactional_id = txn_log.read_key(record.key)
        if transactional_id is None:
            return
        if record.value is None:
            found.pop(transactional_id, None)
            return
        v = txn_log.TransactionLogValue(record.value)
    except (ValueError, IndexError, struct.error) as e:
        log.warning("Skipping unreadable %s record at offset %s: %s",
                    TRANSACTION_STATE_TOPIC, record.offset, e)  # fmt: skip
        return
    found[transactional_id] = TransactionMetadata(
        transactional_id,
        v.producer_id,
        producer_epoch=v.producer_epoch,
        txn_timeout_ms=v.timeout_ms,
        state=v.state,
        topic_partitions=set(v.partitions),
        txn_start_timestamp=v.start_ms,
        txn_last_update_timestamp=v.last_update_ms,
    )
