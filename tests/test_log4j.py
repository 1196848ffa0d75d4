"""kt.log4j: Kafka's log files, layout, levels from a log4j.properties, hourly rolling."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from kt.log4j import APPENDERS, LEVELS, configured_levels, start_log_files

LINE = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] (\w+) (.*) \((\S+)\)")


@pytest.fixture
def clean_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    names = [name for _, _, names, _ in APPENDERS for name in names]
    levels = {name: logging.getLogger(name).level for name in names}
    yield
    for handler in root.handlers:
        if handler not in handlers:
            handler.close()
    root.handlers[:] = handlers
    root.setLevel(level)
    for name, was in levels.items():
        logging.getLogger(name).setLevel(was)


def test_levels_come_from_the_log4j_properties_kafka_opts_names(tmp_path: Path) -> None:
    config = tmp_path / "log4j.properties"
    config.write_text("log4j.rootLogger=WARN, stdout, kafkaAppender\n"
                      "log4j.logger.kafka.request.logger=DEBUG, requestAppender\n"
                      "log4j.logger.kafka.controller=INFO, controllerAppender\n")  # fmt: skip
    levels = configured_levels({"KAFKA_LOG4J_OPTS": f"-Dlog4j.configuration=file:{config}"})
    assert levels["root"] == LEVELS["WARN"]
    assert levels["kafka.request.logger"] == logging.DEBUG
    assert levels["kafka.controller"] == logging.INFO
    assert levels["kafka.log.LogCleaner"] == logging.INFO  # Kafka's default kept
    assert configured_levels({})["kafka.request.logger"] == logging.WARNING


def test_each_logger_writes_its_file_in_kafkas_layout(tmp_path: Path, clean_logging) -> None:
    start_log_files(tmp_path, {})
    logging.getLogger("kt.broker.controller").debug("elected")  # kafka.controller: TRACE
    logging.getLogger("kt.storage.log_cleaner").info("cleaned")
    logging.getLogger("kt.broker.server").warning("careful")
    logging.getLogger("kt.broker.server").debug("not at INFO")
    logging.getLogger("kafka.request.logger").debug("not at WARN")
    for handler in logging.getLogger().handlers:
        handler.flush()

    def lines(name: str) -> list[tuple[str, ...]]:
        text = (tmp_path / name).read_text()
        return [LINE.fullmatch(line).groups() for line in text.splitlines()]  # type: ignore[union-attr]

    assert lines("controller.log") == [("DEBUG", "elected", "kt.broker.controller")]
    assert lines("log-cleaner.log") == [("INFO", "cleaned", "kt.storage.log_cleaner")]
    assert lines("server.log") == [("WARN", "careful", "kt.broker.server")]  # additivity false
    assert lines("kafka-request.log") == []


def test_files_roll_every_hour_under_kafkas_date_pattern(tmp_path: Path, clean_logging) -> None:
    start_log_files(tmp_path, {})
    server = next(h for h in logging.getLogger().handlers
                  if getattr(h, "baseFilename", "").endswith("server.log"))  # fmt: skip
    logging.getLogger("kt.x").error("before")
    server.doRollover()  # type: ignore[attr-defined]
    rolled = [p.name for p in tmp_path.iterdir() if p.name.startswith("server.log.")]
    assert len(rolled) == 1 and re.fullmatch(r"server\.log\.\d{4}-\d\d-\d\d-\d\d", rolled[0])
