"""A checkpoint after each visit: the visit's workspace committed to the project's
checkpoint repository (workspace/checkpoint.py) and recorded as the visit's
`workspace.checkpoint` event, which `swell diff`, `swell fork` and `swell rewind` read.

A checkpoint that cannot be taken (git missing, a full disk) is a warning: the visit
stands. SWELL_CHECKPOINTS=off turns checkpoints off (docs/time-travel.md)."""

from __future__ import annotations

import os
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
from swell.workspace.workspace import WorkspaceError


def enabled() -> bool:
    return os.environ.get("SWELL_CHECKPOINTS", "").lower() not in ("off", "0", "false", "no")


def state_dir_of(plan: RunPlan) -> Path:
    """The project's state directory: a run's directory is `STATE/runs/RUN`."""
    return plan.run_dir.parent.parent


def take(
    plan: RunPlan, memory: Memory, workspace: Path, step_id: str, visit: int, scan: bool = True
) -> BaseEvent | None:
    """Checkpoint `workspace` as visit `visit` of `step_id` left it (blocking: call it
    off the event loop); the event to record, or None when checkpoints are off.
    `memory`: what the run's process knows of its checkpoints (the run's Workspaces).
    `scan=False` (a visit that cannot change it): the workspace's newest checkpoint is
    the visit's, unchanged, without looking at the workspace."""
    if not enabled():
        return None
    repo = Checkpoints(repo_of(state_dir_of(plan)), memory)
    key = workspace_key(workspace, plan.workspace)
    try:
        if repo.repo not in memory.ready:
            repo.ensure()
            memory.ready.add(repo.repo)
        tip = _tip(repo, plan.run_id, key)
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


__all__ = ["enabled", "state_dir_of", "take"]
