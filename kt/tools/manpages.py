"""Man pages for `kt` and every subcommand, rendered from the click tree.

`scripts/gen_man.py` writes them under man/; tests/test_manpages.py fails when the
committed pages differ from what the click tree renders now.
"""

from __future__ import annotations

import click

from kt import __version__

SECTION = "1"


def _escape(text: str) -> str:
    """Escape text for roff: backslashes, and a leading dot or quote on a line."""
    out = []
    for line in text.replace("\\", "\\e").splitlines():
        if line.startswith((".", "'")):
            line = "\\&" + line
        out.append(line.replace("-", "\\-"))
    return "\n".join(out)


def _option_lines(command: click.Command, ctx: click.Context) -> list[str]:
    lines: list[str] = []
    # Options only: arguments are in the synopsis (click 8.5 gives them help records, 8.4
    # does not, and the pages must not change with the installed click).
    options = [p for p in command.get_params(ctx) if isinstance(p, click.Option)]
    for option in options:
        record = option.get_help_record(ctx)
        if record is None:  # a hidden option
            continue
        names, help_text = record
        lines += [".TP", f"\\fB{_escape(names)}\\fR", _escape(help_text) or "(no description)"]
    return lines


# Commands a user would type, by page; each pair is (what it does, the command line).
EXAMPLES: dict[str, list[tuple[str, str]]] = {
    "kt": [
        ("Start a broker on 127.0.0.1:9092 and list its topics:",
         "kt server-start &\nkt topics --bootstrap-server 127.0.0.1:9092 --list"),
    ],
    "kt configs": [
        ("Keep a topic's records for a day:",
         "kt configs --bootstrap-server 127.0.0.1:9092 --alter --topic orders "
         "--add-config retention.ms=86400000"),
        ("Show a broker's dynamic configs:",
         "kt configs --bootstrap-server 127.0.0.1:9092 --describe --broker 0"),
        ("Give client id ingest a produce quota of 1 MB/s:",
         "kt configs --bootstrap-server 127.0.0.1:9092 --alter --client ingest "
         "--add-config producer_byte_rate=1048576"),
    ],
    "kt console-consumer": [
        ("Print every record of a topic with its key, then stop after 5 s of quiet:",
         "kt console-consumer --bootstrap-server 127.0.0.1:9092 --topic orders "
         "--from-beginning --property print.key=true --timeout-ms 5000"),
        ("Read every topic whose name starts with logs- as group audit:",
         "kt console-consumer --bootstrap-server 127.0.0.1:9092 --include 'logs-.*' "
         "--group audit"),
    ],
    "kt console-producer": [
        ("Send lines as keyed records (key, a tab, the value):",
         "printf 'k1\\tv1\\n' | kt console-producer --bootstrap-server 127.0.0.1:9092 "
         "--topic orders --property parse.key=true"),
    ],
    "kt consumer-groups": [
        ("Show a group's offsets and lag:",
         "kt consumer-groups --bootstrap-server 127.0.0.1:9092 --describe --group audit"),
        ("Rewind a stopped group to the start of a topic:",
         "kt consumer-groups --bootstrap-server 127.0.0.1:9092 --reset-offsets --group audit "
         "--topic orders --to-earliest --execute"),
        ("Each member of a consumer group (KIP-848) with its epoch and target assignment:",
         "kt consumer-groups --bootstrap-server 127.0.0.1:9092 --describe --group audit "
         "--members --verbose"),
    ],
    "kt console-share-consumer": [
        ("Read a topic as a member of share group jobs, each record with its delivery count:",
         "kt console-share-consumer --bootstrap-server 127.0.0.1:9092 --topic orders "
         "--group jobs --formatter-property print.delivery=true"),
        ("Hand ten records back to the group (released: delivered again, counted):",
         "kt console-share-consumer --bootstrap-server 127.0.0.1:9092 --topic orders "
         "--group jobs --release --max-messages 10"),
    ],
    "kt share-groups": [
        ("Each share partition's start offset and lag (the records not yet delivered):",
         "kt share-groups --bootstrap-server 127.0.0.1:9092 --describe --group jobs"),
        ("The members sharing the partitions, with their member epochs:",
         "kt share-groups --bootstrap-server 127.0.0.1:9092 --describe --group jobs --members "
         "--verbose"),
        ("Make an empty share group deliver a topic again from its start:",
         "kt share-groups --bootstrap-server 127.0.0.1:9092 --reset-offsets --group jobs "
         "--topic orders --to-earliest --execute"),
    ],
    "kt streams-groups": [
        ("Each member of a Kafka Streams application and the tasks it runs and keeps:",
         "kt streams-groups --bootstrap-server 127.0.0.1:9092 --describe --group word-count "
         "--members --verbose"),
        ("Process the input again from its start once every instance is stopped:",
         "kt streams-groups --bootstrap-server 127.0.0.1:9092 --reset-offsets --group "
         "word-count --all-input-topics --to-earliest --delete-all-internal-topics --execute"),
    ],
    "kt features": [
        ("The feature flags of the cluster (group.version 1: the consumer group protocol):",
         "kt features --bootstrap-server 127.0.0.1:9092 describe"),
    ],
    "kt features describe": [
        ("Each supported feature, its levels and its finalized level:",
         "kt features --bootstrap-server 127.0.0.1:9092 describe"),
    ],
    "kt acls": [
        ("Let alice produce to orders (Write, Describe and Create on the topic):",
         "kt acls --bootstrap-server 127.0.0.1:9092 --add --allow-principal User:alice "
         "--producer --topic orders"),
        ("Let bob read every topic whose name starts with logs- in group audit:",
         "kt acls --bootstrap-server 127.0.0.1:9092 --add --allow-principal User:bob "
         "--consumer --topic logs- --resource-pattern-type PREFIXED --group audit"),
        ("List every ACL:", "kt acls --bootstrap-server 127.0.0.1:9092 --list"),
    ],
    "kt transactions": [
        ("List the transactions of every coordinator:",
         "kt transactions --bootstrap-server 127.0.0.1:9092 list"),
        ("Find transactions open on a topic for more than 15 minutes that no coordinator "
         "will end:",
         "kt transactions --bootstrap-server 127.0.0.1:9092 find-hanging --topic orders"),
    ],
    "kt transactions list": [
        ("Transactions running for more than a minute:",
         "kt transactions --bootstrap-server 127.0.0.1:9092 list --duration-filter 60000"),
    ],
    "kt transactions describe": [
        ("The state, producer and partitions of one transactional id:",
         "kt transactions --bootstrap-server 127.0.0.1:9092 describe --transactional-id "
         "orders-app-0"),
    ],
    "kt transactions describe-producers": [
        ("The producers of a partition and their open transactions:",
         "kt transactions --bootstrap-server 127.0.0.1:9092 describe-producers --topic orders "
         "--partition 0"),
    ],
    "kt transactions abort": [
        ("Abort the hanging transaction that starts at offset 1234 of orders-0:",
         "kt transactions --bootstrap-server 127.0.0.1:9092 abort --topic orders --partition 0 "
         "--start-offset 1234"),
    ],
    "kt transactions find-hanging": [
        ("Hanging transactions in partitions that broker 1 holds:",
         "kt transactions --bootstrap-server 127.0.0.1:9092 find-hanging --broker-id 1"),
    ],
    "kt consumer-perf-test": [
        ("Read a million records as the group perf (offsets committed at the end), then "
         "report every second:",
         "kt consumer-perf-test --bootstrap-server 127.0.0.1:9092 --topic perf "
         "--messages 1000000 --group perf\n"
         "kt consumer-perf-test --bootstrap-server 127.0.0.1:9092 --topic perf "
         "--messages 1000000 --show-detailed-stats --reporting-interval 1000"),
    ],
    "kt delete-records": [
        ("Delete the records of orders-0 before offset 10:",
         "echo '{\"partitions\":[{\"topic\":\"orders\",\"partition\":0,\"offset\":10}],"
         "\"version\":1}' > del.json\n"
         "kt delete-records --bootstrap-server 127.0.0.1:9092 --offset-json-file del.json"),
    ],
    "kt dump-log": [
        ("Print the batches and records of a segment:",
         "kt dump-log --files /tmp/kt-logs/orders-0/00000000000000000000.log "
         "--print-data-log"),
        ("Check an index as a broker does at start-up:",
         "kt dump-log --files /tmp/kt-logs/orders-0/00000000000000000000.index "
         "--index-sanity-check"),
    ],
    "kt get-offsets": [
        ("The latest offset of every partition of a topic:",
         "kt get-offsets --bootstrap-server 127.0.0.1:9092 --topic orders"),
        ("The first offset at or after a time:",
         "kt get-offsets --bootstrap-server 127.0.0.1:9092 --topic orders "
         "--time 1700000000000"),
    ],
    "kt leader-election": [
        ("Give leadership back to every partition's preferred replica:",
         "kt leader-election --bootstrap-server 127.0.0.1:9092 --election-type preferred "
         "--all-topic-partitions"),
        ("Elect a leader for a partition whose in-sync replicas are all gone (may lose data):",
         "kt leader-election --bootstrap-server 127.0.0.1:9092 --election-type unclean "
         "--topic orders --partition 0"),
    ],
    "kt top": [
        ("Watch a cluster whose brokers set metrics.listeners (q quits):",
         "kt top --bootstrap-server 127.0.0.1:9092"),
        ("One frame for a script, from two brokers named by their /metrics:",
         "kt top --metrics-url http://10.0.0.1:9404/metrics "
         "--metrics-url http://10.0.0.2:9404/metrics --once"),
    ],
    "kt log-dirs": [
        ("The size and offset lag of every replica of a topic, dir by dir, as JSON:",
         "kt log-dirs --bootstrap-server 127.0.0.1:9092 --describe --topic-list orders"),
    ],
    "kt preferred-replica-election": [
        ("The preferred replicas of the partitions in a file lead again:",
         "kt preferred-replica-election --bootstrap-server 127.0.0.1:9092 "
         "--path-to-json-file partitions.json"),
    ],
    "kt producer-perf-test": [
        ("A million 100-byte records, as fast as they go, then at 10,000 a second:",
         "kt producer-perf-test --topic perf --num-records 1000000 --record-size 100 "
         "--throughput -1 --producer-props bootstrap.servers=127.0.0.1:9092 acks=1\n"
         "kt producer-perf-test --topic perf --num-records 100000 --record-size 100 "
         "--throughput 10000 --producer-props bootstrap.servers=127.0.0.1:9092"),
    ],
    "kt reassign": [
        ("Propose moving a topic to brokers 1 and 2, then run the plan at 1 MB/s:",
         "echo '{\"topics\":[{\"topic\":\"orders\"}],\"version\":1}' > move.json\n"
         "kt reassign --bootstrap-server 127.0.0.1:9092 --generate "
         "--topics-to-move-json-file move.json --broker-list 1,2\n"
         "kt reassign --bootstrap-server 127.0.0.1:9092 --execute "
         "--reassignment-json-file plan.json --throttle 1000000"),
        ("Follow it until done (this also removes the throttles):",
         "kt reassign --bootstrap-server 127.0.0.1:9092 --verify "
         "--reassignment-json-file plan.json"),
    ],
    "kt server-start": [
        ("A broker with Kafka's server.properties and one override:",
         "kt server-start config/server.properties --override num.partitions=3"),
        ("In the background, logging to $LOG_DIR/server.log:",
         "LOG_DIR=/var/log/kt kt server-start --daemon config/server.properties"),
    ],
    "kt server-stop": [
        ("Stop exactly the broker of a properties file, or of a log dir:",
         "kt server-stop config/server.properties\nkt server-stop --log-dirs /tmp/kt-logs"),
        ("Stop every broker of this user on this machine, or only node 2:",
         "kt server-stop\nkt server-stop --node-id 2"),
    ],
    "kt spark-export": [
        ("Write a topic to Parquet files, one directory per partition:",
         "kt spark-export --bootstrap-server 127.0.0.1:9092 --topic orders --output /tmp/orders "
         "--partition-by partition"),
        ("The same on a Spark cluster, with more memory for each executor:",
         "kt spark-export --bootstrap-server 10.0.0.5:9092 --topic orders --output /data/orders "
         "--master spark://10.0.0.9:7077 --conf spark.executor.memory=4g"),
    ],
    "kt spark-import": [
        ("Bring an export back into a new topic (keys, values, headers and timestamps):",
         "kt spark-import --bootstrap-server 127.0.0.1:9092 --topic orders-copy "
         "--input /tmp/orders"),
        ("Each row of JSON files as a record, keyed by its id column:",
         "kt spark-import --bootstrap-server 127.0.0.1:9092 --topic events --input events/ "
         "--format json --key-column id"),
    ],
    "kt topics": [
        ("Create a topic with 3 partitions, then describe it:",
         "kt topics --bootstrap-server 127.0.0.1:9092 --create --topic orders --partitions 3\n"
         "kt topics --bootstrap-server 127.0.0.1:9092 --describe --topic orders"),
    ],
}  # fmt: skip
ALIASES = {"kt reassign-partitions": "kt reassign"}
EXIT_STATUS = (
    "0 on success. 1 on any failure: a usage error prints its message and then the option "
    "help on stderr; any other error prints one line (no traceback). 130 when interrupted."
)


PROPER_NOUNS = {"Apache", "Kafka", "Kafka's", "Spark", "ZooKeeper"}


def _name_summary(help_text: str, name: str) -> str:
    """The NAME line's part after the dash, as man pages write it: lower case, no final
    period, no repeated program name ("kt-topics - create, delete, ... a topic")."""
    summary = help_text.splitlines()[0].strip() if help_text else ""
    prefix = f"{name}:"
    if summary.startswith(prefix):
        summary = summary[len(prefix) :].strip()
    first = summary.split(" ", 1)[0]
    if first and first not in PROPER_NOUNS and first[1:] == first[1:].lower():
        summary = summary[0].lower() + summary[1:]
    return summary.rstrip(".")


def render_page(name: str, command: click.Command, ctx: click.Context) -> str:
    """One man page in roff for `command`, whose full name is `name` ("kt topics")."""
    title = name.replace(" ", "-").upper()
    help_text = (command.help or command.short_help or "").strip()
    summary = _name_summary(help_text, name)
    usage = " ".join(command.collect_usage_pieces(ctx))
    lines = [
        f'.TH "{title}" "{SECTION}" "" "kt {__version__}" "kt manual"',
        ".SH NAME",
        f"{_escape(name.replace(' ', '-'))} \\- {_escape(summary)}",
        ".SH SYNOPSIS",
        f"\\fB{_escape(name)}\\fR {_escape(usage)}",
        ".SH DESCRIPTION",
        _escape(help_text),
    ]
    options = _option_lines(command, ctx)
    if options:
        lines += [".SH OPTIONS", *options]
    examples = EXAMPLES.get(ALIASES.get(name, name), [])
    if examples:
        lines.append(".SH EXAMPLES")
        for what, command_line in examples:
            lines += [".PP", _escape(what), ".PP", ".nf", ".RS", _escape(command_line), ".RE",
                      ".fi"]  # fmt: skip
    lines += [".SH EXIT STATUS", _escape(EXIT_STATUS)]
    if isinstance(command, click.Group):
        subs = command.list_commands(ctx)
        if subs:
            lines.append(".SH COMMANDS")
            for sub in subs:
                sub_cmd = command.get_command(ctx, sub)
                short = sub_cmd.get_short_help_str(limit=200) if sub_cmd else ""
                lines += [".TP", f"\\fB{_escape(sub)}\\fR", _escape(short)]
                lines.append(f"See \\fB{_escape(name.replace(' ', '-'))}-{_escape(sub)}\\fR(1).")
    return "\n".join(lines) + "\n"


def render_all(root: click.Group, prog: str = "kt") -> dict[str, str]:
    """File name -> page text for the root group and each subcommand, recursively."""
    pages: dict[str, str] = {}

    def walk(name: str, command: click.Command, parent: click.Context | None) -> None:
        ctx = click.Context(
            command, info_name=name.split(" ")[-1], parent=parent, **command.context_settings
        )
        pages[f"{name.replace(' ', '-')}.{SECTION}"] = render_page(name, command, ctx)
        if isinstance(command, click.Group):
            for sub in command.list_commands(ctx):
                sub_cmd = command.get_command(ctx, sub)
                if sub_cmd is not None:
                    walk(f"{name} {sub}", sub_cmd, ctx)

    walk(prog, root, None)
    return pages
