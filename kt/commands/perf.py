"""`kt producer-perf-test` and `kt consumer-perf-test` (kafka-producer-perf-test.sh and
kafka-consumer-perf-test.sh)."""

from __future__ import annotations

import sys
from typing import Any

import click

from kt.commands.common import (
    INT,
    KafkaCommand,
    checked_client_props,
    client_security,
    fail,
    load_client_config,
    usage_error,
)


class ManyValuesCommand(KafkaCommand):
    """Options that take every following value, as argparse4j's nargs("+"): `--producer-props
    a=1 b=2` is read as `--producer-props a=1 --producer-props b=2`."""

    many_values = ("--producer-props",)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        out: list[str] = []
        current = None
        for arg in args:
            if arg.startswith("-"):
                current = arg if arg in self.many_values else None
                out.append(arg)
            elif current is not None and out[-1] != current:
                out += [current, arg]
            else:
                out.append(arg)
        return super().parse_args(ctx, out)


@click.command("producer-perf-test", cls=ManyValuesCommand)
@click.option("--topic", help="REQUIRED: the topic to produce to.")
@click.option("--num-records", type=INT, help="REQUIRED: how many records to send.")
@click.option("--record-size", type=INT, help="Bytes per record (or --payload-file).")
@click.option("--payload-file", type=click.Path(dir_okay=False),
              help="Payloads to send, one per --payload-delimiter, chosen at random.")  # fmt: skip
@click.option("--payload-delimiter", default="\\n", show_default=True,
              help="The delimiter of --payload-file.")  # fmt: skip
@click.option("--throughput", type=float, help="REQUIRED: records/s at most; -1 for no limit.")
@click.option("--producer-props", "producer_props", multiple=True,
              help="Producer configs k=v ... (bootstrap.servers, acks, batch.size).")  # fmt: skip
@click.option("--producer.config", "producer_config", type=click.Path(dir_okay=False),
              help="A producer configs file.")  # fmt: skip
@click.option("--print-metrics", is_flag=True, help="Print the producer's metrics at the end.")
@click.option("--transactional-id", default="performance-producer-default-transactional-id",
              show_default=True,
              help="The transactionalId to use if transaction-duration-ms is > 0.")  # fmt: skip
@click.option(
    "--transaction-duration-ms",
    type=INT,
    default=0,
    show_default=True,
    help="The max age of each transaction: commitTransaction is called after this "
    "time has elapsed. Transactions are only enabled if this value is positive.",
)
@click.option(
    "--pre-encoded-batches",
    is_flag=True,
    help="kt only: send copies of one pre-encoded batch over raw sockets instead of records "
    "through kt's producer. Skips the per-record send, the callbacks and the client's "
    "batching: it measures the broker, not what a producer gets.",
)
def producer_perf_test(**o: Any) -> None:
    """Send records as fast as asked and print Kafka's throughput and latency lines."""
    from kt.client.producer_config import CODECS, acks_number, checked_choice, idempotence
    from kt.errors import KafkaError
    from kt.tools import producer_perf as pp

    for name in ("topic", "num_records", "throughput"):
        if o[name] is None:
            usage_error(f"argument --{name.replace('_', '-')} is required")
    if (o["record_size"] is None) == (o["payload_file"] is None):
        usage_error("either --record-size or --payload-file must be specified but not both.")
    if o["num_records"] <= 0:
        usage_error("--num-records should be greater than zero")
    if o["record_size"] is not None and o["record_size"] <= 0:
        usage_error("--record-size should be greater than zero")
    if not o["producer_props"] and o["producer_config"] is None:
        usage_error("Either --producer-props or --producer.config must be specified.")
    transactional = o["transaction_duration_ms"] > 0
    if transactional and o["pre_encoded_batches"]:
        usage_error("--pre-encoded-batches sends no transactions")
    props = load_client_config(o["producer_config"])
    for prop in o["producer_props"]:
        pieces = prop.split("=")
        if len(pieces) != 2:
            fail(f"Invalid property: {prop}")
        props[pieces[0]] = pieces[1]
    checked_client_props(props)
    if "bootstrap.servers" not in props:
        fail('Missing required configuration "bootstrap.servers" which has no default value.')
    security = client_security(props)
    if any(security.values()) and o["pre_encoded_batches"]:
        usage_error("--pre-encoded-batches speaks PLAINTEXT only")
    if o["payload_file"] is not None:
        payloads = _read_payloads(o["payload_file"], o["payload_delimiter"])
    else:
        payloads = pp.random_payloads(o["record_size"], 64)
    try:
        codec = checked_choice("compression.type", props.get("compression.type", "none"))
        config = pp.PerfConfig(
            topic=o["topic"], num_records=o["num_records"], payloads=payloads,
            throughput=o["throughput"], acks=acks_number(props.get("acks", "all")),
            batch_size=int(props.get("batch.size", 16384)),
            compression=CODECS[codec],
            max_in_flight=int(props.get("max.in.flight.requests.per.connection", 5)),
            request_timeout_ms=int(props.get("request.timeout.ms", 30000)),
            client_id=props.get("client.id", "perf-producer-client"),
            idempotent=idempotence(props),
            linger_ms=float(props.get("linger.ms", 0)),
            buffer_memory=int(props.get("buffer.memory", 33554432)),
            transactional_id=o["transactional_id"] if transactional else None,
            transaction_duration_ms=o["transaction_duration_ms"],
            transaction_timeout_ms=int(props.get("transaction.timeout.ms", 60000)),
            security=security,
        )  # fmt: skip
        run = pp.run if o["pre_encoded_batches"] else pp.run_producer
        stats = run(props["bootstrap.servers"], config, sys.stdout)
    except (pp.PerfError, KafkaError, ValueError) as e:
        fail(str(e))
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    if o["print_metrics"]:
        click.echo(f"record-send-total: {stats.count}\nbyte-total: {stats.bytes}")


@click.command("consumer-perf-test", cls=KafkaCommand)
@click.option("--bootstrap-server", help="REQUIRED: the server(s) to connect to.")
@click.option("--broker-list", help="DEPRECATED: --bootstrap-server.")
@click.option("--topic", help="REQUIRED: the topic to consume from.")
@click.option("--messages", help="REQUIRED: the number of messages to consume.")
@click.option("--group", help="The group id to consume on (default perf-consumer-<random>).")
@click.option("--fetch-size", type=INT, default=1024 * 1024, show_default=True,
              help="The amount of data to fetch from a partition in a request.")  # fmt: skip
@click.option(
    "--from-latest",
    is_flag=True,
    help="Without a committed offset, start at the latest message, not the earliest.",
)
@click.option("--socket-buffer-size", type=INT, default=2 * 1024 * 1024, show_default=True,
              help="The size of the TCP receive buffer.")  # fmt: skip
@click.option("--threads", type=INT, help="DEPRECATED AND IGNORED.")
@click.option("--num-fetch-threads", type=INT, help="DEPRECATED AND IGNORED.")
@click.option("--consumer.config", "consumer_config", type=click.Path(dir_okay=False),
              help="Consumer config properties file.")  # fmt: skip
@click.option("--print-metrics", is_flag=True, help="Print the consumer's counts at the end.")
@click.option(
    "--show-detailed-stats",
    is_flag=True,
    help="Report every --reporting-interval instead of once at the end.",
)
@click.option(
    "--timeout",
    is_flag=False,
    flag_value="10000",
    default="10000",
    help="The longest time in ms between returned records.  [default: 10000]",
)
@click.option("--reporting-interval", default="5000", show_default=True,
              help="Interval in ms at which to print progress info.")  # fmt: skip
@click.option("--date-format", default="yyyy-MM-dd HH:mm:ss:SSS", show_default=True,
              help="The format of the time fields (java.text.SimpleDateFormat).")  # fmt: skip
@click.option("--hide-header", is_flag=True, help="Skip the header line.")
def consumer_perf_test(**o: Any) -> None:
    """Consume as a group member and print Kafka's throughput lines."""
    import random

    from kt.tools import consumer_perf as cp

    bootstrap = o["bootstrap_server"] or o["broker_list"]
    if bootstrap is None:
        usage_error("Missing required option(s) [bootstrap-server]")
    if o["threads"] is not None or o["num_fetch_threads"] is not None:
        click.echo("WARNING: option [threads] and [num-fetch-threads] have been deprecated "
                   "and will be ignored by the test")  # fmt: skip
    for name in ("topic", "messages"):
        if o[name] is None:
            usage_error(f'Missing required argument "[{name}]"')
    from kt.errors import KafkaError

    props = load_client_config(o["consumer_config"])
    client_security(props)  # a bad key store or JAAS line ends the command here, in one line
    try:
        config = cp.ConsumerPerfConfig(
            topic=o["topic"], messages=o["messages"], timeout_ms=o["timeout"],
            reporting_interval_ms=o["reporting_interval"],
            group=o["group"] or f"perf-consumer-{random.randrange(100_000)}",
            props=props, fetch_size=o["fetch_size"], from_latest=o["from_latest"],
            show_detailed_stats=o["show_detailed_stats"], hide_header=o["hide_header"],
            date_format=o["date_format"],
        )  # fmt: skip
        totals = cp.run(bootstrap, config, sys.stdout)
    except cp.PerfError as e:
        fail(str(e))
    except KafkaError as e:
        fail(f"{e.name}: {e}")
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    if o["print_metrics"]:
        click.echo(f"records-consumed-total: {totals.messages}\n"
                   f"bytes-consumed-total: {totals.bytes}")  # fmt: skip
    if totals.unreachable is not None:  # Kafka's tool exits 0 here; kt says it failed
        fail(f"ERROR: no broker of {bootstrap} could be reached: {totals.unreachable}")


def _read_payloads(path: str, delimiter: str) -> list[bytes]:
    delimiter = delimiter.encode().decode("unicode_escape")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        text = ""
    click.echo(f"Reading payloads from: {path}")
    if not text:
        fail("File does not exist or empty file provided.")
    payloads = [p.encode() for p in text.split(delimiter)]
    click.echo(f"Number of messages read: {len(payloads)}")
    return payloads
