"""`swell clean`: old workspaces go, running and resumable runs' stay, another store's
stay, links are never followed, git worktrees are removed through git."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

from conftest import run_id_of, start_swell, swell, swell_json, wait_for, write_pipeline
from postgres_server import PostgresServer

OWNERS = ".owners"  # beside the workspaces: which store keeps each one's run
BASE = ".base.git"  # beside them too: the repository each directory workspace copies


def workspaces(state: Path) -> set[str]:
    root = state / "workspaces"
    return (
        {p.name for p in root.iterdir() if p.name not in (OWNERS, BASE)} if root.is_dir() else set()
    )


def owners(state: Path) -> dict[str, str]:
    root = state / "workspaces" / OWNERS
    return {p.name: p.read_text().strip() for p in root.iterdir()} if root.is_dir() else {}


def test_clean_removes_ended_runs_workspaces_and_says_how_much(
    project: Path, isolated_state: Path
) -> None:
    ids = [run_id_of(swell("run", "loop", cwd=project).stdout) for _ in range(2)]
    assert workspaces(isolated_state) == set(ids)
    dry = swell("clean", "--dry-run", cwd=project)
    assert dry.returncode == 0
    assert all(f"would remove {i}" in dry.stdout for i in ids)
    assert "would remove 2 workspaces, would free" in dry.stdout
    assert workspaces(isolated_state) == set(ids)
    result = swell("clean", cwd=project)
    assert result.returncode == 0, result.stderr
    assert all(f"removed {i}" in result.stdout for i in ids)
    assert re.search(r"removed 2 workspaces, freed \d+(\.\d+)? (B|KB|MB)\b", result.stdout)
    assert workspaces(isolated_state) == set()
    # the runs stay in the history
    assert [r["id"] for r in swell_json("list", cwd=project)] == ids[::-1]
    assert swell("logs", ids[0], cwd=project).returncode == 0


def test_older_than_and_run_select(project: Path, isolated_state: Path) -> None:
    old, new = (run_id_of(swell("run", "loop", cwd=project).stdout) for _ in range(2))
    assert "removed 0 workspaces" in swell("clean", "--older-than", "1h", cwd=project).stdout
    one = swell("clean", "--run", new, cwd=project)
    assert f"removed {new}" in one.stdout and old not in one.stdout
    assert workspaces(isolated_state) == {old}
    time.sleep(1.2)
    aged = swell("clean", "--older-than", "1s", "-o", "json", cwd=project)
    data = json.loads(aged.stdout)
    assert [Path(r["path"]).name for r in data["removed"]] == [old]
    assert data["bytes"] > 0 and data["dry_run"] is False
    bad = swell("clean", "--older-than", "a week", cwd=project)
    assert bad.returncode == 2 and "--older-than" in bad.stderr


def test_a_running_run_s_workspace_is_never_removed(project: Path, isolated_state: Path) -> None:
    write_pipeline(project, "slow", "kind: WavePipeline\nsteps:\n  - id: s\n    script: sleep 30\n")
    proc = start_swell("run", "slow", cwd=project)
    assert proc.stdout is not None
    run_id = proc.stdout.readline().split()[1]
    try:
        wait_for(lambda: swell_json("status", run_id, cwd=project)["owner"])
        wait_for(lambda: run_id in workspaces(isolated_state))
        for args in ((), ("--run", run_id)):
            result = swell("clean", *args, cwd=project)
            assert f"kept {run_id}: run {run_id} is running" in result.stdout
            assert run_id in workspaces(isolated_state)
    finally:
        swell("cancel", run_id, cwd=project)
        proc.communicate(timeout=30)


def test_resumable_runs_are_kept_unless_named(project: Path, isolated_state: Path) -> None:
    write_pipeline(project, "slow", "kind: WavePipeline\nsteps:\n  - id: s\n    script: sleep 30\n")
    result = swell("run", "slow", "--timeout", "1s", cwd=project)
    run_id = run_id_of(result.stdout)
    kept = swell("clean", cwd=project)
    assert f"kept {run_id}: run {run_id} is interrupted and can be resumed" in kept.stdout
    assert run_id in workspaces(isolated_state)
    named = swell("clean", "--run", run_id, cwd=project)
    assert f"removed {run_id}" in named.stdout
    assert run_id not in workspaces(isolated_state)


def test_clean_never_follows_links(project: Path, isolated_state: Path, tmp_path: Path) -> None:
    run_id = run_id_of(swell("run", "loop", cwd=project).stdout)
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep\n")
    ws = isolated_state / "workspaces" / run_id
    (ws / "link-to-precious").symlink_to(outside)
    (ws / "file-link").symlink_to(outside / "keep.txt")
    # an orphan of this store (its record says so) that is itself a link into the
    # precious directory
    (isolated_state / "workspaces" / "stray").symlink_to(outside)
    ours = owners(isolated_state)[run_id]
    (isolated_state / "workspaces" / OWNERS / "stray").write_text(ours + "\n")
    result = swell("clean", cwd=project)
    assert result.returncode == 0, result.stderr
    assert "removed stray" in result.stdout and "orphan" in result.stdout
    assert workspaces(isolated_state) == set() and owners(isolated_state) == {}
    assert (outside / "keep.txt").read_text() == "keep\n"


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    ).stdout


def test_worktrees_are_removed_through_git(project: Path, isolated_state: Path) -> None:
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "base")
    write_pipeline(
        project,
        "wt",
        """
kind: WavePipeline
steps:
  - id: change
    workspace: {type: worktree}
    script: echo changed > changed.txt
""",
    )
    result = swell("run", "wt", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    listed = git(project, "worktree", "list", "--porcelain")
    assert run_id in listed
    cleaned = swell("clean", cwd=project)
    assert "1 git worktree(s)" in cleaned.stdout, cleaned.stdout + cleaned.stderr
    assert run_id not in git(project, "worktree", "list", "--porcelain")
    assert workspaces(isolated_state) == set()
    assert f"swell/{run_id}" in git(project, "branch", "--list", "swell/*")  # branch kept


def test_clean_keeps_another_store_s_workspaces(
    project: Path, isolated_state: Path, postgres_server: PostgresServer
) -> None:
    """A run kept in Postgres has its workspace in the same state directory as SQLite's
    runs: `swell clean` over SQLite lists it as not this store's and keeps it, while
    its own orphans (their record names it, their run is gone) still go."""
    # a password the server (trust authentication) ignores: it must not be written down
    url = postgres_server.fresh_schema().replace("//swell@", "//swell:hunter2@")
    elsewhere = run_id_of(
        swell("run", "loop", cwd=project, env={**os.environ, "SWELL_STORE": url}).stdout
    )
    here = run_id_of(swell("run", "loop", cwd=project).stdout)
    assert workspaces(isolated_state) == {elsewhere, here}
    recorded = owners(isolated_state)
    # a true orphan of SQLite: the state database was replaced, its runs are gone
    for name in ("state.db", "state.db-wal", "state.db-shm"):
        (isolated_state / name).unlink(missing_ok=True)
    # and a directory nobody recorded
    (isolated_state / "workspaces" / "by-hand").mkdir()
    result = swell("clean", cwd=project)
    assert result.returncode == 0, result.stderr
    assert f"removed {here}" in result.stdout and "orphan: no run in the store" in result.stdout
    assert (
        f"kept {elsewhere}: not this store's; kept (its run is kept in postgresql://"
        in result.stdout
    )
    assert "kept by-hand: not this store's; kept" in result.stdout
    assert workspaces(isolated_state) == {elsewhere, "by-hand"}
    # what the records say: the store's file, or where the Postgres server is (no user,
    # no password)
    assert recorded[here] == f"sqlite://{(isolated_state / 'state.db').resolve()}"
    assert recorded[elsewhere].startswith("postgresql://127.0.0.1:")
    assert "schema t" in recorded[elsewhere] and "@" not in recorded[elsewhere]
    # Postgres's own clean removes it
    theirs = swell("clean", cwd=project, env={**os.environ, "SWELL_STORE": url})
    assert f"removed {elsewhere}" in theirs.stdout, theirs.stdout + theirs.stderr
    assert "kept by-hand: not this store's" in theirs.stdout
    assert workspaces(isolated_state) == {"by-hand"} and owners(isolated_state) == {}
