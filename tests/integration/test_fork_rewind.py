"""Issue 33: `swell fork RUN --at STEP#VISIT` and `swell rewind RUN --to STEP#VISIT`.

The property: fork a randomly generated command loop at a random visit -> the fork's
workspace is exactly the visit's checkpoint, its event log is contiguous and begins
with the origin's events, the origin is untouched, and continuing it gives the
origin's result (the scripts are deterministic and the inputs unchanged)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import EXAMPLES, events, run_id_of, swell, swell_json, write_pipeline
from swell.ops.checkpoints import parse_at
from swell.runtime import open_runtime
from swell.travel import Fork, fork_run
from swell.workspace.checkpoint import Checkpoints


def loop_pipeline(steps: list[list[str]], rounds: int) -> str:
    """A loop of command steps (each appends to its files, and the last counts the
    rounds in context), ending after `rounds` rounds, or at once when context.stop=yes."""
    lines = ["kind: WavePipeline", "metadata: {name: gen}", "max_step_visits: 200", "steps:"]
    for i, files in enumerate(steps):
        last = i == len(steps) - 1
        # what a visit writes depends on the round, never on the visit's number (a
        # visit interrupted by a kill runs again under the next number)
        writes = "; ".join(f'echo "s{i} r{{{{ context.n }}}}" >> {f}' for f in files)
        lines += [f"  - id: s{i}", "    max_visits: 50"]
        lines += [f"    dependencies: [s{i - 1}]"] if i else []
        # SLOW names a file to create, then the visit waits (a test kills it meanwhile)
        lines += ["    script: |", '      if [ -n "$SLOW" ]; then : > "$SLOW"; sleep 5; fi']
        lines += ["      mkdir -p dir", f"      {writes}"]
        if last:
            lines += [
                "      prev={{ context.n }}",
                "      n=$(( ${prev:-0} + 1 ))",
                '      echo "{\\"n\\": \\"$n\\"}"',
                "    output:",
                "      context:",
                '        n: "{{ n }}"',
            ]
        lines.append("    edges:")
        if last:
            lines += [
                "      - {target: _complete, condition: context.stop=yes}",
                f"      - {{target: _complete, condition: context.n={rounds}}}",
            ]
        lines.append(f"      - {{target: s{(i + 1) % len(steps)}}}")
    return "\n".join(lines) + "\n"


def new_project(base: Path) -> Path:
    project = Path(tempfile.mkdtemp(dir=base))
    shutil.copytree(EXAMPLES, project, ignore=shutil.ignore_patterns(".swell"), dirs_exist_ok=True)
    return project


def tree_of(repo: Path, workspace: Path, scratch: Path) -> str:
    """The tree a checkpoint of `workspace` would have now (through a scratch index)."""
    return Checkpoints(repo).write_tree(workspace, scratch / f"{time.monotonic_ns()}.index")


def log_of(project: Path, run_id: str) -> list[dict[str, Any]]:
    return events(project, run_id)


def without_times(log: list[dict[str, Any]]) -> list[dict[str, Any]]:
    drop = {"ts", "run_id", "duration_ms", "path", "workspace"}
    return [{k: v for k, v in e.items() if k not in drop} for e in log]


def outcome_of(project: Path, run_id: str) -> tuple[str, dict[str, str], int]:
    status = swell_json("status", run_id, cwd=project)
    return status["status"], status["context"], status["visits"]


@settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    steps=st.lists(
        st.lists(st.sampled_from(["a.txt", "b.txt", "dir/c.txt"]), min_size=1, max_size=2),
        min_size=1,
        max_size=3,
    ),
    rounds=st.integers(min_value=2, max_value=4),
    pick=st.integers(min_value=0, max_value=10_000),
)
def test_fork_at_a_random_visit_of_a_generated_loop(
    tmp_path: Path, isolated_state: Path, steps: list[list[str]], rounds: int, pick: int
) -> None:
    project = new_project(tmp_path)
    state = Path(tempfile.mkdtemp(dir=tmp_path))
    env = {**os.environ, "SWELL_STATE_DIR": str(state)}
    write_pipeline(project, "gen", loop_pipeline(steps, rounds))
    ran = subprocess.run(
        [*_swell(), "run", "gen"], cwd=project, env=env, capture_output=True, text=True
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    origin = run_id_of(ran.stdout)
    before = _log(project, origin, env)
    repo = state / "checkpoints.git"
    origin_tree = tree_of(repo, state / "workspaces" / origin, tmp_path)
    points = [e for e in before if e["type"] == "workspace.checkpoint"]
    point = points[pick % len(points)]
    at = f"{point['step_id']}#{point['visit']}"

    os.environ["SWELL_STATE_DIR"] = str(state)  # the in-process fork uses this state
    try:
        rt = open_runtime(project)
        fork = fork_run(rt, origin, parse_at(at), Fork())
        rt.store.close()
    finally:
        os.environ["SWELL_STATE_DIR"] = str(isolated_state)
    # the fork's workspace is the visit's checkpoint, exactly
    assert tree_of(repo, state / "workspaces" / fork, tmp_path) == point["tree"]
    resumed = subprocess.run(
        [*_swell(), "resume", fork], cwd=project, env=env, capture_output=True, text=True
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    log = _log(project, fork, env)
    assert [e["seq"] for e in log] == list(range(1, len(log) + 1))  # contiguous
    forked = next(e for e in log if e["type"] == "run.forked")
    assert forked["origin_run_id"] == origin and forked["checkpoint"] == point["commit"]
    copied = [e for e in log if e["seq"] < forked["seq"]]
    assert without_times(copied) == without_times(before[: len(copied)])
    assert not [e for e in copied if e["seq"] > point["seq"] and e["type"] == "step.started"]
    # the origin is untouched (one `run.fork_made` added at its end)
    after = _log(project, origin, env)
    assert after[: len(before)] == before
    assert [e["type"] for e in after[len(before) :]] == ["run.fork_made"]
    assert tree_of(repo, state / "workspaces" / origin, tmp_path) == origin_tree
    # continuing gives the origin's result
    assert tree_of(repo, state / "workspaces" / fork, tmp_path) == origin_tree
    assert _outcome(project, fork, env) == _outcome(project, origin, env)


def _swell() -> list[str]:
    import sys

    return [sys.executable, "-m", "swell"]


def _log(project: Path, run_id: str, env: dict[str, str]) -> list[dict[str, Any]]:
    out = subprocess.run(
        [*_swell(), "logs", run_id, "-o", "json"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def _outcome(project: Path, run_id: str, env: dict[str, str]) -> tuple[Any, ...]:
    out = subprocess.run(
        [*_swell(), "status", run_id, "-o", "json"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
    )
    status = json.loads(out.stdout)
    return status["status"], status["context"], status["visits"]


LOOP = loop_pipeline([["a.txt"], ["b.txt"]], 3)


@pytest.fixture
def origin(project: Path) -> str:
    write_pipeline(project, "gen", LOOP)
    result = swell("run", "gen", cwd=project)
    assert result.returncode == 0, result.stderr
    return run_id_of(result.stdout)


def test_a_fork_with_set_routes_differently(project: Path, origin: str) -> None:
    assert outcome_of(project, origin)[2] == 6  # three rounds of two steps
    result = swell("fork", origin, "--at", "s1#1", "--set", "context.stop=yes", cwd=project)
    assert result.returncode == 0, result.stderr
    fork = run_id_of(result.stdout)
    status, context, visits = outcome_of(project, fork)
    assert status == "succeeded" and context["stop"] == "yes"
    assert visits == 4  # s0, s1 copied; s0 #2, s1 #2, then context.stop ends it
    shown = swell("status", fork, cwd=project).stdout
    assert f"forked    from {origin} at s1#1" in shown
    assert f"fork      {fork} (at s1#1)" in swell("status", origin, cwd=project).stdout
    lineage = swell_json("status", origin, cwd=project)["forks"]
    assert lineage == [{"run": fork, "at": "s1#1"}]


def test_a_fork_with_another_input_and_a_bad_visit(project: Path, origin: str) -> None:
    bad = swell("fork", origin, "--at", "s1#7", cwd=project)
    assert bad.returncode != 0 and "has no s1#7: step 's1' ran visits 1, 2, 3" in bad.stderr
    assert "Traceback" not in bad.stderr
    assert len(swell_json("list", cwd=project)) == 1  # nothing was created
    badset = swell("fork", origin, "--at", "s1#1", "--set", "stop=yes", cwd=project)
    assert badset.returncode != 0 and "expected context.KEY=VALUE" in badset.stderr
    other = swell("fork", origin, "--at", "s0#2", "--input", "another", cwd=project)
    assert other.returncode == 0, other.stderr
    fork = run_id_of(other.stdout)
    assert swell_json("status", fork, cwd=project)["input"] == "another"


def test_kill_9_during_a_fork_then_resume(project: Path, origin: str, isolated_state: Path) -> None:
    marker = isolated_state.parent / "visit-started"
    env = {**os.environ, "SLOW": str(marker)}
    proc = subprocess.Popen(
        [*_swell(), "fork", origin, "--at", "s0#2"],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    fork = run_id_of(proc.stdout.readline())  # type: ignore[union-attr]
    deadline = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < deadline:  # the fork's first visit runs
        time.sleep(0.02)
    assert marker.exists()
    proc.kill()  # kill -9
    proc.communicate(timeout=30)
    resumed = swell("resume", fork, cwd=project)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert outcome_of(project, fork) == outcome_of(project, origin)
    ws = isolated_state / "workspaces"
    for name in ("a.txt", "b.txt"):
        assert (ws / fork / name).read_text() == (ws / origin / name).read_text()


def test_a_fork_killed_while_restoring_its_workspace_is_restored_on_resume(
    project: Path, origin: str, isolated_state: Path
) -> None:
    rt = open_runtime(project)
    fork = fork_run(rt, origin, parse_at("s1#2"), Fork())
    rt.store.close()
    ws = isolated_state / "workspaces" / fork
    (ws / "a.txt").write_text("half written\n")  # as a restore cut short would leave it
    (ws / "b.txt").unlink()
    resumed = swell("resume", fork, cwd=project)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert (ws / "a.txt").read_text() == (
        isolated_state / "workspaces" / origin / "a.txt"
    ).read_text()
    assert outcome_of(project, fork) == outcome_of(project, origin)


def test_rewind_continues_the_same_run_and_keeps_the_abandoned_visits(
    project: Path, origin: str, isolated_state: Path
) -> None:
    before = events(project, origin)
    ws = isolated_state / "workspaces" / origin
    final = (ws / "a.txt").read_text()
    result = swell("rewind", origin, "--to", "s1#1", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    after = events(project, origin)
    assert after[: len(before)] == before  # nothing deleted
    assert [e["seq"] for e in after] == list(range(1, len(after) + 1))
    rewound = next(e for e in after if e["type"] == "run.rewound")
    assert (rewound["at_step"], rewound["at_visit"]) == ("s1", 1)
    finished = [e for e in after if e["type"] == "step.finished"]
    assert len(finished) == 6 + 4  # the abandoned four are still in the log
    assert (ws / "a.txt").read_text() == final  # the same result again
    assert outcome_of(project, origin) == ("succeeded", {"n": "3"}, 6)
    assert "rewound   to s1#1" in swell("status", origin, cwd=project).stdout
    # its diff leaves the abandoned visits out: s0#2 is the one run after the rewind
    assert "+s0 r1" in swell("diff", origin, "s0#2", cwd=project).stdout
    bad = swell("rewind", origin, "--to", "nope#1", cwd=project)
    assert bad.returncode != 0 and "no visit of step 'nope'" in bad.stderr
