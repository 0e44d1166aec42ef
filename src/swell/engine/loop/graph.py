"""The pipeline graph as data, and `next_steps`: what runs after a visit. No I/O.

Routing rules (docs/engine.md):
- A step with `edges` (or `type: conditional`) routes: the first edge whose condition
  holds wins; `_complete` ends the run successfully, `_fail` fails it. When no edge
  holds, a failed visit fails the run and a successful one ends its branch.
- A step without edges activates its dependents when it succeeds. When it fails, the
  failure is handled only by a `conditional` step that depends on it (which routes on
  the outcome it inherits); otherwise the run fails. `optional: true` steps count as
  done even when they fail.
- A dependent is activated once all of its dependencies have finished at least once.
  A dependent of a routing step that no edge leads to is activated too, with the edge's
  target, the first time its dependencies are all done (as Wave's walker runs it).
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass, field

from swell.events.models import ActivationReason, Outcome
from swell.manifest.conditions import parse_condition
from swell.manifest.graph_checks import KindOf, edge_targets, entry_steps, routes
from swell.manifest.models import Pipeline, Step

COMPLETE = "_complete"
FAIL = "_fail"


@dataclass(frozen=True)
class Activation:
    step_id: str
    reason: ActivationReason
    source_step: str | None = None
    source_visit: int | None = None


@dataclass(frozen=True)
class VisitOutcome:
    """What routing needs to know about a finished visit."""

    step_id: str
    visit: int
    outcome: Outcome
    error: str | None = None
    optional_failure: bool = False
    choice_target: str | None = None  # a gate choice that names its own target
    choice_key: str | None = None


@dataclass(frozen=True)
class Route:
    target: str
    condition: str | None


@dataclass
class Routing:
    activate: list[Activation] = field(default_factory=list)
    route: Route | None = None
    complete: bool = False
    fail: str | None = None


class Graph:
    """Steps by id, who depends on whom, and where a run starts."""

    def __init__(self, pipeline: Pipeline, kind_of: KindOf) -> None:
        self.pipeline = pipeline
        self.kind_of = kind_of
        self.steps: dict[str, Step] = {s.id: s for s in pipeline.steps}
        self.dependents: dict[str, list[str]] = {s.id: [] for s in pipeline.steps}
        for step in pipeline.steps:
            for dep in step.dependencies:
                self.dependents.setdefault(dep, []).append(step.id)
        self.entries = entry_steps(pipeline.steps, kind_of)
        self.by_edge = edge_targets(pipeline.steps, kind_of)

    def deps_met(self, step_id: str, finished: Set[str]) -> bool:
        return all(dep in finished for dep in self.steps[step_id].dependencies)

    def entry_activations(self) -> list[Activation]:
        return [Activation(step_id, "entry") for step_id in self.entries]

    def next_steps(
        self, done: VisitOutcome, context: Mapping[str, str], finished: Set[str]
    ) -> Routing:
        """Pure routing decision after `done`; `finished` includes `done.step_id`."""
        step = self.steps[done.step_id]
        if done.choice_target:
            return self._to(done.choice_target, f"choice={done.choice_key}", "choice", done)
        if routes(step, self.kind_of):
            gated = self._gated(step, done, finished)
            for edge in step.edges:
                if parse_condition(edge.condition).holds(done.outcome, context):
                    routing = self._to(edge.target, edge.condition, "edge", done)
                    if not routing.complete and not routing.fail:
                        routing.activate += gated
                    return routing
            if done.outcome == "failure":
                return Routing(
                    fail=f"step '{step.id}' failed and no edge matched: {done.error or 'failure'}"
                )
            return Routing(activate=gated)
        dependents = [self.steps[d] for d in self.dependents.get(step.id, [])]
        if done.outcome == "success" or done.optional_failure:
            ready = [d for d in dependents if not d.rework_only and self.deps_met(d.id, finished)]
        else:
            routers = [d for d in dependents if self.kind_of(d).inherits_outcome]
            if not routers:
                return Routing(fail=f"step '{step.id}' failed: {done.error or 'failure'}")
            ready = [d for d in routers if self.deps_met(d.id, finished)]
        return Routing(
            activate=[Activation(d.id, "dependency", done.step_id, done.visit) for d in ready]
        )

    def _gated(self, step: Step, done: VisitOutcome, finished: Set[str]) -> list[Activation]:
        """Dependents of a routing step that no edge leads to, ready for the first time:
        Wave's walker runs such a step once its dependencies are done, before (or
        instead of) the edge's target, so edges never skip it."""
        return [
            Activation(d, "dependency", done.step_id, done.visit)
            for d in self.dependents.get(step.id, [])
            if d not in self.by_edge
            and d not in finished
            and not self.steps[d].rework_only
            and self.deps_met(d, finished)
        ]

    @staticmethod
    def _to(
        target: str, condition: str | None, reason: ActivationReason, done: VisitOutcome
    ) -> Routing:
        route = Route(target, condition)
        if target == COMPLETE:
            return Routing(route=route, complete=True)
        if target == FAIL:
            return Routing(
                route=route, fail=f"routed to _fail ({condition or 'unconditional edge'})"
            )
        return Routing(activate=[Activation(target, reason, done.step_id, done.visit)], route=route)
