"""A fork's worktrees start from its origin's checkpoints (docs/time-travel.md).

A fork's worktree is not its origin's: its branch is usually named after the run, so
its directory and checkpoint key differ too, and it is made only when a step of the
fork first opens it. `swell fork` therefore leaves, in the fork's run directory, the
origin's newest checkpoint of each worktree at the fork point by the steps that
worked in it (`checkpoint/seeds.json`, step -> commit); the first open of a worktree
with no checkpoint of its own in the run makes it hold that tree (`plant`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from swell.workspace.checkpoint import Checkpoints, index_path, tip_ref, workspace_key

FILE = "seeds.json"


def seeds_path(run_dir: Path) -> Path:
    return run_dir / "checkpoint" / FILE


def write(run_dir: Path, seeds: dict[str, str]) -> None:
    """Keep `seeds` (step -> checkpoint commit) for the run; written beside and renamed."""
    path = seeds_path(run_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f".{FILE}.{os.getpid()}")
    part.write_text(json.dumps(seeds, sort_keys=True), encoding="utf-8")
    os.replace(part, path)


def read(run_dir: Path) -> dict[str, str]:
    """The run's seeds; none when it is no fork (or the file is not readable)."""
    try:
        data = json.loads(seeds_path(run_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): v for k, v in data.items() if isinstance(v, str)}


def plant(
    repo: Checkpoints, run_dir: Path, default: Path, worktree: Path, steps: Iterable[str]
) -> bool:
    """Make the run's worktree at `worktree` hold the seed of the first of `steps` (the
    steps sharing it) that has one, unless the run has a checkpoint of it already (a
    resumed fork: its own visits went on there). True when it was restored."""
    seeds = read(run_dir)
    commit = next((seeds[s] for s in steps if s in seeds), None)
    if commit is None:
        return False
    key = workspace_key(worktree, default)
    tip = tip_ref(run_dir.name, key)
    if repo.resolve(tip) is not None:
        return False
    repo.restore(worktree, index_path(run_dir, key), commit)
    # the worktree's first checkpoint in the fork is the seed's child: `swell diff`
    # of that visit shows what it changed, not the origin's work
    repo.update_refs({tip: commit})
    return True


__all__ = ["plant", "read", "seeds_path", "write"]
