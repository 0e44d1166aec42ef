"""Prompt steps with real agent CLIs, driven through `swell run` as a user would."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from agent_clis import cli_path
from conftest import run_id_of, swell, swell_json, write_pipeline
from twins.server import Reply, ToolCall, Twin

PIPELINE = """
kind: WavePipeline
metadata: {name: fix}
steps:
  - id: implement
    persona: coder
    exec: {type: prompt, source: "Create greeting.txt saying hello to {{ input }}."}
    output_artifacts: [{name: answer, path: answer.md, source: stdout}]
  - id: run-tests
    type: command
    dependencies: [implement]
    script: grep -q "hello {{ input }}" greeting.txt
"""


def _manifest(binary: Path, adapter: str) -> str:
    return f"""
kind: WaveManifest
metadata: {{name: agents}}
adapters:
  {adapter}:
    binary: {binary}
personas:
  coder:
    adapter: {adapter}
    model: claude-sonnet-4-5
    system_prompt: "You are a careful engineer."
    permissions: {{allowed_tools: [Read, Write, Bash]}}
"""


def _claude_env(tmp_path: Path, twin: Twin) -> dict[str, str]:
    """Claude Code pointed at `twin`, with its own HOME (tmp_path/home)."""
    home = tmp_path / "home"
    home.mkdir()
    return {
        **os.environ,
        "ANTHROPIC_BASE_URL": twin.url,
        "ANTHROPIC_API_KEY": "dummy",
        "HOME": str(home),
        "XDG_RUNTIME_DIR": str(tmp_path),
    }


def _codex_env(tmp_path: Path) -> dict[str, str]:
    """Codex with its own HOME and CODEX_HOME, whose config keeps it offline."""
    codex_home, home, tmp = tmp_path / "codex-home", tmp_path / "home", tmp_path / "tmp"
    for path in (codex_home, home, tmp):
        path.mkdir()
    (codex_home / "config.toml").write_text(
        "[analytics]\nenabled = false\n\n[features]\nplugins = false\n"
    )
    return {
        **os.environ,
        "CODEX_HOME": str(codex_home),
        "HOME": str(home),
        # Codex puts its sandbox helper on the PATH only when CODEX_HOME is outside the
        # temp dir; without it a machine's bwrap cannot start it (tests/adapters/test_codex.py)
        "TMPDIR": str(tmp),
        "TWIN_API_KEY": "sk-twin",
    }


def _logged_events(run_id: str, project: Path) -> list[dict[str, Any]]:
    """The run's events as `swell logs -o json` prints them."""
    logs = swell("logs", run_id, "-o", "json", cwd=project).stdout
    return [json.loads(line) for line in logs.splitlines()]


@pytest.mark.agent_cli
def test_claude_step_writes_a_file_the_tests_then_check(tmp_path: Path) -> None:
    binary = cli_path("claude")
    project = tmp_path / "proj"
    project.mkdir()
    (project / "wave.yaml").write_text(_manifest(binary, "claude"))
    write_pipeline(project, "fix", PIPELINE)
    replies = [
        Reply(
            tool_calls=[
                ToolCall("Write", {"file_path": "greeting.txt", "content": "hello world\n"})
            ],
            usage={"input_tokens": 900, "output_tokens": 40, "cache_read_input_tokens": 300},
        ),
        Reply(text="Wrote greeting.txt.", usage={"input_tokens": 950, "output_tokens": 12}),
    ]
    with Twin(replies, protocols=("anthropic",)) as twin:
        env = _claude_env(tmp_path, twin)
        result = swell("run", "fix", "--input", "world", cwd=project, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "· Write greeting.txt" in result.stdout
    run_id = run_id_of(result.stdout)
    status = swell_json("status", run_id, cwd=project)
    implement = next(s for s in status["steps"] if s["step_id"] == "implement")
    assert implement["tokens_in"] > 0 and implement["tokens_out"] > 0
    events = _logged_events(run_id, project)
    session = [e for e in events if e["type"] == "agent.session"]
    assert session and session[0]["session_id"]
    arts = {a["name"]: a for a in swell_json("artifacts", run_id, cwd=project)}
    assert Path(arts["answer"]["path"]).read_text() == "Wrote greeting.txt."
    # the persona prompt and the task reached the model; no other model was contacted
    first = twin.model_calls[0].body
    assert "careful engineer" in json.dumps(first["system"])
    assert "Create greeting.txt saying hello to world." in json.dumps(first["messages"])


def test_missing_agent_binary_is_one_clear_failure(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "wave.yaml").write_text(_manifest(tmp_path / "no-such-claude", "claude"))
    write_pipeline(project, "fix", PIPELINE)
    result = swell("run", "fix", "--input", "x", cwd=project)
    assert result.returncode == 1
    # found before the run starts: no run record is left behind
    assert "not started" in result.stderr and "is not installed" in result.stderr
    assert "npm install -g @anthropic-ai/claude-code" in result.stderr
    assert "Traceback" not in result.stderr
    assert swell_json("list", cwd=project) == []


@pytest.mark.agent_cli
def test_codex_step_through_swell_run(tmp_path: Path) -> None:
    binary = cli_path("codex")
    project = tmp_path / "proj"
    project.mkdir()
    (project / "wave.yaml").write_text(f"""
kind: WaveManifest
adapters:
  codex:
    binary: {binary}
    options:
      base_url: PLACEHOLDER/v1
      api_key_env: TWIN_API_KEY
      config:
        model_providers.swell.request_max_retries: 0
        model_providers.swell.stream_max_retries: 0
personas:
  coder:
    adapter: codex
    model: gpt-5.1-codex
    system_prompt: "You are a careful engineer."
    permissions: {{allowed_tools: [Bash]}}
""")
    write_pipeline(project, "fix", PIPELINE)
    env = _codex_env(tmp_path)
    replies = [
        Reply(
            tool_calls=[ToolCall("exec_command", {"cmd": "printf 'hello world\\n' > greeting.txt"})]
        ),
        Reply(text="Wrote greeting.txt."),
    ]
    with Twin(replies, protocols=("openai_responses",)) as twin:
        manifest = (project / "wave.yaml").read_text().replace("PLACEHOLDER", twin.url)
        (project / "wave.yaml").write_text(manifest)
        result = swell("run", "fix", "--input", "world", cwd=project, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "· Bash /bin/bash -lc \"printf 'hello world" in result.stdout
    run_id = run_id_of(result.stdout)
    arts = {a["name"]: a for a in swell_json("artifacts", run_id, cwd=project)}
    assert Path(arts["answer"]["path"]).read_text() == "Wrote greeting.txt."


THREADED = """
kind: WavePipeline
metadata: {name: loop}
steps:
  - id: implement
    persona: coder
    thread: impl
    exec: {type: prompt, source: "Make greeting.txt say hello {{ input }}."}
  - id: run-tests
    type: command
    thread: impl
    dependencies: [implement]
    script: |
      grep -q "hello {{ input }}" greeting.txt || { echo "FAILED: greeting.txt lacks hello" >&2; exit 1; }
  - id: check
    type: conditional
    dependencies: [run-tests]
    edges: [{target: _complete, condition: outcome=success}, {target: implement}]
"""


@pytest.mark.agent_cli
def test_claude_thread_resumes_its_session_natively(tmp_path: Path) -> None:
    binary = cli_path("claude")
    project = tmp_path / "proj"
    project.mkdir()
    (project / "wave.yaml").write_text(_manifest(binary, "claude"))
    write_pipeline(project, "loop", THREADED)
    replies = [
        Reply(
            tool_calls=[ToolCall("Write", {"file_path": "greeting.txt", "content": "hi there\n"})]
        ),
        Reply(text="FIRST-ANSWER: wrote hi there."),
        Reply(
            tool_calls=[
                ToolCall("Write", {"file_path": "greeting.txt", "content": "hello world\n"})
            ]
        ),
        Reply(text="Fixed it."),
    ]
    with Twin(replies, protocols=("anthropic",)) as twin:
        env = _claude_env(tmp_path, twin)
        result = swell("run", "loop", "--input", "world", cwd=project, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    contexts = _logged_events(run_id, project)
    context = [e for e in contexts if e["type"] == "thread.context"]
    assert context[-1]["native_resume"] is True and context[-1]["fidelity"] == "full"
    # the second visit's first model call carries the first visit's conversation
    # (the resumed session) and, as the new turn, the failing test output
    second_visit = twin.model_calls[2].body
    dump = json.dumps(second_visit["messages"])
    assert "FIRST-ANSWER: wrote hi there." in dump
    assert "FAILED: greeting.txt lacks hello" in dump


@pytest.mark.agent_cli
def test_codex_thread_resumes_its_session_natively(tmp_path: Path) -> None:
    binary = cli_path("codex")
    project = tmp_path / "proj"
    project.mkdir()
    env = _codex_env(tmp_path)
    write_pipeline(project, "loop", THREADED)
    replies = [
        Reply(
            tool_calls=[ToolCall("exec_command", {"cmd": "printf 'hi there\\n' > greeting.txt"})]
        ),
        Reply(text="FIRST-ANSWER: wrote hi there."),
        Reply(
            tool_calls=[ToolCall("exec_command", {"cmd": "printf 'hello world\\n' > greeting.txt"})]
        ),
        Reply(text="Fixed it."),
    ]
    with Twin(replies, protocols=("openai_responses",)) as twin:
        (project / "wave.yaml").write_text(f"""
kind: WaveManifest
adapters:
  codex:
    binary: {binary}
    options:
      base_url: {twin.url}/v1
      api_key_env: TWIN_API_KEY
      config:
        model_providers.swell.request_max_retries: 0
        model_providers.swell.stream_max_retries: 0
personas:
  coder:
    adapter: codex
    model: gpt-5.1-codex
    permissions: {{allowed_tools: [Bash]}}
""")
        result = swell("run", "loop", "--input", "world", cwd=project, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    logs = _logged_events(run_id, project)
    context = [e for e in logs if e["type"] == "thread.context"]
    assert context[-1]["native_resume"] is True
    dump = json.dumps(twin.model_calls[2].body)
    assert "FIRST-ANSWER: wrote hi there." in dump and "FAILED: greeting.txt lacks hello" in dump


def test_adapter_without_resume_gets_the_transcript_injected(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    write_pipeline(
        project,
        "loop",
        THREADED.replace(
            '    exec: {type: prompt, source: "Make greeting.txt say hello {{ input }}."}',
            '    exec: {type: prompt, source: "Write a greeting for {{ input }}."}\n'
            "    output_artifacts: [{name: greeting, path: greeting.txt, source: stdout}]",
        ),
    )
    replies = [Reply(text="hi there"), Reply(text="hello world")]
    with Twin(replies, protocols=("openai_chat",)) as twin:
        (project / "wave.yaml").write_text(f"""
kind: WaveManifest
adapters:
  openai:
    options: {{base_url: {twin.url}/v1}}
personas:
  coder: {{adapter: openai, model: gpt-test}}
""")
        result = swell("run", "loop", "--input", "world", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    second = json.dumps(twin.model_calls[1].body["messages"])
    assert "Earlier in this thread (impl)" in second
    assert "hi there" in second and "FAILED: greeting.txt lacks hello" in second


@pytest.mark.agent_cli
def test_claude_relays_mid_step_to_a_fresh_session(tmp_path: Path) -> None:
    binary = cli_path("claude")
    project = tmp_path / "proj"
    project.mkdir()
    (project / "replies.yaml").write_text("""replies:
  - step: implement.checkpoint
    text: |
      ## Completed Work
      Ran the first two commands (CHECKPOINT-MARK).
      ## Current State
      Nothing written yet.
      ## Remaining Work
      Write greeting.txt.
      ## Resume Instructions
      Write greeting.txt saying hello world.
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
    write_pipeline(project, "fix", PIPELINE)
    replies = [
        Reply(
            tool_calls=[ToolCall("Bash", {"command": "echo step one"})],
            usage={"input_tokens": 20_000, "cache_read_input_tokens": 40_000, "output_tokens": 30},
        ),
        Reply(
            tool_calls=[ToolCall("Bash", {"command": "echo step two"})],
            usage={"input_tokens": 30_000, "cache_read_input_tokens": 140_000, "output_tokens": 30},
        ),
        Reply(tool_calls=[ToolCall("Bash", {"command": "echo never"})]),
        Reply(
            tool_calls=[
                ToolCall("Write", {"file_path": "greeting.txt", "content": "hello world\n"})
            ],
            usage={"input_tokens": 3_000, "output_tokens": 20},
        ),
        Reply(text="Wrote greeting.txt after the relay."),
    ]
    first, fresh = replies[:3], replies[3:]

    def choose(request: Any) -> Reply:
        """The first session's calls get `first` in turn; calls that carry the checkpoint
        (the fresh instance's session) get `fresh` in turn."""
        relayed = "CHECKPOINT-MARK" in json.dumps(request.body)
        earlier = [
            c
            for c in request.twin.model_calls[:-1]
            if ("CHECKPOINT-MARK" in json.dumps(c.body)) == relayed
        ]
        pool = fresh if relayed else first
        return pool[min(len(earlier), len(pool) - 1)]

    with Twin(choose, protocols=("anthropic",)) as twin:
        env = _claude_env(tmp_path, twin)
        result = swell("run", "fix", "--input", "world", cwd=project, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    logs = _logged_events(run_id, project)
    triggered = [e for e in logs if e["type"] == "relay.triggered"]
    assert (
        len(triggered) == 1
        and triggered[0]["tokens"] >= 160_000
        and triggered[0]["window"] == 200_000
    )
    sessions = [
        e["session_id"]
        for e in logs
        if e["type"] == "agent.session" and e["step_id"] == "implement"
    ]
    assert len(sessions) == 2 and sessions[0] != sessions[1]
    first_fresh = next(r for r in twin.model_calls if "CHECKPOINT-MARK" in json.dumps(r.body))
    dump = json.dumps(first_fresh.body["messages"])
    assert "Create greeting.txt saying hello to world." in dump and "step one" not in dump
    assert not any("echo never" in json.dumps(r.body) for r in twin.model_calls)
    assert (
        Path(swell_json("status", run_id, cwd=project)["workspace"]) / "greeting.txt"
    ).read_text() == "hello world\n"


@pytest.mark.agent_cli
def test_a_child_holding_an_agent_clis_stdout_is_ended_and_named(tmp_path: Path) -> None:
    """The CLI (started by a wrapper that leaves `sleep 1007 &` behind, holding its
    stdout) exits; the step ends after a short drain, as a command step does, not at its
    timeout, and the warning names the child the runner killed."""
    project = tmp_path / "proj"
    project.mkdir()
    wrapper = project / "claude-wrapper"
    wrapper.write_text(f'#!/bin/sh\nsleep 1007 &\nexec {cli_path("claude")} "$@"\n')
    wrapper.chmod(0o755)
    (project / "wave.yaml").write_text(_manifest(wrapper, "claude"))
    write_pipeline(
        project,
        "held",
        """
kind: WavePipeline
metadata: {name: held}
steps:
  - id: answer
    persona: coder
    timeout_minutes: 10
    exec: {type: prompt, source: "Say done."}
""",
    )
    with Twin([Reply(text="done")], protocols=("anthropic",)) as twin:
        env = _claude_env(tmp_path, twin)
        # the step's own timeout is 10 minutes: only an ended drain finishes in time
        result = swell("run", "held", cwd=project, env=env, timeout=200)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    warnings = [e["message"] for e in _logged_events(run_id, project) if e["type"] == "warning"]
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith("step 'answer' left processes running after it ended;")
    assert "sleep 1007" in warnings[0]
