"""The logic of `kt leader-election` (Kafka's LeaderElectionCommand) and of the older
`kt preferred-replica-election`. Formats: Kafka 3.9's LeaderElectionCommand.java."""

from __future__ import annotations

import json

from kt.client.admin import AdminClient
from kt.errors import error_for
from kt.metadata.jvm_order import java_hash_set_order, topic_partition_hash

ELECTION_TYPES = {"PREFERRED": 0, "UNCLEAN": 1}
NOT_NEEDED = 84  # ELECTION_NOT_NEEDED

Partition = tuple[str, int]


class ElectionError(Exception):
    """The command failed: its message on stderr, exit 1."""


def parse_election_data(text: str) -> list[Partition]:
    """{"partitions":[{"topic":"t","partition":1}]}, with LeaderElectionCommand's checks."""
    try:
        doc = json.loads(text) if text.strip() else None
    except ValueError:
        doc = None
    if doc is None:
        raise ElectionError("Replica election data is empty")
    if not isinstance(doc, dict) or "partitions" not in doc:
        raise ElectionError('Replica election data is missing "partitions" field')
    try:
        partitions = [(str(e["topic"]), int(e["partition"])) for e in doc["partitions"]]
    except KeyError as e:
        raise ElectionError(f"No such field exists: `{e.args[0]}`") from None
    except (TypeError, ValueError):
        raise ElectionError("Replica election data is empty") from None
    duplicates = sorted({tp for tp in partitions if partitions.count(tp) > 1})
    if duplicates:
        shown = ", ".join(f"{t}-{p}" for t, p in duplicates)
        raise ElectionError(f"Replica election data contains duplicate partitions: [{shown}]")
    return partitions


def elect(admin: AdminClient, election_type: str, partitions: list[Partition] | None) -> list[str]:
    """electLeaders: the lines to print; ElectionError (after them) if any failed."""
    results = admin.elect_leaders(ELECTION_TYPES[election_type], partitions)
    order = java_hash_set_order(sorted(results), topic_partition_hash)
    succeeded = [tp for tp in order if results[tp][0] == 0]
    noop = [tp for tp in order if results[tp][0] == NOT_NEEDED]
    failed = [tp for tp in order if results[tp][0] not in (0, NOT_NEEDED)]
    lines = []
    if succeeded:
        lines.append(f"Successfully completed leader election ({election_type}) for partitions "
                     + ", ".join(f"{t}-{p}" for t, p in succeeded))  # fmt: skip
    if noop:
        lines.append("Valid replica already elected for partitions "
                     + ", ".join(f"{t}-{p}" for t, p in noop))  # fmt: skip
    for t, p in failed:
        code, message = results[(t, p)]
        lines.append(
            f"Error completing leader election ({election_type}) for partition: {t}-{p}: "
            f"{error_for(code).java_exception}: {message or error_for(code).message}"
        )
    if failed:
        raise ElectionError("\n".join(lines) + f"\n{len(failed)} replica(s) could not be elected")
    return lines
