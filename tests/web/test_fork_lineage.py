"""Issue 33: a run's lineage is complete however its forks were made. A fork made while
a process executes its origin is not noted in the origin's log (the note would race
that process for the next seq), yet `GET /api/runs/{origin}` and `swell status` list it;
a fork of a fork says which run it came from (its origin's link, copied with the
origin's events, is not its own)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from helpers import client

from conftest import (
    events,
    run_id_of,
    start_swell,
    swell,
    swell_json,
    wait_for,
    write_pipeline,
)

HOLD = """
kind: WavePipeline
metadata: {{name: hold}}
steps:
  - id: first
    script: echo one >> one.txt
    edges:
      - {{target: hold}}
  - id: hold
    script: |
      if [ "{{{{ input }}}}" = hold ]; then
        while [ -f {release} ]; do sleep 0.1; done
      fi
      echo held >> held.txt
"""


def _lineage(project: Path, run_id: str) -> dict[str, Any]:
    async def get() -> dict[str, Any]:
        async with client(project) as http:
            answer = await http.get(f"/api/runs/{run_id}")
            assert answer.status_code == 200, answer.text
            return dict(answer.json()["lineage"])

    return asyncio.run(get())


def _fork(project: Path, *args: str) -> str:
    made = swell("fork", *args, cwd=project)
    assert made.returncode == 0, made.stdout + made.stderr
    return run_id_of(made.stdout)


def test_a_fork_made_while_its_origin_runs_is_in_the_origins_lineage(project: Path) -> None:
    release = project.parent / "release"
    release.write_text("")
    write_pipeline(project, "hold", HOLD.format(release=release))
    running = start_swell("run", "hold", "hold", cwd=project)
    try:
        origin = run_id_of(wait_for(lambda: running.stdout and running.stdout.readline(), 60))
        wait_for(
            lambda: any(
                (s["step_id"], s["status"]) == ("hold", "running")
                for s in swell_json("status", origin, cwd=project)["steps"]
            ),
            90,
        )
        fork = _fork(project, origin, "--at", "first#1", "--input", "go")
        assert swell_json("status", fork, cwd=project)["status"] == "succeeded"
        # the origin's process owns its log: nothing was noted there
        assert "run.fork_made" not in {e["type"] for e in events(project, origin)}
        at = {"run_id": fork, "step_id": "first", "visit": 1}
        assert _lineage(project, origin)["forks"] == [at]
        assert swell_json("status", origin, cwd=project)["forks"] == [
            {"run": fork, "at": "first#1"}
        ]
    finally:
        release.unlink()
        running.communicate(timeout=90)
    assert swell_json("status", origin, cwd=project)["status"] == "succeeded"
    assert _lineage(project, origin)["forks"] == [at]  # once, noted or not


def test_a_fork_of_a_fork_is_linked_to_the_run_it_came_from(project: Path) -> None:
    write_pipeline(project, "hold", HOLD.format(release=project.parent / "none"))
    origin = run_id_of(swell("run", "hold", "go", cwd=project).stdout)
    first = _fork(project, origin, "--at", "first#1")
    second = _fork(project, first, "--at", "hold#1")
    assert _lineage(project, second)["forked_from"] == {
        "run_id": first,
        "step_id": "hold",
        "visit": 1,
    }
    assert [f["run_id"] for f in _lineage(project, first)["forks"]] == [second]
    assert [f["run_id"] for f in _lineage(project, origin)["forks"]] == [first]
    assert swell_json("status", second, cwd=project)["forked_from"] == {
        "run": first,
        "at": "hold#1",
    }
    assert swell_json("status", second, cwd=project)["forks"] == []
