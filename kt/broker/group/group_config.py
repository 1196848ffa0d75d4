"""Group configs (KIP-848): a group's own overrides of the broker's group settings, set
with IncrementalAlterConfigs on the GROUP resource (type 32) and read with
DescribeConfigs (Kafka's GroupConfig).

Each key has Kafka 4.4's default and the broker key that supplies it (its synonym). kt
honours consumer.session.timeout.ms and consumer.heartbeat.interval.ms (the session timer
and the interval a heartbeat answer names); consumer.assignment.interval.ms is taken and
changes nothing, kt computing an assignment in the heartbeat that needs it (as an
interval of 0 would). The share and streams groups' keys are described with their
defaults and refused, those groups not being served yet. Overrides live in
/config/groups/<group> with a change notification, as topic configs do, so every broker
learns them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kt.config import BROKER_KEYS, KafkaConfig
from kt.config_def import PARSERS
from kt.errors import InvalidConfigError

GROUP_RESOURCE = 32  # ConfigResource.Type.GROUP
SESSION_TIMEOUT = "consumer.session.timeout.ms"
HEARTBEAT_INTERVAL = "consumer.heartbeat.interval.ms"


@dataclass(frozen=True)
class GroupKey:
    name: str
    kind: str  # int, bool, string, list
    default: str  # Kafka 4.4's, as DescribeConfigs shows it
    synonym: str | None  # the broker key whose value is the group's default
    bounds: tuple[str, str] | None = None  # broker keys of its range (GroupConfig.validate)


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
    GroupKey("share.assignment.interval.ms", "int", "1000", "group.share.assignment.interval.ms"),
    GroupKey("share.auto.offset.reset", "string", "latest", None),
    GroupKey("share.delivery.count.limit", "int", "5", "group.share.delivery.count.limit"),
    GroupKey("share.heartbeat.interval.ms", "int", "5000", "group.share.heartbeat.interval.ms"),
    GroupKey("share.isolation.level", "string", "read_uncommitted", None),
    GroupKey("share.partition.max.record.locks", "int", "2000",
             "group.share.partition.max.record.locks"),
    GroupKey("share.record.lock.duration.ms", "int", "30000",
             "group.share.record.lock.duration.ms"),
    GroupKey("share.renew.acknowledge.enable", "bool", "true", None),
    GroupKey("share.session.timeout.ms", "int", "45000", "group.share.session.timeout.ms"),
    GroupKey("streams.assignment.interval.ms", "int", "1000",
             "group.streams.assignment.interval.ms"),
    GroupKey("streams.assignor.name", "string", "sticky", "group.streams.assignors"),
    GroupKey("streams.heartbeat.interval.ms", "int", "5000",
             "group.streams.heartbeat.interval.ms"),
    GroupKey("streams.initial.rebalance.delay.ms", "int", "3000",
             "group.streams.initial.rebalance.delay.ms"),
    GroupKey("streams.num.standby.replicas", "int", "0", "group.streams.num.standby.replicas"),
    GroupKey("streams.rack.aware.assignment.tags", "list", "",
             "group.streams.rack.aware.assignment.tags"),
    GroupKey("streams.session.timeout.ms", "int", "45000", "group.streams.session.timeout.ms"),
)}  # fmt: skip
# The keys of the groups kt does not serve yet: described with their defaults, refused.
_NOT_SERVED = {"share": "share groups (KIP-932)", "streams": "streams groups (KIP-1071)",
               "errors": "share groups' dead-letter queues"}  # fmt: skip
_BOUND_DEFAULTS = {
    "group.consumer.min.assignment.interval.ms": "0",
    "group.consumer.max.assignment.interval.ms": "15000",
}


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
        feature = _NOT_SERVED.get(name.split(".")[0])
        if feature is not None:  # kept, it would be expected to act
            raise InvalidConfigError(f"{name}: kt does not support {feature} yet")
        try:
            value = PARSERS[key.kind](text)
        except ValueError as e:
            message = f"Invalid value {text} for configuration {name}: {e}"
            raise InvalidConfigError(message) from None
        if key.bounds is not None:
            low, high = (int(broker_value(config, b, _BOUND_DEFAULTS.get(b, "0"))[0])
                         for b in key.bounds)  # fmt: skip
            if not low <= value <= high:
                raise InvalidConfigError(f"{name} must be in the range {low} to {high} inclusive.")


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
        override = self.overrides.get(group_id, {}).get(name)
        if override is not None:
            return int(override)
        key = GROUP_KEYS[name]
        assert key.synonym is not None
        return int(broker_value(self.config, key.synonym, key.default)[0])
