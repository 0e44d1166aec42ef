"""The Temporal executor (executors/base.py): a run is a workflow on a Temporal server.

Its workflow is the only writer of the run's events, so everything a person does to
the run goes to the workflow: a gate decision is its `decide_gate` update, a cancel is
a workflow cancellation (it stops the visits' processes and records the run as
cancelled). Following a run reads the events the workflow stored.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from swell.errors import RunStateError, SwellError
from swell.executors.base import (
    Cancelled,
    Decided,
    Decision,
    Detached,
    Ending,
    Started,
    Watch,
    waiting_gates,
)
from swell.executors.temporal.client import Engine, configured, engine_of

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from temporalio.client import Client

    from swell.engine.visit.context import GatePrompter, RunOptions
    from swell.events.bus import EventSink
    from swell.events.models import BaseEvent
    from swell.manifest.loader import LoadedPipeline
    from swell.manifest.models import Step
    from swell.ops.rerun import Reuse
    from swell.runtime import Runtime
    from swell.store.protocols import Store
    from swell.store.rows import RunRow

__all__ = ["Engine", "TemporalExecutor", "configured", "engine_of"]

FOLLOW_EVERY = 0.2  # seconds between two reads of a followed run's new events
GATES_EVERY = 1.0  # seconds between two looks at a followed run's waiting gates
CANCEL_WAIT = 30.0  # seconds `swell cancel` waits for the workflow to record the run


class TemporalExecutor:
    name = "temporal"
    live_output = False  # running steps' output stays on the workers
    reruns = False
    timeouts = False
    unsandboxed = False
    timers_go_on = True  # the workflow's timer
    held_by: str | None = "the Temporal engine"

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def _client(self) -> Client:
        from swell.executors.temporal.client import connect

        return await connect(self.engine)

    async def start(
        self,
        rt: Runtime,
        loaded: LoadedPipeline,
        input_text: str,
        options: RunOptions,
        reuse: Reuse | None = None,
    ) -> Started:
        """Record the run and start its workflow; nothing is recorded when the server
        cannot be reached."""
        from swell.executors.temporal.client import record_run, start

        if reuse is not None:
            raise RunStateError("--from-step is not available with the temporal engine yet")
        client = await self._client()
        spec = record_run(rt, loaded, input_text, options, self.engine)
        try:
            await start(client, self.engine, spec)
        except Exception as exc:
            _fail_unstarted(rt.store, spec.run_id, f"the engine did not start it: {exc}")
            raise
        return Started(spec.run_id, pipeline=loaded, auto_approve=options.auto_approve)

    async def start_recorded(self, rt: Runtime, run: RunRow) -> bool:
        """Start the workflow of a run recorded for this engine whose starter died
        before starting it (a dispatcher or server killed in between): True when
        started here, False when the engine has (or had) its workflow."""
        from swell.executors.temporal.client import run_spec, start_once
        from swell.runtime import options_of, stored_pipeline

        loaded = stored_pipeline(rt, run)
        workspace = run.workspace or str(rt.state_dir / "workspaces" / run.id)
        spec = run_spec(rt, loaded, run.id, run.input or "", options_of(run), workspace)
        return await start_once(await self._client(), self.engine, spec)

    def detach(self, rt: Runtime, started: Started, args: list[str]) -> Detached:
        """The workflow goes on by itself: nothing to hand over."""
        engine, run_id = self.engine, started.run_id
        return Detached(
            run_id,
            {"run_id": run_id, "engine": self.name, "address": engine.address},
            [f"run {run_id} (on the Temporal engine at {engine.address}, queue {engine.queue})"],
        )

    async def follow(self, rt: Runtime, started: Started, watch: Watch) -> Ending:
        """Show the run's events as the workflow stores them, until it ends; `waiting`
        when it waits at an approval gate and `watch.stop_at_gates` (the workflow goes
        on waiting). A `watch.prompter` is asked at each approval gate and its answer
        sent to the workflow."""
        client = await self._client()
        sinks = list(watch.sinks)
        asker = None
        if watch.prompter is not None:
            pipeline = started.pipeline
            steps = {step.id: step for step in pipeline.pipeline.steps} if pipeline else {}
            asker = _Asker(watch.prompter, client, started.run_id, steps, watch.say)
            sinks.append(asker)
        try:
            return await _follow(client, rt.store, started.run_id, sinks, watch.stop_at_gates)
        finally:
            if asker is not None:
                asker.close()

    async def decide_gate(self, store: Store, run: RunRow, decision: Decision) -> Decided:
        """The workflow's `decide_gate` update; "no gate is waiting" comes back at once."""
        from swell.executors.temporal.client import decide
        from swell.executors.temporal.specs import GateRequest

        request = GateRequest(
            decision.decision, decision.step_id, decision.choice, decision.reason, decision.by
        )
        return Decided(await decide(await self._client(), run.id, request))

    async def cancel(
        self, rt: Runtime, run: RunRow, *, wait: bool = False, force: float | None = None
    ) -> Cancelled:
        """Cancel the workflow (it stops its visits' processes itself: `force` adds
        nothing); with `wait`, until it has recorded how the run ended. A run whose
        workflow is gone (terminated, or forgotten by the server) is closed here."""
        from swell.executors.temporal.client import cancel, running
        from swell.runtime import FINAL, cancel_stored_run

        client = await self._client()
        if not await running(client, run.id):
            # nothing will ever write this run again: close it as a local run no process
            # executes is closed (its workflow, once closed, wrote all it was going to)
            run = rt.store.get_run(run.id)
            if run.status in FINAL:
                return Cancelled(status=run.status)
            return Cancelled(ended=cancel_stored_run(rt, run))
        await cancel(client, run.id)
        if not wait and force is None:
            return Cancelled()
        deadline = time.monotonic() + CANCEL_WAIT
        while time.monotonic() < deadline:
            status = rt.store.get_run(run.id).status
            if status == "cancelled":
                return Cancelled(ended=[run.id])
            if status in FINAL:
                return Cancelled(status=status)
            await asyncio.sleep(0.1)
        return Cancelled(waiting_on=f"the engine has not stopped run {run.id} yet")

    def resume(self, rt: Runtime, run: RunRow) -> Started:
        raise RunStateError(
            f"run {run.id} is executed by the Temporal engine at {self.engine.address}; it "
            f"goes on there by itself, on any worker of queue {self.engine.queue} (follow "
            f"it: swell logs {run.id} --follow)"
        )

    def waiting_hint(self, run_id: str) -> str:
        return (
            f"  then it goes on by itself on the engine; follow it: swell logs {run_id} --follow\n"
        )

    def interrupted_hint(self, run_id: str) -> str:
        return f"the run goes on on the engine: `swell logs {run_id} --follow`, `swell cancel {run_id}`"


def _fail_unstarted(store: Store, run_id: str, error: str) -> None:
    from swell.events import models as ev
    from swell.events.codec import stamp

    failed = ev.RunFinished(status="failed", error=error)
    stamp([failed], run_id, 0)
    store.emit([failed])


async def _follow(
    client: Client, store: Store, run_id: str, sinks: list[EventSink], stop_at_gates: bool
) -> Ending:
    from swell.executors.temporal.client import outcome

    ended = asyncio.ensure_future(outcome(client, run_id))
    seen = 0
    looked = 0.0  # when the run's gates were last looked at
    while True:
        finished = ended.done()
        events = store.events(run_id, seen)
        if events:
            seen = events[-1].seq
            for sink in sinks:
                sink.emit(events)
        if finished:
            result = ended.result()
            return Ending(result.run_id, result.status, result.error)
        # a sub-pipeline's gate writes no event of this run: look now and then as well
        if stop_at_gates and (events or time.monotonic() - looked >= GATES_EVERY):
            looked = time.monotonic()
            if waiting_gates(store, run_id, approvals=True):
                ended.cancel()
                return Ending(run_id, "waiting")
        await asyncio.wait([ended], timeout=FOLLOW_EVERY)


class _Asker:
    """An event sink that asks at this terminal about each approval gate of the run as
    it starts to wait, and sends the answer to the run's workflow; a gate decided
    elsewhere (`swell approve`, the dashboard) ends its question."""

    def __init__(
        self,
        prompter: GatePrompter,
        client: Client,
        run_id: str,
        steps: dict[str, Step],
        say: Callable[[str], None],
    ) -> None:
        self.prompter, self.client, self.run_id, self.steps = prompter, client, run_id, steps
        self.say = say
        self.asking: dict[str, asyncio.Task[None]] = {}
        self.terminal = asyncio.Lock()  # one question at a time

    def emit(self, events: Sequence[BaseEvent]) -> None:
        from swell.events import models as ev

        for e in events:
            step = e.step_id or ""
            if isinstance(e, ev.GateWaiting) and e.gate_type == "approval" and step in self.steps:
                if step not in self.asking:
                    self.asking[step] = asyncio.ensure_future(self._ask(step, e.message))
            elif isinstance(e, ev.GateResolved) and step in self.asking:
                self.asking.pop(step).cancel()

    async def _ask(self, step: str, message: str) -> None:
        from swell.executors.temporal.client import decide
        from swell.executors.temporal.specs import GateRequest

        async with self.terminal:
            answer = await self.prompter.ask(self.run_id, self.steps[step], message)
        if answer is None:
            return  # stdin closed: `swell approve` from elsewhere still decides it
        request = GateRequest(
            decision=answer.decision,
            step_id=step,
            choice=answer.choice,
            reason=answer.reason,
            by=answer.by,
        )
        try:
            await decide(self.client, self.run_id, request)
        except SwellError as exc:  # decided elsewhere in the meantime
            self.say(f"note: {exc}")

    def close(self) -> None:
        for task in self.asking.values():
            task.cancel()
