"""The `scripted` adapter: replays a script of replies. The engine's test double.

Settings (`adapters.NAME.options`): `script` (YAML file, relative to the project
root) and optionally `calls` (a JSONL file where every request is recorded).
The n-th visit of a step gets the n-th reply written for that step (or, when the
script names no step, the n-th reply overall), so a resumed run replays the same way.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from swell.adapters.base import (
    AdapterSetup,
    AgentEvent,
    AgentFinished,
    AgentRequest,
    AgentResult,
    AgentSessionStarted,
    AgentText,
    AgentToolCall,
    AgentTurnEnded,
    AgentUsageUpdate,
    Capabilities,
    Usage,
)
from swell.errors import AgentErrorKind
from swell.workspace.paths import PathEscape, inside


class ScriptedOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    script: str
    calls: str | None = None


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    target: str | None = None


class Turn(BaseModel):
    """One model turn before the final answer: what it said, the tool it called and its
    context usage, streamed in that order (as a model's reply arrives); then the tool
    runs (`files` are written, `delay` passes) and the turn ends (AgentTurnEnded)."""

    model_config = ConfigDict(extra="forbid")

    text: str = ""
    tool_call: ToolCall | None = None
    usage: Usage = Field(default_factory=Usage)
    files: dict[str, str] = Field(default_factory=dict)  # what the tool call writes
    delay: float = 0.0  # how long the tool call runs


class Reply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    step: str | None = None
    turns: list[Turn] = Field(default_factory=list)  # streamed first, one usage update each
    text: str = ""
    files: dict[str, str] = Field(default_factory=dict)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    session_id: str | None = None
    fail: str | None = None
    error_kind: AgentErrorKind | None = None
    delay: float = 0.0


class Script(BaseModel):
    model_config = ConfigDict(extra="forbid")

    replies: list[Reply]


class ScriptedAdapter:
    Options = ScriptedOptions
    name = "scripted"
    env_passthrough: tuple[str, ...] = ()
    capabilities = Capabilities(
        resume=True, tools=True, enforces_permissions=False, json_schema=False
    )

    def __init__(self, setup: AdapterSetup) -> None:
        self.options = ScriptedOptions.model_validate(setup.options)
        self.root = setup.project_root
        self._calls: dict[tuple[str, str, int], int] = {}

    def _script(self) -> Script:
        path = self.root / self.options.script
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
            return Script.model_validate(data)
        except (OSError, yaml.YAMLError, ValidationError) as exc:
            raise ValueError(f"scripted adapter: cannot use script {path}: {exc}") from None

    def _record(self, request: AgentRequest) -> None:
        if not self.options.calls:
            return
        path = self.root / self.options.calls
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(request.model_dump(mode="json")) + "\n")

    def _pick(self, request: AgentRequest) -> Reply | str:
        replies = self._script().replies
        mine = [r for r in replies if r.step == request.step_id] or [
            r for r in replies if r.step is None
        ]
        # a visit that calls again (a relay's fresh instance) gets the next reply
        key = (request.run_id, request.step_id, request.visit)
        index = request.visit - 1 + self._calls.get(key, 0)
        self._calls[key] = self._calls.get(key, 0) + 1
        if index >= len(mine):
            return (
                f"scripted adapter: no reply #{index + 1} for step '{request.step_id}' "
                f"(visit {request.visit}; script has {len(mine)})"
            )
        return mine[index]

    async def run(self, request: AgentRequest) -> AsyncIterator[AgentEvent]:
        self._record(request)
        try:
            reply = self._pick(request)
        except ValueError as exc:
            yield AgentFinished(AgentResult(success=False, error=str(exc), error_kind="crash"))
            return
        if isinstance(reply, str):
            yield AgentFinished(AgentResult(success=False, error=reply, error_kind="crash"))
            return
        session = (
            reply.session_id
            or request.resume_session
            or f"scripted-{request.run_id}-{request.step_id}-{self._calls[(request.run_id, request.step_id, request.visit)]}"
        )
        yield AgentSessionStarted(session)
        changed: list[str] = []
        for turn in reply.turns:
            if turn.text:
                yield AgentText(turn.text)
            if turn.tool_call:
                yield AgentToolCall(turn.tool_call.name, turn.tool_call.target)
            yield AgentUsageUpdate(turn.usage)
            if turn.delay:
                await asyncio.sleep(turn.delay)
            if (problem := _write(request, turn.files, changed)) is not None:
                yield problem
                return
            yield AgentTurnEnded()
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if (problem := _write(request, reply.files, changed)) is not None:
            yield problem
            return
        for call in reply.tool_calls:
            yield AgentToolCall(call.name, call.target)
        if reply.text:
            yield AgentText(reply.text)
        yield AgentUsageUpdate(reply.usage)
        result = AgentResult(
            success=reply.fail is None,
            text=reply.text,
            error=reply.fail,
            error_kind=(reply.error_kind or "crash") if reply.fail else None,
            usage=reply.usage,
            session_id=session,
            files_changed=changed,
        )
        yield AgentFinished(result)


def _write(
    request: AgentRequest, files: dict[str, str], changed: list[str]
) -> AgentFinished | None:
    """Write `files` into the workspace (adding them to `changed`); a path that leaves
    the workspace ends the visit."""
    for rel, content in files.items():
        try:
            target = inside(request.workspace, rel)
        except PathEscape as exc:
            return AgentFinished(AgentResult(success=False, error=str(exc), error_kind="crash"))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        if rel not in changed:
            changed.append(rel)
    return None


__all__ = ["ScriptedAdapter"]
