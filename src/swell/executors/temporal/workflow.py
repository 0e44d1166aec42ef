"""A run as a Temporal workflow: the workflow is a driver of the one run loop
(engine/loop/run_loop.py), whose decisions are the pure completion core's, so replaying
the workflow's history takes the same decisions again.

The workflow is the only writer of the run's events: the loop stamps them (seq, and
the workflow's own clock) and folds them into its `RunState` as in the in-process
runner, and the workflow hands each batch to the `swell.record` local activity, which
stores it idempotently. Visits are `swell.visit` activities, started only once everything before
them is stored (a visit reads the run's state from the store). Approval gates wait for
the `decide_gate` update (`swell approve` / `swell reject`), timer gates for a
workflow timer; cancelling the workflow (`swell cancel`) cancels the running visits,
waits until their processes are gone, and records the run as cancelled.

swell's modules are deterministic where the workflow uses them (no clock, no I/O,
no randomness in the completion core; tests/temporal replays stored histories), so
the workflow runs outside Temporal's import sandbox.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from dataclasses import dataclass
from datetime import timedelta
from functools import cache
from pathlib import Path
from typing import Any

from pydantic_core import to_jsonable_python
from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.exceptions import TimeoutError as TemporalTimeout
from temporalio.workflow import ChildWorkflowHandle

with workflow.unsafe.imports_passed_through():
    from swell.engine.agent.persona_names import with_personas
    from swell.engine.loop.decisions import Decisions, Visit
    from swell.engine.loop.graph import Graph
    from swell.engine.loop.run_loop import Ended, RunLoop, visit_result
    from swell.engine.loop.state import RunState
    from swell.engine.steps import gate as gates
    from swell.engine.steps.registry import StepKinds, default_step_kinds
    from swell.engine.visit.context import GateDecision, StepResult
    from swell.events import models as ev
    from swell.executors.temporal import WORKFLOW
    from swell.executors.temporal.specs import (
        UNRECORDED,
        ChildCreate,
        ChildStart,
        ChildStarted,
        GateRequest,
        RecordRequest,
        RunOutcome,
        RunSpec,
        VisitReply,
        VisitRequest,
    )
    from swell.manifest.durations import parse_duration
    from swell.manifest.loader import load_stored_pipeline

VISIT_TIMEOUT = timedelta(days=7)  # the visit executor enforces step timeouts itself
WORKER_LOST_ATTEMPTS = 3  # a visit whose worker died is tried again on another, this often
# a local visit stores the events recorded before it (one local activity, not two);
# histories of runs started before it replay as they ran
HANDED_OVER = "local-visit-stores-events"


@cache
def _kinds() -> StepKinds:
    return default_step_kinds()


@dataclass
class _Task:
    visit: Visit
    order: int  # launch order: ended visits are handled in it, whatever the wake-up order
    started: float  # workflow time


@workflow.defn(name=WORKFLOW, sandboxed=False)
class RunWorkflow:
    """One run, start to end."""

    def __init__(self) -> None:
        self._writing = asyncio.Lock()
        self._tasks: dict[asyncio.Task[tuple[StepResult, int]], _Task] = {}
        self._launched = 0
        self._waiting: dict[str, int] = {}  # approval gates waiting: step -> visit
        self._decisions: dict[tuple[str, int], GateDecision] = {}
        # child runs: by their key (None while starting), by the visit that started them
        self._started: dict[str, ChildStarted | None] = {}
        self._children: dict[tuple[str, int], list[ChildWorkflowHandle[Any, Any]]] = {}
        self._handed: list[ev.BaseEvent] = []  # recorded, for the visit being launched
        self._hands_over = False

    # ----------------------------------------------------------------- the run

    @workflow.run
    async def run(self, spec: RunSpec) -> RunOutcome:
        self.spec = spec
        loaded = load_stored_pipeline(Path(spec.pipeline_path), spec.pipeline_text)
        # personas rendered as the visits' RunPlan renders them: `step.started` names them
        self.graph = Graph(with_personas(loaded.pipeline, spec.personas), _kinds().of)
        self.decide = Decisions(self.graph, _kinds(), spec.limits)
        if spec.carried is None:
            self.state = RunState(spec.run_id)
            started = workflow.time()
        else:  # continued as new: the run goes on from its folded state
            self.state = RunState.from_snapshot(json.loads(spec.carried))
            started = spec.started_at or workflow.time()
        self.loop = RunLoop(self.decide, self.state, self, started)
        self._hands_over = spec.local_visits and workflow.patched(HANDED_OVER)
        self._visits_before = self.state.total
        self._head = spec.head  # the workspace commit the next visit starts from
        self._sticky: str | None = None  # the queue of the worker with the warm workspace
        if spec.carried is None:
            self.loop.begin(
                ev.RunStarted(
                    pipeline=loaded.name,
                    input=spec.input,
                    parent_run_id=spec.parent_run_id,
                    parent_step_id=spec.parent_step_id,
                    workspace=spec.workspace,
                )
            )
        try:
            end = await self.loop.run()
        except asyncio.CancelledError:
            # `swell cancel`: the running visits stop (their processes end first)
            end = await self.loop.stop("cancelled")
        status = end.status
        assert status != "waiting"  # no visit of a workflow waits for `swell resume`
        error = "cancelled" if status == "cancelled" else end.error
        return RunOutcome(spec.run_id, status, error, self.state.total, self._head)

    # ------------------------------------------------------------------ driver

    def now(self) -> float:
        return workflow.time()

    def timestamp(self) -> str:
        return ev.now_iso(workflow.now())

    async def idle(self) -> None:
        if self._long():
            await self._continue_as_new()

    async def wait_any(self) -> list[Ended]:
        """The visits that ended, in launch order, whatever the wake-up order."""
        await asyncio.wait(list(self._tasks), return_when=asyncio.FIRST_COMPLETED)
        ended = sorted(
            (task for task in self._tasks if task.done()), key=lambda t: self._tasks[t].order
        )
        finished: list[Ended] = []
        for task in ended:
            visit = self._tasks.pop(task).visit
            self._reap(visit)
            value = visit_result(task)  # an exception: a bug in the workflow's gate code
            result, duration_ms = value if isinstance(value, tuple) else (value, 0)
            finished.append((visit, result, duration_ms))
        return finished

    async def write(self, pending: list[ev.BaseEvent]) -> None:
        """Store what was recorded, in seq order (one batch at a time); a batch is taken
        off only once stored, so a cancelled write is written again (idempotently)."""
        async with self._writing:
            if not pending:
                return
            batch = list(pending)
            await self._record(batch)
            del pending[: len(batch)]

    async def _record(self, batch: list[ev.BaseEvent]) -> None:
        """The `swell.record` local activity, tried until the store takes the batch."""
        await workflow.execute_local_activity(
            "swell.record",
            RecordRequest(self.spec.store, self.spec.run_id, [ev.event_json(e) for e in batch]),
            start_to_close_timeout=timedelta(seconds=60),
            retry_policy=RetryPolicy(maximum_interval=timedelta(seconds=5)),
        )

    def hand_over(self, pending: list[ev.BaseEvent], visit: Visit) -> bool:
        """A local visit stores the batch itself, when nothing else runs meanwhile (so no
        other batch can be written before it) and it is not a gate's."""
        if not self._hands_over or self._tasks or visit.step.gate is not None:
            return False
        self._handed = list(pending)
        pending.clear()
        return True

    async def cancel_all(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)
        self._tasks.clear()
        live = [c for cs in self._children.values() for c in cs if not c.done()]
        for child in live:  # their visits cancelled them already, unless a worker died
            child.cancel()
        if live:
            await asyncio.wait(live)
        await workflow.wait_condition(workflow.all_handlers_finished)

    def _long(self) -> bool:
        """Whether this execution's history is long enough to continue as new."""
        visits = self.state.total - self._visits_before
        return visits >= self.spec.continue_after or workflow.info().is_continue_as_new_suggested()

    async def _continue_as_new(self) -> None:
        """Go on in a new execution of the same workflow (same id), from the run's
        folded state; only between visits (nothing runs, no gate waits)."""
        await self.loop.flush()
        data = json.dumps(self.state.to_snapshot(), default=to_jsonable_python)
        spec = dataclasses.replace(
            self.spec, carried=data, started_at=self.loop.started, head=self._head
        )
        workflow.continue_as_new(spec)

    # ------------------------------------------------------------------ visits

    def launch(self, visit: Visit) -> None:
        self._launched += 1
        handed, self._handed = self._handed, []
        work = self._gate(visit) if visit.step.gate is not None else self._visit(visit, handed)
        task = asyncio.get_running_loop().create_task(work)
        self._tasks[task] = _Task(visit, self._launched, workflow.time())

    def _request(self, visit: Visit, handed: list[ev.BaseEvent] | None = None) -> VisitRequest:
        act = visit.activation
        return VisitRequest(
            self.spec,
            visit.step.id,
            visit.visit,
            act.reason,
            act.source_step,
            act.source_visit,
            base=self._head,
            events=[ev.event_json(e) for e in handed or ()],
            seq=self.state.seq,
        )

    async def _visit(
        self, visit: Visit, handed: list[ev.BaseEvent] | None = None
    ) -> tuple[StepResult, int]:
        """One visit on a worker; a worker that dies is noticed by its missed heartbeats
        and the visit runs again on another one. `handed`: events recorded before the
        visit, which it stores first; however it ends, they are stored before anything
        else is (by `swell.record`, idempotently, when the visit may not have)."""
        try:
            reply = await self._run_visit(visit, handed)
        except ActivityError as exc:
            cause = exc.cause or exc
            if handed:
                async with self._writing:
                    await self._record(handed)
                if isinstance(cause, ApplicationError) and cause.type == UNRECORDED:
                    return await self._visit(visit)  # stored now: the visit runs
            return StepResult(outcome="failure", error=f"the visit's worker failed: {cause}"), 0
        except BaseException:
            if handed:  # cancelled: stored as the write it replaced would have been
                async with self._writing:
                    await self._record(handed)
            raise
        if reply.commit is not None:
            self._head = reply.commit
        self._sticky = reply.queue
        return reply.result, reply.duration_ms

    async def _run_visit(self, visit: Visit, handed: list[ev.BaseEvent] | None) -> VisitReply:
        retry = RetryPolicy(maximum_attempts=WORKER_LOST_ATTEMPTS)
        waits = workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED
        if self.spec.local_visits:
            reply: VisitReply = await workflow.execute_local_activity(
                "swell.visit",
                self._request(visit, handed),
                result_type=VisitReply,
                start_to_close_timeout=VISIT_TIMEOUT,
                retry_policy=retry,
                cancellation_type=waits,
            )
            return reply
        return await self._remote_visit(visit, retry, waits)

    async def _remote_visit(
        self, visit: Visit, retry: RetryPolicy, waits: workflow.ActivityCancellationType
    ) -> VisitReply:
        """The visit on the worker that ran the run's last one (its workspace and agent
        sessions are warm there) if it takes it within `sticky_seconds`, else on any
        worker of the run's queue."""
        request = self._request(visit)
        beat = timedelta(seconds=self.spec.heartbeat_seconds)
        if self._sticky and self.spec.sticky_seconds > 0:
            try:
                reply: VisitReply = await workflow.execute_activity(
                    "swell.visit",
                    request,
                    result_type=VisitReply,
                    task_queue=self._sticky,
                    schedule_to_start_timeout=timedelta(seconds=self.spec.sticky_seconds),
                    start_to_close_timeout=VISIT_TIMEOUT,
                    heartbeat_timeout=beat,
                    retry_policy=RetryPolicy(maximum_attempts=1),
                    cancellation_type=waits,
                )
                return reply
            except ActivityError as exc:
                if not isinstance(exc.cause, TemporalTimeout):
                    raise
                # the worker is gone or busy: any worker, from the commit the run is at
                self._sticky = None
                request = dataclasses.replace(request, tries_before=1)
        reply = await workflow.execute_activity(
            "swell.visit",
            request,
            result_type=VisitReply,
            start_to_close_timeout=VISIT_TIMEOUT,
            heartbeat_timeout=beat,
            retry_policy=retry,
            cancellation_type=waits,
        )
        return reply

    # ------------------------------------------------------------- child runs

    @workflow.update(name="start_child")
    async def start_child(self, start: ChildStart) -> ChildStarted:
        """A visit's sub-pipeline: the child run recorded in the store and started as
        a child workflow whose id is its run id. Once per key: a visit that runs again
        (its worker died) gets the child its last attempt started."""
        key = start.key
        if key in self._started:
            await workflow.wait_condition(lambda: self._started.get(key) is not None)
            found = self._started[key]
            assert found is not None
            return found
        self._started[key] = None
        try:
            started: ChildStarted = await workflow.execute_local_activity(
                "swell.create_child",
                ChildCreate(self.spec, start),
                result_type=ChildStarted,
                start_to_close_timeout=timedelta(seconds=60),
            )
            if started.spec is not None:
                handle = await workflow.start_child_workflow(
                    WORKFLOW,
                    started.spec,
                    id=started.run_id,
                    task_queue=workflow.info().task_queue,
                    result_type=RunOutcome,
                )
                self._children.setdefault((start.step_id, start.visit), []).append(handle)
                started = dataclasses.replace(started, spec=None)
        except BaseException:
            del self._started[key]
            raise
        self._started[key] = started
        return started

    def _reap(self, visit: Visit) -> None:
        """A visit that ended leaves no child running (its worker died while waiting)."""
        for child in self._children.pop((visit.step.id, visit.visit), []):
            if not child.done():
                child.cancel()

    # ------------------------------------------------------------------- gates

    async def _gate(self, visit: Visit) -> tuple[StepResult, int]:
        """A gate waits in the workflow: an approval for the `decide_gate` update, a
        timer (or an approval's timeout) for a workflow timer."""
        step, number = visit.step, visit.visit
        gate = step.gate
        assert gate is not None
        started = workflow.time()
        if not gates.waits_for_decision(gate, self.spec.options.auto_approve):
            auto = GateDecision("approved", reason="auto-approved", by="auto")
            return gates.resolve(gate, auto, step.id, number), 0
        message: str = await workflow.execute_activity(
            "swell.gate_message",
            self._request(visit),
            result_type=str,
            start_to_close_timeout=timedelta(seconds=60),
        )
        timeout = parse_duration(gate.timeout) if gate.timeout else None
        deadline = workflow.now() + timedelta(seconds=timeout) if timeout is not None else None
        self.loop.record(gates.waiting_events(gate, step.id, number, message, deadline))
        await self.loop.flush()
        key = (step.id, number)
        if gate.type == "approval":
            self._waiting[step.id] = number
        try:
            await workflow.wait_condition(lambda: key in self._decisions, timeout=timeout)
            decision = self._decisions.pop(key)
        except TimeoutError:
            decision = gates.timed_out(gate)
        finally:
            self._waiting.pop(step.id, None)
        duration_ms = int((workflow.time() - started) * 1000)
        return gates.resolve(gate, decision, step.id, number), duration_ms

    @workflow.update(name="decide_gate")
    def decide_gate(self, request: GateRequest) -> str:
        """A person's decision on a waiting approval gate; returns the gate's step."""
        step_id = self._gate_for(request)
        number = self._waiting.pop(step_id)
        self._decisions[(step_id, number)] = GateDecision(
            request.decision,  # type: ignore[arg-type]
            request.choice,
            request.reason,
            request.by,
        )
        return step_id

    @decide_gate.validator
    def _check_gate(self, request: GateRequest) -> None:
        step_id = self._gate_for(request)
        gate = self.graph.steps[step_id].gate
        keys = [c.key for c in gate.choices] if gate else []
        if request.choice is not None and keys and request.choice not in keys:
            raise ApplicationError(
                f"'{request.choice}' is not a choice of gate '{step_id}' "
                f"(choices: {', '.join(keys)})",
                non_retryable=True,
            )

    def _gate_for(self, request: GateRequest) -> str:
        """The waiting gate a decision is for; rejects the update (nothing is recorded)
        when none fits."""
        if request.decision not in ("approved", "rejected"):
            raise ApplicationError(f"unknown decision '{request.decision}'", non_retryable=True)
        if request.step_id is not None:
            if request.step_id not in self._waiting:
                raise ApplicationError(
                    f"no gate is waiting at step '{request.step_id}'", non_retryable=True
                )
            return request.step_id
        if not self._waiting:
            raise ApplicationError("no gate is waiting", non_retryable=True)
        if len(self._waiting) > 1:
            names = ", ".join(sorted(self._waiting))
            raise ApplicationError(f"several gates wait ({names}): name one", non_retryable=True)
        return next(iter(self._waiting))
