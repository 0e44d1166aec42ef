"""The `gemini` adapter: Google's Gemini CLI run headless (`gemini -p "" -o stream-json`).

The prompt goes in on stdin (`-p ""` only forces headless mode); the persona replaces
the CLI's system prompt through GEMINI_SYSTEM_MD (or is put before the prompt).
Permissions are a policy file swell writes for each visit and passes with `--policy`:
everything is denied except the persona's allowed tools, so headless runs never ask
and never widen. See docs/adapters/gemini.md for the flags, environment and limits.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from swell.adapters.base import (
    AdapterSetup,
    AgentEvent,
    AgentFinished,
    AgentRequest,
    AgentResult,
    AgentSessionStarted,
    AgentText,
    AgentToolCall,
    AgentUsageUpdate,
    Capabilities,
    Usage,
)
from swell.errors import (
    AgentCrashed,
    AgentError,
    AgentTimeout,
    AuthFailed,
    BinaryMissing,
    ContextExhausted,
    RateLimited,
    UnparseableOutput,
)
from swell.process import ProcessResult, StreamedProcess, stop_marked

# the CLI's own default is `auto` (a classifier call picks Pro or Flash per turn);
# swell pins the model the CLI names DEFAULT_GEMINI_MODEL so runs are reproducible
DEFAULT_MODEL = "gemini-2.5-pro"
DEFAULT_TOOLS = ("Read", "Edit", "Write", "Glob", "Grep", "LS", "Bash", "TodoWrite")
# one node process instead of a relauncher plus child (~1.3 s faster); plain stderr
QUIET_ENV = {"GEMINI_CLI_NO_RELAUNCH": "true", "NO_COLOR": "1"}
# set to a token per visit; the CLI hands it on to every command it runs (GEMINI_CLI_*
# variables are never redacted), which is how commands that escaped the group are found
MARKER = "GEMINI_CLI_SWELL_VISIT"
SHELL = "run_shell_command"
# swell's (Claude Code's) tool names -> the Gemini CLI's; other names pass through
TOOLS: dict[str, tuple[str, ...]] = {
    "Read": ("read_file", "read_many_files"),
    "Write": ("write_file",),
    "Edit": ("replace",),
    "MultiEdit": ("replace",),
    "Bash": (SHELL, "list_background_processes", "read_background_output"),
    "Glob": ("glob",),
    "Grep": ("grep_search",),
    "LS": ("list_directory",),
    "WebFetch": ("web_fetch",),
    "WebSearch": ("google_web_search",),
    "TodoWrite": ("write_todos",),
    "Task": ("invoke_agent",),
    "Skill": ("activate_skill",),
}
EVENT_NAMES = {names[0]: swell for swell, names in TOOLS.items() if swell != "MultiEdit"}
FILE_TOOLS = ("write_file", "replace")
TARGET_KEYS = ("file_path", "dir_path", "command", "pattern", "query", "prompt", "agent_name")
# policy priorities (0-999 in the user tier): above every rule the CLI derives from
# settings (tools.allowed, tools.exclude, mcp.*: at most 900), below admin policies
DENY_ALL, ALLOW, DENY = 950, 960, 999
# the CLI exits with the HTTP status modulo 256 after an API error
EXIT_STATUS = {145: 401, 147: 403, 173: 429}
AUTH = ("api key not valid", "unauthenticated", "permission_denied", "invalid auth method")
RATE = ("resource_exhausted", "resource has been exhausted", "quota", "rate limit")
CONTEXT = ("exceeds the maximum number of tokens", "context window", "session turns")
FATAL_AUTH = 41  # the CLI's FATAL_AUTHENTICATION_ERROR


class GeminiOptions(BaseModel):
    """`adapters.NAME.options` of a gemini adapter."""

    model_config = ConfigDict(extra="forbid")

    system_prompt_mode: Literal["replace", "prepend"] = "replace"
    default_tools: list[str] = Field(default_factory=lambda: list(DEFAULT_TOOLS))
    extra_args: list[str] = Field(default_factory=list)


def _rule(decision: str, priority: int, names: list[str], **extra: Any) -> str:
    fields = {"toolName": names[0] if len(names) == 1 else names, **extra}
    fields |= {"decision": decision, "priority": priority}
    body = "".join(f"{key} = {json.dumps(value)}\n" for key, value in fields.items())
    return f"[[rule]]\n{body}\n"  # JSON strings and arrays are valid TOML


def policy(allowed: list[str], denied: list[str]) -> str:
    """The policy file: deny everything, allow `allowed`, deny `denied` above that.

    `Bash(git *)` becomes a shell rule with commandPrefix "git"; other tools' argument
    patterns cannot be enforced, so such an allow is dropped (the tool stays denied)
    and such a deny covers the whole tool."""
    rules = [_rule("deny", DENY_ALL, ["*"], denyMessage="not allowed for this persona")]
    for decision, priority, tools in (("allow", ALLOW, allowed), ("deny", DENY, denied)):
        whole: list[str] = []
        for tool in tools:
            match = re.fullmatch(r"\s*([\w.-]+)\s*(?:\((.*)\))?\s*", tool)
            if match is None:
                continue
            name, args = match.group(1), (match.group(2) or "").strip()
            server, _, mcp_tool = name.removeprefix("mcp__").partition("__")
            names = [f"mcp_{server}_{mcp_tool}"] if name.startswith("mcp__") else []
            names = names or list(TOOLS.get(name, (name,)))
            prefix = args.removesuffix("*").strip().removesuffix(":").strip()
            if prefix and SHELL in names:
                rules.append(_rule(decision, priority, [SHELL], commandPrefix=prefix))
            elif prefix and decision == "allow":
                continue
            elif SHELL in names and decision == "allow":  # all of it, `>` included
                rules.append(_rule(decision, priority, [SHELL], allowRedirection=True))
                whole += [n for n in names if n != SHELL and n not in whole]
            else:
                whole += [n for n in names if n not in whole]
        if whole:
            rules.append(_rule(decision, priority, whole))
    return "".join(rules)


class GeminiAdapter:
    Options = GeminiOptions
    name = "gemini"
    capabilities = Capabilities(
        resume=True, tools=True, enforces_permissions=True, json_schema=False
    )
    env_passthrough: tuple[str, ...] = (
        "GEMINI_*",
        "GOOGLE_API_KEY",
        "GOOGLE_GEMINI_BASE_URL",
        "GOOGLE_GENAI_*",
        "GOOGLE_CLOUD_PROJECT",
        "GOOGLE_CLOUD_LOCATION",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "GOOGLE_VERTEX_BASE_URL",
    )

    def __init__(self, setup: AdapterSetup) -> None:
        self.options = GeminiOptions.model_validate(setup.options)
        self.setup_name = setup.name
        self.binary = setup.binary or "gemini"
        self.root = setup.project_root

    def command(self, binary: str, request: AgentRequest, policy_file: Path) -> list[str]:
        """The argv of one headless run (the prompt itself goes to stdin)."""
        argv = [binary, "-p", "", "-o", "stream-json", "-m", request.model or DEFAULT_MODEL]
        argv += ["--skip-trust", "--approval-mode", "default", "--policy", str(policy_file)]
        if request.resume_session:
            argv += ["--resume", request.resume_session]
        return argv + self.options.extra_args

    def stdin(self, request: AgentRequest) -> str:
        if request.system_prompt and self.options.system_prompt_mode == "prepend":
            return f"{request.system_prompt}\n\n{request.prompt}"
        return request.prompt

    def environment(self, request: AgentRequest, system_md: Path, token: str) -> dict[str, str]:
        env = {**QUIET_ENV, **request.env, MARKER: token}
        if request.system_prompt and self.options.system_prompt_mode == "replace":
            env["GEMINI_SYSTEM_MD"] = str(system_md)
        return env

    def _resolve(self, request: AgentRequest) -> str | None:
        binary = os.path.expanduser(self.binary)
        if os.sep in binary and not os.path.isabs(binary):
            binary = str(self.root / binary)
        return shutil.which(binary, path=request.env.get("PATH", os.environ.get("PATH")))

    def _missing(self, detail: str) -> AgentFinished:
        missing = BinaryMissing(
            f"gemini: {detail}; install it with `npm install -g @google/gemini-cli` "
            f"or set adapters.{self.setup_name}.binary"
        )
        return AgentFinished(AgentResult.failed(missing))

    async def run(self, request: AgentRequest) -> AsyncIterator[AgentEvent]:
        binary = self._resolve(request)
        if binary is None:
            yield self._missing(f"binary '{self.binary}' not found")
            return
        stream = _Stream(request.workspace)
        with tempfile.TemporaryDirectory(prefix="swell-gemini-") as tmp:
            policy_file, system_md = Path(tmp) / "swell.toml", Path(tmp) / "system.md"
            allowed = request.allowed_tools or self.options.default_tools
            policy_file.write_text(policy(allowed, request.denied_tools), encoding="utf-8")
            system_md.write_text(request.system_prompt, encoding="utf-8")
            token = uuid.uuid4().hex
            proc = StreamedProcess(
                self.command(binary, request, policy_file),
                cwd=request.workspace,
                env=self.environment(request, system_md, token),
                timeout=request.timeout_s,
                stdin_data=self.stdin(request).encode(),
            )
            lines = proc.lines()
            try:
                async for line in lines:
                    for event in stream.feed(line):
                        yield event
            except OSError as exc:  # gone since _resolve, or not executable
                if isinstance(exc, FileNotFoundError):
                    yield self._missing(f"cannot run {binary}")
                else:
                    yield AgentFinished(AgentResult.failed(AgentCrashed(f"gemini: {exc}")))
                return
            finally:
                if isinstance(lines, AsyncGenerator):  # ends the CLI's group if we stop early
                    await lines.aclose()
                await stop_marked([f"{MARKER}={token}"])
        for event in stream.flush():
            yield event
        assert proc.result is not None
        yield AgentFinished(stream.finish(proc.result, request))


class _Stream:
    """Turns stream-json lines into events and, at the end, one AgentResult."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace.resolve()
        self.session_id: str | None = None
        self.result: dict[str, Any] | None = None
        self.chunks: list[str] = []  # assistant text since the last other event
        self.text = ""  # the last complete assistant message
        self.errors: list[str] = []  # `error` events (loop detected, invalid stream, ...)
        self.bad_lines: list[str] = []
        self.pending: dict[str, str] = {}  # tool_id -> file it writes
        self.files: list[str] = []

    def feed(self, line: str) -> Iterator[AgentEvent]:
        if not line.strip():
            return
        try:
            data = json.loads(line)
        except ValueError:
            data = None
        if not isinstance(data, dict) or not isinstance(data.get("type"), str):
            self.bad_lines.append(line)
            return
        kind = data["type"]
        if kind == "message" and data.get("role") == "assistant":
            self.chunks.append(str(data.get("content") or ""))
            return
        yield from self.flush()
        if kind == "init" and isinstance(data.get("session_id"), str):
            self.session_id = data["session_id"]
            yield AgentSessionStarted(data["session_id"])
        elif kind == "tool_use":
            yield self._tool_use(data)
        elif kind == "tool_result":
            path = self.pending.pop(str(data.get("tool_id")), None)
            if data.get("status") == "success" and path and path not in self.files:
                self.files.append(path)
        elif kind == "error":
            self.errors.append(str(data.get("message") or ""))
        elif kind == "result":
            self.result = data
            usage = _usage(_dict(data.get("stats")))
            if usage != Usage():
                yield AgentUsageUpdate(usage)

    def flush(self) -> Iterator[AgentEvent]:
        text, self.chunks = "".join(self.chunks), []
        if text.strip():
            self.text = text
            yield AgentText(text)

    def _tool_use(self, data: dict[str, Any]) -> AgentToolCall:
        name, args = str(data.get("tool_name")), _dict(data.get("parameters"))
        if name in FILE_TOOLS and isinstance(args.get("file_path"), str):
            self.pending[str(data.get("tool_id"))] = self._relative(args["file_path"])
        target = None
        for key in TARGET_KEYS:
            value = args.get(key)
            if isinstance(value, str) and value:
                target = self._relative(value) if key.endswith("path") else value[:200]
                break
        return AgentToolCall(EVENT_NAMES.get(name, name), target)

    def _relative(self, path: str) -> str:
        full = (self.workspace / path).resolve()
        return (
            str(full.relative_to(self.workspace)) if full.is_relative_to(self.workspace) else path
        )

    def finish(self, proc: ProcessResult, request: AgentRequest) -> AgentResult:
        res = self.result or {}
        fields: dict[str, Any] = {
            "usage": _usage(_dict(res.get("stats"))),
            "session_id": self.session_id,
            "files_changed": self.files,
            "text": self.text,
        }
        if proc.timed_out:
            error: AgentError = AgentTimeout(
                f"gemini: no result within {request.timeout_s or 0:g}s"
            )
        elif self.result is None:
            error = self._no_result(proc)
        elif res.get("status") == "success":
            return AgentResult(success=True, **fields)
        else:
            failure = _dict(res.get("error")).get("message") or "; ".join(self.errors)
            error = classify(f"gemini: {failure or _tail(proc.stderr)}", proc.exit_code)
        return AgentResult.failed(error, **fields)

    def _no_result(self, proc: ProcessResult) -> AgentError:
        tail = _tail(proc.stderr) or _tail(proc.stdout)
        message = f"gemini exited with code {proc.exit_code} without a result" + (
            f": {tail}" if tail else ""
        )
        if proc.exit_code == FATAL_AUTH:
            return AuthFailed(message)
        if self.bad_lines and (proc.exit_code == 0 or self.session_id is None):
            sample = self.bad_lines[0][:200]
            return UnparseableOutput(f"gemini: stdout is not stream-json: {sample!r}")
        return classify(message, proc.exit_code)


def classify(message: str, exit_code: int | None = None) -> AgentError:
    """An API failure by its HTTP status (in the message or the exit code) or its words."""
    found = re.search(r'"code"\s*:\s*(\d{3})', message)
    status = int(found.group(1)) if found else EXIT_STATUS.get(exit_code or 0)
    low = message.lower()
    if status in (401, 403):
        return AuthFailed(message)
    if status == 429 or any(word in low for word in RATE):
        return RateLimited(message)
    if any(word in low for word in AUTH):
        return AuthFailed(message)
    if any(word in low for word in CONTEXT):
        return ContextExhausted(message)
    return AgentCrashed(message)


def _usage(stats: dict[str, Any]) -> Usage:
    """Gemini counts cached input inside input_tokens (`input` is the rest); swell does not."""
    cached = int(stats.get("cached") or 0)
    fresh = stats.get("input")
    total_in = int(stats.get("input_tokens") or 0)
    return Usage(
        input_tokens=int(fresh) if isinstance(fresh, int) else max(total_in - cached, 0),
        output_tokens=int(stats.get("output_tokens") or 0),
        cache_read_tokens=cached,
    )


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _tail(text: str, limit: int = 2000) -> str:
    return text.strip()[-limit:]


__all__ = ["GeminiAdapter", "GeminiOptions", "policy"]
