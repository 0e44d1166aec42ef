"""`type: command`: a shell script, no tokens. Outcome is exit code 0.

Scripts run with `sh`, as Wave runs them, or with bash when they use a bash feature
(`set -o pipefail`, `<( )`, ...) that dash, `sh` on Debian and Ubuntu, rejects
(workspace/shell.py). A script that needs bash where there is none fails before it
runs, naming the feature (docs/engine.md, "Command steps")."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from swell.engine.steps.base import StepKind

# only named in annotations: `swell validate` imports this module for the kind's lint
# rules and must not pay for the visit machinery (asyncio, the event models) to start;
# a visit imports it from command_visit.py
if TYPE_CHECKING:
    from swell.engine.visit.context import StepResult, VisitContext
    from swell.errors import Problem
    from swell.manifest.lint_context import LintScope
    from swell.manifest.models import Step
    from swell.manifest.yamldoc import Loc


@functools.lru_cache(maxsize=256)
def _first_line(script: str) -> str | None:
    """What progress shows of a script (asked at every visit: cached per script)."""
    text = script.strip()
    return text.splitlines()[0][:200] if text else None


def script_of(step: Step) -> str:
    """`script`, or Wave's `exec: {type: command, source}`."""
    if step.script is not None:
        return step.script
    return (step.exec.source if step.exec else None) or ""


class Command(StepKind):
    name = "command"

    def detail(self, step: Step) -> str | None:
        return _first_line(script_of(step))

    def script_fields(self, step: Step) -> list[Loc]:
        return [("script",)] if step.script is not None else [("exec", "source")]

    def problems(self, scope: LintScope) -> list[Problem]:
        if script_of(scope.step):
            return []
        return [
            scope.problem((), f"command step '{scope.step.id}' needs a `script` (or exec.source)")
        ]

    async def run(self, ctx: VisitContext) -> StepResult:
        # imported at the first visit (then a lookup in sys.modules): see above
        from swell.engine.steps.command_visit import run_script

        return await run_script(ctx, script_of(ctx.step))


KIND = Command()
