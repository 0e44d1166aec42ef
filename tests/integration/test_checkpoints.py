"""Issue 33: a checkpoint per visit. Each visit's workspace tree is committed into the
project's checkpoint repository under refs/swell/RUN/STEP/VISIT and recorded as the
visit's `workspace.checkpoint` event; ignored files are left out; the workspace's own
git state is never moved; a visit that changed nothing reuses the previous commit."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from conftest import events, run_id_of, swell, write_pipeline

LOOP = """
kind: WavePipeline
metadata: {name: cnt}
steps:
  - id: work
    max_visits: 6
    script: |
      [ "$SWELL_VISIT" -le 3 ] && echo "line $SWELL_VISIT" >> counter.txt
      echo "junk $SWELL_VISIT" > build.log
      printf '*.log\\n' > .gitignore
      if [ "$SWELL_VISIT" -ge 5 ]; then echo '{"done": "yes"}'; else echo '{"done": "no"}'; fi
    output:
      context:
        done: "{{ done }}"
    edges:
      - {target: _complete, condition: context.done=yes}
      - {target: work}
"""


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "--git-dir", str(repo), *args], capture_output=True, text=True, check=True
    )
    return out.stdout


def test_every_visit_is_checkpointed_without_moving_the_workspace_git(
    project: Path, isolated_state: Path
) -> None:
    write_pipeline(project, "cnt", LOOP)
    result = swell("run", "cnt", cwd=project)
    assert result.returncode == 0, result.stderr
    run_id = run_id_of(result.stdout)
    points = [e for e in events(project, run_id) if e["type"] == "workspace.checkpoint"]
    assert [p["visit"] for p in points] == [1, 2, 3, 4, 5]
    assert [p["changed"] for p in points] == [True, True, True, False, False]
    assert points[3]["commit"] == points[4]["commit"] == points[2]["commit"]
    assert [p["parent"] for p in points[1:3]] == [points[0]["commit"], points[1]["commit"]]
    repo = isolated_state / "checkpoints.git"
    for n in (1, 2, 3):
        ref = f"refs/swell/{run_id}/work/{n}"
        assert git(repo, "rev-parse", ref).strip() == points[n - 1]["commit"]
        counter = git(repo, "show", f"{ref}:counter.txt")
        assert counter.splitlines() == [f"line {i}" for i in range(1, n + 1)]
        assert git(repo, "ls-tree", "--name-only", ref).split() == [".gitignore", "counter.txt"]
    # the workspace's own repository: HEAD still at its base, nothing staged by swell
    ws = isolated_state / "workspaces" / run_id
    assert git(ws / ".git", "rev-list", "--count", "HEAD").strip() == "1"
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=ws, capture_output=True, text=True, check=True
    )
    assert sorted(status.stdout.splitlines()) == ["?? .gitignore", "?? counter.txt"]


def test_checkpoints_can_be_turned_off(project: Path, isolated_state: Path) -> None:
    write_pipeline(project, "cnt", LOOP)
    result = swell("run", "cnt", cwd=project, env={**os.environ, "SWELL_CHECKPOINTS": "off"})
    assert result.returncode == 0, result.stderr
    run_id = run_id_of(result.stdout)
    assert not [e for e in events(project, run_id) if e["type"] == "workspace.checkpoint"]
