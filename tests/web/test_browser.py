"""The dashboard in a real browser (Debian's chromium through Playwright): a gate is
approved by clicking, the page follows the run live, hostile output runs no script.

Skipped when chromium or playwright is missing, unless SWELL_REQUIRE_BROWSER=1 (CI),
which makes that a failure. Playwright's own browser downloads are never used."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from helpers import HOSTILE, chatty, page, run_pipeline, server  # noqa: F401 - fixtures

from conftest import run_id_of, start_swell, swell, swell_json, wait_for, write_pipeline


def test_approve_in_the_browser_and_follow_live(project: Path, server: str, page: Any) -> None:  # noqa: F811 - the fixture
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    proc = start_swell("run", "review", "--input", "web", "--wait", cwd=project)
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
    page: Any,  # noqa: F811 - the fixture
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


def test_review_verdict_and_thread_paging_in_the_browser(
    project: Path,
    server: str,  # noqa: F811 - the fixture
    page: Any,  # noqa: F811 - the fixture
) -> None:
    from playwright.sync_api import expect

    reviewed = swell("run", "impl-issue", "--input", "add a greeting", cwd=project)
    assert reviewed.returncode == 0, reviewed.stdout + reviewed.stderr
    run_id = run_id_of(reviewed.stdout)
    page.goto(f"{server}/runs/{run_id}")
    page.click("a[href$='/visits/implement/1']")  # from the run's visits to the reviewed one
    review = page.locator("section.review")
    expect(review.locator("h3")).to_contain_text("reviewer: rework")
    expect(review).to_contain_text("debugging print left in library code")
    # the thread, one round a page: "load earlier" brings the rounds it left out
    page.goto(f"{server}/runs/{run_id}/thread?budget=1")
    expect(page.locator("p.omitted")).to_contain_text("rounds omitted")
    shown = page.locator("h2, h3").all_inner_texts()
    page.click("p.omitted a")
    expect(page).to_have_url(re.compile(r"thread\?before=\d+&budget=1"))
    assert page.locator("h2, h3").all_inner_texts() != shown


def test_a_running_visits_output_grows_on_its_page(
    project: Path,
    server: str,  # noqa: F811 - the fixture
    page: Any,  # noqa: F811 - the fixture
) -> None:
    from playwright.sync_api import expect

    release = project.parent / "release"
    write_pipeline(project, "chatty", chatty(release))
    proc = start_swell("run", "chatty", cwd=project)
    try:
        run_id = run_id_of(proc.stdout.readline())
        wait_for(lambda: swell_json("status", run_id, cwd=project)["steps"])
        page.goto(f"{server}/runs/{run_id}/visits/talk/1")
        expect(page.locator("#live-output")).to_contain_text("line 1", timeout=20000)
        release.touch()
        # no reload: the page's EventSource appends the rest as it is printed
        expect(page.locator("#live-output")).to_contain_text("line 6", timeout=20000)
        text = page.locator("#live-output").inner_text()
        assert text.count("line 1") == 1  # what the page showed first is not sent again
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_run_form_in_the_browser(project: Path, page: Any) -> None:  # noqa: F811 - the fixture
    """`swell serve` prints the token that starts runs; once opened with it, the
    pipeline's Run form starts a run that waits at its gate, and Approve finishes it."""
    from helpers import _free_port
    from playwright.sync_api import expect

    port = _free_port()
    proc = start_swell("serve", "--port", str(port), cwd=project)
    try:
        proc.stdout.readline()  # type: ignore[union-attr]
        said = proc.stdout.readline()  # type: ignore[union-attr]
        found = re.search(r"\?token=(\S+)", said)
        assert found, said
        url = f"http://127.0.0.1:{port}"
        wait_for(lambda: _answers(f"{url}/api/runs"), 30)
        page.goto(f"{url}/?token={found.group(1)}")
        page.goto(f"{url}/pipelines/review")
        page.fill("#run-input", "from the browser")
        page.get_by_role("button", name="Run review").click()
        page.wait_for_selector(".message")
        assert "started run" in page.inner_text(".message")
        page.wait_for_selector("select[name=choice]", timeout=30000)
        page.select_option("select[name=choice]", "ship")
        page.get_by_role("button", name="Approve", exact=True).click()
        expect(page.locator("#live-run .badge").first).to_have_text("succeeded", timeout=30000)
    finally:
        proc.terminate()
        proc.communicate(timeout=20)


def _answers(url: str) -> bool:
    import httpx

    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.HTTPError:
        return False
