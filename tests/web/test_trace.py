"""The visit page as an agent trace: turns with their text, tool calls and usage, and
the relay and thread context where they happened; the visit's artifacts to download."""

from __future__ import annotations

import re
from pathlib import Path

from helpers import HOSTILE, run_pipeline
from test_pages import get

from swell.events import models as ev
from swell.store.location import open_project_store

RUN = "agent-20261128-000000-trace"


def _store_trace(project: Path) -> None:
    store = open_project_store(project)
    store.create_run(run_id=RUN, pipeline="agent", input_text="", workspace=str(project))
    at = {"step_id": "work", "visit": 1}
    batch: list[ev.BaseEvent] = [
        ev.RunStarted(pipeline="agent", workspace=str(project)),
        ev.StepStarted(kind="prompt", **at),
        ev.ThreadContext(
            thread="impl", fidelity="compact", requested="full", rounds=3, chars=900, **at
        ),
        *[ev.AgentText(text=t, **at) for t in ("Let me ", "read ", "the file.")],
        ev.AgentToolCall(name="Read", target="src/app.py", call_id="c1", **at),
        ev.AgentText(text="It needs a fix.", **at),
        ev.AgentUsage(input_tokens=1200, output_tokens=80, cost_usd=0.0123, **at),
        # a CLI reports the result after the turn's usage: it still belongs to its call
        ev.AgentToolResult(
            call_id="c1", name="Read", output="def app(): <b>", duration_ms=35, **at
        ),
        ev.RelayTriggered(relay=1, tokens=150000, threshold=140000, window=200000, **at),
        ev.RelayCheckpoint(
            relay=1,
            path=".agents/relay/1.md",
            size=2048,
            history_chars=50000,
            summarizer="local",
            **at,
        ),
        ev.RelayResumed(relay=1, prompt_chars=3000, **at),
        ev.AgentToolCall(name="Edit", target="src/app.py", **at),
        ev.AgentText(text="Fixed.", **at),
        ev.AgentUsage(input_tokens=900, output_tokens=40, cost_usd=0.005, **at),
        ev.StepFinished(outcome="success", **at),
    ]
    for seq, event in enumerate(batch, 1):
        event.run_id, event.seq, event.ts = RUN, seq, f"2026-11-28T00:00:{seq * 2:02d}.000Z"
    store.emit(batch)


def test_a_visit_reads_as_turns_with_tools_usage_relay_and_thread(project: Path) -> None:
    _store_trace(project)
    status, html, _ = get(project, f"/runs/{RUN}/visits/work/1")
    assert status == 200
    trace = html[
        html.index('<ol class="trace">') : html.index("</ol>", html.index('<ol class="trace">'))
    ]
    order = re.findall(r'<li class="(\w+)[^"]*"', trace)
    assert order == ["thread", "turn", "relay", "relay", "relay", "turn"]
    assert "Thread <b>impl</b>: 3 rounds, 900 characters, fidelity compact (asked full)" in trace
    turns = re.split(r'<li class="turn"', trace)[1:]
    first, second = turns[0], turns[1]
    assert "Let me read the file." in first and "It needs a fix." in first
    assert "1200 in · 80 out" in first and "$0.0123" in first
    assert "<code>Read</code>" in first and "src/app.py" in first and "35 ms" in first
    assert '<dd class="result"><pre>def app(): &lt;b&gt;</pre>' in first
    assert "<code>Edit</code>" in second and "900 in · 40 out" in second
    assert "2.0 s (until the agent's next event)" in second  # no result: the old guess
    assert "Checkpoint 1 written by local: <code>.agents/relay/1.md</code>" in trace
    _, _, api = get(project, f"/api/runs/{RUN}/visits/work/1")
    assert api is not None and [t["kind"] for t in api["trace"]][:2] == ["thread", "turn"]  # type: ignore[index]


def test_every_artifact_of_the_visit_downloads(project: Path) -> None:
    run_id = run_pipeline(project, "hostile", HOSTILE)
    _, html, _ = get(project, f"/runs/{run_id}/visits/emit/1")
    links = re.findall(r'<a href="([^"]+)" download="([^"]+)">', html)
    _, _, api = get(project, f"/api/runs/{run_id}/visits/emit/1")
    assert api is not None
    assert [n for _, n in links] == [a["name"] for a in api["artifacts"]]  # type: ignore[union-attr]
    assert "report" in [n for _, n in links]
    for url, name in links:
        code, body, _ = get(project, url.replace("&amp;", "&"))
        assert code == 200, name
        if name == "report":
            assert body == "report <b>bold</b>\n"
