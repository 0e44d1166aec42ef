"""A directory workspace's repository is a copy of one git made once for all the
workspaces (swell/workspace/base_repo.py): a run starts no git process to make it,
and the workspace shows what its steps changed as before."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import run_id_of, swell, write_pipeline

PIPELINE = """
kind: WavePipeline
metadata: {name: note}
steps:
  - id: write
    type: command
    script: echo hi > note.txt
"""


@pytest.fixture
def git_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every git command line swell's processes run is logged here (a `git` first on
    PATH that writes its arguments, then runs git); HOME's git config names only a user."""
    real = shutil.which("git")
    assert real is not None
    shim = tmp_path / "bin"
    shim.mkdir()
    log = tmp_path / "git.log"
    (shim / "git").write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {real} "$@"\n')
    (shim / "git").chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = Someone\n\temail = someone@example.com\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ['PATH']}")
    return log


def _git(workspace: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=workspace, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _run(project: Path, state: Path) -> Path:
    """The workspace of a new run of `note`."""
    done = swell("run", "note", cwd=project)
    assert done.returncode == 0, done.stderr
    return state / "workspaces" / run_id_of(done.stdout)


def test_a_run_starts_no_git_process_to_make_its_workspace(
    project: Path, isolated_state: Path, git_calls: Path
) -> None:
    write_pipeline(project, "note", PIPELINE)
    first = _run(project, isolated_state)
    git_calls.write_text("")
    second = _run(project, isolated_state)
    ran = git_calls.read_text().splitlines()
    assert not [line for line in ran if {"init", "commit-tree", "config"} & set(line.split())]
    for workspace in (first, second):
        assert _git(workspace, "log", "--format=%s") == "swell: workspace base"
        assert _git(workspace, "status", "--porcelain") == "?? note.txt"
    # the same empty base commit: the same tree, message, author and date
    assert _git(first, "rev-parse", "HEAD") == _git(second, "rev-parse", "HEAD")


def test_a_sha256_workspace_is_made_by_git(
    project: Path, isolated_state: Path, git_calls: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_DEFAULT_HASH", "sha256")  # what `git init` makes here
    write_pipeline(project, "note", PIPELINE)
    for _ in range(2):
        workspace = _run(project, isolated_state)
        assert len(_git(workspace, "rev-parse", "HEAD")) == 64
        assert _git(workspace, "status", "--porcelain") == "?? note.txt"
    assert "commit-tree" in git_calls.read_text()
