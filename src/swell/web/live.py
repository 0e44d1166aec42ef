"""Server-Sent Events that tail the store: runs started from any terminal show live.

A run's streams share one tail that looks at the store for its events (web/tails.py;
no in-process broker: the process executing the run may be any other). Each event's seq
is its SSE `id`, so a browser that reconnects sends `Last-Event-ID` and the stream
resumes after it without losing or repeating an event. The stream ends with an `end`
event once the run has ended for good and every event was sent.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.requests import Request

from swell.errors import StoreError
from swell.events.statuses import ENDED_FOR_GOOD
from swell.store.capabilities import output_store
from swell.store.protocols import Store
from swell.web.tails import Tails, client_frames, frame

# a visit's output: a look at the store costs a query on an index (well under a
# millisecond); run events go through the run's shared tail (web/tails.py)
POLL_SECONDS = 0.05
RUNS_POLL_SECONDS = 1.0  # the runs page only reloads its table
HEARTBEAT_SECONDS = 15.0  # a comment line keeps proxies from closing an idle stream
FINAL = ENDED_FOR_GOOD


def start_seq(last_event_id: str | None, after: int | None) -> int:
    """Where a stream starts: after the browser's Last-Event-ID, else `?after=`."""
    if last_event_id and last_event_id.strip().isdigit():
        return int(last_event_id.strip())
    return max(after or 0, 0)


async def run_events(
    store: Store,
    run_id: str,
    after: int,
    request: Request | None = None,
    tails: Tails | None = None,
    batched: bool = False,
) -> AsyncIterator[str]:
    """SSE frames of the run's events after `after`, as they are stored: from the
    run's tail, which all its streams share (web/tails.py); `batched`: one `batch`
    message per window instead of one `swell` message per event."""
    shared = tails or Tails(store)
    frames = _from_tail(shared, run_id, after, request, batched)
    async for text in _until_store_fails(frames):
        yield text


async def _from_tail(
    tails: Tails, run_id: str, after: int, request: Request | None, batched: bool
) -> AsyncIterator[str]:
    yield "retry: 1000\n\n"
    async with tails.join(run_id) as tail:
        quiet_since = time.monotonic()
        async for text in client_frames(tails.store, tail, after, batched):
            if text:
                quiet_since = time.monotonic()
                yield text
                continue
            # the server ends the stream when the client goes (Starlette listens for
            # the disconnect); a look now and then, not at every wake, is enough, and
            # each look costs a task group under the middleware
            if time.monotonic() - quiet_since >= HEARTBEAT_SECONDS:
                if request is not None and await request.is_disconnected():
                    return
                quiet_since = time.monotonic()
                yield ": keep-alive\n\n"


def tails_of(extra: dict[str, Any], store: Store) -> Tails:
    """The server's tails (one per run watched), made with its first stream."""
    found = extra.get("tails")
    if not isinstance(found, Tails):
        found = extra["tails"] = Tails(store)
    return found


async def _tail(
    fetch: Callable[[int], list[tuple[int, str, str]]],
    over: Callable[[], bool],
    after: int,
    request: Request | None,
) -> AsyncIterator[str]:
    """SSE frames of what `fetch` finds stored after id `after` ((id, event, data)
    each), looked for every POLL_SECONDS, then `end` once `over()` holds and nothing is
    left; a comment now and then keeps an idle stream open."""
    yield "retry: 1000\n\n"
    idle = 0.0
    while True:
        if request is not None and await request.is_disconnected():
            return
        found = fetch(after)
        for after, kind, data in found:
            yield frame(after, kind, data)
        if found:
            idle = 0.0
            continue
        if over() and not fetch(after):
            yield f"id: {after}\nevent: end\ndata: {{}}\n\n"
            return
        await asyncio.sleep(POLL_SECONDS)
        idle += POLL_SECONDS
        if idle >= HEARTBEAT_SECONDS:
            idle = 0.0
            yield ": keep-alive\n\n"


async def _until_store_fails(frames: AsyncIterator[str]) -> AsyncIterator[str]:
    """`frames`, until the store fails (a full disk, a damaged file): then a
    `store-error` event saying so, and the stream ends (a response under way cannot become a 503,
    and an exception here would only be a traceback in the server's log)."""
    try:
        async for text in frames:
            yield text
    except StoreError as exc:
        yield f"event: store-error\ndata: {json.dumps({'detail': str(exc)})}\n\n"


async def runs_changes(store: Store, request: Request | None = None) -> AsyncIterator[str]:
    """A `runs` event whenever the newest runs change (a run starts, moves on, ends):
    the runs page then reloads its table."""
    async for text in _until_store_fails(_runs_changes(store, request)):
        yield text


async def _runs_changes(store: Store, request: Request | None) -> AsyncIterator[str]:
    yield "retry: 2000\n\n"
    last: list[tuple[str, str, int]] | None = None
    idle = 0.0
    while True:
        if request is not None and await request.is_disconnected():
            return
        now = [(r.id, str(r.status), r.last_seq) for r in store.list_runs(50)]
        if now != last:
            if last is not None:
                yield f"event: runs\ndata: {json.dumps({'count': len(now)})}\n\n"
            last = now
            idle = 0.0
        await asyncio.sleep(RUNS_POLL_SECONDS)
        idle += RUNS_POLL_SECONDS
        if idle >= HEARTBEAT_SECONDS:
            idle = 0.0
            yield ": keep-alive\n\n"


OUTPUT_CHUNKS = 200  # chunks sent per look at most


async def visit_output(
    store: Store, run_id: str, step_id: str, visit: int, after: int, request: Request | None = None
) -> AsyncIterator[str]:
    """SSE frames of one visit's output as it is stored (`event: output`, the text
    without escape codes, the chunk's store id as the SSE id), then `end` once the
    visit is over and every chunk was sent."""
    from swell.web.text import strip_ansi

    def chunks(after: int) -> list[tuple[int, str, str]]:
        found = output_store(store).output(
            run_id, after_id=after, step_id=step_id, visit=visit, limit=OUTPUT_CHUNKS
        )
        return [
            (c.id, "output", json.dumps({"stream": c.stream, "text": strip_ansi(c.text)}))
            for c in found
        ]

    async for text in _until_store_fails(
        _tail(chunks, lambda: not _visit_running(store, run_id, step_id, visit), after, request)
    ):
        yield text


def _visit_running(store: Store, run_id: str, step_id: str, visit: int) -> bool:
    from swell.store.capabilities import page_reader

    pages = page_reader(store)
    head = pages.head(run_id)  # not `get_run`: that counts a running run's visits
    if head is None or head.status in FINAL:  # its executor may have died mid-visit
        return False
    row = pages.visit(run_id, step_id, visit)
    return row is not None and row.status == "running"
