"""What the metrics tests share: a scrape of a /metrics URL, and a group that reads."""

from __future__ import annotations

import re
import urllib.request
from collections import defaultdict

from confluent_kafka import Consumer
from prometheus_client.parser import text_string_to_metric_families

LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
Series = dict[str, dict[tuple, float]]


def scrape(url: str) -> Series:
    """name -> {sorted labels: value}, the names as written (prometheus-client's parser,
    which checks the text is what Prometheus reads, adds _total to a counter's samples)."""
    with urllib.request.urlopen(url, timeout=30) as answer:
        assert answer.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
        text = answer.read().decode()
    list(text_string_to_metric_families(text))
    series: Series = defaultdict(dict)
    for line in text.splitlines():
        if line and not line.startswith("#"):
            sample, _, number = line.rpartition(" ")
            name, _, label_text = sample.partition("{")
            series[name][tuple(sorted(LABEL.findall(label_text)))] = float(number)
    return series


def consume(bootstrap: str, group: str, topic: str, count: int, commit: bool = False) -> None:
    """A group member that reads `count` records of `topic` from the start."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    for _ in range(count):
        message = consumer.poll(60)
        assert message is not None and message.error() is None, message
    if commit:
        consumer.commit(asynchronous=False)
    consumer.close()
