"""kt's port of Kafka's StickyTaskAssignor (kt/broker/group/streams_assignor.py) against
Kafka 4.4's own, run in Java (interop/StreamsAssignorOracle.java) on the same groups:
random groups of members in several processes holding tasks (active and standby, some
claimed twice after a rebalance), reporting changelog offsets, with and without standby
replicas, and the same assignment must come out of both, member for member."""

from __future__ import annotations

import random

from kt.broker.group import streams_assignor as sa
from tests.oracle._java_oracle import kafka4_answers


def random_group(rng: random.Random) -> tuple[int, dict, dict]:
    """(standby replicas, subtopologies, members in the group's order)."""
    subtopologies = {str(i): sa.SubtopologySpec(rng.randint(1, 8), rng.random() < 0.6)
                     for i in range(rng.randint(1, 4))}  # fmt: skip
    tasks = [(s, p) for s, spec in subtopologies.items() for p in range(spec.number_of_tasks)]
    processes = [f"process-{rng.randrange(10**6):06d}" for _ in range(rng.randint(1, 6))]
    members = {}
    for i in range(rng.randint(1, rng.choice([4, 8, 16]))):
        held = rng.sample(tasks, rng.randint(0, len(tasks)))
        split = rng.randint(0, len(held))
        active, standby = held[:split], held[split:]
        offsets = {t: rng.randrange(1000) for t in rng.sample(tasks, rng.randint(0, len(tasks)))}
        members[f"member-{rng.randrange(10**8):08x}-{i}"] = sa.MemberSpec(
            rng.choice(processes), grouped(active), grouped(standby), {
                s: {p: o for (s2, p), o in offsets.items() if s2 == s}
                for s in {s for s, _ in offsets}})  # fmt: skip
    return rng.choice([0, 0, 1, 2]), subtopologies, members


def grouped(tasks: list[tuple[str, int]]) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    for s, p in tasks:
        out.setdefault(s, set()).add(p)
    return out


def line(standbys: int, subtopologies: dict, members: dict) -> str:
    subs = ",".join(f"{s}:{spec.number_of_tasks}:{int(spec.stateful)}"
                    for s, spec in subtopologies.items())  # fmt: skip

    def tasks(held: dict) -> str:
        return "/".join(f"{s}." + ".".join(map(str, sorted(ps))) for s, ps in held.items() if ps)

    parts = []
    for member_id, spec in members.items():
        offsets = "/".join(f"{s}.{p}={o}" for s, ps in spec.task_offsets.items()
                           for p, o in ps.items())  # fmt: skip
        parts.append(f"{member_id}|{spec.process_id}|{tasks(spec.active)}|"
                     f"{tasks(spec.standby)}|{offsets}")  # fmt: skip
    return f"{standbys};{subs};{'#'.join(parts)}"


def shown(members: dict, assignment: dict[str, sa.MemberAssignment]) -> str:
    def tasks(held: dict) -> str:
        return ",".join(sorted(f"{s}.{p}" for s, ps in held.items() for p in ps))

    return " ".join(f"{m}=A:{tasks(assignment[m].active)};S:{tasks(assignment[m].standby)}"
                    for m in members)  # fmt: skip


def test_kt_assigns_tasks_as_kafkas_sticky_task_assignor() -> None:
    rng = random.Random(20261129)
    groups = [random_group(rng) for _ in range(1000)]
    theirs = kafka4_answers("StreamsAssignorOracle.java", [line(*c) for c in groups])
    for (standbys, subtopologies, members), expected in zip(groups, theirs, strict=True):
        ours = shown(members, sa.assign(members, subtopologies, standbys))
        assert ours == expected, line(standbys, subtopologies, members)
