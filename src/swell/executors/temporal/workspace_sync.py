"""Workspaces across hosts: each visit's workspace is committed and pushed to the
run's bare git remote under a ref of its own attempt
(`refs/swell/RUN/STEP/VISIT/ATTEMPT`); the workflow carries the commit the next visit
starts from, and a worker whose work tree is not at that commit (another host, or a
visit that died halfway here) fetches it and resets the work tree to it first.

The repository's HEAD stays at the workspace's empty base commit, so a diff (a review's,
`changed_files`) still shows everything the run changed; commits go to refs only.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path

from swell.workspace.workspace import Workspace, WorkspaceError, open_directory

MARK = "swell-head"  # in the repository: the commit this host's work tree was left at
ROOT_ENV = "SWELL_WORKSPACES_ROOT"  # a worker's own place for runs' workspaces


def local_path(workspace: str) -> Path:
    """Where this worker keeps a run's workspace: under $SWELL_WORKSPACES_ROOT when
    set (each host its own), else where the run was started with it."""
    root = os.environ.get(ROOT_ENV)
    return Path(root) / Path(workspace).name if root else Path(workspace)


def _ref(run_id: str, step: str, visit: int, attempt: int) -> str:
    return f"refs/swell/{run_id}/{step}/{visit}/{attempt}"


def _mark(ws: Workspace) -> Path:
    return ws.path / ".git" / MARK


def prepare(
    path: Path, remote: str, run_id: str, base: str | None, fresh: bool, parent: str | None = None
) -> None:
    """Make the work tree at `path` the commit `base` (None: the run's first visit, an
    empty workspace). `fresh`: an earlier attempt of this visit may have left changes.
    `parent`: the parent run whose refs may hold `base` (a child sharing its workspace
    starts from the commit its parent's visit handed over)."""
    ws = open_directory(path)
    start = base or ws.base
    mark = _mark(ws)
    left = mark.read_text().strip() if mark.is_file() else ws.base
    if start is None or (left == start and not fresh):
        return  # warm: this host left the work tree at that commit
    if base is not None and not _has(ws, base):
        runs = [run_id, *([parent] if parent else [])]
        ws.git("fetch", "-q", remote, *(f"+refs/swell/{r}/*:refs/swell/{r}/*" for r in runs))
        if not _has(ws, base):
            raise WorkspaceError(f"the workspace commit {base} is not on {remote}")
    ws.git("read-tree", "-u", "--reset", start)
    ws.git("clean", "-q", "-ffdx")
    mark.write_text(f"{start}\n")


def _has(ws: Workspace, commit: str) -> bool:
    try:
        ws.git("cat-file", "-e", f"{commit}^{{commit}}")
    except WorkspaceError:
        return False
    return True


def publish(
    path: Path,
    remote: str,
    run_id: str,
    step: str,
    visit: int,
    attempt: int,
    base: str | None,
    suffix: str = "",
) -> str:
    """Commit the work tree on top of `base` (or the workspace's base) and push it
    under the attempt's ref (+ `suffix`); returns the commit the next visit starts from."""
    ws = open_directory(path)
    parent = base or ws.base
    assert parent is not None
    ws.git("add", "--all", "--force", ".")
    tree = ws.git("write-tree").strip()
    if tree == ws.git("rev-parse", f"{parent}^{{tree}}").strip():
        commit = parent  # the visit changed nothing
    else:
        message = f"swell: {run_id} {step} visit {visit} attempt {attempt}"
        commit = ws.git("commit-tree", tree, "-p", parent, "-m", message).strip()
    ref = _ref(run_id, step, visit, attempt) + suffix
    ws.git("update-ref", ref, commit)
    ws.git("push", "-q", remote, f"+{ref}:{ref}")
    _mark(ws).write_text(f"{commit}\n")
    return commit


async def prepare_async(
    path: Path, remote: str, run_id: str, base: str | None, fresh: bool, parent: str | None = None
) -> None:
    await asyncio.to_thread(prepare, path, remote, run_id, base, fresh, parent)


async def publish_async(
    path: Path, remote: str, run_id: str, step: str, visit: int, attempt: int, base: str | None
) -> str:
    return await asyncio.to_thread(publish, path, remote, run_id, step, visit, attempt, base)


@dataclass
class VisitSync:
    """One visit's place on the run's remote, for the child runs that share its
    workspace: the work tree is handed over as a commit before each such child starts
    (the child's visits may run on other hosts, from that commit), and the child's
    last commit is taken back when it ends, so what it changed is here for the rest
    of the visit and goes into the visit's own commit."""

    path: Path
    remote: str
    run_id: str
    step: str
    visit: int
    attempt: int
    base: str | None
    handed: int = 0

    async def hand_over(self) -> str:
        """The work tree as it is now, pushed under `refs/swell/RUN/STEP/VISIT/ATTEMPT.child-N`."""
        self.handed += 1
        return await asyncio.to_thread(
            publish,
            self.path,
            self.remote,
            self.run_id,
            self.step,
            self.visit,
            self.attempt,
            self.base,
            f".child-{self.handed}",
        )

    async def take_back(self, child_run_id: str, head: str) -> None:
        """The work tree as the child left it (fetched when its last visit ran elsewhere)."""
        await prepare_async(self.path, self.remote, child_run_id, head, False)
