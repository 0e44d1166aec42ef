"""The real agent CLIs (claude, codex, gemini, opencode) inside swell's sandbox
(runtime.sandbox, real bwrap), against their stand-in model servers, through `swell run`:
each writes a file in its workspace and resumes its own session across a thread.

The CLIs get nothing of the test's HOME: their config and sessions live in the run's
home (docs/security.md, "Sandbox"); what they need to stay offline is passed the way a
user would (adapter options, env_passthrough)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agent_clis import cli_path
from cli_setups import (
    CODEX_MODEL,
    CODEX_OFFLINE_CONFIG,
    GEMINI_MODEL,
    OPENCODE_MODEL,
    codex_write,
    opencode_bash,
)
from conftest import events, run_id_of, swell, write_pipeline
from twins.server import Reply, ToolCall, Twin

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


@dataclass(frozen=True)
class Agent:
    """How one CLI runs in the sandbox against its twin."""

    protocol: str
    model: str
    adapter: Callable[[str], str]  # the twin's URL -> the `adapters.NAME` block's options
    env: Callable[[str], dict[str, str]]  # the twin's URL -> the variables it needs
    write: Callable[[str], ToolCall]  # a tool call that writes greeting.txt with TEXT
    home_files: dict[str, str] = field(default_factory=dict)  # the user's own settings


def _gemini_write(text: str) -> ToolCall:
    return ToolCall("write_file", {"file_path": "greeting.txt", "content": text})


# what a user of the Gemini CLI with an API key has (tests/cli_setups.py gemini_request)
GEMINI_SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "ide": {"enabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
}

AGENTS = {
    "claude": Agent(
        "anthropic",
        "claude-sonnet-4-5",
        lambda url: "",
        lambda url: {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "dummy"},
        lambda text: ToolCall("Write", {"file_path": "greeting.txt", "content": text}),
    ),
    "codex": Agent(
        "openai_responses",
        CODEX_MODEL,
        lambda url: (
            f"""
    options:
      base_url: {url}/v1
      api_key_env: TWIN_API_KEY
      config:
        model_providers.swell.request_max_retries: 0
        model_providers.swell.stream_max_retries: 0"""
        ),
        lambda url: {"TWIN_API_KEY": "sk-twin"},
        lambda text: codex_write("greeting.txt", text),
        {".codex/config.toml": CODEX_OFFLINE_CONFIG},
    ),
    "gemini": Agent(
        "gemini",
        GEMINI_MODEL,
        lambda url: "",
        lambda url: {"GEMINI_API_KEY": "dummy-key", "GOOGLE_GEMINI_BASE_URL": url},
        _gemini_write,
        {".gemini/settings.json": json.dumps(GEMINI_SETTINGS)},
    ),
    "opencode": Agent(
        "openai_chat",
        OPENCODE_MODEL,
        lambda url: (
            f"""
    options:
      base_url: {url}/v1
      api_key_env: TWIN_API_KEY"""
        ),
        lambda url: {"TWIN_API_KEY": "sk-twin", "npm_config_offline": "true"},
        lambda text: opencode_bash(f"printf '{text}' > greeting.txt"),
    ),
}


def _manifest(name: str, agent: Agent, url: str) -> str:
    return f"""
kind: WaveManifest
metadata: {{name: boxed-agents}}
runtime:
  sandbox: {{enabled: true, env_passthrough: [npm_config_offline]}}
adapters:
  {name}:
    binary: {cli_path(name)}{agent.adapter(url)}
personas:
  coder:
    adapter: {name}
    model: {agent.model}
    permissions: {{allowed_tools: ["*"]}}
"""


@pytest.mark.agent_cli
@pytest.mark.parametrize("name", sorted(AGENTS))
def test_an_agent_cli_writes_and_resumes_its_session_inside_the_sandbox(
    name: str, tmp_path: Path, isolated_state: Path
) -> None:
    agent = AGENTS[name]
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("-----BEGIN PRIVATE KEY-----\n")
    for place, text in agent.home_files.items():  # copied into the run's home
        (home / place).parent.mkdir(parents=True, exist_ok=True)
        (home / place).write_text(text)
    before = sorted(str(p) for p in home.rglob("*"))
    project = tmp_path / "project"
    project.mkdir()
    write_pipeline(project, "loop", THREADED)
    replies = [
        Reply(tool_calls=[agent.write("hi there\n")]),
        Reply(text="FIRST-ANSWER: wrote hi there."),
        Reply(tool_calls=[agent.write("hello world\n")]),
        Reply(text="Fixed it."),
    ]
    with Twin(replies, protocols=(agent.protocol,)) as twin:
        (project / "wave.yaml").write_text(_manifest(name, agent, twin.url))
        env = {**os.environ, "HOME": str(home), **agent.env(twin.url)}
        result = swell("run", "loop", "--input", "world", cwd=project, env=env, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    workspace = isolated_state / "workspaces" / run_id
    assert (workspace / "greeting.txt").read_text() == "hello world\n"
    found = events(project, run_id)
    context = [e for e in found if e["type"] == "thread.context"]
    assert context[-1]["native_resume"] is True, context
    # each visit counts its own tokens, not the resumed thread's (the same two calls)
    visits = [e for e in found if e["type"] == "step.finished" and e["step_id"] == "implement"]
    assert len({e["tokens_in"] for e in visits}) == 1, [e["tokens_in"] for e in visits]
    # the second visit's first model call carries the first visit's conversation
    second: Any = twin.model_calls[2].body
    dump = json.dumps(second)
    assert "FIRST-ANSWER: wrote hi there." in dump
    assert "FAILED: greeting.txt lacks hello" in dump
    # the CLI's files went to the run's home; the user's HOME is as it was
    assert sorted(str(p) for p in home.rglob("*")) == before
    run_home = isolated_state / "runs" / run_id / ".home"
    assert any(run_home.iterdir())
    for place, text in agent.home_files.items():
        assert (run_home / place).read_text() == text
    # its model was reached through the sandbox's proxy (and anything else it tried,
    # opencode's npm registry, was refused)
    host, port = twin.url.removeprefix("http://").split(":")
    connections = [e for e in found if e["type"] == "sandbox.connection"]
    to_model = [e["allowed"] for e in connections if (e["host"], e["port"]) == (host, int(port))]
    assert to_model and all(to_model)
    assert not [e for e in connections if e["allowed"] and e["host"] != host]


@pytest.mark.agent_cli
def test_codex_read_only_is_held_by_swells_sandbox(tmp_path: Path, isolated_state: Path) -> None:
    """codex runs without its own sandbox inside swell's: a read-only persona's codex
    finds its workspace read-only there (swell's sandbox holds codex's mode)."""
    agent = AGENTS["codex"]
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    (home / ".codex" / "config.toml").write_text(CODEX_OFFLINE_CONFIG)
    project = tmp_path / "project"
    project.mkdir()
    write_pipeline(
        project,
        "look",
        "kind: WavePipeline\nmetadata: {name: look}\nsteps:\n"
        "  - {id: look, persona: coder, exec: {type: prompt, source: look around}}\n",
    )
    replies = [
        Reply(tool_calls=[codex_write("greeting.txt", "hi")]),
        Reply(text="Done."),
    ]
    with Twin(replies, protocols=(agent.protocol,)) as twin:
        manifest = _manifest("codex", agent, twin.url).replace('["*"]', "[Read]")
        (project / "wave.yaml").write_text(manifest)
        env = {**os.environ, "HOME": str(home), **agent.env(twin.url)}
        result = swell("run", "look", cwd=project, env=env, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    workspace = isolated_state / "workspaces" / run_id_of(result.stdout)
    assert not (workspace / "greeting.txt").exists()
    outputs = json.dumps(twin.model_calls[1].body.get("input"))
    assert "Read-only file system" in outputs or "Failed to write" in outputs, outputs[-2000:]


LOOK = """#!/bin/sh
# a stand-in for the claude CLI: report what it sees of its login and settings
{{ cat "$HOME/.claude/.credentials.json" || echo no-login
   (echo changed > "$HOME/.claude/.credentials.json") 2>/dev/null && echo WROTE-login
   cat "$HOME/.claude/settings.json" || echo no-settings
   cat "{home}/.claude.json" 2>/dev/null || echo no-state
}} > "agent-saw-$SWELL_STEP_ID.txt" 2>/dev/null
echo '{{"type":"result","subtype":"success","is_error":false,"result":"ok"}}'
"""


def _claude_user(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(a HOME with a claude login and settings, the LOOK stand-in for claude, an empty
    project)."""
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / ".credentials.json").write_text('{"token": "oauth-secret"}\n')
    (home / ".claude" / "settings.json").write_text('{"theme": "dark"}\n')
    binary = tmp_path / "bin" / "claude"
    binary.parent.mkdir()
    binary.write_text(LOOK.format(home=home))
    binary.chmod(0o755)
    project = tmp_path / "project"
    project.mkdir()
    return home, binary, project


def test_only_the_agents_settings_and_login_enter_the_run_home(
    tmp_path: Path, isolated_state: Path
) -> None:
    home, binary, project = _claude_user(tmp_path)
    (home / ".claude.json").write_text('{"history": "private"}\n')
    before = {p: p.read_bytes() for p in home.rglob("*") if p.is_file()}
    (project / "wave.yaml").write_text(f"""
kind: WaveManifest
metadata: {{name: logins}}
runtime: {{sandbox: {{enabled: true}}}}
adapters: {{claude: {{binary: {binary}}}}}
personas: {{coder: {{adapter: claude, model: claude-sonnet-4-5}}}}
""")
    write_pipeline(
        project,
        "look",
        """
kind: WavePipeline
metadata: {name: look}
steps:
  - {id: agent, persona: coder, exec: {type: prompt, source: look}}
  - id: command
    type: command
    script: |
      { cat "$HOME/.claude/.credentials.json" 2>/dev/null || echo no-login; } > command-saw.txt
""",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    first = swell("run", "look", cwd=project, env={**env, "HOME": str(home)}, timeout=120)
    # (a failed agent would cancel the command step running beside it)
    assert first.returncode == 0, first.stdout + first.stderr
    saw = (_workspace(isolated_state) / "agent-saw-agent.txt").read_text().split("\n")
    assert saw[:2] == ['{"token": "oauth-secret"}', '{"theme": "dark"}'], saw  # not written
    assert "no-state" in saw and "WROTE-login" not in saw
    # the empty file bwrap mounted the login on is gone with the run's box; the settings stay
    run_home = isolated_state / "runs" / run_id_of(first.stdout) / ".home" / ".claude"
    assert sorted(p.name for p in run_home.iterdir()) == ["settings.json"]
    keyed = {**env, "HOME": str(home), "ANTHROPIC_API_KEY": "k"}
    second = swell("run", "look", cwd=project, env=keyed, timeout=120)
    assert second.returncode == 0, second.stdout + second.stderr
    saw = (_workspace(isolated_state) / "agent-saw-agent.txt").read_text()
    assert saw.startswith("no-login\n") and '{"theme": "dark"}' in saw  # a key: no login
    # a command step never sees the login; the user's files are as they were
    runs = [p for p in (isolated_state / "workspaces").iterdir() if p.name.startswith("look-")]
    seen = [(r / "command-saw.txt").read_text() for r in runs]
    assert len(seen) == 2 and not [s for s in seen if "oauth-secret" in s], seen
    assert {p: p.read_bytes() for p in home.rglob("*") if p.is_file()} == before


def _workspace(state: Path) -> Path:
    """The newest run's workspace."""
    runs = (p for p in (state / "workspaces").iterdir() if p.name.startswith("look-"))
    return max(runs, key=os.path.getmtime)


def test_a_run_on_another_adapter_gets_that_adapters_login(
    tmp_path: Path, isolated_state: Path
) -> None:
    """`swell run --adapter NAME` runs the persona's visits on NAME's CLI: its box binds
    NAME's login and settings, not those of the persona's own adapter."""
    home, binary, project = _claude_user(tmp_path)
    (project / "wave.yaml").write_text(f"""
kind: WaveManifest
metadata: {{name: logins}}
runtime: {{sandbox: {{enabled: true}}}}
adapters:
  claude: {{binary: {binary}}}
  gemini: {{binary: /bin/false}}
personas: {{coder: {{adapter: gemini, model: gemini-2.5-pro}}}}
""")
    write_pipeline(
        project,
        "look",
        "kind: WavePipeline\nmetadata: {name: look}\nsteps:\n"
        "  - {id: agent, persona: coder, exec: {type: prompt, source: look}}\n",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    done = swell("run", "look", "--adapter", "claude", cwd=project, env={**env, "HOME": str(home)})
    assert done.returncode == 0, done.stdout + done.stderr
    saw = (_workspace(isolated_state) / "agent-saw-agent.txt").read_text().split("\n")
    assert saw[:2] == ['{"token": "oauth-secret"}', '{"theme": "dark"}'], saw
