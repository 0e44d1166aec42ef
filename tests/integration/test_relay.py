"""Relay: a filling context is handed over mid-step through a summarizer checkpoint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import events, run_id_of, swell, swell_json, write_pipeline

MANIFEST = """
kind: WaveManifest
adapters:
  scripted:
    options: {{script: replies.yaml, calls: calls.jsonl}}
personas:
  coder: {{adapter: scripted, system_prompt: "You write code.", permissions: {{allowed_tools: [Read, Write, Bash]}}}}
  summarizer: {{adapter: scripted}}
runtime:
{relay}
"""
RELAY = """  relay:
    strategy: summarize_to_checkpoint
    token_threshold_percent: 80
    context_window: 100000
    summarizer_persona: summarizer
    max_relays: {max_relays}"""

PIPELINE = """
kind: WavePipeline
metadata: {name: long}
steps:
  - id: setup
    type: command
    script: mkdir -p src && echo "draft" > src/app.py
  - id: work
    persona: coder
    thread: impl
    dependencies: [setup]
    exec: {type: prompt, source: "Refactor src/app.py into modules."}
"""


def turn(tokens: int, text: str = "") -> str:
    return f"      - {{text: {json.dumps(text)}, usage: {{input_tokens: {tokens // 2}, cache_read_tokens: {tokens - tokens // 2}, output_tokens: 50}}}}\n"


def reply_with_turns(*tokens: int, final: str = "Done.") -> str:
    return (
        "  - step: work\n    turns:\n"
        + "".join(turn(t, f"turn at {t}") for t in tokens)
        + f"    text: {json.dumps(final)}\n    usage: {{input_tokens: 1000, output_tokens: 200}}\n"
    )


CHECKPOINT = """  - step: work.checkpoint
    text: |
      ## Completed Work
      Split parse() out of app.py (relay {n}).
      ## Current State
      Tests not run yet.
      ## Remaining Work
      Move render() as well.
      ## Resume Instructions
      Continue with render().
"""


def setup(project: Path, replies: str, relay: bool = True, max_relays: int = 3) -> None:
    (project / "wave.yaml").write_text(
        MANIFEST.format(relay=RELAY.format(max_relays=max_relays) if relay else "  {}")
    )
    (project / "replies.yaml").write_text("replies:\n" + replies)
    write_pipeline(project, "long", PIPELINE)


def calls(project: Path, step: str) -> list[dict[str, Any]]:
    found = [json.loads(line) for line in (project / "calls.jsonl").read_text().splitlines()]
    return [c for c in found if c["step_id"] == step]


def test_relay_fires_at_the_threshold_and_a_fresh_instance_finishes(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    setup(
        project,
        reply_with_turns(10_000, 50_000, 79_000, 85_000, 99_000)
        + CHECKPOINT.format(n=1)
        + reply_with_turns(5_000, final="Finished the refactor."),
    )
    result = swell("run", "long", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    evs = events(project, run_id)
    triggered = [e for e in evs if e["type"] == "relay.triggered"]
    assert [(e["tokens"], e["threshold"], e["window"]) for e in triggered] == [
        (85_000, 80_000, 100_000)
    ]
    usages = [e["input_tokens"] + e["cache_read_tokens"] for e in evs if e["type"] == "agent.usage"]
    assert 99_000 not in usages  # the first instance was stopped right at 85,000
    assert [e["relay"] for e in evs if e["type"] == "relay.resumed"] == [1]

    fresh = calls(project, "work")[1]
    assert fresh["resume_session"] is None
    prompt = fresh["prompt"]
    assert (
        "# Checkpoint (relay 1)\n\n## Completed Work" in prompt
        and "Split parse() out of app.py" in prompt
    )
    assert "## Modified Files\n- src/app.py" in prompt  # from the workspace diff
    assert prompt.rstrip().endswith("Refactor src/app.py into modules.")
    summarizer = calls(project, "work.checkpoint")[0]
    assert "turn at 50000" in summarizer["prompt"] and summarizer["denied_tools"]
    assert "Write" not in summarizer["allowed_tools"] and summarizer["temperature"] == 0.0

    checkpoint = next(e for e in evs if e["type"] == "relay.checkpoint")
    assert Path(checkpoint["path"]).read_text().startswith("# Checkpoint (relay 1)")
    rounds = swell_json("thread", run_id, "--thread", "impl", cwd=project)["rounds"]
    assert [r["role"] for r in rounds] == ["work:checkpoint", "work"]
    assert rounds[1]["metadata"]["relays"] == 1
    status = swell_json("status", run_id, cwd=project)
    assert status["status"] == "succeeded"


def test_two_relays_and_the_fresh_instance_gets_only_the_latest_checkpoint(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    setup(
        project,
        reply_with_turns(90_000)
        + CHECKPOINT.format(n=1)
        + CHECKPOINT.format(n=2)
        + reply_with_turns(95_000)
        + reply_with_turns(1_000, final="ok"),
    )
    result = swell("run", "long", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    third = calls(project, "work")[2]["prompt"]
    assert "# Checkpoint (relay 2)" in third and "(relay 2)." in third
    assert "Checkpoint (relay 1)" not in third and "(relay 1)." not in third
    evs = events(project, run_id_of(result.stdout))
    assert [e["relay"] for e in evs if e["type"] == "relay.triggered"] == [1, 2]


def test_max_relays_and_an_oversized_history_halt_the_run(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    setup(
        project,
        reply_with_turns(90_000) + CHECKPOINT.format(n=1) + reply_with_turns(90_000),
        max_relays=1,
    )
    result = swell("run", "long", cwd=project)
    assert result.returncode == 1
    assert "after 1 relays (max_relays)" in result.stdout

    setup(project, reply_with_turns(90_000) + CHECKPOINT.format(n=1))
    (project / "wave.yaml").write_text(
        (project / "wave.yaml").read_text() + "    summarizer_max_tokens: 10\n"
    )
    (project / "calls.jsonl").unlink()
    halted = swell("run", "long", cwd=project)
    assert halted.returncode == 1
    assert "larger than the summarizer's cap (10 tokens); not compacting" in halted.stdout
    assert calls(project, "work.checkpoint") == []


def test_no_relay_unless_configured(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    setup(project, reply_with_turns(90_000, 99_000, final="Finished anyway."), relay=False)
    result = swell("run", "long", cwd=project)
    assert result.returncode == 0, result.stdout
    kinds = [e["type"] for e in events(project, run_id_of(result.stdout))]
    assert not any(k.startswith("relay.") for k in kinds)
    assert len(calls(project, "work")) == 1


def test_parallel_visits_relay_independently(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    setup(project, "")
    (project / "replies.yaml").write_text(
        "replies:\n"
        + (
            reply_with_turns(90_000).replace("step: work", "step: left")
            + reply_with_turns(2_000, final="left done").replace("step: work", "step: left")
            + reply_with_turns(3_000, final="right done").replace("step: work", "step: right")
            + CHECKPOINT.format(n=1).replace("work.checkpoint", "left.checkpoint")
        )
    )
    write_pipeline(
        project,
        "par",
        """
kind: WavePipeline
metadata: {name: par}
steps:
  - id: left
    persona: coder
    exec: {type: prompt, source: "left task"}
  - id: right
    persona: coder
    exec: {type: prompt, source: "right task"}
""",
    )
    result = swell("run", "par", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    evs = events(project, run_id_of(result.stdout))
    assert [(e["step_id"], e["relay"]) for e in evs if e["type"] == "relay.triggered"] == [
        ("left", 1)
    ]
