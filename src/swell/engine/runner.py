"""The run loop: start ready steps, wait for visits, route, repeat. It only schedules.

Everything a visit produces leaves the runner as one batch of events, committed by
the sink before the next step starts; the runner's own state is the fold of exactly
those events, so a resumed run continues from the same place.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from swell.engine import handover
from swell.engine.context import RunPlan, Services, StepResult
from swell.engine.graph import Activation, Graph, Routing, VisitOutcome
from swell.engine.limits import normalize_error
from swell.engine.outputs import evaluate_context
from swell.engine.retry import max_attempts
from swell.engine.state import OpenVisit, RunState
from swell.engine.visit import Visit, VisitExecutor
from swell.events import models as ev
from swell.events.bus import EventSink
from swell.manifest.models import Step
from swell.process import stop_marked
from swell.workspace.manager import Workspaces


@dataclass
class RunSummary:
    run_id: str
    status: str  # succeeded | failed | cancelled | interrupted | waiting
    error: str | None = None
    visits: int = 0


class Runner:
    def __init__(
        self, plan: RunPlan, services: Services, sink: EventSink, state: RunState | None = None
    ) -> None:
        self.plan = plan
        self.services = services
        self.sink = sink
        self.graph = Graph(plan.pipeline.pipeline)
        self.state = state or RunState(plan.run_id)
        self._tasks: dict[asyncio.Task[StepResult], Visit] = {}
        self._pending: list[ev.BaseEvent] = []
        self._details: dict[str, str | None] = {}
        self.executor = VisitExecutor(
            plan,
            services,
            self.state,
            self.graph.steps,
            Workspaces(plan.project.root, plan.workspace, self.graph.steps),
            self.emit,
        )
        self._stop: str | None = None  # interrupted | cancelled
        self._started = time.monotonic()
        runtime = plan.project.manifest.runtime
        self._concurrency = runtime.concurrency
        self._breaker_limit = runtime.circuit_breaker.limit

    # ------------------------------------------------------------------ events

    def record(self, events: Sequence[ev.BaseEvent]) -> None:
        """Stamp and apply events; they are committed by the next `flush`.

        The loop flushes before it waits on any visit, so everything a visit
        produced is committed before the next visit does any work; batching the
        end of one visit with the start of the next saves a transaction per visit.
        """
        stamp = ev.now_iso()
        seq = self.state.seq
        for event in events:
            seq += 1
            event.run_id, event.seq, event.ts = self.plan.run_id, seq, stamp
            self.state.apply(event)
        self._pending.extend(events)

    def flush(self) -> None:
        if self._pending:
            batch, self._pending = self._pending, []
            self.sink.emit(batch)

    def emit(self, events: Sequence[ev.BaseEvent]) -> None:
        """Record and commit at once (events from inside a running visit)."""
        self.record(events)
        self.flush()

    def interrupt(self, status: str = "interrupted") -> None:
        """Stop the run (Ctrl-C, `swell cancel`): in-flight visits are cancelled."""
        if self._stop is None:
            self._stop = status
        for task in self._tasks:
            task.cancel()

    # -------------------------------------------------------------------- loop

    async def run(self) -> RunSummary:
        self.plan.workspace.mkdir(parents=True, exist_ok=True)
        if self.state.started_once:
            await self._resume()
        else:
            self.emit(
                [
                    ev.RunStarted(
                        pipeline=self.plan.pipeline.name,
                        input=self.plan.input,
                        parent_run_id=self.plan.parent_run_id,
                        parent_step_id=self.plan.parent_step_id,
                        workspace=str(self.plan.workspace),
                    ),
                    *[
                        ev.StepQueued(step_id=a.step_id, reason="entry")
                        for a in self.graph.entry_activations()
                    ],
                ]
            )
        try:
            return await self._loop()
        except asyncio.CancelledError:
            # a parent run (or the caller) is stopping us
            self.interrupt("interrupted")
            await asyncio.shield(self._shutdown())
            raise

    async def _loop(self) -> RunSummary:
        poll = self.plan.options.control_poll_seconds
        last_check = time.monotonic()
        while True:
            if self._stop:
                return await self._shutdown()
            failure = self._start_ready()
            if failure:
                return await self._finish("failed", failure)
            if not self._tasks:
                if self.state.queue:
                    blocked = ", ".join(sorted({a.step_id for a in self.state.queue}))
                    return await self._finish(
                        "failed", f"steps {blocked} wait for dependencies that never ran"
                    )
                return await self._finish("succeeded")
            self.flush()
            done, _ = await asyncio.wait(
                self._tasks, timeout=poll, return_when=asyncio.FIRST_COMPLETED
            )
            if self.services.control and time.monotonic() - last_check >= poll:
                last_check = time.monotonic()
                if self.services.control.cancel_requested(self.plan.run_id):
                    self.interrupt("cancelled")
            if self._stop:
                continue
            for task in done:
                visit = self._tasks.pop(task)
                routing = self._complete(visit, self._result_of(task))
                if routing.complete:
                    return await self._finish("succeeded")
                if routing.fail:
                    return await self._finish("failed", routing.fail)

    @staticmethod
    def _result_of(task: asyncio.Task[StepResult]) -> StepResult:
        try:
            return task.result()
        except Exception as exc:  # a bug in a step kind must not lose the run
            return StepResult(outcome="failure", error=f"internal error: {exc!r}")

    def _start_ready(self) -> str | None:
        running = {v.step.id for v in self._tasks.values()}
        for act in list(self.state.queue):
            if len(self._tasks) >= self._concurrency:
                break
            if act.step_id in running or not self.graph.deps_met(act.step_id, self.state.finished):
                continue
            step = self.graph.steps[act.step_id]
            limit = self._limit_reached(step)
            if limit:
                return limit
            visit = self.state.numbered[step.id] + 1
            if step.id not in self._details:
                self._details[step.id] = _detail(step)
            self.record(
                [
                    ev.StepStarted(
                        step_id=step.id,
                        visit=visit,
                        kind=step.kind,
                        persona=step.persona,
                        detail=self._details[step.id],
                        source_step=act.source_step,
                        source_visit=act.source_visit,
                    )
                ]
            )
            self._launch(Visit(step, visit, act, None, time.monotonic()))
            running.add(step.id)
        return None

    def _limit_reached(self, step: Step) -> str | None:
        count = self.state.counted[step.id]
        if count >= step.max_visits:
            self.emit(
                [
                    ev.LimitExceeded(
                        step_id=step.id, limit="max_visits", count=count, maximum=step.max_visits
                    )
                ]
            )
            return (
                f"step '{step.id}' reached its max_visits limit "
                f"({count} of {step.max_visits} visits)"
            )
        total = self.state.total + len(self.state.open)
        maximum = self.plan.pipeline.pipeline.max_step_visits
        if total >= maximum:
            self.emit(
                [
                    ev.LimitExceeded(
                        step_id=step.id, limit="max_step_visits", count=total, maximum=maximum
                    )
                ]
            )
            return (
                f"pipeline reached max_step_visits ({total} of {maximum} visits in total) "
                f"before entering step '{step.id}'"
            )
        return None

    def _launch(self, visit: Visit) -> None:
        visit.started = visit.started or time.monotonic()
        self._tasks[asyncio.create_task(self.executor.run(visit))] = visit

    # --------------------------------------------------------------- a visit ends

    def _complete(self, visit: Visit, result: StepResult) -> Routing:
        step, state = visit.step, self.state
        batch: list[ev.BaseEvent] = list(result.events)
        stamp = {"step_id": step.id, "visit": visit.visit}
        context_after = dict(state.context)
        if step.output and step.output.context:
            values, problems = evaluate_context(step.output.context, result.outputs)
            for key, value in values.items():
                batch.append(ev.ContextSet(key=key, value=value, **stamp))
                context_after[key] = value
            batch += [ev.Warning(message=p, **stamp) for p in problems]
        failed = result.outcome == "failure"
        error_key = None
        if failed and step.kind != "conditional" and not step.optional:
            error_key = result.error_key_override or normalize_error(result.error or "failure")
        batch.append(
            ev.StepFinished(
                outcome="failure" if failed else "success",
                error=result.error,
                error_key=error_key,
                exit_code=result.exit_code,
                duration_ms=int((time.monotonic() - visit.started) * 1000),
                output_tail=result.output_tail,
                tokens_in=result.tokens_in,
                tokens_out=result.tokens_out,
                cost_usd=result.cost_usd,
                optional_failure=failed and step.optional,
                **stamp,
            )
        )
        if step.kind != "conditional":  # a router did no work worth remembering
            batch.append(self._round(visit, result, failed))
        if error_key is not None:
            previous = state.breaker.get(step.id)
            count = previous[1] + 1 if previous and previous[0] == error_key else 1
            if count >= self._breaker_limit:
                batch.append(ev.BreakerTripped(error_key=error_key, count=count, **stamp))
                self.record(batch)
                first = (result.error or "").strip().splitlines()[0] if result.error else "failure"
                return Routing(
                    fail=f"circuit breaker: step '{step.id}' failed {count} times in a row "
                    f"with the same error: {first}"
                )
        routing = self._route(visit, result, failed, context_after, batch)
        if routing.route:
            batch.append(
                ev.RouteTaken(
                    target=routing.route.target,
                    condition=routing.route.condition,
                    outcome="failure" if failed else "success",
                    **stamp,
                )
            )
        queued = {a.step_id for a in state.queue}
        for act in routing.activate:
            if act.step_id not in queued:
                queued.add(act.step_id)
                batch.append(
                    ev.StepQueued(
                        step_id=act.step_id,
                        reason=act.reason,
                        source_step=act.source_step,
                        source_visit=act.source_visit,
                    )
                )
        self.record(batch)
        return routing

    def _route(
        self,
        visit: Visit,
        result: StepResult,
        failed: bool,
        context: dict[str, str],
        batch: list[ev.BaseEvent],
    ) -> Routing:
        """Where the run goes after this visit: a contract's retry or rework, or the graph."""
        step, failure = visit.step, result.failure
        if failure is not None and failure.policy == "rework":
            return self._rework(visit, failure, batch)
        if failure is not None and failure.policy == "retry":
            return self._retry(visit, failure, batch)
        rework = self.state.reworks.get(step.id) if visit.activation.reason == "rework" else None
        if rework is not None and not failed:
            # the reworked step's contracts now pass: go on as that step would have
            source, source_visit, optional = rework.for_step, rework.for_visit, False
        else:
            source, source_visit, optional = step.id, visit.visit, failed and step.optional
        return self.graph.next_steps(
            VisitOutcome(
                source,
                source_visit,
                "failure" if failed else "success",
                result.error,
                optional,
                result.choice_target,
                result.choice_key,
            ),
            context,
            self.state.finished | {step.id, source},
        )

    def _rework(
        self, visit: Visit, failure: handover.Failure, batch: list[ev.BaseEvent]
    ) -> Routing:
        owner = failure.owner
        target = failure.contract.rework_step or (owner.retry.rework_step if owner.retry else None)
        if not target or target not in self.graph.steps:
            return Routing(fail=f"step '{owner.id}' needs rework but no rework_step is set")
        rework = (
            self.state.reworks.get(visit.step.id) if visit.activation.reason == "rework" else None
        )
        for_visit = rework.for_visit if rework else visit.visit
        path, data = handover.write_feedback(self.plan.run_dir, failure, visit.step.id, visit.visit)
        stamp = {"step_id": visit.step.id, "visit": visit.visit}
        raw = path.read_bytes()
        batch += [
            ev.ArtifactWritten(
                name="review-feedback",
                path=str(path),
                sha256=hashlib.sha256(raw).hexdigest(),
                size=len(raw),
                artifact_type="json",
                **stamp,
            ),
            ev.ReworkRequested(
                step_id=target,
                for_step=owner.id,
                for_visit=for_visit,
                contract_type=failure.contract.type,
                reason=failure.result.error or "failed",
                reviewer=failure.contract.reviewer or failure.contract.persona,
                feedback_path=str(path),
                feedback=data,
            ),
            ev.StepQueued(
                step_id=target, reason="rework", source_step=visit.step.id, source_visit=visit.visit
            ),
        ]
        return Routing()

    def _retry(self, visit: Visit, failure: handover.Failure, batch: list[ev.BaseEvent]) -> Routing:
        step = visit.step
        previous = self.state.retries.get(step.id)
        attempt = (previous.attempt if previous else 1) + 1
        limit = max_attempts(step.retry, default=2)  # `on_failure: retry` means at least one more
        if attempt > limit:
            return Routing(
                fail=f"step '{step.id}' still fails its contracts after {limit} attempts: "
                f"{failure.result.error or 'failed'}"
            )
        batch += [
            ev.RetryRequested(
                step_id=step.id,
                visit=visit.visit,
                attempt=attempt,
                max_attempts=limit,
                reason=failure.result.error or "failed",
            ),
            ev.StepQueued(
                step_id=step.id, reason="retry", source_step=step.id, source_visit=visit.visit
            ),
        ]
        return Routing()

    def _round(self, visit: Visit, result: StepResult, failed: bool) -> ev.RoundRecorded:
        step, thread = visit.step, visit.step.thread
        metadata: dict[str, Any] = {
            "outcome": "failure" if failed else "success",
            "exit_code": result.exit_code,
            "tokens_in": result.tokens_in or None,
            "tokens_out": result.tokens_out or None,
            "duration_ms": int((time.monotonic() - visit.started) * 1000),
            **result.round_meta,
        }
        content = result.round_content if result.round_content is not None else result.output_tail
        if failed and not content:
            content = result.error
        return ev.RoundRecorded(
            step_id=step.id,
            visit=visit.visit,
            round=self.state.rounds + 1,
            thread=thread,
            thread_round=self.state.thread_rounds[thread] + 1 if thread else None,
            role=step.id,
            persona=step.persona,
            content=content or "",
            metadata={k: v for k, v in metadata.items() if v is not None},
        )

    # ------------------------------------------------------------ start and stop

    async def _resume(self) -> None:
        """Continue after a crash, Ctrl-C or a process that left a gate waiting."""
        batch: list[ev.BaseEvent] = []
        continuing: list[OpenVisit] = []
        queued = {a.step_id for a in self.state.queue}
        for open_visit in list(self.state.open.values()):
            if open_visit.gate is not None or open_visit.child_run_id is not None:
                continuing.append(open_visit)
                continue
            reason = "the process running this visit ended"
            # a killed swell cannot take its steps' process groups with it
            markers = [
                f"SWELL_RUN_ID={self.plan.run_id}",
                f"SWELL_STEP_ID={open_visit.step_id}",
                f"SWELL_VISIT={open_visit.visit}",
            ]
            if await stop_marked(markers):
                reason += "; the processes it left behind were stopped"
            batch.append(
                ev.StepInterrupted(
                    step_id=open_visit.step_id, visit=open_visit.visit, reason=reason
                )
            )
            if open_visit.step_id not in queued:
                queued.add(open_visit.step_id)
                batch.append(
                    ev.StepQueued(
                        step_id=open_visit.step_id,
                        reason="resume",
                        source_step=open_visit.source_step,
                        source_visit=open_visit.source_visit,
                    )
                )
        interrupted = [e.step_id or "" for e in batch if isinstance(e, ev.StepInterrupted)]
        self.emit([ev.RunResumed(interrupted_steps=interrupted), *batch])
        for open_visit in continuing:
            step = self.graph.steps[open_visit.step_id]
            act = Activation(step.id, "resume", open_visit.source_step, open_visit.source_visit)
            self._launch(Visit(step, open_visit.visit, act, open_visit))

    async def _cancel_tasks(self) -> None:
        """Cancel in-flight visits and wait until their processes are gone."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=30)

    async def _finish(self, status: str, error: str | None = None) -> RunSummary:
        batch: list[ev.BaseEvent] = [
            ev.StepInterrupted(
                step_id=visit.step.id,
                visit=visit.visit,
                reason=f"run {status} while this visit ran",
            )
            for visit in self._tasks.values()
        ]
        await self._cancel_tasks()
        self._tasks.clear()
        batch.append(
            ev.RunFinished(
                status=status,
                error=error,
                visits=self.state.total,
                duration_ms=int((time.monotonic() - self._started) * 1000),
            )
        )
        self.emit(batch)
        return RunSummary(self.plan.run_id, status, error, self.state.total)

    async def _shutdown(self) -> RunSummary:
        """Stop for Ctrl-C or `swell cancel`. Waiting gates stay open for `swell resume`."""
        status = self._stop or "interrupted"
        batch: list[ev.BaseEvent] = []
        gates_open = False
        await self._cancel_tasks()
        for visit in self._tasks.values():
            open_visit = self.state.open.get((visit.step.id, visit.visit))
            if status == "interrupted" and open_visit:
                # a waiting gate and a running sub-pipeline continue where they were on resume
                if open_visit.gate and not open_visit.resolution:
                    gates_open = True
                    continue
                if open_visit.child_run_id:
                    continue
            batch.append(
                ev.StepInterrupted(step_id=visit.step.id, visit=visit.visit, reason=f"run {status}")
            )
            if status == "interrupted" and not self.state.queued(visit.step.id):
                batch.append(
                    ev.StepQueued(
                        step_id=visit.step.id,
                        reason="resume",
                        source_step=visit.activation.source_step,
                        source_visit=visit.activation.source_visit,
                    )
                )
        self._tasks.clear()
        if gates_open and not batch:
            return RunSummary(self.plan.run_id, "waiting", None, self.state.total)
        batch.append(
            ev.RunFinished(
                status=status,
                visits=self.state.total,
                error="interrupted; continue with `swell resume`"
                if status == "interrupted"
                else "cancelled",
                duration_ms=int((time.monotonic() - self._started) * 1000),
            )
        )
        self.emit(batch)
        return RunSummary(self.plan.run_id, status, None, self.state.total)


def _detail(step: Step) -> str | None:
    if step.kind == "command":
        text = step.script if step.script is not None else (step.exec.source if step.exec else "")
        return (text or "").strip().splitlines()[0][:200] if text and text.strip() else None
    if step.kind == "pipeline":
        return step.pipeline
    return None
