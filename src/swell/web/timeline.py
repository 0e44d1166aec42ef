"""A run's timeline (Gantt) as SVG: one lane per step, one bar per visit from its start
to its end (to now while it runs, a gate's bar while it waits), so steps that ran in
parallel sit side by side. Retries and reworks are outlined, a gate's waiting is
shaded. SVG because the pages' Content-Security-Policy allows no inline styles: bar
positions are attributes. A sub-pipeline's or a fan-out's child runs have lanes of
their own under their group's lane (`↳` and the run's id), holding their visits."""

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
CHILD_LANES = 12  # child runs drawn (the first started); each run's page has the rest
CHILD_BARS = 100  # visits of a child run drawn (its newest)
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
    child: str = ""  # the child run the visit is of ("": the run's own)
    group: str = ""  # ... and the step of the run that started that child

    @property
    def lane(self) -> str:
        return f"{self.group}\0{self.child}" if self.child else self.step_id


def bars(
    visits: list[VisitRow],
    marks: dict[tuple[str, int], str],
    at: datetime | None = None,
    child: str = "",
    group: str = "",
) -> list[Bar]:
    """The visits that started, as bars; one still going ends at `at` (now); `child`
    and `group`: the visits are a child run's, started by the step `group`."""
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
                child,
                group,
            )
        )
    return out


@dataclass(frozen=True)
class _Lane:
    y: int
    attr: str  # the step id as a quoted attribute value (and the child run's)
    text: str  # ... as escaped text
    href: str  # the link to its visits, without the visit number


@dataclass(frozen=True)
class Sketch:
    """What a timeline draws that does not move with the clock: its lanes and its
    finished bars, in time units (ms from the first start), kept until the run has a
    new event. Only the bars still going, the axis and the scale are drawn per request
    (`draw`); a page's script grows running bars from their `data-start` between two."""

    run_id: str
    order: list[str]
    t0: datetime
    last_end: datetime  # the latest end among finished bars
    finished: str  # the finished bars' markup
    running: list[Bar]
    lanes: dict[tuple[str, str], _Lane]

    def draw(self, at: datetime | None = None) -> str:
        at = at or now()
        ends = [self.last_end, *(max(at, b.start) for b in self.running)]
        span_ms = max(int((max(ends) - self.t0).total_seconds() * 1000), 1)
        width = LABEL_W + CHART_W + PAD * 6  # room for the last tick label
        height = AXIS_H + len(self.order) * LANE_H + PAD
        parts = [
            f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline-svg" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}" role="group" aria-label="Timeline">',
        ]
        parts += _axis(span_ms / 1000, height)
        for i, name in enumerate(self.order):
            parts.append(_lane_row(name, AXIS_H + i * LANE_H, width))
        # bars in ms across, px down: a new scale is one attribute (the chart's viewBox)
        parts.append(
            f'<svg class="timeline-bars" x="{LABEL_W + PAD}" y="0" width="{CHART_W}" height="{height}" '
            f'viewBox="0 0 {span_ms} {height}" preserveAspectRatio="none" '
            f'data-t0="{_epoch_ms(self.t0)}" data-span="{span_ms}">'
        )
        parts.append(self.finished)
        least = span_ms * 2 / CHART_W  # a bar is 2 px wide at least
        parts += [
            _bar(b, self.t0, self.lanes[(b.lane, b.step_id)], at, least) for b in self.running
        ]
        parts.append("</svg></svg>")
        return "\n".join(parts)


def sketch(run_id: str, bars: list[Bar], lanes: list[str]) -> Sketch | None:
    """The timeline's clock-free part; `lanes` gives the steps' order (others follow as
    they appear). None when no visit has started."""
    if not bars:
        return None
    order = _lanes(bars, lanes)
    row = {s: i for i, s in enumerate(order)}
    t0 = min(b.start for b in bars)
    done = [b for b in bars if not b.running]
    last_end = max((b.end for b in done), default=t0)
    span_ms = max((last_end - t0).total_seconds() * 1000, 1.0)
    # what every bar of a lane shares, escaped and quoted once per lane and step
    shared: dict[tuple[str, str], _Lane] = {}
    for b in bars:
        if (b.lane, b.step_id) not in shared:
            href = f"/runs/{path_part(b.child or run_id)}/visits/{path_part(b.step_id)}"
            attr = quoteattr(b.step_id) + (
                f" data-child-run={quoteattr(b.child)}" if b.child else ""
            )
            y = AXIS_H + row[b.lane] * LANE_H
            shared[(b.lane, b.step_id)] = _Lane(y, attr, escape(b.step_id), href)
    least = span_ms * 2 / CHART_W  # 2 px at the scale of the finished bars
    finished = "\n".join(_bar(b, t0, shared[(b.lane, b.step_id)], t0, least) for b in done)
    running = [b for b in bars if b.running]
    return Sketch(run_id, order, t0, last_end, finished, running, shared)


def render(run_id: str, bars: list[Bar], lanes: list[str], at: datetime | None = None) -> str:
    """The timeline SVG; `lanes` gives the steps' order (others follow as they appear)."""
    drawn = sketch(run_id, bars, lanes)
    return drawn.draw(at) if drawn else ""


def _epoch_ms(at: datetime) -> int:
    return int(at.timestamp() * 1000)


def _lanes(bars: list[Bar], lanes: list[str]) -> list[str]:
    """The lanes in order: the steps' (`lanes` first), each child run's lane right
    after its group's (or last when its group has none)."""
    seen = sorted(bars, key=lambda b: b.start)
    used = {b.lane for b in bars}
    order = [s for s in dict.fromkeys([*lanes, *(b.step_id for b in seen)]) if s in used]
    for b in seen:
        if b.child and b.lane not in order:
            mine = [i for i, s in enumerate(order) if s.split("\0")[0] == b.group]
            order.insert(max(mine, default=len(order) - 1) + 1, b.lane)
    return order


def _lane_row(name: str, y: int, width: int) -> str:
    """A lane's background and name: a step's, or `↳ run` for a child run's."""
    group, _, child = name.partition("\0")
    label = f"↳ {child[-8:]}" if child else (name if len(name) <= 20 else name[:19] + "…")
    key = f" data-key={quoteattr('lane:' + group + ':' + child)}" if child else ""
    return (
        f'<g class="lane{" child" if child else ""}" data-step={quoteattr(group)}{key}>'
        f'<rect class="lane-bg" x="0" y="{y}" width="{width}" height="{LANE_H}" fill="none"/>'
        f'<text class="lane-name" x="{PAD}" y="{y + LANE_H - 7}" font-size="11">'
        f"{escape(label)}</text></g>"
    )


def _axis(span: float, height: int) -> list[str]:
    out = []
    for k in range(TICKS + 1):
        x = LABEL_W + PAD + CHART_W * k / TICKS
        label = "0" if k == 0 else "+" + ms(int(span * 1000 * k / TICKS))
        out.append(
            f'<line class="tick" x1="{x:.1f}" y1="{AXIS_H - 4}" x2="{x:.1f}" y2="{height - PAD}" '
            f'stroke="#dde1e7"/><text class="tick-label" x="{x:.1f}" y="{AXIS_H - 8}" '
            f'font-size="10" text-anchor="middle" data-k="{k}">{escape(label)}</text>'
        )
    return out


def _bar(b: Bar, t0: datetime, lane: _Lane, at: datetime, least: float) -> str:
    """A bar in ms from `t0`; one still going ends at `at` and carries its start, so a
    page's script grows it (`data-start`, ms since the epoch)."""
    end = max(at, b.start) if b.running else b.end
    seconds = (end - b.start).total_seconds()
    x = (b.start - t0).total_seconds() * 1000
    w = max(seconds * 1000, least)
    took = int(seconds * 1000)
    waiting = b.kind in WAITING
    cls = f"bar k-{b.kind} s-{b.status}" + (" running" if b.running else "")
    cls += (" wait" if waiting else "") + (f" {b.mark}" if b.mark else "")
    what = "waited" if waiting else "took"
    tail = ", so far" if b.running else ""
    title = f"{lane.text} #{b.visit}: {b.status}, {what} {ms(took)}{tail}" + (
        f" ({b.mark})" if b.mark else ""
    )
    fill = "#b45309" if waiting else "#0f766e"
    since = f' data-start="{_epoch_ms(b.start)}"' if b.running else ""
    # status, kind and mark are closed vocabularies: nothing in them needs escaping; a
    # retry or rework is outlined (the stylesheet), as a flag would stretch with the scale
    return (
        f'<a href="{lane.href}/{b.visit}" data-step={lane.attr} data-visit="{b.visit}" '
        f'data-ms="{took}"><rect class="{cls}" x="{x:.1f}" y="{lane.y + (LANE_H - BAR_H) / 2:.1f}" '
        f'width="{w:.1f}" height="{BAR_H}" fill="{fill}"{since}><title>{title}</title>'
        f"</rect></a>"
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
    drawn, own, total = prepare(store, pages, run_id, marks, most, lanes, read)
    return (drawn.draw() if drawn else ""), own, total


def prepare(
    store: Store,
    pages: PageReader,
    run_id: str,
    marks: dict[tuple[str, int], str],
    most: int = MAX_BARS,
    lanes: list[str] | None = None,
    read: VisitPage | None = None,
) -> tuple[Sketch | None, int, int]:
    """`for_run`'s reads and clock-free drawing, to keep until the run's next event."""
    found = read or pages.visits_page(run_id, 0, most)
    if lanes is None:
        lanes = [s.step_id for s in store.steps(run_id)]
    at = now()
    drawn = bars(found.visits, marks, at)
    own = len(drawn)  # the run's own visits drawn (its page says how many of how many)
    for child in store.children(run_id)[:CHILD_LANES]:
        visits = pages.visits_page(child.id, 0, CHILD_BARS).visits
        drawn += bars(visits, {}, at, child.id, child.parent_step_id or "")
    return sketch(run_id, drawn, lanes), own, found.total
