"""The `agent_review` contract: an independent reviewer agent judges the step's work.

The reviewer (a persona other than the one that did the work) gets the review
criteria and the context the contract names — the workspace's git diff, artifacts
of this step or upstream steps, the file under review — and must answer with one
`ReviewFeedback` JSON object. Its verdict decides the contract: `pass` passes,
`rework` and `fail` fail it with the feedback attached, which the engine hands to
the rework visit. An answer that is not valid ReviewFeedback is sent back once with
the problem named; a reviewer that cannot be reached fails the contract unless the
contract says `fail_open: true`. See docs/contracts.md, "agent_review".
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from swell.contracts.base import (
    AgentAnswer,
    ContractContext,
    ContractResult,
    ReviewFeedback,
    RunAgent,
)
from swell.manifest.durations import parse_duration
from swell.manifest.models import Contract
from swell.workspace.paths import PathEscape, inside

# how much of one context item the prompt carries (characters); `max_size` overrides
CONTEXT_CAP = 60_000
# how much of a malformed answer is quoted back to the reviewer on the retry
ECHO_CAP = 2_000
ATTEMPTS = 2  # the first answer and one retry with the problem named
# error kinds (swell.errors.AgentError.kind) that mean the review could not be made
UNAVAILABLE_KINDS = frozenset({"binary_missing", "auth", "rate_limit", "timeout", "crash"})
# error kinds that mean the reviewer answered, but not with usable JSON
MALFORMED_KINDS = frozenset({"unparseable_output"})
DEFAULT_CRITERIA = (
    "Judge whether the work does what the step was asked to do, is correct, and is "
    "safe to hand over to the next step."
)
SCHEMA: dict[str, Any] = ReviewFeedback.model_json_schema()

SYSTEM_PROMPT = """\
You are an independent reviewer at a step boundary of a software pipeline. Another \
agent did the work; you judge it against the review criteria you are given, using \
the context you are given (and, if you have tools, by reading the workspace). Do not \
change any file.

Your answer is exactly one JSON object — no prose around it, no code fence; when \
you have a tool for structured output, give the object to that tool. It must match \
this JSON schema:
{schema}

Fields:
- verdict: "pass" when the work meets the criteria and can go on; "rework" when it \
has problems its author can fix (your issues go back to the author); "fail" when it \
is fundamentally wrong or cannot be fixed by another attempt.
- issues: every problem found, each with severity "critical" (wrong or unsafe: must \
be fixed), "major" (should be fixed before going on) or "minor" (worth fixing), the \
file and line when you know them (else null), and a detail saying what is wrong and \
what right looks like. An empty list when there are none.
- suggestions: optional improvements that are not problems.
- confidence: how sure you are of the verdict, from 0.0 to 1.0.
- summary: one or two sentences for the person reading the run's log."""


def _untitled(schema: Any, names: bool = False) -> Any:
    """`schema` without pydantic's `title` keywords: the same rules in fewer tokens."""
    if isinstance(schema, list):
        return [_untitled(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {
        key: _untitled(value, names=key in ("properties", "$defs"))
        for key, value in schema.items()
        if names or key != "title"
    }


class ReviewConfigError(ValueError):
    """The contract's own settings are wrong (not the work under review)."""


# --------------------------------------------------------------------------- settings


def reviewer_of(contract: Contract) -> str | None:
    """The reviewing persona: `reviewer`, or Wave's spelling `persona`."""
    return contract.reviewer or contract.persona


def config_problems(contract: Contract) -> list[str]:
    """What is wrong with an agent_review contract's settings; empty when nothing is.

    `swell validate` can call this; `check` refuses to run with any of them.
    """
    problems: list[str] = []
    if not reviewer_of(contract):
        problems.append("agent_review needs a reviewer persona: set `reviewer` (or `persona`)")
    if contract.timeout is not None:
        try:
            if parse_duration(contract.timeout) <= 0:
                problems.append("timeout must be more than zero")
        except ValueError as exc:
            problems.append(f"timeout: {exc}")
    for number, budget in (
        ("max_tokens", contract.max_tokens),
        ("token_budget", contract.token_budget),
    ):
        if budget is not None and budget <= 0:
            problems.append(f"{number} must be more than zero")
    for i, item in enumerate(contract.context):
        problem = _item_problem(item)
        if problem:
            problems.append(f"context[{i}]: {problem}")
    return problems


def _item_problem(item: dict[str, Any]) -> str | None:
    size = item.get("max_size", item.get("maxSize"))
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size <= 0):
        return "max_size must be a positive number of characters"
    known = {"source", "artifact", "max_size", "maxSize"}
    if set(item) - known:
        return f"unknown key(s) {', '.join(sorted(set(item) - known))}"
    source, artifact = item.get("source"), item.get("artifact")
    if artifact is not None:
        if source not in (None, "artifact"):
            return "give either `artifact: NAME` or `source: git_diff`, not both"
        return None if isinstance(artifact, str) and artifact else "artifact must be a name"
    if source == "git_diff":
        return None
    if source == "artifact":
        return "`source: artifact` needs `artifact: NAME`"
    return f"unknown context source {source!r} (use `source: git_diff` or `artifact: NAME`)"


def _timeout(ctx: ContractContext) -> float:
    value = ctx.contract.timeout
    return ctx.default_timeout if value is None else parse_duration(value)


# --------------------------------------------------------------------------- the prompt


def _fenced(text: str, lang: str = "") -> str:
    """`text` in a code fence longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`{3,}", text)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}{lang}\n{text.rstrip(chr(10))}\n{fence}"


def _capped(text: str, cap: int) -> tuple[str, str]:
    """`text` cut to `cap` characters, and a note saying so when it was cut."""
    if len(text) <= cap:
        return text, ""
    return text[:cap], f"(truncated: the first {cap:,} of {len(text):,} characters are shown)"


def _read(path: Path, cap: int) -> tuple[str | None, str]:
    """A file's text (capped) and a note, or None and why it cannot be shown."""
    if not path.exists():
        return None, "does not exist"
    if path.is_dir():
        return None, "is a directory, not a file"
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return None, f"cannot be read: {exc.strerror or exc}"
    if b"\0" in raw[:8192]:
        return None, f"is a binary file ({len(raw):,} bytes); not shown"
    return _capped(raw.decode(errors="replace"), cap)


def _section(title: str, body: str | None, note: str, lang: str = "") -> str:
    parts = [f"## {title}"]
    if note:
        parts.append(note if body is not None else f"(not available: {note})")
    if body is not None:
        parts.append(_fenced(body, lang) if body.strip() else "(empty)")
    return "\n\n".join(parts)


@dataclass
class _Prompt:
    text: str
    notes: list[str] = field(default_factory=list)  # things the user should hear about


def _criteria(ctx: ContractContext) -> str:
    contract = ctx.contract
    parts: list[str] = []
    if contract.criteria_path:
        rendered = ctx.render(contract.criteria_path)
        try:
            path = inside(ctx.project_root, rendered)
        except PathEscape as exc:
            raise ReviewConfigError(f"criteria_path: {exc}") from None
        text, note = _read(path, CONTEXT_CAP)
        if text is None:
            raise ReviewConfigError(f"criteria_path {rendered} {note}")
        try:
            parts.append(ctx.render(text).strip())
        except ValueError as exc:
            raise ReviewConfigError(f"criteria_path {rendered}: bad template: {exc}") from None
        if note:
            parts.append(note)
    inline = contract.criteria
    if isinstance(inline, str) and inline.strip():
        parts.append(ctx.render(inline).strip())
    elif isinstance(inline, list):
        parts += [f"- {ctx.render(str(line)).strip()}" for line in inline if str(line).strip()]
    return "\n\n".join(parts) or DEFAULT_CRITERIA


def _diff_section(ctx: ContractContext, cap: int) -> str:
    try:
        diff = ctx.diff()
    except Exception as exc:  # no git, no base commit: the reviewer is told, not the run killed
        return _section("Changes in the workspace (git diff)", None, str(exc))
    if not diff.strip():
        return "## Changes in the workspace (git diff)\n\n(no changes)"
    body, note = _capped(diff, cap)
    return _section("Changes in the workspace (git diff)", body, note, "diff")


def _artifact_section(ctx: ContractContext, name: str, cap: int, notes: list[str]) -> str:
    title = f"Artifact `{name}`"
    location = ctx.artifacts.get(name)
    if location is None:
        known = ", ".join(sorted(ctx.artifacts)) or "none"
        notes.append(f"artifact '{name}' is not available to the review (known: {known})")
        return _section(title, None, "no step produced an artifact of this name")
    path = Path(location)
    path = path if path.is_absolute() else ctx.workspace / path
    body, note = _read(path, cap)
    if body is None:
        notes.append(f"artifact '{name}' ({location}) {note}")
    return _section(f"{title} ({location})", body, note)


def _source_section(ctx: ContractContext, cap: int, notes: list[str]) -> str:
    rendered = ctx.render(ctx.contract.source or "")
    try:
        path = inside(ctx.workspace, rendered)
    except PathEscape as exc:
        raise ReviewConfigError(f"source: {exc}") from None
    body, note = _read(path, cap)
    if body is None:
        notes.append(f"the file under review, {rendered}, {note}")
    return _section(f"File under review: {rendered}", body, note)


def build_prompt(ctx: ContractContext) -> _Prompt:
    """The review prompt: criteria, then each context item in order, then the answer rules."""
    contract = ctx.contract
    notes: list[str] = []
    items: list[dict[str, Any]] = list(contract.context) or [{"source": "git_diff"}]
    sections = ["# Review criteria", _criteria(ctx), "# What to review"]
    for item in items:
        cap = int(item.get("max_size") or item.get("maxSize") or CONTEXT_CAP)
        if item.get("artifact"):
            sections.append(_artifact_section(ctx, str(item["artifact"]), cap, notes))
        else:
            sections.append(_diff_section(ctx, cap))
    if contract.source:
        sections.append(_source_section(ctx, CONTEXT_CAP, notes))
    rules = (
        f"# Your answer\n\nThis is the work of step `{ctx.step.id}` (visit {ctx.visit}). "
        "Answer with the one ReviewFeedback JSON object described in your instructions."
    )
    if contract.max_tokens:
        rules += f" Keep the answer under {contract.max_tokens} tokens."
    sections.append(rules)
    return _Prompt("\n\n".join(sections), notes)


# --------------------------------------------------------------------------- the answer


class MalformedReview(ValueError):
    """The reviewer's answer is not a valid ReviewFeedback object."""


def extract_json(text: str) -> dict[str, Any]:
    """The JSON object in an answer: the whole text, a fenced block, or the first object."""
    stripped = text.strip()
    if not stripped:
        raise MalformedReview("the answer is empty")
    candidates = [stripped, *re.findall(r"```[\w-]*[ \t]*\n(.*?)```", text, re.DOTALL)]
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    raise MalformedReview("the answer contains no JSON object")


def _describe(exc: ValidationError) -> str:
    errors = exc.errors()
    parts = [
        f"{'.'.join(str(p) for p in e['loc']) or 'the object'}: {e['msg']}" for e in errors[:5]
    ]
    more = f"; and {len(errors) - 5} more" if len(errors) > 5 else ""
    return "it does not match the ReviewFeedback schema: " + "; ".join(parts) + more


def parse_feedback(answer: AgentAnswer) -> ReviewFeedback:
    """ReviewFeedback from the adapter's structured answer when there is one, else the text."""
    data: Any = answer.structured
    if isinstance(data, str):
        data = extract_json(data)
    elif data is None:
        data = extract_json(answer.text)
    if not isinstance(data, dict):
        raise MalformedReview(f"the answer is a JSON {type(data).__name__}, not an object")
    try:
        return ReviewFeedback.model_validate(data)
    except ValidationError as exc:
        raise MalformedReview(_describe(exc)) from None


def _retry_prompt(prompt: str, problem: str, previous: str) -> str:
    echo, note = _capped(previous.strip(), ECHO_CAP)
    quoted = f"\n\nIt was:\n{_fenced(echo)}" + (f"\n{note}" if note else "") if echo else ""
    return (
        f"{prompt}\n\n# Your previous answer was not valid: {problem}{quoted}\n\n"
        "Answer again with only the ReviewFeedback JSON object."
    )


# --------------------------------------------------------------------------- the check


@dataclass
class _Tally:
    reviewer: str
    attempts: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    duration_ms: int = 0
    adapter: str | None = None
    model: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def add(self, answer: AgentAnswer) -> None:
        self.tokens_in += answer.tokens_in
        self.tokens_out += answer.tokens_out
        self.cost_usd += answer.cost_usd
        self.adapter = answer.adapter or self.adapter
        self.model = answer.model or self.model

    def details(self) -> dict[str, Any]:
        return {
            "reviewer": self.reviewer,
            "adapter": self.adapter,
            "model": self.model,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "cost_usd": round(self.cost_usd, 6),
            "duration_ms": self.duration_ms,
            "attempts": self.attempts,
            **self.extra,
        }


def _budget_notes(ctx: ContractContext, tally: _Tally) -> None:
    """Budgets are advice, never a failure: going over one is recorded as a note."""
    contract, reviewer = ctx.contract, tally.reviewer
    if contract.max_tokens and tally.tokens_out > contract.max_tokens:
        tally.extra["over_budget"] = True
        ctx.notes.append(
            f"reviewer '{reviewer}' answered with {tally.tokens_out} tokens, over max_tokens "
            f"{contract.max_tokens}"
        )
    used = tally.tokens_in + tally.tokens_out
    if contract.token_budget and used > contract.token_budget:
        tally.extra["over_budget"] = True
        ctx.notes.append(
            f"the review by '{reviewer}' used {used} tokens, over token_budget "
            f"{contract.token_budget}"
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


def _unavailable(ctx: ContractContext, tally: _Tally, why: str) -> ContractResult:
    message = f"reviewer '{tally.reviewer}' unavailable: {_one_line(why, 500)}"
    _budget_notes(ctx, tally)
    if ctx.contract.fail_open:
        ctx.notes.append(f"{message}; passing because fail_open")
        return ContractResult(passed=True, unavailable=True, details=tally.details())
    hint = " (set fail_open: true to pass when the reviewer cannot be reached)"
    return ContractResult(
        passed=False, unavailable=True, error=message + hint, details=tally.details()
    )


def _failed(ctx: ContractContext, tally: _Tally, error: str) -> ContractResult:
    _budget_notes(ctx, tally)
    return ContractResult(passed=False, error=error, details=tally.details())


def _record(ctx: ContractContext, record: dict[str, Any], tally: _Tally) -> None:
    """The whole exchange, for people asking why a review said what it said."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", ctx.step.id)
    path = ctx.run_dir / "reviews" / f"{name}.v{ctx.visit}.c{ctx.index}.json"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=2, default=str))
    except OSError as exc:
        ctx.notes.append(f"cannot write the review record {path}: {exc.strerror or exc}")
        return
    tally.extra["review_file"] = str(path)


async def check(ctx: ContractContext) -> ContractResult:
    contract = ctx.contract
    reviewer = reviewer_of(contract)
    problems = config_problems(contract)
    if reviewer is None or problems:
        return ContractResult(
            passed=False,
            error="agent_review: " + "; ".join(problems),
            details={"reviewer": reviewer},
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
        built = build_prompt(ctx)
    except ValueError as exc:  # ReviewConfigError, or a template error in a rendered path
        return _failed(ctx, tally, f"agent_review: {exc}")
    ctx.notes.extend(built.notes)
    if ctx.run_agent is None:
        return _unavailable(ctx, tally, "this run gives contracts no way to run an agent")

    record: dict[str, Any] = {"reviewer": reviewer, "attempts": []}
    result = await _converse(ctx, ctx.run_agent, built.text, tally, record)
    _record(ctx, record, tally)
    result.details = tally.details()
    return result


async def _converse(
    ctx: ContractContext, run_agent: RunAgent, base: str, tally: _Tally, record: dict[str, Any]
) -> ContractResult:
    """Ask the reviewer; once more with the problem named if the answer is malformed."""
    system = SYSTEM_PROMPT.format(schema=json.dumps(_untitled(SCHEMA)))
    record["system_prompt"] = system
    timeout, model = _timeout(ctx), ctx.contract.model or None
    reviewer, prompt, problem = tally.reviewer, base, ""
    started = time.monotonic()
    for _ in range(ATTEMPTS):
        tally.attempts += 1
        try:
            answer = await run_agent(reviewer, system, prompt, SCHEMA, timeout, model)
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
            feedback = parse_feedback(answer)
        except MalformedReview as exc:
            problem = str(exc)
            prompt = _retry_prompt(base, problem, answer.text)
            continue
        record["feedback"] = feedback.model_dump()
        _budget_notes(ctx, tally)
        passed = feedback.verdict == "pass"
        return ContractResult(
            passed=passed,
            error=None if passed else verdict_line(reviewer, feedback),
            feedback=feedback,
        )
    return _failed(
        ctx,
        tally,
        f"reviewer '{reviewer}' gave no valid ReviewFeedback in {ATTEMPTS} attempts: {problem}",
    )


__all__ = [
    "SCHEMA",
    "MalformedReview",
    "ReviewConfigError",
    "build_prompt",
    "check",
    "config_problems",
    "extract_json",
    "parse_feedback",
    "reviewer_of",
    "verdict_line",
]
