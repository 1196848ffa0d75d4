"""`inter.broker.protocol.version` (Kafka's MetadataVersion in ZooKeeper mode): the
versions of the requests brokers send each other, so that a cluster of brokers of several
releases (or of Kafka and kt) speaks what all of them understand while it is upgraded.

As a Kafka 3.9 broker does: the controller sends LeaderAndIsr, UpdateMetadata and
StopReplica at the version the IBP names (ControllerChannelManager), and a follower
fetches at most at the IBP's Fetch version (MetadataVersion.fetchRequestVersion; kt's
fetchers name topics, up to v12) and lists offsets at most at its ListOffsets version;
other requests take the highest version both sides speak. A value is read as
MetadataVersion.fromVersionString reads it: "3.9" and "3.9.1" are 3.9's last IV.

kt brokers send AlterPartition (KIP-497) for every ISR change, which Kafka brokers do from
2.7-IV2 on; an older IBP (whose leaders write the ISR to ZooKeeper themselves) is refused
at start-up rather than run half-honoured.
"""

from __future__ import annotations

from kt.config_def import METADATA_VERSIONS
from kt.errors import InvalidConfigError
from kt.protocol import ApiKey

OLDEST_SUPPORTED = "2.7-IV2"

# (first IBP, version) rows, newest first, from Kafka 3.9's ControllerChannelManager and
# MetadataVersion: the version each request is sent at from that IBP on.
_PINNED: dict[ApiKey, tuple[tuple[str, int], ...]] = {
    ApiKey.LEADER_AND_ISR: (("3.4-IV0", 7), ("3.2-IV0", 6), ("2.8-IV1", 5), ("2.4-IV1", 4)),
    ApiKey.UPDATE_METADATA: (("3.4-IV0", 8), ("2.8-IV1", 7), ("2.4-IV1", 6)),
    ApiKey.STOP_REPLICA: (("3.4-IV0", 4), ("2.6-IV0", 3)),
    ApiKey.FETCH: (
        ("3.9-IV0", 17),
        ("3.7-IV4", 16),
        ("3.5-IV1", 15),
        ("3.5-IV0", 14),
        ("3.1-IV0", 13),
        ("2.7-IV1", 12),
    ),  # fmt: skip
    ApiKey.LIST_OFFSETS: (
        ("3.9-IV0", 9),
        ("3.5-IV0", 8),
        ("3.0-IV1", 7),
        ("2.8-IV0", 6),
        ("2.2-IV1", 5),
    ),  # fmt: skip
}


def resolve(value: str) -> str:
    """The MetadataVersion a configured value names: itself when it names an IV, else the
    last IV of its release ("3.9.1" -> "3.9-IV0", "2.8" -> "2.8-IV1")."""
    if value in METADATA_VERSIONS:
        return value
    segments = value.split(".")
    release = ".".join(segments[: 3 if value.startswith("0.") else 2])
    matching = [v for v in METADATA_VERSIONS if v == release or v.startswith(release + "-IV")]
    if not matching:
        raise InvalidConfigError(f"Version {value} is not a valid version")
    return matching[-1]


def _index(version: str) -> int:
    return METADATA_VERSIONS.index(version)


class InterBrokerProtocol:
    """One broker's inter.broker.protocol.version and the request versions it pins."""

    def __init__(self, value: str) -> None:
        self.value = value  # as configured
        self.version = resolve(value)
        if _index(self.version) < _index(OLDEST_SUPPORTED):
            raise InvalidConfigError(
                f"inter.broker.protocol.version={value}: kt brokers need {OLDEST_SUPPORTED} "
                "or later (they send AlterPartition for ISR changes, KIP-497); upgrade the "
                "cluster's IBP to 2.7 or later before adding kt brokers"
            )
        self.caps: dict[ApiKey, int] = {key: self._pinned(rows) for key, rows in _PINNED.items()}

    def check_message_format(self, value: str) -> None:
        """log.message.format.version counts only under an IBP older than 3.0 (Kafka 3.x
        ignores it otherwise); kt writes record format v2 only, so a format older than
        0.11.0's is refused there rather than ignored."""
        if self.at_least("3.0-IV1") or _index(resolve(value)) >= _index("0.11.0-IV0"):
            return
        raise InvalidConfigError(
            f"log.message.format.version={value}: kt writes record format v2 only "
            "(0.11.0 and later); with inter.broker.protocol.version "
            f"{self.value} set it to 0.11.0 or later"
        )

    def at_least(self, version: str) -> bool:
        return _index(self.version) >= _index(version)

    def _pinned(self, rows: tuple[tuple[str, int], ...]) -> int:
        for since, version in rows:
            if self.at_least(since):
                return version
        return rows[-1][1]

    def __repr__(self) -> str:
        return f"InterBrokerProtocol({self.version})"
