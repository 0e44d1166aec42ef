"""Starting runs over HTTP (`POST /api/runs`, `.../resume`): the token is required
(loopback too) and nothing starts without it; bad requests are one 4xx; a run the API
starts is executed by a process the server supervises, waits at its gate, is approved
from the dashboard's form and finishes."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path
from typing import Any

import httpx
from helpers import _free_port, client

from conftest import swell, swell_cmd, swell_json, wait_for, write_pipeline
from swell.executors import launch
from swell.runtime import check_pipeline, open_runtime
from swell.service.dispatch import Settings, record_item
from swell.store.dispatch import DispatchKey
from swell.store.location import open_store, state_dir_for

TOKEN = "start-token-for-tests"
AUTH = {"Authorization": f"Bearer {TOKEN}"}

TYPED = """kind: WavePipeline
metadata: {name: typed}
input:
  type: issue_ref
  example: "o/r#1"
steps:
  - id: say
    type: command
    script: echo "{{ input }}"
"""

JSONIN = """kind: WavePipeline
metadata: {name: jsonin}
input:
  schema: {type: object, description: "a JSON object"}
steps:
  - id: say
    type: command
    script: echo ok
"""


def _runs(project: Path) -> list[Any]:
    listed = swell_json("list", cwd=project)
    return list(listed["runs"] if isinstance(listed, dict) else listed)


def post(project: Path, path: str, body: Any = None, token: str | None = TOKEN, **h: str) -> Any:
    async def go() -> httpx.Response:
        async with client(project, token=token) as http:
            return await http.post(path, json=body, headers=h)

    return asyncio.run(go())


def test_starting_a_run_needs_the_token_also_on_loopback(project: Path) -> None:
    body = {"pipeline": "review", "input": "v1"}
    none = post(project, "/api/runs", body, token=None)  # loopback, no token configured
    assert none.status_code == 401 and "token" in none.json()["detail"]
    wrong = post(project, "/api/runs", body, Authorization="Bearer nope")
    assert wrong.status_code == 401
    missing = post(project, "/api/runs/whatever/resume")
    assert missing.status_code == 401
    assert _runs(project) == []  # nothing was recorded, nothing started


def test_a_bad_start_is_one_clear_error_and_records_nothing(project: Path) -> None:
    write_pipeline(project, "typed", TYPED)
    write_pipeline(project, "jsonin", JSONIN)
    cases = [
        ({"pipeline": "nosuch"}, 404, "nosuch"),
        ({"pipeline": "../etc/passwd"}, 400, "not a pipeline name"),
        ({"pipeline": "typed"}, 400, "needs an input"),
        ({"pipeline": "jsonin", "input": "plain words"}, 400, "must be JSON"),
        ({"pipeline": "jsonin", "input": [1, 2]}, 400, "JSON object"),
        ({"pipeline": "review", "engine": "warp"}, 400, "unknown engine"),
        ({"pipeline": "review", "adapter": "nosuch"}, 400, "nosuch"),
        ({"input": "no pipeline"}, 400, "pipeline"),
    ]
    for body, status, says in cases:
        answer = post(project, "/api/runs", body, **AUTH)
        assert answer.status_code == status, (body, answer.text)
        assert says in answer.json()["detail"], (body, answer.text)
    assert _runs(project) == []


async def _approve_from_the_page(project: Path, run_id: str) -> None:
    async with client(project, token=TOKEN) as http:
        http.cookies.set("swell_token", TOKEN)
        page = await http.get(f"/runs/{run_id}")
        assert "Ship it" in page.text, page.text[:500]
        csrf = (await http.get("/api/csrf")).json()["token"]
        done = await http.post(
            f"/runs/{run_id}/gates/approve/approve", data={"csrf": csrf, "choice": "ship"}
        )
        assert done.status_code == 303 and "approved" in done.headers["location"]


def test_a_run_started_over_http_waits_at_its_gate_and_finishes_once_approved(
    project: Path,
) -> None:
    answer = post(project, "/api/runs", {"pipeline": "review", "input": "v1"}, **AUTH)
    assert answer.status_code == 202, answer.text
    started = answer.json()
    run_id = started["run_id"]
    assert started["engine"] == "local" and started["pid"] is None  # its process starts after
    # the request has returned: the run goes on in the process the server started
    wait_for(lambda: swell_json("status", run_id, cwd=project)["waiting_gates"], 60)
    asyncio.run(_approve_from_the_page(project, run_id))
    wait_for(lambda: swell_json("status", run_id, cwd=project)["status"] == "succeeded", 60)
    assert swell_json("status", run_id, cwd=project)["input"] == "v1"


def test_a_stopped_run_resumed_over_http_finishes(project: Path) -> None:
    started = swell("run", "review", "v2", cwd=project)  # stdin closed: stops at the gate
    run_id = _runs(project)[0]["id"]
    assert swell_json("status", run_id, cwd=project)["status"] == "waiting", started.stderr
    swell("approve", run_id, "approve", "--choice", "ship", cwd=project)
    answer = post(project, f"/api/runs/{run_id}/resume", **AUTH)
    assert answer.status_code == 202, answer.text
    wait_for(lambda: swell_json("status", run_id, cwd=project)["status"] == "succeeded", 60)
    again = post(project, f"/api/runs/{run_id}/resume", **AUTH)
    assert again.status_code == 409, again.text


def test_starting_runs_is_in_the_openapi_description(project: Path) -> None:
    async def go() -> Any:
        async with client(project) as http:
            return (await http.get("/api/openapi.json")).json()

    doc = asyncio.run(go())
    assert "post" in doc["paths"]["/api/runs"]
    assert "post" in doc["paths"]["/api/runs/{run_id}/resume"]
    answers = doc["paths"]["/api/runs"]["post"]["responses"]
    assert {"202", "400", "401"} <= set(answers)
    assert "StartRun" in doc["components"]["schemas"]


def test_runs_the_server_started_go_on_when_it_stops(project: Path) -> None:
    """docs/service.md: a stopped server leaves its runs' processes going."""
    port = _free_port()
    env = {**os.environ, "SWELL_SERVE_TOKEN": TOKEN}
    server = subprocess.Popen(
        swell_cmd("serve", "--port", str(port)),
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _up(url), 30)
        body = {"pipeline": "review", "input": "v3"}
        answer = httpx.post(f"{url}/api/runs", json=body, headers=AUTH, timeout=60)
        assert answer.status_code == 202, answer.text
        run_id = answer.json()["run_id"]
        wait_for(lambda: swell_json("status", run_id, cwd=project)["waiting_gates"], 60)
    finally:
        server.terminate()
        server.wait(30)
    assert swell_json("status", run_id, cwd=project)["status"] == "waiting"
    swell("approve", run_id, "approve", "--choice", "ship", cwd=project)
    wait_for(lambda: swell_json("status", run_id, cwd=project)["status"] == "succeeded", 60)


def _up(url: str) -> bool:
    try:
        return httpx.get(f"{url}/api/runs", headers=AUTH, timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def test_the_answer_comes_once_the_run_is_recorded_before_its_process_starts(
    project: Path,
) -> None:
    """The 202 does not wait for the run's process (seconds on a loaded machine): the
    run is recorded, pending, and claimed by nobody yet when it comes."""
    answer = post(project, "/api/runs", {"pipeline": "review", "input": "v4"}, **AUTH)
    assert answer.status_code == 202, answer.text
    run_id = answer.json()["run_id"]
    store = open_store(state_dir_for(project) / "state.db")
    try:  # not claimed by its process yet (at most by the server, here, handing it on)
        assert store.get_run(run_id).status == "pending"
        owner = store.owner(run_id)
        assert owner is None or owner.pid == os.getpid(), owner
    finally:
        store.close()
    wait_for(lambda: swell_json("status", run_id, cwd=project)["waiting_gates"], 60)
    swell("approve", run_id, "approve", "--choice", "ship", cwd=project)  # its process ends
    wait_for(lambda: swell_json("status", run_id, cwd=project)["status"] == "succeeded", 60)


def test_a_run_recorded_but_not_handed_on_is_started_when_serve_starts(project: Path) -> None:
    """What a server killed between recording a started run and handing it on leaves:
    the run pending, claimed by nobody. The next `swell serve` hands it on."""
    rt = open_runtime(project)
    try:
        loaded, _ = check_pipeline(rt, "review")
        key = DispatchKey(launch.API_SOURCE, "left-behind", "review")
        run_id = record_item(rt, loaded, "v5", key, Settings())
    finally:
        rt.store.close()
    assert swell_json("status", run_id, cwd=project)["status"] == "pending"
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
        wait_for(lambda: swell_json("status", run_id, cwd=project)["waiting_gates"], 60)
    finally:
        server.terminate()
        out, _ = server.communicate(timeout=30)
    assert f"run {run_id}: recorded before the server stopped; handing it on" in out
    swell("approve", run_id, "approve", "--choice", "ship", cwd=project)
    wait_for(lambda: swell_json("status", run_id, cwd=project)["status"] == "succeeded", 60)


def _stopped_at_a_decided_gate(project: Path, text: str) -> str:
    """A run stopped at its gate (stdin closed), the gate approved: nobody executes it."""
    swell("run", "review", text, cwd=project)
    run_id = str(_runs(project)[0]["id"])
    assert swell_json("status", run_id, cwd=project)["status"] == "waiting"
    swell("approve", run_id, "approve", "--choice", "ship", cwd=project)
    return run_id


def test_a_resume_is_answered_once_recorded_before_its_process_starts(project: Path) -> None:
    """As for POST /api/runs: the 202 comes once the resume is recorded, and the
    server hands the run on after it; the run is claimed by no process of its own yet."""
    run_id = _stopped_at_a_decided_gate(project, "v6")
    answer = post(project, f"/api/runs/{run_id}/resume", **AUTH)
    assert answer.status_code == 202, answer.text
    assert answer.json()["pid"] is None  # its process starts after the answer
    store = open_store(state_dir_for(project) / "state.db")
    try:  # claimed by no process but (at most) this one, the server, handing it on
        owner = store.owner(run_id)
        assert owner is None or owner.pid == os.getpid(), owner
    finally:
        store.close()
    wait_for(lambda: swell_json("status", run_id, cwd=project)["status"] == "succeeded", 60)
    assert not list((state_dir_for(project) / launch.RESUMES).iterdir())  # handled


def test_a_resume_recorded_but_not_handed_on_goes_on_when_serve_starts(project: Path) -> None:
    """What a server killed between answering a resume and handing the run on leaves:
    the request recorded, the run stopped. The next `swell serve` hands it on."""
    run_id = _stopped_at_a_decided_gate(project, "v7")
    launch.record_resume(state_dir_for(project), run_id)
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
        wait_for(lambda: swell_json("status", run_id, cwd=project)["status"] == "succeeded", 90)
    finally:
        server.terminate()
        out, _ = server.communicate(timeout=30)
    assert f"run {run_id}: recorded before the server stopped; handing it on" in out
    assert not (state_dir_for(project) / launch.RESUMES / run_id).exists()
