"""Spark's Kafka offset JSON and the kt source's options: parsing and one-line errors."""

from __future__ import annotations

import pytest

from kt.spark.offsets import (
    EARLIEST,
    LATEST,
    OffsetSpec,
    SourceOptionError,
    format_partition_offsets,
    offsets_from_json,
    parse_assign,
    parse_offset_spec,
    parse_partition_offsets,
)
from kt.spark.options import parse_options
from kt.spark.planning import OffsetRange, rate_limit, split


def test_partition_offsets_json_as_spark_writes_it():
    text = '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}'
    offsets = parse_partition_offsets(text, "startingOffsets")
    assert offsets == {("topicA", 0): 23, ("topicA", 1): LATEST, ("topicB", 0): EARLIEST}
    assert format_partition_offsets(offsets) == {
        "topicA": {"0": 23, "1": -1},
        "topicB": {"0": -2},
    }
    assert offsets_from_json(format_partition_offsets(offsets)) == offsets


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"t":{"0":23', "startingOffsets: invalid JSON"),
        ('["t"]', "expected a JSON object of topics"),
        ('{"t":[0,1]}', "needs an object of partition offsets"),
        ('{"t":{"x":1}}', "partition 'x' of topic t is not a number"),
        ('{"t":{"-1":1}}', "partition -1 of topic t is negative"),
        ('{"t":{"0":-3}}', "offset -3 of t-0 is not an offset"),
        ('{"t":{"0":"5"}}', "offset '5' of t-0 is not an offset"),
        ('{"t":{"0":true}}', "offset True of t-0 is not an offset"),
    ],
)
def test_bad_partition_offsets_are_one_clear_line(text, message):
    with pytest.raises(SourceOptionError, match=message) as e:
        parse_partition_offsets(text, "startingOffsets")
    assert "\n" not in str(e.value)


def test_assign_and_offset_specs():
    assert parse_assign('{"a":[0,1],"b":[2]}') == [("a", 0), ("a", 1), ("b", 2)]
    with pytest.raises(SourceOptionError, match="assign: no partitions given"):
        parse_assign('{"a":[]}')
    assert parse_offset_spec(None, "startingOffsets", "earliest") == OffsetSpec("earliest")
    assert parse_offset_spec(" LATEST ", "endingOffsets", "earliest") == OffsetSpec("latest")
    assert parse_offset_spec('{"a":{"0":5}}', "x", "latest").offsets == {("a", 0): 5}
    with pytest.raises(SourceOptionError, match='expected "earliest", "latest" or JSON'):
        parse_offset_spec("first", "startingOffsets", "earliest")


BASE = {"log.dirs": "/data", "subscribe": "t"}


def test_options_are_case_insensitive_with_spark_defaults():
    batch = parse_options({"LOG.DIRS": "/a,/b", "Subscribe": "t,u", "includeheaders": "TRUE"},
                          streaming=False)  # fmt: skip
    assert batch.log_dirs == ("/a", "/b")
    assert batch.subscription.topics == ("t", "u")
    assert batch.include_headers and batch.fail_on_data_loss
    assert batch.starting.kind == "earliest" and batch.ending.kind == "latest"
    assert not batch.read_committed  # the Kafka consumer's default isolation
    committed = parse_options({**BASE, "kafka.isolation.level": "read_committed"},
                              streaming=False)  # fmt: skip
    assert committed.read_committed
    stream = parse_options({**BASE, "maxOffsetsPerTrigger": "100"}, streaming=True)
    assert stream.starting.kind == "latest" and stream.max_offsets_per_trigger == 100
    stamp = parse_options({**BASE, "startingTimestamp": "1700000000000"}, streaming=False)
    assert stamp.starting == OffsetSpec("timestamp", timestamp=1_700_000_000_000)
    pattern = parse_options({"log.dirs": "/d", "subscribePattern": "or.*"}, streaming=False)
    assert pattern.subscription.matches("orders") and not pattern.subscription.matches("xorders")


@pytest.mark.parametrize(
    ("options", "streaming", "message"),
    [
        ({"subscribe": "t"}, False, "exactly one of the options log.dirs, kafka.bootstrap.servers"),
        ({**BASE, "kafka.bootstrap.servers": "h:9092"}, False, "exactly one of the options"),
        ({"log.dirs": "/d"}, False, "one of the options subscribe, subscribePattern, assign"),
        ({**BASE, "assign": '{"t":[0]}'}, False, r"must be given \(got 2\)"),
        ({"log.dirs": "/d", "subscribePattern": "("}, False, "subscribePattern: invalid regex"),
        ({**BASE, "startingOffsets": "latest"}, False, "can't be latest for batch queries"),
        ({**BASE, "endingOffsets": "earliest"}, False, "can't be earliest for batch queries"),
        ({**BASE, "startingOffsets": '{"t":{"0":-1}}'}, False, "t-0 can't be latest"),
        ({**BASE, "endingOffsets": '{"t":{"0":-2}}'}, False, "t-0 can't be earliest"),
        ({**BASE, "startingOffsets": '{"t":{"0":9}}', "endingOffsets": '{"t":{"0":5}}'}, False,
         "startingOffsets 9 of t-0 is after endingOffsets 5"),
        ({**BASE, "startingOffsets": '{"t":{"0":1}}', "endingOffsets": '{"t":{"1":5}}'}, False,
         "must name the same topic-partitions"),
        ({**BASE, "endingOffsets": "latest"}, True, "endingOffsets is not valid in streaming"),
        ({**BASE, "maxRecordsPerPartition": "0"}, False, "expected a positive integer"),
        ({**BASE, "includeHeaders": "yes"}, False, "includeHeaders: expected true or false"),
        ({**BASE, "startingTimestamp": "noon"}, False, "expected a single long value"),
        ({**BASE, "minPartitions": "4"}, False, "minpartitions of Spark's Kafka source is not"),
        ({**BASE, "subscibe": "t"}, False, "unknown option subscibe"),
        ({**BASE, "kafka.isolation.level": "committed"}, False,
         "^kafka.isolation.level: Invalid value committed for configuration isolation.level: "
         "String must be one of: read_committed, read_uncommitted$"),
        ({**BASE, "kafka.security.protocol": "SASL_SSL"}, False,
         "^kafka.security.protocol=SASL_SSL: kt does not support TLS and SASL yet$"),
    ],
)  # fmt: skip
def test_bad_options_raise_one_clear_error(options, streaming, message):
    with pytest.raises(SourceOptionError, match=message) as e:
        parse_options(options, streaming=streaming)
    assert "\n" not in str(e.value)


def test_split_cuts_ranges_evenly_and_drops_empty_ones():
    ranges = [OffsetRange("t", 0, 0, 10), OffsetRange("t", 1, 5, 5), OffsetRange("t", 2, 7, 9)]
    assert split(ranges, None) == [OffsetRange("t", 0, 0, 10), OffsetRange("t", 2, 7, 9)]
    assert split(ranges, 3) == [
        OffsetRange("t", 0, 0, 2),
        OffsetRange("t", 0, 2, 5),
        OffsetRange("t", 0, 5, 7),
        OffsetRange("t", 0, 7, 10),
        OffsetRange("t", 2, 7, 9),
    ]


def test_rate_limit_shares_the_budget_by_lag():
    start = {("t", 0): 0, ("t", 1): 100, ("t", 2): 50}
    latest = {("t", 0): 300, ("t", 1): 200, ("t", 2): 50}
    assert rate_limit(start, latest, 1000) == latest
    assert rate_limit(start, latest, 100) == {("t", 0): 75, ("t", 1): 125, ("t", 2): 50}
    # A share below one offset is rounded up, so that no partition starves.
    assert rate_limit({("t", 0): 0, ("t", 1): 0}, {("t", 0): 1000, ("t", 1): 1}, 10) == {
        ("t", 0): 9,
        ("t", 1): 1,
    }
