"""Workspaces across hosts: each visit's checkpoint (workspace/checkpoint.py) is pushed
to the run's bare git remote, with the files it leaves out carried beside it as the
visit's hand-over commit (workspace/remote.py), under a ref of its own attempt
(`refs/swell/RUN/STEP/VISIT/ATTEMPT`); the checkpoint itself goes under
`refs/swell-checkpoints/RUN/STEP/VISIT`. The workflow carries the hand-over the next
visit starts from; a worker whose work tree is not at it (another host, or a visit
that died halfway here) fetches it and resets the work tree to it first, and the
checkpoint it carries is the parent of that visit's own: one chain of checkpoints for
the run, whatever host ran each visit.

The workspace repository's HEAD stays at its empty base commit, so a diff (a
review's, `changed_files`) still shows everything the run changed; commits go to refs
only.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from swell.engine.visit.checkpointing import enabled
from swell.events.models import BaseEvent, WorkspaceCheckpoint
from swell.workspace import remote as on_remote
from swell.workspace.checkpoint import Checkpoints, index_path, tip_ref, visit_ref
from swell.workspace.workspace import Workspace, WorkspaceError, open_directory

MARK = "swell-head"  # in the repository: the commit this host's work tree was left at
ROOT_ENV = "SWELL_WORKSPACES_ROOT"  # a worker's own place for runs' workspaces


def local_run_dir(run_dir: str) -> Path:
    """Where this worker keeps the directory of a run whose workspace moves between
    hosts: under its own $SWELL_STATE_DIR when set (each host its own state: logs,
    checkpoints), else where the run was started with it."""
    override = os.environ.get("SWELL_STATE_DIR")
    return Path(override).resolve() / "runs" / Path(run_dir).name if override else Path(run_dir)


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
        if not _has(ws, base):  # another run's (a fork's start): by its id
            ws.git("fetch", "-q", "--no-write-fetch-head", remote, base)
        if not _has(ws, base):
            raise WorkspaceError(
                f"the workspace commit {base} is not on {on_remote.public(remote)}"
            )
    ws.git("read-tree", "-u", "--reset", start)
    ws.git("clean", "-q", "-ffdx")
    mark.write_text(f"{start}\n")


def _has(ws: Workspace, commit: str) -> bool:
    try:
        ws.git("cat-file", "-e", f"{commit}^{{commit}}")
    except WorkspaceError:
        return False
    return True


@dataclass
class Chain:
    """The run's checkpoints of its workspace (`main`) on this host's checkpoint
    repository (`repo`, with the run's memory of it) and on the run's remote."""

    repo: Checkpoints
    run_dir: Path
    workspace: Path
    remote: str
    run_id: str

    @property
    def _key(self) -> tuple[Path, str, str]:
        return (self.repo.repo, self.run_id, "main")

    def follow(self, base: str | None) -> None:
        """The visit's checkpoint is to be the child of the one the hand-over `base`
        carries (the run's newest, whatever host took it); none before a first visit."""
        if not enabled():
            return
        try:
            checkpoint = on_remote.checkpoint_of(self.repo, base, self.remote) if base else None
            tip = (checkpoint, self.repo.tree_of(checkpoint)) if checkpoint else None
        except (WorkspaceError, OSError):
            tip = None  # the visit's checkpoint starts a chain of its own
        if tip is None:
            self.repo.memory.tips.pop(self._key, None)
            (self.repo.repo / tip_ref(self.run_id, "main")).unlink(missing_ok=True)
        else:
            self.repo.memory.tips[self._key] = tip

    def publish(
        self,
        step: str,
        visit: int,
        attempt: int,
        taken: WorkspaceCheckpoint | None,
        suffix: str = "",
    ) -> str:
        """Push the visit's checkpoint `taken` and its hand-over under the attempt's ref
        (+ `suffix`); returns the hand-over, which the next visit starts from."""
        self.repo.ensure()
        checkpoint = taken.commit if taken is not None else None
        index = index_path(self.run_dir, "main.all")
        handed = on_remote.commit(self.repo, self.workspace, index, checkpoint)
        refs = {f"refs/swell/{self.run_id}/{step}/{visit}/{attempt}{suffix}": handed}
        if taken is not None and not suffix:
            refs[on_remote.remote_ref(visit_ref(self.run_id, step, visit))] = taken.commit
            refs[on_remote.remote_ref(tip_ref(self.run_id, "main"))] = taken.commit
        on_remote.push(self.repo, self.remote, refs)
        _mark(open_directory(self.workspace)).write_text(f"{handed}\n")
        return handed

    def midway(self, step: str, visit: int) -> WorkspaceCheckpoint | None:
        """A checkpoint of the work tree as it is now, mid-visit (for a child run it is
        handed to), on top of the visit's parent; None when checkpoints are off."""
        if not enabled():
            return None
        tip = self.repo.memory.tips.get(self._key)
        try:
            self.repo.ensure()
            snap = self.repo.snapshot(
                self.workspace,
                index_path(self.run_dir, "main"),
                refs=[],
                message=f"swell: {step} visit {visit}, handed to a child run",
                parent=tip[0] if tip else None,
                parent_tree=tip[1] if tip else None,
            )
        except (WorkspaceError, OSError):
            return None
        return WorkspaceCheckpoint(
            commit=snap.commit, tree=snap.tree, parent=snap.parent, changed=snap.changed
        )

    def recorded(self, events: Sequence[BaseEvent]) -> list[BaseEvent]:
        """`events` with the remote on the checkpoint of the run's workspace."""
        where = on_remote.public(self.remote)
        return [
            e.model_copy(update={"remote": where})
            if isinstance(e, WorkspaceCheckpoint) and e.workspace == "main"
            else e
            for e in events
        ]


def main_checkpoint(events: Sequence[BaseEvent]) -> WorkspaceCheckpoint | None:
    """The checkpoint of the run's workspace among a visit's events."""
    found = [e for e in events if isinstance(e, WorkspaceCheckpoint) and e.workspace == "main"]
    return found[-1] if found else None


async def prepare_async(
    path: Path, remote: str, run_id: str, base: str | None, fresh: bool, parent: str | None = None
) -> None:
    await asyncio.to_thread(prepare, path, remote, run_id, base, fresh, parent)


@dataclass
class VisitSync:
    """One visit's place on the run's remote, for the child runs that share its
    workspace: the work tree is handed over (a checkpoint of it mid-visit, with its
    hand-over commit) before each such child starts (the child's visits may run on
    other hosts, from that commit), and the child's last commit is taken back when it
    ends, so what it changed is here for the rest of the visit and goes into the
    visit's own checkpoint."""

    chain: Chain
    step: str
    visit: int
    attempt: int
    handed: int = 0

    @property
    def path(self) -> Path:
        return self.chain.workspace

    async def hand_over(self) -> str:
        """The work tree as it is now, pushed under `refs/swell/RUN/STEP/VISIT/ATTEMPT.child-N`."""
        self.handed += 1
        chain, suffix = self.chain, f".child-{self.handed}"

        def handing() -> str:
            taken = chain.midway(self.step, self.visit)
            return chain.publish(self.step, self.visit, self.attempt, taken, suffix)

        return await asyncio.to_thread(handing)

    async def take_back(self, child_run_id: str, head: str) -> None:
        """The work tree as the child left it (fetched when its last visit ran elsewhere)."""
        await prepare_async(self.chain.workspace, self.chain.remote, child_run_id, head, False)
