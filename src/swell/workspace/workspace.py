"""Where a step works: the run's directory, or a git worktree of the project.

Every workspace can say what changed in it since it was created (`diff`,
`changed_files`): a directory workspace is made a git repository with an empty
first commit for that purpose, a worktree remembers the commit it branched from.
Read-only mounts are copies of project paths that are checked after each visit.

A step can change anything in its workspace, `.git` included: every file operation
here goes through `safe` (no link is followed out of the workspace), and git is run
on the repository and work tree swell chose, with nothing the workspace configures
(fsmonitor, filters, textconv, external diff) able to run a command.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from swell.errors import SwellError
from swell.manifest.models import Mount
from swell.workspace import safe
from swell.workspace.base_repo import BASE_MESSAGE, copy_base_repo
from swell.workspace.mounts import copy_source
from swell.workspace.paths import PathEscape, inside

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "swell",
    "GIT_AUTHOR_EMAIL": "swell@localhost",
    "GIT_COMMITTER_NAME": "swell",
    "GIT_COMMITTER_EMAIL": "swell@localhost",
    "GIT_CONFIG_NOSYSTEM": "1",
}


class WorkspaceError(SwellError):
    """A workspace cannot be created or inspected."""


def _run_git(cwd: Path, args: tuple[str, ...], ok: tuple[int, ...] = (0,)) -> str:
    if shutil.which("git") is None:
        raise WorkspaceError("git is not installed; worktree workspaces and diffs need it")
    env = {**os.environ, **_GIT_ENV}
    proc = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL
    )
    if proc.returncode not in ok:
        raise WorkspaceError(f"git {' '.join(args)} failed in {cwd}: {proc.stderr.strip()}")
    return proc.stdout


def git(cwd: Path, *args: str) -> str:
    """Run git in `cwd`; a failure is a WorkspaceError with git's own message."""
    return _run_git(cwd, args)


# Wave's directories in a read-only mount, which a step may write (its outputs, its
# injected artifacts): never copied from the project, left out of the mount's check
STEP_DIRS = (".agents", ".wave")


@dataclass
class MountRecord:
    target: str  # relative to the workspace ("." for the workspace itself)
    readonly: bool
    digest: str
    source: Path | None = None  # what was copied (inside the project)
    only: list[str] | None = None  # `subset_from`: the files of `source` copied


@dataclass
class Workspace:
    path: Path
    kind: str  # directory | worktree
    base: str | None = None  # the commit diffs are taken against
    branch: str | None = None
    mounts: list[MountRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # warnings for the next visit to record
    git_dir: Path | None = None  # a worktree's own git directory, in the project's .git

    def git(self, *args: str) -> str:
        """git on this workspace (see `git_options`)."""
        return _run_git(self.path, (*self.git_options(), *args))

    def git_options(self) -> list[str]:
        """Options that make git work on this workspace's own repository and work tree
        (never one a `.git` link or `core.worktree` points to) and run no command the
        repository configures (fsmonitor, hooks, filters; diffs add --no-textconv and
        --no-ext-diff)."""
        if self.git_dir is not None:
            git_dir = self.git_dir
        else:
            git_dir = self.path / ".git"
            if safe.is_link(git_dir) or not git_dir.is_dir():
                raise WorkspaceError(
                    f"{git_dir} is a symbolic link or not a directory; swell will not run git on it"
                )
        where = ["--git-dir", str(git_dir), "--work-tree", str(self.path)]
        options = [*where, "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null"]
        listed = _run_git(self.path, (*where, "config", "--get-regexp", r"^filter\."), (0, 1))
        for name in sorted(
            {line.split()[0][7:].rpartition(".")[0] for line in listed.splitlines()}
        ):
            for setting in ("clean=", "smudge=", "process=", "required=false"):
                options += ["-c", f"filter.{name}.{setting}"]
        return options

    def _diff(self, *options: str, base: str | None = None) -> str:
        base = base or self.base
        if base is None:
            raise WorkspaceError(f"workspace {self.path} has no base to diff against")
        where = self.git_options()
        _run_git(self.path, (*where, "add", "--all", "--intent-to-add"))
        flags = ("--no-color", "--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty")
        return _run_git(self.path, (*where, "diff", *flags, *options, base))

    def diff(self) -> str:
        """The workspace's changes against its base, untracked files included."""
        return self._diff()

    def diff_from(self, ref: str) -> str:
        """The workspace's changes against the commit `ref` names (a review's
        `diff_base`), untracked files included. The ref is resolved to a commit first,
        so it can never be read as an option."""
        if not ref or ref.startswith("-"):
            raise WorkspaceError(f"diff base {ref!r} is not a git ref")
        try:
            commit = self.git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").strip()
        except WorkspaceError:
            raise WorkspaceError(f"diff base {ref!r} names no commit here") from None
        return self._diff(base=commit)

    def changed_files(self) -> list[str]:
        if self.base is None:
            return []
        return [line for line in self._diff("--name-only").splitlines() if line]

    def check_mounts(self) -> list[str]:
        """Read-only mounts that a visit changed (a link put anywhere on the way to one
        counts: it is never followed)."""
        problems = []
        for mount in self.mounts:
            if not mount.readonly:
                continue
            try:
                found = safe.tree_digest(safe.place(self.path, mount.target), STEP_DIRS)
                changed = found != mount.digest
            except safe.UnsafePath:
                changed = True
            if changed:
                problems.append(
                    f"the step wrote to the read-only mount {mount.target}/; it was restored"
                )
        return problems


def _slug(branch: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", branch).strip("-") or "branch"


def open_directory(path: Path) -> Workspace:
    """The run's own directory; a git repository with an empty base commit when git exists."""
    path.mkdir(parents=True, exist_ok=True)
    if shutil.which("git") is None:
        return Workspace(path, "directory")
    dot_git = path / ".git"
    if safe.is_link(dot_git) or (dot_git.exists() and not dot_git.is_dir()):
        raise WorkspaceError(
            f"{dot_git} is a symbolic link or not a directory; swell will not run git on it"
        )
    ws = Workspace(path, "directory")
    if not dot_git.exists():
        ws.base = _init(path)
        if ws.base is not None:
            return ws
    try:
        ws.base = ws.git("rev-parse", "--verify", "--quiet", "HEAD").strip()
    except WorkspaceError:  # new, or a process died between `git init` and the commit
        ws.git("commit", "-q", "--allow-empty", "--no-verify", "-m", "swell: workspace base")
        ws.base = ws.git("rev-parse", "HEAD").strip()
    return ws


def _init(path: Path) -> str | None:
    """`git init` beside the workspace, with its empty base commit, then its `.git`
    moved in whole (one rename): a process killed meanwhile leaves no half-made
    repository that a visit run again (a resumed run, a Temporal retry) would trip
    on. Returns the base commit; None when another process was first. The repository
    is new and swell's own: a copy of the one made once (`base_repo`), else plumbing
    makes it (two git processes, no hooks, no automatic maintenance)."""
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=f".{path.name}.git-") as tmp:
        here = Path(tmp)
        base = copy_base_repo(path.parent, here / ".git", _git_init)
        if base is None:
            _git_init(here)
            empty = git(here, "mktree").strip()  # not SHA-1's EMPTY_TREE: a SHA-256 repository
            base = git(here, "commit-tree", empty, "-m", BASE_MESSAGE).strip()
            head = (here / ".git" / "HEAD").read_text(encoding="utf-8").strip()
            branch = head.removeprefix("ref: ")
            safe.replace(safe.place(here / ".git", branch), f"{base}\n".encode())
        try:
            os.rename(here / ".git", path / ".git")
        except OSError:
            if not (path / ".git").is_dir():  # not another process that was first
                raise
            return None
    return base


def _git_init(where: Path) -> None:
    git(where, "init", "-q", "--template=")  # no sample hooks, nothing to copy


def _worktree_git_dir(project_root: Path, path: Path) -> Path | None:
    """The project's git directory of the worktree at `path`, found from the project's
    side (never from the `.git` file in the worktree, which a step can rewrite); None
    when the project has no such worktree."""
    common = Path(git(project_root, "rev-parse", "--git-common-dir").strip())
    registry = (project_root / common).resolve() / "worktrees"
    for entry in sorted(registry.iterdir()) if registry.is_dir() else []:
        try:
            recorded = Path((entry / "gitdir").read_text().strip())
        except OSError:
            continue
        if recorded.parent.resolve() == path.resolve():
            return entry
    return None


def open_worktree(project_root: Path, root: Path, branch: str, base: str | None) -> Workspace:
    """A worktree of the project on `branch` (new, from `base` or HEAD), reused if it exists.

    It lives in the run's directory, which steps can write: an existing one is used only
    if it is a real directory the project knows as a worktree."""
    slug = _slug(branch)
    try:
        parent = safe.make_dirs(root, "worktrees")
        meta = safe.place(root, f"worktrees/{slug}.json")
    except safe.UnsafePath as exc:
        raise WorkspaceError(f"cannot place the worktree for {branch}: {exc}") from None
    path = parent / slug
    if os.path.lexists(path):
        git_dir = None if safe.is_link(path) else _worktree_git_dir(project_root, path)
        data = _read_meta(meta) if git_dir is not None else None
        if git_dir is None or data is None:
            raise WorkspaceError(
                f"{path} is not a worktree swell created (a link, a plain directory, or its "
                f"{meta.name} is missing); refusing to use it"
            )
        return Workspace(path, "worktree", data, branch, git_dir=git_dir)
    try:
        git(project_root, "rev-parse", "--verify", "HEAD")
    except WorkspaceError:
        raise WorkspaceError(
            f"a worktree workspace needs {project_root} to be a git repository with at least one commit"
        ) from None
    start = git(project_root, "rev-parse", base or "HEAD").strip()
    git(project_root, "worktree", "add", "-q", "-b", branch, str(path), start)
    safe.replace(meta, json.dumps({"base": start, "branch": branch}).encode())
    return Workspace(path, "worktree", start, branch, git_dir=_worktree_git_dir(project_root, path))


def branch_exists(project_root: Path, branch: str) -> bool:
    """Whether the project's repository has the local branch `branch`."""
    try:
        git(project_root, "rev-parse", "--verify", "-q", f"refs/heads/{branch}")
    except WorkspaceError:
        return False
    return True


def _read_meta(meta: Path) -> str | None:
    """The base commit a worktree's metadata file records, or None."""
    try:
        fd = safe.open_regular(meta)
    except safe.UnsafePath:
        return None
    with os.fdopen(fd, "rb") as fh:
        try:
            base = json.loads(fh.read(65536)).get("base")
        except (ValueError, AttributeError):
            return None
    return base if isinstance(base, str) and re.fullmatch(r"[0-9a-f]{40,64}", base) else None


def _copy_whole(source: Path, target: Path, only: list[str] | None) -> None:
    """Copy a mount under a name of its own, then rename it into place: a copy cut
    short (a full disk) leaves no half a mount that a resumed run would take as done."""
    partial = target.with_name(f".{target.name}.swell-partial")
    safe.remove(partial)  # what a copy cut short by a killed swell left
    try:
        copy_source(source, partial, only)
        os.rename(partial, target)
    except BaseException:
        with contextlib.suppress(OSError):
            safe.remove(partial)  # its space back, on a full disk
        raise


def add_mounts(
    ws: Workspace,
    project_root: Path,
    mounts: list[Mount],
    *,
    repair: bool = False,
    subsets: dict[int, list[str]] | None = None,
) -> None:
    """Copy each mount's source into the workspace (`mounts.copy_source`: Wave's
    skip-list, never the workspace itself); read-only ones are always fresh copies,
    lose their write bits and are fingerprinted so a visit that changes them is caught
    (root ignores mode bits). `subsets`: mount index -> the only files to copy
    (`subset_from`). A mount whose target is already in the workspace is not copied
    again. A link where a mount goes is replaced; a link on the way there that leaves
    the workspace is an error, or with `repair` replaced too."""
    done = {m.target for m in ws.mounts}
    for index, mount in enumerate(mounts):
        try:
            source = inside(project_root, mount.source.removeprefix("./") or ".")
        except PathEscape:
            raise WorkspaceError(f"mount source {mount.source!r} is outside the project") from None
        rel = mount_target(mount)
        if rel in done:
            continue
        readonly = mount.mode == "readonly"
        if rel == ".":
            if readonly:
                raise WorkspaceError(
                    f"mount {mount.source!r}: a read-only mount needs a `target` of its own"
                )
            target = ws.path
        else:
            try:
                target = safe.place(ws.path, rel, repair=repair)
            except safe.UnsafePath as exc:
                raise WorkspaceError(f"mount target {rel!r}: {exc}") from None
            if readonly or safe.is_link(target):
                safe.remove(target)
        only = (subsets or {}).get(index)
        if rel == ".":
            copy_source(source, target, only)
        elif not os.path.lexists(target):
            _copy_whole(source, target, only)
        if readonly:
            _seal(target)
        done.add(rel)
        digest = safe.tree_digest(target, STEP_DIRS)
        ws.mounts.append(MountRecord(rel, readonly, digest, source, only))


def _seal(target: Path) -> None:
    """Make a read-only mount's copy read-only, all but Wave's own directory in it
    (`.agents/`, never copied from the project): a step that runs in the mount writes
    its outputs there, as it does under Wave (docs/manifest.md, "Workspaces")."""
    if target.is_dir() and not os.path.lexists(target / STEP_DIRS[0]):
        safe.make_dirs(target, STEP_DIRS[0])
    safe.set_writable(target, False)
    if (target / STEP_DIRS[0]).is_dir() and not safe.is_link(target / STEP_DIRS[0]):
        safe.set_writable(target / STEP_DIRS[0], True)


def mount_target(mount: Mount) -> str:
    """Where a mount goes, relative to the workspace ("." for the workspace itself).
    Wave drops a leading `/` from `target`; without one, the source's own path is used."""
    if mount.target is not None:
        rel = mount.target.lstrip("/").removeprefix("./").rstrip("/")
        return rel or "."
    rel = mount.source.lstrip("/").removeprefix("./").rstrip("/")
    return rel if rel not in ("", ".") else "."


def restore_mounts(ws: Workspace, project_root: Path) -> None:
    """Put read-only mounts back as they were in the project (links a step put on the
    way to them are removed, never followed)."""
    for record in ws.mounts:
        if not record.readonly or record.source is None:
            continue
        try:
            target = safe.place(ws.path, record.target, repair=True)
        except safe.UnsafePath as exc:
            raise WorkspaceError(f"mount target {record.target!r}: {exc}") from None
        safe.remove(target)
        copy_source(record.source, target, record.only)
        _seal(target)
        record.digest = safe.tree_digest(target, STEP_DIRS)


__all__ = [
    "Workspace",
    "WorkspaceError",
    "add_mounts",
    "branch_exists",
    "git",
    "mount_target",
    "open_directory",
    "open_worktree",
    "restore_mounts",
]
