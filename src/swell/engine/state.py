"""A run's state as a fold over its events.

The runner applies every event it emits to `RunState`; `swell resume` rebuilds the
same state by replaying the stored events. There is no other source of truth.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from swell.engine.graph import Activation
from swell.events.models import (
    BaseEvent,
    GateResolved,
    GateWaiting,
    Outcome,
    RetryRequested,
    ReworkRequested,
    RunStatus,
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
    started_once: bool = False

    @classmethod
    def replay(cls, run_id: str, events: Iterable[BaseEvent]) -> RunState:
        state = cls(run_id)
        for event in events:
            state.apply(event)
        return state

    def queued(self, step_id: str) -> bool:
        return any(a.step_id == step_id for a in self.queue)

    def apply(self, ev: BaseEvent) -> None:
        self.seq = max(self.seq, ev.seq)
        handler = _HANDLERS.get(getattr(ev, "type", ""))
        if handler:
            handler(self, ev)


def _run_started(s: RunState, ev: Any) -> None:
    s.status = "running"
    s.started_once = True


def _run_status(status: RunStatus) -> Any:
    def apply(s: RunState, ev: Any) -> None:
        s.status = status

    return apply


def _run_finished(s: RunState, ev: Any) -> None:
    s.status = ev.status


def _queued(s: RunState, ev: Any) -> None:
    s.queue.append(Activation(ev.step_id, ev.reason, ev.source_step, ev.source_visit))


def _started(s: RunState, ev: Any) -> None:
    for i, act in enumerate(s.queue):
        if act.step_id == ev.step_id:
            del s.queue[i]
            break
    s.numbered[ev.step_id] = max(s.numbered[ev.step_id], ev.visit)
    s.open[(ev.step_id, ev.visit)] = OpenVisit(
        ev.step_id, ev.visit, ev.kind, ev.source_step, ev.source_visit
    )


def _finished(s: RunState, ev: Any) -> None:
    s.open.pop((ev.step_id, ev.visit), None)
    s.counted[ev.step_id] += 1
    s.total += 1
    s.finished.add(ev.step_id)
    s.outcomes[(ev.step_id, ev.visit)] = ev.outcome
    s.last[ev.step_id] = StepSummary(ev.visit, ev.outcome, ev.exit_code)
    if ev.error_key is not None:
        previous = s.breaker.get(ev.step_id)
        count = previous[1] + 1 if previous and previous[0] == ev.error_key else 1
        s.breaker[ev.step_id] = (ev.error_key, count)
    elif ev.outcome == "success":
        s.breaker.pop(ev.step_id, None)


def _round(s: RunState, ev: Any) -> None:
    s.rounds = max(s.rounds, ev.round)
    if ev.thread:
        s.thread_rounds[ev.thread] = max(s.thread_rounds[ev.thread], ev.thread_round or 0)
        entry = Entry(ev.thread_round or 0, ev.role, ev.persona, ev.content, dict(ev.metadata))
        s.threads.setdefault(ev.thread, []).append(entry)


def _rework(s: RunState, ev: Any) -> None:
    s.reworks[ev.step_id] = ev


def _retry(s: RunState, ev: Any) -> None:
    s.retries[ev.step_id] = ev


def _summary(s: RunState, ev: Any) -> None:
    s.summaries[(ev.thread, ev.upto_round)] = ev.text


def _interrupted(s: RunState, ev: Any) -> None:
    s.open.pop((ev.step_id, ev.visit), None)


def _context(s: RunState, ev: Any) -> None:
    s.context[ev.key] = ev.value


def _artifact(s: RunState, ev: Any) -> None:
    s.artifacts.setdefault(ev.step_id, {})[ev.name] = ev.path
    s.artifact_sha256.setdefault(ev.step_id, {})[ev.name] = ev.sha256


def _gate_waiting(s: RunState, ev: Any) -> None:
    visit = s.open.get((ev.step_id, ev.visit))
    if visit:
        visit.gate = ev
        visit.resolution = None


def _gate_resolved(s: RunState, ev: Any) -> None:
    visit = s.open.get((ev.step_id, ev.visit))
    if visit:
        visit.resolution = ev
    s.status = "running"


def _child(s: RunState, ev: Any) -> None:
    visit = s.open.get((ev.step_id, ev.visit))
    if visit:
        visit.child_run_id = ev.child_run_id


_HANDLERS = {
    "run.started": _run_started,
    "run.resumed": _run_status("running"),
    "run.waiting": _run_status("waiting"),
    "run.finished": _run_finished,
    "step.queued": _queued,
    "step.started": _started,
    "step.finished": _finished,
    "step.interrupted": _interrupted,
    "round.recorded": _round,
    "thread.summarized": _summary,
    "rework.requested": _rework,
    "retry.requested": _retry,
    "context.set": _context,
    "artifact.written": _artifact,
    "gate.waiting": _gate_waiting,
    "gate.resolved": _gate_resolved,
    "child.started": _child,
}
