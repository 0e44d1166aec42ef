"""Output read while a visit runs: its chunks, the sink they are stored in, and the
feed that processes and adapters report to.

This is the lowest layer of live output: `process.run_process` and the `local`
adapter report what they read to `current_feed()` (a context variable the engine
sets for the duration of a visit's step kind, so a step kind need not pass it on),
the engine's `VisitOutput` (engine/visit/output_log.py) decides what is stored, and a store
(or a live display) receives `OutputChunk`s through an `OutputSink`.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal, Protocol

Stream = Literal["stdout", "stderr", "agent"]
STREAMS: tuple[Stream, ...] = ("stdout", "stderr", "agent")

# (stream, data): bytes as a process printed them, or text an agent produced
Feed = Callable[[Stream, bytes | str], None]

_feed: contextvars.ContextVar[Feed | None] = contextvars.ContextVar("swell_feed", default=None)


@dataclass(frozen=True, slots=True)
class OutputChunk:
    """A piece of one visit's output. `seq` counts a visit's chunks from 1 across its
    streams; a seq that is missing was dropped to keep the visit's output bounded."""

    run_id: str
    step_id: str
    visit: int
    stream: Stream
    seq: int
    ts: str
    text: str
    id: int = 0  # the store's order of chunks in a run (0 until stored)


class OutputSink(Protocol):
    """Where a running visit's output goes: the store, a live display, or both."""

    def write_output(self, chunks: Sequence[OutputChunk]) -> None:
        """Keep these chunks (one visit's, in seq order), committed when this returns."""
        ...

    def drop_output(self, run_id: str, step_id: str, visit: int, seqs: range) -> None:
        """Forget the visit's chunks whose seq is in `seqs` (its output passed its cap)."""
        ...


def current_feed() -> Feed | None:
    """The feed of the visit running in this task, if any."""
    return _feed.get()


@contextmanager
def feeding(feed: Feed | None) -> Iterator[None]:
    """Make `feed` the current feed inside the block (None: no feed)."""
    token = _feed.set(feed)
    try:
        yield
    finally:
        _feed.reset(token)


class Tee:
    """One sink that passes everything on to several (the store first)."""

    def __init__(self, *sinks: OutputSink) -> None:
        self.sinks = sinks

    def write_output(self, chunks: Sequence[OutputChunk]) -> None:
        for sink in self.sinks:
            sink.write_output(chunks)

    def drop_output(self, run_id: str, step_id: str, visit: int, seqs: range) -> None:
        for sink in self.sinks:
            sink.drop_output(run_id, step_id, visit, seqs)


__all__ = [
    "STREAMS",
    "Feed",
    "OutputChunk",
    "OutputSink",
    "Stream",
    "Tee",
    "current_feed",
    "feeding",
]
