"""One step fanned out over isolated workers (Wave's `concurrency: N` and matrix
`strategy`): each worker's own workspace, one agent visit in it through the prompt
step kind, a bounded scheduler, and what the step hands on: its declared outputs
aggregated one slot per worker, and a results file (docs/composition.md)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swell.engine.steps.compose.step_out_refs import read_value
from swell.engine.visit.context import StepResult, VisitContext
from swell.engine.visit.execute import namespace, render
from swell.engine.visit.finish import OF_WORKER, finish_visit
from swell.errors import SwellError
from swell.events.models import ArtifactWritten, BaseEvent
from swell.workspace import safe
from swell.workspace.manager import DEFAULT_BRANCH, Workspaces, workspace_config
from swell.workspace.offload import off_loop
from swell.workspace.workspace import Workspace

# Wave's own directories in a workspace: injected inputs and outputs, never a conflict
STEP_DIRS = (".agents/", ".wave/")
SHOWN_ERRORS = 3  # worker errors named in the step's error (as Wave does)


@dataclass
class Worker:
    """One worker of a fan-out visit: what it ran on and what became of it."""

    index: int
    label: str  # `worker-0` (matrix) or `agent-0` (concurrency)
    item: Any = None
    item_id: str | None = None
    ran: bool = False
    error: str | None = None
    skipped: str | None = None  # why it never ran
    workspace: Path | None = None
    result: StepResult | None = None
    outputs: dict[str, str] = field(default_factory=dict)  # declared output -> its file
    modified: list[str] = field(default_factory=list)
    child_run: str | None = None
    value: Any = None  # a child run's own output (matrix `child_pipeline`)
    waiting: bool = False  # its child run stopped at a gate (`swell resume` continues it)
    events: list[BaseEvent] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.ran and self.error is None and self.skipped is None

    @property
    def status(self) -> str:
        if self.skipped is not None:
            return "skipped"
        return "succeeded" if self.ok else "failed"


@dataclass(frozen=True)
class WorkerContext(VisitContext):
    """A worker's visit context: the agent knows itself as `STEP.LABEL` (its adapter
    request, its files in the run directory), while its events and processes stay the
    step's own (the run's history has one visit; leftovers are swept by the step's
    markers)."""

    owner_id: str = ""
    worker: str = ""

    def event(self, ev: BaseEvent) -> BaseEvent:
        return ev.model_copy(update={"step_id": self.owner_id, "visit": self.visit})

    def swell_env(self) -> dict[str, str]:
        env = super().swell_env()
        env["SWELL_STEP_ID"] = self.owner_id
        env["SWELL_WORKER"] = self.worker
        return env


def open_workspace(ctx: VisitContext, label: str) -> Workspace:
    """The worker's own workspace, beside the run's: a directory with the step's mounts,
    or, for a worktree step, a worktree on its own branch (`BRANCH-STEP-LABEL`). Its base
    is taken after the mounts are copied, so `changed_files` is what the worker did."""
    plan, step = ctx.plan, ctx.step
    root = Path(f"{plan.workspace}.workers") / plan.run_id / step.id / str(ctx.visit) / label
    steps = {s.id: s for s in plan.pipeline.pipeline.steps}
    config = workspace_config(steps, step)
    if config is not None:
        update: dict[str, Any] = {"ref": None}
        if config.type == "worktree":
            update["branch"] = f"{config.branch or DEFAULT_BRANCH}-{step.id}-{label}"
        config = config.model_copy(update=update)
    own = step.model_copy(update={"workspace": config})
    render_ns = namespace(plan, ctx.state, step, root, {})
    ws = Workspaces(plan.project.root, root, {step.id: own}).for_step(own, render(render_ns))
    if ws.kind == "directory" and ws.base and ws.mounts:
        ws.git("add", "--all")
        ws.git("commit", "-q", "--allow-empty", "--no-verify", "-m", "swell: worker start")
        ws.base = ws.git("rev-parse", "HEAD").strip()
    return ws


async def run_agent(ctx: VisitContext, worker: Worker, extra: dict[str, Any]) -> None:
    """One agent visit of the step in the worker's own workspace, through the prompt
    step kind, with `extra` template variables (a matrix item's `task`)."""
    try:
        ws = open_workspace(ctx, worker.label)
    except (SwellError, OSError) as exc:
        worker.error = f"workspace: {exc}"
        return
    worker.workspace = ws.path
    step = ctx.step
    explicit = {r.as_ or r.artifact for r in step.memory.inject_artifacts}
    handed = {k: v for k, v in ctx.namespace.get("artifacts", {}).items() if k in explicit}
    ns = {**namespace(ctx.plan, ctx.state, step, ws.path, handed), **extra}
    wctx = WorkerContext(
        plan=ctx.plan,
        services=ctx.services,
        step=step.model_copy(update={"id": f"{step.id}.{worker.label}"}),
        visit=ctx.visit,
        activation=ctx.activation,
        state=ctx.state,
        namespace=ns,
        sink=ctx.emit,
        workspace=ws,
        owner_id=step.id,
        worker=worker.label,
    )
    result = await ctx.services.step_kinds.get("prompt").run(wctx)
    worker.ran, worker.result = True, result
    worker.events += result.events
    if result.outcome != "success":
        worker.error = result.error or "the agent failed"
        return
    finished = await finish_visit(wctx, result, OF_WORKER)
    worker.outputs = finished.artifacts
    if finished.result.outcome != "success":
        worker.error = finished.result.error
    try:
        changed = ws.changed_files()
    except SwellError:
        changed = []
    # declared outputs are aggregated, never a conflict
    declared = {a.path for a in step.output_artifacts if a.path}
    worker.modified = [f for f in changed if not f.startswith(STEP_DIRS) and f not in declared]


async def schedule(
    workers: list[Worker], width: int, job: Callable[[Worker], Awaitable[None]], fail_fast: bool
) -> None:
    """Run `job` for each worker, at most `width` at once, in order of start. With
    `fail_fast`, a failure starts no more workers (those running finish)."""
    gate = asyncio.Semaphore(max(width, 1))
    stopped = False

    async def one(worker: Worker) -> None:
        nonlocal stopped
        async with gate:
            if stopped:
                worker.skipped = "not started: another worker failed"
                return
            await job(worker)
            if not worker.ok and fail_fast:
                stopped = True

    await asyncio.gather(*(one(w) for w in workers))


def conflicts(workers: list[Worker]) -> str | None:
    """Files more than one succeeded worker changed (Wave's conflict check), or None."""
    writers: dict[str, list[int]] = {}
    for worker in workers:
        if worker.ok:
            for path in worker.modified:
                writers.setdefault(path, []).append(worker.index)
    found = [
        f"{path} (workers {', '.join(map(str, who))})"
        for path, who in sorted(writers.items())
        if len(who) > 1
    ]
    return "file conflicts: " + "; ".join(found) if found else None


def _slot(worker: Worker, name: str) -> Any:
    if not worker.ok:
        return None
    if name in worker.outputs:
        return read_value(worker.outputs[name])
    return worker.value  # a child run's own output


def aggregate_outputs(ctx: VisitContext, workers: list[Worker]) -> list[str]:
    """Each declared file output of the step, written in the step's workspace at its
    path: a json output as a JSON array with one slot per worker (in worker order, null
    for one that failed), any other as the workers' texts one after another."""
    problems = []
    for art in ctx.step.output_artifacts:
        if art.source != "file" or not art.path:
            continue
        slots = [_slot(w, art.name) for w in workers]
        if art.type == "json":
            data = json.dumps(slots, indent=2) + "\n"
        else:
            texts = [s if isinstance(s, str) else json.dumps(s) for s in slots if s is not None]
            data = "\n\n".join(t.rstrip("\n") for t in texts) + ("\n" if texts else "")
        try:
            safe.replace(safe.place(ctx.workspace.path, art.path), data.encode())
        except (OSError, safe.UnsafePath) as exc:
            problems.append(f"artifact '{art.name}' could not be aggregated: {exc}")
    return problems


def summary(workers: list[Worker], noun: str) -> dict[str, Any]:
    """Wave's aggregated results (`worker_results`, counts), one entry per worker."""
    entries = []
    for w in workers:
        entry: dict[str, Any] = {"index": w.index, "status": w.status}
        if w.item is not None:
            entry["item"] = w.item
        for key, value in (
            ("item_id", w.item_id),
            ("error", w.error),
            ("skip_reason", w.skipped),
            ("workspace", str(w.workspace) if w.workspace else None),
            ("child_run", w.child_run),
        ):
            if value is not None:
                entry[key] = value
        if w.outputs:
            entry["outputs"] = w.outputs
        if w.modified:
            entry["modified_files"] = w.modified
        if w.child_run is not None and w.ok:
            entry["output"] = w.value
        entries.append(entry)
    return {
        f"total_{noun}s": len(workers),
        "success_count": sum(1 for w in workers if w.ok),
        "fail_count": sum(1 for w in workers if w.status == "failed"),
        "skip_count": sum(1 for w in workers if w.status == "skipped"),
        f"{noun}_results": entries,
        f"{noun}_workspaces": [str(w.workspace) for w in workers if w.workspace],
    }


def _results_file(ctx: VisitContext, name: str, data: dict[str, Any]) -> BaseEvent | str:
    rel = f".agents/output/{ctx.step.id}-{name}.json"
    try:
        path = safe.place(ctx.workspace.path, rel)
        safe.replace(path, (json.dumps(data, indent=2) + "\n").encode())
        sha, size = safe.digest_file(path)
    except (OSError, safe.UnsafePath) as exc:
        return f"{name} could not be written: {exc}"
    written = ArtifactWritten(
        name=name, path=str(path), sha256=sha, size=size, artifact_type="json"
    )
    return ctx.event(written)


def failure_message(workers: list[Worker], noun: str) -> str:
    """`2/3 workers failed, 1 skipped. worker[1]: ...` (the first few errors)."""
    failed = [w for w in workers if w.status == "failed"]
    skipped = sum(1 for w in workers if w.status == "skipped")
    shown = "; ".join(f"{noun}[{w.index}]: {w.error}" for w in failed[:SHOWN_ERRORS])
    more = f" (and {len(failed) - SHOWN_ERRORS} more)" if len(failed) > SHOWN_ERRORS else ""
    return f"{len(failed)}/{len(workers)} {noun}s failed, {skipped} skipped. {shown}{more}"


async def step_result(
    ctx: VisitContext, workers: list[Worker], noun: str, kind: str, check_conflicts: bool
) -> StepResult:
    """The visit's result: succeeded when every worker did (and, for a matrix, no two
    changed the same file); outputs aggregated either way, with the results file.
    Reading the workers' outputs and writing files is done off the event loop (a slow
    disk must not keep `--timeout` or `swell cancel` waiting)."""
    events: list[BaseEvent] = [e for w in workers for e in w.events]
    errors = await off_loop(lambda: aggregate_outputs(ctx, workers), "swell-aggregate")
    if any(w.status != "succeeded" for w in workers):
        errors.insert(0, failure_message(workers, noun))
    clash = conflicts(workers) if check_conflicts else None
    if clash:
        errors.append(clash)
    data = summary(workers, noun)
    written = await off_loop(lambda: _results_file(ctx, f"{kind}-results", data), "swell-write")
    if isinstance(written, str):
        errors.append(written)
    else:
        events.append(written)
    results = [w.result for w in workers if w.result is not None]
    first = results[0] if results else None
    texts = [r.stdout for r in results if r.stdout]
    counts = {k: v for k, v in data.items() if not isinstance(v, list)}
    return StepResult(
        outcome="failure" if errors else "success",
        error="; ".join(errors) or None,
        outputs={**counts, "stdout": "\n\n".join(texts)},
        stdout="\n\n".join(texts) if texts else None,
        output_tail=texts[-1][-4000:] if texts else None,
        tokens_in=sum(r.tokens_in for r in results),
        tokens_out=sum(r.tokens_out for r in results),
        cost_usd=sum(r.cost_usd for r in results),
        adapter=first.adapter if first else None,
        model=first.model if first else None,
        events=events,
    )
