"""What `swell logs` and `swell artifacts` print: a run's events (filtered, tailed,
followed) and its artifact files (listed, exported)."""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from swell.cli.common import print_json
from swell.cli.pick import run_or_newest
from swell.ops.logs import LogFilter, keep

if TYPE_CHECKING:
    from swell.events.models import BaseEvent
    from swell.events.views import EventView
    from swell.store.protocols import RunReader
    from swell.store.rows import ArtifactRow

OUTPUT_LINES = 40  # of a visit's output shown with --step
PAGE = 1000  # events read from the store at a time (a run may have millions)


class _Render:
    """Events as `swell logs` prints them: text lines with times, or NDJSON."""

    def __init__(self, run_id: str, json: bool, step: str | None) -> None:
        from swell.cli.render import ProgressPrinter

        self.printer = ProgressPrinter(root_run=run_id)
        self.json, self.step = json, step

    def __call__(self, raw: str, event: BaseEvent | EventView, keep: bool) -> str | None:
        line = None if self.json else self.printer.line(event)  # keeps the printer's state
        if not keep:
            return None
        if self.json:
            return raw
        if line is None:
            return None
        text = f"{event.ts[11:19]} {line}"
        output_tail = getattr(event, "output_tail", None)  # a step.finished's
        if self.step and getattr(event, "type", "") == "step.finished" and output_tail:
            tail = output_tail.rstrip().splitlines()[-OUTPUT_LINES:]
            text += "".join(f"\n    | {out}" for out in tail)
        return text


def read_events(
    store: RunReader, run_id: str, after: int, json: bool
) -> Iterator[tuple[str, BaseEvent | EventView]]:
    """The run's events after seq `after`: NDJSON lines and their events for `-o json`;
    for text, views of the stored rows (`events.views`), which spare `swell logs`
    pydantic and the models."""
    if json:
        from swell.events.models import parse_event

        while raws := store.raw_events(run_id, after, limit=PAGE):
            for raw in raws:
                event = parse_event(raw)
                yield raw, event
            after = event.seq
        return
    from swell.events.views import view

    while rows := store.stored_rows(run_id, after, limit=PAGE):
        for row in rows:
            shown = view(row.type, row.data, **row.envelope(run_id))
            # a kind this version does not know: the models say so
            yield "", row.event(run_id) if shown is None else shown
        after = rows[-1].seq


def show_logs(
    store: RunReader,
    run_id: str | None,
    *,
    tail: int | None,
    json: bool,
    where: LogFilter,
    told: bool = False,
) -> None:
    """Print the run's events that `where` keeps (the last `tail` of them, read from
    the run's end: a long run costs what a short one does). `told`: the tail is the
    default view, so say on stderr when earlier events were left out. Following a
    run, and its visits' stored output, are `cli/live.py`'s."""
    from swell.cli.render import for_terminal, json_for_terminal

    run = run_or_newest(store, run_id)
    colours = _Render(run.id, json, where.step).printer.color
    if tail is None:  # everything, printed as it is read: never the whole run in memory
        render = _Render(run.id, json, where.step)
        for raw, event in read_events(store, run.id, 0, json):
            shown = render(raw, event, keep(event, where))
            if shown is not None:
                print(json_for_terminal(shown) if json else for_terminal(shown, colours))
        sys.stdout.flush()
        return
    lines, cut = last_lines(store, run.id, run.last_seq, max(tail, 0), json, where)
    if told and cut:
        print(
            f"(the last {len(lines)} lines of run {run.id}'s {run.last_seq:,} events: "
            f"`swell logs {run.id} --all` prints them all)",
            file=sys.stderr,
        )
    for text in lines:
        print(json_for_terminal(text) if json else for_terminal(text, colours))
    sys.stdout.flush()


WARM = 200  # events read before a tail's window only to know how their steps show


def last_lines(
    store: RunReader, run_id: str, last_seq: int, n: int, json: bool, where: LogFilter
) -> tuple[list[str], bool]:
    """The last `n` lines of the run's events that `where` keeps, and whether earlier
    ones were left out. Reads a window at the run's end (keyset, after a seq), widened
    fourfold until it holds `n` lines or the whole run: the default view of a run of
    30,000 visits reads what one of 300 does."""
    span = max(4 * n, 64)
    while True:
        start = max(last_seq - span, 0)
        render = _Render(run_id, json, where.step)
        found: deque[str] = deque(maxlen=max(n, 0))
        shown = 0
        for raw, event in read_events(store, run_id, max(start - WARM, 0), json):
            # the events before the window only set how the printer shows their steps
            line = render(raw, event, event.seq > start and keep(event, where))
            if line is not None:
                found.append(line)
                shown += 1
        if shown >= n or start == 0:
            return list(found) if n else [], start > 0 or shown > n
        span *= 4


@dataclass(frozen=True)
class ArtifactQuery:
    """Which of a run's artifacts `swell artifacts` lists, prints or exports."""

    step: str | None = None
    visit: int | None = None
    show: str | None = None  # print this artifact's bytes (one visit's version)
    export: Path | None = None


def show_artifacts(store: RunReader, run_id: str | None, query: ArtifactQuery, json: bool) -> int:
    """List the run's artifacts (of one step, one visit), print one version's bytes, or
    export them; returns the exit code."""
    from swell.ops.export import export as export_files
    from swell.workspace.versions import run_dir_of

    run = run_or_newest(store, run_id)
    step, export = query.step, query.export
    rows = [
        a
        for a in store.artifacts(run.id)
        if (step is None or a.step_id == step) and (query.visit is None or a.visit == query.visit)
    ]
    run_dir = run_dir_of(run.id, run.project_root or ".")
    if query.show is not None:
        return _print_version(rows, query, run_dir)
    if export is not None:
        done, problems = export_files(rows, export, run_dir)
        if json:
            print_json(
                {
                    "run": run.id,
                    "exported": [{**asdict(d), "target": str(d.target)} for d in done],
                    "problems": problems,
                }
            )
        else:
            for d in done:
                print(f"{d.step}/{d.name} #{d.visit} -> {d.target} ({d.size} B)")
            for problem in problems:
                print(f"not exported: {problem}", file=sys.stderr)
            print(f"exported {len(done)} file{'s' if len(done) != 1 else ''} to {export}")
        return 1 if problems else 0
    if json:
        print_json([asdict(a) for a in rows])
        return 0
    if not rows:
        print("no artifacts" + (f" of step '{step}'" if step else "") + f" in run {run.id}")
        return 0
    for a in rows:
        print(
            f"{a.step_id:<20} #{a.visit:<3} {a.name:<16} {a.size:>9} B  {a.sha256[:12]}  {a.path}"
        )
    return 0


def _print_version(rows: list[ArtifactRow], query: ArtifactQuery, run_dir: Path) -> int:
    """`--show NAME`: that artifact's bytes as its visit recorded them (the newest
    visit's unless --visit names one), on stdout."""
    from swell.workspace import versions

    found = [a for a in rows if a.name == query.show]
    if not found:
        where = (f" of step '{query.step}'" if query.step else "") + (
            f" at visit {query.visit}" if query.visit is not None else ""
        )
        print(f"error: no artifact '{query.show}'{where}", file=sys.stderr)
        return 1
    if len({a.step_id for a in found}) > 1:
        steps = ", ".join(sorted({a.step_id for a in found}))
        print(f"error: several steps record '{query.show}' ({steps}): add --step", file=sys.stderr)
        return 1
    row = max(found, key=lambda a: a.visit)
    try:
        data = versions.read(versions.Version(row.path, row.sha256, run_dir), MAX_SHOWN)
    except versions.Changed as exc:
        print(f"error: {row.step_id}/{row.name} #{row.visit}: {exc}", file=sys.stderr)
        return 1
    sys.stdout.buffer.write(data)
    sys.stdout.flush()
    return 0


MAX_SHOWN = 1 << 30  # bytes `--show` prints of one version
