"""LogConfig: Kafka's topic keys, defaults and bounds."""

from __future__ import annotations

import pytest

from kt.config import LONG_MAX, InvalidConfigError, LogConfig


def test_defaults_are_kafkas():
    config = LogConfig()
    assert config.segment_bytes == 1073741824
    assert config.segment_ms == config.retention_ms == 604800000
    assert config.retention_bytes == -1
    assert config.index_interval_bytes == 4096
    assert config.segment_index_bytes == 10485760
    assert config.max_message_bytes == 1048588
    assert config.flush_messages == config.flush_ms == LONG_MAX
    assert config.file_delete_delay_ms == 60000
    assert config.cleanup_policy == ("delete",) and config.delete and not config.compact
    assert config.message_timestamp_type == "CreateTime" and not config.log_append_time


def test_from_props_parses_every_type_over_defaults():
    base = LogConfig.from_props({"segment.bytes": "1048576", "retention.ms": "-1"})
    config = LogConfig.from_props(
        {
            "cleanup.policy": "compact, delete",
            "preallocate": "TRUE",
            "min.cleanable.dirty.ratio": "0.25",
            "message.timestamp.type": "LogAppendTime",
        },
        defaults=base,
    )
    assert config.segment_bytes == 1048576 and config.retention_ms == -1
    assert config.cleanup_policy == ("compact", "delete") and config.compact
    assert config.preallocate is True and config.min_cleanable_dirty_ratio == 0.25
    assert config.log_append_time
    assert config.to_props()["cleanup.policy"] == "compact,delete"


@pytest.mark.parametrize(
    "props, message",
    [
        (
            {"segment.bytes": "13"},
            "^Invalid value 13 for configuration segment.bytes: Value must be at least 14$",
        ),
        (
            {"segment.bytes": "2147483648"},
            "^Invalid value 2147483648 for configuration segment.bytes: Not a number of type INT$",
        ),
        ({"retention.ms": "-2"}, "Value must be at least -1$"),
        ({"flush.messages": "0"}, "Value must be at least 1$"),
        (
            {"min.cleanable.dirty.ratio": "1.5"},
            "^Invalid value 1.5 for configuration "
            "min.cleanable.dirty.ratio: Value must be no more than 1$",
        ),
        (
            {"preallocate": "yes"},
            "^Invalid value yes for configuration preallocate: Expected "
            "value to be either true or false$",
        ),
        (
            {"cleanup.policy": "compact,shred"},
            "^Invalid value shred for configuration "
            "cleanup.policy: String must be one of: compact, delete$",
        ),
        ({"message.timestamp.type": "Now"}, "CreateTime, LogAppendTime"),
        ({"no.such.key": "1"}, "Unknown topic config name: no.such.key"),
        ({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}, "conflict"),
    ],
)
def test_bad_values_are_refused_naming_the_key(props, message):  # fmt: skip
    with pytest.raises(InvalidConfigError, match=message) as info:
        LogConfig.from_props(props)
    assert info.value.code == 40  # INVALID_CONFIG
