"""`kt dump-log` (kafka-dump-log.sh): print segments, indexes and snapshots."""

from __future__ import annotations

import sys

import click

from kt.commands.common import INT, KafkaCommand, fail

DECODERS = click.Choice(["string", "hex", "json"])


@click.command("dump-log", cls=KafkaCommand)
@click.option(
    "--files",
    required=True,
    metavar="FILE1,FILE2,...",
    help="REQUIRED: The comma separated list of data and index log files to be dumped.",
)
@click.option(
    "--print-data-log",
    is_flag=True,
    help="Print the records' keys and values. Implied by any decoder option.",
)
@click.option(
    "--deep-iteration",
    is_flag=True,
    help="Iterate the records inside batches. Implied by --print-data-log.",
)
@click.option(
    "--verify-index-only",
    is_flag=True,
    help="Check the index against the log without printing its content.",
)
@click.option(
    "--index-sanity-check",
    is_flag=True,
    help="Run the check a broker runs on start-up to decide whether to rebuild an index.",
)
@click.option(
    "--max-message-size",
    type=INT,
    default=5 * 1024 * 1024,
    show_default=True,
    help="Size of the largest message.",
)
@click.option(
    "--max-bytes",
    type=INT,
    default=2**31 - 1,
    show_default=True,
    help="Stop after this many bytes of batches in each .log file.",
)
@click.option(
    "--key-decoder-class",
    type=DECODERS,
    default=None,
    help="How to show keys: string (default), hex or json.",
)
@click.option(
    "--value-decoder-class",
    type=DECODERS,
    default=None,
    help="How to show values: string (default), hex or json.",
)
@click.option(
    "--offsets-decoder", is_flag=True, help="Parse the records as __consumer_offsets data."
)
@click.option(
    "--transaction-log-decoder", is_flag=True, help="Parse the records as __transaction_state data."
)
@click.option("--cluster-metadata-decoder", is_flag=True, hidden=True)
def dump_log(
    files: str, print_data_log: bool, deep_iteration: bool, verify_index_only: bool,
    index_sanity_check: bool, max_message_size: int, max_bytes: int,
    key_decoder_class: str | None, value_decoder_class: str | None, offsets_decoder: bool,
    transaction_log_decoder: bool, cluster_metadata_decoder: bool,
) -> None:  # fmt: skip
    """Dump log segments, indexes, producer snapshots and leader-epoch checkpoints."""
    from kt.tools import dump_log_parsers as parsers
    from kt.tools.dump_log import DumpLogError, DumpLogOptions, dump_files

    if cluster_metadata_decoder:
        fail("--cluster-metadata-decoder: kt keeps cluster metadata in ZooKeeper, not KRaft")
    if offsets_decoder:
        parser = parsers.offsets_parser
    elif transaction_log_decoder:
        parser = parsers.transaction_log_parser
    else:
        parser = parsers.decoder_parser(key_decoder_class or "string",
                                        value_decoder_class or "string")  # fmt: skip
    print_data = (print_data_log or offsets_decoder or transaction_log_decoder
                  or key_decoder_class is not None or value_decoder_class is not None)  # fmt: skip
    options = DumpLogOptions(
        print_data_log=print_data,
        deep_iteration=deep_iteration or print_data,
        verify_index_only=verify_index_only,
        index_sanity_check=index_sanity_check,
        max_message_size=max_message_size,
        max_bytes=max_bytes,
        parser=parser,
    )
    try:
        complete = dump_files(files.split(","), options, sys.stdout, sys.stderr)
    except DumpLogError as e:
        sys.stdout.flush()
        fail(str(e))
    if not complete:
        raise SystemExit(1)
