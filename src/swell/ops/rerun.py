"""`swell run NAME --from-step S [--run PREVIOUS]`: a new run that starts at step S
with what a previous run of the same pipeline left before it.

- PREVIOUS defaults to the newest top-level run of the pipeline that no process is
  executing.
- S runs again, and so does every step that depends on it, directly or through other
  steps' `dependencies`. Every other step PREVIOUS finished is *reused*: the new run
  records one visit of it (marked "reused from run PREVIOUS") with that step's last
  outcome, output, context values, artifacts and thread rounds, so templates
  (`{{ steps.X.outcome }}`, `{{ context.k }}`), injected artifacts, dependency joins
  and threads see it as done. Reused steps count one visit each toward the limits.
- The new run works in a copy of PREVIOUS's workspace (links copied as links, never
  followed; git worktrees under `worktrees/` are not copied: worktree steps get a new
  worktree). An artifact is reused only if its file still has the sha256 recorded.
- S is the only entry step; edges and dependents go on from there as in any run.
- S must exist, must not be `rework_only`, and its dependencies must be reused (run
  PREVIOUS finished them); otherwise nothing is created and the error says which step
  to start from instead.
- A run that never started (no `run.started`: its `--from-step` was killed while it
  copied the workspace, or the copy failed) is never a source. The copy goes to
  `WORKSPACE.copying` and is renamed into place when whole, so a killed copy leaves
  no workspace that looks finished; the run it leaves (`pending`, no events) is marked
  failed by the next `--from-step` of its pipeline or by `swell resume` of it
  (`retire_husk`), and its partial copy removed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swell.engine.steps.registry import StepKinds
from swell.errors import RunBusy, RunStateError, SwellError
from swell.events import models as ev
from swell.events.codec import stamp
from swell.manifest.loader import LoadedPipeline
from swell.manifest.models import Pipeline
from swell.store.capabilities import claims
from swell.store.protocols import RunReader, Store
from swell.store.rows import RunRow
from swell.workspace import safe

SCAN = 10_000  # runs looked through for the newest one of a pipeline
COPYING = ".copying"  # suffix of a workspace copy under way (renamed into place when whole)


@dataclass
class Reuse:
    """What a new run starting at `start` takes from `previous`."""

    previous: RunRow
    start: str
    reused: list[str]  # in pipeline order
    finished: dict[str, ev.StepFinished]  # each reused step's last visit
    context: list[ev.ContextSet]
    artifacts: list[ev.ArtifactWritten]
    rounds: list[ev.RoundRecorded]
    notes: list[str] = field(default_factory=list)


def _started(store: RunReader, run: RunRow) -> bool:
    """Whether the run ever started (has its `run.started`): one that did not was
    interrupted while being created, and has nothing to reuse."""
    return bool(store.events_of_kind(run.id, ["run.started"]))


def _copying(run: RunRow) -> Path | None:
    return Path(run.workspace + COPYING) if run.workspace else None


def retire_husk(store: Store, run: RunRow) -> str | None:
    """If `run` (claimed by the caller) is what a `--from-step` killed while it copied
    the workspace left (no event, its copy under way), mark it failed, remove the
    partial copy and return why; else None."""
    copying = _copying(run)
    if copying is None or not os.path.lexists(copying) or store.events(run.id):
        return None
    why = (
        f"run {run.id} was being created by `swell run {run.pipeline} --from-step` when its "
        "process ended, while it copied the workspace; nothing ran in it"
    )
    failed = ev.RunFinished(status="failed", error=why)
    stamp([failed], run.id, 0)
    store.emit([failed])
    safe.remove(copying)
    return why


def refuse_husk(store: Store, run: RunRow) -> None:
    """For `swell resume` (the run claimed): RunStateError if `run` is such a husk,
    after marking it failed; a resume must not run the pipeline in a partial copy."""
    why = retire_husk(store, run)
    if why is not None:
        raise RunStateError(f"{why}; it is now failed: start again with --from-step")


def _retire_husks(store: Store, husks: list[RunRow]) -> None:
    """Mark the husks no process holds as failed (see `retire_husk`)."""
    for run in husks:
        copying = _copying(run)
        if copying is None or not os.path.lexists(copying) or store.owner(run.id) is not None:
            continue  # the copy's process holds the run from before the copy starts
        try:
            claims(store).claim(run.id)
        except RunBusy:
            continue
        try:
            retire_husk(store, store.get_run(run.id))
        finally:
            claims(store).release(run.id)


def previous_run(store: Store, pipeline: str, run_id: str | None) -> RunRow:
    """The run to start from: `run_id`, else the newest top-level run of `pipeline`
    that no process is executing and that started (see `retire_husk`)."""
    if run_id is not None:
        run = store.get_run(run_id)
        if run.pipeline != pipeline:
            raise RunStateError(
                f"run {run.id} is a run of pipeline '{run.pipeline}', not '{pipeline}'"
            )
        if store.owner(run.id) is not None:
            raise RunStateError(f"run {run.id} is still running; wait for it, or cancel it")
        if not _started(store, run):
            _retire_husks(store, [run])
            raise RunStateError(
                f"run {run.id} never started (it was interrupted while being created); "
                "there is nothing to reuse: start from another run"
            )
        return run
    husks: list[RunRow] = []
    try:
        for run in store.list_runs(SCAN, include_children=False):
            if run.pipeline != pipeline or store.owner(run.id) is not None:
                continue
            if _started(store, run):
                return run
            husks.append(run)
    finally:
        _retire_husks(store, husks)
    raise RunStateError(
        f"no earlier run of pipeline '{pipeline}' to start from; run it from the start first"
    )


def rerun_steps(pipeline: Pipeline, start: str) -> set[str]:
    """`start` and every step depending on it, directly or through other steps."""
    dependents: dict[str, list[str]] = {}
    for step in pipeline.steps:
        for dep in step.dependencies:
            dependents.setdefault(dep, []).append(step.id)
    found, todo = {start}, [start]
    while todo:
        for nxt in dependents.get(todo.pop(), []):
            if nxt not in found:
                found.add(nxt)
                todo.append(nxt)
    return found


def plan_reuse(store: RunReader, loaded: LoadedPipeline, start: str, previous: RunRow) -> Reuse:
    """What the new run reuses; RunStateError when it cannot start at `start`."""
    pipeline = loaded.pipeline
    steps = {s.id: s for s in pipeline.steps}
    if start not in steps:
        raise RunStateError(
            f"pipeline '{loaded.name}' has no step '{start}' (steps: {', '.join(steps)})"
        )
    if steps[start].rework_only:
        raise RunStateError(
            f"step '{start}' is rework_only: it runs only when a contract asks for rework"
        )
    workspace = Path(previous.workspace) if previous.workspace else None
    if workspace is None or safe.is_link(workspace) or not workspace.is_dir():
        raise RunStateError(
            f"the workspace of run {previous.id} is gone (removed by `swell clean`?); "
            "there is nothing to start from: run the pipeline from the start"
        )
    again = rerun_steps(pipeline, start)
    last: dict[str, ev.StepFinished] = {}
    context: dict[str, ev.ContextSet] = {}
    artifacts: dict[tuple[str, str], ev.ArtifactWritten] = {}
    rounds: list[ev.RoundRecorded] = []
    for event in store.events(previous.id):
        step = event.step_id
        if step is None or step not in steps or step in again:
            continue
        if isinstance(event, ev.StepFinished):
            last[step] = event
        elif isinstance(event, ev.ContextSet):
            context.pop(event.key, None)  # keep the order values were last set in
            context[event.key] = event
        elif isinstance(event, ev.ArtifactWritten):
            artifacts[(step, event.name)] = event
        elif isinstance(event, ev.RoundRecorded):
            rounds.append(event)
    reused = [s.id for s in pipeline.steps if s.id in last]
    missing = [d for d in steps[start].dependencies if d not in last]
    if missing:
        raise RunStateError(
            f"step '{start}' depends on {', '.join(missing)}, which run {previous.id} never "
            f"finished: start from {missing[0]} (or an earlier step) instead"
        )
    return Reuse(
        previous,
        start,
        reused,
        last,
        [c for c in context.values() if c.step_id in last],
        [a for a in artifacts.values() if a.step_id in last],
        [r for r in rounds if r.step_id in last],
    )


def copy_workspace(source: Path, target: Path) -> None:
    """`source`'s files into the new run's workspace `target` (which must not exist);
    links are copied as links; the run's git worktrees are left out. The copy is made
    in `TARGET.copying` and renamed to `target` when whole: a copy cut short (a killed
    swell) never looks like a workspace."""
    if safe.is_link(source):
        raise SwellError(f"{source} is a symbolic link; swell will not copy through it")

    def skip(directory: str, names: list[str]) -> list[str]:
        return ["worktrees"] if Path(directory) == source and "worktrees" in names else []

    staging = Path(str(target) + COPYING)
    try:
        safe.remove(staging)
        shutil.copytree(source, staging, symlinks=True, ignore=skip)
        os.rename(staging, target)
    except (OSError, shutil.Error) as exc:
        with contextlib.suppress(OSError):
            safe.remove(staging)
        raise SwellError(f"cannot copy the workspace of the previous run: {exc}") from None


def _moved(
    artifact: ev.ArtifactWritten, reuse: Reuse, workspace: Path, run_dir: Path, runs: Path
) -> str | None:
    """The artifact's file for the new run (copied or as it is), or None with a note."""
    path = Path(artifact.path)
    old_ws = Path(reuse.previous.workspace or "")
    old_run_dir = runs / reuse.previous.id
    try:
        if path.is_relative_to(old_ws) and path.relative_to(old_ws).parts[:1] != ("worktrees",):
            new = workspace / path.relative_to(old_ws)
            if safe.digest_file(new)[0] != artifact.sha256:
                raise safe.ContentChanged(safe.digest_file(new)[0], artifact.sha256)
            return str(new)
        if path.is_relative_to(old_run_dir):
            target = safe.place(run_dir, path.relative_to(old_run_dir), "run directory")
            safe.copy_verified(path, artifact.sha256, target)
            return str(target)
        if safe.digest_file(path)[0] != artifact.sha256:
            raise safe.ContentChanged(safe.digest_file(path)[0], artifact.sha256)
        return str(path)
    except safe.UnsafePath as exc:
        reuse.notes.append(
            f"artifact '{artifact.name}' of step '{artifact.step_id}' is not reused: {exc}"
        )
        return None


def seed_events(
    reuse: Reuse,
    loaded: LoadedPipeline,
    kinds: StepKinds,
    *,
    input_text: str,
    workspace: Path,
    run_dir: Path,
    runs: Path,
) -> list[ev.BaseEvent]:
    """The new run's first events (unstamped): it started, the reused steps' visits with
    what they left, and `start` queued. Copies the workspace and the artifacts first."""
    copy_workspace(Path(reuse.previous.workspace or ""), workspace)
    steps = {s.id: s for s in loaded.pipeline.steps}
    detail = f"reused from run {reuse.previous.id}"
    events: list[ev.BaseEvent] = [
        ev.RunStarted(pipeline=loaded.name, input=input_text, workspace=str(workspace))
    ]
    thread_rounds: dict[str, int] = {}
    number = 0
    for step_id in reuse.reused:
        step, done = steps[step_id], reuse.finished[step_id]
        at: dict[str, Any] = {"step_id": step_id, "visit": 1}
        events.append(
            ev.StepStarted(
                kind=step.kind,
                progress=kinds.of(step).progress,
                persona=step.persona,
                detail=f"{detail} (visit {done.visit})",
                **at,
            )
        )
        events += [ev.ContextSet(key=c.key, value=c.value, **at) for c in reuse.context
                   if c.step_id == step_id]  # fmt: skip
        for art in (a for a in reuse.artifacts if a.step_id == step_id):
            path = _moved(art, reuse, workspace, run_dir, runs)
            if path is not None:
                events.append(art.model_copy(update={"path": path, **at}))
        for r in (r for r in reuse.rounds if r.step_id == step_id):
            number += 1
            update: dict[str, Any] = {"round": number, **at}
            if r.thread:
                thread_rounds[r.thread] = thread_rounds.get(r.thread, 0) + 1
                update["thread_round"] = thread_rounds[r.thread]
            events.append(r.model_copy(update=update))
        events.append(
            ev.StepFinished(
                outcome=done.outcome,
                error=done.error,
                exit_code=done.exit_code,
                output_tail=done.output_tail,
                optional_failure=done.optional_failure,
                **at,
            )
        )
    events.append(ev.StepQueued(step_id=reuse.start, reason="entry"))
    for event in events:
        event.run_id, event.seq, event.ts = "", 0, ""
    return events


__all__ = [
    "Reuse",
    "copy_workspace",
    "plan_reuse",
    "previous_run",
    "refuse_husk",
    "rerun_steps",
    "retire_husk",
    "seed_events",
]
