"""The broker's own log as Kafka's config/log4j.properties lays it out, for operators'
log shipping and grep habits: in the directory LOG_DIR names (kafka-run-class.sh's
kafka.logs.dir), server.log for everything, and beside it the files of Kafka's
non-additive loggers, each line `[%d] %p %m (%c)`, each file rolled every hour to
`<file>.yyyy-MM-dd-HH` (DailyRollingFileAppender with DatePattern '.'yyyy-MM-dd-HH).

Kafka's loggers are kt's modules here (kafka.controller is the kt.broker.controller
package), at Kafka's default levels; a log4j.properties named by KAFKA_LOG4J_OPTS
(`-Dlog4j.configuration=file:...`), as Kafka's scripts pass it, sets them by Kafka's
names: `log4j.rootLogger=DEBUG, ...`, `log4j.logger.kafka.request.logger=DEBUG, ...`.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from logging.handlers import TimedRotatingFileHandler
from pathlib import Path

from kt.properties import parse_properties

REQUEST_LOGGER = "kafka.request.logger"
_CONTROLLER = ("kt.broker.controller",)  # the package: every module of the controller
# (file, Kafka's logger, the kt loggers it stands for, Kafka's level in its log4j.properties).
APPENDERS = (
    ("controller.log", "kafka.controller", _CONTROLLER, "TRACE"),
    ("state-change.log", "state.change.logger", ("state.change.logger",), "INFO"),
    ("log-cleaner.log", "kafka.log.LogCleaner", ("kt.storage.log_cleaner",), "INFO"),
    ("kafka-request.log", REQUEST_LOGGER, (REQUEST_LOGGER,), "WARN"),
    ("kafka-authorizer.log", "kafka.authorizer.logger", ("kt.broker.authorizer",), "INFO"),
)
ROOT_LEVEL = "INFO"
LEVELS = {"TRACE": logging.DEBUG, "DEBUG": logging.DEBUG, "INFO": logging.INFO,
          "WARN": logging.WARNING, "ERROR": logging.ERROR, "FATAL": logging.CRITICAL,
          "OFF": logging.CRITICAL + 10, "ALL": logging.DEBUG}  # fmt: skip
_LOG4J_NAMES = {logging.WARNING: "WARN", logging.CRITICAL: "FATAL"}


class Log4jFormatter(logging.Formatter):
    """`[2026-11-28 01:05:13,925] WARN message (logger)`: log4j's level names."""

    def __init__(self) -> None:
        super().__init__("[%(asctime)s] %(levelname)s %(message)s (%(name)s)")

    def format(self, record: logging.LogRecord) -> str:
        record.levelname = _LOG4J_NAMES.get(record.levelno, record.levelname)
        return super().format(record)


class _Claims(logging.Filter):
    """An appender's records: those of its loggers and their children (a package's
    modules); server.log's (`names` None): those of no other appender (Kafka's loggers
    with additivity=false)."""

    def __init__(self, names: tuple[str, ...] | None, others: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.names, self.others = names, others

    def filter(self, record: logging.LogRecord) -> bool:
        if self.names is None:
            return not _under(record.name, self.others)
        return _under(record.name, self.names)


def _under(name: str, loggers: tuple[str, ...]) -> bool:
    """Whether logger `name` is one of `loggers` or a child of one."""
    return any(name == logger or name.startswith(logger + ".") for logger in loggers)


def configured_levels(environ: Mapping[str, str] = os.environ) -> dict[str, int]:
    """Kafka's logger name (`root` for the root) -> level: Kafka's defaults, then those a
    log4j.properties in KAFKA_LOG4J_OPTS sets."""
    levels = {"root": LEVELS[ROOT_LEVEL]}
    levels |= {kafka: LEVELS[level] for _, kafka, _, level in APPENDERS}
    match = re.search(
        r"-Dlog4j\.configuration=(?:file:)?(\S+)", environ.get("KAFKA_LOG4J_OPTS", "")
    )
    if match is None:
        return levels
    try:
        props = parse_properties(Path(match.group(1)).read_text(encoding="latin-1"))
    except OSError:
        return levels  # log4j too starts without a missing file (it says so on stderr)
    for key, value in props.items():
        level = LEVELS.get(value.split(",")[0].strip().upper())
        if level is None:
            continue
        if key == "log4j.rootLogger":
            levels["root"] = level
        elif key.startswith("log4j.logger."):
            levels[key.removeprefix("log4j.logger.")] = level
    return levels


def start_log_files(log_dir: str | Path, environ: Mapping[str, str] = os.environ) -> None:
    """Write the broker's log into `log_dir` as Kafka's log4j.properties does (the
    console handler already there keeps its level)."""
    directory = Path(log_dir)
    directory.mkdir(parents=True, exist_ok=True)
    levels = configured_levels(environ)
    root = logging.getLogger()
    for handler in root.handlers:  # the console keeps the level it had
        if handler.level == logging.NOTSET:
            handler.setLevel(root.level)
    claimed: tuple[str, ...] = ()
    for file_name, kafka, names, _ in APPENDERS:
        root.addHandler(_appender(directory / file_name, _Claims(names), levels[kafka]))
        for name in names:  # each logger at its Kafka logger's level, the rest at root's
            logging.getLogger(name).setLevel(levels[kafka])
        claimed += names
    root.addHandler(_appender(directory / "server.log", _Claims(None, claimed), levels["root"]))
    root.setLevel(min(root.level, levels["root"]))


def _appender(path: Path, claims: _Claims, level: int) -> logging.Handler:
    handler = TimedRotatingFileHandler(path, when="H", interval=1, encoding="utf-8")
    handler.setLevel(level)
    handler.suffix = "%Y-%m-%d-%H"
    handler.extMatch = re.compile(r"^\d{4}-\d{2}-\d{2}-\d{2}$")
    handler.setFormatter(Log4jFormatter())
    handler.addFilter(claims)
    return handler
