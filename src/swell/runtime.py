"""The one place that wires store, registries, observers and the engine together.

The CLI and the dashboard call these functions; the engine knows none of the concrete parts.
"""

from __future__ import annotations

import asyncio
import atexit
import dataclasses
import gc
import json
import os
import shutil
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from swell.engine.loop.runner import Runner, RunSummary
from swell.engine.loop.state import RunState
from swell.engine.visit.context import (
    ChildOutcome,
    ChildRequest,
    GateDecision,
    GatePrompter,
    RunOptions,
    RunPlan,
    Services,
)
from swell.errors import RunStateError, StoreBroken, SwellError
from swell.events import models as ev
from swell.events.bus import EventBus, EventSink
from swell.events.codec import stamp
from swell.events.redact import MASK, Redactor
from swell.events.statuses import ENDED_FOR_GOOD
from swell.manifest.lint import LintReport, lint_pipeline, lint_project
from swell.manifest.loader import (
    LoadedPipeline,
    Project,
    display_path,
    load_pipeline,
    load_project,
    load_stored_pipeline,
)
from swell.notify import run_observers
from swell.registries import Registries as Registries  # where callers found it first
from swell.registries import open_registries as open_registries
from swell.state_snapshots import StateSnapshots
from swell.store.capabilities import claims, output_store
from swell.store.dispatch import record_run
from swell.store.location import open_store, state_dir_for, store_location
from swell.store.protocols import RunReader, Store
from swell.store.rows import RunRow
from swell.streaming import OutputSink, Tee
from swell.workspace import safe
from swell.workspace.owner import record_owner

if TYPE_CHECKING:
    from swell.ops.rerun import Reuse

FINAL = ENDED_FOR_GOOD


@dataclass
class Runtime:
    """A loaded project with its store and registries."""

    project: Project
    store: Store
    registries: Registries
    state_dir: Path


def open_runtime(start: Path | None = None) -> Runtime:
    project = load_project(start)
    state_dir = state_dir_for(project.root)
    store = open_store(store_location(project.root, project.manifest.runtime.store))
    return Runtime(project, store, open_registries(), state_dir)


def check_pipeline(rt: Runtime, name: str) -> tuple[LoadedPipeline, LintReport]:
    """Load and lint a pipeline; errors raise ManifestError, warnings are returned."""
    loaded = load_pipeline(rt.project.root, name)
    return loaded, check_loaded(rt, loaded)


def check_loaded(rt: Runtime, loaded: LoadedPipeline) -> LintReport:
    """Lint the project and a loaded pipeline; errors raise ManifestError."""
    lint_ctx = rt.registries.lint_context()
    report = lint_project(rt.project, lint_ctx)
    report.problems += lint_pipeline(rt.project, loaded, lint_ctx).problems
    report.raise_errors()
    return report


def new_run_id(pipeline: str) -> str:
    """`<pipeline>-<UTC time>-<8 hex digits>` (4 digits clashed among 50 runs a second)."""
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return f"{pipeline}-{stamp}-{os.urandom(4).hex()}"


def _check_tools(loaded: LoadedPipeline) -> None:
    missing = [t for t in loaded.pipeline.requires.tools if shutil.which(t) is None]
    if missing:
        raise SwellError(f"pipeline '{loaded.name}' requires {', '.join(missing)} on PATH")


def create_run(
    rt: Runtime,
    loaded: LoadedPipeline,
    input_text: str,
    options: RunOptions,
    *,
    parent: RunPlan | None = None,
    parent_step: str | None = None,
    own_workspace: bool = False,
) -> RunPlan:
    """Record a new run, claimed by this process, and return its plan. A child run works
    in its parent's workspace unless it has one of its own (an iterate item)."""
    _check_tools(loaded)
    ahead = _ahead.get(loaded.name) if parent is None else None
    run_id = ahead or new_run_id(loaded.name)
    shared = parent is not None and not own_workspace
    workspace = parent.workspace if shared and parent else rt.state_dir / "workspaces" / run_id
    plan = _plan(rt, loaded, input_text, options, run_id, workspace, parent, parent_step)
    record_run(
        rt.store,
        None if parent else options.dispatch_key,  # a child's options are its parent's
        run_id=run_id,
        pipeline=loaded.name,
        input_text=input_text,
        workspace=str(workspace),
        pipeline_path=str(loaded.path),
        project_root=str(rt.project.root),
        parent_run_id=plan.parent_run_id,
        parent_step_id=parent_step,
        options=stored_options(options),
        pipeline_text=loaded.text,
    )
    if ahead:  # recorded: what was made for it is the run's
        del _ahead[loaded.name]
    if not shared:  # `swell clean` removes a workspace only from the store that keeps its run
        record_owner(workspace, rt.store.identity)
    claims(rt.store).claim(run_id)
    return plan


_ahead: dict[str, str] = {}  # pipeline -> the id `plan_ahead` picked for its next run


def plan_ahead(rt: Runtime, loaded: LoadedPipeline, options: RunOptions) -> RunPlan:
    """The plan of the top-level run of `loaded` this process is about to record: its id
    is picked now (the next `create_run` of the pipeline here takes it), so its sandbox's
    boxes start while the run is checked and recorded (engine/visit/sandboxing.py).
    What it made for a run that is then never recorded goes at exit."""
    run_id = _ahead[loaded.name] = new_run_id(loaded.name)
    plan = _plan(rt, loaded, "", options, run_id, rt.state_dir / "workspaces" / run_id)
    atexit.register(_unrecorded, loaded.name, run_id, (plan.workspace, plan.run_dir))
    return plan


def _unrecorded(pipeline: str, run_id: str, made: tuple[Path, ...]) -> None:
    """At exit: a run `plan_ahead` planned but nothing recorded (its checks failed)
    leaves no directories behind (its boxes, which see them, are closed first)."""
    if _ahead.get(pipeline) != run_id:
        return
    from swell.engine.visit.sandboxing import settled
    from swell.sandbox.boxes import close_all

    settled(run_id)  # (nothing is made after this)
    close_all()
    for path in made:
        shutil.rmtree(path, ignore_errors=True)


def _plan(
    rt: Runtime,
    loaded: LoadedPipeline,
    input_text: str,
    options: RunOptions,
    run_id: str,
    workspace: Path,
    parent: RunPlan | None = None,
    parent_step: str | None = None,
) -> RunPlan:
    return RunPlan(
        run_id=run_id,
        project=rt.project,
        pipeline=loaded,
        input=input_text,
        workspace=workspace,
        run_dir=rt.state_dir / "runs" / run_id,
        parent_run_id=parent.run_id if parent else None,
        parent_step_id=parent_step,
        options=options,
    )


def _retro_observers(rt: Runtime) -> list[EventSink]:
    """`runtime.retros` with `narrate: true`: the narrated retro kept at a run's end."""
    if not rt.project.manifest.runtime.retros.narrate:
        return []  # nothing to keep; the retro package stays unimported
    from swell.retro.record import retro_observers

    return list(retro_observers(rt))


def stored_options(options: RunOptions) -> dict[str, object]:
    """The run options a store keeps with a run (what a resume runs it with): the
    CLI's, and what a sub-pipeline run keeps from its parent step's `config` (when set)."""
    config: dict[str, object] = {"env": options.env, "artifacts": options.artifacts}
    config["max_cycles"] = options.max_cycles
    return {
        "auto_approve": options.auto_approve,
        "adapter": options.adapter,
        "model": options.model,
        **{k: v for k, v in config.items() if v},
    }


def start_from_step(
    rt: Runtime, loaded: LoadedPipeline, input_text: str, options: RunOptions, reuse: Reuse
) -> tuple[RunPlan, RunState]:
    """Record a new run that starts at `reuse.start` with what `reuse.previous` left
    before it (ops/rerun.py), claimed by this process; returns its plan and state."""
    from swell.ops.rerun import seed_events

    plan = create_run(rt, loaded, input_text, options)
    try:
        events = seed_events(
            reuse,
            loaded,
            rt.registries.step_kinds,
            input_text=input_text,
            workspace=plan.workspace,
            run_dir=plan.run_dir,
            runs=rt.state_dir / "runs",
        )
    except SwellError as exc:
        failed = ev.RunFinished(status="failed", error=str(exc))
        stamp([failed], plan.run_id, 0)
        rt.store.emit([failed])
        claims(rt.store).release(plan.run_id)
        raise
    stamp(events, plan.run_id, 0)
    rt.store.emit(events)
    return plan, RunState.replay(plan.run_id, events)


def _refuse_final(run: RunRow) -> None:
    if run.status in FINAL:
        raise RunStateError(f"run {run.id} already {run.status}; start a new run instead")


@dataclass
class Resumption:
    """A stored run, claimed by this process, ready to continue."""

    plan: RunPlan
    state: RunState
    notes: list[str]  # for the person resuming (the pipeline file changed since, ...)


def claim_for_resume(rt: Runtime, run_id: str) -> Resumption:
    """Claim a stored run for this process (RunBusy when another one executes it), then
    rebuild its plan and state from what its last executor left. Claiming first means
    no other process can add events between the replay and this one's first event."""
    run = rt.store.get_run(run_id)
    _refuse_final(run)
    claims(rt.store).claim(run.id)
    try:
        run = rt.store.get_run(run.id)
        _refuse_final(run)
        if run.status == "pending":  # a `--from-step` killed mid-copy is no run to continue
            from swell.ops.rerun import refuse_husk  # resuming only: not `swell run`'s start-up

            refuse_husk(rt.store, run)
        return _resumption(rt, run)
    except BaseException:
        claims(rt.store).release(run.id)
        raise


def _stored_pipeline(rt: Runtime, run: RunRow) -> tuple[LoadedPipeline, list[str]]:
    """The pipeline as the run started (runs older than that copy: the file as it is)."""
    text = rt.store.pipeline_text(run.id)
    path = Path(run.pipeline_path) if run.pipeline_path else None
    if text is None or path is None:
        ref = str(path) if path is not None and path.is_file() else run.pipeline
        return load_pipeline(rt.project.root, ref), []
    notes = []
    try:
        changed = safe.read_project_text(path) != text
    except (OSError, SwellError):
        changed = True
    if changed:
        notes.append(
            f"{display_path(path)} changed since run {run.id} started; "
            "it continues with the pipeline as it was then"
        )
    return load_stored_pipeline(path, text), notes


def stored_pipeline(rt: Runtime, run: RunRow) -> LoadedPipeline:
    """The pipeline as the run was recorded (what its executor starts it with)."""
    return _stored_pipeline(rt, run)[0]


def options_of(run: RunRow) -> RunOptions:
    """The options a stored run was recorded with (`stored_options`)."""
    opts = run.options
    return RunOptions(
        auto_approve=bool(opts.get("auto_approve")),
        adapter=opts.get("adapter"),
        model=opts.get("model"),
        env=dict(opts.get("env") or {}),
        artifacts=dict(opts.get("artifacts") or {}),
        max_cycles=opts.get("max_cycles"),
    )


def _missing_steps(loaded: LoadedPipeline, state: RunState) -> list[str]:
    """Steps the run has been through that the pipeline no longer has."""
    known = {s.id for s in loaded.pipeline.steps}
    used = set(state.numbered) | {a.step_id for a in state.queue}
    return sorted(used - known)


def load_state(store: RunReader, run_id: str) -> RunState:
    """A stored run's state: its newest snapshot followed by the events after it, or
    every event when it has no snapshot this version can read (the same state)."""
    from swell.ops.timetravel import has_rewinds, replay_events  # not for `swell run`'s start-up

    state, after = None, 0
    found = store.load_snapshot(run_id)
    if found is not None and found[0] >= has_rewinds(store, run_id):  # none from before a rewind
        try:
            state = RunState.from_snapshot(json.loads(found[1]))
        except ValueError:  # another version's, or damaged: replay everything
            state = None
        if state is not None and (state.run_id, state.seq) == (run_id, found[0]):
            after = found[0]
        else:
            state = None
    if state is None:
        state = RunState(run_id)
    for event in replay_events(store.events(run_id, after)):  # abandoned ones left out
        state.apply(event)
    return state


def _resumption(rt: Runtime, run: RunRow) -> Resumption:
    from swell.ops.timetravel import restore_pending  # not for `swell run`'s start-up

    restore_pending(rt.store, rt.state_dir, run)  # a fork or rewind killed halfway
    loaded, notes = _stored_pipeline(rt, run)
    check_loaded(rt, loaded)
    state = load_state(rt.store, run.id)
    missing = _missing_steps(loaded, state)
    if missing:
        names = ", ".join(f"'{m}'" for m in missing)
        raise RunStateError(
            f"run {run.id} cannot continue: pipeline {loaded.name} no longer has step "
            f"{names} (renamed or removed since the run started)"
        )
    options = options_of(run)
    if MASK in (run.input or ""):  # the store never keeps a secret the input held
        notes.append(
            f"run {run.id}'s input held secrets, which swell does not keep; it "
            f"continues with them masked ({MASK})"
        )
    parent_ws = Path(run.workspace) if run.workspace else rt.state_dir / "workspaces" / run.id
    plan = RunPlan(
        run_id=run.id,
        project=rt.project,
        pipeline=loaded,
        input=run.input or "",
        workspace=parent_ws,
        run_dir=rt.state_dir / "runs" / run.id,
        parent_run_id=run.parent_run_id,
        parent_step_id=run.parent_step_id,
        options=options,
    )
    return Resumption(plan, state, notes)


class StoreGates:
    """Gate decisions recorded in the store by `swell approve` / `swell reject`."""

    def __init__(self, store: RunReader) -> None:
        self.store = store

    def gate_decision(self, run_id: str, step_id: str, visit: int) -> GateDecision | None:
        row = self.store.pending_decision(run_id, step_id, visit)
        if row is None or row.decision is None:
            return None
        return GateDecision(row.decision, row.choice, row.reason, row.decided_by)


class StoreControl:
    def __init__(self, store: RunReader) -> None:
        self.store = store

    def cancel_requested(self, run_id: str) -> bool:
        return self.store.cancel_requested(run_id)


class ChildRunner:
    """Runs sub-pipelines as child runs in this process, sharing the parent's workspace."""

    def __init__(
        self,
        rt: Runtime,
        sink: EventSink,
        services_for: Callable[[], Services],
        snapshots: StateSnapshots | None = None,
    ) -> None:
        self.rt, self.sink, self.services_for = rt, sink, services_for
        self.snapshots = snapshots

    async def run_child(self, request: ChildRequest) -> ChildOutcome:
        step = request.step
        try:
            if request.resume_id:
                run = self.rt.store.get_run(request.resume_id)
                if run.status in FINAL:
                    left = load_state(self.rt.store, run.id)
                    return ChildOutcome(
                        run.id, run.status, run.error, left.artifacts, dict(left.context)
                    )
                resumed = claim_for_resume(self.rt, run.id)
                plan, state = resumed.plan, resumed.state
            else:
                loaded, _ = check_pipeline(self.rt, request.pipeline or step.pipeline or "")
                plan = create_run(
                    self.rt,
                    loaded,
                    request.input,
                    request.options or request.parent.options,
                    parent=request.parent,
                    parent_step=step.id,
                    own_workspace=request.own_workspace,
                )
                state = None
                request.on_start(plan.run_id, loaded.name)
        except StoreBroken:
            raise  # not the child's failure: the parent run stops (engine/loop/runner.py, `_lost`)
        except SwellError as exc:
            return ChildOutcome(request.resume_id or "-", "failed", str(exc))
        services = dataclasses.replace(self.services_for(), stop_at_gates=request.stop_at_gates)
        runner = Runner(plan, services, self.sink, state)
        if self.snapshots is not None:
            self.snapshots.watch(plan.run_id, runner.state, resumed=state is not None)
        try:
            summary = await runner.run()
        finally:
            claims(self.rt.store).release(plan.run_id)
            if self.snapshots is not None:
                self.snapshots.forget(plan.run_id)
        left = runner.state
        return ChildOutcome(
            summary.run_id, summary.status, summary.error, left.artifacts, dict(left.context)
        )


@dataclass
class Deadline:
    """`--timeout`: how long the whole run may take in this process. When it passes,
    the run is stopped as Ctrl-C stops it (running steps are killed, the run is
    `interrupted` and `swell resume` continues it), after a warning event saying why."""

    seconds: float
    expired: bool = False

    def describe(self) -> str:
        return f"the run timed out after {_duration(self.seconds)} (--timeout)"


def _duration(seconds: float) -> str:
    whole = int(seconds)
    if whole != seconds or whole < 60:
        return f"{seconds:g}s"
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return "".join(f"{n}{u}" for n, u in ((hours, "h"), (minutes, "m"), (secs, "s")) if n)


async def execute(
    rt: Runtime,
    plan: RunPlan,
    sinks: list[EventSink],
    *,
    state: RunState | None = None,
    prompter: GatePrompter | None = None,
    deadline: Deadline | None = None,
    watchers: Sequence[OutputSink] = (),
    stop_at_gates: bool = False,
) -> RunSummary:
    """Run (or continue) a run this process has claimed to its end, then let it go;
    Ctrl-C and SIGTERM stop it cleanly, and so does the `deadline`. Running visits' output
    goes to the store, then to `watchers` (a live display). `stop_at_gates`: an approval
    gate nobody has decided stops the run `waiting` instead of waiting."""
    snapshots = StateSnapshots(rt.store)
    redactor = Redactor.from_environ(os.environ)
    observers = [
        *_retro_observers(rt),
        *run_observers(plan, rt.state_dir, rt.store),
    ]  # swell/notify
    bus = EventBus(rt.store, snapshots, *sinks, *observers, redact=redactor.events)
    output: OutputSink = Tee(output_store(rt.store), *watchers)

    def services() -> Services:
        return Services(
            step_kinds=rt.registries.step_kinds,
            adapters=rt.registries.adapters,
            contract_types=rt.registries.contract_types,
            gates=StoreGates(rt.store),
            prompter=prompter,
            control=StoreControl(rt.store),
            children=ChildRunner(rt, bus, services, snapshots),
            output=output,
            runs=rt.store,
            redactor=redactor,
            stop_at_gates=stop_at_gates,
        )

    # everything alive now lives as long as the process; keep the collector off it
    gc.freeze()
    runner = Runner(plan, services(), bus, state)
    snapshots.watch(plan.run_id, runner.state, resumed=state is not None)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, runner.interrupt)

    def time_out() -> None:
        assert deadline is not None
        deadline.expired = True
        runner.stop_with(deadline.describe())

    timer = loop.call_later(deadline.seconds, time_out) if deadline else None
    try:
        return await runner.run()
    except StoreBroken as exc:  # the runner stopped, writing nothing more: say how to go on
        raise exc.stopped(plan.run_id) from None
    finally:
        if timer is not None:
            timer.cancel()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        claims(rt.store).release(plan.run_id)


def cancel_stored_run(rt: Runtime, run: RunRow) -> list[str]:
    """Cancel a run no process executes, and its unfinished sub-pipeline runs: close
    their open visits and finish them. Returns the ids cancelled; RunBusy if a process
    started executing one meanwhile."""
    cancelled: list[str] = []
    for child in rt.store.children(run.id):
        if child.status not in FINAL:
            cancelled += cancel_stored_run(rt, child)
    claims(rt.store).claim(run.id)
    try:
        state = load_state(rt.store, run.id)
        batch: list[ev.BaseEvent] = [
            ev.StepInterrupted(step_id=v.step_id, visit=v.visit, reason="run cancelled")
            for v in state.open.values()
        ]
        batch.append(ev.RunFinished(status="cancelled", error="cancelled", visits=state.total))
        stamp(batch, run.id, state.seq)
        rt.store.emit(batch)
    finally:
        claims(rt.store).release(run.id)
    return [*cancelled, run.id]
