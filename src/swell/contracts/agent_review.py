"""The `agent_review` contract: an independent reviewer agent judges the step's work.

The reviewer (a persona other than the one that did the work) gets the review
criteria and the context the contract names (review_prompt.py) and must answer with
one `ReviewFeedback` JSON object. Its verdict decides the contract: `pass` passes,
`rework` and `fail` fail it with the feedback attached, which the engine hands to
the rework visit. An answer that is not valid ReviewFeedback is sent back once with
the problem named; a reviewer that cannot be reached fails the contract unless the
contract says `fail_open: true`. See docs/contracts.md, "agent_review".
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, fields
from typing import Any

from pydantic import Field

from swell.contracts.base import (
    AgentAnswer,
    AgentCall,
    ContractContext,
    ContractResult,
    ContractSettings,
    ContractType,
    ReviewFeedback,
    ReviewStats,
    RunAgent,
    timeout_problem,
)
from swell.contracts.review_prompt import (
    SCHEMA,
    SYSTEM_PROMPT,
    MalformedReview,
    build_prompt,
    parse_answer,
    retry_prompt,
    untitled,
)
from swell.errors import Problem
from swell.manifest.durations import parse_duration
from swell.manifest.lint_context import LintScope
from swell.workspace.offload import off_loop

ATTEMPTS = 2  # the first answer and one retry with the problem named
# error kinds (swell.errors.AgentError.kind) that mean the review could not be made
UNAVAILABLE_KINDS = frozenset({"binary_missing", "auth", "rate_limit", "timeout", "crash"})
# error kinds that mean the reviewer answered, but not with usable JSON
MALFORMED_KINDS = frozenset({"unparseable_output"})


class AgentReviewSettings(ContractSettings):
    reviewer: str | None = None
    persona: str | None = None  # Wave's name for `reviewer`
    model: str | None = None  # default: the reviewer adapter's cheapest tier
    criteria: list[str] | str | None = None
    criteria_path: str | None = None
    context: list[dict[str, Any]] = Field(default_factory=list)
    source: str | None = None  # a file under review, in the workspace
    timeout: str | int | float | None = None
    # 0 is "no limit", as an unset number is in Wave (Go's zero value)
    max_tokens: int | None = None
    token_budget: int | None = None
    fail_open: bool | None = None

    @property
    def reviewing_persona(self) -> str | None:
        return self.reviewer or self.persona


# --------------------------------------------------------------------------- settings


def config_problems(settings: AgentReviewSettings) -> list[str]:
    """What is wrong with an agent_review contract's settings; empty when nothing is.

    `check` refuses to run with any of them; `swell validate` reports them.
    """
    problems: list[str] = []
    if not settings.reviewing_persona:
        problems.append("agent_review needs a reviewer persona: set `reviewer` (or `persona`)")
    return problems + _value_problems(settings)


def _value_problems(settings: AgentReviewSettings) -> list[str]:
    problems: list[str] = []
    timeout = timeout_problem(settings.timeout)
    if timeout:
        problems.append(timeout)
    for number, budget in (
        ("max_tokens", settings.max_tokens),
        ("token_budget", settings.token_budget),
    ):
        if budget is not None and budget < 0:
            problems.append(f"{number} cannot be negative (0 or leaving it out: no limit)")
    for i, item in enumerate(settings.context):
        problem = _item_problem(item)
        if problem:
            problems.append(f"context[{i}]: {problem}")
    return problems


def _item_problem(item: dict[str, Any]) -> str | None:
    size = item.get("max_size", item.get("maxSize"))
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size <= 0):
        return "max_size must be a positive number of characters"
    known = {"source", "artifact", "max_size", "maxSize", "diff_base"}
    if set(item) - known:
        return f"unknown key(s) {', '.join(sorted(set(item) - known))}"
    source, artifact = item.get("source"), item.get("artifact")
    if artifact is not None:
        if source not in (None, "artifact"):
            return "give either `artifact: NAME` or `source: git_diff`, not both"
        return None if isinstance(artifact, str) and artifact else "artifact must be a name"
    if source == "git_diff":
        base = item.get("diff_base")
        return (
            None
            if base is None or (isinstance(base, str) and base)
            else "diff_base must be a git ref"
        )
    if source == "artifact":
        return "`source: artifact` needs `artifact: NAME`"
    return f"unknown context source {source!r} (use `source: git_diff` or `artifact: NAME`)"


def _reviewer_problems(settings: AgentReviewSettings, scope: LintScope) -> list[Problem]:
    reviewer = settings.reviewing_persona
    field_name = "reviewer" if settings.reviewer else "persona"
    if not reviewer:
        return [scope.problem((), "an agent_review contract needs a `reviewer` persona")]
    if reviewer not in scope.project.manifest.personas:
        return [scope.problem((field_name,), f"unknown reviewer persona '{reviewer}'")]
    if reviewer == scope.step.persona:
        return [
            scope.problem(
                (field_name,),
                f"self-review: the reviewer must not be the step's own persona '{reviewer}'",
            )
        ]
    return []


def _timeout(ctx: ContractContext[Any]) -> float:
    """The contract's `timeout`, else the run's default for an agent contract."""
    value = ctx.settings.timeout
    return ctx.default_timeout if value is None else parse_duration(value)


# --------------------------------------------------------------------------- the check


@dataclass
class _Tally:
    """What the review took so far, across attempts."""

    reviewer: str
    attempts: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    duration_ms: int = 0
    adapter: str | None = None
    model: str | None = None
    record: str | None = None
    over_budget: bool = False

    def add(self, answer: AgentAnswer) -> None:
        self.tokens_in += answer.tokens_in
        self.tokens_out += answer.tokens_out
        self.cost_usd += answer.cost_usd
        self.adapter = answer.adapter or self.adapter
        self.model = answer.model or self.model

    def stats(self) -> ReviewStats:
        taken = {f.name: getattr(self, f.name) for f in fields(ReviewStats)}
        return ReviewStats(**taken | {"cost_usd": round(self.cost_usd, 6)})

    def result(self, **given: Any) -> ContractResult:
        details = {"over_budget": True} if self.over_budget else {}
        return ContractResult(review=self.stats(), details=details, **given)


def _budget_notes(ctx: ContractContext[AgentReviewSettings], tally: _Tally) -> None:
    """Budgets are advice, never a failure: going over one is recorded as a note."""
    settings, reviewer = ctx.settings, tally.reviewer
    if settings.max_tokens and tally.tokens_out > settings.max_tokens:
        tally.over_budget = True
        ctx.notes.append(
            f"reviewer '{reviewer}' answered with {tally.tokens_out} tokens, over max_tokens "
            f"{settings.max_tokens}"
        )
    used = tally.tokens_in + tally.tokens_out
    if settings.token_budget and used > settings.token_budget:
        tally.over_budget = True
        ctx.notes.append(
            f"the review by '{reviewer}' used {used} tokens, over token_budget "
            f"{settings.token_budget}"
        )


def _one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def verdict_line(reviewer: str, feedback: ReviewFeedback) -> str:
    """`rework by reviewer 'x' (1 critical, 2 major issues): summary` — for logs and errors."""
    count = {s: sum(1 for i in feedback.issues if i.severity == s) for s in ("critical", "major")}
    minor = len(feedback.issues) - count["critical"] - count["major"]
    issues = f"{count['critical']} critical, {count['major']} major issue(s)"
    issues += f", {minor} minor" if minor else ""
    return f"{feedback.verdict} by reviewer '{reviewer}' ({issues}): {_one_line(feedback.summary)}"


def _unavailable(
    ctx: ContractContext[AgentReviewSettings], tally: _Tally, why: str
) -> ContractResult:
    message = f"reviewer '{tally.reviewer}' unavailable: {_one_line(why, 500)}"
    _budget_notes(ctx, tally)
    if ctx.settings.fail_open:
        ctx.notes.append(f"{message}; passing because fail_open")
        return tally.result(passed=True, unavailable=True)
    hint = " (set fail_open: true to pass when the reviewer cannot be reached)"
    return tally.result(passed=False, unavailable=True, error=message + hint)


def _failed(ctx: ContractContext[AgentReviewSettings], tally: _Tally, error: str) -> ContractResult:
    _budget_notes(ctx, tally)
    return tally.result(passed=False, error=error)


def _record(ctx: ContractContext[Any], record: dict[str, Any], tally: _Tally) -> None:
    """The whole exchange, for people asking why a review said what it said."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", ctx.step.id)
    path = ctx.run_dir / "reviews" / f"{name}.v{ctx.visit}.c{ctx.index}.json"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=2, default=str))
    except OSError as exc:
        ctx.notes.append(f"cannot write the review record {path}: {exc.strerror or exc}")
        return
    tally.record = str(path)


class AgentReview(ContractType[AgentReviewSettings]):
    name = "agent_review"
    Settings = AgentReviewSettings
    mechanical = False

    def reviewer(self, settings: AgentReviewSettings) -> str | None:
        return settings.reviewing_persona

    def brief(self, ctx: ContractContext[AgentReviewSettings]) -> str:
        settings = ctx.settings
        lines = [
            "When you are done, a separate reviewer"
            + (f" (persona `{settings.reviewing_persona}`)" if settings.reviewing_persona else "")
            + " reviews your work and returns a verdict (pass, warn or fail) with issues; "
            "a fail sends the work back."
        ]
        if settings.criteria_path:
            lines.append(f"Its criteria are in `{ctx.render(settings.criteria_path)}`.")
        return "\n".join(lines)

    def problems(self, settings: AgentReviewSettings, scope: LintScope) -> list[Problem]:
        found = _reviewer_problems(settings, scope)
        found += [scope.problem((), p) for p in _value_problems(settings)]
        path = settings.criteria_path
        if path and "{{" not in path and not (scope.project.root / path).is_file():
            found.append(scope.problem(("criteria_path",), f"criteria_path {path} does not exist"))
        return found

    async def check(self, ctx: ContractContext[AgentReviewSettings]) -> ContractResult:
        reviewer = ctx.settings.reviewing_persona
        problems = config_problems(ctx.settings)
        if reviewer is None or problems:
            return ContractResult(
                passed=False,
                error="agent_review: " + "; ".join(problems),
                review=ReviewStats(reviewer=reviewer or "?"),
            )
        tally = _Tally(reviewer)
        if ctx.step.persona and reviewer == ctx.step.persona:
            return _failed(
                ctx,
                tally,
                f"agent_review: reviewer '{reviewer}' is the persona that did step "
                f"'{ctx.step.id}'; an independent review needs a different persona",
            )
        try:
            built = await off_loop(lambda: build_prompt(ctx))  # files, and git diff
        except ValueError as exc:  # ReviewConfigError, or a template error in a rendered path
            return _failed(ctx, tally, f"agent_review: {exc}")
        ctx.notes.extend(built.notes)
        if ctx.run_agent is None:
            return _unavailable(ctx, tally, "this run gives contracts no way to run an agent")

        record: dict[str, Any] = {"reviewer": reviewer, "attempts": []}
        result = await _converse(ctx, ctx.run_agent, built.text, tally, record)
        _record(ctx, record, tally)
        result.review = tally.stats()
        return result


async def _converse(
    ctx: ContractContext[AgentReviewSettings],
    run_agent: RunAgent,
    base: str,
    tally: _Tally,
    record: dict[str, Any],
) -> ContractResult:
    """Ask the reviewer; once more with the problem named if the answer is malformed."""
    system = SYSTEM_PROMPT.format(schema=json.dumps(untitled(SCHEMA)))
    record["system_prompt"] = system
    reviewer, prompt, problem = tally.reviewer, base, ""
    started = time.monotonic()
    for _ in range(ATTEMPTS):
        tally.attempts += 1
        call = AgentCall(
            reviewer, system, prompt, SCHEMA, _timeout(ctx), ctx.settings.model or None
        )
        try:
            answer = await run_agent(call)
        except Exception as exc:  # the engine could not start the reviewer at all
            tally.duration_ms = int((time.monotonic() - started) * 1000)
            record["attempts"].append({"prompt": prompt, "error": str(exc)})
            return _unavailable(ctx, tally, str(exc) or type(exc).__name__)
        tally.add(answer)
        tally.duration_ms = int((time.monotonic() - started) * 1000)
        record["attempts"].append(
            {"prompt": prompt, "text": answer.text, "structured": answer.structured,
             "error": answer.error, "error_kind": answer.error_kind}
        )  # fmt: skip
        if not answer.success and answer.error_kind not in MALFORMED_KINDS:
            why = answer.error or f"the reviewer failed ({answer.error_kind or 'no reason given'})"
            if answer.error_kind in UNAVAILABLE_KINDS:
                return _unavailable(ctx, tally, why)
            return _failed(ctx, tally, f"reviewer '{reviewer}' could not review: {why}")
        try:
            if not answer.success:
                raise MalformedReview(answer.error or "the answer is not valid JSON")
            feedback, warned = parse_answer(answer)
        except MalformedReview as exc:
            problem = str(exc)
            prompt = retry_prompt(base, problem, answer.text)
            continue
        record["feedback"] = feedback.model_dump()
        _budget_notes(ctx, tally)
        passed = feedback.verdict == "pass"
        result = tally.result(
            passed=passed,
            error=None if passed else verdict_line(reviewer, feedback),
            feedback=feedback,
        )
        if warned:  # Wave's `warn`: the work goes on, the warning is recorded
            warning = f"reviewer '{reviewer}' passed the work with a warning: {feedback.summary}"
            ctx.notes.append(warning)
            result.details["warn"] = warning
        return result
    return _failed(
        ctx,
        tally,
        f"reviewer '{reviewer}' gave no valid ReviewFeedback in {ATTEMPTS} attempts: {problem}",
    )


TYPE = AgentReview()

__all__ = ["SCHEMA", "TYPE", "AgentReviewSettings", "config_problems", "verdict_line"]
