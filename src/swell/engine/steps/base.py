"""What a step kind is: how its visits run, how lint checks it, how it shows, and the
traits the engine routes by. One subclass per kind, one module each."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

# only named in annotations: `swell validate` imports the kinds for their lint rules,
# and must not pay for the run loop and the event models on the way (start-up)
if TYPE_CHECKING:
    from pydantic import BaseModel

    from swell.engine.loop.graph import Activation
    from swell.engine.loop.state import RunState
    from swell.engine.visit.context import StepResult, VisitContext
    from swell.errors import Problem
    from swell.events.models import Progress
    from swell.manifest.lint_context import LintScope
    from swell.manifest.models import Step
    from swell.manifest.yamldoc import Loc


class StepKind:
    """A step type (`type:` in a pipeline, or inferred from the fields a step sets).

    A new kind is a module with a subclass and one entry point of the `swell.step_kinds`
    group (engine/steps/registry.py's BUILTIN for swell's own, a plugin's metadata for
    a plugin): docs/architecture.md, "Plugins".
    """

    name: ClassVar[str]
    # routes on the outcome of the visit that led to it instead of doing work (a router)
    inherits_outcome: ClassVar[bool] = False
    # its visits are rounds of the run's history (`swell thread`, threads)
    records_round: ClassVar[bool] = True
    # the same failure again and again trips the circuit breaker
    counts_for_breaker: ClassVar[bool] = True
    progress: ClassVar[Progress] = "line"
    # its visits may change the workspace; False (a router, a gate): a visit without
    # handover contracts keeps the workspace's newest checkpoint, nothing is scanned
    changes_workspace: ClassVar[bool] = True
    # what `retry:` does for it: "visit" — a failed visit runs again as a new visit;
    # "own" — the kind tries its own work again (an agent's passing errors, each
    # fan-out item) and the engine runs a visit again only after a failed contract;
    # None — nothing it does can be tried again: `swell validate` refuses `retry:`
    retries: ClassVar[Literal["visit", "own"] | None] = "visit"
    # the step fields the kind adds to a step's own (a plugin's `times: 3`); a step of
    # the kind sets them beside `type:` and reads them with `step.fields(Fields)`;
    # `swell validate` checks them and refuses any the model does not declare
    Fields: ClassVar[type[BaseModel] | None] = None

    async def run(self, ctx: VisitContext) -> StepResult:
        raise NotImplementedError

    def route(self, step: Step, activation: Activation, state: RunState) -> StepResult | None:
        """The visit's result when it is decided from the run's state alone (no workspace,
        process, agent or file), else None. The runner takes such a result at once,
        without a task, and commits its events with the next visit's start: a router in
        a loop of short steps would otherwise cost a transaction and a task per round."""
        return None

    def detail(self, step: Step) -> str | None:
        """One line for people saying what a visit does (the command, the sub-pipeline)."""
        return None

    def problems(self, scope: LintScope) -> list[Problem]:
        """What `swell validate` reports about a step of this kind."""
        return []

    def choice_targets(self, step: Step) -> list[str | None]:
        """Steps a visit may route to by choice (a gate's choices); None: on as usual."""
        return []

    def script_fields(self, step: Step) -> list[Loc]:
        """The step's fields that are shell scripts, checked at validate so no value can
        become code (docs/security.md)."""
        return []
