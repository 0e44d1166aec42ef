"""Absurd numbers in a request are a 400 naming the value's place, never a 500."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from helpers import client

from conftest import run_id_of, swell

HUGE = "99999999999999999999"


@pytest.fixture
def run_id(project: Path) -> str:
    result = swell("run", "loop", "--input", "x", cwd=project)
    assert result.returncode == 0, result.stderr
    return run_id_of(result.stdout)


def answers(project: Path, urls: list[str]) -> dict[str, tuple[int, str]]:
    async def get_all() -> dict[str, tuple[int, str]]:
        async with client(project) as http:
            return {url: ((r := await http.get(url)).status_code, r.text) for url in urls}

    return asyncio.run(get_all())


def test_absurd_numbers_in_the_api_are_400s_naming_them(project: Path, run_id: str) -> None:
    run = f"/api/runs/{run_id}"
    urls = {
        f"/api/runs?page={HUGE}": "query parameter 'page'",
        "/api/runs?page=0": "query parameter 'page'",
        "/api/runs?per_page=abc": "query parameter 'per_page'",
        f"{run}?page={HUGE}": "query parameter 'page'",
        f"{run}/events?after={HUGE}": "query parameter 'after'",
        f"{run}/events?after=-1": "query parameter 'after'",
        f"{run}/events?limit={HUGE}": "query parameter 'limit'",
        f"{run}/stream?after={HUGE}": "query parameter 'after'",
        f"{run}/thread?before={HUGE}": "query parameter 'before'",
        f"{run}/thread?budget={HUGE}": "query parameter 'budget'",
        f"{run}/visits/implement/{HUGE}": "path segment 'visit'",
        f"{run}/visits/implement/1/output?after={HUGE}": "query parameter 'after'",
        f"{run}/artifacts/implement/{HUGE}/x": "path segment 'visit'",
        "/api/analytics?since=99999999999999d": "reaches back before the year 1",
    }
    found = answers(project, list(urls))
    for url, (status, body) in found.items():
        assert status == 400 and body.startswith('{"detail":"'), (url, status, body)
        assert urls[url] in body, (url, body)


def test_absurd_numbers_in_pages_are_400s(project: Path, run_id: str) -> None:
    urls = [
        f"/?page={HUGE}",
        "/?per_page=0",
        f"/runs/{run_id}?page={HUGE}",
        f"/runs/{run_id}/thread?before={HUGE}",
        f"/runs/{run_id}/thread?budget=x",
        f"/runs/{run_id}/visits/implement/{HUGE}",
        "/analytics?since=9999999999w",
    ]
    for url, (status, body) in answers(project, urls).items():
        assert status == 400 and "Internal" not in body, (url, status, body)


def test_events_page_through_a_run(project: Path, run_id: str) -> None:
    """`after` and `limit` page through the run's events: every one once, in order."""

    async def pages() -> list[list[int]]:
        out: list[list[int]] = []
        after = 0
        async with client(project) as http:
            while page := (
                await http.get(f"/api/runs/{run_id}/events?after={after}&limit=4")
            ).json():
                out.append([e["seq"] for e in page])
                after = out[-1][-1]
        return out

    found = asyncio.run(pages())
    seqs = [seq for page in found for seq in page]
    assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) > 8
    assert all(len(page) == 4 for page in found[:-1])


def test_openapi_says_400_with_the_body_the_server_sends(project: Path) -> None:
    """The API description lists the 400 a bad parameter gets (with its `detail` body),
    never FastAPI's 422, which the server does not answer."""
    found = answers(project, ["/api/openapi.json", "/api/runs?per_page=0"])
    schema = json.loads(found["/api/openapi.json"][1])
    operations = [op for ops in schema["paths"].values() for op in ops.values()]
    assert not [op["operationId"] for op in operations if "422" in op["responses"]]
    bad = schema["paths"]["/api/runs/{run_id}/events"]["get"]["responses"]["400"]
    ref = bad["content"]["application/json"]["schema"]["$ref"]
    body = schema["components"]["schemas"][ref.rsplit("/", 1)[-1]]
    assert body["required"] == ["detail"] and body["properties"]["detail"]["type"] == "string"
    assert "HTTPValidationError" not in schema["components"]["schemas"]
    status, text = found["/api/runs?per_page=0"]
    assert status == 400 and list(json.loads(text)) == ["detail"]
