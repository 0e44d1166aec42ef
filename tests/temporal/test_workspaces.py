"""Workspaces across hosts: workers with workspaces of their own
(SWELL_WORKSPACES_ROOT, as two hosts would have), each visit's workspace pushed to
the run's bare remote (SWELL_WORKSPACE_REMOTE) under its attempt's ref, and a visit
that moves to another worker starting from the commit the run is at."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from conftest import events, swell, swell_json, wait_for, write_pipeline
from temporal.conftest import Workers, run_end

HANDOFF = """kind: WavePipeline
metadata: {{name: handoff}}
steps:
  - id: one
    type: command
    script: echo one >> work.txt
  - id: two
    type: command
    dependencies: [one]
    script: |
      echo two >> work.txt
      touch {signals}/two.started
      while [ ! -f {signals}/two.go ]; do sleep 0.1; done
  - id: three
    type: command
    dependencies: [two]
    script: echo three >> work.txt
  - id: four
    type: command
    dependencies: [three]
    script: |
      echo four >> work.txt
      touch {signals}/four.started
      while [ ! -f {signals}/four.go ]; do sleep 0.1; done
"""


@pytest.fixture
def remote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    monkeypatch.setenv("SWELL_WORKSPACE_REMOTE", str(bare))
    return bare


def _host(tmp_path: Path, name: str) -> dict[str, str]:
    root = tmp_path / name
    root.mkdir(exist_ok=True)
    return {"SWELL_WORKSPACES_ROOT": str(root)}


def _kill(proc: subprocess.Popen[str]) -> None:
    os.killpg(proc.pid, signal.SIGKILL)  # the worker and the visit's processes with it
    proc.wait()


def _refs(bare: Path, run_id: str) -> list[str]:
    out = subprocess.run(
        [
            "git",
            "--git-dir",
            str(bare),
            "for-each-ref",
            "--format=%(refname)",
            f"refs/swell/{run_id}",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return sorted(line.removeprefix(f"refs/swell/{run_id}/") for line in out.splitlines())


@pytest.mark.slow
def test_visits_move_between_workers_with_their_workspace(
    project: Path, workers: Workers, remote: Path, tmp_path: Path
) -> None:
    signals = tmp_path / "signals"
    signals.mkdir()
    write_pipeline(project, "handoff", HANDOFF.format(signals=signals))
    host_a, host_b = _host(tmp_path, "a"), _host(tmp_path, "b")
    first = workers.start(env=host_a)
    started = swell(
        "run", "handoff", "--engine", "temporal", "--detach", "-o", "quiet", cwd=project
    )
    run_id = started.stdout.strip()
    wait_for(lambda: (signals / "two.started").is_file(), 60)
    _kill(first)  # mid-visit: `two` wrote its line on host a, never pushed
    (signals / "two.go").touch()
    second = workers.start(env=host_b)  # another host: no workspace of the run
    wait_for(lambda: (signals / "four.started").is_file(), 60)
    _kill(second)
    (signals / "four.go").touch()
    workers.start(env=host_a)  # back on host a, whose work tree is stale and dirty
    status = run_end(project, run_id)
    assert status["status"] == "succeeded", status.get("error")
    final = Path(host_a["SWELL_WORKSPACES_ROOT"]) / run_id / "work.txt"
    assert final.read_text().splitlines() == ["one", "two", "three", "four"]
    on_b = Path(host_b["SWELL_WORKSPACES_ROOT"]) / run_id / "work.txt"
    assert on_b.read_text().splitlines() == ["one", "two", "three", "four"]  # its dead try
    # every finished attempt pushed its ref; the dead ones pushed nothing
    assert _refs(remote, run_id) == ["four/1/2", "one/1/1", "three/1/1", "two/1/2"]
    evs = events(project, run_id)
    assert [e["seq"] for e in evs] == list(range(1, len(evs) + 1))
    ran = [(e["step_id"], e["visit"]) for e in evs if e["type"] == "step.started"]
    assert ran == [("one", 1), ("two", 1), ("three", 1), ("four", 1)]


def test_a_run_s_visits_stay_on_the_worker_with_its_workspace(
    project: Path, workers: Workers, remote: Path, tmp_path: Path
) -> None:
    hosts = [_host(tmp_path, name) for name in ("a", "b")]
    for env in hosts:
        workers.start(env=env)
    runs = []
    for n in range(2):
        started = swell(
            "run", "loop", f"r{n}", "--engine", "temporal", "--detach", "-o", "quiet", cwd=project
        )
        runs.append(started.stdout.strip())
    for run_id in runs:
        wait_for(lambda r=run_id: swell_json("status", r, cwd=project)["status"] == "succeeded", 90)
        where = [Path(env["SWELL_WORKSPACES_ROOT"]) / run_id for env in hosts]
        assert sum(p.is_dir() for p in where) == 1, where  # all its visits on one worker
        [workspace] = [p for p in where if p.is_dir()]
        inputs = (workspace / "work.txt").read_text().splitlines()
        assert len(inputs) == 3 and len(set(inputs)) == 1, inputs
        # each visit an activity ran pushed its attempt (`check` routes in the workflow)
        assert [r.split("/")[0] for r in _refs(remote, run_id)] == ["implement"] * 3 + [
            "run-tests"
        ] * 3


SHARER = """kind: WavePipeline
metadata: {{name: sharer}}
steps:
  - id: before
    type: command
    script: echo a > a.txt
  - id: wait
    type: command
    dependencies: [before]
    script: |
      touch {signals}/wait.started
      while [ ! -f {signals}/wait.go ]; do sleep 0.1; done
  - id: sub
    dependencies: [wait]
    pipeline: sharedchild
  - id: after
    type: command
    dependencies: [sub]
    script: cat a.txt b.txt c.txt seen.txt > after.txt
"""

SHARED_CHILD = """kind: WavePipeline
metadata: {name: sharedchild}
steps:
  - id: c1
    type: command
    script: |
      cat a.txt > seen.txt
      echo b > b.txt
  - id: c2
    type: command
    dependencies: [c1]
    script: echo c > c.txt
"""

BLOCKER = """kind: WavePipeline
metadata: {{name: blocker}}
steps:
  - id: block
    type: command
    script: |
      touch {signals}/block.started
      while [ ! -f {signals}/block.go ]; do sleep 0.1; done
"""


def test_a_child_sharing_its_parent_s_workspace_works_on_another_host(
    project: Path, workers: Workers, remote: Path, tmp_path: Path
) -> None:
    """The parent's `sub` visit runs on host a; its child's visits on host b (host a's
    one slot for them is taken): the child starts from the parent's files and the
    parent goes on with the child's."""
    signals = tmp_path / "signals"
    signals.mkdir()
    write_pipeline(project, "sharer", SHARER.format(signals=signals))
    write_pipeline(project, "sharedchild", SHARED_CHILD)
    write_pipeline(project, "blocker", BLOCKER.format(signals=signals))
    host_a, host_b = _host(tmp_path, "a"), _host(tmp_path, "b")
    workers.start(slots=1, env=host_a)
    run = ["--engine", "temporal", "--detach", "-o", "quiet"]
    parent = swell("run", "sharer", *run, cwd=project).stdout.strip()
    wait_for(lambda: (signals / "wait.started").is_file(), 60)  # on host a's own queue
    blocker = swell("run", "blocker", *run, cwd=project).stdout.strip()
    wait_for(lambda: (signals / "block.started").is_file(), 60)  # host a's shared slot
    workers.start(env=host_b)
    (signals / "wait.go").touch()
    status = run_end(project, parent)
    (signals / "block.go").touch()
    assert status["status"] == "succeeded", (status.get("error"), status.get("steps"))
    on_a = Path(host_a["SWELL_WORKSPACES_ROOT"]) / parent
    on_b = Path(host_b["SWELL_WORKSPACES_ROOT"]) / parent
    assert (on_b / "b.txt").is_file()  # the child's visits ran on host b
    assert (on_a / "after.txt").read_text().splitlines() == ["a", "b", "c", "a"]
    [child] = [
        str(e["child_run_id"]) for e in events(project, parent) if e["type"] == "child.started"
    ]
    assert _refs(remote, child) == ["c1/1/1", "c2/1/1"]
    assert "sub/1/1.child-1" in _refs(remote, parent)
    # the child's first checkpoint is the child of the one its parent handed over mid-visit
    first = swell("diff", child, "c1#1", "--stat", cwd=project)
    assert first.returncode == 0, first.stderr
    assert "b.txt" in first.stdout and "seen.txt" in first.stdout
    assert "a.txt" not in first.stdout, first.stdout
    wait_for(lambda: swell_json("status", blocker, cwd=project)["status"] == "succeeded", 60)
