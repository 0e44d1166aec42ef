"""A directory workspace's repository, copied from one made once (docs/performance.md).

Every directory workspace is a git repository whose first commit is empty (its base,
what its diffs are taken against). `git init` and `git commit-tree` were two git
processes in every run, about as long as a one-step command pipeline's own step. The
repository is the same each time: git makes it once per workspaces directory, its
base commit is written in this process (`gitobjects`, a fixed author and date, so the
base is the same commit everywhere), and each workspace gets a copy of it. A SHA-1
repository only: where `git init` makes another kind, each workspace is made by git
as before (None here)."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from swell.workspace import gitobjects, safe

TEMPLATE = ".base.git"  # in the workspaces directory, beside the workspaces
BASE_MESSAGE = "swell: workspace base"
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's tree with nothing in it


def copy_base_repo(parent: Path, dest: Path, init: Callable[[Path], None]) -> str | None:
    """Put a copy of `parent`'s base repository at `dest` (a `.git` not there yet),
    made first with `init(directory)` (`git init` there) when it is missing. Returns
    the base commit; None when there is no such repository to copy."""
    template = parent / TEMPLATE
    base = _base_of(template)
    if base is None:
        base = _make(parent, template, init)
        if base is None:
            return None
    # fresh times, as `git init` gives (copy2 would date the copy to the template)
    shutil.copytree(template, dest, symlinks=True, copy_function=shutil.copy)
    return base


def _base_of(template: Path) -> str | None:
    """The base commit `template` holds, None if it is not a usable template."""
    if safe.is_link(template):
        return None
    try:
        head = (template / "HEAD").read_text(encoding="utf-8").strip()
        ref = head.removeprefix("ref: ")
        if ref == head or ".." in ref or not gitobjects.sha1_repository(template):
            return None
        base = (template / ref).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return (
        base if len(base) == 40 and (template / "objects" / base[:2] / base[2:]).is_file() else None
    )


def _make(parent: Path, template: Path, init: Callable[[Path], None]) -> str | None:
    """Make the template beside where it goes, then rename it into place (a process
    killed meanwhile leaves none half made; where another was first, that one stays)."""
    with tempfile.TemporaryDirectory(dir=parent, prefix=".base-") as tmp:
        here = Path(tmp)
        init(here)
        repo = here / ".git"
        if not gitobjects.sha1_repository(repo):
            return None
        body = gitobjects.commit_body(EMPTY_TREE, None, BASE_MESSAGE)
        base = gitobjects.writer(repo).write(b"commit", body)
        head = (repo / "HEAD").read_text(encoding="utf-8").strip()
        safe.replace(safe.place(repo, head.removeprefix("ref: ")), f"{base}\n".encode())
        with contextlib.suppress(OSError):
            repo.rename(template)
    return _base_of(template)


__all__ = ["TEMPLATE", "copy_base_repo"]
