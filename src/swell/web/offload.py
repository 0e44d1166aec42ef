"""The dashboard's long work, done off its event loop: validating the project (the
pipelines page) and laying out a run's graph.

Both grow with the size of the pipelines (linearly: a 10,000-step pipeline validates
in about 3 s). On the event loop that would hold up every other request and every
live stream for as long; in a worker thread the loop goes on. A limiter bounds the
threads this work may take (one validation, two layouts at a time); requests beyond
it wait without blocking anything. Results are kept while their inputs are the same:
the validation while no manifest or pipeline file changed (their mtimes and sizes),
for at most `VALIDATION_SECONDS` (lint also reads files those name, such as system
prompts); a pipeline's layout for as long as the same text is asked for again.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar, cast

import anyio
import anyio.to_thread

from swell.web import data
from swell.web import models as m
from swell.web.graph import Graph, RunState, graph_of, render_svg
from swell.web.run_facts import FactsCache

T = TypeVar("T")

VALIDATIONS = 1  # validations at once (each is CPU-bound: more would only share the CPU)
LAYOUTS = 2  # graph layouts at once
VALIDATION_SECONDS = 10.0  # how long a validation is reused while no file changed
GRAPHS_KEPT = 16  # pipelines whose graph is kept
VIEWS_KEPT = 64  # run views (steps, timelines) kept by run and last seq

Signature = tuple[tuple[str, int, int], ...]


@dataclass
class Offload:
    """Limiters and kept results; one per app."""

    limiters: dict[str, anyio.CapacityLimiter] = field(default_factory=dict)
    validation: tuple[Signature, float, m.Pipelines] | None = None
    graphs: OrderedDict[str, Graph | None] = field(default_factory=OrderedDict)
    lock: threading.Lock = field(default_factory=threading.Lock)  # for `graphs`
    facts: FactsCache = field(default_factory=FactsCache)  # routes taken, retries, reworks
    views: Kept = field(default_factory=lambda: Kept(VIEWS_KEPT))  # by (what, run, last seq)

    def limiter(self, name: str, size: int) -> anyio.CapacityLimiter:
        # made on first use: a limiter belongs to the running event loop
        if name not in self.limiters:
            self.limiters[name] = anyio.CapacityLimiter(size)
        return self.limiters[name]

    async def run(self, name: str, size: int, fn: Callable[[], T]) -> T:
        return await anyio.to_thread.run_sync(fn, limiter=self.limiter(name, size))

    async def pipelines(self, root: Path) -> m.Pipelines:
        """`swell validate` of the project, as the pipelines page shows it."""
        return await self.run("validate", VALIDATIONS, lambda: self._pipelines(root))

    def _pipelines(self, root: Path) -> m.Pipelines:
        signature = project_signature(root)
        kept = self.validation
        if kept and kept[0] == signature and time.monotonic() - kept[1] < VALIDATION_SECONDS:
            return kept[2]
        found = data.pipelines_state(root)
        self.validation = (signature, time.monotonic(), found)
        return found

    async def graph_svg(self, text: str, name: str, state: RunState) -> str | None:
        """The run graph of a stored pipeline text; None when it does not load."""

        def draw() -> str | None:
            graph = self._graph(text, name)
            return None if graph is None else render_svg(graph, state)

        return await self.run("layout", LAYOUTS, draw)

    def graph_of(self, text: str, name: str) -> Graph | None:
        """A stored pipeline's graph, laid out once per text (a child pipeline's steps)."""
        return self._graph(text, name)

    def _graph(self, text: str, name: str) -> Graph | None:
        key = hashlib.sha256(f"{name}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()
        with self.lock:
            if key in self.graphs:
                self.graphs.move_to_end(key)
                return self.graphs[key]
        graph = graph_of(text, name)
        with self.lock:
            self.graphs[key] = graph
            while len(self.graphs) > GRAPHS_KEPT:
                self.graphs.popitem(last=False)
        return graph


class Kept:
    """Results kept by key, the least recently used dropped first. What a run page
    derives from a run's events (its steps, a finished timeline) is the same until the
    run has a new event: keyed by the run's last seq, a page shown again, or by many
    readers, reads and draws it once."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.items: OrderedDict[tuple[object, ...], object] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: tuple[object, ...], make: Callable[[], T]) -> T:
        with self.lock:
            if key in self.items:
                self.items.move_to_end(key)
                return cast(T, self.items[key])
        value = make()
        with self.lock:
            self.items[key] = value
            while len(self.items) > self.size:
                self.items.popitem(last=False)
        return value


def project_signature(root: Path) -> Signature:
    """Path, mtime and size of the manifest and of every pipeline file."""
    from swell.manifest.discovery import MANIFEST_NAMES
    from swell.manifest.loader import pipeline_paths

    out: list[tuple[str, int, int]] = []
    for path in [*(root / n for n in MANIFEST_NAMES), *pipeline_paths(root).values()]:
        try:
            st = path.stat()
        except OSError:
            continue
        out.append((str(path), st.st_mtime_ns, st.st_size))
    return tuple(out)


__all__ = ["Kept", "Offload", "project_signature"]
