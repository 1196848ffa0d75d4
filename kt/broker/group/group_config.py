"""Group configs (KIP-848): a group's own overrides of the broker's group settings, set
with IncrementalAlterConfigs on the GROUP resource (type 32) and read with
DescribeConfigs (Kafka's GroupConfig).

Each key has Kafka 4.4's default and the broker key that supplies it (its synonym). kt
honours consumer.session.timeout.ms and consumer.heartbeat.interval.ms (the session timer
and the interval a heartbeat answer names), and a share group's share.* keys: its
session and heartbeat timings, its share partitions' record lock duration, delivery
count limit and record locks (read at each fetch), whether its members may renew their
acquisition locks (share.renew.acknowledge.enable), where a share partition it never read
starts (share.auto.offset.reset) and what it reads (share.isolation.level).
consumer.assignment.interval.ms and share.assignment.interval.ms are taken and change
nothing, kt computing an assignment in the heartbeat that needs it (as an interval of 0
would). A streams group's streams.* keys are honoured: its session and heartbeat
timings, standby replicas, initial rebalance delay, assignment interval, rack-aware
tags (read by the sticky assignor's configs) and its assignor (sticky, kt's only one).
The keys of what kt does not serve yet (dead-letter queues) are described with their
defaults and refused. Overrides
live in /config/groups/<group> with a change notification, as topic configs do, so every
broker learns them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kt.config import BROKER_KEYS, KafkaConfig
from kt.config_def import PARSERS, parse_iso_duration_ms
from kt.errors import InvalidConfigError

GROUP_RESOURCE = 32  # ConfigResource.Type.GROUP
SESSION_TIMEOUT = "consumer.session.timeout.ms"
HEARTBEAT_INTERVAL = "consumer.heartbeat.interval.ms"
SHARE_SESSION_TIMEOUT = "share.session.timeout.ms"
SHARE_HEARTBEAT_INTERVAL = "share.heartbeat.interval.ms"
SHARE_AUTO_OFFSET_RESET = "share.auto.offset.reset"
SHARE_ISOLATION_LEVEL = "share.isolation.level"
STREAMS_ASSIGNOR_NAME = "streams.assignor.name"
STREAMS_SESSION_TIMEOUT = "streams.session.timeout.ms"
STREAMS_HEARTBEAT_INTERVAL = "streams.heartbeat.interval.ms"


@dataclass(frozen=True)
class GroupKey:
    name: str
    kind: str  # int, bool, string, list
    default: str  # Kafka 4.4's, as DescribeConfigs shows it
    synonym: str | None  # the broker key whose value is the group's default
    # broker keys of its range (GroupConfig.validate), None for a side it has not
    bounds: tuple[str | None, str | None] | None = None
    minimum: int | None = None  # its ConfigDef range's lower end


GROUP_KEYS = {k.name: k for k in (
    GroupKey("consumer.assignment.interval.ms", "int", "1000",
             "group.consumer.assignment.interval.ms",
             ("group.consumer.min.assignment.interval.ms",
              "group.consumer.max.assignment.interval.ms")),
    GroupKey(HEARTBEAT_INTERVAL, "int", "5000", "group.consumer.heartbeat.interval.ms",
             ("group.consumer.min.heartbeat.interval.ms",
              "group.consumer.max.heartbeat.interval.ms")),
    GroupKey(SESSION_TIMEOUT, "int", "45000", "group.consumer.session.timeout.ms",
             ("group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms")),
    GroupKey("errors.deadletterqueue.copy.record.enable", "bool", "false", None),
    GroupKey("errors.deadletterqueue.topic.name", "string", "", None),
    GroupKey("share.assignment.interval.ms", "int", "1000", "group.share.assignment.interval.ms",
             ("group.share.min.assignment.interval.ms",
              "group.share.max.assignment.interval.ms")),
    GroupKey(SHARE_AUTO_OFFSET_RESET, "string", "latest", None),
    GroupKey("share.delivery.count.limit", "int", "5", "group.share.delivery.count.limit",
             ("group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit")),
    GroupKey(SHARE_HEARTBEAT_INTERVAL, "int", "5000", "group.share.heartbeat.interval.ms",
             ("group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms")),
    GroupKey(SHARE_ISOLATION_LEVEL, "string", "read_uncommitted", None),
    GroupKey("share.partition.max.record.locks", "int", "2000",
             "group.share.partition.max.record.locks",
             ("group.share.min.partition.max.record.locks",
              "group.share.max.partition.max.record.locks")),
    GroupKey("share.record.lock.duration.ms", "int", "30000",
             "group.share.record.lock.duration.ms",
             ("group.share.min.record.lock.duration.ms",
              "group.share.max.record.lock.duration.ms")),
    GroupKey("share.renew.acknowledge.enable", "bool", "true", None),
    GroupKey(SHARE_SESSION_TIMEOUT, "int", "45000", "group.share.session.timeout.ms",
             ("group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms")),
    GroupKey("streams.assignment.interval.ms", "int", "1000",
             "group.streams.assignment.interval.ms",
             ("group.streams.min.assignment.interval.ms",
              "group.streams.max.assignment.interval.ms")),
    GroupKey(STREAMS_ASSIGNOR_NAME, "string", "sticky", "group.streams.assignors"),
    GroupKey(STREAMS_HEARTBEAT_INTERVAL, "int", "5000",
             "group.streams.heartbeat.interval.ms",
             ("group.streams.min.heartbeat.interval.ms",
              "group.streams.max.heartbeat.interval.ms")),
    GroupKey("streams.initial.rebalance.delay.ms", "int", "3000",
             "group.streams.initial.rebalance.delay.ms", minimum=0),
    GroupKey("streams.num.standby.replicas", "int", "0", "group.streams.num.standby.replicas",
             (None, "group.streams.max.standby.replicas"), minimum=0),
    GroupKey("streams.rack.aware.assignment.tags", "list", "",
             "group.streams.rack.aware.assignment.tags"),
    GroupKey(STREAMS_SESSION_TIMEOUT, "int", "45000", "group.streams.session.timeout.ms",
             ("group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms")),
)}  # fmt: skip
# The keys of what kt does not serve yet: described with their defaults, refused.
_NOT_SERVED = {
    "errors": "share groups' dead-letter queues",
}
STREAMS_ASSIGNORS = ("sticky",)  # group.streams.assignors: kt's one task assignor
_BOUND_DEFAULTS = {  # Kafka 4.4's defaults of the bounds kt does not read (or lists as unread)
    "group.consumer.min.assignment.interval.ms": "0",
    "group.consumer.max.assignment.interval.ms": "15000",
    "group.share.min.assignment.interval.ms": "0",
    "group.share.max.assignment.interval.ms": "15000",
    "group.share.min.delivery.count.limit": "2",
    "group.share.max.delivery.count.limit": "10",
    "group.share.min.partition.max.record.locks": "100",
    "group.share.max.partition.max.record.locks": "4000",
    "group.share.min.record.lock.duration.ms": "15000",
    "group.share.max.record.lock.duration.ms": "60000",
}
# GroupConfig.validateSessionExceedsHeartbeat
_SESSION_AND_HEARTBEAT = ((SESSION_TIMEOUT, HEARTBEAT_INTERVAL),
                          (SHARE_SESSION_TIMEOUT, SHARE_HEARTBEAT_INTERVAL),
                          (STREAMS_SESSION_TIMEOUT, STREAMS_HEARTBEAT_INTERVAL))  # fmt: skip
ISOLATION_LEVELS = ("read_committed", "read_uncommitted")


def parse_auto_offset_reset(text: str) -> tuple[str, int]:
    """ShareGroupAutoOffsetResetStrategy.fromString: (earliest | latest | by_duration, the
    duration in ms); ValueError for anything else."""
    value = text.strip().lower()
    if value in ("earliest", "latest"):
        return value, 0
    if value.startswith("by_duration:"):
        duration = text.strip()[len("by_duration:") :]
        if duration.startswith("-"):
            raise ValueError("Negative duration is not allowed.")
        return "by_duration", parse_iso_duration_ms(duration)
    raise ValueError(f"Unsupported strategy: {text}")


def broker_value(config: KafkaConfig, broker_key: str, default: str) -> tuple[str, bool]:
    """(the broker's value of `broker_key`, whether server.properties sets it)."""
    if broker_key in config.originals:
        return config.originals[broker_key].strip(), True
    if broker_key in BROKER_KEYS:  # a key kt reads: its default is kt's table's
        return str(config[broker_key]), False
    return default, False  # Kafka 4.4's default of a key kt does not read


def validate(overrides: Mapping[str, str], config: KafkaConfig) -> None:
    """GroupConfig.validate: known names, values of their type, within the broker's range."""
    for name, text in overrides.items():
        key = GROUP_KEYS.get(name)
        if key is None:
            raise InvalidConfigError(f"Unknown group config name: {name}")
        feature = _NOT_SERVED.get(name, _NOT_SERVED.get(name.split(".")[0]))
        if feature is not None:  # kept, it would be expected to act
            raise InvalidConfigError(f"{name}: kt does not support {feature} yet")
        _check_string(name, text)
        try:
            value = PARSERS[key.kind](text)
        except ValueError as e:
            message = f"Invalid value {text} for configuration {name}: {e}"
            raise InvalidConfigError(message) from None
        if key.minimum is not None and value < key.minimum:
            raise InvalidConfigError(f"Invalid value {text} for configuration {name}: Value "
                                     f"must be at least {key.minimum}")  # fmt: skip
        if key.bounds is not None:
            low, high = (_bound(config, b) for b in key.bounds)
            if low is None and high is not None and value > high:
                raise InvalidConfigError(f"{name} must be less than or equal to {high}")
            if low is not None and high is not None and not low <= value <= high:
                raise InvalidConfigError(f"{name} must be in the range {low} to {high} inclusive.")
    for session_key, heartbeat_key in _SESSION_AND_HEARTBEAT:
        if session_key in overrides or heartbeat_key in overrides:
            session = _effective(overrides, config, session_key)
            if session <= _effective(overrides, config, heartbeat_key):
                raise InvalidConfigError(f"{session_key} must be greater than {heartbeat_key}")


def _bound(config: KafkaConfig, broker_key: str | None) -> int | None:
    if broker_key is None:
        return None
    return int(broker_value(config, broker_key, _BOUND_DEFAULTS.get(broker_key, "0"))[0])


def _effective(overrides: Mapping[str, str], config: KafkaConfig, name: str) -> int:
    if name in overrides:
        return int(overrides[name])
    key = GROUP_KEYS[name]
    assert key.synonym is not None
    return int(broker_value(config, key.synonym, key.default)[0])


def _check_string(name: str, text: str) -> None:
    """The validators of the string keys (ConfigException's message)."""
    prefix = f"Invalid value {text} for configuration {name}: "
    if name == SHARE_AUTO_OFFSET_RESET:
        try:
            parse_auto_offset_reset(text)
        except ValueError:
            raise InvalidConfigError(
                f"{prefix}Invalid value `{text}` for configuration {name}. The value must be "
                "either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."
            ) from None
    elif name == STREAMS_ASSIGNOR_NAME and text not in STREAMS_ASSIGNORS:
        raise InvalidConfigError(f"{name} '{text}' is not a registered task assignor. Registered "
                                 f"assignors are: [{', '.join(STREAMS_ASSIGNORS)}].")  # fmt: skip
    elif name == SHARE_ISOLATION_LEVEL and text not in ISOLATION_LEVELS:
        raise InvalidConfigError(f"{prefix}String must be one of: "
                                 + ", ".join(ISOLATION_LEVELS))  # fmt: skip


class GroupConfigs:
    """Each group's overrides as this broker last read them (the consumer group
    coordinator asks on every heartbeat: no store read on the event loop)."""

    def __init__(self, config: KafkaConfig) -> None:
        self.config = config
        self.overrides: dict[str, dict[str, str]] = {}

    def update(self, group_id: str, overrides: Mapping[str, str]) -> None:
        if overrides:
            self.overrides[group_id] = dict(overrides)
        else:
            self.overrides.pop(group_id, None)

    def value(self, group_id: str, name: str) -> int:
        """An int key's value for `group_id`: its override, else the broker's."""
        return _effective(self.overrides.get(group_id, {}), self.config, name)

    def text(self, group_id: str, name: str) -> str:
        """A string key's value for `group_id`: its override, else Kafka's default."""
        return self.overrides.get(group_id, {}).get(name, GROUP_KEYS[name].default)

    def flag(self, group_id: str, name: str) -> bool:
        """A boolean key's value for `group_id` (ConfigDef reads true in any case)."""
        return self.text(group_id, name).strip().lower() == "true"
