"""Plan what to read: topic-partitions, offset ranges, input partitions, rate limits.

The planning is the same whatever answers the questions about a topic: a Catalog
(LogDirsCatalog reads segment files; a Fetch-API catalog asks a running broker) lists
the topic-partitions and gives earliest / latest / by-timestamp offsets, and reads one
OffsetRange on an executor. Everything here is plain Python with no Spark import, so
the planning runs and is tested on its own.

"latest" is the last stable offset: the end a read_committed consumer sees, so that
no range ever ends inside an open transaction.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from kt.spark.offsets import EARLIEST, LATEST, OffsetSpec, SourceOptionError, TopicPartition
from kt.spark.options import SourceOptions, Subscription

if TYPE_CHECKING:
    import pyarrow as pa


class DataLossError(RuntimeError):
    """Offsets that should be read are gone (retention, deletion); see failOnDataLoss."""


DATA_LOSS_HINT = 'set the source option "failOnDataLoss" to "false" to skip them'


@dataclass(frozen=True)
class OffsetRange:
    """Offsets [start, end) of one topic-partition: one Spark input partition."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


class Catalog(Protocol):
    """What planning asks of a place holding topics (segment files or a broker)."""

    def topic_partitions(self) -> list[TopicPartition]: ...

    def earliest(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]: ...

    def latest(
        self, tps: Iterable[TopicPartition], from_offsets: dict[TopicPartition, int] | None = None
    ) -> dict[TopicPartition, int]: ...

    def offsets_for_timestamp(
        self, tps: Iterable[TopicPartition], timestamp: int
    ) -> dict[TopicPartition, int | None]: ...

    def read(
        self, offsets: OffsetRange, schema: pa.Schema, fail_on_data_loss: bool
    ) -> Iterator[pa.RecordBatch]: ...


def open_catalog(options: SourceOptions) -> Catalog:
    """The catalog for the options' location."""
    if options.bootstrap_servers:
        from kt.spark.fetch_catalog import FetchCatalog

        return FetchCatalog(options.bootstrap_servers, options.read_committed)
    from kt.spark.log_dirs import LogDirsCatalog

    return LogDirsCatalog(options.log_dirs, options.read_committed)


def subscribed(catalog: Catalog, subscription: Subscription) -> list[TopicPartition]:
    """The topic-partitions the subscription names that exist; assign insists they do."""
    found = catalog.topic_partitions()
    if subscription.kind != "assign":
        return [tp for tp in found if subscription.matches(tp[0])]
    missing = sorted(set(subscription.partitions) - set(found))
    if missing:
        listed = ", ".join(f"{t}-{p}" for t, p in missing)
        raise SourceOptionError(f"assign: no such topic-partition {listed}")
    return sorted(set(subscription.partitions))


@dataclass(frozen=True)
class Bounds:
    """The earliest and latest offsets of some topic-partitions, asked once per plan."""

    earliest: Mapping[TopicPartition, int]
    latest: Mapping[TopicPartition, int]

    @classmethod
    def of(cls, catalog: Catalog, tps: list[TopicPartition]) -> Bounds:
        return cls(catalog.earliest(tps), catalog.latest(tps))


def resolve(
    spec: OffsetSpec,
    catalog: Catalog,
    bounds: Bounds,
    default: int,
    options: SourceOptions,
    option: str,
) -> dict[TopicPartition, int]:
    """Concrete offsets for `spec` on the partitions of `bounds` (those it does not list
    take `default`, EARLIEST or LATEST)."""
    tps = list(bounds.latest)
    if spec.kind == "timestamp":
        return _by_timestamp(spec.timestamp or 0, catalog, bounds, options)
    unknown = sorted(set(spec.offsets) - set(tps))
    if unknown:
        listed = ", ".join(f"{t}-{p}" for t, p in unknown)
        raise SourceOptionError(f"{option}: {listed} is not a subscribed topic-partition")
    wanted = {tp: spec.offsets.get(tp, default) for tp in tps}
    if spec.kind == "earliest":
        wanted = dict.fromkeys(tps, EARLIEST)
    elif spec.kind == "latest":
        wanted = dict.fromkeys(tps, LATEST)
    earliest, latest = bounds.earliest, bounds.latest
    out = {}
    for tp, offset in wanted.items():
        if offset == EARLIEST:
            out[tp] = earliest[tp]
        elif offset == LATEST:
            out[tp] = latest[tp]
        else:
            out[tp] = _checked(tp, offset, earliest[tp], latest[tp], options, option)
    return out


def _checked(
    tp: TopicPartition, offset: int, earliest: int, latest: int, options: SourceOptions, name: str
) -> int:
    if offset < earliest:
        if options.fail_on_data_loss:
            raise DataLossError(
                f"{name}: offset {offset} of {tp[0]}-{tp[1]} was deleted (the log starts at "
                f"{earliest}); {DATA_LOSS_HINT}"
            )
        return earliest
    if offset > latest:
        raise SourceOptionError(
            f"{name}: offset {offset} of {tp[0]}-{tp[1]} is past the end of the log ({latest})"
        )
    return offset


def _by_timestamp(
    timestamp: int, catalog: Catalog, bounds: Bounds, options: SourceOptions
) -> dict[TopicPartition, int]:
    latest = bounds.latest
    found = catalog.offsets_for_timestamp(list(latest), timestamp)
    out = {}
    for tp in latest:
        offset = found[tp]
        if offset is None or offset > latest[tp]:
            if not options.no_match_latest:
                raise SourceOptionError(
                    f"startingTimestamp: no record of {tp[0]}-{tp[1]} has a timestamp >= "
                    f"{timestamp} (startingOffsetsByTimestampStrategy=latest starts such "
                    "partitions at their end)"
                )
            offset = latest[tp]
        out[tp] = offset
    return out


def split(ranges: Iterable[OffsetRange], max_records: int | None) -> list[OffsetRange]:
    """Cut every range into pieces of at most `max_records` offsets (None: keep them whole).

    Empty ranges are dropped: they would only start tasks that read nothing.
    """
    out = []
    for r in ranges:
        if r.size <= 0:
            continue
        step = r.size if max_records is None else max_records
        pieces = -(-r.size // step)
        bounds = [r.start + r.size * i // pieces for i in range(pieces + 1)]
        out.extend(
            OffsetRange(r.topic, r.partition, lo, hi) for lo, hi in itertools.pairwise(bounds)
        )
    return out


def plan_batch(options: SourceOptions, catalog: Catalog) -> list[OffsetRange]:
    """The offset ranges of a batch query, split by maxRecordsPerPartition."""
    tps = subscribed(catalog, options.subscription)
    bounds = Bounds.of(catalog, tps)
    start = resolve(options.starting, catalog, bounds, EARLIEST, options, "startingOffsets")
    end = resolve(options.ending, catalog, bounds, LATEST, options, "endingOffsets")
    ranges = []
    for tp in tps:
        if start[tp] > end[tp]:
            raise SourceOptionError(
                f"startingOffsets {start[tp]} of {tp[0]}-{tp[1]} is after its end {end[tp]}"
            )
        ranges.append(OffsetRange(tp[0], tp[1], start[tp], end[tp]))
    return split(ranges, options.max_records_per_partition)


def rate_limit(
    start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int], max_offsets: int
) -> dict[TopicPartition, int]:
    """End offsets that admit at most `max_offsets` in all, shared in proportion to the lag
    of each partition (as Spark's KafkaMicroBatchStream.rateLimit does)."""
    lags = {tp: max(0, end - start.get(tp, end)) for tp, end in latest.items()}
    total = sum(lags.values())
    if total <= max_offsets:
        return dict(latest)
    out = {}
    for tp, end in latest.items():
        begin = start.get(tp, end)
        share = max_offsets * lags[tp] / total
        # Spark rounds a share below one up, so that no lagging partition starves.
        out[tp] = min(end, begin + (math.ceil(share) if share < 1 else math.floor(share)))
    return out
