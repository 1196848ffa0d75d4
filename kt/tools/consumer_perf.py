"""`kt consumer-perf-test` (Kafka's ConsumerPerformance): consume a topic as a group
member, and print what was read, how fast, and how long the rebalances took, in Kafka's
lines.

As Kafka's tool counts, a record adds its key and value lengths to the bytes read, and a
poll hands over at most `max.poll.records` (500) records of what was fetched, all of
which are counted: the total can pass `--messages` by less than one poll. Records are
counted batch by batch (kt.storage.record_walk.key_value_bytes), never made into Python
objects. What was consumed is committed when the tool closes, as the Java consumer's
auto-commit does on close.
"""

from __future__ import annotations

import datetime
import re
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

from kt.client.client import KafkaClient
from kt.client.consumer import EARLIEST, LATEST, Consumer, FetchedBatch
from kt.errors import KafkaError
from kt.security.sasl_client import client_security
from kt.storage.record_walk import KeyValueCounter
from kt.storage.records import Batch
from kt.tools.group_session import GroupSession

DATE_FORMAT = "yyyy-MM-dd HH:mm:ss:SSS"
RATE_FIELDS = "data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec"
HEADER = f"start.time, end.time, {RATE_FIELDS}"
DETAILED_HEADER = f"time, threadId, {RATE_FIELDS}"
FETCH_FIELDS = ", rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
POLL_MS = 100
MB = 1024 * 1024


class PerfError(Exception):
    """A failure to report as one line (the Java tool's exception message)."""


@dataclass
class ConsumerPerfConfig:
    """The tool's options. The numbers are read when the run needs them, after the header,
    as Kafka's tool reads them (`--messages abc` fails there)."""

    topic: str
    messages: str
    group: str
    props: dict[str, str] = field(default_factory=dict)
    fetch_size: int = 1024 * 1024
    from_latest: bool = False
    timeout_ms: str = "10000"
    reporting_interval_ms: str = "5000"
    show_detailed_stats: bool = False
    hide_header: bool = False
    date_format: str = DATE_FORMAT


def java_date_format(pattern: str) -> Callable[[int], str]:
    """A formatter of epoch milliseconds for a java.text.SimpleDateFormat pattern, in local
    time: the letters G y M d H h k K m s S E a z Z X u and quoted text; any other letter
    is refused with SimpleDateFormat's message."""
    pieces: list[Callable[[datetime.datetime], str]] = []
    for match in re.finditer(r"'((?:[^']|'')*)'|([A-Za-z])\2*|[^A-Za-z']+", pattern):
        quoted, letter = match.group(1), match.group(2)
        text = match.group(0)
        if quoted is not None:
            literal = quoted.replace("''", "'") if quoted else "'"
            pieces.append(lambda _, literal=literal: literal)
        elif letter is None:
            pieces.append(lambda _, text=text: text)
        else:
            pieces.append(_date_field(letter, len(text)))
    return lambda ms: "".join(
        piece(datetime.datetime.fromtimestamp(ms / 1000).astimezone()) for piece in pieces
    )


def _date_field(letter: str, width: int) -> Callable[[datetime.datetime], str]:
    def number(value: Callable[[datetime.datetime], int]) -> Callable[[datetime.datetime], str]:
        return lambda d: str(value(d)).zfill(width)

    if letter == "y":
        return (lambda d: str(d.year % 100).zfill(2)) if width == 2 else number(lambda d: d.year)
    if letter == "M":
        if width >= 4:
            return lambda d: d.strftime("%B")
        if width == 3:
            return lambda d: d.strftime("%b")
        return number(lambda d: d.month)
    if letter == "E":
        return (lambda d: d.strftime("%A")) if width >= 4 else (lambda d: d.strftime("%a"))
    simple = {
        "G": lambda d: "AD",
        "a": lambda d: d.strftime("%p"),
        "z": lambda d: d.strftime("%Z"),
        "Z": lambda d: d.strftime("%z"),
        "X": lambda d: d.strftime("%z")[: 3 if width == 1 else 5] if d.utcoffset() else "Z",
    }
    if letter in simple:
        return simple[letter]
    numbers: dict[str, Callable[[datetime.datetime], int]] = {
        "d": lambda d: d.day,
        "H": lambda d: d.hour,
        "k": lambda d: d.hour or 24,
        "K": lambda d: d.hour % 12,
        "h": lambda d: d.hour % 12 or 12,
        "m": lambda d: d.minute,
        "s": lambda d: d.second,
        "S": lambda d: d.microsecond // 1000,
        "u": lambda d: d.isoweekday(),
    }
    if letter not in numbers:
        raise PerfError(f"Illegal pattern character '{letter}'")
    return number(numbers[letter])


def fixed4(value: float) -> str:
    """Java's %.4f, infinities and NaN included."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return f"{value:.4f}"


def ratio(numerator: float, denominator: float) -> float:
    """Java's double division: x/0 is an infinity (or NaN for 0/0)."""
    if denominator:
        return numerator / denominator
    return float("nan") if numerator == 0 else float("inf") * numerator


class PollBuffer:
    """Fetched batches waiting to be handed over, `max_poll_records` at a time, as the
    Java consumer's fetch buffer is drained by poll(). Counts each batch's records from
    the position it was fetched at (records before it in the same batch are skipped),
    walking each batch once however many polls take it."""

    def __init__(self) -> None:
        self._batches: deque[tuple[FetchedBatch, KeyValueCounter]] = deque()

    def __bool__(self) -> bool:
        return bool(self._batches)

    def add(self, fetched: list[FetchedBatch]) -> None:
        for item in fetched:
            counter = KeyValueCounter(item.batch)
            if item.batch.base_offset < item.position:
                counter.count(_records_before(item.batch, item.position))
            if counter.done < counter.records:
                self._batches.append((item, counter))

    def take(self, limit: int, consumed: dict[tuple[str, int], int]) -> tuple[int, int]:
        """Up to `limit` records: (records, key and value bytes); `consumed` gets the next
        offset of each partition read from."""
        records = data = 0
        while self._batches and records < limit:
            item, counter = self._batches[0]
            before = counter.done
            data += counter.count(limit - records)
            records += counter.done - before
            if counter.done == counter.records:
                self._batches.popleft()
                consumed[item.tp] = item.batch.last_offset + 1
            else:
                consumed[item.tp] = _offset_of(item.batch, counter.done, counter.records)
        return records, data

    def clear(self) -> None:
        self._batches.clear()


def _records_before(batch: Batch, position: int) -> int:
    """How many of the batch's records come before `position` (a fetch from its middle)."""
    return sum(1 for record in batch.records() if record.offset < position)


def _offset_of(batch: Batch, index: int, records: int) -> int:
    """The offset of the batch's record number `index` (compaction may leave gaps)."""
    if batch.last_offset - batch.base_offset + 1 == records:
        return batch.base_offset + index
    return batch.records()[index].offset


@dataclass
class Progress:
    """What was read so far, and at the last report."""

    messages: int = 0
    bytes: int = 0
    last_messages: int = 0
    last_bytes: int = 0
    last_report_ms: int = 0
    rebalance_ms_at_report: int = 0
    unreachable: str | None = None  # why no broker could be reached, while none has been

    def add(self, records: int, data: int) -> None:
        self.messages += records
        self.bytes += data

    def report(
        self, now_ms: int, rebalance_ms: int, detailed: bool, date: Callable[[int], str],
        out: TextIO,
    ) -> None:  # fmt: skip
        """printConsumerProgress when detailed, and a new interval either way."""
        if detailed:
            rebalance = rebalance_ms - self.rebalance_ms_at_report
            out.write(_progress_line(self, now_ms, date, rebalance) + "\n")
        self.rebalance_ms_at_report = rebalance_ms
        self.last_report_ms = now_ms
        self.last_messages = self.messages
        self.last_bytes = self.bytes


@dataclass
class Limits:
    messages: int
    timeout_ms: int
    reporting_interval_ms: int


def run(bootstrap: str, config: ConsumerPerfConfig, out: TextIO) -> Progress:
    """ConsumerPerformance.main: the header, the consume loop, the final line; returns
    the totals."""
    if not config.hide_header:
        header = DETAILED_HEADER if config.show_detailed_stats else HEADER
        out.write(header + FETCH_FIELDS + "\n")
        out.flush()
    limits = Limits(
        _long(config.messages, "messages"), _long(config.timeout_ms, "timeout"),
        _long(config.reporting_interval_ms, "reporting-interval"),
    )  # fmt: skip
    if limits.reporting_interval_ms <= 0:
        raise PerfError("Reporting interval must be greater than 0.")
    date = java_date_format(config.date_format)
    start_ms = _now_ms()
    progress = Progress(last_report_ms=start_ms)
    rebalance_ms = _consume(bootstrap, config, limits, out, date, progress)
    end_ms = _now_ms()
    if config.show_detailed_stats:
        return progress
    elapsed_s = (end_ms - start_ms) / 1000
    fetch_ms = end_ms - start_ms - rebalance_ms
    mb = progress.bytes / MB
    fields = [
        date(start_ms), date(end_ms), fixed4(mb), fixed4(ratio(mb, elapsed_s)),
        str(progress.messages), fixed4(ratio(progress.messages, elapsed_s)), str(rebalance_ms),
        str(fetch_ms), fixed4(ratio(mb, fetch_ms / 1000)),
        fixed4(ratio(progress.messages, fetch_ms / 1000)),
    ]  # fmt: skip
    out.write(", ".join(fields) + "\n")
    return progress


def _long(text: str, option: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise PerfError(f"Cannot parse argument '{text}' of option {option}") from None


def _consume(
    bootstrap: str, config: ConsumerPerfConfig, limits: Limits, out: TextIO,
    date: Callable[[int], str], progress: Progress,
) -> int:  # fmt: skip
    """The consume loop; returns the time spent in rebalances, in ms. A broker that cannot
    be reached is no records, until the timeout, as the Java consumer keeps trying."""
    max_poll_records = int(config.props.get("max.poll.records", 500))
    last_consumed_ms = now_ms = _now_ms()
    client: KafkaClient | None = None
    session: GroupSession | None = None
    buffer = PollBuffer()
    try:
        while (
            progress.messages < limits.messages and now_ms - last_consumed_ms <= limits.timeout_ms
        ):
            if session is None:
                client, session = _connect(bootstrap, config, progress)
                if session is None:
                    time.sleep(POLL_MS / 1000)
            else:
                session.maintain()
                if not buffer:
                    buffer.add(session.consumer.poll_batches(POLL_MS))
            now_ms = _now_ms()
            if session is None or not buffer:
                continue
            last_consumed_ms = now_ms
            limit = max_poll_records
            if now_ms - progress.last_report_ms >= limits.reporting_interval_ms:
                # Kafka's tool checks the interval after each record of a poll: a report
                # that falls due sees the poll's first record.
                progress.add(*buffer.take(1, session.consumed))
                progress.report(now_ms, session.rebalance_ms, config.show_detailed_stats, date, out)
                limit -= 1
            progress.add(*buffer.take(limit, session.consumed))
        if progress.messages < limits.messages:
            out.write(
                "WARNING: Exiting before consuming the expected number of messages: timeout "
                f"({limits.timeout_ms} ms) exceeded. You can use the --timeout option to "
                "increase the timeout.\n"
            )
        return session.rebalance_ms if session is not None else 0
    finally:
        if session is not None:
            session.consumer.close()
            session.close()
        if client is not None:
            client.close()


def _connect(
    bootstrap: str, config: ConsumerPerfConfig, progress: Progress
) -> tuple[KafkaClient | None, GroupSession | None]:
    """Join the group through the bootstrap servers. While none answers, the first
    failure is said on stderr, as the Java client's NetworkClient logs it, and the loop
    goes on trying until the timeout."""
    client_id = config.props.get("client.id", "perf-consumer-client")
    try:
        client = KafkaClient(bootstrap, client_id=client_id, **client_security(config.props))
    except KafkaError as e:
        if progress.unreachable is None:
            sys.stderr.write(f"WARN Connection to {bootstrap} could not be established. Broker "
                             f"may not be available: {e}\n")  # fmt: skip
            sys.stderr.flush()
        progress.unreachable = str(e)
        return None, None
    progress.unreachable = None
    consumer = Consumer(client, partition_max_bytes=config.fetch_size, prefetch=True,
                        max_wait_ms=int(config.props.get("fetch.max.wait.ms", 500)))  # fmt: skip
    reset = LATEST if config.from_latest else EARLIEST
    session = GroupSession(client, consumer, config.group, [config.topic], reset, config.props)
    try:
        session.join()
    except BaseException:
        client.close()
        raise
    return client, session


def _progress_line(
    progress: Progress, now_ms: int, date: Callable[[int], str], rebalance: int
) -> str:
    """printConsumerProgress: the interval's rates, then over its fetch time."""
    elapsed_ms = now_ms - progress.last_report_ms
    mb = progress.bytes / MB
    interval_mb = (progress.bytes - progress.last_bytes) / MB
    interval_messages = progress.messages - progress.last_messages
    fetch_ms = elapsed_ms - rebalance
    fields = [
        date(now_ms), "0", fixed4(mb), fixed4(ratio(1000 * interval_mb, elapsed_ms)),
        str(progress.messages), fixed4(ratio(interval_messages, elapsed_ms) * 1000),
        str(rebalance), str(fetch_ms),
        fixed4(0.0 if fetch_ms <= 0 else 1000 * interval_mb / fetch_ms),
        fixed4(0.0 if fetch_ms <= 0 else 1000 * interval_messages / fetch_ms),
    ]  # fmt: skip
    return ", ".join(fields)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000
