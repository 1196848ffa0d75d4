"""Markers that end a transaction in every partition it wrote (Kafka's
TransactionMarkerChannelManager and TransactionMarkerRequestCompletionHandler).

Once PrepareCommit or PrepareAbort is in `__transaction_state`, the coordinator sends
WriteTxnMarkers to the leader of each partition of the transaction (its own partitions
through a direct call), again and again until each leader has written the marker: a
partition with no leader, a leader that moved or a leader short of in-sync replicas is
tried again after a pause, with the leaders the metadata cache knows then. A partition
whose topic was deleted needs no marker. When every partition has its marker, the
transaction is written CompleteCommit or CompleteAbort.

A coordinator that lost its `__transaction_state` partition (another epoch began) stops
sending: the new coordinator sends them from the loaded PrepareCommit/PrepareAbort.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from kt.broker.task_set import TaskSet
from kt.broker.transaction.transaction_log import TransactionState
from kt.broker.transaction.transaction_metadata import TransactionMetadata, TxnTransitMetadata
from kt.broker.transaction.transaction_state_manager import TransactionStateManager
from kt.errors import KafkaError, error_for
from kt.protocol import messages as m

log = logging.getLogger(__name__)

S = TransactionState
RETRY_BACKOFF_S = 0.1

# Per-partition answers that mean "try again later" (the leader moved, is short of
# replicas, or the request did not reach it).
_RETRIABLE = frozenset({
    "UNKNOWN_TOPIC_OR_PARTITION", "NOT_LEADER_OR_FOLLOWER", "NOT_ENOUGH_REPLICAS",
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND", "REQUEST_TIMED_OUT", "KAFKA_STORAGE_ERROR",
    "NETWORK_EXCEPTION", "COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE",
    "NOT_COORDINATOR", "UNKNOWN_SERVER_ERROR",
})  # fmt: skip
# The partition refuses this coordinator's markers: another coordinator took over.
_FENCED = frozenset({"INVALID_PRODUCER_EPOCH", "TRANSACTION_COORDINATOR_FENCED"})

SendMarkers = Callable[[int, Any], Awaitable[Any]]


class TransactionMarkerChannelManager:
    """Sends the markers of completing transactions; one task per transaction."""

    def __init__(
        self,
        state_manager: TransactionStateManager,
        metadata_cache: Any,
        send: SendMarkers,
        close_connections: Callable[[], None] = lambda: None,
    ) -> None:
        self.state_manager = state_manager
        self.metadata_cache = metadata_cache
        self.send = send  # (leader broker id, WriteTxnMarkersRequest) -> response
        self.close_connections = close_connections
        self._tasks = TaskSet()

    def add_txn_markers_to_send(
        self, coordinator_epoch: int, commit: bool, metadata: TransactionMetadata
    ) -> None:
        self._tasks.spawn(self._complete(coordinator_epoch, commit, metadata),
                          name=f"txn-markers-{metadata.transactional_id}")  # fmt: skip

    def shutdown(self) -> None:
        self._tasks.cancel_all()
        self.close_connections()

    # -- one transaction ----------------------------------------------------------------

    def _still_ours(self, transactional_id: str, coordinator_epoch: int, producer_id: int) -> bool:
        error, found = self.state_manager.get_transaction_state(transactional_id)
        return (
            found is not None
            and found.coordinator_epoch == coordinator_epoch
            and found.metadata.producer_id == producer_id
        )

    async def _complete(
        self, coordinator_epoch: int, commit: bool, metadata: TransactionMetadata
    ) -> None:
        txn_id, pid, epoch = (
            metadata.transactional_id,
            metadata.producer_id,
            metadata.producer_epoch,
        )
        pending = set(metadata.topic_partitions)
        while pending:
            if not self._still_ours(txn_id, coordinator_epoch, pid):
                log.info("Stopped sending transaction markers for %s: the coordinator epoch "
                         "%d is no longer current here", txn_id, coordinator_epoch)  # fmt: skip
                return
            fenced = await self._send_round(pending, coordinator_epoch, commit, pid, epoch)
            if fenced:
                log.info("Transaction markers for %s were refused (%s): another coordinator "
                         "took over", txn_id, fenced)  # fmt: skip
                return
            if pending:
                await asyncio.sleep(RETRY_BACKOFF_S)
        await self._write_complete(txn_id, coordinator_epoch, pid)

    async def _send_round(
        self, pending: set[tuple[str, int]], coordinator_epoch: int, commit: bool, pid: int,
        epoch: int,
    ) -> str | None:  # fmt: skip
        """One request to each leader of the pending partitions; those acknowledged leave
        `pending`. Returns an error name if a partition fenced this coordinator."""
        by_leader: dict[int, list[tuple[str, int]]] = {}
        for topic, partition in list(pending):
            if not self.metadata_cache.contains(topic):
                log.info("Not sending a transaction marker to %s-%d: the topic no longer "
                         "exists", topic, partition)  # fmt: skip
                pending.discard((topic, partition))
                continue
            state = self.metadata_cache.topic_partitions(topic).get(partition)
            leader = state.leader if state is not None else -1
            if leader >= 0 and self.metadata_cache.alive_broker(leader) is not None:
                by_leader.setdefault(leader, []).append((topic, partition))
        sends = [
            self._send_to(leader, tps, coordinator_epoch, commit, pid, epoch)
            for leader, tps in by_leader.items()
        ]
        fenced = None
        for answers in await asyncio.gather(*sends):
            for tp, error in answers.items():
                if error == "NONE":
                    pending.discard(tp)
                elif error in _FENCED:
                    fenced = error
                elif error not in _RETRIABLE:
                    # CORRUPT_MESSAGE and the like: Kafka gives up on the partition too.
                    log.error("Transaction marker for %s-%d failed with %s; not retrying",
                              tp[0], tp[1], error)  # fmt: skip
                    pending.discard(tp)
        return fenced

    async def _send_to(
        self, leader: int, tps: list[tuple[str, int]], coordinator_epoch: int, commit: bool,
        pid: int, epoch: int,
    ) -> dict[tuple[str, int], str]:  # fmt: skip
        R = m.WriteTxnMarkersRequest
        by_topic: dict[str, list[int]] = {}
        for topic, partition in tps:
            by_topic.setdefault(topic, []).append(partition)
        request = R(markers=[R.WritableTxnMarker(
            producer_id=pid, producer_epoch=epoch, transaction_result=commit,
            coordinator_epoch=coordinator_epoch,
            topics=[R.WritableTxnMarkerTopic(name=t, partition_indexes=ps)
                    for t, ps in by_topic.items()],
        )])  # fmt: skip
        try:
            response = await self.send(leader, request)
        except KafkaError as e:
            return {tp: e.name if e.name in _RETRIABLE else "NETWORK_EXCEPTION" for tp in tps}
        answers = {}
        for marker in response.markers:
            for topic in marker.topics:
                for p in topic.partitions:
                    answers[(topic.name, p.partition_index)] = (
                        error_for(p.error_code).name if p.error_code else "NONE"
                    )
        return {tp: answers.get(tp, "UNKNOWN_SERVER_ERROR") for tp in tps}

    async def _write_complete(self, txn_id: str, coordinator_epoch: int, pid: int) -> None:
        """Every marker is written: CompleteCommit/CompleteAbort, retried while the
        partition is short of replicas (tryAppendToLog)."""
        while True:
            error, found = self.state_manager.get_transaction_state(txn_id)
            if found is None or found.coordinator_epoch != coordinator_epoch:
                return
            metadata = found.metadata
            if metadata.producer_id != pid or metadata.state not in (
                S.PREPARE_COMMIT, S.PREPARE_ABORT
            ):  # fmt: skip
                return
            if metadata.pending_state is not None:
                await asyncio.sleep(RETRY_BACKOFF_S)
                continue
            transit: TxnTransitMetadata = metadata.prepare_complete(self.state_manager.clock())
            error = await self.state_manager.append_transaction_to_log(
                txn_id, coordinator_epoch, transit
            )
            if error == "NONE":
                log.debug("Completed transaction for %s with coordinator epoch %d, final "
                          "state after commit: %s", txn_id, coordinator_epoch,
                          transit.txn_state.state_name)  # fmt: skip
                return
            if error != "COORDINATOR_NOT_AVAILABLE":
                log.info("Not completing transaction %s: %s", txn_id, error)
                return
            await asyncio.sleep(RETRY_BACKOFF_S)
