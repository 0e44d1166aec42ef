"""The dashboard in a real browser (Debian's chromium through Playwright): a gate is
approved by clicking, the page follows the run live, hostile output runs no script.

Skipped when chromium or playwright is missing, unless SWELL_REQUIRE_BROWSER=1 (CI),
which makes that a failure. Playwright's own browser downloads are never used."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import HOSTILE, run_pipeline, server  # noqa: F401 - a fixture

from conftest import run_id_of, start_swell, swell_json, wait_for, write_pipeline

CHROMIUM = "/usr/bin/chromium"


def _missing() -> str | None:
    if not (os.access(CHROMIUM, os.X_OK) or shutil.which("chromium")):
        return "chromium is not installed (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed"
    return None


@pytest.fixture
def page() -> Iterator[Any]:
    missing = _missing()
    if missing:
        if os.environ.get("SWELL_REQUIRE_BROWSER") == "1":
            pytest.fail(f"SWELL_REQUIRE_BROWSER=1 but {missing}")
        pytest.skip(missing)
    from playwright.sync_api import sync_playwright

    executable = CHROMIUM if os.access(CHROMIUM, os.X_OK) else shutil.which("chromium")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            yield browser.new_page()
        finally:
            browser.close()


def test_approve_in_the_browser_and_follow_live(project: Path, server: str, page: Any) -> None:  # noqa: F811 - the fixture
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    proc = start_swell("run", "review", "--input", "web", cwd=project)
    try:
        run_id = run_id_of(proc.stdout.readline())
        wait_for(lambda: swell_json("status", run_id, cwd=project)["waiting_gates"])
        page.goto(f"{server}/runs/{run_id}")
        assert "Gate approve is waiting" in page.content()
        page.select_option("select[name=choice]", "ship")
        page.get_by_role("button", name="Approve", exact=True).click()
        page.wait_for_selector(".message")
        assert "approved gate 'approve'" in page.inner_text(".message")
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    # the page follows the run by itself (SSE) until it shows it ended
    from playwright.sync_api import expect

    expect(page.locator("#live-run .badge").first).to_have_text("succeeded", timeout=20000)
    assert page.locator("#event-log li").count() > 0
    assert not dialogs


def test_hostile_output_runs_no_script(project: Path, server: str, page: Any) -> None:  # noqa: F811 - the fixture
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    run_id = run_pipeline(project, "hostile", HOSTILE)
    page.goto(f"{server}/runs/{run_id}/visits/emit/1")
    assert "<script>alert(1)</script>" in page.inner_text("pre.output")
    page.goto(f"{server}/runs/{run_id}/thread")
    page.goto(f"{server}/")
    assert run_id in page.content()
    assert not dialogs


SLOW_STEPS = """kind: WavePipeline
metadata: {name: slowsteps}
steps:
  - {id: one, type: command, script: sleep 1.5}
  - {id: two, type: command, dependencies: [one], script: sleep 0.5}
"""


def test_run_page_follows_a_run_from_another_terminal(
    project: Path,
    server: str,  # noqa: F811 - the fixture
    page: Any,
) -> None:
    from playwright.sync_api import expect

    write_pipeline(project, "slowsteps", SLOW_STEPS)
    proc = start_swell("run", "slowsteps", cwd=project)
    try:
        run_id = run_id_of(proc.stdout.readline())
        page.goto(f"{server}/runs/{run_id}")
        expect(page.locator("#live-run .badge").first).to_have_text("running")
        # no reload: the page's EventSource brings the rest
        expect(page.locator("#live-run .badge").first).to_have_text("succeeded", timeout=20000)
        expect(page.locator("#event-log li").last).to_contain_text("run.finished")
        expect(page.locator("g.step.running")).to_have_count(0)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
