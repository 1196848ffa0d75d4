"""Kafka's IncludeList (tools' TopicFilter): the topic regex of --topic, --include and
--topic-partitions, as the Java tools read it."""

from __future__ import annotations

import re


class InvalidRegex(ValueError):
    """A topic regex that does not compile; the message is Kafka's."""


def include_list(raw: str) -> re.Pattern[str]:
    """The pattern for `raw`: trimmed, commas as alternatives, spaces dropped, and quotes
    around it (which property files may bring) removed. Topics match it whole."""
    regex = raw.strip().replace(",", "|").replace(" ", "")
    regex = re.sub(r"[\"']+$", "", re.sub(r"^[\"']+", "", regex))
    try:
        return re.compile(regex)
    except re.error:
        raise InvalidRegex(f"{regex} is an invalid regex.") from None
