"""Checkouts of a task's repository: where the pipeline works, and where it is graded.

A checkout is the tree at `base_commit` (from `git archive`) and nothing else: no
history to look the fix up in (a mutant's parent is its fix). The pipeline's
workspace gets one commit of that tree, the base its diff is taken against; a
grading checkout is plain files with only that diff applied.
"""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

from swell.errors import SwellError

# fixed so the same tree always makes the same commit (docs/bench.md)
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "swell bench",
    "GIT_AUTHOR_EMAIL": "bench@swell.invalid",
    "GIT_COMMITTER_NAME": "swell bench",
    "GIT_COMMITTER_EMAIL": "bench@swell.invalid",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+0000",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+0000",
}
GIT_TIMEOUT = 300.0


class CheckoutError(SwellError):
    """A repository or commit that cannot be checked out, or a patch that does not apply."""


def git(
    cwd: Path, *args: str, data: bytes | None = None, env: dict[str, str] | None = None
) -> bytes:
    """Run git quietly (no hooks, no prompts); CheckoutError with its words on failure."""
    full = {**os.environ, "GIT_TERMINAL_PROMPT": "0", **GIT_IDENTITY, **(env or {})}
    try:
        done = subprocess.run(
            ["git", "-c", "core.hooksPath=/dev/null", "-c", "commit.gpgsign=false", *args],
            cwd=cwd,
            input=data,
            capture_output=True,
            env=full,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CheckoutError(f"git {args[0]} in {cwd}: {exc}") from None
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip() or f"exit {done.returncode}"
        raise CheckoutError(f"git {args[0]} in {cwd}: {said}")
    return done.stdout


def source_repo(location: str, cache: Path, commit: str) -> Path:
    """The git repository to read `commit` from: a local one as is, a URL's bare clone
    kept under `cache` (cloned once, fetched when the commit is missing)."""
    if "://" not in location and not location.startswith("git@"):
        path = Path(location)
        if not path.is_dir():
            raise CheckoutError(f"repository {location} does not exist")
        _need(path, commit, location)
        return path
    mirror = cache / (hashlib.sha256(location.encode()).hexdigest()[:16] + ".git")
    if not mirror.is_dir():
        cache.mkdir(parents=True, exist_ok=True)
        git(cache, "clone", "--mirror", "--quiet", location, str(mirror))  # every ref
    if not _has(mirror, commit):
        git(mirror, "fetch", "--quiet", "origin", commit)
    _need(mirror, commit, location)
    return mirror


def _has(repo: Path, commit: str) -> bool:
    try:
        git(repo, "cat-file", "-e", f"{commit}^{{commit}}")
    except CheckoutError:
        return False
    return True


def _need(repo: Path, commit: str, location: str) -> None:
    if not _has(repo, commit):
        raise CheckoutError(
            f"repository {location} has no commit {commit} "
            "(a shipped dataset's repository is built by `make bench-data`: docs/bench.md)"
        )


@dataclass(frozen=True)
class Tree:
    """The files of a commit, as the tar `git archive` writes (kept to extract again)."""

    data: bytes

    @classmethod
    def of(cls, repo: Path, commit: str) -> Tree:
        return cls(git(repo, "archive", "--format=tar", commit))

    def extract(self, dest: Path, only: set[str] | None = None) -> None:
        """Write the tree (`only`: those paths) into `dest`."""
        dest.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(self.data)) as tar:
            members = [m for m in tar.getmembers() if only is None or m.name in only]
            tar.extractall(dest, members=members, filter="data")


def make_workspace(tree: Tree, dest: Path) -> str:
    """The pipeline's workspace: the tree, one commit of it; returns that commit."""
    tree.extract(dest)
    git(dest, "init", "--quiet", "--template=")
    git(dest, "add", "-A")
    git(dest, "commit", "--quiet", "--no-verify", "--allow-empty", "-m", "swell bench: base")
    return git(dest, "rev-parse", "HEAD").decode().strip()


def workspace_diff(workspace: Path, base: str) -> str:
    """Everything the pipeline changed since `base`, committed or not (new files too,
    ignored ones not), as a patch `git apply` takes; "" when nothing changed. The run
    is over: its index is the diff's (two git processes, not three)."""
    if not (workspace / ".git").is_dir():
        return ""
    git(workspace, "add", "-A")
    return git(workspace, "diff", "--cached", "--binary", base).decode("utf-8", "replace")


def apply_patch(checkout: Path, patch: str) -> None:
    """Apply a patch to plain files; CheckoutError says why it does not apply."""
    if not patch.strip():
        return
    # not a repository: keep git from finding one around it (the project's own)
    outside = {"GIT_CEILING_DIRECTORIES": str(checkout.parent)}
    git(checkout, "apply", "--whitespace=nowarn", "-", data=patch.encode(), env=outside)
