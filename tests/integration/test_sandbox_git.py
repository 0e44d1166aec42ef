"""`git commit` inside a sandboxed worktree workspace (runtime.sandbox, real bwrap): the
commit lands on the step's branch, while the project's config, hooks, other branches,
packs and the worktree's pointers stay out of the step's reach (docs/security.md)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from conftest import run_id_of, swell, write_pipeline

IDENTITY = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
    "PATH": "/usr/bin:/bin",
}

PIPELINE = """
kind: WavePipeline
metadata: {name: commit}
steps:
  - id: implement
    type: command
    workspace: {type: worktree, branch: "feature/{{ run.id }}"}
    script: |
      common=$(git rev-parse --git-common-dir)
      own=$(git rev-parse --git-dir)
      echo change > new.txt
      git add new.txt
      git commit -q -m "made inside the sandbox"
      for f in "$common/config" "$common/hooks/pre-commit" "$common/objects/pack/planted" \\
               "$common/objects/info/alternates" "$own/commondir" "$own/gitdir"; do
        (echo x >> "$f") 2>/dev/null && echo "WROTE $f" >> report.txt
      done
      git update-ref refs/heads/main HEAD 2>/dev/null && echo "MOVED main" >> report.txt
      git branch other HEAD 2>/dev/null && echo "MADE a branch" >> report.txt
      git rev-parse HEAD > committed.txt
"""


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, env=IDENTITY, check=True
    )
    return done.stdout


def test_a_step_commits_in_its_worktree_and_reaches_nothing_else_of_git(tmp_path: Path) -> None:
    repo = tmp_path / "project"
    repo.mkdir()
    sandbox = "runtime:\n  sandbox: {enabled: true, env_passthrough: [GIT_*]}\n"
    (repo / "wave.yaml").write_text(f"kind: WaveManifest\nmetadata: {{name: g}}\n{sandbox}")
    write_pipeline(repo, "commit", PIPELINE)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "initial")
    main, config = _git(repo, "rev-parse", "main"), (repo / ".git" / "config").read_bytes()
    result = swell("run", "commit", cwd=repo, env={**_env(), **IDENTITY})
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    branch = f"feature/{run_id}"
    assert _git(repo, "log", "-1", "--format=%s", branch).strip() == "made inside the sandbox"
    assert _git(repo, "show", f"{branch}:new.txt") == "change\n"
    assert _git(repo, "rev-parse", "main") == main
    assert "other" not in _git(repo, "branch", "--list")
    assert (repo / ".git" / "config").read_bytes() == config
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    assert not (repo / ".git" / "objects" / "pack" / "planted").exists()
    worktrees = list((repo / ".git" / "worktrees").iterdir())
    assert len(worktrees) == 1 and "x" not in (worktrees[0] / "commondir").read_text()
    listed = _git(repo, "worktree", "list", "--porcelain").split("\n\n")
    tree = Path(next(e for e in listed if branch in e).split()[1])
    assert (tree / "committed.txt").read_text().strip() == _git(repo, "rev-parse", branch).strip()
    assert not (tree / "report.txt").exists(), (tree / "report.txt").read_text()
    _git(repo, "fsck", "--no-dangling")


def _env() -> dict[str, str]:
    return dict(os.environ)
