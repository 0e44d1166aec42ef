"""Step kinds, one module each, registered by their `type`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from swell.engine.context import StepResult, VisitContext

StepRunner = Callable[[VisitContext], Awaitable[StepResult]]


@dataclass
class StepKinds:
    """Registry of step kinds; `swell validate` rejects any type not in it."""

    runners: dict[str, StepRunner] = field(default_factory=dict)

    def register(self, name: str, runner: StepRunner) -> None:
        self.runners[name] = runner

    def names(self) -> set[str]:
        return set(self.runners)

    def get(self, name: str) -> StepRunner:
        return self.runners[name]


def default_step_kinds() -> StepKinds:
    from swell.engine.steps import command, conditional, gate, pipeline, prompt

    kinds = StepKinds()
    kinds.register("prompt", prompt.run)
    kinds.register("command", command.run)
    kinds.register("conditional", conditional.run)
    kinds.register("gate", gate.run)
    kinds.register("pipeline", pipeline.run)
    return kinds
