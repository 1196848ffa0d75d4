"""inter.broker.protocol.version: how a value is read, the request versions it pins (Kafka
3.9's ControllerChannelManager and MetadataVersion), what kt refuses, and a connection
that sends at most the pinned versions."""

from __future__ import annotations

import pytest

from kt.client.async_connection import AsyncBrokerConnection
from kt.config import KafkaConfig
from kt.errors import InvalidConfigError
from kt.inter_broker_protocol import InterBrokerProtocol, resolve
from kt.protocol import ApiKey

L, U, S, F, LO = (ApiKey.LEADER_AND_ISR, ApiKey.UPDATE_METADATA, ApiKey.STOP_REPLICA,
                 ApiKey.FETCH, ApiKey.LIST_OFFSETS)  # fmt: skip


@pytest.mark.parametrize(("value", "version"), [
    ("3.9", "3.9-IV0"), ("3.9.1", "3.9-IV0"), ("2.8", "2.8-IV1"), ("3.3", "3.3-IV3"),
    ("3.5-IV0", "3.5-IV0"), ("0.10.2.1", "0.10.2-IV0"),
])  # fmt: skip
def test_a_value_names_its_release_last_iv(value: str, version: str) -> None:
    assert resolve(value) == version


@pytest.mark.parametrize(("value", "pinned"), [
    ("3.9", {L: 7, U: 8, S: 4, F: 17, LO: 9}),
    ("3.4", {L: 7, U: 8, S: 4, F: 13, LO: 7}),
    ("3.3", {L: 6, U: 7, S: 3, F: 13, LO: 7}),
    ("3.1", {L: 5, U: 7, S: 3, F: 13, LO: 7}),
    ("2.8", {L: 5, U: 7, S: 3, F: 12, LO: 6}),
    ("2.7-IV2", {L: 4, U: 6, S: 3, F: 12, LO: 5}),
])  # fmt: skip
def test_the_versions_a_kafka_broker_of_that_ibp_sends(value: str, pinned: dict) -> None:
    assert InterBrokerProtocol(value).caps == pinned


def test_an_ibp_without_alter_partition_is_refused() -> None:
    with pytest.raises(InvalidConfigError, match=r"inter.broker.protocol.version=2.6: kt "
                       r"brokers need 2.7-IV2 or later"):  # fmt: skip
        KafkaConfig({"inter.broker.protocol.version": "2.6"})


def test_an_old_message_format_counts_under_an_old_ibp_only() -> None:
    old = {"log.message.format.version": "0.10.2"}
    assert KafkaConfig(old).inter_broker_protocol.version == "3.9-IV0"  # ignored, as Kafka's
    with pytest.raises(InvalidConfigError, match=r"log.message.format.version=0.10.2: kt "
                       r"writes record format v2 only"):  # fmt: skip
        KafkaConfig({**old, "inter.broker.protocol.version": "2.8"})
    KafkaConfig({"log.message.format.version": "2.8", "inter.broker.protocol.version": "2.8"})


def test_a_capped_connection_sends_the_pinned_version() -> None:
    connection = AsyncBrokerConnection.__new__(AsyncBrokerConnection)
    connection.api_versions = {int(L): (0, 7), int(U): (0, 8), int(F): (4, 17)}
    connection.version_caps = InterBrokerProtocol("3.3").caps
    assert connection.version_for(L) == 6
    assert connection.version_for(U) == 7
    assert connection.version_for(F) == 12  # kt's fetchers name topics: at most v12
    connection.version_caps = {}
    assert connection.version_for(L) == 7
