"""The engine, in process: a project in a temp dir, the real step kinds, the `scripted`
adapter and the real contract types, an in-memory event sink, and fakes for gate
decisions, run control and child runs. No subprocess of swell, no store, no terminal.
Runs go through the local runner, or through `InOrder`, a fake driver of the same
run loop (`Harness(driver=InOrder)`).

Every run the harness drives is checked on the way out: its events are contiguous
and `RunState.replay` of them (through their JSON form) equals the state the runner
kept while it ran.
"""

from __future__ import annotations

import asyncio
import inspect
import textwrap
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from swell.adapters.registry import default_registry
from swell.contracts.registry import default_contract_types
from swell.engine.loop.decisions import Visit
from swell.engine.loop.run_loop import Ended, visit_result
from swell.engine.loop.runner import Runner, RunSummary
from swell.engine.loop.state import RunState
from swell.engine.steps.registry import StepKinds, default_step_kinds
from swell.engine.visit.context import (
    ChildOutcome,
    ChildRequest,
    GateDecision,
    RunOptions,
    RunPlan,
    Services,
    StepResult,
)
from swell.events import models as ev
from swell.manifest.lint import LintContext, lint_pipeline, lint_project
from swell.manifest.loader import load_pipeline, load_project

MANIFEST = """\
kind: WaveManifest
project:
  test_command: "true"
adapters:
  scripted:
    options: {script: replies.yaml, calls: calls.jsonl}
personas:
  dev:
    adapter: scripted
  critic:
    adapter: scripted
runtime:
  max_concurrency: 4
"""

FAST = RunOptions(gate_poll_seconds=0.01, control_poll_seconds=0.01)


class Crash(BaseException):
    """The process running the run died (kill -9): nothing after it is stored."""


class RecordingSink:
    """The event store of the harness: batches by run, in order. With `crash_after`,
    the process 'dies' when that many batches are stored: the batch that would be next
    is lost and the run stops at once."""

    def __init__(self) -> None:
        self.events: list[ev.BaseEvent] = []
        self.crash_after: int | None = None
        self.batches = 0
        self.dead = False

    def emit(self, events: Sequence[ev.BaseEvent]) -> None:
        if self.dead:
            return
        if self.crash_after is not None and self.batches >= self.crash_after:
            self.dead = True
            _start_nothing_more()
            raise Crash
        self.batches += 1
        # stored as a store keeps them: serialised, then read back
        self.events += [ev.parse_event(ev.event_json(e)) for e in events]

    def of(self, run_id: str) -> list[ev.BaseEvent]:
        return [e for e in self.events if e.run_id == run_id]


def _start_nothing_more() -> None:
    """A dead process starts nothing: visits launched just before the batch that would
    have recorded them never run (the runner commits before it lets them start)."""
    for task in asyncio.all_tasks():
        coro = task.get_coro()
        if inspect.iscoroutine(coro) and inspect.getcoroutinestate(coro) == inspect.CORO_CREATED:
            task.cancel()


class InOrder(Runner):
    """A fake driver of the run loop: a launched visit runs only when the loop waits,
    one at a time in launch order, on a clock that moves one second per visit. The
    same loop and decisions as the runner's, with none of its timing."""

    EPOCH = datetime(2026, 1, 1, tzinfo=UTC)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._queue: list[Visit] = []
        self._running: asyncio.Task[StepResult] | None = None
        self._clock = 0.0
        super().__init__(*args, **kwargs)

    def now(self) -> float:
        return self._clock

    def timestamp(self) -> str:
        return ev.now_iso(self.EPOCH + timedelta(seconds=self._clock))

    def launch(self, visit: Visit) -> None:
        self._queue.append(visit)

    async def wait_any(self) -> list[Ended]:
        visit = self._queue.pop(0)
        self._running = asyncio.ensure_future(self.executor.run(visit))
        await asyncio.wait([self._running])
        result = visit_result(self._running, str(self.plan.workspace))
        self._running = None
        self._clock += 1
        return [(visit, result, 1000)]

    async def cancel_all(self) -> None:
        self._queue.clear()
        if self._running is not None:
            self._running.cancel()
            await asyncio.wait([self._running])
            self._running = None


class FakeGates:
    """Decisions as `swell approve`/`reject` would record them, by (step, visit).
    An approval gate with no decision stops the run (as Ctrl-C would) when
    `stop_when_undecided` is set, so it can be decided and resumed."""

    def __init__(self, harness: Harness) -> None:
        self.harness = harness
        self.decisions: dict[tuple[str, int], GateDecision] = {}
        self.asked: Counter[tuple[str, int]] = Counter()
        self.stop_when_undecided = False

    def decide(
        self, step: str, decision: ev.GateVerdict = "approved", *, visit: int = 1, **kw: Any
    ) -> None:
        self.decisions[(step, visit)] = GateDecision(decision, by="test", **kw)

    def gate_decision(self, run_id: str, step_id: str, visit: int) -> GateDecision | None:
        self.asked[(step_id, visit)] += 1
        found = self.decisions.get((step_id, visit))
        if found is None and self.stop_when_undecided:
            self.harness.interrupt(run_id)
        return found


class FakeControl:
    """`swell cancel` from another process: cancels once `cancel_when` says so."""

    def __init__(self) -> None:
        self.cancel_when: Callable[[str], bool] = lambda run_id: False

    def cancel_requested(self, run_id: str) -> bool:
        return self.cancel_when(run_id)


class FakeChildren:
    """Sub-pipelines as child runs in this process, through the same sink and services."""

    def __init__(self, harness: Harness) -> None:
        self.harness = harness

    async def run_child(self, request: ChildRequest) -> ChildOutcome:
        h = self.harness
        if request.resume_id:
            events = h.sink.of(request.resume_id)
            finished = [e for e in events if isinstance(e, ev.RunFinished)]
            if finished:
                left = RunState.replay(request.resume_id, events)
                return ChildOutcome(
                    request.resume_id,
                    finished[-1].status,
                    finished[-1].error,
                    left.artifacts,
                    dict(left.context),
                )
            plan = h.runs[request.resume_id].plan
            state = RunState.replay(plan.run_id, events)
        else:
            name = request.pipeline or request.step.pipeline or ""
            plan = h.plan(name, request.input, parent=request.parent, parent_step=request.step.id)
            plan.options = request.options or plan.options
            if request.own_workspace:  # an iterate item's child works apart
                plan.workspace = self.harness.root / ".swell" / "workspaces" / plan.run_id
            request.on_start(plan.run_id, plan.pipeline.name)
            state = None
        runner = h.start(plan, state)
        try:
            summary = await runner.run()
        except Crash:
            h.runs[plan.run_id].crashed = True  # the process died inside the child
            raise
        left = runner.state
        return ChildOutcome(
            summary.run_id, summary.status, summary.error, left.artifacts, dict(left.context)
        )


@dataclass
class Driven:
    """A runner the harness started, and what became of it."""

    plan: RunPlan
    runner: Runner
    summary: RunSummary | None = None
    crashed: bool = False


@dataclass
class Result:
    """One run as a test sees it: how it ended, its events, its state."""

    summary: RunSummary | None
    events: list[ev.BaseEvent]
    state: RunState
    crashed: bool = False

    @property
    def run_id(self) -> str:
        return self.state.run_id

    @property
    def status(self) -> str:
        return self.summary.status if self.summary else "crashed"

    @property
    def error(self) -> str | None:
        return self.summary.error if self.summary else None

    def of(self, kind: type[ev.BaseEvent]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    def types(self) -> list[str]:
        return [str(getattr(e, "type", "")) for e in self.events]

    def visits(self, step: str | None = None) -> list[tuple[str, int, str]]:
        """(step, visit, outcome) of each finished visit, in order."""
        return [
            (e.step_id or "", e.visit or 0, e.outcome)
            for e in self.of(ev.StepFinished)
            if step is None or e.step_id == step
        ]

    def artifact(self, step: str, name: str) -> Path:
        """The file of `step`'s latest artifact `name`."""
        return Path(self.state.artifacts[step][name])


@dataclass
class Harness:
    root: Path
    sink: RecordingSink = field(default_factory=RecordingSink)
    step_kinds: StepKinds = field(default_factory=default_step_kinds)
    control: FakeControl = field(default_factory=FakeControl)
    runs: dict[str, Driven] = field(default_factory=dict)
    driver: type[Runner] = Runner  # or InOrder
    options: RunOptions = field(default_factory=lambda: replace(FAST))
    # run ids are unique across harnesses: resume stops leftover processes by run id,
    # and another test session may be running on the same machine
    tag: str = field(default_factory=lambda: uuid.uuid4().hex[:6])

    def __post_init__(self) -> None:
        self.gates = FakeGates(self)
        self.children = FakeChildren(self)
        self.services = Services(
            step_kinds=self.step_kinds,
            adapters=default_registry(),
            contract_types=default_contract_types(),
            gates=self.gates,
            control=self.control,
            children=self.children,
        )
        if not (self.root / "wave.yaml").exists():
            self.manifest(MANIFEST)

    # ---------------------------------------------------------------- the project

    def write(self, rel: str, text: str) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return path

    def manifest(self, text: str) -> None:
        self.write("wave.yaml", text)

    def pipeline(self, text: str, name: str = "p") -> None:
        self.write(f".agents/pipelines/{name}.yaml", text)

    def replies(self, replies: list[dict[str, Any]]) -> None:
        """The scripted adapter's replies (see adapters/scripted.py)."""
        self.write("replies.yaml", yaml.safe_dump({"replies": replies}))

    def calls(self) -> list[dict[str, Any]]:
        """Every request the scripted adapter received, in order."""
        path = self.root / "calls.jsonl"
        return (
            [yaml.safe_load(line) for line in path.read_text().splitlines()]
            if path.exists()
            else []
        )

    # ---------------------------------------------------------------- runs

    def plan(
        self,
        name: str = "p",
        input_text: str = "",
        *,
        parent: RunPlan | None = None,
        parent_step: str | None = None,
    ) -> RunPlan:
        """A new run of pipeline `name`, checked as `swell run` checks it."""
        project = load_project(self.root)
        loaded = load_pipeline(self.root, name)
        lint = LintContext(
            step_kinds=self.step_kinds,
            adapter_types=self.services.adapters,
            contract_types=self.services.contract_types,
            adapter_options=self.services.adapters.options_model,
        )
        problems = lint_project(project, lint).errors + lint_pipeline(project, loaded, lint).errors
        assert not problems, "\n".join(map(str, problems))
        run_id = f"{loaded.name}-{self.tag}-{len(self.runs) + 1}"
        state = self.root / ".swell"
        return RunPlan(
            run_id=run_id,
            project=project,
            pipeline=loaded,
            input=input_text,
            workspace=parent.workspace if parent else state / "workspaces" / run_id,
            run_dir=state / "runs" / run_id,
            parent_run_id=parent.run_id if parent else None,
            parent_step_id=parent_step,
            options=self.options,
        )

    def start(self, plan: RunPlan, state: RunState | None = None) -> Runner:
        runner = self.driver(plan, self.services, self.sink, state)
        self.runs[plan.run_id] = Driven(plan, runner)
        return runner

    def interrupt(self, run_id: str) -> None:
        self.runs[run_id].runner.interrupt()

    def workspace(self, run_id: str) -> Path:
        """Where the run's steps work (a child run works in its parent's)."""
        return self.runs[run_id].plan.workspace

    def run(
        self, name: str = "p", input_text: str = "", *, crash_after: int | None = None
    ) -> Result:
        """Run a new run to its end (or its crash after `crash_after` stored batches)."""
        return self._drive(self.start(self.plan(name, input_text)), crash_after)

    def resume(self, run_id: str, *, crash_after: int | None = None) -> Result:
        """Continue a stored run in a new runner, from its replayed events (`swell resume`)."""
        self.sink.dead = False
        state = RunState.replay(run_id, self.sink.of(run_id))
        return self._drive(self.start(self.runs[run_id].plan, state), crash_after)

    def _drive(self, runner: Runner, crash_after: int | None) -> Result:
        run_id = runner.plan.run_id
        self.sink.crash_after = None if crash_after is None else self.sink.batches + crash_after
        driven = self.runs[run_id]
        try:
            driven.summary = asyncio.run(runner.run())
        except Crash:
            driven.crashed = True
        self.sink.crash_after = None
        if not self.sink.dead:
            self.check_replay()
        return Result(driven.summary, self.sink.of(run_id), runner.state, driven.crashed)

    def check_replay(self) -> None:
        """Every run's stored events are contiguous and replay to the state its runner kept."""
        for run_id, driven in self.runs.items():
            if driven.crashed:
                continue
            events = self.sink.of(run_id)
            assert [e.seq for e in events] == list(range(1, len(events) + 1)), run_id
            assert RunState.replay(run_id, events) == driven.runner.state, run_id


def closed_once(events: list[ev.BaseEvent]) -> None:
    """Every started visit was closed (finished or interrupted) exactly once."""
    started = Counter((e.step_id, e.visit) for e in events if isinstance(e, ev.StepStarted))
    closed = Counter(
        (e.step_id, e.visit) for e in events if isinstance(e, ev.StepFinished | ev.StepInterrupted)
    )
    assert all(n == 1 for n in started.values()), started
    assert started == closed


@pytest.fixture(name="h")
def h_fixture(tmp_path: Path) -> Harness:
    """`h`: a harness on a fresh project (the default wave.yaml) in tmp_path. A test
    module imports `h_fixture` to use it."""
    return Harness(tmp_path / "project")


__all__ = ["Crash", "Harness", "InOrder", "Result", "closed_once", "h_fixture"]
