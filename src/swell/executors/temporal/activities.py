"""The activities a `swell worker` runs: a visit (the existing visit executor), a
batch of the run's events for the store, a gate's question.

A worker serves runs of any project: each request carries the project's location,
the store's and the pipeline as the run started. What is expensive to rebuild (the
loaded project, the store connection, the run's folded state) is kept per process
between activities, and a run's state catches up with the events stored since.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from temporalio import activity
from temporalio.exceptions import ApplicationError

from swell import sweep
from swell.engine.loop.decisions import Visit
from swell.engine.loop.graph import Activation, Graph
from swell.engine.loop.state import RunState
from swell.engine.steps.gate import gate_message
from swell.engine.visit.checkpointing import state_dir_of
from swell.engine.visit.context import RunPlan, Services, StepResult
from swell.engine.visit.execute import VisitExecutor, base_namespace
from swell.errors import StoreError
from swell.events import models as ev
from swell.events.redact import Redactor
from swell.executors.temporal.children import EngineChildren, create_child
from swell.executors.temporal.observing import EngineObservers
from swell.executors.temporal.slots import VisitSlots
from swell.executors.temporal.specs import (
    UNRECORDED,
    ChildCreate,
    ChildStarted,
    RecordRequest,
    RunSpec,
    VisitReply,
    VisitRequest,
)
from swell.executors.temporal.workspace_sync import (
    Chain,
    VisitSync,
    local_path,
    local_run_dir,
    main_checkpoint,
    prepare_async,
)
from swell.manifest.loader import LoadedPipeline, load_project, load_stored_pipeline
from swell.runtime import (
    Runtime,
    StoreControl,
    StoreGates,
    load_state,
    open_registries,
)
from swell.store.capabilities import output_store
from swell.store.location import open_store, state_dir_for
from swell.store.protocols import Store
from swell.workspace.checkpoint import Checkpoints, repo_of
from swell.workspace.manager import Workspaces

HEARTBEAT_EVERY = 1.0  # seconds; the SDK sends at most one per throttle interval
STATES_KEPT = 256  # runs whose folded state a worker keeps between visits


@dataclass
class _Run:
    """What a worker keeps of one run between its visits."""

    plan: RunPlan
    graph: Graph
    workspaces: Workspaces
    state: RunState


class WorkerContext:
    """The per-process caches the activities share (one event loop: no locks)."""

    def __init__(self) -> None:
        self.stores: dict[str, Store] = {}
        self.runtimes: dict[tuple[str, str], tuple[int, Runtime]] = {}
        self.pipelines: dict[tuple[str, str], LoadedPipeline] = {}
        self.runs: OrderedDict[str, _Run] = OrderedDict()
        self.redactor = Redactor.from_environ(os.environ)
        self.own_queue: str | None = None  # this worker's sticky queue (worker.py)
        self.slots: dict[str, VisitSlots] = {}  # each task queue's visit slots (slots.py)
        self.observers = EngineObservers()  # the runs' hooks and traces (observing.py)

    def slots_for(self, queue: str, slots: int) -> VisitSlots:
        """The visit slots of one of this worker's task queues."""
        return self.slots.setdefault(queue, VisitSlots(slots))

    def store(self, location: str) -> Store:
        if location not in self.stores:
            self.stores[location] = open_store(location)
        return self.stores[location]

    def runtime(self, spec: RunSpec) -> Runtime:
        """The project at `spec.project_root`, loaded again when its manifest changed."""
        key = (spec.project_root, spec.store)
        cached = self.runtimes.get(key)
        project = cached[1].project if cached else load_project(Path(spec.project_root))
        stamp = _mtime(project.manifest_path)
        if cached is None or cached[0] != stamp:
            if cached is not None:
                project = load_project(Path(spec.project_root))
            root = project.root
            rt = Runtime(project, self.store(spec.store), open_registries(), state_dir_for(root))
            self.runtimes[key] = (stamp, rt)
        return self.runtimes[key][1]

    def run(self, spec: RunSpec, seq: int | None = None) -> _Run:
        """The run's plan and its state as stored now; `seq`, when known, the run's last
        stored event (a kept state that far is read no further)."""
        found = self.runs.get(spec.run_id)
        if found is None:
            rt = self.runtime(spec)
            loaded = self.pipeline(spec)
            plan = RunPlan(
                run_id=spec.run_id,
                project=rt.project,
                pipeline=loaded,
                input=spec.input,
                workspace=local_path(spec.workspace),
                run_dir=local_run_dir(spec.run_dir) if spec.remote else Path(spec.run_dir),
                parent_run_id=spec.parent_run_id,
                parent_step_id=spec.parent_step_id,
                options=spec.options,
            )
            graph = Graph(plan.pipeline.pipeline, rt.registries.step_kinds.of)  # personas rendered
            workspaces = Workspaces(rt.project.root, plan.workspace, graph.steps, plan.run_dir)
            found = _Run(plan, graph, workspaces, load_state(rt.store, spec.run_id))
            self.runs[spec.run_id] = found
            while len(self.runs) > STATES_KEPT:
                self.runs.popitem(last=False)
        else:
            self.runs.move_to_end(spec.run_id)
            if seq is not None and found.state.seq == seq:
                return found  # folded as far as the workflow recorded: nothing to read
            # the workflow recorded everything before it scheduled this visit
            for event in self.store(spec.store).events(spec.run_id, found.state.seq):
                found.state.apply(event)
        return found

    def caught_up(self, run_id: str, stored: Sequence[ev.BaseEvent]) -> None:
        """Events this process just stored, folded into the run's kept state when they
        follow it: the next visit need not read them back."""
        found = self.runs.get(run_id)
        if found is not None and stored and stored[0].seq == found.state.seq + 1:
            for event in stored:
                found.state.apply(event)

    def pipeline(self, spec: RunSpec) -> LoadedPipeline:
        key = (spec.pipeline_path, spec.pipeline_text)
        if key not in self.pipelines:
            self.pipelines[key] = load_stored_pipeline(Path(spec.pipeline_path), spec.pipeline_text)
        return self.pipelines[key]

    def services(self, spec: RunSpec, sync: VisitSync | None = None) -> Services:
        """What a visit gets; its sub-pipelines are child workflows (children.py)."""
        rt = self.runtime(spec)
        return Services(
            step_kinds=rt.registries.step_kinds,
            adapters=rt.registries.adapters,
            contract_types=rt.registries.contract_types,
            gates=StoreGates(rt.store),
            control=StoreControl(rt.store),
            children=EngineChildren(rt, self.slots, sync),
            output=output_store(rt.store),
            runs=rt.store,
            redactor=self.redactor,
            session_host=self.own_queue,
        )


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


class Activities:
    """The activities, bound to one worker's caches."""

    def __init__(self, context: WorkerContext | None = None) -> None:
        self.context = context or WorkerContext()

    @activity.defn(name="swell.record")
    async def record(self, request: RecordRequest) -> int:
        """Store a batch of the run's events; a batch stored before (the activity is
        retried after its answer was lost) is not stored twice. Returns how many were new."""
        store = self.context.store(request.store)
        events = [ev.parse_event(text) for text in request.events]
        if not events:
            return 0
        try:
            store.emit(events)
        except StoreError:
            # the workflow writes batches one after another, each all or nothing: what
            # is stored of this one is its beginning
            stored = {e.seq for e in store.events(request.run_id, events[0].seq - 1)}
            rest = [e for e in events if e.seq not in stored]
            if len(rest) == len(events):
                raise
            store.emit(rest)
            events = rest
        self.context.caught_up(request.run_id, events)
        self.context.observers.emit(store, request.run_id, events)  # hooks, traces
        return len(events)

    @activity.defn(name="swell.create_child")
    async def create_child(self, request: ChildCreate) -> ChildStarted:
        """Record a child run in the store for the workflow to start (children.py)."""
        return create_child(self.context.runtime(request.parent), request)

    @activity.defn(name="swell.gate_message")
    async def gate_message(self, request: VisitRequest) -> str:
        """What a gate visit asks, rendered with the run's variables."""
        run = self.context.run(request.spec)
        step = run.graph.steps[request.step_id]
        return gate_message(step, base_namespace(run.plan, run.state, step))

    @activity.defn(name="swell.visit")
    async def visit(self, request: VisitRequest) -> VisitReply:
        """One visit by the existing visit executor, heartbeating while it runs. When
        the workflow cancels it, the executor ends the visit's processes first."""
        spec = request.spec
        if request.events:  # recorded before this (local) visit: stored before it runs
            try:
                await self.record(RecordRequest(spec.store, spec.run_id, request.events))
            except StoreError as exc:
                raise ApplicationError(str(exc), type=UNRECORDED, non_retryable=True) from exc
        run = self.context.run(spec, request.seq)
        step = run.graph.steps[request.step_id]
        attempt = request.tries_before + activity.info().attempt
        chain = _chain(spec.remote, run)
        if chain is not None:  # the work tree at the commit this visit starts from
            await prepare_async(
                run.plan.workspace,
                chain.remote,
                spec.run_id,
                request.base,
                attempt > 1,
                spec.parent_run_id,
            )
            await asyncio.to_thread(chain.follow, request.base)
        if activity.info().attempt > 1:
            # the worker of the last attempt died: its processes, if on this host, go first
            markers = [
                f"SWELL_RUN_ID={request.spec.run_id}",
                f"SWELL_STEP_ID={request.step_id}",
                f"SWELL_VISIT={request.visit}",
            ]
            await sweep.stop_marked(markers)
        emitted: list[ev.BaseEvent] = []
        executor = VisitExecutor(
            run.plan,
            self.context.services(spec, _sync(request, chain, attempt)),
            run.state,
            run.graph.steps,
            run.workspaces,
            emitted.extend,  # committed with the visit's end, by the workflow
        )
        visit = Visit(
            step,
            request.visit,
            Activation(request.step_id, request.reason, request.source_step, request.source_visit),  # type: ignore[arg-type]
        )
        # a local activity has no heartbeat: it lives and dies with the workflow's worker
        beating = asyncio.create_task(_heartbeat(activity.info().is_local))
        started = time.monotonic()
        try:
            result = await executor.run(visit)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug in a step kind must not lose the run
            result = StepResult(outcome="failure", error=f"internal error: {exc!r}")
        finally:
            beating.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beating
        duration_ms = int((time.monotonic() - started) * 1000)
        if result.round_meta.get("session_id"):  # the agent's session is kept on this host
            result.round_meta["session_host"] = self.context.own_queue
        events = self.context.redactor.events([*emitted, *result.events])
        commit = None
        if chain is not None:  # the visit's checkpoint and what it leaves out, pushed
            taken = main_checkpoint(events)
            step_id, number = request.step_id, request.visit
            commit = await asyncio.to_thread(chain.publish, step_id, number, attempt, taken)
            events = chain.recorded(events)
        reply = reply_of(result, events, duration_ms)
        reply.commit = commit
        reply.queue = self.context.own_queue
        return reply


def _chain(remote: str | None, run: _Run) -> Chain | None:
    """The run's checkpoints here and on its workspace remote, if it has one."""
    if remote is None:
        return None
    plan = run.plan
    repo = Checkpoints(repo_of(state_dir_of(plan)), run.workspaces.checkpoints)
    return Chain(repo, plan.run_dir, plan.workspace, remote, plan.run_id)


def _sync(request: VisitRequest, chain: Chain | None, attempt: int) -> VisitSync | None:
    """The visit's place on the run's workspace remote, if it has one."""
    if chain is None:
        return None
    return VisitSync(chain, request.step_id, request.visit, attempt)


async def _heartbeat(local: bool) -> None:
    while not local:
        activity.heartbeat()
        await asyncio.sleep(HEARTBEAT_EVERY)


def reply_of(result: StepResult, events: Sequence[ev.BaseEvent], duration_ms: int) -> VisitReply:
    """A visit's result as it crosses the wire: its events redacted, its outputs as
    JSON holds them (a value JSON cannot hold, as its text)."""
    result = dataclasses.replace(
        result,
        events=list(events),
        outputs=_jsonable(result.outputs),
        round_meta=_jsonable(result.round_meta),
    )
    return VisitReply(result, duration_ms)


def _jsonable(data: dict[str, object]) -> dict[str, object]:
    from pydantic_core import to_jsonable_python

    value = to_jsonable_python(data, fallback=str)
    return dict(value) if isinstance(value, dict) else {}
