"""A run killed with kill -9 between visits: every checkpoint its events name is in
the checkpoint repository and reachable from its refs (checkpoints taken on the event
loop, tips rewritten in place: engine/visit/checkpointing.py), so `swell diff` shows
each visit's change and `swell resume` goes on from the newest."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import events, run_id_of, swell, write_pipeline

LOOP = """
kind: WavePipeline
metadata: {name: killed}
steps:
  - id: work
    max_visits: 8
    script: |
      echo "line $SWELL_VISIT" >> counter.txt
      if [ "$SWELL_VISIT" -eq 4 ] && [ ! -e ../killed-once ]; then
        touch ../killed-once; kill -9 $PPID; sleep 5
      fi
      if [ "$SWELL_VISIT" -ge 6 ]; then echo '{"done": "yes"}'; else echo '{"done": "no"}'; fi
    output:
      context:
        done: "{{ done }}"
    edges:
      - {target: _complete, condition: context.done=yes}
      - {target: work}
"""


def reachable(repo: Path) -> set[str]:
    out = subprocess.run(
        ["git", "--git-dir", str(repo), "rev-list", "--all"],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(out.stdout.split())


def test_a_killed_runs_checkpoints_stay_reachable_and_it_resumes(
    project: Path, isolated_state: Path
) -> None:
    write_pipeline(project, "killed", LOOP)
    killed = swell("run", "killed", cwd=project)
    assert killed.returncode != 0
    run_id = run_id_of(killed.stdout)
    points = [e for e in events(project, run_id) if e["type"] == "workspace.checkpoint"]
    assert [p["visit"] for p in points] == [1, 2, 3]
    repo = isolated_state / "checkpoints.git"
    assert {p["commit"] for p in points} <= reachable(repo)
    shown = swell("diff", run_id, "work#2", cwd=project)
    assert shown.returncode == 0, shown.stderr
    assert "+line 2" in shown.stdout and "+line 1" not in shown.stdout
    resumed = swell("resume", run_id, cwd=project)
    assert resumed.returncode == 0, resumed.stderr
    points = [e for e in events(project, run_id) if e["type"] == "workspace.checkpoint"]
    assert {p["commit"] for p in points} <= reachable(repo)
    newest = subprocess.run(
        ["git", "--git-dir", str(repo), "show", f"refs/swell/{run_id}/tip/main:counter.txt"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert newest.splitlines()[:3] == ["line 1", "line 2", "line 3"]
    assert newest.splitlines()[-1] == "line 6"
