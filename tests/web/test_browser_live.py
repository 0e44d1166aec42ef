"""The run page follows a live run by patching what changed, in a real browser: a graph
node's state changes in place (the same DOM element, so focus and hover stay), and new
visits add timeline bars and table rows beside the ones already there."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
from helpers import page, server  # noqa: F401 - fixtures

from conftest import run_id_of, start_swell, swell_json, wait_for, write_pipeline


def two_steps(release: Path) -> str:
    """`first` runs until the test creates `release`; `second` follows it."""
    return f"""kind: WavePipeline
metadata: {{name: moves}}
steps:
  - id: first
    type: command
    script: |
      n=0; while [ ! -e {release} ] && [ $n -lt 1200 ]; do sleep 0.1; n=$((n+1)); done
      echo first done
  - id: second
    type: command
    dependencies: [first]
    script: echo second done
"""


MARK = """() => {
  const node = s => document.querySelector(`#live-run svg.run-graph g.node[data-step="${s}"]`);
  node("first").__mark = "first"; node("second").__mark = "second";
  document.querySelector('#live-run tr[data-key="first#1"]').__mark = "row";
  document.querySelector('#live-run #timeline a[data-step="first"]').__mark = "bar";
}"""
CLASS = "s => document.querySelector(`#live-run g.node[data-step=\"${s}\"]`).getAttribute('class')"


def test_a_nodes_state_changes_in_place_while_the_run_moves(
    project: Path,
    server: str,  # noqa: F811 - the fixture
    page: Any,  # noqa: F811 - the fixture
) -> None:
    from playwright.sync_api import expect

    release = project.parent / "release"
    write_pipeline(project, "moves", two_steps(release))
    proc = start_swell("run", "moves", cwd=project)
    try:
        run_id = run_id_of(proc.stdout.readline())
        wait_for(lambda: swell_json("status", run_id, cwd=project)["steps"])
        page.goto(f"{server}/runs/{run_id}")
        assert "s-running" in page.evaluate(f"({CLASS})('first')")
        assert "unvisited" in page.evaluate(f"({CLASS})('second')")
        page.evaluate(MARK)
        release.touch()
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    expect(page.locator('#live-run g.node[data-step="second"]')).to_have_class(
        "node k-command s-succeeded", timeout=30_000
    )
    expect(page.locator('#live-run tr[data-key="second#1"]')).to_have_count(1, timeout=30_000)
    expect(page.locator("#live-run .stats .badge").first).to_have_text("succeeded")
    same = page.evaluate("""() => {
      const q = s => document.querySelector(s);
      return [
        q('#live-run g.node[data-step="first"]').__mark,
        q('#live-run g.node[data-step="second"]').__mark,
        q('#live-run tr[data-key="first#1"]').__mark,
        q('#live-run #timeline a[data-step="first"]').__mark,
      ];
    }""")
    assert same == ["first", "second", "row", "bar"]  # patched, not re-rendered
    assert "s-succeeded" in page.evaluate(f"({CLASS})('first')")
    assert page.locator('#live-run #timeline a[data-step="second"]').count() == 1
    assert page.locator("#run-visits").inner_text() == "2"


def waits_for(release: Path) -> str:
    return f"n=0; while [ ! -e {release} ] && [ $n -lt 1200 ]; do sleep 0.1; n=$((n+1)); done"


def child_of(one: Path, two: Path) -> str:
    """A child pipeline whose `first` runs until `one` exists, `second` until `two`."""
    return f"""kind: WavePipeline
metadata: {{name: inner}}
steps:
  - {{id: first, type: command, script: "{waits_for(one)}"}}
  - {{id: second, type: command, dependencies: [first], script: "{waits_for(two)}"}}
"""


def parent(zero: Path) -> str:
    """`prepare` runs until `zero` exists; then `nested` runs the child pipeline."""
    return f"""kind: WavePipeline
metadata: {{name: outer}}
steps:
  - {{id: prepare, type: command, script: "{waits_for(zero)}"}}
  - {{id: nested, dependencies: [prepare], pipeline: inner, input: "go"}}
"""


CHILD_STEP = '#live-run g.child-steps rect[data-child-step="{}"]'


def test_a_child_runs_steps_change_live_inside_its_group(
    project: Path,
    server: str,  # noqa: F811 - the fixture
    page: Any,  # noqa: F811 - the fixture
) -> None:
    """A page opened before a sub-pipeline's child run exists shows the child inside
    its group once it starts, and while the child moves, its steps' squares change
    state in place, before the parent run ends."""
    from playwright.sync_api import expect

    zero, one, two = (project.parent / name for name in ("zero", "one", "two"))
    write_pipeline(project, "inner", child_of(one, two))
    write_pipeline(project, "outer", parent(zero))
    proc = start_swell("run", "outer", cwd=project)
    try:
        run_id = run_id_of(proc.stdout.readline())
        wait_for(lambda: swell_json("status", run_id, cwd=project)["steps"])
        page.goto(f"{server}/runs/{run_id}")  # no child run yet
        first, second = CHILD_STEP.format("first"), CHILD_STEP.format("second")
        assert page.locator(first).count() == 0
        zero.touch()
        wait_for(lambda: _child_step_running(server, run_id))
        expect(page.locator(first)).to_have_class("child-step s-running", timeout=30_000)
        assert "s-" not in (page.locator(second).get_attribute("class") or "")
        page.evaluate(f"() => {{ document.querySelector('{second}').__mark = 'kept'; }}")
        one.touch()
        # the child's stream recolours its steps; the parent run still runs
        expect(page.locator(first)).to_have_class("child-step s-succeeded", timeout=30_000)
        expect(page.locator(second)).to_have_class("child-step s-running", timeout=30_000)
        assert swell_json("status", run_id, cwd=project)["status"] == "running"
        assert page.evaluate(f"() => document.querySelector('{second}').__mark") == "kept"
        two.touch()
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    expect(page.locator(second)).to_have_class("child-step s-succeeded", timeout=30_000)
    expect(page.locator('#live-run g.node[data-step="nested"]')).to_have_class(
        re.compile(r"\bs-succeeded\b"), timeout=30_000
    )


def _child_step_running(url: str, run_id: str) -> bool:
    runs = httpx.get(f"{url}/api/runs?per_page=50").json()["runs"]
    children = [r["id"] for r in runs if r["parent_run_id"] == run_id]
    if not children:
        return False
    steps = httpx.get(f"{url}/api/runs/{children[0]}").json()["steps"]
    return any(s["step_id"] == "first" and s["last_status"] == "running" for s in steps)


def _stream_clients(url: str) -> int:
    text = httpx.get(f"{url}/metrics").text
    found = re.search(r"^swell_stream_clients (\d+)$", text, re.M)
    return int(found.group(1)) if found else 0


def test_eight_tabs_of_one_browser_follow_a_run_on_one_stream(
    project: Path,
    server: str,  # noqa: F811 - the fixture
    page: Any,  # noqa: F811 - the fixture
) -> None:
    """Eight tabs of one browser on one live run all show its events as they come,
    through one stream the tabs share (a browser opens at most six connections to
    one host: without the sharing, the seventh tab's stream would wait). A browser
    without SharedWorker follows the run on a stream of its own."""
    from playwright.sync_api import expect

    release = project.parent / "release"
    write_pipeline(project, "moves", two_steps(release))
    proc = start_swell("run", "moves", cwd=project)
    try:
        run_id = run_id_of(proc.stdout.readline())
        wait_for(lambda: swell_json("status", run_id, cwd=project)["steps"])
        context = page.context.browser.new_context()  # one user's browser
        tabs = [context.new_page() for _ in range(8)]
        for tab in tabs:
            tab.goto(f"{server}/runs/{run_id}")
        wait_for(lambda: _stream_clients(server) == 1)
        page.add_init_script("delete window.SharedWorker")  # another user's, older
        page.goto(f"{server}/runs/{run_id}")
        tabs.append(page)
        wait_for(lambda: _stream_clients(server) == 2)
        release.touch()
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    for tab in tabs:  # every tab saw the run move on, without a reload
        expect(tab.locator("#event-log li").last).to_contain_text("run.finished", timeout=30_000)
        expect(tab.locator('#live-run tr[data-key="second#1"]')).to_have_count(1)
        expect(tab.locator("#live-run .stats .badge").first).to_have_text("succeeded")
    wait_for(lambda: _stream_clients(server) == 0)  # the run ended: every stream closed
