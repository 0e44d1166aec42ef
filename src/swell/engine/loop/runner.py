"""The local driver of the run loop: visits are asyncio tasks in this process, and
events go to the sink as one batch per step of the loop.

The loop itself (engine/loop/run_loop.py) only schedules: every decision (what starts,
what a finished visit leads to, how the run ends) is a pure function of
`completion.Decisions`. Everything a visit produces is committed by the sink before
the next step starts; the run's state is the fold of exactly those events, so a
resumed run continues from the same place.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass

from swell import sweep
from swell.engine.agent.preload import preload_adapters
from swell.engine.loop import cost
from swell.engine.loop.decisions import Decisions, Limits, Visit
from swell.engine.loop.graph import Graph
from swell.engine.loop.retry import retry_max_delay, retry_of
from swell.engine.loop.run_loop import Ended, RunLoop, visit_result
from swell.engine.loop.state import RunState
from swell.engine.visit import sandboxing
from swell.engine.visit.context import RunPlan, Services, StepResult
from swell.engine.visit.execute import VisitExecutor
from swell.errors import StoreError
from swell.events import models as ev
from swell.events.bus import EventSink
from swell.events.models import FinalStatus, RunStatus
from swell.workspace.manager import Workspaces


@dataclass
class RunSummary:
    run_id: str
    status: RunStatus  # a final status, or "waiting": stopped at a gate, to be resumed
    error: str | None = None
    visits: int = 0


class Runner:
    """Runs one run in this process: the run loop's asyncio driver."""

    def __init__(
        self, plan: RunPlan, services: Services, sink: EventSink, state: RunState | None = None
    ) -> None:
        self.plan = plan
        self.services = services
        self.sink = sink
        self.graph = Graph(plan.pipeline.pipeline, services.step_kinds.of)
        self.state = state or RunState(plan.run_id)
        self._tasks: dict[asyncio.Task[StepResult], tuple[Visit, float]] = {}
        self._done: list[asyncio.Task[StepResult]] = []  # ended visits, not yet reported
        self._wake: asyncio.Future[None] | None = None  # what `_next` waits on
        self._preloaded = False
        # a batch the store could not commit: the state here is ahead of the store, so
        # nothing more is written and the run stops, as the store has it, for resume
        self._lost: StoreError | None = None
        self.executor = VisitExecutor(
            plan,
            services,
            self.state,
            self.graph.steps,
            Workspaces(plan.project.root, plan.workspace, self.graph.steps, plan.run_dir),
            self.emit,
        )
        runtime = plan.project.manifest.runtime
        limits = Limits(
            concurrency=runtime.concurrency,
            breaker_limit=runtime.circuit_breaker.limit,
            max_step_visits=plan.pipeline.pipeline.max_step_visits,
            budget=cost.Budget.of(runtime.cost),
            retry_max_delay=retry_max_delay(runtime.timeouts.retry_max_delay_seconds),
        )
        self.decide = Decisions(self.graph, services.step_kinds, limits)
        self.loop = RunLoop(self.decide, self.state, self, time.monotonic())
        self._last_check = time.monotonic()  # when `swell cancel` was last asked about
        self._disk = f"{plan.workspace} or {plan.run_dir}"  # where a visit's files are

    # ------------------------------------------------------------------ events

    def flush(self) -> None:
        if self._lost is not None:
            raise self._lost
        pending = self.loop.pending
        if pending:
            batch = pending[:]
            pending.clear()
            try:
                self.sink.emit(batch)
            except StoreError as exc:
                self._lost = exc
                self._wakeup()  # a visit's own batch: the loop stops the run now
                raise

    def emit(self, events: Sequence[ev.BaseEvent]) -> None:
        """Record and commit at once (events from inside a running visit)."""
        self.loop.record(events)
        self.flush()

    def interrupt(self, status: FinalStatus = "interrupted") -> None:
        """Stop the run (Ctrl-C, `swell cancel`): in-flight visits are cancelled."""
        if self.loop.stopping is None:
            self.loop.stopping = status
        self._cancel(list(self._tasks))

    def stop_with(self, warning: str) -> None:
        """`interrupt`, after a warning event saying why (`--timeout`). A store that
        cannot take the warning is what stops the run then (`_lost`)."""
        with contextlib.suppress(StoreError):
            self.emit([ev.Warning(message=warning)])
        self.interrupt()

    def _cancel(self, tasks: list[asyncio.Task[StepResult]]) -> None:
        for task in tasks:
            # once is enough: a second cancel would cut short the visit's own clean-up
            # (a sub-pipeline run stopping its steps)
            if not task.cancelling():
                task.cancel(msg=self.loop.stopping)

    # ------------------------------------------------------------------ driver

    def now(self) -> float:
        return time.monotonic()

    def timestamp(self) -> str:
        return ev.now_iso()

    def hand_over(self, pending: list[ev.BaseEvent], visit: Visit) -> bool:
        return False  # a commit here costs less than a visit's own would

    def launch(self, visit: Visit) -> None:
        task = asyncio.create_task(self.executor.run(visit))
        task.add_done_callback(self._ended)
        # a retried visit waits its backoff first (engine/visit/execute.py): not part of its duration
        retry = retry_of(self.state, visit.step.id, visit.activation)
        backoff = retry.delay_ms / 1000 if retry is not None else 0.0
        self._tasks[task] = (visit, time.monotonic() + backoff)
        if not self._preloaded:
            # after the first visits' own first steps (their processes start)
            self._preloaded = True
            asyncio.get_running_loop().call_soon(self._preload)

    async def wait_any(self) -> list[Ended]:
        """The visits that ended, in the order they did; none when it is time to stop.
        Meanwhile, every `control_poll_seconds`, whether the run was cancelled."""
        poll = self.plan.options.control_poll_seconds
        done = await self._next(poll)
        control = self.services.control
        if control is not None and time.monotonic() - self._last_check >= poll:
            self._last_check = time.monotonic()
            if control.cancel_requested(self.plan.run_id):
                self.interrupt("cancelled")
        if self._lost is not None:
            raise self._lost
        if self.loop.stopping:
            return []
        ended: list[Ended] = []
        for task in done:
            visit, started = self._tasks.pop(task)
            result = visit_result(task, self._disk)
            duration_ms = 0 if result.waiting else max(0, int((time.monotonic() - started) * 1000))
            ended.append((visit, result, duration_ms))
        return ended

    async def write(self, pending: list[ev.BaseEvent]) -> None:
        self.flush()  # `pending` is the loop's, which `flush` writes

    async def cancel_all(self) -> None:
        """Cancel in-flight visits and wait until their processes are gone."""
        tasks = list(self._tasks)
        self._cancel(tasks)
        if tasks:
            await asyncio.wait(tasks, timeout=30)
        self._tasks.clear()

    async def idle(self) -> None:
        return None

    # -------------------------------------------------------------------- run

    async def run(self) -> RunSummary:
        """Run to the end. Meanwhile this process adopts the orphans of its steps'
        processes, so a visit's leftovers are found among its own descendants."""
        with sweep.adopting():
            return await self._run()

    async def _run(self) -> RunSummary:
        self.plan.workspace.mkdir(parents=True, exist_ok=True)
        sandboxing.prestart(self.plan, self.graph.steps.values())  # its first visits' boxes
        if self.state.started_once:
            await self._resume()
        else:
            self.loop.begin(
                ev.RunStarted(
                    pipeline=self.plan.pipeline.name,
                    input=self.plan.input,
                    parent_run_id=self.plan.parent_run_id,
                    parent_step_id=self.plan.parent_step_id,
                    workspace=str(self.plan.workspace),
                ),
                *sandboxing.notes(self.plan),  # `--no-sandbox` is recorded
            )
            self.flush()
        try:
            end = await self.loop.run()
        except StoreError:
            await asyncio.shield(self._abandon())
            raise
        except asyncio.CancelledError as stopping:
            # a parent run (or the caller) is stopping us; a cancelled parent says so,
            # and its sub-pipeline runs are cancelled with it
            self.interrupt("cancelled" if "cancelled" in stopping.args else "interrupted")
            assert self.loop.stopping is not None
            await asyncio.shield(self.loop.stop(self.loop.stopping))
            raise
        return RunSummary(self.plan.run_id, end.status, end.error, self.state.total)

    def _preload(self) -> None:
        """Let adapters start loading what the run's prompt steps need (engine/agent/preload.py)."""
        preload_adapters(self.plan, self.services, self.graph.steps.values())

    async def _next(self, timeout: float) -> list[asyncio.Task[StepResult]]:
        """Wait until a visit ends, at most `timeout` seconds (then it is time to ask
        whether the run was cancelled); returns the visits that ended, in the order
        they did. One future and one timer per wait: a loop of short visits waits
        thousands of times, and `asyncio.wait` costs several times that."""
        if not self._done:
            loop = asyncio.get_running_loop()
            self._wake = loop.create_future()
            timer = loop.call_later(timeout, self._wakeup)
            try:
                await self._wake
            finally:
                timer.cancel()
                self._wake = None
        done, self._done = self._done, []
        return done

    def _wakeup(self) -> None:
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    def _ended(self, task: asyncio.Task[StepResult]) -> None:
        self._done.append(task)
        self._wakeup()

    async def _resume(self) -> None:
        """Continue after a crash, Ctrl-C or a process that left a gate waiting."""
        # a killed swell's containers (docker), through their daemon, before the sweep
        left = await sandboxing.left_containers(self.plan)
        cleaned: set[tuple[str, int]] = set()
        for key, open_visit in self.state.open.items():
            if open_visit.gate is not None or open_visit.child_run_id is not None:
                continue
            # a killed swell cannot take its steps' process groups with it
            markers = [
                f"SWELL_RUN_ID={self.plan.run_id}",
                f"SWELL_STEP_ID={open_visit.step_id}",
                f"SWELL_VISIT={open_visit.visit}",
            ]
            if await sweep.stop_marked(markers):  # everywhere: they were re-parented
                cleaned.add(key)
        resumed = self.decide.resume(self.state, cleaned)
        self.emit([*resumed.events, *sandboxing.notes(self.plan), *left])  # (`--no-sandbox`)
        for visit in resumed.continuing:
            self.loop.launch(visit)

    async def _abandon(self) -> None:
        """The store cannot take the run's events (a full disk, a read-only or damaged
        file): stop the visits and their processes, writing nothing. The store keeps the
        run as its last committed batch left it, open visits and all, which `swell
        resume` continues like a run whose process was killed."""
        self.loop.stopping = self.loop.stopping or "interrupted"
        self.loop.pending.clear()
        await self.loop.cancel()
