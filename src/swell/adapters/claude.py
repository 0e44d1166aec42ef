"""The `claude` adapter: Claude Code run headless (`claude -p --output-format stream-json`).

The prompt goes in on stdin; the persona's system prompt is appended to Claude Code's
own (or replaces it). Permissions are enforced by the CLI itself: `dontAsk` mode plus
`--allowedTools`/`--disallowedTools`, so anything not allowed is refused, never asked.
Wave's `*` (every tool), which the CLI rejects as an allow rule, becomes every tool
Claude Code has (`ALL_TOOLS`).
See docs/adapters/claude.md for the flags, the environment and the known limits.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from swell.adapters.base import (
    AgentEvent,
    AgentRequest,
    AgentResult,
    AgentSessionStarted,
    AgentText,
    AgentTurnEnded,
    AgentUsageUpdate,
    Capabilities,
    Usage,
)
from swell.adapters.cli_agent import (
    CliAdapter,
    CliStream,
    Launch,
    as_dict,
    dicts,
    ended,
    exited,
    tail,
    timed_out,
    total_usage,
)
from swell.adapters.permissions import allows_everything, entries, whole
from swell.errors import (
    AgentCrashed,
    AgentError,
    AuthFailed,
    ContextExhausted,
    RateLimited,
    UnparseableOutput,
)
from swell.process import ProcessResult

# the working set a persona gets when it names no allowed tools
DEFAULT_TOOLS = ("Read", "Edit", "Write", "NotebookEdit", "Glob", "Grep", "Bash", "TodoWrite")
# what `*` allows: every built-in tool of 2.1.330 (its `init` line lists them) and of the
# versions and settings that have others; the CLI ignores names it does not know
ALL_TOOLS = (
    "Task", "Agent", "Bash", "BashOutput", "KillShell", "TaskStop", "Monitor", "Read", "Write",
    "Edit", "MultiEdit", "NotebookEdit", "NotebookRead", "Glob", "Grep", "LS", "WebFetch",
    "WebSearch", "TodoWrite", "TaskCreate", "TaskGet", "TaskList", "TaskUpdate", "TaskOutput",
    "Skill", "SlashCommand", "ToolSearch", "LSP", "CronCreate", "CronDelete", "CronList",
    "ScheduleWakeup", "EnterWorktree", "ExitWorktree", "ListAgents", "SendMessage",
    "ReportFindings", "Workflow", "ListMcpResourcesTool", "ReadMcpResourceTool",
)  # fmt: skip
# headless runs never update themselves nor phone home (any value of these disables)
QUIET_ENV = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}
# tools that write a file, and the input naming it (files_changed comes from these)
FILE_TOOLS = {
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}
# the first of these a tool call has is its target (description: what a subagent is to do)
TARGET_KEYS: tuple[str, ...] = ("file_path", "notebook_path", "path", "command", "pattern")
TARGET_KEYS += ("url", "query", "skill", "description")


class ClaudeOptions(BaseModel):
    """`adapters.NAME.options` of a claude adapter."""

    model_config = ConfigDict(extra="forbid")

    system_prompt_mode: Literal["append", "replace"] = "append"
    permission_mode: Literal["dontAsk", "acceptEdits", "plan", "bypassPermissions"] = "dontAsk"
    default_tools: list[str] = Field(default_factory=lambda: list(DEFAULT_TOOLS))
    # settings files Claude Code may read; none by default, so that no allow rule in
    # ~/.claude or the workspace's .claude/ widens what the persona is allowed
    setting_sources: list[Literal["user", "project", "local"]] = Field(default_factory=list)
    max_turns: int | None = Field(default=None, ge=1)
    max_retries: int | None = Field(default=None, ge=0)  # CLAUDE_CODE_MAX_RETRIES
    extra_args: list[str] = Field(default_factory=list)


class ClaudeAdapter(CliAdapter[ClaudeOptions]):
    Options = ClaudeOptions
    name = "claude"
    npm_package = "@anthropic-ai/claude-code"
    capabilities = Capabilities(
        resume=True,
        tools=True,
        enforces_permissions=True,
        json_schema=True,
        skills_dir=".claude/skills",
        subagents=True,
    )
    env_passthrough: tuple[str, ...] = (
        "ANTHROPIC_*",
        "CLAUDE_*",
        "DISABLE_*",
        "API_TIMEOUT_MS",
        "MAX_THINKING_TOKENS",
        "BASH_DEFAULT_TIMEOUT_MS",
        "BASH_MAX_TIMEOUT_MS",
        "MCP_TIMEOUT",
        "MCP_TOOL_TIMEOUT",
    )

    def launch(self, binary: str, request: AgentRequest, scratch: Path) -> Launch:
        argv, env = self.command(binary, request), self.environment(request)
        return Launch(argv, env, _Stream(request.workspace), request.prompt)

    def command(self, binary: str, request: AgentRequest) -> list[str]:
        """The argv of one headless run (the prompt itself goes to stdin)."""
        opts = self.options
        argv = [binary, "-p", "--output-format", "stream-json", "--verbose"]
        argv += ["--permission-mode", opts.permission_mode]
        argv += ["--setting-sources", ",".join(opts.setting_sources)]
        if request.model:
            argv += ["--model", request.model]
        if request.system_prompt:
            flag = (
                "--system-prompt"
                if opts.system_prompt_mode == "replace"
                else "--append-system-prompt"
            )
            argv += [flag, request.system_prompt]
        argv += allowed_tools(request.allowed_tools or opts.default_tools, opts.permission_mode)
        if request.denied_tools:
            argv += ["--disallowedTools", *(whole(e) for e in entries(request.denied_tools))]
        if request.resume_session:
            argv += ["--resume", request.resume_session]
        if request.json_schema is not None:
            argv += ["--json-schema", json.dumps(request.json_schema)]
        if opts.max_turns:
            argv += ["--max-turns", str(opts.max_turns)]
        return argv + opts.extra_args

    def environment(self, request: AgentRequest) -> dict[str, str]:
        env = {**QUIET_ENV, **request.env}
        if self.options.max_retries is not None:
            env["CLAUDE_CODE_MAX_RETRIES"] = str(self.options.max_retries)
        return env


def allowed_tools(allowed: list[str], mode: str) -> list[str]:
    """`--allowedTools` and its rules: `*` becomes ALL_TOOLS (the CLI refuses a wildcard
    allow rule and would refuse every tool), or nothing at all in bypassPermissions mode,
    which runs every tool anyway; `Tool(*)` becomes `Tool`."""
    rules = [whole(entry) for entry in entries(allowed) if not entry.everything]
    if allows_everything(allowed):
        if mode == "bypassPermissions":
            return []
        rules = [*ALL_TOOLS, *(rule for rule in rules if rule not in ALL_TOOLS)]
    return ["--allowedTools", *rules] if rules else []


class _Stream(CliStream):
    """Turns stream-json lines into events and, at the end, one AgentResult."""

    def __init__(self, workspace: Path) -> None:
        super().__init__(workspace)
        self.result: dict[str, Any] | None = None
        self.texts: list[str] = []
        self.turns: dict[str, Usage] = {}  # message id -> usage, main thread only
        self.pending: dict[str, str] = {}  # tool_use id -> file it writes
        self.calls: set[str] = set()  # main-thread tool_use ids without a result yet

    def feed(self, line: str) -> Iterator[AgentEvent]:
        if (data := self.decode(line, typed=False)) is None:
            return
        kind = data.get("type")
        session = data.get("session_id")
        # a `result` may name a session that never started (an unknown --resume id)
        if kind != "result" and isinstance(session, str) and session != self.session_id:
            self.session_id = session
            yield AgentSessionStarted(session)
        if kind == "assistant":
            yield from self._assistant(data)
        elif kind == "user":
            yield from self._tool_results(data)
        elif kind == "result":
            self.result = data

    def _assistant(self, data: dict[str, Any]) -> Iterator[AgentEvent]:
        message = as_dict(data.get("message"))
        for block in dicts(message.get("content")):
            if block.get("type") == "text" and block.get("text"):
                if data.get("parent_tool_use_id") is None:
                    self.texts.append(block["text"])
                yield AgentText(block["text"])
            elif block.get("type") == "tool_use":
                name, args = str(block.get("name")), as_dict(block.get("input"))
                if data.get("parent_tool_use_id") is None:
                    self.calls.add(str(block.get("id")))
                if name in FILE_TOOLS and isinstance(args.get(FILE_TOOLS[name]), str):
                    self.pending[str(block.get("id"))] = self.relative(args[FILE_TOOLS[name]])
                yield self.tools.call(block.get("id"), name, self.target(args, TARGET_KEYS))
        msg_id, usage = str(message.get("id")), message.get("usage")
        if data.get("parent_tool_use_id") is None and msg_id not in self.turns and usage:
            self.turns[msg_id] = _usage(as_dict(usage))
            yield AgentUsageUpdate(self.turns[msg_id])

    def _tool_results(self, data: dict[str, Any]) -> Iterator[AgentEvent]:
        """Each tool call's result, and files written by tools that succeeded; the turn
        ends when the last main-thread tool call has its result (Claude Code calls the
        model again right after)."""
        answered = False
        for block in dicts(as_dict(data.get("message")).get("content")):
            call = str(block.get("tool_use_id"))
            path = self.pending.pop(call, None)
            if block.get("type") != "tool_result":
                continue
            failed = bool(block.get("is_error"))
            yield self.tools.result(call, block.get("content"), is_error=failed)
            if not failed and path:
                self.add_file(path)
            if call in self.calls:
                self.calls.discard(call)
                answered = True
        if answered and not self.calls:
            yield AgentTurnEnded()

    def finish(self, proc: ProcessResult, request: AgentRequest) -> AgentResult:
        res = self.result
        usage = (
            _usage(as_dict(res.get("usage")), res.get("total_cost_usd"))
            if res
            else total_usage(self.turns.values())
        )
        fields = self.fields(usage, "\n".join(self.texts))
        if proc.timed_out:
            return AgentResult.failed(timed_out("claude", request), **fields)
        if res is None:
            return AgentResult.failed(self._no_result(proc), **fields)
        if isinstance(res.get("result"), str):
            fields["text"] = res["result"]
        error = _result_error(res, proc)
        if error is None and request.json_schema is not None:
            structured = res.get("structured_output")
            try:
                text = fields["text"]
                fields["structured"] = json.loads(text) if structured is None else structured
            except ValueError:
                error = UnparseableOutput("claude: the answer gave no structured output")
        return ended(error, fields)

    def _no_result(self, proc: ProcessResult) -> AgentError:
        if proc.exit_code == 0 and self.bad_lines:
            sample = self.bad_lines[0]
            return UnparseableOutput(f"claude: stdout is not stream-json: {sample!r}")
        return AgentCrashed(exited("claude", proc))


def _result_error(res: dict[str, Any], proc: ProcessResult) -> AgentError | None:
    """The error a `result` line reports, classified; None when it succeeded."""
    subtype = str(res.get("subtype") or "")
    if not res.get("is_error") and subtype == "success":
        return None
    status, kind = res.get("api_error_status"), str(res.get("api_error_type") or "")
    errors = res.get("errors")
    errors = errors if isinstance(errors, list) else []
    detail = str(res.get("result") or "; ".join(map(str, errors)) or tail(proc.stderr) or subtype)
    message = f"claude: {detail}"
    if subtype == "error_max_turns" or res.get("terminal_reason") == "prompt_too_long":
        return ContextExhausted(message)
    if "prompt is too long" in detail.lower():
        return ContextExhausted(message)
    if status in (401, 403) or kind in ("authentication_error", "permission_error"):
        return AuthFailed(message)
    if status in (429, 529) or kind in ("rate_limit_error", "overloaded_error"):
        return RateLimited(message)
    if subtype == "error_max_structured_output_retries":
        return UnparseableOutput(message)
    return AgentCrashed(message)


def _usage(raw: dict[str, Any], cost: Any = None) -> Usage:
    return Usage(
        input_tokens=int(raw.get("input_tokens") or 0),
        output_tokens=int(raw.get("output_tokens") or 0),
        cache_read_tokens=int(raw.get("cache_read_input_tokens") or 0),
        cache_write_tokens=int(raw.get("cache_creation_input_tokens") or 0),
        cost_usd=float(cost) if isinstance(cost, int | float) else None,
    )


__all__ = ["ClaudeAdapter", "ClaudeOptions"]
