"""The Java collection orders kt's ports of Kafka's assignors rely on, against what Java 17
printed for the same inserts (java.util.HashMap, with and without an initial capacity,
and java.util.PriorityQueue's tie-breaking, which Python's heapq does not share)."""

from __future__ import annotations

from kt.broker.group.java_collections import JavaPriorityQueue, java_hash_map_order


def test_hash_map_orders_as_java() -> None:
    assert java_hash_map_order(["q", "a"]) == ["q", "a"]
    assert java_hash_map_order(["process-b", "process-a", "process-c"], 2) == [
        "process-a", "process-c", "process-b"]  # fmt: skip
    assert ",".join(java_hash_map_order([f"m{i}" for i in range(20)], 20)) == (
        "m0,m1,m2,m3,m4,m5,m6,m7,m8,m9,m11,m10,m13,m12,m15,m14,m17,m16,m19,m18"
    )


def test_compute_if_absent_orders_as_java() -> None:
    """computeIfAbsent links a new key in at its chain's head and resizes only at the
    start of a later call, repeats included: what Java printed for these calls."""
    four = ["process-883261", "process-310658", "process-330168", "process-366359"]
    assert java_hash_map_order(four, 4, head_insertion=True) == [
        "process-883261", "process-330168", "process-310658", "process-366359"]  # fmt: skip
    assert java_hash_map_order([*four, "process-883261"], 4, head_insertion=True) == [
        "process-366359", "process-883261", "process-330168", "process-310658"]  # fmt: skip
    calls = ["p1", "p2", "p3", "p1", *(f"p{i}" for i in range(4, 14)), "p2"]
    assert ",".join(java_hash_map_order(calls, 3, head_insertion=True)) == (
        "p1,p2,p3,p4,p5,p6,p7,p8,p9,p10,p12,p11,p13"
    )


def test_priority_queue_breaks_ties_as_java() -> None:
    """Seven entries by load, three polled, two added, the rest polled: Java's order."""
    queue: JavaPriorityQueue[tuple[str, float]] = JavaPriorityQueue(key=lambda e: e[1])
    queue.add_all(zip("abcdefg", [1, 0, 1, 0, 1, 0, 0.5], strict=True))
    polled = [queue.poll() for _ in range(3)]
    queue.add(("x", 0))
    queue.add(("y", 1))
    while len(queue):
        polled.append(queue.poll())
    assert [name for name, _ in polled] == ["b", "d", "f", "x", "g", "e", "a", "c", "y"]
    assert queue.poll() is None


def test_hash_map_orders_many_keys_as_java() -> None:
    """The table growing past 12 keys: the order Java 17 printed."""
    names = ["app-store-changelog", "app-rep-repartition", *(f"t{i}" for i in range(13)),
             "orders-join-repartition"]  # fmt: skip
    assert ",".join(java_hash_map_order(names)) == (
        "t4,t5,orders-join-repartition,t6,t7,t8,t9,app-store-changelog,t10,t12,t11,t0,t1,t2,"
        "app-rep-repartition,t3"
    )
