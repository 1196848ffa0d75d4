"""`kt topics` (kafka-topics.sh): create, list, describe, alter and delete topics."""

from __future__ import annotations

import click

from kt.commands.common import (
    INT,
    KafkaCommand,
    admin_session,
    check_invalid_args,
    fail,
    given_options,
    parse_key_values,
    usage_error,
)


@click.command("topics", cls=KafkaCommand)
@click.option("--bootstrap-server", required=True, help="The Kafka server to connect to.")
@click.option("--command-config", type=click.Path(dir_okay=False), help="Client config file.")
@click.option("--create", is_flag=True, help="Create a new topic.")
@click.option("--list", "list_", is_flag=True, help="List all available topics.")
@click.option("--describe", is_flag=True, help="List details for the given topics.")
@click.option("--alter", is_flag=True, help="Alter the number of partitions.")
@click.option("--delete", is_flag=True, help="Delete a topic.")
@click.option("--topic", help="The topic to act on (a regex for list/describe/alter/delete).")
@click.option("--topic-id", help="The topic id to describe (--describe only).")
@click.option("--partitions", type=INT, help="The number of partitions.")
@click.option("--replication-factor", type=INT, help="The replication factor.")
@click.option("--replica-assignment", help="Manual assignment: 0:1,1:2,2:0 (partition by comma).")
@click.option("--config", "configs", multiple=True, help="A topic config override k=v.")
@click.option("--if-exists", is_flag=True, help="Act only if the topic exists.")
@click.option("--if-not-exists", is_flag=True, help="Create only if the topic does not exist.")
@click.option("--exclude-internal", is_flag=True, help="Exclude internal topics.")
@click.option("--under-replicated-partitions", is_flag=True, help="Only partitions with ISR < RF.")
@click.option("--unavailable-partitions", is_flag=True, help="Only partitions without a leader.")
@click.option("--under-min-isr-partitions", is_flag=True, help="Only partitions with ISR < min.")
@click.option("--at-min-isr-partitions", is_flag=True, help="Only partitions with ISR = min.")
@click.option("--topics-with-overrides", is_flag=True, help="Only topics with config overrides.")
def topics(
    bootstrap_server: str,
    command_config: str | None,
    create: bool,
    list_: bool,
    describe: bool,
    alter: bool,
    delete: bool,
    topic: str | None,
    topic_id: str | None,
    partitions: int | None,
    replication_factor: int | None,
    replica_assignment: str | None,
    configs: tuple[str, ...],
    if_exists: bool,
    if_not_exists: bool,
    exclude_internal: bool,
    under_replicated_partitions: bool,
    unavailable_partitions: bool,
    under_min_isr_partitions: bool,
    at_min_isr_partitions: bool,
    topics_with_overrides: bool,
) -> None:
    """Create, delete, describe, or change a topic."""
    from kt.tools import topics as t

    flags = {"create": create, "list": list_, "describe": describe, "alter": alter,
             "delete": delete}  # fmt: skip
    chosen = [name for name, on in flags.items() if on]
    if len(chosen) != 1:
        usage_error(
            "Command must include exactly one action: "
            "--list, --describe, --create, --alter or --delete"
        )
    action = chosen[0]
    _check_args(given_options(click.get_current_context()), action)
    overrides = parse_key_values(configs, "--config")
    filters = t.DescribeFilters(
        under_replicated_partitions, unavailable_partitions, under_min_isr_partitions,
        at_min_isr_partitions, topics_with_overrides,
    )  # fmt: skip
    with admin_session(bootstrap_server, command_config) as admin:
        try:
            if action == "create":
                assert topic is not None
                options = t.CreateOptions(
                    topic, partitions, replication_factor, replica_assignment, overrides,
                    if_not_exists,
                )  # fmt: skip
                lines = t.create_topic(admin, options)
            elif action == "list":
                lines = t.list_topics(admin, topic, exclude_internal)
            elif action == "describe":
                lines = t.describe_topics(
                    admin, topic, exclude_internal, filters, if_exists, topic_id
                )
            elif action == "alter":
                assert topic is not None
                lines = t.alter_topic(admin, topic, partitions, replica_assignment, if_exists)
            else:
                assert topic is not None
                lines = t.delete_topics(admin, topic, if_exists)
        except t.TopicCommandError as e:
            fail(f"Error while executing topic command : {e}", err=False)  # as TopicCommand
    for line in lines:
        click.echo(line)


ACTIONS = ["alter", "create", "describe", "list", "delete"]
REPORTS = [
    "under-replicated-partitions", "under-min-isr-partitions", "at-min-isr-partitions",
    "unavailable-partitions",
]  # fmt: skip


def _check_args(given: set[str], action: str) -> None:
    """TopicCommandOptions.checkRequiredArgs and checkInvalidArgs, with Kafka's messages."""

    def others(*allowed: str, plus: tuple[str, ...] = ()) -> list[str]:
        return [a for a in ACTIONS if a not in allowed] + list(plus)

    if action == "describe" and "if-exists" in given and not given & {"topic", "topic-id"}:
        usage_error("--topic or --topic-id is required to describe a topic")
    if action not in ("list", "describe") and "topic" not in given:
        usage_error('Missing required argument "[topic]"')
    if action == "alter":
        if "config" in given:
            usage_error(
                'Option combination "[[bootstrap-server], [config]]" can\'t be used with option '
                '"[alter]" (To alter topic configurations, the kafka-configs tool can be used.)'
            )
        if "partitions" not in given:
            usage_error('Missing required argument "[partitions]"')
    check_invalid_args(given, "config", others("alter", "create"))
    check_invalid_args(given, "partitions", others("alter", "create"))
    check_invalid_args(given, "replication-factor", others("create"))
    check_invalid_args(given, "replica-assignment", others("alter", "create"))
    if action == "create":
        check_invalid_args(given, "replica-assignment", ["partitions", "replication-factor"])
    for report in REPORTS:
        check_invalid_args(given, report, others("describe", plus=("topics-with-overrides",)))
    check_invalid_args(given, "topics-with-overrides", others("describe", plus=tuple(REPORTS)))
    check_invalid_args(given, "if-exists", others("alter", "delete", "describe"))
    check_invalid_args(given, "if-not-exists", others("create"))
    check_invalid_args(given, "exclude-internal", others("list", "describe"))
    check_invalid_args(given, "topic-id", others("describe"))
