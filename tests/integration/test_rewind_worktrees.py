"""Issue 33: `swell rewind` restores a worktree workspace too, from its own newest
checkpoint at the point rewound to; the run's directory gets its own (never the
worktree's tree); the worktree's branch and HEAD stay where the steps left them."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import run_id_of, swell, swell_json, write_pipeline

LOOP = """
kind: WavePipeline
metadata: {{name: wt}}
steps:
  - id: work
    max_visits: 6
    workspace: {{type: worktree, branch: "wt/{{{{ run.id }}}}"}}
    script: |
      echo "line $SWELL_VISIT" >> notes.txt
      if [ "$SWELL_VISIT" -ge $(cat {limit}) ]; then echo '{{"done": "yes"}}'; else echo '{{"done": "no"}}'; fi
    output:
      context:
        done: "{{{{ done }}}}"
    edges:
      - {{target: _complete, condition: context.done=yes}}
      - {{target: work}}
"""

ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
    "PATH": "/usr/bin:/bin",
}


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=ENV
    )
    return done.stdout


def _committed_project(project: Path) -> Path:
    """The project as a git repository with the looping worktree pipeline; returns the
    file holding the visit the loop ends at (4)."""
    (project / "app.py").write_text("print('v1')\n")
    limit = project.parent / "limit"
    limit.write_text("4\n")
    write_pipeline(project, "wt", LOOP.format(limit=limit))
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "initial")
    return limit


def test_a_rewind_restores_the_worktree_of_a_worktree_step(project: Path) -> None:
    limit = _committed_project(project)
    run_id = run_id_of(swell("run", "wt", cwd=project).stdout)
    ws = Path(swell_json("status", run_id, cwd=project)["workspace"])
    (tree,) = [p for p in (ws / "worktrees").iterdir() if p.is_dir()]
    assert (tree / "notes.txt").read_text().split("\n")[:-1] == [f"line {n}" for n in (1, 2, 3, 4)]
    head = git(tree, "rev-parse", "HEAD")
    limit.write_text("3\n")
    rewound = swell("rewind", run_id, "--to", "work#2", cwd=project)
    assert rewound.returncode == 0, rewound.stderr
    # the worktree as visit 2 left it, then visit 3 again
    assert (tree / "notes.txt").read_text().split("\n")[:-1] == ["line 1", "line 2", "line 3"]
    assert git(tree, "rev-parse", "HEAD") == head
    assert git(tree, "rev-parse", "--abbrev-ref", "HEAD").strip() == f"wt/{run_id}"
    assert not (ws / "notes.txt").exists() and not (ws / "app.py").exists()


def test_a_fork_starts_its_own_worktree_from_the_origins_checkpoint(project: Path) -> None:
    limit = _committed_project(project)
    origin = run_id_of(swell("run", "wt", cwd=project).stdout)
    limit.write_text("3\n")
    forked = swell("fork", origin, "--at", "work#2", cwd=project)
    assert forked.returncode == 0, forked.stderr
    fork = run_id_of(forked.stdout)
    assert fork != origin
    ws = Path(swell_json("status", fork, cwd=project)["workspace"])
    (tree,) = [p for p in (ws / "worktrees").iterdir() if p.is_dir()]
    # its own worktree, on its own branch, holding what visit 2 of the origin left, then visit 3
    assert git(tree, "rev-parse", "--abbrev-ref", "HEAD").strip() == f"wt/{fork}"
    assert (tree / "notes.txt").read_text().split("\n")[:-1] == ["line 1", "line 2", "line 3"]
    assert (tree / "app.py").read_text() == "print('v1')\n"
    # its visit changed one line: the checkpoint before it is the origin's
    diff = swell("diff", fork, "work#3", cwd=project)
    assert diff.returncode == 0, diff.stderr
    assert "+line 3" in diff.stdout and "+line 2" not in diff.stdout
    origin_ws = Path(swell_json("status", origin, cwd=project)["workspace"])
    (origin_tree,) = [p for p in (origin_ws / "worktrees").iterdir() if p.is_dir()]
    assert (origin_tree / "notes.txt").read_text().count("line") == 4


def test_a_fork_of_a_run_whose_worktree_branch_has_a_fixed_name_gets_its_own_branch(
    project: Path,
) -> None:
    """A branch not built from the run id (`feature/notes`) exists once the origin made
    it; the fork's worktree is on a branch of its own, `feature/notes-fork-FORK`."""
    limit = project.parent / "limit"
    limit.write_text("4\n")
    (project / "app.py").write_text("print('v1')\n")
    write_pipeline(
        project, "wt", LOOP.format(limit=limit).replace("wt/{{ run.id }}", "feature/notes")
    )
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "initial")
    origin = run_id_of(swell("run", "wt", cwd=project).stdout)
    limit.write_text("3\n")
    forked = swell("fork", origin, "--at", "work#2", cwd=project)
    assert forked.returncode == 0, forked.stderr
    fork = run_id_of(forked.stdout)
    assert swell_json("status", fork, cwd=project)["status"] == "succeeded"
    ws = Path(swell_json("status", fork, cwd=project)["workspace"])
    (tree,) = [p for p in (ws / "worktrees").iterdir() if p.is_dir()]
    assert git(tree, "rev-parse", "--abbrev-ref", "HEAD").strip() == f"feature/notes-fork-{fork}"
    assert (tree / "notes.txt").read_text().split("\n")[:-1] == ["line 1", "line 2", "line 3"]
    # the origin's branch and worktree are as the origin left them
    origin_ws = Path(swell_json("status", origin, cwd=project)["workspace"])
    (origin_tree,) = [p for p in (origin_ws / "worktrees").iterdir() if p.is_dir()]
    assert git(origin_tree, "rev-parse", "--abbrev-ref", "HEAD").strip() == "feature/notes"
    assert (origin_tree / "notes.txt").read_text().count("line") == 4
