"""`type: min_words`: a contract type from a plugin. The file at `source` (in the
workspace) holds at least `min` words."""

from __future__ import annotations

from swell.api import (
    ContractContext,
    ContractResult,
    ContractSettings,
    ContractType,
    LintScope,
    PathEscape,
    Problem,
    inside,
)


class MinWordsSettings(ContractSettings):
    source: str
    min: int = 1


class MinWords(ContractType[MinWordsSettings]):
    name = "min_words"
    Settings = MinWordsSettings

    def problems(self, settings: MinWordsSettings, scope: LintScope) -> list[Problem]:
        if settings.min >= 1:
            return []
        return [scope.problem(("min",), "min must be at least 1")]

    async def check(self, ctx: ContractContext[MinWordsSettings]) -> ContractResult:
        try:
            path = inside(ctx.workspace, ctx.render(ctx.settings.source))
        except PathEscape as exc:
            return ContractResult(passed=False, error=str(exc))
        words = len(path.read_text().split()) if path.is_file() else 0
        if words >= ctx.settings.min:
            return ContractResult(passed=True)
        return ContractResult(
            passed=False,
            error=f"{ctx.settings.source} has {words} words, fewer than {ctx.settings.min}",
        )


TYPE = MinWords()
