"""The shapes every contract shares: results, review feedback, and what a check gets."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from swell.manifest.models import Contract, Step
from swell.manifest.templates import render_text


class ReviewIssue(BaseModel):
    model_config = ConfigDict(extra="forbid")

    severity: Literal["critical", "major", "minor"]
    file: str | None = None
    line: int | None = None
    detail: str


class ReviewFeedback(BaseModel):
    """What an agent reviewer returns; its JSON schema is what reviewers are held to."""

    model_config = ConfigDict(extra="forbid")

    verdict: Literal["pass", "rework", "fail"]
    issues: list[ReviewIssue] = Field(default_factory=list)
    suggestions: list[str] = Field(default_factory=list)
    confidence: float = Field(ge=0.0, le=1.0)
    summary: str


class ContractResult(BaseModel):
    """The outcome of one contract; mechanical contracts leave `feedback` empty."""

    passed: bool
    error: str | None = None
    feedback: ReviewFeedback | None = None
    # the check could not be made at all (reviewer unreachable): `fail_open` decides
    unavailable: bool = False
    details: dict[str, Any] = Field(default_factory=dict)  # tokens, cost, reviewer, ...


@dataclass
class AgentAnswer:
    """What `run_agent` returns to a contract."""

    success: bool
    text: str = ""
    structured: Any = None
    error: str | None = None
    error_kind: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    adapter: str | None = None
    model: str | None = None


# persona, system prompt, prompt, JSON schema, timeout seconds, model override
RunAgent = Callable[
    [str, str, str, dict[str, Any] | None, float, str | None], Awaitable[AgentAnswer]
]


@dataclass
class ContractContext:
    """Everything a contract may use; the engine builds it, contracts import no engine code."""

    contract: Contract
    index: int  # position in the step's contract list
    step: Step
    workspace: Path
    project_root: Path
    run_dir: Path  # swell's own files for this visit's run (logs, review files)
    visit: int
    namespace: Mapping[str, Any]  # template variables (input, context, artifacts, ...)
    command_env: dict[str, str]  # environment for test commands
    artifacts: dict[str, str]  # artifact name -> path (this visit's and upstream steps')
    stdout: str | None  # the visit's stdout (a command's output, an agent's answer)
    diff: Callable[[], str]  # the step workspace's changes against its base
    default_timeout: float
    run_agent: RunAgent | None = None
    notes: list[str] = field(default_factory=list)  # warnings to record as events

    def render(self, text: str) -> str:
        """`text` with its placeholders filled, for paths and prompts (not shell)."""
        return render_text(text, self.namespace).text


ContractCheck = Callable[[ContractContext], Awaitable[ContractResult]]
