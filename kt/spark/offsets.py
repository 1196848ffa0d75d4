"""Spark's Kafka offset JSON: per-partition offsets, partition lists, and offset specs.

Formats (the same strings Spark's Kafka source accepts and writes to its checkpoints):

  partition offsets   {"topicA": {"0": 23, "1": -1}, "topicB": {"0": -2}}
                      -2 means earliest, -1 latest; partitions are JSON object keys
  assign              {"topicA": [0, 1], "topicB": [2, 4]}
  startingOffsets /   "earliest", "latest", or partition offsets JSON
  endingOffsets
  startingTimestamp   one long: milliseconds since the epoch, for every partition

A streaming source's offset is the partition-offsets dict itself (all offsets >= 0),
so a checkpoint written by one run is read back by the next.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

EARLIEST = -2
LATEST = -1

TopicPartition = tuple[str, int]


class SourceOptionError(ValueError):
    """A bad option of the kt source; str() is one line naming the option."""


@dataclass(frozen=True)
class OffsetSpec:
    """Where reading starts or ends: `kind` is earliest, latest, specific or timestamp.

    `offsets` (kind specific) maps each listed partition to an offset or EARLIEST/LATEST;
    `timestamp` (kind timestamp) is a time in ms.
    """

    kind: str
    offsets: Mapping[TopicPartition, int] = field(default_factory=dict)
    timestamp: int | None = None


def _load_json_object(text: str, option: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise SourceOptionError(f"{option}: invalid JSON ({e.msg} at char {e.pos}): {text}") from e
    if not isinstance(value, dict):
        raise SourceOptionError(f"{option}: expected a JSON object of topics, got {text}")
    return value


def _partition(key: object, option: str, topic: str) -> int:
    if isinstance(key, bool):
        raise SourceOptionError(f"{option}: partition {key!r} of topic {topic} is not a number")
    try:
        partition = int(key)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        raise SourceOptionError(
            f"{option}: partition {key!r} of topic {topic} is not a number"
        ) from None
    if partition < 0:
        raise SourceOptionError(f"{option}: partition {partition} of topic {topic} is negative")
    return partition


def parse_partition_offsets(text: str, option: str) -> dict[TopicPartition, int]:
    """`{"t": {"0": 23, "1": -1}}` -> {("t", 0): 23, ("t", 1): -1}."""
    out: dict[TopicPartition, int] = {}
    for topic, partitions in _load_json_object(text, option).items():
        if not isinstance(partitions, dict):
            raise SourceOptionError(
                f'{option}: topic {topic} needs an object of partition offsets like {{"0": 23}}'
            )
        for key, offset in partitions.items():
            partition = _partition(key, option, topic)
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < EARLIEST:
                raise SourceOptionError(
                    f"{option}: offset {offset!r} of {topic}-{partition} is not an offset "
                    "(a number >= 0, or -2 earliest, -1 latest)"
                )
            out[(topic, partition)] = offset
    return out


def parse_assign(text: str) -> list[TopicPartition]:
    """`{"t": [0, 1]}` -> [("t", 0), ("t", 1)]."""
    out: list[TopicPartition] = []
    for topic, partitions in _load_json_object(text, "assign").items():
        if not isinstance(partitions, list):
            raise SourceOptionError(f"assign: topic {topic} needs a list of partitions like [0, 1]")
        out.extend((topic, _partition(p, "assign", topic)) for p in partitions)
    if not out:
        raise SourceOptionError("assign: no partitions given")
    return out


def format_partition_offsets(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """The JSON-ready dict of `offsets`, topics and partitions in order."""
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = offset
    return out


def offsets_from_json(value: Mapping[str, Mapping[str, int]]) -> dict[TopicPartition, int]:
    """The inverse of format_partition_offsets (a streaming offset back from Spark)."""
    return {
        (topic, int(partition)): int(offset)
        for topic, partitions in value.items()
        for partition, offset in partitions.items()
    }


def parse_offset_spec(text: str | None, option: str, default: str) -> OffsetSpec:
    """ "earliest", "latest" or partition offsets JSON; None gives `default`."""
    value = (text if text is not None else default).strip()
    if value.lower() in ("earliest", "latest"):
        return OffsetSpec(value.lower())
    if value.startswith("{"):
        return OffsetSpec("specific", parse_partition_offsets(value, option))
    raise SourceOptionError(
        f'{option}: expected "earliest", "latest" or JSON like {{"topic":{{"0":23}}}}, '
        f"got {value!r}"
    )


def parse_timestamp(text: str, option: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise SourceOptionError(
            f"{option}: expected a single long value (ms since the epoch), got {text!r}"
        ) from None
