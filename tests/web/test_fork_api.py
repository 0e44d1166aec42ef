"""Issue 33 on the dashboard: `POST /api/runs/{id}/fork` and `.../rewind` (behind the
token, handed to a process the server supervises, in the OpenAPI description), the
visit page's "Fork from here" and "Rewind to here" forms, and the lineage: in
`/api/runs/{id}`, on both runs' pages (linked both ways) and on the run graph."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
from helpers import client, run_pipeline

from conftest import events, swell_json, wait_for

TOKEN = "fork-token-for-tests"
AUTH = {"Authorization": f"Bearer {TOKEN}"}

LOOP = """
kind: WavePipeline
metadata: {name: cnt}
steps:
  - id: work
    max_visits: 6
    script: |
      echo "line $SWELL_VISIT" >> counter.txt
      if [ "$SWELL_VISIT" -ge 4 ]; then echo '{"done": "yes"}'; else echo '{"done": "no"}'; fi
    output:
      context:
        done: "{{ done }}"
    edges:
      - {target: _complete, condition: context.done=yes}
      - {target: _complete, condition: context.extra=stop}
      - {target: work}
"""


async def _call(
    project: Path, method: str, url: str, token: str | None = TOKEN, **kw: Any
) -> httpx.Response:
    async with client(project, token=token) as http:
        if token is not None:  # a server with a token wants it for reading too
            kw.setdefault("headers", AUTH)
        return await http.request(method, url, **kw)


def call(project: Path, method: str, url: str, **kw: Any) -> httpx.Response:
    return asyncio.run(_call(project, method, url, **kw))


def ended_after(project: Path, run_id: str, kind: str) -> bool:
    """The run finished after its last `kind` event (a resumed run's own end)."""
    seen = [e for e in events(project, run_id)]
    marks = [e["seq"] for e in seen if e["type"] == kind]
    return bool(marks) and any(e["type"] == "run.finished" and e["seq"] > marks[-1] for e in seen)


def test_a_fork_over_http_goes_on_from_the_visit_and_is_linked_both_ways(project: Path) -> None:
    origin = run_pipeline(project, "cnt", LOOP)
    body = {"at": "work#2", "context": {"extra": "stop"}}
    refused = call(project, "POST", f"/api/runs/{origin}/fork", json=body, token=None)
    assert refused.status_code == 401 and "token" in refused.json()["detail"]
    bad = call(project, "POST", f"/api/runs/{origin}/fork", json={"at": "work#9"}, headers=AUTH)
    assert bad.status_code == 400 and "work#9" in bad.json()["detail"], bad.text
    assert len(swell_json("list", cwd=project)) == 1  # nothing was forked

    answer = call(project, "POST", f"/api/runs/{origin}/fork", json=body, headers=AUTH)
    assert answer.status_code == 202, answer.text
    fork = answer.json()["run_id"]
    assert fork != origin  # answered once recorded: its process starts after
    wait_for(lambda: swell_json("status", fork, cwd=project)["status"] == "succeeded", 90)
    # visits 1 and 2 are the origin's (copied, not run again); the value given ends it at 3
    ws = Path(swell_json("status", fork, cwd=project)["workspace"])
    assert (ws / "counter.txt").read_text().splitlines() == ["line 1", "line 2", "line 3"]
    detail = call(project, "GET", f"/api/runs/{fork}").json()
    assert detail["context"]["extra"] == "stop"
    mine = detail["lineage"]
    assert mine == {
        "forked_from": {"run_id": origin, "step_id": "work", "visit": 2},
        "forks": [],
    }
    theirs = call(project, "GET", f"/api/runs/{origin}").json()["lineage"]
    assert theirs["forks"] == [{"run_id": fork, "step_id": "work", "visit": 2}]
    page = call(project, "GET", f"/runs/{fork}").text
    assert f'href="/runs/{origin}"' in page and "Forked from" in page
    page = call(project, "GET", f"/runs/{origin}").text
    assert f'href="/runs/{fork}"' in page
    for run_id, note in ((fork, f"forked here from {origin}"), (origin, f"fork {fork} made here")):
        svg = call(project, "GET", f"/api/runs/{run_id}/graph.svg").text
        assert "fork-point" in svg and note in svg, svg[:2000]
    paths = call(project, "GET", "/api/openapi.json").json()["paths"]
    assert "post" in paths["/api/runs/{run_id}/fork"]
    assert "post" in paths["/api/runs/{run_id}/rewind"]


async def _forms(project: Path, run_id: str) -> tuple[httpx.Response, httpx.Response]:
    async with client(project, token=TOKEN) as http:
        http.cookies.set("swell_token", TOKEN)
        page = await http.get(f"/runs/{run_id}/visits/work/2")
        assert f'action="/runs/{run_id}/fork"' in page.text, page.text[-3000:]
        assert f'action="/runs/{run_id}/rewind"' in page.text
        assert "Fork from here" in page.text and "Rewind to here" in page.text
        csrf = (await http.get("/api/csrf")).json()["token"]
        forked = await http.post(
            f"/runs/{run_id}/fork",
            data={"csrf": csrf, "at": "work#2", "input": "", "context": "extra=stop\n\n"},
        )
        rewound = await http.post(f"/runs/{run_id}/rewind", data={"csrf": csrf, "to": "work#3"})
        return forked, rewound


def test_the_visit_page_forks_and_rewinds_through_its_forms(project: Path) -> None:
    origin = run_pipeline(project, "cnt", LOOP)
    forked, rewound = asyncio.run(_forms(project, origin))
    assert forked.status_code == 303, forked.text
    where = forked.headers["location"]
    assert where.startswith("/runs/") and "forked" in where, where
    fork = where.split("?")[0].removeprefix("/runs/")
    assert fork != origin
    assert rewound.status_code == 303 and "rewound" in rewound.headers["location"]
    wait_for(lambda: ended_after(project, origin, "run.rewound"), 90)
    wait_for(lambda: swell_json("status", fork, cwd=project)["status"] == "succeeded", 90)
    ws = Path(swell_json("status", fork, cwd=project)["workspace"])
    assert (ws / "counter.txt").read_text().splitlines() == ["line 1", "line 2", "line 3"]
    status = swell_json("status", origin, cwd=project)
    assert status["status"] == "succeeded"
    assert [r["to"] for r in status["rewinds"]] == ["work#3"]
