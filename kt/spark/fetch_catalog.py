"""The `kafka.bootstrap.servers` catalog: topics of a running broker, through its APIs.

One of the catalogs behind kt.spark.planning (LogDirsCatalog reads segment files
instead). On the driver it learns topic-partitions from Metadata and offsets from
ListOffsets sent to each partition's leader: earliest (-2), latest (-1, asked with
with the query's isolation: the last stable offset at read_committed) and by timestamp. On an
executor, each input partition fetches its OffsetRange from the partition's leader over
a connection of its own (kt.client.fetcher) and decodes the record batches straight
into Arrow columns (kt.spark.columns).

Reads have the isolation of `kafka.isolation.level`, as Kafka's consumer (and so Spark's
connector) reads: read_uncommitted by default, every data batch up to the high
watermark; read_committed asks Fetch for isolation level 1, so the broker never returns
data past the last stable offset, and the batches of aborted transactions are dropped,
known from the response's aborted-transactions list when the broker sends one, else
from the markers found by fetching ahead. Control batches are never rows.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, TypeVar

from kt.client.admin import AdminClient
from kt.client.client import KafkaClient
from kt.client.fetcher import READ_COMMITTED, READ_UNCOMMITTED, FetchedPartition, PartitionFetcher
from kt.errors import KafkaError, error_for
from kt.spark.offsets import EARLIEST, LATEST, TopicPartition
from kt.spark.planning import DATA_LOSS_HINT, DataLossError, OffsetRange
from kt.spark.transactions import AbortedTransactions, TransactionOutcomes
from kt.storage.records import Batch, iter_batches

if TYPE_CHECKING:
    import pyarrow as pa

T = TypeVar("T")
ATTEMPTS = 6
BACKOFF_S = 0.2
EMPTY_FETCHES = 20
MAX_FETCH_BYTES = 256 * 1024 * 1024
CLIENT_ID = "kt-spark"


class FetchCatalog:
    """A broker or cluster reached through `bootstrap_servers`.

    Invariants: pickles as its bootstrap servers alone (the driver's client stays on
    the driver; an executor opens its own connections); `leaders` holds the leader
    broker id last seen for each topic-partition.
    """

    def __init__(self, bootstrap_servers: str, read_committed: bool = False) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.read_committed = read_committed
        self._client: KafkaClient | None = None
        self.leaders: dict[TopicPartition, int] = {}

    def __getstate__(self) -> dict:
        return {"bootstrap_servers": self.bootstrap_servers, "read_committed": self.read_committed}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["bootstrap_servers"], state["read_committed"])

    def _with_client(self, call: Callable[[KafkaClient], T]) -> T:
        """call(client), reconnecting once if the connection broke since the last call."""
        for attempt in range(2):
            if self._client is None:
                self._client = KafkaClient(
                    self.bootstrap_servers, client_id=CLIENT_ID, timeout_s=30.0
                )
            try:
                return call(self._client)
            except KafkaError as e:
                if e.name != "NETWORK_EXCEPTION" or attempt:
                    raise
                self.close()
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _refresh(self, topics: Iterable[str] | None = None) -> dict[TopicPartition, int]:
        def ask(client: KafkaClient) -> dict:
            return client.metadata(None if topics is None else sorted(set(topics)))

        found = {}
        for name, info in self._with_client(ask).items():
            if info.error_code:
                continue
            for p, part in info.partitions.items():
                found[(name, p)] = part.leader
        self.leaders.update(found)
        return found

    def _list_offsets(
        self, specs: dict[TopicPartition, int], isolation_level: int = READ_UNCOMMITTED
    ) -> dict[TopicPartition, int]:
        """ListOffsets to each leader; retries leader moves; -1 where nothing matched."""
        left, out = dict(specs), {}
        for attempt in range(ATTEMPTS):
            if not left:
                return out
            if attempt or any(self.leaders.get(tp, -1) < 0 for tp in left):
                time.sleep(BACKOFF_S * attempt)
                self._refresh(t for t, _ in left)
            ready = {tp: ts for tp, ts in left.items() if self.leaders.get(tp, -1) >= 0}

            def ask(client: KafkaClient, ready: dict = ready) -> dict:
                return AdminClient(client).list_offsets(ready, self.leaders, isolation_level)

            for tp, (code, offset, _) in self._with_client(ask).items():
                if code == 0:
                    out[tp] = offset
                    del left[tp]
                elif not error_for(code).retriable:
                    raise KafkaError(code, f"ListOffsets of {tp[0]}-{tp[1]} failed")
        listed = ", ".join(f"{t}-{p}" for t, p in sorted(left))
        raise KafkaError("LEADER_NOT_AVAILABLE", f"no leader answered ListOffsets for {listed}")

    # -- the catalog interface --------------------------------------------------------

    def topic_partitions(self) -> list[TopicPartition]:
        return sorted(self._refresh())

    def earliest(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return self._list_offsets(dict.fromkeys(tps, EARLIEST))

    def latest(
        self, tps: Iterable[TopicPartition], from_offsets: dict[TopicPartition, int] | None = None
    ) -> dict[TopicPartition, int]:
        """The last stable offset of each partition (what a read_committed consumer sees)."""
        isolation = READ_COMMITTED if self.read_committed else READ_UNCOMMITTED
        return self._list_offsets(dict.fromkeys(tps, LATEST), isolation)

    def offsets_for_timestamp(
        self, tps: Iterable[TopicPartition], timestamp: int
    ) -> dict[TopicPartition, int | None]:
        found = self._list_offsets(dict.fromkeys(tps, timestamp))
        return {tp: (offset if offset >= 0 else None) for tp, offset in found.items()}

    def read(
        self, offsets: OffsetRange, schema: pa.Schema, fail_on_data_loss: bool
    ) -> Iterator[pa.RecordBatch]:
        """The rows of `offsets` as Arrow record batches (on an executor)."""
        with PartitionFetcher(
            self.bootstrap_servers, offsets.topic, offsets.partition, client_id=CLIENT_ID
        ) as fetcher:
            fetched = FetchedRange(fetcher, offsets, fail_on_data_loss, self.read_committed)
            from kt.spark.columns import ColumnBuilder  # numpy: on executors only

            builder = ColumnBuilder(offsets.topic, offsets.partition, offsets.start,
                                    offsets.end, schema)  # fmt: skip
            for batch in fetched.batches():
                builder.start = fetched.first
                builder.add(batch)
                if builder.full:
                    yield from builder.flush()
            yield from builder.flush()


class FetchedRange:
    """The data batches of one OffsetRange (at read_committed, only committed ones),
    fetched in order from the leader.

    Invariants: `position` (the next offset to fetch) only moves forward and every
    batch yielded holds offsets >= `first` and < `end`, perhaps among others outside
    them; `first` is the range's start, or the log start offset if retention deleted
    the start and failOnDataLoss is false.
    """

    def __init__(
        self,
        fetcher: PartitionFetcher,
        offsets: OffsetRange,
        fail_on_data_loss: bool,
        read_committed: bool = True,
    ) -> None:
        self.fetcher = fetcher
        self.isolation = READ_COMMITTED if read_committed else READ_UNCOMMITTED
        self.name = f"{offsets.topic}-{offsets.partition}"
        self.first = self.position = offsets.start
        self.end = offsets.end
        self.fail_on_data_loss = fail_on_data_loss
        self.outcomes = TransactionOutcomes(self._walk_ahead)

    def batches(self) -> Iterator[Batch]:
        empty = 0
        while self.position < self.end:
            data = self.fetcher.fetch(self.position, self.isolation)
            if data.error_code:  # OFFSET_OUT_OF_RANGE
                if not self._skip_lost_offsets():
                    return
                continue
            before = self.position
            yield from self._committed(data)
            if self.position > before:
                empty = 0
                continue
            empty += 1
            if not self._no_progress(data, empty):
                return

    def _committed(self, data: FetchedPartition) -> Iterator[Batch]:
        aborted = None if data.aborted_transactions is None else AbortedTransactions(
            data.aborted_transactions
        )  # fmt: skip
        for batch in iter_batches(data.records or b""):
            if batch.last_offset < self.position:
                continue
            if batch.last_offset >= self.end and batch.base_offset >= self.end:
                self.position = self.end
                return
            batch.ensure_valid()
            self.position = batch.last_offset + 1
            if batch.magic == 2 and self._dropped(batch, aborted):
                continue
            yield batch

    def _dropped(self, batch: Batch, aborted: AbortedTransactions | None) -> bool:
        """A control batch, or one whose transaction was aborted (read_committed)."""
        if self.isolation == READ_UNCOMMITTED:
            return batch.is_control
        if aborted is not None:
            return aborted.skip(batch)
        if batch.is_control:
            return True
        return batch.is_transactional and self.outcomes.aborted(batch)

    def _walk_ahead(self, offset: int) -> Iterator[Batch]:
        """Every batch from `offset` to the high watermark, read_uncommitted (for markers)."""
        position = offset
        while True:
            data = self.fetcher.fetch(position, READ_UNCOMMITTED)
            moved = False
            for batch in iter_batches(data.records or b""):
                if batch.last_offset >= position:
                    position, moved = batch.last_offset + 1, True
                    yield batch
            if data.error_code or not moved:
                return

    def _skip_lost_offsets(self) -> bool:
        """After OFFSET_OUT_OF_RANGE: move to the log start (True) or stop (False)."""
        earliest = self.fetcher.log_start_offset()
        if self.position < earliest:
            if self.fail_on_data_loss:
                raise DataLossError(
                    f"offsets {self.position} to {earliest} of {self.name} were deleted before "
                    f"they were read; {DATA_LOSS_HINT}"
                )
            self.first = self.position = earliest
            return True
        if self.fail_on_data_loss:
            raise DataLossError(
                f"offsets {self.position} to {self.end} of {self.name} are past the end of the "
                f"log (it was truncated); {DATA_LOSS_HINT}"
            )
        return False

    def _no_progress(self, data: FetchedPartition, empty: int) -> bool:
        """A fetch that moved nothing: grow the byte limit, wait, or give up (False)."""
        if data.records and len(data.records) >= self.fetcher.max_bytes // 2:
            # A batch larger than the limit: ask for more bytes next time.
            self.fetcher.max_bytes = min(self.fetcher.max_bytes * 2, MAX_FETCH_BYTES)
            return True
        readable = data.last_stable_offset if data.last_stable_offset >= 0 else data.high_watermark
        if 0 <= readable <= self.position and data.high_watermark <= self.position:
            if self.fail_on_data_loss:
                raise DataLossError(
                    f"offsets {self.position} to {self.end} of {self.name} are no longer in "
                    f"the log (it ends at {data.high_watermark}); {DATA_LOSS_HINT}"
                )
            return False
        if empty >= EMPTY_FETCHES:
            raise KafkaError(
                "REQUEST_TIMED_OUT",
                f"{self.name}: no data from offset {self.position} after {empty} fetches "
                f"(last stable offset {data.last_stable_offset})",
            )
        return True
