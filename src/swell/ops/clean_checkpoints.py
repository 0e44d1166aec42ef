"""What `swell clean` removes of time travel (docs/time-travel.md): a cleaned run's
checkpoint refs (`refs/swell/RUN/*` in `.swell/checkpoints.git`), its kept artifact
versions (`.swell/runs/RUN/versions/`) and its checkpoint caches
(`.swell/runs/RUN/checkpoint/`); then the checkpoint repository is garbage collected,
so what only those runs kept leaves the disk. Other runs' checkpoints stay whole: an
object any ref reaches is kept, and a fork of a kept run still starts from it.

Pruning: with no run executing, objects no ref reaches go at once (`--prune=now`);
while a run executes, only those unreached for more than PRUNE_GRACE (a checkpoint
being written has objects no ref reaches yet). A pruned object could still be named
by the stat caches and index files of the runs not cleaned (a checkpoint killed
between hashing a file and committing it), so those are dropped too: each such
workspace's next checkpoint reads its files once more. Refs are never packed (swell
reads them as files)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from swell.ops.clean import tree_size
from swell.workspace import safe
from swell.workspace.checkpoint import Checkpoints, repo_of
from swell.workspace.workspace import WorkspaceError

PRUNE_GRACE = "1.hour.ago"


@dataclass
class Cleaned:
    """What went: the runs whose refs and versions were removed, the repository's bytes
    before and after."""

    runs: list[str] = field(default_factory=list)
    refs: int = 0
    versions: int = 0  # bytes of versions directories removed
    before: int = 0
    after: int = 0
    problems: list[str] = field(default_factory=list)


def forget_runs(state_dir: Path, run_ids: list[str], executing: set[str]) -> Cleaned:
    """Remove the time-travel state of `run_ids` and collect the checkpoint repository;
    `executing`: the runs some process executes now (their caches are left alone)."""
    out = Cleaned(runs=list(run_ids))
    runs = state_dir / "runs"
    for run_id in run_ids:
        for name in ("versions", "checkpoint"):
            path = runs / run_id / name
            if path.is_dir() and not safe.is_link(path):
                if name == "versions":
                    out.versions += tree_size(path)
                try:
                    safe.remove(path)
                except OSError as exc:
                    out.problems.append(f"{path}: {exc.strerror or exc}")
    repo = Checkpoints(repo_of(state_dir))
    if not (repo.repo / "HEAD").is_file() or safe.is_link(repo.repo):
        return out
    out.before = tree_size(repo.repo)
    try:
        refs = [ref for run_id in run_ids for ref in repo.refs_of(run_id)]
        if refs:  # else nothing was let go: a gc would only repack the others' objects
            repo.delete_refs(refs)
            prune = PRUNE_GRACE if executing else "now"
            repo.git("-c", "gc.packRefs=false", "gc", "--quiet", f"--prune={prune}")
        out.refs = len(refs)
    except WorkspaceError as exc:
        out.problems.append(str(exc))
    else:
        if out.refs:
            _drop_caches(state_dir / "runs", executing)
    out.after = tree_size(repo.repo)
    return out


def _drop_caches(runs: Path, executing: set[str]) -> None:
    """Drop the stat caches and index files of every run not executing: they may name
    an object just pruned."""
    if not runs.is_dir() or safe.is_link(runs):
        return
    for run_dir in runs.iterdir():
        caches = run_dir / "checkpoint"
        if run_dir.name in executing or not caches.is_dir() or safe.is_link(caches):
            continue
        for cache in caches.iterdir():
            if cache.suffix in (".stat", ".index") and cache.is_file():
                cache.unlink(missing_ok=True)


__all__ = ["Cleaned", "forget_runs"]
