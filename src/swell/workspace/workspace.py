"""Where a step works: the run's directory, or a git worktree of the project.

Every workspace can say what changed in it since it was created (`diff`,
`changed_files`): a directory workspace is made a git repository with an empty
first commit for that purpose, a worktree remembers the commit it branched from.
Read-only mounts are copies of project paths that are checked after each visit.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from swell.errors import SwellError
from swell.manifest.models import Mount
from swell.workspace.paths import inside

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "swell",
    "GIT_AUTHOR_EMAIL": "swell@localhost",
    "GIT_COMMITTER_NAME": "swell",
    "GIT_COMMITTER_EMAIL": "swell@localhost",
    "GIT_CONFIG_NOSYSTEM": "1",
}


class WorkspaceError(SwellError):
    """A workspace cannot be created or inspected."""


def git(cwd: Path, *args: str) -> str:
    """Run git in `cwd`; a failure is a WorkspaceError with git's own message."""
    if shutil.which("git") is None:
        raise WorkspaceError("git is not installed; worktree workspaces and diffs need it")
    env = {**os.environ, **_GIT_ENV}
    proc = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL
    )
    if proc.returncode != 0:
        raise WorkspaceError(f"git {' '.join(args)} failed in {cwd}: {proc.stderr.strip()}")
    return proc.stdout


@dataclass
class MountRecord:
    target: str  # relative to the workspace
    readonly: bool
    digest: str


@dataclass
class Workspace:
    path: Path
    kind: str  # directory | worktree
    base: str | None = None  # the commit diffs are taken against
    branch: str | None = None
    mounts: list[MountRecord] = field(default_factory=list)
    mount_specs: list[Mount] = field(default_factory=list)

    def diff(self) -> str:
        """The workspace's changes against its base, untracked files included."""
        if self.base is None:
            raise WorkspaceError(f"workspace {self.path} has no base to diff against")
        git(self.path, "add", "--all", "--intent-to-add")
        return git(self.path, "diff", "--no-color", "--no-ext-diff", self.base)

    def changed_files(self) -> list[str]:
        if self.base is None:
            return []
        git(self.path, "add", "--all", "--intent-to-add")
        return [
            line for line in git(self.path, "diff", "--name-only", self.base).splitlines() if line
        ]

    def check_mounts(self) -> list[str]:
        """Read-only mounts that a visit changed."""
        problems = []
        for mount in self.mounts:
            target = self.path / mount.target
            if mount.readonly and _digest(target) != mount.digest:
                problems.append(
                    f"the step wrote to the read-only mount {mount.target}/; it was restored"
                )
        return problems


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    if path.is_file():
        h.update(path.read_bytes())
        return h.hexdigest()
    for item in sorted(path.rglob("*")) if path.exists() else []:
        h.update(str(item.relative_to(path)).encode())
        if item.is_file() and not item.is_symlink():
            h.update(item.read_bytes())
    return h.hexdigest()


def _slug(branch: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", branch).strip("-") or "branch"


def open_directory(path: Path) -> Workspace:
    """The run's own directory; a git repository with an empty base commit when git exists."""
    path.mkdir(parents=True, exist_ok=True)
    if shutil.which("git") is None:
        return Workspace(path, "directory")
    if not (path / ".git").exists():
        git(path, "init", "-q")
        git(path, "commit", "-q", "--allow-empty", "-m", "swell: workspace base")
    return Workspace(path, "directory", base=git(path, "rev-parse", "HEAD").strip())


def open_worktree(project_root: Path, root: Path, branch: str, base: str | None) -> Workspace:
    """A worktree of the project on `branch` (new, from `base` or HEAD), reused if it exists."""
    path = root / "worktrees" / _slug(branch)
    meta = path.with_suffix(".json")
    if path.exists() and meta.exists():
        data = json.loads(meta.read_text())
        return Workspace(path, "worktree", data["base"], branch)
    try:
        git(project_root, "rev-parse", "--verify", "HEAD")
    except WorkspaceError:
        raise WorkspaceError(
            f"a worktree workspace needs {project_root} to be a git repository with at least one commit"
        ) from None
    start = git(project_root, "rev-parse", base or "HEAD").strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    git(project_root, "worktree", "add", "-q", "-b", branch, str(path), start)
    meta.write_text(json.dumps({"base": start, "branch": branch}))
    return Workspace(path, "worktree", start, branch)


def add_mounts(ws: Workspace, project_root: Path, mounts: list[Mount]) -> None:
    """Copy each mount's source into the workspace; read-only ones lose write bits and
    are fingerprinted so a visit that changes them is caught (root ignores mode bits)."""
    ws.mount_specs = list(mounts)
    for mount in mounts:
        source = inside(project_root, mount.source.removeprefix("./") or ".")
        rel = (mount.target or mount.source).lstrip("/").removeprefix("./") or Path(
            mount.source
        ).name
        target = inside(ws.path, rel)
        if not target.exists():
            if source.is_dir():
                shutil.copytree(source, target, symlinks=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
        readonly = mount.mode == "readonly"
        if readonly:
            for item in [target, *target.rglob("*")] if target.is_dir() else [target]:
                if not item.is_symlink():
                    item.chmod(item.stat().st_mode & ~0o222)
        ws.mounts.append(MountRecord(rel, readonly, _digest(target)))


def restore_mounts(ws: Workspace, project_root: Path) -> None:
    """Put read-only mounts back as they were in the project."""
    for record in ws.mounts:
        if not record.readonly:
            continue
        target = ws.path / record.target
        if target.is_dir():
            for item in [target, *target.rglob("*")]:
                if not item.is_symlink():
                    item.chmod(item.stat().st_mode | 0o200)
            shutil.rmtree(target)
        elif target.exists():
            target.chmod(target.stat().st_mode | 0o200)
            target.unlink()
    ws.mounts = []
    add_mounts(ws, project_root, ws.mount_specs)


__all__ = [
    "Workspace",
    "WorkspaceError",
    "add_mounts",
    "git",
    "open_directory",
    "open_worktree",
    "restore_mounts",
]
