"""`swell clean`: remove the workspaces of old runs from `.swell/workspaces/`.

What is removed:
- the workspace directory of each run that ended (succeeded, failed, cancelled), or of
  the run named with `--run` (any run no process executes); a sub-pipeline run shares
  its parent's workspace and goes with it;
- directories there whose run this store no longer has, when the workspace records this
  store as its run's (`workspace/owner.py`: a run that is gone, a store file replaced);
- with `--older-than`, only those whose run ended (or, for the others, that were last
  changed) longer ago than that.

Only this store's: a workspace is this store's when the store has a run working in
it, or when the record written beside it names this store. A workspace whose record
names another store (runs kept in Postgres, cleaned from SQLite), or with no record
and no run here (made by hand, or by a swell that kept no records), is listed as not
this store's and kept: its owner may still need it.

What is never removed: the workspace of a run some process is executing (its claim
is held: `Store.owner`), and by default that of a run that can still be resumed
(interrupted, waiting at a gate, or running with its process gone): name it with
`--run` to remove it anyway. Runs stay in the store (`status`, `logs` still work;
artifacts inside a removed workspace are gone).

How: git worktrees of the project under a workspace's `worktrees/` are removed with
`git worktree remove --force` (then `git worktree prune`), so the project's git no
longer lists them; their branches are kept. Everything else is removed without ever
following a symbolic link (`workspace/safe.py`): a link is removed, never what it
points to. Sizes count regular files only.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from swell.events.statuses import ENDED_FOR_GOOD
from swell.store.protocols import RunReader
from swell.store.rows import RunRow
from swell.workspace import safe
from swell.workspace.base_repo import TEMPLATE
from swell.workspace.owner import OWNERS, forget_owner, owner_of

ENDED = ENDED_FOR_GOOD
SCAN = 1_000_000  # runs read from the store
GIT_SAFE = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")


@dataclass
class Target:
    """A workspace directory to remove."""

    path: Path
    runs: list[str]  # the runs that used it (none: an orphan)
    size: int = 0
    worktrees: list[Path] = field(default_factory=list)


@dataclass
class Kept:
    path: Path
    why: str


@dataclass
class Selection:
    remove: list[Target] = field(default_factory=list)
    kept: list[Kept] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(t.size for t in self.remove)


def _when(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def tree_size(root: Path) -> int:
    """Bytes of the regular files under `root` (links are not followed)."""
    return sum(st.st_size for _, st in safe.walk(root) if stat.S_ISREG(st.st_mode))


def _last_change(path: Path) -> datetime:
    return datetime.fromtimestamp(os.lstat(path).st_mtime, UTC)


def _age_of(runs: list[RunRow], path: Path) -> datetime:
    times = [_when(r.finished_at or r.updated_at or r.created_at) for r in runs]
    known = [t for t in times if t is not None]
    return max(known) if known else _last_change(path)


def _not_ours(path: Path, runs: list[RunRow], identity: str) -> str | None:
    """Why the workspace is not this store's to remove, or None when it is."""
    owner = owner_of(path)
    if owner is not None and owner != identity:
        return f"not this store's; kept (its run is kept in {owner})"
    if owner is None and not runs:
        return "not this store's; kept (no run here, and no record of the store it came from)"
    return None


def select(
    store: RunReader,
    state_dir: Path,
    *,
    identity: str,
    older_than: float | None = None,
    run_id: str | None = None,
    now: datetime | None = None,
) -> Selection:
    """The workspaces to remove, and the ones kept with why; `identity` is the store's
    (`Store.identity`)."""
    root = state_dir / "workspaces"
    out = Selection()
    if safe.is_link(root) or not root.is_dir():
        return out
    now = now or datetime.now(UTC)
    by_dir: dict[str, list[RunRow]] = {}
    for run in store.list_runs(SCAN, include_children=True):
        if run.workspace and Path(run.workspace).parent == root:
            by_dir.setdefault(Path(run.workspace).name, []).append(run)
    named = store.get_run(run_id) if run_id is not None else None
    for entry in sorted(os.listdir(root)):
        if entry in (OWNERS, TEMPLATE):
            continue  # which store each workspace's run is in; the repository each copies
        path = root / entry
        runs = by_dir.get(entry, [])
        if named is not None and named.id not in {r.id for r in runs}:
            continue
        foreign = _not_ours(path, runs, identity)
        if foreign is not None:
            out.kept.append(Kept(path, foreign))
            continue
        running = [r.id for r in runs if store.owner(r.id) is not None]
        if running:
            out.kept.append(Kept(path, f"run {running[0]} is running"))
            continue
        resumable = [r for r in runs if r.status not in ENDED]
        if resumable and named is None:
            r = resumable[0]
            state = "left running by a process that ended" if r.status == "running" else r.status
            out.kept.append(
                Kept(path, f"run {r.id} is {state} and can be resumed (name it with --run)")
            )
            continue
        if older_than is not None and (now - _age_of(runs, path)).total_seconds() < older_than:
            continue
        target = Target(path, [r.id for r in runs])
        if not safe.is_link(path):
            target.size = tree_size(path)
            worktrees = path / "worktrees"
            if worktrees.is_dir() and not safe.is_link(worktrees):
                target.worktrees = [
                    w for w in sorted(worktrees.iterdir()) if w.is_dir() and not safe.is_link(w)
                ]
        out.remove.append(target)
    return out


def _git(project_root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *GIT_SAFE, *args],
        cwd=project_root,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )


def _registered_worktrees(project_root: Path) -> set[Path]:
    if shutil.which("git") is None:
        return set()
    listed = _git(project_root, "worktree", "list", "--porcelain")
    if listed.returncode != 0:
        return set()
    return {
        Path(line[len("worktree ") :]) for line in listed.stdout.splitlines()
        if line.startswith("worktree ")
    }  # fmt: skip


def remove(selection: Selection, project_root: Path) -> list[str]:
    """Remove the selected workspaces; returns problems (a target that could not go)."""
    problems: list[str] = []
    registered = _registered_worktrees(project_root) if any(
        t.worktrees for t in selection.remove
    ) else set()  # fmt: skip
    pruned = False
    for target in selection.remove:
        for worktree in target.worktrees:
            if worktree in registered or worktree.resolve() in registered:
                done = _git(project_root, "worktree", "remove", "--force", str(worktree))
                if done.returncode != 0:
                    problems.append(f"git worktree remove {worktree}: {done.stderr.strip()}")
                pruned = True
        try:
            safe.remove(target.path)
        except OSError as exc:
            problems.append(f"{target.path}: {exc.strerror or exc}")
        else:
            forget_owner(target.path)
    if pruned:
        _git(project_root, "worktree", "prune")
    return problems


def human(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


__all__ = ["Kept", "Selection", "Target", "human", "remove", "select", "tree_size"]
