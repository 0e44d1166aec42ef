"""A run's timeline (Gantt) as SVG: one lane per step, one bar per visit from its start
to its end (to now while it runs, a gate's bar while it waits), so steps that ran in
parallel sit side by side. Retries and reworks are marked, a gate's waiting is
hatched. SVG because the pages' Content-Security-Policy allows no inline styles: bar
positions are attributes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from xml.sax.saxutils import escape, quoteattr

from swell.store.pages import PageReader, VisitPage
from swell.store.protocols import Store
from swell.store.rows import VisitRow
from swell.web.text import path_part
from swell.web.timefmt import ms, now, parse

LABEL_W, CHART_W, LANE_H, BAR_H, AXIS_H, PAD = 150, 930, 22, 14, 22, 8
MAX_BARS = 1000  # the newest visits drawn; a bigger run's page says how many it left out
TICKS = 6
BAR_KINDS = {"gate": "gate", "prompt": "agent"}  # the bar's colour by the visit's kind
WAITING = frozenset({"gate"})  # a bar that is a wait, not work


@dataclass(frozen=True)
class Bar:
    step_id: str
    visit: int
    kind: str
    status: str
    start: datetime
    end: datetime
    running: bool
    mark: str  # "", "retry" or "rework"


def bars(
    visits: list[VisitRow], marks: dict[tuple[str, int], str], at: datetime | None = None
) -> list[Bar]:
    """The visits that started, as bars; one still going ends at `at` (now)."""
    at = at or now()
    out: list[Bar] = []
    for v in visits:
        start = parse(v.started_at)
        if start is None:
            continue
        end = parse(v.finished_at)
        running = end is None and v.status in ("running", "waiting")
        if end is None:
            end = at if running else start
        kind = BAR_KINDS.get(v.kind or "", "command")
        out.append(
            Bar(
                v.step_id,
                v.visit,
                kind,
                v.status,
                start,
                max(end, start),
                running,
                marks.get((v.step_id, v.visit), ""),
            )
        )
    return out


def render(run_id: str, bars: list[Bar], lanes: list[str]) -> str:
    """The timeline SVG; `lanes` gives the steps' order (others follow as they appear)."""
    if not bars:
        return ""
    order = list(dict.fromkeys([*lanes, *(b.step_id for b in sorted(bars, key=lambda b: b.start))]))
    order = [s for s in order if any(b.step_id == s for b in bars)]
    row = {s: i for i, s in enumerate(order)}
    t0 = min(b.start for b in bars)
    span = max((max(b.end for b in bars) - t0).total_seconds(), 0.001)
    scale = CHART_W / span
    width = LABEL_W + CHART_W + PAD * 6  # room for the last tick label
    height = AXIS_H + len(order) * LANE_H + PAD
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline-svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="group" aria-label="Timeline">',
        '<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><rect width="3" height="6" fill="#b45309"/></pattern></defs>',
    ]
    parts += _axis(span, height)
    for step, i in row.items():
        y = AXIS_H + i * LANE_H
        parts.append(
            f'<g class="lane" data-step={quoteattr(step)}>'
            f'<rect class="lane-bg" x="0" y="{y}" width="{width}" height="{LANE_H}" fill="none"/>'
            f'<text class="lane-name" x="{PAD}" y="{y + LANE_H - 7}" font-size="11">'
            f"{escape(step if len(step) <= 20 else step[:19] + '…')}</text></g>"
        )
    for b in bars:
        parts.append(_bar(run_id, b, t0, scale, AXIS_H + row[b.step_id] * LANE_H))
    parts.append("</svg>")
    return "\n".join(parts)


def _axis(span: float, height: int) -> list[str]:
    out = []
    for k in range(TICKS + 1):
        x = LABEL_W + PAD + CHART_W * k / TICKS
        label = "0" if k == 0 else "+" + ms(int(span * 1000 * k / TICKS))
        out.append(
            f'<line class="tick" x1="{x:.1f}" y1="{AXIS_H - 4}" x2="{x:.1f}" y2="{height - PAD}" '
            f'stroke="#dde1e7"/><text class="tick-label" x="{x:.1f}" y="{AXIS_H - 8}" '
            f'font-size="10" text-anchor="middle">{escape(label)}</text>'
        )
    return out


def _bar(run_id: str, b: Bar, t0: datetime, scale: float, y: int) -> str:
    x = LABEL_W + PAD + (b.start - t0).total_seconds() * scale
    w = max((b.end - b.start).total_seconds() * scale, 2.0)
    took = int((b.end - b.start).total_seconds() * 1000)
    waiting = b.kind in WAITING
    cls = f"bar k-{b.kind} s-{b.status}" + (" running" if b.running else "")
    cls += (" wait" if waiting else "") + (f" {b.mark}" if b.mark else "")
    what = "waited" if waiting else "took"
    tail = ", so far" if b.running else ""
    title = f"{b.step_id} #{b.visit}: {b.status}, {what} {ms(took)}{tail}" + (
        f" ({b.mark})" if b.mark else ""
    )
    fill = "url(#hatch)" if waiting else "#0f766e"
    href = f"/runs/{path_part(run_id)}/visits/{path_part(b.step_id)}/{b.visit}"
    mark = ""
    if b.mark:  # a small flag at the bar's start
        mark = f'<path class="flag {b.mark}" d="M{x:.1f},{y + 2} l6,0 l-3,4 z" fill="#8a5a00"/>'
    return (
        f'<a href={quoteattr(href)} data-step={quoteattr(b.step_id)} data-visit="{b.visit}" '
        f'data-ms="{took}"><rect class={quoteattr(cls)} x="{x:.1f}" y="{y + (LANE_H - BAR_H) / 2:.1f}" '
        f'width="{w:.1f}" height="{BAR_H}" rx="3" fill="{fill}"><title>{escape(title)}</title>'
        f"</rect>{mark}</a>"
    )


def for_run(
    store: Store,
    pages: PageReader,
    run_id: str,
    marks: dict[tuple[str, int], str],
    most: int = MAX_BARS,
    lanes: list[str] | None = None,
    read: VisitPage | None = None,
) -> tuple[str, int, int]:
    """The run's timeline SVG, the visits drawn and the visits there are (the newest
    `most` are drawn: a page read, however long the run); `marks` flags retries and
    reworks (web/run_facts.py)."""
    found = read or pages.visits_page(run_id, 0, most)
    if lanes is None:
        lanes = [s.step_id for s in store.steps(run_id)]
    drawn = bars(found.visits, marks)
    return render(run_id, drawn, lanes), len(drawn), found.total
