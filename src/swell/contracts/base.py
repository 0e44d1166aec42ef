"""The shapes every contract shares: a contract type, what its check gets, what it returns."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from swell.errors import AgentErrorKind, Problem
from swell.events.models import BaseEvent, ReviewFeedback, ReviewIssue
from swell.manifest.durations import parse_duration
from swell.manifest.lint_context import LintScope
from swell.manifest.models import Step
from swell.templates.render import render_text


class ContractSettings(BaseModel):
    """Base of each type's settings: the fields of `handover.contract(s)` entries other
    than the envelope every type shares (`type`, `on_failure`, `rework_step`, ...)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    # as in the manifest's models (manifest/models_base.py): settings that change
    # nothing, in Wave either; and setting -> what it is, for the ones swell does not
    # run yet (`swell validate` warns by name)
    IGNORED: ClassVar[tuple[str, ...]] = ()
    NOT_RUN: ClassVar[dict[str, str]] = {}


S = TypeVar("S", bound=ContractSettings)


@dataclass(frozen=True)
class ReviewStats:
    """Who reviewed, on what, and what the review cost (agent contracts only)."""

    reviewer: str
    adapter: str | None = None
    model: str | None = None
    attempts: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    duration_ms: int = 0
    record: str | None = None  # the file holding the whole exchange


class ContractResult(BaseModel):
    """The outcome of one contract; mechanical contracts leave `feedback` empty."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    passed: bool
    error: str | None = None
    feedback: ReviewFeedback | None = None
    # the check could not be made at all (reviewer unreachable): `fail_open` decides
    unavailable: bool = False
    review: ReviewStats | None = None
    details: dict[str, Any] = Field(default_factory=dict)  # what the type found, for people


@dataclass(frozen=True)
class AgentCall:
    """A contract asking a persona for an answer (a reviewer's verdict)."""

    persona: str | None  # None: the embedded local model, with no persona (llm_judge)
    system: str
    prompt: str
    json_schema: dict[str, Any] | None
    timeout_s: float
    model: str | None = None  # None: the adapter's cheapest tier, else its default


@dataclass
class AgentAnswer:
    """What an agent called for a contract (or for the engine) answered."""

    success: bool
    text: str = ""
    structured: Any = None
    error: str | None = None
    error_kind: AgentErrorKind | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    adapter: str | None = None
    model: str | None = None


RunAgent = Callable[[AgentCall], Awaitable[AgentAnswer]]


@dataclass
class ContractContext(Generic[S]):
    """Everything a contract may use; the engine builds it, contracts import no engine code."""

    settings: S
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
    details: dict[str, Any] = field(default_factory=dict)  # found on the way, for the result
    diff_from: Callable[[str], str] | None = None  # changes against a git ref (`diff_base`)
    # git on the step's workspace (args -> stdout; raises SwellError), for commit-level checks
    git: Callable[..., str] | None = None
    # what this visit has emitted so far, oldest first (event_contains)
    events: Callable[[], Sequence[BaseEvent]] | None = None
    must_pass: bool | None = None  # the contract's `must_pass`, as written
    # what relative source paths start from: a command step's script directory (inside
    # the workspace), as its declared outputs do; None: the workspace
    outputs_dir: Path | None = None

    def render(self, text: str) -> str:
        """`text` with its placeholders filled, for paths and prompts (not shell)."""
        return render_text(text, self.namespace).text


class ContractType(Generic[S]):
    """A contract type: its settings model, its check, its lint rules, its traits.

    A new type is a module with a subclass and one registry line (contracts/registry.py,
    or the `swell.contract_types` entry-point group for a plugin).
    """

    name: ClassVar[str]
    Settings: type[S]
    # cheap and deterministic (tests, schemas, files); lint warns when one is placed
    # after an agent check, since a failing test should never cost a review
    mechanical: ClassVar[bool] = True
    # settings that are shell scripts: `swell validate` refuses values where they
    # could become code (docs/security.md)
    script_fields: ClassVar[tuple[str, ...]] = ()

    async def check(self, ctx: ContractContext[S]) -> ContractResult:
        raise NotImplementedError

    def problems(self, settings: S, scope: LintScope) -> list[Problem]:
        """What `swell validate` reports about these settings (beyond their model)."""
        return []

    def reviewer(self, settings: S) -> str | None:
        """The persona that judges the work, for contracts an agent performs."""
        return None

    def brief(self, ctx: ContractContext[S]) -> str:
        """What the agent doing the step is told of this contract before it works (a
        Markdown block for its prompt, as Wave's "Output Requirements"); "" for nothing."""
        return ""


def timeout_problem(timeout: str | float | None) -> str | None:
    """What is wrong with a contract's `timeout` setting, if anything."""
    if timeout is None:
        return None
    try:
        if parse_duration(timeout) <= 0:
            return "timeout must be more than zero"
    except ValueError as exc:
        return f"timeout: {exc}"
    return None


__all__ = [
    "AgentAnswer",
    "AgentCall",
    "ContractContext",
    "ContractResult",
    "ContractSettings",
    "ContractType",
    "ReviewFeedback",
    "ReviewIssue",
    "ReviewStats",
    "RunAgent",
    "timeout_problem",
]
