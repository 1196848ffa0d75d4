"""KIP-467 against Kafka itself: the same keyless records in one batch to a compacted
topic, or stamped too long ago, fail in the same way on Kafka 3.9 as on kt."""

from __future__ import annotations

import pytest

from tests.integration.test_record_errors import COMPACTED, RECENT_ONLY, produce_with_bad_records


@pytest.mark.parametrize("config", [COMPACTED, RECENT_ONLY], ids=["compacted", "recent-only"])
def test_record_errors_as_on_kafka(broker, kafka, config: dict[str, str]) -> None:
    on_kafka = produce_with_bad_records(kafka.bootstrap, "t", config)
    assert on_kafka == produce_with_bad_records(broker.bootstrap, "t", config)
    assert sorted(on_kafka.values()) == [10, 90]
