"""What a checkpoint costs a loop of small visits (engine/visit/checkpointing.py): a
small workspace scanned before is checkpointed on the event loop, without a thread;
one that would stat or read more than `ON_LOOP` allows goes to a thread and is the
same checkpoint; a workspace's tip ref is rewritten in place, not made anew."""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
from pathlib import Path

import pytest
from test_checkpoint_objects import git_tree

from swell.workspace.checkpoint import Checkpoints, Memory
from swell.workspace.treescan import Budget, NotCheap

SMALL = Budget(entries=50, bytes=4096)


@pytest.fixture
def git_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    return {**os.environ}


def snap(repo: Checkpoints, ws: Path, index: Path, n: int, budget: Budget | None = None) -> str:
    tip = repo.resolve("refs/swell/r/tip/main")
    parent_tree = repo.tree_of(tip) if tip else None
    made = repo.snapshot(
        ws,
        index,
        refs=[f"refs/swell/r/s/{n}", "refs/swell/r/tip/main"],
        message=f"swell: s visit {n}",
        parent=tip,
        parent_tree=parent_tree,
        budget=budget,
    )
    return made.commit


def test_a_tip_moves_in_place_and_git_reads_it(tmp_path: Path, git_env: dict[str, str]) -> None:
    repo = Checkpoints(tmp_path / "cp.git", Memory())
    repo.ensure()
    ws = tmp_path / "ws"
    ws.mkdir()
    index = tmp_path / "run" / "main.index"
    commits = []
    for n in range(1, 4):
        (ws / "work.txt").write_text("change\n" * n)
        commits.append(snap(repo, ws, index, n))
        if n == 1:
            inode = (repo.repo / "refs/swell/r/tip/main").stat().st_ino
    assert (repo.repo / "refs/swell/r/tip/main").stat().st_ino == inode
    out = subprocess.run(
        ["git", "--git-dir", str(repo.repo), "log", "--format=%H", "refs/swell/r/tip/main"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert out == commits[::-1]
    fsck = subprocess.run(
        ["git", "--git-dir", str(repo.repo), "fsck", "--strict"], capture_output=True, text=True
    )
    assert fsck.returncode == 0, fsck.stderr


def test_a_small_scanned_workspace_fits_and_a_big_read_does_not(
    tmp_path: Path, git_env: dict[str, str]
) -> None:
    repo = Checkpoints(tmp_path / "cp.git", Memory())
    repo.ensure()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    index = tmp_path / "run" / "main.index"
    Checkpoints(tmp_path / "theirs.git").ensure()
    with pytest.raises(NotCheap):  # never scanned in this process: a thread does it
        snap(repo, ws, index, 1, SMALL)
    snap(repo, ws, index, 1)
    (ws / "a.txt").write_text("two\n")
    second = snap(repo, ws, index, 2, SMALL)
    assert repo.tree_of(second) == git_tree(tmp_path / "theirs.git", ws, tmp_path / "i", git_env)
    (ws / "big.bin").write_bytes(b"x" * 10_000)  # more to read than SMALL allows
    with pytest.raises(NotCheap):
        snap(repo, ws, index, 3, SMALL)
    with pytest.raises(NotCheap):  # not tried on the loop again at once
        snap(repo, ws, index, 3, SMALL)
    third = snap(repo, ws, index, 3)
    assert repo.tree_of(third) == git_tree(tmp_path / "theirs.git", ws, tmp_path / "i", git_env)
    listed = repo.git("ls-tree", "--name-only", "refs/swell/r/s/3").split()
    assert listed == ["a.txt", "big.bin"]


def test_a_visits_checkpoint_of_a_small_workspace_starts_no_thread(
    tmp_path: Path, git_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from swell.engine.visit import checkpointing

    plan = _Plan(tmp_path)
    memory = Memory()
    ws = plan.workspace
    ws.mkdir(parents=True)
    (ws / "work.txt").write_text("")
    started: list[str] = []
    start = threading.Thread.start

    def counting(self: threading.Thread) -> None:
        started.append(self.name)
        start(self)

    monkeypatch.setattr(threading.Thread, "start", counting)

    async def visits() -> list[str]:
        commits = []
        for n in range(1, 5):
            with open(ws / "work.txt", "a") as f:
                f.write("change\n")
            taken = await checkpointing.checkpoint(plan, memory, ws, "implement", n)  # type: ignore[arg-type]
            commits.append(getattr(taken, "commit", ""))
        return commits

    commits = asyncio.run(visits())
    assert len(started) == 1  # the first, which reads what the run knew
    repo = Checkpoints(tmp_path / "state" / "checkpoints.git")
    assert repo.resolve("refs/swell/run1/tip/main") == commits[-1]
    for n, commit in enumerate(commits, start=1):
        assert repo.resolve(f"refs/swell/run1/implement/{n}") == commit
        shown = repo.git("show", f"{commit}:work.txt")
        assert shown == "change\n" * n


class _Plan:
    """The few fields of a RunPlan a checkpoint reads."""

    def __init__(self, root: Path) -> None:
        self.run_id = "run1"
        self.run_dir = root / "state" / "runs" / "run1"
        self.workspace = self.run_dir / "workspace"
