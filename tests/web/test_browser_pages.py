"""Every dashboard page in a real browser (Debian's chromium through Playwright) on
real runs: a loop with rework, a gate, a sub-pipeline and an iterate (tour.yaml), a
failed run, a running run and one waiting at a gate. Each page loads without a
script error and passes axe-core with no serious or critical violation; the graph's
edges in the page are the pipeline's; the keyboard reaches and opens what the mouse
does. Skipped without chromium unless SWELL_REQUIRE_BROWSER=1 (helpers.page)."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path
from typing import Any

from helpers import chatty, page, run_pipeline, server  # noqa: F401 - fixtures
from test_run_graph import TOUR, manifest_edges

from conftest import run_id_of, start_swell, swell, swell_json, wait_for, write_pipeline

FAILS = """kind: WavePipeline
metadata: {name: fails}
steps:
  - {id: prepare, type: command, script: echo ready}
  - {id: boom, type: command, dependencies: [prepare], script: echo broken >&2; exit 3}
"""


def axe_source() -> str:
    # the dev extra has it; a missing one fails, as every browser test does
    return resources.files("axe_playwright_python").joinpath("axe.min.js").read_text()


def serious(page: Any, source: str) -> list[str]:  # noqa: F811 - the fixture's name
    """axe-core's serious and critical violations on the page, one line each."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.evaluate(source + "\n;window.axe = axe;")
    result = page.evaluate("() => axe.run(document, {resultTypes: ['violations']})")
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes'][:3]]}"
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def test_every_page_on_real_runs_loads_and_is_accessible(
    project: Path,
    server: str,  # noqa: F811 - the fixture
    page: Any,  # noqa: F811 - the fixture
) -> None:
    source = axe_source()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    tour = run_pipeline(project, "tour", TOUR, "--auto-approve")
    write_pipeline(project, "fails", FAILS)
    failed = run_id_of(swell("run", "fails", cwd=project).stdout)
    release = project.parent / "release"
    write_pipeline(project, "chatty", chatty(release))
    running = start_swell("run", "chatty", cwd=project)
    gate = start_swell("run", "review", "--input", "web", "--wait", cwd=project)
    try:
        live = run_id_of(running.stdout.readline())
        waiting = run_id_of(gate.stdout.readline())
        wait_for(lambda: swell_json("status", waiting, cwd=project)["waiting_gates"])
        wait_for(lambda: swell_json("status", live, cwd=project)["steps"])
        child = next(
            r["id"] for r in swell_json("list", cwd=project) if r.get("parent_run_id") == tour
        )
        urls = [
            "/",
            "/?q=tour&status=succeeded",
            "/?waiting=1",
            f"/runs/{tour}",
            f"/runs/{tour}/visits/build/1",
            f"/runs/{tour}/visits/fix/1",
            f"/runs/{tour}/visits/approve/1",
            f"/runs/{child}",
            f"/runs/{failed}",
            f"/runs/{failed}/visits/boom/1",
            f"/runs/{live}",
            f"/runs/{live}/visits/talk/1",
            f"/runs/{waiting}",
            f"/runs/{tour}/thread",
            f"/runs/{tour}/retro",
            "/pipelines",
            "/analytics",
        ]
        for url in urls:
            response = page.goto(server + url)
            assert response is not None and response.status == 200, url
            assert page.locator("header.top nav").count() == 1, url
            found = serious(page, source)
            assert not found, (url, found)
        assert not errors, errors
        # the graph in the page draws the pipeline's edges
        page.goto(f"{server}/runs/{tour}")
        drawn = page.eval_on_selector_all(
            "svg.run-graph g.edge",
            "els => els.map(e => [e.dataset.from, e.dataset.to, e.dataset.kind])",
        )
        assert {tuple(e) for e in drawn} == manifest_edges(TOUR)
        # a command step's timeline bar has the command colour of its graph node
        fills = page.evaluate(
            "() => ['svg.timeline-svg rect.bar.k-command.s-succeeded',"
            " 'svg.run-graph .k-command .bar']"
            ".map(s => getComputedStyle(document.querySelector(s)).fill)"
        )
        assert fills[0] == fills[1], fills
        # the running run says so, with Cancel; the gate waiting offers its choices
        page.goto(f"{server}/runs/{live}")
        assert page.get_by_role("button", name="Cancel run").count() == 1
        page.goto(f"{server}/runs/{waiting}")
        assert page.locator("select[name=choice] option").all_inner_texts() == [
            "Ship it",
            "Rework",
            "Drop",
        ]
        release.touch()
        running.communicate(timeout=60)
        assert swell("approve", waiting, "--choice", "ship", cwd=project).returncode == 0
        gate.communicate(timeout=60)
    finally:
        for proc in (running, gate):
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    # the failed run shows its error and the failed step in the graph
    page.goto(f"{server}/runs/{failed}")
    assert "failed" in page.locator(".stats .badge").first.inner_text()
    assert "s-failed" in (
        page.locator('svg.run-graph g.node[data-step="boom"]').get_attribute("class") or ""
    )


def test_keyboard_reaches_search_graph_and_visits(
    project: Path,
    server: str,  # noqa: F811 - the fixture
    page: Any,  # noqa: F811 - the fixture
) -> None:
    from playwright.sync_api import expect

    tour = run_pipeline(project, "tour", TOUR, "--auto-approve")
    page.goto(f"{server}/")
    page.keyboard.press("Tab")
    expect(page.locator(":focus")).to_have_text("Skip to content")
    page.keyboard.press("/")  # focuses the search box
    expect(page.locator("input[name=q]")).to_be_focused()
    page.keyboard.type("tour")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/\?q=tour"))
    # Tab along the page until the run's link has focus, then open it
    for _ in range(40):
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement.getAttribute('href')") == f"/runs/{tour}":
            break
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(f"/runs/{tour}$"))
    # the graph's nodes are links the keyboard reaches: Enter opens the step's visit
    for _ in range(60):
        page.keyboard.press("Tab")
        href = page.evaluate("() => document.activeElement.getAttribute('href') || ''")
        if "/visits/build/" in href and page.evaluate(
            "() => !!document.activeElement.closest('svg.run-graph')"
        ):
            break
    else:
        raise AssertionError("no graph node took the focus")
    outline = page.evaluate("() => getComputedStyle(document.activeElement).outlineStyle")
    assert outline != "none" or page.evaluate(
        "() => document.activeElement.matches(':focus-visible')"
    )
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/visits/build/3$"))
    expect(page.locator("h1")).to_have_text("build · visit 3")
