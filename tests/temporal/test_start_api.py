"""`POST /api/runs` with `engine: temporal`: the run is the engine's workflow, it waits
at its gate (its hook tells a receiver, once), is approved from the dashboard's form
and finishes on the workers."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import httpx

from conftest import events, swell_cmd, swell_json, wait_for, write_pipeline
from notify.receiver import receiver
from swell.engine.visit.context import RunOptions
from swell.executors import launch
from swell.executors.temporal.client import configured, record_run
from swell.runtime import check_pipeline, open_runtime
from swell.web.app import create_app
from swell.web.state import ServeSettings
from temporal.conftest import Workers
from web.helpers import _free_port

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
    with receiver() as got:
        hooks = "".join(
            f"  - {{name: tell-{e}, event: {e}, type: http, url: '{got.url}'}}\n"
            for e in ("gate_waiting", "run_completed")
        )
        manifest = project / "wave.yaml"
        manifest.write_text(manifest.read_text() + "\nhooks:\n" + hooks)
        workers.start()
        answer = asyncio.run(_start(project))
        assert answer.status_code == 202, answer.text
        started = answer.json()
        assert started["engine"] == "temporal" and started["pid"] is None
        run_id = started["run_id"]
        wait_for(lambda: swell_json("status", run_id, cwd=project)["waiting_gates"], 60)
        wait_for(lambda: got.of("gate_waiting"), 30)
        asyncio.run(_approve_from_the_page(project, run_id))
        wait_for(lambda: swell_json("status", run_id, cwd=project)["status"] == "succeeded", 60)
        wait_for(lambda: got.of("run_completed"), 30)
    [asked] = got.of("gate_waiting")
    assert asked["run_id"] == run_id and asked["gate"]["message"] == "Ship the change for v1?"
    assert [b["type"] for b in got.bodies] == ["gate_waiting", "run_completed"]


def test_a_temporal_run_recorded_but_not_started_is_started_when_serve_starts(
    project: Path, workers: Workers
) -> None:
    """A server killed between recording an API run for the engine and starting its
    workflow: the next `swell serve` starts the workflow, once."""
    write_pipeline(
        project,
        "hello",
        "kind: WavePipeline\nmetadata: {name: hello}\nsteps:\n  - {id: say, type: command, script: echo hi}\n",
    )
    rt = open_runtime(project)
    try:
        loaded, _ = check_pipeline(rt, "hello")
        key = (launch.API_SOURCE, "left-behind", "hello")
        spec = record_run(rt, loaded, "", RunOptions(dispatch_key=key), configured())
    finally:
        rt.store.close()
    workers.start()
    port = _free_port()
    server = subprocess.Popen(
        swell_cmd("serve", "--port", str(port)),
        cwd=project,
        env={**os.environ, "SWELL_SERVE_TOKEN": TOKEN},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        wait_for(
            lambda: swell_json("status", spec.run_id, cwd=project)["status"] == "succeeded", 120
        )
    finally:
        server.terminate()
        out, _ = server.communicate(timeout=30)
    assert f"run {spec.run_id}: recorded before the server stopped; handing it on" in out
    started = [e for e in events(project, spec.run_id) if e["type"] == "run.started"]
    assert len(started) == 1
