"""Relay: a filling context is handed over mid-step through a summarizer checkpoint."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from agent_clis import cli_path
from conftest import events, run_id_of, swell, swell_json, write_pipeline
from twins.server import Reply, ToolCall, Twin

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


def test_relay_waits_for_the_tool_call_in_flight_and_hands_over_at_the_turn_boundary(
    tmp_path: Path,
) -> None:
    """The turn that crosses the threshold asked for a tool call: it runs (its file is
    written, the checkpoint lists it) before the agent is stopped; the turn after it
    never starts."""
    project = tmp_path / "p"
    project.mkdir()
    setup(
        project,
        """  - step: work
    turns:
      - {text: "reading", usage: {input_tokens: 10000, output_tokens: 50}}
      - text: "writing the parser"
        tool_call: {name: Write, target: src/parse.py}
        files: {src/parse.py: "def parse(): ...\\n"}
        usage: {input_tokens: 40000, cache_read_tokens: 45000, output_tokens: 50}
        delay: 0.3
      - {text: "next turn", usage: {input_tokens: 90000, output_tokens: 50}}
    text: "never reached"
"""
        + CHECKPOINT.format(n=1)
        + reply_with_turns(5_000, final="Finished the refactor."),
    )
    result = swell("run", "long", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    ws = Path(swell_json("status", run_id, cwd=project)["workspace"])
    assert (ws / "src" / "parse.py").read_text() == "def parse(): ...\n"
    evs = [e for e in events(project, run_id) if e["step_id"] == "work"]
    kinds = [e["type"] for e in evs]
    assert kinds.index("agent.tool_call") < kinds.index("relay.triggered")
    triggered = next(e for e in evs if e["type"] == "relay.triggered")
    assert triggered["tokens"] == 85_000
    texts = [e["text"] for e in evs if e["type"] == "agent.text"]
    assert "next turn" not in texts and "never reached" not in texts
    fresh = calls(project, "work")[1]["prompt"]
    assert "## Modified Files\n- src/app.py\n- src/parse.py" in fresh


def test_a_checkpoint_path_planted_as_a_link_is_replaced_not_written_through(
    tmp_path: Path,
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    victim = tmp_path / "bashrc"
    victim.write_text("# mine\n")
    setup(
        project,
        reply_with_turns(90_000) + CHECKPOINT.format(n=1) + reply_with_turns(1_000, final="ok"),
    )
    write_pipeline(
        project,
        "long",
        PIPELINE.replace(
            'script: mkdir -p src && echo "draft" > src/app.py',
            "script: |\n"
            '      mkdir -p src && echo "draft" > src/app.py\n'
            '      mkdir -p "../../runs/$SWELL_RUN_ID/work/1"\n'
            f'      ln -s {victim} "../../runs/$SWELL_RUN_ID/work/1/checkpoint-1.md"',
        ),
    )
    result = swell("run", "long", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert victim.read_text() == "# mine\n"
    checkpoint = next(
        e for e in events(project, run_id_of(result.stdout)) if e["type"] == "relay.checkpoint"
    )
    path = Path(checkpoint["path"])
    assert not path.is_symlink() and path.read_text().startswith("# Checkpoint (relay 1)")


@pytest.mark.agent_cli
def test_claude_relays_after_the_tool_call_in_flight_has_run(tmp_path: Path) -> None:
    """Real Claude Code against the twin: the reply that crosses the threshold asks for a
    Write; the file is written and its result reported before swell stops the session."""
    binary = cli_path("claude")
    project = tmp_path / "proj"
    project.mkdir()
    (project / "replies.yaml").write_text("""replies:
  - step: implement.checkpoint
    text: |
      ## Completed Work
      Wrote proof.txt (CHECKPOINT-MARK).
      ## Remaining Work
      Say you are done.
""")
    (project / "wave.yaml").write_text(f"""
kind: WaveManifest
adapters:
  claude: {{binary: {binary}}}
  scripted: {{options: {{script: replies.yaml}}}}
personas:
  coder:
    adapter: claude
    model: claude-sonnet-4-5
    permissions: {{allowed_tools: [Read, Write, Bash]}}
  summarizer: {{adapter: scripted}}
runtime:
  relay: {{strategy: summarize_to_checkpoint, token_threshold_percent: 80, summarizer_persona: summarizer}}
""")
    write_pipeline(
        project,
        "fix",
        """
kind: WavePipeline
metadata: {name: fix}
steps:
  - id: implement
    persona: coder
    exec: {type: prompt, source: "Write proof.txt."}
""",
    )
    first = [
        Reply(
            tool_calls=[ToolCall("Bash", {"command": "echo step one"})],
            usage={"input_tokens": 20_000, "cache_read_input_tokens": 40_000, "output_tokens": 30},
        ),
        Reply(
            text="Writing the proof now.",
            tool_calls=[ToolCall("Write", {"file_path": "proof.txt", "content": "written\n"})],
            usage={"input_tokens": 30_000, "cache_read_input_tokens": 140_000, "output_tokens": 30},
        ),
        # the call after the Write's result: swell stops the session before it is answered
        Reply(tool_calls=[ToolCall("Bash", {"command": "echo never"})], delay=10),
    ]
    fresh = [Reply(text="Done after the relay.")]

    def choose(request: Any) -> Reply:
        relayed = "CHECKPOINT-MARK" in json.dumps(request.body)
        earlier = [
            c
            for c in request.twin.model_calls[:-1]
            if ("CHECKPOINT-MARK" in json.dumps(c.body)) == relayed
        ]
        pool = fresh if relayed else first
        return pool[min(len(earlier), len(pool) - 1)]

    with Twin(choose, protocols=("anthropic",)) as twin:
        home = tmp_path / "home"
        home.mkdir()
        env = {
            **os.environ,
            "ANTHROPIC_BASE_URL": twin.url,
            "ANTHROPIC_API_KEY": "dummy",
            "HOME": str(home),
            "XDG_RUNTIME_DIR": str(tmp_path),
        }
        result = swell("run", "fix", cwd=project, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    ws = Path(swell_json("status", run_id, cwd=project)["workspace"])
    assert (ws / "proof.txt").read_text() == "written\n"
    evs = [e for e in events(project, run_id) if e["step_id"] == "implement"]
    kinds = [(e["type"], e.get("name")) for e in evs]
    assert kinds.index(("agent.tool_call", "Write")) < kinds.index(("relay.triggered", None))
    triggered = [e for e in evs if e["type"] == "relay.triggered"]
    assert len(triggered) == 1 and triggered[0]["tokens"] >= 160_000
    resumed = next(c for c in twin.model_calls if "CHECKPOINT-MARK" in json.dumps(c.body))
    assert "## Modified Files\\n- proof.txt" in json.dumps(resumed.body)
    assert not any("echo never" in json.dumps(c.body) for c in twin.model_calls)


def _opencode_project(tmp_path: Path, twin: Twin) -> tuple[Path, dict[str, str]]:
    """A project whose coder is the real opencode CLI talking to `twin`."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "replies.yaml").write_text(
        "replies:\n" + CHECKPOINT.format(n=1).replace("work.checkpoint", "implement.checkpoint")
    )
    (project / "wave.yaml").write_text(f"""
kind: WaveManifest
adapters:
  opencode:
    binary: {cli_path("opencode")}
    options: {{base_url: "{twin.url}/v1", api_key_env: TWIN_API_KEY}}
  scripted: {{options: {{script: replies.yaml}}}}
personas:
  coder:
    adapter: opencode
    model: twin-model
    permissions: {{allowed_tools: [Read, Write, Bash]}}
  summarizer: {{adapter: scripted}}
runtime:
  relay: {{strategy: summarize_to_checkpoint, token_threshold_percent: 80, context_window: 200000, summarizer_persona: summarizer}}
""")
    write_pipeline(
        project,
        "fix",
        """
kind: WavePipeline
metadata: {name: fix}
steps:
  - id: implement
    persona: coder
    exec: {type: prompt, source: "Write one.txt."}
""",
    )
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "TWIN_API_KEY": "sk-twin",
        "npm_config_offline": "true",
        "XDG_RUNTIME_DIR": str(tmp_path),
    }
    return project, env


FULL = {"input_tokens": 20_000, "cache_read_input_tokens": 150_000, "output_tokens": 30}


@pytest.mark.agent_cli
def test_opencode_relays_after_its_tool_calls_have_run(tmp_path: Path) -> None:
    bash = ToolCall("bash", {"command": "echo one > one.txt", "description": "write one.txt"})
    first = [Reply(tool_calls=[bash], usage=FULL), Reply(text="never", delay=10)]
    fresh = [Reply(text="Done after the relay.")]

    def choose(request: Any) -> Reply:
        relayed = "Completed Work" in json.dumps(request.body)
        earlier = [
            c
            for c in request.twin.model_calls[:-1]
            if ("Completed Work" in json.dumps(c.body)) == relayed
        ]
        pool = fresh if relayed else first
        return pool[min(len(earlier), len(pool) - 1)]

    with Twin(choose, protocols=("openai_chat",)) as twin:
        project, env = _opencode_project(tmp_path, twin)
        result = swell("run", "fix", cwd=project, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    ws = Path(swell_json("status", run_id, cwd=project)["workspace"])
    assert (ws / "one.txt").read_text() == "one\n"
    evs = [e for e in events(project, run_id) if e["step_id"] == "implement"]
    triggered = [e for e in evs if e["type"] == "relay.triggered"]
    assert len(triggered) == 1 and triggered[0]["tokens"] == 170_000
    resumed = next(c for c in twin.model_calls if "Completed Work" in json.dumps(c.body))
    assert "## Modified Files\\n- one.txt" in json.dumps(resumed.body)


@pytest.mark.agent_cli
def test_an_agent_that_answers_past_the_threshold_is_not_relayed(tmp_path: Path) -> None:
    """The final answer crosses the threshold: there is no turn after it to hand over,
    so the visit ends with that answer instead of a relay."""
    with Twin([Reply(text="All done.", usage=FULL)], protocols=("openai_chat",)) as twin:
        project, env = _opencode_project(tmp_path, twin)
        result = swell("run", "fix", cwd=project, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    evs = events(project, run_id_of(result.stdout))
    assert not any(e["type"].startswith("relay.") for e in evs)
    assert any(e["type"] == "agent.text" and e["text"] == "All done." for e in evs)
