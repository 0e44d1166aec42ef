"""Sub-pipelines on the engine: each child run is a child workflow of its parent's.

A composition visit (`pipeline:`, `iterate`, `branch`, `loop`, matrix
`child_pipeline`) asks its run's workflow for a child with the `start_child` update;
the workflow records the child run in the store (the `swell.create_child` local
activity, linked to its parent as a local child run is) and starts it as a child
workflow whose id is the child run id, so the child's visits are activities of their
own. The visit then waits for the child workflow to end and reads what it left from
the store. The update is keyed by the call's place in the visit, so a visit that runs
again after its worker died gets the child its last attempt started, not a second one.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from temporalio import activity
from temporalio.client import WorkflowFailureError

from swell.engine.visit.context import ChildOutcome, ChildRequest
from swell.errors import SwellError
from swell.executors.temporal.client import run_spec
from swell.executors.temporal.specs import ChildCreate, ChildStart, ChildStarted, RunOutcome
from swell.runtime import check_pipeline, load_state, new_run_id

if TYPE_CHECKING:
    from temporalio.client import Client

    from swell.executors.temporal.slots import VisitSlots
    from swell.executors.temporal.workspace_sync import VisitSync
    from swell.runtime import Runtime

_ENGINE_KEYS = ("engine", "temporal_address", "temporal_namespace", "temporal_queue")


def create_child(rt: Runtime, request: ChildCreate) -> ChildStarted:
    """Record the child run in the store, linked to its parent, and return the spec its
    workflow starts from; a pipeline that does not load is the child's error."""
    parent, start = request.parent, request.start
    try:
        loaded, _ = check_pipeline(rt, start.pipeline)
    except SwellError as exc:
        return ChildStarted("-", start.pipeline, str(exc))
    run_id = new_run_id(loaded.name)
    state_dir = Path(parent.run_dir).parents[1]  # the parent's, wherever this worker is
    own = state_dir / "workspaces" / run_id
    workspace = str(own) if start.own_workspace else parent.workspace
    stored = rt.store.get_run(parent.run_id).options
    options = {
        "auto_approve": parent.options.auto_approve,
        "adapter": parent.options.adapter,
        "model": parent.options.model,
        **{k: v for k, v in (("env", start.env), ("artifacts", start.artifacts)) if v},
        **({"max_cycles": start.max_cycles} if start.max_cycles else {}),
        **{k: stored[k] for k in _ENGINE_KEYS if k in stored},  # approve/cancel reach it
    }
    rt.store.create_run(
        run_id=run_id,
        pipeline=loaded.name,
        input_text=start.input,
        workspace=workspace,
        pipeline_path=str(loaded.path),
        project_root=parent.project_root,
        parent_run_id=parent.run_id,
        parent_step_id=start.step_id,
        options=options,
        pipeline_text=loaded.text,
    )
    if start.own_workspace and own.parent.is_dir():  # not on a host that has no such place
        from swell.workspace.owner import record_owner

        record_owner(own, rt.store.identity)
    from swell.engine.visit.context import RunOptions

    child_options = RunOptions(
        auto_approve=parent.options.auto_approve,
        adapter=parent.options.adapter,
        model=parent.options.model,
        env=start.env,
        artifacts=start.artifacts,
        max_cycles=start.max_cycles,
    )
    spec = run_spec(rt, loaded, run_id, start.input, child_options, workspace, state_dir)
    spec = dataclasses.replace(
        spec,
        store=parent.store,
        heartbeat_seconds=parent.heartbeat_seconds,
        parent_run_id=parent.run_id,
        parent_step_id=start.step_id,
        # a child in its parent's workspace starts from what the parent's visit handed
        # over (children.py, workspace_sync.VisitSync) and hands its last commit back
        remote=parent.remote,
        head=None if start.own_workspace else start.head,
        sticky_seconds=parent.sticky_seconds,
    )
    return ChildStarted(run_id, loaded.name, spec=spec)


class EngineChildren:
    """`Services.children` inside a visit activity: child runs as child workflows."""

    def __init__(
        self,
        rt: Runtime,
        slots: Mapping[str, VisitSlots] | None = None,
        sync: VisitSync | None = None,
    ) -> None:
        self.rt = rt
        self.sync = sync  # the visit's place on the workspace remote, if the run has one
        self.calls: Counter[tuple[str, int, int | None]] = Counter()
        self.slots = slots or {}
        self.waiting = 0  # this visit's child calls waiting (iterate's run in parallel)

    @contextlib.contextmanager
    def _lent(self) -> Iterator[None]:
        """The visit's worker slot, lent to other visits (its children's) while any of
        its calls waits; a local activity's slots are the workflow's worker's own."""
        info = activity.info()
        slots = None if info.is_local else self.slots.get(info.task_queue)
        self.waiting += 1
        if slots is not None and self.waiting == 1:
            slots.park()
        try:
            yield
        finally:
            self.waiting -= 1
            if slots is not None and self.waiting == 0:
                slots.unpark()

    async def run_child(self, request: ChildRequest) -> ChildOutcome:
        if request.resume_id:  # a parent resumed in-process: not the engine's
            return ChildOutcome(request.resume_id, "failed", "resuming a child on the engine")
        plan, options = request.parent, request.options or request.parent.options
        item = request.item
        place = (request.step.id, request.visit, item)
        self.calls[place] += 1
        start = ChildStart(
            key=f"{request.step.id}/{request.visit}/{item}/{self.calls[place]}",
            step_id=request.step.id,
            visit=request.visit,
            pipeline=request.pipeline or request.step.pipeline or "",
            input=request.input,
            item=item,
            own_workspace=request.own_workspace,
            env=dict(options.env),
            artifacts=dict(options.artifacts),
            max_cycles=options.max_cycles,
        )
        shared = self.sync if not request.own_workspace else None
        if shared is not None:
            start.head = await shared.hand_over()
        client = activity.client()
        parent = client.get_workflow_handle(plan.run_id)
        started: ChildStarted = await parent.execute_update(
            "start_child", start, id=f"child:{start.key}", result_type=ChildStarted
        )
        if started.error is not None:
            return ChildOutcome(started.run_id, "failed", started.error)
        request.on_start(started.run_id, started.pipeline)
        child = client.get_workflow_handle(started.run_id, result_type=RunOutcome)
        try:
            with self._lent():
                ended = await child.result()
        except WorkflowFailureError as exc:
            return ChildOutcome(started.run_id, "failed", f"its workflow failed: {exc.cause}")
        except asyncio.CancelledError:
            # the parent's visit is cancelled (a cancel, a timeout): the child goes too
            with contextlib.suppress(Exception):
                await asyncio.shield(_cancel(client, started.run_id))
            raise
        if shared is not None and ended.head is not None:
            await shared.take_back(started.run_id, ended.head)
        run = self.rt.store.get_run(started.run_id)
        left = load_state(self.rt.store, run.id)
        return ChildOutcome(run.id, run.status, run.error, left.artifacts, dict(left.context))


async def _cancel(client: Client, run_id: str) -> None:
    handle = client.get_workflow_handle(run_id)
    await handle.cancel()
    with contextlib.suppress(Exception):
        await handle.result()
