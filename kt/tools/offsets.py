"""The logic of `kt get-offsets` (GetOffsetShell) and `kt delete-records` (DeleteRecordsCommand)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from kt.client.admin import AdminClient
from kt.errors import KafkaError, error_for
from kt.tools.include_list import InvalidRegex, include_list

TIME_NAMES = {"latest": -1, "earliest": -2, "max-timestamp": -3}


class OffsetsCommandError(Exception):
    """One line on stderr, exit 1."""


def parse_time(text: str) -> int:
    if text in TIME_NAMES:
        return TIME_NAMES[text]
    try:
        value = int(text)
    except ValueError:
        raise OffsetsCommandError(
            f"Malformed time argument {text}. Please use -1 or latest / -2 or earliest / "
            "-3 or max-timestamp, or a specified long format timestamp"
        ) from None
    return value


def _partition_filter(spec: str | None) -> set[int] | None:
    """`0,2-4` -> {0, 2, 3, 4}; None for all."""
    if not spec:
        return None
    wanted: set[int] = set()
    for part in spec.split(","):
        lo, dash, hi = part.partition("-")
        try:
            wanted.update(range(int(lo), int(hi) + 1) if dash else [int(lo)])
        except ValueError:
            raise OffsetsCommandError(f"Invalid partition specification '{spec}'") from None
    return wanted


@dataclass
class TopicPartitionFilter:
    topic_regex: re.Pattern | None
    partitions: set[int] | None


def _topic_regex(pattern: str) -> re.Pattern[str]:
    try:
        return include_list(pattern)
    except InvalidRegex as e:
        raise OffsetsCommandError(str(e)) from None


def parse_topic_partitions(
    topic: str | None, topic_partitions: str | None, partitions: str | None
) -> list[TopicPartitionFilter]:
    if topic_partitions:
        if topic or partitions:
            raise OffsetsCommandError(
                "--topic-partitions cannot be used with --topic or --partitions"
            )
        filters = []
        for item in re.split(r",(?![0-9-]+(?:,|$))", topic_partitions):
            name, colon, parts = item.partition(":")
            filters.append(
                TopicPartitionFilter(
                    _topic_regex(name or ".*"), _partition_filter(parts if colon else None)
                )
            )
        return filters
    return [
        TopicPartitionFilter(_topic_regex(topic) if topic else None, _partition_filter(partitions))
    ]


def get_offsets(
    admin: AdminClient,
    filters: list[TopicPartitionFilter],
    time_spec: int,
    exclude_internal: bool,
) -> list[str]:
    """Lines `topic:partition:offset`, sorted by the string `topic-partition`. A leader
    that is gone or moved is asked again, as Kafka's admin client retries ListOffsets,
    until default.api.timeout.ms."""
    return admin.client.retrying(lambda: _get_offsets(admin, filters, time_spec, exclude_internal))


def _get_offsets(
    admin: AdminClient,
    filters: list[TopicPartitionFilter],
    time_spec: int,
    exclude_internal: bool,
) -> list[str]:
    topics = admin.describe_topics(None)
    leaders: dict[tuple[str, int], int] = {}
    for name, info in topics.items():
        if exclude_internal and info.is_internal:
            continue
        for f in filters:
            if f.topic_regex is not None and not f.topic_regex.fullmatch(name):
                continue
            for p, part in info.partitions.items():
                if f.partitions is None or p in f.partitions:
                    leaders[(name, p)] = part.leader
    if not leaders:
        raise OffsetsCommandError("Could not match any topic-partitions with the specified filters")
    if any(leader < 0 for leader in leaders.values()):
        raise KafkaError("LEADER_NOT_AVAILABLE", "a partition has no leader (yet)")
    found = admin.list_offsets({tp: time_spec for tp in leaders}, leaders)
    for code, _, _ in found.values():
        if code and error_for(code).retriable:  # a leader that moved: ask again
            raise KafkaError(code)
    lines = []
    for (topic, partition), (code, offset, _) in sorted(
        found.items(), key=lambda kv: f"{kv[0][0]}-{kv[0][1]}"
    ):
        if code:
            raise OffsetsCommandError(
                f"Error while getting offsets of {topic}-{partition}: {error_for(code).message}"
            )
        if offset >= 0:
            lines.append(f"{topic}:{partition}:{offset}")
    return lines


def parse_offset_json(text: str) -> dict[tuple[str, int], int]:
    try:
        doc = json.loads(text)
        entries = [(p["topic"], int(p["partition"]), int(p["offset"])) for p in doc["partitions"]]
    except (ValueError, KeyError, TypeError) as e:
        raise OffsetsCommandError(f"The input string is not a valid JSON: {e}") from None
    seen: set[tuple[str, int]] = set()
    dup = [f"{t}-{p}" for t, p, _ in entries if (t, p) in seen or seen.add((t, p))]
    if dup:
        raise OffsetsCommandError(
            f"Offset json file contains duplicate topic partitions: {','.join(dup)}"
        )
    return {(t, p): o for t, p, o in entries}


def delete_records(admin: AdminClient, offsets: dict[tuple[str, int], int]) -> list[str]:
    """Kafka's report lines; a partition that failed has a line with `error:`."""
    topics = admin.describe_topics(sorted({t for t, _ in offsets}))
    leaders = {}
    for t, p in offsets:
        info = topics.get(t)
        leaders[(t, p)] = info.partitions[p].leader if info and p in info.partitions else -1
    unknown = {tp: o for tp, o in offsets.items() if leaders[tp] < 0}
    known = {tp: o for tp, o in offsets.items() if leaders[tp] >= 0}
    results = admin.delete_records(known, leaders) if known else {}
    lines = ["Executing records delete operation", "Records delete operation completed:"]
    for tp in offsets:
        t, p = tp
        if tp in unknown:
            lines.append(f"partition: {t}-{p}\terror: {error_for(3).message}")
            continue
        code, low = results[tp]
        if code:
            lines.append(f"partition: {t}-{p}\terror: {error_for(code).message}")
        else:
            lines.append(f"partition: {t}-{p}\tlow_watermark: {low}")
    return lines
