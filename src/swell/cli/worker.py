"""`swell worker`, and the CLI's side of runs the Temporal engine executes: `swell run
--engine temporal`, and `approve`, `reject`, `cancel`, `resume` of such a run
(executors/temporal/, docs/scale-out.md)."""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import time
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from swell.cli.common import print_json, project_dir
from swell.cli.render import for_terminal

if TYPE_CHECKING:
    from collections.abc import Sequence

    from temporalio.client import Client

    from swell.cli.runs import RunOutput
    from swell.engine.context import GatePrompter, RunOptions
    from swell.events.bus import EventSink
    from swell.events.models import BaseEvent
    from swell.executors.temporal.client import Engine
    from swell.executors.temporal.specs import RunOutcome
    from swell.manifest.loader import LoadedPipeline
    from swell.manifest.models import Step, TemporalConfig
    from swell.runtime import Runtime
    from swell.store.protocols import Store
    from swell.store.rows import RunRow

MAX_SLOTS = 1_000  # each slot may hold an agent process; past this a machine runs out first
FOLLOW_EVERY = 0.2  # seconds between two reads of a followed run's new events
GATES_EVERY = 1.0  # seconds between two looks at a followed run's waiting gates


def _project_config(ctx: typer.Context) -> TemporalConfig | None:
    """`runtime.temporal` of the project here, if there is one (a worker needs none)."""
    from swell.errors import SwellError
    from swell.manifest.loader import load_project

    try:
        return load_project(project_dir(ctx)).manifest.runtime.temporal
    except SwellError:
        return None


def worker(
    ctx: typer.Context,
    queue: Annotated[
        str | None,
        typer.Option(
            "--queue",
            "-q",
            help="Task queue to serve (default: $SWELL_TEMPORAL_QUEUE, runtime.temporal."
            "queue, else `swell`).",
        ),
    ] = None,
    slots: Annotated[
        int,
        typer.Option(
            "--slots", min=1, max=MAX_SLOTS, help="Visits this worker runs at once, at most."
        ),
    ] = 4,
    address: Annotated[
        str | None,
        typer.Option(
            "--address",
            help="Temporal server host:port (default: $SWELL_TEMPORAL_ADDRESS, runtime."
            "temporal.address, else 127.0.0.1:7233).",
        ),
    ] = None,
) -> None:
    """Run visits of engine runs (`swell run --engine temporal`) until stopped (Ctrl-C,
    SIGTERM). Serves runs of any project: each run says where its project and store are."""
    from swell.executors.temporal.client import configured
    from swell.executors.temporal.worker import serve

    engine = configured(_project_config(ctx), address)
    if queue:
        engine = dataclasses.replace(engine, queue=queue)

    def ready() -> None:
        print(f"worker ready: queue {engine.queue} on {engine.address}, {slots} slots", flush=True)

    asyncio.run(serve(engine, slots, ready))


# ------------------------------------------------------------------ swell run


def run_on_engine(
    rt: Runtime,
    loaded: LoadedPipeline,
    input_text: str,
    options: RunOptions,
    output: RunOutput,
    *,
    verbose: bool,
    detach: bool,
    stop_at_gates: bool = False,
    prompter: GatePrompter | None = None,
) -> NoReturn:
    """Record the run, start its workflow, and (unless `detach`) follow it here until
    it ends; exits as a local run would. `stop_at_gates` (nobody here to ask): stop
    following at an approval gate, exit 3 with the commands that decide it, while the
    workflow waits for the decision on the engine. `prompter`: ask at this terminal at
    each approval gate of the run, and send the answer to the workflow."""
    from swell.cli.runs import EXIT_CODES, RunOutput, _print_waiting, _sinks
    from swell.executors.temporal import client as engines

    engine = engines.configured(rt.project.manifest.runtime.temporal)
    started: list[str] = []  # the run's id, once recorded (for the Ctrl-C message)

    async def begin() -> tuple[Client, str]:
        client = await engines.connect(engine)  # nothing is recorded when unreachable
        spec = engines.record_run(rt, loaded, input_text, options, engine)
        started.append(spec.run_id)
        try:
            await engines.start(client, engine, spec)
        except Exception as exc:
            _fail_unstarted(rt.store, spec.run_id, f"the engine did not start it: {exc}")
            raise
        return client, spec.run_id

    async def main() -> RunOutcome | str | None:
        client, run_id = await begin()
        if detach:
            return run_id
        if output is RunOutput.text:
            print(f"run {run_id}", flush=True)
        sinks = _sinks(output, run_id, verbose)
        if prompter is None:
            return await _follow(client, rt.store, run_id, sinks, stop_at_gates)
        steps = {step.id: step for step in loaded.pipeline.steps}
        asker = _Asker(prompter, client, run_id, steps)
        try:
            return await _follow(client, rt.store, run_id, [*sinks, asker], stop_at_gates)
        finally:
            asker.close()

    try:
        result = asyncio.run(main())
    except KeyboardInterrupt:
        run = started[0] if started else "RUN"
        print(
            f"the run goes on on the engine: `swell logs {run} --follow`, `swell cancel {run}`",
            file=sys.stderr,
        )
        raise typer.Exit(130) from None
    if isinstance(result, str):
        _detached(result, engine, output)
    if result is None:  # at an approval gate, with nobody here to ask
        run_id = started[0]
        out = sys.stdout if output is RunOutput.text else sys.stderr
        then = (
            f"  then it goes on by itself on the engine; follow it: swell logs {run_id} --follow\n"
        )
        _print_waiting(rt, run_id, out, then=then, approvals=True)
        raise typer.Exit(EXIT_CODES["waiting"])
    if output is RunOutput.quiet and result.status in ("failed", "cancelled"):
        error = for_terminal(result.error or "")
        print(f"error: run {result.run_id} {result.status}: {error}", file=sys.stderr)
    raise typer.Exit(EXIT_CODES.get(result.status, 1))


def _detached(run_id: str, engine: Engine, output: RunOutput) -> NoReturn:
    from swell.cli.runs import RunOutput

    if output is RunOutput.json:
        print_json({"run_id": run_id, "engine": "temporal", "address": engine.address})
    elif output is RunOutput.quiet:
        print(run_id)
    else:
        print(f"run {run_id} (on the Temporal engine at {engine.address}, queue {engine.queue})")
        print(f"follow it: swell logs {run_id} --follow   status: swell status {run_id}")
    raise typer.Exit(0)


def _fail_unstarted(store: Store, run_id: str, error: str) -> None:
    from swell.events import models as ev
    from swell.events.codec import stamp

    failed = ev.RunFinished(status="failed", error=error)
    stamp([failed], run_id, 0)
    store.emit([failed])


async def _follow(
    client: Client, store: Store, run_id: str, sinks: list[EventSink], stop_at_gates: bool
) -> RunOutcome | None:
    """Show the run's events as the workflow stores them, until it ends; None when it
    waits at an approval gate and `stop_at_gates` (the workflow goes on waiting)."""
    from swell.cli.runs import waiting_gates
    from swell.executors.temporal.client import outcome

    ended = asyncio.ensure_future(outcome(client, run_id))
    seen = 0
    looked = 0.0  # when the run's gates were last looked at
    while True:
        finished = ended.done()
        events = store.events(run_id, seen)
        if events:
            seen = events[-1].seq
            for sink in sinks:
                sink.emit(events)
        if finished:
            return ended.result()
        # a sub-pipeline's gate writes no event of this run: look now and then as well
        if stop_at_gates and (events or time.monotonic() - looked >= GATES_EVERY):
            looked = time.monotonic()
            if waiting_gates(store, run_id, approvals=True):
                ended.cancel()
                return None
        await asyncio.wait([ended], timeout=FOLLOW_EVERY)


class _Asker:
    """An event sink that asks at this terminal about each approval gate of the run as
    it starts to wait, and sends the answer to the run's workflow; a gate decided
    elsewhere (`swell approve`, the dashboard) ends its question."""

    def __init__(
        self, prompter: GatePrompter, client: Client, run_id: str, steps: dict[str, Step]
    ) -> None:
        self.prompter, self.client, self.run_id, self.steps = prompter, client, run_id, steps
        self.asking: dict[str, asyncio.Task[None]] = {}
        self.terminal = asyncio.Lock()  # one question at a time

    def emit(self, events: Sequence[BaseEvent]) -> None:
        from swell.events import models as ev

        for e in events:
            step = e.step_id or ""
            if isinstance(e, ev.GateWaiting) and e.gate_type == "approval" and step in self.steps:
                if step not in self.asking:
                    self.asking[step] = asyncio.ensure_future(self._ask(step, e.message))
            elif isinstance(e, ev.GateResolved) and step in self.asking:
                self.asking.pop(step).cancel()

    async def _ask(self, step: str, message: str) -> None:
        from swell.errors import SwellError
        from swell.executors.temporal import client as engines
        from swell.executors.temporal.specs import GateRequest

        async with self.terminal:
            answer = await self.prompter.ask(self.run_id, self.steps[step], message)
        if answer is None:
            return  # stdin closed: `swell approve` from elsewhere still decides it
        request = GateRequest(
            decision=answer.decision,
            step_id=step,
            choice=answer.choice,
            reason=answer.reason,
            by=answer.by,
        )
        try:
            await engines.decide(self.client, self.run_id, request)
        except SwellError as exc:  # decided elsewhere in the meantime
            print(f"note: {for_terminal(str(exc))}", file=sys.stderr)

    def close(self) -> None:
        for task in self.asking.values():
            task.cancel()


# ----------------------------------------------------- gates, cancel, resume


def engine_of(run: RunRow) -> Engine | None:
    from swell.executors.temporal.client import engine_of as engine_in

    return engine_in(run.options)


def decide_on_engine(run: RunRow, engine: Engine, step: str | None, **decision: Any) -> str:
    """Deliver `swell approve` / `swell reject` to the run's workflow; returns the gate's
    step. "No gate is waiting" comes back at once."""
    from swell.executors.temporal import client as engines
    from swell.executors.temporal.specs import GateRequest

    async def go() -> str:
        client = await engines.connect(engine)
        return await engines.decide(client, run.id, GateRequest(step_id=step, **decision))

    return asyncio.run(go())


def cancel_on_engine(store: Store, run: RunRow, engine: Engine, wait: float = 30) -> None:
    """Cancel the run's workflow and wait until it has recorded the run as cancelled."""
    from swell.executors.temporal import client as engines
    from swell.runtime import FINAL

    async def go() -> None:
        await engines.cancel(await engines.connect(engine), run.id)

    asyncio.run(go())
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        status = store.get_run(run.id).status
        if status in FINAL:
            print(f"{status} run {run.id}" if status != "cancelled" else f"cancelled run {run.id}")
            return
        time.sleep(0.1)
    print(f"cancel requested; the engine has not stopped run {run.id} yet")
    raise typer.Exit(1)


def refuse_resume(run: RunRow, engine: Engine) -> NoReturn:
    from swell.errors import RunStateError

    raise RunStateError(
        f"run {run.id} is executed by the Temporal engine at {engine.address}; it goes on "
        f"there by itself, on any worker of queue {engine.queue} (follow it: swell logs "
        f"{run.id} --follow)"
    )
