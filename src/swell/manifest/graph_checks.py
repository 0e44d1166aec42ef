"""Graph checks of a pipeline: where it starts, what can be reached, loops that can be left."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet

from swell.errors import Problem
from swell.manifest.lint_context import StepRules
from swell.manifest.loader import LoadedPipeline
from swell.manifest.models import Step

ENDS = ("_complete", "_fail")  # edge targets that end the run
# a step's kind, as the graph sees it (the step kinds registry answers this)
KindOf = Callable[[Step], StepRules]


def routes(step: Step, kind_of: KindOf) -> bool:
    """True when edges (not dependents) decide what runs after this step."""
    return bool(step.edges) or kind_of(step).inherits_outcome


def edge_targets(steps: list[Step], kind_of: KindOf) -> set[str]:
    """Steps an edge or a gate's choice leads to."""
    targets = {e.target for s in steps for e in s.edges}
    return targets | {t for s in steps for t in kind_of(s).choice_targets(s) if t}


def successors(
    step: Step,
    dependents: dict[str, list[str]],
    kind_of: KindOf,
    by_edge: AbstractSet[str] = frozenset(),
) -> list[str]:
    """What may run after `step`: its edge and choice targets, and its dependents (for a
    step that routes, those no edge leads to (not in `by_edge`): Wave's walker runs such
    a dependency-gated step once its dependencies are done, whatever the edges say)."""
    targets = [e.target for e in step.edges]
    targets += [t for t in kind_of(step).choice_targets(step) if t]
    if not routes(step, kind_of):
        targets += dependents.get(step.id, [])
    elif any(e.target not in ENDS for e in step.edges) or all(e.condition for e in step.edges):
        # ... when the step can route anywhere but the run's end (engine/loop/graph.py)
        targets += [d for d in dependents.get(step.id, []) if d not in by_edge]
    return targets


def entry_steps(steps: list[Step], kind_of: KindOf) -> list[str]:
    """Steps that start a run: the first step (if it has no dependencies), and every
    other step without dependencies that no edge leads to. rework_only steps never
    start on their own."""
    targets = edge_targets(steps, kind_of)
    first = next((s.id for s in steps if not s.rework_only), None)
    return [
        s.id
        for s in steps
        if not s.rework_only and not s.dependencies and (s.id == first or s.id not in targets)
    ]


def sccs(nodes: list[str], succ: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components (iterative), in O(nodes + arrows)."""
    # each node's successors are filtered once, not at every arrow the walk follows
    # (which made a step with n dependents cost n²)
    known: dict[str, list[str]] = {}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            nexts = known.get(node)
            if nexts is None:
                nexts = known[node] = [n for n in succ.get(node, []) if n in succ]
            if i < len(nexts):
                work.append((node, i + 1))
                nxt = nexts[i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                out.append(comp)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return out


def check_graph(
    loaded: LoadedPipeline, dependents: dict[str, list[str]], kind_of: KindOf
) -> list[Problem]:
    """Dependency cycles, no entry step, unreachable steps, loops nothing can leave."""
    problems: list[Problem] = []
    src, add = loaded.source, problems.append
    steps = loaded.pipeline.steps
    index = {s.id: i for i, s in enumerate(steps)}
    by_id = {s.id: s for s in steps}

    # dependencies alone must be acyclic, or a step waits for itself forever
    dep_succ = {s.id: list(dependents.get(s.id, [])) for s in steps}
    for comp in sccs([s.id for s in steps], dep_succ):
        if len(comp) > 1:
            cycle = " -> ".join(sorted(comp, key=index.__getitem__))
            add(
                src.problem(("steps", index[comp[0]], "dependencies"), f"dependency cycle: {cycle}")
            )
    if problems:
        return problems

    entries = entry_steps(steps, kind_of)
    if not entries:
        add(
            src.problem(
                ("steps",), "no step can start: every step has dependencies or is rework_only"
            )
        )
        return problems
    by_edge = edge_targets(steps, kind_of)
    succ = {
        s.id: [t for t in successors(s, dependents, kind_of, by_edge) if t in by_id] for s in steps
    }
    seen, todo = set(entries), list(entries)
    while todo:
        for nxt in succ[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    for step in steps:
        if step.id not in seen and not step.rework_only:
            add(
                src.problem(
                    ("steps", index[step.id], "id"), f"step '{step.id}' can never be reached"
                )
            )

    for comp in sccs([s.id for s in steps], succ):
        members = set(comp)
        if len(comp) == 1 and comp[0] not in succ[comp[0]]:
            continue
        if not any(_can_leave(by_id[m], members, dependents, kind_of, by_edge) for m in comp):
            order = sorted(comp, key=index.__getitem__)
            add(
                src.problem(
                    ("steps", index[order[0]]),
                    "loop "
                    + " -> ".join([*order, order[0]])
                    + " can never be left: add a conditional edge out of it or to _complete",
                )
            )
    return problems


def _can_leave(
    step: Step,
    members: set[str],
    dependents: dict[str, list[str]],
    kind_of: KindOf,
    by_edge: AbstractSet[str],
) -> bool:
    targets: Iterable[str] = successors(step, dependents, kind_of, by_edge)
    if any(t not in members for t in targets):
        return True
    routed = routes(step, kind_of)
    if routed and all(e.condition for e in step.edges):
        return True  # when no condition holds the branch ends
    if None in kind_of(step).choice_targets(step):
        return True
    return bool(not routed and not dependents.get(step.id))
