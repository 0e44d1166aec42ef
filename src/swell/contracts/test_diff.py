"""`type: test_diff`: the step did not net-delete tests.

In the workspace's changes against its base (committed and uncommitted, new files
included: the step's whole work), the lines of test files (`test_file_pattern`)
that declare a test (`test_func_pattern`, one declaration per line) are counted:
net = removed - added. More than `max_test_deletions` (default 0) fails, naming the
files. A renamed test nets to zero. The patterns default to the manifest's
`project.test_file_pattern` / `project.test_func_pattern`, else Wave's Go defaults
(`*_test.go`, `func Test…/Example…/Benchmark…/Fuzz…`).

Wave diffs against HEAD, so work the agent committed is not seen, and passes when git
fails; swell takes the workspace's base and fails when it cannot see the changes.
"""

from __future__ import annotations

import re

from pydantic import Field

from swell.contracts.base import ContractContext, ContractResult, ContractSettings, ContractType
from swell.contracts.git_changes import (
    glob_problem,
    matches,
    parse_diff,
    patterns_for_tests,
    regex_problem,
)
from swell.errors import Problem, SwellError
from swell.manifest.lint_context import LintScope

SHOWN_FILES = 10


class TestDiffSettings(ContractSettings):
    __test__ = False  # not a pytest class

    max_test_deletions: int = Field(default=0, ge=0)
    test_file_pattern: list[str] | str | None = None
    test_func_pattern: str | None = None


def pattern_problems(
    files: list[str] | str | None, func: str | None, scope: LintScope
) -> list[Problem]:
    """What `swell validate` says about a test_* contract's patterns."""
    found = []
    for glob in [files] if isinstance(files, str) else files or []:
        problem = glob_problem(glob)
        if problem:
            found.append(scope.problem(("test_file_pattern",), problem))
    problem = regex_problem(func) if func else None
    if problem:
        found.append(scope.problem(("test_func_pattern",), problem))
    return found


class TestDiff(ContractType[TestDiffSettings]):
    __test__ = False

    name = "test_diff"
    Settings = TestDiffSettings

    def problems(self, settings: TestDiffSettings, scope: LintScope) -> list[Problem]:
        return pattern_problems(settings.test_file_pattern, settings.test_func_pattern, scope)

    async def check(self, ctx: ContractContext[TestDiffSettings]) -> ContractResult:
        settings = ctx.settings
        globs, func = patterns_for_tests(
            settings.test_file_pattern, settings.test_func_pattern, ctx.namespace
        )
        try:
            declaration = re.compile(func)
        except re.error as exc:
            return ContractResult(passed=False, error=f"test_diff: {regex_problem(func) or exc}")
        try:
            diff = ctx.diff()
        except SwellError as exc:
            return ContractResult(
                passed=False, error=f"test_diff cannot see the step's changes: {exc}"
            )
        added = removed = 0
        per_file: dict[str, tuple[int, int]] = {}
        for change in parse_diff(diff):
            paths = [change.path, *([change.old_path] if change.old_path else [])]
            if not any(matches(p, globs) for p in paths):
                continue
            plus = sum(1 for line in change.added if declaration.search(line))
            minus = sum(1 for line in change.removed if declaration.search(line))
            if plus or minus:
                per_file[change.path] = (minus, plus)
                added, removed = added + plus, removed + minus
        net = removed - added
        details = {
            "removed": removed,
            "added": added,
            "net_deleted": net,
            "max_test_deletions": settings.max_test_deletions,
            "files": {path: {"removed": r, "added": a} for path, (r, a) in per_file.items()},
        }
        if net <= settings.max_test_deletions:
            return ContractResult(passed=True, details=details)
        losing = [f"{path} (-{r} +{a})" for path, (r, a) in per_file.items() if r > a]
        more = f" and {len(losing) - SHOWN_FILES} more" if len(losing) > SHOWN_FILES else ""
        return ContractResult(
            passed=False,
            error=(
                f"test_diff: net {net} test declaration(s) removed (removed {removed}, added "
                f"{added}; at most {settings.max_test_deletions} allowed) in "
                f"{', '.join(losing[:SHOWN_FILES])}{more}; replace deleted tests instead of "
                "deleting them"
            ),
            details=details,
        )


TYPE = TestDiff()
