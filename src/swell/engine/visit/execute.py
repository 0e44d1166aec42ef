"""What surrounds one visit: its workspace, its injected artifacts, its template
variables, and ending every process it started once it is over."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swell import process, sandbox, streaming, sweep
from swell.engine.loop.decisions import Visit
from swell.engine.loop.policies import rework_of
from swell.engine.loop.retry import retry_of
from swell.engine.loop.state import RunState
from swell.engine.visit import checkpointing, pipeline_outputs, sandboxing
from swell.engine.visit.context import RunPlan, Services, StepResult, VisitContext
from swell.engine.visit.finish import finish_visit, of_visit
from swell.engine.visit.output_log import VisitOutput, tee_events
from swell.errors import StoreError, SwellError, disk_broken
from swell.events.models import BaseEvent, Warning
from swell.manifest.models import ArtifactRef, Step
from swell.manifest.template_names import FORGE_FIELDS, PIPELINE_CONTEXT
from swell.templates.render import render_text
from swell.workspace import safe
from swell.workspace.manager import Workspaces
from swell.workspace.offload import off_loop

INJECTED_DIR = ".wave/artifacts"  # where Wave puts injected artifacts; kept for compatibility


@dataclass
class VisitExecutor:
    """Runs one visit: its workspace and inputs, its step kind, its artifacts, its
    contracts. The runner decides what runs when; this decides nothing about routing."""

    plan: RunPlan
    services: Services
    state: RunState
    steps: dict[str, Step]
    workspaces: Workspaces
    emit: Callable[[Sequence[BaseEvent]], None]

    async def run(self, visit: Visit) -> StepResult:
        """One visit: find its workspace, hand it its inputs, run its kind, check it.
        Whatever way it ends (a cancellation too), no process it started outlives it."""
        spawned = process.spawned()
        try:
            with process.noting_left_behind(), sandbox.confining(None):
                return await self._run(visit)
        except asyncio.CancelledError:
            if process.spawned() != spawned:
                await asyncio.shield(self.end_leftovers(visit))
            raise

    async def end_leftovers(self, visit: Visit) -> list[sweep.Marked]:
        """End the processes of this visit still running: those that left its process
        groups (`setsid`, `nohup ... &`, double forks) carry its markers. Only swell's
        own processes are read (its descendants, while the runner adopts orphans)."""
        markers = [
            f"SWELL_RUN_ID={self.plan.run_id}",
            f"SWELL_STEP_ID={visit.step.id}",
            f"SWELL_VISIT={visit.visit}",
        ]
        grace = self.plan.project.manifest.runtime.timeouts.process_grace_seconds or 3.0
        return await sweep.stop_marked(markers, grace, mine=True)

    async def _leftovers(self, ctx: VisitContext, visit: Visit, since: int) -> list[BaseEvent]:
        """Sweep if a process was started since `since`; a warning names what was left."""
        if process.spawned() == since:
            return []
        # those the runner killed for holding a finished command's pipes, and the rest
        left = {m.pid: m for m in process.left_behind()}
        left.update((m.pid, m) for m in await self.end_leftovers(visit))
        if not left:
            return []
        names = ", ".join(str(m) for m in sorted(left.values(), key=lambda m: m.pid))
        message = f"step '{visit.step.id}' left processes running after it ended; stopped them: "
        return [ctx.event(Warning(message=message + names))]

    async def _run(self, visit: Visit) -> StepResult:
        step = visit.step
        retry = retry_of(self.state, step.id, visit.activation)
        if retry is not None and retry.delay_ms:
            await asyncio.sleep(retry.delay_ms / 1000)  # the backoff before this attempt
        spawned = process.spawned()
        # a rework visit works in the workspace of the step it reworks, on its contracts
        rework = rework_of(self.state, step.id, visit.activation)
        owner = self.steps[rework.for_step] if rework else step
        where = self.plan.workspace
        try:
            opened = self.workspaces.open(
                owner, lambda text: render(base_namespace(self.plan, self.state, owner))(text)
            )
            where = opened.workspace.path
            if opened.mounts:
                # a `./` mount of a big project takes seconds to copy: other visits'
                # output, gates and heartbeats are served meanwhile
                await off_loop(lambda: self.workspaces.mount(opened), "swell-mount")
        except StoreError:
            raise  # the run stops, not the step (runner.py)
        except SwellError as exc:
            return StepResult(outcome="failure", error=str(exc))
        except OSError as exc:  # a copy names its source: the disk is the workspace's
            raise disk_broken(exc, where) or exc from None
        ws = opened.workspace
        try:  # every process of the visit runs in its sandbox (runtime.sandbox)
            feedback = rework.feedback_path if rework else None
            record = sandboxing.recorder(self.emit, step.id, visit.visit)
            note = sandboxing.noter(self.emit, step.id, visit.visit)
            await sandboxing.settle(self.plan.run_id)  # the run's first boxes are on their way
            sandboxing.enter(self.plan, ws, feedback, step, record, note)
        except SwellError as exc:
            return StepResult(outcome="failure", error=str(exc), retryable=False)
        others = pipeline_outputs.lookup_in(
            self.services.runs,
            run_id=self.plan.run_id,
            parent_run_id=self.plan.parent_run_id,
            project_root=str(self.plan.project.root),
        )
        notes: list[str] = []
        planned, problems = plan_injections(self.state, step, others, notes)
        if planned:  # copying and hashing a big artifact must not hold up the event loop
            injected, refused = await off_loop(lambda: copy_injections(planned, ws.path))
            problems += refused
        else:
            injected = {}
        if problems:
            return StepResult(outcome="failure", error="; ".join(problems))
        sink = self.services.output
        output = None
        if sink is not None:
            redactor = self.services.redactor
            output = VisitOutput(sink, self.plan.run_id, step.id, visit.visit, redactor)
        ns = namespace(self.plan, self.state, step, ws.path, injected)
        step = with_output_paths(step, ns)
        owner = with_output_paths(owner, ns) if rework else step
        if step is not visit.step:  # `{{ artifacts.NAME }}` gives the rendered paths
            ns = namespace(self.plan, self.state, step, ws.path, injected)
        ctx = VisitContext(
            plan=self.plan,
            services=self.services,
            step=step,
            visit=visit.visit,
            activation=visit.activation,
            state=self.state,
            namespace=ns,
            sink=self.emit if output is None else tee_events(self.emit, output),
            workspace=ws,
            resumed=visit.resumed,
        )
        if notes:
            ctx.emit([ctx.event(Warning(message=note)) for note in notes])
        try:  # the kind's processes and agents report their output as they go
            with streaming.feeding(None if output is None else output.feed):
                kind = self.services.step_kinds.of(step)
                result = await kind.run(ctx)
        finally:  # a cancelled visit keeps what it printed, too
            if output is not None:
                output.close()
        # nothing may still change the workspace while it is checked
        result.events += await self._leftovers(ctx, visit, spawned)
        spawned = process.spawned()
        changed: list[str] = []
        if ws.mounts:  # read-only mounts are hashed to see what the visit changed
            changed = await off_loop(lambda: self.workspaces.after_visit(ws), "swell-mount")
        finished = await finish_visit(ctx, result, of_visit(step, owner), changed)
        result = finished.result
        result.events += await self._leftovers(ctx, visit, spawned)  # contract commands
        plan, path = self.plan, ws.path
        scan = kind.changes_workspace or step.handover is not None  # contracts run commands
        memory = self.workspaces.checkpoints
        taken = await checkpointing.checkpoint(plan, memory, path, step.id, visit.visit, scan)
        if taken is not None:
            result.events.append(ctx.event(taken))
        return result


def with_output_paths(step: Step, ns: Mapping[str, Any]) -> Step:
    """`step` with its output artifacts' templated paths rendered for this visit, as
    Wave renders them (`.agents/output/{{ input }}.next.yaml`): the prompt names, the
    visit collects and the contracts check the file the agent was asked to write."""
    if not any(a.path and "{{" in a.path for a in step.output_artifacts):
        return step
    arts = [
        a.model_copy(update={"path": render_text(a.path, ns).text})
        if a.path and "{{" in a.path
        else a
        for a in step.output_artifacts
    ]
    return step.model_copy(update={"output_artifacts": arts})


def namespace(
    plan: RunPlan, state: RunState, step: Step, workspace: Path, injected: dict[str, str]
) -> dict[str, Any]:
    """Template variables for one visit (docs/manifest.md, "Templates")."""
    steps = {
        sid: {
            "outcome": s.outcome,
            "exit_code": s.exit_code,
            "visit": s.visit,
            "artifacts": dict(state.artifacts.get(sid, {})),
        }
        for sid, s in state.last.items()
    }
    arts = {**plan.options.artifacts, **injected}  # a sub-pipeline's handed artifacts first
    for art in step.output_artifacts:
        if art.path:
            arts.setdefault(art.name, str(workspace / art.path))
    ids = {"pipeline_id": plan.run_id, "pipeline_name": plan.pipeline.name, "step_id": step.id}
    return {
        "input": plan.input,
        **ids,
        "pipeline_context": Deferred(PIPELINE_CONTEXT, lambda: {**ids, **plan.branch}),
        "run": {"id": plan.run_id, "name": plan.pipeline.name},
        "workspace": str(workspace),
        "project_root": str(plan.project.root),
        "project": dict(plan.project.manifest.project),
        "context": dict(state.context),
        "artifacts": arts,
        "steps": steps,
        "forge": Deferred(FORGE_FIELDS, lambda: plan.forge),
        **plan.branch,
        "gate": gate_variables(plan, state),
        # composition (docs/composition.md): a sub-pipeline's `config.env`, and whether
        # a sub-pipeline step's `config.stop_condition` held
        "env": dict(plan.options.env),
        "sub_pipeline_stop": state.context.get("sub_pipeline_stop", ""),
    }


class Deferred(Mapping[str, Any]):
    """A namespace entry whose values are looked up when a template first reads one:
    forge detection runs git, which a run whose templates never ask should not pay."""

    def __init__(self, keys: Collection[str], load: Callable[[], Mapping[str, Any]]) -> None:
        self._keys, self._load = tuple(sorted(keys)), load
        self._values: Mapping[str, Any] | None = None

    def __getitem__(self, key: str) -> Any:
        if key not in self._keys:
            raise KeyError(key)
        if self._values is None:
            self._values = self._load()
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __str__(self) -> str:  # `{{ forge }}` reads as a dict would (expressions.to_text)
        return json.dumps(dict(self), sort_keys=True)


# who decides a gate without a person; their reasons are not a person's text
AUTOMATIC = ("auto", "timeout", "timer")


def gate_variables(plan: RunPlan, state: RunState) -> dict[str, dict[str, str]]:
    """`{{ gate.ID.choice }}` (the choice's label), `.key`, `.text` (what the person
    wrote with the decision), `.timestamp` (RFC 3339) and `.target`, per decided gate.
    `{{`/`}}` are removed from what a person wrote, as Wave does, so it cannot add
    placeholders to what is rendered after it."""
    out: dict[str, dict[str, str]] = {}
    for step_id, resolved in state.gates.items():
        gate = next((s.gate for s in plan.pipeline.pipeline.steps if s.id == step_id), None)
        labels = {c.key: c.label for c in gate.choices} if gate else {}
        text = "" if resolved.by in AUTOMATIC else (resolved.reason or "")
        out[step_id] = {
            "choice": _strip(labels.get(resolved.choice or "", resolved.choice or "")),
            "key": _strip(resolved.choice or ""),
            "text": _strip(text),
            "timestamp": resolved.ts,
            "target": _strip(resolved.target or ""),
        }
    return out


def _strip(text: str) -> str:
    return text.replace("{{", "").replace("}}", "")


def base_namespace(plan: RunPlan, state: RunState, step: Step) -> dict[str, Any]:
    """Variables available before the workspace is known (for worktree branch names)."""
    return namespace(plan, state, step, plan.workspace, {})


def render(ns: dict[str, Any]) -> Any:
    return lambda text: render_text(text, ns).text


def _no_runs(ref: ArtifactRef) -> pipeline_outputs.Found:
    raise pipeline_outputs.NotFound("no stored runs to read pipeline outputs from")


@dataclass(frozen=True)
class Injection:
    """One artifact to copy into a visit's workspace (`inject_artifacts`)."""

    name: str  # its file name under `.wave/artifacts/`
    what: str  # how messages name it
    source: str
    sha256: str


def inject_artifacts(
    state: RunState,
    step: Step,
    workspace: Path,
    others: pipeline_outputs.Lookup | None = None,
    notes: list[str] | None = None,
) -> tuple[dict[str, str], list[str]]:
    """Copy the artifacts a step asks for into `.wave/artifacts/<as>` of its workspace
    (`plan_injections`, then `copy_injections`). Returns name -> path of each copy, and
    problems."""
    planned, problems = plan_injections(state, step, others, notes)
    injected, failed = copy_injections(planned, workspace)
    return injected, problems + failed


def plan_injections(
    state: RunState,
    step: Step,
    others: pipeline_outputs.Lookup | None = None,
    notes: list[str] | None = None,
) -> tuple[list[Injection], list[str]]:
    """What to inject, and problems (an artifact that is missing and not optional).
    `others` finds `pipeline:` entries (another run's outputs: engine/visit/pipeline_outputs.py);
    `notes` gets warnings about them (a file format other than the one asked for)."""
    planned: list[Injection] = []
    problems: list[str] = []
    for ref in step.memory.inject_artifacts:
        name = ref.as_ or ref.artifact
        producer = state.artifacts.get(ref.step or "", {})
        source = producer.get(ref.artifact)
        sha256 = state.artifact_sha256.get(ref.step or "", {}).get(ref.artifact)
        what = f"input artifact '{ref.artifact}' of step '{ref.step}'"
        missing = f"{what} is not available (has '{ref.step}' run?)"
        if ref.pipeline:
            what = f"input artifact '{ref.artifact}' of pipeline '{ref.pipeline}'"
            try:
                found = (others or _no_runs)(ref)
                source, sha256 = found.path, found.sha256
                note = pipeline_outputs.type_note(ref, found)
                if note is not None and notes is not None:
                    notes.append(note)
            except pipeline_outputs.NotFound as exc:
                source = None
                missing = f"{what} is not available: {exc}"
        if source is None or sha256 is None or not os.path.lexists(source):
            if not ref.optional:
                problems.append(missing)
            continue
        planned.append(Injection(name, what, source, sha256))
    return planned, problems


def copy_injections(
    planned: Sequence[Injection], workspace: Path
) -> tuple[dict[str, str], list[str]]:
    """Copy each artifact only if it is still the file that was recorded: a regular
    file (not a link a later step put in its place) whose content hashes to the sha256
    recorded when it was written. The copy replaces whatever is at
    `.wave/artifacts/<as>` (never writing through a link). File work only: the visit
    runs it off the event loop."""
    injected: dict[str, str] = {}
    problems: list[str] = []
    for job in planned:
        what, source = job.what, job.source
        if safe.is_link(Path(source)):
            problems.append(
                f"{what} ({source}) was replaced by a symbolic link after it was written; "
                "not injecting it"
            )
            continue
        try:
            target = safe.place(workspace, f"{INJECTED_DIR}/{job.name}")
            safe.copy_verified(Path(source), job.sha256, target)
        except safe.ContentChanged as exc:
            problems.append(
                f"{what} ({source}) changed after it was written ({exc}); not injecting it"
            )
            continue
        except safe.UnsafePath as exc:
            problems.append(f"input artifact '{job.name}': {exc}")
            continue
        except OSError as exc:
            problems.append(f"input artifact '{job.name}' could not be copied: {exc}")
            continue
        injected[job.name] = str(target)
    return injected, problems
