"""Reading a run's checkpoints (workspace/checkpoint.py) from its events: which commit
each visit left, what a visit or the whole run changed (`swell diff`, the API), and
where `swell fork` and `swell rewind` start from."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from swell.errors import SwellError
from swell.events import models as ev
from swell.store.protocols import RunReader
from swell.workspace import remote as on_remote
from swell.workspace.checkpoint import Checkpoints, repo_of, visit_ref
from swell.workspace.workspace import WorkspaceError

_AT = re.compile(r"(?P<step>[^#\s]+)(?:#(?P<visit>\d+))?")
KINDS = ("workspace.checkpoint", "run.rewound", "run.forked")


class NoCheckpoint(SwellError):
    """A STEP#VISIT that names no visit, or a visit without a checkpoint."""


@dataclass(frozen=True)
class At:
    step: str
    visit: int | None  # None: the step's newest visit


def parse_at(text: str) -> At:
    """`STEP` or `STEP#VISIT`; NoCheckpoint (one message) when it is neither."""
    match = _AT.fullmatch(text.strip())
    if match is None or (match.group("visit") is not None and int(match.group("visit")) < 1):
        raise NoCheckpoint(f"{text!r} is not STEP or STEP#VISIT (a visit number from 1)")
    visit = match.group("visit")
    return At(match.group("step"), int(visit) if visit is not None else None)


def checkpoints(store: RunReader, run_id: str) -> list[ev.WorkspaceCheckpoint]:
    """The run's checkpoints in order, those of visits a rewind abandoned left out."""
    found: list[ev.WorkspaceCheckpoint] = []
    for event in store.events_of_kind(run_id, KINDS):
        if isinstance(event, ev.RunRewound):
            found = [c for c in found if c.seq <= event.kept_seq]
        elif isinstance(event, ev.WorkspaceCheckpoint):
            found.append(event)
    return found


def find(store: RunReader, run_id: str, at: At) -> ev.WorkspaceCheckpoint:
    """The checkpoint of the visit `at` names (the step's newest when no visit is given)."""
    mine = [c for c in checkpoints(store, run_id) if c.step_id == at.step]
    if at.visit is not None:
        mine = [c for c in mine if c.visit == at.visit]
    if mine:
        return mine[-1]
    visits = sorted({v.visit for v in store.visits(run_id) if v.step_id == at.step})
    what = f"{at.step}#{at.visit}" if at.visit is not None else f"step '{at.step}'"
    if not visits:
        steps = sorted({v.step_id for v in store.visits(run_id)})
        raise NoCheckpoint(
            f"run {run_id} has no visit of step '{at.step}' (its steps: {', '.join(steps) or 'none'})"
        )
    if at.visit is not None and at.visit not in visits:
        raise NoCheckpoint(
            f"run {run_id} has no {what}: step '{at.step}' ran visits {', '.join(map(str, visits))}"
        )
    raise NoCheckpoint(
        f"run {run_id} kept no checkpoint of {what} (checkpoints off, or git was missing)"
    )


def present(repo: Checkpoints, points: Iterable[ev.BaseEvent]) -> None:
    """Make the checkpoints among `points` (and their parents) be in this host's
    checkpoint repository: those it lacks are fetched from the run's remote their
    event names (a run across hosts), each kept by its visit's ref unless that names
    another commit here."""
    by_remote: dict[str, list[ev.WorkspaceCheckpoint]] = {}
    for p in points:
        if isinstance(p, ev.WorkspaceCheckpoint) and p.remote:
            by_remote.setdefault(p.remote, []).append(p)
    for remote, mine in by_remote.items():
        lacking = on_remote.missing(repo, [c for p in mine for c in (p.commit, p.parent) if c])
        if not lacking:
            continue
        try:
            on_remote.fetch(repo, remote, lacking)
        except WorkspaceError as exc:
            raise NoCheckpoint(
                f"checkpoint {lacking[0][:12]} is not on this host, and fetching it from the "
                f"run's remote {remote} failed: {exc}"
            ) from None
        for p in mine:
            if p.commit in lacking and p.run_id and p.step_id and p.visit:
                ref = visit_ref(p.run_id, p.step_id, p.visit)
                if repo.resolve(ref) is None:  # kept from a `swell clean` of other runs
                    repo.write_ref(ref, p.commit)


def diff(store: RunReader, state_dir: Path, run_id: str, at: At | None, stat: bool = False) -> str:
    """What visit `at` changed in its workspace, or (None) what the whole run changed:
    each of its workspaces from its first checkpoint's parent to its newest."""
    repo = Checkpoints(repo_of(state_dir))
    if at is not None:
        point = find(store, run_id, at)
        if not point.changed:
            return ""
        present(repo, [point])
        return repo.diff(point.parent, point.commit, stat)
    points = checkpoints(store, run_id)
    if not points:
        raise NoCheckpoint(f"run {run_id} has no checkpoint yet")
    present(repo, points)
    parts = []
    for key in dict.fromkeys(c.workspace for c in points):
        mine = [c for c in points if c.workspace == key]
        parts.append(repo.diff(mine[0].parent, mine[-1].commit, stat))
    return "".join(parts)


__all__ = ["At", "NoCheckpoint", "checkpoints", "diff", "find", "parse_at", "present"]
