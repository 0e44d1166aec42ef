"""`type: format`: a JSON result that is finished work, not a draft.

The file (`source`, else the step's first output artifact) must hold a JSON object.
Which rules apply is Wave's choice, by the base name of `schema_path` (the file need
not exist; without it the generic rules apply):

- generic: the object is not empty, and no top-level string holds a placeholder
  (TODO, FIXME, XXX, [placeholder], TBD);
- `github-issue-analysis`, or a name containing "issue": a `title` of 10 to 200
  characters without placeholder text, a `body` of at least 50 with "Description"
  and "Acceptance Criteria" headings and no [TODO/[PLACEHOLDER/TBD/FIXME, and at
  least one label when `labels` is given;
- `github-pr-draft`, `github-pr-info`, or a name containing "pr": a conventional-
  commit `title` of 10 to 72 characters, a `body` of at least 100 with "Summary",
  "Changes" and "Testing" headings, a checklist, and a "Related to #N" reference (not
  Closes/Fixes/Resolves #N, which close issues on merge); `head` is not main/master;
- `implementation-results`, or a name containing "implementation": a non-empty
  `files_changed`, `tests_passed` and `builds_successfully` not false, and
  `implementation_notes` of at least 20 characters;
- `analysis`, `findings`: one of findings/recommendations/analysis/summary, strings
  at least 50 characters long, arrays not empty.

Every violation is listed in the error.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Any

from swell.contracts.base import ContractContext, ContractResult, ContractSettings, ContractType
from swell.contracts.non_empty_file import default_source, read_file, shown, workspace_path
from swell.errors import Problem
from swell.manifest.lint_context import LintScope
from swell.workspace.offload import off_loop
from swell.workspace.paths import PathEscape

PLACEHOLDERS = ("TODO", "FIXME", "XXX", "[placeholder]", "TBD")
BODY_PLACEHOLDERS = ("[TODO", "[PLACEHOLDER", "TBD", "FIXME")
MAX_BYTES = 10 * 1024 * 1024

Rules = Callable[[dict[str, Any]], list[str]]


class FormatSettings(ContractSettings):
    source: str | None = None
    schema_path: str | None = None  # only its base name is read: it picks the rules


def _sections(body: str, names: tuple[str, ...], what: str) -> list[str]:
    return [
        f"{what} body missing '{name}' section"
        for name in names
        if not re.search(rf"(?i)##?\s*{re.escape(name)}", body)
    ]


def issue_rules(out: dict[str, Any]) -> list[str]:
    found: list[str] = []
    title, body = out.get("title"), out.get("body")
    if isinstance(title, str):
        if len(title) < 10:
            found.append("issue title too short (minimum 10 characters)")
        if len(title) > 200:
            found.append("issue title too long (maximum 200 characters)")
        if "[todo" in title.lower() or "placeholder" in title.lower():
            found.append("issue title contains placeholder text")
    else:
        found.append("missing or invalid title field")
    if isinstance(body, str):
        if len(body) < 50:
            found.append("issue body too short (minimum 50 characters)")
        found += _sections(body, ("Description", "Acceptance Criteria"), "issue")
        found += [f"issue body contains placeholder: {p}" for p in BODY_PLACEHOLDERS if p in body]
    else:
        found.append("missing or invalid body field")
    if isinstance(out.get("labels"), list) and not out["labels"]:
        found.append("no labels specified (at least one recommended)")
    return found


CONVENTIONAL = re.compile(r"^(feat|fix|docs|style|refactor|test|chore)(\(.+\))?:\s+.+")


def pr_rules(out: dict[str, Any]) -> list[str]:
    found: list[str] = []
    title, body = out.get("title"), out.get("body")
    if isinstance(title, str):
        if len(title) < 10:
            found.append("PR title too short (minimum 10 characters)")
        if len(title) > 72:
            found.append("PR title too long (maximum 72 characters)")
        if not CONVENTIONAL.match(title):
            found.append("PR title should follow the conventional commit format (feat: ...)")
        if "[todo" in title.lower():
            found.append("PR title contains placeholder text")
    if isinstance(body, str):
        if len(body) < 100:
            found.append("PR body too short (minimum 100 characters)")
        found += _sections(body, ("Summary", "Changes", "Testing"), "PR")
        related = re.search(r"(?i)related\s+to\s+#\d+", body)
        closing = re.search(r"(?i)(closes|fixes|resolves)\s+#\d+", body)
        if not related and not closing:
            found.append("PR body should reference related issues (Related to #123)")
        if closing:
            found.append(
                "PR body uses a closing keyword (Closes/Fixes/Resolves #N), which closes the "
                "issue on merge; write 'Related to #N'"
            )
        if "- [" not in body and "* [" not in body:
            found.append("PR body should include a checklist")
    if out.get("head") in ("main", "master"):
        found.append("cannot create a PR from main/master")
    if out.get("base") == "":
        found.append("base branch is required")
    return found


def implementation_rules(out: dict[str, Any]) -> list[str]:
    found: list[str] = []
    files = out.get("files_changed")
    if not isinstance(files, list):
        found.append("missing files_changed array")
    elif not files:
        found.append("no files changed - the implementation appears empty")
    if out.get("tests_passed") is False:
        found.append("tests are failing - the implementation must pass all tests")
    if out.get("builds_successfully") is False:
        found.append("the code does not build")
    notes = out.get("implementation_notes")
    if not isinstance(notes, str):
        found.append("missing implementation_notes")
    elif len(notes) < 20:
        found.append("implementation_notes too brief (minimum 20 characters)")
    return found


def analysis_rules(out: dict[str, Any]) -> list[str]:
    found: list[str] = []
    fields = [f for f in ("findings", "recommendations", "analysis", "summary") if f in out]
    for name in fields:
        value = out[name]
        if isinstance(value, str) and len(value) < 50:
            found.append(f"{name} field too brief (minimum 50 characters)")
        if isinstance(value, list) and not value:
            found.append(f"{name} array is empty")
    if not fields:
        found.append("missing analysis content (findings, recommendations, analysis or summary)")
    return found


def generic_rules(out: dict[str, Any]) -> list[str]:
    found = ["output object is empty"] if not out else []
    for key, value in out.items():
        if isinstance(value, str):
            found += [
                f"field '{key}' contains placeholder text: {p}" for p in PLACEHOLDERS if p in value
            ]
    return found


RULES: dict[str, tuple[str, Rules]] = {
    "github_issue": ("GitHub issue", issue_rules),
    "github_pr": ("GitHub PR", pr_rules),
    "implementation_results": ("implementation results", implementation_rules),
    "analysis": ("analysis", analysis_rules),
    "generic": ("generic", generic_rules),
}
NAMED = {
    "github-issue-analysis": "github_issue",
    "github-pr-draft": "github_pr",
    "github-pr-info": "github_pr",
    "implementation-results": "implementation_results",
    "analysis": "analysis",
    "findings": "analysis",
}


def rule_set(schema_path: str | None) -> str:
    """Which rules apply, from the schema's base name (Wave's loose matching)."""
    if not schema_path:
        return "generic"
    name = PurePosixPath(schema_path).name.removesuffix(".schema.json")
    if name in NAMED:
        return NAMED[name]
    for part, rules in (("issue", "github_issue"), ("pr", "github_pr")):
        if part in name:
            return rules
    return "implementation_results" if "implementation" in name else "generic"


def _document(ctx: ContractContext[FormatSettings]) -> tuple[Any, str]:
    """The parsed file and its name; ValueError saying why there is none."""
    source = ctx.settings.source or default_source(ctx.step)
    if not source:
        raise ValueError("format contract needs `source` (or the step an output artifact)")
    try:
        path = workspace_path(ctx, source)
    except PathEscape as exc:
        raise ValueError(str(exc)) from None
    name = shown(path, ctx)
    try:
        text = read_file(path, name, MAX_BYTES).decode("utf-8-sig")
    except UnicodeDecodeError:  # a FileProblem goes on up: a ValueError saying why
        raise ValueError(f"{name} is not UTF-8 text") from None
    try:
        return json.loads(text), name
    except json.JSONDecodeError as exc:
        raise ValueError(f"{name} is not valid JSON: {exc.msg} at line {exc.lineno}") from None


class Format(ContractType[FormatSettings]):
    name = "format"
    Settings = FormatSettings

    def problems(self, settings: FormatSettings, scope: LintScope) -> list[Problem]:
        if settings.source or default_source(scope.step):
            return []
        return [scope.problem((), "a format contract needs `source` (or a step output artifact)")]

    async def check(self, ctx: ContractContext[FormatSettings]) -> ContractResult:
        try:
            data, name = await off_loop(lambda: _document(ctx))
        except ValueError as exc:
            return ContractResult(passed=False, error=f"format: {exc}")
        kind = rule_set(ctx.settings.schema_path)
        label, rules = RULES[kind]
        details = {"document": name, "rules": kind}
        if not isinstance(data, dict):
            error = f"format: {name} must hold a JSON object, not {type(data).__name__}"
            return ContractResult(passed=False, error=error, details=details)
        violations = rules(data)
        if not violations:
            return ContractResult(passed=True, details=details)
        listed = "\n".join(f"- {v}" for v in violations)
        return ContractResult(
            passed=False,
            error=f"format: {name} fails the {label} format rules:\n{listed}",
            details={**details, "violations": violations},
        )


TYPE = Format()
