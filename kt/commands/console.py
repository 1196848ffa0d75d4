"""`kt console-producer` and `kt console-consumer` (kafka-console-*.sh)."""

from __future__ import annotations

import sys
import time

import click

from kt.commands.common import fail, load_client_config, parse_key_values


@click.command("console-producer")
@click.option("--bootstrap-server", required=True, help="The Kafka server to connect to.")
@click.option("--topic", required=True, help="The topic to produce to.")
@click.option("--sync", is_flag=True, help="Send each line synchronously.")
@click.option(
    "--compression-codec",
    type=click.Choice(["none", "gzip", "snappy", "lz4", "zstd"]),
    default="none",
    help="Compression codec for the batches.",
)
@click.option("--batch-size", type=int, default=16384, show_default=True, help="Batch bytes.")
@click.option("--message-send-max-retries", type=int, default=3, show_default=True)
@click.option("--retry-backoff-ms", type=int, default=100, show_default=True)
@click.option("--request-required-acks", default="-1", show_default=True, help="0, 1, -1/all.")
@click.option("--request-timeout-ms", type=int, default=1500, show_default=True)
@click.option("--property", "properties", multiple=True, help="Line reader property k=v.")
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
    request_required_acks: str,
    request_timeout_ms: int,
    properties: tuple[str, ...],
    producer_properties: tuple[str, ...],
    producer_config: str | None,
) -> None:
    """Read lines from standard input and send each as a record."""
    from kt.client.client import KafkaClient
    from kt.client.producer import Producer
    from kt.errors import KafkaError
    from kt.tools.console import LineFormatError, LineReader

    props = {**load_client_config(producer_config),
             **parse_key_values(producer_properties, "--producer-property")}  # fmt: skip
    acks_text = props.get("acks", request_required_acks)
    acks = -1 if acks_text == "all" else int(acks_text)
    try:
        reader = LineReader.from_props(parse_key_values(properties, "--property"))
    except LineFormatError as e:
        fail(str(e))
    try:
        client = KafkaClient(bootstrap_server, client_id=props.get("client.id", "console-producer"))
        producer = Producer(
            client,
            acks=acks,
            compression=props.get("compression.type", compression_codec),
            batch_size=1 if sync else int(props.get("batch.size", batch_size)),
            request_timeout_ms=request_timeout_ms,
            retries=message_send_max_retries,
            retry_backoff_ms=retry_backoff_ms,
        )
        failures = 0
        for number, line in enumerate(sys.stdin, start=1):
            key, value, headers = reader.parse(line.rstrip("\n"), number)
            results = producer.send(topic, value, key, headers)
            failures += _report(results)
        failures += _report(producer.flush())
    except (LineFormatError, KafkaError) as e:
        fail(f"ERROR {e}")
    client.close()
    if failures:
        raise SystemExit(1)


def _report(results: list) -> int:
    from kt.errors import error_for

    failed = 0
    for r in results:
        if r.error_code:
            failed += 1
            message = r.error_message or error_for(r.error_code).message
            click.echo(
                f"Error when sending message to topic {r.topic}: {error_for(r.error_code).name}: "
                f"{message}",
                err=True,
            )
    return failed


@click.command("console-consumer")
@click.option("--bootstrap-server", required=True, help="The Kafka server to connect to.")
@click.option("--topic", required=True, help="The topic to consume from.")
@click.option("--partition", type=int, help="Consume only this partition.")
@click.option("--offset", default="latest", show_default=True, help="earliest, latest or N.")
@click.option("--from-beginning", is_flag=True, help="Start at the earliest offset.")
@click.option("--max-messages", type=int, help="Exit after this many messages.")
@click.option("--timeout-ms", type=int, help="Exit when no message arrives for this long.")
@click.option("--group", help="The consumer group id to join (offsets are committed).")
@click.option(
    "--isolation-level",
    type=click.Choice(["read_committed", "read_uncommitted"]),
    default="read_uncommitted",
    show_default=True,
)
@click.option("--property", "properties", multiple=True, help="Formatter property k=v.")
@click.option("--consumer-property", "consumer_properties", multiple=True, help="k=v")
@click.option("--consumer.config", "consumer_config", type=click.Path(dir_okay=False))
def console_consumer(
    bootstrap_server: str,
    topic: str,
    partition: int | None,
    offset: str,
    from_beginning: bool,
    max_messages: int | None,
    timeout_ms: int | None,
    group: str | None,
    isolation_level: str,
    properties: tuple[str, ...],
    consumer_properties: tuple[str, ...],
    consumer_config: str | None,
) -> None:
    """Print records of a topic to standard output."""
    from kt.client.client import KafkaClient
    from kt.client.consumer import EARLIEST, LATEST, Consumer
    from kt.errors import KafkaError
    from kt.tools.console import GroupSession, MessageFormatter

    if partition is None and offset != "latest":
        fail("The partition is required when offset is specified.")
    start = _start_offset(offset, from_beginning, EARLIEST, LATEST)
    formatter = MessageFormatter.from_props(parse_key_values(properties, "--property"))
    props = {**load_client_config(consumer_config),
             **parse_key_values(consumer_properties, "--consumer-property")}  # fmt: skip
    group = group or props.get("group.id")
    if group and partition is not None:
        fail("Options group and partition cannot be specified together.")
    processed = 0
    member = None
    try:
        client = KafkaClient(bootstrap_server, client_id=props.get("client.id", "console-consumer"))
        consumer = Consumer(client, isolation_level=1 if isolation_level == "read_committed" else 0)
        if group:
            reset = EARLIEST if start == EARLIEST or props.get(
                "auto.offset.reset") == "earliest" else LATEST  # fmt: skip
            member = GroupSession(client, consumer, group, topic, reset, props)
            member.join()
        else:
            partitions = [partition] if partition is not None else consumer.partitions_for(topic)
            consumer.assign({(topic, p): start for p in partitions})
        last_data = time.monotonic()
        out = sys.stdout
        while max_messages is None or processed < max_messages:
            if member is not None:
                member.maintain()
            records = consumer.poll()
            if records:
                last_data = time.monotonic()
            for record in records:
                out.write(formatter.format(record))
                processed += 1
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
    except KeyboardInterrupt:
        if member is not None:
            member.close()
    finally:
        click.echo(f"Processed a total of {processed} messages", err=True)
    client.close()


def _start_offset(offset: str, from_beginning: bool, earliest: int, latest: int) -> int:
    if from_beginning or offset == "earliest":
        return earliest
    if offset == "latest":
        return latest
    try:
        value = int(offset)
    except ValueError:
        fail(f"Invalid --offset '{offset}': earliest, latest or a non-negative offset")
    if value < 0:
        fail(f"Invalid --offset '{offset}': earliest, latest or a non-negative offset")
    return value
