"""The `gemini` adapter: Google's Gemini CLI run headless (`gemini -p "" -o stream-json`).

The prompt goes in on stdin (`-p ""` only forces headless mode); the persona replaces
the CLI's system prompt through GEMINI_SYSTEM_MD (or is put before the prompt).
Permissions are a policy file swell writes for each visit and passes with `--policy`:
everything is denied except the persona's allowed tools, so headless runs never ask
and never widen. See docs/adapters/gemini.md for the flags, environment and limits.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from swell.adapters.base import (
    AgentEvent,
    AgentRequest,
    AgentResult,
    AgentSessionStarted,
    AgentText,
    AgentToolCall,
    AgentUsageUpdate,
    Capabilities,
    Usage,
)
from swell.adapters.cli_agent import (
    CliAdapter,
    CliStream,
    Launch,
    as_dict,
    by_words,
    exited,
    tail,
    timed_out,
)
from swell.adapters.permissions import Unenforced, allows_everything, entries
from swell.errors import AgentError, AuthFailed, ContextExhausted, RateLimited, UnparseableOutput
from swell.process import ProcessResult

# the CLI's own default is `auto` (a classifier call picks Pro or Flash per turn);
# swell pins the model the CLI names DEFAULT_GEMINI_MODEL so runs are reproducible
DEFAULT_MODEL = "gemini-2.5-pro"
DEFAULT_TOOLS = ("Read", "Edit", "Write", "Glob", "Grep", "LS", "Bash", "TodoWrite")
# one node process instead of a relauncher plus child (~1.3 s faster); plain stderr
QUIET_ENV = {"GEMINI_CLI_NO_RELAUNCH": "true", "NO_COLOR": "1"}
# the visit marker: the CLI hands it on to every command it runs (GEMINI_CLI_* variables
# are never redacted), which is how commands that escaped the group are found
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
REGEX_SPECIAL = re.compile(r"[\\^$.*+?()[\]{}|/-]")  # to escape in a (JavaScript) regex
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

    `*` allows every tool (the shell with redirection); `Bash(git *)` becomes a shell
    rule with commandPrefix "git", a wildcard inside (`Bash(git * --force)`) a
    commandRegex; other tools' argument patterns cannot be enforced (`unenforced`), so
    such an allow is dropped (the tool stays denied) and such a deny covers the whole tool."""
    rules = [_rule("deny", DENY_ALL, ["*"], denyMessage="not allowed for this persona")]
    for decision, priority, tools in (("allow", ALLOW, allowed), ("deny", DENY, denied)):
        whole: list[str] = []
        for entry in entries(tools):
            names = _names(entry.tool)
            if entry.pattern and SHELL in names:
                rules.append(_rule(decision, priority, [SHELL], **_shell_match(entry.pattern)))
            elif entry.pattern and decision == "allow":
                continue
            elif (SHELL in names or entry.everything) and decision == "allow":
                # all of the shell, `>` included (a plain allow would ask, i.e. refuse)
                rules.append(_rule(decision, priority, [SHELL], allowRedirection=True))
                whole += [n for n in names if n != SHELL and n not in whole]
            else:
                whole += [n for n in names if n not in whole]
        if whole:
            rules.append(_rule(decision, priority, whole))
    return "".join(rules)


def _names(tool: str) -> list[str]:
    """The CLI's names for a swell tool name (`*`: every tool)."""
    if tool.startswith("mcp__"):
        server, _, mcp_tool = tool.removeprefix("mcp__").partition("__")
        return [f"mcp_{server}_{mcp_tool or '*'}"]
    return list(TOOLS.get(tool, (tool,)))


def _shell_match(pattern: str) -> dict[str, str]:
    """A shell pattern as the CLI's rule fields: commandPrefix for `git *`, `go test*`,
    `npm run test:*` or a whole command; commandRegex when a `*` is inside."""
    body = pattern.removesuffix("*")
    if "*" not in body:
        return {"commandPrefix": body.strip().removesuffix(":").strip()}
    # the regex meets the arguments as JSON: `"command":"` + the command, JSON-escaped
    regex = ".*".join(
        REGEX_SPECIAL.sub(r"\\\g<0>", json.dumps(p)[1:-1]) for p in pattern.split("*")
    )
    return {"commandRegex": regex if pattern.endswith("*") else f'{regex}"'}


def unenforced(
    allowed: list[str], denied: list[str], options: Mapping[str, Any]
) -> list[Unenforced]:
    """Argument patterns of tools other than the shell: the policy engine has rules for
    shell commands only (file paths reach it in whatever form the model chose)."""
    gaps: list[Unenforced] = []
    for denying, tools in ((False, allowed), (True, denied)):
        if not denying and allows_everything(allowed):
            continue  # `*` allows each of these tools whole anyway
        for entry in entries(tools):
            if entry.pattern and SHELL not in _names(entry.tool):
                outcome = "all of it is denied" if denying else "it stays denied"
                why = f"gemini limits only shell commands by pattern, not {entry.tool}; {outcome}"
                gaps.append(Unenforced(entry.text, denying, why))
    return gaps


class GeminiAdapter(CliAdapter[GeminiOptions]):
    Options = GeminiOptions
    name = "gemini"
    npm_package = "@google/gemini-cli"
    visit_marker = MARKER
    capabilities = Capabilities(
        resume=True,
        tools=True,
        enforces_permissions=True,
        json_schema=False,
        skills_dir=".agents/skills",
    )
    unenforced = staticmethod(unenforced)
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

    def launch(self, binary: str, request: AgentRequest, scratch: Path) -> Launch:
        policy_file, system_md = scratch / "swell.toml", scratch / "system.md"
        allowed = request.allowed_tools or self.options.default_tools
        policy_file.write_text(policy(allowed, request.denied_tools), encoding="utf-8")
        system_md.write_text(request.system_prompt, encoding="utf-8")
        argv = self.command(binary, request, policy_file)
        env = self.environment(request, system_md)
        return Launch(argv, env, _Stream(request.workspace), self.stdin(request))

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

    def environment(self, request: AgentRequest, system_md: Path) -> dict[str, str]:
        env = {**QUIET_ENV, **git_identity(request.workspace, request.env), **request.env}
        if request.system_prompt and self.options.system_prompt_mode == "replace":
            env["GEMINI_SYSTEM_MD"] = str(system_md)
        return env


def git_identity(workspace: Path, env: Mapping[str, str]) -> dict[str, str]:
    """The user's git identity as GIT_AUTHOR_*/GIT_COMMITTER_* variables. The Gemini CLI
    runs shell commands with GIT_CONFIG_GLOBAL=/dev/null (its "safe git" environment),
    so a commit the step asks for would find no user.name; these variables it keeps."""
    found: dict[str, str] = {}
    for key in ("name", "email"):
        try:
            done = subprocess.run(
                ["git", "config", "--get", f"user.{key}"],
                cwd=workspace,
                env=dict(env),
                capture_output=True,
                text=True,
                timeout=10,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired):
            return {}
        value = done.stdout.strip()
        if done.returncode != 0 or not value:
            continue
        for role in ("AUTHOR", "COMMITTER"):
            found[f"GIT_{role}_{key.upper()}"] = value
    return found


class _Stream(CliStream):
    """Turns stream-json lines into events and, at the end, one AgentResult."""

    def __init__(self, workspace: Path) -> None:
        super().__init__(workspace)
        self.result: dict[str, Any] | None = None
        self.chunks: list[str] = []  # assistant text since the last other event
        self.text = ""  # the last complete assistant message
        self.errors: list[str] = []  # `error` events (loop detected, invalid stream, ...)
        self.pending: dict[str, str] = {}  # tool_id -> file it writes

    def feed(self, line: str) -> Iterator[AgentEvent]:
        if (data := self.decode(line)) is None:
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
            ok = data.get("status") == "success"
            if ok and path:
                self.add_file(path)
            output = data.get("output") if ok else as_dict(data.get("error")).get("message")
            yield self.tools.result(data.get("tool_id"), output, is_error=not ok)
        elif kind == "error":
            self.errors.append(str(data.get("message") or ""))
        elif kind == "result":
            self.result = data
            usage = _usage(as_dict(data.get("stats")))
            if usage != Usage():
                yield AgentUsageUpdate(usage)

    def flush(self) -> Iterator[AgentEvent]:
        text, self.chunks = "".join(self.chunks), []
        if text.strip():
            self.text = text
            yield AgentText(text)

    def _tool_use(self, data: dict[str, Any]) -> AgentToolCall:
        name, args = str(data.get("tool_name")), as_dict(data.get("parameters"))
        if name in FILE_TOOLS and isinstance(args.get("file_path"), str):
            self.pending[str(data.get("tool_id"))] = self.relative(args["file_path"])
        call_id, target = data.get("tool_id"), self.target(args, TARGET_KEYS)
        return self.tools.call(call_id, EVENT_NAMES.get(name, name), target)

    def finish(self, proc: ProcessResult, request: AgentRequest) -> AgentResult:
        res = self.result or {}
        fields = self.fields(_usage(as_dict(res.get("stats"))), self.text)
        if proc.timed_out:
            error: AgentError = timed_out("gemini", request)
        elif self.result is None:
            error = self._no_result(proc)
        elif res.get("status") == "success":
            return AgentResult(success=True, **fields)
        else:
            failure = as_dict(res.get("error")).get("message") or "; ".join(self.errors)
            error = classify(f"gemini: {failure or tail(proc.stderr)}", proc.exit_code)
        return AgentResult.failed(error, **fields)

    def _no_result(self, proc: ProcessResult) -> AgentError:
        message = exited("gemini", proc)
        if proc.exit_code == FATAL_AUTH:
            return AuthFailed(message)
        if self.bad_lines and (proc.exit_code == 0 or self.session_id is None):
            sample = self.bad_lines[0]
            return UnparseableOutput(f"gemini: stdout is not stream-json: {sample!r}")
        return classify(message, proc.exit_code)


def classify(message: str, exit_code: int | None = None) -> AgentError:
    """An API failure by its HTTP status (in the message or the exit code) or its words."""
    found = re.search(r'"code"\s*:\s*(\d{3})', message)
    status = int(found.group(1)) if found else EXIT_STATUS.get(exit_code or 0)
    if status in (401, 403):
        return AuthFailed(message)
    if status == 429:
        return RateLimited(message)
    return by_words(message, ((RATE, RateLimited), (AUTH, AuthFailed), (CONTEXT, ContextExhausted)))


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


__all__ = ["GeminiAdapter", "GeminiOptions", "policy", "unenforced"]
