"""Step kinds by `type`; `swell validate` rejects any type not in the registry."""

from __future__ import annotations

from swell.engine.steps.base import StepKind
from swell.manifest.models import Step
from swell.registry import Registry, builtin_entry_points

GROUP = "swell.step_kinds"
# swell's own kinds: entry points of the group plugins use (swell/registry.py), each
# imported on first use: a run of command steps never loads the adapter machinery,
# which keeps `swell run` quick to start
BUILTIN = {
    "prompt": "swell.engine.steps.prompt:KIND",
    "command": "swell.engine.steps.command:KIND",
    "conditional": "swell.engine.steps.conditional:KIND",
    "gate": "swell.engine.steps.gate:KIND",
    "pipeline": "swell.engine.steps.pipeline:KIND",
    "iterate": "swell.engine.steps.iterate:KIND",
    "aggregate": "swell.engine.steps.aggregate:KIND",
    "branch": "swell.engine.steps.branch:KIND",
    "loop": "swell.engine.steps.loop:KIND",
    "concurrency": "swell.engine.steps.concurrency:KIND",
    "matrix": "swell.engine.steps.matrix:KIND",
}


class StepKinds(Registry[StepKind]):
    def __init__(self) -> None:
        super().__init__("step type", GROUP)

    def of(self, step: Step) -> StepKind:
        return self.get(step.kind)


def default_step_kinds() -> StepKinds:
    """Built-in kinds plus any installed through entry points."""
    kinds = StepKinds()
    kinds.add_entry_points(builtin_entry_points(GROUP, BUILTIN))
    return kinds
