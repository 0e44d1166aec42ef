"""The dashboard's long work (validating the project, laying out a big run graph) runs
off the event loop: other requests are answered meanwhile."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
from helpers import client

from swell.events import models as ev
from swell.store.location import open_project_store

STEPS = 3_000  # a pipeline whose validation and layout take a good part of a second


def chain(n: int, name: str = "big") -> str:
    lines = ["kind: WavePipeline", f"metadata: {{name: {name}}}", "steps:"]
    for i in range(n):
        dep = f", dependencies: [s{i - 1}]" if i else ""
        lines.append(f"  - {{id: s{i}{dep}, script: 'echo {{{{ input }}}} {i}'}}")
    return "\n".join(lines) + "\n"


def store_run(project: Path, text: str) -> str:
    """A run of the big pipeline, written the way the run loop writes one."""
    store = open_project_store(project)
    run_id = "big-20261127-000000-test"
    store.create_run(
        run_id=run_id, pipeline="big", input_text="", workspace=str(project), pipeline_text=text
    )
    started = ev.RunStarted(pipeline="big", workspace=str(project))
    started.run_id, started.seq, started.ts = run_id, 1, "2026-11-27T00:00:00.000Z"
    store.emit([started])
    store.close()
    return run_id


async def finish_order(project: Path, slow_url: str) -> list[str]:
    """Which of `slow_url` and /api/runs (asked a moment after it) answered first."""
    done: list[str] = []
    async with client(project) as http:

        async def get(url: str) -> httpx.Response:
            response = await http.get(url)
            done.append(url)
            return response

        slow = asyncio.create_task(get(slow_url))
        await asyncio.sleep(0.05)  # the slow request is under way
        quick = await get("/api/runs")
        assert quick.status_code == 200
        assert (await slow).status_code == 200
    return done


def test_validation_does_not_hold_up_other_requests(project: Path) -> None:
    (project / ".agents" / "pipelines" / "big.yaml").write_text(chain(STEPS))
    for url in ("/api/pipelines", "/pipelines"):
        assert asyncio.run(finish_order(project, url)) == ["/api/runs", url]


def test_graph_layout_does_not_hold_up_other_requests(project: Path) -> None:
    run_id = store_run(project, chain(STEPS))
    for url in (f"/api/runs/{run_id}/graph.svg", f"/runs/{run_id}"):
        assert asyncio.run(finish_order(project, url)) == ["/api/runs", url]


def long_run(project: Path, visits: int) -> str:
    """A finished run of `visits` command visits, written as the run loop writes one."""
    store = open_project_store(project)
    run_id = "long-20261127-000000-test"
    store.create_run(run_id=run_id, pipeline="long", input_text="", workspace=str(project))
    events: list[ev.BaseEvent] = [ev.RunStarted(pipeline="long", workspace=str(project))]
    for n in range(1, visits + 1):
        events += [
            ev.StepStarted(step_id="work", visit=n, kind="command"),
            ev.StepFinished(step_id="work", visit=n, outcome="success", duration_ms=3),
        ]
    events.append(ev.RunFinished(status="succeeded", visits=visits, duration_ms=visits * 3))
    for seq, event in enumerate(events, 1):
        event.run_id, event.seq, event.ts = run_id, seq, "2026-11-27T00:00:00.000Z"
    store.emit(events)
    store.close()
    return run_id


def test_a_long_runs_retro_does_not_hold_up_other_requests(project: Path) -> None:
    run_id = long_run(project, 5_000)
    for url in (f"/api/runs/{run_id}/retro", f"/runs/{run_id}/retro"):
        assert asyncio.run(finish_order(project, url)) == ["/api/runs", url]


def test_pipelines_page_follows_edits(project: Path) -> None:
    path = project / ".agents" / "pipelines" / "edited.yaml"
    broken = chain(3, "edited") + "  - {id: x, dependencies: [nowhere], script: x}\n"

    async def states() -> list[bool]:
        found: list[bool] = []
        async with client(project) as http:
            # broken, fixed, and the same files again (the kept result, still right)
            for text in (broken, chain(3, "edited"), None):
                if text is not None:
                    path.write_text(text)
                body = (await http.get("/api/pipelines")).json()
                found += [p["ok"] for p in body["pipelines"] if p["name"] == "edited"]
        return found

    assert asyncio.run(states()) == [False, True, True]


def test_a_visit_with_many_artifacts_lists_a_bounded_page(project: Path) -> None:
    """The run's page and the visit's page list the first 200 artifacts and say how many
    there are; the store reads that page, not all of them (store/pages.py)."""
    run_id = store_run(project, chain(2))
    store = open_project_store(project)
    events: list[ev.BaseEvent] = [ev.StepStarted(step_id="s0", visit=1, kind="command")]
    events += [
        ev.ArtifactWritten(
            step_id="s0", visit=1, name=f"f{n}", path=f"out/f{n}", sha256="a" * 64, size=n
        )
        for n in range(250)
    ]
    for seq, event in enumerate(events, start=2):
        event.run_id, event.seq, event.ts = run_id, seq, "2026-11-27T00:00:01.000Z"
    store.emit(events)
    store.close()

    async def read() -> tuple[dict[str, object], dict[str, object], str]:
        async with client(project) as http:
            run = (await http.get(f"/api/runs/{run_id}")).json()
            visit = (await http.get(f"/api/runs/{run_id}/visits/s0/1")).json()
            page = (await http.get(f"/runs/{run_id}/visits/s0/1")).text
            return run, visit, page

    run, visit, page = asyncio.run(read())
    for shown in (run, visit):
        assert shown["artifacts_total"] == 250
        assert len(shown["artifacts"]) == 200  # type: ignore[arg-type]
    assert "Artifacts (250)" in page
