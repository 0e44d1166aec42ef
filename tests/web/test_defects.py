"""What a new user saw wrong on the dashboard, each fixed: durations of runs, visits
and gates still going, Cancel on an ended run, the date filters, the agent's text."""

from __future__ import annotations

import re
import time
from pathlib import Path

from helpers import chatty, run_pipeline
from test_pages import get

from conftest import run_id_of, start_swell, swell, swell_json, wait_for, write_pipeline
from swell.events import models as ev
from swell.store.location import open_project_store


def _duration_ms(text: str) -> float:
    """A duration as the pages print it (473 ms, 1.5 s, 3 min 05 s) in ms."""
    found = re.fullmatch(r"(\d+) ms|([\d.]+) s|(\d+) min (\d+) s", text.strip())
    assert found, text
    ms, s, mins, secs = found.groups()
    if ms:
        return float(ms)
    if s:
        return float(s) * 1000
    return (int(mins) * 60 + int(secs)) * 1000.0


def _stat(html: str, label: str) -> str:
    found = re.search(rf'<div class="label">{label}</div><div class="value"[^>]*>(.*?)</div>', html)
    assert found, label
    return re.sub(r"<[^>]+>", "", found.group(1))


def test_a_running_run_counts_its_time_and_its_visit(project: Path) -> None:
    release = project.parent / "release"
    write_pipeline(project, "chatty", chatty(release))
    proc = start_swell("run", "chatty", cwd=project)
    try:
        run_id = run_id_of(proc.stdout.readline())
        wait_for(lambda: swell_json("status", run_id, cwd=project)["steps"])
        time.sleep(1.2)  # the step has now run for over a second, whatever the load
        _, html, _ = get(project, f"/runs/{run_id}")
        assert _duration_ms(_stat(html, "Duration")) >= 1000
        assert _stat(html, "Visits") == "1"
        # the runs list counts the visit going on as the run page does (it said 0)
        _, _, listed = get(project, "/api/runs")
        assert listed is not None and listed["runs"][0]["visits"] == 1  # type: ignore[index]
        _, runs_html, _ = get(project, "/")
        row = runs_html[runs_html.index(run_id) :]
        assert re.search(r"<td[^>]*>1</td>", row[: row.index("</tr>")]), row[:2000]
        _, _, detail = get(project, f"/api/runs/{run_id}")
        assert detail is not None
        assert detail["visits"][0]["duration_ms"] >= 1000  # type: ignore[index]
        # still going: the page counts on by itself between events
        assert re.search(
            r'data-since="[^"]+">[^<]+</span></div></div>\s*<div class="stat"><div class="label">Visits',
            html,
        )
        release.touch()
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_a_gate_waiting_shows_how_long_and_cancel_leaves_when_the_run_ends(project: Path) -> None:
    proc = start_swell("run", "review", "--input", "web", "--wait", cwd=project)
    try:
        run_id = run_id_of(proc.stdout.readline())
        wait_for(lambda: swell_json("status", run_id, cwd=project)["waiting_gates"])
        time.sleep(1.2)
        _, _, detail = get(project, f"/api/runs/{run_id}")
        assert detail is not None
        assert detail["run"]["duration_ms"] >= 1000  # type: ignore[index]
        gate = next(v for v in detail["visits"] if v["step_id"] == "approve")  # type: ignore[union-attr]
        assert gate["duration_ms"] >= 1000
        # the part of the page that live updates replace holds Cancel, so it goes
        _, fragment, _ = get(project, f"/runs/{run_id}?fragment=1")
        assert "Cancel run" in fragment
        # the gate's own box says how long it has waited, and counts on
        waited = re.search(
            r'Gate approve is waiting <span class="muted">for <span data-since="[^"]+">([^<]+)<',
            fragment,
        )
        assert waited is not None and waited.group(1).endswith(" s"), fragment
        assert swell("approve", run_id, "--choice", "ship", cwd=project).returncode == 0
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    _, fragment, _ = get(project, f"/runs/{run_id}?fragment=1")
    assert "succeeded" in fragment and "Cancel run" not in fragment
    _, html, _ = get(project, f"/runs/{run_id}")
    assert "Cancel run" not in html and "data-since" not in html


def test_date_filters_are_date_pickers_and_include_the_whole_day(project: Path) -> None:
    run_id = run_pipeline(project, "hello", (project / ".agents/pipelines/hello.yaml").read_text())
    _, html, _ = get(project, "/")
    assert '<input type="date" name="since"' in html and '<input type="date" name="until"' in html
    assert 'placeholder="2026' not in html
    today = swell_json("status", run_id, cwd=project)["created_at"][:10]
    _, _, body = get(project, f"/api/runs?since={today}&until={today}")
    assert body is not None and [r["id"] for r in body["runs"]] == [run_id]  # type: ignore[union-attr]
    assert body["filters"]["until"] == today  # type: ignore[index]
    _, page, _ = get(project, f"/?until={today}")
    assert f'name="until" value="{today}"' in page and run_id in page


def test_an_agents_streamed_text_is_one_line_per_turn(project: Path) -> None:
    store = open_project_store(project)
    run_id = "chat-20261128-000000-text"
    store.create_run(run_id=run_id, pipeline="chat", input_text="", workspace=str(project))
    pieces = ["Hel", "lo", ", ", "wor", "ld", "!"] * 3 + [" Done", "."]
    batch: list[ev.BaseEvent] = [
        ev.RunStarted(pipeline="chat", workspace=str(project)),
        ev.StepStarted(step_id="ask", visit=1, kind="agent"),
        *[ev.AgentText(step_id="ask", visit=1, text=p) for p in pieces],
        ev.AgentToolCall(step_id="ask", visit=1, name="Read", target="README.md"),
        ev.AgentText(step_id="ask", visit=1, text="Read it."),
        ev.StepFinished(step_id="ask", visit=1, outcome="success"),
    ]
    for seq, event in enumerate(batch, 1):
        event.run_id, event.seq, event.ts = run_id, seq, f"2026-11-28T00:00:{seq:02d}.000Z"
    store.emit(batch)
    _, html, _ = get(project, f"/runs/{run_id}/visits/ask/1")
    shown = re.findall(r"agent\.text[^<]*<", html)
    assert len(shown) == 2, shown  # 20 pieces, then the text after the tool call
    assert "Hello, world!Hello, world!Hello, world! Done." in html
    assert "Read" in html and "README.md" in html
