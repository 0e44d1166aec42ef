"""Wiring of `swell fork` and `swell rewind` (ops/timetravel.py has the rules): the
run is prepared here, then continued as `swell resume` continues a run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from swell.errors import RunBusy, RunStateError
from swell.events import models as ev
from swell.events.codec import stamp
from swell.events.statuses import ENDED_FOR_GOOD
from swell.manifest.loader import LoadedPipeline, load_pipeline, load_stored_pipeline
from swell.ops import timetravel as tt
from swell.ops.checkpoints import At, present
from swell.runtime import Runtime, check_loaded, create_run, options_of
from swell.store.capabilities import claims
from swell.store.rows import RunRow
from swell.workspace import seeds
from swell.workspace.checkpoint import Checkpoints, repo_of


@dataclass(frozen=True)
class Fork:
    """What `swell fork` changes of the origin."""

    input: str | None = None
    sets: dict[str, str] | None = None
    pipeline_file: Path | None = None


def _pipeline(rt: Runtime, origin: RunRow, fork: Fork) -> LoadedPipeline:
    if fork.pipeline_file is not None:
        return load_pipeline(rt.project.root, str(fork.pipeline_file))
    text = rt.store.pipeline_text(origin.id)
    if text is None or origin.pipeline_path is None:
        return load_pipeline(rt.project.root, origin.pipeline_path or origin.pipeline)
    return load_stored_pipeline(Path(origin.pipeline_path), text)


def fork_run(rt: Runtime, origin_id: str, at: At, fork: Fork) -> str:
    """Record the fork of `origin_id` at `at` and restore its workspace; returns its id
    (to continue with `resume`). Nothing is created when `at` names no checkpoint."""
    origin = rt.store.get_run(origin_id)
    if origin.parent_run_id:
        raise RunStateError(f"run {origin.id} is a sub-pipeline run; fork its top run")
    point, events = tt.point_of(rt.store, origin, at)
    present(Checkpoints(repo_of(rt.state_dir)), events)  # a visit another host ran
    loaded = _pipeline(rt, origin, fork)
    check_loaded(rt, loaded)
    sets = fork.sets or {}
    text = fork.input if fork.input is not None else origin.input or ""
    plan = create_run(rt, loaded, text, options_of(origin))
    try:
        batch = tt.fork_events(
            origin, point, events, plan.run_id, (plan.workspace, plan.run_dir), sets
        )
        if fork.input is not None:  # the copied start says what the fork runs on
            batch = [
                e.model_copy(update={"input": text}) if isinstance(e, ev.RunStarted) else e
                for e in batch
            ]
        rt.store.emit(batch)  # one batch: a fork killed before it has no events at all
        made = ev.ForkMade(fork_run_id=plan.run_id, at_step=point.step, at_visit=point.visit)
        _note_in_origin(rt, origin.id, made)
        main = tt.points_at(events, point.seq).get("main")  # the visit may be a worktree's
        if main is not None:
            tt.restore(rt.state_dir, plan.run_dir, plan.workspace, plan.run_id, main)
        # the fork's worktrees are made when its steps first open them, from these
        seeds.write(plan.run_dir, tt.seeds_at(events, point.seq))
    finally:
        claims(rt.store).release(plan.run_id)
    return plan.run_id


def _note_in_origin(rt: Runtime, origin_id: str, made: ev.ForkMade) -> None:
    """`run.fork_made` in the origin's log, unless a process executes the origin now
    (its own events would race this one for the next seq): the origin's lineage then
    finds the fork by the fork's own `run.forked` (ops/lineage.py)."""
    try:
        claims(rt.store).claim(origin_id)
    except RunBusy:  # the origin goes on elsewhere
        return
    try:
        last = rt.store.get_run(origin_id).last_seq
        stamp([made], origin_id, last)
        rt.store.emit([made])
    finally:
        claims(rt.store).release(origin_id)


def rewind_run(rt: Runtime, run_id: str, at: At) -> str:
    """Rewind `run_id` to `at`: `run.rewound` recorded, the workspace restored; returns
    its id (to continue with `resume`). RunBusy when a process executes it."""
    run = rt.store.get_run(run_id)
    if run.parent_run_id:
        raise RunStateError(f"run {run.id} is a sub-pipeline run; rewind its top run")
    if run.options.get("engine") == "temporal" and run.status not in ENDED_FOR_GOOD:
        # its workflow holds no claim in the store: `claim` below would not see it
        raise RunBusy(
            f"run {run.id} is executed by the Temporal engine; `swell cancel {run.id}` it first"
        )
    claims(rt.store).claim(run.id)
    try:
        run = rt.store.get_run(run.id)
        point, _ = tt.point_of(rt.store, run, at)
        repo = Checkpoints(repo_of(rt.state_dir))
        present(repo, rt.store.events_of_kind(run.id, ("workspace.checkpoint",)))
        kept = tt.replay_events(rt.store.events(run.id))
        abandoned = [
            f"{e.step_id}#{e.visit}"
            for e in kept
            if isinstance(e, ev.StepStarted) and e.seq > point.seq and e.step_id and e.visit
        ]
        rewound = ev.RunRewound(
            at_step=point.step,
            at_visit=point.visit,
            kept_seq=point.seq,
            checkpoint=point.checkpoint.commit,
            abandoned=list(dict.fromkeys(abandoned)),
            context=tt.context_at(kept, point.seq),
        )
        stamp([rewound], run.id, run.last_seq)
        keep = tt.abandoned_refs(rt.store, run.id, point.seq, rewound.seq)
        if keep:
            repo.update_refs(keep)  # the abandoned checkpoints stay reachable
        rt.store.emit([rewound])
        if run.workspace:
            run_dir = rt.state_dir / "runs" / run.id
            points = tt.points_at(kept, point.seq)  # the run's directory and its worktrees
            main = points.pop("main", None)
            if main is not None:
                tt.restore(rt.state_dir, run_dir, Path(run.workspace), run.id, main)
            tt.restore_worktrees(rt.state_dir, run_dir, Path(run.workspace), run.id, points)
    finally:
        claims(rt.store).release(run.id)
    return run.id


__all__ = ["Fork", "fork_run", "rewind_run"]
