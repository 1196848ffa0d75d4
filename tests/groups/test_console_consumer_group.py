"""`kt console-consumer --group`: members share a topic and commit what they print."""

import pytest

from tests.groups._clients import create_topic, produce
from tests.integration.conftest import kt_command

pytestmark = pytest.mark.slow


def consume(broker, group: str, *extra: str) -> list[str]:
    result = kt_command(
        "console-consumer", "--bootstrap-server", broker.bootstrap, "--topic", "console-g",
        "--group", group, "--timeout-ms", "3000", "--property", "print.partition=true", *extra,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_a_group_resumes_after_what_it_printed(group_broker) -> None:
    create_topic(group_broker.bootstrap, "console-g", 4)
    produce(group_broker.bootstrap, "console-g", per_partition=5, partitions=4)
    first = consume(group_broker, "printers", "--from-beginning", "--max-messages", "7")
    assert len(first) == 7
    rest = consume(group_broker, "printers", "--from-beginning")
    assert len(rest) == 13
    assert sorted(first + rest) == sorted(consume(group_broker, "auditors", "--from-beginning"))
    described = kt_command(
        "consumer-groups", "--bootstrap-server", group_broker.bootstrap, "--describe",
        "--group", "printers",
    )  # fmt: skip
    lags = [line.split()[5] for line in described.stdout.splitlines()[2:] if line.strip()]
    assert lags == ["0", "0", "0", "0"]
