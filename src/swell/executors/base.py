"""The executor seam: who executes a run, and how a person reaches it.

`swell run/resume/approve/reject/cancel` and the dashboard's buttons talk to an
`Executor` and never ask which engine a run is on: `executor_for(run)` picks it from
the run's stored options, `executor_named(...)` for a new run. The local executor
(executors/local.py) runs the loop in this process and meets other processes through
the store (decisions, cancel requests); the Temporal executor (executors/temporal/
executor.py) starts a workflow and delivers decisions and cancellation to it, so the
workflow stays the only writer of its run's events.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from swell.engine.loop.state import RunState
    from swell.engine.visit.context import GatePrompter, RunOptions, RunPlan
    from swell.events.bus import EventSink
    from swell.manifest.loader import LoadedPipeline
    from swell.ops.rerun import Reuse
    from swell.runtime import Deadline, Runtime
    from swell.store.protocols import RunReader, Store
    from swell.store.rows import GateRow, RunRow
    from swell.streaming import OutputSink

ENGINES = ("local", "temporal")


@dataclass(frozen=True)
class Decision:
    """A person's decision on a waiting approval gate (`step_id` None: the only one)."""

    decision: Literal["approved", "rejected"]
    step_id: str | None = None
    choice: str | None = None
    reason: str | None = None
    by: str | None = None


@dataclass(frozen=True)
class Decided:
    """A decision delivered: the gate's step, and the run to `swell resume` when no
    process executes the run (None: it goes on by itself)."""

    step_id: str
    resume: str | None = None


@dataclass(frozen=True)
class Cancelled:
    """What cancelling did: the runs now recorded as cancelled (empty: only asked),
    the run's status when it ended otherwise, and lines about processes killed."""

    ended: list[str] = field(default_factory=list)
    status: str | None = None
    killed: list[str] = field(default_factory=list)
    waiting_on: str | None = None  # who has not stopped it yet, when asked and waited


@dataclass
class Started:
    """A run recorded and started (or claimed to continue)."""

    run_id: str
    plan: RunPlan | None = None  # local: what this process executes
    state: RunState | None = None  # local: the state it continues from
    notes: list[str] = field(default_factory=list)
    pipeline: LoadedPipeline | None = None  # the pipeline it was started with
    auto_approve: bool = False  # its gates take their default choice


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr)


@dataclass(frozen=True)
class Watch:
    """How the caller follows a run: its event sinks and output watchers, who asks at
    an approval gate, whether to stop following at one nobody here can answer."""

    sinks: Sequence[EventSink] = ()
    watchers: Sequence[OutputSink] = ()
    prompter: GatePrompter | None = None
    stop_at_gates: bool = False
    deadline: Deadline | None = None
    say: Callable[[str], None] = _to_stderr  # notes for the person following


@dataclass(frozen=True)
class Ending:
    """How a followed run ended, or `waiting` when following stopped at a gate."""

    run_id: str
    status: str
    error: str | None = None


@dataclass(frozen=True)
class Detached:
    """A run left to go on without this process: what to tell a person and a machine."""

    run_id: str
    facts: dict[str, object]
    lines: list[str]


class Executor(Protocol):
    """Who executes a run. Every method raises SwellError subclasses a person can act
    on (RunStateError when the run cannot take the action)."""

    name: str
    live_output: bool  # follow() feeds `Watch.watchers` with running steps' output
    reruns: bool  # start() takes a `reuse` (`swell run --from-step`)
    timeouts: bool  # follow() honours `Watch.deadline`
    unsandboxed: bool  # a run may go without the sandbox (`--no-sandbox`)
    timers_go_on: bool  # a timer gate ends by itself while nobody follows the run
    held_by: str | None  # who executes its runs when no process claims them in the store

    async def start(
        self,
        rt: Runtime,
        loaded: LoadedPipeline,
        input_text: str,
        options: RunOptions,
        reuse: Reuse | None = None,
    ) -> Started:
        """Record a new run and set it going (local: claimed, to be followed here)."""
        ...

    def detach(self, rt: Runtime, started: Started, args: list[str]) -> Detached:
        """Let a started run go on without this process (`args`: how to show it)."""
        ...

    async def follow(self, rt: Runtime, started: Started, watch: Watch) -> Ending:
        """Show the run's events to `watch` until it ends (or stops at a gate)."""
        ...

    async def decide_gate(self, store: Store, run: RunRow, decision: Decision) -> Decided:
        """Deliver a decision on one of the run's waiting gates."""
        ...

    async def cancel(
        self, rt: Runtime, run: RunRow, *, wait: bool = False, force: float | None = None
    ) -> Cancelled:
        """Stop the run and its sub-pipeline runs for good; `wait`: until it is recorded
        (a while), `force`: kill what still executes it after that many seconds."""
        ...

    def resume(self, rt: Runtime, run: RunRow) -> Started:
        """Claim a stopped run to continue it here."""
        ...

    def waiting_hint(self, run_id: str) -> str:
        """How a run stopped at a gate goes on once decided."""
        ...

    def interrupted_hint(self, run_id: str) -> str:
        """What happens to the run when its follower is interrupted (Ctrl-C)."""
        ...


def waiting_gates(store: RunReader, run_id: str, *, approvals: bool = False) -> list[GateRow]:
    """The undecided gates a waiting run stops at: its own, and its waiting children's
    (`approvals`: only those a person decides, not timers)."""
    found = [
        g
        for g in store.gates(run_id)
        if g.status == "waiting"
        and g.decision is None
        and (not approvals or g.gate_type == "approval")
    ]
    for child in store.children(run_id):
        if child.status == "waiting":
            found += waiting_gates(store, child.id, approvals=approvals)
    return found
