"""The Analytics and Retro pages and their JSON API, over runs stored by real
`swell run`s (httpx's ASGI transport), and the Analytics page in a real browser."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from helpers import client, page, server  # noqa: F401 - fixtures

from conftest import run_id_of, swell


def _run(project: Path, *args: str) -> str:
    result = swell("run", *args, cwd=project)
    assert result.returncode == 0, result.stderr
    return run_id_of(result.stdout)


async def _get_all(project: Path, *urls: str) -> list[Any]:
    async with client(project) as http:
        return [await http.get(url) for url in urls]


def get(project: Path, *urls: str) -> list[Any]:
    return asyncio.run(_get_all(project, *urls))


def test_analytics_and_retro_api_and_pages(project: Path) -> None:
    first = _run(project, "impl-issue", "--input", "a")
    _run(project, "loop", "--input", "b")
    stats, only, retro, bad, spec = get(
        project,
        "/api/analytics",
        "/api/analytics?pipeline=impl-issue&since=7d",
        f"/api/runs/{first}/retro",
        "/api/analytics?since=soon",
        "/api/openapi.json",
    )
    assert stats.status_code == 200 and stats.json()["runs"] == 2
    body = only.json()
    assert body["runs"] == 1 and body["review_pass_rate"] == 0.5
    assert body["rework_after_review_rate"] == 0.5 and body["friction"]["review_rework"] == 1
    assert retro.json()["counts"]["review_rework"] == 1 and retro.json()["run_id"] == first
    assert bad.status_code == 400 and "--since" in bad.json()["detail"]
    paths = spec.json()["paths"]
    assert "/api/analytics" in paths and "/api/runs/{run_id}/retro" in paths
    page_, retro_page, missing = get(
        project,
        "/analytics?pipeline=impl-issue&since=7d",
        f"/runs/{first}/retro",
        "/runs/nope/retro",
    )
    html = page_.text
    assert page_.status_code == 200 and html.count("<svg") == 5
    assert 'id="review-pass-rate">50% of 2 reviews' in html and "impl-issue/implement" in html
    assert "<script" not in html.split("</head>")[1]  # charts are SVG only
    assert retro_page.status_code == 200 and "review_rework" in retro_page.text
    assert "debugging print left in library code" in retro_page.text
    assert missing.status_code == 404


def test_analytics_page_in_a_browser(project: Path, server: str, page: Any) -> None:  # noqa: F811 - fixtures
    run_id = _run(project, "impl-issue", "--input", "a")
    page.goto(f"{server}/analytics")
    page.select_option("select[name=pipeline]", "impl-issue")
    page.get_by_role("button", name="Show").click()
    page.wait_for_selector("#chart-smoothness svg")
    assert "pipeline=impl-issue" in page.url
    assert page.locator("svg.chart").count() == 5
    assert page.locator("#chart-smoothness rect").count() == 1
    assert "50%" in page.inner_text("#review-pass-rate")
    page.get_by_role("link", name=run_id).click()
    page.wait_for_selector("#friction")
    assert "review_rework" in page.inner_text("#friction")
