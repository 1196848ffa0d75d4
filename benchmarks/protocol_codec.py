"""kt.protocol against kafka-python 3.0's codec, on the same messages in the same run.

    python benchmarks/protocol_codec.py

Three broker hot paths, 100 partitions each (one topic, a 1 KiB records blob per
partition): decode a Produce v9 request frame (header included), encode its Produce
v9 response frame, encode a Fetch v12 response frame. Prints microseconds per call
and kafka-python / kt (above 1: kt is faster). Both sides produce whole frames, and
the encoded frames are checked to be byte for byte the same before timing.
"""

from __future__ import annotations

import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kafka.protocol.consumer.fetch import FetchResponse as KpFetchResponse  # noqa: E402
from kafka.protocol.data_container import DataContainer  # noqa: E402
from kafka.protocol.producer.produce import ProduceRequest as KpProduceRequest  # noqa: E402
from kafka.protocol.producer.produce import ProduceResponse as KpProduceResponse  # noqa: E402

from kt.protocol import RequestHeader, decode_request, encode_request, encode_response  # noqa: E402
from kt.protocol import messages as m  # noqa: E402

PARTITIONS = 100
RECORDS = bytes(range(256)) * 4  # 1 KiB stands for a record batch
PRODUCE_V = 9
FETCH_V = 12


def produce_request() -> m.ProduceRequest:
    partitions = [
        m.ProduceRequest.PartitionProduceData(index=i, records=RECORDS) for i in range(PARTITIONS)
    ]
    topic = m.ProduceRequest.TopicProduceData(name="bench-topic", partition_data=partitions)
    return m.ProduceRequest(acks=-1, timeout_ms=30000, topic_data=[topic])


def produce_response() -> m.ProduceResponse:
    Partition = m.ProduceResponse.PartitionProduceResponse
    partitions = [Partition(index=i, error_code=0, base_offset=1000 * i) for i in range(PARTITIONS)]
    topic = m.ProduceResponse.TopicProduceResponse(
        name="bench-topic", partition_responses=partitions
    )
    return m.ProduceResponse(responses=[topic])


def fetch_response() -> m.FetchResponse:
    Partition = m.FetchResponse.PartitionData
    partitions = [
        Partition(partition_index=i, high_watermark=5000, last_stable_offset=5000,
                  log_start_offset=0, records=RECORDS)
        for i in range(PARTITIONS)
    ]  # fmt: skip
    topic = m.FetchResponse.FetchableTopicResponse(topic="bench-topic", partitions=partitions)
    return m.FetchResponse(responses=[topic])


def to_kafka_python(value, cls, version):
    """The same message as a kafka-python object (by field name)."""
    values = {}
    for field in cls._struct._fields if hasattr(cls, "_struct") else cls._fields:
        if not field.for_version_q(version):
            continue
        v = getattr(value, field.name)
        if field._tag is not None and v == getattr(type(value)(), field.name):
            continue  # kafka-python writes every tagged field it is given, Kafka only non-defaults
        if v is not None and field.is_struct_array():
            v = [to_kafka_python(x, field, version) for x in v]
        elif v is not None and field.is_struct():
            v = to_kafka_python(v, field, version)
        values[field.name] = v
    if not hasattr(cls, "_struct") and cls.data_class is None:  # kafka-python makes some lazily
        cls.set_data_class(type(cls.type_str, (DataContainer,), {"_struct": cls}))
    target = cls if hasattr(cls, "_struct") else cls.data_class
    return target(version=version, **values)


def per_call_us(fn, budget_s: float = 0.6) -> float:
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    runs = max(3, int(budget_s / (timer.timeit(number) / number) / number))
    return min(timer.repeat(repeat=min(runs, 7), number=number)) / number * 1e6


def main() -> None:
    request = produce_request()
    frame = encode_request(0, PRODUCE_V, 7, "bench", request)
    header = RequestHeader(0, PRODUCE_V, 7, "bench")
    kp_request = to_kafka_python(request, KpProduceRequest, PRODUCE_V)
    kp_request.with_header(correlation_id=7, client_id="bench")
    assert bytes(kp_request.encode(header=True, framed=True)) == frame

    response = produce_response()
    kp_response = to_kafka_python(response, KpProduceResponse, PRODUCE_V)
    kp_response.with_header(correlation_id=7)
    assert bytes(kp_response.encode(header=True, framed=True)) == encode_response(header, response)

    fetch = fetch_response()
    fetch_header = RequestHeader(1, FETCH_V, 8, "bench")
    kp_fetch = to_kafka_python(fetch, KpFetchResponse, FETCH_V)
    kp_fetch.with_header(correlation_id=8)
    assert bytes(kp_fetch.encode(header=True, framed=True)) == encode_response(fetch_header, fetch)

    body = frame[4:]
    # Both decoders read the frame back as the request that was encoded.
    assert decode_request(body) == (header, request)
    decoded = KpProduceRequest.decode(body, version=PRODUCE_V, header=True)
    assert bytes(decoded.encode(header=True, framed=True)) == frame
    cases = [
        (
            f"decode Produce v{PRODUCE_V} request",
            lambda: decode_request(body),
            lambda: KpProduceRequest.decode(body, version=PRODUCE_V, header=True),
        ),
        (
            f"encode Produce v{PRODUCE_V} response",
            lambda: encode_response(header, response),
            lambda: kp_response.encode(header=True, framed=True),
        ),
        (
            f"encode Fetch v{FETCH_V} response",
            lambda: encode_response(fetch_header, fetch),
            lambda: kp_fetch.encode(header=True, framed=True),
        ),
    ]
    print(f"{PARTITIONS} partitions, {len(RECORDS)}-byte records each; frames identical: yes")
    print(f"{'case':32} {'kt us':>10} {'kafka-python us':>16} {'kp/kt':>7}")
    for name, ours, theirs in cases:
        kt_us = per_call_us(ours)
        kp_us = per_call_us(theirs)
        print(f"{name:32} {kt_us:10.1f} {kp_us:16.1f} {kp_us / kt_us:7.2f}")


if __name__ == "__main__":
    main()
