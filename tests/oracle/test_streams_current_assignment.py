"""kt's port of Kafka's streams CurrentAssignmentBuilder
(kt/broker/group/streams_current_assignment.py) against Kafka 4.4's own, run in Java
(interop/StreamsCurrentAssignmentOracle.java), on random members: in each state, holding
active (with epochs), standby and warm-up tasks, some pending revocation, facing a target
whose tasks other processes may still hold, saying or not what they own. The next member
(state, epochs, tasks, pending revocation) or the error must be the same from both."""

from __future__ import annotations

import random

from kt.broker.group import streams_current_assignment as rc
from tests.oracle._java_oracle import kafka4_answers

SUBTOPOLOGIES = ("0", "1")
PARTITIONS = range(4)
PROCESSES = ("me", "p1", "p2")


def some_tasks(rng: random.Random, density: float) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    for s in SUBTOPOLOGIES:
        ps = {p for p in PARTITIONS if rng.random() < density}
        if ps:
            out[s] = ps
    return out


def with_epochs(rng: random.Random, tasks: dict[str, set[int]]) -> dict[str, dict[int, int]]:
    return {s: {p: rng.randint(1, 5) for p in ps} for s, ps in tasks.items()}


def random_case(rng: random.Random) -> tuple:
    state = rng.choice(list(rc.MemberState))
    epoch = rng.randint(1, 6)
    member = rc.MemberAssignment(
        process_id="me", state=state, member_epoch=epoch, previous_member_epoch=epoch - 1,
        assigned=rc.AssignedTasks(with_epochs(rng, some_tasks(rng, 0.3)),
                                  some_tasks(rng, 0.2), some_tasks(rng, 0.1)),
        pending_revocation=rc.AssignedTasks(with_epochs(rng, some_tasks(rng, 0.15)),
                                            some_tasks(rng, 0.1), some_tasks(rng, 0.05)),
    )  # fmt: skip
    target = rc.TasksTuple(some_tasks(rng, 0.35), some_tasks(rng, 0.25), some_tasks(rng, 0.1))
    tasks = [(s, p) for s in SUBTOPOLOGIES for p in PARTITIONS]
    active = {t: rng.choice(PROCESSES) for t in tasks if rng.random() < 0.3}
    standby = {
        t: set(rng.sample(PROCESSES, rng.randint(1, 2))) for t in tasks if rng.random() < 0.2
    }
    warmup = {t: {rng.choice(PROCESSES)} for t in tasks if rng.random() < 0.1}
    owned = None if rng.random() < 0.3 else rng.choice([
        rc.TasksTuple(),
        rc.TasksTuple({s: set(ps) for s, ps in member.assigned.active.items()},
                      member.assigned.standby, member.assigned.warmup),
        rc.TasksTuple(some_tasks(rng, 0.3), some_tasks(rng, 0.2), {}),
    ])  # fmt: skip
    return member, epoch + rng.choice([0, 1, 2]), target, active, standby, warmup, owned


def line(member, target_epoch, target, active, standby, warmup, owned) -> str:  # type: ignore[no-untyped-def]
    def tasks(t: dict) -> str:
        return "/".join(f"{s}." + ".".join(map(str, sorted(ps))) for s, ps in t.items() if ps)

    def epochs(t: dict) -> str:
        return "/".join(f"{s}." + ".".join(f"{p}@{e}" for p, e in sorted(ps.items()))
                        for s, ps in t.items() if ps)  # fmt: skip

    owners = "/".join(f"{s}.{p}={o}" for (s, p), o in active.items())

    def replicas(found: dict) -> str:
        return "/".join(f"{s}.{p}=" + ",".join(sorted(os)) for (s, p), os in found.items())

    said = (
        "-"
        if owned is None
        else f"{tasks(owned.active)}|{tasks(owned.standby)}|{tasks(owned.warmup)}"
    )
    return ";".join([
        member.process_id, str(int(member.state)), str(member.member_epoch),
        str(member.previous_member_epoch), epochs(member.assigned.active),
        tasks(member.assigned.standby), tasks(member.assigned.warmup),
        epochs(member.pending_revocation.active), tasks(member.pending_revocation.standby),
        tasks(member.pending_revocation.warmup), str(target_epoch), tasks(target.active),
        tasks(target.standby), tasks(target.warmup), owners, replicas(standby),
        replicas(warmup), said,
    ])  # fmt: skip


def ours(member, target_epoch, target, active, standby, warmup, owned) -> str:  # type: ignore[no-untyped-def]
    try:
        m = rc.reconcile(member, target_epoch, target, lambda s, p: active.get((s, p)),
                         lambda s, p: standby.get((s, p), set()),
                         lambda s, p: warmup.get((s, p), set()), owned)  # fmt: skip
    except rc.FencedMemberEpochError as e:
        return f"ERROR {e}"

    def tasks(t: dict) -> str:
        return ",".join(sorted(f"{s}.{p}" for s, ps in t.items() for p in ps))

    def epochs(t: dict) -> str:
        return ",".join(sorted(f"{s}.{p}@{e}" for s, ps in t.items() for p, e in ps.items()))

    a, r = m.assigned, m.pending_revocation
    return (f"{int(m.state)} {m.member_epoch} {m.previous_member_epoch} A:{epochs(a.active)} "
            f"S:{tasks(a.standby)} W:{tasks(a.warmup)} RA:{epochs(r.active)} "
            f"RS:{tasks(r.standby)} RW:{tasks(r.warmup)}")  # fmt: skip


def test_kt_reconciles_streams_members_as_kafka() -> None:
    rng = random.Random(20261129)
    cases = [random_case(rng) for _ in range(3000)]
    theirs = kafka4_answers("StreamsCurrentAssignmentOracle.java", [line(*c) for c in cases])
    states = set()
    for case, expected in zip(cases, theirs, strict=True):
        assert ours(*case) == expected, line(*case)
        states.add(expected.split()[0])
    assert states == {"1", "2", "3", "ERROR"}  # every outcome came up
