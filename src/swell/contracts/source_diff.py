"""`type: source_diff`: the step changed real source files.

At least `min_files` (default 1) files changed in the workspace since its base
(committed or not, new files included) must match `glob` (all files when unset) and
none of `exclude` (`specs/**`, `**/x`, `*.md`, ...). It catches the step that says
"everything was already correct" and changed nothing, or only its notes. Globs are
git_changes.py's (`*` stays in a segment, a pattern without `/` also matches the
file name).

Wave lists only tracked files changed against HEAD; swell counts what the step
added too (a new source file is real work) and work it committed.
"""

from __future__ import annotations

from pydantic import Field

from swell.contracts.base import ContractContext, ContractResult, ContractSettings, ContractType
from swell.contracts.git_changes import glob_problem, matches, parse_diff
from swell.errors import Problem, SwellError
from swell.manifest.lint_context import LintScope

SHOWN = 10


class SourceDiffSettings(ContractSettings):
    glob: str | None = None
    exclude: list[str] = Field(default_factory=list)
    min_files: int = Field(default=1, ge=0)  # 0 is Wave's "unset": 1


def _listed(paths: list[str]) -> str:
    more = f" and {len(paths) - SHOWN} more" if len(paths) > SHOWN else ""
    return ", ".join(paths[:SHOWN]) + more


class SourceDiff(ContractType[SourceDiffSettings]):
    name = "source_diff"
    Settings = SourceDiffSettings

    def problems(self, settings: SourceDiffSettings, scope: LintScope) -> list[Problem]:
        found = []
        if settings.glob is not None and (problem := glob_problem(settings.glob)):
            found.append(scope.problem(("glob",), problem))
        for i, pattern in enumerate(settings.exclude):
            if problem := glob_problem(pattern):
                found.append(scope.problem(("exclude", i), problem))
        return found

    async def check(self, ctx: ContractContext[SourceDiffSettings]) -> ContractResult:
        settings = ctx.settings
        need = settings.min_files or 1
        try:
            changed = sorted({change.path for change in parse_diff(ctx.diff())})
        except SwellError as exc:
            return ContractResult(
                passed=False, error=f"source_diff cannot see the step's changes: {exc}"
            )
        wanted = [settings.glob] if settings.glob else ["**"]
        qualifying = [
            path
            for path in changed
            if matches(path, wanted) and not matches(path, settings.exclude)
        ]
        details = {"changed": len(changed), "qualifying": qualifying[:100], "min_files": need}
        if len(qualifying) >= need:
            return ContractResult(passed=True, details=details)
        what = f"matching {settings.glob!r}" if settings.glob else "changed"
        if settings.exclude:
            what += f" outside {', '.join(settings.exclude)}"
        seen = f"; changed: {_listed(changed)}" if changed else "; the step changed no file"
        return ContractResult(
            passed=False,
            error=(f"source_diff: {len(qualifying)} file(s) {what}, need at least {need}{seen}"),
            details=details,
        )


TYPE = SourceDiff()
