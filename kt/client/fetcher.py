"""Raw fetches of one partition from its leader, for bulk readers such as the Spark source.

The Consumer (kt.client.consumer) decodes every record into an object, as the console
tools want. A bulk reader wants the bytes the broker sent, to decode them column by
column: a PartitionFetcher sends Fetch for one partition to that partition's leader
over a connection of its own, and hands back the partition's data untouched. When the
leader moves (NOT_LEADER_OR_FOLLOWER and the other invalid-metadata errors) or the
connection breaks, it asks the bootstrap servers for the new leader and tries again.

The fields of a Fetch (v4+) response partition it returns:
  error_code           int16
  high_watermark       int64
  last_stable_offset   int64   the end a read_committed consumer may read to
  log_start_offset     int64   (v5+; -1 before)
  aborted_transactions [producer_id int64, first_offset int64], null when the broker
                       does not say (read_uncommitted, or a broker without a txn index)
  records              batches back to back; the last one may be cut at the byte limit
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from kt.client.client import KafkaClient
from kt.client.connection import BrokerConnection
from kt.errors import KafkaError, error_for
from kt.protocol import ApiKey
from kt.protocol import messages as m

READ_UNCOMMITTED = 0
READ_COMMITTED = 1
EARLIEST_TIMESTAMP = -2
DEFAULT_MAX_BYTES = 8 * 1024 * 1024
ATTEMPTS = 6
BACKOFF_S = 0.2


@dataclass
class FetchedPartition:
    """One Fetch response's data for the partition; `records` is a view of the frame."""

    error_code: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    aborted_transactions: list[tuple[int, int]] | None
    records: Any


class PartitionFetcher:
    """Fetches one topic-partition from its current leader over one connection.

    Invariants: `conn` is None or a live connection to the broker last known to lead
    the partition; every request goes to the leader, so the answers are the leader's.
    """

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        partition: int,
        *,
        client_id: str = "kt-fetcher",
        timeout_s: float = 30.0,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_wait_ms: int = 500,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.topic = topic
        self.partition = partition
        self.client_id = client_id
        self.timeout_s = timeout_s
        self.max_bytes = max_bytes
        self.max_wait_ms = max_wait_ms
        self.conn: BrokerConnection | None = None

    # -- the leader ----------------------------------------------------------------

    def _leader(self) -> BrokerConnection:
        if self.conn is None:
            with KafkaClient(
                self.bootstrap_servers, client_id=self.client_id, timeout_s=self.timeout_s
            ) as client:
                info = client.metadata([self.topic]).get(self.topic)
                if info is None or info.error_code:
                    code = info.error_code if info is not None else 0
                    raise KafkaError(
                        code or "UNKNOWN_TOPIC_OR_PARTITION", f"Topic {self.topic} not found"
                    )
                part = info.partitions.get(self.partition)
                if part is None or part.leader < 0 or part.leader not in client.brokers:
                    raise KafkaError(
                        "LEADER_NOT_AVAILABLE", f"{self.topic}-{self.partition} has no leader"
                    )
                host, port, _ = client.brokers[part.leader]
            self.conn = BrokerConnection(
                host, port, client_id=self.client_id, timeout_s=self.timeout_s
            )
        return self.conn

    def _forget_leader(self) -> None:
        if self.conn is not None:
            self.conn.close()
        self.conn = None

    def _send(self, api_key: ApiKey, request: Any, answer: Any) -> Any:
        """Send to the leader and return answer(response) -> partition data; retries
        leader moves and broken connections, raises KafkaError for other errors."""
        last: KafkaError | None = None
        for attempt in range(ATTEMPTS):
            if attempt:
                time.sleep(BACKOFF_S * attempt)
            try:
                data = answer(self._leader().send(api_key, request))
            except KafkaError as e:
                if not e.retriable:
                    raise
                last = e
                self._forget_leader()
                continue
            code = data.error_code
            if code and (error_for(code).invalid_metadata or error_for(code).retriable):
                last = KafkaError(code, f"{api_key.name} of {self.topic}-{self.partition}")
                self._forget_leader()
                continue
            return data
        assert last is not None
        raise last

    # -- requests ------------------------------------------------------------------

    def fetch(self, offset: int, isolation_level: int = READ_COMMITTED) -> FetchedPartition:
        """The partition's data from `offset` on (at most max_bytes, at least one batch).

        OFFSET_OUT_OF_RANGE comes back as the error code (the caller decides whether
        that is data loss); other errors raise KafkaError.
        """
        R = m.FetchRequest
        request = R(
            replica_id=-1,
            max_wait_ms=self.max_wait_ms,
            min_bytes=1,
            max_bytes=self.max_bytes,
            isolation_level=isolation_level,
            session_id=0,
            session_epoch=-1,
            topics=[
                R.FetchTopic(
                    topic=self.topic,
                    partitions=[
                        R.FetchPartition(
                            partition=self.partition,
                            fetch_offset=offset,
                            partition_max_bytes=self.max_bytes,
                        )
                    ],
                )
            ],
        )
        part = self._send(ApiKey.FETCH, request, self._fetched_partition)
        if part.error_code and error_for(part.error_code).name != "OFFSET_OUT_OF_RANGE":
            raise KafkaError(part.error_code, f"Fetch of {self.topic}-{self.partition} failed")
        aborted = part.aborted_transactions
        return FetchedPartition(
            part.error_code,
            part.high_watermark,
            part.last_stable_offset,
            part.log_start_offset,
            None if aborted is None else [(a.producer_id, a.first_offset) for a in aborted],
            part.records,
        )

    def _fetched_partition(self, response: Any) -> Any:
        if response.error_code:
            raise KafkaError(response.error_code, f"Fetch of {self.topic}-{self.partition}")
        for topic in response.responses:
            for part in topic.partitions:
                if topic.topic == self.topic and part.partition_index == self.partition:
                    return part
        raise KafkaError("UNKNOWN_SERVER_ERROR", "the Fetch response left out the partition")

    def log_start_offset(self) -> int:
        """The leader's log start offset (ListOffsets, earliest)."""
        R = m.ListOffsetsRequest
        request = R(
            replica_id=-1,
            isolation_level=READ_UNCOMMITTED,
            topics=[
                R.ListOffsetsTopic(
                    name=self.topic,
                    partitions=[
                        R.ListOffsetsPartition(
                            partition_index=self.partition, timestamp=EARLIEST_TIMESTAMP
                        )
                    ],
                )
            ],
        )

        def answer(response: Any) -> Any:
            return response.topics[0].partitions[0]

        part = self._send(ApiKey.LIST_OFFSETS, request, answer)
        if part.error_code:
            raise KafkaError(part.error_code, f"ListOffsets of {self.topic}-{self.partition}")
        return part.offset

    def close(self) -> None:
        self._forget_leader()

    def __enter__(self) -> PartitionFetcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
