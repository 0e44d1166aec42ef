"""The `codex` adapter: OpenAI's Codex CLI run as `codex exec --json`.

One visit is one `codex exec` process (or `codex exec resume THREAD` to continue a
thread); its JSONL events become AgentEvents. Codex enforces a sandbox mode, not
per-tool lists: read-only unless a write/exec tool is allowed. The persona goes in as
`developer_instructions`, the prompt on stdin. Codex's usage after a resume counts the
whole thread, so the thread's total before the visit is read from its session file and
subtracted. docs/adapters/codex.md has the details.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from swell import sandbox as swell_sandbox
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
from swell.adapters.cli_agent import CliAdapter, CliStream, Launch, as_dict, by_words, ended
from swell.adapters.permissions import Entry, Unenforced, allows_everything, entries
from swell.errors import (
    AgentCrashed,
    AgentError,
    AgentTimeout,
    AuthFailed,
    ContextExhausted,
    RateLimited,
    UnparseableOutput,
)
from swell.process import ProcessResult
from swell.workspace import safe

Sandbox = Literal["read-only", "workspace-write", "danger-full-access"]
ConfigValue = str | int | float | bool | list[str]

# swell (Claude-style) and Codex tool names that need a writable sandbox: the shells
# (one for codex's exec_command) and the file writers (codex's apply_patch)
SHELLS = {"bash", "shell", "exec_command"}
FILE_WRITERS = {"write", "edit", "multiedit", "notebookedit", "apply_patch"}
WRITE_TOOLS = SHELLS | FILE_WRITERS
DEFAULT_WRITERS = {"bash", "write", "edit", "multiedit", "notebookedit"}  # no list, or `*`
USAGE_KEYS = ("input_tokens", "cached_input_tokens", "cache_write_input_tokens", "output_tokens")
# phrases of Codex's and the API's failure messages (paths may hold any digits, so no bare codes)
RATE = ("too many requests", "rate limit", "rate_limit", "usage limit", "quota")
AUTH = ("unauthorized", "forbidden", "invalid_api_key", "api key", "not logged in", "login")
CONTEXT = ("context window", "context_length_exceeded", "maximum context length")
# Wave's folders for a step's outputs: Codex's workspace-write sandbox keeps `.agents`
# (and `.git`) read-only inside the workspace unless they are writable roots of their own
OUTPUT_DIRS = (".agents/output", ".agents/artifacts")
WRITABLE_ROOTS = "sandbox_workspace_write.writable_roots"


class CodexOptions(BaseModel):
    """`adapters.NAME.options` of a codex adapter."""

    model_config = ConfigDict(extra="forbid")

    provider: str | None = None  # a model_provider defined in the user's Codex config
    base_url: str | None = None  # an OpenAI Responses endpoint; defines provider "swell"
    api_key_env: str | None = None  # the variable holding base_url's key (passed through)
    sandbox: Sandbox | None = None  # instead of the mode derived from the permissions
    config: dict[str, ConfigValue] = Field(default_factory=dict)  # more `-c key=value`


def _name(entry: Entry) -> str:
    """The tool's lower-cased name, every shell as `bash`."""
    name = entry.tool.lower()
    return "bash" if name in SHELLS else name


def sandbox_mode(allowed_tools: list[str], denied_tools: Iterable[str] = ()) -> Sandbox:
    """workspace-write when a write/exec tool (or everything: no list, `*`) is allowed
    and not denied outright; else read-only."""
    gone = {_name(e) for e in entries(denied_tools) if not e.pattern}
    if not allowed_tools or allows_everything(allowed_tools):
        writers = set(DEFAULT_WRITERS)
    else:
        writers = {_name(e) for e in entries(allowed_tools)} & WRITE_TOOLS
    return "workspace-write" if writers - gone else "read-only"


def unenforced(
    allowed: list[str], denied: list[str], options: Mapping[str, Any]
) -> list[Unenforced]:
    """The entries codex's one sandbox mode cannot hold to: it has no per-tool or
    per-command rules a visit can set (its execpolicy `.rules` live in CODEX_HOME), and
    its shell is always offered."""
    sandbox = str(options.get("sandbox") or sandbox_mode(allowed, denied))
    holds = f"its {sandbox} sandbox is all that holds"
    listed = entries(allowed)
    gaps = [
        Unenforced(e.text, False, f"codex cannot limit {e.tool} to '{e.pattern}'; {holds}")
        for e in listed
        if e.pattern
    ]
    shell = any(_name(e) == "bash" and not e.pattern for e in listed)
    writer = next((e for e in listed if _name(e) in FILE_WRITERS), None)
    if sandbox != "read-only" and writer and not shell and not allows_everything(allowed):
        why = "codex writes through its workspace-write sandbox, where its shell runs any command too (Bash is not allowed)"
        gaps.append(Unenforced(writer.text, False, why))
    for entry in entries(denied):
        name = _name(entry)
        if sandbox == "read-only" and name in FILE_WRITERS:
            continue  # nothing writes in a read-only sandbox
        if name == "bash":
            why = f"codex's shell cannot be taken away or limited per command; {holds}"
        elif name in FILE_WRITERS:
            why = f"codex writes files through one tool for all of them; {holds}"
        else:
            why = f"codex has no per-tool switches; {holds}"
        gaps.append(Unenforced(entry.text, True, why))
    return gaps


def git_dirs(workspace: Path) -> list[Path]:
    """What a commit in `workspace` writes: its git dir and, for a worktree (a `.git`
    file), the shared objects, refs and logs of the repository it belongs to."""
    dot = workspace / ".git"
    if dot.is_dir():
        return [dot]
    try:
        pointer = dot.read_text(encoding="utf-8")
    except OSError:
        return []
    if not pointer.startswith("gitdir:"):
        return []
    git_dir = (workspace / pointer[len("gitdir:") :].strip()).resolve()
    try:
        common = (git_dir / (git_dir / "commondir").read_text(encoding="utf-8").strip()).resolve()
    except OSError:
        return [git_dir]
    return [git_dir, *(common / name for name in ("objects", "refs", "logs"))]


def writable_roots(workspace: Path) -> list[str]:
    """Roots a workspace-write visit needs besides the workspace: Wave's output folders
    and the git directories, which Codex's sandbox otherwise keeps read-only, so a step
    can write its `.agents/output/...` artifacts and commit as with every other CLI."""
    found = [workspace / d for d in OUTPUT_DIRS] + git_dirs(workspace)
    return [str(path) for path in found if path.is_dir()]


def toml_value(value: ConfigValue) -> str:
    """A `-c` value as TOML (JSON strings are TOML basic strings, bar DEL)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    return str(value)


def classify(message: str) -> AgentError:
    return by_words(message, ((RATE, RateLimited), (AUTH, AuthFailed), (CONTEXT, ContextExhausted)))


def codex_home(env: dict[str, str]) -> Path:
    if env.get("CODEX_HOME"):
        return Path(env["CODEX_HOME"])
    return Path(env.get("HOME") or Path.home()) / ".codex"


SESSION_TAIL = 16 * 1024 * 1024  # of a session file, the end holds its last token_count


def _session_tail(path: Path) -> str:
    """The last `SESSION_TAIL` bytes of a session file: a regular file, not a link (a
    step could plant a FIFO or a link to a device there; reading it would hang)."""
    try:
        fd = safe.open_regular(path)
    except safe.UnsafePath:
        return ""
    try:
        size = os.fstat(fd).st_size
        if size > SESSION_TAIL:
            os.lseek(fd, size - SESSION_TAIL, os.SEEK_SET)
        return safe.read_fd(fd, SESSION_TAIL).decode("utf-8", "replace")
    except OSError:
        return ""
    finally:
        os.close(fd)


def thread_total(home: Path, thread_id: str) -> dict[str, int]:
    """The thread's cumulative usage so far, from the last token_count in its session file."""
    total: dict[str, int] = {}
    suffix, found = f"{thread_id}.jsonl", []
    # os.walk enters no linked directory: a link loop under sessions/ cannot hang this
    for folder, _, files in os.walk(home / "sessions"):
        found += [
            os.path.join(folder, f)
            for f in files
            if f.startswith("rollout-") and f.endswith(suffix)
        ]
    for path in sorted(found):
        for line in _session_tail(Path(path)).splitlines():
            if '"token_count"' not in line:
                continue
            try:
                info = json.loads(line)["payload"]["info"]["total_token_usage"]
            except (ValueError, KeyError, TypeError):
                continue
            total = {k: int(info.get(k) or 0) for k in USAGE_KEYS}
    return total


def to_usage(raw: dict[str, int]) -> Usage:
    """Codex counts cached input inside input_tokens (OpenAI's convention); swell does not."""
    cached, written = raw.get("cached_input_tokens", 0), raw.get("cache_write_input_tokens", 0)
    return Usage(
        input_tokens=max(raw.get("input_tokens", 0) - cached - written, 0),
        output_tokens=raw.get("output_tokens", 0),
        cache_read_tokens=cached,
        cache_write_tokens=written,
    )


class _Stream(CliStream):
    """What one `codex exec` said: fed its stdout line by line.

    `baseline` is the resumed thread's usage before this visit (Codex reports the
    thread's running total, swell each visit's own)."""

    def __init__(self, workspace: Path, baseline: dict[str, int]) -> None:
        super().__init__(workspace)
        self.baseline = baseline
        self.text = ""
        self.usage: Usage | None = None
        self.failure: str | None = None
        self.last_error: str | None = None
        self.events = 0
        self.seen: set[str] = set()

    def feed(self, line: str) -> list[AgentEvent]:
        if (event := self.decode(line)) is None:
            return []
        self.events += 1
        kind = event["type"]
        if kind == "thread.started" and isinstance(event.get("thread_id"), str):
            self.session_id = event["thread_id"]
            return [AgentSessionStarted(event["thread_id"])]
        if kind.startswith("item.") and isinstance(event.get("item"), dict):
            return self._item(event["item"], done=kind == "item.completed")
        if kind == "turn.completed" and isinstance(event.get("usage"), dict):
            raw = {k: int(event["usage"].get(k) or 0) for k in USAGE_KEYS}
            self.usage = to_usage({k: raw[k] - self.baseline.get(k, 0) for k in USAGE_KEYS})
            return [AgentUsageUpdate(self.usage)]
        if kind == "turn.failed":
            error = event.get("error")
            self.failure = str(error.get("message") if isinstance(error, dict) else error)
        elif kind == "error":
            self.last_error = str(event.get("message"))
        return []

    def _item(self, item: dict[str, Any], done: bool) -> list[AgentEvent]:
        kind, item_id = item.get("type"), str(item.get("id"))
        if kind == "agent_message" and done and isinstance(item.get("text"), str):
            self.text = item["text"]
            return [AgentText(self.text)]
        if kind in ("command_execution", "mcp_tool_call"):
            return self._call(item, item_id, done)
        if item_id in self.seen:
            return []
        if kind == "file_change" and item.get("status") != "failed":
            self.seen.add(item_id)
            calls: list[AgentEvent] = []
            for change in item.get("changes") or []:
                path = self.relative(str(change.get("path", "")))
                tool = {"add": "Write", "delete": "Delete"}.get(change.get("kind"), "Edit")
                calls.append(AgentToolCall(tool, path))
                self.add_file(path)
            return calls
        if kind == "web_search":
            self.seen.add(item_id)
            return [AgentToolCall("WebSearch", item.get("query"))]
        return []

    def _call(self, item: dict[str, Any], item_id: str, done: bool) -> list[AgentEvent]:
        """A command or MCP tool call: the call when first seen (started, or already
        completed), its result once completed."""
        events: list[AgentEvent] = []
        command = item.get("type") == "command_execution"
        if item_id not in self.seen:
            self.seen.add(item_id)
            name = "Bash" if command else f"mcp__{item.get('server')}__{item.get('tool')}"
            events.append(self.tools.call(item_id, name, str(item.get("command", "")) or None))
        if done:
            failed = item.get("status") == "failed" or item.get("exit_code") not in (0, None)
            error = as_dict(item.get("error")).get("message")
            output = item.get("aggregated_output") if command else (error or item.get("result"))
            events.append(self.tools.result(item_id, output, is_error=failed or bool(error)))
        return events

    def finish(self, proc: ProcessResult, request: AgentRequest) -> AgentResult:
        error = self._error(proc, request)
        structured = None
        if error is None and request.json_schema is not None:
            try:
                structured = json.loads(self.text)
            except ValueError:
                error = UnparseableOutput(f"codex's answer is not JSON: {self.text[:200]!r}")
        return ended(
            error, {**self.fields(self.usage or Usage(), self.text), "structured": structured}
        )

    def _error(self, done: ProcessResult, request: AgentRequest) -> AgentError | None:
        """Why the visit failed, or None: timeout, turn.failed, garbage, exit code."""
        code = done.exit_code
        if done.timed_out:
            return AgentTimeout(f"codex did not finish within {request.timeout_s}s")
        if self.failure is not None:
            return classify(self.failure)
        if code == 0 and self.usage is not None:
            return None
        if self.bad_lines and (self.events == 0 or code == 0):
            return UnparseableOutput(f"codex printed non-JSON output: {self.bad_lines[0]!r}")
        # codex's own warnings (e.g. about helper binaries under /tmp) explain nothing
        lines = [
            ln for ln in done.stderr.splitlines() if ln.strip() and not ln.startswith("WARNING:")
        ]
        detail = self.last_error or "\n".join(lines[-5:])[-1000:] or "no output"
        if code != 0:
            return classify(f"codex exited with code {code}: {detail}")
        return AgentCrashed(f"codex ended without completing the turn: {detail}")


class CodexAdapter(CliAdapter[CodexOptions]):
    Options = CodexOptions
    name = "codex"
    npm_package = "@openai/codex"
    capabilities = Capabilities(
        resume=True,
        tools=True,
        enforces_permissions=False,
        json_schema=True,
        skills_dir=".agents/skills",
    )
    unenforced = staticmethod(unenforced)
    env_passthrough: tuple[str, ...] = (
        "CODEX_HOME",
        "CODEX_API_KEY",
        "OPENAI_API_KEY",
        "OPENAI_ORGANIZATION",
        "OPENAI_PROJECT",
    )

    def _config(self, request: AgentRequest, sandbox: Sandbox) -> dict[str, ConfigValue]:
        config: dict[str, ConfigValue] = {}
        if sandbox == "workspace-write" and (roots := writable_roots(request.workspace)):
            config[WRITABLE_ROOTS] = roots
        if self.options.base_url:
            provider = "model_providers.swell"
            config |= {"model_provider": "swell", f"{provider}.name": "swell"}
            config |= {f"{provider}.base_url": self.options.base_url}
            config[f"{provider}.wire_api"] = "responses"
            if self.options.api_key_env:
                config[f"{provider}.env_key"] = self.options.api_key_env
        elif self.options.provider:
            config["model_provider"] = self.options.provider
        if request.system_prompt:
            config["developer_instructions"] = request.system_prompt
        return config | self.options.config

    def launch(self, binary: str, request: AgentRequest, scratch: Path) -> Launch:
        baseline: dict[str, int] = {}
        if request.resume_session:
            env = dict(request.env)
            if (box := swell_sandbox.current()) is not None:  # its sessions are in the run's home
                env = swell_sandbox.confined_env(env, box.box, self.env_passthrough)
            baseline = thread_total(codex_home(env), request.resume_session)
        schema = None
        if request.json_schema is not None:
            schema = scratch / "schema.json"
            schema.write_text(json.dumps(request.json_schema), encoding="utf-8")
        if swell_sandbox.current() is not None and self.sandbox(request) == "read-only":
            swell_sandbox.read_only_agent()  # swell's sandbox holds codex's read-only mode
        if self.sandbox(request) == "workspace-write":
            for folder in OUTPUT_DIRS:
                (request.workspace / folder).mkdir(parents=True, exist_ok=True)
        argv = self.command(binary, request, schema)
        return Launch(argv, request.env, _Stream(request.workspace, baseline), request.prompt)

    def sandbox(self, request: AgentRequest) -> Sandbox:
        return self.options.sandbox or sandbox_mode(request.allowed_tools, request.denied_tools)

    def command(self, binary: str, request: AgentRequest, schema: Path | None) -> list[str]:
        """The argv of one `codex exec` (the prompt itself goes to stdin)."""
        sandbox = self.sandbox(request)
        # codex's own sandbox needs user namespaces, which swell's sandbox does not allow
        # nested: inside it, codex runs without its own and swell's holds (docs/adapters/codex.md)
        passed = "danger-full-access" if swell_sandbox.current() is not None else sandbox
        argv = [binary, "exec", "--json", "--skip-git-repo-check", "-s", passed]
        argv += ["-C", str(request.workspace)]
        if request.model:
            argv += ["-m", request.model]
        for key, value in self._config(request, sandbox).items():
            argv += ["-c", f"{key}={toml_value(value)}"]
        if schema is not None:
            argv += ["--output-schema", str(schema)]
        if request.resume_session:
            argv += ["resume", request.resume_session]
        return [*argv, "-"]  # the prompt comes on stdin


__all__ = ["CodexAdapter", "CodexOptions"]
