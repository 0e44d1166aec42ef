"""A visit's output, stored while it runs: what is kept, and when it is written.

A loop of short command visits must not pay for this, so nothing is written for a
visit that ends quickly (its output reaches the store as it always did: the log
artifact and `step.finished`'s tail). A visit's output is written once the visit has
run `DELAY` seconds or printed `EARLY_CHARS`, then at most every `FLUSH_EVERY`
seconds, and what is left when it ends (or is cancelled) is written then, but only
if something was written before. A killed swell therefore keeps what the visit
printed up to the last flush.

What is kept of a visit: its first `HEAD_CHARS` characters, and a rolling tail of its
last `TAIL_CHARS` or so (older tail chunks are dropped; a reader sees the gap in
their `seq`). Agent events are kept on the `agent` stream as text: the answer as it
streams, and a line per tool call.

Secrets are masked here, on each stream as a whole, before it is cut into rows: a
secret split across two rows or two writes is still one secret. The end of a stream
where a secret may be starting is held back until the stream goes on or the visit
ends (events/redact.py, `MaskedStream`); most output ends in a newline and holds
nothing back.
"""

from __future__ import annotations

import asyncio
import codecs
import time
from collections import deque
from collections.abc import Callable, Sequence

from swell.errors import SwellError
from swell.events import models as ev
from swell.events.redact import MaskedStream, Redactor
from swell.streaming import OutputChunk, OutputSink, Stream

DELAY = 0.25  # a visit's output is stored once it has run this long...
EARLY_CHARS = 64 * 1024  # ...or printed this much
FLUSH_EVERY = 0.25  # and then written at most this often
HEAD_CHARS = 256 * 1024  # the first this many characters of a visit are always kept
TAIL_CHARS = 256 * 1024  # and about this many of its end
ROW_CHARS = 16 * 1024  # largest chunk row (the tail is dropped a row at a time)


class VisitOutput:
    """Collects one visit's output (`feed`) and writes it to a sink as described above.
    Lives on the event loop: every call comes from the loop's thread."""

    def __init__(
        self,
        sink: OutputSink,
        run_id: str,
        step_id: str,
        visit: int,
        redactor: Redactor | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.sink, self.run_id, self.step_id, self.visit = sink, run_id, step_id, visit
        self.redactor, self.clock = redactor, clock
        self.started = clock()
        self.last_flush = 0.0
        self.written = False  # something was written: the rest follows at the end
        self.broken = False  # the sink failed: stop writing (the end-of-visit log remains)
        self.closed = False
        self.seq = 0
        self.stored = 0  # characters written so far (the head is the first HEAD_CHARS)
        self.tail: deque[tuple[int, int]] = deque()  # (seq, size) of rows past the head
        self.tail_size = 0
        self.pending: list[tuple[Stream, str]] = []
        self.pending_size = 0
        self.masked = 0  # pending[:masked] has had its secrets masked (`_mask`)
        self.streams: dict[Stream, MaskedStream] = {}
        self.skipped = False  # pending lost its middle: leave a gap in seq
        self.timer: asyncio.TimerHandle | None = None
        self.decoders: dict[Stream, codecs.IncrementalDecoder] = {}

    # ---------------------------------------------------------------- feeding

    def feed(self, stream: Stream, data: bytes | str) -> None:
        """Output as it was read (a process's bytes, an agent's text)."""
        if self.broken or self.closed:
            return
        if isinstance(data, bytes):
            decoder = self.decoders.get(stream)
            if decoder is None:
                decoder = self.decoders[stream] = codecs.getincrementaldecoder("utf-8")("replace")
            text = decoder.decode(data)
        else:
            text = data
        if not text:
            return
        if len(self.pending) > self.masked and self.pending[-1][0] == stream:
            self.pending[-1] = (stream, self.pending[-1][1] + text)
        else:
            self.pending.append((stream, text))
        self.pending_size += len(text)
        self._bound_pending()
        if self.pending_size >= EARLY_CHARS and not self.written:
            self.flush()
        elif self.timer is None:
            self._schedule()

    def event(self, event: ev.BaseEvent) -> None:
        """An agent event of this visit: its text and tool calls go to the `agent` stream."""
        if isinstance(event, ev.AgentText):
            self.feed("agent", event.text)
        elif isinstance(event, ev.AgentToolCall):
            target = f" {event.target}" if event.target else ""
            self.feed("agent", f"\n· {event.name}{target}\n")

    def _schedule(self) -> None:
        now = self.clock()
        due = max(self.started + DELAY, self.last_flush + FLUSH_EVERY)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # fed from outside the loop: written at the end only
            return
        self.timer = loop.call_later(max(due - now, 0.0), self._tick)

    def _tick(self) -> None:
        self.timer = None
        self.flush()

    def _bound_pending(self) -> None:
        """Between two writes keep no more than the head still has room for plus a
        tail: the middle of a flood is dropped before it is ever written."""
        room = max(HEAD_CHARS - self.stored, 0) + TAIL_CHARS
        if self.pending_size <= room + TAIL_CHARS:
            return
        self._mask()  # cutting must not leave half a secret on either side
        head_room = max(HEAD_CHARS - self.stored, 0)
        kept: list[tuple[Stream, str]] = []
        taken = 0
        for stream, text in self.pending:  # the part the head still takes
            if taken >= head_room:
                break
            piece = text[: head_room - taken]
            kept.append((stream, piece))
            taken += len(piece)
        tail: list[tuple[Stream, str]] = []
        left = TAIL_CHARS
        for stream, text in reversed(self.pending):  # and the newest TAIL_CHARS
            if left <= 0:
                break
            piece = text[-left:]
            tail.append((stream, piece))
            left -= len(piece)
        self.pending = kept + list(reversed(tail))
        self.pending_size = sum(len(t) for _, t in self.pending)
        self.masked = len(self.pending)
        self.skipped = True

    # ---------------------------------------------------------------- writing

    def flush(self, *, final: bool = False) -> None:
        """Write what is pending now (`final`: and what was held back)."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.broken:
            return
        self._mask(final=final)
        if not self.pending:
            return
        chunks = self._chunks()
        self.last_flush = self.clock()
        try:
            self.sink.write_output(chunks)
            self.written = True
            self._drop_old_tail()
        except (SwellError, OSError):
            self.broken = True

    def close(self) -> None:
        """The visit ended (or was cancelled): write the rest if anything was written."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        for stream, decoder in self.decoders.items():
            rest = decoder.decode(b"", final=True)
            if rest:
                self.pending.append((stream, rest))
        if self.written:
            self.flush(final=True)
        self.pending.clear()
        self.closed = True

    def _mask(self, *, final: bool = False) -> None:
        """Mask the secrets in what was fed since the last call, each stream as one
        text (`final`: the visit ended, pass on what each stream held back)."""
        if self.redactor is None:
            self.masked = len(self.pending)
            return
        out = self.pending[: self.masked]
        for stream, text in self.pending[self.masked :]:
            masker = self.streams.get(stream)
            if masker is None:
                masker = self.streams[stream] = MaskedStream(self.redactor)
            if shown := masker.feed(text):
                out.append((stream, shown))
        if final:
            out += [(s, rest) for s, masker in self.streams.items() if (rest := masker.end())]
        self.pending, self.masked = out, len(out)
        self.pending_size = sum(len(t) for _, t in out)

    def _chunks(self) -> list[OutputChunk]:
        stamp = ev.now_iso()
        chunks: list[OutputChunk] = []
        if self.skipped:
            self.seq += 1  # the gap says output was left out here
            self.skipped = False
        for stream, text in self.pending:
            start = 0
            while start < len(text):
                # a row never spans the end of the head, so the head stays whole
                limit = ROW_CHARS
                if self.stored < HEAD_CHARS:
                    limit = min(limit, HEAD_CHARS - self.stored)
                piece = text[start : start + limit]
                start += len(piece)
                self.seq += 1
                if self.stored >= HEAD_CHARS:
                    self.tail.append((self.seq, len(piece)))
                    self.tail_size += len(piece)
                self.stored += len(piece)
                chunks.append(
                    OutputChunk(
                        self.run_id, self.step_id, self.visit, stream, self.seq, stamp, piece
                    )
                )
        self.pending.clear()
        self.pending_size = 0
        self.masked = 0
        return chunks

    def _drop_old_tail(self) -> None:
        """Forget the oldest tail rows while the newer ones still hold TAIL_CHARS."""
        first = through = 0
        while len(self.tail) > 1 and self.tail_size - self.tail[0][1] >= TAIL_CHARS:
            seq, size = self.tail.popleft()
            self.tail_size -= size
            first, through = first or seq, seq
        if through:
            self.sink.drop_output(self.run_id, self.step_id, self.visit, range(first, through + 1))


def tee_events(
    emit: Callable[[Sequence[ev.BaseEvent]], None], output: VisitOutput
) -> Callable[[Sequence[ev.BaseEvent]], None]:
    """`emit` that also shows the visit's agent events to its output."""

    def both(events: Sequence[ev.BaseEvent]) -> None:
        emit(events)
        for event in events:
            if isinstance(event, ev.AgentText | ev.AgentToolCall):
                output.event(event)

    return both


__all__ = ["VisitOutput", "tee_events"]
