"""`swell fork RUN --at STEP#VISIT` and `swell rewind RUN --to STEP#VISIT`.

The point of a visit is the moment it was settled: its events, its checkpoint, and
what its completion recorded (its context, its end, the route it took and the steps
that route queued). Everything the run recorded before then is kept; what was
running then is interrupted and queued again, as after a crash (`swell resume`).

- fork: a new run whose first events are the origin's up to the point, copied (same
  seq numbers, the new run's id; artifact paths moved to the new workspace and run
  directory, whose files are copied), then `run.forked` (the link; the origin gets
  `run.fork_made`), then the `--set` context values. Its workspace is the visit's
  checkpoint. It continues as a resumed run does. The events are one store batch:
  a fork killed before it is whole has no events (`swell resume` says so); killed
  after, `swell resume` restores the workspace again and continues.
- rewind: the same run records `run.rewound`; the events after the point stay in the
  log, abandoned: a replay of the run's state leaves them out (`replay`), and so does
  `swell diff`. The workspace is the visit's checkpoint again.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from swell.errors import RunStateError, SwellError
from swell.events import models as ev
from swell.events.codec import stamp
from swell.ops.checkpoints import At, find, present
from swell.store.protocols import RunReader
from swell.store.rows import RunRow
from swell.workspace import safe, seeds
from swell.workspace.checkpoint import Checkpoints, index_path, repo_of, tip_ref, workspace_key

# what a visit's completion records after its `step.finished`, stamped with the visit
_SETTLING = (
    ev.RoundRecorded,
    ev.BudgetWarning,
    ev.BreakerTripped,
    ev.RouteTaken,
    ev.RetryRequested,
    ev.ReworkRequested,
    ev.FailureAbsorbed,
    ev.Warning,
)


@dataclass(frozen=True)
class Point:
    """Where a fork or a rewind starts: the origin's events up to `seq`, the workspace
    at `checkpoint`."""

    step: str
    visit: int
    seq: int
    checkpoint: ev.WorkspaceCheckpoint


def point_of(store: RunReader, run: RunRow, at: At) -> tuple[Point, list[ev.BaseEvent]]:
    """The point `at` names in `run`, and the run's kept events up to it."""
    check = find(store, run.id, at)
    assert check.step_id is not None and check.visit is not None
    kept = replay_events(store.events(run.id))
    end = _settled(kept, check.step_id, check.visit)
    if end is None:
        raise RunStateError(
            f"{check.step_id}#{check.visit} of run {run.id} has not finished; "
            "fork or rewind from a finished visit"
        )
    cut = [e for e in kept if e.seq <= end]
    return Point(check.step_id, check.visit, end, check), cut


def _settled(events: list[ev.BaseEvent], step: str, visit: int) -> int | None:
    """The seq of the last event the visit's completion recorded, or None."""
    end = None
    for event in events:
        if end is None:
            if isinstance(event, ev.StepFinished) and (event.step_id, event.visit) == (step, visit):
                end = event.seq
            continue
        if (
            isinstance(event, ev.StepQueued)
            and (event.source_step, event.source_visit)
            == (
                step,
                visit,
            )
        ) or (isinstance(event, _SETTLING) and (event.step_id, event.visit) == (step, visit)):
            end = event.seq
        else:
            break
    return end


def replay_events(events: Sequence[ev.BaseEvent]) -> list[ev.BaseEvent]:
    """The run's events without those a rewind abandoned (kept_seq < seq < rewind)."""
    rewinds = [e for e in events if isinstance(e, ev.RunRewound)]
    if not rewinds:
        return list(events)
    dropped = [(r.kept_seq, r.seq) for r in rewinds]
    return [e for e in events if not any(lo < e.seq < hi for lo, hi in dropped)]


def context_at(events: Sequence[ev.BaseEvent], upto: int) -> dict[str, str]:
    """The run's context values among `events` (kept ones) up to seq `upto`."""
    return {e.key: e.value for e in events if isinstance(e, ev.ContextSet) and e.seq <= upto}


def has_rewinds(store: RunReader, run_id: str) -> int:
    """The seq of the run's newest rewind, 0 when it has none."""
    found = store.events_of_kind(run_id, ("run.rewound",))
    return max((e.seq for e in found), default=0)


# ------------------------------------------------------------------------- fork


def copied(
    events: list[ev.BaseEvent], origin: RunRow, run_id: str, workspace: Path, run_dir: Path
) -> list[ev.BaseEvent]:
    """The origin's events as the fork's: its id, paths in the fork's workspace and run
    directory (the run-directory files they name copied there)."""
    old_ws = Path(origin.workspace or "")
    old_dir = run_dir.parent / origin.id
    out: list[ev.BaseEvent] = []
    for event in events:
        update: dict[str, object] = {"run_id": run_id}
        if isinstance(event, ev.RunStarted):
            update["workspace"] = str(workspace)
        elif isinstance(event, ev.ArtifactWritten):
            update["path"] = _moved(Path(event.path), old_ws, workspace, old_dir, run_dir)
        out.append(event.model_copy(update=update))
    versions = old_dir / "versions"
    if versions.is_dir() and not safe.is_link(versions):
        shutil.copytree(versions, run_dir / "versions", dirs_exist_ok=True, symlinks=True)
    return out


def _moved(path: Path, old_ws: Path, workspace: Path, old_dir: Path, run_dir: Path) -> str:
    if old_ws.parts and path.is_relative_to(old_ws):
        return str(workspace / path.relative_to(old_ws))
    if path.is_relative_to(old_dir):
        target = run_dir / path.relative_to(old_dir)
        with contextlib.suppress(safe.UnsafePath):  # else the copy in versions/ serves it
            safe.copy_file(path, safe.place(run_dir, path.relative_to(old_dir), "run directory"))
        return str(target)
    return str(path)


def fork_events(
    origin: RunRow,
    point: Point,
    events: list[ev.BaseEvent],
    run_id: str,
    paths: tuple[Path, Path],
    sets: dict[str, str],
) -> list[ev.BaseEvent]:
    """The fork's first batch: the origin's events up to the point, the link, the
    context values `--set` gives."""
    workspace, run_dir = paths
    batch = copied(events, origin, run_id, workspace, run_dir)
    link = ev.RunForked(
        origin_run_id=origin.id,
        at_step=point.step,
        at_visit=point.visit,
        checkpoint=point.checkpoint.commit,
        origin_seq=point.seq,
    )
    tail: list[ev.BaseEvent] = [link, *(ev.ContextSet(key=k, value=v) for k, v in sets.items())]
    stamp(tail, run_id, point.seq)
    return [*batch, *tail]


def restore(state_dir: Path, run_dir: Path, workspace: Path, run_id: str, commit: str) -> None:
    """Make the run's workspace the checkpoint `commit` and the run's next checkpoint
    its child."""
    repo = Checkpoints(repo_of(state_dir))
    workspace.mkdir(parents=True, exist_ok=True)
    repo.restore(workspace, index_path(run_dir, "main"), commit)
    repo.update_refs({tip_ref(run_id, "main"): commit})


def points_at(events: Sequence[ev.BaseEvent], upto: int) -> dict[str, str]:
    """Each workspace's newest checkpoint among `events` up to seq `upto`, by key
    (`main`: the run's own directory; a worktree: its directory's name). The visit a
    fork or rewind names may be a worktree step's: `main` is then as it was then."""
    found: dict[str, str] = {}
    for e in events:
        if isinstance(e, ev.WorkspaceCheckpoint) and e.seq <= upto:
            found[e.workspace or "main"] = e.commit
    return found


def seeds_at(events: Sequence[ev.BaseEvent], upto: int) -> dict[str, str]:
    """A fork's worktree seeds: for each step that worked in a worktree up to seq
    `upto`, that worktree's newest checkpoint then (workspace/seeds.py)."""
    points = points_at(events, upto)
    return {
        e.step_id: points[e.workspace]
        for e in events
        if isinstance(e, ev.WorkspaceCheckpoint)
        and e.seq <= upto
        and e.step_id
        and e.workspace not in (None, "main")
    }


def restore_worktrees(
    state_dir: Path, run_dir: Path, workspace: Path, run_id: str, points: dict[str, str]
) -> list[str]:
    """Make each of the run's worktrees (under `workspace`/worktrees) hold its
    checkpoint in `points` again, its branch, HEAD and index untouched; returns the
    keys whose worktree is not there (a later visit makes it again, from its branch)."""
    repo = Checkpoints(repo_of(state_dir))
    root = workspace / "worktrees"
    present = {workspace_key(p, workspace): p for p in _dirs(root)}
    missing = []
    for key, commit in points.items():
        path = present.get(key)
        if path is None:
            missing.append(key)
            continue
        repo.restore(path, index_path(run_dir, key), commit)
        repo.update_refs({tip_ref(run_id, key): commit})
    return missing


def _dirs(root: Path) -> list[Path]:
    if not root.is_dir() or safe.is_link(root):
        return []
    return [p for p in root.iterdir() if p.is_dir() and not safe.is_link(p)]


def restore_pending(store: RunReader, state_dir: Path, run: RunRow) -> bool:
    """A fork or rewind killed before its run went on: its workspace is restored again
    (it may be half done). True when it was."""
    marks = store.events_of_kind(run.id, ("run.forked", "run.rewound"))
    last = marks[-1] if marks else None
    if not isinstance(last, ev.RunForked | ev.RunRewound) or not last.checkpoint:
        return False
    after = store.events(run.id, last.seq, limit=1000)
    if not run.workspace or any(isinstance(e, ev.StepStarted) for e in after):
        return False  # it went on from there
    run_dir = state_dir / "runs" / run.id
    upto = last.kept_seq if isinstance(last, ev.RunRewound) else last.seq
    present(
        Checkpoints(repo_of(state_dir)), store.events_of_kind(run.id, ("workspace.checkpoint",))
    )
    points = points_at(replay_events(store.events(run.id)), upto)
    main = points.pop("main", None)
    if main is not None:
        restore(state_dir, run_dir, Path(run.workspace), run.id, main)
    if isinstance(last, ev.RunRewound):
        restore_worktrees(state_dir, run_dir, Path(run.workspace), run.id, points)
    else:  # a fork's worktrees are new: its steps seed them when they first open them
        seeds.write(run_dir, seeds_at(replay_events(store.events(run.id)), upto))
    return True


def parse_sets(values: list[str]) -> dict[str, str]:
    """`--set context.KEY=VALUE` values; one clear error for any other shape."""
    found: dict[str, str] = {}
    for value in values:
        key, eq, text = value.partition("=")
        if not eq or not key.startswith("context.") or not key.removeprefix("context."):
            raise SwellError(f"--set {value!r}: expected context.KEY=VALUE")
        found[key.removeprefix("context.")] = text
    return found


def abandoned_refs(store: RunReader, run_id: str, kept_seq: int, rewind_seq: int) -> dict[str, str]:
    """Refs that keep the abandoned visits' checkpoints reachable once their visit
    numbers are used again: refs/swell/RUN/abandoned/REWIND/STEP/VISIT."""
    found = store.events_of_kind(run_id, ("workspace.checkpoint",))
    return {
        f"refs/swell/{run_id}/abandoned/{rewind_seq}/{e.step_id}/{e.visit}": e.commit
        for e in found
        if isinstance(e, ev.WorkspaceCheckpoint) and e.seq > kept_seq and e.changed
    }


__all__ = [
    "Point",
    "abandoned_refs",
    "context_at",
    "fork_events",
    "has_rewinds",
    "parse_sets",
    "point_of",
    "points_at",
    "replay_events",
    "restore",
    "restore_pending",
    "restore_worktrees",
    "seeds_at",
]
