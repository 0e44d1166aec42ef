"""`swell bench report`: rates with Wilson intervals, the exact McNemar test, text,
JSON and an HTML page (also served by the dashboard at /bench/BENCH)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest
from bench_helpers import bench_project, tiny_dataset

from conftest import swell
from swell.bench.stats import mcnemar_exact, wilson
from swell.web.app import create_app
from swell.web.state import ServeSettings


def test_wilson_interval_matches_its_formula_at_the_edges_too() -> None:
    assert [round(x, 4) for x in wilson(2, 4)] == [0.1500, 0.8500]
    assert [round(x, 4) for x in wilson(0, 10)] == [0.0, 0.2775]
    assert [round(x, 4) for x in wilson(10, 10)] == [0.7225, 1.0]
    assert wilson(0, 0) == (0.0, 1.0)


def test_exact_mcnemar_is_a_binomial_test_of_the_discordant_tasks() -> None:
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(3, 0) == 0.25
    assert mcnemar_exact(5, 1) == pytest.approx(2 * (1 + 6) / 64)
    assert mcnemar_exact(2, 2) == 1.0
    assert mcnemar_exact(10, 0) == pytest.approx(2 / 1024)


async def _get(project: Path, *urls: str) -> list[httpx.Response]:
    app = create_app(ServeSettings(root=project))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        return [await http.get(url) for url in urls]


def test_report_text_json_html_compare_and_the_dashboard_page(tmp_path: Path) -> None:
    dataset = tiny_dataset(tmp_path, 3)
    project = bench_project(tmp_path, dataset)
    first = swell(
        "bench", "run", str(dataset), "-p", "gold", "-p", "half", "-o", "json", cwd=project
    )
    assert first.returncode == 0, first.stderr
    bench = json.loads(first.stdout)["bench_id"]
    second = swell("bench", "run", str(dataset), "-p", "empty", "-o", "json", cwd=project)
    other = json.loads(second.stdout)["bench_id"]

    text = swell("bench", "report", bench, cwd=project).stdout
    assert "gold: resolved 3/3 = 100.0% (95% CI 43.9%-100.0%)" in text
    assert "half: resolved 2/3 = 66.7% (95% CI 20.8%-93.9%)" in text
    assert "gold vs half on 3 tasks: both 2, neither 0, only gold 1, only half 0" in text
    assert "  only gold: calc-1" in text
    assert "  calc-1  gold=resolved  half=unresolved" in text

    compared = json.loads(
        swell("bench", "report", bench, "--compare", other, "-o", "json", cwd=project).stdout
    )
    labels = [p["label"] for p in compared["pipelines"]]
    assert labels == ["gold", "half", f"empty@{other}"]
    pair = next(p for p in compared["pairs"] if p["a"] == "half")
    assert (pair["b"], pair["only_a"], pair["only_b"]) == (
        f"empty@{other}",
        ["calc-0", "calc-2"],
        [],
    )

    page = swell("bench", "report", bench, "-o", "html", cwd=project).stdout
    assert page.startswith("<!doctype html>") and page.count("<svg") == 3
    assert '<td class="unresolved">unresolved</td>' in page

    served, api, missing = asyncio.run(
        _get(project, f"/bench/{bench}", f"/api/bench/{bench}", "/bench/bench-nope")
    )
    assert served.status_code == 200 and served.text == page
    assert api.json()["pipelines"][0]["resolved"] == 3
    assert missing.status_code == 404

    unknown = swell("bench", "report", "bench-nope", cwd=project)
    assert unknown.returncode == 1 and unknown.stderr.startswith("error: no bench 'bench-nope'")
