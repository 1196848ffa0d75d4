"""`kt console-producer` and `kt console-consumer` (kafka-console-*.sh)."""

from __future__ import annotations

import sys
import time
from typing import Any

import click

from kt.commands.common import (
    INT,
    KafkaCommand,
    checked_client_props,
    client_security,
    fail,
    given_options,
    load_client_config,
    parse_key_values,
    usage_error,
)

TOOLS_FORMATTER = "org.apache.kafka.tools.consumer.DefaultMessageFormatter"


@click.command("console-producer", cls=KafkaCommand)
@click.option("--bootstrap-server", required=True, help="REQUIRED: The server(s) to connect to.")
@click.option("--topic", required=True, help="REQUIRED: The topic name to produce messages to.")
@click.option("--sync", is_flag=True, help="Send each line synchronously, one at a time.")
@click.option(
    "--compression-codec",
    is_flag=False,
    flag_value="gzip",
    default="none",
    help="none, gzip, snappy, lz4 or zstd; given without a value, gzip.",
)
@click.option("--batch-size", type=INT, default=16384, show_default=True, help="Batch bytes.")
@click.option("--message-send-max-retries", type=INT, default=3, show_default=True)
@click.option("--retry-backoff-ms", type=INT, default=100, show_default=True)
@click.option("--timeout", type=INT, default=1000, show_default=True,
              help="linger.ms: how long a line may wait for its batch (async mode).")  # fmt: skip
@click.option("--request-required-acks", default="-1", show_default=True, help="0, 1, -1/all.")
@click.option("--request-timeout-ms", type=INT, default=1500, show_default=True)
@click.option("--max-block-ms", type=INT, default=60000, show_default=True,
              help="max.block.ms: how long to wait for the topic's metadata.")  # fmt: skip
@click.option("--max-memory-bytes", type=INT, default=33554432, show_default=True,
              help="buffer.memory: bytes buffered before the producer sends.")  # fmt: skip
@click.option("--max-partition-memory-bytes", type=INT, default=16384, show_default=True,
              help="batch.size, as --batch-size sets it.")  # fmt: skip
@click.option("--property", "properties", multiple=True, help="Line reader property k=v.")
@click.option("--reader-config", type=click.Path(dir_okay=False),
              help="Line reader properties file; --property takes precedence.")  # fmt: skip
@click.option("--producer-property", "producer_properties", multiple=True, help="k=v")
@click.option("--producer.config", "producer_config", type=click.Path(dir_okay=False))
def console_producer(
    bootstrap_server: str,
    topic: str,
    sync: bool,
    compression_codec: str,
    batch_size: int,
    message_send_max_retries: int,
    retry_backoff_ms: int,
    timeout: int,
    request_required_acks: str,
    request_timeout_ms: int,
    max_block_ms: int,
    max_memory_bytes: int,
    max_partition_memory_bytes: int,
    properties: tuple[str, ...],
    reader_config: str | None,
    producer_properties: tuple[str, ...],
    producer_config: str | None,
) -> None:
    """Read lines from standard input and send each as a record."""
    from kt.client.client import KafkaClient
    from kt.client.producer import Producer
    from kt.client.producer_config import acks_number, idempotence
    from kt.client.sender import PipelinedProducer
    from kt.errors import KafkaError
    from kt.tools.console import LineFormatError, LineReader, stdin_lines

    props = _producer_props(
        click.get_current_context(),
        checked_client_props({**load_client_config(producer_config),
                              **parse_key_values(producer_properties, "--producer-property")}),
    )  # fmt: skip
    reader_props = {**load_client_config(reader_config),
                    **parse_key_values(properties, "--property")}  # fmt: skip
    try:
        reader = LineReader.from_props(reader_props)
    except LineFormatError as e:
        fail(str(e))
    try:
        idempotent = idempotence(props)
    except ValueError as e:
        fail(str(e))
    security = client_security(props)
    client = None
    failures = 0
    try:
        client = KafkaClient(bootstrap_server, client_id=props.get("client.id", "console-producer"),
                             **security)  # fmt: skip
        base = Producer(
            client,
            acks=acks_number(props["acks"]),
            compression=props["compression.type"],
            batch_size=int(props["batch.size"]),
            request_timeout_ms=int(props["request.timeout.ms"]),
            retry_backoff_ms=int(props["retry.backoff.ms"]),
            max_block_ms=int(props["max.block.ms"]),
            idempotent=idempotent,
        )
        producer = PipelinedProducer(
            base, linger_ms=int(props["linger.ms"]),
            max_in_flight=int(props.get("max.in.flight.requests.per.connection", "5")),
            buffer_memory=int(props["buffer.memory"]), retries=int(props["retries"]),
            delivery_timeout_ms=int(props.get("delivery.timeout.ms", "120000")),
        )  # fmt: skip
        failed: list[int] = []

        def report(error: KafkaError | None, _offset: int) -> None:
            """ErrorLoggingCallback: a record the broker refused, on standard error."""
            if error is not None:
                failed.append(1)
                click.echo(f"Error when sending message to topic {topic}: {error.name}: "
                           f"{error}", err=True)  # fmt: skip

        number = 0
        try:
            for line in stdin_lines(int(props["linger.ms"]) / 1000):
                if line is None:  # linger.ms passed with nothing new: send what waits
                    producer.poll(0)
                    continue
                number += 1
                key, value, headers = reader.parse(line, number)
                producer.send(topic, value, key, on_delivery=report, headers=headers or ())
                if sync:  # --sync: each record answered before the next is read
                    producer.flush(base.request_timeout_ms / 1000 * 4)
                elif number % 64 == 0:
                    producer.poll(0)
        finally:  # everything read before an error is sent before the tool exits
            producer.flush(max(60.0, base.request_timeout_ms / 1000 * 4))
        failures = len(failed)
    except (LineFormatError, KafkaError) as e:
        fail(f"ERROR {e}")
    finally:
        if client is not None:
            client.close()
    if failures:
        raise SystemExit(1)


# Producer configs that ConsoleProducer merges from its options (maybeMergeOptions): the
# option wins when given, its default fills a config that is not set.
MERGED_OPTIONS = {
    "linger.ms": "timeout",
    "acks": "request_required_acks",
    "request.timeout.ms": "request_timeout_ms",
    "retries": "message_send_max_retries",
    "retry.backoff.ms": "retry_backoff_ms",
    "buffer.memory": "max_memory_bytes",
    "max.block.ms": "max_block_ms",
}


def _producer_props(ctx: click.Context, props: dict[str, str]) -> dict[str, str]:
    """ConsoleProducerOptions.producerProps, with the checks the Java producer's config
    makes on acks and compression.type."""
    given = given_options(ctx)
    props["compression.type"] = ctx.params["compression_codec"]
    for key, param in MERGED_OPTIONS.items():
        if param.replace("_", "-") in given or key not in props:
            props[key] = str(ctx.params[param])
    for option in ("batch-size", "max-partition-memory-bytes"):  # both set batch.size
        if option in given or "batch.size" not in props:
            props["batch.size"] = str(ctx.params[option.replace("-", "_")])
    from kt.client.producer_config import CHOICES, checked_choice

    for key in CHOICES:
        try:
            props[key] = checked_choice(key, props[key])
        except ValueError as e:
            fail(str(e))
    return props


@click.command("console-consumer", cls=KafkaCommand)
@click.option("--bootstrap-server", required=True, help="REQUIRED: The server(s) to connect to.")
@click.option("--topic", help="The topic to consume on.")
@click.option("--include", help="Regular expression specifying list of topics to include.")
@click.option("--partition", type=INT, help="Consume only this partition.")
@click.option("--offset", help="earliest, latest (the default) or a non-negative offset.")
@click.option("--from-beginning", is_flag=True, help="Start at the earliest offset.")
@click.option("--max-messages", type=INT, help="Exit after this many messages.")
@click.option("--timeout-ms", type=INT, help="Exit when no message arrives for this long.")
@click.option("--skip-message-on-error", is_flag=True,
              help="Skip a message that cannot be formatted instead of halting.")  # fmt: skip
@click.option("--group", help="The consumer group id to join (offsets are committed).")
@click.option(
    "--isolation-level",
    type=click.Choice(["read_committed", "read_uncommitted"]),
    default="read_uncommitted",
    show_default=True,
)
@click.option("--formatter", default=TOOLS_FORMATTER, show_default=True,
              help="Default-, Logging- or NoOpMessageFormatter (Kafka's class names).")  # fmt: skip
@click.option("--formatter-config", type=click.Path(dir_okay=False),
              help="Formatter properties file; --property takes precedence.")  # fmt: skip
@click.option("--property", "properties", multiple=True, help="Formatter property k=v.")
@click.option("--key-deserializer", help="Deserializer class for keys (formatter's).")
@click.option("--value-deserializer", help="Deserializer class for values (formatter's).")
@click.option("--consumer-property", "consumer_properties", multiple=True, help="k=v")
@click.option("--consumer.config", "consumer_config", type=click.Path(dir_okay=False))
def console_consumer(
    bootstrap_server: str,
    topic: str | None,
    include: str | None,
    partition: int | None,
    offset: str | None,
    from_beginning: bool,
    max_messages: int | None,
    timeout_ms: int | None,
    skip_message_on_error: bool,
    group: str | None,
    isolation_level: str,
    formatter: str,
    formatter_config: str | None,
    properties: tuple[str, ...],
    key_deserializer: str | None,
    value_deserializer: str | None,
    consumer_properties: tuple[str, ...],
    consumer_config: str | None,
) -> None:
    """Print records of a topic to standard output."""
    from kt.client.client import KafkaClient
    from kt.client.consumer import EARLIEST, LATEST, Consumer
    from kt.errors import KafkaError
    from kt.tools.console import SerializationError, formatter_class
    from kt.tools.group_session import GroupSession
    from kt.tools.include_list import InvalidRegex, include_list

    if (topic is None) == (include is None):
        usage_error("Exactly one of --include/--topic is required. ")
    if partition is not None:
        if topic is None:
            usage_error("The topic is required when partition is specified.")
        if from_beginning and offset is not None:
            usage_error("Options from-beginning and offset cannot be specified together.")
    elif offset is not None:
        usage_error("The partition is required when offset is specified.")
    start = _start_offset(offset or "latest", from_beginning, EARLIEST, LATEST)
    props = checked_client_props({**load_client_config(consumer_config),
                                  **parse_key_values(consumer_properties,
                                                     "--consumer-property")})  # fmt: skip
    groups = {g for g in (group, props.get("group.id")) if g}
    if len(groups) > 1:
        usage_error(
            "The group ids provided in different places (directly using '--group', via "
            "'--consumer-property', or via '--consumer.config') do not match. Detected group "
            "ids: " + ", ".join(f"'{g}'" for g in sorted(groups))
        )
    group = next(iter(groups), None)
    if group and partition is not None:
        usage_error("Options group and partition cannot be specified together.")
    formatter_props = {**load_client_config(formatter_config),
                       **parse_key_values(properties, "--property")}  # fmt: skip
    for key, value in (("key.deserializer", key_deserializer),
                       ("value.deserializer", value_deserializer)):  # fmt: skip
        if value:
            formatter_props[key] = value
    try:
        printer = formatter_class(formatter).from_props(formatter_props)
        pattern = include_list(include) if include is not None else None
    except (ValueError, InvalidRegex) as e:
        usage_error(str(e))
    security = client_security(props)
    processed = 0
    member = None
    client = None
    try:
        client = KafkaClient(bootstrap_server, client_id=props.get("client.id", "console-consumer"),
                             **security)  # fmt: skip
        consumer = Consumer(client, isolation_level=1 if isolation_level == "read_committed" else 0)
        topics = [topic] if topic is not None else _matching_topics(client, pattern)
        if topic is not None and props.get("allow.auto.create.topics", "true") == "true":
            client.create_missing_topics(topics)  # the Java consumer's Metadata does
        if group:
            reset = EARLIEST if start == EARLIEST or props.get(
                "auto.offset.reset") == "earliest" else LATEST  # fmt: skip
            member = GroupSession(client, consumer, group, topics, reset, props)
            member.join()
        elif partition is not None:
            assert topic is not None
            existing = consumer.partitions_for(topic)
            if partition not in existing:
                fail(
                    f"ERROR Partition {topic}-{partition} does not exist: topic {topic} has "
                    f"{len(existing)} partition(s)"
                )
            consumer.assign({(topic, partition): start})
        else:
            consumer.assign({(t, p): start for t in topics for p in consumer.partitions_for(t)})
        last_data = time.monotonic()
        out = sys.stdout
        while max_messages is None or processed < max_messages:
            if member is not None:
                member.maintain()
            records = consumer.poll()
            if records:
                last_data = time.monotonic()
            for record in records:
                processed += 1
                try:
                    out.write(printer.format(record))
                except SerializationError as e:
                    if not skip_message_on_error:
                        raise
                    click.echo(f"Error processing message, skipping this message: {e}", err=True)
                if member is not None:
                    member.record_consumed(record)
                if max_messages is not None and processed >= max_messages:
                    break
            out.flush()
            if timeout_ms is not None and (time.monotonic() - last_data) * 1000 >= timeout_ms:
                break
        if member is not None:
            member.close()
    except KafkaError as e:
        fail(f"ERROR {e}")
    except SerializationError as e:
        fail(f"ERROR Unknown error when running consumer: {e}")
    except KeyboardInterrupt:
        if member is not None:
            member.close()
    finally:
        click.echo(f"Processed a total of {processed} messages", err=True)
        if client is not None:
            client.close()


def _matching_topics(client: Any, pattern: Any) -> list[str]:
    """The topics --include names now (kt matches once, at start)."""
    return sorted(name for name in client.metadata(None) if pattern.fullmatch(name))


def _start_offset(offset: str, from_beginning: bool, earliest: int, latest: int) -> int:
    """ConsoleConsumerOptions.parseOffset."""
    if from_beginning or offset.lower() == "earliest":
        return earliest
    if offset.lower() == "latest":
        return latest
    try:
        value = int(offset)
    except ValueError:
        value = -1
    if value < 0:
        usage_error(
            f"The provided offset value '{offset}' is incorrect. Valid values are 'earliest', "
            "'latest', or a non-negative long."
        )
    return value


@click.command("console-share-consumer", cls=KafkaCommand)
@click.option("--bootstrap-server", required=True, help="REQUIRED: The server(s) to connect to.")
@click.option("--topic", help="The topic to consume from.")
@click.option("--group", help="The share group id of the consumer.")
@click.option("--max-messages", type=INT, help="Exit after this many messages.")
@click.option("--timeout-ms", type=INT, help="Exit when no message arrives for this long.")
@click.option("--reject", is_flag=True, help="Reject the messages as they are consumed.")
@click.option("--release", is_flag=True, help="Release the messages as they are consumed.")
@click.option("--reject-message-on-error", is_flag=True,
              help="Reject a message that cannot be printed instead of halting.")  # fmt: skip
@click.option("--formatter", default=TOOLS_FORMATTER, show_default=True,
              help="The class formatting records (DefaultMessageFormatter's options).")  # fmt: skip
@click.option("--formatter-config", type=click.Path(dir_okay=False),
              help="Properties file of the formatter.")  # fmt: skip
@click.option("--formatter-property", "formatter_properties", multiple=True,
              help="Formatter property k=v (print.delivery=true: the delivery count).")  # fmt: skip
@click.option("--property", "properties", multiple=True,
              help="(deprecated) Formatter property k=v.")  # fmt: skip
@click.option("--key-deserializer", help="Deserializer class for keys (formatter's).")
@click.option("--value-deserializer", help="Deserializer class for values (formatter's).")
@click.option("--command-property", "command_properties", multiple=True,
              help="Consumer property k=v.")  # fmt: skip
@click.option("--consumer-property", "consumer_properties", multiple=True,
              help="(deprecated) Consumer property k=v.")  # fmt: skip
@click.option("--command-config", type=click.Path(dir_okay=False),
              help="Consumer properties file.")  # fmt: skip
@click.option("--consumer-config", type=click.Path(dir_okay=False),
              help="(deprecated) Consumer properties file.")  # fmt: skip
def console_share_consumer(**o: Any) -> None:
    """Print records of a topic read as a member of a share group (each record once to
    one member of the group), acknowledging each as it is printed."""
    from kt.client.client import KafkaClient
    from kt.client.share_consumer import ACCEPT, REJECT, RELEASE, ShareConsumer
    from kt.errors import KafkaError
    from kt.tools.console import SerializationError, formatter_class

    if o["reject"] and o["release"]:
        usage_error("At most one of --reject and --release may be specified.")
    if o["consumer_properties"] and o["command_properties"]:
        usage_error("Options --consumer-property and --command-property cannot be specified "
                    "together.")  # fmt: skip
    if o["consumer_config"] and o["command_config"]:
        usage_error("Options --consumer-config and --command-config cannot be specified "
                    "together.")  # fmt: skip
    if o["properties"] and o["formatter_properties"]:
        usage_error("Options --property and --formatter-property cannot be specified together.")
    if o["topic"] is None:
        usage_error("--topic is a required argument")
    props = checked_client_props({
        **load_client_config(o["command_config"] or o["consumer_config"]),
        **parse_key_values(o["command_properties"] or o["consumer_properties"],
                           "--command-property"),
    })  # fmt: skip
    groups = {g for g in (o["group"], props.get("group.id")) if g}
    if len(groups) > 1:
        usage_error(
            "The group ids provided in different places (directly using '--group', via "
            "'--consumer-property', or via '--consumer-config') do not match. Detected group "
            "ids: " + ", ".join(f"'{g}'" for g in sorted(groups))
        )
    group = next(iter(groups), "console-share-consumer")
    formatter_props = {**load_client_config(o["formatter_config"]),
                       **parse_key_values(o["formatter_properties"] or o["properties"],
                                          "--formatter-property")}  # fmt: skip
    for key in ("key_deserializer", "value_deserializer"):
        if o[key]:
            formatter_props[key.replace("_", ".")] = o[key]
    try:
        printer = formatter_class(o["formatter"]).from_props(formatter_props)
    except ValueError as e:
        usage_error(str(e))
    kind = REJECT if o["reject"] else RELEASE if o["release"] else ACCEPT
    max_messages, timeout_ms = o["max_messages"], o["timeout_ms"]
    processed = 0
    client = consumer = None
    try:
        client = KafkaClient(o["bootstrap_server"],
                             client_id=props.get("client.id", "console-share-consumer"),
                             **client_security(props))  # fmt: skip
        consumer = ShareConsumer(client, group, [o["topic"]])
        last_data = time.monotonic()
        out = sys.stdout
        while max_messages is None or processed < max_messages:
            records = consumer.poll(500)
            if records:
                last_data = time.monotonic()
            for record in records:
                if max_messages is not None and processed >= max_messages:
                    consumer.acknowledge(record, RELEASE)  # not printed: for another
                    continue
                processed += 1
                try:
                    out.write(printer.format(record))
                    consumer.acknowledge(record, kind)
                except SerializationError as e:
                    if not o["reject_message_on_error"]:
                        raise
                    click.echo(f"Error processing message, rejecting this message: {e}", err=True)
                    consumer.acknowledge(record, REJECT)
            out.flush()
            if timeout_ms is not None and (time.monotonic() - last_data) * 1000 >= timeout_ms:
                break
    except KafkaError as e:
        fail(f"ERROR {e}")
    except SerializationError as e:
        fail(f"ERROR Error processing message, terminating consumer process: {e}")
    except KeyboardInterrupt:
        pass
    finally:
        if consumer is not None:
            consumer.close()
        click.echo(f"Processed a total of {processed} messages", err=True)
        if client is not None:
            client.close()
