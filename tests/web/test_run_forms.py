"""The dashboard's Run form (a pipeline's page, built from its `input`) and "Re-run
from step" (a run's page, `swell run --from-step`), through the HTTP form posts a
browser sends."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
from helpers import client

from conftest import swell, swell_json, wait_for, write_pipeline

TOKEN = "form-token-for-tests"

ASKING = """kind: WavePipeline
metadata: {name: asking, description: "Says what it was given."}
input:
  type: string
  example: "fix the login page"
  schema: {type: string, description: "What to work on, in a sentence."}
steps:
  - id: say
    type: command
    script: echo "given {{ input }}" > said.txt
"""


def counted(tally: Path) -> str:
    return f"""kind: WavePipeline
metadata: {{name: twostep}}
steps:
  - id: first
    type: command
    script: echo first >> {tally}/first.log
  - id: second
    type: command
    dependencies: [first]
    script: echo second >> {tally}/second.log
"""


async def _session(project: Path, token: str | None, steps: Any) -> Any:
    async with client(project, token=TOKEN) as http:
        if token:
            http.cookies.set("swell_token", token)
        csrf = (await http.get("/api/csrf", headers={"Authorization": f"Bearer {TOKEN}"})).json()
        return await steps(http, csrf["token"])


def test_the_run_form_shows_the_pipelines_input_and_starts_a_run(project: Path) -> None:
    write_pipeline(project, "asking", ASKING)

    async def steps(http: httpx.AsyncClient, csrf: str) -> Any:
        page = await http.get("/pipelines/asking")
        listing = await http.get("/pipelines")
        posted = await http.post("/pipelines/asking/run", data={"csrf": csrf, "input": "the docs"})
        return page, listing, posted

    page, listing, posted = asyncio.run(_session(project, TOKEN, steps))
    assert page.status_code == 200
    for shown in ("Input (string)", 'placeholder="fix the login page"', "in a sentence"):
        assert shown in page.text, page.text
    assert 'href="/pipelines/asking"' in listing.text
    assert posted.status_code == 303, posted.text
    run_id = posted.headers["location"].split("/runs/")[1].split("?")[0]
    wait_for(lambda: swell_json("status", run_id, cwd=project)["status"] == "succeeded", 60)
    assert swell_json("status", run_id, cwd=project)["input"] == "the docs"


def test_the_run_form_needs_the_token(project: Path) -> None:
    """On loopback without a token the dashboard reads, but starts nothing."""
    write_pipeline(project, "asking", ASKING)

    async def go() -> tuple[httpx.Response, httpx.Response]:
        async with client(project) as http:
            csrf = (await http.get("/api/csrf")).json()["token"]
            page = await http.get("/pipelines/asking")
            posted = await http.post("/pipelines/asking/run", data={"csrf": csrf, "input": "x"})
            return page, posted

    page, posted = asyncio.run(go())
    assert page.status_code == 200 and "needs the server's token" in page.text, page.text
    assert posted.status_code == 401
    assert swell_json("list", cwd=project) == []


def test_rerun_from_a_step_reuses_what_came_before_it(project: Path, tmp_path: Path) -> None:
    write_pipeline(project, "twostep", counted(tmp_path))
    first = swell("run", "twostep", cwd=project)
    assert first.returncode == 0, first.stderr
    run_id = swell_json("list", cwd=project)[0]["id"]

    async def steps(http: httpx.AsyncClient, csrf: str) -> Any:
        page = await http.get(f"/runs/{run_id}")
        posted = await http.post(f"/runs/{run_id}/rerun", data={"csrf": csrf, "step": "second"})
        return page, posted

    page, posted = asyncio.run(_session(project, TOKEN, steps))
    assert "Re-run from step" in page.text
    assert posted.status_code == 303, posted.text
    rerun = posted.headers["location"].split("/runs/")[1].split("?")[0]
    assert rerun != run_id
    wait_for(lambda: swell_json("status", rerun, cwd=project)["status"] == "succeeded", 60)
    assert (tmp_path / "first.log").read_text() == "first\n"  # reused, not run again
    assert (tmp_path / "second.log").read_text() == "second\nsecond\n"
