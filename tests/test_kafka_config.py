"""server.properties parsing and the broker's typed configuration."""

from pathlib import Path

import pytest

from kt.config import InvalidConfigError, KafkaConfig, LogConfig, parse_properties


def test_properties_syntax_as_java_reads_it() -> None:
    text = (
        "# comment\n"
        "! also a comment\n"
        "broker.id=3\n"
        "listeners : PLAINTEXT://127.0.0.1:9093\n"
        "log.dirs /tmp/a,\\\n"
        "    /tmp/b\n"
        "key\\=with\\:escapes=v\\tx\n"
        "\n"
        "empty=\n"
    )
    assert parse_properties(text) == {
        "broker.id": "3",
        "listeners": "PLAINTEXT://127.0.0.1:9093",
        "log.dirs": "/tmp/a,/tmp/b",
        "key=with:escapes": "v\tx",
        "empty": "",
    }


def test_defaults_when_no_file() -> None:
    config = KafkaConfig({})
    assert [str(e) for e in config.listeners] == ["PLAINTEXT://127.0.0.1:9092"]
    assert config.log_dirs == [Path("/tmp/kt-logs")]
    assert config["num.partitions"] == 1
    assert config["message.max.bytes"] == 1048588
    assert config["offsets.topic.num.partitions"] == 50


def test_topic_defaults_follow_broker_keys() -> None:
    config = KafkaConfig(
        {"log.retention.minutes": "5", "log.segment.bytes": "1048576", "log.roll.ms": "1000"}
    )
    defaults = LogConfig.from_props(config.topic_defaults())
    assert defaults.retention_ms == 300_000
    assert defaults.segment_bytes == 1_048_576
    assert defaults.segment_ms == 1000
    assert defaults.max_message_bytes == 1048588


def test_log_dirs_wins_over_log_dir() -> None:
    config = KafkaConfig({"log.dir": "/x", "log.dirs": "/a, /b"})
    assert config.log_dirs == [Path("/a"), Path("/b")]


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("num.partitions", "many", "Invalid value many for configuration num.partitions"),
        ("auto.create.topics.enable", "yes", "configuration auto.create.topics.enable"),
        ("listeners", "127.0.0.1:9092", "Invalid listener '127.0.0.1:9092'"),
        ("log.message.timestamp.type", "Wall", "log.message.timestamp.type"),
    ],
)
def test_bad_values_name_the_key(key: str, value: str, message: str) -> None:
    with pytest.raises(InvalidConfigError, match=message):
        KafkaConfig({key: value})


def test_unknown_keys_are_reported_not_fatal() -> None:
    config = KafkaConfig({"no.such.key": "1", "broker.id": "1"})
    assert config.unknown_keys == ["no.such.key"]
    assert config.broker_id == 1


def test_from_files_applies_overrides(tmp_path: Path) -> None:
    props = tmp_path / "server.properties"
    props.write_text("broker.id=1\nnum.partitions=3\n")
    config = KafkaConfig.from_files([props], {"num.partitions": "7"})
    assert config.broker_id == 1
    assert config["num.partitions"] == 7


def test_missing_file_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidConfigError, match="Cannot read"):
        KafkaConfig.from_files([tmp_path / "nope.properties"])
