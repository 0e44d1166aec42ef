"""A checkpoint after each visit: the visit's workspace committed to the project's
checkpoint repository (workspace/checkpoint.py) and recorded as the visit's
`workspace.checkpoint` event, which `swell diff`, `swell fork` and `swell rewind` read.

A checkpoint that cannot be taken (git missing, a full disk) is a warning: the visit
stands. SWELL_CHECKPOINTS=off turns checkpoints off (docs/time-travel.md).

When: as the visit ends, before its events are stored (a stored checkpoint event
always names objects that are there, whatever kills the process). Where: on the event
loop when it is small (`ON_LOOP`: a workspace scanned before, a few entries to stat and
bytes to read), else in a thread of its own: handing a small one to a thread cost more
than taking it (a new thread, and two waits to be scheduled on a busy machine)."""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path

from swell.engine.visit.context import RunPlan
from swell.events.models import BaseEvent, Warning, WorkspaceCheckpoint
from swell.workspace.checkpoint import (
    Checkpoints,
    Memory,
    index_path,
    repo_of,
    tip_ref,
    visit_ref,
    workspace_key,
)
from swell.workspace.offload import off_loop
from swell.workspace.treescan import Budget, NotCheap
from swell.workspace.workspace import WorkspaceError

# what a checkpoint taken on the event loop may do: about a millisecond of stats and
# reads; a bigger one goes to a thread (`checkpoint`)
ON_LOOP = Budget(entries=500, bytes=256 * 1024)


def enabled() -> bool:
    return os.environ.get("SWELL_CHECKPOINTS", "").lower() not in ("off", "0", "false", "no")


def state_dir_of(plan: RunPlan) -> Path:
    """The project's state directory: a run's directory is `STATE/runs/RUN`."""
    return plan.run_dir.parent.parent


async def checkpoint(
    plan: RunPlan, memory: Memory, workspace: Path, step_id: str, visit: int, scan: bool = True
) -> BaseEvent | None:
    """`take`, on the event loop when it fits `ON_LOOP`, else in a thread."""
    if not enabled():
        return None
    try:
        return take(plan, memory, workspace, step_id, visit, scan, ON_LOOP)
    except NotCheap:
        return await off_loop(partial(take, plan, memory, workspace, step_id, visit, scan))


def take(
    plan: RunPlan,
    memory: Memory,
    workspace: Path,
    step_id: str,
    visit: int,
    scan: bool = True,
    budget: Budget | None = None,
) -> BaseEvent | None:
    """Checkpoint `workspace` as visit `visit` of `step_id` left it (blocking: call it
    off the event loop, or with a `budget`); the event to record, or None when
    checkpoints are off. `memory`: what the run's process knows of its checkpoints
    (the run's Workspaces). `scan=False` (a visit that cannot change it): the
    workspace's newest checkpoint is the visit's, unchanged, without looking at the
    workspace. With `budget`: `NotCheap`, nothing written, when it would do more."""
    if not enabled():
        return None
    repo = Checkpoints(repo_of(state_dir_of(plan)), memory)
    key = workspace_key(workspace, plan.workspace)
    try:
        if repo.repo not in memory.ready:
            if budget is not None:
                raise NotCheap("a repository not looked at yet")
            repo.ensure()
            memory.ready.add(repo.repo)
        known = memory.tips.get((repo.repo, plan.run_id, key))
        if budget is not None and known is None:
            raise NotCheap("a tip not read yet")  # a resumed run reads it from disk
        tip = known or _tip(repo, plan.run_id, key)
        if tip is not None and not scan:
            return WorkspaceCheckpoint(
                commit=tip[0], tree=tip[1], parent=tip[0], changed=False, workspace=key
            )
        snap = repo.snapshot(
            workspace,
            index_path(plan.run_dir, key),
            refs=[visit_ref(plan.run_id, step_id, visit), tip_ref(plan.run_id, key)],
            message=f"swell: {step_id} visit {visit}",
            parent=tip[0] if tip else None,
            parent_tree=tip[1] if tip else None,
            budget=budget,
        )
    except (WorkspaceError, OSError) as exc:
        return Warning(message=f"no checkpoint of this visit's workspace: {exc}")
    memory.tips[(repo.repo, plan.run_id, key)] = (snap.commit, snap.tree)
    return WorkspaceCheckpoint(
        commit=snap.commit,
        tree=snap.tree,
        parent=snap.parent,
        changed=snap.changed,
        workspace=key,
    )


def _tip(repo: Checkpoints, run_id: str, key: str) -> tuple[str, str] | None:
    known = repo.memory.tips.get((repo.repo, run_id, key))
    if known is not None:
        return known
    commit = repo.resolve(tip_ref(run_id, key))  # a resumed run: its newest checkpoint
    return (commit, repo.tree_of(commit)) if commit else None


__all__ = ["ON_LOOP", "checkpoint", "enabled", "state_dir_of", "take"]
