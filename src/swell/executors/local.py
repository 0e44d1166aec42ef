"""The local executor: the run loop in this process (runtime.execute); other processes
reach a run through the store, where its executing process reads gate decisions and
cancel requests (docs/engine.md)."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from swell.errors import RunBusy, SwellError
from swell.executors.base import Cancelled, Decided, Decision, Detached, Ending, Started, Watch

if TYPE_CHECKING:
    from swell.engine.visit.context import RunOptions
    from swell.manifest.loader import LoadedPipeline
    from swell.ops.rerun import Reuse
    from swell.runtime import Runtime
    from swell.store.protocols import RunReader, Store
    from swell.store.rows import RunRow

CANCEL_WAIT = 15.0  # seconds `swell cancel` waits for the executing process to stop


class LocalExecutor:
    name = "local"
    live_output = True
    reruns = True
    timeouts = True
    unsandboxed = True
    timers_go_on = False
    held_by: str | None = None  # a process, which claims the run in the store

    async def start(
        self,
        rt: Runtime,
        loaded: LoadedPipeline,
        input_text: str,
        options: RunOptions,
        reuse: Reuse | None = None,
    ) -> Started:
        from swell.runtime import create_run, start_from_step

        if reuse is not None:
            plan, state = start_from_step(rt, loaded, input_text, options, reuse)
        else:
            plan, state = create_run(rt, loaded, input_text, options), None
        return Started(plan.run_id, plan, state, auto_approve=options.auto_approve)

    def detach(self, rt: Runtime, started: Started, args: list[str]) -> Detached:
        """Hand the claimed run to a background `swell resume` (`args`: its flags)."""
        from swell.ops.background import spawn, wait_until_claimed
        from swell.store.capabilities import claims

        plan = started.plan
        assert plan is not None
        claims(rt.store).release(plan.run_id)
        child = spawn(rt.project.root, plan.run_dir, plan.run_id, args)
        problem = wait_until_claimed(rt.store, plan.run_id, child)
        if problem:
            raise SwellError(f"run {plan.run_id}: {problem}")
        return Detached(
            plan.run_id,
            {"run_id": plan.run_id, "pid": child.pid, "log": str(child.log)},
            [f"run {plan.run_id} (detached, pid {child.pid}, log {child.log})"],
        )

    async def follow(self, rt: Runtime, started: Started, watch: Watch) -> Ending:
        from swell.engine.visit.sandboxing import prestart
        from swell.runtime import execute

        assert started.plan is not None
        # this process runs it: its first boxes start while its services are wired
        prestart(started.plan, started.plan.pipeline.pipeline.steps)
        summary = await execute(
            rt,
            started.plan,
            list(watch.sinks),
            state=started.state,
            prompter=watch.prompter,
            deadline=watch.deadline,
            watchers=watch.watchers,
            stop_at_gates=watch.stop_at_gates,
        )
        return Ending(summary.run_id, summary.status, summary.error)

    async def decide_gate(self, store: Store, run: RunRow, decision: Decision) -> Decided:
        """Record the decision; the process executing the run (if any) picks it up."""
        gate = store.decide_gate(
            run.id,
            decision.step_id,
            decision.decision,
            choice=decision.choice,
            reason=decision.reason,
            by=decision.by,
        )
        return Decided(gate.step_id, _to_resume(store, run))

    async def cancel(
        self, rt: Runtime, run: RunRow, *, wait: bool = False, force: float | None = None
    ) -> Cancelled:
        """A run no process executes is closed as cancelled here; otherwise its process
        is asked to stop (`force`: killed after that many seconds)."""
        from swell.runtime import cancel_stored_run

        if rt.store.owner(run.id) is None:
            try:
                return Cancelled(ended=cancel_stored_run(rt, run))
            except RunBusy:
                pass  # a process took the run up meanwhile: ask it to stop
        rt.store.request_cancel(run.id)
        if force is not None:
            from swell.ops.stop import kill_owner

            await _wait_until(rt.store, run.id, force, released=True)
            return Cancelled(killed=await kill_owner(rt, run.id))
        if not wait:
            return Cancelled()
        if await _wait_until(rt.store, run.id, CANCEL_WAIT):
            return Cancelled(ended=[run.id])
        owner = rt.store.owner(run.id)
        who = f"process {owner.pid} on {owner.host}" if owner else "the process executing it"
        return Cancelled(
            waiting_on=f"{who} has not stopped yet (`swell cancel {run.id} --force` kills it)"
        )

    def resume(self, rt: Runtime, run: RunRow) -> Started:
        from swell.runtime import claim_for_resume

        resumed = claim_for_resume(rt, run.id)
        plan = resumed.plan
        return Started(run.id, plan, resumed.state, resumed.notes, None, plan.options.auto_approve)

    def waiting_hint(self, run_id: str) -> str:
        return f"  continue: swell resume {run_id}\n"

    def interrupted_hint(self, run_id: str) -> str:
        return f"continue with: swell resume {run_id}"


def _to_resume(store: RunReader, run: RunRow) -> str | None:
    """The run to resume when none executes: the top one (a sub-pipeline run goes on
    with its parent)."""
    top = run
    while top.parent_run_id:
        top = store.get_run(top.parent_run_id)
    if store.owner(run.id) is None and store.owner(top.id) is None:
        return top.id
    return None


async def _wait_until(store: Store, run_id: str, seconds: float, *, released: bool = False) -> bool:
    """Wait until the run is cancelled (`released`: ended and let go by its process)."""
    from swell.runtime import FINAL

    deadline = time.monotonic() + seconds
    while True:
        status = store.get_run(run_id).status
        if released and store.owner(run_id) is None and status in FINAL:
            return True
        if not released and status == "cancelled":
            return True
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.2)
