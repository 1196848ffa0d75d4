"""`kt transactions` (kafka-transactions.sh, Kafka's TransactionsCommand): list, describe,
describe-producers, abort and find-hanging, with its tables (ToolsUtils.prettyPrintTable:
each column padded to its widest cell, every cell followed by a tab).

The requests are Kafka's admin client's: ListTransactions to every broker,
DescribeTransactions to each transactional id's coordinator (FindCoordinator key type
1), DescribeProducers to a partition's leader (or the broker asked for), and, to abort
a hanging transaction, WriteTxnMarkers straight to the partition's leader with the
producer's id, epoch and coordinator epoch (AbortTransactionHandler).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from kt.client.admin import AdminClient
from kt.errors import KafkaError, error_for
from kt.protocol import ApiKey
from kt.protocol import messages as m

TRANSACTION_KEY = 1
RETRIABLE = frozenset({"COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE",
                       "NOT_COORDINATOR"})  # fmt: skip


class TransactionsError(Exception):
    """A failure the command prints as its one line (printErrorAndExit)."""


def pretty_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]
    return ["".join(cell.ljust(w) + "\t" for cell, w in zip(row, widths, strict=True))
            for row in (headers, *rows)]  # fmt: skip


def _error(code: int) -> KafkaError:
    return KafkaError(code, error_for(code).message)


def _failed(what: str, error: Exception) -> TransactionsError:
    """printErrorAndExit(message, cause): the cause's message, then Kafka's hint."""
    message = error.args[1] if isinstance(error, KafkaError) and len(error.args) > 1 else error
    return TransactionsError(f"{what}: {message}. Enable debug logging for additional detail.")


# -- list -------------------------------------------------------------------------------

LIST_HEADERS = ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]


def list_transactions(
    admin: AdminClient, duration_ms: int | None = None, producer_ids: set[int] | None = None
) -> list[tuple[int, Any]]:
    """(broker id, listing) of every broker's transactions."""
    client = admin.client
    client.metadata([])
    request = m.ListTransactionsRequest(
        state_filters=[], producer_id_filters=sorted(producer_ids or ()),
        duration_filter=-1 if duration_ms is None else duration_ms,
    )  # fmt: skip
    found = []
    for broker in sorted(client.brokers):
        response = client.connection(broker).send(ApiKey.LIST_TRANSACTIONS, request)
        if response.error_code:
            raise _error(response.error_code)
        found += [(broker, t) for t in response.transaction_states]
    return found


def list_lines(admin: AdminClient, duration_ms: int | None) -> list[str]:
    try:
        listed = list_transactions(admin, duration_ms)
    except KafkaError as e:
        raise _failed("Failed to list transactions", e) from None
    rows = [[t.transactional_id, str(broker), str(t.producer_id), t.transaction_state]
            for broker, t in listed]  # fmt: skip
    return pretty_table(LIST_HEADERS, rows)


# -- describe ---------------------------------------------------------------------------

DESCRIBE_HEADERS = [
    "CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
    "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
    "TopicPartitions",
]  # fmt: skip


def find_coordinator(admin: AdminClient, transactional_id: str, timeout_s: float = 30) -> int:
    client = admin.client
    deadline = time.monotonic() + timeout_s
    while True:
        code, node, _, _ = client.find_coordinator(transactional_id, TRANSACTION_KEY)
        if code == 0:
            return node
        if error_for(code).name not in RETRIABLE or time.monotonic() > deadline:
            raise _error(code)
        time.sleep(0.1)


def describe_transaction(admin: AdminClient, transactional_id: str) -> tuple[int, Any]:
    """(coordinator id, DescribeTransactions state) of one transactional id."""
    deadline = time.monotonic() + 30
    while True:
        coordinator = find_coordinator(admin, transactional_id)
        response = admin.client.connection(coordinator).send(
            ApiKey.DESCRIBE_TRANSACTIONS,
            m.DescribeTransactionsRequest(transactional_ids=[transactional_id]),
        )
        state = response.transaction_states[0]
        if not state.error_code:
            return coordinator, state
        if error_for(state.error_code).name not in RETRIABLE or time.monotonic() > deadline:
            raise _error(state.error_code)
        time.sleep(0.1)


def describe_lines(admin: AdminClient, transactional_id: str, now_ms: int) -> list[str]:
    try:
        coordinator, state = describe_transaction(admin, transactional_id)
    except KafkaError as e:
        if e.name == "TRANSACTIONAL_ID_NOT_FOUND":  # DescribeTransactionsHandler's words
            e = KafkaError(
                e.code,
                f"DescribeTransactions request for transactionalId "
                f"`{transactional_id}` failed because the ID could not be found",
            )
        raise _failed(
            f"Failed to describe transaction state of transactional-id `{transactional_id}`", e
        ) from None
    start = state.transaction_start_time_ms
    partitions = ",".join(f"{t.topic}-{p}" for t in state.topics for p in t.partitions)
    row = [
        str(coordinator), transactional_id, str(state.producer_id), str(state.producer_epoch),
        state.transaction_state, str(state.transaction_timeout_ms),
        "None" if start < 0 else str(start), "None" if start < 0 else str(now_ms - start),
        partitions,
    ]  # fmt: skip
    return pretty_table(DESCRIBE_HEADERS, [row])


# -- describe-producers ---------------------------------------------------------------------

PRODUCERS_HEADERS = ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence",
                     "LastTimestamp", "CurrentTransactionStartOffset"]  # fmt: skip


def describe_producers(
    admin: AdminClient, topic: str, partition: int, broker_id: int | None = None
) -> list[Any]:
    """The active producers of a partition, from its leader or from `broker_id`."""
    client = admin.client
    if broker_id is None:
        info = client.metadata([topic]).get(topic)
        if info is None or info.error_code:
            raise _error(info.error_code if info is not None else 3)
        if partition not in info.partitions:
            raise _error(KafkaError("UNKNOWN_TOPIC_OR_PARTITION").code)
        broker_id = info.partitions[partition].leader
    else:
        client.metadata([])
    R = m.DescribeProducersRequest
    response = client.connection(broker_id).send(ApiKey.DESCRIBE_PRODUCERS, R(
        topics=[R.TopicRequest(name=topic, partition_indexes=[partition])]
    ))  # fmt: skip
    answer = response.topics[0].partitions[0]
    if answer.error_code:
        raise _error(answer.error_code)
    return list(answer.active_producers)


def producers_lines(
    admin: AdminClient, topic: str, partition: int, broker_id: int | None
) -> list[str]:
    try:
        producers = describe_producers(admin, topic, partition, broker_id)
    except KafkaError as e:
        where = "leader" if broker_id is None else f"broker {broker_id}"
        raise _failed(f"Failed to describe producers for partition {topic}-{partition} on "
                      f"{where}", e) from None  # fmt: skip
    rows = [[
        str(p.producer_id), str(p.producer_epoch), str(p.coordinator_epoch),
        str(p.last_sequence), str(p.last_timestamp),
        "None" if p.current_txn_start_offset < 0 else str(p.current_txn_start_offset),
    ] for p in producers]  # fmt: skip
    return pretty_table(PRODUCERS_HEADERS, rows)


# -- abort ------------------------------------------------------------------------------


@dataclass(frozen=True)
class AbortTransactionSpec:
    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int

    def __str__(self) -> str:
        return (f"AbortTransactionSpec(topicPartition={self.topic}-{self.partition}, "
                f"producerId={self.producer_id}, producerEpoch={self.producer_epoch}, "
                f"coordinatorEpoch={self.coordinator_epoch})")  # fmt: skip


def abort_spec_at(
    admin: AdminClient, topic: str, partition: int, start_offset: int
) -> AbortTransactionSpec:
    try:
        producers = describe_producers(admin, topic, partition)
    except KafkaError as e:
        raise _failed(f"Failed to validate producer state for partition {topic}-{partition}",
                      e) from None  # fmt: skip
    for p in producers:
        if p.current_txn_start_offset >= 0 and p.current_txn_start_offset == start_offset:
            return AbortTransactionSpec(topic, partition, p.producer_id, p.producer_epoch,
                                        max(p.coordinator_epoch, 0))  # fmt: skip
    raise TransactionsError(f"Could not find any open transactions starting at offset "
                            f"{start_offset} on partition {topic}-{partition}")  # fmt: skip


def abort_transaction(admin: AdminClient, spec: AbortTransactionSpec) -> None:
    """WriteTxnMarkers (ABORT) to the partition's leader, as the admin client does."""
    client = admin.client
    try:
        info = client.metadata([spec.topic]).get(spec.topic)
        if info is None or spec.partition not in info.partitions:
            raise _error(KafkaError("UNKNOWN_TOPIC_OR_PARTITION").code)
        leader = info.partitions[spec.partition].leader
        R = m.WriteTxnMarkersRequest
        response = client.connection(leader).send(ApiKey.WRITE_TXN_MARKERS, R(markers=[
            R.WritableTxnMarker(
                producer_id=spec.producer_id, producer_epoch=spec.producer_epoch,
                transaction_result=False, coordinator_epoch=spec.coordinator_epoch,
                topics=[R.WritableTxnMarkerTopic(name=spec.topic,
                                                 partition_indexes=[spec.partition])],
            )
        ]))  # fmt: skip
        code = response.markers[0].topics[0].partitions[0].error_code
        if code:
            raise _error(code)
    except KafkaError as e:
        raise _failed(f"Failed to abort transaction {spec}", e) from None


# -- find-hanging ---------------------------------------------------------------------------

HANGING_HEADERS = ["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch",
                   "StartOffset", "LastTimestamp", "Duration(min)"]  # fmt: skip


def find_hanging(
    admin: AdminClient,
    topic: str | None,
    partition: int | None,
    broker_id: int | None,
    max_timeout_min: int,
    now_ms: int,
) -> list[str]:
    """Open transactions older than the maximum timeout whose coordinator does not know
    them (no transactional id for the producer, or the partition not in its
    transaction): those no marker will ever end."""
    client = admin.client
    if topic is not None and partition is not None:
        partitions = [(topic, partition)]
    else:
        topics = client.metadata([topic] if topic is not None else None)
        partitions = [
            (t, p)
            for t, info in sorted(topics.items())
            for p, pi in sorted(info.partitions.items())
            if broker_id is None or broker_id in pi.replicas
        ]
    candidates = []
    for t, p in partitions:
        try:
            producers = describe_producers(admin, t, p, broker_id)
        except KafkaError as e:
            raise _failed(f"Failed to describe producers for {len(partitions)} partitions on "
                          f"broker {_optional(broker_id)}", e) from None  # fmt: skip
        for producer in producers:
            if producer.current_txn_start_offset >= 0 and (
                now_ms - producer.last_timestamp > max_timeout_min * 60_000
            ):
                candidates.append((t, p, producer))
    hanging = []
    if candidates:
        pids = {c[2].producer_id for c in candidates}
        try:
            ids = {
                t.producer_id: t.transactional_id for _, t in list_transactions(admin, None, pids)
            }
        except KafkaError as e:
            raise _failed(f"Failed to list transactions for {len(pids)} producers", e) from None
        described: dict[str, Any] = {}
        for transactional_id in set(ids.values()):
            try:
                described[transactional_id] = describe_transaction(admin, transactional_id)[1]
            except KafkaError as e:
                if e.name != "TRANSACTIONAL_ID_NOT_FOUND":
                    raise _failed(f"Failed to describe {len(ids)} transactions", e) from None
        for t, p, producer in candidates:
            state = described.get(ids.get(producer.producer_id, ""))
            in_txn = state is not None and any(
                d.topic == t and p in d.partitions for d in state.topics
            )
            if not in_txn:
                hanging.append((t, p, producer))
    rows = [[
        t, str(p), str(h.producer_id), str(h.producer_epoch), str(h.coordinator_epoch),
        str(h.current_txn_start_offset), str(h.last_timestamp),
        str((now_ms - h.last_timestamp) // 60_000),
    ] for t, p, h in hanging]  # fmt: skip
    return pretty_table(HANGING_HEADERS, rows)


def _optional(value: int | None) -> str:
    return "Optional.empty" if value is None else f"Optional[{value}]"
