"""Running steps' output as it arrives: what `swell run` shows while a step runs, and
`swell logs --follow` / `--step` reading it back from the store.

`swell run` gets one of three watchers (`watchers`), each an output sink the runtime
tees after the store, so they see exactly what is stored (visits that run past a
quarter of a second; faster ones show their output as they always did):

- on a terminal, `LiveDisplay`: a rich Live region under the progress lines with
  each running step, its elapsed time, its last lines of output and, for agents, the
  last tool call and the token usage; it disappears when the run ends;
- when stdout is not a terminal, `PlainOutput`: each complete line of a command's
  stdout/stderr as `    STEP | LINE` (agents' text is not repeated: the answer and
  tool calls already have their progress lines);
- with `-o json`, `NdjsonOutput`: each chunk as one JSON object of type `output`.
"""

from __future__ import annotations

import heapq
import json
import sys
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from swell.cli.render import ProgressPrinter, fmt_ms, for_terminal, json_for_terminal
from swell.events.statuses import ENDED_FOR_GOOD
from swell.streaming import OutputChunk

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.live import Live

    # imported where a run's own events are shown: `swell logs` reads views of stored
    # events (events/views.py) and does not load pydantic
    from swell.events import models as ev
    from swell.events.views import EventView
    from swell.ops.logs import LogFilter
    from swell.store.protocols import Store

LIVE_LINES = 4  # of each running step's output shown in the live region
REFRESH_PER_SECOND = 4


def chunk_json(chunk: OutputChunk) -> str:
    """A chunk as `-o json` prints it: one object of type `output`."""
    data: dict[str, Any] = {"type": "output", **asdict(chunk)}
    del data["id"]
    return json_for_terminal(json.dumps(data, separators=(",", ":"), ensure_ascii=False))


class _Lines:
    """Complete lines out of chunks, per visit and stream (a chunk may end mid-line)."""

    def __init__(self) -> None:
        self.partial: dict[tuple[str, str, int, str], str] = {}

    def add(self, chunk: OutputChunk) -> list[str]:
        key = (chunk.run_id, chunk.step_id, chunk.visit, chunk.stream)
        text = self.partial.pop(key, "") + chunk.text
        *lines, rest = text.split("\n")
        if rest:
            self.partial[key] = rest
        return lines

    def end(self, run_id: str, step_id: str | None, visit: int | None) -> list[str]:
        """The unfinished lines of a visit that ended."""
        done = [k for k in self.partial if k[:3] == (run_id, step_id, visit)]
        return [self.partial.pop(k) for k in done]

    def rest(self) -> list[tuple[str, str]]:
        """Every unfinished line left, with its step."""
        out = [(k[1], v) for k, v in self.partial.items()]
        self.partial.clear()
        return out


class PlainOutput:
    """Not a terminal: each complete line of a command's output, under its step."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self.lines = _Lines()

    def write_output(self, chunks: Sequence[OutputChunk]) -> None:
        for chunk in chunks:
            if chunk.stream != "agent":
                for line in self.lines.add(chunk):
                    self.out.write(f"    {chunk.step_id} | {for_terminal(line)}\n")
        self.out.flush()

    def drop_output(self, run_id: str, step_id: str, visit: int, seqs: range) -> None:
        """Already printed: nothing to take back."""

    def emit(self, events: Sequence[ev.BaseEvent]) -> None:
        """At a visit's end, the last line it printed without a newline."""
        from swell.events import models as ev

        for event in events:
            if isinstance(event, ev.StepFinished | ev.StepInterrupted):
                for line in self.lines.end(event.run_id, event.step_id, event.visit):
                    self.out.write(f"    {event.step_id} | {for_terminal(line)}\n")


class NdjsonOutput:
    """`-o json`: each stored chunk as one JSON line, next to the events."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout

    def write_output(self, chunks: Sequence[OutputChunk]) -> None:
        for chunk in chunks:
            self.out.write(chunk_json(chunk) + "\n")
        self.out.flush()

    def drop_output(self, run_id: str, step_id: str, visit: int, seqs: range) -> None:
        """Already printed: nothing to take back."""


@dataclass
class _Running:
    name: str
    started: float
    lines: deque[str] = field(default_factory=lambda: deque(maxlen=LIVE_LINES))
    partial: str = ""
    tool: str | None = None
    tokens: tuple[int, int] | None = None


class LiveDisplay:
    """A terminal: progress lines as `ProgressPrinter` prints them, and under them a
    live region with every running step. The region pauses while a gate asks at this
    terminal, and is gone when the display stops."""

    def __init__(self, root_run: str) -> None:
        from rich.console import Console
        from rich.live import Live

        self.console = Console(highlight=False)
        self.printer = ProgressPrinter(color=True, root_run=root_run)
        self.root_run = root_run
        self.running: dict[tuple[str, str | None, int | None], _Running] = {}
        self.lock = threading.Lock()  # the refresh thread reads `running`
        self.live: Live = Live(
            _Region(self),
            console=self.console,
            refresh_per_second=REFRESH_PER_SECOND,
            transient=True,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self.active = False

    def start(self) -> None:
        if not self.active:
            self.live.start()
            self.active = True

    def stop(self) -> None:
        if self.active:
            self.live.stop()
            self.active = False

    # ------------------------------------------------------------- events

    def emit(self, events: Sequence[ev.BaseEvent]) -> None:
        from rich.text import Text

        from swell.events import models as ev

        for event in events:
            line = self.printer.line(event)
            self._track(event)
            if line:
                indent = "  " if event.run_id != self.root_run else ""
                self.console.print(Text.from_ansi(indent + for_terminal(line, colours=True)))
            if isinstance(event, ev.GateWaiting):
                self.stop()  # the prompt is asked on this terminal
            elif isinstance(event, ev.StepStarted | ev.GateResolved):
                self.start()

    def _track(self, e: ev.BaseEvent) -> None:
        from swell.events import models as ev

        key = (e.run_id, e.step_id, e.visit)
        with self.lock:
            if isinstance(e, ev.StepStarted) and e.progress != "hidden":
                name = f"{e.step_id}" + (f" #{e.visit}" if e.visit and e.visit > 1 else "")
                self.running[key] = _Running(name, time.monotonic())
            elif isinstance(e, ev.StepFinished | ev.StepInterrupted):
                self.running.pop(key, None)
            elif (visit := self.running.get(key)) is not None:
                if isinstance(e, ev.AgentToolCall):
                    visit.tool = f"{e.name} {e.target or ''}".strip()
                elif isinstance(e, ev.AgentUsage):
                    visit.tokens = (e.input_tokens + e.cache_read_tokens, e.output_tokens)

    # ------------------------------------------------------------- output

    def write_output(self, chunks: Sequence[OutputChunk]) -> None:
        with self.lock:
            for chunk in chunks:
                visit = self.running.get((chunk.run_id, chunk.step_id, chunk.visit))
                if visit is None:
                    continue
                *done, visit.partial = (visit.partial + chunk.text).split("\n")
                visit.lines.extend(line for line in done if line.strip())

    def drop_output(self, run_id: str, step_id: str, visit: int, seqs: range) -> None:
        """Shown already: the region keeps only the last lines anyway."""

    def render(self) -> RenderableType:
        from rich.text import Text

        now = time.monotonic()
        width = max(self.console.width - 6, 20)
        text = Text()
        with self.lock:
            visits = list(self.running.values())
            for visit in visits:
                text.append("▶ ", style="cyan")
                text.append(visit.name, style="bold")
                text.append(f"  {fmt_ms(int((now - visit.started) * 1000))}", style="yellow")
                if visit.tool:
                    text.append(f"  · {for_terminal(visit.tool)}"[:width], style="dim")
                if visit.tokens:
                    text.append(f"  {visit.tokens[0]}→{visit.tokens[1]} tok", style="dim")
                shown = list(visit.lines) + ([visit.partial] if visit.partial.strip() else [])
                for line in shown[-LIVE_LINES:]:
                    text.append("\n    " + for_terminal(line.expandtabs())[:width], style="dim")
                text.append("\n")
        text.rstrip()
        return text


class _Region:
    """What the Live region draws, asked at every refresh."""

    def __init__(self, display: LiveDisplay) -> None:
        self.display = display

    def __rich__(self) -> RenderableType:
        return self.display.render()


# ------------------------------------------------------------------ logs --follow

FOLLOW_POLL = 0.25
ENDED = (*ENDED_FOR_GOOD, "interrupted")
PAGE = 1000  # events, and output chunks, read from the store at a time
ORPHAN_POLLS = 4  # polls in a row with no process holding a live run: it is gone
OUTPUT_LINES = 40  # of a visit's output tail shown with --step (when none was stored)


# an event (its NDJSON line, itself) or a chunk, with its time and 0 / 1 (events first)
_Timed = tuple[str, int, "tuple[str, ev.BaseEvent | EventView] | OutputChunk"]


class LogReader:
    """`swell logs` with stored output: a run's events and its visits' output chunks in
    the order they happened, printed as text lines with times or as NDJSON."""

    def __init__(self, store: Store, run_id: str, where: LogFilter, json: bool) -> None:
        self.store, self.run_id, self.where, self.json = store, run_id, where, json
        self.printer = ProgressPrinter(root_run=run_id)
        self.seq = 0  # the last event read
        self.chunk_id = 0  # the last chunk read
        self.lines = _Lines()
        self.with_output: set[tuple[str, int]] = set()  # visits whose chunks were shown
        self.last_seq: dict[tuple[str, int], int] = {}  # a visit's last chunk seq shown

    def read(self) -> Iterator[str]:
        """What happened since the last call, as printable lines, oldest first. Read a
        page of events and a page of chunks at a time (as `swell logs` reads), never the
        whole run: the two are merged in the order they happened (events before chunks
        of the same time), rendered in that order: a step's end knows whether its output
        was shown."""
        from swell.cli.history import read_events
        from swell.ops.logs import keep

        events: Iterator[_Timed] = (
            (e.ts, 0, (raw, e))
            for raw, e in read_events(self.store, self.run_id, self.seq, self.json)
        )
        chunks: Iterator[_Timed] = ((c.ts, 1, c) for c in self._chunks())
        for _, _, item in heapq.merge(events, chunks, key=lambda i: (i[0], i[1])):
            if isinstance(item, OutputChunk):
                self.chunk_id = item.id
                text = self._chunk(item) if self._chunk_kept(item) else None
            else:
                self.seq = item[1].seq
                text = self._event(item[0], item[1], keep(item[1], self.where))
            if text is not None:
                yield text

    def read_to_end(self) -> Iterator[str]:
        """`read`, then the unfinished lines still held (`rest`)."""
        yield from self.read()
        yield from self.rest()

    def _chunks(self) -> Iterator[OutputChunk]:
        """The chunks stored after the last one read, a page at a time."""
        from swell.store.capabilities import output_store

        after, step = self.chunk_id, self.where.step
        while page := output_store(self.store).output(
            self.run_id, after_id=after, step_id=step, limit=PAGE
        ):
            yield from page
            after = page[-1].id

    def rest(self) -> list[str]:
        """Unfinished lines of output still held, at the end."""
        if self.json:
            return []
        return [self._line(step, line) for step, line in self.lines.rest()]

    def _chunk_kept(self, chunk: OutputChunk) -> bool:
        from swell.ops.logs import keep_chunk

        return keep_chunk(chunk.ts, self.where)

    def _line(self, step: str, line: str) -> str:
        return f"    | {line}" if self.where.step else f"    {step} | {line}"

    def _chunk(self, chunk: OutputChunk) -> str | None:
        key = (chunk.step_id, chunk.visit)
        self.with_output.add(key)
        gap = chunk.seq > self.last_seq.get(key, 0) + 1
        self.last_seq[key] = chunk.seq
        if self.json:
            return chunk_json(chunk)
        lines = [self._line(chunk.step_id, "… (output left out to keep it bounded)")] if gap else []
        lines += [self._line(chunk.step_id, line) for line in self.lines.add(chunk)]
        return "\n".join(lines) if lines else None

    def _event(self, raw: str, event: ev.BaseEvent | EventView, kept: bool) -> str | None:
        line = None if self.json else self.printer.line(event)  # keeps the printer's state
        if not kept:
            return None
        if self.json:
            return raw
        kind = getattr(event, "type", "")
        ended = kind in ("step.finished", "step.interrupted")
        rest = self.lines.end(event.run_id, event.step_id, event.visit) if ended else []
        texts = [self._line(event.step_id or "", r) for r in rest]
        if line is not None:
            texts.append(f"{event.ts[11:19]} {line}")
        key = (event.step_id or "", event.visit or 0)
        output_tail = getattr(event, "output_tail", None)  # a step.finished's
        if (
            self.where.step
            and kind == "step.finished"
            and output_tail
            and key not in self.with_output  # its output was shown as it came
        ):
            tail = output_tail.rstrip().splitlines()[-OUTPUT_LINES:]
            texts += [f"    | {out}" for out in tail]
        return "\n".join(texts) if texts else None


def show_logs(
    store: Store,
    run_id: str | None,
    *,
    follow: bool,
    tail: int | None,
    json: bool,
    where: LogFilter,
) -> int:
    """Print the run's events and stored output that `where` keeps (the last `tail` of
    them first), then with `follow` what comes next until the run ends. Returns the exit
    code: 0, or 1 when the run's process died while followed. A run the Temporal engine
    executes has no process here: it is followed until the store says it ended (a
    killed worker's visit runs again on another worker)."""
    from swell.cli.pick import run_or_newest
    from swell.executors import executor_for
    from swell.store.capabilities import wait_for_events

    run = run_or_newest(store, run_id)
    reader = LogReader(store, run.id, where, json)
    # printed as they are read, or the last `tail` kept: never the whole run in memory
    first: Iterable[str] = reader.read()
    if tail is not None:
        first = deque(first, maxlen=max(tail, 0))
    _print(first, json)
    orphaned = 0
    while follow:
        current = store.get_run(run.id)
        if current.status in ENDED and reader.seq >= current.last_seq:
            break
        held = executor_for(current).held_by or store.owner(run.id) is not None
        orphaned = 0 if held else orphaned + 1
        if orphaned >= ORPHAN_POLLS:
            _print(reader.read_to_end(), json)
            print(_gone(current.id, current.status), file=sys.stderr)
            return 1
        # woken early by the run's next event (at once on Postgres: LISTEN/NOTIFY);
        # output chunks are not signalled, so look at least every FOLLOW_POLL
        wait_for_events(store, run.id, reader.seq, FOLLOW_POLL)
        _print(reader.read(), json)
    _print(reader.read_to_end() if follow else reader.rest(), json)
    return 0


def _gone(run_id: str, status: str) -> str:
    if status == "waiting":
        return (
            f"error: run {run_id} is waiting at a gate and no process is executing it: "
            f"`swell approve {run_id}`, then `swell resume {run_id}`"
        )
    return (
        f"error: no process is executing run {run_id} any more (it was killed or crashed "
        f"while {status}); continue it with `swell resume {run_id}`"
    )


def _print(lines: Iterable[str], json: bool) -> None:
    colours = sys.stdout.isatty()  # as the reader's ProgressPrinter decided
    for text in lines:
        print(json_for_terminal(text) if json else for_terminal(text, colours))
    sys.stdout.flush()


__all__ = [
    "LiveDisplay",
    "LogReader",
    "NdjsonOutput",
    "PlainOutput",
    "chunk_json",
    "show_logs",
]
