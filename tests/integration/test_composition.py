"""Composition steps through the CLI, on tests/fixtures/composition: iterate and
aggregate, branch (with the scripted adapter), loop, `swell status` listing a step's
children, and `swell resume` after kill -9 in the middle of a parallel iterate."""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path

import pytest

from conftest import REPO, events, run_id_of, start_swell, swell, swell_json, wait_for

FIXTURE = REPO / "tests" / "fixtures" / "composition"


@pytest.fixture(name="comp")
def comp_fixture(tmp_path: Path) -> Path:
    dest = tmp_path / "composition"
    shutil.copytree(FIXTURE, dest)
    return dest


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_fanout_iterates_in_parallel_and_aggregates(comp: Path) -> None:
    result = swell("run", "fanout", cwd=comp)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    status = swell_json("status", run_id, cwd=comp)
    assert status["status"] == "succeeded"
    children = status["child_runs"]
    assert [(c["step_id"], c["item"], c["pipeline"], c["status"]) for c in children] == [
        ("each", i, "item", "succeeded") for i in range(4)
    ]
    assert sorted(status["children"]) == sorted(c["run_id"] for c in children)
    text = swell("status", run_id, cwd=comp).stdout
    for c in children:
        assert f"each item {c['item']}" in text and c["run_id"] in text
    report = [e for e in events(comp, run_id) if e["type"] == "step.finished"][-1]
    found = [f"{n}-{k}" for n in ("alpha", "beta", "gamma", "delta") for k in (1, 2)]
    assert json.loads(report["output_tail"]) == found


def test_branch_picks_a_case_runs_an_agent_and_skips(comp: Path) -> None:
    wrote = swell("run", "route", "write", cwd=comp)
    assert wrote.returncode == 0, wrote.stdout + wrote.stderr
    status = swell_json("status", run_id_of(wrote.stdout), cwd=comp)
    (child,) = status["child_runs"]
    assert (child["step_id"], child["pipeline"], child["status"]) == (
        "pick",
        "write-up",
        "succeeded",
    )
    artifacts = swell_json("artifacts", run_id_of(wrote.stdout), cwd=comp)
    summary = next(a for a in artifacts if a["name"] == "summary" and a["step_id"] == "pick")
    assert Path(summary["path"]).read_text() == "a careful summary\n"

    plain = swell("run", "route", "other", cwd=comp)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    plain_id = run_id_of(plain.stdout)
    (child,) = swell_json("status", plain_id, cwd=comp)["child_runs"]
    out = [e for e in events(comp, child["run_id"]) if e["type"] == "step.finished"]
    assert out[-1]["output_tail"] == "plain other (careful)\n"

    skipped = swell("run", "route", "none", cwd=comp)
    assert skipped.returncode == 0, skipped.stdout + skipped.stderr
    assert swell_json("status", run_id_of(skipped.stdout), cwd=comp)["child_runs"] == []


def test_loop_runs_its_sub_steps_until_the_condition_holds(comp: Path) -> None:
    result = swell("run", "repeat", cwd=comp)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    status = swell_json("status", run_id, cwd=comp)
    assert status["status"] == "succeeded" and status["context"] == {"tests": "pass"}
    fix = [e for e in events(comp, run_id) if e["type"] == "step.finished"][-1]
    assert fix["output_tail"] == "2 iterations"


def test_kill_9_in_a_parallel_iterate_then_resume_runs_only_the_missing_items(
    comp: Path, isolated_state: Path
) -> None:
    # two items hold (max_concurrent 2 of 4): both are running when the run is killed
    for name in ("gamma", "delta"):
        (comp / f"hold-{name}").touch()
    proc = start_swell("run", "fanout", cwd=comp)
    wait_for(lambda: set(_lines(comp / "started.txt")) >= {"gamma", "delta"}, timeout=60)
    assert set(_lines(comp / "finished.txt")) == {"alpha", "beta"}
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert proc.stdout is not None and proc.stderr is not None
    first_line = proc.stdout.readline()
    proc.stdout.close()
    proc.stderr.close()
    run_id = first_line.split()[1]
    status = swell_json("status", run_id, cwd=comp)
    assert status["status"] == "running" and status["stale"] is True
    by_item = {c["item"]: c for c in status["child_runs"]}
    assert {by_item[i]["status"] for i in (0, 1)} == {"succeeded"}
    assert {by_item[i]["status"] for i in (2, 3)} == {"running"}

    # resume stops the killed items' leftover processes and runs their visits again
    resuming = start_swell("resume", run_id, cwd=comp)
    wait_for(lambda: len(_lines(comp / "started.txt")) == 6, timeout=60)
    for name in ("gamma", "delta"):
        (comp / f"hold-{name}").unlink()
    out, err = resuming.communicate(timeout=120)
    assert resuming.returncode == 0, out + err
    final = swell_json("status", run_id, cwd=comp)
    assert final["status"] == "succeeded"
    # the finished items did not run again; the killed ones ran once more, to the end
    assert sorted(_lines(comp / "started.txt")) == sorted(
        ["alpha", "beta", "gamma", "delta", "gamma", "delta"]
    )
    assert sorted(_lines(comp / "finished.txt")) == ["alpha", "beta", "delta", "gamma"]
    assert [c["item"] for c in final["child_runs"]] == [0, 1, 2, 3]
    assert {c["run_id"] for c in final["child_runs"]} == {c["run_id"] for c in by_item.values()}
    assert all(c["status"] == "succeeded" for c in final["child_runs"])
    collected = json.loads(
        (isolated_state / "workspaces" / run_id / ".agents/output/each-collected.json").read_text()
    )
    assert [slot["item"] for slot in collected] == ["alpha", "beta", "gamma", "delta"]
