"""`POST /api/runs` with `engine: temporal`: the run is the engine's workflow, it waits
at its gate, is approved from the dashboard's form and finishes on the workers."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from conftest import swell_json, wait_for
from swell.web.app import create_app
from swell.web.state import ServeSettings
from temporal.conftest import Workers

TOKEN = "start-token-for-tests"


def _client(project: Path) -> httpx.AsyncClient:
    app = create_app(ServeSettings(root=project, token=TOKEN))
    transport = httpx.ASGITransport(app=app)
    return httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1")


async def _start(project: Path) -> httpx.Response:
    async with _client(project) as http:
        body = {"pipeline": "review", "input": "v1", "engine": "temporal"}
        return await http.post("/api/runs", json=body, headers={"Authorization": f"Bearer {TOKEN}"})


async def _approve_from_the_page(project: Path, run_id: str) -> None:
    async with _client(project) as http:
        http.cookies.set("swell_token", TOKEN)
        csrf = (await http.get("/api/csrf")).json()["token"]
        done = await http.post(
            f"/runs/{run_id}/gates/approve/approve", data={"csrf": csrf, "choice": "ship"}
        )
        assert done.status_code == 303 and "approved" in done.headers["location"]


def test_a_run_started_over_http_on_temporal_finishes_once_approved(
    project: Path, workers: Workers
) -> None:
    workers.start()
    answer = asyncio.run(_start(project))
    assert answer.status_code == 202, answer.text
    started = answer.json()
    assert started["engine"] == "temporal" and started["pid"] is None
    run_id = started["run_id"]
    wait_for(lambda: swell_json("status", run_id, cwd=project)["waiting_gates"], 60)
    asyncio.run(_approve_from_the_page(project, run_id))
    wait_for(lambda: swell_json("status", run_id, cwd=project)["status"] == "succeeded", 60)
