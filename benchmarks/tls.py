"""TLS beside PLAINTEXT, kt beside Apache Kafka 3.9: issue 30's TLS targets, in one run.

  interop/fetch-kafka.sh                       # once: Kafka's jars
  python benchmarks/tls.py [--records 500000] [--repeat 3]

Each broker has a PLAINTEXT and an SSL listener (certificates made here, a PKCS12 key
store for both brokers), one topic of one partition. The same librdkafka producer
(confluent-kafka, 100-byte values, acks=1, linger.ms=5) produces --records records over
each listener of each broker, in turn, --repeat times after an untimed warm-up (medians);
then a librdkafka consumer reads the topic from its start over each of kt's listeners.
Targets: TLS produce >= 0.6x kt's PLAINTEXT figure and >= 1.0x Kafka's TLS figure;
fetch over TLS >= 0.5x PLAINTEXT.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from broker import TOPIC, KtBroker, free_port, librdkafka_produce  # noqa: E402
from confluent_kafka import Consumer, KafkaError  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from kt.reference_kafka import ReferenceKafka, unavailable_reason  # noqa: E402
from kt.testing.certificates import PASSWORD, issue, make_ca, write_party  # noqa: E402


def client_config(bootstrap: str, ca: Path | None) -> dict:
    if ca is None:
        return {"bootstrap.servers": bootstrap}
    return {"bootstrap.servers": bootstrap, "security.protocol": "SSL",
            "ssl.ca.location": str(ca)}  # fmt: skip


def produce(config: dict, records: int) -> float:
    """Records per second of one librdkafka producer, acks=1."""
    return records / librdkafka_produce(config["bootstrap.servers"], records, "1", config)


def consume(config: dict, records: int) -> float:
    """Records per second of one librdkafka consumer reading `records` from the start."""
    consumer = Consumer({**config, "group.id": f"bench-{time.monotonic_ns()}",
                         "auto.offset.reset": "earliest", "enable.partition.eof": True,
                         "enable.auto.commit": False})  # fmt: skip
    consumer.subscribe([TOPIC])
    seen = 0
    start = None
    while seen < records:
        messages = consumer.consume(10000, 1.0)
        for message in messages:
            if message.error() is None:
                if start is None:
                    start = time.perf_counter()
                seen += 1
            elif message.error().code() == KafkaError._PARTITION_EOF and seen:
                break
    consumer.close()
    assert start is not None
    return seen / (time.perf_counter() - start)


def median_of(repeat: int, run) -> float:  # type: ignore[no-untyped-def]
    run()  # warm-up
    return statistics.median(run() for _ in range(repeat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    reason = unavailable_reason()
    if reason is not None:
        sys.exit(f"tls: {reason}")
    work = Path(tempfile.mkdtemp(prefix="kt-tls-bench-"))
    try:
        ca = make_ca()
        files = write_party(work / "pki", "broker", ca, issue(ca, "broker"))
        store = {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(files.keystore_p12),
                 "ssl.keystore.password": PASSWORD, "ssl.key.password": PASSWORD}  # fmt: skip
        kt_plain, kt_tls, kafka_tls = free_port(), free_port(), free_port()
        with KtBroker(work / "kt-logs", overrides={
            "listeners": f"PLAINTEXT://127.0.0.1:{kt_plain},SSL://127.0.0.1:{kt_tls}", **store,
        }):  # fmt: skip
            kafka = ReferenceKafka(work / "kafka", overrides={**store})
            kafka.overrides["listeners"] = (
                f"{kafka.properties()['listeners']},SSL://127.0.0.1:{kafka_tls}"
            )
            kafka.overrides["listener.security.protocol.map"] = (
                "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SSL:SSL"
            )
            kafka.overrides["advertised.listeners"] = (
                f"PLAINTEXT://127.0.0.1:{kafka.port},SSL://127.0.0.1:{kafka_tls}"
            )
            kafka.start()
            try:
                sides = {
                    "kt PLAINTEXT": client_config(f"127.0.0.1:{kt_plain}", None),
                    "kt TLS": client_config(f"127.0.0.1:{kt_tls}", files.ca),
                    "Kafka PLAINTEXT": client_config(kafka.bootstrap, None),
                    "Kafka TLS": client_config(f"127.0.0.1:{kafka_tls}", files.ca),
                }
                for config in (sides["kt PLAINTEXT"], sides["Kafka PLAINTEXT"]):
                    admin = AdminClient(config)
                    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(30)
                produced = {name: median_of(args.repeat, lambda c=c: produce(c, args.records))
                            for name, c in sides.items()}  # fmt: skip
                total = args.records * (args.repeat + 1)
                fetched = {name: median_of(args.repeat, lambda c=sides[name]: consume(c, total))
                           for name in ("kt PLAINTEXT", "kt TLS")}  # fmt: skip
            finally:
                kafka.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"TLS vs PLAINTEXT, kt vs Apache Kafka 3.9.1, {os.cpu_count()} cores, "
        f"{args.records:,} records of 100 B per run, median of {args.repeat}"
    )
    print("| scenario | records/s |")
    print("|---|---|")
    for name, rate in produced.items():
        print(f"| produce acks=1, {name} | {rate:,.0f} |")
    for name, rate in fetched.items():
        print(f"| fetch, {name} | {rate:,.0f} |")
    checks = [
        ("kt TLS produce / kt PLAINTEXT produce", produced["kt TLS"] / produced["kt PLAINTEXT"],
         0.6),
        ("kt TLS produce / Kafka TLS produce", produced["kt TLS"] / produced["Kafka TLS"], 1.0),
        ("kt TLS fetch / kt PLAINTEXT fetch", fetched["kt TLS"] / fetched["kt PLAINTEXT"], 0.5),
    ]  # fmt: skip
    print("\n| ratio | value | target |")
    print("|---|---|---|")
    for name, ratio, target in checks:
        print(
            f"| {name} | {ratio:.2f}x | >= {target}x: {'met' if ratio >= target else 'NOT met'} |"
        )


if __name__ == "__main__":
    main()
