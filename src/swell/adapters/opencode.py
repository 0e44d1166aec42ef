"""The `opencode` adapter: sst's opencode run headless (`opencode run --format json`).

One visit is one `opencode run` process (`-s SESSION` continues a session); its JSON
events become AgentEvents. Everything swell decides is one generated config handed
over in OPENCODE_CONFIG_CONTENT: an agent named `swell` that carries the persona's
permission rules (applied after every other config's, so nothing widens them) and,
with `base_url`, an OpenAI-compatible provider named `swell`. The persona's prompt is
added to opencode's own through `instructions` (or replaces it); the task prompt goes
in on stdin. docs/adapters/opencode.md has the details.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from swell.adapters.base import (
    AgentEvent,
    AgentFinished,
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
    by_words,
    ended,
    tail,
    timed_out,
    total_usage,
)
from swell.adapters.permissions import allows_everything, entries
from swell.errors import (
    AgentCrashed,
    AgentError,
    AuthFailed,
    ContextExhausted,
    RateLimited,
    UnparseableOutput,
)
from swell.process import ProcessResult

AGENT = "swell"  # the agent the generated config defines and `--agent` selects
PROVIDER = "swell"  # the provider `base_url` defines
MARKER = "OPENCODE_SWELL_VISIT"  # the visit marker: opencode hands its environment on
# headless runs never update themselves, refresh models.dev or share sessions
QUIET_ENV = {
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_SHARE": "1",
}
# opencode's tools under the (Claude Code) names swell's events and permissions use
TOOL_NAMES = {
    "bash": "Bash", "read": "Read", "write": "Write", "edit": "Edit", "multiedit": "MultiEdit",
    "apply_patch": "Edit", "glob": "Glob", "grep": "Grep", "list": "LS", "task": "Task",
    "skill": "Skill", "webfetch": "WebFetch", "websearch": "WebSearch", "todowrite": "TodoWrite",
}  # fmt: skip
# swell tool names whose opencode permission key is another: `edit` covers every file change
PERMISSION_KEYS = {"ls": "list"} | dict.fromkeys(("write", "multiedit", "notebookedit"), "edit")
FILE_TOOLS = ("write", "edit", "multiedit")
TARGET_KEYS = ("filePath", "path", "command", "pattern", "url", "query", "description", "name")
RATE = ("rate limit", "rate_limit", "too many requests", "quota")
AUTH = ("unauthorized", "invalid api key", "invalid_api_key", "api key")
CONTEXT = ("context length", "context window", "context_length_exceeded", "too many tokens")

Rules = dict[str, dict[str, str]]


class OpencodeOptions(BaseModel):
    """`adapters.NAME.options` of an opencode adapter."""

    model_config = ConfigDict(extra="forbid")

    base_url: str | None = None  # an OpenAI Chat Completions endpoint; defines provider "swell"
    api_key_env: str | None = None  # the variable holding base_url's key (passed through)
    provider: str | None = None  # else: the provider of models named without "provider/"
    system_prompt_mode: Literal["append", "replace"] = "append"
    # read the workspace's opencode.json, .opencode/ and AGENTS.md (off: they could widen
    # the persona's permissions or load plugins)
    project_config: bool = False
    config: dict[str, Any] = Field(default_factory=dict)  # deep-merged into the generated config


def permission_rules(allowed: list[str], denied: list[str]) -> Rules:
    """opencode `permission` rules: with an allow list everything else is denied.

    opencode applies the last matching rule, so the catch-all comes first and denials
    last. `*` (every tool) is opencode's defaults: no catch-all, no allow rules.
    """
    if allows_everything(allowed):
        allowed = []
    rules: Rules = {"*": {"*": "deny"}} if allowed else {}
    for action, tools in (("allow", allowed), ("deny", denied)):
        for entry in entries(tools):
            pattern = entry.pattern or "*"
            if pattern.endswith(":*"):  # Claude Code's legacy prefix form, `Bash(git:*)`
                pattern = pattern[:-2] + " *"
            key = entry.tool
            if key.lower() in TOOL_NAMES or key.lower() in PERMISSION_KEYS:
                key = PERMISSION_KEYS.get(key.lower(), key.lower())
            elif key.startswith("mcp__"):  # Claude Code's mcp__server[__tool]: server_tool
                server, _, mcp_tool = key[5:].partition("__")
                key = f"{server}_{mcp_tool or '*'}"
            rules.setdefault(key, {})[pattern] = action
    return rules


def deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def classify(error: dict[str, Any]) -> AgentError:
    """An opencode `error` event's error ({name, data: {message, statusCode}}) as AgentError."""
    data = as_dict(error.get("data"))
    name, status = str(error.get("name") or ""), data.get("statusCode")
    detail = data.get("message") or error.get("message") or json.dumps(error)[:500]
    message = f"opencode: {detail}" + (f" (HTTP {status})" if status else "")
    if name == "ContextOverflowError":
        return ContextExhausted(message)
    if status in (401, 403) or name == "ProviderAuthError":
        return AuthFailed(message)
    if status == 429:
        return RateLimited(message)
    text = f"{detail} {data.get('responseBody') or ''}"
    table = ((CONTEXT, ContextExhausted), (RATE, RateLimited), (AUTH, AuthFailed))
    return by_words(message, table, text)


class OpencodeAdapter(CliAdapter[OpencodeOptions]):
    Options = OpencodeOptions
    name = "opencode"
    npm_package = "opencode-ai"
    visit_marker = MARKER
    capabilities = Capabilities(
        resume=True,
        tools=True,
        enforces_permissions=True,
        json_schema=False,
        skills_dir=".agents/skills",
    )
    # opencode's own settings and the keys of the providers it knows best
    env_passthrough: tuple[str, ...] = (
        "OPENCODE_*", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "GROQ_API_KEY",
        "GEMINI_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY", "DEEPSEEK_API_KEY", "MISTRAL_API_KEY",
        "XAI_API_KEY",
    )  # fmt: skip

    async def run(self, request: AgentRequest) -> AsyncIterator[AgentEvent]:
        if self.options.base_url and not request.model:
            # opencode would pick its own default model, on a provider base_url is not:
            # it fails with "Unexpected server error" (or spends on another provider)
            name = self.setup_name
            error = AgentError(
                f"opencode: adapters.{name}.options.base_url serves the models of this "
                f"visit, but it names no model: set adapters.{name}.default_model (or the "
                "step's or persona's model)"
            )
            yield AgentFinished(AgentResult.failed(error))
            return
        async for event in super().run(request):
            yield event

    def launch(self, binary: str, request: AgentRequest, scratch: Path) -> Launch:
        persona = None
        if request.system_prompt:
            persona = scratch / "persona.md"
            persona.write_text(request.system_prompt, encoding="utf-8")
        argv = self.command(binary, request)
        env = self.environment(request, self.config(request, persona))
        return Launch(argv, env, _Stream(request.workspace), request.prompt)

    def model(self, request: AgentRequest) -> str | None:
        """`provider/model` as opencode wants it (base_url's ids may contain "/" themselves)."""
        model, opts = request.model, self.options
        if not model:
            return None
        if opts.base_url:
            return model if model.startswith(f"{PROVIDER}/") else f"{PROVIDER}/{model}"
        if opts.provider and not model.startswith(f"{opts.provider}/"):
            return f"{opts.provider}/{model}"
        return model

    def config(self, request: AgentRequest, persona: Path | None) -> dict[str, Any]:
        """The config handed over in OPENCODE_CONFIG_CONTENT; `persona` holds the system prompt."""
        opts = self.options
        agent: dict[str, Any] = {
            "mode": "primary",
            "description": "a swell persona",
            "permission": permission_rules(request.allowed_tools, request.denied_tools),
        }
        config: dict[str, Any] = {
            "autoupdate": False,
            "share": "disabled",
            "snapshot": False,  # swell keeps its own workspace history
            "agent": {AGENT: agent},
        }
        if persona is not None and opts.system_prompt_mode == "replace":
            agent["prompt"] = f"{{file:{persona}}}"  # read as is, never parsed as config
        elif persona is not None:
            config["instructions"] = [str(persona)]
        if request.temperature is not None:
            agent["temperature"] = request.temperature
        if opts.base_url:
            options: dict[str, Any] = {"baseURL": opts.base_url}
            if opts.api_key_env:
                options["apiKey"] = f"{{env:{opts.api_key_env}}}"
            model = (self.model(request) or "").removeprefix(f"{PROVIDER}/")
            provider = {"npm": "@ai-sdk/openai-compatible", "name": "swell", "options": options}
            provider["models"] = {model: {"name": model}} if model else {}
            config["provider"] = {PROVIDER: provider}
        return deep_merge(config, opts.config)

    def command(self, binary: str, request: AgentRequest) -> list[str]:
        """The argv of one run (the prompt itself goes to stdin)."""
        title = f"swell {request.run_id}/{request.step_id} #{request.visit}"
        argv = [binary, "run", "--format", "json", "--agent", AGENT]
        argv += ["--dir", str(request.workspace), "--title", title if request.run_id else "swell"]
        if model := self.model(request):
            argv += ["-m", model]
        if request.resume_session:
            argv += ["-s", request.resume_session]
        return argv

    def environment(self, request: AgentRequest, config: dict[str, Any]) -> dict[str, str]:
        env = {**QUIET_ENV, **request.env, "OPENCODE_CONFIG_CONTENT": json.dumps(config)}
        if not self.options.project_config:
            env["OPENCODE_DISABLE_PROJECT_CONFIG"] = "1"
        env["PWD"] = str(request.workspace)  # opencode prefers $PWD to its cwd
        return env


class _Stream(CliStream):
    """Turns `--format json` lines into events and, at the end, one AgentResult."""

    def __init__(self, workspace: Path) -> None:
        super().__init__(workspace)
        self.texts: dict[str, list[str]] = {}  # message id -> its text parts
        self.last_message: str | None = None
        self.steps: list[Usage] = []  # per model call, from step_finish
        self.errors: list[dict[str, Any]] = []

    def feed(self, line: str) -> Iterator[AgentEvent]:
        if (data := self.decode(line)) is None:
            return
        session = data.get("sessionID")
        if isinstance(session, str) and session != self.session_id:
            self.session_id = session
            yield AgentSessionStarted(session)
        kind, part = data["type"], as_dict(data.get("part"))
        if kind == "text" and isinstance(part.get("text"), str):
            message = str(part.get("messageID"))
            self.texts.setdefault(message, []).append(part["text"])
            self.last_message = message
            yield AgentText(part["text"])
        elif kind == "tool_use":
            yield from self._tool(part)
        elif kind == "step_finish":
            yield AgentUsageUpdate(self._step_usage(part))
            # opencode reports a step's finish after its tool calls have run (their
            # `tool_use` events come first); a step that called tools is followed by
            # another model call: the turn boundary
            if part.get("reason") == "tool-calls":
                yield AgentTurnEnded()
        elif kind == "error":
            self.errors.append(as_dict(data.get("error")))

    def _tool(self, part: dict[str, Any]) -> Iterator[AgentEvent]:
        """A tool call, reported once it has ended, with its result."""
        tool, state = str(part.get("tool")), as_dict(part.get("state"))
        args, call_id = as_dict(state.get("input")), part.get("callID") or part.get("id")
        target: str | None = None
        if tool == "invalid":  # a tool the model may not use: it was never run
            tool = str(args.get("tool"))
        else:
            target = self.target(args, TARGET_KEYS)
        yield self.tools.call(call_id, TOOL_NAMES.get(tool, tool), target)
        status = state.get("status")
        if tool in FILE_TOOLS and status == "completed" and target:
            self.add_file(target)
        if status in ("completed", "error") and call_id is not None:
            failed = status == "error"
            output = state.get("error") if failed else state.get("output")
            yield self.tools.result(call_id, output, is_error=failed, duration_ms=_took(state))

    def _step_usage(self, part: dict[str, Any]) -> Usage:
        tokens = as_dict(part.get("tokens"))
        cache = as_dict(tokens.get("cache"))
        step = Usage(
            input_tokens=_int(tokens.get("input")),
            output_tokens=_int(tokens.get("output")) + _int(tokens.get("reasoning")),
            cache_read_tokens=_int(cache.get("read")),
            cache_write_tokens=_int(cache.get("write")),
            cost_usd=float(cost) if isinstance(cost := part.get("cost"), int | float) else None,
        )
        self.steps.append(step)
        return step

    def finish(self, proc: ProcessResult, request: AgentRequest) -> AgentResult:
        text = "\n".join(self.texts.get(self.last_message or "", []))
        fields = self.fields(total_usage(self.steps), text)  # a cost of 0: no price known
        error = self._error(proc, request)
        if error is None and request.json_schema is not None:
            try:
                fields["structured"] = json.loads(_unfence(text))
            except ValueError:
                error = UnparseableOutput(f"opencode: the answer is not JSON: {text[:200]!r}")
        return ended(error, fields)

    def _error(self, proc: ProcessResult, request: AgentRequest) -> AgentError | None:
        """Why the visit failed, or None: timeout, error events, garbage, exit code."""
        if proc.timed_out:
            return timed_out("opencode", request)
        if self.errors:
            return classify(self.errors[-1])
        if proc.exit_code == 0 and self.steps:
            return None
        if self.bad_lines and (self.session_id is None or proc.exit_code == 0):
            return UnparseableOutput(f"opencode: stdout is not JSON events: {self.bad_lines[0]!r}")
        end = tail(proc.stderr, 1000) or "no output"
        if proc.exit_code == 0:
            return AgentCrashed(f"opencode ended without finishing a step: {end}")
        return AgentCrashed(f"opencode exited with code {proc.exit_code}: {end}")


def _took(state: dict[str, Any]) -> int | None:
    """A tool call's duration from opencode's own start and end times (epoch ms)."""
    time = as_dict(state.get("time"))
    start, end = time.get("start"), time.get("end")
    if isinstance(start, int | float) and isinstance(end, int | float) and end >= start:
        return int(end - start)
    return None


def _unfence(text: str) -> str:
    """The JSON inside a ```json fence, or the text itself."""
    body = text.strip()
    if body.startswith("```") and body.endswith("```"):
        body = body.split("\n", 1)[-1].rsplit("```", 1)[0]
    return body


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) else 0


__all__ = ["OpencodeAdapter", "OpencodeOptions", "classify", "permission_rules"]
