"""`type: markdown_spec`: a Markdown specification (speckit style) read into JSON.

The file (`source`, else the step's first output artifact) is split at its headings
(not those inside code fences) and each section is read by its heading, as Wave
does: a title ("title"/"overview"; else the file name), user stories ("user
story"/"story": `As a …, I want …, so that …` and their acceptance criteria, or a
narrative with Given/When/Then lines), data model ("data model"/"schema"), API
design ("api"/"endpoint"), edge cases ("edge case"/"error"), testing strategy
("test"/"validation"), implementation steps ("implementation"/"step"), file changes
("file"/"change") and risk assessment ("risk"). The result is validated against
`schema_path` when one is given (a JSON Schema file in the project, as json_schema's
`schema_path`) and written next to the source as `<name>.json` for later steps.

A file that is missing or empty fails (Wave passes an empty one: it has nothing to
parse but its name). When `source` names a `specs/` path that does not exist (its
template rendered to a branch that has no spec), the newest `specs/NNN-*/<file
name>` in the workspace is used, as in Wave.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

from swell.contracts.base import ContractContext, ContractResult, ContractSettings, ContractType
from swell.contracts.json_schema import (
    JsonSchemaSettings,
    Unusable,
    describe,
    load_schema,
    validator,
)
from swell.contracts.non_empty_file import (
    FileProblem,
    default_source,
    read_file,
    shown,
    workspace_path,
)
from swell.errors import Problem
from swell.manifest.lint_context import LintScope
from swell.workspace import safe
from swell.workspace.offload import off_loop
from swell.workspace.paths import PathEscape

MAX_BYTES = 5 * 1024 * 1024
_BULLETS = "-*•"


class MarkdownSpecSettings(ContractSettings):
    source: str | None = None
    schema_path: str | None = None


# ---------------------------------------------------------------------------- parsing


def _story(as_a: str = "", i_want: str = "", so_that: str = "") -> dict[str, Any]:
    return {"as_a": as_a, "i_want": i_want, "so_that": so_that, "acceptance_criteria": []}


def _value(line: str) -> str:
    """The value of `As a: x` / `As a x, …` / `I want x so that …` / `So that x`."""
    if ":" in line:
        return line.split(":", 1)[1].strip()
    lower = line.lower()
    for lead, stop in (("as a ", ","), ("i want ", " so that"), ("so that ", None)):
        if lower.startswith(lead):
            value = line[len(lead) :]
            cut = value.lower().find(stop) if stop else -1
            return (value[:cut] if cut >= 0 else value).strip()
    return line.strip()


def _one_line_story(line: str) -> dict[str, Any]:
    lower = line.lower()
    as_a, want, so = lower.index("as a"), lower.index("i want"), lower.find("so that")
    story = _story(line[as_a + 5 : want].strip().rstrip(","))
    story["i_want"] = line[want + 6 : so if so >= 0 else len(line)].strip().rstrip(",")
    if so >= 0:
        story["so_that"] = line[so + 8 :].strip().rstrip(".")
    return story


def user_stories(content: str) -> list[dict[str, Any]]:
    stories: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    in_acceptance = False
    for raw in content.split("\n"):
        line = raw.strip()
        lower = line.lower()
        if not line:
            continue
        if "as a" in lower and "i want" in lower:
            current, in_acceptance = _one_line_story(line), False
            stories.append(current)
        elif lower.startswith("as a"):
            current, in_acceptance = _story(_value(line)), False
            stories.append(current)
        elif current is None:
            continue
        elif lower.startswith("i want"):
            current["i_want"] = _value(line)
        elif lower.startswith("so that"):
            current["so_that"] = _value(line)
        elif "acceptance" in lower:
            in_acceptance = True
        elif in_acceptance and line[0] in _BULLETS and line.lstrip(_BULLETS).strip():
            current["acceptance_criteria"].append(line.lstrip(_BULLETS).strip())
    kept = []
    for story in stories:  # Wave keeps a story with some content and fills the rest
        if (story["as_a"] and (story["i_want"] or story["so_that"])) or story[
            "acceptance_criteria"
        ]:
            story["as_a"] = story["as_a"] or "user"
            if not story["i_want"] and story["so_that"]:
                story["i_want"] = "functionality described below"
            if not story["so_that"] and story["i_want"]:
                story["so_that"] = "the feature works as intended"
            kept.append(story)
    return kept


INTENT = ("can see", "can understand", "can view", "can access", "can use", "need", "want",
          "require", "should be able to", "users can", "developers can", "system should")  # fmt: skip
BENEFIT = ("so that", "because", "to ensure", "for", "enabling", "eliminating", "building",
           "providing", "helping", "why this priority", "addresses")  # fmt: skip


def _after(content: str, patterns: tuple[str, ...], strip: tuple[str, ...]) -> str | None:
    """The text after the first pattern found in a line (more than 10 characters)."""
    for line in content.lower().split("\n"):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        for pattern in patterns:
            if pattern in line:
                found = line[line.index(pattern) + len(pattern) :].strip()
                for prefix in strip:
                    found = found.removeprefix(prefix)
                found = found.strip(".,:;")
                if len(found) > 10:
                    return found
    return None


def _scenarios(content: str) -> list[str]:
    found: list[str] = []
    inside = False
    lines = [line.strip() for line in content.split("\n") if line.strip()]
    for line in lines:
        lower = line.lower()
        if "acceptance" in lower and ("scenario" in lower or "criteria" in lower):
            inside = True
        elif line.startswith(("#", "**")):
            inside = inside and "acceptance" in lower
        elif inside and re.match(r"([123]\. |[-*•] )", line):
            item = line.lstrip("123456789. -*•").strip()
            found += [item] if item else []
        elif inside and len(line) > 20 and ":" not in line:
            found.append(line)
    found += [line for line in lines if line.lower().startswith(("given", "when", "then"))]
    return found


def narrative_story(content: str) -> dict[str, Any] | None:
    """A story from a narrative section that has no `As a …` lines."""
    fallback = next(
        (
            line.strip().strip(".,:;")
            for line in content.lower().split("\n")
            if len(line.strip()) > 20 and not line.strip().startswith(("#", "**"))
        ),
        "use the feature",
    )
    story = _story(
        "user",
        _after(content, INTENT, ("to ",)) or fallback,
        _after(content, BENEFIT, (": ", "the ")) or "the functionality works correctly",
    )
    story["acceptance_criteria"] = _scenarios(content)
    return story if story["i_want"] or story["acceptance_criteria"] else None


def list_items(content: str) -> list[str]:
    items = []
    for raw in content.split("\n"):
        line = raw.strip()
        if line and line[0] in _BULLETS:
            item = line.lstrip(_BULLETS).strip()
        elif "." in line and len(line) < 200:
            item = line.split(".", 1)[1].strip()
        else:
            continue
        if item:
            items.append(item)
    return items


def structured(content: str) -> Any:
    """JSON when the section is JSON, else `key: value` lines as an object."""
    if content.startswith(("{", "[")):
        try:
            return json.loads(content)
        except ValueError:
            pass
    result: dict[str, Any] = {}
    for i, raw in enumerate(content.split("\n")):
        line = raw.strip()
        if not line:
            continue
        if ":" in line:
            key, value = line.split(":", 1)
            result[key.strip()] = value.strip()
        else:
            result[f"item_{i + 1}"] = line
    return result or content


_PATHLIKE = (".go", ".js", ".ts", ".py", "/")


def file_changes(content: str) -> list[dict[str, str]]:
    changes: list[dict[str, str]] = []
    for raw in content.split("\n"):
        line = raw.strip()
        if not line:
            continue
        if any(mark in line for mark in _PATHLIKE):
            changes.append({"path": line, "description": "", "changes": ""})
        elif changes:
            if not changes[-1]["description"]:
                changes[-1]["description"] = line
            else:
                changes[-1]["changes"] += line + "\n"
    return changes


def _section(spec: dict[str, Any], heading: str, content: str) -> None:
    content, name = content.strip(), heading.lower()
    if not content:
        return
    if "title" in name or name == "overview":
        spec["title"] = spec["title"] or content.split("\n")[0].strip()
    elif "user stories" in name or "user story" in name:
        spec["user_stories"] += user_stories(content)
    elif "story" in name:
        stories = user_stories(content)
        story = None if stories else narrative_story(content)
        spec["user_stories"] += stories + ([story] if story else [])
    elif "data model" in name or "schema" in name:
        spec["data_model"] = structured(content)
    elif "api" in name or "endpoint" in name:
        spec["api_design"] = structured(content)
    elif "edge case" in name or "error" in name:
        spec["edge_cases"] = list_items(content)
    elif "test" in name or "validation" in name:
        spec["testing_strategy"] = structured(content)
    elif "implementation" in name or "step" in name:
        spec["implementation_steps"] = list_items(content)
    elif "file" in name or "change" in name:
        spec["file_changes"] = file_changes(content)
    elif "risk" in name:
        spec["risk_assessment"] = structured(content)


def parse_spec(text: str, file_name: str) -> dict[str, Any]:
    """The JSON form of a Markdown spec (Wave's SpecData; empty parts left out)."""
    spec: dict[str, Any] = {"title": "", "user_stories": []}
    heading: str | None = None
    body: list[str] = []
    fenced = False
    for line in text.split("\n"):
        if line.strip().startswith("```"):
            fenced = not fenced
        if fenced or line.strip().startswith("```") or not line.startswith("#"):
            body.append(line)
            continue
        if heading is not None:
            _section(spec, heading, "\n".join(body))
        heading, body = line.lstrip("#").strip(), []
    if heading is not None:
        _section(spec, heading, "\n".join(body))
    spec["title"] = spec["title"] or Path(file_name).stem
    return {k: v for k, v in spec.items() if v not in (None, "", [], {}) or k == "user_stories"}


# ---------------------------------------------------------------------------- the check


def _newest_spec(workspace: Path, name: str) -> Path | None:
    """The newest `specs/NNN-*/<name>` in the workspace (speckit's feature folders)."""
    found = [
        p
        for p in (workspace / "specs").glob(f"[0-9][0-9][0-9]-*/{name}")
        if p.is_file() and not p.is_symlink()
    ]
    return max(found, key=lambda p: p.stat().st_mtime_ns, default=None)


def _source(ctx: ContractContext[MarkdownSpecSettings]) -> Path:
    raw = ctx.settings.source or default_source(ctx.step)
    if not raw:
        raise Unusable("markdown_spec contract needs `source` (or the step an output artifact)")
    try:
        path = workspace_path(ctx, raw)
    except PathEscape as exc:
        raise Unusable(str(exc)) from None
    if not path.exists() and "{{" in raw and "specs/" in raw:
        return _newest_spec(ctx.workspace, path.name) or path
    return path


def _read(ctx: ContractContext[MarkdownSpecSettings], path: Path) -> str:
    name = shown(path, ctx)
    try:
        text = read_file(path, name, MAX_BYTES).decode("utf-8-sig", errors="replace")
    except FileProblem as exc:
        raise Unusable(str(exc)) from None
    if not text.strip():
        raise Unusable(f"{name} is empty")
    return text


def _schema_errors(
    ctx: ContractContext[MarkdownSpecSettings], schema_path: str, spec: Any
) -> list[str]:
    """json_schema's loading and validation, on a context holding just the schema."""
    fields = {f.name: getattr(ctx, f.name) for f in dataclasses.fields(ctx)}
    fields["settings"] = JsonSchemaSettings(schema_path=schema_path)
    schema_ctx: ContractContext[JsonSchemaSettings] = ContractContext(**fields)
    schema, origin, base = load_schema(schema_ctx)
    return describe(validator(schema_ctx, schema, origin, base).iter_errors(spec))


class MarkdownSpec(ContractType[MarkdownSpecSettings]):
    name = "markdown_spec"
    Settings = MarkdownSpecSettings

    def problems(self, settings: MarkdownSpecSettings, scope: LintScope) -> list[Problem]:
        found = []
        if not (settings.source or default_source(scope.step)):
            found.append(
                scope.problem((), "a markdown_spec contract needs `source` (or an output artifact)")
            )
        path = settings.schema_path
        if path and "{{" not in path and not (scope.project.root / path).is_file():
            found.append(scope.problem(("schema_path",), f"schema_path {path} does not exist"))
        return found

    async def check(self, ctx: ContractContext[MarkdownSpecSettings]) -> ContractResult:
        return await off_loop(lambda: _check(ctx))


def _check(ctx: ContractContext[MarkdownSpecSettings]) -> ContractResult:
    try:
        path = _source(ctx)
        spec = parse_spec(_read(ctx, path), path.name)
        errors = (
            _schema_errors(ctx, ctx.settings.schema_path, spec) if ctx.settings.schema_path else []
        )
    except Unusable as exc:
        return ContractResult(passed=False, error=f"markdown_spec: {exc}")
    name = shown(path, ctx)
    details: dict[str, Any] = {"document": name, "sections": sorted(spec)}
    if errors:
        listed = "\n".join(f"- {e}" for e in errors[:20])
        return ContractResult(
            passed=False,
            error=f"markdown_spec: {name} does not match {ctx.settings.schema_path}:\n{listed}",
            details={**details, "errors": errors},
        )
    out = path.with_suffix(".json")
    try:  # a new file renamed over whatever is there (a FIFO would block a plain write)
        if out != path and not safe.is_link(out):
            safe.replace(out, (json.dumps(spec, indent=2, ensure_ascii=False) + "\n").encode())
            details["json"] = shown(out, ctx)
    except (OSError, safe.UnsafePath) as exc:  # the check passed; the copy is a convenience
        ctx.notes.append(f"markdown_spec: cannot write {shown(out, ctx)}: {exc}")
    return ContractResult(passed=True, details=details)


TYPE = MarkdownSpec()
