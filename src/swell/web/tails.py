"""One tail per run, shared by every live stream of it (`/api/runs/RUN/stream`).

A run's tail looks at the store for its new events once per poll (every POLL_SECONDS
on SQLite; on Postgres when a commit's NOTIFY names the run, and now and then should
one be lost) and keeps the newest of them as JSON lines, ready to send; each client
of the run takes its frames from there (an SSE message per event, or per 50 ms window
with `?batch=1`). A look at an idle run is one indexed read of
its status and newest seq (never a count of its visits), so fifty viewers cost what
one does. A client that starts before the tail's frames (a page opened on a long run,
a reconnect) reads the store itself, a batch at a time after its last seq (keyset),
until it reaches them: every event once, in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from bisect import bisect_right
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from swell.errors import StoreError
from swell.events.models import event_json
from swell.events.statuses import ENDED_FOR_GOOD
from swell.store.capabilities import page_reader
from swell.store.protocols import Capability, CommitFeed, Notify

if TYPE_CHECKING:
    from swell.store.pages import PageReader
    from swell.store.protocols import Store

# a look at the store costs one indexed read (well under a millisecond); 20 a second
# keeps an event's way to the page under 150 ms at the 95th percentile
# (benchmarks/web_live_latency.py), however many pages show the run
POLL_SECONDS = 0.05
NOTIFIED_POLL_SECONDS = 1.0  # with NOTIFY: a look now and then all the same
RECENT = 2000  # frames a tail keeps for its clients (at most twice that, briefly)
BATCH = 500  # events read at a time, so one read never holds the loop long
QUIET_SECONDS = 5.0  # a client of a quiet run wakes this often (for its keep-alive)

BATCH_SECONDS = 0.05  # a batched stream sends one message per window at most
Frame = tuple[int, str]  # (seq, the event's JSON line)


def frame(seq: int, kind: str, data: str) -> str:
    # data is one JSON line (no newline inside), so it is one `data:` field
    return f"id: {seq}\nevent: {kind}\ndata: {data}\n\n"


def send(found: list[Frame], batched: bool) -> str:
    """What a client is sent for `found`: an `event: swell` message per event, or
    (batched) one `event: batch` message whose data is the JSON array of them all
    and whose id is the last one's seq (a browser's cost is per message, not per
    byte: one parse and one dispatch for a window's events)."""
    if batched:
        return frame(found[-1][0], "batch", f"[{','.join(line for _, line in found)}]")
    return "".join(frame(seq, "swell", line) for seq, line in found)


def read_frames(store: Store, run_id: str, after: int) -> list[Frame]:
    """The run's next events after seq `after` (BATCH at most), each event's line as
    `swell logs -o json` has it (about 20 µs an event: pydantic's core parses and
    writes it; a hand-made line from events/shapes.py was no quicker)."""
    return [(e.seq, event_json(e)) for e in store.events(run_id, after, limit=BATCH)]


class Tail:
    """A run's newest events (their JSON lines): every event after `floor` up to `seq`."""

    def __init__(self, run_id: str, seq: int) -> None:
        self.run_id = run_id
        self.seqs: list[int] = []
        self.frames: list[str] = []
        self.floor = self.seq = seq
        self.over = False  # the run ended for good and every event is here
        self.error: str | None = None  # the store failed
        self.clients = 0
        self.nudged = asyncio.Event()  # a commit named the run (NOTIFY)
        self._changed = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    def since(self, seq: int) -> list[Frame] | None:
        """The frames after `seq`; None when the tail does not hold them all (they are
        older than its frames: read them from the store)."""
        if seq < self.floor:
            return None
        i = bisect_right(self.seqs, seq)
        return list(zip(self.seqs[i:], self.frames[i:], strict=True))

    def add(self, found: list[Frame]) -> None:
        for seq, text in found:
            self.seqs.append(seq)
            self.frames.append(text)
        self.seq = found[-1][0]
        if len(self.seqs) > 2 * RECENT:  # trimmed in one go, not at every event
            drop = len(self.seqs) - RECENT
            self.floor = self.seqs[drop - 1]
            del self.seqs[:drop], self.frames[:drop]
        self._wake()

    def end(self, error: str | None = None) -> None:
        self.over, self.error = True, error
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def changed(self, timeout: float) -> None:
        """Until the tail has more (or ended), or `timeout` seconds pass."""
        waiter = self._changed
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(waiter.wait(), timeout)


class Tails:
    """The tails of the runs a server's clients watch, one each, for as long as one
    client watches it. `looks` counts the tails' reads of the store (/metrics)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.pages: PageReader = page_reader(store)
        self.runs: dict[str, Tail] = {}
        self.looks = 0
        self._feed: CommitFeed | None = None
        self._notified = Capability.NOTIFY in store.capabilities and isinstance(store, Notify)

    @contextlib.asynccontextmanager
    async def join(self, run_id: str) -> AsyncIterator[Tail]:
        """The run's tail, started by its first client and stopped after its last."""
        tail = self.runs.get(run_id)
        if tail is None:
            head = self.pages.head(run_id)
            tail = self.runs[run_id] = Tail(run_id, head.last_seq if head else 0)
            self._listen()
            tail.task = asyncio.create_task(self._follow(tail))
        tail.clients += 1
        try:
            yield tail
        finally:
            tail.clients -= 1
            if tail.clients == 0:
                if self.runs.get(run_id) is tail:
                    del self.runs[run_id]
                if tail.task is not None:
                    tail.task.cancel()

    async def _follow(self, tail: Tail) -> None:
        try:
            while True:
                tail.nudged.clear()  # before the look: a commit after it wakes the wait
                self.looks += 1
                head = self.pages.head(tail.run_id)
                if head is not None and head.last_seq > tail.seq:
                    found = read_frames(self.store, tail.run_id, tail.seq)
                    if found:
                        tail.add(found)
                        await asyncio.sleep(0)  # the clients send them
                        continue
                if head is None or head.status in ENDED_FOR_GOOD:
                    tail.end()  # one statement read both: no event after head.last_seq
                    return
                await self._idle(tail)
        except StoreError as exc:
            tail.end(str(exc))

    async def _idle(self, tail: Tail) -> None:
        if not self._notified:
            await asyncio.sleep(POLL_SECONDS)
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(tail.nudged.wait(), NOTIFIED_POLL_SECONDS)

    def _listen(self) -> None:
        """Start the store's commit feed (Postgres: LISTEN) with the first tail."""
        if not self._notified or self._feed is not None:
            return
        assert isinstance(self.store, Notify)
        loop = asyncio.get_running_loop()
        try:
            self._feed = self.store.commit_listener()
        except StoreError:
            self._notified = False  # cannot LISTEN: poll as over SQLite
            return

        def on_commit(run_id: str) -> None:  # in the feed's thread
            loop.call_soon_threadsafe(self._nudge, run_id)

        self._feed.start(on_commit)

    def _nudge(self, run_id: str) -> None:
        tail = self.runs.get(run_id)
        if tail is not None:
            tail.nudged.set()

    def close(self) -> None:
        if self._feed is not None:
            self._feed.close()
            self._feed = None

    def exposition(self) -> str:
        """Prometheus lines: tails open, their clients, their looks at the store."""
        return (
            "# HELP swell_stream_tails Runs whose live streams share one tail.\n"
            "# TYPE swell_stream_tails gauge\n"
            f"swell_stream_tails {len(self.runs)}\n"
            "# HELP swell_stream_clients Live run streams open.\n"
            "# TYPE swell_stream_clients gauge\n"
            f"swell_stream_clients {sum(t.clients for t in self.runs.values())}\n"
            "# HELP swell_stream_tail_looks_total Looks of the tails at the store.\n"
            "# TYPE swell_stream_tail_looks_total counter\n"
            f"swell_stream_tail_looks_total {self.looks}\n"
        )


async def client_frames(
    store: Store, tail: Tail, after: int, batched: bool = False
) -> AsyncIterator[str]:
    """The frames one client is sent after seq `after`, joined a batch at a time (one
    write to the socket, not one an event): from the store while it is behind the
    tail, then from the tail; `end` once the run ended and all was sent. A batched
    client gets one message per BATCH_SECONDS at most (see `send`)."""
    sent = 0.0
    while True:
        if batched:  # what comes within the window joins the next message
            await asyncio.sleep(max(0.0, sent + BATCH_SECONDS - time.monotonic()))
        found = tail.since(after)
        if found is None:  # older than the tail holds: a batch from the store
            found = read_frames(store, tail.run_id, after)
            if not found:  # (the tail only ever moves on: it holds the next ones now)
                found = tail.since(after) or []
        if found:
            after = found[-1][0]
            sent = time.monotonic()
            yield send(found, batched)
            continue
        if tail.error is not None:
            raise StoreError(tail.error)
        if tail.over:
            yield f"id: {after}\nevent: end\ndata: {{}}\n\n"
            return
        yield ""  # nothing yet: the caller may send a keep-alive, then this waits
        await tail.changed(QUIET_SECONDS)
