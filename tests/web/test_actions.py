"""Gate decisions and cancel from the API act on runs other processes execute."""

from __future__ import annotations

import asyncio
from pathlib import Path

from helpers import client

from conftest import run_id_of, start_swell, swell_json, wait_for

SLOW = """kind: WavePipeline
metadata: {name: slow}
steps:
  - id: wait
    type: command
    script: sleep 60
"""


def _waiting(project: Path, run_id: str) -> bool:
    return bool(swell_json("status", run_id, cwd=project)["waiting_gates"])


async def _approve(project: Path, run_id: str) -> None:
    async with client(project) as http:
        token = (await http.get("/api/csrf")).json()["token"]
        page = await http.get(f"/runs/{run_id}")
        assert "Gate approve is waiting" in page.text and "Ship it" in page.text
        done = await http.post(
            f"/api/runs/{run_id}/gates/approve/approve",
            json={"choice": "ship"},
            headers={"X-CSRF-Token": token},
        )
        assert done.status_code == 200, done.text
        assert "approved gate 'approve'" in done.json()["message"]


def test_gate_approved_from_the_api_finishes_the_run(project: Path) -> None:
    proc = start_swell("run", "review", "--input", "v9", "--wait", cwd=project)
    run_id = run_id_of(proc.stdout.readline())  # type: ignore[union-attr]
    wait_for(lambda: _waiting(project, run_id))
    asyncio.run(_approve(project, run_id))
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, out + err
    assert swell_json("status", run_id, cwd=project)["status"] == "succeeded"


async def _reject_with_form(project: Path, run_id: str) -> None:
    async with client(project) as http:
        token = (await http.get("/api/csrf")).json()["token"]
        done = await http.post(
            f"/runs/{run_id}/gates/approve/reject", data={"csrf": token, "reason": "not now"}
        )
        assert done.status_code == 303 and "rejected" in done.headers["location"]


def test_gate_rejected_from_the_page_form(project: Path) -> None:
    proc = start_swell("run", "review", "--wait", cwd=project)
    run_id = run_id_of(proc.stdout.readline())  # type: ignore[union-attr]
    wait_for(lambda: _waiting(project, run_id))
    asyncio.run(_reject_with_form(project, run_id))
    proc.communicate(timeout=60)
    assert swell_json("status", run_id, cwd=project)["status"] == "failed"


async def _cancel(project: Path, run_id: str) -> None:
    async with client(project) as http:
        token = (await http.get("/api/csrf")).json()["token"]
        done = await http.post(f"/api/runs/{run_id}/cancel", headers={"X-CSRF-Token": token})
        assert done.status_code == 200, done.text


def test_cancel_from_the_api_stops_a_running_run(project: Path) -> None:
    from conftest import write_pipeline

    write_pipeline(project, "slow", SLOW)
    proc = start_swell("run", "slow", cwd=project)
    run_id = run_id_of(proc.stdout.readline())  # type: ignore[union-attr]
    wait_for(lambda: swell_json("status", run_id, cwd=project)["status"] == "running")
    asyncio.run(_cancel(project, run_id))
    proc.communicate(timeout=60)
    wait_for(lambda: swell_json("status", run_id, cwd=project)["status"] == "cancelled")
