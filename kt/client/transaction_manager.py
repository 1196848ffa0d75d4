"""A transactional producer's side of the protocol (Kafka's TransactionManager, on the
caller's thread): find the transactional id's coordinator, take its producer id and
epoch (InitProducerId), add each partition to the transaction before its first batch
(AddPartitionsToTxn), and end the transaction (EndTxn) once every batch is answered.

The coordinator's retriable answers are retried until max.block.ms: another broker
coordinates now (find it again), it is loading, or the previous transaction's markers
are still being written (CONCURRENT_TRANSACTIONS, retried after 20 ms as the Java
client does). Anything else raises KafkaError: PRODUCER_FENCED (another instance of the
id took over) and INVALID_PRODUCER_EPOCH are fatal for this producer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from kt.client.client import KafkaClient
from kt.client.connection import BrokerConnection
from kt.errors import KafkaError, error_for
from kt.protocol import ApiKey
from kt.protocol import messages as m

TRANSACTION_KEY = 1
FIND_AGAIN = frozenset({"NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "NETWORK_EXCEPTION"})
WAIT = frozenset({"COORDINATOR_LOAD_IN_PROGRESS", "CONCURRENT_TRANSACTIONS"})
CONCURRENT_BACKOFF_S = 0.02
CLIENT_ADD_PARTITIONS_VERSION = 3  # 4 and up are the brokers' (verify-only, batched)


class TransactionManager:
    """Invariants: `in_transaction` between begin and end; `partitions` holds the
    partitions added to the current transaction."""

    def __init__(
        self,
        client: KafkaClient,
        transactional_id: str,
        *,
        transaction_timeout_ms: int = 60000,
        retry_backoff_ms: int = 100,
        max_block_ms: int = 60000,
    ) -> None:
        self.client = client
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.retry_backoff_s = retry_backoff_ms / 1000
        self.max_block_ms = max_block_ms
        self.producer_id, self.producer_epoch = -1, -1
        self.in_transaction = False
        self.partitions: set[tuple[str, int]] = set()
        self._coordinator_id: int | None = None
        # A connection of its own: the client's connection to the same broker carries the
        # producer's pipelined Produce requests, whose answers it must not read.
        self._connection: BrokerConnection | None = None

    # -- the coordinator ------------------------------------------------------------

    def _coordinator(self) -> BrokerConnection:
        if self._coordinator_id is None or self._connection is None or self._connection.closed:
            self.close()
            code, node, host, port = self.client.find_coordinator(
                self.transactional_id, TRANSACTION_KEY
            )
            if code:
                raise KafkaError(code, f"FindCoordinator for {self.transactional_id}")
            self._coordinator_id = node
            self._connection = self.client.open_connection(host, port)
        return self._connection

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
        self._connection = None

    def _call(
        self,
        api_key: ApiKey,
        request: Any,
        error_of: Callable[[Any], int],
        max_version: int | None = None,
    ) -> Any:
        """Send to the coordinator until it answers something other than a retriable
        error (or max.block.ms passes)."""
        deadline = time.monotonic() + self.max_block_ms / 1000
        while True:
            try:
                connection = self._coordinator()
                version = connection.version_for(api_key)
                if max_version is not None:
                    version = min(version, max_version)
                response = connection.send(api_key, request, version)
                code = error_of(response)
            except KafkaError as e:
                if not e.retriable:
                    raise
                code = e.code
            if not code:
                return response
            name = error_for(code).name
            if name not in FIND_AGAIN | WAIT or time.monotonic() > deadline:
                raise KafkaError(code, f"{api_key.name} for {self.transactional_id}: {name}")
            if name in FIND_AGAIN:
                self._coordinator_id = None
                self.close()
            time.sleep(CONCURRENT_BACKOFF_S if name == "CONCURRENT_TRANSACTIONS"
                       else self.retry_backoff_s)  # fmt: skip

    # -- the transaction --------------------------------------------------------------

    def init_transactions(self) -> tuple[int, int]:
        """The id's producer id and a new epoch (fencing any older instance)."""
        response = self._call(
            ApiKey.INIT_PRODUCER_ID,
            m.InitProducerIdRequest(transactional_id=self.transactional_id,
                                    transaction_timeout_ms=self.transaction_timeout_ms),
            lambda r: r.error_code,
        )  # fmt: skip
        self.producer_id, self.producer_epoch = response.producer_id, response.producer_epoch
        return self.producer_id, self.producer_epoch

    def begin_transaction(self) -> None:
        if self.producer_id < 0:
            raise KafkaError("INVALID_TXN_STATE", "init_transactions must come first")
        if self.in_transaction:
            raise KafkaError("INVALID_TXN_STATE", "a transaction is already open")
        self.in_transaction = True
        self.partitions = set()

    def add_partitions(self, tps: Iterable[tuple[str, int]]) -> None:
        """Add the partitions that are new to the transaction, before their first batch."""
        new = sorted(set(tps) - self.partitions)
        if not new:
            return
        if not self.in_transaction:
            raise KafkaError("INVALID_TXN_STATE", "records sent outside a transaction")
        R = m.AddPartitionsToTxnRequest
        by_topic: dict[str, list[int]] = {}
        for topic, partition in new:
            by_topic.setdefault(topic, []).append(partition)

        def first_error(response: Any) -> int:
            return next((p.partition_error_code for t in response.results_by_topic_v3_and_below
                         for p in t.results_by_partition if p.partition_error_code), 0)  # fmt: skip

        self._call(ApiKey.ADD_PARTITIONS_TO_TXN, R(
            v3_and_below_transactional_id=self.transactional_id,
            v3_and_below_producer_id=self.producer_id,
            v3_and_below_producer_epoch=self.producer_epoch,
            v3_and_below_topics=[R.AddPartitionsToTxnTopic(name=t, partitions=ps)
                                 for t, ps in by_topic.items()],
        ), first_error, CLIENT_ADD_PARTITIONS_VERSION)  # fmt: skip
        self.partitions.update(new)

    def end_transaction(self, commit: bool) -> None:
        """EndTxn; the caller has every batch of the transaction answered first."""
        if not self.in_transaction:
            raise KafkaError("INVALID_TXN_STATE", "no transaction is open")
        if self.partitions:  # a transaction that wrote nothing has nothing to end
            self._call(ApiKey.END_TXN, m.EndTxnRequest(
                transactional_id=self.transactional_id, producer_id=self.producer_id,
                producer_epoch=self.producer_epoch, committed=commit,
            ), lambda r: r.error_code)  # fmt: skip
        self.in_transaction = False
        self.partitions = set()
