"""Checkpoints: each visit's workspace tree, committed into swell's own repository.

One bare repository per project state (`.swell/checkpoints.git`) holds every run's
checkpoints, so identical files are stored once across visits, runs and forks. A
visit's checkpoint is a commit of the workspace's tree (made with plumbing: `add`
into a swell-owned index file, `write-tree`, `commit-tree`) under the hidden ref
`refs/swell/RUN/STEP/VISIT`; its parent is the workspace's previous checkpoint, kept
at `refs/swell/RUN/tip/KEY`. Nothing of the workspace's own git state is touched:
git runs with `--git-dir` on this repository and `--work-tree` on the workspace, so
the workspace's branch, index and HEAD (and a `.git` inside it, which git never adds)
stay as the step left them.

What is kept follows the workspace's own rules: files its `.gitignore`s (and the
user's global excludes) ignore are not in a checkpoint; every other file is, however
large (stored once per content). The repository is swell's own: it configures no
filters, hooks or fsmonitor, so a workspace's `.gitattributes` can run nothing.

A workspace is checkpointed without a git process: its tree, new blobs and the
commit are written as loose objects in this process (treescan.py, gitobjects.py), the
same objects git would write, looking only at what changed (the hashes kept on disk,
statcache.py; the directories inotify names, watch.py); a visit that changed nothing
writes nothing (the tree equals the previous checkpoint's, so the previous commit is
the visit's). git does it (`add`, `write-tree`, `commit-tree`) for what that cannot
handle (treescan.Fallback). What a run's process knows is the run's `Memory`.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from swell.workspace import ignores
from swell.workspace.gitobjects import ObjectWriter, commit_body, sha1_repository
from swell.workspace.statcache import StatFile, load
from swell.workspace.treescan import Budget, Fallback, NotCheap, StatCache
from swell.workspace.treescan import write_tree as scan_tree
from swell.workspace.watch import Watch
from swell.workspace.workspace import WorkspaceError

REPO = "checkpoints.git"  # in the project's state directory
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
_ENV = {
    "GIT_AUTHOR_NAME": "swell",
    "GIT_AUTHOR_EMAIL": "swell@localhost",
    "GIT_COMMITTER_NAME": "swell",
    "GIT_COMMITTER_EMAIL": "swell@localhost",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    # a checkpoint's commit is its tree, parent and message alone: the same work gives
    # the same commit (a fork that does what its origin did has the origin's commits)
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z",
}
_OPTIONS = (
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.autocrlf=false",
    "-c",
    "core.untrackedCache=true",
    "-c",
    "gc.auto=0",
)
_COMMIT = re.compile(r"[0-9a-f]{40,64}")
SCAN_LIMIT = 2000  # entries of a work tree git takes that are checked by stat data here
RACY_NS = 100_000_000  # a change this recent may not show in a file's times yet


@dataclass(frozen=True)
class _Scan:
    """The stat data of every entry of a small work tree (its own `.git` left out),
    taken at `at`: when a later scan finds the same, nothing changed. An entry changed
    within RACY_NS of the scan could change again without its times showing it (the
    kernel's clock ticks coarsely), so such a scan is never trusted (git's "racy"
    entries)."""

    entries: tuple[tuple[str, int, int, int, int, int], ...]
    racy: bool

    @classmethod
    def of(cls, root: Path) -> _Scan | None:
        at = time.time_ns()
        found: list[tuple[str, int, int, int, int, int]] = []
        stack, newest = [str(root)], 0
        while stack:
            try:
                with os.scandir(stack.pop()) as listing:
                    for entry in listing:
                        if entry.name == ".git" and os.path.dirname(entry.path) == str(root):
                            continue
                        st = entry.stat(follow_symlinks=False)
                        found.append(
                            (
                                entry.path,
                                st.st_mode,
                                st.st_size,
                                st.st_mtime_ns,
                                st.st_ctime_ns,
                                st.st_ino,
                            )
                        )
                        newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
                        if len(found) > SCAN_LIMIT:
                            return None
                        if stat.S_ISDIR(st.st_mode):
                            stack.append(entry.path)
            except OSError:
                return None
        return cls(tuple(sorted(found)), racy=newest >= at - RACY_NS)

    def same_as(self, other: _Scan | None) -> bool:
        return other is not None and not other.racy and other.entries == self.entries


RETRY_AFTER = 20  # a workspace git had to take is tried here again this often
# files a workspace has before it is watched (inotify instances are few: 128 a user by
# default; a smaller workspace is stat'ed whole in well under a millisecond a file)
WATCH_FROM = 1000


@dataclass
class _Memo:
    """What this process knows of one workspace's checkpoints (by swell's index of it)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    cache: StatCache | None = None  # the in-process path's hashes (loaded from `stat_file`)
    stat_file: StatFile | None = None
    watch: Watch | None = None
    watch_tried: bool = False
    written: str | None = None  # the tree git last wrote from the index
    scan: _Scan | None = None  # the stat data of the work tree then
    stale: bool = False  # the index is behind an in-process checkpoint: git starts afresh
    by_git: int = 0  # checkpoints left to git before trying here again
    in_thread: int = 0  # checkpoints taken in a thread before trying on the loop again


class Memory:
    """What a run's process knows of its checkpoints: one per run (the run's
    `Workspaces` hold it), handed to every `Checkpoints` that run uses; nothing of
    it is global, so two runs in one process never share a cache."""

    def __init__(self, watch_from: int = WATCH_FROM) -> None:
        self.watch_from = watch_from
        self._guard = threading.Lock()
        self._memos: dict[Path, _Memo] = {}  # index -> its workspace's memo
        self._writers: dict[Path, ObjectWriter] = {}
        self._sha1: dict[Path, bool] = {}
        self._excludes: list[ignores.Rules | None] = []  # the global excludes, read once
        self.tips: dict[tuple[Path, str, str], tuple[str, str]] = {}  # (repo, run, key) ->
        self.ready: set[Path] = set()  # repositories known to exist

    def memo(self, index: Path) -> _Memo:
        with self._guard:
            return self._memos.setdefault(index, _Memo())

    def writer(self, repo: Path) -> ObjectWriter:
        """The one writer of `repo` for this run (it remembers what is there)."""
        with self._guard:
            return self._writers.setdefault(repo, ObjectWriter(repo))

    def sha1(self, repo: Path) -> bool:
        with self._guard:
            if repo not in self._sha1:
                self._sha1[repo] = sha1_repository(repo)
            return self._sha1[repo]

    def global_rules(self) -> ignores.Rules | None:
        with self._guard:
            if not self._excludes:
                self._excludes.append(_global_rules())
            return self._excludes[0]


def _may_set_files(config: Path) -> bool:
    """Whether the git config file `config` may name an excludes or attributes file:
    it mentions one, or includes other files. A config of only a user's name and
    email (the usual one) does not, and git is not asked (a process, each run)."""
    try:
        text = config.read_bytes().lower()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return False
    except OSError:
        return True
    return any(word in text for word in (b"excludesfile", b"attributesfile", b"include"))


def _global_rules() -> ignores.Rules | None:
    """The user's global excludes (`core.excludesFile`, else `~/.config/git/ignore`) as
    rules, or None when only git can apply them or a global attributes file is set.
    git's config is asked (one process) only when a global config file may set them."""
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "git"
    configs = [Path.home() / ".gitconfig", xdg / "config"]
    if os.environ.get("GIT_CONFIG_GLOBAL"):
        configs.append(Path(os.environ["GIT_CONFIG_GLOBAL"]))
    values: dict[str, str] = {}
    asked = any(_may_set_files(p) for p in configs) or "GIT_CONFIG_PARAMETERS" in os.environ
    if asked or "GIT_CONFIG_COUNT" in os.environ:
        env = {**os.environ, **_ENV}
        regex = r"^core\.(excludesfile|attributesfile)$"
        found = subprocess.run(
            ["git", "config", "--get-regexp", regex], capture_output=True, text=True, env=env
        )
        for line in found.stdout.splitlines():
            name, _, value = line.partition(" ")
            values[name.lower()] = os.path.expanduser(value)
    rules: ignores.Rules | None = ()
    if "core.attributesfile" in values or (xdg / "attributes").is_file():
        rules = None
    else:
        try:
            text = Path(values.get("core.excludesfile") or xdg / "ignore").read_text(
                encoding="utf-8", errors="surrogateescape"
            )
            rules = ignores.parse(text)
        except FileNotFoundError:
            rules = ()
        except (OSError, ignores.Unsupported):
            rules = None
    return rules


@dataclass(frozen=True)
class Snapshot:
    commit: str
    tree: str
    parent: str | None
    changed: bool  # False: the tree is the previous checkpoint's (no new commit)


def repo_of(state_dir: Path) -> Path:
    return state_dir / REPO


def visit_ref(run_id: str, step: str, visit: int) -> str:
    return f"refs/swell/{run_id}/{step}/{visit}"


def tip_ref(run_id: str, key: str) -> str:
    return f"refs/swell/{run_id}/tip/{key}"


class Checkpoints:
    """The repository at `repo` (created on first use), with what the run's process
    knows of it (`memory`; a fresh one by default: nothing known)."""

    def __init__(self, repo: Path, memory: Memory | None = None) -> None:
        self.repo = repo.absolute()
        self.memory = memory or Memory()

    def git(
        self,
        *args: str,
        work_tree: Path | None = None,
        index: Path | None = None,
        ok: int = 0,
        input: str | None = None,
    ) -> str:
        """git on this repository (and `work_tree` through `index`), `input` on its
        stdin; WorkspaceError with git's message when it fails."""
        env = {**os.environ, **_ENV}
        env.pop("GIT_DIR", None)
        env.pop("GIT_WORK_TREE", None)
        if index is not None:
            env["GIT_INDEX_FILE"] = str(index.absolute())
        where = ["--git-dir", str(self.repo)]
        if work_tree is not None:
            work_tree = work_tree.absolute()
            where += ["--work-tree", str(work_tree)]
        try:
            proc = subprocess.run(
                ["git", *where, *_OPTIONS, *args],
                cwd=work_tree or self.repo,
                capture_output=True,
                text=True,
                env=env,
                input=input,
                stdin=None if input is not None else subprocess.DEVNULL,
            )
        except FileNotFoundError:
            raise WorkspaceError("git is not installed; checkpoints need it") from None
        if proc.returncode not in (0, ok):
            raise WorkspaceError(f"git {args[0]} failed: {proc.stderr.strip()}")
        return proc.stdout

    def ensure(self) -> None:
        """Create the bare repository if it is not there: made beside it and renamed
        into place, so a killed process never leaves half of one."""
        if (self.repo / "HEAD").is_file():
            return
        self.repo.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=self.repo.parent, prefix=".checkpoints-") as tmp:
            made = Path(tmp) / "repo.git"
            subprocess.run(
                ["git", "init", "-q", "--bare", "--template=", str(made)],
                check=True,
                capture_output=True,
                env={**os.environ, **_ENV},
                stdin=subprocess.DEVNULL,
            )
            try:
                os.rename(made, self.repo)
            except OSError:
                if not (self.repo / "HEAD").is_file():  # not another process that was first
                    raise

    def resolve(self, ref: str) -> str | None:
        """The commit `ref` names, or None. A checkpoint ref is a loose ref file (they
        are never packed): read here when it, or no packed-refs file, settles it."""
        if ref.startswith("refs/swell/") and ".." not in ref:
            try:
                text = (self.repo / ref).read_text().strip()
                if _COMMIT.fullmatch(text):
                    return text
            except FileNotFoundError:
                if not (self.repo / "packed-refs").exists():
                    return None
            except OSError:
                pass
        out = self.git("rev-parse", "-q", "--verify", f"{ref}^{{commit}}", ok=1).strip()
        return out if _COMMIT.fullmatch(out) else None

    def tree_of(self, commit: str) -> str:
        found = self.memory.writer(self.repo).read(commit) if _COMMIT.fullmatch(commit) else None
        if found is not None and found[0] == b"commit" and found[1].startswith(b"tree "):
            return found[1][5:].split(b"\n", 1)[0].decode()
        return self.git("rev-parse", f"{commit}^{{tree}}").strip()

    def write_tree(self, work_tree: Path, index: Path, budget: Budget | None = None) -> str:
        """The tree of `work_tree` as the checkpoint would keep it (through `index`,
        swell's own: the workspace's index is never read or written). In this process
        when it can (treescan.py); else by git, where a small work tree whose every
        entry has the stat data it had when git last wrote a tree from `index` is
        that tree, without a git process (`_Scan`), and when `add` changed nothing in
        such an index, it is that tree too: one git process.

        With `budget` (the caller is the event loop), only a scan in this process that
        stays within it, of a workspace scanned here before, is done; anything more (a
        first scan, git, a big read, a checkpoint of it under way in a thread) raises
        `NotCheap` with nothing written, and the caller goes to a thread."""
        index.parent.mkdir(parents=True, exist_ok=True)
        memo = self.memory.memo(index)
        if budget is not None:
            return self._cheaply(work_tree, index, memo, budget)
        with memo.lock:
            tree = self._in_process(work_tree, index, memo)
            if tree is not None:
                return tree
            if memo.stale:  # it may track files now ignored: git adds afresh
                memo.stale, memo.written, memo.scan = False, None, None
                index.unlink(missing_ok=True)
            known = memo.written
            scan = _Scan.of(work_tree)
            if known is not None and scan is not None and scan.same_as(memo.scan):
                return known
            added = self.git(
                "add", "-v", "--all", "--ignore-errors", ".", work_tree=work_tree, index=index, ok=1
            )
            if added or known is None:
                known = self.git("write-tree", work_tree=work_tree, index=index).strip()
                memo.written = known
            memo.scan = scan
            return known

    def _cheaply(self, work_tree: Path, index: Path, memo: _Memo, budget: Budget) -> str:
        if memo.in_thread > 0:  # it did not fit lately: not a wasted walk each time
            memo.in_thread -= 1
            raise NotCheap("lately too big")
        if memo.cache is None or memo.by_git > 0 or not memo.lock.acquire(blocking=False):
            raise NotCheap("not scanned here yet, git's, or being scanned")
        try:
            tree = self._in_process(work_tree, index, memo, budget)
        except NotCheap:
            memo.in_thread = RETRY_AFTER
            raise
        finally:
            memo.lock.release()
        if tree is None:
            raise NotCheap("git takes it")
        return tree

    def _in_process(
        self, work_tree: Path, index: Path, memo: _Memo, budget: Budget | None = None
    ) -> str | None:
        """The tree written without git (treescan.py), or None when git must write it."""
        excludes = self.memory.global_rules()
        if excludes is None or not self.memory.sha1(self.repo):
            return None
        if memo.by_git > 0:  # not a walk of the workspace each time, only to give up
            memo.by_git -= 1
            return None
        if memo.cache is None or memo.stat_file is None:
            memo.stat_file = StatFile(index.with_suffix(".stat"))
            memo.cache = StatCache(files=load(memo.stat_file.path))
        objects = self.memory.writer(self.repo)
        try:
            tree = scan_tree(
                work_tree.absolute(), memo.cache, objects, excludes, memo.watch, budget
            )
        except Fallback:
            memo.by_git, memo.cache = RETRY_AFTER, None
            return None
        memo.stale = True
        if not memo.watch_tried and len(memo.cache.files) >= self.memory.watch_from:
            memo.watch, memo.watch_tried = Watch.open(), True  # from the next checkpoint on
        if memo.cache.changed:
            memo.stat_file.record(memo.cache.files, memo.cache.changed)
            memo.cache.changed = {}
        return tree

    def snapshot(
        self,
        work_tree: Path,
        index: Path,
        *,
        refs: list[str],
        message: str,
        parent: str | None,
        parent_tree: str | None,
        budget: Budget | None = None,
    ) -> Snapshot:
        """Commit `work_tree` on top of `parent` and point each of `refs` at it; when
        its tree is `parent_tree`, `parent` is the checkpoint and nothing is written.
        `budget`: see `write_tree`."""
        tree = self.write_tree(work_tree, index, budget)
        if parent is not None and tree == parent_tree:
            return Snapshot(parent, tree, parent, changed=False)
        if self.memory.sha1(self.repo):
            commit = self.memory.writer(self.repo).write(
                b"commit", commit_body(tree, parent, message)
            )
        else:
            args = ["commit-tree", tree, "-m", message]
            if parent is not None:
                args += ["-p", parent]
            commit = self.git(*args).strip()
        for ref in refs:
            self.write_ref(ref, commit)
        return Snapshot(commit, tree, parent, changed=True)

    def write_ref(self, ref: str, commit: str) -> None:
        """Point the loose ref `ref` at `commit` without a git process: the file is
        written beside it and renamed into place (the repository is swell's own, its
        refs are never packed)."""
        if not ref.startswith("refs/swell/") or ".." in ref or not _COMMIT.fullmatch(commit):
            raise WorkspaceError(f"not a checkpoint ref: {ref} -> {commit}")
        path = self.repo / ref
        if _rewrite_in_place(path, f"{commit}\n".encode()):
            return
        partial = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
        try:
            partial.write_text(f"{commit}\n")
        except FileNotFoundError:  # its folder is new (or git removed it, emptied)
            path.parent.mkdir(parents=True, exist_ok=True)
            partial.write_text(f"{commit}\n")
        os.replace(partial, path)

    def refs_of(self, run_id: str) -> list[str]:
        """Every checkpoint ref of run `run_id`."""
        listed = self.git("for-each-ref", "--format=%(refname)", f"refs/swell/{run_id}/")
        return listed.split()

    def delete_refs(self, refs: list[str]) -> None:
        """Delete `refs`, in one git process."""
        if refs:
            self._refs_stdin("".join(f"delete {ref}\n" for ref in refs))

    def update_refs(self, refs: dict[str, str]) -> None:
        """Point each ref at its commit, in one git process."""
        self._refs_stdin("".join(f"update {ref} {commit}\n" for ref, commit in refs.items()))

    def _refs_stdin(self, lines: str) -> None:
        env = {**os.environ, **_ENV}
        proc = subprocess.run(
            ["git", "--git-dir", str(self.repo), "update-ref", "--stdin"],
            input=lines,
            capture_output=True,
            text=True,
            env=env,
        )
        if proc.returncode != 0:
            raise WorkspaceError(f"git update-ref failed: {proc.stderr.strip()}")

    def restore(self, work_tree: Path, index: Path, commit: str) -> None:
        """Make `work_tree` hold exactly `commit`'s tree: its files written, files it
        does not have removed (ignored ones are left, as they never were in it)."""
        index.parent.mkdir(parents=True, exist_ok=True)
        memo = self.memory.memo(index)
        with memo.lock:
            if memo.stale:  # it may track files since ignored: read-tree would remove them
                index.unlink(missing_ok=True)
            # what the index knew is what `read-tree -u` may remove: take it from the tree
            # as it is now, so files made since the last checkpoint go too
            self.git("add", "--all", "--ignore-errors", ".", work_tree=work_tree, index=index, ok=1)
            self.git("read-tree", "-u", "--reset", commit, work_tree=work_tree, index=index)
            # the hashes kept on disk stay true (restored files have new stat data); what
            # this process knew of the work tree's directories does not
            memo.written, memo.scan, memo.cache = None, None, None
            memo.by_git, memo.stale = 0, False
            self.git("clean", "-q", "-fd", work_tree=work_tree, index=index)

    def diff(self, old: str | None, new: str, stat: bool = False) -> str:
        """What changed from `old` (None: nothing) to `new`, as a unified diff or a stat."""
        flags = ["--no-color", "--no-ext-diff", "--no-textconv", "--find-renames"]
        if stat:
            flags.append("--stat=200")
        return self.git("diff", *flags, old or EMPTY_TREE, new)


def _rewrite_in_place(path: Path, text: bytes) -> bool:
    """Overwrite a ref file that holds a commit id of the same length with one
    `pwrite`: a workspace's tip moves every changed visit, and making a new file costs
    a directory change (over a millisecond on a busy disk) where this costs a write.
    One write of a few dozen bytes is never torn by a killed process. False: there is
    no such file (a new ref, a packed one, a symbolic one): write it anew."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        if os.fstat(fd).st_size != len(text):
            return False
        return os.pwrite(fd, text, 0) == len(text)
    finally:
        os.close(fd)


def index_path(run_dir: Path, key: str) -> Path:
    """swell's own index of one of the run's workspaces (a stat cache: a visit that
    changed nothing is checked without reading a file)."""
    return run_dir / "checkpoint" / f"{key}.index"


def workspace_key(workspace: Path, default: Path) -> str:
    """A name for a workspace within its run: `main` for the run's directory, the
    worktree's own directory name otherwise."""
    if workspace == default:
        return "main"
    return re.sub(r"[^A-Za-z0-9._-]+", "-", workspace.name).strip("-.") or "ws"


__all__ = [
    "REPO",
    "Checkpoints",
    "Memory",
    "Snapshot",
    "index_path",
    "repo_of",
    "tip_ref",
    "visit_ref",
    "workspace_key",
]
