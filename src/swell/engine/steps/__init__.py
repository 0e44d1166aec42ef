"""Step kinds, one module each, registered by their `type`."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from importlib import import_module

from swell.engine.context import StepResult, VisitContext

StepRunner = Callable[[VisitContext], Coroutine[object, object, StepResult]]

# built-in kinds are imported on first use: a run of command steps never loads
# the adapter machinery, which keeps `swell run` quick to start
BUILTIN = {
    "prompt": "swell.engine.steps.prompt",
    "command": "swell.engine.steps.command",
    "conditional": "swell.engine.steps.conditional",
    "gate": "swell.engine.steps.gate",
    "pipeline": "swell.engine.steps.pipeline",
}


@dataclass
class StepKinds:
    """Registry of step kinds; `swell validate` rejects any type not in it.

    A kind is a coroutine function `run(VisitContext) -> StepResult`, or the dotted
    name of a module that defines one.
    """

    runners: dict[str, StepRunner | str] = field(default_factory=dict)

    def register(self, name: str, runner: StepRunner | str) -> None:
        self.runners[name] = runner

    def names(self) -> set[str]:
        return set(self.runners)

    def get(self, name: str) -> StepRunner:
        runner = self.runners[name]
        if isinstance(runner, str):
            runner = import_module(runner).run
            self.runners[name] = runner
        return runner


def default_step_kinds() -> StepKinds:
    kinds = StepKinds()
    for name, module in BUILTIN.items():
        kinds.register(name, module)
    return kinds
