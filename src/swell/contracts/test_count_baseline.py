"""`type: test_count_baseline`: no fewer tests committed at HEAD than at `base_ref`.

Counts the test declarations (`test_func_pattern`) in the test files
(`test_file_pattern`) of two commits of the step's workspace: HEAD and `base_ref`
(default `HEAD~1`). Fails when base - head > `max_test_deletions` (default 0). It
reads committed trees only (`git ls-tree`, then each file's blob; a blob both
commits share is read once), so it catches deletions spread over commits that
`test_diff` (the working changes) cannot see. Patterns and their defaults are
test_diff's.

Wave passes when git fails (a `base_ref` that does not exist, no git); swell fails
with git's reason, since a guard that cannot look has not passed. In a directory
workspace HEAD is swell's empty base commit: use it on worktree workspaces.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from swell.contracts.base import ContractContext, ContractResult, ContractType
from swell.contracts.git_changes import matches, patterns_for_tests, regex_problem
from swell.contracts.test_diff import TestDiffSettings, pattern_problems
from swell.errors import Problem, SwellError
from swell.manifest.lint_context import LintScope

Git = Callable[..., str]


class TestCountBaselineSettings(TestDiffSettings):
    __test__ = False

    base_ref: str = "HEAD~1"


def _commit(git: Git, ref: str) -> str:
    """The commit `ref` names (never read as an option); SwellError if none."""
    if not ref.strip() or ref.startswith("-"):
        raise ValueError(f"base_ref {ref!r} is not a git ref")
    try:
        return git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").strip()
    except SwellError:
        raise ValueError(f"{ref!r} names no commit in the step's workspace") from None


def _count(
    git: Git, commit: str, globs: list[str], declaration: re.Pattern[str], seen: dict[str, int]
) -> tuple[int, int]:
    """Test declarations and test files in `commit`; `seen` caches counts by blob."""
    total = files = 0
    for entry in git("ls-tree", "-r", "-z", commit).split("\0"):
        meta, _, path = entry.partition("\t")
        parts = meta.split()
        if len(parts) != 3 or parts[1] != "blob" or not matches(path, globs):
            continue
        blob = parts[2]
        if blob not in seen:
            try:
                text = git("cat-file", "blob", blob)
                # one declaration per line, as test_diff reads them (`^` is a line's start)
                seen[blob] = sum(1 for line in text.splitlines() if declaration.search(line))
            except UnicodeDecodeError:  # not text: it declares no test
                seen[blob] = 0
        total += seen[blob]
        files += 1
    return total, files


class TestCountBaseline(ContractType[TestCountBaselineSettings]):
    __test__ = False

    name = "test_count_baseline"
    Settings = TestCountBaselineSettings

    def problems(self, settings: TestCountBaselineSettings, scope: LintScope) -> list[Problem]:
        found = pattern_problems(settings.test_file_pattern, settings.test_func_pattern, scope)
        if not settings.base_ref.strip() or settings.base_ref.startswith("-"):
            found.append(scope.problem(("base_ref",), f"{settings.base_ref!r} is not a git ref"))
        return found

    async def check(self, ctx: ContractContext[TestCountBaselineSettings]) -> ContractResult:
        settings = ctx.settings
        globs, func = patterns_for_tests(
            settings.test_file_pattern, settings.test_func_pattern, ctx.namespace
        )
        if ctx.git is None:
            return ContractResult(passed=False, error="test_count_baseline: no git workspace")
        try:
            declaration = re.compile(func)
            head = _commit(ctx.git, "HEAD")
            base = _commit(ctx.git, settings.base_ref)
            seen: dict[str, int] = {}
            head_count, head_files = _count(ctx.git, head, globs, declaration, seen)
            base_count, base_files = _count(ctx.git, base, globs, declaration, seen)
        except re.error as exc:
            return ContractResult(
                passed=False, error=f"test_count_baseline: {regex_problem(func) or exc}"
            )
        except (ValueError, SwellError) as exc:  # UnicodeDecodeError is a ValueError
            return ContractResult(passed=False, error=f"test_count_baseline: {exc}")
        net = base_count - head_count
        details = {
            "head": head,
            "base_ref": settings.base_ref,
            "base": base,
            "head_count": head_count,
            "base_count": base_count,
            "head_files": head_files,
            "base_files": base_files,
            "max_test_deletions": settings.max_test_deletions,
        }
        if net <= settings.max_test_deletions:
            return ContractResult(passed=True, details=details)
        return ContractResult(
            passed=False,
            error=(
                f"test_count_baseline: HEAD has {head_count} test declaration(s), "
                f"{settings.base_ref} had {base_count} (net {net} deleted; at most "
                f"{settings.max_test_deletions} allowed); replace removed tests instead of "
                "deleting them across commits"
            ),
            details=details,
        )


TYPE = TestCountBaseline()
