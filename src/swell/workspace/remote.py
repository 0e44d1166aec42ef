"""Checkpoints on a run's shared remote (docs/time-travel.md, "Across hosts").

A run whose workspace moves between hosts (the Temporal executor's workspace remote)
pushes each visit's checkpoint to that remote, under a namespace of its own
(`refs/swell-checkpoints/RUN/STEP/VISIT`, and `.../RUN/tip/KEY` for the newest), so
the run has one chain of checkpoints whatever host ran each visit, and `swell diff`,
`swell fork` and `swell rewind` on any host fetch the checkpoints they miss.

What the next visit starts from is the checkpoint with the files it leaves out (the
workspace's ignored files, files over the size cap) carried beside it: the
**hand-over commit**, whose tree is the whole work tree and whose parent is the
checkpoint, named in its message (`swell-checkpoint: COMMIT`). A worker that takes the
run over resets its work tree to the hand-over's tree, and takes the checkpoint it
names as the parent of its own visit's checkpoint. Both are made in the host's
checkpoint repository.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from swell.workspace.checkpoint import Checkpoints
from swell.workspace.workspace import WorkspaceError

NAMESPACE = "refs/swell-checkpoints"  # on the remote; `refs/swell/RUN/STEP/VISIT/ATTEMPT` is taken
TRAILER = "swell-checkpoint: "
_SHA = re.compile(r"[0-9a-f]{40,64}")
_SECRET_USERS = ("http", "https", "ftp", "ftps")  # a user there is often a token


def remote_ref(local: str) -> str:
    """The remote's name for the checkpoint ref `refs/swell/...`."""
    return NAMESPACE + "/" + local.removeprefix("refs/swell/")


def public(remote: str) -> str:
    """`remote` as it may be recorded: without a password, a token as its user, a query
    or a fragment (git asks its credential helper for those on the reading host)."""
    parts = urlsplit(remote)
    if not parts.scheme or not parts.netloc:
        return remote  # a path, or `user@host:path` (ssh: no secret in it)
    host = parts.netloc.rpartition("@")[2]
    user = parts.username if parts.scheme not in _SECRET_USERS else None
    netloc = f"{user}@{host}" if user and parts.password is None else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def commit(repo: Checkpoints, work_tree: Path, index: Path, checkpoint: str | None) -> str:
    """The hand-over commit of `work_tree`: every file in it, ignored ones too (through
    `index`, swell's own), on top of `checkpoint` (None: no checkpoint was taken)."""
    index.parent.mkdir(parents=True, exist_ok=True)
    repo.git("add", "--all", "--force", ".", work_tree=work_tree, index=index)
    tree = repo.git("write-tree", work_tree=work_tree, index=index).strip()
    message = f"swell: the workspace, ignored files too\n\n{TRAILER}{checkpoint or 'none'}\n"
    args = ["commit-tree", tree, "-m", message]
    if checkpoint is not None:
        args += ["-p", checkpoint]
    return repo.git(*args).strip()


def checkpoint_of(repo: Checkpoints, handed: str, remote: str) -> str | None:
    """The checkpoint the hand-over commit `handed` carries (fetched from `remote` when
    this host lacks it): None when it names none; a commit that is no hand-over (a
    fork's start, a checkpoint itself) is its own checkpoint."""
    body = _commit_text(repo, handed)
    if body is None:
        fetch(repo, remote, [handed])
        body = _commit_text(repo, handed)
        if body is None:
            raise WorkspaceError(f"the workspace commit {handed} is not on {public(remote)}")
    for line in body.splitlines():
        if line.startswith(TRAILER):
            named = line.removeprefix(TRAILER).strip()
            return named if _SHA.fullmatch(named) else None
    return handed


def _commit_text(repo: Checkpoints, oid: str) -> str | None:
    found = repo.memory.writer(repo.repo).read(oid)  # a loose object: no git process
    if found is not None and found[0] == b"commit":
        return found[1].decode("utf-8", "replace")
    if not missing(repo, [oid]):
        return repo.git("cat-file", "commit", oid)
    return None


def missing(repo: Checkpoints, commits: list[str]) -> list[str]:
    """Those of `commits` this host's checkpoint repository does not have."""
    wanted = list(dict.fromkeys(c for c in commits if _SHA.fullmatch(c)))
    if not wanted:
        return []
    repo.ensure()
    out = repo.git("cat-file", "--batch-check", input="".join(f"{c}\n" for c in wanted))
    return [
        c for c, line in zip(wanted, out.splitlines(), strict=False) if line.endswith("missing")
    ]


def fetch(repo: Checkpoints, remote: str, commits: list[str]) -> None:
    """Fetch `commits` (and what they reach) from `remote` into the checkpoint
    repository, by id: no ref of the remote's is written here."""
    wanted = [c for c in dict.fromkeys(commits) if _SHA.fullmatch(c)]
    if remote.startswith("-"):  # read from an event: never let it be an option to git
        raise WorkspaceError(f"the run's remote {remote!r} is not a repository")
    if wanted:
        repo.ensure()
        repo.git("fetch", "-q", "--no-tags", "--no-write-fetch-head", remote, *wanted)


def push(repo: Checkpoints, remote: str, refs: dict[str, str]) -> None:
    """Point each of the remote's `refs` at its commit (forced: a retried visit's own
    replaces what an attempt the workflow never heard of pushed)."""
    if refs:
        repo.git("push", "-q", "--no-verify", remote, *(f"+{c}:{r}" for r, c in refs.items()))


__all__ = [
    "NAMESPACE",
    "TRAILER",
    "checkpoint_of",
    "commit",
    "fetch",
    "missing",
    "public",
    "push",
    "remote_ref",
]
