"""What an agent reviewer is told, and how its answer is read (the `agent_review`
contract, contracts/agent_review.py).

The prompt: the review criteria, then each context item the contract names (the
workspace's git diff, artifacts, the file under review), then the answer rules. The
answer: one ReviewFeedback JSON object, from the adapter's structured output or the
text (whole, fenced, or the first object in it).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from swell.contracts.base import AgentAnswer, ContractContext, ReviewFeedback
from swell.workspace import safe
from swell.workspace.paths import PathEscape, inside

if TYPE_CHECKING:
    from swell.contracts.agent_review import AgentReviewSettings

# how much of one context item the prompt carries (characters); `max_size` overrides
CONTEXT_CAP = 60_000
# how much of a malformed answer is quoted back to the reviewer on the retry
ECHO_CAP = 2_000
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


def untitled(schema: Any, names: bool = False) -> Any:
    """`schema` without pydantic's `title` keywords: the same rules in fewer tokens."""
    if isinstance(schema, list):
        return [untitled(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {
        key: untitled(value, names=key in ("properties", "$defs"))
        for key, value in schema.items()
        if names or key != "title"
    }


class ReviewConfigError(ValueError):
    """The contract's own settings are wrong (not the work under review)."""


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
    """A file's text (capped) and a note, or None and why it cannot be shown. Only a
    regular file is read (never a link, a FIFO or a device: workspace/safe.py), and
    only as much of it as `cap` characters can take."""
    try:
        fd = safe.open_regular(path)
        try:
            size = os.fstat(fd).st_size
            raw = safe.read_fd(fd, cap * 4)  # a character is at most 4 bytes of UTF-8
        finally:
            os.close(fd)
    except safe.Unreadable as exc:
        return None, exc.reason
    except OSError as exc:
        return None, f"cannot be read: {exc.strerror or exc}"
    if b"\0" in raw[:8192]:
        return None, f"is a binary file ({size:,} bytes); not shown"
    text = raw.decode(errors="replace")
    if len(raw) < size:
        note = (
            f"(truncated: the first {min(cap, len(text)):,} characters of {size:,} bytes are shown)"
        )
        return text[:cap], note
    return _capped(text, cap)


def _section(title: str, body: str | None, note: str, lang: str = "") -> str:
    parts = [f"## {title}"]
    if note:
        parts.append(note if body is not None else f"(not available: {note})")
    if body is not None:
        parts.append(_fenced(body, lang) if body.strip() else "(empty)")
    return "\n\n".join(parts)


@dataclass
class ReviewPrompt:
    text: str
    notes: list[str] = field(default_factory=list)  # things the user should hear about


def _criteria(ctx: ContractContext[AgentReviewSettings]) -> str:
    settings = ctx.settings
    parts: list[str] = []
    if settings.criteria_path:
        rendered = ctx.render(settings.criteria_path)
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
    inline = settings.criteria
    if isinstance(inline, str) and inline.strip():
        parts.append(ctx.render(inline).strip())
    elif isinstance(inline, list):
        parts += [f"- {ctx.render(str(line)).strip()}" for line in inline if str(line).strip()]
    return "\n\n".join(parts) or DEFAULT_CRITERIA


def _diff_section(
    ctx: ContractContext[AgentReviewSettings], cap: int, base: str | None = None
) -> str:
    title = "Changes in the workspace (git diff" + (f" against {base})" if base else ")")
    try:
        if base and ctx.diff_from is None:
            raise ValueError("this run cannot diff against another base")
        diff = ctx.diff_from(base) if base and ctx.diff_from else ctx.diff()
    except Exception as exc:  # no git, no base commit: the reviewer is told, not the run killed
        return _section(title, None, str(exc))
    if not diff.strip():
        return f"## {title}\n\n(no changes)"
    body, note = _capped(diff, cap)
    return _section(title, body, note, "diff")


def _artifact_section(
    ctx: ContractContext[AgentReviewSettings], name: str, cap: int, notes: list[str]
) -> str:
    title = f"Artifact `{name}`"
    location = ctx.artifacts.get(name)
    if location is None:
        known = ", ".join(sorted(ctx.artifacts)) or "none"
        notes.append(f"artifact '{name}' is not available to the review (known: {known})")
        return _section(title, None, "no step produced an artifact of this name")
    path = Path(location)
    path = path if path.is_absolute() else ctx.workspace / path
    if not _reviewable(ctx, path):
        note = "is outside the run's workspaces; not shown"
        notes.append(f"artifact '{name}' ({location}) {note}")
        return _section(f"{title} ({location})", None, note)
    body, note = _read(path, cap)
    if body is None:
        notes.append(f"artifact '{name}' ({location}) {note}")
    return _section(f"{title} ({location})", body, note)


def _reviewable(ctx: ContractContext[AgentReviewSettings], path: Path) -> bool:
    """Whether `path`, links resolved, is in the step's workspace, swell's workspaces
    or the run's directory: an artifact's path can be rendered from what a step wrote
    (`path: "{{ context.p }}"`), and a reviewer must not be shown `~/.ssh/id_rsa`."""
    try:
        target = path.resolve()
    except (OSError, RuntimeError, ValueError):
        return False
    state = ctx.run_dir.parent.parent  # run_dir is STATE/runs/RUN
    for root in (ctx.workspace, ctx.run_dir, state / "workspaces"):
        base = root.resolve()
        if target == base or base in target.parents:
            return True
    return False


def _source_section(ctx: ContractContext[AgentReviewSettings], cap: int, notes: list[str]) -> str:
    rendered = ctx.render(ctx.settings.source or "")
    try:
        path = inside(ctx.workspace, rendered)
    except PathEscape as exc:
        raise ReviewConfigError(f"source: {exc}") from None
    body, note = _read(path, cap)
    if body is None:
        notes.append(f"the file under review, {rendered}, {note}")
    return _section(f"File under review: {rendered}", body, note)


def build_prompt(ctx: ContractContext[AgentReviewSettings]) -> ReviewPrompt:
    """The review prompt: criteria, then each context item in order, then the answer rules."""
    settings = ctx.settings
    notes: list[str] = []
    items: list[dict[str, Any]] = list(settings.context) or [{"source": "git_diff"}]
    sections = ["# Review criteria", _criteria(ctx), "# What to review"]
    for item in items:
        cap = int(item.get("max_size") or item.get("maxSize") or CONTEXT_CAP)
        if item.get("artifact"):
            sections.append(_artifact_section(ctx, str(item["artifact"]), cap, notes))
        else:
            base = item.get("diff_base")
            sections.append(_diff_section(ctx, cap, ctx.render(str(base)) if base else None))
    if settings.source:
        sections.append(_source_section(ctx, CONTEXT_CAP, notes))
    rules = (
        f"# Your answer\n\nThis is the work of step `{ctx.step.id}` (visit {ctx.visit}). "
        "Answer with the one ReviewFeedback JSON object described in your instructions."
    )
    if settings.max_tokens:
        rules += f" Keep the answer under {settings.max_tokens} tokens."
    sections.append(rules)
    return ReviewPrompt("\n\n".join(sections), notes)


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


def _from_wave(data: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """Wave's reviewer answers in swell's terms: the verdict `warn` is a pass with a
    warning (True is returned), an issue's `description` is its `detail`."""
    warned = data.get("verdict") == "warn"
    data = {**data, "verdict": "pass"} if warned else data
    issues = data.get("issues")
    if isinstance(issues, list):
        data["issues"] = [
            {**{k: v for k, v in i.items() if k != "description"}, "detail": i["description"]}
            if isinstance(i, dict) and "description" in i and "detail" not in i
            else i
            for i in issues
        ]
    return data, warned


def parse_answer(answer: AgentAnswer) -> tuple[ReviewFeedback, bool]:
    """ReviewFeedback from the answer, and whether the reviewer said `warn` (Wave's
    passing verdict with a warning)."""
    data: Any = answer.structured
    if isinstance(data, str):
        data = extract_json(data)
    elif data is None:
        data = extract_json(answer.text)
    if not isinstance(data, dict):
        raise MalformedReview(f"the answer is a JSON {type(data).__name__}, not an object")
    data, warned = _from_wave(data)
    try:
        return ReviewFeedback.model_validate(data), warned
    except ValidationError as exc:
        raise MalformedReview(_describe(exc)) from None


def retry_prompt(prompt: str, problem: str, previous: str, wanted: str = "ReviewFeedback ") -> str:
    echo, note = _capped(previous.strip(), ECHO_CAP)
    quoted = f"\n\nIt was:\n{_fenced(echo)}" + (f"\n{note}" if note else "") if echo else ""
    return (
        f"{prompt}\n\n# Your previous answer was not valid: {problem}{quoted}\n\n"
        f"Answer again with only the {wanted}JSON object."
    )
