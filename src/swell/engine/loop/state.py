"""A run's state as a fold over its events.

The runner applies every event it emits to `RunState`; `swell resume` rebuilds the
same state by replaying the stored events. There is no other source of truth: a
snapshot (`to_snapshot`) is the fold of the events up to its seq, written down, so
`from_snapshot` followed by the events after that seq is the same state as replaying
them all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any, assert_never, cast

from swell.engine.loop.graph import Activation
from swell.engine.loop.policies import repeats
from swell.events.folds import UNREAD_BY_STATE, unread_by_state
from swell.events.models import (
    ArtifactWritten,
    BaseEvent,
    BudgetWarning,
    ChildRunStarted,
    ContextSet,
    Event,
    FailureAbsorbed,
    GateResolved,
    GateWaiting,
    Outcome,
    RetryRequested,
    ReviewCompleted,
    ReworkRequested,
    RoundRecorded,
    RunFinished,
    RunForked,
    RunResumed,
    RunRewound,
    RunStarted,
    RunStatus,
    RunWaiting,
    StepFinished,
    StepInterrupted,
    StepQueued,
    StepStarted,
    ThreadSummarized,
    parse_event,
)
from swell.threads.fidelity import Entry


@dataclass
class OpenVisit:
    """A visit that started and has not finished."""

    step_id: str
    visit: int
    kind: str
    source_step: str | None = None
    source_visit: int | None = None
    gate: GateWaiting | None = None
    resolution: GateResolved | None = None
    child_run_id: str | None = None
    children: dict[int, str] = field(default_factory=dict)  # iterate item -> child run id
    # iterate item -> child runs started for it: its attempts (`retry:`, children.run_item)
    item_attempts: dict[int, int] = field(default_factory=dict)


@dataclass
class StepSummary:
    visit: int
    outcome: Outcome
    exit_code: int | None


@dataclass
class RunState:
    run_id: str
    seq: int = 0
    status: RunStatus = "pending"
    counted: Counter[str] = field(default_factory=Counter)  # finished visits per step
    numbered: Counter[str] = field(default_factory=Counter)  # highest visit number per step
    total: int = 0
    context: dict[str, str] = field(default_factory=dict)
    queue: list[Activation] = field(default_factory=list)
    open: dict[tuple[str, int], OpenVisit] = field(default_factory=dict)
    finished: set[str] = field(default_factory=set)
    outcomes: dict[tuple[str, int], Outcome] = field(default_factory=dict)
    last: dict[str, StepSummary] = field(default_factory=dict)
    artifacts: dict[str, dict[str, str]] = field(default_factory=dict)  # step -> name -> path
    # step -> name -> the sha256 of the file when it was written (checked before injecting)
    artifact_sha256: dict[str, dict[str, str]] = field(default_factory=dict)
    breaker: dict[str, tuple[str, int]] = field(default_factory=dict)
    rounds: int = 0
    thread_rounds: Counter[str] = field(default_factory=Counter)
    threads: dict[str, list[Entry]] = field(default_factory=dict)  # each thread's rounds
    summaries: dict[tuple[str, int], str] = field(default_factory=dict)  # (thread, upto) -> text
    # contract failures waiting to be handled: rework step -> the request, step -> retry
    reworks: dict[str, ReworkRequested] = field(default_factory=dict)
    retries: dict[str, RetryRequested] = field(default_factory=dict)
    # failures the run went on past (`retry.on_failure: continue`) that make it end failed
    carried_failures: list[str] = field(default_factory=list)
    started_once: bool = False
    # what the run spent so far (visits and reviews; engine/loop/cost.py), and whether the
    # budget's one warning was given
    cost_usd: float = 0.0
    budget_warned: bool = False
    # each gate step's last decision, for `{{ gate.ID.* }}`
    gates: dict[str, GateResolved] = field(default_factory=dict)

    @classmethod
    def replay(cls, run_id: str, events: Iterable[BaseEvent]) -> RunState:
        state = cls(run_id)
        for event in events:
            state.apply(event)
        return state

    def queued(self, step_id: str) -> bool:
        return any(a.step_id == step_id for a in self.queue)

    def apply(self, ev: BaseEvent) -> None:
        if ev.seq > self.seq:
            self.seq = ev.seq
        if type(ev) not in UNREAD_BY_STATE:
            _fold(self, cast("Event", ev))  # one of the union's (events/models.py)

    # -------------------------------------------------------------- snapshots

    def to_snapshot(self) -> dict[str, Any]:
        """The state as JSON-able data, versioned; `from_snapshot` reads it back.

        Values from events (context, a round's metadata) are kept as they are: the
        caller serialises them as the store serialises events.
        """
        return {
            "version": SNAPSHOT_VERSION,
            "run_id": self.run_id,
            "seq": self.seq,
            "status": self.status,
            "started_once": self.started_once,
            "total": self.total,
            "counted": dict(self.counted),
            "numbered": dict(self.numbered),
            "context": dict(self.context),
            "queue": [[a.step_id, a.reason, a.source_step, a.source_visit] for a in self.queue],
            "open": [_open_data(v) for v in self.open.values()],
            "finished": sorted(self.finished),
            "outcomes": _outcome_runs(self.outcomes),
            "last": {k: [v.visit, v.outcome, v.exit_code] for k, v in self.last.items()},
            "artifacts": {k: dict(v) for k, v in self.artifacts.items()},
            "artifact_sha256": {k: dict(v) for k, v in self.artifact_sha256.items()},
            "breaker": {k: [key, count] for k, (key, count) in self.breaker.items()},
            "rounds": self.rounds,
            "thread_rounds": dict(self.thread_rounds),
            "threads": {
                name: [[e.round, e.role, e.persona, e.content, e.metadata] for e in entries]
                for name, entries in self.threads.items()
            },
            "summaries": [[name, upto, text] for (name, upto), text in self.summaries.items()],
            "reworks": {k: _event_data(v) for k, v in self.reworks.items()},
            "retries": {k: _event_data(v) for k, v in self.retries.items()},
            "carried_failures": list(self.carried_failures),
            "cost_usd": self.cost_usd,
            "budget_warned": self.budget_warned,
            "gates": {k: _event_data(v) for k, v in self.gates.items()},
        }

    @classmethod
    def from_snapshot(cls, data: Mapping[str, Any]) -> RunState:
        """The state `to_snapshot` wrote; ValueError for another version or bad data."""
        if not isinstance(data, Mapping) or data.get("version") != SNAPSHOT_VERSION:
            found = data.get("version") if isinstance(data, Mapping) else None
            raise ValueError(f"not a run state snapshot of version {SNAPSHOT_VERSION}: {found!r}")
        try:
            return cls._from_snapshot(data)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"a damaged run state snapshot: {exc!r}") from None

    @classmethod
    def _from_snapshot(cls, d: Mapping[str, Any]) -> RunState:
        opened = [_open_visit(v) for v in d["open"]]
        return cls(
            run_id=str(d["run_id"]),
            seq=int(d["seq"]),
            status=d["status"],
            counted=Counter(d["counted"]),
            numbered=Counter(d["numbered"]),
            total=int(d["total"]),
            context=dict(d["context"]),
            queue=[Activation(s, r, ss, sv) for s, r, ss, sv in d["queue"]],
            open={(v.step_id, v.visit): v for v in opened},
            finished=set(d["finished"]),
            outcomes=_outcomes(d["outcomes"]),
            last={k: StepSummary(v, o, x) for k, (v, o, x) in d["last"].items()},
            artifacts={k: dict(v) for k, v in d["artifacts"].items()},
            artifact_sha256={k: dict(v) for k, v in d["artifact_sha256"].items()},
            breaker={k: (key, count) for k, (key, count) in d["breaker"].items()},
            rounds=int(d["rounds"]),
            thread_rounds=Counter(d["thread_rounds"]),
            threads={
                name: [
                    Entry(n, role, persona, content, dict(meta))
                    for n, role, persona, content, meta in entries
                ]
                for name, entries in d["threads"].items()
            },
            summaries={(name, upto): text for name, upto, text in d["summaries"]},
            reworks={k: _event(v, ReworkRequested) for k, v in d["reworks"].items()},
            retries={k: _event(v, RetryRequested) for k, v in d["retries"].items()},
            started_once=bool(d["started_once"]),
            carried_failures=list(d.get("carried_failures", [])),  # not in older snapshots
            cost_usd=float(d.get("cost_usd", 0.0)),  # nor these
            budget_warned=bool(d.get("budget_warned", False)),
            gates={k: _event(v, GateResolved) for k, v in d.get("gates", {}).items()},
        )


SNAPSHOT_VERSION = 1
_OUTCOME_LETTERS: dict[str, Outcome] = {"s": "success", "f": "failure"}
_LETTERS = {outcome: letter for letter, outcome in _OUTCOME_LETTERS.items()}


def _outcome_runs(outcomes: dict[tuple[str, int], Outcome]) -> dict[str, list[list[Any]]]:
    """Each step's outcomes as runs of consecutive visits: [first visit, "ssf..."]."""
    by_step: dict[str, list[int]] = {}
    for step_id, visit in outcomes:
        by_step.setdefault(step_id, []).append(visit)
    runs: dict[str, list[list[Any]]] = {}
    for step_id, visits in by_step.items():
        visits.sort()
        for _, group in groupby(enumerate(visits), key=lambda iv: iv[1] - iv[0]):
            numbers = [v for _, v in group]
            letters = "".join(_LETTERS[outcomes[(step_id, v)]] for v in numbers)
            runs.setdefault(step_id, []).append([numbers[0], letters])
    return runs


def _outcomes(runs: Mapping[str, list[list[Any]]]) -> dict[tuple[str, int], Outcome]:
    return {
        (step_id, first + i): _OUTCOME_LETTERS[letter]
        for step_id, step_runs in runs.items()
        for first, letters in step_runs
        for i, letter in enumerate(letters)
    }


def _event_data(event: BaseEvent) -> dict[str, Any]:
    return {
        "type": getattr(event, "type", ""),
        **event.model_dump(mode="json", exclude_defaults=True),
    }


def _event(data: Mapping[str, Any], kind: type[BaseEvent]) -> Any:
    event = parse_event(dict(data))
    if not isinstance(event, kind):
        raise ValueError(f"expected a {kind.__name__}, found {type(event).__name__}")
    return event


def _open_data(v: OpenVisit) -> dict[str, Any]:
    return {
        "step_id": v.step_id,
        "visit": v.visit,
        "kind": v.kind,
        "source_step": v.source_step,
        "source_visit": v.source_visit,
        "gate": _event_data(v.gate) if v.gate else None,
        "resolution": _event_data(v.resolution) if v.resolution else None,
        "child_run_id": v.child_run_id,
        "children": {str(k): c for k, c in v.children.items()},
        "item_attempts": {str(k): n for k, n in v.item_attempts.items()},
    }


def _open_visit(d: Mapping[str, Any]) -> OpenVisit:
    return OpenVisit(
        step_id=d["step_id"],
        visit=d["visit"],
        kind=d["kind"],
        source_step=d["source_step"],
        source_visit=d["source_visit"],
        gate=cast(GateWaiting, _event(d["gate"], GateWaiting)) if d["gate"] else None,
        resolution=cast(GateResolved, _event(d["resolution"], GateResolved))
        if d["resolution"]
        else None,
        child_run_id=d["child_run_id"],
        children={int(k): c for k, c in d.get("children", {}).items()},  # not in older ones
        item_attempts={int(k): n for k, n in d.get("item_attempts", {}).items()},  # nor this
    )


def _run_started(s: RunState) -> None:
    s.status = "running"
    s.started_once = True


def _run_finished(s: RunState, ev: RunFinished) -> None:
    s.status = ev.status


def _queued(s: RunState, ev: StepQueued) -> None:
    if ev.step_id is None:
        return  # not a step's: the engine names the step it queues
    s.queue.append(Activation(ev.step_id, ev.reason, ev.source_step, ev.source_visit))


def _started(s: RunState, ev: StepStarted) -> None:
    if ev.step_id is None or ev.visit is None:
        return  # not a visit's: the engine stamps its step and visit on each
    for i, act in enumerate(s.queue):
        if act.step_id == ev.step_id:
            del s.queue[i]
            break
    s.numbered[ev.step_id] = max(s.numbered[ev.step_id], ev.visit)
    s.open[(ev.step_id, ev.visit)] = OpenVisit(
        ev.step_id, ev.visit, ev.kind, ev.source_step, ev.source_visit
    )


def _finished(s: RunState, ev: StepFinished) -> None:
    if ev.step_id is None or ev.visit is None:
        return  # not a visit's: the engine stamps its step and visit on each
    s.open.pop((ev.step_id, ev.visit), None)
    s.counted[ev.step_id] += 1
    s.total += 1
    s.finished.add(ev.step_id)
    s.outcomes[(ev.step_id, ev.visit)] = ev.outcome
    s.last[ev.step_id] = StepSummary(ev.visit, ev.outcome, ev.exit_code)
    s.cost_usd += ev.cost_usd
    if ev.error_key is not None:
        s.breaker[ev.step_id] = (ev.error_key, repeats(s.breaker.get(ev.step_id), ev.error_key))
    elif ev.outcome == "success":
        s.breaker.pop(ev.step_id, None)


def _round(s: RunState, ev: RoundRecorded) -> None:
    s.rounds = max(s.rounds, ev.round)
    if ev.thread:
        s.thread_rounds[ev.thread] = max(s.thread_rounds[ev.thread], ev.thread_round or 0)
        entry = Entry(ev.thread_round or 0, ev.role, ev.persona, ev.content, dict(ev.metadata))
        s.threads.setdefault(ev.thread, []).append(entry)


def _moved_on(s: RunState) -> None:
    """A fork or a rewind: the agents' own sessions of the rounds so far went on past
    this point (in the origin, in abandoned visits), so none is resumed natively; the
    thread's transcript is replayed instead (engine/agent/thread_context.py)."""
    for entries in s.threads.values():
        for entry in entries:
            if entry.metadata.get("session_id"):
                entry.metadata["session_host"] = "moved on (fork or rewind)"


def _interrupted(s: RunState, ev: StepInterrupted) -> None:
    if ev.step_id is not None and ev.visit is not None:
        s.open.pop((ev.step_id, ev.visit), None)


def _artifact(s: RunState, ev: ArtifactWritten) -> None:
    if ev.step_id is None:
        return  # not a step's: the engine stamps the step that wrote it
    s.artifacts.setdefault(ev.step_id, {})[ev.name] = ev.path
    s.artifact_sha256.setdefault(ev.step_id, {})[ev.name] = ev.sha256


def _visit_of(s: RunState, ev: BaseEvent) -> OpenVisit | None:
    """The open visit an event is about, if it is one."""
    if ev.step_id is None or ev.visit is None:
        return None
    return s.open.get((ev.step_id, ev.visit))


def _gate_waiting(s: RunState, ev: GateWaiting) -> None:
    visit = _visit_of(s, ev)
    if visit:
        visit.gate = ev
        visit.resolution = None


def _gate_resolved(s: RunState, ev: GateResolved) -> None:
    visit = _visit_of(s, ev)
    if visit:
        visit.resolution = ev
    if ev.step_id:
        s.gates[ev.step_id] = ev
    s.status = "running"


def _child(s: RunState, ev: ChildRunStarted) -> None:
    visit = _visit_of(s, ev)
    if visit:
        visit.child_run_id = ev.child_run_id
        if ev.item is not None:
            visit.children[ev.item] = ev.child_run_id
            visit.item_attempts[ev.item] = visit.item_attempts.get(ev.item, 0) + 1


def _failure_request(s: RunState, ev: ReworkRequested | RetryRequested) -> None:
    """A contract failure to handle: rework runs `step_id` next, retry reruns it."""
    if ev.step_id is None:
        return  # not a step's: the engine names the step to rerun
    if isinstance(ev, ReworkRequested):
        s.reworks[ev.step_id] = ev
    else:
        s.retries[ev.step_id] = ev


def _fold(s: RunState, ev: Event) -> None:
    """What one event changes; every kind is named here or in `events/folds.py`, so a
    new one must be decided. The cases go by how often runs emit them: each case is a
    type check, so the common kinds come first."""
    match ev:
        case StepFinished():
            _finished(s, ev)
        case StepStarted():
            _started(s, ev)
        case StepQueued():
            _queued(s, ev)
        case RoundRecorded():
            _round(s, ev)
        case RunForked() | RunRewound():
            _moved_on(s)
        case ContextSet():
            s.context[ev.key] = ev.value
        case ArtifactWritten():
            _artifact(s, ev)
        case ReviewCompleted():
            s.cost_usd += ev.cost_usd
        case ReworkRequested() | RetryRequested():
            _failure_request(s, ev)
        case ThreadSummarized():
            s.summaries[(ev.thread, ev.upto_round)] = ev.text
        case StepInterrupted():
            _interrupted(s, ev)
        case GateWaiting():
            _gate_waiting(s, ev)
        case GateResolved():
            _gate_resolved(s, ev)
        case ChildRunStarted():
            _child(s, ev)
        case FailureAbsorbed():
            if ev.fails_run:
                s.carried_failures.append(ev.error)
        case BudgetWarning():
            s.budget_warned = True
        case RunStarted():
            _run_started(s)
        case RunResumed():
            s.status = "running"
        case RunWaiting():
            s.status = "waiting"
        case RunFinished():
            _run_finished(s, ev)
        case _ if not unread_by_state(ev):  # the others `apply` passed over
            assert_never(ev)
