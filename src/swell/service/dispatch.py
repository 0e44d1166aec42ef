"""The dispatcher: polls a work source and starts one run per new item, exactly once.

Each item's run is recorded with its dispatch key (store/dispatch.py) in one
transaction, through the executor seam (`Executor.start`), and handed on (`detach`)
by worker threads (`HandOns`), several at once, so the next item is recorded while
earlier runs' processes start: a local run goes on in a `swell resume` process of its
own, a Temporal run in its workflow, so a
dispatcher that dies (kill -9 included) takes no run with it. Restarted, it skips what
the store says was dispatched and hands on a run it recorded but had not handed on yet
(pending, claimed by nobody). Several dispatchers on one store share the items: the
key's unique constraint lets one of them create each run (docs/service.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

from swell.errors import RunBusy, SwellError
from swell.events.statuses import ENDED_FOR_GOOD
from swell.store.capabilities import dispatch
from swell.store.dispatch import AlreadyDispatched, DispatchKey

if TYPE_CHECKING:
    from pathlib import Path

    from swell.manifest.loader import LoadedPipeline
    from swell.runtime import Runtime
    from swell.service.sources import Source, WorkItem
    from swell.store.rows import RunRow

OnFailure = Literal["continue", "halt"]
# what a detached local run is resumed with: no terminal there, a gate waits for approval
DETACHED_ARGS = ["-o", "text", "--wait"]


@dataclass(frozen=True)
class Target:
    """Where an item goes: its pipeline and the key's pipeline name (None: no pipeline
    takes it, with the reason)."""

    pipeline: LoadedPipeline | None
    why: str = ""


@dataclass
class Settings:
    max_concurrent: int = 0  # 0: no limit
    on_failure: OnFailure = "continue"
    engine: str = "local"
    auto_approve: bool = False


@dataclass
class Tally:
    started: list[str] = field(default_factory=list)  # run ids, in order
    failed: list[str] = field(default_factory=list)
    skipped: int = 0  # items no pipeline takes (or label_filter leaves out)
    halted: bool = False


class Dispatcher:
    """One source, routed to pipelines by `target`; `cycle()` is one poll."""

    def __init__(
        self,
        rt: Runtime,
        source: Source,
        target: Callable[[WorkItem], Target],
        settings: Settings,
        say: Callable[[str], None],
    ) -> None:
        self.rt, self.source, self.target = rt, source, target
        self.settings, self.say = settings, say
        self.name = source.uri
        self.tally = Tally()
        self.active: set[str] = set()  # runs dispatched here or found unfinished
        self.done: set[tuple[str, str]] = set()  # (item, pipeline) known dispatched
        self._recovered = False
        self._told: set[str] = set()  # items whose skipping was said once
        self._this_cycle: dict[str, int] = {}  # pipeline -> runs started this poll
        self.unhanded: set[str] = set()  # recorded runs whose process did not start
        self.handing = HandOns(rt.project.root, settings.max_concurrent or HAND_ON_WIDTH, say)

    # ------------------------------------------------------------------ one poll

    def cycle(self) -> None:
        """Reap ended runs, hand on orphans (first cycle), dispatch new items."""
        reap_children()
        self._this_cycle.clear()
        self.unhanded |= self.handing.failed()
        if not self._recovered:
            self._recover()
            self._recovered = True
        for run_id in sorted(self.unhanded):
            self.unhanded.discard(run_id)
            if _orphaned(self.rt, self.rt.store.get_run(run_id)):
                self.handing.submit(run_id)
        self._check_ended()
        if self.tally.halted:
            return
        for item in self.source.poll():
            if self._full():
                return
            self._offer(item)
            if self.tally.halted:
                return

    def _offer(self, item: WorkItem) -> None:
        chosen = self.target(item)
        if chosen.pipeline is None:
            if item.id not in self._told:
                self._told.add(item.id)
                self.tally.skipped += 1
                self.say(f"item {item.id}: skipped ({chosen.why})")
            return
        name = chosen.pipeline.name
        if (item.id, name) in self.done:
            return
        batch = chosen.pipeline.pipeline.input.batch_size  # Wave's: items per poll
        if batch and self._this_cycle.get(name, 0) >= batch:
            return
        key = DispatchKey(self.source.uri, item.id, name)
        try:
            run_id = self._start(chosen.pipeline, item, key)
        except AlreadyDispatched:
            self.done.add((item.id, name))  # another dispatcher (or an earlier one) has it
            return
        except SwellError as exc:  # said once; a restarted watcher tries the item again
            self.say(f"item {item.id}: not started: {exc}")
            self.done.add((item.id, name))
            self._failed(item.id)
            return
        self.done.add((item.id, name))
        self.active.add(run_id)
        self.tally.started.append(run_id)
        self._this_cycle[name] = self._this_cycle.get(name, 0) + 1
        self.say(f"item {item.id}: run {run_id} ({name})")

    def _full(self) -> bool:
        limit = self.settings.max_concurrent
        return bool(limit) and len(self.active) >= limit

    def _start(self, loaded: LoadedPipeline, item: WorkItem, key: DispatchKey) -> str:
        run_id = record_item(self.rt, loaded, item.input, key, self.settings)
        self.handing.submit(run_id, told=False)  # the next item is recorded meanwhile
        return run_id

    def finish(self) -> None:
        """Wait for the hand-ons under way (a stopping watcher leaves none half done)."""
        self.handing.finish()

    # ------------------------------------------------------------------ runs

    def _check_ended(self) -> None:
        for run_id in sorted(self.active):
            status = self.rt.store.get_run(run_id).status
            if status in ENDED_FOR_GOOD:
                self.active.discard(run_id)
                if status != "succeeded":
                    self.say(f"run {run_id} {status}")
                    self._failed(run_id)

    def _failed(self, what: str) -> None:
        self.tally.failed.append(what)
        if self.settings.on_failure == "halt":
            self.tally.halted = True
            self.say("halting: --on-failure halt")

    def _recover(self) -> None:
        """This source's runs not ended yet count against --max-concurrent; one still
        pending with no process executing it was recorded by a dispatcher that died
        before handing it on: hand it on now."""
        for row in dispatch(self.rt.store).dispatched(self.source.uri):
            self.done.add((row.item, row.pipeline))
            run = self.rt.store.get_run(row.run_id)
            if run.status in ENDED_FOR_GOOD:
                continue
            self.active.add(run.id)
            if _orphaned(self.rt, run):
                self.handing.submit(run.id)


def hand_on(rt: Runtime, run_id: str, say: Callable[[str], None], told: bool = True) -> bool | None:
    """Let a recorded run nobody executes go on in a process of its own: True when
    handed on (said when `told`), None when its engine or another process has it,
    False when it failed (said)."""
    from swell.executors import executor_for, start_held

    run = rt.store.get_run(run_id)
    executor = executor_for(run)
    try:
        if executor.held_by is not None:  # its engine (Temporal) executes it, once started
            if not start_held(rt, run):
                return None
            if told:
                say(f"run {run_id}: handed on")
            return True
        started = executor.resume(rt, run)
        executor.detach(rt, started, DETACHED_ARGS)
    except RunBusy:
        return None  # another dispatcher is handing it on
    except SwellError as exc:
        say(f"run {run_id}: cannot hand it on: {exc}")
        return False
    if told:
        say(f"run {run_id}: handed on")
    return True


HAND_ON_WIDTH = 8  # hand-ons at once without --max-concurrent


class HandOns:
    """Hands recorded runs on from worker threads (each with a runtime of its own),
    `width` at once: a run's process takes seconds to start on a loaded machine, and
    waiting for each in turn capped a dispatcher at a few items a minute. Exactly once
    still holds: the key was committed with the run before it comes here, and a run
    executes only in the process that claims it."""

    def __init__(self, root: Path, width: int, say: Callable[[str], None]) -> None:
        self.root, self.say = root, say
        self.pool = ThreadPoolExecutor(max_workers=max(1, width), thread_name_prefix="hand-on")
        self.local = threading.local()
        self.runtimes: list[Runtime] = []
        self.lock = threading.Lock()
        self.futures: dict[str, Future[bool | None]] = {}

    def submit(self, run_id: str, told: bool = True) -> None:
        """Hand `run_id` on (`told`: say so when done; a failure is always said)."""
        with self.lock:
            if run_id in self.futures and not self.futures[run_id].done():
                return  # under way already
            self.futures[run_id] = self.pool.submit(self._hand_on, run_id, told)

    def failed(self) -> set[str]:
        """Runs whose hand-on ended and failed (said), to try again; forgotten here."""
        with self.lock:
            ended = {r: f for r, f in self.futures.items() if f.done()}
            for run_id in ended:
                del self.futures[run_id]
        return {r for r, f in ended.items() if f.exception() is not None or f.result() is False}

    def finish(self) -> None:
        self.pool.shutdown(wait=True)
        for rt in self.runtimes:
            rt.store.close()

    def _hand_on(self, run_id: str, told: bool) -> bool | None:
        rt: Runtime | None = getattr(self.local, "rt", None)
        if rt is None:
            from swell.runtime import open_runtime

            rt = self.local.rt = open_runtime(self.root)
            with self.lock:
                self.runtimes.append(rt)
        try:
            return hand_on(rt, run_id, self.say, told)
        except SwellError as exc:  # the store failed: said, tried again at the next poll
            self.say(f"run {run_id}: cannot hand it on: {exc}")
            return False


def orphans(rt: Runtime, source: str) -> list[str]:
    """The source's dispatched runs still pending with no process executing them (their
    dispatcher stopped between recording and handing on)."""
    runs = [rt.store.get_run(row.run_id) for row in dispatch(rt.store).dispatched(source)]
    return [run.id for run in runs if _orphaned(rt, run)]


def _orphaned(rt: Runtime, run: RunRow) -> bool:
    """Recorded, and not handed on: pending, and no process executes it."""
    return run.status == "pending" and rt.store.owner(run.id) is None


def record_item(
    rt: Runtime, loaded: LoadedPipeline, text: str, key: DispatchKey, settings: Settings
) -> str:
    """Record the item's run with its key (AlreadyDispatched: it has one), not handed
    on yet: a local run is left pending and claimed by nobody, for `hand_on` (a
    Temporal run goes on in its workflow). The run id."""
    from swell.engine.visit.context import RunOptions
    from swell.executors import executor_named
    from swell.store.capabilities import claims

    options = RunOptions(auto_approve=settings.auto_approve, dispatch_key=key)
    started = asyncio.run(executor_named(rt, settings.engine).start(rt, loaded, text, options))
    if started.plan is not None:
        claims(rt.store).release(started.run_id)
    return started.run_id


def start_item(
    rt: Runtime, loaded: LoadedPipeline, text: str, key: DispatchKey, settings: Settings
) -> str:
    """Record the item's run with its key (AlreadyDispatched: it has one) and let its
    engine execute it without this process: the run id."""
    from swell.engine.visit.context import RunOptions
    from swell.executors import executor_named

    options = RunOptions(auto_approve=settings.auto_approve, dispatch_key=key)
    executor = executor_named(rt, settings.engine)
    started = asyncio.run(executor.start(rt, loaded, text, options))
    try:
        executor.detach(rt, started, DETACHED_ARGS)
    except SwellError as exc:  # recorded, not going: a dispatcher hands it on later
        raise NotHandedOn(started.run_id, exc) from None
    return started.run_id


class NotHandedOn(SwellError):
    """The item's run is recorded (its key with it) but its process did not start."""

    def __init__(self, run_id: str, exc: SwellError) -> None:
        super().__init__(f"run {run_id} is recorded but did not start: {exc}")
        self.run_id = run_id


def reap_children() -> None:
    """Collect detached runs' processes that ended (a long-lived parent must)."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


class Poller(Protocol):
    """What `watch_loop` polls: a source's dispatcher, or the schedules."""

    name: str
    tally: Tally

    def cycle(self) -> None: ...

    def finish(self) -> None:
        """Let what the polls set going finish starting (called once, at the end)."""
        ...


def watch_loop(pollers: Sequence[Poller], interval: float, stop: threading.Event) -> list[Tally]:
    """Poll each every `interval` seconds until `stop` is set (after a first poll) or one
    halts. A poll that fails (a forge CLI down) is said and tried again next time."""
    while True:
        for poller in pollers:
            try:
                poller.cycle()
            except SwellError as exc:
                print(f"{poller.name}: poll failed: {exc}", file=sys.stderr, flush=True)
        if stop.is_set() or any(p.tally.halted for p in pollers) or stop.wait(interval):
            break
    for poller in pollers:
        poller.finish()
    return [p.tally for p in pollers]
