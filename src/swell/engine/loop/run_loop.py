"""The one run loop every engine runs: start the ready visits, wait for any to end,
settle what they lead to, store the events, and end the run.

The loop takes no decision of its own (`completion.Decisions` and `policies` do) and
has no clock and no I/O: a `Driver` launches visits, waits for them, stores events
and tells the time. There are two: the asyncio runner of runs in this process
(engine/loop/runner.py) and the Temporal workflow (executors/temporal/workflow.py), which
therefore run the same loop and take the same decisions. Every event is stamped and
folded into the run's state here, so the state is the fold of exactly the events
the driver stores.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from swell.engine.loop.decisions import Decisions, Visit, queue
from swell.engine.loop.policies import RunEnd, final_end, idle_end
from swell.engine.loop.state import RunState
from swell.engine.visit.context import StepResult
from swell.errors import StoreError, SwellError, disk_broken
from swell.events import models as ev
from swell.events.codec import stamp
from swell.events.models import FinalStatus

Ended = tuple[Visit, StepResult, int]  # a visit that ended, its result, its duration in ms
_R = TypeVar("_R", covariant=True)


class Finished(Protocol[_R]):
    """A visit's task once it ended (an `asyncio.Task`: the loop has no asyncio)."""

    def result(self) -> _R: ...


def visit_result(task: Finished[_R], disk: str = "") -> _R | StepResult:
    """What an ended visit's task gave, or its exception as the visit's failure: a bug in
    a step kind must not lose the run. A store failure stops the run; so does a full or
    read-only disk under `disk` (the run's files), when the driver names one."""
    try:
        return task.result()
    except StoreError:
        raise  # the store failed, not the step
    except SwellError as exc:  # a clear message (a file a step replaced by a FIFO, ...)
        return StepResult(outcome="failure", error=str(exc))
    except OSError as exc:
        broken = disk_broken(exc, exc.filename or disk) if disk else None
        if broken is not None:
            raise broken from None
        return StepResult(outcome="failure", error=f"internal error: {exc!r}")
    except Exception as exc:
        return StepResult(outcome="failure", error=f"internal error: {exc!r}")


class Driver(Protocol):
    """What a run loop needs from where it runs: launching visits, waiting for them,
    storing events, a clock; nothing else."""

    def now(self) -> float:
        """Seconds on the driver's clock (the run's duration)."""

    def timestamp(self) -> str:
        """The time events recorded now are stamped with (`events.models.now_iso`)."""

    def hand_over(self, pending: list[ev.BaseEvent], visit: Visit) -> bool:
        """Whether `visit`, the only one starting, takes the recorded events with it and
        stores them before it does any work (then they are taken off `pending`), instead
        of their being written first: one round trip less per visit. The loop writes
        nothing more until it has waited for the visit to end."""

    def launch(self, visit: Visit) -> None:
        """Start the visit; `wait_any` reports when it ends."""

    async def wait_any(self) -> list[Ended]:
        """Wait until visits end and return them, in the order to settle them; none
        when the wait ended for another reason (the run is to stop)."""

    async def write(self, pending: list[ev.BaseEvent]) -> None:
        """Store the recorded events, in order, taking those stored off `pending`."""

    async def cancel_all(self) -> None:
        """Cancel the running visits and wait until they (and their processes) are gone."""

    async def idle(self) -> None:
        """Nothing runs: a moment to let go of what the driver holds (Temporal's
        continue-as-new)."""


class RunLoop:
    """One run's loop over a driver; the run's state is the fold of what it records."""

    def __init__(self, decide: Decisions, state: RunState, driver: Driver, started: float) -> None:
        self.decide = decide
        self.state = state
        self.driver = driver
        self.started = started  # on the driver's clock
        self.pending: list[ev.BaseEvent] = []  # recorded, not yet stored
        self.running: dict[tuple[str, int], Visit] = {}  # launched, in launch order
        # open visits that wait for `swell resume` (StepResult.waiting)
        self.parked: list[Visit] = []
        self.stopping: FinalStatus | None = None  # interrupted | cancelled

    # ------------------------------------------------------------------ events

    def record(self, events: Sequence[ev.BaseEvent]) -> None:
        """Stamp and fold events; the next `flush` stores them.

        The loop flushes before a visit starts and before it waits, so everything a
        visit produced is stored before the next visit does any work; batching the
        end of one visit with the start of the next saves a write per visit."""
        if not events:
            return
        stamp(events, self.state.run_id, self.state.seq, self.driver.timestamp())
        for event in events:
            self.state.apply(event)
        self.pending.extend(events)

    async def flush(self) -> None:
        await self.driver.write(self.pending)

    def begin(self, started: ev.RunStarted, *notes: ev.BaseEvent) -> None:
        """Record a new run's start: `run.started`, its entry steps queued, and `notes`
        about how it runs (warnings)."""
        self.record([started, *queue(self.decide.graph.entry_activations(), ()), *notes])

    def launch(self, visit: Visit) -> None:
        self.running[(visit.step.id, visit.visit)] = visit
        self.driver.launch(visit)

    def elapsed_ms(self) -> int:
        return int((self.driver.now() - self.started) * 1000)

    # -------------------------------------------------------------------- tick

    async def run(self) -> RunEnd:
        """Tick until the run ends, stops or only waits for decisions."""
        while True:
            end = await self.tick()
            if end is not None:
                return end

    async def tick(self) -> RunEnd | None:
        """Start what is ready; settle what routes at once, or else wait for visits to
        end and settle those; how the run ends, when it does."""
        if self.stopping:
            return await self.stop(self.stopping)
        if not self.running:
            await self.driver.idle()
        busy = {v.step.id for v in self.running.values()} | {v.step.id for v in self.parked}
        starts = self.decide.start_ready(self.state, busy)
        self.record(starts.events)
        if starts.end:
            return await self.finish(starts.end)
        decided: list[Ended] = []
        launch: list[Visit] = []
        for visit in starts.visits:
            kind = self.decide.kinds.of(visit.step)
            result = kind.route(visit.step, visit.activation, self.state)
            if result is None:
                launch.append(visit)
            else:
                decided.append((visit, result, 0))
        if launch:
            # a visit reads the run's state from the store: what is recorded is stored
            # first, by the driver or by the visit itself; the latter only when nothing
            # is recorded after it before the loop waits for the visit (no visit decided
            # at once), so no later batch can be written before it
            alone = len(launch) == 1 and not decided and self.pending
            if not (alone and self.driver.hand_over(self.pending, launch[0])):
                await self.flush()
            for visit in launch:
                self.launch(visit)
        if decided:
            # what they routed to starts before anything more is stored
            end = self.settle(decided)
            return None if end is None else await self.finish(end)
        if not self.running:
            if self.parked:
                return await self.wait()
            return await self.finish(idle_end(self.state))
        await self.flush()
        ended = await self.driver.wait_any()
        end = self.settle(self._unpark(ended))
        return None if end is None else await self.finish(end)

    def _unpark(self, ended: list[Ended]) -> list[Ended]:
        """The ended visits that finished; those waiting for a decision stay open."""
        finished = []
        for visit, result, duration_ms in ended:
            del self.running[(visit.step.id, visit.visit)]
            if result.waiting:
                self.parked.append(visit)
            else:
                finished.append((visit, result, duration_ms))
        return finished

    def settle(self, ended: list[Ended]) -> RunEnd | None:
        """Record how each visit ended and where it leads; how the run ends, when one
        of them ends it."""
        for visit, result, duration_ms in ended:
            done = self.decide.complete(visit, result, duration_ms, self.state)
            self.record(done.events)
            if done.end is not None:
                return done.end
        return None

    # ------------------------------------------------------------------ ending

    async def cancel(self) -> list[Visit]:
        """Cancel the running visits and wait until they are gone; returns them, and
        the open visits that were waiting."""
        running = list(self.running.values())
        await self.driver.cancel_all()
        self.running.clear()
        running += self.parked
        self.parked = []
        return running

    async def finish(self, end: RunEnd) -> RunEnd:
        """The run ends (succeeded, failed, rejected): visits still running stop."""
        running = await self.cancel()
        end = final_end(self.state, end)
        self.record(self.decide.finish(self.state, running, end, self.elapsed_ms()))
        await self.flush()
        return end

    async def stop(self, status: FinalStatus) -> RunEnd:
        """Stop for Ctrl-C or `swell cancel`; gates waiting for a decision stay open
        for `swell resume` (the run then ends `waiting`)."""
        running = await self.cancel()
        done = self.decide.stop(self.state, running, status, self.elapsed_ms())
        self.record(done.events)
        await self.flush()
        assert done.end is not None
        return done.end

    async def wait(self) -> RunEnd:
        """Only visits waiting for a decision are left (a gate no one here is asked
        about, a sub-pipeline stopped at one): they stay open, and the run stops
        `waiting` until `swell resume` continues them."""
        if self.state.status != "waiting":
            self.record([ev.RunWaiting(gates=[v.step.id for v in self.parked])])
        await self.flush()
        return RunEnd("waiting")
