"""The streams groups' task assignor (KIP-1071): Kafka 4.4's StickyTaskAssignor, ported
with the iteration orders of the Java collections it walks, so that kt assigns the same
tasks to the same members as Kafka for the same group.

A task is (subtopology id, partition): every subtopology has as many tasks as its
configured topology says; stateful ones (with changelog topics) also get
`num_standby_replicas` standby copies, never in the process (Streams instance) holding
the task. Members of one process share its load (tasks per member). The assignment:

1. Active tasks go back to their previous owner while it is under its quota (ceil of the
   tasks over the members, recomputed as members fill up), then to a member that had
   them as standby (the least loaded of those with prior state), then, in task order, to
   the least loaded member of the least loaded process.
2. Standby tasks go to the previous active owner (if it no longer holds the task), then
   to previous standby holders (those that held it, then those reporting the most state),
   then to the least loaded processes that do not hold the task, as many as there are.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kt.broker.group.java_collections import JavaPriorityQueue, java_hash_map_order

TaskId = tuple[str, int]  # (subtopology id, partition)
Tasks = dict[str, set[int]]  # subtopology id -> partitions


class TaskAssignorError(Exception):
    """Kafka's TaskAssignorException: the tasks cannot be placed."""


@dataclass(frozen=True)
class MemberSpec:
    """What the assignor knows of a member: its process, the tasks it holds, and the
    changelog offsets it reported per task (its state)."""

    process_id: str
    active: Mapping[str, Iterable[int]] = field(default_factory=dict)
    standby: Mapping[str, Iterable[int]] = field(default_factory=dict)
    task_offsets: Mapping[str, Mapping[int, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class SubtopologySpec:
    number_of_tasks: int
    stateful: bool


@dataclass
class MemberAssignment:
    active: Tasks = field(default_factory=dict)
    standby: Tasks = field(default_factory=dict)


class _Process:
    """ProcessState: the members of one Streams instance and the tasks they hold."""

    def __init__(self, process_id: str) -> None:
        self.process_id = process_id
        self.capacity = 0
        self.load = float("inf")
        self.task_count = 0
        self.member_counts: dict[str, int] = {}  # in insertion order (a HashMap's keys)
        self.active: dict[str, set[TaskId]] = {}
        self.standby: dict[str, set[TaskId]] = {}
        self.tasks: set[TaskId] = set()
        self._by_load: JavaPriorityQueue[list] | None = None

    def add_member(self, member_id: str) -> None:
        self.member_counts[member_id] = 0
        self.capacity += 1
        self._compute_load()

    def _compute_load(self) -> None:
        self.load = -1.0 if self.capacity <= 0 else self.task_count / self.capacity

    def add_task(self, member_id: str, task: TaskId, active: bool) -> int:
        count = self._add(member_id, task, active)
        self._by_load = None
        return count

    def _add(self, member_id: str, task: TaskId, active: bool) -> int:
        self.task_count += 1
        self.tasks.add(task)
        (self.active if active else self.standby).setdefault(member_id, set()).add(task)
        self.member_counts[member_id] += 1
        self._compute_load()
        return self.member_counts[member_id]

    def add_to_least_loaded(self, task: TaskId, active: bool) -> int:
        """addTaskToLeastLoadedMember: the new task count of the member, -1 if none."""
        if not self.member_counts:
            return -1
        if len(self.member_counts) == 1:
            return self._add(next(iter(self.member_counts)), task, active)
        if self._by_load is None:
            self._by_load = JavaPriorityQueue(key=lambda entry: entry[1])
            for member_id in java_hash_map_order(self.member_counts):
                self._by_load.add([member_id, self.member_counts[member_id]])
        entry = self._by_load.poll()
        assert entry is not None
        entry[1] = self._add(entry[0], task, active)
        self._by_load.add(entry)
        return entry[1]


@dataclass(frozen=True)
class _Member:
    process_id: str
    member_id: str


class _State:
    """StickyTaskAssignor.LocalState."""

    def __init__(self, members: dict[str, MemberSpec], subtopologies: dict[str, SubtopologySpec],
                 num_standby_replicas: int) -> None:  # fmt: skip
        self.num_standby_replicas = num_standby_replicas
        self.total_active_tasks = sum(s.number_of_tasks for s in subtopologies.values())
        self.total_tasks = self.total_active_tasks + sum(
            s.number_of_tasks * num_standby_replicas for s in subtopologies.values() if s.stateful
        )
        self.members_with_active_capacity = self.members_with_capacity = len(members)
        self.active_per_member = _per_member(self.total_active_tasks, len(members))
        self.tasks_per_member = _per_member(self.total_tasks, len(members))
        processes: dict[str, _Process] = {}
        calls: list[str] = []  # the process of each member, a computeIfAbsent call each
        self.prev_active: dict[TaskId, _Member] = {}
        candidates: dict[TaskId, list[tuple[_Member, bool, int]]] = {}
        for member_id, spec in members.items():
            member = _Member(spec.process_id, member_id)
            processes.setdefault(spec.process_id, _Process(spec.process_id)).add_member(member_id)
            calls.append(spec.process_id)
            for sub, partitions in spec.active.items():
                for p in partitions:
                    self.prev_active[(sub, p)] = member
            _collect_standby_candidates(candidates, spec, member)
        # new HashMap<>(members), filled with computeIfAbsent
        order = java_hash_map_order(calls, len(members), head_insertion=True)
        self.processes = {pid: processes[pid] for pid in order}
        # the previous standby holders first, then by the state they reported, most first
        self.prev_standby = {
            task: [m for m, _, _ in sorted(found, key=lambda c: (not c[1], -c[2]))]
            for task, found in candidates.items()
        }

    def process(self, member: _Member) -> _Process:
        return self.processes[member.process_id]

    def note_active(self, count: int) -> None:
        """maybeUpdateActiveTasksPerMember."""
        if count == self.active_per_member:
            self.members_with_active_capacity -= 1
            self.total_active_tasks -= count
            self.active_per_member = _per_member(self.total_active_tasks,
                                                 self.members_with_active_capacity)  # fmt: skip

    def note_task(self, count: int) -> None:
        """maybeUpdateTotalTasksPerMember."""
        if count == self.tasks_per_member:
            self.members_with_capacity -= 1
            self.total_tasks -= count
            self.tasks_per_member = _per_member(self.total_tasks, self.members_with_capacity)

    def under_active_quota(self, member: _Member) -> bool:
        return self.process(member).member_counts[member.member_id] < self.active_per_member

    def under_task_quota(self, member: _Member) -> bool:
        return self.process(member).member_counts[member.member_id] < self.tasks_per_member

    def by_load(self) -> JavaPriorityQueue[_Process]:
        queue: JavaPriorityQueue[_Process] = JavaPriorityQueue(key=lambda p: p.load)
        queue.add_all(self.processes.values())
        return queue


def assign(members: Mapping[str, MemberSpec], subtopologies: Mapping[str, SubtopologySpec],
           num_standby_replicas: int) -> dict[str, MemberAssignment]:  # fmt: skip
    """Each member's active and standby tasks. `members` in the group's order (walked
    in HashMap order, as Kafka's GroupSpec does); `subtopologies` by id."""
    ordered = {m: members[m] for m in java_hash_map_order(members)}
    state = _State(ordered, dict(sorted(subtopologies.items())), num_standby_replicas)
    _assign_active(state, [(sub, p) for sub, spec in sorted(subtopologies.items())
                           for p in range(spec.number_of_tasks)])  # fmt: skip
    if num_standby_replicas > 0:
        _assign_standby(state, [(sub, p) for sub, spec in sorted(subtopologies.items())
                                if spec.stateful for p in range(spec.number_of_tasks)])  # fmt: skip
    out = {}
    for member_id in ordered:
        assignment = MemberAssignment()
        for process in state.processes.values():
            for task in process.active.get(member_id, ()):
                assignment.active.setdefault(task[0], set()).add(task[1])
            for task in process.standby.get(member_id, ()):
                assignment.standby.setdefault(task[0], set()).add(task[1])
        out[member_id] = assignment
    return out


def _collect_standby_candidates(found: dict[TaskId, list[tuple[_Member, bool, int]]],
                                spec: MemberSpec, member: _Member) -> None:  # fmt: skip
    for sub, partitions in spec.standby.items():
        for p in partitions:
            offset = spec.task_offsets.get(sub, {}).get(p, 0)
            found.setdefault((sub, p), []).append((member, True, offset))
    for sub, offsets in spec.task_offsets.items():
        held = set(spec.standby.get(sub, ()))
        for p, offset in offsets.items():
            if p not in held:
                found.setdefault((sub, p), []).append((member, False, offset))


def _assign_active(state: _State, tasks: list[TaskId]) -> None:
    tasks.sort(key=lambda t: (t[1], t[0]))
    left = []
    for task in tasks:  # to the previous owner
        member = state.prev_active.get(task)
        if member is not None and state.under_active_quota(member):
            _take(state, state.process(member).add_task(member.member_id, task, True))
        else:
            left.append(task)
    tasks, left = left, []
    for task in tasks:  # to a member with its state
        member = _least_loaded_previous(state, state.prev_standby.get(task), None)
        if member is not None and state.under_active_quota(member):
            _take(state, state.process(member).add_task(member.member_id, task, True))
        else:
            left.append(task)
    left.sort()
    queue = state.by_load()
    for task in left:
        process = queue.poll()
        if process is None:
            raise TaskAssignorError(f"No process available to assign active task {_name(task)}.")
        count = process.add_to_least_loaded(task, True)
        if count == -1:
            raise TaskAssignorError(f"No member available to assign active task {_name(task)}.")
        _take(state, count)
        queue.add(process)


def _take(state: _State, count: int) -> None:
    state.note_active(count)
    state.note_task(count)


def _least_loaded_previous(state: _State, members: list[_Member] | None,
                           standby_of: TaskId | None) -> _Member | None:  # fmt: skip
    """findPrevMemberWithLeastLoad: the first, replaced only by one lower on both the
    process's load and its own task count (skipping processes holding `standby_of`)."""
    candidate, process_load, member_load = None, float("inf"), float("inf")
    for member in members or ():
        process = state.process(member)
        if standby_of is not None and standby_of in process.tasks:
            continue
        load, count = process.load, process.member_counts[member.member_id]
        if candidate is None or (load < process_load and count < member_load):
            candidate, process_load, member_load = member, load, count
    return candidate


def _assign_standby(state: _State, tasks: list[TaskId]) -> None:
    replicas = state.num_standby_replicas
    to_least_loaded: list[tuple[TaskId, int]] = []
    tasks.sort(key=lambda t: (t[1], t[0]), reverse=True)
    for task in tasks:
        for i in range(replicas):
            active = state.prev_active.get(task)
            if active is not None:
                process = state.process(active)
                if task not in process.tasks and state.under_task_quota(active):
                    state.note_task(process.add_task(active.member_id, task, False))
                    continue
            member = _least_loaded_previous(state, state.prev_standby.get(task), task)
            if member is None or not state.under_task_quota(member):
                to_least_loaded.append((task, replicas - i))
                break
            state.note_task(state.process(member).add_task(member.member_id, task, False))
    to_least_loaded.sort(key=lambda pair: pair[0], reverse=True)
    queue = state.by_load()
    for task, remaining in to_least_loaded:
        for _ in range(remaining):
            if not _standby_to_least_loaded(state, queue, task):
                break  # not enough capacity: fewer standbys than asked (Kafka warns)


def _standby_to_least_loaded(state: _State, queue: JavaPriorityQueue[_Process],
                             task: TaskId) -> bool:  # fmt: skip
    process = queue.poll()
    if process is None:
        return False
    found = False
    if task not in process.tasks:
        count = process.add_to_least_loaded(task, False)
        if count != -1:
            found = True
            state.note_task(count)
    elif len(queue):
        found = _standby_to_least_loaded(state, queue, task)
    queue.add(process)
    return found


def _per_member(tasks: int, members: int) -> int:
    return 0 if members == 0 else -(-tasks // members)


def _name(task: TaskId) -> str:
    return f"{task[0]}_{task[1]}"
