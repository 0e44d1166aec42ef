"""The run graph as SVG, drawn on the server from the pipeline copy the run stored
when it started (`RunReader.pipeline_text`), so it shows the pipeline as that run saw
it even after the file changed.

Every edge of the pipeline is drawn, each with its kind (`data-kind`): `dependency`,
`edge` (a route without a condition), `condition` (labelled with it), `choice` (a
gate's choice with a target), `branch` (a branch step's case) and `rework` (a
contract's or retry's rework step). Targets `_complete` and `_fail` are end nodes.
A sub-pipeline step and a fan-out (iterate, matrix) are groups that expand inline:
each child run (the first CHIPS) is a row holding its steps, in its pipeline's order,
coloured by their state and linked to their visits. Nodes are shaped and coloured by
kind and state; the edges the run took are highlighted. The layout is
web/graph_layout.py's."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from swell.errors import SwellError
from swell.events.statuses import ENDED_FOR_GOOD
from swell.web.graph_layout import Placed, layout, path_d

BOX_W, BOX_H, END_W, END_H, CHIP_H, CHIPS = 176, 54, 92, 30, 32, 3
STEP_W, STEP_GAP = 12, 3  # a child run's step inside its group
KINDS = {
    "prompt": "agent",
    "command": "command",
    "gate": "gate",
    "conditional": "route",
    "branch": "route",
    "pipeline": "sub",
    "loop": "sub",
    "iterate": "fan",
    "matrix": "fan",
    "concurrency": "fan",
}
KIND_LABEL = {"agent": "agent", "command": "command", "gate": "gate", "route": "route"}
ENDS = {"_complete": "complete", "_fail": "fail"}
GROUPS = frozenset({"sub", "fan"})  # drawn as a frame holding the child runs
FILL = {"succeeded": "#dcf3e3", "failed": "#fde3e1", "running": "#e3eefc", "waiting": "#fff1c7"}


@dataclass(frozen=True)
class Node:
    id: str
    kind: str  # agent, command, gate, route, sub, fan, end
    step_kind: str  # the manifest's (prompt, command, iterate, ...)
    child: str | None = None  # the pipeline a sub or fan node runs


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str
    kind: str  # dependency, edge, condition, choice, branch, rework
    label: str = ""


@dataclass
class Graph:
    nodes: list[Node]
    edges: list[Edge]
    placed: Placed | None = None

    @property
    def steps(self) -> list[str]:
        return [n.id for n in self.nodes if n.kind != "end"]


@dataclass
class RunState:
    """What the run did, drawn over the pipeline."""

    run_id: str = ""
    visits: dict[str, int] = field(default_factory=dict)
    status: dict[str, str] = field(default_factory=dict)  # by step: its last visit's
    waiting: set[str] = field(default_factory=set)  # gates waiting for a decision
    taken: set[tuple[str, str]] = field(default_factory=set)  # routes, choices, reworks
    children: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # step -> runs
    # child run -> its steps in its pipeline's order: (step, status, visits)
    child_steps: dict[str, list[tuple[str, str, int]]] = field(default_factory=dict)
    ended: str | None = None  # `_complete` or `_fail` once the run ended
    forks: dict[str, str] = field(default_factory=dict)  # step -> its fork point's note


def graph_of(pipeline_text: str, name: str) -> Graph | None:
    """The stored pipeline's nodes and edges, laid out; None when it does not load."""
    from swell.manifest.loader import load_stored_pipeline

    try:
        loaded = load_stored_pipeline(Path(f"{name}.yaml"), pipeline_text)
    except (SwellError, ValueError):
        return None
    steps = loaded.pipeline.steps
    known = {s.id for s in steps}
    nodes = [
        Node(s.id, KINDS.get(s.kind, "command"), s.kind, s.pipeline or _strategy_child(s))
        for s in steps
    ]
    edges: list[Edge] = []
    for step in steps:
        edges += [Edge(d, step.id, "dependency") for d in step.dependencies if d in known]
        edges += _routes_of(step, known)
    ends = [t for t in ENDS if any(e.dst == t for e in edges)]
    nodes += [Node(t, "end", ENDS[t]) for t in ends]
    edges = list(dict.fromkeys(edges))  # one arrow per (source, target, kind, label)
    graph = Graph(nodes, edges)
    graph.placed = layout([n.id for n in nodes], {n.id: _size(n) for n in nodes}, _pairs(edges))
    return graph


def _strategy_child(step: object) -> str | None:
    strategy = getattr(step, "strategy", None)
    return getattr(strategy, "child_pipeline", None) if strategy is not None else None


def _routes_of(step: object, known: set[str]) -> list[Edge]:
    """The step's edges other than its dependencies, each kind as Wave defines it."""
    from swell.manifest.models import Step

    assert isinstance(step, Step)
    ok = known | set(ENDS)
    out: list[Edge] = []
    for e in step.edges:
        if e.target in ok:
            kind = "condition" if e.condition else "edge"
            out.append(Edge(step.id, e.target, kind, e.condition or ""))
    if step.gate is not None:
        out += [
            Edge(step.id, c.target, "choice", c.label or c.key)
            for c in step.gate.choices
            if c.target in ok
        ]
    if step.branch is not None:
        out += [
            Edge(step.id, t, "branch", case) for case, t in step.branch.cases.items() if t in ok
        ]
    for target, why in _reworks(step):
        if target in known:
            out.append(Edge(step.id, target, "rework", why))
    return out


def _reworks(step: object) -> list[tuple[str, str]]:
    from swell.manifest.models import Step

    assert isinstance(step, Step)
    found: list[tuple[str, str]] = []
    handover = step.handover
    if handover is not None:
        contracts = ([handover.contract] if handover.contract else []) + handover.contracts
        found += [(c.rework_step, c.type) for c in contracts if c.rework_step]
    if step.retry is not None and step.retry.rework_step:
        found.append((step.retry.rework_step, "retry"))
    return found


def _pairs(edges: list[Edge]) -> list[tuple[str, str]]:
    return [(e.src, e.dst) for e in edges]


def _size(node: Node) -> tuple[int, int]:
    if node.kind == "end":
        return END_W, END_H
    if node.kind in GROUPS:
        return BOX_W, BOX_H + 8 + CHIP_H * CHIPS
    return BOX_W, BOX_H


def render_svg(graph: Graph, state: RunState) -> str:
    placed = graph.placed
    assert placed is not None
    w, h = placed.width, placed.height
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="run-graph" width="{w}" height="{h}" '
        f'viewBox="0 0 {w} {h}" role="group" aria-label="Pipeline graph">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        'fill="#6b7280"/></marker></defs>',
    ]
    taken = _taken(graph, state)
    for i, edge in enumerate(graph.edges):
        parts.append(_edge(edge, placed, i, i in taken))
    for node in graph.nodes:
        parts.append(_node(node, placed, state))
    parts.append("</svg>")
    return "\n".join(parts)


def _taken(graph: Graph, state: RunState) -> set[int]:
    """The edges the run went along: a dependency once both ends ran, a route, choice
    or rework once the run's events say it was taken, an end once the run ended there."""
    out: set[int] = set()
    for i, e in enumerate(graph.edges):
        if e.kind == "dependency":
            hit = bool(state.visits.get(e.src) and state.visits.get(e.dst))
        elif e.dst in ENDS:
            hit = state.ended == e.dst and (e.src, e.dst) in state.taken
        else:
            hit = (e.src, e.dst) in state.taken
        if hit:
            out.add(i)
    return out


def _edge(edge: Edge, placed: Placed, i: int, taken: bool) -> str:
    loop = i in placed.back
    d = path_d(placed.routes[i], loop)
    cls = f"edge k-{edge.kind}" + (" taken" if taken else "") + (" loop" if loop else "")
    dash = {"dependency": "", "edge": "", "rework": ' stroke-dasharray="2,3"'}.get(
        edge.kind, ' stroke-dasharray="6,4"'
    )
    title = f"{edge.src} → {edge.dst} ({edge.kind}{': ' + edge.label if edge.label else ''})"
    out = [
        f"<g class={quoteattr(cls)} data-from={quoteattr(edge.src)} data-to={quoteattr(edge.dst)} "
        f"data-kind={quoteattr(edge.kind)}><title>{escape(title)}</title>",
        f'<path d="{d}" fill="none" stroke="#6b7280"{dash} marker-end="url(#arrow)"/>',
    ]
    if edge.label:
        x, y = placed.label_at[i]
        label = edge.label if len(edge.label) <= 28 else edge.label[:27] + "…"
        out.append(
            f'<text class="bg" x="{x:.1f}" y="{y:.1f}" text-anchor="middle" font-size="10">'
            f"{escape(label)}</text>"
        )
    out.append("</g>")
    return "".join(out)


def _node(node: Node, placed: Placed, state: RunState) -> str:
    x, y = placed.pos[node.id]
    w, h = placed.size[node.id]
    if node.kind == "end":
        return _end(node, x, y, w, h, state)
    visits = state.visits.get(node.id, 0)
    status = "waiting" if node.id in state.waiting else state.status.get(node.id, "")
    box_h = BOX_H
    cls = (
        f"node k-{node.kind}"
        + (f" s-{status}" if status else "")
        + ("" if visits else " unvisited")
    )
    fill = FILL.get(status, "#ffffff")
    shape = _shape(node.kind, x, y, w, box_h, fill)
    label = node.id if len(node.id) <= 22 else node.id[:21] + "…"
    kind = _kind_text(node)
    note = f"{visits} visit{'s' if visits != 1 else ''}" + (f" · {status}" if status else "")
    inner = (
        f'<g class="body">{shape}'
        f'<rect class="bar" x="{x:.1f}" y="{y + 6:.1f}" width="4" height="{box_h - 12}" rx="2"/>'
        f'<text class="kind" x="{x + 14:.1f}" y="{y + 16:.1f}" font-size="10">{escape(kind)}</text>'
        f'<text class="name" x="{x + 14:.1f}" y="{y + 32:.1f}" font-size="13" font-weight="600">'
        f"{escape(label)}</text>"
        f'<text class="note" x="{x + 14:.1f}" y="{y + 47:.1f}" font-size="11">{escape(note)}</text></g>'
    )
    if visits and state.run_id:
        last = state.visits[node.id]
        href = f"/runs/{_q(state.run_id)}/visits/{_q(node.id)}/{last}"
        inner = (
            f"<a href={quoteattr(href)} aria-label={quoteattr(f'{node.id}: {note}')}>{inner}</a>"
        )
    group = _group(node, x, y, w, h, state) if node.kind in GROUPS else ""
    fork = state.forks.get(node.id)
    if fork:  # a fork point (docs/time-travel.md): marked at the box's top right
        inner += (
            f'<text class="fork" x="{x + w - 8:.1f}" y="{y + 16:.1f}" text-anchor="end" '
            f'font-size="11">⑂<title>{escape(fork)}</title></text>'
        )
    return (
        f"<g class={quoteattr(cls + (' fork-point' if fork else ''))} data-step={quoteattr(node.id)} "
        f'data-kind="{node.kind}" data-visits="{visits}" data-box="{_box(x, y, w, h)}"'
        + (f" data-fork={quoteattr(fork)}" if fork else "")
        + f"><title>{escape(node.id)}: "
        f"{escape(node.step_kind)}, {escape(note)}</title>{group}{inner}</g>"
    )


def _kind_text(node: Node) -> str:
    if node.kind == "sub":
        return f"sub-pipeline · {node.child or node.step_kind}"
    if node.kind == "fan":
        return f"{node.step_kind} · {node.child or ''}".rstrip(" ·")
    return node.step_kind if node.kind == "route" else KIND_LABEL.get(node.kind, node.step_kind)


def _shape(shape: str, x: float, y: float, w: float, h: float, fill: str) -> str:
    common = f'class="box" fill="{fill}" stroke="#9aa4b2" stroke-width="1.5"'
    if shape == "gate":  # a hexagon: a stop on the way
        c = 12
        pts = f"{x + c},{y} {x + w - c},{y} {x + w},{y + h / 2} {x + w - c},{y + h} {x + c},{y + h} {x},{y + h / 2}"
        return f'<polygon points="{pts}" {common}/>'
    if shape == "route":  # pointed ends: a decision
        c = 18
        pts = f"{x},{y} {x + w - c},{y} {x + w},{y + h / 2} {x + w - c},{y + h} {x},{y + h}"
        return f'<polygon points="{pts}" {common}/>'
    radius = {"agent": 14, "command": 3}.get(shape, 8)
    return f'<rect x="{x:.1f}" y="{y:.1f}" width="{w}" height="{h}" rx="{radius}" {common}/>'


def _group(node: Node, x: float, y: float, w: float, h: float, state: RunState) -> str:
    """A sub-pipeline or fan-out: a frame under the step holding its child runs."""
    runs = state.children.get(node.id, [])
    out = [
        f'<g class="group"><rect x="{x - 4:.1f}" y="{y - 4:.1f}" width="{w + 8}" height="{h + 8}" rx="10" fill="none" stroke="#1d4ed8" stroke-dasharray="4,3"/>'
    ]
    top = y + BOX_H + 8
    for k, (run_id, status) in enumerate(runs[:CHIPS]):
        cy = top + k * CHIP_H
        more = len(runs) - CHIPS if k == CHIPS - 1 and len(runs) > CHIPS else 0
        text = f"+{more + 1} runs" if more else f"{run_id[-8:]} · {status}"
        href = (
            f"/runs/{_q(run_id)}"
            if not more
            else f"/?q={_q(node.id)}&pipeline={_q(node.child or '')}"
        )
        live = "" if more or status in ENDED_FOR_GOOD else ' data-live="1"'
        out.append(
            f"<a href={quoteattr(href)} data-child-run={quoteattr(run_id)}{live}>"
            f'<text x="{x + 14:.1f}" y="{cy + 12:.1f}" font-size="11">↳ {escape(text)}</text></a>'
        )
        if not more:
            out.append(
                _child_steps(run_id, state.child_steps.get(run_id, []), x + 14, cy + 16, w - 28)
            )
    if not runs:
        out.append(
            f'<text x="{x + 14:.1f}" y="{top + 12:.1f}" font-size="11">no child runs yet</text>'
        )
    out.append("</g>")
    return "".join(out)


def _child_steps(
    run_id: str, steps: list[tuple[str, str, int]], x: float, y: float, room: float
) -> str:
    """A child run's steps as a row of squares in its group: coloured by state, each
    linked to its last visit; what does not fit is counted."""
    fits = max(int((room + STEP_GAP) // (STEP_W + STEP_GAP)), 1)
    shown = steps if len(steps) <= fits else steps[: fits - 1]
    out = [f'<g class="child-steps" data-child-run={quoteattr(run_id)}>']
    for i, (step, status, visits) in enumerate(shown):
        sx = x + i * (STEP_W + STEP_GAP)
        cls = f"child-step s-{status}" if status else "child-step unvisited"
        square = (
            f'<rect class="{cls}" data-child-step={quoteattr(step)} x="{sx:.1f}" y="{y:.1f}" '
            f'width="{STEP_W}" height="{STEP_W}" rx="2" fill="{FILL.get(status, "#ffffff")}" '
            f'stroke="#9aa4b2"><title>{escape(step)}: {escape(status or "not run")}</title></rect>'
        )
        if visits:
            href = f"/runs/{_q(run_id)}/visits/{_q(step)}/{visits}"
            square = f"<a href={quoteattr(href)} aria-label={quoteattr(f'{step}: {status}')}>{square}</a>"
        out.append(square)
    if len(shown) < len(steps):
        sx = x + len(shown) * (STEP_W + STEP_GAP)
        out.append(
            f'<text x="{sx:.1f}" y="{y + 10:.1f}" font-size="10">+{len(steps) - len(shown)}</text>'
        )
    out.append("</g>")
    return "".join(out)


def _end(node: Node, x: float, y: float, w: float, h: float, state: RunState) -> str:
    reached = state.ended == node.id
    cls = f"node k-end{' reached' if reached else ''}"
    text = "complete" if node.id == "_complete" else "fail"
    return (
        f'<g class={quoteattr(cls)} data-step={quoteattr(node.id)} data-kind="end" '
        f'data-visits="0" data-box="{_box(x, y, w, h)}">'
        f"<title>{escape(node.id)}</title>"
        f'<rect class="box" x="{x:.1f}" y="{y:.1f}" width="{w}" height="{h}" rx="{h / 2}" '
        f'fill="#ffffff" stroke="#9aa4b2" stroke-width="1.5"/>'
        f'<text x="{x + w / 2:.1f}" y="{y + h / 2 + 4:.1f}" text-anchor="middle" font-size="12">'
        f"{escape(text)}</text></g>"
    )


def _box(x: float, y: float, w: float, h: float) -> str:
    return f"{x:.0f},{y:.0f},{w:.0f},{h:.0f}"


def _q(value: str) -> str:
    from swell.web.text import path_part

    return path_part(value)
