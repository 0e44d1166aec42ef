"""`type: llm_judge`: a model judges the step's output against criteria, one by one.

The judge gets the `criteria` (a list; Wave's docs also show a single `prompt`, which
counts as one more criterion) and the content of `source` (else the step's first
output artifact, else `.agents/artifact.json`), cut to `max_size` characters (default
50,000, as Wave's cap), and answers with one verdict per criterion:
`{criteria_results: [{criterion, pass, reasoning}], summary}`. The score is the share
of criteria passed; the contract passes when it is at least `threshold` (default 1.0:
every criterion; 0 means the default, as in Wave). A failure lists every criterion
with the judge's reasoning, which is what a rework visit is shown.

Who judges: the persona named by `persona`, else the step's own persona, through its
adapter (a helper run of the visit, like agent_review's reviewer, with the contract's
`model` or else the adapter's cheapest tier); a step with no persona (a command step)
is judged by the embedded local model. Wave calls Anthropic's API (or the `claude`
CLI) directly, whatever the step's adapter; swell keeps the judge on the project's
own adapters. An answer that does not give exactly one boolean verdict per criterion
is sent back once with the problem named; a judge that cannot be reached fails the
contract (its `on_failure` decides what follows). The whole exchange is kept in the
run directory (`reviews/`), like a review's.
"""

from __future__ import annotations

import json
import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from swell.contracts.agent_review import (
    MALFORMED_KINDS,
    UNAVAILABLE_KINDS,
    _one_line,
    _record,
    _Tally,
    _timeout,
)
from swell.contracts.base import (
    AgentCall,
    ContractContext,
    ContractResult,
    ContractSettings,
    ContractType,
    RunAgent,
    timeout_problem,
)
from swell.contracts.non_empty_file import default_source, shown, workspace_path
from swell.contracts.review_prompt import (
    MalformedReview,
    _fenced,
    _read,
    extract_json,
    retry_prompt,
)
from swell.errors import Problem
from swell.manifest.lint_context import LintScope
from swell.workspace.offload import off_loop
from swell.workspace.paths import PathEscape

CONTENT_CAP = 50_000  # characters of the content the judge is sent (Wave: 50,000 bytes)
FALLBACK_SOURCE = ".agents/artifact.json"  # Wave's, for a step with no output artifact
ATTEMPTS = 2  # the first answer and one retry with the problem named
EMBEDDED = "the embedded model"

SYSTEM_PROMPT = """\
You judge the output of a step of a software pipeline against a numbered list of \
criteria. Judge each criterion on its own, only by the content you are given: \
"pass": true when the content meets it, false when it does not or you cannot tell. \
Give a short, specific reason for each verdict.

Answer with exactly one JSON object, with no text around it: \
{{"criteria_results": [{{"criterion": "<the criterion>", "pass": true or false, \
"reasoning": "<why>"}}, ...], "summary": "<one sentence>"}} \
with one entry per criterion, in the order given. It must match this JSON schema:
{schema}"""


class LlmJudgeSettings(ContractSettings):
    criteria: list[str] | str | None = None
    prompt: str | None = None  # Wave's docs' single criterion
    threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    model: str | None = None  # default: the judge adapter's cheapest tier
    source: str | None = None
    persona: str | None = None  # default: the step's persona, else the embedded model
    timeout: str | int | float | None = None
    max_size: int | None = Field(default=None, gt=0)

    def all_criteria(self) -> list[str]:
        listed = [self.criteria] if isinstance(self.criteria, str) else self.criteria or []
        return [c for c in [*listed, self.prompt or ""] if c.strip()]


class Verdict(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    criterion: str = ""
    passed: bool = Field(alias="pass")
    reasoning: str = ""


class JudgeAnswer(BaseModel):
    """The judge's answer (Wave's `overall_pass` and `score` are recomputed, not read)."""

    model_config = ConfigDict(extra="ignore")

    criteria_results: list[Verdict]
    summary: str = ""


def answer_schema(count: int) -> dict[str, Any]:
    """The answer's JSON schema, with exactly `count` verdicts (constrained decoders
    such as the embedded model's then cannot give more or fewer)."""
    verdict = {
        "type": "object",
        "properties": {
            "criterion": {"type": "string"},
            "pass": {"type": "boolean"},
            "reasoning": {"type": "string"},
        },
        "required": ["criterion", "pass", "reasoning"],
    }
    return {
        "type": "object",
        "properties": {
            "criteria_results": {
                "type": "array",
                "items": verdict,
                "minItems": count,
                "maxItems": count,
            },
            "summary": {"type": "string"},
        },
        "required": ["criteria_results", "summary"],
    }


def _judge(ctx: ContractContext[LlmJudgeSettings]) -> str | None:
    return ctx.settings.persona or ctx.step.persona or None


def _content(ctx: ContractContext[LlmJudgeSettings]) -> tuple[str, str]:
    """What is judged, capped, as a prompt section; ValueError saying why it cannot be."""
    raw = ctx.settings.source or default_source(ctx.step) or FALLBACK_SOURCE
    try:
        path = workspace_path(ctx, raw)
    except PathEscape as exc:
        raise ValueError(str(exc)) from None
    name = shown(path, ctx)
    body, note = _read(path, ctx.settings.max_size or CONTENT_CAP)
    if body is None:
        raise ValueError(f"{name} {note}")
    if not body.strip():
        raise ValueError(f"{name} is empty; there is nothing to judge")
    parts = [f"## Content to evaluate: {name}", *([note] if note else []), _fenced(body)]
    return "\n\n".join(parts), name


def build_prompt(ctx: ContractContext[LlmJudgeSettings], criteria: list[str]) -> tuple[str, str]:
    """The judge's prompt and the name of the file judged."""
    section, name = _content(ctx)
    numbered = "\n".join(f"{i}. {c}" for i, c in enumerate(criteria, 1))
    text = (
        f"Evaluate the output of step `{ctx.step.id}` against these criteria:\n\n{numbered}"
        f"\n\n{section}\n\nAnswer with the JSON object described in your instructions: "
        f"{len(criteria)} entries in criteria_results, one per criterion, in this order."
    )
    return text, name


def parse(answer_structured: Any, text: str, count: int) -> JudgeAnswer:
    """The judge's answer; MalformedReview saying what is wrong with it."""
    data = answer_structured if answer_structured is not None else text
    if isinstance(data, str):
        data = extract_json(data)
    try:
        parsed = JudgeAnswer.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the object"
        raise MalformedReview(f"{where}: {first['msg']}") from None
    if len(parsed.criteria_results) != count:
        raise MalformedReview(
            f"criteria_results has {len(parsed.criteria_results)} entries; there are "
            f"{count} criteria, one entry each"
        )
    return parsed


def verdict(
    ctx: ContractContext[LlmJudgeSettings], criteria: list[str], answer: JudgeAnswer, judge: str
) -> ContractResult:
    """Score the verdicts (by position: one per criterion) against the threshold."""
    threshold = ctx.settings.threshold or 1.0
    results = [
        {"criterion": c, "pass": v.passed, "reasoning": v.reasoning}
        for c, v in zip(criteria, answer.criteria_results, strict=True)
    ]
    passed = sum(1 for r in results if r["pass"])
    score = passed / len(results)
    details = {
        "score": round(score, 4),
        "threshold": threshold,
        "judge": judge,
        "criteria_results": results,
        "summary": answer.summary,
    }
    if score + 1e-9 >= threshold:
        return ContractResult(passed=True, details=details)
    lines = [
        f"llm_judge: score {score:.0%} ({passed} of {len(results)} criteria) is below the "
        f"threshold {threshold:.0%} (judged by {judge})"
    ]
    lines += [
        f"- [{'PASS' if v.passed else 'FAIL'}] {c}: {_one_line(v.reasoning)}"
        for c, v in zip(criteria, answer.criteria_results, strict=True)
    ]
    if answer.summary:
        lines.append(f"Summary: {_one_line(answer.summary)}")
    return ContractResult(passed=False, error="\n".join(lines), details=details)


class LlmJudge(ContractType[LlmJudgeSettings]):
    name = "llm_judge"
    Settings = LlmJudgeSettings
    mechanical = False

    def reviewer(self, settings: LlmJudgeSettings) -> str | None:
        return settings.persona

    def brief(self, ctx: ContractContext[LlmJudgeSettings]) -> str:
        criteria = ctx.settings.all_criteria()
        if not criteria:
            return ""
        share = ctx.settings.threshold or 1.0
        listed = "\n".join(f"- {c}" for c in criteria)
        return (
            "When you are done, a judge checks your work against these criteria; at "
            f"least {share:.0%} of them must hold:\n{listed}"
        )

    def problems(self, settings: LlmJudgeSettings, scope: LintScope) -> list[Problem]:
        found = []
        if not settings.all_criteria():
            found.append(scope.problem((), "an llm_judge contract needs at least one criterion"))
        if settings.persona and settings.persona not in scope.project.manifest.personas:
            found.append(scope.problem(("persona",), f"unknown persona '{settings.persona}'"))
        timeout = timeout_problem(settings.timeout)
        if timeout:
            found.append(scope.problem(("timeout",), timeout))
        return found

    async def check(self, ctx: ContractContext[LlmJudgeSettings]) -> ContractResult:
        judge = _judge(ctx)
        tally = _Tally(judge or EMBEDDED)
        try:  # a template error in a criterion or the source is a ValueError
            criteria = [ctx.render(c).strip() for c in ctx.settings.all_criteria()]
            if not criteria:
                return ContractResult(passed=False, error="llm_judge: no criteria to judge by")
            prompt, name = await off_loop(lambda: build_prompt(ctx, criteria))
        except ValueError as exc:
            return ContractResult(passed=False, error=f"llm_judge: {exc}")
        if ctx.run_agent is None:
            return ContractResult(
                passed=False, unavailable=True, error="llm_judge: this run cannot run a judge"
            )
        record: dict[str, Any] = {"judge": tally.reviewer, "document": name, "attempts": []}
        result = await _converse(ctx, ctx.run_agent, criteria, prompt, tally, record)
        _record(ctx, record, tally)
        result.review = tally.stats()
        return result


async def _converse(
    ctx: ContractContext[LlmJudgeSettings],
    run_agent: RunAgent,
    criteria: list[str],
    base: str,
    tally: _Tally,
    record: dict[str, Any],
) -> ContractResult:
    """Ask the judge; once more with the problem named if the answer is malformed."""
    schema = answer_schema(len(criteria))
    system = SYSTEM_PROMPT.format(schema=json.dumps(schema))
    judge, prompt, problem = tally.reviewer, base, ""
    started = time.monotonic()
    for _ in range(ATTEMPTS):
        tally.attempts += 1
        call = AgentCall(_judge(ctx), system, prompt, schema, _timeout(ctx), ctx.settings.model)
        try:
            answer = await run_agent(call)
        except Exception as exc:  # the engine could not start the judge at all
            record["attempts"].append({"prompt": prompt, "error": str(exc)})
            why = str(exc) or type(exc).__name__
            return tally.result(passed=False, unavailable=True, error=f"llm_judge: {why}")
        tally.add(answer)
        tally.duration_ms = int((time.monotonic() - started) * 1000)
        record["attempts"].append(
            {"prompt": prompt, "text": answer.text, "structured": answer.structured,
             "error": answer.error, "error_kind": answer.error_kind}
        )  # fmt: skip
        if not answer.success and answer.error_kind not in MALFORMED_KINDS:
            why = answer.error or f"the judge failed ({answer.error_kind or 'no reason given'})"
            return tally.result(
                passed=False,
                unavailable=answer.error_kind in UNAVAILABLE_KINDS,
                error=f"llm_judge: {judge} could not judge: {_one_line(why, 500)}",
            )
        try:
            if not answer.success:
                raise MalformedReview(answer.error or "the answer is not valid JSON")
            parsed = parse(answer.structured, answer.text, len(criteria))
        except MalformedReview as exc:
            problem = str(exc)
            prompt = retry_prompt(base, problem, answer.text, "")
            continue
        record["verdicts"] = parsed.model_dump(by_alias=True)
        return verdict(ctx, criteria, parsed, judge)
    return tally.result(
        passed=False,
        error=f"llm_judge: {judge} gave no valid answer in {ATTEMPTS} attempts: {problem}",
    )


TYPE = LlmJudge()

__all__ = ["TYPE", "JudgeAnswer", "LlmJudgeSettings", "answer_schema"]
