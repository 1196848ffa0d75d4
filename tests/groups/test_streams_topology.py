"""A streams group's topology configured against the cluster's topics (Kafka 4.4's
InternalTopicManager.configureTopics): the partitions of repartition and changelog
topics, copartitioning, what is missing, and topologies no topics can satisfy; with
Kafka's statuses and messages."""

from __future__ import annotations

import pytest

from kt.broker.group import streams_topology as st
from kt.broker.group.streams_group_records import TopologyValue

T = TopologyValue
REPARTITION = "wc-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition"
CHANGELOG = "wc-KSTREAM-AGGREGATE-STATE-STORE-0000000003-changelog"


def info(name: str, partitions: int = 0) -> T.TopicInfo:
    return T.TopicInfo(name=name, partitions=partitions)


def word_count(repartition_partitions: int = 0) -> T:
    """A word count: subtopology 0 reads `lines` and writes the repartition topic that
    subtopology 1 reads, counting into a store with a changelog."""
    return T(epoch=2, subtopologies=[
        T.Subtopology(subtopology_id="0", source_topics=["lines"],
                      repartition_sink_topics=[REPARTITION]),
        T.Subtopology(subtopology_id="1",
                      repartition_source_topics=[info(REPARTITION, repartition_partitions)],
                      state_changelog_topics=[info(CHANGELOG)]),
    ])  # fmt: skip


def test_internal_topics_take_the_partitions_of_what_feeds_them() -> None:
    """The repartition topic takes its writer's source partitions, the changelog its
    subtopology's task count; missing, both are to be created (MISSING_INTERNAL_TOPICS,
    named in HashMap order)."""
    configured = st.configure_topics(word_count(), 7, {"lines": 3}.get)
    assert not configured.is_ready and configured.metadata_hash == 7
    assert configured.error is not None and configured.error.status == st.MISSING_INTERNAL_TOPICS
    assert configured.error.message == f"Internal topics are missing: {CHANGELOG}, {REPARTITION}"
    assert {n: t.partitions for n, t in configured.topics_to_create.items()} == {
        REPARTITION: 3, CHANGELOG: 3}  # fmt: skip
    assert configured.subtopologies is not None
    assert [s.number_of_tasks for s in configured.subtopologies.values()] == [3, 3]
    ready = st.configure_topics(word_count(), 7, {"lines": 3, REPARTITION: 3, CHANGELOG: 3}.get)
    assert ready.is_ready and ready.topics_to_create == {}


def test_a_fixed_repartition_count_wins_and_existing_topics_must_match() -> None:
    configured = st.configure_topics(word_count(5), 0, {"lines": 3}.get)
    assert configured.topics_to_create[REPARTITION].partitions == 5
    assert configured.topics_to_create[CHANGELOG].partitions == 5
    wrong = st.configure_topics(word_count(), 0, {"lines": 3, CHANGELOG: 2}.get)
    assert wrong.error is not None and wrong.subtopologies is None
    assert (wrong.error.status, wrong.error.message) == (
        st.INCORRECTLY_PARTITIONED_TOPICS,
        f"Existing topic {CHANGELOG} has different number of partitions: expected 3, found 2",
    )


def test_missing_source_topics_are_named_sorted_at_most_three() -> None:
    topology = T(epoch=0, subtopologies=[
        T.Subtopology(subtopology_id="0", source_topics=["d", "a", "c", "b", "e"]),
    ])  # fmt: skip
    configured = st.configure_topics(topology, 0, {"e": 1}.get)
    assert configured.error is not None
    assert (configured.error.status, configured.error.message) == (
        st.MISSING_SOURCE_TOPICS,
        "Source topics a, b, c and 1 additional topics are missing.",
    )


def test_copartitioned_topics_must_agree() -> None:
    """A join of two source topics: they must have the same partitions; a repartition
    topic copartitioned with them follows them."""

    def join(*sources: str) -> T:
        return T(epoch=0, subtopologies=[
            T.Subtopology(subtopology_id="0", source_topics=list(sources),
                          repartition_sink_topics=["r"]),
            T.Subtopology(subtopology_id="1", source_topics=["left"],
                          repartition_source_topics=[info("r")],
                          copartition_groups=[T.CopartitionGroup(
                              source_topics=[0], repartition_source_topics=[0])]),
            T.Subtopology(subtopology_id="2", source_topics=["left", "right"],
                          copartition_groups=[T.CopartitionGroup(source_topics=[0, 1])]),
        ])  # fmt: skip

    unequal = st.configure_topics(join("big"), 0, {"big": 8, "left": 2, "right": 3}.get)
    assert unequal.error is not None
    assert (unequal.error.status, unequal.error.message) == (
        st.INCORRECTLY_PARTITIONED_TOPICS,
        "Following topics do not have the same number of partitions: [{left=2, right=3}]",
    )
    equal = st.configure_topics(join("big"), 0, {"big": 8, "left": 2, "right": 2}.get)
    assert equal.topics_to_create["r"].partitions == 2  # not big's 8: left's


@pytest.mark.parametrize(("subtopologies", "message"), [
    ([T.Subtopology(subtopology_id="0", repartition_source_topics=[info("a")],
                    repartition_sink_topics=["b"]),
      T.Subtopology(subtopology_id="1", repartition_source_topics=[info("b")],
                    repartition_sink_topics=["a"])],
     "Failed to compute number of partitions for all repartition topics. There may be loops "
     "in the topology that cannot be resolved."),
    ([T.Subtopology(subtopology_id="0", source_topics=["lines"],
                    repartition_source_topics=[info("never-written")])],
     "Failed to compute number of partitions for all repartition topics, because a "
     "repartition source topic is never used as a sink topic."),
])  # fmt: skip
def test_a_topology_no_topics_can_satisfy_is_invalid(subtopologies, message) -> None:
    with pytest.raises(st.InvalidTopologyError) as invalid:
        st.configure_topics(T(epoch=0, subtopologies=subtopologies), 0, {"lines": 1}.get)
    assert str(invalid.value) == message
