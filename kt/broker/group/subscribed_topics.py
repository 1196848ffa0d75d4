"""What a consumer group subscribes to, read from the cluster's topics: the digest of the
subscribed topics whose change bumps the group epoch (Kafka 4.1's MetadataHash), and the
topics each subscription regular expression resolves to (Kafka's regex resolution;
internal topics never match)."""

from __future__ import annotations

import uuid
import zlib
from collections.abc import Iterable
from typing import Any, Protocol

from kt.broker.admin.admin_manager import INTERNAL_TOPICS
from kt.broker.group import consumer_group_records as cr
from kt.broker.group.consumer_group import ConsumerGroup, ConsumerGroupMember, ResolvedRegex
from kt.broker.group.heartbeat_request import compile_regex


class TopicsView(Protocol):
    """What the coordinator reads of the cluster's topics (the metadata cache)."""

    topics_version: int  # moves whenever a topic or partition changes

    def all_topics(self) -> list[str]: ...

    def topic_partitions(self, topic: str) -> dict[int, Any]: ...

    def topic_id(self, topic: str) -> uuid.UUID: ...

    def topic_for_id(self, topic_id: uuid.UUID) -> str | None: ...


def subscription_hash(
    topics: TopicsView, group: ConsumerGroup, members: Iterable[ConsumerGroupMember]
) -> int:
    """A digest of the subscribed topics' ids and partition counts: a change bumps the
    group epoch (Kafka 4.1's MetadataHash; its value is kt's own, and a Kafka
    coordinator loading the group computes its own and bumps once)."""
    names: set[str] = set()
    for member in members:
        names |= group.member_topics(member)
    return topics_digest(topics, names)


def topics_digest(topics: TopicsView, names: Iterable[str]) -> int:
    """The digest of these topics' ids and partition counts (absent topics left out)."""
    digest = 0
    for name in sorted(set(names)):
        count = len(topics.topic_partitions(name))
        if count:
            text = f"{name}:{topics.topic_id(name)}:{count};"
            digest = zlib.crc32(text.encode(), digest)
    return digest


def refresh_regexes(
    topics_view: TopicsView,
    group: ConsumerGroup,
    members: Iterable[ConsumerGroupMember],
    now: int,
    records: list[cr.CoordinatorRecord],
) -> bool:
    """Resolve each regex the members use against the topic names (the caller asks when
    a topic or a subscription changed); drop the ones no member uses. Replays the records
    into the group now, since the assignment reads them. True if a resolution changed."""
    wanted = {m.subscribed_topic_regex for m in members if m.subscribed_topic_regex}
    changed = False
    new: list[cr.CoordinatorRecord] = []
    topics = [t for t in topics_view.all_topics() if t not in INTERNAL_TOPICS] if wanted else []
    for pattern in sorted(wanted):
        old = group.regexes.get(pattern)
        compiled = compile_regex(pattern)
        matched = frozenset(t for t in topics if compiled.fullmatch(t))
        if old is None or old.topics != matched:
            new.append(cr.regex(group.group_id, pattern, ResolvedRegex(matched, 0, now)))
            changed = True
    for pattern in list(group.regexes):
        if pattern not in wanted:
            new.append(cr.regex(group.group_id, pattern, None))
    for record in new:
        cr.replay(group, record)
    records.extend(new)
    return changed
