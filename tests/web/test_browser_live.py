"""The run page follows a live run by patching what changed, in a real browser: a graph
node's state changes in place (the same DOM element, so focus and hover stay), and new
visits add timeline bars and table rows beside the ones already there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
