"""The run page's timeline: a lane per step, a bar per visit, parallel steps side by
side, reworks marked, a gate's wait counted while it waits."""

from __future__ import annotations

import re
import time
from pathlib import Path

from helpers import run_pipeline
from test_pages import get
from test_run_graph import TOUR

from conftest import run_id_of, start_swell, swell, swell_json, wait_for

FORK = """kind: WavePipeline
metadata: {name: fork}
steps:
  - {id: left, type: command, script: sleep 0.4}
  - {id: right, type: command, script: sleep 0.4}
  - {id: join, type: command, dependencies: [left, right], script: echo joined}
"""
BAR = re.compile(
    r'data-step="([^"]+)" data-visit="(\d+)" data-ms="(\d+)"><rect class="([^"]+)" x="([\d.]+)" '
    r'y="[\d.]+" width="([\d.]+)"'
)


def bars(html: str) -> dict[tuple[str, int], tuple[str, float, float, int]]:
    return {
        (step, int(visit)): (cls, float(x), float(w), int(took))
        for step, visit, took, cls, x, w in BAR.findall(html)
    }


def test_every_visit_is_a_bar_in_its_steps_lane_reworks_marked(project: Path) -> None:
    run_id = run_pipeline(project, "tour", TOUR, "--auto-approve")
    _, html, _ = get(project, f"/runs/{run_id}")
    found = bars(html)
    _, _, detail = get(project, f"/api/runs/{run_id}")
    assert detail is not None
    assert set(found) == {(v["step_id"], v["visit"]) for v in detail["visits"]}  # type: ignore[union-attr]
    assert "rework" in found[("fix", 1)][0]
    assert "k-gate" in found[("approve", 1)][0] and "wait" in found[("approve", 1)][0]
    assert "s-failed" in found[("build", 1)][0]
    # visits one after another sit one after another
    assert found[("build", 1)][1] < found[("fix", 1)][1] < found[("build", 2)][1]


def test_parallel_steps_sit_side_by_side(project: Path) -> None:
    run_id = run_pipeline(project, "fork", FORK)
    found = bars(get(project, f"/runs/{run_id}")[1])
    (_, lx, lw, _), (_, rx, rw, _) = found[("left", 1)], found[("right", 1)]
    assert lx < rx + rw and rx < lx + lw  # their times overlap
    assert found[("join", 1)][1] >= max(lx + lw, rx + rw) - 1


def test_a_waiting_gates_bar_runs_to_now(project: Path) -> None:
    proc = start_swell("run", "review", "--input", "web", "--wait", cwd=project)
    try:
        run_id = run_id_of(proc.stdout.readline())
        wait_for(lambda: swell_json("status", run_id, cwd=project)["waiting_gates"])
        time.sleep(1.2)
        gate = bars(get(project, f"/runs/{run_id}")[1])[("approve", 1)]
        assert "running" in gate[0] and "wait" in gate[0] and gate[3] >= 1000
        assert swell("approve", run_id, "--choice", "ship", cwd=project).returncode == 0
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


FINISHED_BAR = re.compile(
    r'<a href="[^"]+" data-step="[^"]+" data-visit="\d+" data-ms="\d+">'
    r'<rect class="bar [^"]*"[^>]*>'
)


def test_a_running_runs_finished_bars_stay_put_and_its_running_bar_grows(
    project: Path,
) -> None:
    """While a run waits at a gate, two requests of its page give the same markup for
    every bar that ended (drawn once, in ms from the first start, not redrawn per
    request); the waiting bar carries its start for the page's script and has grown."""
    proc = start_swell("run", "review", "--input", "web", "--wait", cwd=project)
    try:
        run_id = run_id_of(proc.stdout.readline())
        wait_for(lambda: swell_json("status", run_id, cwd=project)["waiting_gates"])
        first = get(project, f"/runs/{run_id}")[1]
        time.sleep(1.2)
        second = get(project, f"/runs/{run_id}")[1]
        done = [m for m in FINISHED_BAR.findall(first) if "running" not in m]
        assert done and done == [m for m in FINISHED_BAR.findall(second) if "running" not in m]
        gate = [bars(html)[("approve", 1)] for html in (first, second)]
        assert all("running" in g[0] for g in gate)
        assert gate[1][3] >= gate[0][3] + 1000  # waited on
        assert re.search(
            r'data-step="approve" data-visit="1" data-ms="\d+"><rect [^>]*data-start=', second
        )
        assert swell("approve", run_id, "--choice", "ship", cwd=project).returncode == 0
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
