"""The narrow adapter protocol and the shapes that cross it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from swell.errors import AgentError, AgentErrorKind


@dataclass(frozen=True)
class Capabilities:
    resume: bool = False
    tools: bool = False
    enforces_permissions: bool = False
    json_schema: bool = False
    # takes the step's own rendered prompt and nothing else (no thread context, no
    # artifact sections, no retry or rework header): the prompt is data, not prose
    raw_prompt: bool = False
    # its answer is the content of the step's declared output files (Wave's missing-file
    # fallback), so a step may declare file outputs though the adapter has no tools
    answer_fills_outputs: bool = False
    # where in its workspace the agent finds skills (`<dir>/<name>/SKILL.md`); "" when
    # it has no skills (engine/agent/skills.py warns then)
    skills_dir: str = ""
    # it can spawn sub-agents (`max_concurrent_agents` becomes a hint in its prompt)
    subagents: bool = False


class Usage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None


USAGE_COUNTS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def total_usage(turns: Iterable[Usage]) -> Usage:
    """The sum of a visit's per-turn usages; a total cost of 0 is unknown (None): the
    CLIs report 0, or nothing, when they know no price."""
    parts = list(turns)
    total = Usage(**{key: sum(getattr(part, key) for part in parts) for key in USAGE_COUNTS})
    total.cost_usd = sum(part.cost_usd or 0.0 for part in parts) or None
    return total


class AgentRequest(BaseModel):
    """Everything an adapter needs for one agent turn."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    prompt: str
    system_prompt: str = ""
    workspace: Path
    model: str | None = None
    allowed_tools: list[str] = Field(default_factory=list)
    denied_tools: list[str] = Field(default_factory=list)
    resume_session: str | None = None
    timeout_s: float | None = None
    env: dict[str, str] = Field(default_factory=dict)
    json_schema: dict[str, Any] | None = None
    temperature: float | None = None
    # who is asking; adapters may use these only for naming and logging
    run_id: str = ""
    step_id: str = ""
    visit: int = 1


class AgentArtifact(BaseModel):
    """A file the agent wrote that its visit records as an artifact (a screenshot)."""

    name: str
    path: str  # relative to the request's workspace
    type: str | None = None


class AgentResult(BaseModel):
    success: bool
    text: str = ""
    structured: Any = None  # the parsed answer when the request had a json_schema
    error: str | None = None
    error_kind: AgentErrorKind | None = None
    usage: Usage = Field(default_factory=Usage)
    session_id: str | None = None
    files_changed: list[str] = Field(default_factory=list)
    artifacts: list[AgentArtifact] = Field(default_factory=list)

    @classmethod
    def failed(cls, error: AgentError, **fields: Any) -> AgentResult:
        """A failed result classified by one of swell.errors' AgentError classes."""
        return cls(success=False, error=str(error), error_kind=error.kind, **fields)


@dataclass(frozen=True)
class AgentText:
    text: str


@dataclass(frozen=True)
class AgentToolCall:
    name: str
    target: str | None = None
    call_id: str | None = None  # its AgentToolResult's, where the CLI reports results


@dataclass(frozen=True)
class AgentToolResult:
    """What a tool call returned (adapters/tool_results.py builds it): its output, cut
    when long, masked of secrets, and how long the call took."""

    call_id: str
    name: str
    output: str = ""
    is_error: bool = False
    duration_ms: int | None = None
    truncated: int = 0  # characters of the output left out


@dataclass(frozen=True)
class AgentUsageUpdate:
    usage: Usage


@dataclass(frozen=True)
class AgentTurnEnded:
    """The model's turn is over and every tool call it asked for has returned its result:
    what comes next is a new model call. The one point where stopping an agent loses no
    work, so relay hands over here (docs/relay.md). Adapters emit it only when their CLI
    shows tool results; an agent that finishes instead ends with AgentFinished."""


@dataclass(frozen=True)
class AgentSessionStarted:
    session_id: str


@dataclass(frozen=True)
class AgentFinished:
    result: AgentResult


AgentEvent = (
    AgentText
    | AgentToolCall
    | AgentToolResult
    | AgentUsageUpdate
    | AgentTurnEnded
    | AgentSessionStarted
    | AgentFinished
)


class AgentAdapter(Protocol):
    """One agent implementation. `run` yields events and ends with AgentFinished.

    `env_passthrough` names the variables (or prefixes ending in `*`) of swell's own
    environment the agent needs (API keys, base URLs); everything else is withheld.
    """

    name: str
    capabilities: Capabilities
    env_passthrough: tuple[str, ...]

    def run(self, request: AgentRequest) -> AsyncIterator[AgentEvent]: ...


@dataclass
class AdapterSetup:
    """What the registry hands a factory: the adapter's name and manifest settings."""

    name: str
    binary: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    project_root: Path = Path(".")
