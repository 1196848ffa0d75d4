"""What the handlers ask of the authorizer (KafkaApis' authHelper): every check passes
when no authorizer is configured. The operations are Kafka's, per API; the codes of the
refusals are kt/errors.py's."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kt.security import acls as a

if TYPE_CHECKING:
    from kt.broker.broker_services import BrokerServices


def allowed(
    broker: BrokerServices, ctx: Any, operation: int, resource_type: int, name: str
) -> bool:
    authorizer = broker.authorizer
    return authorizer is None or authorizer.authorize(ctx, operation, resource_type, name)


def topic_allowed(broker: BrokerServices, ctx: Any, operation: int, topic: str) -> bool:
    return allowed(broker, ctx, operation, a.TOPIC, topic)


def group_allowed(broker: BrokerServices, ctx: Any, operation: int, group: str) -> bool:
    return allowed(broker, ctx, operation, a.GROUP, group)


def cluster_allowed(broker: BrokerServices, ctx: Any, operation: int) -> bool:
    return allowed(broker, ctx, operation, a.CLUSTER, a.CLUSTER_NAME)


def topics_allowed(broker: BrokerServices, ctx: Any, operation: int, topics: Any) -> set[str]:
    """The topics among `topics` the principal may `operation` (each asked once)."""
    if broker.authorizer is None:
        return set(topics)
    return {t for t in set(topics) if topic_allowed(broker, ctx, operation, t)}


def unauthorized_topics(broker: BrokerServices, ctx: Any, names: Any) -> str | None:
    """A group heartbeat's subscribed topics the principal may not DESCRIBE, as the
    message of TOPIC_AUTHORIZATION_FAILED; None when it may see them all."""
    if names is None or broker.authorizer is None:
        return None
    denied = sorted(set(names) - topics_allowed(broker, ctx, a.DESCRIBE, names))
    return f"Unauthorized topics {denied}" if denied else None


# The operations each resource type supports (Kafka's AclEntry.supportedOperations; a
# group's configs, KIP-848, add DESCRIBE_CONFIGS and ALTER_CONFIGS to a group's, as in
# Kafka 4).
SUPPORTED_OPERATIONS = {
    a.TOPIC: (a.READ, a.WRITE, a.CREATE, a.DESCRIBE, a.DELETE, a.ALTER, a.DESCRIBE_CONFIGS,
              a.ALTER_CONFIGS),
    a.GROUP: (a.READ, a.DESCRIBE, a.DELETE, a.DESCRIBE_CONFIGS, a.ALTER_CONFIGS),
    a.CLUSTER: (a.CREATE, a.CLUSTER_ACTION, a.DESCRIBE_CONFIGS, a.ALTER_CONFIGS,
                a.IDEMPOTENT_WRITE, a.ALTER, a.DESCRIBE),
}  # fmt: skip


def authorized_operations(broker: BrokerServices, ctx: Any, resource_type: int, name: str) -> int:
    """The bit field of the operations the principal may do on the resource (KIP-430):
    every supported one without an authorizer."""
    bits = 0
    for operation in SUPPORTED_OPERATIONS[resource_type]:
        if allowed(broker, ctx, operation, resource_type, name):
            bits |= 1 << operation
    return bits
