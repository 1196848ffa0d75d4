"""`kt streams-groups` against `kt server-start`, a streams group's member driven by raw
StreamsGroupHeartbeat requests: the lists, the members with their tasks, the state and
the offsets' lag in kafka-streams-groups.sh's layout; once the member left, offsets reset
(dry run, then executed) and the group deleted. The layout is checked against Kafka
4.4's tool in tests/oracle/test_kafka4_streams_groups.py."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kt.client.client import KafkaClient
from kt.client.groups import GroupAdmin
from kt.protocol import ApiKey
from kt.protocol import messages as m
from tests.groups._clients import wait_until
from tests.groups.conftest import start_broker
from tests.share.test_share_consumers import coordinator, produce

pytestmark = pytest.mark.slow

GROUP, TOPIC = "tool-app", "tool-lines"
MEMBER = "AAAAAAAAAAAAAAAAAAAAAA"  # 22 characters, as a client's member id
H = m.StreamsGroupHeartbeatRequest


def heartbeat(client: KafkaClient, epoch: int, joining: bool = False) -> Any:
    topology = H.Topology(epoch=0, subtopologies=[
        H.Subtopology(subtopology_id="0", source_topics=[TOPIC])]) if joining else None  # fmt: skip
    request = H(group_id=GROUP, member_id=MEMBER, member_epoch=epoch,
                rebalance_timeout_ms=30000 if joining else -1, topology=topology,
                process_id="process-1" if joining else None,
                active_tasks=[] if joining else None, standby_tasks=[] if joining else None,
                warmup_tasks=[] if joining else None)  # fmt: skip
    node = coordinator(client, GROUP)
    assert node is not None
    response = client.connection(node).send(ApiKey.STREAMS_GROUP_HEARTBEAT, request, 1)
    assert response.error_code == 0, response.error_message
    return response


def commit(client: KafkaClient, epoch: int, offsets: dict[int, int]) -> None:
    R = m.OffsetCommitRequest
    request = R(group_id=GROUP, generation_id_or_member_epoch=epoch, member_id=MEMBER,
                topics=[R.OffsetCommitRequestTopic(name=TOPIC, partitions=[
                    R.OffsetCommitRequestPartition(partition_index=p, committed_offset=o)
                    for p, o in offsets.items()])])  # fmt: skip
    response = client.connection(coordinator(client, GROUP)).send(ApiKey.OFFSET_COMMIT,
                                                                    request, 9)  # fmt: skip
    assert [p.error_code for t in response.topics for p in t.partitions] == [0] * len(offsets)


def tool(bootstrap: str, *args: str) -> str:
    command = [sys.executable, "-m", "kt", "streams-groups", "--bootstrap-server", bootstrap]
    result = subprocess.run([*command, *args], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_the_tool_lists_describes_resets_and_deletes_a_streams_group(tmp_path) -> None:
    broker = start_broker(tmp_path, **{"group.streams.initial.rebalance.delay.ms": "0"})
    try:
        scenario(broker.bootstrap)
    finally:
        broker.stop()


def scenario(b: str) -> None:
    admin = AdminClient({"bootstrap.servers": b})
    admin.create_topics([NewTopic(TOPIC, 2, 1)])[TOPIC].result(30)
    produce(b, TOPIC, range(10), 2)  # five records in each partition
    with KafkaClient(b, client_id="streams-client") as client:
        wait_until(lambda: coordinator(client, GROUP) is not None, 30, "a coordinator")
        joined = heartbeat(client, 0, joining=True)
        assert (
            joined.member_epoch,
            [(t.subtopology_id, t.partitions) for t in joined.active_tasks],
        ) == (2, [("0", [0, 1])])
        commit(client, 2, {0: 3, 1: 5})
        node = coordinator(client, GROUP)
        port = b.rsplit(":", 1)[1]

        assert tool(b, "--list") == f"{GROUP}\n"
        assert tool(b, "--list", "--state") == f"GROUP           STATE\n{GROUP}        Stable\n"
        assert tool(b, "--describe", "--group", GROUP, "--members") == (
            "GROUP           MEMBER                 PROCESS         CLIENT-ID       ASSIGNMENTS\n"
            f"{GROUP}        {MEMBER} process-1       streams-client  ACTIVE: 0:[0,1]; \n"
        )
        assert tool(b, "--describe", "--group", GROUP, "--members", "--verbose") == (
            "GROUP           TARGET-ASSIGNMENT-EPOCH   TOPOLOGY-EPOCH MEMBER                 "
            "MEMBER-PROTOCOL MEMBER-EPOCH    PROCESS         CLIENT-ID       ASSIGNMENTS\n"
            f"{GROUP}        2                         0              {MEMBER} streams         "
            "2               process-1       streams-client  ACTIVE: 0:[0,1]; "
            "TARGET-ACTIVE: 0:[0,1]; \n")  # fmt: skip
        coordinator_text = f"127.0.0.1:{port} ({node})".ljust(25)
        assert tool(b, "--describe", "--group", GROUP, "--state") == (
            "GROUP           COORDINATOR (ID)          ASSIGNOR        STATE                     "
            "#MEMBERS\n"
            f"{GROUP}        {coordinator_text} sticky          Stable                    1\n"
        )
        assert tool(b, "--describe", "--group", GROUP) == (
            "GROUP           TOPIC           PARTITION  OFFSET-LAG\n"
            f"{GROUP}        {TOPIC}      1          0\n"  # a HashMap's order, as Kafka's
            f"{GROUP}        {TOPIC}      0          2\n")  # fmt: skip

        left = heartbeat(client, -1)
        assert left.member_epoch == -1
    empty = tool(b, "--describe", "--group", GROUP, "--state")
    assert empty.startswith(f"\nError: Streams group '{GROUP}' has no active members.\nGROUP ")
    assert tool(b, "--describe", "--group", GROUP) == ""  # no active task: nothing to show
    planned = (
        "".join(
            "\n" + f"{g:<30} {t:<30} {p:<10} {o:<15}"
            for g, t, p, o in (
                ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"),
                (GROUP, TOPIC, 1, 0),
                (GROUP, TOPIC, 0, 0),
            )
        )
        + "\n"
    )  # "%n%-30s %-30s %-10s %-15s" per row, then a line end
    reset = ("--reset-offsets", "--group", GROUP, "--all-input-topics", "--to-earliest")
    assert tool(b, *reset, "--dry-run") == planned
    assert tool(b, *reset, "--execute") == planned
    with KafkaClient(b) as client:
        assert GroupAdmin(client).fetch_offsets(GROUP) == {(TOPIC, 0): 0, (TOPIC, 1): 0}
    deleted = tool(b, "--delete-offsets", "--group", GROUP, "--input-topic", f"{TOPIC}:1")
    assert deleted == (
        f"Request succeeded for deleting offsets from group {GROUP}.\n"
        "\nTOPIC           PARTITION  STATUS         "
        f"\n{TOPIC}      1          Successful     \n"
    )  # fmt: skip
    with KafkaClient(b) as client:
        assert GroupAdmin(client).fetch_offsets(GROUP) == {(TOPIC, 0): 0}
    assert tool(b, "--delete", "--group", GROUP) == (
        f"Deletion of requested streams groups ('{GROUP}') was successful.\n"
    )
    assert tool(b, "--list") == ""
