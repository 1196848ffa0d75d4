"""The kt source's options, named as Spark's Kafka source names them, parsed once.

Spark hands a data source its options as strings with case-insensitive names; this
module turns them into one frozen SourceOptions or raises one SourceOptionError
naming the option. Options of Spark's Kafka source that kt does not implement are
refused by name rather than silently ignored.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from kt.errors import InvalidConfigError
from kt.spark.offsets import (
    EARLIEST,
    LATEST,
    OffsetSpec,
    SourceOptionError,
    TopicPartition,
    parse_assign,
    parse_offset_spec,
    parse_timestamp,
)
from kt.unsupported import refuse_client_features

BOOTSTRAP_SERVERS = "kafka.bootstrap.servers"
LOG_DIRS = "log.dirs"

KNOWN = {
    BOOTSTRAP_SERVERS, LOG_DIRS, "subscribe", "subscribepattern", "assign",
    "startingoffsets", "endingoffsets", "startingtimestamp",
    "startingoffsetsbytimestampstrategy", "maxrecordsperpartition", "maxoffsetspertrigger",
    "includeheaders", "failondataloss",
}  # fmt: skip
NOT_SUPPORTED = {
    "startingoffsetsbytimestamp", "endingoffsetsbytimestamp", "endingtimestamp",
    "minpartitions", "minoffsetspertrigger", "maxtriggerdelay", "groupidprefix",
}  # fmt: skip


@dataclass(frozen=True)
class Subscription:
    """Which topic-partitions to read: `kind` is subscribe, subscribePattern or assign."""

    kind: str
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    partitions: tuple[TopicPartition, ...] = ()

    def matches(self, topic: str) -> bool:
        if self.kind == "subscribe":
            return topic in self.topics
        if self.kind == "subscribePattern":
            return re.fullmatch(self.pattern or "", topic) is not None
        return any(t == topic for t, _ in self.partitions)


@dataclass(frozen=True)
class SourceOptions:
    """Everything a reader needs, validated: exactly one of log_dirs / bootstrap_servers."""

    log_dirs: tuple[str, ...]
    bootstrap_servers: str | None
    subscription: Subscription
    starting: OffsetSpec
    ending: OffsetSpec
    max_records_per_partition: int | None
    max_offsets_per_trigger: int | None
    include_headers: bool
    fail_on_data_loss: bool
    no_match_latest: bool  # startingOffsetsByTimestampStrategy=latest
    read_committed: bool = False  # kafka.isolation.level, read_uncommitted by default


def _bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    text = options.get(name.lower())
    if text is None:
        return default
    if text.strip().lower() in ("true", "false"):
        return text.strip().lower() == "true"
    raise SourceOptionError(f"{name}: expected true or false, got {text!r}")


def _positive(options: Mapping[str, str], name: str) -> int | None:
    text = options.get(name.lower())
    if text is None:
        return None
    try:
        value = int(text.strip())
    except ValueError:
        value = 0
    if value <= 0:
        raise SourceOptionError(f"{name}: expected a positive integer, got {text!r}")
    return value


def _subscription(options: Mapping[str, str]) -> Subscription:
    given = [k for k in ("subscribe", "subscribepattern", "assign") if k in options]
    if len(given) != 1:
        raise SourceOptionError(
            "exactly one of the options subscribe, subscribePattern, assign must be given"
            + (f" (got {len(given)})" if given else "")
        )
    if "subscribe" in options:
        topics = tuple(t.strip() for t in options["subscribe"].split(",") if t.strip())
        if not topics:
            raise SourceOptionError("subscribe: no topics given")
        return Subscription("subscribe", topics=topics)
    if "subscribepattern" in options:
        pattern = options["subscribepattern"].strip()
        try:
            re.compile(pattern)
        except re.error as e:
            raise SourceOptionError(f"subscribePattern: invalid regex {pattern!r}: {e}") from e
        return Subscription("subscribePattern", pattern=pattern)
    return Subscription("assign", partitions=tuple(parse_assign(options["assign"])))


def _check_names(options: Mapping[str, str]) -> None:
    try:  # kafka.security.protocol=SSL and the like: refused, never read in plaintext
        refuse_client_features({k[len("kafka.") :]: v for k, v in options.items()
                                if k.startswith("kafka.")}, spark=True)  # fmt: skip
    except InvalidConfigError as e:
        raise SourceOptionError(f"kafka.{e}") from None
    for name in options:
        if name in NOT_SUPPORTED:
            raise SourceOptionError(f"option {name} of Spark's Kafka source is not supported by kt")
        if name not in KNOWN and not name.startswith("kafka."):
            raise SourceOptionError(f"unknown option {name} for the kt source")


def _location(options: Mapping[str, str]) -> tuple[tuple[str, ...], str | None]:
    dirs = tuple(d.strip() for d in options.get(LOG_DIRS, "").split(",") if d.strip())
    servers = options.get(BOOTSTRAP_SERVERS, "").strip() or None
    if bool(dirs) == bool(servers):
        raise SourceOptionError(
            f"exactly one of the options {LOG_DIRS}, {BOOTSTRAP_SERVERS} is needed"
        )
    return dirs, servers


def parse_options(raw: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """Validate `raw` (names case-insensitive) for a batch or a streaming query."""
    options = {k.lower(): v for k, v in raw.items()}
    _check_names(options)
    dirs, servers = _location(options)
    starting = parse_offset_spec(
        options.get("startingoffsets"), "startingOffsets", "latest" if streaming else "earliest"
    )
    if "startingtimestamp" in options:
        ts = parse_timestamp(options["startingtimestamp"], "startingTimestamp")
        starting = OffsetSpec("timestamp", timestamp=ts)
    strategy = options.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise SourceOptionError(
            f"startingOffsetsByTimestampStrategy: expected error or latest, got {strategy!r}"
        )
    if streaming and "endingoffsets" in options:
        raise SourceOptionError("endingOffsets is not valid in streaming queries")
    ending = parse_offset_spec(options.get("endingoffsets"), "endingOffsets", "latest")
    if not streaming:
        _check_batch_limits(starting, ending)
    return SourceOptions(
        log_dirs=dirs,
        bootstrap_servers=servers,
        subscription=_subscription(options),
        starting=starting,
        ending=ending,
        max_records_per_partition=_positive(options, "maxRecordsPerPartition"),
        max_offsets_per_trigger=_positive(options, "maxOffsetsPerTrigger"),
        include_headers=_bool(options, "includeHeaders", False),
        fail_on_data_loss=_bool(options, "failOnDataLoss", True),
        no_match_latest=strategy == "latest",
        read_committed=_isolation_level(options) == "read_committed",
    )


def _isolation_level(options: Mapping[str, str]) -> str:
    """kafka.isolation.level, as the Kafka consumer takes it (its default: read_uncommitted,
    which Spark's connector leaves as it is)."""
    value = options.get("kafka.isolation.level", "read_uncommitted").strip()
    if value not in ("read_committed", "read_uncommitted"):
        raise SourceOptionError(
            f"kafka.isolation.level: Invalid value {value} for configuration isolation.level: "
            "String must be one of: read_committed, read_uncommitted"
        )
    return value


def _check_batch_limits(starting: OffsetSpec, ending: OffsetSpec) -> None:
    """Spark's rules for batch queries: start never latest, end never earliest, start <= end."""
    if starting.kind == "latest":
        raise SourceOptionError("startingOffsets can't be latest for batch queries")
    if ending.kind == "earliest":
        raise SourceOptionError("endingOffsets can't be earliest for batch queries")
    for (topic, partition), offset in starting.offsets.items():
        if offset == LATEST:
            raise SourceOptionError(
                f"startingOffsets for {topic}-{partition} can't be latest for batch queries"
            )
    for (topic, partition), offset in ending.offsets.items():
        if offset == EARLIEST:
            raise SourceOptionError(
                f"endingOffsets for {topic}-{partition} can't be earliest for batch queries"
            )
    if starting.kind == "specific" and ending.kind == "specific":
        if set(starting.offsets) != set(ending.offsets):
            raise SourceOptionError(
                "startingOffsets and endingOffsets must name the same topic-partitions"
            )
        for tp, start in starting.offsets.items():
            end = ending.offsets[tp]
            if start >= 0 and end >= 0 and start > end:
                raise SourceOptionError(
                    f"startingOffsets {start} of {tp[0]}-{tp[1]} is after endingOffsets {end}"
                )
