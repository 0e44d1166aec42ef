"""The pipeline graph as SVG, drawn on the server: one box per step with its visit
count, the running steps highlighted, arrows for dependencies and edges.

It is drawn from the pipeline copy the run stored when it started
(`RunReader.pipeline_text`), so it shows the pipeline as that run saw it even after
the file changed. Layout: steps in rows by their distance from the entry steps;
edges back to an earlier row (loops) are drawn as curves on the side."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from swell.errors import SwellError

BOX_W, BOX_H, GAP_X, GAP_Y, PAD = 170, 46, 30, 44, 20
COLORS = {
    "running": "#fff3c4",
    "succeeded": "#dff5e1",
    "failed": "#fbdada",
    "interrupted": "#eee",
}


@dataclass
class Graph:
    steps: list[str]
    arrows: list[tuple[str, str, bool]]  # source, target, is an edge (else a dependency)


def graph_of(pipeline_text: str, name: str) -> Graph | None:
    """The stored pipeline's steps and arrows; None when it does not load any more."""
    from swell.manifest.loader import load_stored_pipeline

    try:
        loaded = load_stored_pipeline(Path(f"{name}.yaml"), pipeline_text)
    except (SwellError, ValueError):
        return None
    steps = [s.id for s in loaded.pipeline.steps]
    known = set(steps)
    arrows: list[tuple[str, str, bool]] = []
    for step in loaded.pipeline.steps:
        arrows += [(d, step.id, False) for d in step.dependencies if d in known]
        arrows += [(step.id, e.target, True) for e in step.edges if e.target in known]
    return Graph(steps, arrows)


def _ranks(graph: Graph) -> dict[str, int]:
    """Each step's row: its distance from the entry steps, in O(steps + arrows)."""
    # entry steps: no dependency and no edge leads to them (else the first step)
    targets = {t for _, t, _ in graph.arrows}
    entries = [s for s in graph.steps if s not in targets] or graph.steps[:1]
    out: dict[str, list[str]] = {}
    for src, dst, _ in graph.arrows:
        out.setdefault(src, []).append(dst)
    rank = dict.fromkeys(entries, 0)
    queue = deque(entries)
    while queue:
        step = queue.popleft()
        for dst in out.get(step, ()):
            if dst not in rank:
                rank[dst] = rank[step] + 1
                queue.append(dst)
    last = max(rank.values(), default=-1)
    for step in graph.steps:  # unreachable ones go last
        if step not in rank:
            last += 1
            rank[step] = last
    return rank


def render_svg(graph: Graph, visits: dict[str, int], status: dict[str, str]) -> str:
    rank = _ranks(graph)
    rows: dict[int, list[str]] = {}
    for step in graph.steps:
        rows.setdefault(rank[step], []).append(step)
    width = PAD * 2 + max(len(r) for r in rows.values()) * (BOX_W + GAP_X) + 60
    height = PAD * 2 + len(rows) * (BOX_H + GAP_Y)
    pos: dict[str, tuple[int, int]] = {}
    for r, steps in sorted(rows.items()):
        for i, step in enumerate(steps):
            pos[step] = (PAD + i * (BOX_W + GAP_X), PAD + r * (BOX_H + GAP_Y))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="graph" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>',
    ]
    parts += [_arrow(pos[s], pos[t], is_edge, rank[t] <= rank[s]) for s, t, is_edge in graph.arrows]
    parts += [_box(step, pos[step], visits.get(step, 0), status.get(step)) for step in graph.steps]
    parts.append("</svg>")
    return "\n".join(parts)


def _arrow(a: tuple[int, int], b: tuple[int, int], is_edge: bool, back: bool) -> str:
    dash = ' stroke-dasharray="5,3"' if is_edge else ""
    if back:  # a loop: out of the right side, round, into the right side
        x1, y1 = a[0] + BOX_W, a[1] + BOX_H // 2
        x2, y2 = b[0] + BOX_W, b[1] + BOX_H // 2
        bend = max(x1, x2) + 40
        d = f"M{x1},{y1} C{bend},{y1} {bend},{y2} {x2},{y2}"
    else:
        x1, y1 = a[0] + BOX_W // 2, a[1] + BOX_H
        x2, y2 = b[0] + BOX_W // 2, b[1]
        d = f"M{x1},{y1} L{x2},{y2}"
    return f'<path d="{d}" fill="none" stroke="#555"{dash} marker-end="url(#arrow)"/>'


def _box(step: str, at: tuple[int, int], visits: int, status: str | None) -> str:
    x, y = at
    fill = COLORS.get(status or "", "#fff")
    running = status == "running"
    stroke = ' stroke="#c77c00" stroke-width="3"' if running else ' stroke="#333"'
    label = step if len(step) <= 22 else step[:21] + "…"
    note = f"{visits} visit{'s' if visits != 1 else ''}" + (" · running" if running else "")
    return (
        f'<g class="step{" running" if running else ""}" data-step={quoteattr(step)}>'
        f"<title>{escape(step)}</title>"
        f'<rect x="{x}" y="{y}" width="{BOX_W}" height="{BOX_H}" rx="6" fill="{fill}"{stroke}/>'
        f'<text x="{x + 8}" y="{y + 19}" font-family="sans-serif" font-size="13">{escape(label)}</text>'
        f'<text x="{x + 8}" y="{y + 37}" font-family="sans-serif" font-size="11" '
        f'fill="#555">{escape(note)}</text></g>'
    )
