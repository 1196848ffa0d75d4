"""The transaction coordinator's APIs (Kafka's TransactionCoordinator): InitProducerId
with a transactional id, AddPartitionsToTxn (and its verify-only form), AddOffsetsToTxn,
EndTxn, the abort of timed-out transactions, and what Describe/ListTransactions read.

Each request checks the id's producer id and epoch, prepares a transition, writes it to
`__transaction_state` and answers once it is there; EndTxn answers as soon as
PrepareCommit/PrepareAbort is written, and the markers follow (transaction_marker_channel).
A new producer instance with the same id (InitProducerId) bumps the epoch, which fences
the old one: its requests get PRODUCER_FENCED, its batches INVALID_PRODUCER_EPOCH at the
partitions once the markers carry the new epoch. An open transaction is aborted first
(CONCURRENT_TRANSACTIONS until that is done), as is one past its timeout.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from kt.broker.task_set import TaskSet
from kt.broker.transaction.transaction_log import (
    STATE_BY_NAME,
    TRANSACTION_STATE_TOPIC,
    TransactionState,
)
from kt.broker.transaction.transaction_marker_channel import TransactionMarkerChannelManager
from kt.broker.transaction.transaction_metadata import (
    NO_PRODUCER_EPOCH,
    TransactionMetadata,
    TxnTransitMetadata,
    is_epoch_exhausted,
)
from kt.broker.transaction.transaction_state_manager import TransactionStateManager
from kt.errors import KafkaError

log = logging.getLogger(__name__)

S = TransactionState
# How long AddPartitionsToTxn waits for the previous transaction of its producer to
# complete before answering CONCURRENT_TRANSACTIONS.
CONCURRENT_WAIT_S = 0.5


class TransactionCoordinator:
    def __init__(
        self,
        state_manager: TransactionStateManager,
        markers: TransactionMarkerChannelManager,
        generate_producer_id: Callable[[], Awaitable[int]],
    ) -> None:
        self.state_manager = state_manager
        self.markers = markers
        self.generate_producer_id = generate_producer_id
        self._tasks = TaskSet()

    @property
    def clock(self) -> Callable[[], int]:
        return self.state_manager.clock

    # -- InitProducerId -----------------------------------------------------------------

    async def handle_init_producer_id(
        self,
        transactional_id: str,
        timeout_ms: int,
        expected: tuple[int, int] | None,
    ) -> tuple[str, int, int]:
        """(error, producer id, epoch) for a transactional producer's InitProducerId;
        `expected` is the (producer id, epoch) a KIP-360 client sends to bump its epoch."""
        if not transactional_id:
            return "INVALID_REQUEST", -1, -1
        if not self.state_manager.validate_transaction_timeout_ms(timeout_ms):
            return "INVALID_TRANSACTION_TIMEOUT", -1, -1
        manager = self.state_manager
        error, found = manager.get_transaction_state(transactional_id)
        if error != "NONE":
            return error, -1, -1
        if found is None:
            try:
                producer_id = await self.generate_producer_id()
            except KafkaError as e:
                return e.name, -1, -1
            created = TransactionMetadata(
                transactional_id, producer_id, txn_timeout_ms=timeout_ms,
                txn_last_update_timestamp=self.clock(),
            )  # fmt: skip
            error, found = manager.put_transaction_state_if_not_exists(created)
            if found is None:
                return error, -1, -1
        coordinator_epoch, metadata = found.coordinator_epoch, found.metadata
        prepared = await self._prepare_init(metadata, timeout_ms, expected)
        if isinstance(prepared, str):
            return prepared, -1, -1
        if prepared.txn_state == S.PREPARE_EPOCH_FENCE:
            # An open transaction: abort it with the bumped epoch; the client retries.
            error = await self._end_transaction(
                transactional_id, prepared.producer_id, prepared.producer_epoch, False,
                from_client=False,
            )  # fmt: skip
            return (error if error != "NONE" else "CONCURRENT_TRANSACTIONS"), -1, -1
        error = await manager.append_transaction_to_log(
            transactional_id, coordinator_epoch, prepared
        )
        if error != "NONE":
            log.info("Returning %s error code to client for %s's InitProducerId request",
                     error, transactional_id)  # fmt: skip
            return error, -1, -1
        log.info("Initialized transactionalId %s with producerId %d and producer epoch %d on "
                 "partition __transaction_state-%d", transactional_id, prepared.producer_id,
                 prepared.producer_epoch, manager.partition_for(transactional_id))  # fmt: skip
        return "NONE", prepared.producer_id, prepared.producer_epoch

    async def _prepare_init(
        self, metadata: TransactionMetadata, timeout_ms: int, expected: tuple[int, int] | None
    ) -> TxnTransitMetadata | str:
        def valid_producer_id(pid: int, epoch: int) -> bool:
            return (
                metadata.producer_epoch == NO_PRODUCER_EPOCH
                or pid == metadata.producer_id
                or (pid == metadata.last_producer_id and is_epoch_exhausted(epoch))
            )

        if metadata.pending_transition_in_progress:
            return "CONCURRENT_TRANSACTIONS"
        if expected is not None and not valid_producer_id(*expected):
            return "PRODUCER_FENCED"
        state = metadata.state
        if state in (S.PREPARE_ABORT, S.PREPARE_COMMIT):
            return "CONCURRENT_TRANSACTIONS"
        if state in (S.COMPLETE_ABORT, S.COMPLETE_COMMIT, S.EMPTY):
            if metadata.is_producer_epoch_exhausted and (
                expected is None or expected[1] == metadata.producer_epoch
            ):
                try:
                    producer_id = await self.generate_producer_id()
                except KafkaError as e:
                    return e.name
                if metadata.pending_transition_in_progress:
                    return "CONCURRENT_TRANSACTIONS"
                return metadata.prepare_producer_id_rotation(
                    producer_id, timeout_ms, self.clock(), expected is not None
                )
            return metadata.prepare_increment_producer_epoch(
                timeout_ms, None if expected is None else expected[1], self.clock()
            )
        if state == S.ONGOING:
            return metadata.prepare_fence_producer_epoch()
        raise KafkaError(
            "UNKNOWN_SERVER_ERROR",
            f"Found transactionalId {metadata.transactional_id} with state {state.state_name}",
        )

    # -- AddPartitionsToTxn, AddOffsetsToTxn ---------------------------------------------

    def _check_producer(
        self, transactional_id: str, producer_id: int, producer_epoch: int
    ) -> tuple[str, Any]:
        if not transactional_id:
            return "INVALID_REQUEST", None
        error, found = self.state_manager.get_transaction_state(transactional_id)
        if error != "NONE":
            return error, None
        if found is None:
            return "INVALID_PRODUCER_ID_MAPPING", None
        metadata = found.metadata
        if metadata.producer_id != producer_id:
            return "INVALID_PRODUCER_ID_MAPPING", None
        if metadata.producer_epoch != producer_epoch:
            return "PRODUCER_FENCED", None
        return "NONE", found

    async def handle_add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: set[tuple[str, int]],
    ) -> str:
        deadline = None
        while True:
            error, found = self._check_producer(transactional_id, producer_id, producer_epoch)
            if error != "NONE":
                return error
            metadata = found.metadata
            busy = metadata.pending_transition_in_progress or metadata.state in (
                S.PREPARE_COMMIT, S.PREPARE_ABORT
            )  # fmt: skip
            if not busy:
                break
            # The previous transaction's markers are being written: the client would back
            # off (20 ms in the Java producer) and ask again; waiting here answers as soon
            # as it completes instead, which is what the client wanted anyway.
            now = asyncio.get_running_loop().time()
            deadline = now + CONCURRENT_WAIT_S if deadline is None else deadline
            if now >= deadline:
                return "CONCURRENT_TRANSACTIONS"
            await self.state_manager.wait_for_transition(transactional_id, deadline - now)
        if metadata.state == S.ONGOING and partitions <= metadata.topic_partitions:
            return "NONE"  # nothing new: no write
        transit = metadata.prepare_add_partitions(partitions, self.clock())
        return await self.state_manager.append_transaction_to_log(
            transactional_id, found.coordinator_epoch, transit
        )

    def handle_verify_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: set[tuple[str, int]],
    ) -> dict[tuple[str, int], str]:
        """AddPartitionsToTxn v4 verify_only (KIP-890): is each partition in the ongoing
        transaction? A partition leader asks before the first transactional batch."""
        error, found = self._check_producer(transactional_id, producer_id, producer_epoch)
        if error == "NONE" and found.metadata.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            error = "CONCURRENT_TRANSACTIONS"
        if error != "NONE":
            return dict.fromkeys(partitions, error)
        current = found.metadata.topic_partitions
        return {tp: "NONE" if tp in current else "TRANSACTION_ABORTABLE" for tp in partitions}

    # -- EndTxn -------------------------------------------------------------------------

    async def handle_end_transaction(
        self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool
    ) -> str:
        return await self._end_transaction(
            transactional_id, producer_id, producer_epoch, commit, from_client=True
        )

    async def _end_transaction(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        *,
        from_client: bool,
    ) -> str:
        if not transactional_id:
            return "INVALID_REQUEST"
        manager = self.state_manager
        error, found = manager.get_transaction_state(transactional_id)
        if error != "NONE":
            return error
        if found is None:
            return "INVALID_PRODUCER_ID_MAPPING"
        metadata, coordinator_epoch = found.metadata, found.coordinator_epoch
        if metadata.producer_id != producer_id:
            return "INVALID_PRODUCER_ID_MAPPING"
        if (from_client and producer_epoch != metadata.producer_epoch) or (
            producer_epoch < metadata.producer_epoch
        ):
            return "PRODUCER_FENCED"
        fencing = metadata.pending_state == S.PREPARE_EPOCH_FENCE
        if metadata.pending_transition_in_progress and not fencing:
            return "CONCURRENT_TRANSACTIONS"
        state = metadata.state
        if state == S.ONGOING:
            if fencing and not commit:
                # The epoch fence: the abort is written with the bumped epoch.
                metadata.pending_state = None
                metadata.producer_epoch = producer_epoch
                metadata.last_producer_epoch = NO_PRODUCER_EPOCH
            next_state = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
            transit = metadata.prepare_abort_or_commit(next_state, self.clock())
        else:
            return _end_without_transition(transactional_id, state, commit)
        error = await manager.append_transaction_to_log(
            transactional_id, coordinator_epoch, transit
        )
        if error != "NONE":
            if fencing:
                error2, again = manager.get_transaction_state(transactional_id)
                if again is not None and again.coordinator_epoch == coordinator_epoch:
                    again.metadata.has_failed_epoch_fence = True
            log.info("Aborting sending of transaction markers and returning %s error to client "
                     "for %s's EndTransaction request of %s", error, transactional_id,
                     "COMMIT" if commit else "ABORT")  # fmt: skip
            return error
        error, again = manager.get_transaction_state(transactional_id)
        if again is None or again.coordinator_epoch != coordinator_epoch:
            return "NOT_COORDINATOR"
        self.markers.add_txn_markers_to_send(coordinator_epoch, commit, again.metadata)
        return "NONE"

    # -- DescribeTransactions, ListTransactions ----------------------------------------

    def handle_describe_transaction(self, transactional_id: str) -> tuple[str, Any]:
        """(error, metadata) of one transactional id (handleDescribeTransactions)."""
        if not transactional_id:
            return "INVALID_REQUEST", None
        error, found = self.state_manager.get_transaction_state(transactional_id)
        if error != "NONE":
            return error, None
        if found is None or found.metadata.state == S.DEAD:
            return "TRANSACTIONAL_ID_NOT_FOUND", None
        return "NONE", found.metadata

    def handle_list_transactions(
        self, producer_ids: set[int], state_names: set[str], duration_ms: int
    ) -> tuple[str, list[TransactionMetadata], list[str]]:
        """(error, transactions, unknown state names) of the ids this broker coordinates
        (listTransactionStates): Dead ones never; filtered by producer id, state, and
        running longer than `duration_ms` (when >= 0)."""
        manager = self.state_manager
        if manager.loading:
            return "COORDINATOR_LOAD_IN_PROGRESS", [], []
        unknown = sorted(n for n in state_names if n not in STATE_BY_NAME)
        states = {STATE_BY_NAME[n] for n in state_names if n in STATE_BY_NAME}
        now = self.clock()
        found = [
            m for m in manager.all_metadata()
            if m.state != S.DEAD
            and (not producer_ids or m.producer_id in producer_ids)
            and (not state_names or m.state in states)
            and not (duration_ms >= 0 and now - m.txn_start_timestamp <= duration_ms)
        ]  # fmt: skip
        return "NONE", found, unknown

    # -- periodic jobs ------------------------------------------------------------------

    def start_abort_timed_out_transactions(self) -> None:
        """The periodic timeout pass (transaction.abort.timed.out.transaction.cleanup.
        interval.ms), from a broker background task."""
        self._tasks.spawn(self.abort_timed_out_transactions())

    def start_remove_expired_transactional_ids(self) -> None:
        self._tasks.spawn(self.state_manager.remove_expired_transactional_ids())

    def shutdown(self) -> None:
        self.markers.shutdown()
        self._tasks.cancel_all()

    # -- timeouts -----------------------------------------------------------------------

    async def abort_timed_out_transactions(self) -> None:
        """Ongoing transactions past transaction.timeout.ms are aborted with a bumped
        epoch, which fences their producer (abortTimedOutTransactions)."""
        for txn_id, producer_id, epoch in self.state_manager.timed_out_transactions():
            error, found = self.state_manager.get_transaction_state(txn_id)
            if found is None:
                continue
            metadata = found.metadata
            if (
                metadata.producer_id != producer_id
                or metadata.producer_epoch != epoch
                or metadata.pending_transition_in_progress
                or metadata.state != S.ONGOING
            ):
                continue
            transit = metadata.prepare_fence_producer_epoch()
            log.info("Aborting transaction %s with producer id %d and epoch %d: it is past its "
                     "timeout of %d ms", txn_id, producer_id, epoch,
                     metadata.txn_timeout_ms)  # fmt: skip
            error = await self._end_transaction(
                txn_id, transit.producer_id, transit.producer_epoch, False, from_client=False
            )
            if error not in ("NONE", "CONCURRENT_TRANSACTIONS"):
                log.warning("Rollback of ongoing transaction for transactionalId %s failed due "
                            "to error %s", txn_id, error)  # fmt: skip

    # -- leadership of __transaction_state partitions ---------------------------------------

    def on_leadership_change(self, leaders: list[Any], resigned: list[Any]) -> None:
        """ReplicaManager callback: load the transactional ids of `__transaction_state`
        partitions this broker now leads, drop those of partitions it no longer leads."""
        for partition in leaders:
            index, epoch = partition.tp.partition, partition.leader_epoch
            if partition.tp.topic != TRANSACTION_STATE_TOPIC:
                continue
            if self.state_manager.begin_loading(index, epoch):
                self._tasks.spawn(self._load(index, epoch))
        for tp in resigned:
            if tp.topic == TRANSACTION_STATE_TOPIC:
                self.on_resignation(tp.partition)

    async def _load(self, partition: int, epoch: int) -> None:
        """Load `partition`, then finish the transactions it left between Prepare* and
        Complete* (send their markers again)."""
        loaded = await self.state_manager.load(partition, epoch)
        for metadata in loaded or []:
            if metadata.pending_state is None and metadata.state in (
                S.PREPARE_COMMIT, S.PREPARE_ABORT
            ):  # fmt: skip
                self.markers.add_txn_markers_to_send(
                    epoch, metadata.state == S.PREPARE_COMMIT, metadata
                )

    def on_resignation(self, partition: int) -> None:
        self.state_manager.unload(partition)


def _end_without_transition(transactional_id: str, state: TransactionState, commit: bool) -> str:
    """EndTxn in a state other than Ongoing: a retry of an ending that is done (NONE) or
    under way (CONCURRENT_TRANSACTIONS), or INVALID_TXN_STATE."""
    done = {S.COMPLETE_COMMIT: True, S.COMPLETE_ABORT: False}
    under_way = {S.PREPARE_COMMIT: True, S.PREPARE_ABORT: False}
    if done.get(state) is commit:
        return "NONE"
    if under_way.get(state) is commit:
        return "CONCURRENT_TRANSACTIONS"
    return _invalid(transactional_id, state, commit)


def _invalid(transactional_id: str, state: TransactionState, commit: bool) -> str:
    log.debug("TransactionalId: %s's state is %s, but received transaction marker result to "
              "send: %s", transactional_id, state.state_name,
              "COMMIT" if commit else "ABORT")  # fmt: skip
    return "INVALID_TXN_STATE"
