"""How each agent CLI is set up against its twin, and what sets the CLIs apart: one
`Cli` each for claude, codex, gemini and opencode.

The conformance suite (test_cli_conformance.py) runs every behaviour all CLI adapters
share once per `Cli`; what one CLI cannot do is a named field of its `Cli` (with the
reason), never a skip. Each test_<cli>.py keeps only what is that CLI's own.

Every visit gets its own HOME (and CODEX_HOME, TMPDIR) under the test's tmp_path, so a
CLI never reads or writes the user's settings, sessions or credentials.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swell.adapters.base import AdapterSetup, AgentRequest
from swell.adapters.claude import ClaudeAdapter
from swell.adapters.cli_agent import CliAdapter
from swell.adapters.codex import CodexAdapter
from swell.adapters.gemini import GeminiAdapter
from swell.adapters.opencode import OpencodeAdapter
from twins.gemini import api_error
from twins.openai_chat import rate_limited
from twins.proxy import DeadProxy
from twins.server import Reply, ToolCall, Twin

Adapter = CliAdapter[Any]


def _proxied(env: dict[str, str], proxy: DeadProxy | None) -> dict[str, str]:
    """`env` routed through a proxy that fails the test if the CLI leaves 127.0.0.1."""
    if proxy is None:
        return env
    return env | {"HTTPS_PROXY": proxy.url, "HTTP_PROXY": proxy.url, "NO_PROXY": "127.0.0.1"}


# --- claude: Claude Code against an Anthropic Messages twin --------------------------


def claude_adapter(
    tmp_path: Path, binary: str | Path | None, twin: Twin | None = None, **options: Any
) -> ClaudeAdapter:
    setup = AdapterSetup("claude", str(binary) if binary else None, options, tmp_path)
    return ClaudeAdapter(setup)


def claude_request(
    tmp_path: Path,
    twin: Twin | None = None,
    prompt: str = "do the task",
    proxy: DeadProxy | None = None,
    **fields: Any,
) -> AgentRequest:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    home.mkdir(exist_ok=True)
    workspace.mkdir(exist_ok=True)
    # XDG_RUNTIME_DIR: where the CLI puts its messaging socket (else /tmp/cc-socks)
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "XDG_RUNTIME_DIR": str(tmp_path)}
    if twin is not None:
        env |= {"ANTHROPIC_BASE_URL": twin.url, "ANTHROPIC_API_KEY": "dummy"}
    fields = {"timeout_s": 60, "env": _proxied(env, proxy), **fields}
    return AgentRequest(prompt=prompt, workspace=workspace, **fields)


def claude_texts(body: Any) -> list[str]:
    """Every text the request carries in its messages (either role)."""
    found = []
    for message in body["messages"]:
        content = message["content"]
        if isinstance(content, str):
            found.append(content)
        else:
            found += [part.get("text", "") for part in content if isinstance(part, dict)]
    return found


# --- codex: the Codex CLI against an OpenAI Responses twin ---------------------------

CODEX_MODEL = "gpt-5.1-codex"  # a model whose tools are plain functions (exec_command)
CODEX_OFFLINE_CONFIG = """\
[analytics]
enabled = false

[features]
plugins = false
"""


def codex_adapter(
    tmp_path: Path, binary: str | Path | None, twin: Twin | None = None, **options: Any
) -> CodexAdapter:
    if twin is not None:
        options = {
            "base_url": f"{twin.url}/v1",
            "api_key_env": "TWIN_API_KEY",
            # Codex retries 429/5xx itself (a 429 six times); stream_max_retries governs that
            "config": {
                "model_providers.swell.request_max_retries": 0,
                "model_providers.swell.stream_max_retries": 0,
            },
            **options,
        }
    setup = AdapterSetup("codex", str(binary) if binary else None, options, tmp_path)
    return CodexAdapter(setup)


def codex_request(
    tmp_path: Path,
    twin: Twin | None = None,
    prompt: str = "do the task",
    proxy: DeadProxy | None = None,
    **fields: Any,
) -> AgentRequest:
    home, codex_home, workspace = tmp_path / "home", tmp_path / "codex-home", tmp_path / "ws"
    for path in (home, codex_home, workspace, tmp_path / "tmp"):
        path.mkdir(exist_ok=True)
    (codex_home / "config.toml").write_text(CODEX_OFFLINE_CONFIG)
    # TMPDIR: Codex puts its sandbox helper (codex-linux-sandbox) on the PATH only when
    # CODEX_HOME is not inside the temp dir; without it a machine's bwrap cannot start it
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "CODEX_HOME": str(codex_home),
        "TMPDIR": str(tmp_path / "tmp"),
        "TWIN_API_KEY": "sk-twin",
    }
    fields = {"model": CODEX_MODEL, "timeout_s": 60, "env": _proxied(env, proxy), **fields}
    return AgentRequest(prompt=prompt, workspace=workspace, **fields)


def codex_inputs(body: Any) -> list[dict[str, Any]]:
    return [item for item in body.get("input", []) if isinstance(item, dict)]


def codex_texts(body: Any) -> list[str]:
    return [
        part.get("text", "")
        for item in codex_inputs(body)
        if item.get("type") == "message"
        for part in item.get("content", [])
    ]


def codex_shell(cmd: str, **extra: Any) -> ToolCall:
    return ToolCall("exec_command", {"cmd": cmd, **extra})


# --- gemini: the Gemini CLI against a Gemini API twin --------------------------------

GEMINI_MODEL = "gemini-2.5-pro"


def gemini_adapter(
    tmp_path: Path, binary: str | Path | None, twin: Twin | None = None, **options: Any
) -> GeminiAdapter:
    setup = AdapterSetup("gemini", str(binary) if binary else None, options, tmp_path)
    return GeminiAdapter(setup)


def gemini_request(
    tmp_path: Path,
    twin: Twin | None = None,
    prompt: str = "do the task",
    proxy: DeadProxy | None = None,
    max_attempts: int = 1,
    settings: dict[str, Any] | None = None,
    **fields: Any,
) -> AgentRequest:
    """A visit whose HOME's settings.json turns off what would reach the internet
    (usage statistics, telemetry, auto-update, IDE integration) and selects API-key
    auth, which GOOGLE_GEMINI_BASE_URL needs in headless mode."""
    home, workspace = tmp_path / "home", tmp_path / "ws"
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    workspace.mkdir(exist_ok=True)
    settings = {
        **(settings or {}),
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "ide": {"enabled": False},
        "general": {
            "enableAutoUpdate": False,
            "enableAutoUpdateNotification": False,
            "maxAttempts": max_attempts,
        },
    }
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    # TMPDIR: the CLI writes error reports to os.tmpdir()
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "TMPDIR": str(tmp_path)}
    if twin is not None:
        env |= {"GEMINI_API_KEY": "dummy-key", "GOOGLE_GEMINI_BASE_URL": twin.url}
    fields = {"model": GEMINI_MODEL, "timeout_s": 60, "env": _proxied(env, proxy), **fields}
    return AgentRequest(prompt=prompt, workspace=workspace, **fields)


def gemini_texts(body: Any) -> list[str]:
    """Every text part the request's contents carry (either role)."""
    return [part["text"] for c in body["contents"] for part in c["parts"] if "text" in part]


def gemini_shell(cmd: str, **extra: Any) -> ToolCall:
    return ToolCall("run_shell_command", {"command": cmd, **extra})


# --- opencode: the opencode CLI against a Chat Completions twin ----------------------

OPENCODE_MODEL = "twin-model"


def opencode_adapter(
    tmp_path: Path, binary: str | Path | None, twin: Twin | None = None, **options: Any
) -> OpencodeAdapter:
    if twin is not None:
        options = {"base_url": f"{twin.url}/v1", "api_key_env": "TWIN_API_KEY", **options}
    setup = AdapterSetup("opencode", str(binary) if binary else None, options, tmp_path)
    return OpencodeAdapter(setup)


def opencode_request(
    tmp_path: Path,
    twin: Twin | None = None,
    prompt: str = "do the task",
    proxy: DeadProxy | None = None,
    **fields: Any,
) -> AgentRequest:
    """A visit whose environment turns off the models.dev refresh, auto-update and
    sharing; `npm_config_offline` stops opencode's background `npm install` of its
    plugin package into its config directory."""
    home, workspace = tmp_path / "home", tmp_path / "ws"
    home.mkdir(exist_ok=True)
    workspace.mkdir(exist_ok=True)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "TMPDIR": str(tmp_path),
        "TWIN_API_KEY": "sk-twin",
        "npm_config_offline": "true",
    }
    fields = {"model": OPENCODE_MODEL, "timeout_s": 60, "env": _proxied(env, proxy), **fields}
    return AgentRequest(prompt=prompt, workspace=workspace, **fields)


def opencode_messages(body: Any, role: str | None = None) -> list[str]:
    """The text of every message (of `role`) in a Chat Completions request."""
    found = []
    for message in body["messages"]:
        if role and message["role"] != role:
            continue
        content = message.get("content") or ""
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        found.append(content)
    return found


def opencode_bash(command: str) -> ToolCall:
    return ToolCall("bash", {"command": command, "description": "run a command"})


def claude_widen(home: Path) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text('{"permissions": {"allow": ["Bash"]}}')


CODEX_PATCH = "*** Begin Patch\n*** Add File: {path}\n+{line}\n*** End Patch\n"


def codex_write(path: str, content: str) -> ToolCall:
    patch = CODEX_PATCH.format(path=path, line=content.rstrip("\n"))
    return codex_shell(f"apply_patch <<'EOF'\n{patch}EOF\n")


def codex_refusal_seen(twin: Twin, case: str, runs: bool) -> None:
    if not runs:  # the read-only sandbox refused the write, not codex
        outputs = [
            str(item.get("output"))
            for item in codex_inputs(twin.model_calls[-1].body)
            if item.get("type") == "function_call_output"
        ]
        assert "Read-only file system" in outputs[0], outputs


def gemini_widen(home: Path) -> None:
    policies = home / ".gemini" / "policies"
    policies.mkdir(parents=True, exist_ok=True)
    (policies / "mine.toml").write_text(
        '[[rule]]\ntoolName = "*"\ndecision = "allow"\npriority = 999\nallowRedirection = true\n'
    )
    settings = home / ".gemini" / "settings.json"
    widened = json.loads(settings.read_text()) | {"tools": {"allowed": ["run_shell_command"]}}
    settings.write_text(json.dumps(widened))


def gemini_declared(body: Any) -> set[str]:
    return {f["name"] for tool in body.get("tools", []) for f in tool["functionDeclarations"]}


def gemini_tool_outputs(body: Any) -> list[dict[str, Any]]:
    parts = [part for c in body["contents"] for part in c["parts"]]
    return [part["functionResponse"]["response"] for part in parts if "functionResponse" in part]


def gemini_refusal_seen(twin: Twin, case: str, runs: bool) -> None:
    output = gemini_tool_outputs(twin.model_calls[1].body)[0]
    assert ("error" not in output) is runs, output
    if not runs:  # denied outright: not even declared to the model
        assert "run_shell_command" not in gemini_declared(twin.model_calls[0].body)


def gemini_star_seen(twin: Twin, written: bool) -> None:
    assert ("write_file" in gemini_declared(twin.model_calls[0].body)) is written


def opencode_tools(body: Any) -> set[str]:
    return {tool["function"]["name"] for tool in body.get("tools", [])}


def opencode_refusal_seen(twin: Twin, case: str, runs: bool) -> None:
    # a tool denied or not allowed as a whole is not offered to the model at all
    assert ("bash" in opencode_tools(twin.model_calls[0].body)) is runs
    if not runs:
        refusal = opencode_messages(twin.model_calls[1].body, "tool")[0]
        assert "unavailable tool" in refusal, refusal


# --- what sets each CLI apart ---------------------------------------------------------


@dataclass(frozen=True)
class Cli:
    """One CLI adapter as the conformance suite drives it. Fields after `said` are
    what this CLI does differently: each says why in a comment."""

    name: str  # the adapter, its binary, and the first word of its messages
    protocol: str  # the twin's protocol
    npm_package: str  # what the missing-binary message says to install
    adapter: Callable[..., Adapter]  # (tmp_path, binary, twin=None, **options)
    request: Callable[..., AgentRequest]  # (tmp_path, twin=None, prompt, proxy, **fields)
    shell: Callable[[str], ToolCall]  # the model asking to run a shell command
    said: Callable[[Any], list[str]]  # every text of a model request's conversation
    session_line: str  # a stdout line announcing session "s-9" in the CLI's format
    # the model asking for a command that runs past the visit's timeout and does not
    # hold up the agent (in the background), so the next model call hangs: the CLI is
    # waiting on its model when time is up, with a command of its own still running
    background: Callable[[str], ToolCall]
    write: Callable[[str, str], ToolCall]  # the model asking to write (path, content)
    rate_limited: Reply  # a 429 in the protocol's own shape
    rate_limit_words: tuple[str, ...]  # in the reported error
    # how many model calls a rate-limited visit makes before the CLI gives up
    rate_limit_tries: int
    options_for_one_retry: dict[str, Any] = field(default_factory=dict)
    request_for_one_retry: dict[str, Any] = field(default_factory=dict)
    # long enough for the CLI to start and ask its model twice on a busy machine
    timeout_s: float = 10
    # a denied (or not allowed) shell command is refused by the CLI itself, per call,
    # and the refusal goes back to the model
    refuses_a_denied_shell: bool = True
    why_not: str = ""  # for a CLI where the field above is False
    # the call a refused command was appears among the visit's tool calls
    shows_a_refused_call: bool = True
    # the user's own settings in HOME that would allow every tool (a persona's
    # permissions must hold whatever they say)
    widen: Callable[[Path], None] = lambda home: None
    # what else the CLI shows of a refusal (case, the command ran), as a test asserts
    refusal_seen: Callable[[Twin, str, bool], None] = lambda twin, case, runs: None
    # Wave's "*" with a denial: (the write ran, the rm ran), by denial case
    star_holds: dict[str, tuple[bool, bool]] = field(
        default_factory=lambda: {"deny-rm": (True, False), "deny-write": (False, True)}
    )
    star_seen: Callable[[Twin, bool], None] = lambda twin, written: None  # (.., written)
    # "*" still keeps `.env` files from the agent (the CLI's own default): asking to read
    # one is refused by ending the visit; `read` is the model asking to read a file
    keeps_env_files: bool = False
    read: Callable[[str], ToolCall] = lambda path: ToolCall("Read", {"file_path": path})


CLAUDE = Cli(
    name="claude",
    protocol="anthropic",
    npm_package="@anthropic-ai/claude-code",
    adapter=claude_adapter,
    request=claude_request,
    shell=lambda cmd: ToolCall("Bash", {"command": cmd, "description": "run a command"}),
    said=claude_texts,
    session_line='{"type":"system","subtype":"init","session_id":"s-9"}',
    background=lambda cmd: ToolCall(
        "Bash", {"command": cmd, "description": "a long job", "run_in_background": True}
    ),
    rate_limited=Reply(
        error=(
            429,
            {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}},
        ),
        headers={"retry-after": "0"},
    ),
    rate_limit_words=("slow down",),
    rate_limit_tries=2,  # the first try and the one retry max_retries allows
    options_for_one_retry={"max_retries": 1},
    widen=claude_widen,
    write=lambda path, content: ToolCall("Write", {"file_path": path, "content": content}),
)

CODEX = Cli(
    name="codex",
    protocol="openai_responses",
    npm_package="@openai/codex",
    adapter=codex_adapter,
    request=codex_request,
    shell=codex_shell,
    said=codex_texts,
    session_line='{"type":"thread.started","thread_id":"s-9"}',
    # exec_command hands a command still running back to the model after yield_time_ms
    background=lambda cmd: codex_shell(cmd, yield_time_ms=250),
    rate_limited=Reply(
        error=(429, {"error": {"type": "rate_limit_exceeded", "message": "Rate limit reached"}}),
        headers={"retry-after": "0"},
    ),
    rate_limit_words=("429",),  # codex reports the status, not the message
    # its own retries are turned off (request_max_retries = 0 in codex_adapter)
    rate_limit_tries=1,
    refuses_a_denied_shell=False,
    why_not="codex has no per-tool switches: its sandbox (read-only when no tool that "
    "writes is allowed) is all that holds, and swell names each entry it cannot "
    "enforce (test_codex.py: test_what_codex_cannot_enforce_is_named)",
    refusal_seen=codex_refusal_seen,
    # its --json stream leaves out a command its read-only sandbox failed (the model is
    # told; swell has nothing to map)
    shows_a_refused_call=False,
    write=codex_write,
    # why_not again: neither `rm` nor a write is refused one by one; only denying every
    # tool that writes makes the sandbox read-only (test_codex.py)
    star_holds={"deny-rm": (True, True), "deny-write": (True, True)},
)

GEMINI = Cli(
    name="gemini",
    protocol="gemini",
    npm_package="@google/gemini-cli",
    adapter=gemini_adapter,
    request=gemini_request,
    shell=gemini_shell,
    said=gemini_texts,
    session_line='{"type":"init","session_id":"s-9","model":"m"}',
    background=lambda cmd: gemini_shell(cmd, is_background=True),
    rate_limited=Reply(
        error=api_error(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted"),
        headers={"retry-after": "0"},
    ),
    rate_limit_words=("exhausted",),
    rate_limit_tries=2,  # the first try and the one retry maxAttempts allows
    request_for_one_retry={"max_attempts": 2},
    timeout_s=12,
    widen=gemini_widen,
    refusal_seen=gemini_refusal_seen,
    write=lambda path, content: ToolCall("write_file", {"file_path": path, "content": content}),
    star_seen=gemini_star_seen,
)

OPENCODE = Cli(
    name="opencode",
    protocol="openai_chat",
    npm_package="opencode-ai",
    adapter=opencode_adapter,
    request=opencode_request,
    shell=opencode_bash,
    said=opencode_messages,
    session_line='{"type":"step_start","sessionID":"s-9","part":{"type":"step-start"}}',
    background=lambda cmd: opencode_bash(f"nohup {cmd} > /dev/null 2>&1 &"),
    rate_limited=rate_limited(retry_after=0),
    rate_limit_words=("Rate limit reached", "429"),
    rate_limit_tries=6,  # opencode's own five retries, which no setting changes
    timeout_s=25,  # opencode takes longest to start: 20 s and more on a busy machine
    refusal_seen=opencode_refusal_seen,
    write=lambda path, content: ToolCall("write", {"filePath": path, "content": content}),
    keeps_env_files=True,
    read=lambda path: ToolCall("read", {"filePath": path}),
)

CLIS = [CLAUDE, CODEX, GEMINI, OPENCODE]
